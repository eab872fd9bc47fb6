//! The sentence a person and a model read when a call is denied (SPEC §5): it starts with
//! `denied: REASON` and says what in the session caused it, so the model stops retrying.

use config::Config;
use policy::{Effect, Grant};
use proto::{DataClass, DenyReason, SessionId, Timestamp};

/// The grants that could have let this call through, ignoring taint.
fn candidates<'a>(
    cfg: &'a Config,
    session: &SessionId,
    tool: &str,
    now: Timestamp,
) -> Vec<&'a Grant> {
    cfg.grants
        .iter()
        .filter(|g| {
            g.tool.matches(tool)
                && g.sessions.matches(session.as_str())
                && g.effect != Effect::Deny
                && g.is_live(now)
        })
        .collect()
}

/// `seen` is the highest class the front has relayed to this session (a lower bound of its
/// taint: the gate may know more).
pub fn denial(
    cfg: &Config,
    session: &SessionId,
    tool: &str,
    reason: DenyReason,
    seen: (DataClass, bool),
    now: Timestamp,
) -> String {
    let why = match reason {
        DenyReason::NoGrant => format!("no grant lets this session call \"{tool}\"; do not retry"),
        DenyReason::GrantExpired => format!(
            "the grant for \"{tool}\" has expired; a person must renew it before it can run"
        ),
        DenyReason::DeniedByGrant => {
            format!("a grant forbids \"{tool}\" for this session; do not retry")
        }
        DenyReason::ApprovalRefused => {
            "a person refused this exact call; do not retry it".to_string()
        }
        DenyReason::ApprovalExpired => {
            "no one approved this call before its approval expired".to_string()
        }
        DenyReason::TaintTooHigh => {
            let grants = candidates(cfg, session, tool, now);
            let limit = grants.iter().map(|g| g.max_class).max();
            let untrusted_deny = grants.iter().all(|g| g.if_untrusted == Effect::Deny);
            match limit {
                Some(max) if seen.0 > max => format!(
                    "this session has read {} data and \"{}\" is limited to {max}",
                    seen.0,
                    grants
                        .iter()
                        .find(|g| g.max_class == max)
                        .map_or(tool, |g| g.tool.as_str())
                ),
                Some(_) if seen.1 && untrusted_deny => format!(
                    "this session has seen untrusted content and \"{tool}\" is refused after that"
                ),
                Some(max) => {
                    format!("this session's taint is above what \"{tool}\" allows ({max} at most)")
                }
                None => format!("this session's taint is too high for \"{tool}\""),
            }
        }
    };
    format!("denied: {reason} — {why}")
}
