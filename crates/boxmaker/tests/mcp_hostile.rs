//! Hostile MCP clients (issue 6, "Bad input"): `boxmaker mcp` driven over raw stdio
//! (newline-delimited JSON-RPC 2.0) and raw HTTP (a small client on `TcpStream`). Each case
//! asserts the JSON-RPC error the MCP spec names, that the same connection keeps working,
//! that another session is unaffected, and — through the audit log — that nothing reached the
//! gate that the gate would not accept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::Lab;

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
/// Every wait in this file is bounded by this.
const WAIT: Duration = Duration::from_secs(30);

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// A fresh config from `boxmaker init` in a temporary directory.
fn setup() -> (Lab, PathBuf) {
    let lab = Lab::temp(BIN).init();
    let config = lab.config();
    (lab, config)
}

/// [`setup`] with room for a burst of hundreds of calls in one session: these tests check
/// that the front answers every message of a flood; a session's own cap (`[gate]
/// max_calls_per_session`, which would refuse most of them, by design) is tested in
/// `fairness.rs` and `crates/gate/tests/call_path.rs`.
fn setup_for_floods() -> (Lab, PathBuf) {
    let (dir, config) = setup();
    let text = std::fs::read_to_string(&config).unwrap();
    let text = text.replace(
        "max_calls_per_session = 16",
        "max_calls_per_session = 100000",
    );
    assert!(text.contains("max_calls_per_session = 100000"));
    std::fs::write(&config, text).unwrap();
    // The tester edited the config `init` trusted: trusted again (docs/spec.md §6, "Whose
    // config"), as a person does after an edit.
    assert!(
        testkit::trust(BIN, &config),
        "boxmaker trust refused the config"
    );
    (dir, config)
}

/// The audit log's `request` records: (session, tool).
fn gate_requests(dir: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(dir.join(".boxmaker/audit.log")).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "request")
        .map(|r| {
            (
                r["session"].as_str().unwrap().to_string(),
                r["tool"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn requests_of(dir: &Path, session: &str) -> Vec<String> {
    gate_requests(dir)
        .into_iter()
        .filter(|(s, _)| s == session)
        .map(|(_, t)| t)
        .collect()
}

/// Resident memory of a process, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

fn initialize_msg(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "hostile", "version": "0"}}})
}

fn call_msg(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

fn list_dir(id: u64) -> Value {
    call_msg(id, "list_dir", json!({"path": "/work"}))
}

/// The session id the front names in its `initialize` instructions.
fn session_of(init: &Value) -> String {
    let text = init["result"]["instructions"].as_str().unwrap();
    text.rsplit("Session: ").next().unwrap().trim().to_string()
}

fn error_code(msg: &Value) -> i64 {
    msg["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {msg}"))
}

fn assert_ok_call(msg: &Value) {
    assert_eq!(msg["result"]["isError"], json!(false), "{msg}");
}

// ---------------------------------------------------------------------------------------
// stdio

/// `boxmaker mcp` on stdio, read by a thread that parses each stdout line.
struct StdioClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    /// Messages read while waiting for another.
    stash: Vec<Value>,
}

