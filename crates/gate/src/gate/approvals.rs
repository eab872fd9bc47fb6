//! Approvals: a call held for a person (asked, filed without a thread, rung when its
//! approval leaves `pending`, resumed on a worker), the re-decision when it is approved,
//! expiry with nobody asking, withdrawal, and a person's decision (docs/spec.md §3.3 step 6).

use super::*;

impl Gate {
    /// How many calls of `session` wait for a person now.
    pub(super) fn pending_of(&self, session: &SessionId) -> u64 {
        let n = lock(&self.held)
            .values()
            .filter(|h| &h.req.session == session)
            .count();
        u64::try_from(n).unwrap_or(u64::MAX)
    }

    /// Records the approval, audits it, and tells the caller; returns the approval's id.
    pub(super) fn ask(
        &self,
        req: &ToolRequest,
        reason: ApprovalReason,
        concerns: Vec<proto::control::Concern>,
        now: Timestamp,
        reply: &mut dyn Reply,
        files: Vec<FileDigest>,
    ) -> Result<String, CallError> {
        let files_sha256 = (!files.is_empty())
            .then(|| audit::sha256_hex(&serde_json::to_vec(&files).unwrap_or_default()));
        let row = lock(&self.store)
            .create_approval_with(
                NewApproval {
                    session: req.session.clone(),
                    call: req.call,
                    tool: req.tool.clone(),
                    arguments: req.arguments.clone(),
                    reason,
                    created: now,
                    expires: now.plus(self.config.gate.approval_ttl),
                    files,
                },
                concerns,
            )
            .map_err(before("record the approval"))?;
        let asked = self.audit(
            now,
            Event::ApprovalAsked {
                session: req.session.clone(),
                call: req.call,
                tool: req.tool.clone(),
                approval: row.id.clone(),
                reason,
                expires: row.expires,
                args_sha256: audit::sha256_hex(req.arguments.as_bytes()),
                files_sha256,
            },
        );
        if let Err(e) = asked {
            // Nobody may approve what the log does not show: take it back.
            let _ = lock(&self.store).withdraw(&row.id, now);
            self.changed();
            return Err(before("audit the approval")(e));
        }
        // A call of this gate waits on it from now on (the decision socket answers only
        // for such approvals), and watchers see it at once.
        lock(&self.live).insert(row.id.clone());
        self.changed();
        reply.progress(ToolResponse::PendingApproval {
            approval: row.id.clone(),
            expires: row.expires,
        });
        Ok(row.id)
    }

    /// Holds a call until its approval leaves `pending`. The store is the truth: after the
    /// call is filed, the approval is read back once, so a decision that came before the
    /// call was filed is not missed.
    pub(super) fn park(&self, approval: String, held: Held) {
        lock(&self.held).insert(approval.clone(), held);
        if !self.still_pending(&approval) {
            self.ring(&approval);
        }
    }

    /// Whether the store says `approval` is pending (a failure to read counts as not: the
    /// held call then reads it again and fails with the cause).
    pub(super) fn still_pending(&self, approval: &str) -> bool {
        matches!(
            lock(&self.store).approval(approval),
            Ok(Some(row)) if row.state == ApprovalState::Pending
        )
    }

    /// Resumes the call held on `approval`, if there is one. Whoever takes it from `held`
    /// resumes it, once. Resumed calls queue for at most [`MAX_RESUMERS`] threads (10,000
    /// approvals expiring in one tick must not become 10,000 threads); an approved call
    /// then runs on a thread of its own, so a long tool never delays another call's end.
    pub(super) fn ring(&self, approval: &str) {
        let Some(held) = lock(&self.held).remove(approval) else {
            return;
        };
        let mut q = lock(&self.resumes);
        q.queue.push_back((approval.to_string(), held));
        if q.workers >= MAX_RESUMERS {
            return;
        }
        q.workers += 1;
        drop(q);
        let spawned = self.me.upgrade().map(|gate| {
            std::thread::Builder::new()
                .name("gate-resume".into())
                .spawn(move || gate.resume_queued())
        });
        if !matches!(spawned, Some(Ok(_))) {
            // No thread to be had: do the work here rather than leave it.
            self.resume_queued();
        }
    }

