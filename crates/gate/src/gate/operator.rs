//! The operator's side (docs/spec.md §2.4): [`Gate::control`] answers each `ControlOp`,
//! allowlist style — every op has one handler and one typed answer, and every failure an
//! `error` with a code and a detail — and the conversions between the store's, the wire's
//! and the policy's forms of a grant.

use super::*;
use crate::anchor;

/// How long a reset waits, once the runner stopped the session's boxes, for its calls to
/// give their answers (they were killed: a moment, unless the runner is stuck).
const RESET_WAIT: Duration = Duration::from_secs(60);

impl Gate {
    /// Answers one control request. Every op has one handler; every failure is an `error`
    /// answer with a code and one sentence.
    pub fn control(&self, op: ControlOp) -> ControlAnswer {
        match self.try_control(op) {
            Ok(answer) => answer,
            Err((code, detail)) => ControlAnswer::Error { code, detail },
        }
    }

    pub(super) fn try_control(
        &self,
        op: ControlOp,
    ) -> Result<ControlAnswer, (ControlErrorCode, String)> {
        let internal = |e: &dyn std::fmt::Display| (ControlErrorCode::Internal, e.to_string());
        match op {
            ControlOp::Status {} => Ok(ControlAnswer::Status {
                version: env!("CARGO_PKG_VERSION").to_string(),
                pid: std::process::id(),
                config: self.config.fingerprint.clone(),
                kept: !self.on_demand.load(Ordering::SeqCst),
            }),
            ControlOp::Retire {} => {
                if !self.on_demand.load(Ordering::SeqCst) {
                    return Err((
                        ControlErrorCode::Conflict,
                        "this gate is kept by `boxmaker serve`; restart `serve` to make it \
                         read a changed config"
                            .into(),
                    ));
                }
                self.retiring.store(true, Ordering::SeqCst);
                // Before the answer: once the client reads it, no new connection reaches
                // this gate (the lock is still held, so these are this gate's sockets).
                for sock in [
                    statedir::AGENT_SOCKET,
                    statedir::CONTROL_SOCKET,
                    statedir::DECIDE_SOCKET,
                ] {
                    let _ = std::fs::remove_file(self.config.gate.state.join(sock));
                }
                Ok(ControlAnswer::Retiring {})
            }
            ControlOp::ListApprovals { all } => {
                let filter = if all {
                    ApprovalFilter::All
                } else {
                    ApprovalFilter::Pending
                };
                let rows = lock(&self.store)
                    .approvals(filter)
                    .map_err(|e| internal(&e))?;
                let items = rows
                    .into_iter()
                    .map(|r| self.approval_info(r))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| internal(&e))?;
                Ok(ControlAnswer::Approvals { items })
            }
            ControlOp::Approve { approval } => {
                self.control_decide(&approval, store::Decision::Approve)
            }
            ControlOp::Refuse { approval, reason } => {
                self.control_decide(&approval, store::Decision::Refuse { reason })
            }
            ControlOp::ListSessions {} => {
                let rows = lock(&self.store).sessions().map_err(|e| internal(&e))?;
                Ok(ControlAnswer::Sessions {
                    items: rows.into_iter().map(session_info).collect(),
                })
            }
            ControlOp::ResetSession { session } => {
                let known = lock(&self.store)
                    .session(&session)
                    .map_err(|e| internal(&e))?
                    .is_some();
                if !known {
                    return Err((
                        ControlErrorCode::NotFound,
                        format!("the gate has no session {session} (it never ran a call)"),
                    ));
                }
                // docs/spec.md §4, "A reset ends the session first": the label never falls
                // while anything of the session runs. Marked first (`sessions.rs`): no call
                // of it reaches the runner from now until the taint is lowered.
                let mark = self.sessions.begin_reset(&session);
                // The runner ends every box and server of the session, its running calls
                // included (they answer `failed` first), and empties its workspace: if it
                // cannot, the taint stays, since they may hold what the session saw.
                let cleared = self.runner.reset(&session).map_err(|why| {
                    (
                        ControlErrorCode::Internal,
                        format!(
                            "the session was not reset: its boxes, servers and workspace could \
                             not be cleared ({why})"
                        ),
                    )
                })?;
                // The stopped calls' answers are committed before the taint is lowered.
                mark.wait_idle(RESET_WAIT).map_err(|left| {
                    (
                        ControlErrorCode::Internal,
                        format!(
                            "the session was not reset: {left} of its calls had not ended {} s \
                             after its boxes were stopped; its taint stays (try again)",
                            RESET_WAIT.as_secs()
                        ),
                    )
                })?;
                let now = self.now();
                let before = lock(&self.store)
                    .reset_session(&session, now)
                    .map_err(|e| internal(&e))?
                    .ok_or_else(|| {
                        (
                            ControlErrorCode::NotFound,
                            format!("the gate has no session {session} (it never ran a call)"),
                        )
                    })?;
                self.audit(
                    now,
                    Event::SessionReset {
                        session: session.clone(),
                        class: before.class,
                        untrusted: before.untrusted,
                        servers_stopped: cleared.servers,
                        workspace_emptied: cleared.workspace,
                    },
                )
                .map_err(|e| internal(&e))?;
                drop(mark);
                let row = lock(&self.store)
                    .session(&session)
                    .map_err(|e| internal(&e))?
                    .ok_or_else(|| {
                        internal(&format!("session {session} vanished after its reset"))
                    })?;
                Ok(ControlAnswer::Session {
                    item: session_info(row),
                })
            }
            ControlOp::ListGrants {} => {
                self.end_remembered_of_ended_sessions();
                let mut items: Vec<GrantInfo> = self
                    .config
                    .grants
                    .iter()
                    .enumerate()
                    .map(|(i, g)| GrantInfo {
                        id: format!("config:{}", i + 1),
                        grant: spec_of_policy(g),
                        scope: None,
                    })
                    .collect();
                let rows = lock(&self.store).grants().map_err(|e| internal(&e))?;
                items.extend(rows.iter().map(grant_info_of_row));
                Ok(ControlAnswer::Grants { items })
            }
            ControlOp::AddGrant { grant } => self.add_grant(grant),
            ControlOp::RevokeGrant { grant } => self.revoke_grant(&grant),
            ControlOp::Check {
                session,
                tool,
                class,
                untrusted,
                at,
            } => {
                let grants = self.grants().map_err(|e| internal(&e))?;
                let now = at.unwrap_or_else(|| self.now());
                let e =
                    policy::explain(&grants, &session, &tool, Taint::new(class, untrusted), now);
                let (decision, reason) = match e.decision {
                    Decision::Allow => (CheckOutcome::Allow, None),
                    Decision::Ask => (CheckOutcome::Ask, None),
                    Decision::Deny(r) => (CheckOutcome::Denied, Some(r)),
                };
                Ok(ControlAnswer::Decision {
                    decision,
                    reason,
                    explain: e.lines.iter().map(ToString::to_string).collect(),
                })
            }
            ControlOp::AuditTail { n } => {
                let path = self.audit_path();
                let n = usize::try_from(n.min(TAIL_MAX)).unwrap_or(0);
                let records = {
                    // Under the writer's lock, so no line is read half-written.
                    let _writer = lock(&self.audit);
                    audit::tail(&path, n).map_err(|e| internal(&e))?
                };
                let mut lines = Vec::with_capacity(records.len());
                // Keep the newest lines that fit one frame with room for the envelope.
                let mut budget = MAX_FRAME.saturating_sub(4096);
                for r in records.iter().rev() {
                    let line = r.to_line().map_err(|e| internal(&e))?;
                    let line = String::from_utf8_lossy(&line).trim_end().to_string();
                    let cost = serde_json::to_string(&line)
                        .map_or(usize::MAX, |s| s.len().saturating_add(1));
                    if cost > budget {
                        break;
                    }
                    budget -= cost;
                    lines.push(line);
                }
                lines.reverse();
                Ok(ControlAnswer::AuditRecords { lines })
            }
            ControlOp::DecideApproval {
                approval,
                choice,
                remember_seconds,
                reason,
                shown,
                via,
                by,
            } => {
                if via == DecidedVia::Client {
                    return Err((
                        ControlErrorCode::BadMessage,
                        "`via: client` is the gate's to write, for decisions through the \
                         decision socket; say cli, page or control"
                            .into(),
                    ));
                }
                let decider = Decider { via, by };
                let row = self.decide_with(
                    &approval,
                    choice,
                    remember_seconds,
                    reason,
                    shown.as_ref(),
                    &decider,
                )?;
                let taint = lock(&self.store)
                    .taint(&row.session)
                    .map_err(|e| internal(&e))?;
                Ok(ControlAnswer::Decided {
                    item: watch::approval_update(row, taint),
                })
            }
            ControlOp::WatchApprovals {
                after,
                limit,
                wait_ms,
                pending_only,
            } => self.watch_approvals(after, limit, wait_ms, pending_only),
            ControlOp::Intent { session, text, via } => self.intent(&session, &text, via),
            ControlOp::AuditVerify {} => {
                // The chain, the log's own checkpoints, and those the config knows of
                // (`[audit] witness_file`, the state directory's latest), by this gate's key.
                let path = self.audit_path();
                let given = anchor::configured(&self.config.audit, &self.config.gate.state)
                    .map_err(|e| (ControlErrorCode::Internal, e))?;
                let verified = {
                    let _writer = lock(&self.audit);
                    anchor::verify(&path, &given, Some(self.audit_public_key()))
                };
                match verified {
                    Ok(ok) => Ok(ControlAnswer::AuditVerified {
                        records: ok.records,
                        first_bad: None,
                        detail: format!(
                            "{} records verify; the chain's head is {}{}; {}",
                            ok.records,
                            ok.last_hash,
                            match &ok.chain {
                                Some(c) => format!(
                                    " (a new chain since {}, the log before it kept as {}; \
                                     {} checkpoints of earlier chains left out)",
                                    c.checkpoint.time.0, c.previous, ok.earlier
                                ),
                                None => String::new(),
                            },
                            match &ok.newest {
                                Some(n) => format!(
                                    "the log extends {} signed checkpoints, the newest of {} \
                                     records",
                                    ok.given + ok.in_log,
                                    n.checkpoint.tree_size
                                ),
                                None => "no signed checkpoint anchors it yet".into(),
                            }
                        ),
                    }),
                    Err(anchor::AnchorError::Chain(
                        e @ audit::VerifyError::Bad { line, seq, .. },
                    )) => Ok(ControlAnswer::AuditVerified {
                        records: line.saturating_sub(1),
                        first_bad: Some(seq.unwrap_or(line)),
                        detail: e.to_string(),
                    }),
                    Err(e) => match e.first_bad() {
                        Some(first) => Ok(ControlAnswer::AuditVerified {
                            records: first.saturating_sub(1),
                            first_bad: Some(first),
                            detail: e.to_string(),
                        }),
                        None => Err(internal(&e)),
                    },
                }
            }
        }
    }

    pub(super) fn control_decide(
        &self,
        approval: &str,
        decision: store::Decision,
    ) -> Result<ControlAnswer, (ControlErrorCode, String)> {
        match self.decide_approval(approval, decision) {
            Ok(row) => Ok(ControlAnswer::Approval {
                item: self
                    .approval_info(row)
                    .map_err(|e| (ControlErrorCode::Internal, e.to_string()))?,
            }),
            Err(GateError::Store(e)) => Err(store_error_code(e)),
            Err(e) => Err((ControlErrorCode::Internal, e.to_string())),
        }
    }

    pub(super) fn add_grant(
        &self,
        spec: GrantSpec,
    ) -> Result<ControlAnswer, (ControlErrorCode, String)> {
        check_pattern(&spec.tool, "tool", is_tool_pattern_byte)?;
        check_pattern(&spec.sessions, "sessions", is_session_pattern_byte)?;
        let now = self.now();
        let new = NewGrant {
            tool: spec.tool.clone(),
            sessions: spec.sessions.clone(),
            effect: spec.effect,
            max_class: Some(spec.max_class),
            if_untrusted: Some(spec.if_untrusted),
            expires: spec.expires,
            added: now,
        };
        let id = lock(&self.store)
            .add_grant(new.clone())
            .map_err(store_error_code)?;
        self.invalidate_grants();
        self.audit(
            now,
            Event::GrantAdded {
                grant: id,
                tool: new.tool,
                sessions: new.sessions,
                effect: new.effect,
                max_class: new.max_class,
                if_untrusted: new.if_untrusted,
                expires: new.expires,
                args_sha256: None,
                approval: None,
            },
        )
        .map_err(|e| (ControlErrorCode::Internal, e.to_string()))?;
        Ok(ControlAnswer::Grant {
            item: GrantInfo {
                id: format!("rt-{id}"),
                grant: spec,
                scope: None,
            },
        })
    }

    pub(super) fn revoke_grant(
        &self,
        grant: &str,
    ) -> Result<ControlAnswer, (ControlErrorCode, String)> {
        if grant.starts_with("config:") {
            return Err((
                ControlErrorCode::Conflict,
                format!("{grant} comes from the config file; change it there and restart"),
            ));
        }
        let id = grant
            .strip_prefix("rt-")
            .and_then(|n| n.parse::<i64>().ok())
            .ok_or_else(|| {
                (
                    ControlErrorCode::NotFound,
                    format!("there is no grant {grant:?} (run-time grants are named rt-N)"),
                )
            })?;
        let now = self.now();
        let row = lock(&self.store)
            .revoke_grant(id, now)
            .map_err(store_error_code)?;
        self.invalidate_grants();
        self.audit(now, Event::GrantRevoked { grant: id })
            .map_err(|e| (ControlErrorCode::Internal, e.to_string()))?;
        Ok(ControlAnswer::Grant {
            item: grant_info_of_row(&row),
        })
    }

    /// Ends the remembered approvals of connection sessions that have ended (docs/spec.md
    /// §6, `statedir::live`): each is revoked, as an operator's revocation is, and audited
    /// `grant_revoked`. A session named by a person never ends; nothing is ended when the
    /// store cannot be read (the listing then says why).
    pub(super) fn end_remembered_of_ended_sessions(&self) {
        let Ok(rows) = lock(&self.store).grants() else {
            return;
        };
        let state = &self.config.gate.state;
        let ended: Vec<i64> = rows
            .iter()
            .filter(|r| r.scope.is_some() && statedir::live::ended(state, &r.sessions))
            .map(|r| r.id)
            .collect();
        if ended.is_empty() {
            return;
        }
        let now = self.now();
        for id in ended {
            if lock(&self.store).revoke_grant(id, now).is_ok() {
                let _ = self.audit(now, Event::GrantRevoked { grant: id });
            }
        }
        self.invalidate_grants();
    }

    /// What the person sees. The taint shown is the session's taint now (the store does not
    /// keep the taint at the moment of asking).
    pub(super) fn approval_info(&self, r: ApprovalRow) -> Result<ApprovalInfo, StoreError> {
        let taint = lock(&self.store).taint(&r.session)?;
        let state = watch::wire_state(&r);
        Ok(ApprovalInfo {
            id: r.id,
            session: r.session,
            call: r.call,
            tool: r.tool,
            arguments: r.arguments,
            reason: r.reason,
            class: taint.class,
            untrusted: taint.untrusted,
            created: r.created,
            expires: r.expires,
            state,
            files: r.files,
            concerns: r.concerns,
        })
    }
}