impl StdioClient {
    fn spawn(config: &Path) -> Self {
        let mut child = Command::new(BIN)
            .args(["mcp", "--config"])
            .arg(config)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the server wrote a line that is not JSON ({e}): {line}")
                });
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            stash: Vec::new(),
        }
    }

    /// Spawns and initializes; returns the client and its boxmaker session.
    fn ready(config: &Path) -> (Self, String) {
        let mut c = Self::spawn(config);
        let init = c.request(initialize_msg(0));
        assert!(init.get("result").is_some(), "{init}");
        c.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        let session = session_of(&init);
        (c, session)
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    fn send(&mut self, msg: &Value) {
        let mut line = msg.to_string().into_bytes();
        line.push(b'\n');
        self.send_raw(&line);
    }

    /// The first message (stashed or new) that `want` accepts.
    fn wait_for(&mut self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.stash.iter().position(&want) {
            return self.stash.remove(i);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) if want(&v) => return v,
                Ok(v) => self.stash.push(v),
                Err(e) => panic!(
                    "no answer for {what} ({e}); server alive: {:?}; got meanwhile: {:?}",
                    self.child.try_wait().map(|s| s.is_none()),
                    self.stash
                ),
            }
        }
    }

    fn answer(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.wait_for(&format!("id {id}"), move |v| {
            v.get("id") == Some(&id) && (v.get("result").is_some() || v.get("error").is_some())
        })
    }

    fn request(&mut self, msg: Value) -> Value {
        self.send(&msg);
        self.answer(&msg["id"])
    }

    /// An error answer without an id (for a message whose id could not be read).
    fn anonymous_error(&mut self, code: i64) -> Value {
        self.wait_for(&format!("an error {code} without id"), move |v| {
            v.get("id").is_none_or(Value::is_null) && v["error"]["code"] == json!(code)
        })
    }

    /// The connection still works: `tools/list` lists the tools.
    fn assert_alive(&mut self, id: u64) {
        let list = self.request(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let tools = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"));
        assert!(tools.iter().any(|t| t["name"] == "list_dir"), "{list}");
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn stdio_malformed_json_rpc_gets_the_named_errors() {
    let (dir, config) = setup();
    let (mut a, sa) = StdioClient::ready(&config);
    let (mut b, sb) = StdioClient::ready(&config);

    // Not JSON at all: parse error, no id.
    for junk in [
        &b"not json\n"[..],
        b"{\"jsonrpc\": \"2.0\", \"id\": 1,\n",
        b"\xff\xfe\n",
    ] {
        a.send_raw(junk);
        a.anonymous_error(PARSE_ERROR);
    }
    // JSON, but not a request object: invalid request, no id.
    for v in ["[1,2]", "[]", "42", "\"tools/list\"", "null", "true"] {
        a.send_raw(format!("{v}\n").as_bytes());
        a.anonymous_error(INVALID_REQUEST);
    }
    // Missing or wrong `jsonrpc`, missing or non-string `method`: invalid request, with the
    // id when it is readable.
    for (msg, id) in [
        (json!({"id": 101, "method": "tools/list"}), json!(101)),
        (
            json!({"jsonrpc": "1.0", "id": 102, "method": "tools/list"}),
            json!(102),
        ),
        (
            json!({"jsonrpc": 2, "id": "s-103", "method": "tools/list"}),
            json!("s-103"),
        ),
        (json!({"jsonrpc": "2.0", "id": 104}), json!(104)),
        (
            json!({"jsonrpc": "2.0", "id": 105, "method": 7}),
            json!(105),
        ),
        (
            json!({"jsonrpc": "2.0", "id": 106, "method": null}),
            json!(106),
        ),
    ] {
        let e = a.request(msg.clone());
        assert_eq!(error_code(&e), INVALID_REQUEST, "{msg} -> {e}");
        assert_eq!(e["id"], id, "{e}");
    }
    // Ids of the wrong type (MCP: a string or an integer, never null): invalid request, no
    // id to answer with.
    for id in [
        json!(null),
        json!({"a": 1}),
        json!([1]),
        json!(true),
        json!(1.5),
    ] {
        a.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        a.anonymous_error(INVALID_REQUEST);
    }
    // Unknown methods: method not found.
    for (id, method) in [
        (201, "foo/bar"),
        (202, "tools/explode"),
        (203, ""),
        (204, "TOOLS/LIST"),
    ] {
        let e = a.request(json!({"jsonrpc": "2.0", "id": id, "method": method}));
        assert_eq!(error_code(&e), METHOD_NOT_FOUND, "{method}: {e}");
    }
    // A known method with params that do not fit it: invalid params, not "method not found"
    // (the front declares `logging`, so `logging/setLevel` itself is answered).
    let ok = a.request(
        json!({"jsonrpc": "2.0", "id": 210, "method": "logging/setLevel",
                              "params": {"level": "debug"}}),
    );
    assert!(ok.get("result").is_some(), "{ok}");
    for (id, params) in [
        (211, json!({"level": "loud"})),
        (212, json!([1])),
        (213, json!("x")),
    ] {
        let e = a.request(
            json!({"jsonrpc": "2.0", "id": id, "method": "logging/setLevel",
                                 "params": params}),
        );
        assert_eq!(error_code(&e), INVALID_PARAMS, "{e}");
    }
    let e = a.request(json!({"jsonrpc": "2.0", "id": 214, "method": "tools/list", "params": 5}));
    assert_eq!(error_code(&e), INVALID_PARAMS, "{e}");
    // An unknown notification gets no answer (JSON-RPC), and breaks nothing.
    a.send(&json!({"jsonrpc": "2.0", "method": "notifications/nonsense", "params": [1]}));
    // Whitespace-only and CRLF lines are fine.
    a.send_raw(b"\n   \r\n");
    a.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":300,\"method\":\"ping\"}\r\n");
    assert!(a.answer(&json!(300)).get("result").is_some());

    a.assert_alive(301);
    assert_ok_call(&a.request(list_dir(302)));
    // The other session never noticed.
    b.assert_alive(1);
    assert_ok_call(&b.request(list_dir(2)));
    assert!(a.alive() && b.alive());
    // No garbage ever produced a stray answer with some other id.
    assert!(
        a.stash.iter().all(|m| m.get("method").is_some()),
        "unexpected answers: {:?}",
        a.stash
    );
    assert_eq!(requests_of(&dir.dir, &sa), ["list_dir"]);
    assert_eq!(requests_of(&dir.dir, &sb), ["list_dir"]);
}

#[test]
fn stdio_unlisted_tools_and_bad_arguments_never_reach_the_gate() {
    let (dir, config) = setup();
    let (mut a, sa) = StdioClient::ready(&config);
    let (mut b, sb) = StdioClient::ready(&config);

    // A tool that is not listed: invalid params (MCP's tools page: "Unknown tools" -32602).
    for (id, name) in [
        (1, json!("nope")),
        (2, json!("LIST_DIR")),
        (3, json!("list_dir ")),
        (4, json!("../list_dir")),
        (5, json!("")),
    ] {
        let e = a.request(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                 "params": {"name": name, "arguments": {}}}));
        assert_eq!(error_code(&e), INVALID_PARAMS, "{name}: {e}");
    }
    // Arguments that are not an object: invalid params.
    for (id, args) in [
        (10, json!([1, 2])),
        (11, json!("path=/work")),
        (12, json!(5)),
        (13, json!(null)),
        (14, json!(true)),
    ] {
        let e = a.request(call_msg(id, "list_dir", args.clone()));
        assert_eq!(error_code(&e), INVALID_PARAMS, "{args}: {e}");
    }
    // A tools/call without params, with params that are not an object, without a name or
    // with a name that is not a string: invalid params.
    for (id, params) in [
        (20, None),
        (21, Some(json!([1]))),
        (22, Some(json!("list_dir"))),
        (23, Some(json!({"arguments": {}}))),
        (24, Some(json!({"name": 7, "arguments": {}}))),
        (25, Some(json!({"name": null}))),
    ] {
        let mut msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"});
        if let Some(p) = params {
            msg["params"] = p;
        }
        let e = a.request(msg.clone());
        assert_eq!(error_code(&e), INVALID_PARAMS, "{msg}: {e}");
    }
    // Arguments larger than the gate takes (but under the line limit): invalid params.
    let big = "x".repeat(front::server::MAX_ARGUMENTS + 10);
    let e = a.request(call_msg(
        30,
        "write_file",
        json!({"path": "f", "content": big}),
    ));
    assert_eq!(error_code(&e), INVALID_PARAMS, "{}", e["error"]);

    assert!(
        requests_of(&dir.dir, &sa).is_empty(),
        "{:?}",
        gate_requests(&dir.dir)
    );
    // The connection and the other session work; the allowed call is the only request.
    a.assert_alive(40);
    assert_ok_call(&a.request(list_dir(41)));
    b.assert_alive(1);
    assert_ok_call(&b.request(list_dir(2)));
    assert_eq!(requests_of(&dir.dir, &sa), ["list_dir"]);
    assert_eq!(requests_of(&dir.dir, &sb), ["list_dir"]);
}

