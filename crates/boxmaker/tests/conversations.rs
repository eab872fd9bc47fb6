//! A conversation no request can shed (issue 29 item 1; docs/spec.md §5, "A conversation over
//! HTTP"). MCP 2026-07-28 has no session: a front that made a boxmaker session for every
//! request let a client read a confidential file and post it to a public-only tool on its
//! next request. Over stdio the connection is the conversation; over HTTP the credential is.
//! Played with the official Python SDK in both eras on both transports, and with raw HTTP
//! for what no SDK sends (a forged, stale or swapped credential, a session of another
//! conversation, two conversations on one connection, an era switched mid-conversation).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{Lab, python_client, run_to_end};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
const PLAN: &str = "the plan\n";
const WAIT: Duration = Duration::from_secs(30);

/// `boxmaker init`'s config, a confidential mount holding `plan.txt`, and `share`, a write
/// tool allowed only while the session has read nothing above public.
fn lab(name: &str) -> Lab {
    let lab = testkit::lab!("conversations", name).init();
    lab.append(
        r#"
[[mount]]
host = "notes"
at = "/data/notes"
class = "confidential"

[[tool]]
name = "share"
builtin = "write_file"

[[grant]]
tool = "share"
effect = "allow"
max_class = "public"
"#,
    );
    lab.write("notes/plan.txt", PLAN);
    lab
}

fn sdk(transport: &str, mode: &str) {
    let lab = lab(&format!("sdk-{transport}-{mode}"));
    let mut cmd = python_client(
        BIN.as_ref(),
        &lab.config(),
        "era_client.py",
        &[("ERA_TRANSPORT", transport), ("ERA_MODE", mode)],
    );
    cmd.env("BOXMAKER_PLAN", PLAN);
    let run = run_to_end(cmd, &lab.dir, "era_client.py", Duration::from_secs(90));
    assert!(run.status.success(), "{}", run.show());
    assert!(run.stdout.lines().any(|l| l == "ok"), "{}", run.show());
    assert!(
        run.stdout.contains("denied: taint_too_high"),
        "{}",
        run.show()
    );
}

#[test]
fn a_2026_client_over_http_keeps_its_taint_across_requests() {
    sdk("http", "2026-07-28");
}

#[test]
fn a_legacy_client_over_http_keeps_its_taint_across_sessions_of_its_credential() {
    sdk("http", "legacy");
}

#[test]
fn a_2026_client_over_stdio_keeps_its_taint() {
    sdk("stdio", "2026-07-28");
}

#[test]
fn a_legacy_client_over_stdio_keeps_its_taint() {
    sdk("stdio", "legacy");
}

// ---------------------------------------------------------------------------------------
// Raw HTTP: what no SDK sends.

struct Front {
    child: Child,
    port: u16,
    config: PathBuf,
    /// The credential the front printed.
    credential: String,
}

impl Drop for Front {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Front {
    fn start(lab: &Lab) -> Self {
        // The tester's config as the test left it, trusted as a person would.
        assert!(testkit::trust(BIN, lab.config()), "boxmaker trust");
        let port = testkit::free_port();
        let child = Command::new(BIN)
            .args(["mcp", "--config"])
            .arg(lab.config())
            .arg("--http")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let token = lab.dir.join(".boxmaker/http.token");
        let _ = std::fs::remove_file(&token);
        let mut front = Self {
            child,
            port,
            config: lab.config(),
            credential: String::new(),
        };
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(t) = std::fs::read_to_string(&token)
                && t.contains('.')
                && TcpStream::connect(("127.0.0.1", port)).is_ok()
            {
                front.credential = t;
                return front;
            }
            assert!(Instant::now() < deadline, "the HTTP front did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn mint(&self) -> String {
        let out = Command::new(BIN)
            .arg("token")
            .arg("--config")
            .arg(&self.config)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }
}

/// A 2026-07-28 request's `_meta` (no session; the version and capabilities in every request).
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"}
    })
}

fn modern_call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args, "_meta": modern_meta()}})
}

fn legacy_call(id: u64, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args}})
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
}

#[derive(Debug)]
struct Answer {
    status: u16,
    session: Option<String>,
    body: String,
}