    /// A resume worker: resumes queued calls until the queue is empty.
    pub(super) fn resume_queued(&self) {
        loop {
            let next = {
                let mut q = lock(&self.resumes);
                match q.queue.pop_front() {
                    Some(next) => next,
                    None => {
                        q.workers = q.workers.saturating_sub(1);
                        return;
                    }
                }
            };
            self.resume(&next.0, next.1);
        }
    }

    /// The safety net: resumes every held call whose approval the store says is no longer
    /// pending (the expiry thread calls it every `POLL`).
    pub(super) fn sweep_held(&self) {
        let ids: Vec<String> = lock(&self.held).keys().cloned().collect();
        for id in ids {
            if !self.still_pending(&id) {
                self.ring(&id);
            }
        }
    }

    /// Finishes a held call by its approval's state: approved → step 3 again and run;
    /// refused, expired → denied; withdrawn → failed.
    pub(super) fn resume(&self, approval: &str, held: Held) {
        let Held { req, args, reply } = held;
        let state = match lock(&self.store).approval(approval) {
            Ok(Some(row)) => Ok(row.state),
            Ok(None) => Err(GateError::ApprovalVanished {
                id: approval.to_string(),
            }),
            Err(e) => Err(e.into()),
        };
        if !matches!(state, Ok(ApprovalState::Pending)) {
            lock(&self.live).remove(approval);
        }
        let resp = match state {
            Err(e) => failed(before("follow the approval")(e)),
            Ok(ApprovalState::Pending) => {
                // Rung too early: hold it again.
                self.park(approval.to_string(), Held { req, args, reply });
                return;
            }
            Ok(ApprovalState::Approved) => {
                let cell = Arc::new(Mutex::new(Some((req, args, reply))));
                let spawned = self.me.upgrade().map(|gate| {
                    let (cell, approval) = (Arc::clone(&cell), approval.to_string());
                    std::thread::Builder::new()
                        .name("gate-approved".into())
                        .spawn(move || {
                            if let Some((req, args, reply)) = lock(&cell).take() {
                                let resp =
                                    gate.approved(&req, &args, &approval).unwrap_or_else(failed);
                                reply.finish(resp);
                            }
                        })
                });
                if !matches!(spawned, Some(Ok(_)))
                    && let Some((req, args, reply)) = lock(&cell).take()
                {
                    reply.finish(self.approved(&req, &args, approval).unwrap_or_else(failed));
                }
                return;
            }
            Ok(ApprovalState::Refused) => ToolResponse::Denied {
                reason: DenyReason::ApprovalRefused,
            },
            Ok(ApprovalState::Expired) => ToolResponse::Denied {
                reason: DenyReason::ApprovalExpired,
            },
            Ok(ApprovalState::Withdrawn) => failed(CallError::Withdrawn {
                id: approval.to_string(),
            }),
        };
        reply.finish(resp);
    }

    /// An approved call: the approval is consumed, and steps 1–4 are decided **again** with
    /// the taint and time of this moment (the monitor's rule: the taint may have risen, a
    /// grant may have expired or been revoked while a person looked), on the same parsed
    /// arguments; then it runs.
    pub(super) fn approved(
        &self,
        req: &ToolRequest,
        args: &Arguments,
        approval: &str,
    ) -> Result<ToolResponse, CallError> {
        // Decided and run holding a slot of its session like any call (held, it had none;
        // the cap counted it as pending): a reset waits for it, and it for a reset.
        let _slot = self.sessions.enter(&req.session, None);
        let now = self.now();
        let used = lock(&self.store).mark_used(approval, now);
        self.changed();
        // It runs only what the person approved: the files as they were shown.
        let files = used.map_err(before("use the approval"))?.files;
        let taint = self
            .decision_taint(&req.session)
            .map_err(before("read the session's taint"))?;
        let grants = self.cached_grants().map_err(before("build the grants"))?;
        let reach = self.config.call_reach(&req.tool);
        let at = at_reach(taint, reach);
        let decision = policy::decide_call_in(
            &grants,
            &req.session,
            &req.tool,
            args,
            at,
            now,
            &self.index(&req.session),
        );
        let own_untrusted =
            reach.is_some() && self.config.answer_label(&req.tool, args).label.untrusted;
        let (raise, sightings) = match decision {
            Decision::Deny(_) => (None, None),
            Decision::Allow | Decision::Ask => (
                reach_raise(req, taint, reach, own_untrusted),
                provenance::argued(req, args),
            ),
        };
        self.make_durable(Durable {
            raise,
            defer_sync: false,
            events: vec![(
                now,
                decision_event(
                    req,
                    at,
                    decision,
                    Some(approval.to_string()),
                    reach,
                    None,
                    Vec::new(),
                ),
            )],
            sightings,
        })
        .map_err(|f| before("record the decision and its reach")(f.into_gate()))?;
        if let Decision::Deny(reason) = decision {
            return Ok(ToolResponse::Denied { reason });
        }
        self.run_and_commit(req, args, run_taint(at, reach, own_untrusted), &files)
    }

