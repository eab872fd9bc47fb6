//! docs/spec.md §3.3 "Argument conditions", one row per operator and per hostile case:
//! each operator holding and failing, a missing pointer, a wrong type, `*` over arrays,
//! arguments that do not parse, deny-wins with conditions, and grant order.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use policy::{
    Arguments, Condition, Decision, Effect, Grant, Grants, List, Pattern, Pointer, Scalar, Taint,
    Test, decide_call, explain_call,
};
use proto::{DenyReason, SessionId, Timestamp};

const ALLOW: Decision = Decision::Allow;
const ASK: Decision = Decision::Ask;
const NO_GRANT: Decision = Decision::Deny(DenyReason::NoGrant);
const DENIED: Decision = Decision::Deny(DenyReason::DeniedByGrant);

fn cond(pointer: &str, test: Test) -> Condition {
    Condition::new(Pointer::new(pointer).unwrap(), test)
}
fn eq_s(v: &str) -> Test {
    Test::Equals(Scalar::Str(v.into()))
}
fn one_of(vs: &[&str]) -> Test {
    Test::OneOf(Arc::new(List::new(
        Some("payees".into()),
        vs.iter().map(|v| Scalar::Str((*v).into())),
    )))
}
fn glob(p: &str) -> Test {
    Test::Glob(vec![Pattern::new(p).unwrap()])
}
fn range(min: i64, max: i64) -> Test {
    Test::Range { min, max }
}
fn grant(effect: Effect, conds: Vec<Condition>) -> Grant {
    conds
        .into_iter()
        .fold(Grant::new(Pattern::new("t").unwrap(), effect), Grant::when)
}
fn allow_when(c: Condition) -> Grant {
    grant(Effect::Allow, vec![c])
}

struct Row {
    name: &'static str,
    grants: Vec<Grant>,
    args: &'static str,
    want: Decision,
}

fn row(name: &'static str, grants: Vec<Grant>, args: &'static str, want: Decision) -> Row {
    Row {
        name,
        grants,
        args,
        want,
    }
}

