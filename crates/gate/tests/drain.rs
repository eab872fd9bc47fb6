#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! A gate that stops taking connections drains the agent connections a front keeps between
//! calls (docs/spec.md §5): an idle one ends at once; a request the gate already has is
//! answered first; a held call stays held and is answered, never withdrawn; and a request
//! written after the drain fails to send, so the front knows it never reached the gate.

mod common;

use std::io::ErrorKind;

use common::*;
use gate::store::ApprovalState;
use proto::control::{ControlAnswer, ControlOp};
use proto::{Envelope, FrameError, Message, ToolResponse, read_frame, write_frame};

fn expect_end(agent: &mut Agent) {
    match read_frame(&mut agent.stream) {
        Err(FrameError::Closed) => {}
        other => panic!("expected the gate to end the connection, got {other:?}"),
    }
}

fn is_result(env: &Envelope) -> bool {
    matches!(env.msg, Message::ToolResponse(ToolResponse::Result { .. }))
}

#[test]
fn an_idle_kept_connection_ends_when_the_gate_drains_and_a_later_request_never_sends() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    // One call, answered: the connection is now what a front keeps between calls.
    a.request(1, req("s", 1, "read", r#"{"path":"x"}"#));
    assert!(is_result(&a.recv()));
    h.gate.drain_agent_connections();
    expect_end(&mut a);
    a.served.join().unwrap().unwrap();
    // The gate's side is closed: the next request cannot be sent on it (EPIPE), which is
    // how a front knows to send it on a new connection.
    let err = write_frame(
        &mut a.stream,
        &Envelope::request(2, req("s", 2, "read", r#"{"path":"x"}"#)),
    )
    .unwrap_err();
    match err {
        FrameError::Io(e) => assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}"),
        other => panic!("expected a broken pipe, got {other:?}"),
    }
    // Nothing of it reached the gate: one request record, the first call's.
    let requests = h.events().iter().filter(|e| *e == "request").count();
    assert_eq!(requests, 1, "{:?}", h.events());
}

#[test]
fn a_request_sent_before_the_drain_is_answered_before_the_connection_ends() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    // Written, then the gate drains before (or while) it reads it: it is still answered.
    a.request(1, req("s", 1, "read", r#"{"path":"x"}"#));
    h.gate.drain_agent_connections();
    let env = a.recv();
    assert_eq!(env.id, 1);
    assert!(is_result(&env), "{env:?}");
    expect_end(&mut a);
    a.served.join().unwrap().unwrap();
}

#[test]
fn a_held_call_on_a_drained_connection_stays_held_and_is_answered() {
    let h = H::new();
    let mut a = Agent::connect(&h.gate);
    a.request(7, req("s", 1, "run", r#"{"argv":["/bin/true"]}"#));
    let pending = a.recv();
    let approval = match pending.msg {
        Message::ToolResponse(ToolResponse::PendingApproval { approval, .. }) => approval,
        other => panic!("expected pending_approval, got {other:?}"),
    };
    h.gate.drain_agent_connections();
    // Not withdrawn: the agent did not go away, the gate only stopped taking requests.
    let store = h.store();
    assert_eq!(
        store.approval(&approval).unwrap().unwrap().state,
        ApprovalState::Pending
    );
    let answer = h.control(ControlOp::Approve {
        approval: approval.clone(),
    });
    assert!(!matches!(answer, ControlAnswer::Error { .. }), "{answer:?}");
    let env = a.recv();
    assert_eq!(env.id, 7);
    assert!(env.r#final);
    assert!(is_result(&env), "{env:?}");
    // Its last call answered, the drained connection ends.
    expect_end(&mut a);
    a.served.join().unwrap().unwrap();
}

#[test]
fn a_request_on_a_connection_made_after_the_drain_is_answered_or_never_sent() {
    let h = H::new();
    h.gate.drain_agent_connections();
    for call in 1..=20u64 {
        let mut a = Agent::connect(&h.gate);
        let sent = write_frame(
            &mut a.stream,
            &Envelope::request(3, req("s", call, "read", r#"{"path":"x"}"#)),
        );
        match sent {
            // Sent: the gate has it, and answers it before the connection ends.
            Ok(()) => {
                let env = a.recv();
                assert_eq!(env.id, 3);
                assert!(is_result(&env), "{env:?}");
            }
            // Never reached the gate: the peer knows, and can send it elsewhere.
            Err(FrameError::Io(e)) => assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}"),
            Err(other) => panic!("{other:?}"),
        }
        expect_end(&mut a);
    }
}
