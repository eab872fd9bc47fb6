#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Argument conditions on the call path (docs/spec.md §3.3): the gate parses the arguments
//! once, decides with them, and decides again with the same parsed arguments when a person
//! approves; arguments that do not parse match no conditional grant.

mod common;

use common::*;
use proto::control::{ControlAnswer, ControlOp};
use proto::{DataClass, DenyReason, ToolResponse};

const CONDITIONS: &str = r#"
[gate]
state = "state"
approval_ttl = 60

[[tool]]
name = "pay"
mcp = ["fake-pay"]

[[tool]]
name = "read"
mcp = ["fake-read"]

[[tool]]
name = "wire"
mcp = ["fake-wire"]

[lists]
payees = ["GB01", "GB02"]

[[grant]]
tool = "read"
effect = "allow"

# Known payees run; anyone else goes to a person; one name is never paid.
[[grant]]
tool = "pay"
effect = "allow"
when = [{ pointer = "/to", in = "payees" }]

[[grant]]
tool = "pay"
effect = "ask"

[[grant]]
tool = "pay"
effect = "deny"
when = [{ pointer = "/to", equals = "blocked" }]

# Only a conditional grant, which a person approves, and only while public.
[[grant]]
tool = "wire"
effect = "ask"
max_class = "public"
when = [{ pointer = "/to", in = "payees" }]
"#;

fn h() -> H {
    H::with_config(CONDITIONS, Box::new(FakeRunner { hook: None }))
}

#[test]
fn test_a_conditional_allow_runs_only_the_calls_whose_arguments_hold() {
    let h = h();
    let r = h.call("s1", 1, "pay", r#"{"to":"GB01"}"#);
    assert!(matches!(r, ToolResponse::Result { .. }), "{r:?}");
    let (_, _, call) = h.call_held("s1", 2, "pay", r#"{"to":"XX99"}"#);
    drop(call);
}

#[test]
fn test_a_conditional_deny_wins_over_allow_and_ask() {
    let h = h();
    assert_eq!(
        h.call("s1", 1, "pay", r#"{"to":"blocked"}"#),
        ToolResponse::Denied {
            reason: DenyReason::DeniedByGrant
        }
    );
}

#[test]
fn test_arguments_that_do_not_parse_match_no_conditional_grant() {
    let h = h();
    // A duplicated key: a person must never see one payee while the tool pays another.
    let (ap, _, call) = h.call_held("s1", 1, "pay", r#"{"to":"GB01","to":"blocked"}"#);
    assert!(ap.starts_with("ap-"));
    drop(call);
    // Only a conditional grant names `wire`: nothing matches at all.
    assert_eq!(
        h.call("s1", 2, "wire", r#"{"to":"GB01""#),
        ToolResponse::Denied {
            reason: DenyReason::NoGrant
        }
    );
}

#[test]
fn test_the_approved_call_is_decided_again_on_the_same_arguments() {
    let h = h();
    let (ap, _, call) = h.call_held("s1", 1, "wire", r#"{"to":"GB02","class":"public"}"#);
    assert!(matches!(
        h.control(ControlOp::Approve { approval: ap }),
        ControlAnswer::Approval { .. }
    ));
    let r = call.join().unwrap();
    assert!(matches!(r, ToolResponse::Result { .. }), "{r:?}");

    // While a person looks, the taint rises past the conditional grant's max_class: the
    // re-decision still finds the grant (the same arguments) and refuses for the taint,
    // not for the lack of a grant.
    let (ap, _, call) = h.call_held("s1", 2, "wire", r#"{"to":"GB01"}"#);
    let r = h.call("s1", 3, "read", r#"{"class":"internal"}"#);
    assert!(matches!(r, ToolResponse::Result { .. }), "{r:?}");
    assert_eq!(h.taint("s1"), (DataClass::Internal, false));
    assert!(matches!(
        h.control(ControlOp::Approve { approval: ap }),
        ControlAnswer::Approval { .. }
    ));
    assert_eq!(
        call.join().unwrap(),
        ToolResponse::Denied {
            reason: DenyReason::TaintTooHigh
        }
    );
}
