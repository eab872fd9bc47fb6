#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The decision socket (issue 16, docs/spec.md §2.5): the front's narrow channel to decide a
//! pending approval of its own session with a person's answer in the agent's client. What a
//! front — or a prompt-injected model steering one — could try, named as the attack.

mod common;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use proto::control::{
    ApprovalState, Choice, ControlAnswer, ControlOp, ControlRequest, Shown, write_control_request,
};
use proto::decide::*;
use proto::{DataClass, DenyReason, ToolResponse};

fn allowing() -> String {
    CONFIG.replace(
        "log_arguments = false",
        "log_arguments = false\napprove_in_client = true",
    ) + JOB
}

fn h_allowing() -> H {
    H::with_fake_runner(&allowing())
}

/// A front's connection to the decision socket, over a socketpair.
struct Front {
    stream: UnixStream,
    next: u64,
}

impl Front {
    fn connect(gate: &Arc<gate::Gate>) -> Front {
        let (client, server) = UnixStream::pair().unwrap();
        let gate = Arc::clone(gate);
        std::thread::spawn(move || gate::serve_decide::serve_decide_stream(gate, server));
        client
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Front {
            stream: client,
            next: 1,
        }
    }

    fn ask(&mut self, op: DecideOp) -> DecideAnswer {
        let id = self.next;
        self.next += 1;
        write_decide_request(&mut self.stream, &DecideRequest::new(id, op)).unwrap();
        let reply = read_decide_reply(&mut self.stream).unwrap();
        assert_eq!(reply.id, id);
        reply.reply
    }

    fn show(&mut self, session: &str, approval: &str) -> DecideAnswer {
        self.ask(DecideOp::Show {
            session: sid(session),
            approval: approval.into(),
        })
    }

    fn decide(
        &mut self,
        session: &str,
        approval: &str,
        choice: Choice,
        secs: Option<u64>,
        shown: Shown,
    ) -> DecideAnswer {
        self.ask(DecideOp::Decide {
            session: sid(session),
            approval: approval.into(),
            choice,
            remember_seconds: secs,
            shown,
        })
    }
}