#[test]
fn stdio_oversized_messages_are_refused_with_bounded_memory() {
    let (dir, config) = setup();
    let (mut a, sa) = StdioClient::ready(&config);
    let (mut b, _) = StdioClient::ready(&config);
    let pid = a.child.id();

    // A 20 MB line of junk.
    let mut line = vec![b'x'; 20 * 1024 * 1024];
    line.push(b'\n');
    a.send_raw(&line);
    a.anonymous_error(INVALID_REQUEST);
    // A 20 MB tools/call, well-formed: refused the same way, and never reaches the gate.
    let mut call = call_msg(
        1,
        "write_file",
        json!({"path": "f", "content": "y".repeat(20 << 20)}),
    )
    .to_string()
    .into_bytes();
    call.push(b'\n');
    a.send_raw(&call);
    a.anonymous_error(INVALID_REQUEST);
    // 20 MB without a newline, sent in pieces, then the end of the line.
    for _ in 0..20 {
        a.send_raw(&[b'z'; 1 << 20]);
    }
    a.send_raw(b"\n");
    a.anonymous_error(INVALID_REQUEST);

    a.assert_alive(2);
    assert_ok_call(&a.request(list_dir(3)));
    let rss = rss(pid);
    assert!(
        rss < 300 << 20,
        "the front holds {rss} bytes after 60 MB of input"
    );
    b.assert_alive(1);
    assert_eq!(requests_of(&dir.dir, &sa), ["list_dir"]);
}