impl Answer {
    /// The JSON-RPC answer in the body (plain JSON or the last SSE `data:` line that is one).
    fn json(&self) -> Value {
        if let Ok(v) = serde_json::from_str(&self.body) {
            return v;
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {self:?}"))
    }

    /// The text of a `tools/call` result.
    fn text(&self) -> String {
        let v = self.json();
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text in {v}"))
            .to_string()
    }
}

/// Writes one request on `conn` (kept open) and reads its answer.
fn exchange(
    conn: &mut TcpStream,
    port: u16,
    credential: &str,
    session: Option<&str>,
    modern: bool,
    msg: &Value,
) -> Answer {
    let body = msg.to_string();
    let method = msg["method"].as_str().unwrap_or("");
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {credential}\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if modern {
        head.push_str("MCP-Protocol-Version: 2026-07-28\r\n");
        head.push_str(&format!("Mcp-Method: {method}\r\n"));
        if let Some(name) = msg["params"]["name"].as_str() {
            head.push_str(&format!("Mcp-Name: {name}\r\n"));
        }
    } else {
        head.push_str("MCP-Protocol-Version: 2025-11-25\r\n");
    }
    if let Some(s) = session {
        head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
    }
    head.push_str("\r\n");
    conn.write_all(head.as_bytes()).unwrap();
    conn.write_all(body.as_bytes()).unwrap();
    read_answer(conn)
}

/// Reads one HTTP/1.1 answer (Content-Length or chunked) from a kept connection.
fn read_answer(conn: &mut TcpStream) -> Answer {
    let mut raw = Vec::new();
    let mut byte = [0u8; 1];
    while !raw.ends_with(b"\r\n\r\n") {
        assert_eq!(conn.read(&mut byte).unwrap(), 1, "the connection closed");
        raw.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&raw).to_string();
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    };
    let mut body = Vec::new();
    if let Some(n) = header("content-length") {
        body.resize(n.parse().unwrap(), 0);
        conn.read_exact(&mut body).unwrap();
    } else if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut line = Vec::new();
            while !line.ends_with(b"\r\n") {
                conn.read_exact(&mut byte).unwrap();
                line.push(byte[0]);
            }
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&line)
                    .trim()
                    .split(';')
                    .next()
                    .unwrap(),
                16,
            )
            .unwrap();
            let mut chunk = vec![0u8; size + 2];
            conn.read_exact(&mut chunk).unwrap();
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Answer {
        status,
        session: header("mcp-session-id"),
        body: String::from_utf8_lossy(&body).to_string(),
    }
}

/// One request on a connection of its own.
fn once(f: &Front, credential: &str, session: Option<&str>, modern: bool, msg: &Value) -> Answer {
    let mut conn = TcpStream::connect(("127.0.0.1", f.port)).unwrap();
    conn.set_read_timeout(Some(WAIT)).unwrap();
    exchange(&mut conn, f.port, credential, session, modern, msg)
}

fn read_plan(id: u64) -> Value {
    modern_call(id, "read_file", json!({"path": "/data/notes/plan.txt"}))
}

fn share(id: u64) -> Value {
    modern_call(
        id,
        "share",
        json!({"path": format!("s{id}.txt"), "content": "leak"}),
    )
}