pub(super) fn policy_effect(e: store::Effect) -> policy::Effect {
    match e {
        store::Effect::Allow => policy::Effect::Allow,
        store::Effect::Ask => policy::Effect::Ask,
        store::Effect::Deny => policy::Effect::Deny,
    }
}

pub(super) fn wire_effect_of_policy(e: policy::Effect) -> control::Effect {
    match e {
        policy::Effect::Allow => control::Effect::Allow,
        policy::Effect::Ask => control::Effect::Ask,
        policy::Effect::Deny => control::Effect::Deny,
    }
}

/// A stored run-time grant as policy takes it (the config's defaults where it has none).
pub(super) fn policy_grant(row: &GrantRow) -> Result<Grant, GateError> {
    let pattern = |text: &str, field| {
        Pattern::new(text).map_err(|source| GateError::BadGrant {
            id: row.id,
            field,
            pattern: text.to_string(),
            source,
        })
    };
    let mut g = Grant::new(pattern(&row.tool, "tool")?, policy_effect(row.effect))
        .sessions(pattern(&row.sessions, "sessions")?)
        .max_class(row.max_class.unwrap_or(DataClass::Secret))
        .if_untrusted(
            row.if_untrusted
                .map_or(policy::Effect::Allow, policy_effect),
        );
    if let Some(t) = row.expires {
        g = g.expires(t);
    }
    Ok(g)
}

