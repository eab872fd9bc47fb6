//! The real binary: `boxmaker check --arguments JSON [--explain]` against grants with
//! argument conditions (docs/spec.md §3.3, §7).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

const POLICY: &str = r#"
[[tool]]
name = "mail"
mcp = ["mail-server"]

[lists]
contacts = ["ann@acme.com", "bob@acme.com"]

[[grant]]
tool = "mail_send"
effect = "allow"
when = [
  { pointer = "/to/*", in = "contacts" },
  { pointer = "/priority", range = [1, 3], optional = true },
]

[[grant]]
tool = "mail_send"
effect = "ask"

[[grant]]
tool = "mail_send"
effect = "deny"
when = [{ pointer = "/subject", glob = "*password*" }]
"#;

fn config(name: &str) -> PathBuf {
    let lab = testkit::lab!("check-arguments", name);
    lab.write_config(POLICY);
    // The tester's config, trusted as a person would.
    assert!(testkit::trust(BIN, lab.config()), "boxmaker trust");
    lab.config()
}

fn check(file: &Path, arguments: Option<&str>, explain: bool) -> Output {
    let mut args = vec![
        "check",
        "--config",
        file.to_str().unwrap(),
        "--session",
        "s1",
        "--tool",
        "mail_send",
    ];
    if let Some(a) = arguments {
        args.extend(["--arguments", a]);
    }
    if explain {
        args.push("--explain");
    }
    Command::new(BIN).args(&args).output().unwrap()
}

fn first_line(o: &Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone())
        .unwrap()
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

#[test]
fn test_check_decides_by_the_arguments() {
    let f = config("decide");
    let d = |a: Option<&str>| first_line(&check(&f, a, false));
    assert_eq!(
        d(Some(r#"{"to":["ann@acme.com"],"subject":"hi"}"#)),
        "allow"
    );
    assert_eq!(
        d(Some(
            r#"{"to":["ann@acme.com"],"priority":2,"subject":"hi"}"#
        )),
        "allow"
    );
    assert_eq!(
        d(Some(
            r#"{"to":["ann@acme.com","eve@evil.com"],"subject":"hi"}"#
        )),
        "ask"
    );
    assert_eq!(
        d(Some(
            r#"{"to":["ann@acme.com"],"priority":9,"subject":"hi"}"#
        )),
        "ask"
    );
    assert_eq!(
        d(Some(r#"{"to":["ann@acme.com"],"subject":"your password"}"#)),
        "denied denied_by_grant"
    );
    // Without --arguments the call is `{}`: `/to` finds nothing, so only the plain ask.
    assert_eq!(d(None), "ask");
}

#[test]
fn test_check_explain_says_which_condition_held_or_failed() {
    let f = config("explain");
    let o = check(
        &f,
        Some(r#"{"to":["ann@acme.com","eve@evil.com"],"subject":"hi"}"#),
        true,
    );
    let out = String::from_utf8(o.stdout.clone()).unwrap();
    assert_eq!(out.lines().next(), Some("ask"), "{out}");
    let g1 = out.lines().find(|l| l.starts_with("grant 1 ")).unwrap();
    assert!(g1.contains("its condition 1 does not hold"), "{g1}");
    assert!(
        g1.contains("condition 1 fails: /to/* is the string \"eve@evil.com\""),
        "{g1}"
    );
    assert!(
        g1.contains("condition 2 holds: /priority finds nothing, and it is optional"),
        "{g1}"
    );
    let g3 = out.lines().find(|l| l.starts_with("grant 3 ")).unwrap();
    assert!(
        g3.contains("condition 1 fails: /subject is the string \"hi\""),
        "{g3}"
    );
}

#[test]
fn test_check_arguments_that_do_not_parse_match_no_conditional_grant() {
    let f = config("unparsed");
    let o = check(
        &f,
        Some(r#"{"to":["ann@acme.com"],"subject":"password","subject":"hi"}"#),
        true,
    );
    assert_eq!(first_line(&o), "ask");
    let err = String::from_utf8(o.stderr.clone()).unwrap();
    assert!(err.contains("not strict JSON"), "{err}");
    assert!(err.contains("appears twice"), "{err}");
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("arguments are not strict JSON"), "{out}");
}