fn code(a: DecideAnswer) -> DecideErrorCode {
    match a {
        DecideAnswer::Error { code, detail } => {
            assert!(!detail.is_empty());
            code
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

/// What the front shows, and the `Shown` to send back.
fn shown(f: &mut Front, session: &str, approval: &str) -> (proto::control::ApprovalInfo, Shown) {
    match f.show(session, approval) {
        DecideAnswer::Shown { item, call_sha256 } => {
            let s = Shown {
                call_sha256,
                class: item.class,
                untrusted: item.untrusted,
            };
            (item, s)
        }
        other => panic!("{other:?}"),
    }
}

fn pending(h: &H, ap: &str) -> bool {
    h.store().approval(ap).unwrap().unwrap().state == gate::store::ApprovalState::Pending
}

#[test]
fn the_client_shows_the_call_as_the_gate_holds_it_and_approves_it_once() {
    let h = h_allowing();
    let args = "{\"cmd\":\"echo \\u001b[2J hi\"}";
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", args);
    let mut f = Front::connect(&h.gate);
    let (item, s) = shown(&mut f, "s1", &ap);
    assert_eq!(item.tool, "job_run");
    assert_eq!(item.arguments, args, "the exact arguments that run");
    assert_eq!(item.state, ApprovalState::Pending);
    assert_eq!(item.expires.0, h.now() + TTL);
    match f.decide("s1", &ap, Choice::ApproveOnce, None, s) {
        DecideAnswer::Decided { state, grant } => {
            assert_eq!(state, ApprovalState::Approved);
            assert_eq!(grant, None);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        handle.join().unwrap(),
        ToolResponse::Result { .. }
    ));
    let audit = h.audit_text();
    assert!(
        audit.contains(r#""via":"client","by":"the MCP client of session s1 (elicitation)""#),
        "the decision is audited as the client's, in the gate's words:\n{audit}"
    );
}

#[test]
fn the_client_approves_for_the_session_and_the_same_call_runs_without_asking() {
    let h = h_allowing();
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", r#"{"cmd":"ls"}"#);
    let mut f = Front::connect(&h.gate);
    let (_, s) = shown(&mut f, "s1", &ap);
    let DecideAnswer::Decided { grant, .. } =
        f.decide("s1", &ap, Choice::ApproveForSession, Some(300), s)
    else {
        panic!()
    };
    assert!(grant.unwrap().starts_with("rt-"));
    handle.join().unwrap();
    assert!(matches!(
        h.call("s1", 2, "job_run", r#"{"cmd":"ls"}"#),
        ToolResponse::Result { .. }
    ));
}

#[test]
fn the_client_refuses() {
    let h = h_allowing();
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", "{}");
    let mut f = Front::connect(&h.gate);
    let (_, s) = shown(&mut f, "s1", &ap);
    assert!(matches!(
        f.decide("s1", &ap, Choice::Refuse, None, s),
        DecideAnswer::Decided {
            state: ApprovalState::Refused,
            grant: None
        }
    ));
    assert_eq!(
        handle.join().unwrap(),
        ToolResponse::Denied {
            reason: DenyReason::ApprovalRefused
        }
    );
}

#[test]
fn nothing_is_answered_unless_the_config_allows_approving_in_the_client() {
    let h = H::with_fake_runner(&format!("{CONFIG}{JOB}"));
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", "{}");
    let mut f = Front::connect(&h.gate);
    assert_eq!(code(f.show("s1", &ap)), DecideErrorCode::NotAllowed);
    let s = Shown {
        call_sha256: gate::gate::call_sha256(&h.store().approval(&ap).unwrap().unwrap()),
        class: DataClass::Public,
        untrusted: false,
    };
    assert_eq!(
        code(f.decide("s1", &ap, Choice::ApproveOnce, None, s)),
        DecideErrorCode::NotAllowed
    );
    assert!(pending(&h, &ap));
    h.control(ControlOp::Refuse {
        approval: ap,
        reason: None,
    });
    handle.join().unwrap();
}

#[test]
fn a_front_cannot_see_or_decide_another_sessions_approval() {
    let h = h_allowing();
    let (ap, _, handle) = h.call_held("victim", 1, "job_run", r#"{"cmd":"deploy"}"#);
    let mut f = Front::connect(&h.gate);
    // Another session's approval reads exactly like one that does not exist.
    let other = f.show("attacker", &ap);
    let unknown = f.show("attacker", "ap-0000000000000000");
    assert_eq!(code(other.clone()), DecideErrorCode::NotFound);
    assert_eq!(code(unknown), DecideErrorCode::NotFound);
    let DecideAnswer::Error { detail, .. } = other else {
        panic!()
    };
    assert!(
        !detail.contains("victim") && !detail.contains("deploy"),
        "{detail}"
    );
    // Even knowing the exact digest of the victim's call does not help.
    let digest = gate::gate::call_sha256(&h.store().approval(&ap).unwrap().unwrap());
    let s = Shown {
        call_sha256: digest,
        class: DataClass::Public,
        untrusted: false,
    };
    assert_eq!(
        code(f.decide("attacker", &ap, Choice::ApproveOnce, None, s)),
        DecideErrorCode::NotFound
    );
    assert!(pending(&h, &ap));
    h.control(ControlOp::Refuse {
        approval: ap,
        reason: None,
    });
    handle.join().unwrap();
}

#[test]
fn a_decision_on_a_call_other_than_the_one_shown_is_refused() {
    let h = h_allowing();
    let (shown_ap, _, h1) = h.call_held("s1", 1, "job_run", r#"{"cmd":"ls"}"#);
    let (other_ap, _, h2) = h.call_held("s1", 2, "job_run", r#"{"cmd":"rm -rf ~"}"#);
    let mut f = Front::connect(&h.gate);
    let (_, s) = shown(&mut f, "s1", &shown_ap);
    assert_eq!(
        code(f.decide("s1", &other_ap, Choice::ApproveOnce, None, s.clone())),
        DecideErrorCode::Conflict
    );
    let forged = Shown {
        call_sha256: "00".repeat(32),
        ..s.clone()
    };
    assert_eq!(
        code(f.decide("s1", &shown_ap, Choice::ApproveOnce, None, forged)),
        DecideErrorCode::Conflict
    );
    assert!(pending(&h, &shown_ap) && pending(&h, &other_ap));
    f.decide("s1", &shown_ap, Choice::Refuse, None, s);
    let (_, s2) = shown(&mut f, "s1", &other_ap);
    f.decide("s1", &other_ap, Choice::Refuse, None, s2);
    h1.join().unwrap();
    h2.join().unwrap();
}

#[test]
fn a_decided_approval_cannot_be_decided_again_by_the_client() {
    let h = h_allowing();
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", "{}");
    let mut f = Front::connect(&h.gate);
    let (_, s) = shown(&mut f, "s1", &ap);
    h.control(ControlOp::Refuse {
        approval: ap.clone(),
        reason: None,
    });
    handle.join().unwrap();
    assert_eq!(
        code(f.decide("s1", &ap, Choice::ApproveOnce, None, s)),
        DecideErrorCode::Conflict
    );
    assert_eq!(code(f.show("s1", &ap)), DecideErrorCode::Conflict);
}

#[test]
fn an_approval_no_call_of_this_gate_waits_on_is_not_the_clients_to_decide() {
    let h = h_allowing();
    // Left pending by a previous gate (written straight to the store): no held call.
    let row = h
        .store()
        .create_approval(gate::store::NewApproval {
            session: sid("s1"),
            call: proto::CallId(9),
            tool: "job_run".into(),
            arguments: "{}".into(),
            reason: gate::store::ApprovalReason::GrantAsk,
            created: proto::Timestamp(h.now()),
            expires: proto::Timestamp(h.now() + 60),
            files: Vec::new(),
        })
        .unwrap();
    let mut f = Front::connect(&h.gate);
    assert_eq!(code(f.show("s1", &row.id)), DecideErrorCode::Conflict);
}

#[test]
fn remembering_through_the_client_is_bounded_like_everywhere() {
    let h = h_allowing();
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", "{}");
    let mut f = Front::connect(&h.gate);
    let (_, s) = shown(&mut f, "s1", &ap);
    assert_eq!(
        code(f.decide(
            "s1",
            &ap,
            Choice::ApproveForSession,
            Some(proto::control::REMEMBER_MAX_SECONDS + 1),
            s.clone()
        )),
        DecideErrorCode::BadMessage
    );
    assert_eq!(
        code(f.decide("s1", &ap, Choice::ApproveForSession, None, s.clone())),
        DecideErrorCode::BadMessage
    );
    assert!(pending(&h, &ap));
    f.decide("s1", &ap, Choice::Refuse, None, s);
    handle.join().unwrap();
}

#[test]
fn an_operators_request_on_the_decision_socket_is_refused_and_the_connection_closed() {
    let h = h_allowing();
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", "{}");
    let mut f = Front::connect(&h.gate);
    for op in [
        ControlOp::Approve {
            approval: ap.clone(),
        },
        ControlOp::ListApprovals { all: true },
    ] {
        let mut f = Front::connect(&h.gate);
        write_control_request(&mut f.stream, &ControlRequest::new(1, op)).unwrap();
        let reply = read_decide_reply(&mut f.stream).unwrap();
        assert_eq!(reply.id, 0);
        assert_eq!(code(reply.reply), DecideErrorCode::BadMessage);
        assert!(matches!(
            read_decide_reply(&mut f.stream),
            Err(proto::FrameError::Closed)
        ));
    }
    // Garbage too; and nothing was decided by any of it.
    f.stream.write_all(&[0, 0, 0, 2, b'{', b'{']).unwrap();
    assert_eq!(
        code(read_decide_reply(&mut f.stream).unwrap().reply),
        DecideErrorCode::BadFrame
    );
    assert!(pending(&h, &ap));
    h.control(ControlOp::Refuse {
        approval: ap,
        reason: None,
    });
    handle.join().unwrap();
}

#[test]
fn watchers_see_an_approval_the_moment_it_is_asked() {
    let h = h_allowing();
    let head = match h.control(ControlOp::WatchApprovals {
        after: 0,
        limit: 10,
        wait_ms: 0,
        pending_only: false,
    }) {
        ControlAnswer::ApprovalUpdates { items, head, .. } => {
            assert!(items.is_empty());
            head
        }
        other => panic!("{other:?}"),
    };
    let gate = Arc::clone(&h.gate);
    let watcher = std::thread::spawn(move || {
        let answer = gate.control(ControlOp::WatchApprovals {
            after: head,
            limit: 10,
            wait_ms: 10_000,
            pending_only: false,
        });
        (answer, Instant::now())
    });
    std::thread::sleep(Duration::from_millis(200));
    let asked = Instant::now();
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", r#"{"cmd":"ls"}"#);
    let (answer, seen) = watcher.join().unwrap();
    let ControlAnswer::ApprovalUpdates { items, head, .. } = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].item.id, ap);
    assert_eq!(items[0].item.state, ApprovalState::Pending);
    // At once: the watcher is woken, not polling (100 ms is the promise end to end, measured
    // by bench/approvals-latency.sh; a shared machine gets room here).
    assert!(
        seen.duration_since(asked) < Duration::from_millis(1000),
        "a watcher saw the approval {:?} after it was asked",
        seen.duration_since(asked)
    );
    // Its decision is the next change, with who decided.
    let mut f = Front::connect(&h.gate);
    let (_, s) = shown(&mut f, "s1", &ap);
    f.decide("s1", &ap, Choice::ApproveOnce, None, s);
    handle.join().unwrap();
    let ControlAnswer::ApprovalUpdates { items, .. } = h.control(ControlOp::WatchApprovals {
        after: head,
        limit: 10,
        wait_ms: 5_000,
        pending_only: false,
    }) else {
        panic!()
    };
    let last = items.last().unwrap();
    assert_eq!(last.item.id, ap);
    assert!(matches!(
        last.item.state,
        ApprovalState::Approved | ApprovalState::Used
    ));
    assert_eq!(last.via, Some(proto::control::DecidedVia::Client));
    // Pending only: nothing now.
    let ControlAnswer::ApprovalUpdates { items, .. } = h.control(ControlOp::WatchApprovals {
        after: 0,
        limit: 10,
        wait_ms: 0,
        pending_only: true,
    }) else {
        panic!()
    };
    assert!(items.is_empty());
}

#[test]
fn watching_pages_through_many_approvals_in_change_order() {
    let h = h_allowing();
    let mut held = Vec::new();
    for i in 0..25 {
        held.push(h.call_held("s1", i + 1, "job_run", &format!(r#"{{"i":{i}}}"#)));
    }
    let mut after = 0;
    let mut seen = Vec::new();
    loop {
        let ControlAnswer::ApprovalUpdates { items, .. } = h.control(ControlOp::WatchApprovals {
            after,
            limit: 7,
            wait_ms: 0,
            pending_only: true,
        }) else {
            panic!()
        };
        if items.is_empty() {
            break;
        }
        assert!(items.len() <= 7);
        for u in &items {
            assert!(u.change > after);
            after = u.change;
            seen.push(u.item.id.clone());
        }
    }
    let want: Vec<String> = held.iter().map(|(ap, _, _)| ap.clone()).collect();
    assert_eq!(seen, want);
    h.advance(TTL + 1);
    for (_, _, handle) in held {
        assert_eq!(
            handle.join().unwrap(),
            ToolResponse::Denied {
                reason: DenyReason::ApprovalExpired
            }
        );
    }
}
