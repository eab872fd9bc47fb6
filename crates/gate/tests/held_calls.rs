#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Held calls keep no thread: many calls wait for approval at once through `Gate::submit`,
//! and each ends by its approval's fate — expired, refused, approved, withdrawn — exactly
//! once.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::*;
use gate::Reply;
use proto::control::ControlOp;
use proto::{DenyReason, ToolResponse};

/// Sends `(call, answer, final)` for every answer.
struct Collect {
    call: u64,
    tx: mpsc::Sender<(u64, ToolResponse, bool)>,
}

impl Reply for Collect {
    fn progress(&mut self, resp: ToolResponse) {
        self.tx.send((self.call, resp, false)).unwrap();
    }

    fn finish(self: Box<Self>, resp: ToolResponse) {
        self.tx.send((self.call, resp, true)).unwrap();
    }
}

#[test]
fn test_many_held_calls_end_by_their_approvals_fate_once_each() {
    let h = H::with_runner(Box::new(FakeRunner { hook: None }));
    let (tx, rx) = mpsc::channel();
    let n = 400u64;
    let mut approvals = Vec::new();
    for call in 1..=n {
        // `submit` returns once the call is held: this one thread files all of them.
        // Twenty sessions, twenty held calls each (under `max_pending_per_session`).
        h.gate.submit(
            req(
                &format!("s{}", call % 20),
                call,
                "run",
                r#"{"argv":["true"]}"#,
            ),
            Box::new(Collect {
                call,
                tx: tx.clone(),
            }),
        );
        match rx.recv_timeout(Duration::from_secs(10)).unwrap() {
            (c, ToolResponse::PendingApproval { approval, .. }, false) if c == call => {
                approvals.push(approval);
            }
            other => panic!("expected pending_approval for {call}, got {other:?}"),
        }
    }
    drop(tx);
    // The first quarter approved, the second refused, the third withdrawn, the rest expire.
    let q = approvals.len() / 4;
    for a in &approvals[..q] {
        h.control(ControlOp::Approve {
            approval: a.clone(),
        });
    }
    for a in &approvals[q..2 * q] {
        h.control(ControlOp::Refuse {
            approval: a.clone(),
            reason: None,
        });
    }
    for a in &approvals[2 * q..3 * q] {
        h.gate.withdraw(a).unwrap();
    }
    h.advance(TTL + 1);
    let mut ends = std::collections::HashMap::new();
    for _ in 0..n {
        let (call, resp, last) = rx.recv_timeout(Duration::from_secs(20)).unwrap();
        assert!(last, "only final answers now, got {resp:?}");
        assert!(
            ends.insert(call, resp).is_none(),
            "call {call} answered twice"
        );
    }
    assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
    let q = q as u64;
    for (call, resp) in ends {
        let i = call - 1;
        match resp {
            ToolResponse::Result { .. } if i < q => {}
            ToolResponse::Denied {
                reason: DenyReason::ApprovalRefused,
            } if (q..2 * q).contains(&i) => {}
            ToolResponse::Failed { message }
                if (2 * q..3 * q).contains(&i) && message.contains("withdrawn") => {}
            ToolResponse::Denied {
                reason: DenyReason::ApprovalExpired,
            } if i >= 3 * q => {}
            other => panic!("call {call}: unexpected end {other:?}"),
        }
    }
    gate::audit::verify(&h.state.join("audit.log")).unwrap();
}
