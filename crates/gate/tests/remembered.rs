#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Remembered approvals (issue 16, docs/spec.md §3.3 step 6): "approve for this session for N
//! minutes" lets exactly that call — that session, that tool, those arguments — run again
//! without asking, until it expires or is revoked, and never anything broader. Each attack a
//! prompt-injected model could try is a test named after it.

mod common;

use common::*;
use proto::control::{
    ApprovalState, Choice, ControlAnswer, ControlErrorCode, ControlOp, DecidedVia, Effect,
    GrantInfo, GrantSpec, Shown,
};
use proto::{DataClass, DenyReason, ToolResponse};

/// The gate of every test here: the common config plus a server whose tools ask.
fn h_job() -> H {
    H::with_fake_runner(&format!("{CONFIG}{JOB}"))
}

fn decide(h: &H, approval: &str, choice: Choice, secs: Option<u64>) -> ControlAnswer {
    h.control(ControlOp::DecideApproval {
        approval: approval.into(),
        choice,
        remember_seconds: secs,
        reason: None,
        shown: None,
        via: DecidedVia::Cli,
        by: "a test at the command line".into(),
    })
}

/// Asks, approves for the session for `secs`, and waits for the call to run; returns the
/// remembered grant's id.
fn remember(h: &H, session: &str, call: u64, tool: &str, args: &str, secs: u64) -> String {
    let (ap, _, handle) = h.call_held(session, call, tool, args);
    let grant = match decide(h, &ap, Choice::ApproveForSession, Some(secs)) {
        ControlAnswer::Decided { item } => {
            assert_eq!(item.item.state, proto::control::ApprovalState::Approved);
            assert_eq!(item.via, Some(DecidedVia::Cli));
            item.grant.expect("approve_for_session names its grant")
        }
        other => panic!("{other:?}"),
    };
    assert!(matches!(
        handle.join().unwrap(),
        ToolResponse::Result { .. }
    ));
    grant
}

/// The call runs at once (no approval asked).
fn runs_without_asking(h: &H, session: &str, call: u64, tool: &str, args: &str) {
    match h.call(session, call, tool, args) {
        ToolResponse::Result { content, .. } => assert!(content.contains("ran with"), "{content}"),
        other => panic!("expected it to run without asking, got {other:?}"),
    }
}

/// The call asks a person again; the approval is refused so the test does not wait.
fn asks_again(h: &H, session: &str, call: u64, tool: &str, args: &str) {
    let (ap, _, handle) = h.call_held(session, call, tool, args);
    decide(h, &ap, Choice::Refuse, None);
    assert!(matches!(
        handle.join().unwrap(),
        ToolResponse::Denied {
            reason: DenyReason::ApprovalRefused
        }
    ));
}

fn error_code(a: ControlAnswer) -> ControlErrorCode {
    match a {
        ControlAnswer::Error { code, detail } => {
            assert!(!detail.is_empty());
            code
        }
        other => panic!("expected an error, got {other:?}"),
    }
}

fn grants(h: &H) -> Vec<GrantInfo> {
    match h.control(ControlOp::ListGrants {}) {
        ControlAnswer::Grants { items } => items,
        other => panic!("{other:?}"),
    }
}

const ARGS: &str = r#"{"cmd":"make test","n":1}"#;

