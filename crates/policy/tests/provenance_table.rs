//! Decisions with a session's provenance index (docs/spec.md §3.7) and destinations'
//! clearances (§3.3 "Sinks"): a `from` test decides by where each value at its pointer was
//! first seen, and the explanation says which value, where, and that provenance changed
//! the decision; a conditional grant whose `max_class` is below the taint names the
//! destination's clearance.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use policy::values::Ident;
use policy::{
    Arguments, Condition, Context, Decision, Effect, FromTest, Grant, Grants, List, NoContext,
    Pattern, Pointer, Scalar, Seen, Shown, Taint, Test, decide_call, decide_call_in,
    explain_call_in,
};
use proto::control::ConcernKind;
use proto::{DataClass, DenyReason, SessionId, Timestamp};

const ATTACKER: &str = "DE89370400440532013000";
const LANDLORD: &str = "GB29NWBK60161331926819";

#[derive(Debug)]
struct Index;

impl Context for Index {
    fn seen(&self, v: &Ident) -> Seen {
        let at = |tool: &str, call| Shown {
            tool: tool.into(),
            call,
        };
        match v.text.as_str() {
            ATTACKER => Seen::Untrusted(at("bank_read_file", 3)),
            LANDLORD => Seen::Trusted(at("bank_get_history", 1)),
            _ => Seen::Unseen,
        }
    }
}

fn cond(pointer: &str, test: Test) -> Condition {
    Condition::new(Pointer::new(pointer).unwrap(), test)
}

fn send_money(from: FromTest) -> Grants {
    [
        Grant::new(Pattern::new("bank_send_money").unwrap(), Effect::Allow)
            .when(cond("/recipient", Test::From(from)))
            .when(cond("/amount", Test::Range { min: 0, max: 1000 })),
        Grant::new(Pattern::new("bank_send_money").unwrap(), Effect::Ask),
    ]
    .into_iter()
    .collect()
}

fn args(recipient: &str, amount: i64) -> Arguments {
    Arguments::parse(&format!(
        r#"{{"recipient": "{recipient}", "amount": {amount}}}"#
    ))
}

fn s() -> SessionId {
    SessionId::new("s1").unwrap()
}

#[test]
fn a_value_first_seen_untrusted_is_not_from_trusted_and_the_person_is_told_why() {
    let g = send_money(FromTest::Trusted);
    let clean = Taint::CLEAN;
    let d =
        |a: &Arguments| decide_call_in(&g, &s(), "bank_send_money", a, clean, Timestamp(1), &Index);
    assert_eq!(d(&args(LANDLORD, 100)), Decision::Allow);
    assert_eq!(d(&args(ATTACKER, 100)), Decision::Ask);
    assert_eq!(
        d(&args("FR7630006000011234567890189", 100)),
        Decision::Ask,
        "unseen"
    );
    // Written with spaces and in lower case, it is the same IBAN.
    assert_eq!(d(&args("de89 3704 0044 0532 0130 00", 100)), Decision::Ask);

    let e = explain_call_in(
        &g,
        &s(),
        "bank_send_money",
        &args(ATTACKER, 100),
        clean,
        Timestamp(1),
        &Index,
    );
    assert!(e.by_provenance);
    assert_eq!(e.concerns.len(), 1, "{:?}", e.concerns);
    let c = &e.concerns[0];
    assert_eq!(c.kind, ConcernKind::UntrustedValue);
    assert_eq!(c.pointer, "/recipient");
    assert_eq!(c.value, ATTACKER);
    assert_eq!(
        c.detail,
        "the IBAN DE89370400440532013000 first appeared in an untrusted answer of \
         bank_read_file, call 3"
    );
    let line = e.lines[0].to_string();
    assert!(
        line.contains(
            "condition 1 fails: /recipient: from = \"trusted\" fails: the IBAN \
             DE89370400440532013000 first appeared in an untrusted answer of bank_read_file, \
             call 3"
        ),
        "{line}"
    );
}

#[test]
fn not_untrusted_lets_an_unseen_value_through_but_not_an_untrusted_one() {
    let g = send_money(FromTest::NotUntrusted);
    let d = |a: &Arguments| {
        decide_call_in(
            &g,
            &s(),
            "bank_send_money",
            a,
            Taint::CLEAN,
            Timestamp(1),
            &Index,
        )
    };
    assert_eq!(
        d(&args("FR7630006000011234567890189", 100)),
        Decision::Allow
    );
    assert_eq!(d(&args(ATTACKER, 100)), Decision::Ask);
    assert_eq!(d(&args(LANDLORD, 100)), Decision::Allow);
}

#[test]
fn without_an_index_a_from_test_never_holds() {
    for from in [FromTest::Trusted, FromTest::NotUntrusted] {
        let g = send_money(from);
        let a = args(LANDLORD, 100);
        assert_eq!(
            decide_call(&g, &s(), "bank_send_money", &a, Taint::CLEAN, Timestamp(1)),
            Decision::Ask
        );
        assert_eq!(
            decide_call_in(
                &g,
                &s(),
                "bank_send_money",
                &a,
                Taint::CLEAN,
                Timestamp(1),
                &NoContext
            ),
            Decision::Ask
        );
    }
}

#[test]
fn a_concern_is_only_for_a_grant_that_would_otherwise_have_matched() {
    let g = send_money(FromTest::Trusted);
    // The amount is out of range: the provenance grant would not match anyway.
    let e = explain_call_in(
        &g,
        &s(),
        "bank_send_money",
        &args(ATTACKER, 5000),
        Taint::CLEAN,
        Timestamp(1),
        &Index,
    );
    assert!(e.concerns.is_empty(), "{:?}", e.concerns);
    assert!(!e.by_provenance);
}