    /// Expires every pending approval that is due, audits each `approval_expired`, and wakes
    /// their held calls. Returns how many expired. The expiry thread calls it every tick.
    pub fn expire_due(&self) -> Result<usize, GateError> {
        let now = self.now();
        let rows = lock(&self.store).expire_due(now)?;
        if rows.is_empty() {
            return Ok(0);
        }
        self.changed();
        let audited = self.append_audit(rows.iter().map(|r| {
            (
                now,
                Event::ApprovalExpired {
                    session: r.session.clone(),
                    call: r.call,
                    approval: r.id.clone(),
                },
            )
        }));
        // Wake the held calls whatever the audit log said: they must not hang.
        for r in &rows {
            self.ring(&r.id);
        }
        audited?;
        Ok(rows.len())
    }

    /// The client that made the call stopped waiting: `pending` → `withdrawn`, audited; the
    /// held call ends with `failed: "the call was cancelled …"`. An approval that is no
    /// longer pending is left as it is ([`StoreError::ApprovalAlreadyDecided`]).
    pub fn withdraw(&self, approval: &str) -> Result<(), GateError> {
        let now = self.now();
        let row = lock(&self.store).withdraw(approval, now)?;
        self.changed();
        let audited = self.audit(
            now,
            Event::ApprovalWithdrawn {
                session: row.session,
                call: row.call,
                approval: row.id.clone(),
            },
        );
        self.ring(&row.id);
        audited?;
        Ok(())
    }

    /// A person's decision on an approval, audited, and the held call woken (the
    /// `approve` and `refuse` control ops: `via` is `control`).
    pub fn decide_approval(
        &self,
        approval: &str,
        decision: store::Decision,
    ) -> Result<ApprovalRow, GateError> {
        let decider = Decider {
            via: DecidedVia::Control,
            by: "a client of the control socket".into(),
        };
        self.decide_recorded(approval, decision, &decider, None)
    }

