#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The control channel over real socketpairs and sockets: every op, the conflicts, and
//! hostile frames.

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

use common::*;
use gate::serve::{SocketError, bind_agent_socket, bind_control_socket};
use proto::control::{
    ApprovalState, CheckOutcome, ControlAnswer, ControlErrorCode, ControlOp, ControlReply,
    ControlRequest, Effect, GrantSpec, read_control_reply, write_control_request,
};
use proto::{DataClass, DenyReason, Timestamp, ToolResponse};

fn error_code(a: ControlAnswer) -> ControlErrorCode {
    match a {
        ControlAnswer::Error { code, detail } => {
            assert!(!detail.is_empty());
            code
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

fn spec(tool: &str, effect: Effect) -> GrantSpec {
    GrantSpec {
        tool: tool.into(),
        sessions: "*".into(),
        effect,
        max_class: DataClass::Secret,
        if_untrusted: Effect::Allow,
        expires: None,
    }
}

#[test]
fn test_control_status() {
    let h = H::new();
    let mut op = Operator::connect(&h.gate);
    match op.ask(ControlOp::Status {}) {
        ControlAnswer::Status {
            version,
            pid,
            config,
            kept,
        } => {
            assert_eq!(version, env!("CARGO_PKG_VERSION"));
            assert_eq!(pid, std::process::id());
            assert_eq!(config, h.gate.config().fingerprint);
            assert!(kept, "a gate nobody marked on demand is kept");
        }
        other => panic!("{other:?}"),
    }
    // A kept gate does not retire; one started on demand does, and its sockets go first.
    match op.ask(ControlOp::Retire {}) {
        ControlAnswer::Error { code, .. } => assert_eq!(code, ControlErrorCode::Conflict),
        other => panic!("{other:?}"),
    }
    assert!(!h.gate.retire_requested());
    h.gate.set_on_demand();
    assert_eq!(op.ask(ControlOp::Retire {}), ControlAnswer::Retiring {});
    assert!(h.gate.retire_requested());
}

#[test]
fn test_control_approve_twice_is_conflict_and_unknown_is_not_found() {
    let h = H::new();
    let mut op = Operator::connect(&h.gate);
    let (ap, _, call) = h.call_held("s1", 1, "run", r#"{"argv":["ls"]}"#);
    match op.ask(ControlOp::ListApprovals { all: false }) {
        ControlAnswer::Approvals { items } => {
            assert_eq!(items.len(), 1);
            assert_eq!(items[0].id, ap);
            assert_eq!(items[0].arguments, r#"{"argv":["ls"]}"#);
            assert_eq!(items[0].state, ApprovalState::Pending);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        op.ask(ControlOp::Approve {
            approval: ap.clone()
        }),
        ControlAnswer::Approval { .. }
    ));
    assert_eq!(
        error_code(op.ask(ControlOp::Approve {
            approval: ap.clone()
        })),
        ControlErrorCode::Conflict
    );
    assert_eq!(
        error_code(op.ask(ControlOp::Refuse {
            approval: ap.clone(),
            reason: None
        })),
        ControlErrorCode::Conflict
    );
    call.join().unwrap();
    assert_eq!(
        error_code(op.ask(ControlOp::Approve {
            approval: "ap-0123456789abcdef".into()
        })),
        ControlErrorCode::NotFound
    );
    assert_eq!(
        error_code(op.ask(ControlOp::Refuse {
            approval: "nonsense".into(),
            reason: Some("x".into())
        })),
        ControlErrorCode::NotFound
    );
    match op.ask(ControlOp::ListApprovals { all: true }) {
        ControlAnswer::Approvals { items } => assert_eq!(items[0].state, ApprovalState::Used),
        other => panic!("{other:?}"),
    }
    match op.ask(ControlOp::ListApprovals { all: false }) {
        ControlAnswer::Approvals { items } => assert!(items.is_empty()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn test_control_approve_past_expiry_is_conflict_and_the_call_is_denied_expired() {
    let h = H::new();
    let mut op = Operator::connect(&h.gate);
    let (ap, expires, call) = h.call_held("s1", 1, "run", r#"{"argv":["true"]}"#);
    h.advance(expires - h.now());
    // Whether the ticker got there first or not, the answer is conflict.
    assert_eq!(
        error_code(op.ask(ControlOp::Approve { approval: ap })),
        ControlErrorCode::Conflict
    );
    assert_eq!(
        call.join().unwrap(),
        ToolResponse::Denied {
            reason: DenyReason::ApprovalExpired
        }
    );
}

#[test]
fn test_control_sessions_list_and_reset_is_audited() {
    let h = H::new();
    let mut op = Operator::connect(&h.gate);
    h.call(
        "s1",
        1,
        "read",
        r#"{"path":"class=confidential;untrusted=true"}"#,
    );
    h.call("s2", 1, "read", r#"{"path":"x"}"#);
    match op.ask(ControlOp::ListSessions {}) {
        ControlAnswer::Sessions { items } => {
            let s: Vec<_> = items
                .iter()
                .map(|i| (i.id.as_str().to_string(), i.class, i.untrusted))
                .collect();
            assert_eq!(
                s,
                [
                    ("s1".to_string(), DataClass::Confidential, true),
                    ("s2".to_string(), DataClass::Public, false)
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    match op.ask(ControlOp::ResetSession { session: sid("s1") }) {
        ControlAnswer::Session { item } => {
            assert_eq!((item.class, item.untrusted), (DataClass::Public, false));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(h.taint("s1"), (DataClass::Public, false));
    assert_eq!(
        error_code(op.ask(ControlOp::ResetSession {
            session: sid("never")
        })),
        ControlErrorCode::NotFound
    );
    let line = h
        .audit_text()
        .lines()
        .find(|l| l.contains("\"event\":\"session_reset\""))
        .unwrap()
        .to_string();
    assert!(
        line.contains("\"class\":\"confidential\",\"untrusted\":true"),
        "{line}"
    );
    // The tail shows the stored lines exactly.
    match op.ask(ControlOp::AuditTail { n: 1 }) {
        ControlAnswer::AuditRecords { lines } => assert_eq!(lines, [line]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn test_control_grants_list_add_revoke_take_effect_and_are_audited() {
    let h = H::new();
    let mut op = Operator::connect(&h.gate);
    match op.ask(ControlOp::ListGrants {}) {
        ControlAnswer::Grants { items } => {
            assert_eq!(items.len(), 9);
            assert_eq!(items[0].id, "config:1");
            assert_eq!(items[0].grant.tool, "read");
            assert_eq!(items[2].grant.max_class, DataClass::Public);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        h.call("s1", 1, "newtool", "{}"),
        ToolResponse::Denied {
            reason: DenyReason::NoGrant
        }
    );
    let id = match op.ask(ControlOp::AddGrant {
        grant: spec("newtool", Effect::Allow),
    }) {
        ControlAnswer::Grant { item } => item.id,
        other => panic!("{other:?}"),
    };
    assert_eq!(id, "rt-1");
    assert!(matches!(
        h.call("s1", 2, "newtool", "{}"),
        ToolResponse::Result { .. }
    ));
    match op.ask(ControlOp::ListGrants {}) {
        ControlAnswer::Grants { items } => {
            assert_eq!(items.len(), 10);
            assert_eq!(items[9].id, "rt-1");
        }
        other => panic!("{other:?}"),
    }
    // A deny added at run time wins.
    op.ask(ControlOp::AddGrant {
        grant: spec("new*", Effect::Deny),
    });
    assert_eq!(
        h.call("s1", 3, "newtool", "{}"),
        ToolResponse::Denied {
            reason: DenyReason::DeniedByGrant
        }
    );
    assert!(matches!(
        op.ask(ControlOp::RevokeGrant {
            grant: "rt-2".into()
        }),
        ControlAnswer::Grant { .. }
    ));
    assert!(matches!(
        h.call("s1", 4, "newtool", "{}"),
        ToolResponse::Result { .. }
    ));
    assert_eq!(
        error_code(op.ask(ControlOp::RevokeGrant {
            grant: "rt-2".into()
        })),
        ControlErrorCode::Conflict
    );
    assert_eq!(
        error_code(op.ask(ControlOp::RevokeGrant {
            grant: "rt-99".into()
        })),
        ControlErrorCode::NotFound
    );
    assert_eq!(
        error_code(op.ask(ControlOp::RevokeGrant {
            grant: "config:1".into()
        })),
        ControlErrorCode::Conflict
    );
    let events = h.events();
    assert_eq!(events.iter().filter(|e| *e == "grant_added").count(), 2);
    assert_eq!(events.iter().filter(|e| *e == "grant_revoked").count(), 1);
}

#[test]
fn test_control_add_grant_with_bad_patterns_is_refused() {
    let h = H::new();
    let mut op = Operator::connect(&h.gate);
    for (tool, sessions) in [
        ("", "*"),
        ("a b", "*"),
        ("x", "s/1"),
        ("x", ""),
        ("x\n", "*"),
    ] {
        let mut g = spec(tool, Effect::Allow);
        g.sessions = sessions.into();
        assert_eq!(
            error_code(op.ask(ControlOp::AddGrant { grant: g })),
            ControlErrorCode::BadMessage,
            "{tool:?} {sessions:?}"
        );
    }
    assert!(!h.events().contains(&"grant_added".to_string()));
}

#[test]
fn test_control_check_explains_without_running() {
    let h = H::new();
    let mut op = Operator::connect(&h.gate);
    match op.ask(ControlOp::Check {
        session: sid("s1"),
        tool: "fetch_get".into(),
        class: DataClass::Internal,
        untrusted: false,
        at: None,
    }) {
        ControlAnswer::Decision {
            decision,
            reason,
            explain,
        } => {
            assert_eq!(decision, CheckOutcome::Denied);
            assert_eq!(reason, Some(DenyReason::TaintTooHigh));
            assert_eq!(explain.len(), 1);
            assert!(explain[0].contains("max_class"), "{explain:?}");
        }
        other => panic!("{other:?}"),
    }
    match op.ask(ControlOp::Check {
        session: sid("s1"),
        tool: "old".into(),
        class: DataClass::Public,
        untrusted: false,
        at: Some(Timestamp(999)),
    }) {
        ControlAnswer::Decision { decision, .. } => assert_eq!(decision, CheckOutcome::Allow),
        other => panic!("{other:?}"),
    }
    assert!(h.events().is_empty(), "check runs nothing and logs nothing");
}

#[test]
fn test_control_audit_verify_passes_after_calls_and_finds_tampering() {
    let h = H::new();
    let mut op = Operator::connect(&h.gate);
    h.call("s1", 1, "read", r#"{"path":"x"}"#);
    let (ap, _, call) = h.call_held("s1", 2, "run", r#"{"argv":["true"]}"#);
    op.ask(ControlOp::Approve { approval: ap });
    call.join().unwrap();
    h.call("s1", 3, "banned", "{}");
    let n = h.events().len() as u64;
    match op.ask(ControlOp::AuditVerify {}) {
        ControlAnswer::AuditVerified {
            records, first_bad, ..
        } => {
            assert_eq!((records, first_bad), (n, None));
        }
        other => panic!("{other:?}"),
    }
    // Change one record: verify names it.
    let path = h.state.join("audit.log");
    let text = std::fs::read_to_string(&path).unwrap();
    let tampered = text.replacen("\"call\":2", "\"call\":7", 1);
    assert_ne!(text, tampered);
    std::fs::write(&path, tampered).unwrap();
    match op.ask(ControlOp::AuditVerify {}) {
        ControlAnswer::AuditVerified { first_bad, .. } => assert_eq!(first_bad, Some(4)),
        other => panic!("{other:?}"),
    }
}

fn raw_exchange(h: &H, bytes: &[u8]) -> ControlReply {
    let (mut client, server) = UnixStream::pair().unwrap();
    let gate = Arc::clone(&h.gate);
    let served = std::thread::spawn(move || gate::serve::serve_control_stream(gate, server));
    client.write_all(bytes).unwrap();
    let reply = read_control_reply(&mut client).unwrap();
    assert!(served.join().unwrap().is_err());
    // Closed after the error.
    assert!(matches!(
        read_control_reply(&mut client),
        Err(proto::FrameError::Closed)
    ));
    reply
}

fn framed(body: &[u8]) -> Vec<u8> {
    let mut v = u32::try_from(body.len()).unwrap().to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

#[test]
fn test_control_hostile_frames_get_an_error_and_the_connection_closes() {
    let h = H::new();
    let cases: [(Vec<u8>, ControlErrorCode); 4] = [
        (framed(b"{oops"), ControlErrorCode::BadFrame),
        (vec![0, 0, 0, 0], ControlErrorCode::BadFrame),
        (
            framed(br#"{"v":2,"id":5,"op":{"kind":"status","body":{}}}"#),
            ControlErrorCode::BadVersion,
        ),
        // A reply where a request belongs.
        (
            framed(br#"{"v":1,"id":5,"reply":{"kind":"status","body":{"version":"x","pid":1}}}"#),
            ControlErrorCode::BadMessage,
        ),
    ];
    for (bytes, code) in cases {
        let reply = raw_exchange(&h, &bytes);
        assert_eq!(reply.id, 0);
        assert_eq!(error_code(reply.reply), code);
    }
    // Another connection keeps working.
    let mut op = Operator::connect(&h.gate);
    assert!(matches!(
        op.ask(ControlOp::Status {}),
        ControlAnswer::Status { .. }
    ));
}

#[test]
fn test_sockets_are_0600_refuse_non_sockets_and_live_ones_replace_stale_ones() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let control = bind_control_socket(&state).unwrap();
    let path = state.join("control.sock");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(
        std::fs::metadata(&state).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // A live one is refused.
    assert!(matches!(
        bind_control_socket(&state),
        Err(SocketError::InUse { .. })
    ));
    drop(control);
    // A stale one is replaced.
    let again = bind_control_socket(&state).unwrap();
    drop(again);
    // A file that is not a socket is left alone.
    std::fs::write(state.join("agent.sock"), b"mine").unwrap();
    assert!(matches!(
        bind_agent_socket(&state),
        Err(SocketError::NotASocket { .. })
    ));
    assert_eq!(std::fs::read(state.join("agent.sock")).unwrap(), b"mine");
    // No temporary directory is left behind.
    let names: Vec<_> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}

#[test]
fn test_accept_loop_serves_control_over_a_real_socket() {
    let h = H::new();
    let listener = bind_control_socket(&h.state).unwrap();
    let gate = Arc::clone(&h.gate);
    std::thread::spawn(move || {
        gate::serve::accept_loop(listener, move |s| {
            let _ = gate::serve::serve_control_stream(Arc::clone(&gate), s);
        })
    });
    for id in 1..=3u64 {
        let mut s = UnixStream::connect(h.state.join("control.sock")).unwrap();
        write_control_request(&mut s, &ControlRequest::new(id, ControlOp::Status {})).unwrap();
        let reply = read_control_reply(&mut s).unwrap();
        assert_eq!(reply.id, id);
        assert!(matches!(reply.reply, ControlAnswer::Status { .. }));
    }
}
