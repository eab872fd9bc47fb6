//! OAuth sign-in for a remote MCP server (docs/spec.md §3.9, "Signing in"), end to end with
//! real parts on loopback: the OpenID-certified `oidc-provider` (npm, tests/node-conformance)
//! as the authorization server — dynamic registration, PKCE, resource indicators, refresh
//! and revocation — and a streamable-HTTP MCP server made with the official Python SDK
//! (`tests/servers/oauth_rs.py`, MCPServer) that checks every token at its introspection
//! endpoint. The test drives `boxmaker auth login` and plays the browser
//! (`tests/python/oauth_browser.py`), then calls through the gate with `boxmaker call`.
//!
//! And the sign-in's attacks on loopback (`tests/servers/oauth_hostile.py`): resource
//! metadata on a host no rule clears (refused before any connection there), a mix-up of
//! issuers, metadata that never ends.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use testkit::{
    Killed, Lab, Run, client_python, files_below, free_port, python_dir, python_server, repo_root,
    servers_dir, wait_listening,
};

const DEADLINE: Duration = Duration::from_secs(90);
/// The access tokens' lifetime: short, so the test sees one refreshed.
const TTL: u64 = 6;
const RS_SECRET: &str = "resource-server-secret-0123456789";

fn node_modules() -> PathBuf {
    repo_root().join("tests/node-conformance/node_modules")
}

/// Whether `make deps` installed what these tests run; else says so and skips.
fn installed() -> bool {
    if !node_modules().join("oidc-provider").exists() {
        eprintln!(
            "SKIPPED: oidc-provider is not installed (tests/node-conformance): run `make deps`"
        );
        return false;
    }
    testkit::require_python_sdk();
    true
}

struct Setup {
    lab: Lab,
    _as: Killed,
    _rs: Killed,
    rs_state: PathBuf,
    as_state: PathBuf,
}

fn setup(name: &str) -> Setup {
    let lab = testkit::lab!("oauth", name).in_its_dir();
    let (asp, rsp) = (free_port(), free_port());
    let as_state = lab.mkdir("as-state");
    let rs_state = lab.mkdir("rs-state");
    let issuer = format!("http://localhost:{asp}");
    let resource = format!("http://127.0.0.1:{rsp}/mcp");
    let as_ = Command::new(node_modules().join(".bin/node"))
        .arg(servers_dir().join("oidc_as.mjs"))
        .arg(node_modules())
        .args([&asp.to_string(), &resource, &TTL.to_string(), RS_SECRET])
        .arg(&as_state)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(lab.path("as.err")).unwrap())
        .spawn()
        .unwrap();
    let rs = Command::new(client_python())
        .arg(servers_dir().join("oauth_rs.py"))
        .args([&rsp.to_string(), &issuer, RS_SECRET])
        .arg(&rs_state)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(lab.path("rs.err")).unwrap())
        .spawn()
        .unwrap();
    let (as_, rs) = (Killed(as_), Killed(rs));
    wait_listening(asp, "the authorization server listens");
    wait_listening(rsp, "the MCP server listens");
    lab.write_config(&format!(
        r#"
[gate]
state = {state:?}

[box]
timeout_seconds = 20

[[egress]]
name = "mcp"
host = "127.0.0.1"
ports = [{rsp}]

[[tool]]
name = "remote"
url = "{resource}"
oauth = {{ scopes = ["mcp", "offline_access"] }}
untrusted = true

[[grant]]
tool = "*"
effect = "allow"
"#,
        state = lab.path(".boxmaker"),
    ));
    Setup {
        lab,
        _as: as_,
        _rs: rs,
        rs_state,
        as_state,
    }
}

fn call(lab: &Lab, tool: &str, args: &str) -> (Value, Run) {
    let run = lab.run_within(&["call", "--session", "s1", "--json", tool, args], DEADLINE);
    let v = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("call {tool} printed no JSON answer: {e}\n{}", run.show()));
    (v, run)
}

fn message(v: &Value) -> String {
    assert_eq!(v["status"], "failed", "{v}");
    v["message"].as_str().unwrap().to_string()
}