fn rows() -> Vec<Row> {
    vec![
        // equals
        row(
            "equals holds",
            vec![allow_when(cond("/to", eq_s("a")))],
            r#"{"to":"a"}"#,
            ALLOW,
        ),
        row(
            "equals fails",
            vec![allow_when(cond("/to", eq_s("a")))],
            r#"{"to":"b"}"#,
            NO_GRANT,
        ),
        row(
            "equals an integer, not its string",
            vec![allow_when(cond("/n", Test::Equals(Scalar::Int(5))))],
            r#"{"n":"5"}"#,
            NO_GRANT,
        ),
        row(
            "equals an integer, not a float",
            vec![allow_when(cond("/n", Test::Equals(Scalar::Int(5))))],
            r#"{"n":5.0}"#,
            NO_GRANT,
        ),
        row(
            "equals a boolean",
            vec![allow_when(cond("/dry", Test::Equals(Scalar::Bool(true))))],
            r#"{"dry":true}"#,
            ALLOW,
        ),
        // one of
        row(
            "one_of holds",
            vec![allow_when(cond("/to", one_of(&["a", "b"])))],
            r#"{"to":"b"}"#,
            ALLOW,
        ),
        row(
            "one_of fails",
            vec![allow_when(cond("/to", one_of(&["a", "b"])))],
            r#"{"to":"c"}"#,
            NO_GRANT,
        ),
        row(
            "one_of of an empty list never holds",
            vec![allow_when(cond("/to", one_of(&[])))],
            r#"{"to":""}"#,
            NO_GRANT,
        ),
        row(
            "one_of is exact, not a prefix",
            vec![allow_when(cond("/to", one_of(&["ab"])))],
            r#"{"to":"a"}"#,
            NO_GRANT,
        ),
        // glob
        row(
            "glob holds",
            vec![allow_when(cond("/to", glob("*@acme.com")))],
            r#"{"to":"x@acme.com"}"#,
            ALLOW,
        ),
        row(
            "glob matches the whole string",
            vec![allow_when(cond("/to", glob("*@acme.com")))],
            r#"{"to":"x@acme.com.evil.io"}"#,
            NO_GRANT,
        ),
        row(
            "glob is case-sensitive",
            vec![allow_when(cond("/to", glob("*@acme.com")))],
            r#"{"to":"x@ACME.com"}"#,
            NO_GRANT,
        ),
        // range
        row(
            "range holds at min",
            vec![allow_when(cond("/n", range(1, 10)))],
            r#"{"n":1}"#,
            ALLOW,
        ),
        row(
            "range holds at max",
            vec![allow_when(cond("/n", range(1, 10)))],
            r#"{"n":10}"#,
            ALLOW,
        ),
        row(
            "range fails below",
            vec![allow_when(cond("/n", range(1, 10)))],
            r#"{"n":0}"#,
            NO_GRANT,
        ),
        row(
            "range fails above",
            vec![allow_when(cond("/n", range(1, 10)))],
            r#"{"n":11}"#,
            NO_GRANT,
        ),
        row(
            "range takes a float inside",
            vec![allow_when(cond("/n", range(1, 10)))],
            r#"{"n":9.99}"#,
            ALLOW,
        ),
        row(
            "range refuses a float just above",
            vec![allow_when(cond("/n", range(1, 10)))],
            r#"{"n":10.01}"#,
            NO_GRANT,
        ),
        row(
            "range refuses a huge integer",
            vec![allow_when(cond("/n", range(1, 10)))],
            r#"{"n":18446744073709551615}"#,
            NO_GRANT,
        ),
        // missing pointer and wrong type: the condition fails, no error
        row(
            "missing key fails",
            vec![allow_when(cond("/to", eq_s("a")))],
            r#"{}"#,
            NO_GRANT,
        ),
        row(
            "missing nested key fails",
            vec![allow_when(cond("/a/b", eq_s("a")))],
            r#"{"a":{}}"#,
            NO_GRANT,
        ),
        row(
            "index past the end fails",
            vec![allow_when(cond("/argv/3", eq_s("a")))],
            r#"{"argv":["a"]}"#,
            NO_GRANT,
        ),
        row(
            "null fails",
            vec![allow_when(cond("/to", eq_s("a")))],
            r#"{"to":null}"#,
            NO_GRANT,
        ),
        row(
            "a number where a string is tested fails",
            vec![allow_when(cond("/to", glob("*")))],
            r#"{"to":1}"#,
            NO_GRANT,
        ),
        row(
            "an array where a string is tested fails",
            vec![allow_when(cond("/to", eq_s("a")))],
            r#"{"to":["a"]}"#,
            NO_GRANT,
        ),
        row(
            "a string where a number is tested fails",
            vec![allow_when(cond("/n", range(0, 9)))],
            r#"{"n":"5"}"#,
            NO_GRANT,
        ),
        row(
            "stepping into a string fails",
            vec![allow_when(cond("/to/x", glob("*")))],
            r#"{"to":"a"}"#,
            NO_GRANT,
        ),
        row(
            "arguments that are not an object fail",
            vec![allow_when(cond("/to", glob("*")))],
            r#"["to"]"#,
            NO_GRANT,
        ),
        row(
            "optional holds when missing",
            vec![allow_when(cond("/cc", glob("*@acme.com")).optional())],
            r#"{}"#,
            ALLOW,
        ),
        row(
            "optional still tests what is there",
            vec![allow_when(cond("/cc", glob("*@acme.com")).optional())],
            r#"{"cc":"x@evil.com"}"#,
            NO_GRANT,
        ),
        // every element
        row(
            "every element holds",
            vec![allow_when(cond("/to/*", one_of(&["a", "b"])))],
            r#"{"to":["a","b","a"]}"#,
            ALLOW,
        ),
        row(
            "one element fails",
            vec![allow_when(cond("/to/*", one_of(&["a", "b"])))],
            r#"{"to":["a","evil"]}"#,
            NO_GRANT,
        ),
        row(
            "every element of none holds",
            vec![allow_when(cond("/to/*", one_of(&["a"])))],
            r#"{"to":[]}"#,
            ALLOW,
        ),
        row(
            "* on a string fails",
            vec![allow_when(cond("/to/*", one_of(&["a"])))],
            r#"{"to":"a"}"#,
            NO_GRANT,
        ),
        row(
            "* on an object fails",
            vec![allow_when(cond("/to/*", one_of(&["a"])))],
            r#"{"to":{"x":"a"}}"#,
            NO_GRANT,
        ),
        row(
            "nested every",
            vec![allow_when(cond("/rows/*/to/*", glob("*@acme.com")))],
            r#"{"rows":[{"to":["a@acme.com"]},{"to":[]}]}"#,
            ALLOW,
        ),
        row(
            "nested every, one deep element fails",
            vec![allow_when(cond("/rows/*/to/*", glob("*@acme.com")))],
            r#"{"rows":[{"to":["a@acme.com"]},{"to":["e@evil.com"]}]}"#,
            NO_GRANT,
        ),
        // all conditions must hold
        row(
            "two conditions, both hold",
            vec![grant(
                Effect::Allow,
                vec![cond("/to", eq_s("a")), cond("/n", range(0, 5))],
            )],
            r#"{"to":"a","n":3}"#,
            ALLOW,
        ),
        row(
            "two conditions, one fails",
            vec![grant(
                Effect::Allow,
                vec![cond("/to", eq_s("a")), cond("/n", range(0, 5))],
            )],
            r#"{"to":"a","n":6}"#,
            NO_GRANT,
        ),
        // arguments that do not parse match no conditional grant; plain grants still match
        row(
            "a duplicated key does not parse",
            vec![allow_when(cond("/to", eq_s("a")))],
            r#"{"to":"a","to":"a"}"#,
            NO_GRANT,
        ),
        row(
            "text that is not JSON does not parse",
            vec![
                allow_when(cond("/to", eq_s("a"))),
                Grant::new(Pattern::new("t").unwrap(), Effect::Ask),
            ],
            r#"{"to":"a""#,
            ASK,
        ),
        row(
            "a conditional deny does not match unparsed arguments",
            vec![
                grant(Effect::Deny, vec![cond("/to", eq_s("a"))]),
                Grant::new(Pattern::new("t").unwrap(), Effect::Ask),
            ],
            r#"{"to":"a","to":"b"}"#,
            ASK,
        ),
        // deny wins
        row(
            "a conditional deny that holds beats an unconditional allow",
            vec![
                Grant::new(Pattern::new("t").unwrap(), Effect::Allow),
                grant(Effect::Deny, vec![cond("/to", eq_s("evil"))]),
            ],
            r#"{"to":"evil"}"#,
            DENIED,
        ),
        row(
            "a conditional deny that fails leaves the allow",
            vec![
                Grant::new(Pattern::new("t").unwrap(), Effect::Allow),
                grant(Effect::Deny, vec![cond("/to", eq_s("evil"))]),
            ],
            r#"{"to":"good"}"#,
            ALLOW,
        ),
        row(
            "an unconditional deny beats a conditional allow that holds",
            vec![
                allow_when(cond("/to", eq_s("a"))),
                Grant::new(Pattern::new("t").unwrap(), Effect::Deny),
            ],
            r#"{"to":"a"}"#,
            DENIED,
        ),
        row(
            "a conditional allow that holds beats an unconditional ask",
            vec![
                Grant::new(Pattern::new("t").unwrap(), Effect::Ask),
                allow_when(cond("/to", eq_s("a"))),
            ],
            r#"{"to":"a"}"#,
            ALLOW,
        ),
    ]
}

