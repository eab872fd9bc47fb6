//! A remote MCP server as a tool (docs/spec.md §3.9), end to end through the real binary: a
//! streamable-HTTP server made with the official Python SDK (`tests/servers/remote_server.py`,
//! MCPServer) on loopback, requiring a bearer token that boxmaker reads from a `[[secret]]`.
//! boxmaker's runner is its client; its connection is decided by the `[[egress]]` rules at the
//! call's label and audited as `egress` records.
//!
//! The hostile cases, as for a stdio server: an answer over 16 MiB, an SSE stream that never
//! ends (cut by the call's timeout), a redirect to another host, a token revoked mid-session
//! (401), a server that changes its tools (pin), and a session holding confidential data
//! refused a server whose host is cleared only for public. The answer that quotes the token
//! reaches the model redacted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::Value;
use testkit::{Killed, Lab, Run, files_below, python_server};

const DEADLINE: Duration = Duration::from_secs(90);
const TOKEN: &str = "remote-tok3n-0123456789abcdef";
const VAR: &str = "BXM_REMOTE_TEST_TOKEN";

/// The SDK server on a free loopback port, killed on drop.
struct Server {
    _child: Killed,
    port: u16,
}

fn server(lab: &Lab) -> Server {
    let state = lab.mkdir("server-state");
    let (child, port) = python_server(
        "remote_server.py",
        &[TOKEN, state.to_str().unwrap()],
        &lab.path("server.err"),
    );
    Server {
        _child: child,
        port,
    }
}

fn setup(name: &str) -> (Lab, Server) {
    let mut lab = testkit::lab!("remote", name).in_its_dir();
    lab.vars.push((VAR.into(), TOKEN.into()));
    lab.write("docs/plan.txt", "the confidential plan\n");
    let s = server(&lab);
    let port = s.port;
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    lab.write_config(&format!(
        r#"
[gate]
state = {state:?}

[box]
timeout_seconds = 6

[[mount]]
name = "docs"
host = "docs"
at = "/data/docs"
class = "confidential"

[[secret]]
name = "remote-token"
env = "{VAR}"

[[egress]]
name = "local"
host = "127.0.0.1"
ports = [{port}]
class = "public"

[[tool]]
name = "remote"
url = "{main}"
bearer = "remote-token"
pin = true
untrusted = true

[[tool]]
name = "huge"
url = "{huge}"
bearer = "remote-token"
untrusted = true

[[tool]]
name = "forever"
url = "{forever}"
bearer = "remote-token"
untrusted = true

[[tool]]
name = "linger"
url = "{linger}"
bearer = "remote-token"

[[tool]]
name = "bounce"
url = "{bounce}"
bearer = "remote-token"
untrusted = true

[[tool]]
name = "anonymous"
url = "{main}"

[[tool]]
name = "read_file"
builtin = "read_file"

[[grant]]
tool = "*"
effect = "allow"
"#,
        state = lab.path(".boxmaker"),
        main = url("/mcp"),
        huge = url("/huge/mcp"),
        forever = url("/forever/mcp"),
        linger = url("/linger/mcp"),
        bounce = url("/redirect/mcp"),
    ));
    (lab, s)
}

fn call(lab: &Lab, session: &str, tool: &str, args: &str) -> (Value, Run) {
    let run = lab.run_within(
        &["call", "--session", session, "--json", tool, args],
        DEADLINE,
    );
    let v = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("call {tool} printed no JSON answer: {e}\n{}", run.show()));
    (v, run)
}

fn message(v: &Value) -> String {
    assert_eq!(v["status"], "failed", "{v}");
    v["message"].as_str().unwrap().to_string()
}