pub(super) fn spec_of_policy(g: &Grant) -> GrantSpec {
    GrantSpec {
        tool: g.tool.as_str().to_string(),
        sessions: g.sessions.as_str().to_string(),
        effect: wire_effect_of_policy(g.effect),
        max_class: g.max_class,
        if_untrusted: wire_effect_of_policy(g.if_untrusted),
        expires: g.expires,
    }
}

pub(super) fn spec_of_row(r: &GrantRow) -> GrantSpec {
    GrantSpec {
        tool: r.tool.clone(),
        sessions: r.sessions.clone(),
        effect: r.effect,
        max_class: r.max_class.unwrap_or(DataClass::Secret),
        if_untrusted: r.if_untrusted.unwrap_or(control::Effect::Allow),
        expires: r.expires,
    }
}

/// A run-time grant as `grants` lists it: a remembered approval with its exact arguments.
pub(super) fn grant_info_of_row(r: &GrantRow) -> GrantInfo {
    GrantInfo {
        id: format!("rt-{}", r.id),
        grant: spec_of_row(r),
        scope: r.scope.as_ref().map(|s| control::GrantScope {
            arguments: s.arguments.clone(),
            arguments_sha256: s.args_sha256.clone(),
            approval: s.approval.clone(),
            files: s.files.clone(),
        }),
    }
}

