//! Shared harness of the gate's integration tests: a gate on a temporary state directory,
//! a settable clock, a fake runner (directly, or behind a real `RunnerLink` over a
//! socketpair), and clients for the agent and control connections.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gate::gate::Clock;
use gate::link::Cleared;
use gate::store::Store;
use gate::{Gate, RunnerLink, ToolRunner};
use policy::Taint;
use proto::control::{
    ControlAnswer, ControlOp, ControlReply, ControlRequest, read_control_reply,
    write_control_request,
};
use proto::run::{Order, RunnerAnswer, RunnerReply, read_runner_request, write_runner_reply};
use proto::{
    CallId, DataClass, Envelope, SessionId, ToolRequest, ToolResponse, read_frame, write_frame,
};

/// The start of the test clock.
pub const T0: u64 = 10_000;
pub const TTL: u64 = 60;

/// A downstream server whose every tool asks (`job_run`, `job_…`): arguments of any shape
/// reach the gate's decision (a builtin's are checked against its schema first).
pub const JOB: &str = r#"
[[tool]]
name = "job"
mcp = ["job-server"]
class = "internal"

[[grant]]
tool = "job_*"
effect = "ask"
"#;

pub const CONFIG: &str = r#"
[gate]
state = "state"
approval_ttl = 60
log_arguments = false

[[tool]]
name = "read"
builtin = "read_file"
class = "internal"

[[tool]]
name = "secret_read"
builtin = "read_file"
class = "secret"

[[tool]]
name = "fetch"
mcp = ["fetch-server"]
class = "public"
untrusted = true
network = true

[[tool]]
name = "run"
builtin = "run"
class = "internal"

[[grant]]
tool = "read"
effect = "allow"

[[grant]]
tool = "secret_read"
effect = "allow"

[[grant]]
tool = "fetch_*"
effect = "allow"
max_class = "public"

[[grant]]
tool = "run"
effect = "ask"

[[grant]]
tool = "shell"
effect = "allow"
if_untrusted = "ask"

[[grant]]
tool = "ask_public"
effect = "ask"
max_class = "public"

[[grant]]
tool = "banned"
effect = "deny"

[[grant]]
tool = "old"
effect = "allow"
expires = 1000

# A real builtin: its arguments are checked by the gate before anyone is asked.
[[tool]]
name = "argv_run"
builtin = "run"

[[grant]]
tool = "argv_run"
effect = "ask"
"#;

pub fn sid(s: &str) -> SessionId {
    SessionId::new(s).unwrap()
}

pub fn req(session: &str, call: u64, tool: &str, args: &str) -> ToolRequest {
    ToolRequest {
        session: sid(session),
        call: CallId(call),
        tool: tool.into(),
        arguments: args.into(),
    }
}

/// The directives that steer the fake tool: the arguments' own keys, or — for a builtin
/// file tool, whose arguments the gate checks and which takes only `path` — the pairs of a
/// `path` written `key=value;key=value`.
fn directives(arguments: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
    let Some(path) = v.get("path").and_then(serde_json::Value::as_str) else {
        return v;
    };
    let mut map = serde_json::Map::new();
    for pair in path.split(';') {
        if let Some((k, val)) = pair.split_once('=') {
            let val = match val {
                "true" => serde_json::Value::Bool(true),
                "false" => serde_json::Value::Bool(false),
                n if n.parse::<u64>().is_ok() => serde_json::json!(n.parse::<u64>().unwrap()),
                s => serde_json::Value::String(s.to_string()),
            };
            map.insert(k.to_string(), val);
        }
    }
    serde_json::Value::Object(map)
}

/// The fake tool: `{"class": C, "untrusted": B, "fail": MSG, "sleep_ms": N}` in the
/// arguments (or in a file tool's `path`, see [`directives`]) choose its answer; by default
/// a public, trusted result naming the call.
pub fn fake_answer(req: &ToolRequest) -> ToolResponse {
    let v = directives(&req.arguments);
    if let Some(ms) = v.get("sleep_ms").and_then(serde_json::Value::as_u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }
    if let Some(msg) = v.get("fail").and_then(serde_json::Value::as_str) {
        return ToolResponse::Failed {
            message: msg.to_string(),
        };
    }
    let class: DataClass = v
        .get("class")
        .and_then(serde_json::Value::as_str)
        .map_or(DataClass::Public, |c| c.parse().unwrap());
    ToolResponse::Result {
        content: format!("{} {} ran with {}", req.session, req.tool, req.arguments),
        class,
        untrusted: v
            .get("untrusted")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false),
        truncated: false,
    }
}

