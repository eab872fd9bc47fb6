#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The agent connection over real socketpairs: answers carry their request's id, pending
//! then final; hostile frames and messages get an `error` and the connection is closed,
//! while other connections keep working; a disconnect withdraws held approvals.

mod common;

use std::io::{Read, Write};

use common::*;
use gate::serve::ServeError;
use gate::store::ApprovalState;
use proto::control::{ControlAnswer, ControlOp};
use proto::{
    DataClass, DenyReason, Envelope, ErrorCode, FrameError, Message, ToolResponse, WireError,
    read_frame,
};

fn expect_error(env: &Envelope, id: u64, code: ErrorCode) {
    assert!(env.r#final);
    assert_eq!(env.id, id, "{env:?}");
    match &env.msg {
        Message::Error(WireError { code: c, .. }) => assert_eq!(*c, code, "{env:?}"),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// After an error the gate closes the connection: the next read sees the end.
fn expect_closed(agent: &mut Agent) {
    match read_frame(&mut agent.stream) {
        Err(FrameError::Closed) => {}
        other => panic!("expected the connection closed, got {other:?}"),
    }
}

fn works(h: &H) {
    let mut other = Agent::connect(&h.gate);
    other.request(9, req("ok", 1, "read", r#"{"path":"x"}"#));
    let env = other.recv();
    assert_eq!(env.id, 9);
    assert!(matches!(
        env.msg,
        Message::ToolResponse(ToolResponse::Result { .. })
    ));
}

#[test]
fn test_agent_request_gets_its_answer_with_the_same_id() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.request(41, req("s1", 1, "read", r#"{"path":"class=secret"}"#));
    a.request(42, req("s1", 2, "nothing", "{}"));
    let mut got = [a.recv(), a.recv()];
    got.sort_by_key(|e| e.id);
    assert!(got.iter().all(|e| e.r#final));
    assert!(matches!(
        got[0].msg,
        Message::ToolResponse(ToolResponse::Result { .. })
    ));
    assert_eq!(
        got[1].msg,
        Message::ToolResponse(ToolResponse::Denied {
            reason: DenyReason::NoGrant
        })
    );
    drop(a.stream);
    a.served.join().unwrap().unwrap();
}

#[test]
fn test_agent_result_taint_is_on_disk_when_the_client_receives_it() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    for call in 0..5u64 {
        let session = format!("t{call}");
        a.request(
            call,
            req(
                &session,
                call,
                "read",
                r#"{"path":"class=secret;untrusted=true"}"#,
            ),
        );
        let env = a.recv();
        assert!(matches!(
            env.msg,
            Message::ToolResponse(ToolResponse::Result { .. })
        ));
        // Right now, from another handle, as another process would.
        assert_eq!(h.taint(&session), (DataClass::Secret, true));
    }
}

#[test]
fn test_agent_pending_then_final_and_a_held_call_does_not_block_others() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.request(1, req("s1", 1, "run", r#"{"argv":["true"]}"#));
    let pending = a.recv();
    assert_eq!(pending.id, 1);
    assert!(!pending.r#final);
    let ap = match pending.msg {
        Message::ToolResponse(ToolResponse::PendingApproval { approval, expires }) => {
            assert_eq!(expires.0, T0 + TTL);
            approval
        }
        other => panic!("{other:?}"),
    };
    // Another call on the same connection goes through while the first waits.
    a.request(2, req("s1", 2, "read", r#"{"path":"x"}"#));
    let env = a.recv();
    assert_eq!(env.id, 2);
    let mut op = Operator::connect(&h.gate);
    assert!(matches!(
        op.ask(ControlOp::Approve { approval: ap }),
        ControlAnswer::Approval { .. }
    ));
    let fin = a.recv();
    assert_eq!(fin.id, 1);
    assert!(fin.r#final);
    assert!(matches!(
        fin.msg,
        Message::ToolResponse(ToolResponse::Result { .. })
    ));
}

#[test]
fn test_agent_bad_frame_gets_bad_frame_id_0_and_is_closed() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    let body = b"{not json";
    a.stream
        .write_all(&u32::try_from(body.len()).unwrap().to_be_bytes())
        .unwrap();
    a.stream.write_all(body).unwrap();
    expect_error(&a.recv(), 0, ErrorCode::BadFrame);
    expect_closed(&mut a);
    assert!(matches!(
        a.served.join().unwrap(),
        Err(ServeError::BadFrame(_))
    ));
    works(&h);
}

#[test]
fn test_agent_oversized_length_gets_bad_frame_before_any_body() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.stream.write_all(&u32::MAX.to_be_bytes()).unwrap();
    expect_error(&a.recv(), 0, ErrorCode::BadFrame);
    expect_closed(&mut a);
    works(&h);
}

#[test]
fn test_agent_bad_version_gets_bad_version() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    let mut env = Envelope::request(5, req("s1", 1, "read", r#"{"path":"x"}"#));
    env.v = 2;
    a.send(&env);
    expect_error(&a.recv(), 0, ErrorCode::BadVersion);
    expect_closed(&mut a);
    works(&h);
}

#[test]
fn test_agent_tool_response_gets_bad_message_and_is_closed() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.send(&Envelope::response(
        7,
        ToolResponse::Failed {
            message: "x".into(),
        },
    ));
    expect_error(&a.recv(), 7, ErrorCode::BadMessage);
    expect_closed(&mut a);
    assert!(matches!(
        a.served.join().unwrap(),
        Err(ServeError::BadMessage(_))
    ));
    works(&h);
}

#[test]
fn test_agent_error_envelope_gets_bad_message() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.send(&Envelope::error(3, ErrorCode::Internal, "hi"));
    expect_error(&a.recv(), 3, ErrorCode::BadMessage);
    expect_closed(&mut a);
}

#[test]
fn test_agent_request_not_final_gets_bad_message() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.send(&Envelope::new(
        8,
        false,
        Message::ToolRequest(req("s1", 1, "read", r#"{"path":"x"}"#)),
    ));
    expect_error(&a.recv(), 8, ErrorCode::BadMessage);
    expect_closed(&mut a);
    works(&h);
}

#[test]
fn test_agent_duplicate_id_in_flight_gets_bad_message_and_withdraws() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.request(1, req("s1", 1, "run", r#"{"argv":["true"]}"#));
    let ap = match a.recv().msg {
        Message::ToolResponse(ToolResponse::PendingApproval { approval, .. }) => approval,
        other => panic!("{other:?}"),
    };
    a.request(1, req("s1", 2, "read", r#"{"path":"x"}"#));
    expect_error(&a.recv(), 1, ErrorCode::BadMessage);
    expect_closed(&mut a);
    eventually("the held approval is withdrawn", || {
        h.store().approval(&ap).unwrap().unwrap().state == ApprovalState::Withdrawn
    });
}

#[test]
fn test_agent_disconnect_withdraws_held_approvals() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.request(1, req("s1", 1, "run", r#"{"argv":["true"]}"#));
    let ap = match a.recv().msg {
        Message::ToolResponse(ToolResponse::PendingApproval { approval, .. }) => approval,
        other => panic!("{other:?}"),
    };
    drop(a.stream);
    a.served.join().unwrap().unwrap();
    assert_eq!(
        h.store().approval(&ap).unwrap().unwrap().state,
        ApprovalState::Withdrawn
    );
    assert!(h.events().contains(&"approval_withdrawn".to_string()));
}

#[test]
fn test_agent_truncated_frame_closes_without_answer() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.stream.write_all(&[0, 0, 0, 50, b'{']).unwrap();
    a.stream.shutdown(std::net::Shutdown::Write).unwrap();
    let mut rest = Vec::new();
    a.stream.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "no answer to a frame cut short");
    assert!(matches!(a.served.join().unwrap(), Err(ServeError::Io(_))));
}

#[test]
fn test_agent_64_concurrent_calls_over_4_connections_across_16_sessions() {
    let h = H::new();
    let classes = ["public", "internal", "confidential", "secret"];
    let mut agents: Vec<Agent> = (0..4).map(|_| Agent::connect(&h.gate)).collect();
    for i in 0..64u64 {
        let k = i % 16;
        let class = classes[((i / 16) as usize).min((k % 4) as usize)];
        let a = &mut agents[(i % 4) as usize];
        a.request(
            i,
            req(
                &format!("s{k}"),
                i,
                "read",
                &format!(r#"{{"path":"class={class};sleep_ms=20"}}"#),
            ),
        );
    }
    let mut ids = Vec::new();
    for a in &mut agents {
        for _ in 0..16 {
            let env = a.recv();
            assert!(env.r#final);
            assert!(matches!(
                env.msg,
                Message::ToolResponse(ToolResponse::Result { .. })
            ));
            ids.push(env.id);
        }
    }
    ids.sort_unstable();
    assert_eq!(ids, (0..64).collect::<Vec<_>>());
    for k in 0..16usize {
        let expect: DataClass = classes[k % 4].parse().unwrap();
        assert_eq!(h.taint(&format!("s{k}")), (expect, false));
    }
}

// --- the client's trace context (docs/spec.md §2.2, §8) ----------------------------------

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Traces the gate's calls into a channel; the records it gets.
fn traced(h: &H) -> std::sync::mpsc::Receiver<proto::telemetry::Item> {
    let (tx, rx) = std::sync::mpsc::sync_channel(64);
    h.gate
        .set_telemetry(std::sync::Arc::new(gate::telemetry::Calls::with_sender(tx)));
    rx
}

fn next_call(
    rx: &std::sync::mpsc::Receiver<proto::telemetry::Item>,
) -> proto::telemetry::CallTrace {
    loop {
        match rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap() {
            proto::telemetry::Item::Call { trace } => return *trace,
            _ => continue,
        }
    }
}

#[test]
fn a_call_context_that_smuggles_text_in_its_traceparent_gets_bad_message() {
    let h = H::new();
    let rx = traced(&h);
    let mut a = Agent::connect(&h.gate);
    // Refused at the context frame itself: a request written after it would sit unread
    // when the gate closes (and reset the connection), so none is sent.
    a.send(&Envelope::context(4, format!("{TRACEPARENT}\nsecret text")));
    expect_error(&a.recv(), 4, ErrorCode::BadMessage);
    expect_closed(&mut a);
    assert!(
        rx.try_recv().is_err(),
        "the call did not run, so nothing was traced"
    );
    works(&h);
}

#[test]
fn a_call_context_sent_final_gets_bad_message() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    let mut env = Envelope::context(4, TRACEPARENT);
    env.r#final = true;
    a.send(&env);
    expect_error(&a.recv(), 4, ErrorCode::BadMessage);
    expect_closed(&mut a);
    works(&h);
}

#[test]
fn a_call_context_goes_only_to_the_request_with_its_id() {
    let h = H::new();
    let rx = traced(&h);
    let mut a = Agent::connect(&h.gate);
    // A context for id 5, then a request with id 6: the request is not in that trace.
    a.send(&Envelope::context(5, TRACEPARENT));
    a.request(6, req("s1", 1, "read", r#"{"path":"x"}"#));
    assert_eq!(a.recv().id, 6);
    assert_eq!(next_call(&rx).traceparent, None);
    // And one for id 7 with the request 7 is.
    a.send(&Envelope::context(7, TRACEPARENT));
    a.request(7, req("s1", 2, "read", r#"{"path":"x"}"#));
    assert_eq!(a.recv().id, 7);
    let t = next_call(&rx);
    assert_eq!(t.traceparent.as_deref(), Some(TRACEPARENT));
    assert_eq!(t.decision, Some(proto::telemetry::Verdict::Allow));
    // The next request on the connection has none left over.
    a.request(8, req("s1", 3, "read", r#"{"path":"x"}"#));
    assert_eq!(a.recv().id, 8);
    assert_eq!(next_call(&rx).traceparent, None);
}

#[test]
fn a_held_call_is_traced_with_its_wait_and_the_pending_count() {
    let h = H::new();
    let rx = traced(&h);
    let mut a = Agent::connect(&h.gate);
    a.request(1, req("s1", 1, "run", r#"{"argv":["true"]}"#));
    let ap = match a.recv().msg {
        Message::ToolResponse(ToolResponse::PendingApproval { approval, .. }) => approval,
        other => panic!("{other:?}"),
    };
    h.control(ControlOp::Approve { approval: ap });
    let fin = a.recv();
    assert!(fin.r#final);
    let mut pending = Vec::new();
    let trace = loop {
        match rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap() {
            proto::telemetry::Item::Pending { count } => pending.push(count),
            proto::telemetry::Item::Call { trace } => break *trace,
            proto::telemetry::Item::Floated { .. } => {}
        }
    };
    assert_eq!(pending, vec![1, 0]);
    assert_eq!(trace.decision, Some(proto::telemetry::Verdict::Ask));
    let wait = trace.approval.clone().expect("the wait is traced");
    assert_eq!(wait.outcome, proto::telemetry::ApprovalEnd::Approved);
    assert_eq!(wait.via.as_deref(), Some("control"));
    assert!(wait.start_ns <= wait.end_ns && wait.end_ns <= trace.end_ns);
    // Nothing of the arguments anywhere in the record.
    assert!(!format!("{trace:?}").contains("argv"));
}

#[test]
fn a_tool_name_the_caller_made_up_is_not_exported() {
    // The name is the caller's: a hijacked agent (or a front it took over) spells what it
    // read into a name no tool has, or under a server's prefix, and the call is refused —
    // the name must not reach telemetry.
    let h = H::new();
    let rx = traced(&h);
    let mut a = Agent::connect(&h.gate);
    a.request(1, req("s1", 1, "exfil-c2VjcmV0LXRleHQ", "{}"));
    assert_eq!(a.recv().id, 1);
    let t = next_call(&rx);
    assert!(!format!("{t:?}").contains("c2VjcmV0"), "{t:?}");
    a.request(2, req("s1", 2, "job_c2VjcmV0LXRleHQ", "{}"));
    assert_eq!(a.recv().id, 2);
    let t = next_call(&rx);
    assert!(!format!("{t:?}").contains("c2VjcmV0"), "{t:?}");
    // A builtin tool of the config is named.
    a.request(3, req("s1", 3, "read", r#"{"path":"x"}"#));
    assert_eq!(a.recv().id, 3);
    assert!(format!("{:?}", next_call(&rx)).contains("\"read\""));
}
