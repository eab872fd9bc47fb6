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

/// The guide's "mail only inside my domain" grant, as the guide writes it (the first
/// ```toml block of docs/guide/src/conditions.md, "Argument conditions").
fn guide_conditions_block() -> String {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/guide/src/conditions.md"),
    )
    .unwrap();
    let block = page
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the guide's conditions page has a toml block");
    block.to_owned()
}

#[test]
fn the_guides_mail_grant_admits_no_list_no_header_injection_and_no_bcc() {
    let c = ok(&guide_conditions_block());
    let mail = |args: serde_json::Value| decide(&c, "mail_send_email", &args.to_string());
    assert_eq!(
        mail(serde_json::json!({"recipients": ["bob@acme.com"], "subject": "hi", "body": "x"})),
        Decision::Allow,
        "the honest mail still goes"
    );
    let let_through = [
        (
            "a list in one string",
            serde_json::json!({"recipients": ["evil@x.com, bob@acme.com"], "subject": "hi", "body": "x"}),
        ),
        (
            "a header injected after a line break",
            serde_json::json!({"recipients": ["evil@x.com\r\nBcc: a@acme.com"], "subject": "hi", "body": "x"}),
        ),
        (
            "a bcc no condition names",
            serde_json::json!({"recipients": ["bob@acme.com"], "bcc": ["evil@x.com"], "subject": "hi", "body": "x"}),
        ),
    ]
    .into_iter()
    .filter(|(_, args)| mail(args.clone()) == Decision::Allow)
    .map(|(attack, _)| attack)
    .collect::<Vec<_>>();
    assert!(let_through.is_empty(), "let through: {let_through:?}");
}

const TYPED: &str = r#"
[lists]
colleagues = ["Ann@ACME.com", "bob@acme.com"]
our_sites = ["acme.com", "*.acme.com"]
domains = ["acme.com", "acme.org"]

[[grant]]
tool = "mail"
effect = "allow"
closed = true
when = [
  { pointer = "/to/*", email = { in = "colleagues" } },
  { pointer = "/cc/*", email = { domain_in = "domains" }, optional = true },
  { pointer = "/body", links = { host_in = "our_sites" } },
]

[[grant]]
tool = "mail"
effect = "allow"
when = [
  { pointer = "/to", email = { domain = ["*.acme.com"] } },
  { pointer = "/body", links = false },
]

[[grant]]
tool = "fetch"
effect = "allow"
[[grant.when]]
pointer = "/url"
url = { host_in = "our_sites", path = ["/docs/*", "/"], ports = [8443] }

[[grant]]
tool = "open"
effect = "allow"
when = [{ pointer = "/url", url = true }, { pointer = "/who", email = true }]
"#;

#[test]
fn test_typed_conditions_decide_by_what_a_value_is() {
    let c = ok(TYPED);
    let d = |tool: &str, args: serde_json::Value| decide(&c, tool, &args.to_string());
    use serde_json::json;
    assert_eq!(
        d(
            "mail",
            json!({"to": ["Ann@acme.com."], "cc": ["x@ACME.org"], "body": "see https://docs.acme.com"})
        ),
        Decision::Allow
    );
    assert_eq!(
        d("mail", json!({"to": ["ann@acme.com"], "body": ""})),
        Decision::Deny(DenyReason::NoGrant),
        "the local part is compared exactly"
    );
    assert_eq!(
        d(
            "mail",
            json!({"to": ["bob@acme.com"], "bcc": [], "body": ""})
        ),
        Decision::Deny(DenyReason::NoGrant),
        "closed: bcc is named by no condition"
    );
    assert_eq!(
        d(
            "mail",
            json!({"to": ["bob@acme.com"], "body": "pay at ev\u{200b}il.com"})
        ),
        Decision::Deny(DenyReason::NoGrant)
    );
    assert_eq!(
        d(
            "mail",
            json!({"to": "x@mail.acme.com", "body": "no link here", "bcc": "x"})
        ),
        Decision::Allow,
        "the second grant is not closed"
    );
    assert_eq!(
        d(
            "mail",
            json!({"to": "x@mail.acme.com", "body": "HTTPS://EVIL.COM"})
        ),
        Decision::Deny(DenyReason::NoGrant)
    );
    assert_eq!(
        d("fetch", json!({"url": "https://www.acme.com:8443/docs/a"})),
        Decision::Allow
    );
    assert_eq!(d("fetch", json!({"url": "acme.com"})), Decision::Allow);
    assert_eq!(
        d("fetch", json!({"url": "https://acme.com/admin"})),
        Decision::Deny(DenyReason::NoGrant)
    );
    assert_eq!(
        d("fetch", json!({"url": "https://acme.com:9000/docs/a"})),
        Decision::Deny(DenyReason::NoGrant)
    );
    assert_eq!(
        d("open", json!({"url": "evil.com/x", "who": "a@b.c"})),
        Decision::Allow
    );
    assert_eq!(
        d("open", json!({"url": "file:///etc/passwd", "who": "a@b.c"})),
        Decision::Deny(DenyReason::NoGrant)
    );
}