/// Runs before the fake tool answers.
pub type Hook = Box<dyn Fn(&ToolRequest) + Send + Sync>;

/// A runner in-process: `fake_answer`, after an optional hook.
pub struct FakeRunner {
    pub hook: Option<Hook>,
}

impl ToolRunner for FakeRunner {
    // The fake tool runs no file: nothing to bind (bound_files.rs has a runner that does).
    fn digest(&self, _req: &ToolRequest) -> Result<Vec<proto::run::FileDigest>, String> {
        Ok(Vec::new())
    }

    fn run_approved(
        &self,
        req: &ToolRequest,
        _taint: Taint,
        _files: &[proto::run::FileDigest],
    ) -> ToolResponse {
        if let Some(h) = &self.hook {
            h(req);
        }
        fake_answer(req)
    }

    fn reset(&self, _session: &SessionId) -> Result<Cleared, String> {
        Ok(Cleared::default())
    }
}

/// A fake runner process on the far end of a socketpair: answers each request on its own
/// thread with `fake_answer`.
pub fn spawn_fake_runner(stream: UnixStream) {
    let writer = Arc::new(Mutex::new(stream.try_clone().unwrap()));
    let mut reader = stream;
    std::thread::spawn(move || {
        while let Ok(order) = read_runner_request(&mut reader) {
            let id = order.id;
            let writer = Arc::clone(&writer);
            std::thread::spawn(move || {
                let reply = match order.order {
                    Order::Call { request, .. } => RunnerReply::answer(id, fake_answer(&request)),
                    // The fake tool runs no file.
                    Order::Digest { .. } => {
                        RunnerReply::new(id, RunnerAnswer::Digests { files: Vec::new() })
                    }
                    Order::ResetSession { .. } => RunnerReply::new(
                        id,
                        RunnerAnswer::Reset {
                            servers: 0,
                            workspace: false,
                        },
                    ),
                };
                let mut w = writer.lock().unwrap();
                let _ = write_runner_reply(&mut *w, &reply);
            });
        }
    });
}

pub struct H {
    pub dir: tempfile::TempDir,
    pub clock: Arc<AtomicU64>,
    pub gate: Arc<Gate>,
    pub state: PathBuf,
}

impl H {
    /// A gate with the fake runner behind a real `RunnerLink`.
    pub fn new() -> H {
        H::with_fake_runner(CONFIG)
    }

    /// A gate on `text` with the fake runner behind a real `RunnerLink`.
    pub fn with_fake_runner(text: &str) -> H {
        let (gate_end, runner_end) = UnixStream::pair().unwrap();
        spawn_fake_runner(runner_end);
        let link = RunnerLink::new(gate_end.try_clone().unwrap(), gate_end);
        H::with_config(text, Box::new(link))
    }

    pub fn with_runner(runner: Box<dyn ToolRunner>) -> H {
        H::with_config(CONFIG, runner)
    }

    pub fn with_config(text: &str, runner: Box<dyn ToolRunner>) -> H {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(AtomicU64::new(T0));
        let gate = start_gate(dir.path(), text, &clock, runner);
        let state = dir.path().join("state");
        H {
            dir,
            clock,
            gate,
            state,
        }
    }

    pub fn now(&self) -> u64 {
        self.clock.load(Ordering::SeqCst)
    }

    pub fn advance(&self, secs: u64) {
        self.clock.fetch_add(secs, Ordering::SeqCst);
    }

    /// One call, direct; returns (progress answers, final answer).
    pub fn call(&self, session: &str, call: u64, tool: &str, args: &str) -> ToolResponse {
        let mut seen = Vec::new();
        let resp = self
            .gate
            .call(req(session, call, tool, args), &mut |r| seen.push(r));
        assert!(seen.is_empty(), "unexpected progress {seen:?}");
        resp
    }

