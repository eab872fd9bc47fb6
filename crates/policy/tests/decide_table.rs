//! docs/spec.md §3.3 steps 1–5, one row per step and per boundary.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use policy::{Decision, Effect, Grant, Grants, Pattern, Taint, decide, explain};
use proto::{DataClass, DenyReason, SessionId, Timestamp};

use DataClass::{Confidential, Internal, Public, Secret};

fn p(s: &str) -> Pattern {
    Pattern::new(s).unwrap()
}

fn allow(tool: &str) -> Grant {
    Grant::new(p(tool), Effect::Allow)
}
fn ask(tool: &str) -> Grant {
    Grant::new(p(tool), Effect::Ask)
}
fn deny(tool: &str) -> Grant {
    Grant::new(p(tool), Effect::Deny)
}

const NOW: Timestamp = Timestamp(1_000);
const ALLOW: Decision = Decision::Allow;
const ASK: Decision = Decision::Ask;
const NO_GRANT: Decision = Decision::Deny(DenyReason::NoGrant);
const EXPIRED: Decision = Decision::Deny(DenyReason::GrantExpired);
const TAINT: Decision = Decision::Deny(DenyReason::TaintTooHigh);
const DENIED: Decision = Decision::Deny(DenyReason::DeniedByGrant);

struct Row {
    name: &'static str,
    grants: Vec<Grant>,
    session: &'static str,
    tool: &'static str,
    taint: Taint,
    now: Timestamp,
    want: Decision,
}

fn row(name: &'static str, grants: Vec<Grant>, tool: &'static str, want: Decision) -> Row {
    Row {
        name,
        grants,
        session: "s1",
        tool,
        taint: Taint::CLEAN,
        now: NOW,
        want,
    }
}

impl Row {
    fn taint(mut self, class: DataClass, untrusted: bool) -> Self {
        self.taint = Taint::new(class, untrusted);
        self
    }
    fn session(mut self, s: &'static str) -> Self {
        self.session = s;
        self
    }
    fn at(mut self, t: u64) -> Self {
        self.now = Timestamp(t);
        self
    }
}

