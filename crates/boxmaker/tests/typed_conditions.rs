//! The real binary: typed conditions and closed grants (docs/spec.md §3.3 "Typed
//! conditions"). The guide's "mail only inside my domain" grant written with globs lets
//! through a list in one string, a header injected after CR LF and a bcc; written typed and
//! closed, `boxmaker check --explain` says what it read and `boxmaker call` is refused
//! before anything runs, while the honest mail reaches the runner.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// The tool is a server that exits at once: a call that reaches the runner ends `failed`
/// (exit 1), one the gate refuses ends `denied` (exit 3) and starts nothing.
const TOOL: &str = r#"
[gate]
state = "state"

[[tool]]
name = "mail"
mcp = ["/bin/false"]
"#;

const GLOBS: &str = r#"
[[grant]]
tool = "mail_send_email"
effect = "allow"
when = [
  { pointer = "/recipients/*", glob = "*@acme.com" },
  { pointer = "/cc/*", glob = "*@acme.com", optional = true },
]
"#;

const TYPED: &str = r#"
[[grant]]
tool = "mail_send_email"
effect = "allow"
closed = true
when = [
  { pointer = "/recipients/*", email = { domain = ["acme.com"] } },
  { pointer = "/cc/*", email = { domain = ["acme.com"] }, optional = true },
  { pointer = "/subject", links = false },
  { pointer = "/body", links = { host = ["acme.com", "*.acme.com"] } },
]
"#;

const HONEST: &str =
    r#"{"recipients":["bob@acme.com"],"subject":"notes","body":"see https://docs.acme.com/x"}"#;

/// The three attacks the glob form lets through, and a link to another host in the body.
const ATTACKS: [(&str, &str); 4] = [
    (
        "a list in one string",
        r#"{"recipients":["evil@x.com, bob@acme.com"],"subject":"notes","body":"x"}"#,
    ),
    (
        "a header after CR LF",
        r#"{"recipients":["evil@x.com\r\nBcc: a@acme.com"],"subject":"notes","body":"x"}"#,
    ),
    (
        "a bcc",
        r#"{"recipients":["bob@acme.com"],"bcc":["evil@x.com"],"subject":"notes","body":"x"}"#,
    ),
    (
        "a link without a scheme, split by a zero-width space",
        r#"{"recipients":["bob@acme.com"],"subject":"notes","body":"pay at ev\u200bil.com/pay"}"#,
    ),
];

fn config(name: &str, grants: &str) -> PathBuf {
    let lab = testkit::lab!("typed-conditions", name);
    lab.write_config(&format!("{TOOL}{grants}"));
    // The tester's word for the config it wrote (docs/spec.md §6, "Whose config").
    assert!(testkit::trust(BIN, lab.config()), "boxmaker trust");
    lab.config()
}

fn check(file: &Path, arguments: &str) -> (String, String) {
    let o = Command::new(BIN)
        .args(["check", "--config", file.to_str().unwrap()])
        .args(["--session", "s1", "--tool", "mail_send_email"])
        .args(["--arguments", arguments, "--explain"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8(o.stdout).unwrap();
    let first = out.lines().next().unwrap_or("").to_owned();
    (first, out)
}

fn call(file: &Path, arguments: &str) -> Output {
    Command::new(BIN)
        .args(["call", "--config", file.to_str().unwrap()])
        .args(["--session", "s1", "mail_send_email", arguments])
        .output()
        .unwrap()
}

#[test]
fn the_glob_form_lets_a_list_a_header_and_a_bcc_through() {
    let f = config("globs", GLOBS);
    for (attack, args) in &ATTACKS[..3] {
        assert_eq!(check(&f, args).0, "allow", "{attack}");
    }
}

#[test]
fn the_typed_closed_form_refuses_each_attack_and_explain_says_what_it_read() {
    let f = config("typed-check", TYPED);
    let (first, out) = check(&f, HONEST);
    assert_eq!(first, "allow", "{out}");
    assert!(
        out.contains("/recipients/0 is the address bob@acme.com (domain acme.com)"),
        "{out}"
    );
    assert!(
        out.contains("closed: every key of the arguments is named"),
        "{out}"
    );
    let says = [
        r#"/recipients/0 is not one e-mail address: it holds a list (a ',') ("evil@x.com, bob@acme.com")"#,
        r#"/recipients/0 is not one e-mail address: it holds a line break ("evil@x.com\r\nBcc: a@acme.com")"#,
        "closed: /bcc is named by none of its conditions",
        r#"/body is text that carries a link to evil.com ("evil.com/pay"), which is not one of acme.com, *.acme.com"#,
    ];
    for ((attack, args), said) in ATTACKS.iter().zip(says) {
        let (first, out) = check(&f, args);
        assert_eq!(first, "denied no_grant", "{attack}: {out}");
        assert!(out.contains(said), "{attack}: {out}");
    }
}

#[test]
fn a_call_the_typed_grant_refuses_is_denied_before_anything_runs() {
    let f = config("typed-call", TYPED);
    for (attack, args) in ATTACKS {
        let o = call(&f, args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{attack}: {err}");
        assert!(err.contains("denied: no_grant"), "{attack}: {err}");
    }
    // The honest mail is let through: it reaches the runner, whose server exits at once.
    let o = call(&f, HONEST);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("failed: mail_send_email"), "{err}");
}