#[test]
fn stdio_requests_before_initialize_are_refused() {
    let (dir, config) = setup();
    let mut a = StdioClient::spawn(&config);
    // A notification and a stray response before `initialize` are ignored (rmcp alone would
    // end the session on them).
    a.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    a.send(&json!({"jsonrpc": "2.0", "id": 77, "result": {}}));
    // Requests other than ping are refused (MCP lifecycle: initialize comes first). rmcp
    // answers -32602: the request lacks the per-request protocol metadata that the newest
    // MCP revision would need to serve it without `initialize`.
    let e = a.request(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    assert_eq!(error_code(&e), INVALID_PARAMS, "{e}");
    let e = a.request(list_dir(2));
    assert_eq!(error_code(&e), INVALID_PARAMS, "{e}");
    let e = a.request(call_msg(3, "list_dir", json!([1])));
    assert_eq!(error_code(&e), INVALID_PARAMS, "{e}");
    // An `initialize` whose params do not fit: invalid params, and the session waits on.
    let e = a.request(json!({"jsonrpc": "2.0", "id": 40, "method": "initialize", "params": {}}));
    assert_eq!(error_code(&e), INVALID_PARAMS, "{e}");
    let e = a.request(json!({"jsonrpc": "2.0", "id": 41, "method": "initialize", "params": [1]}));
    assert_eq!(error_code(&e), INVALID_PARAMS, "{e}");
    // Ping is allowed before initialize.
    let p = a.request(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}));
    assert!(p.get("result").is_some(), "{p}");
    assert!(gate_requests(&dir.dir).is_empty());
    // Then the session starts normally.
    let init = a.request(initialize_msg(5));
    assert!(init.get("result").is_some(), "{init}");
    a.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    a.assert_alive(6);
    assert_ok_call(&a.request(list_dir(7)));
    assert_eq!(requests_of(&dir.dir, &session_of(&init)), ["list_dir"]);
}

