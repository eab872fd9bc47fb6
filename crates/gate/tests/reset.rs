#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The gate's half of docs/spec.md §4, "A reset ends the session first", against a runner
//! end driven by hand over a real `RunnerLink`: the reset reaches the runner after every call
//! the gate sent before it, the gate lowers the taint only once those calls' answers are
//! committed, and a call that comes meanwhile is decided at the lowered taint.

mod common;

use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gate::RunnerLink;
use proto::control::{ControlAnswer, ControlOp};
use proto::run::{
    Order, RunnerAnswer, RunnerReply, read_runner_request as read_frame, write_runner_reply,
};
use proto::{DataClass, ToolResponse};

const STOPPED: &str = "the session was reset by an operator while this call ran; it was stopped";

fn hand_driven() -> (H, UnixStream) {
    let (gate_end, runner_end) = UnixStream::pair().unwrap();
    runner_end
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let link = RunnerLink::new(gate_end.try_clone().unwrap(), gate_end);
    (H::with_config(CONFIG, Box::new(link)), runner_end)
}

fn answer(runner: &mut UnixStream, id: u64, resp: ToolResponse) {
    write_runner_reply(runner, &RunnerReply::answer(id, resp)).unwrap();
}

fn result(class: DataClass) -> ToolResponse {
    ToolResponse::Result {
        content: "x".into(),
        class,
        untrusted: false,
        truncated: false,
    }
}

#[test]
fn test_reset_follows_the_running_call_and_a_new_call_waits_for_the_lowered_taint() {
    let (h, runner) = hand_driven();
    let gate = Arc::clone(&h.gate);
    std::thread::scope(|s| {
        // Owned here, so a failed assertion drops it: the link dies and every waiting call
        // ends, rather than the scope waiting for them forever.
        let mut runner = runner;
        // The session reads a secret.
        let first = s.spawn(|| h.call("s1", 1, "secret_read", r#"{"path":"x"}"#));
        let order = read_frame(&mut runner).unwrap();
        answer(&mut runner, order.id, result(DataClass::Secret));
        assert!(matches!(first.join().unwrap(), ToolResponse::Result { .. }));
        assert_eq!(h.taint("s1").0, DataClass::Secret);

        // A call that runs (the runner holds it) when the operator resets the session.
        let running = s.spawn(|| h.call("s1", 2, "read", r#"{"path":"x"}"#));
        let call = read_frame(&mut runner).unwrap();
        let reset = s.spawn(|| gate.control(ControlOp::ResetSession { session: sid("s1") }));
        // The reset is on the link after the call it must stop.
        let order = read_frame(&mut runner).unwrap();
        assert!(
            matches!(&order.order, Order::ResetSession { session } if session.as_str() == "s1"),
            "{order:?}"
        );
        // A call that comes during the reset: it must not be decided at the old taint.
        let late = s.spawn(|| h.call("s1", 3, "read", r#"{"path":"x"}"#));
        std::thread::sleep(Duration::from_millis(100));
        // The runner stops the running call and answers it, then the reset.
        answer(
            &mut runner,
            call.id,
            ToolResponse::Failed {
                message: STOPPED.into(),
            },
        );
        write_runner_reply(
            &mut runner,
            &RunnerReply::new(
                order.id,
                RunnerAnswer::Reset {
                    servers: 0,
                    workspace: true,
                },
            ),
        )
        .unwrap();
        match reset.join().unwrap() {
            ControlAnswer::Session { item } => assert_eq!(item.class, DataClass::Public),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            running.join().unwrap(),
            ToolResponse::Failed {
                message: STOPPED.into()
            }
        );
        // The late call reaches the runner only now, decided at the lowered taint.
        let order = read_frame(&mut runner).unwrap();
        match &order.order {
            Order::Call { request, class, .. } => {
                assert_eq!(request.call.0, 3);
                assert_eq!(*class, DataClass::Public, "decided at the old taint");
            }
            other => panic!("{other:?}"),
        }
        answer(&mut runner, order.id, result(DataClass::Public));
        assert!(matches!(late.join().unwrap(), ToolResponse::Result { .. }));
    });
    // The stopped call's answer is recorded before the reset, and its floor (the `read`
    // tool's `internal`) raised the taint before the reset lowered it, not after.
    let records: Vec<serde_json::Value> = h
        .audit_text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let pos = |f: &dyn Fn(&serde_json::Value) -> bool| records.iter().position(f).unwrap();
    let stopped = pos(&|r| r["event"] == "result" && r["call"] == 2);
    let reset = pos(&|r| r["event"] == "session_reset");
    let late = pos(&|r| r["event"] == "request" && r["call"] == 3);
    assert_eq!(records[stopped]["outcome"], "failed");
    assert!(stopped < reset && reset < late, "{stopped} {reset} {late}");
    assert_eq!(records[reset]["class"], "secret");
    assert_eq!(h.taint("s1"), (DataClass::Public, false));
}
