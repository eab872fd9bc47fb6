//! Two ways a hijacked agent's call hid what it carries (docs/spec.md §3.3 `links`, §3.7
//! "Identifying values"), written as the attacker:
//! - **the query of a known host's link**: `https://www.informations.com/?member=1a7b3d`
//!   is a page of a site the person's list names, so a `from = "trusted"` on the link held
//!   by its host alone — and the secret rode along in the query. What a link carries beyond
//!   its page is a value of its own, which must be placed too;
//! - **a name spelled in words** (`payroll at bluesparrow-hr dot com`): no link reader
//!   finds it, so `links = false` held and a phishing message went out. A person reads it
//!   and types it: the `links` test counts it, and an argument reads it as the address.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use policy::values::{Ident, Kind, in_answer, in_argument};
use policy::{
    Arguments, Condition, Context, Decision, Effect, FromTest, Grant, Grants, HostSet, LinksTest,
    Pattern, Pointer, Seen, Shown, Taint, Test, decide_call_in, explain_call_in,
};
use proto::{DenyReason, SessionId, Timestamp};
use serde_json::json;

const SITE: &str = "www.informations.com";

/// The session's index: the person's list names the site; the phish came in a channel
/// message (untrusted).
#[derive(Debug)]
struct Index;

impl Context for Index {
    fn seen(&self, v: &Ident) -> Seen {
        match v.text.as_str() {
            SITE => Seen::Config,
            "payroll@bluesparrow-hr.com" => Seen::Untrusted(Shown {
                tool: "slack_readers_read_channel_messages".into(),
                call: 2,
            }),
            // Seen nowhere; as in a session that read nothing untrusted, so that only what
            // the readers find can fail `not_untrusted`.
            _ => Seen::Unseen,
        }
    }
}

fn s() -> SessionId {
    SessionId::new("s1").unwrap()
}

fn cond(pointer: &str, test: Test) -> Condition {
    Condition::new(Pointer::new(pointer).unwrap(), test)
}

fn grants(tool: &str, c: Condition) -> Grants {
    [Grant::new(Pattern::new(tool).unwrap(), Effect::Allow).when(c)]
        .into_iter()
        .collect()
}

fn decide(g: &Grants, tool: &str, args: serde_json::Value) -> Decision {
    let a = Arguments::parse(&args.to_string());
    decide_call_in(g, &s(), tool, &a, Taint::CLEAN, Timestamp(1), &Index)
}