#[test]
fn test_conditions_table_every_operator_and_hostile_case() {
    let session = SessionId::new("s1").unwrap();
    let now = Timestamp(1);
    let mut failures = Vec::new();
    for r in rows() {
        let args = Arguments::parse(r.args);
        let grants: Grants = r.grants.iter().cloned().collect();
        let got = decide_call(&grants, &session, "t", &args, Taint::CLEAN, now);
        if got != r.want {
            failures.push(format!("{}: got {got}, want {}", r.name, r.want));
        }
        if explain_call(&grants, &session, "t", &args, Taint::CLEAN, now).decision != got {
            failures.push(format!("{}: explain disagrees with decide", r.name));
        }
        let reversed: Grants = r.grants.iter().rev().cloned().collect();
        if decide_call(&reversed, &session, "t", &args, Taint::CLEAN, now) != got {
            failures.push(format!("{}: depends on grant order", r.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn test_unknown_arguments_offer_a_tool_a_conditional_allow_could_run() {
    let session = SessionId::new("s1").unwrap();
    let grants: Grants = [
        allow_when(cond("/to", eq_s("a"))),
        grant(Effect::Deny, vec![cond("/to", eq_s("evil"))]),
    ]
    .into_iter()
    .collect();
    let d = |a: &Arguments| decide_call(&grants, &session, "t", a, Taint::CLEAN, Timestamp(1));
    assert_eq!(d(&Arguments::Unknown), ALLOW);
    assert_eq!(d(&Arguments::Unparsed), NO_GRANT);
}

#[test]
fn test_hostile_arguments_stay_fast() {
    // A deep array of a million elements under `*`, and a long string under a hostile glob.
    let big = format!(
        r#"{{"to":[{}"x"],"s":"{}"}}"#,
        "\"a\",".repeat(1_000_000),
        "a".repeat(100_000)
    );
    let grants: Grants = [
        allow_when(cond("/to/*", one_of(&["a"]))),
        allow_when(cond("/s", glob("*a*a*a*a*a*a*a*b"))),
    ]
    .into_iter()
    .collect();
    let args = Arguments::parse(&big);
    let start = std::time::Instant::now();
    let got = decide_call(
        &grants,
        &SessionId::new("s").unwrap(),
        "t",
        &args,
        Taint::CLEAN,
        Timestamp(1),
    );
    assert_eq!(got, NO_GRANT);
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
    // Nesting deeper than serde_json's limit does not parse (and does not overflow the stack).
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(Arguments::parse(&deep), Arguments::Unparsed);
}