#[test]
fn stdio_floods_are_all_answered() {
    let (dir, config) = setup_for_floods();
    let (mut a, sa) = StdioClient::ready(&config);

    // 500 calls in one burst: real calls mixed with refused ones. Every one is answered.
    let mut burst = Vec::new();
    let mut real = 0;
    for id in 1000..1500u64 {
        let msg = match id % 5 {
            0 => call_msg(id, "nope", json!({})),
            1 => call_msg(id, "list_dir", json!([id])),
            2 => json!({"jsonrpc": "2.0", "id": id, "method": "no/such"}),
            _ => {
                real += 1;
                list_dir(id)
            }
        };
        burst.extend_from_slice(msg.to_string().as_bytes());
        burst.push(b'\n');
    }
    a.send_raw(&burst);
    for id in 1000..1500u64 {
        let m = a.answer(&json!(id));
        match id % 5 {
            0 | 1 => assert_eq!(error_code(&m), INVALID_PARAMS, "{m}"),
            2 => assert_eq!(error_code(&m), METHOD_NOT_FOUND, "{m}"),
            _ => assert_ok_call(&m),
        }
    }
    assert_eq!(requests_of(&dir.dir, &sa).len(), real);

    // 20 connections at once, each a session of its own.
    let clients: Vec<_> = (0..20)
        .map(|_| {
            let config = config.clone();
            std::thread::spawn(move || {
                let (mut c, s) = StdioClient::ready(&config);
                let e = c.request(call_msg(1, "list_dir", json!(null)));
                assert_eq!(error_code(&e), INVALID_PARAMS);
                assert_ok_call(&c.request(list_dir(2)));
                c.assert_alive(3);
                s
            })
        })
        .collect();
    let sessions: Vec<String> = clients.into_iter().map(|t| t.join().unwrap()).collect();
    for s in &sessions {
        assert_eq!(requests_of(&dir.dir, s), ["list_dir"]);
    }
    a.assert_alive(1);
    assert_ok_call(&a.request(list_dir(2)));
}

// ---------------------------------------------------------------------------------------
// HTTP

struct HttpServer {
    child: Child,
    port: u16,
    /// The credential the front printed (its first conversation's).
    token: String,
    config: PathBuf,
    /// Each MCP session [`HttpServer::session`] started, with the credential of the
    /// conversation it was started in (over HTTP a conversation is a credential).
    credentials: std::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Debug)]
struct HttpResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl HttpResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages in the body: one JSON body, or the `data:` events of an SSE
    /// stream.
    fn messages(&self) -> Vec<Value> {
        if self
            .header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
        {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        } else {
            serde_json::from_str(&self.body).into_iter().collect()
        }
    }

    /// The one answer (result or error) in the body.
    fn answer(&self) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {self:?}"))
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(nl) = raw.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&raw[..nl]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap().trim(), 16).unwrap();
        raw = &raw[nl + 2..];
        if size == 0 || raw.len() < size {
            break;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[(size + 2).min(raw.len())..];
    }
    out
}

/// One HTTP/1.1 request on its own connection (`Connection: close`), read to the end.
fn http_raw(port: u16, head: &str, body: &[u8]) -> std::io::Result<HttpResponse> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(WAIT))?;
    s.set_write_timeout(Some(WAIT))?;
    s.write_all(head.as_bytes())?;
    // The server may refuse a large body before reading all of it: keep what it answers.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    if let Err(e) = s.read_to_end(&mut raw)
        && raw.is_empty()
    {
        return Err(e);
    }
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no header end"))?;
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    Ok(HttpResponse {
        status,
        headers,
        body: String::from_utf8_lossy(&body).to_string(),
    })
}

struct Post<'a> {
    token: Option<&'a str>,
    session: Option<&'a str>,
    host: Option<&'a str>,
}