#[test]
fn a_destination_is_cleared_for_its_grants_max_class() {
    let general = Arc::new(List::new(None, [Scalar::Str("#general".into())]));
    let g: Grants = [
        Grant::new(Pattern::new("slack_send").unwrap(), Effect::Allow)
            .when(cond("/channel", Test::OneOf(general)))
            .max_class(DataClass::Internal),
        Grant::new(Pattern::new("slack_send").unwrap(), Effect::Ask),
    ]
    .into_iter()
    .collect();
    let a = Arguments::parse(r##"{"channel": "#general", "text": "hi"}"##);
    let hot = Taint::new(DataClass::Confidential, false);
    let e = explain_call_in(&g, &s(), "slack_send", &a, hot, Timestamp(1), &Index);
    assert_eq!(e.decision, Decision::Ask);
    let line = e.lines[0].to_string();
    assert!(
        line.contains(
            "this session holds confidential data and /channel \"#general\" is cleared for \
             internal"
        ),
        "{line}"
    );
    assert_eq!(e.concerns.len(), 1);
    assert_eq!(e.concerns[0].kind, ConcernKind::AboveClearance);
    assert_eq!(e.concerns[0].value, "#general");
    // At internal, the channel is cleared: no concern, it runs.
    let e = explain_call_in(
        &g,
        &s(),
        "slack_send",
        &a,
        Taint::new(DataClass::Internal, false),
        Timestamp(1),
        &Index,
    );
    assert_eq!(e.decision, Decision::Allow);
    assert!(e.concerns.is_empty());
    let _ = DenyReason::NoGrant;
}

/// Round 8: a call that falls outside the grant that clears its tool, to an `ask` grant
/// that names no clearance of its own, is shown what it left (docs/spec.md §3.3 "Sinks"):
/// a payment just above the range, a post with one link too many, a channel no grant clears.
#[test]
fn a_call_that_leaves_a_clearance_for_a_wider_ask_is_told_so() {
    let g: Grants = [
        Grant::new(Pattern::new("bank_send_money").unwrap(), Effect::Allow)
            .when(cond("/recipient", Test::From(FromTest::Trusted)))
            .when(cond("/amount", Test::Range { min: 0, max: 2500 }))
            .max_class(DataClass::Internal),
        Grant::new(Pattern::new("bank_send_money").unwrap(), Effect::Ask)
            .when(cond("/recipient", Test::From(FromTest::Trusted))),
    ]
    .into_iter()
    .collect();
    let hot = Taint::new(DataClass::Confidential, false);
    let e = explain_call_in(
        &g,
        &s(),
        "bank_send_money",
        &args(LANDLORD, 2501),
        hot,
        Timestamp(1),
        &Index,
    );
    assert_eq!(e.decision, Decision::Ask);
    assert_eq!(e.concerns.len(), 1, "{:?}", e.concerns);
    let c = &e.concerns[0];
    assert_eq!(c.kind, ConcernKind::AboveClearance);
    assert_eq!((c.pointer.as_str(), c.value.as_str()), ("/amount", "2501"));
    assert!(
        c.detail.contains("this session holds confidential data")
            && c.detail.contains("grant 1")
            && c.detail.contains("internal"),
        "{}",
        c.detail
    );
    // Within the range it runs, as before; at internal the wider ask shows nothing.
    let e = explain_call_in(
        &g,
        &s(),
        "bank_send_money",
        &args(LANDLORD, 2500),
        Taint::new(DataClass::Internal, false),
        Timestamp(1),
        &Index,
    );
    assert_eq!(e.decision, Decision::Allow);
    let e = explain_call_in(
        &g,
        &s(),
        "bank_send_money",
        &args(LANDLORD, 2501),
        Taint::new(DataClass::Internal, false),
        Timestamp(1),
        &Index,
    );
    assert_eq!(e.decision, Decision::Ask);
    assert!(e.concerns.is_empty(), "{:?}", e.concerns);
}

#[test]
fn a_channel_no_grant_clears_is_told_and_one_an_ask_clears_is_not() {
    let list = |c: &str| Arc::new(List::new(None, [Scalar::Str(c.into())]));
    let g: Grants = [
        Grant::new(Pattern::new("slack_send").unwrap(), Effect::Allow)
            .when(cond("/channel", Test::OneOf(list("#general"))))
            .max_class(DataClass::Internal),
        // The team's channel is cleared for confidential, with a look.
        Grant::new(Pattern::new("slack_send").unwrap(), Effect::Ask)
            .when(cond("/channel", Test::OneOf(list("#team"))))
            .max_class(DataClass::Confidential),
        Grant::new(Pattern::new("slack_send").unwrap(), Effect::Ask),
    ]
    .into_iter()
    .collect();
    let hot = Taint::new(DataClass::Confidential, false);
    let call = |channel: &str| {
        let a = Arguments::parse(&format!(r#"{{"channel": "{channel}", "text": "hi"}}"#));
        explain_call_in(&g, &s(), "slack_send", &a, hot, Timestamp(1), &Index)
    };
    let e = call("#random");
    assert_eq!(e.decision, Decision::Ask);
    let kinds: Vec<_> = e
        .concerns
        .iter()
        .map(|c| (c.kind, c.value.clone()))
        .collect();
    assert!(
        kinds.contains(&(ConcernKind::AboveClearance, "#random".to_owned())),
        "{kinds:?}"
    );
    let e = call("#team");
    assert_eq!(e.decision, Decision::Ask);
    assert!(e.concerns.is_empty(), "{:?}", e.concerns);
}