/// The boxmaker session of every `request` record in the audit log, in order.
fn requests(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join(".boxmaker/audit.log")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == "request")
        .map(|v| {
            (
                v["session"].as_str().unwrap_or("").to_string(),
                v["tool"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn a_request_without_a_session_is_in_its_credentials_conversation() {
    let lab = lab("stateless");
    let f = Front::start(&lab);
    let cred = f.credential.clone();
    let r = once(&f, &cred, None, true, &read_plan(1));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.text(), PLAN);
    // Each later request on a fresh connection, with no session: still this conversation.
    for id in 2..5 {
        let r = once(&f, &cred, None, true, &share(id));
        assert!(r.text().starts_with("denied: taint_too_high"), "{r:?}");
    }
    let sessions: std::collections::BTreeSet<_> =
        requests(&lab.dir).into_iter().map(|(s, _)| s).collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
}

#[test]
fn forged_stale_and_mangled_credentials_are_refused() {
    let lab = lab("forged");
    let f = Front::start(&lab);
    let (conv, mac) = f.credential.split_once('.').unwrap();
    let other = f.mint();
    let (other_conv, other_mac) = other.split_once('.').unwrap();
    for bad in [
        format!("{conv}.{}", "0".repeat(mac.len())),
        format!("{conv}.{other_mac}"),
        format!("{other_conv}.{mac}"),
        conv.to_string(),
        format!("{conv}.{mac}0"),
        "0".repeat(64),
    ] {
        let r = once(&f, &bad, None, true, &share(1));
        assert_eq!(r.status, 401, "{bad}: {r:?}");
        let r = once(&f, &bad, None, false, &initialize());
        assert_eq!(r.status, 401, "{bad}: {r:?}");
    }
    // A credential made under a key that is gone (removed, and the front restarted): stale.
    drop(f);
    std::fs::remove_file(lab.dir.join(".boxmaker/http.key")).unwrap();
    let f = Front::start(&lab);
    let r = once(&f, &other, None, true, &share(2));
    assert_eq!(r.status, 401, "{r:?}");
    assert!(requests(&lab.dir).is_empty(), "{:?}", requests(&lab.dir));
}

#[test]
fn a_legacy_session_of_another_conversation_is_unknown_to_this_credential() {
    let lab = lab("swapped");
    let f = Front::start(&lab);
    let a = f.credential.clone();
    let b = f.mint();
    let r = once(&f, &a, None, false, &initialize());
    assert_eq!(r.status, 200, "{r:?}");
    let sa = r.session.clone().unwrap();
    // A's session read the plan.
    let r = once(
        &f,
        &a,
        Some(&sa),
        false,
        &legacy_call(1, "read_file", json!({"path": "/data/notes/plan.txt"})),
    );
    assert_eq!(r.text(), PLAN, "{r:?}");
    // B presents A's session id: refused as unknown, nothing reaches the gate as B or A.
    let before = requests(&lab.dir).len();
    let r = once(
        &f,
        &b,
        Some(&sa),
        false,
        &legacy_call(2, "share", json!({"path": "x", "content": "y"})),
    );
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!(requests(&lab.dir).len(), before);
}

#[test]
fn two_conversations_interleaved_on_one_connection_stay_apart() {
    let lab = lab("interleaved");
    let f = Front::start(&lab);
    let a = f.credential.clone();
    let b = f.mint();
    let mut conn = TcpStream::connect(("127.0.0.1", f.port)).unwrap();
    conn.set_read_timeout(Some(WAIT)).unwrap();
    let r = exchange(&mut conn, f.port, &a, None, true, &read_plan(1));
    assert_eq!(r.text(), PLAN);
    for id in 2..6 {
        let (cred, refused) = if id % 2 == 0 { (&a, true) } else { (&b, false) };
        let r = exchange(&mut conn, f.port, cred, None, true, &share(id));
        assert_eq!(
            r.text().starts_with("denied: taint_too_high"),
            refused,
            "request {id}: {r:?}"
        );
    }
    let sessions: std::collections::BTreeSet<_> =
        requests(&lab.dir).into_iter().map(|(s, _)| s).collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");
}

#[test]
fn switching_eras_mid_conversation_keeps_the_taint() {
    let lab = lab("eras");
    let f = Front::start(&lab);
    let a = f.credential.clone();
    // A legacy session reads the plan…
    let r = once(&f, &a, None, false, &initialize());
    let sa = r.session.clone().unwrap();
    let r = once(
        &f,
        &a,
        Some(&sa),
        false,
        &legacy_call(1, "read_file", json!({"path": "/data/notes/plan.txt"})),
    );
    assert_eq!(r.text(), PLAN);
    // …then the client drops the session header and speaks 2026-07-28: same conversation.
    let r = once(&f, &a, None, true, &share(2));
    assert!(r.text().starts_with("denied: taint_too_high"), "{r:?}");
    // …or starts a new legacy session: same conversation.
    let r = once(&f, &a, None, false, &initialize());
    let sb = r.session.clone().unwrap();
    assert_ne!(sa, sb);
    let r = once(
        &f,
        &a,
        Some(&sb),
        false,
        &legacy_call(3, "share", json!({"path": "z", "content": "y"})),
    );
    assert!(r.text().starts_with("denied: taint_too_high"), "{r:?}");
    // …or sends a 2026-07-28 request that carries the old session's header.
    let r = once(&f, &a, Some(&sa), true, &share(4));
    assert!(
        r.status >= 400 || r.text().starts_with("denied: taint_too_high"),
        "{r:?}"
    );
    let sessions: std::collections::BTreeSet<_> =
        requests(&lab.dir).into_iter().map(|(s, _)| s).collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
}

/// Issue 32: replicas of a fleet (`[gate] store`, one PostgreSQL) share the key that signs
/// conversation credentials, so a conversation lands on any replica — and keeps its taint
/// there. A replica of another store refuses the credential (401), as before.
#[test]
fn a_credential_of_one_replica_is_the_same_conversation_on_another() {
    let pg = testkit::pg::Pg::start();
    let url = pg.database("fleet");
    let replica = |name: &str| {
        let lab = lab(name);
        let text = lab.config_text();
        assert!(text.contains("[gate]\n"), "{text}");
        lab.write_config(&text.replacen("[gate]\n", &format!("[gate]\nstore = \"{url}\"\n"), 1));
        lab
    };
    let (a, b) = (replica("fleet-a"), replica("fleet-b"));
    let (fa, fb) = (Front::start(&a), Front::start(&b));
    let cred = fa.credential.clone();
    let r = once(&fa, &cred, None, true, &read_plan(1));
    assert_eq!(r.text(), PLAN, "{r:?}");
    let r = once(&fb, &cred, None, true, &share(2));
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.text().starts_with("denied: taint_too_high"), "{r:?}");
    // One conversation: the same boxmaker session in both replicas' audit logs.
    let (ra, rb) = (requests(&a.dir), requests(&b.dir));
    assert_eq!(ra.len(), 1, "{ra:?}");
    assert_eq!(rb.len(), 1, "{rb:?}");
    assert_eq!(ra[0].0, rb[0].0);
    // Outside the fleet, the credential is nobody's.
    let c = lab("fleet-outsider");
    let fc = Front::start(&c);
    assert_eq!(once(&fc, &cred, None, true, &share(3)).status, 401);
}

/// A client that opens a connection and never finishes a request's head (slowloris) does
/// not keep it: the front closes it once the head's time is up (20 s).
#[test]
fn a_request_head_that_never_ends_is_cut_off() {
    let lab = lab("slowloris");
    let front = Front::start(&lab);
    let held = testkit::slow_head_held_for(front.port, Duration::from_secs(45));
    let held = held.expect("the front still held a never-ending request head at 45 s");
    assert!(held < Duration::from_secs(28), "held {held:?}");
}