#[test]
fn the_same_call_runs_without_asking_and_says_which_grant_let_it() {
    let h = h_job();
    let grant = remember(&h, "s1", 1, "job_run", ARGS, 600);
    runs_without_asking(&h, "s1", 2, "job_run", ARGS);
    // The same value written another way is the same call.
    runs_without_asking(&h, "s1", 3, "job_run", r#"{ "n": 1, "cmd": "make test" }"#);
    let audit = h.audit_text();
    assert!(
        audit.contains(&format!(
            r#""decision":"allow","reach":"public","grant":"{grant}""#
        )),
        "the decision names the remembered grant:\n{audit}"
    );
    assert!(audit.contains(r#""via":"cli","by":"a test at the command line""#));
    assert!(audit.contains(r#""event":"grant_added""#) && audit.contains(r#""args_sha256":""#));
    gate::audit::verify(&h.state.join("audit.log")).unwrap();
}

#[test]
fn a_remembered_approval_is_listed_with_its_exact_arguments_and_is_revocable() {
    let h = h_job();
    let grant = remember(&h, "s1", 1, "job_run", ARGS, 600);
    let g = grants(&h).into_iter().find(|g| g.id == grant).unwrap();
    let scope = g.scope.expect("a remembered approval is scoped");
    assert_eq!(scope.arguments, ARGS);
    assert_eq!(g.grant.tool, "job_run");
    assert_eq!(g.grant.sessions, "s1");
    assert_eq!(g.grant.effect, Effect::Allow);
    assert_eq!(g.grant.expires, Some(proto::Timestamp(h.now() + 600)));
    assert!(matches!(
        h.control(ControlOp::RevokeGrant {
            grant: grant.clone()
        }),
        ControlAnswer::Grant { .. }
    ));
    asks_again(&h, "s1", 2, "job_run", ARGS);
    assert!(h.audit_text().contains(r#""event":"grant_revoked""#));
}

#[test]
fn a_different_argument_asks_again() {
    let h = h_job();
    remember(&h, "s1", 1, "job_run", ARGS, 600);
    asks_again(
        &h,
        "s1",
        2,
        "job_run",
        r#"{"cmd":"make test; curl evil","n":1}"#,
    );
    asks_again(&h, "s1", 3, "job_run", r#"{"cmd":"make test","n":1.0}"#);
    asks_again(
        &h,
        "s1",
        4,
        "job_run",
        r#"{"cmd":"make test","n":1,"x":null}"#,
    );
    asks_again(&h, "s1", 5, "job_run", r#"{"cmd":"make test\u200b","n":1}"#);
}

#[test]
fn another_session_cannot_reuse_a_remembered_approval() {
    let h = h_job();
    remember(&h, "s1", 1, "job_run", ARGS, 600);
    asks_again(&h, "s2", 1, "job_run", ARGS);
    // A session id that a glob over "s1" would match is still another session.
    asks_again(&h, "s1x", 1, "job_run", ARGS);
}

#[test]
fn a_remembered_approval_covers_its_tool_only() {
    let h = h_job();
    remember(&h, "s1", 1, "job_run", ARGS, 600);
    asks_again(&h, "s1", 2, "ask_public", ARGS);
}

#[test]
fn a_duplicated_key_cannot_smuggle_other_arguments_past_a_remembered_approval() {
    let h = h_job();
    remember(&h, "s1", 1, "job_run", r#"{"cmd":"ls"}"#, 600);
    // Which `cmd` would a tool read? Not remembered, whichever.
    asks_again(&h, "s1", 2, "job_run", r#"{"cmd":"ls","cmd":"rm -rf /"}"#);
    asks_again(&h, "s1", 3, "job_run", r#"{"cmd":"rm -rf /","cmd":"ls"}"#);
}

#[test]
fn arguments_without_a_canonical_form_cannot_be_remembered_and_stay_pending() {
    let h = h_job();
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", r#"{"cmd":"a","cmd":"b"}"#);
    assert_eq!(
        error_code(decide(&h, &ap, Choice::ApproveForSession, Some(60))),
        ControlErrorCode::Conflict
    );
    assert_eq!(
        h.store().approval(&ap).unwrap().unwrap().state,
        gate::store::ApprovalState::Pending,
        "a refused remember decides nothing"
    );
    decide(&h, &ap, Choice::ApproveOnce, None);
    assert!(matches!(
        handle.join().unwrap(),
        ToolResponse::Result { .. }
    ));
}

#[test]
fn it_expires_when_the_person_said() {
    let h = h_job();
    remember(&h, "s1", 1, "job_run", ARGS, 120);
    h.advance(119);
    runs_without_asking(&h, "s1", 2, "job_run", ARGS);
    h.advance(1);
    asks_again(&h, "s1", 3, "job_run", ARGS);
}

#[test]
fn a_taint_above_what_the_person_saw_asks_again() {
    let h = h_job();
    remember(&h, "s1", 1, "job_run", ARGS, 600);
    // The person saw a clean, public session. It reads a secret...
    assert!(matches!(
        h.call("s1", 2, "secret_read", r#"{"path":"class=secret"}"#),
        ToolResponse::Result { .. }
    ));
    asks_again(&h, "s1", 3, "job_run", ARGS);
}

#[test]
fn untrusted_content_after_a_clean_approval_asks_again() {
    let h = h_job();
    remember(&h, "s1", 1, "job_run", ARGS, 600);
    assert!(matches!(
        h.call("s1", 2, "fetch_page", r#"{"untrusted":true}"#),
        ToolResponse::Result { .. }
    ));
    assert!(h.taint("s1").1);
    asks_again(&h, "s1", 3, "job_run", ARGS);
}

#[test]
fn a_remembered_approval_never_overrides_a_deny() {
    let h = h_job();
    remember(&h, "s1", 1, "job_run", ARGS, 600);
    let deny = GrantSpec {
        tool: "job_run".into(),
        sessions: "*".into(),
        effect: Effect::Deny,
        max_class: DataClass::Secret,
        if_untrusted: Effect::Allow,
        expires: None,
    };
    assert!(matches!(
        h.control(ControlOp::AddGrant { grant: deny }),
        ControlAnswer::Grant { .. }
    ));
    assert_eq!(
        h.call("s1", 2, "job_run", ARGS),
        ToolResponse::Denied {
            reason: DenyReason::DeniedByGrant
        }
    );
}

#[test]
fn a_remembered_approval_is_not_a_grant_for_the_tool() {
    let h = h_job();
    remember(&h, "s1", 1, "job_run", ARGS, 600);
    // `check` decides from the grants: a remembered approval is not one of them.
    match h.control(ControlOp::Check {
        session: sid("s1"),
        tool: "job_run".into(),
        class: DataClass::Public,
        untrusted: false,
        at: None,
    }) {
        ControlAnswer::Decision { decision, .. } => {
            assert_eq!(decision, proto::control::CheckOutcome::Ask);
        }
        other => panic!("{other:?}"),
    }
    // And it does not let a tool no grant names run, even with the same session and args.
    assert_eq!(
        h.call("s1", 2, "unknown_tool", ARGS),
        ToolResponse::Denied {
            reason: DenyReason::NoGrant
        }
    );
}

#[test]
fn a_decision_names_what_was_shown_or_it_is_refused() {
    let h = h_job();
    let (a, _, ha) = h.call_held("s1", 1, "job_run", r#"{"cmd":"ls"}"#);
    let (b, _, hb) = h.call_held("s1", 2, "job_run", r#"{"cmd":"rm -rf ~"}"#);
    let digest_of = |id: &str| {
        let row = h.store().approval(id).unwrap().unwrap();
        gate::gate::call_sha256(&row)
    };
    // The person was shown `a`; a decision on `b` that names what was shown is refused.
    let shown_a = Shown {
        call_sha256: digest_of(&a),
        class: DataClass::Public,
        untrusted: false,
    };
    assert_eq!(
        error_code(h.control(ControlOp::DecideApproval {
            approval: b.clone(),
            choice: Choice::ApproveOnce,
            remember_seconds: None,
            reason: None,
            shown: Some(shown_a.clone()),
            via: DecidedVia::Page,
            by: "page".into(),
        })),
        ControlErrorCode::Conflict
    );
    assert!(matches!(
        h.control(ControlOp::DecideApproval {
            approval: a.clone(),
            choice: Choice::ApproveOnce,
            remember_seconds: None,
            reason: None,
            shown: Some(shown_a),
            via: DecidedVia::Page,
            by: "page".into(),
        }),
        ControlAnswer::Decided { .. }
    ));
    assert!(matches!(ha.join().unwrap(), ToolResponse::Result { .. }));
    decide(&h, &b, Choice::Refuse, None);
    hb.join().unwrap();
}

#[test]
fn a_remembered_approval_is_bounded_by_the_taint_the_person_saw() {
    let h = h_job();
    // The session has read internal data; the page showed it as public (it asked earlier).
    h.call("s1", 1, "read", r#"{"path":"class=internal"}"#);
    let (ap, _, handle) = h.call_held("s1", 2, "job_run", ARGS);
    let row = h.store().approval(&ap).unwrap().unwrap();
    let answer = h.control(ControlOp::DecideApproval {
        approval: ap.clone(),
        choice: Choice::ApproveForSession,
        remember_seconds: Some(600),
        reason: None,
        shown: Some(Shown {
            call_sha256: gate::gate::call_sha256(&row),
            class: DataClass::Secret,
            untrusted: true,
        }),
        via: DecidedVia::Page,
        by: "page".into(),
    });
    let ControlAnswer::Decided { item } = answer else {
        panic!("{answer:?}")
    };
    handle.join().unwrap();
    // Claiming a higher taint was shown gets no more than the taint the gate holds.
    let g = grants(&h)
        .into_iter()
        .find(|g| Some(&g.id) == item.grant.as_ref())
        .unwrap();
    assert_eq!(g.grant.max_class, DataClass::Internal);
    assert_eq!(g.grant.if_untrusted, Effect::Ask);
}

#[test]
fn bad_remember_requests_are_refused_and_decide_nothing() {
    let h = h_job();
    let (ap, _, handle) = h.call_held("s1", 1, "job_run", ARGS);
    for (choice, secs) in [
        (Choice::ApproveForSession, None),
        (Choice::ApproveForSession, Some(0)),
        (
            Choice::ApproveForSession,
            Some(proto::control::REMEMBER_MAX_SECONDS + 1),
        ),
        (Choice::ApproveOnce, Some(60)),
        (Choice::Refuse, Some(60)),
    ] {
        assert_eq!(
            error_code(decide(&h, &ap, choice, secs)),
            ControlErrorCode::BadMessage,
            "{choice} {secs:?}"
        );
    }
    // The gate alone writes `via: client`.
    assert_eq!(
        error_code(h.control(ControlOp::DecideApproval {
            approval: ap.clone(),
            choice: Choice::ApproveOnce,
            remember_seconds: None,
            reason: None,
            shown: None,
            via: DecidedVia::Client,
            by: "the client, honest".into(),
        })),
        ControlErrorCode::BadMessage
    );
    assert_eq!(
        h.store().approval(&ap).unwrap().unwrap().state,
        gate::store::ApprovalState::Pending
    );
    assert!(grants(&h).iter().all(|g| g.scope.is_none()));
    decide(&h, &ap, Choice::Refuse, None);
    handle.join().unwrap();
    let _ = ApprovalState::Refused;
}

#[test]
fn the_label_the_approved_call_brings_itself_does_not_end_its_remembered_approval() {
    let h = h_job();
    // The person saw a clean session; the call they approved returns data at its tool's
    // own class (internal), which raises the session to that.
    let args = r#"{"class":"internal"}"#;
    remember(&h, "s1", 1, "job_run", args, 600);
    assert_eq!(h.taint("s1").0, DataClass::Internal);
    runs_without_asking(&h, "s1", 2, "job_run", args);
    // Data from elsewhere above that still ends it.
    h.call("s1", 3, "secret_read", r#"{"path":"class=confidential"}"#);
    asks_again(&h, "s1", 4, "job_run", args);
}