    /// A person's decision, from anywhere: checked against what they were shown, with the
    /// approval remembered for the session when they chose so (docs/spec.md §3.3 step 6).
    /// Errors are the control channel's code and sentence; the decision socket maps them.
    pub(super) fn decide_with(
        &self,
        approval: &str,
        choice: Choice,
        remember_seconds: Option<u64>,
        reason: Option<String>,
        shown: Option<&Shown>,
        decider: &Decider,
    ) -> Result<ApprovalRow, (ControlErrorCode, String)> {
        let bad = |why: String| Err((ControlErrorCode::BadMessage, why));
        match (choice, remember_seconds) {
            (Choice::ApproveForSession, None) => {
                return bad("approve_for_session needs remember_seconds".into());
            }
            (Choice::ApproveOnce | Choice::Refuse, Some(_)) => {
                return bad(format!(
                    "remember_seconds goes with approve_for_session, not {choice}"
                ));
            }
            _ => {}
        }
        if reason.is_some() && choice != Choice::Refuse {
            return bad("a reason goes with refuse only".into());
        }
        let row = lock(&self.store)
            .approval(approval)
            .map_err(|e| (ControlErrorCode::Internal, e.to_string()))?
            .ok_or_else(|| {
                (
                    ControlErrorCode::NotFound,
                    format!("there is no approval {approval}"),
                )
            })?;
        if let Some(shown) = shown
            && shown.call_sha256 != call_sha256(&row)
        {
            return Err((
                ControlErrorCode::Conflict,
                format!(
                    "approval {approval} is not the call that was shown (its digest differs); \
                     nothing was decided"
                ),
            ));
        }
        let now = self.now();
        let remember = match remember_seconds {
            Some(secs) => {
                Some(self.remember_for(&row, secs, shown.map(|s| (s.class, s.untrusted)), now)?)
            }
            None => None,
        };
        let decision = match choice {
            Choice::Refuse => store::Decision::Refuse { reason },
            Choice::ApproveOnce | Choice::ApproveForSession => store::Decision::Approve,
        };
        match self.decide_recorded(approval, decision, decider, remember.as_ref()) {
            Ok(row) => Ok(row),
            Err(GateError::Store(e)) => Err(super::operator::store_error_code(e)),
            Err(e) => Err((ControlErrorCode::Internal, e.to_string())),
        }
    }

    /// Records a decision (and its remembered approval) in one transaction, audits both,
    /// tells watchers, and wakes the held call.
    fn decide_recorded(
        &self,
        approval: &str,
        decision: store::Decision,
        decider: &Decider,
        remember: Option<&store::Remember>,
    ) -> Result<ApprovalRow, GateError> {
        let now = self.now();
        let result = lock(&self.store).decide_as(approval, decision, Some(decider), remember, now);
        let row = match result {
            Ok(row) => row,
            Err(e @ StoreError::ApprovalExpired { .. }) => {
                // Expire it now rather than at the next tick, so the call ends promptly.
                let _ = self.expire_due();
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        if row.grant.is_some() {
            self.invalidate_grants();
        }
        self.changed();
        let (outcome, note) = match row.state {
            ApprovalState::Approved => (ApprovalOutcome::Approved, None),
            _ => (ApprovalOutcome::Refused, row.note.clone()),
        };
        let mut events = vec![Event::ApprovalDecided {
            session: row.session.clone(),
            call: row.call,
            approval: row.id.clone(),
            decision: outcome,
            note,
            via: Some(decider.via),
            by: Some(decider.by.clone()),
            grant: row.grant,
        }];
        if let (Some(grant), Some(r)) = (row.grant, remember) {
            events.push(Event::GrantAdded {
                grant,
                tool: row.tool.clone(),
                sessions: row.session.to_string(),
                effect: store::Effect::Allow,
                max_class: Some(r.max_class),
                if_untrusted: Some(r.if_untrusted),
                expires: Some(r.expires),
                args_sha256: Some(r.args_sha256.clone()),
                approval: Some(row.id.clone()),
            });
        }
        let audited = self.append_audit(events.into_iter().map(|e| (now, e)));
        self.ring(&row.id);
        audited?;
        Ok(row)
    }
}

/// The SHA-256 (hex) of what a person decides on: the approval's id, session, call, tool
/// and exact arguments, and the files it binds when it names any (their digests as JSON),
/// each length-prefixed so no two calls share a digest. A decision
/// that names what was shown is refused unless it matches (the page, the client).
pub fn call_sha256(row: &ApprovalRow) -> String {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    for part in [
        row.id.as_bytes(),
        row.session.as_str().as_bytes(),
        &row.call.0.to_be_bytes(),
        row.tool.as_bytes(),
        row.arguments.as_bytes(),
    ] {
        h.update(u64::try_from(part.len()).unwrap_or(u64::MAX).to_be_bytes());
        h.update(part);
    }
    // What the approval binds is part of what the person decides on (an approval that
    // names no file hashes as it always did).
    if !row.files.is_empty() {
        let files = serde_json::to_vec(&row.files).unwrap_or_default();
        h.update(u64::try_from(files.len()).unwrap_or(u64::MAX).to_be_bytes());
        h.update(&files);
    }
    audit::Digest(h.finalize().into()).to_hex()
}