fn rows() -> Vec<Row> {
    vec![
        // Step 1: nothing matches.
        row("no grants at all", vec![], "read_file", NO_GRANT),
        row(
            "other tool only",
            vec![allow("write_file")],
            "read_file",
            NO_GRANT,
        ),
        row(
            "glob needs a suffix char",
            vec![allow("fetch_*")],
            "fetch",
            NO_GRANT,
        ),
        row("glob matches", vec![allow("fetch_*")], "fetch_get", ALLOW),
        row("? is one char", vec![allow("run?")], "run", NO_GRANT),
        row(
            "sessions pattern excludes",
            vec![allow("read_file").sessions(p("team-*"))],
            "read_file",
            NO_GRANT,
        ),
        row(
            "sessions pattern includes",
            vec![allow("read_file").sessions(p("team-*"))],
            "read_file",
            ALLOW,
        )
        .session("team-a"),
        row(
            "exact session",
            vec![allow("read_file").sessions(p("s1"))],
            "read_file",
            ALLOW,
        ),
        row(
            "expired grant of another session is still no_grant",
            vec![allow("read_file").sessions(p("s2")).expires(Timestamp(1))],
            "read_file",
            NO_GRANT,
        ),
        // Step 2: a live deny wins.
        row("deny alone", vec![deny("run")], "run", DENIED),
        row(
            "deny beats allow",
            vec![allow("run"), deny("run")],
            "run",
            DENIED,
        ),
        row(
            "deny glob beats exact allow",
            vec![allow("run"), deny("*")],
            "run",
            DENIED,
        ),
        row(
            "deny for another session does not apply",
            vec![allow("run"), deny("run").sessions(p("s2"))],
            "run",
            ALLOW,
        ),
        row(
            "deny beats allow even when taint is too high",
            vec![allow("run").max_class(Public), deny("run")],
            "run",
            DENIED,
        )
        .taint(Secret, true),
        row(
            "deny still live one second before expiry",
            vec![allow("run"), deny("run").expires(Timestamp(1_001))],
            "run",
            DENIED,
        ),
        row(
            "deny expired exactly at T no longer applies",
            vec![allow("run"), deny("run").expires(Timestamp(1_000))],
            "run",
            ALLOW,
        ),
        row(
            "expired deny alone is grant_expired",
            vec![deny("run").expires(Timestamp(10))],
            "run",
            EXPIRED,
        ),
        // Step 3: matching allow/ask grants have all expired.
        row(
            "allow expired exactly at T",
            vec![allow("run").expires(Timestamp(1_000))],
            "run",
            EXPIRED,
        ),
        row(
            "allow live one second before T",
            vec![allow("run").expires(Timestamp(1_000))],
            "run",
            ALLOW,
        )
        .at(999),
        row(
            "one live of two",
            vec![allow("run").expires(Timestamp(5)), ask("run")],
            "run",
            ASK,
        ),
        row(
            "all expired",
            vec![
                allow("run").expires(Timestamp(5)),
                ask("run").expires(Timestamp(6)),
            ],
            "run",
            EXPIRED,
        ),
        // Step 4: taint.
        row(
            "max_class equal to taint admits",
            vec![allow("fetch_*").max_class(Internal)],
            "fetch_get",
            ALLOW,
        )
        .taint(Internal, false),
        row(
            "taint one above max_class",
            vec![allow("fetch_*").max_class(Internal)],
            "fetch_get",
            TAINT,
        )
        .taint(Confidential, false),
        row(
            "default max_class is secret",
            vec![allow("fetch_get")],
            "fetch_get",
            ALLOW,
        )
        .taint(Secret, false),
        row(
            "if_untrusted deny refuses untrusted",
            vec![allow("run").if_untrusted(Effect::Deny)],
            "run",
            TAINT,
        )
        .taint(Public, true),
        row(
            "if_untrusted deny admits trusted",
            vec![allow("run").if_untrusted(Effect::Deny)],
            "run",
            ALLOW,
        ),
        row(
            "expired grant does not admit",
            vec![
                allow("run").expires(Timestamp(5)),
                ask("run").max_class(Public),
            ],
            "run",
            TAINT,
        )
        .taint(Internal, false),
        row(
            "another grant admits",
            vec![allow("run").max_class(Public), ask("run")],
            "run",
            ASK,
        )
        .taint(Secret, false),
        // Step 5: allow or ask.
        row("plain allow", vec![allow("run")], "run", ALLOW),
        row("plain ask", vec![ask("run")], "run", ASK),
        row(
            "allow wins over ask",
            vec![ask("run"), allow("run")],
            "run",
            ALLOW,
        ),
        row(
            "if_untrusted ask asks when untrusted",
            vec![allow("run").if_untrusted(Effect::Ask)],
            "run",
            ASK,
        )
        .taint(Public, true),
        row(
            "if_untrusted ask allows when trusted",
            vec![allow("run").if_untrusted(Effect::Ask)],
            "run",
            ALLOW,
        ),
        row(
            "ask grant with if_untrusted allow still asks",
            vec![ask("run")],
            "run",
            ASK,
        )
        .taint(Public, true),
        row(
            "a plain allow next to an if_untrusted ask runs",
            vec![allow("run").if_untrusted(Effect::Ask), allow("r*")],
            "run",
            ALLOW,
        )
        .taint(Public, true),
        row(
            "an admitting ask next to a non-admitting allow asks",
            vec![allow("run").max_class(Public), ask("run")],
            "run",
            ASK,
        )
        .taint(Internal, false),
    ]
}

#[test]
fn test_decide_table_every_step_and_boundary() {
    let mut failures = Vec::new();
    for r in rows() {
        let grants: Grants = r.grants.iter().cloned().collect();
        let session = SessionId::new(r.session).unwrap();
        let got = decide(&grants, &session, r.tool, r.taint, r.now);
        if got != r.want {
            failures.push(format!("{}: got {got}, want {}", r.name, r.want));
        }
        let explained = explain(&grants, &session, r.tool, r.taint, r.now);
        if explained.decision != got {
            failures.push(format!("{}: explain disagrees with decide", r.name));
        }
        // Reversed order gives the same answer.
        let reversed: Grants = r.grants.iter().rev().cloned().collect();
        if decide(&reversed, &session, r.tool, r.taint, r.now) != got {
            failures.push(format!("{}: depends on grant order", r.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn test_decide_hostile_tool_name_and_pattern_stay_fast() {
    let grants: Grants = [allow("*a*a*a*a*a*a*a*a*a*b"), deny("*?*?*?*?*?*c")]
        .into_iter()
        .collect();
    let tool = "a".repeat(50_000);
    let start = std::time::Instant::now();
    let got = decide(
        &grants,
        &SessionId::new("s").unwrap(),
        &tool,
        Taint::CLEAN,
        NOW,
    );
    assert_eq!(got, NO_GRANT);
    assert!(start.elapsed() < std::time::Duration::from_secs(2));
}