pub(super) fn session_info(r: SessionRow) -> SessionInfo {
    SessionInfo {
        id: r.session,
        class: r.taint.class,
        untrusted: r.taint.untrusted,
        created: r.created,
        updated: r.updated,
    }
}

/// The control error code and sentence for a store refusal.
pub(super) fn store_error_code(e: StoreError) -> (ControlErrorCode, String) {
    let code = match &e {
        StoreError::ApprovalNotFound { .. } | StoreError::GrantNotFound { .. } => {
            ControlErrorCode::NotFound
        }
        StoreError::ApprovalAlreadyDecided { .. }
        | StoreError::ApprovalExpired { .. }
        | StoreError::ApprovalNotApproved { .. }
        | StoreError::ApprovalAlreadyUsed { .. }
        | StoreError::GrantAlreadyRevoked { .. } => ControlErrorCode::Conflict,
        StoreError::RememberRefusal { .. } => ControlErrorCode::BadMessage,
        _ => ControlErrorCode::Internal,
    };
    (code, e.to_string())
}

/// The longest pattern a run-time grant may carry.
const PATTERN_MAX: usize = 256;

pub(super) fn is_tool_pattern_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'*' | b'?')
}

pub(super) fn is_session_pattern_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':' | b'*' | b'?')
}

/// A run-time grant's pattern: not empty, not too long, only the bytes a name it could match
/// may hold plus `*` and `?`.
pub(super) fn check_pattern(
    text: &str,
    field: &str,
    ok: fn(u8) -> bool,
) -> Result<(), (ControlErrorCode, String)> {
    let bad = |why: String| {
        Err((
            ControlErrorCode::BadMessage,
            format!("the grant's {field} pattern {text:?} {why}"),
        ))
    };
    if let Err(e) = Pattern::new(text) {
        return bad(format!("is refused: {e}"));
    }
    if text.len() > PATTERN_MAX {
        return bad(format!("is longer than {PATTERN_MAX} bytes"));
    }
    if let Some(b) = text.bytes().find(|&b| !ok(b)) {
        return bad(format!(
            "holds {:?}, which no {field} name can hold (use letters, digits, `_`, `-`{}, and the globs `*` `?`)",
            char::from(b),
            if field == "sessions" {
                ", `.`, `:`"
            } else {
                ""
            }
        ));
    }
    Ok(())
}