impl HttpServer {
    fn start(config: &Path, dir: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(BIN)
            .args(["mcp", "--config"])
            .arg(config)
            .arg("--http")
            .arg(format!("127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Owned from here on, so a failed start still kills the server.
        let mut srv = Self {
            child,
            port,
            token: String::new(),
            config: config.to_path_buf(),
            credentials: std::sync::Mutex::new(std::collections::HashMap::new()),
        };
        let token_file = dir.join(".boxmaker/http.token");
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(t) = std::fs::read_to_string(&token_file)
                && t.contains('.')
                && TcpStream::connect(("127.0.0.1", port)).is_ok()
            {
                srv.token = t;
                return srv;
            }
            assert!(Instant::now() < deadline, "the HTTP server did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn post_with(&self, p: &Post<'_>, body: &[u8]) -> std::io::Result<HttpResponse> {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\nMCP-Protocol-Version: 2025-06-18\r\n",
            p.host
                .map_or(format!("127.0.0.1:{}", self.port), str::to_string),
            body.len()
        );
        if let Some(t) = p.token {
            head.push_str(&format!("Authorization: {t}\r\n"));
        }
        if let Some(s) = p.session {
            head.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
        }
        head.push_str("\r\n");
        http_raw(self.port, &head, body)
    }

    /// The credential of `session`'s conversation (the printed one for none, or for a
    /// session this test did not start).
    fn credential(&self, session: Option<&str>) -> String {
        session
            .and_then(|s| self.credentials.lock().unwrap().get(s).cloned())
            .unwrap_or_else(|| self.token.clone())
    }

    /// A credential for a new conversation, as `boxmaker token` prints it.
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

    fn post(&self, session: Option<&str>, msg: &Value) -> HttpResponse {
        let auth = format!("Bearer {}", self.credential(session));
        self.post_with(
            &Post {
                token: Some(&auth),
                session,
                host: None,
            },
            msg.to_string().as_bytes(),
        )
        .unwrap()
    }

    fn post_bytes(&self, session: Option<&str>, body: &[u8]) -> std::io::Result<HttpResponse> {
        let auth = format!("Bearer {}", self.credential(session));
        self.post_with(
            &Post {
                token: Some(&auth),
                session,
                host: None,
            },
            body,
        )
    }

    /// A new MCP session in a new conversation: (its `Mcp-Session-Id`, its boxmaker session).
    fn session(&self) -> (String, String) {
        let credential = self.mint();
        let auth = format!("Bearer {credential}");
        let r = self
            .post_with(
                &Post {
                    token: Some(&auth),
                    session: None,
                    host: None,
                },
                initialize_msg(0).to_string().as_bytes(),
            )
            .unwrap();
        assert_eq!(r.status, 200, "{r:?}");
        let mcp = r.header("mcp-session-id").unwrap().to_string();
        self.credentials
            .lock()
            .unwrap()
            .insert(mcp.clone(), credential);
        let boxmaker = session_of(&r.answer());
        let n = self.post(
            Some(&mcp),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(n.status, 202, "{n:?}");
        (mcp, boxmaker)
    }

    fn assert_alive(&self, mcp: &str, id: u64) {
        let r = self.post(
            Some(mcp),
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
        );
        assert_eq!(r.status, 200, "{r:?}");
        let a = r.answer();
        assert!(a["result"]["tools"].as_array().is_some(), "{a}");
        assert_ok_call(&self.post(Some(mcp), &list_dir(id + 1)).answer());
    }
}

#[test]
fn http_bad_tokens_foreign_hosts_and_unknown_sessions_are_refused() {
    let (dir, config) = setup();
    let srv = HttpServer::start(&config, &dir.dir);
    let (mcp, sa) = srv.session();
    let call = list_dir(1).to_string();
    let wrong_same_len = format!("Bearer {}", "0".repeat(srv.token.len()));
    let shorter = format!("Bearer {}", &srv.token[..srv.token.len() - 1]);
    let longer = format!("Bearer {}0", srv.token);
    let basic = format!("Basic {}", srv.token);
    let lower = format!("bearer {}", srv.token);
    let bare = srv.token.clone();
    for token in [
        None,
        Some(wrong_same_len.as_str()),
        Some(shorter.as_str()),
        Some(longer.as_str()),
        Some("Bearer "),
        Some(basic.as_str()),
        Some(lower.as_str()),
        Some(bare.as_str()),
    ] {
        for session in [None, Some(mcp.as_str())] {
            let p = Post {
                token,
                session,
                host: None,
            };
            let r = srv.post_with(&p, call.as_bytes()).unwrap();
            assert_eq!(r.status, 401, "{token:?}: {r:?}");
            assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        }
    }
    // A GET (the SSE stream) and a DELETE (ending the session) without the token: 401 too.
    for method in ["GET", "DELETE"] {
        let head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAccept: text/event-stream\r\n\
             Mcp-Session-Id: {mcp}\r\nConnection: close\r\n\r\n",
            srv.port
        );
        let r = http_raw(srv.port, &head, b"").unwrap();
        assert_eq!(r.status, 401, "{method}: {r:?}");
    }
    // A foreign Host header (DNS rebinding), with the right token: 403 from rmcp's check.
    let auth = format!("Bearer {}", srv.credential(Some(&mcp)));
    for host in ["evil.example", "evil.example:80", "127.0.0.1.evil.example"] {
        let p = Post {
            token: Some(&auth),
            session: None,
            host: Some(host),
        };
        let r = srv
            .post_with(&p, initialize_msg(0).to_string().as_bytes())
            .unwrap();
        assert_eq!(r.status, 403, "{host}: {r:?}");
        let p = Post {
            session: Some(&mcp),
            ..p
        };
        let r = srv.post_with(&p, call.as_bytes()).unwrap();
        assert_eq!(r.status, 403, "{host}: {r:?}");
    }
    // An unknown MCP session id: 404 (streamable HTTP: the client must start a new session).
    for s in ["nope", "00000000-0000-0000-0000-000000000000", "x"] {
        let r = srv.post(Some(s), &list_dir(2));
        assert_eq!(r.status, 404, "{s}: {r:?}");
    }
    // Nothing reached the gate; the real session still works.
    assert!(gate_requests(&dir.dir).is_empty());
    srv.assert_alive(&mcp, 10);
    assert_eq!(requests_of(&dir.dir, &sa), ["list_dir"]);
}

#[test]
fn http_bad_input_gets_the_named_errors() {
    let (dir, config) = setup();
    let srv = HttpServer::start(&config, &dir.dir);
    let (a, sa) = srv.session();
    let (b, sb) = srv.session();

    // Not JSON: 400 carrying the parse error.
    for junk in [&b"not json"[..], b"{\"jsonrpc\":", b"\xff"] {
        let r = srv.post_bytes(Some(&a), junk).unwrap();
        assert_eq!(r.status, 400, "{r:?}");
        assert_eq!(error_code(&r.answer()), PARSE_ERROR);
    }
    // JSON but not a request: 400 with invalid request.
    for msg in [
        json!([1, 2]),
        json!(5),
        json!({"id": 1, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": null, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3}),
    ] {
        let r = srv.post(Some(&a), &msg);
        assert_eq!(r.status, 400, "{msg}: {r:?}");
        assert_eq!(error_code(&r.answer()), INVALID_REQUEST, "{msg}");
    }
    // Unknown method.
    let e = srv
        .post(
            Some(&a),
            &json!({"jsonrpc": "2.0", "id": 4, "method": "foo/bar"}),
        )
        .answer();
    assert_eq!(error_code(&e), METHOD_NOT_FOUND, "{e}");
    // Unlisted tool; arguments that are not an object.
    let e = srv.post(Some(&a), &call_msg(5, "nope", json!({}))).answer();
    assert_eq!(error_code(&e), INVALID_PARAMS, "{e}");
    for args in [json!([1]), json!("s"), json!(1), json!(null)] {
        let r = srv.post(Some(&a), &call_msg(6, "list_dir", args.clone()));
        assert_eq!(r.status, 200, "{r:?}");
        let e = r.answer();
        assert_eq!(error_code(&e), INVALID_PARAMS, "{args}: {e}");
        assert_eq!(e["id"], json!(6));
    }
    // A body over rmcp's cap (4 MiB): 413, and the next request works.
    let mut huge = call_msg(
        7,
        "write_file",
        json!({"path": "f", "content": "y".repeat(5 << 20)}),
    )
    .to_string()
    .into_bytes();
    if let Ok(r) = srv.post_bytes(Some(&a), &huge) {
        assert_eq!(r.status, 413, "{}", r.status);
    }
    // (Sending a whole refused body can end in a reset before the answer is read; a body
    // announced at 20 MB of which only the start is sent always reads the 413.)
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Mcp-Session-Id: {a}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        srv.port,
        srv.credential(Some(&a)),
        20 << 20
    );
    let r = http_raw(srv.port, &head, &huge[..4096]).unwrap();
    assert_eq!(r.status, 413, "{r:?}");
    huge.resize(20 << 20, b' ');
    if let Ok(r) = srv.post_bytes(Some(&a), &huge) {
        assert_eq!(r.status, 413, "{}", r.status);
    }
    let rss = rss(srv.child.id());
    assert!(rss < 300 << 20, "the front holds {rss} bytes");
    // Before initialize (no session): refused.
    let r = srv.post(
        None,
        &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}),
    );
    assert!(
        r.status >= 400 || r.answer().get("error").is_some(),
        "{r:?}"
    );
    let r = srv.post(None, &list_dir(9));
    assert!(
        r.status >= 400 || r.answer().get("error").is_some(),
        "{r:?}"
    );

    assert!(
        gate_requests(&dir.dir).is_empty(),
        "{:?}",
        gate_requests(&dir.dir)
    );
    srv.assert_alive(&a, 20);
    srv.assert_alive(&b, 20);
    assert_eq!(requests_of(&dir.dir, &sa), ["list_dir"]);
    assert_eq!(requests_of(&dir.dir, &sb), ["list_dir"]);
}

#[test]
fn http_floods_are_all_answered() {
    let (dir, config) = setup_for_floods();
    let srv = std::sync::Arc::new(HttpServer::start(&config, &dir.dir));
    let (a, sa) = srv.session();
    // 20 connections at once, each a new session making 10 calls, half of them refused.
    let threads: Vec<_> = (0..20)
        .map(|_| {
            let srv = srv.clone();
            std::thread::spawn(move || {
                let (mcp, s) = srv.session();
                for id in 0..10u64 {
                    if id % 2 == 0 {
                        assert_ok_call(&srv.post(Some(&mcp), &list_dir(id)).answer());
                    } else {
                        let e = srv.post(Some(&mcp), &call_msg(id, "nope", json!({})));
                        assert_eq!(error_code(&e.answer()), INVALID_PARAMS);
                    }
                }
                s
            })
        })
        .collect();
    // Meanwhile, a burst of 100 concurrent requests on one session.
    let burst: Vec<_> = (0..100u64)
        .map(|id| {
            let srv = srv.clone();
            let a = a.clone();
            std::thread::spawn(move || {
                let r = srv.post(Some(&a), &list_dir(100 + id));
                assert_eq!(r.status, 200, "{r:?}");
                assert_ok_call(&r.answer());
            })
        })
        .collect();
    for t in burst {
        t.join().unwrap();
    }
    for t in threads {
        let s = t.join().unwrap();
        assert_eq!(requests_of(&dir.dir, &s).len(), 5);
    }
    assert_eq!(requests_of(&dir.dir, &sa).len(), 100);
    srv.assert_alive(&a, 1000);
}
