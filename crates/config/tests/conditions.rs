//! `[[grant]] when` and `[lists]` (docs/spec.md §3.3 "Argument conditions"): a good file
//! gives grants that decide by the call's arguments, and every bad condition is one error
//! naming its line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use config::{ConfigError, parse};
use policy::{Arguments, Decision, Taint, decide_call, explain_call};
use proto::{DenyReason, SessionId, Timestamp};

fn ok(text: &str) -> config::Config {
    match parse(text, "boxmaker.toml", Path::new("/etc/boxmaker-test")) {
        Ok(c) => c,
        Err(e) => panic!("expected a valid config, got: {e}"),
    }
}

/// Parses `text`, expects an error at `line`, and returns its message.
fn bad(text: &str, line: usize) -> String {
    let e = match parse(text, "b.toml", Path::new("/etc/boxmaker-test")) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    };
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "error is more than one line: {msg:?}");
    match &e {
        ConfigError::Invalid { line: l, .. } => assert_eq!(*l, line, "wrong line in {msg:?}"),
        other => panic!("expected a placed error, got {other:?}"),
    }
    msg
}

const BANK: &str = r#"
[lists]
payees = ["GB01", "GB02"]

[[grant]]
tool = "send_money"
effect = "allow"
when = [
  { pointer = "/recipient", in = "payees" },
  { pointer = "/amount", range = [0, 500] },
]

[[grant]]
tool = "send_money"
effect = "ask"

[[grant]]
tool = "send_email"
effect = "allow"
[[grant.when]]
pointer = "/recipients/*"
glob = ["*@acme.com", "*@acme.org"]
[[grant.when]]
pointer = "/cc/*"
glob = "*@acme.com"
optional = true

[[grant]]
tool = "send_email"
effect = "deny"
[[grant.when]]
pointer = "/subject"
one_of = ["password reset", 7, true]
"#;

fn decide(c: &config::Config, tool: &str, args: &str) -> Decision {
    decide_call(
        &c.grants,
        &SessionId::new("s1").unwrap(),
        tool,
        &Arguments::parse(args),
        Taint::CLEAN,
        Timestamp(1),
    )
}

#[test]
fn test_conditions_decide_by_the_arguments() {
    let c = ok(BANK);
    assert_eq!(
        decide(&c, "send_money", r#"{"recipient":"GB01","amount":20.5}"#),
        Decision::Allow
    );
    assert_eq!(
        decide(&c, "send_money", r#"{"recipient":"XX99","amount":20}"#),
        Decision::Ask
    );
    assert_eq!(
        decide(&c, "send_money", r#"{"recipient":"GB01","amount":501}"#),
        Decision::Ask
    );
    assert_eq!(
        decide(
            &c,
            "send_money",
            r#"{"recipient":"GB01","recipient":"XX","amount":1}"#
        ),
        Decision::Ask,
        "a duplicated key does not parse: only the unconditional grant matches"
    );
    assert_eq!(
        decide(
            &c,
            "send_email",
            r#"{"recipients":["a@acme.com","b@acme.org"],"subject":"hi"}"#
        ),
        Decision::Allow
    );
    assert_eq!(
        decide(
            &c,
            "send_email",
            r#"{"recipients":["a@acme.com"],"cc":["x@evil.com"],"subject":"hi"}"#
        ),
        Decision::Deny(DenyReason::NoGrant)
    );
    assert_eq!(
        decide(
            &c,
            "send_email",
            r#"{"recipients":["a@acme.com"],"subject":"password reset"}"#
        ),
        Decision::Deny(DenyReason::DeniedByGrant)
    );
}

#[test]
fn test_explain_shows_each_condition_held_or_failed() {
    let c = ok(BANK);
    let e = explain_call(
        &c.grants,
        &SessionId::new("s1").unwrap(),
        "send_money",
        &Arguments::parse(r#"{"recipient":"XX99","amount":20}"#),
        Taint::CLEAN,
        Timestamp(1),
    );
    let first = e.lines[0].to_string();
    assert!(
        first.contains("does not apply: its condition 1 does not hold"),
        "{first}"
    );
    assert!(
        first.contains("condition 1 fails: /recipient is the string \"XX99\""),
        "{first}"
    );
    assert!(
        first.contains("condition 2 holds: /amount is the number 20"),
        "{first}"
    );
    assert!(first.contains("when /recipient in list payees and /amount in range 0..=500"));
}

#[test]
fn test_bad_conditions_name_their_line() {
    let head = "[[grant]]\ntool = \"t\"\neffect = \"allow\"\n";
    let m = bad(
        &format!("{head}when = [{{ pointer = \"/a\", contains = \"x\" }}]\n"),
        4,
    );
    assert!(m.contains("unknown field `contains`"), "{m}");
    let m = bad(
        &format!("{head}when = [{{ pointer = \"a\", equals = 1 }}]\n"),
        4,
    );
    assert!(m.contains("JSON pointer"), "{m}");
    let m = bad(
        &format!("{head}when = [{{ pointer = \"/a~x\", equals = 1 }}]\n"),
        4,
    );
    assert!(m.contains("~0"), "{m}");
    let m = bad(
        &format!("{head}when = [{{ pointer = \"/a\", in = \"nope\" }}]\n"),
        4,
    );
    assert!(m.contains("no list named \"nope\""), "{m}");
    let m = bad(
        &format!("{head}when = [{{ pointer = \"/a\", range = [5, 1] }}]\n"),
        4,
    );
    assert!(m.contains("min 5 above max 1"), "{m}");
    let m = bad(
        &format!("{head}when = [{{ pointer = \"/a\", range = [5] }}]\n"),
        4,
    );
    assert!(m.contains("two integers"), "{m}");
    let m = bad(&format!("{head}when = [{{ pointer = \"/a\" }}]\n"), 4);
    assert!(m.contains("needs one test"), "{m}");
    let m = bad(
        &format!("{head}when = [{{ pointer = \"/a\", equals = 1, glob = \"x\" }}]\n"),
        4,
    );
    assert!(m.contains("more than one test"), "{m}");
    let m = bad(
        &format!("{head}when = [{{ pointer = \"/a\", equals = 1.5 }}]\n"),
        4,
    );
    assert!(m.contains("float"), "{m}");
    let m = bad(
        &format!("{head}when = [{{ pointer = \"/a\", glob = \"\" }}]\n"),
        4,
    );
    assert!(m.contains("empty"), "{m}");
    let m = bad(
        &format!("{head}when = [{{ pointer = \"/a\", glob = [] }}]\n"),
        4,
    );
    assert!(m.contains("non-empty list"), "{m}");
    let m = bad("[lists]\npayees = [\"a\", { x = 1 }]\n", 2);
    assert!(m.contains("list \"payees\" holds a table"), "{m}");
    let m = bad("[lists]\n\"bad name\" = [\"a\"]\n", 2);
    assert!(m.contains("list name"), "{m}");
    // The line of the condition itself, in a [[grant.when]] table further down.
    let m = bad(
        &format!(
            "{head}[[grant.when]]\npointer = \"/a\"\nequals = 1\n[[grant.when]]\npointer = \"/b\"\nrange = [2, 1]\n"
        ),
        9,
    );
    assert!(m.contains("condition on /b"), "{m}");
}