    /// Starts a call that must wait for approval; returns its approval id and the handle
    /// of its final answer.
    pub fn call_held(
        &self,
        session: &str,
        call: u64,
        tool: &str,
        args: &str,
    ) -> (String, u64, std::thread::JoinHandle<ToolResponse>) {
        let (tx, rx) = mpsc::channel();
        let gate = Arc::clone(&self.gate);
        let r = req(session, call, tool, args);
        let handle = std::thread::spawn(move || {
            gate.call(r, &mut |p| {
                tx.send(p).unwrap();
            })
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(ToolResponse::PendingApproval { approval, expires }) => {
                (approval, expires.0, handle)
            }
            Ok(other) => panic!("expected pending_approval, got {other:?}"),
            Err(e) => panic!(
                "no pending_approval ({e}); the call ended {:?}",
                handle.join()
            ),
        }
    }

    pub fn control(&self, op: ControlOp) -> ControlAnswer {
        self.gate.control(op)
    }

    /// A second handle on the state database, as another process would open it.
    pub fn store(&self) -> Store {
        Store::open(&self.state).unwrap()
    }

    pub fn taint(&self, session: &str) -> (DataClass, bool) {
        let t = self.store().taint(&sid(session)).unwrap();
        (t.class, t.untrusted)
    }

    /// The `event` names of the audit log, in order.
    pub fn events(&self) -> Vec<String> {
        let text = std::fs::read_to_string(self.state.join("audit.log")).unwrap();
        text.lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["event"].as_str().unwrap().to_string()
            })
            .collect()
    }

    pub fn audit_text(&self) -> String {
        std::fs::read_to_string(self.state.join("audit.log")).unwrap()
    }
}

pub fn start_gate(
    base: &std::path::Path,
    text: &str,
    clock: &Arc<AtomicU64>,
    runner: Box<dyn ToolRunner>,
) -> Arc<Gate> {
    let config = Arc::new(config::parse(text, "test.toml", base).unwrap());
    let store = Store::open(&config.gate.state).unwrap();
    let (audit, _) = Gate::open_audit(&config).unwrap();
    let c = Arc::clone(clock);
    let clock: Clock = Arc::new(move || proto::Timestamp(c.load(Ordering::SeqCst)));
    Gate::with_clock(
        config,
        store,
        audit,
        runner,
        clock,
        Duration::from_millis(50),
    )
    .unwrap()
}

/// Polls `f` until it is true or 10 s pass.
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An agent connection to `serve_agent` on a socketpair; the loop's result comes back on
/// the handle.
pub struct Agent {
    pub stream: UnixStream,
    pub served: std::thread::JoinHandle<Result<(), gate::serve::ServeError>>,
}

impl Agent {
    pub fn connect(gate: &Arc<Gate>) -> Agent {
        let (client, server) = UnixStream::pair().unwrap();
        let gate = Arc::clone(gate);
        let served = std::thread::spawn(move || gate::serve::serve_agent_stream(gate, server));
        client
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Agent {
            stream: client,
            served,
        }
    }

    pub fn send(&mut self, env: &Envelope) {
        write_frame(&mut self.stream, env).unwrap();
    }

    pub fn request(&mut self, id: u64, r: ToolRequest) {
        self.send(&Envelope::request(id, r));
    }

    pub fn recv(&mut self) -> Envelope {
        read_frame(&mut self.stream).unwrap()
    }
}

/// A control connection to `serve_control` on a socketpair.
pub struct Operator {
    pub stream: UnixStream,
    next: u64,
}

impl Operator {
    pub fn connect(gate: &Arc<Gate>) -> Operator {
        let (client, server) = UnixStream::pair().unwrap();
        let gate = Arc::clone(gate);
        std::thread::spawn(move || gate::serve::serve_control_stream(gate, server));
        client
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Operator {
            stream: client,
            next: 1,
        }
    }

    pub fn ask(&mut self, op: ControlOp) -> ControlAnswer {
        let id = self.next;
        self.next += 1;
        write_control_request(&mut self.stream, &ControlRequest::new(id, op)).unwrap();
        let reply: ControlReply = read_control_reply(&mut self.stream).unwrap();
        assert_eq!(reply.id, id);
        reply.reply
    }
}
