//! Watching approvals (docs/spec.md §2.4, `watch_approvals`): every write to an approval
//! takes the next change number in the store, and wakes everyone waiting here, so the
//! approvals page and `boxmaker approvals --watch` see a call the moment it asks.

use super::*;

/// Wakes watchers: a counter bumped (and a condition variable signalled) after every write
/// to an approval.
#[derive(Debug, Default)]
pub(super) struct Changes {
    seen: Mutex<u64>,
    bumped: std::sync::Condvar,
}

impl Gate {
    /// Tells every watcher that an approval changed.
    pub(super) fn changed(&self) {
        let mut n = lock(&self.changes.seen);
        *n = n.wrapping_add(1);
        self.changes.bumped.notify_all();
    }

    /// `watch_approvals`: the approvals changed after `after`, waiting up to `wait_ms`
    /// for one when there are none yet.
    pub(super) fn watch_approvals(
        &self,
        after: u64,
        limit: u64,
        wait_ms: u64,
        pending_only: bool,
    ) -> Result<ControlAnswer, (ControlErrorCode, String)> {
        let internal = |e: StoreError| (ControlErrorCode::Internal, e.to_string());
        let limit = limit.clamp(1, control::WATCH_LIMIT_MAX);
        let deadline =
            Instant::now() + Duration::from_millis(wait_ms.min(control::WATCH_WAIT_MAX_MS));
        loop {
            // Read the counter before the store: a change between the two is not missed.
            let ticket = *lock(&self.changes.seen);
            let (rows, head) = {
                let store = lock(&self.store);
                let rows = store
                    .approval_changes(after, limit, pending_only)
                    .map_err(internal)?;
                (rows, store.approvals_head().map_err(internal)?)
            };
            let now = Instant::now();
            if !rows.is_empty() || now >= deadline {
                let pending = lock(&self.store).pending_count().map_err(internal)?;
                return Ok(ControlAnswer::ApprovalUpdates {
                    items: fit_in_a_frame(rows.into_iter().map(|(r, t)| approval_update(r, t))),
                    head,
                    pending,
                    now: self.now(),
                });
            }
            let mut n = lock(&self.changes.seen);
            while *n == ticket {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                n = self
                    .changes
                    .bumped
                    .wait_timeout(n, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
    }
}

/// An approval as the history shows it, with the session's taint `taint`.
pub(super) fn approval_update(
    r: ApprovalRow,
    taint: store::StoredTaint,
) -> control::ApprovalUpdate {
    let call_sha256 = approvals::call_sha256(&r);
    let state = wire_state(&r);
    let (via, by) = match &r.decider {
        Some(d) => (Some(d.via), Some(d.by.clone())),
        None => (None, None),
    };
    control::ApprovalUpdate {
        change: r.change,
        call_sha256,
        cut: false,
        decided: r.decided,
        via,
        by,
        note: r.note,
        grant: r.grant.map(|g| format!("rt-{g}")),
        item: ApprovalInfo {
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
        },
    }
}

/// The wire's state of an approval (an approved one that ran is `used`).
pub(super) fn wire_state(r: &ApprovalRow) -> control::ApprovalState {
    match r.state {
        ApprovalState::Pending => control::ApprovalState::Pending,
        ApprovalState::Approved if r.used.is_some() => control::ApprovalState::Used,
        ApprovalState::Approved => control::ApprovalState::Approved,
        ApprovalState::Refused => control::ApprovalState::Refused,
        ApprovalState::Expired => control::ApprovalState::Expired,
        ApprovalState::Withdrawn => control::ApprovalState::Withdrawn,
    }
}

/// The room one answer has for its items (a frame less room for the envelope).
const BUDGET: usize = MAX_FRAME - 4096;

/// The longest arguments text an item keeps when it alone would not fit a frame.
const CUT_TO: usize = 64 * 1024;

/// As many updates as fit one frame, in order. An update too large for a frame on its own
/// (arguments near the frame limit, escaped) is sent with its arguments cut and `cut` set:
/// a person is told to decide on it elsewhere, never shown a shortened call as the whole.
fn fit_in_a_frame(
    updates: impl Iterator<Item = control::ApprovalUpdate>,
) -> Vec<control::ApprovalUpdate> {
    let mut out = Vec::new();
    let mut budget = BUDGET;
    for mut u in updates {
        let mut cost = encoded_len(&u);
        if cost > BUDGET {
            let mut end = CUT_TO.min(u.item.arguments.len());
            while !u.item.arguments.is_char_boundary(end) {
                end -= 1;
            }
            u.item.arguments.truncate(end);
            u.cut = true;
            cost = encoded_len(&u);
        }
        if cost > budget {
            break;
        }
        budget -= cost;
        out.push(u);
    }
    out
}

/// The length of `u` encoded, and its comma (counted, not kept).
fn encoded_len(u: &control::ApprovalUpdate) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    serde_json::to_writer(&mut n, u).map_or(usize::MAX, |()| n.0.saturating_add(1))
}
