//! The decision socket's requests (docs/spec.md §2.5, `proto::decide`): a front shows a person
//! one pending approval of its own session and passes on their answer. [`Gate::decide_for_client`]
//! answers them, allowlist style, under these rules — the whole of what a front can do here:
//! - only when the config says `[gate] approve_in_client = true` (else `not_allowed`, and the
//!   socket is not even bound);
//! - only for an approval of the session the front names, that is pending, and that a call
//!   of this gate is waiting on (one a previous gate left, or one that ended, is `conflict`;
//!   one of another session is `not_found`, the same answer as an unknown id);
//! - a decision must carry the digest of what was shown ([`Shown::call_sha256`]): the exact
//!   approval, session, call, tool and arguments; another call's digest is `conflict`;
//! - the decision is recorded as coming `via: client`, `by` the gate's own words naming the
//!   session, never the front's.
//!
//! Whoever controls the agent's client answers here: that is what the config opts into.

use proto::decide::{DecideAnswer, DecideErrorCode, DecideOp};

use super::*;

type Refusal = (DecideErrorCode, String);

impl Gate {
    /// Answers one request of the decision socket.
    pub fn decide_for_client(&self, op: DecideOp) -> DecideAnswer {
        match self.try_decide_for_client(op) {
            Ok(answer) => answer,
            Err((code, detail)) => DecideAnswer::Error { code, detail },
        }
    }

    fn try_decide_for_client(&self, op: DecideOp) -> Result<DecideAnswer, Refusal> {
        if !self.config.gate.approve_in_client {
            return Err((
                DecideErrorCode::NotAllowed,
                "this gate's config does not let a person approve in the agent's client \
                 (`[gate] approve_in_client` is false)"
                    .into(),
            ));
        }
        match op {
            DecideOp::Show { session, approval } => {
                let row = self.client_approval(&session, &approval)?;
                let taint = lock(&self.store)
                    .taint(&row.session)
                    .map_err(|e| (DecideErrorCode::Internal, e.to_string()))?;
                let update = watch::approval_update(row, taint);
                Ok(DecideAnswer::Shown {
                    item: update.item,
                    call_sha256: update.call_sha256,
                })
            }
            DecideOp::Decide {
                session,
                approval,
                choice,
                remember_seconds,
                shown,
            } => {
                self.client_approval(&session, &approval)?;
                let decider = Decider {
                    via: DecidedVia::Client,
                    by: format!("the MCP client of session {session} (elicitation)"),
                };
                let row = self
                    .decide_with(
                        &approval,
                        choice,
                        remember_seconds,
                        None,
                        Some(&shown),
                        &decider,
                    )
                    .map_err(|(code, detail)| (decide_code(code), detail))?;
                Ok(DecideAnswer::Decided {
                    state: watch::wire_state(&row),
                    grant: row.grant.map(|g| format!("rt-{g}")),
                })
            }
        }
    }

    /// The approval `approval` if it belongs to `session`, is pending, and a call of this
    /// gate waits on it.
    fn client_approval(&self, session: &SessionId, approval: &str) -> Result<ApprovalRow, Refusal> {
        let not_found = || {
            (
                DecideErrorCode::NotFound,
                format!("session {session} has no approval {approval}"),
            )
        };
        let row = lock(&self.store)
            .approval(approval)
            .map_err(|e| (DecideErrorCode::Internal, e.to_string()))?
            .ok_or_else(not_found)?;
        if &row.session != session {
            return Err(not_found());
        }
        if row.state != ApprovalState::Pending {
            return Err((
                DecideErrorCode::Conflict,
                format!("approval {approval} is already {}", row.state),
            ));
        }
        if !lock(&self.live).contains(approval) {
            return Err((
                DecideErrorCode::Conflict,
                format!("no call of this gate waits on approval {approval}"),
            ));
        }
        Ok(row)
    }
}

fn decide_code(code: ControlErrorCode) -> DecideErrorCode {
    match code {
        ControlErrorCode::BadFrame => DecideErrorCode::BadFrame,
        ControlErrorCode::BadVersion => DecideErrorCode::BadVersion,
        ControlErrorCode::BadMessage => DecideErrorCode::BadMessage,
        ControlErrorCode::NotFound => DecideErrorCode::NotFound,
        ControlErrorCode::Conflict => DecideErrorCode::Conflict,
        ControlErrorCode::Internal => DecideErrorCode::Internal,
    }
}