#[test]
fn test_bad_typed_conditions_name_their_line() {
    let head = "[[grant]]\ntool = \"t\"\neffect = \"allow\"\n";
    let when = |w: &str| format!("{head}when = [{{ pointer = \"/a\", {w} }}]\n");
    for (w, says) in [
        ("email = false", "`email = false` is not a test"),
        ("email = {}", "write `email = true`"),
        (
            "email = \"acme.com\"",
            "`email` of the condition on /a is a table",
        ),
        (
            "email = { domains = [\"a.com\"] }",
            "unknown key `domains` in `email`",
        ),
        (
            "email = { domain = [\"a.com\"], in = \"x\" }",
            "names what is allowed twice",
        ),
        ("email = { domain = [] }", "non-empty list of strings"),
        (
            "email = { domain = [\"10.0.0.1\"] }",
            "e-mail domains are names",
        ),
        ("email = { domain = [\"\u{430}cme.com\"] }", "xn-- form"),
        ("email = { domain = [\"a*.com\"] }", "not a host pattern"),
        (
            "email = { address = [\"Bob <bob@acme.com>\"] }",
            "not one e-mail address: it has a display name",
        ),
        ("email = { in = \"nope\" }", "no list named \"nope\""),
        ("url = false", "`url = false` is not a test"),
        ("url = { host = [\"*\"] }", "leave the hosts out"),
        ("url = { path = \"docs/*\" }", "starts with `/`"),
        ("url = { ports = [0] }", "not a port"),
        ("url = { ports = [70000] }", "not a port"),
        ("url = { ports = [] }", "non-empty list of port numbers"),
        (
            "links = true",
            "`links = true` of the condition on /a is not a test",
        ),
        ("links = {}", "name the hosts allowed"),
        (
            "links = { hosts = [\"a.com\"] }",
            "unknown key `hosts` in `links`",
        ),
        ("links = { host = [\"evil%2ecom\"] }", "percent-encoding"),
        ("links = false, glob = \"*\"", "more than one test"),
    ] {
        let m = bad(&when(w), 4);
        assert!(m.contains(says), "{w}: {m}");
    }
    // A list read as addresses or hosts: the bad entry's own line.
    let m = bad(
        &format!(
            "[lists]\nteam = [\n  \"ann@acme.com\",\n  \"Bob <bob@acme.com>\",\n]\n{head}when = [{{ pointer = \"/to\", email = {{ in = \"team\" }} }}]\n"
        ),
        4,
    );
    assert!(
        m.contains("list \"team\" holds \"Bob <bob@acme.com>\""),
        "{m}"
    );
    assert!(m.contains("reads it as addresses"), "{m}");
    let m = bad(
        &format!(
            "[lists]\nsites = [\"acme.com\",\n 7]\n{head}when = [{{ pointer = \"/u\", url = {{ host_in = \"sites\" }} }}]\n"
        ),
        3,
    );
    assert!(
        m.contains("list \"sites\" holds an integer, which is not a host"),
        "{m}"
    );
    // closed takes a boolean, and a closed grant at most 64 conditions.
    let m = bad(&format!("{head}closed = \"yes\"\n"), 4);
    assert!(m.contains("invalid type"), "{m}");
    let many: Vec<String> = (0..65)
        .map(|i| format!("{{ pointer = \"/k{i}\", glob = \"*\" }}"))
        .collect();
    let m = bad(
        &format!("{head}closed = true\nwhen = [{}]\n", many.join(", ")),
        4,
    );
    assert!(m.contains("at most 64 conditions"), "{m}");
}

const PROVENANCE: &str = r#"
[gate]
max_provenance_values = 50

[lists]
payees = ["gb29 nwbk 6016 1331 9268 19", "Ann@ACME.com"]

[[grant]]
tool = "bank_send_money"
effect = "allow"
when = [
  { pointer = "/recipient", from = "trusted" },
  { pointer = "/amount", range = [0, 100] },
  { pointer = "/memo", equals = "rent https://landlord.example/pay" },
  { pointer = "/x", url = { host = ["acme.com"], path = "/docs/*" }, optional = true },
]
"#;

#[test]
fn test_from_conditions_and_what_the_config_itself_names() {
    let c = ok(PROVENANCE);
    assert_eq!(c.gate.max_provenance_values, 50);
    assert_eq!(
        ok("").gate.max_provenance_values,
        config::model::DEFAULT_PROVENANCE_VALUES
    );
    let g = c.grants.iter().next().unwrap();
    assert!(matches!(
        g.when[0].test,
        policy::Test::From(policy::FromTest::Trusted)
    ));
    // List entries and literals are the person's own knowledge, in canonical form.
    for v in [
        "GB29NWBK60161331926819",
        "ann@acme.com",
        "landlord.example/pay",
        "landlord.example",
        "acme.com",
    ] {
        assert!(c.known.contains(v), "{v} is not known");
    }
    // Not the path glob, not a list's name.
    assert!(!c.known.contains("/docs/*"));
    assert!(!c.known.contains("payees"));
    // Without a session's index the from test fails: the grant does not match.
    assert_eq!(
        decide(
            &c,
            "bank_send_money",
            r#"{"recipient":"GB29NWBK60161331926819","amount":5,"memo":"rent https://landlord.example/pay"}"#
        ),
        Decision::Deny(DenyReason::NoGrant)
    );
}

#[test]
fn test_bad_from_conditions_name_their_line() {
    let m = bad(
        "[[grant]]\ntool = \"t\"\neffect = \"allow\"\nwhen = [{ pointer = \"/a\", from = \"untrusted\" }]\n",
        4,
    );
    assert!(m.contains("\"trusted\" or \"not_untrusted\""), "{m}");
    let m = bad(
        "[[grant]]\ntool = \"t\"\neffect = \"allow\"\nwhen = [{ pointer = \"/a\", from = \"trusted\", equals = \"x\" }]\n",
        4,
    );
    assert!(m.contains("more than one test"), "{m}");
    let m = bad("[gate]\nmax_provenance_values = 0\n", 2);
    assert!(m.contains("max_provenance_values"), "{m}");
}
