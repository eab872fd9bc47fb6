#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! docs/spec.md §3.3 on the call path: every step reaches its final answer, taint is committed
//! before an answer is released, and approvals are held, re-checked, refused and expired.

mod common;

use std::time::{Duration, Instant};

use common::*;
use gate::store::{ApprovalFilter, ApprovalReason, ApprovalState};
use proto::control::{ControlAnswer, ControlErrorCode, ControlOp};
use proto::{DataClass, DenyReason, ToolResponse};

fn denied(reason: DenyReason) -> ToolResponse {
    ToolResponse::Denied { reason }
}

fn is_result(r: &ToolResponse) -> bool {
    matches!(r, ToolResponse::Result { .. })
}

#[test]
fn test_call_allowed_runs_and_raises_taint_by_the_result_label() {
    let h = H::new();
    let r = h.call("s1", 1, "read", r#"{"path":"class=internal"}"#);
    assert!(is_result(&r), "{r:?}");
    assert_eq!(h.taint("s1"), (DataClass::Internal, false));
    assert_eq!(h.events(), ["request", "decision", "result"]);
}

#[test]
fn test_call_no_matching_grant_is_denied_no_grant() {
    let h = H::new();
    assert_eq!(
        h.call("s1", 1, "nothing", "{}"),
        denied(DenyReason::NoGrant)
    );
    assert_eq!(h.events(), ["request", "decision"]);
}

#[test]
fn test_call_deny_grant_is_denied_by_grant() {
    let h = H::new();
    assert_eq!(
        h.call("s1", 1, "banned", "{}"),
        denied(DenyReason::DeniedByGrant)
    );
}

#[test]
fn test_call_expired_grant_is_denied_grant_expired() {
    let h = H::new();
    assert_eq!(
        h.call("s1", 1, "old", "{}"),
        denied(DenyReason::GrantExpired)
    );
}

#[test]
fn test_call_after_confidential_result_is_denied_taint_too_high() {
    let h = H::new();
    assert!(is_result(&h.call("s1", 1, "fetch_get", "{}")));
    assert!(is_result(&h.call(
        "s1",
        2,
        "read",
        r#"{"path":"class=confidential"}"#
    )));
    assert_eq!(
        h.call("s1", 3, "fetch_get", "{}"),
        denied(DenyReason::TaintTooHigh)
    );
    // Another session is not affected.
    assert!(is_result(&h.call("s2", 1, "fetch_get", "{}")));
}

#[test]
fn test_call_failed_raises_taint_by_the_tool_floor() {
    let h = H::new();
    let r = h.call("s1", 1, "secret_read", r#"{"path":"fail=no such file"}"#);
    assert_eq!(
        r,
        ToolResponse::Failed {
            message: "no such file".into()
        }
    );
    assert_eq!(h.taint("s1"), (DataClass::Secret, false));
    // A downstream server's exposed tool takes its server's floor (fetch: public, untrusted).
    let r = h.call("s2", 1, "fetch_get", r#"{"fail":"404"}"#);
    assert!(matches!(r, ToolResponse::Failed { .. }));
    assert_eq!(h.taint("s2"), (DataClass::Public, true));
}

#[test]
fn test_ask_then_approve_runs_the_call_once() {
    let h = H::new();
    let (ap, expires, call) = h.call_held("s1", 1, "run", r#"{"argv":["ls"]}"#);
    assert_eq!(expires, T0 + TTL);
    let row = h.store().approval(&ap).unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Pending);
    assert_eq!(row.reason, ApprovalReason::GrantAsk);
    assert_eq!(row.arguments, r#"{"argv":["ls"]}"#);
    match h.control(ControlOp::Approve {
        approval: ap.clone(),
    }) {
        ControlAnswer::Approval { item } => {
            assert_eq!(item.state, proto::control::ApprovalState::Approved);
        }
        other => panic!("{other:?}"),
    }
    let r = call.join().unwrap();
    assert!(is_result(&r), "{r:?}");
    let row = h.store().approval(&ap).unwrap().unwrap();
    assert_eq!(row.state, ApprovalState::Approved);
    assert!(row.used.is_some(), "an approval is consumed when used");
    assert_eq!(
        h.events(),
        [
            "request",
            "decision",
            "approval_asked",
            "approval_decided",
            "decision",
            "result"
        ]
    );
    // The decision made again names the approval.
    assert!(h.audit_text().contains(&format!(
        "\"approval\":\"{ap}\",\"reach\":\"public\",\"prev\""
    )));
}

#[test]
fn test_ask_then_refuse_is_denied_approval_refused() {
    let h = H::new();
    let (ap, _, call) = h.call_held("s1", 1, "run", r#"{"argv":["true"]}"#);
    let a = h.control(ControlOp::Refuse {
        approval: ap.clone(),
        reason: Some("not now".into()),
    });
    assert!(matches!(a, ControlAnswer::Approval { .. }), "{a:?}");
    assert_eq!(call.join().unwrap(), denied(DenyReason::ApprovalRefused));
    assert_eq!(
        h.store().approval(&ap).unwrap().unwrap().note.as_deref(),
        Some("not now")
    );
    assert!(h.audit_text().contains("\"note\":\"not now\""));
    // Nothing ran: no result, no taint.
    assert!(!h.events().contains(&"result".to_string()));
    assert_eq!(h.taint("s1"), (DataClass::Public, false));
}

#[test]
fn test_ask_not_decided_expires_with_nobody_asking() {
    let h = H::new();
    let (ap, expires, call) = h.call_held("s1", 1, "run", r#"{"argv":["true"]}"#);
    // Let the held call fall asleep: only the expiry thread can end it within the bound.
    std::thread::sleep(Duration::from_millis(300));
    h.advance(expires - h.now());
    let start = Instant::now();
    let r = call.join().unwrap();
    assert!(
        start.elapsed() < Duration::from_millis(1500),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(r, denied(DenyReason::ApprovalExpired));
    assert_eq!(
        h.store().approval(&ap).unwrap().unwrap().state,
        ApprovalState::Expired
    );
    assert!(h.events().contains(&"approval_expired".to_string()));
    // Approving it now is a conflict.
    match h.control(ControlOp::Approve { approval: ap }) {
        ControlAnswer::Error { code, .. } => assert_eq!(code, ControlErrorCode::Conflict),
        other => panic!("{other:?}"),
    }
}

#[test]
fn test_approval_is_rechecked_when_the_taint_rose_meanwhile() {
    let h = H::new();
    let (ap, _, call) = h.call_held("s1", 1, "ask_public", "{}");
    // While the person looks, the session reads something confidential.
    assert!(is_result(&h.call(
        "s1",
        2,
        "read",
        r#"{"path":"class=confidential"}"#
    )));
    assert!(matches!(
        h.control(ControlOp::Approve { approval: ap }),
        ControlAnswer::Approval { .. }
    ));
    assert_eq!(call.join().unwrap(), denied(DenyReason::TaintTooHigh));
    let text = h.audit_text();
    let last_decision = text
        .lines()
        .rfind(|l| l.contains("\"event\":\"decision\""))
        .unwrap();
    assert!(
        last_decision.contains("\"reason\":\"taint_too_high\""),
        "{last_decision}"
    );
}

#[test]
fn test_untrusted_content_asks_with_reason_untrusted_content() {
    let h = H::new();
    // Clean: the shell grant allows.
    assert!(is_result(&h.call("s1", 1, "shell", "{}")));
    assert!(is_result(&h.call(
        "s1",
        2,
        "fetch_get",
        r#"{"untrusted":true}"#
    )));
    let (ap, _, call) = h.call_held("s1", 3, "shell", "{}");
    let row = h.store().approval(&ap).unwrap().unwrap();
    assert_eq!(row.reason, ApprovalReason::UntrustedContent);
    match h.control(ControlOp::ListApprovals { all: false }) {
        ControlAnswer::Approvals { items } => {
            assert_eq!(items.len(), 1);
            assert_eq!(
                items[0].reason,
                proto::control::ApprovalReason::UntrustedContent
            );
            assert!(items[0].untrusted);
        }
        other => panic!("{other:?}"),
    }
    h.control(ControlOp::Approve { approval: ap });
    // Ask at the re-check counts as approved: the person approved this exact call.
    assert!(is_result(&call.join().unwrap()));
}

#[test]
fn test_withdraw_ends_the_held_call_failed_and_is_audited() {
    let h = H::new();
    let (ap, _, call) = h.call_held("s1", 1, "run", r#"{"argv":["true"]}"#);
    h.gate.withdraw(&ap).unwrap();
    match call.join().unwrap() {
        ToolResponse::Failed { message } => assert!(message.contains("cancelled"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        h.store().approval(&ap).unwrap().unwrap().state,
        ApprovalState::Withdrawn
    );
    assert!(h.events().contains(&"approval_withdrawn".to_string()));
    assert!(
        h.gate.withdraw(&ap).is_err(),
        "a decided approval is left alone"
    );
}

#[test]
fn test_taint_is_committed_before_the_result_is_released() {
    // The runner's answer is checked against a second handle on the database the instant
    // the gate returns it.
    let h = H::new();
    let r = h.call("s1", 1, "read", r#"{"path":"class=secret;untrusted=true"}"#);
    assert!(is_result(&r));
    assert_eq!(h.taint("s1"), (DataClass::Secret, true));
}

#[test]
fn test_store_failure_after_the_run_withholds_the_result() {
    let dir_holder = std::sync::Arc::new(std::sync::Mutex::new(None::<std::path::PathBuf>));
    let dh = std::sync::Arc::clone(&dir_holder);
    let runner = FakeRunner {
        hook: Some(Box::new(move |_req| {
            // Sabotage: another handle drops the sessions table while the tool runs.
            let path = dh.lock().unwrap().clone().unwrap();
            let conn = rusqlite::Connection::open(path.join("boxmaker.db")).unwrap();
            conn.busy_timeout(Duration::from_secs(5)).unwrap();
            conn.execute_batch("DROP TABLE sessions").unwrap();
        })),
    };
    let h = H::with_runner(Box::new(runner));
    *dir_holder.lock().unwrap() = Some(h.state.clone());
    let r = h.call("s1", 1, "read", r#"{"path":"class=secret;content=TOP"}"#);
    match r {
        ToolResponse::Failed { message } => {
            assert!(message.contains("withheld"), "{message}");
            assert!(!message.contains("ran with"), "no content leaks: {message}");
        }
        other => panic!("the result was released: {other:?}"),
    }
    assert!(!h.events().contains(&"result".to_string()));
}

#[test]
fn test_log_arguments_false_keeps_only_the_hash() {
    let h = H::new();
    h.call("s1", 1, "read", r#"{"path":"/very/private"}"#);
    let text = h.audit_text();
    assert!(!text.contains("/very/private"));
    assert!(text.contains("args_sha256"));
    // Content never reaches the log.
    assert!(!text.contains("ran with"));
}

#[test]
fn test_log_arguments_true_keeps_the_arguments() {
    let cfg = CONFIG.replace("log_arguments = false", "log_arguments = true");
    let h = H::with_config(&cfg, Box::new(FakeRunner { hook: None }));
    h.call("s1", 1, "read", r#"{"path":"/p"}"#);
    assert!(
        h.audit_text()
            .contains(r#""arguments":"{\"path\":\"/p\"}""#)
    );
}

#[test]
fn test_approvals_survive_a_gate_restart_in_their_states() {
    let h = H::new();
    let (used, _, c1) = h.call_held("s1", 1, "run", r#"{"argv":["true"]}"#);
    h.control(ControlOp::Approve {
        approval: used.clone(),
    });
    c1.join().unwrap();
    let (refused, _, c2) = h.call_held("s1", 2, "run", r#"{"argv":["true"]}"#);
    h.control(ControlOp::Refuse {
        approval: refused.clone(),
        reason: None,
    });
    c2.join().unwrap();
    let (withdrawn, _, c3) = h.call_held("s1", 3, "run", r#"{"argv":["true"]}"#);
    h.gate.withdraw(&withdrawn).unwrap();
    c3.join().unwrap();
    let (pending, _, _c4) = h.call_held("s1", 4, "run", r#"{"argv":["true"]}"#);

    // A new gate on the same state directory (the old one still holds its call).
    let clock = std::sync::Arc::clone(&h.clock);
    let gate2 = start_gate(
        h.dir.path(),
        CONFIG,
        &clock,
        Box::new(FakeRunner { hook: None }),
    );
    let states: Vec<_> = match gate2.control(ControlOp::ListApprovals { all: true }) {
        ControlAnswer::Approvals { items } => items.into_iter().map(|i| (i.id, i.state)).collect(),
        other => panic!("{other:?}"),
    };
    use proto::control::ApprovalState as S;
    for (id, state) in [
        (&used, S::Used),
        (&refused, S::Refused),
        (&withdrawn, S::Withdrawn),
        (&pending, S::Pending),
    ] {
        assert!(
            states.contains(&(id.clone(), state)),
            "{id} {state:?} in {states:?}"
        );
    }
    let store = h.store();
    assert_eq!(store.approvals(ApprovalFilter::All).unwrap().len(), 4);
    // Let the held call end.
    h.gate.withdraw(&pending).unwrap();
}

#[test]
fn test_64_concurrent_calls_across_16_sessions_are_all_answered() {
    let h = H::new();
    let classes = ["public", "internal", "confidential", "secret"];
    let mut handles = Vec::new();
    for i in 0..64u64 {
        let gate = std::sync::Arc::clone(&h.gate);
        handles.push(std::thread::spawn(move || {
            let session = format!("s{}", i % 16);
            // Session k sees classes up to index (k % 4).
            let k = (i % 16) as usize;
            let class = classes[((i / 16) as usize).min(k % 4)];
            let r = gate.call(
                req(
                    &session,
                    i,
                    "read",
                    &format!(r#"{{"path":"class={class};sleep_ms=5"}}"#),
                ),
                &mut |p| panic!("{p:?}"),
            );
            assert!(is_result(&r), "{r:?}");
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    for k in 0..16usize {
        let expect: DataClass = classes[k % 4].parse().unwrap();
        assert_eq!(h.taint(&format!("s{k}")), (expect, false), "session s{k}");
    }
    match h.control(ControlOp::AuditVerify {}) {
        ControlAnswer::AuditVerified {
            records, first_bad, ..
        } => {
            assert_eq!(first_bad, None);
            assert_eq!(records, 64 * 3);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn test_a_builtin_call_with_bad_arguments_fails_before_any_person_is_asked() {
    let h = H::new();
    // `run` takes `argv`; `command` is what a model guesses. Nobody may be asked to approve
    // a call that can never run.
    let r = h.call("s1", 1, "argv_run", r#"{"command":"ls"}"#);
    let ToolResponse::Failed { message } = &r else {
        panic!("{r:?}");
    };
    assert!(message.contains("unknown field `command`"), "{message}");
    assert!(
        message.contains("argv"),
        "the decoder's own words name the field: {message}"
    );
    assert!(h.store().approvals(ApprovalFilter::All).unwrap().is_empty());
    assert_eq!(h.events(), ["request", "decision", "result"]);
    // The taint is untouched: nothing ran.
    assert_eq!(h.taint("s1"), (DataClass::Public, false));
    // Good arguments still ask.
    let (approval, _, held) = h.call_held("s1", 2, "argv_run", r#"{"argv":["true"]}"#);
    assert!(approval.starts_with("ap-"));
    h.control(ControlOp::Refuse {
        approval,
        reason: None,
    });
    assert_eq!(held.join().unwrap(), denied(DenyReason::ApprovalRefused));
}

fn capped_config() -> String {
    CONFIG.replace(
        "log_arguments = false",
        "log_arguments = false\nmax_calls_per_session = 2\nmax_pending_per_session = 2",
    )
}

#[test]
fn test_a_session_past_its_pending_cap_is_refused_and_others_are_not() {
    let h = H::with_config(&capped_config(), Box::new(FakeRunner { hook: None }));
    let (_, _, a) = h.call_held("s1", 1, "run", r#"{"argv":["a"]}"#);
    let (_, _, b) = h.call_held("s1", 2, "run", r#"{"argv":["b"]}"#);
    let r = h.call("s1", 3, "run", r#"{"argv":["c"]}"#);
    let ToolResponse::Failed { message } = &r else {
        panic!("{r:?}");
    };
    assert!(message.contains("max_pending_per_session"), "{message}");
    // Another session still asks.
    let (ap, _, c) = h.call_held("s2", 1, "run", r#"{"argv":["d"]}"#);
    assert!(h.audit_text().contains("\"event\":\"cap_reached\""));
    h.advance(TTL + 1);
    for held in [a, b, c] {
        assert_eq!(held.join().unwrap(), denied(DenyReason::ApprovalExpired));
    }
    let _ = ap;
}

#[test]
fn test_a_session_past_its_call_cap_is_refused_at_once_and_others_run() {
    let h = std::sync::Arc::new(H::with_config(
        &capped_config(),
        Box::new(FakeRunner { hook: None }),
    ));
    // Two slow calls fill s1's slots.
    let slow: Vec<_> = (1..=2)
        .map(|i| {
            let h = h.clone();
            std::thread::spawn(move || h.call("s1", i, "read", r#"{"path":"sleep_ms=800"}"#))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let start = Instant::now();
    let r = h.call("s1", 3, "read", r#"{"path":"x"}"#);
    let ToolResponse::Failed { message } = &r else {
        panic!("{r:?}");
    };
    assert!(message.contains("max_calls_per_session"), "{message}");
    assert!(
        start.elapsed() < Duration::from_millis(500),
        "refused at once"
    );
    // s2 is not delayed by s1's flood.
    assert!(is_result(&h.call("s2", 1, "read", r#"{"path":"x"}"#)));
    for t in slow {
        assert!(is_result(&t.join().unwrap()));
    }
    // The slots are given back.
    assert!(is_result(&h.call("s1", 4, "read", r#"{"path":"x"}"#)));
}