#[test]
fn a_remote_tool_is_called_through_the_gate_with_its_secret_and_audited() {
    let (lab, s) = setup("call");
    let (v, run) = call(&lab, "s1", "remote_echo", r#"{"text":"hello"}"#);
    assert_eq!(v["status"], "result", "{}", run.show());
    assert!(
        v["content"].as_str().unwrap().contains("echo: hello"),
        "{v}"
    );
    // Labelled as the config says (untrusted), as any server's answer.
    assert_eq!(v["untrusted"], true, "{v}");
    // The answer that quotes the credential reaches the model redacted.
    let (v, _) = call(&lab, "s1", "remote_show_auth", "{}");
    let content = v["content"].as_str().unwrap();
    assert!(
        content.contains("you sent: Bearer [secret remote-token]"),
        "{v}"
    );
    assert!(!content.contains(TOKEN), "{v}");
    // Without the credential the server refuses: a clear failure naming what to do.
    let (v, _) = call(&lab, "s1", "anonymous_echo", r#"{"text":"x"}"#);
    let m = message(&v);
    assert!(m.contains("HTTP 401") && m.contains("no credential"), "{m}");
    // Its connections are egress records in the audit log.
    let tail = lab.run_within(&["audit", "tail", "-n", "400"], DEADLINE);
    let egress: Vec<Value> = tail
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(&l[l.find('{')?..]).ok())
        .filter(|r| r["event"] == "egress" && r["tool"] == "remote")
        .collect();
    assert!(
        egress.iter().any(|r| r["outcome"] == "opened"
            && r["host"] == "127.0.0.1"
            && r["port"] == u64::from(s.port)),
        "no opened record for the remote server:\n{}",
        tail.stdout
    );
    assert!(
        egress.iter().any(|r| r["outcome"] == "closed"),
        "{}",
        tail.stdout
    );
    // Nothing the run left holds the token.
    std::thread::sleep(Duration::from_secs(4));
    for dir in [lab.path(".boxmaker"), lab.path("runs")] {
        for f in files_below(&dir, None) {
            let bytes = std::fs::read(&f).unwrap_or_default();
            assert!(
                !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                "{} holds the token",
                f.display()
            );
        }
    }
}

#[test]
fn a_confidential_session_may_not_send_to_a_host_cleared_for_public() {
    let (lab, _s) = setup("clearance");
    // Discovered and callable while the session is clean.
    let (v, run) = call(&lab, "c", "remote_echo", r#"{"text":"before"}"#);
    assert_eq!(v["status"], "result", "{}", run.show());
    let (v, _) = call(&lab, "c", "read_file", r#"{"path":"/data/docs/plan.txt"}"#);
    assert_eq!(v["class"], "confidential", "{v}");
    let (v, _) = call(
        &lab,
        "c",
        "remote_echo",
        r#"{"text":"the confidential plan"}"#,
    );
    let m = message(&v);
    assert!(
        m.contains("boxmaker refused 127.0.0.1:")
            && m.contains("this session holds confidential data")
            && m.contains("cleared for public"),
        "{m}"
    );
    // Another session is not held back by this one's label.
    let (v, _) = call(&lab, "other", "remote_echo", r#"{"text":"fine"}"#);
    assert_eq!(v["status"], "result", "{v}");
}

#[test]
fn a_token_revoked_mid_session_is_a_clear_failure() {
    let (lab, _s) = setup("revoked");
    let (v, run) = call(&lab, "r", "remote_echo", r#"{"text":"one"}"#);
    assert_eq!(v["status"], "result", "{}", run.show());
    std::fs::write(lab.path("server-state/revoked"), "").unwrap();
    let (v, _) = call(&lab, "r", "remote_echo", r#"{"text":"two"}"#);
    let m = message(&v);
    assert!(
        m.contains("the server refused the credential (HTTP 401")
            && m.contains("\"remote-token\"")
            && m.contains("boxmaker auth login remote"),
        "{m}"
    );
    assert!(!m.contains(TOKEN));
}

#[test]
fn hostile_remote_servers_are_bounded() {
    let (lab, _s) = setup("hostile");
    // An answer over 16 MiB.
    let (v, run) = call(&lab, "h", "huge_echo", r#"{"text":"x"}"#);
    let m = message(&v);
    assert!(m.contains("over 16 MiB"), "{m}\n{}", run.show());
    // An SSE stream that never ends: cut by the call's timeout.
    let (v, run) = call(&lab, "h", "forever_echo", r#"{"text":"x"}"#);
    let m = message(&v);
    assert!(m.contains("timed out after 6 s"), "{m}");
    assert!(run.took < Duration::from_secs(30), "{}", run.show());
    // A redirect to a host no rule clears: refused, nothing sent there.
    let (v, _) = call(&lab, "h", "bounce_echo", r#"{"text":"x"}"#);
    let m = message(&v);
    assert!(m.contains("boxmaker refused 127.0.0.2:"), "{m}");
}

#[test]
fn a_remote_server_that_changes_its_tools_is_refused_when_pinned() {
    let (lab, _s) = setup("pin");
    let (v, run) = call(&lab, "p", "remote_echo", r#"{"text":"one"}"#);
    assert_eq!(v["status"], "result", "{}", run.show());
    let (v, _) = call(&lab, "p", "remote_flip", "{}");
    assert_eq!(v["status"], "result", "{v}");
    let (v, _) = call(&lab, "p", "remote_echo", r#"{"text":"two"}"#);
    let m = message(&v);
    assert!(
        m.contains("describes it differently") && m.contains("description"),
        "{m}"
    );
}

/// The `egress` records of `tool` in `session`, oldest first.
fn egress_of(lab: &Lab, session: &str, tool: &str) -> Vec<Value> {
    let tail = lab.run_within(&["audit", "tail", "-n", "2000"], DEADLINE);
    tail.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(&l[l.find('{')?..]).ok())
        .filter(|r| r["event"] == "egress" && r["tool"] == tool && r["session"] == session)
        .collect()
}

/// The connection to a remote server's URL is kept between requests (no new handshake per
/// call) while the decision it was opened under stands: calls in a row go over one
/// connection, each still through the gate; once the session holds data above the host's
/// clearance, the kept connection carries nothing more (the request is decided anew, and
/// refused), and none is kept past its idle time.
#[test]
fn a_remote_servers_connection_is_kept_between_calls_while_its_clearance_holds() {
    let (lab, _s) = setup("keep");
    for i in 0..5 {
        let (v, run) = call(&lab, "k", "remote_echo", &format!(r#"{{"text":"n{i}"}}"#));
        assert_eq!(v["status"], "result", "{}", run.show());
    }
    // The gate writes `egress` records behind the calls: counted once they stop coming.
    let opened = |lab: &Lab| {
        let count = || {
            egress_of(lab, "k", "remote")
                .into_iter()
                .filter(|r| r["outcome"] == "opened")
                .count()
        };
        let mut last = count();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let now = count();
            if now == last {
                return now;
            }
            last = now;
        }
    };
    let first = opened(&lab);
    eprintln!("five calls opened {first} connections");
    assert!(
        first <= 2,
        "five calls opened {first} connections: {:#?}",
        egress_of(&lab, "k", "remote")
    );
    // Past the idle time, a new one.
    std::thread::sleep(remote_keep_idle() + Duration::from_secs(1));
    let (v, _) = call(&lab, "k", "remote_echo", r#"{"text":"later"}"#);
    assert_eq!(v["status"], "result", "{v}");
    assert!(
        opened(&lab) > first,
        "a connection idle past its time was used"
    );
    // Above the host's clearance: the kept connection is not used.
    let (v, _) = call(&lab, "k", "read_file", r#"{"path":"/data/docs/plan.txt"}"#);
    assert_eq!(v["class"], "confidential", "{v}");
    let (v, _) = call(
        &lab,
        "k",
        "remote_echo",
        r#"{"text":"the confidential plan"}"#,
    );
    let m = message(&v);
    // Refused, so decided anew: over the kept connection it would have gone out.
    assert!(m.contains("this session holds confidential data"), "{m}");
}

/// A server whose answer stream goes on after the answer holds that connection: the call
/// is answered at once, the next one goes on a new connection without waiting for the
/// first to end, and what the stream says after the answer reaches nobody.
#[test]
fn an_answer_stream_that_goes_on_after_the_answer_holds_up_nothing() {
    let (lab, _s) = setup("linger");
    for i in 0..3 {
        let (v, run) = call(&lab, "l", "linger_echo", &format!(r#"{{"text":"n{i}"}}"#));
        assert_eq!(v["status"], "result", "{}", run.show());
        let content = v["content"].as_str().unwrap();
        assert!(content.contains(&format!("\"echo: n{i}\"")), "{v}");
        assert!(!content.contains("still here"), "{v}");
        assert!(run.took < Duration::from_secs(5), "{}", run.show());
        // Its `[[tool]]` says nothing of trust, but its answers come through an `[[egress]]`
        // rule that does not say `trusted = true`: someone else's words (issue 30).
        assert_eq!(v["untrusted"], true, "{v}");
    }
}

/// How long the runner keeps an idle connection to a remote server (docs/spec.md §3.9).
fn remote_keep_idle() -> Duration {
    Duration::from_secs(4)
}
