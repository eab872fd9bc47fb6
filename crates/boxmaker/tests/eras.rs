//! Both MCP protocol eras downstream (issue 31 item 4; docs/spec.md §3.9, "Both protocol
//! eras"): boxmaker's client asks a server with `server/discover` (MCP 2026-07-28) and falls
//! back to `initialize` for a server of an earlier revision, for remote servers and for stdio
//! servers in a box; `boxmaker add` probes the same way and, when a server speaks no revision
//! boxmaker does, says so with the server's own list.
//!
//! The server is `tests/servers/modern_server.py`: the official Python SDK (mcp 2.x), which
//! serves both eras, behind a filter that refuses `initialize` as a 2026-07-28-only server
//! does (-32022, naming what it supports). Before this, boxmaker sent only `initialize`: such
//! a server's tools dropped out of `tools/list` and `add` asked "is it the server's MCP
//! endpoint?".

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::Value;
use testkit::{Killed, Lab, Run, python_client, python_server, repo_root, run_to_end, servers_dir};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
const DEADLINE: Duration = Duration::from_secs(90);

/// The 2026-07-28-only server on a free loopback port (`only`: a revision it speaks instead).
fn modern(lab: &Lab, only: Option<&str>) -> (Killed, u16) {
    python_server("modern_server.py", only.as_slice(), &lab.path("server.err"))
}

fn add(lab: &Lab, args: &[&str]) -> Run {
    let mut all = vec!["add"];
    all.extend_from_slice(args);
    lab.run_within(&all, DEADLINE)
}

fn call(lab: &Lab, session: &str, tool: &str, args: &str) -> Value {
    let run = lab.run_within(
        &["call", "--session", session, "--json", tool, args],
        DEADLINE,
    );
    serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("call {tool} printed no JSON answer: {e}\n{}", run.show()))
}

/// The tables of a 2026-only server reached over HTTP (`modern`, internal, untrusted,
/// pinned) and of the same server over stdio in a box (`boxed`).
fn both_servers(port: u16) -> String {
    let venv = repo_root().join("tests/py/venv");
    assert!(
        venv.join("bin/python3").exists(),
        "the PyPI MCP servers' virtualenv is missing: run `make deps`"
    );
    format!(
        r#"
[[mount]]
name = "pyvenv"
host = {venv:?}
at = "/opt/pyvenv"
class = "public"

[[mount]]
name = "servers"
host = {servers:?}
at = "/opt/servers"
class = "public"

[[egress]]
name = "local"
host = "127.0.0.1"
ports = [{port}]
class = "internal"

[[tool]]
name = "modern"
url = "http://127.0.0.1:{port}/mcp"
class = "internal"
untrusted = true
pin = true

[[tool]]
name = "boxed"
mcp = ["/opt/pyvenv/bin/python3", "/opt/servers/modern_server.py", "stdio"]
mounts = ["pyvenv", "servers"]
untrusted = true
pin = true

[[grant]]
tool = "modern_*"
effect = "allow"
max_class = "internal"

[[grant]]
tool = "boxed_*"
effect = "allow"
"#,
        venv = venv.display().to_string(),
        servers = servers_dir().display().to_string(),
    )
}

fn lab_with_both(name: &str) -> (Lab, Killed) {
    let lab = testkit::lab!("eras", name).in_its_dir().init();
    let (server, port) = modern(&lab, None);
    lab.append(&both_servers(port));
    (lab, server)
}

#[test]
fn a_2026_only_server_is_reached_over_http_and_in_a_box_with_its_labels() {
    let (lab, _server) = lab_with_both("reached");
    for (tool, class) in [("boxed_echo", "public"), ("modern_echo", "internal")] {
        let v = call(&lab, "s1", tool, r#"{"text":"hi"}"#);
        assert_eq!(v["status"], "result", "{tool}: {v}");
        let content = v["content"].as_str().unwrap();
        assert!(content.contains("modern: hi"), "{tool}: {v}");
        assert_eq!(v["class"], class, "{tool}: {v}");
        assert_eq!(v["untrusted"], true, "{tool}: {v}");
        // What the server logged while the call ran comes back with it: the call opted in
        // to its log, which a 2026-07-28 server sends only to a request that does.
        let c: Value = serde_json::from_str(content).unwrap();
        let notes = c["notifications"].as_array().cloned().unwrap_or_default();
        assert!(
            notes
                .iter()
                .any(|n| n["method"] == "notifications/message"
                    && n["params"]["data"] == "echoing hi"),
            "{tool}: no log in {c}"
        );
        assert!(
            notes
                .iter()
                .any(|n| n["method"] == "notifications/progress"),
            "{tool}: no progress in {c}"
        );
    }
    // The remote one's connection went through the egress rules, and was audited.
    let audit = std::fs::read_to_string(lab.path(".boxmaker/audit.log")).unwrap();
    assert!(
        audit.contains(r#""event":"egress""#) && audit.contains(r#""outcome":"opened""#),
        "no egress record:\n{audit}"
    );
}

fn sdk(transport: &str, mode: &str) {
    let (lab, _server) = lab_with_both(&format!("sdk-{transport}-{mode}"));
    let cmd = python_client(
        BIN.as_ref(),
        &lab.config(),
        "era_remote.py",
        &[("ERA_TRANSPORT", transport), ("ERA_MODE", mode)],
    );
    let run = run_to_end(cmd, &lab.dir, "era_remote.py", DEADLINE);
    assert!(run.status.success(), "{}", run.show());
    assert!(run.stdout.lines().any(|l| l == "ok"), "{}", run.show());
}

#[test]
fn a_2026_client_over_stdio_reaches_a_2026_only_server_behind_boxmaker() {
    sdk("stdio", "2026-07-28");
}

#[test]
fn a_legacy_client_over_stdio_reaches_a_2026_only_server_behind_boxmaker() {
    sdk("stdio", "legacy");
}

#[test]
fn a_2026_client_over_http_reaches_a_2026_only_server_behind_boxmaker() {
    sdk("http", "2026-07-28");
}

#[test]
fn a_legacy_client_over_http_reaches_a_2026_only_server_behind_boxmaker() {
    sdk("http", "legacy");
}

#[test]
fn add_discovers_a_2026_only_server_and_lists_its_tools() {
    let lab = testkit::lab!("eras", "add").in_its_dir().init();
    let (_server, port) = modern(&lab, None);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let run = add(&lab, &[&url, "--name", "modern"]);
    assert!(run.ok(), "{}", run.show());
    assert!(
        run.stderr.contains("speaks MCP 2026-07-28"),
        "{}",
        run.show()
    );
    assert!(
        run.stdout.contains("modern offers 1 tool:") && run.stdout.contains("modern_echo"),
        "{}",
        run.show()
    );
}

#[test]
fn add_names_the_servers_own_versions_when_it_speaks_none_of_boxmakers() {
    let lab = testkit::lab!("eras", "add-none").in_its_dir().init();
    let (_server, port) = modern(&lab, Some("2099-01-01"));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let before = lab.config_text();
    let run = add(&lab, &[&url, "--name", "future"]);
    assert!(!run.ok(), "{}", run.show());
    let err = run.stderr.trim_end();
    assert_eq!(err.lines().count(), 1, "{}", run.show());
    assert!(
        err.contains("speaks none of the MCP revisions boxmaker speaks")
            && err.contains("it supports 2099-01-01")
            && err.contains("2026-07-28, 2025-11-25"),
        "{}",
        run.show()
    );
    assert_eq!(lab.config_text(), before, "the config was written");
}
