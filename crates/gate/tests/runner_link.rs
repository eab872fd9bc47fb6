#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The gate's side of the runner connection against a hostile or dying runner: every
//! waiting and later call gets `failed`, never silence, never a hang.

mod common;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use gate::{RunnerLink, ToolRunner};
use policy::Taint;
use proto::run::{
    Order, RunnerAnswer, RunnerReply, RunnerRequest, read_runner_request as read_frame,
    write_runner_reply,
};
use proto::{DataClass, DenyReason, ErrorCode, ToolResponse};

/// The runner's side of a reply to a call.
fn answer(runner: &mut UnixStream, id: u64, resp: ToolResponse) {
    write_runner_reply(runner, &RunnerReply::answer(id, resp)).unwrap();
}

fn new_link() -> (Arc<RunnerLink>, UnixStream) {
    let (gate_end, runner_end) = UnixStream::pair().unwrap();
    runner_end
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let link = RunnerLink::new(gate_end.try_clone().unwrap(), gate_end);
    (Arc::new(link), runner_end)
}

fn start_call(link: &Arc<RunnerLink>, call: u64) -> std::thread::JoinHandle<ToolResponse> {
    let link = Arc::clone(link);
    std::thread::spawn(move || link.run(&req("s1", call, "read", r#"{"path":"x"}"#), Taint::CLEAN))
}

fn assert_stopped(r: &ToolResponse) {
    match r {
        ToolResponse::Failed { message } => {
            assert!(message.contains("the runner stopped"), "{message}");
        }
        other => panic!("expected failed, got {other:?}"),
    }
}

fn result() -> ToolResponse {
    ToolResponse::Result {
        content: "x".into(),
        class: DataClass::Public,
        untrusted: false,
        truncated: false,
    }
}

#[test]
fn test_link_runner_dies_mid_call_fails_waiting_and_later_calls() {
    let (link, mut runner) = new_link();
    let a = start_call(&link, 1);
    let b = start_call(&link, 2);
    read_frame(&mut runner).unwrap();
    read_frame(&mut runner).unwrap();
    drop(runner);
    assert_stopped(&a.join().unwrap());
    assert_stopped(&b.join().unwrap());
    assert!(link.dead_reason().unwrap().contains("closed"));
    assert_stopped(&link.run(&req("s1", 3, "read", r#"{"path":"x"}"#), Taint::CLEAN));
}

#[test]
fn test_link_unknown_id_is_misbehaviour_and_fails_the_call() {
    let (link, mut runner) = new_link();
    let a = start_call(&link, 1);
    let env = read_frame(&mut runner).unwrap();
    answer(&mut runner, env.id + 1000, result());
    assert_stopped(&a.join().unwrap());
    assert!(link.dead_reason().unwrap().contains("not waiting"));
}

#[test]
fn test_link_denied_or_pending_from_the_runner_is_misbehaviour() {
    for bad in [
        ToolResponse::Denied {
            reason: DenyReason::NoGrant,
        },
        ToolResponse::PendingApproval {
            approval: "ap-0000000000000000".into(),
            expires: proto::Timestamp(1),
        },
    ] {
        let (link, mut runner) = new_link();
        let a = start_call(&link, 1);
        let env = read_frame(&mut runner).unwrap();
        answer(&mut runner, env.id, bad.clone());
        assert_stopped(&a.join().unwrap());
        assert!(
            link.dead_reason()
                .unwrap()
                .contains("only the gate may say")
        );
    }
}

#[test]
fn test_link_answer_twice_kills_the_link() {
    let (link, mut runner) = new_link();
    let a = start_call(&link, 1);
    let env = read_frame(&mut runner).unwrap();
    answer(&mut runner, env.id, result());
    assert_eq!(a.join().unwrap(), result());
    let b = start_call(&link, 2);
    let env2 = read_frame(&mut runner).unwrap();
    assert_ne!(env.id, env2.id, "ids are fresh per request");
    answer(&mut runner, env.id, result());
    assert_stopped(&b.join().unwrap());
}

#[test]
fn test_link_garbage_and_error_envelopes_fail_calls() {
    let (link, mut runner) = new_link();
    let a = start_call(&link, 1);
    read_frame(&mut runner).unwrap();
    runner.write_all(&[0, 0, 0, 3, b'x', b'y', b'z']).unwrap();
    assert_stopped(&a.join().unwrap());

    let (link, mut runner) = new_link();
    let a = start_call(&link, 1);
    read_frame(&mut runner).unwrap();
    write_runner_reply(
        &mut runner,
        &RunnerReply::error(0, ErrorCode::BadFrame, "no"),
    )
    .unwrap();
    assert_stopped(&a.join().unwrap());

    let (link, mut runner) = new_link();
    let a = start_call(&link, 1);
    let env = read_frame(&mut runner).unwrap();
    // A reset's answer to a call.
    write_runner_reply(
        &mut runner,
        &RunnerReply::new(
            env.id,
            RunnerAnswer::Reset {
                servers: 0,
                workspace: true,
            },
        ),
    )
    .unwrap();
    assert_stopped(&a.join().unwrap());
}

#[test]
fn test_link_a_call_carries_the_committed_taint() {
    let (link, mut runner) = new_link();
    let l = Arc::clone(&link);
    let a = std::thread::spawn(move || {
        l.run(
            &req("s1", 1, "read", r#"{"path":"x"}"#),
            Taint::new(DataClass::Confidential, true),
        )
    });
    let r: RunnerRequest = read_frame(&mut runner).unwrap();
    match r.order {
        Order::Call {
            class, untrusted, ..
        } => assert_eq!((class, untrusted), (DataClass::Confidential, true)),
        other => panic!("{other:?}"),
    }
    answer(&mut runner, r.id, result());
    assert_eq!(a.join().unwrap(), result());
}

#[test]
fn test_gate_with_dead_runner_answers_failed_and_raises_by_the_floor() {
    let (gate_end, runner_end) = UnixStream::pair().unwrap();
    drop(runner_end);
    let link = RunnerLink::new(gate_end.try_clone().unwrap(), gate_end);
    let h = H::with_runner(Box::new(link));
    let r = h.call("s1", 1, "secret_read", r#"{"path":"x"}"#);
    assert_stopped(&r);
    // A failed answer may carry data: the floor label of the tool is applied.
    assert_eq!(h.taint("s1"), (DataClass::Secret, false));
}

fn egress_record(outcome: proto::run::EgressOutcome) -> proto::run::EgressRecord {
    proto::run::EgressRecord {
        session: proto::SessionId::new("s1").unwrap(),
        call: Some(proto::CallId(1)),
        tool: "fetch".into(),
        conn: 7,
        host: "evil.example".into(),
        port: 443,
        address: None,
        outcome,
        reason: Some("boxmaker refused evil.example:443: it is not listed".into()),
        sent: 0,
        received: 0,
    }
}

/// A gate whose runner is a link to the returned socket, its events going to the gate,
/// and one call of session `s1` (call 1, tool `read`) in flight on a thread of its own.
fn gate_calling_over_a_link() -> (H, UnixStream, std::thread::JoinHandle<ToolResponse>) {
    let (gate_end, runner) = UnixStream::pair().unwrap();
    runner
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let sink = gate::EventSink::default();
    let link = RunnerLink::with_events(gate_end.try_clone().unwrap(), gate_end, sink.clone());
    let h = H::with_runner(Box::new(link));
    sink.set(h.gate.runner_events());
    let gate = h.gate.clone();
    let call = std::thread::spawn(move || {
        let mut progress = |_| {};
        gate.call(req("s1", 1, "read", r#"{"path":"x"}"#), &mut progress)
    });
    (h, runner, call)
}

#[test]
fn test_link_an_egress_event_reaches_the_audit_log_and_is_not_an_answer() {
    let (h, mut runner, call) = gate_calling_over_a_link();
    let r = read_frame(&mut runner).unwrap();
    // Events carry id 0, come before the answer, and the call still waits for its answer.
    let event = RunnerAnswer::Egress {
        record: egress_record(proto::run::EgressOutcome::Refused),
    };
    write_runner_reply(&mut runner, &RunnerReply::new(0, event)).unwrap();
    answer(&mut runner, r.id, result());
    assert_eq!(call.join().unwrap(), result());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(h.state.join("audit.log")).unwrap();
        if let Some(line) = log.lines().find(|l| l.contains(r#""event":"egress""#)) {
            assert!(
                line.contains(r#""host":"evil.example","port":443,"outcome":"refused""#),
                "{line}"
            );
            assert!(line.contains(r#""call":1"#), "{line}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no egress record in {log}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(gate::audit::verify(&h.state.join("audit.log")).is_ok());
}

#[test]
fn test_link_an_egress_event_with_a_call_id_kills_the_link() {
    let (link, mut runner) = new_link();
    let a = start_call(&link, 1);
    let r = read_frame(&mut runner).unwrap();
    let event = RunnerAnswer::Egress {
        record: egress_record(proto::run::EgressOutcome::Opened),
    };
    write_runner_reply(&mut runner, &RunnerReply::new(r.id, event)).unwrap();
    assert_stopped(&a.join().unwrap());
    assert!(link.dead_reason().unwrap().contains("egress event with id"));
}

/// A box read above what its session held and its call then failed: `failed` carries no
/// label, so the runner's `floated` event, sent before the answer, is what raises the
/// session's taint — class and untrusted bit (issue 30) — committed (and audited) before
/// the gate takes the answer.
#[test]
fn test_link_a_floated_event_raises_the_taint_before_the_answer_is_taken() {
    let (h, mut runner, call) = gate_calling_over_a_link();
    let r = read_frame(&mut runner).unwrap();
    let event = RunnerAnswer::Floated {
        session: sid("s1"),
        tool: "read".into(),
        call: Some(proto::CallId(1)),
        class: DataClass::Secret,
        untrusted: true,
    };
    write_runner_reply(&mut runner, &RunnerReply::new(0, event)).unwrap();
    let failed = ToolResponse::Failed {
        message: "timed out".into(),
    };
    answer(&mut runner, r.id, failed.clone());
    assert_eq!(call.join().unwrap(), failed);
    assert_eq!(h.taint("s1").0, DataClass::Secret);
    assert!(h.taint("s1").1, "the floated untrusted bit is in the taint");
    let log = std::fs::read_to_string(h.state.join("audit.log")).unwrap();
    let floated = log
        .lines()
        .position(|l| l.contains(r#""event":"floated""#))
        .unwrap_or_else(|| panic!("no floated record in {log}"));
    let result = log
        .lines()
        .position(|l| l.contains(r#""event":"result""#))
        .unwrap();
    assert!(floated < result, "{log}");
    assert!(
        log.lines()
            .nth(floated)
            .unwrap()
            .contains(r#""class":"secret","untrusted":true"#),
        "{log}"
    );
    assert!(gate::audit::verify(&h.state.join("audit.log")).is_ok());
}

#[test]
fn test_link_a_floated_event_with_a_call_id_kills_the_link() {
    let (link, mut runner) = new_link();
    let a = start_call(&link, 1);
    let r = read_frame(&mut runner).unwrap();
    let event = RunnerAnswer::Floated {
        session: sid("s1"),
        tool: "read".into(),
        call: None,
        class: DataClass::Secret,
        untrusted: false,
    };
    write_runner_reply(&mut runner, &RunnerReply::new(r.id, event)).unwrap();
    assert_stopped(&a.join().unwrap());
    assert!(
        link.dead_reason()
            .unwrap()
            .contains("floated event with id")
    );
}

/// A runner that never answers a call (a wait nobody bounded): the gate's backstop fails
/// the call in its time, the late answer is dropped (never released, never taken for a
/// misbehaving runner), and the link serves the next call.
#[test]
fn test_link_backstop_gives_up_a_call_the_runner_never_answers() {
    let (gate_end, mut runner) = UnixStream::pair().unwrap();
    runner
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let link = Arc::new(
        RunnerLink::new(gate_end.try_clone().unwrap(), gate_end)
            .backstop(Duration::from_millis(300)),
    );
    let started = std::time::Instant::now();
    let a = start_call(&link, 1);
    let first = read_frame(&mut runner).unwrap();
    match a.join().unwrap() {
        ToolResponse::Failed { message } => {
            assert!(message.contains("did not answer within"), "{message}");
        }
        other => panic!("expected failed, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    // Its answer, late: dropped.
    answer(&mut runner, first.id, result());
    let b = start_call(&link, 2);
    let second = read_frame(&mut runner).unwrap();
    answer(&mut runner, second.id, result());
    assert_eq!(b.join().unwrap(), result());
    assert!(link.dead_reason().is_none(), "{:?}", link.dead_reason());
}