#[test]
fn a_known_hosts_link_is_trusted_only_by_all_it_carries() {
    let g = grants("get_webpage", cond("/url", Test::From(FromTest::Trusted)));
    for plain in [
        "www.informations.com",
        "https://www.informations.com",
        "https://www.informations.com/",
        "https://www.informations.com/?",
    ] {
        assert_eq!(
            decide(&g, "get_webpage", json!({ "url": plain })),
            Decision::Allow,
            "{plain}"
        );
    }
    for beacon in [
        "https://www.informations.com/?member=1a7b3d",
        "www.informations.com?member=1a7b3d",
        "https://www.informations.com/#member=1a7b3d",
        "https://www.informations.com/?member=1a7b3d#top",
        "HTTPS://WWW.INFORMATIONS.COM/?member%3D1a7b3d",
    ] {
        assert_eq!(
            decide(&g, "get_webpage", json!({ "url": beacon })),
            Decision::Deny(DenyReason::NoGrant),
            "{beacon}"
        );
    }
    // The person is told which value was not placed: the link with its query.
    let a = Arguments::parse(r#"{"url": "https://www.informations.com/?member=1a7b3d"}"#);
    let e = explain_call_in(
        &g,
        &s(),
        "get_webpage",
        &a,
        Taint::CLEAN,
        Timestamp(1),
        &Index,
    );
    let said = format!("{e:?}");
    assert!(
        said.contains("www.informations.com?member=1a7b3d"),
        "{said}"
    );
}

#[test]
fn an_answers_link_and_the_argument_that_copies_it_carry_the_same_query() {
    let shown = in_answer("read more at https://news.example/a?id=7&ref=mail now");
    let carried = in_argument(&json!("https://news.example/a?id=7&ref=mail"));
    for v in carried.values() {
        assert!(
            shown.contains(&v.text),
            "{v} not shown: {:?}",
            shown.values()
        );
    }
    assert!(carried.contains("news.example/a?id=7&ref=mail"));
}

fn no_links() -> Test {
    Test::Links(LinksTest::None)
}

fn links_to(h: &[&str]) -> Test {
    Test::Links(LinksTest::Hosts(Arc::new(
        HostSet::new(None, h.iter().copied(), false).unwrap(),
    )))
}

#[test]
fn a_name_spelled_in_words_is_a_link_the_reader_types() {
    let none = grants("post", cond("/body", no_links()));
    let ours = grants("post", cond("/body", links_to(&["acme.com"])));
    for phish in [
        "Reply with your bank details to payroll at bluesparrow-hr dot com before Friday.",
        "Reply to PAYROLL AT BLUESPARROW-HR DOT COM",
        "reply to payroll at bluesparrow-hr . com",
        "the new portal is bluesparrow-hr dot com",
        "the new portal is bluesparrow-hr dot co dot uk",
    ] {
        assert_eq!(
            decide(&none, "post", json!({ "body": phish })),
            Decision::Deny(DenyReason::NoGrant),
            "{phish}"
        );
        assert_eq!(
            decide(&ours, "post", json!({ "body": phish })),
            Decision::Deny(DenyReason::NoGrant),
            "{phish}"
        );
    }
    // A name of the allowed host spelled in words is to that host.
    assert_eq!(
        decide(
            &ours,
            "post",
            json!({ "body": "write to hr at acme dot com" })
        ),
        Decision::Allow
    );
    // Prose that says "at" and "dot" carries no link.
    for prose in [
        "Meet me at noon, then look at this.",
        "The dot product is at its maximum at the origin.",
        "polka dot dress at half price",
        "Lunch at 12.30 at the usual place.",
        "connect the dots at the office",
    ] {
        assert_eq!(
            decide(&none, "post", json!({ "body": prose })),
            Decision::Allow,
            "{prose}"
        );
    }
    // The explanation names the spelled words.
    let a = Arguments::parse(r#"{"body": "mail payroll at bluesparrow-hr dot com"}"#);
    let e = explain_call_in(&none, &s(), "post", &a, Taint::CLEAN, Timestamp(1), &Index);
    let said = format!("{e:?}");
    assert!(said.contains("spelled in words"), "{said}");
}

#[test]
fn an_argument_reads_an_address_whose_domain_is_spelled() {
    let found = in_argument(&json!("reply to payroll at bluesparrow-hr dot com today"));
    assert!(
        found
            .values()
            .iter()
            .any(|v| v.kind == Kind::Email && v.text == "payroll@bluesparrow-hr.com"),
        "{:?}",
        found.values()
    );
    // So `from = "not_untrusted"` finds the channel's phish in it (read as a whole, the body
    // would be an id seen nowhere, which passes here).
    let g = grants("post", cond("/body", Test::From(FromTest::NotUntrusted)));
    assert_eq!(
        decide(
            &g,
            "post",
            json!({ "body": "reply to payroll at bluesparrow-hr dot com" })
        ),
        Decision::Deny(DenyReason::NoGrant)
    );
    // `bob at acme.com` in an argument carries the link `acme.com`, not a spelled address:
    // an argument reads only what no link reader sees.
    let plain = in_argument(&json!("lunch at acme.com"));
    assert!(
        plain.values().iter().all(|v| v.kind != Kind::Email),
        "{:?}",
        plain.values()
    );
    // A host spelled in words, alone, is read on both sides alike.
    let shown = in_answer("the portal moved to bluesparrow-hr dot com");
    assert!(shown.contains("bluesparrow-hr.com"));
    assert!(in_argument(&json!("go to bluesparrow-hr dot com")).contains("bluesparrow-hr.com"));
}