/// `boxmaker auth login remote`, the browser played by a script: its stdout and stderr.
fn login(lab: &Lab) -> (bool, String, String) {
    let mut child = lab
        .cmd(&["auth", "login", "remote", "--no-browser", "--wait", "40"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut lines = Vec::new();
    let mut browser = None;
    for line in std::io::BufReader::new(out).lines() {
        let line = line.unwrap();
        if line.starts_with("http") && browser.is_none() {
            browser = Some(
                Command::new("python3")
                    .arg(python_dir().join("oauth_browser.py"))
                    .arg(&line)
                    .output()
                    .unwrap(),
            );
        }
        lines.push(line);
    }
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let ok = child.wait().unwrap().success();
    if let Some(b) = browser {
        err.push_str(&String::from_utf8_lossy(&b.stdout));
    }
    (ok, lines.join("\n"), err)
}

#[test]
fn sign_in_call_refresh_revoke_with_a_real_authorization_server() {
    if !installed() {
        return;
    }
    let s = setup("flow");
    let lab = &s.lab;
    // No sign-in yet: the call fails at once, naming the command that fixes it.
    let (v, run) = call(lab, "remote_echo", r#"{"text":"hi"}"#);
    let m = message(&v);
    let config = std::path::absolute(lab.config()).unwrap();
    let fix = format!("boxmaker auth login remote --config {}", config.display());
    assert!(
        m.contains("needs a sign-in") && m.contains(&fix),
        "{m}\n{}",
        run.show()
    );
    let st = lab.run_within(&["auth", "status"], DEADLINE);
    assert_eq!(st.code(), Some(1), "{}", st.show());
    assert!(st.stdout.contains("remote: not signed in"), "{}", st.show());

    // The authorization server is another host than the MCP server: login stops before
    // connecting there and prints the rules that would clear it.
    let (ok, out, err) = login(lab);
    assert!(!ok, "{out}\n{err}");
    assert!(
        err.contains("the sign-in cannot reach localhost:") && err.contains("boxmaker refused"),
        "{err}"
    );
    let rules: String = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(rules.contains("host = \"localhost\""), "{out}");
    lab.append(&format!("\n{rules}\n"));

    // Signed in: discovery, registration, PKCE, the browser, the token.
    let (ok, out, err) = login(lab);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("remote: signed in at http://localhost:")
            && out.contains("registered itself")
            && out.contains("refreshes itself")
            && out.contains("scopes: mcp"),
        "{out}\n{err}"
    );
    let st = lab.run_within(&["auth", "status", "remote"], DEADLINE);
    assert!(
        st.ok() && st.stdout.contains("remote: signed in at"),
        "{}",
        st.show()
    );

    // Through the gate, labelled as the config says.
    let (v, run) = call(lab, "remote_echo", r#"{"text":"hello"}"#);
    assert_eq!(v["status"], "result", "{}", run.show());
    assert!(
        v["content"].as_str().unwrap().contains("echo: hello"),
        "{v}"
    );
    assert_eq!(v["untrusted"], true, "{v}");
    // A server that echoes the token: redacted before the model sees it.
    let (v, _) = call(lab, "remote_show_token", "{}");
    let content = v["content"].as_str().unwrap();
    assert!(
        content.contains("your token is [secret remote (OAuth)]"),
        "{v}"
    );

    // Past the token's lifetime: refreshed before it is sent, and the call goes through.
    std::thread::sleep(Duration::from_secs(TTL + 1));
    let (v, run) = call(lab, "remote_echo", r#"{"text":"later"}"#);
    assert_eq!(v["status"], "result", "{}", run.show());
    let tokens = std::fs::read_to_string(s.rs_state.join("tokens")).unwrap();
    let distinct: std::collections::BTreeSet<&str> = tokens.lines().collect();
    assert!(
        distinct.len() >= 2,
        "no refreshed token reached the server: {tokens}"
    );

    // Revoked at the authorization server (its refresh refused): a clear failure naming
    // the command.
    std::fs::write(s.as_state.join("revoked"), "").unwrap();
    std::fs::write(s.rs_state.join("revoked"), "").unwrap();
    std::thread::sleep(Duration::from_secs(TTL + 1));
    let (v, _) = call(lab, "remote_echo", r#"{"text":"revoked"}"#);
    let m = message(&v);
    assert!(
        m.contains("the sign-in to remote has expired or was revoked") && m.contains(&fix),
        "{m}"
    );
    std::fs::remove_file(s.as_state.join("revoked")).unwrap();
    std::fs::remove_file(s.rs_state.join("revoked")).unwrap();

    // Signing out revokes at the server (RFC 7009) and removes the tokens here.
    let out = lab.run_within(&["auth", "logout", "remote"], DEADLINE);
    assert!(
        out.ok()
            && out
                .stdout
                .contains("the authorization server revoked its tokens"),
        "{}",
        out.show()
    );
    let (v, _) = call(lab, "remote_echo", r#"{"text":"gone"}"#);
    assert!(message(&v).contains("needs a sign-in"), "{v}");

    // No token the server was shown is in anything the run left or printed (the sealed
    // store, the audit log, the gate's log, every command's output).
    std::thread::sleep(Duration::from_secs(4));
    for f in files_below(&lab.path(".boxmaker"), None)
        .into_iter()
        .chain(files_below(&lab.path("runs"), None))
    {
        let bytes = std::fs::read(&f).unwrap_or_default();
        for t in &distinct {
            assert!(
                !bytes.windows(t.len()).any(|w| w == t.as_bytes()),
                "{} holds a token",
                f.display()
            );
        }
    }
}

#[test]
fn hostile_sign_in_documents_are_refused() {
    if !installed() {
        return;
    }
    let lab = testkit::lab!("oauth", "hostile").in_its_dir();
    let state = lab.mkdir("hostile-state");
    let (_srv, port) = python_server(
        "oauth_hostile.py",
        &[state.to_str().unwrap()],
        &lab.path("hostile.err"),
    );
    let tool = |name: &str| {
        format!(
            "[[tool]]\nname = \"{name}\"\nurl = \"http://127.0.0.1:{port}/{name}/mcp\"\noauth = true\n\n"
        )
    };
    lab.write_config(&format!(
        "[gate]\nstate = {:?}\n\n[[egress]]\nhost = \"127.0.0.1\"\nports = [{port}]\n\n{}{}{}",
        lab.path(".boxmaker"),
        tool("other-host"),
        tool("mixup"),
        tool("huge"),
    ));
    let login = |name: &str| lab.run_within(&["auth", "login", name, "--no-browser"], DEADLINE);
    // Resource metadata on a host no rule clears: refused before any connection there.
    let r = login("other-host");
    assert!(!r.ok(), "{}", r.show());
    assert!(
        r.stderr.contains("boxmaker refused 127.0.0.2:")
            && r.stdout.contains("host = \"127.0.0.2\""),
        "{}",
        r.show()
    );
    assert!(
        !state.join("other-host").exists(),
        "a request reached 127.0.0.2"
    );
    // Metadata of another issuer than the one named: a mix-up, refused.
    let r = login("mixup");
    assert!(
        !r.ok() && r.stderr.contains("mix-up") && !r.stdout.contains("http"),
        "{}",
        r.show()
    );
    // Metadata that never ends: bounded.
    let r = login("huge");
    assert!(!r.ok() && r.stderr.contains("over 256 KiB"), "{}", r.show());
}
