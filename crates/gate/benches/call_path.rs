//! The gate's whole call path, end to end (issue 5, "Performance"). Not a criterion bench:
//! it reports calls per second and p50/p99 latency per concurrency level, which criterion
//! does not.
//!
//! ```sh
//! cargo bench -p gate --bench call_path -- floor inproc          # no box, in-process gate
//! BOXMAKER_BIN=target/release/boxmaker \
//!   cargo bench -p gate --bench call_path -- process pending     # real `boxmaker __gate`
//! ```
//! (`bench/gate-call-path.sh` builds the binary and runs all four.)
//!
//! - `floor`: what the disk charges for durability: `write` + `fdatasync` of one audit-sized
//!   line, and one SQLite commit (WAL, `synchronous=FULL`) through `Store::raise_taint`.
//! - `inproc`: a gate in this process whose runner answers at once (it stands in for the
//!   runner process: "a test tool the runner answers at once"), served by
//!   `serve::serve_agent_stream` over real `UnixStream`s, so framing, the connection loop
//!   and its threads are all timed. N sessions, each its own client thread and connection,
//!   each sending one call, waiting for its answer, and sending the next.
//! - `process`: the same clients against a real `boxmaker __gate` (and its real runner)
//!   calling `read_file` in a box, over `agent.sock`.
//! - `pending`: 10,000 calls to a tool whose grant says `ask`, over 40 connections of 250
//!   calls each (`serve::MAX_IN_FLIGHT` is 256), held until every one has answered
//!   `pending_approval`; then the gate process's `VmRSS` and thread count.
//!
//! - `fleet`: `GATE_BENCH_REPLICAS` in-process gates on the `GATE_BENCH_STORE` PostgreSQL
//!   store (issue 32); `inproc` with `GATE_BENCH_STORE` set is one replica on it.
//!
//! `GATE_BENCH_SECS` sets the seconds per point (default 5); `GATE_BENCH_LEVELS` the
//! concurrency levels (default `1,16,256`); `GATE_BENCH_PENDING` the number of held calls;
//! `GATE_BENCH_TTL` the approvals' `approval_ttl` (default 3600): when set, `pending` also
//! waits for every held call to end `denied approval_expired` and reports the RSS then.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufReader, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gate::audit::AuditLog;
use gate::store::Store;
use gate::{Gate, ToolRunner};
use proto::{
    CallId, DataClass, Envelope, Message, SessionId, Timestamp, ToolRequest, ToolResponse,
    read_frame, write_frame,
};

const INPROC_CONFIG: &str = r#"
[gate]
state = "state"
approval_ttl = 3600

[[tool]]
name = "echo"
builtin = "read_file"
class = "internal"

[[grant]]
tool = "echo"
effect = "allow"

# `reach`: the same `run` twice, one whose box sees nothing, one whose box sees a secret
# mount (so each call in a new session commits its reach before it runs).
[[mount]]
name = "vault"
host = "vault"
at = "/data/vault"
class = "secret"

[[tool]]
name = "plain_run"
builtin = "run"
mounts = []

[[tool]]
name = "secret_run"
builtin = "run"
mounts = ["vault"]

[[grant]]
tool = "*_run"
effect = "allow"
"#;

const PROCESS_CONFIG: &str = r#"
[gate]
state = "state"
approval_ttl = TTL
# `pending` holds 250 calls of one session per connection.
max_pending_per_session = 100000

[[mount]]
host = "notes"
at = "/data/notes"
class = "internal"

[[tool]]
name = "read_file"
builtin = "read_file"

[[tool]]
name = "run"
builtin = "run"

[[grant]]
tool = "read_file"
effect = "allow"

[[grant]]
tool = "run"
effect = "ask"
"#;

/// The runner that answers at once.
struct Instant0;

impl ToolRunner for Instant0 {
    fn reset(&self, _session: &proto::SessionId) -> Result<gate::link::Cleared, String> {
        Ok(gate::link::Cleared::default())
    }

    fn digest(&self, _req: &ToolRequest) -> Result<Vec<proto::run::FileDigest>, String> {
        Ok(Vec::new())
    }

    fn run_approved(
        &self,
        req: &ToolRequest,
        _taint: policy::Taint,
        _files: &[proto::run::FileDigest],
    ) -> ToolResponse {
        ToolResponse::Result {
            content: format!("{} ran {}", req.session, req.arguments),
            class: DataClass::Internal,
            untrusted: false,
            truncated: false,
        }
    }
}

fn secs() -> Duration {
    Duration::from_secs_f64(
        std::env::var("GATE_BENCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5.0),
    )
}

fn levels() -> Vec<usize> {
    std::env::var("GATE_BENCH_LEVELS")
        .unwrap_or_else(|_| "1,16,256".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn pct(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)] as f64 / 1000.0
}

/// p50, mean in µs.
fn summary(name: &str, mut ns: Vec<u64>) {
    ns.sort_unstable();
    let mean = ns.iter().sum::<u64>() as f64 / ns.len() as f64 / 1000.0;
    println!(
        "| {name} | {} | {:.1} | {:.1} | {:.1} |",
        ns.len(),
        pct(&ns, 0.5),
        mean,
        pct(&ns, 0.99)
    );
}

// ---------------------------------------------------------------------------------------------
// floor

fn floor() {
    let dir = tempfile::tempdir_in(
        std::env::var("GATE_BENCH_DIR")
            .unwrap_or_else(|_| std::env::temp_dir().display().to_string()),
    )
    .unwrap();
    println!("\n## fsync floor ({})\n", dir.path().display());
    println!("| operation | n | p50 µs | mean µs | p99 µs |");
    println!("|---|---:|---:|---:|---:|");
    let n = 1000;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.path().join("f"))
        .unwrap();
    let line = vec![b'x'; 300];
    let mut ns = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f.write_all(&line).unwrap();
        f.sync_data().unwrap();
        ns.push(t.elapsed().as_nanos() as u64);
    }
    summary("write 300 B + fdatasync (append)", ns);

    let mut store = Store::open(dir.path()).unwrap();
    let sessions: Vec<SessionId> = (0..64)
        .map(|i| SessionId::new(format!("s{i}")).unwrap())
        .collect();
    let mut ns = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        store
            .raise_taint(
                &sessions[i % sessions.len()],
                DataClass::Internal,
                i % 7 == 0,
                Timestamp(1),
            )
            .unwrap();
        ns.push(t.elapsed().as_nanos() as u64);
    }
    summary("SQLite commit (Store::raise_taint, WAL, FULL)", ns);
    let raises: Vec<gate::store::TaintRaise> = sessions
        .iter()
        .take(16)
        .map(|s| gate::store::TaintRaise {
            session: s.clone(),
            class: DataClass::Confidential,
            untrusted: false,
        })
        .collect();
    let mut ns = Vec::with_capacity(n / 4);
    for _ in 0..n / 4 {
        let t = Instant::now();
        store.raise_taints(&raises, Timestamp(2)).unwrap();
        ns.push(t.elapsed().as_nanos() as u64);
    }
    summary("SQLite commit of 16 raises (Store::raise_taints)", ns);
    let (mut log, _) = AuditLog::open(dir.path()).unwrap();
    let mut ns = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let ev = gate::audit::Event::result(
            sessions[0].clone(),
            CallId(i),
            "read_file",
            gate::audit::Outcome::Result,
            "content",
            DataClass::Internal,
            false,
            false,
        );
        let t = Instant::now();
        log.append(Timestamp(i), ev).unwrap();
        ns.push(t.elapsed().as_nanos() as u64);
    }
    summary("AuditLog::append (seal + write + fdatasync)", ns);
}

// ---------------------------------------------------------------------------------------------
// clients

/// One client: its own connection and session, one call at a time until `until`.
/// Returns each call's latency in ns.
fn client(stream: UnixStream, session: &str, tool: &str, args: &str, until: Instant) -> Vec<u64> {
    client_in(stream, session, tool, args, until, false)
}

/// [`client`]; with `fresh`, every call in a session of its own (`SESSION-N`).
fn client_in(
    stream: UnixStream,
    session: &str,
    tool: &str,
    args: &str,
    until: Instant,
    fresh: bool,
) -> Vec<u64> {
    let mut w = BufWriter::new(stream.try_clone().unwrap());
    let mut r = BufReader::new(stream);
    let mut out = Vec::new();
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let id = if fresh {
            format!("{session}-{n}")
        } else {
            session.to_string()
        };
        let req = ToolRequest {
            session: SessionId::new(id).unwrap(),
            call: CallId(n),
            tool: tool.into(),
            arguments: args.into(),
        };
        let t = Instant::now();
        write_frame(&mut w, &Envelope::request(n, req)).unwrap();
        w.flush().unwrap();
        let env = read_frame(&mut r).unwrap();
        assert_eq!(env.id, n);
        match env.msg {
            Message::ToolResponse(ToolResponse::Result { .. }) => {}
            other => panic!("unexpected answer {other:?}"),
        }
        out.push(t.elapsed().as_nanos() as u64);
    }
    out
}

/// Runs `n` clients for `secs()`, each from `connect()`, and prints a table row.
fn drive(label: &str, n: usize, tool: &str, args: &str, connect: &(dyn Fn() -> UnixStream + Sync)) {
    let until = Instant::now() + secs();
    let start = Instant::now();
    let all: Vec<u64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let stream = connect();
                s.spawn(move || client(stream, &format!("sess{i}"), tool, args, until))
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let mut all = all;
    all.sort_unstable();
    println!(
        "| {label} | {n} | {} | {:.0} | {:.1} | {:.1} |",
        all.len(),
        all.len() as f64 / elapsed,
        pct(&all, 0.5),
        pct(&all, 0.99)
    );
}

fn table_head(title: &str) {
    println!("\n## {title}\n");
    println!("| path | sessions | calls | calls/s | p50 µs | p99 µs |");
    println!("|---|---:|---:|---:|---:|---:|");
}

// ---------------------------------------------------------------------------------------------
// inproc

/// The store of a benched gate: `GATE_BENCH_STORE` (a `postgres://` URL: a replica of a
/// fleet, issue 32), else the embedded SQLite file in `state`.
fn bench_store(state: &Path) -> Store {
    match std::env::var("GATE_BENCH_STORE") {
        Ok(url) if !url.is_empty() => {
            Store::open_shared(&gate::store::PgTarget::from_url(&url).unwrap()).unwrap()
        }
        _ => Store::open(state).unwrap(),
    }
}

/// Issue 32's throughput goal: `GATE_BENCH_REPLICAS` in-process gates (default 2), each
/// with its own state directory and audit log, all on the store of `GATE_BENCH_STORE`,
/// the sessions' connections dealt round-robin across them.
fn fleet() {
    let replicas: usize = std::env::var("GATE_BENCH_REPLICAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let dirs: Vec<_> = (0..replicas)
        .map(|_| tempfile::tempdir().unwrap())
        .collect();
    let gates: Vec<_> = dirs
        .iter()
        .map(|dir| {
            let config = config::parse(INPROC_CONFIG, "bench", dir.path()).unwrap();
            let store = bench_store(&config.gate.state);
            let (audit, _) = Gate::open_audit(&config).unwrap();
            Gate::new(Arc::new(config), store, audit, Box::new(Instant0)).unwrap()
        })
        .collect();
    table_head(&format!(
        "{replicas} in-process replicas on one store, runner answers at once"
    ));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let connect = || {
        let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % gates.len();
        let (ours, theirs) = UnixStream::pair().unwrap();
        let g = Arc::clone(&gates[i]);
        std::thread::spawn(move || gate::serve::serve_agent_stream(g, theirs));
        ours
    };
    for n in levels() {
        drive(
            &format!("{replicas} replicas"),
            n,
            "echo",
            "{\"path\":\"/x\"}",
            &connect,
        );
    }
}

fn inproc() {
    let dir = tempfile::tempdir().unwrap();
    let config = config::parse(INPROC_CONFIG, "bench", dir.path()).unwrap();
    let state = &config.gate.state;
    let store = bench_store(state);
    let (audit, _) = Gate::open_audit(&config).unwrap();
    let gate = Gate::new(Arc::new(config), store, audit, Box::new(Instant0)).unwrap();
    table_head("in-process gate, runner answers at once (no box)");
    let connect = || {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let g = Arc::clone(&gate);
        std::thread::spawn(move || gate::serve::serve_agent_stream(g, theirs));
        ours
    };
    for n in levels() {
        drive(
            "gate + instant runner",
            n,
            "echo",
            "{\"path\":\"/x\"}",
            &connect,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// reach

/// The cost of committing a call's reach before it runs (issue 12): one client, every call
/// in a new session (so every call of `secret_run` raises its taint before it runs; in a
/// session that already holds its reach, nothing more is committed), `plain_run` and
/// `secret_run` alternately, a round of each per `GATE_BENCH_SECS / 4`.
fn reach() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("vault")).unwrap();
    let config = config::parse(INPROC_CONFIG, "bench", dir.path()).unwrap();
    let state = &config.gate.state;
    let store = Store::open(state).unwrap();
    let (audit, _) = Gate::open_audit(&config).unwrap();
    let gate = Gate::new(Arc::new(config), store, audit, Box::new(Instant0)).unwrap();
    println!("\n## reach: a new session per call, `run` seeing nothing vs a secret mount\n");
    println!("| tool | calls | p50 µs | p99 µs |");
    println!("|---|---:|---:|---:|");
    let round = secs() / 4;
    let mut plain = Vec::new();
    let mut secret = Vec::new();
    for r in 0..4 {
        for (tool, out) in [("plain_run", &mut plain), ("secret_run", &mut secret)] {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let g = Arc::clone(&gate);
            std::thread::spawn(move || gate::serve::serve_agent_stream(g, theirs));
            let until = Instant::now() + round;
            out.extend(client_in(
                ours,
                &format!("{tool}{r}"),
                tool,
                r#"{"argv":["true"]}"#,
                until,
                true,
            ));
        }
    }
    for (tool, mut all) in [
        ("plain_run (reach public)", plain),
        ("secret_run (reach secret)", secret),
    ] {
        all.sort_unstable();
        println!(
            "| {tool} | {} | {:.1} | {:.1} |",
            all.len(),
            pct(&all, 0.5),
            pct(&all, 0.99)
        );
    }
}

// ---------------------------------------------------------------------------------------------
// process

struct Proc {
    child: Child,
    _dir: tempfile::TempDir,
    sock: PathBuf,
    bin: String,
    config: PathBuf,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The config's trust record goes with the temporary directory.
        let _ = Command::new(&self.bin)
            .args(["trust", "--revoke", "--config"])
            .arg(&self.config)
            .output();
    }
}

fn start_gate() -> Proc {
    let bin = std::env::var("BOXMAKER_BIN")
        .expect("set BOXMAKER_BIN to a built boxmaker (target/release/boxmaker)");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("notes")).unwrap();
    std::fs::write(
        dir.path().join("notes/plan.txt"),
        "a small file read in a box\n",
    )
    .unwrap();
    let config = dir.path().join("boxmaker.toml");
    let ttl = std::env::var("GATE_BENCH_TTL").unwrap_or_else(|_| "3600".into());
    std::fs::write(&config, PROCESS_CONFIG.replace("TTL", &ttl)).unwrap();
    // boxmaker uses a config only once trusted (docs/spec.md §6, "Whose config").
    let trusted = Command::new(&bin)
        .args(["trust", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        trusted.status.success(),
        "boxmaker trust: {}",
        String::from_utf8_lossy(&trusted.stderr)
    );
    let child = Command::new(&bin)
        .args(["__gate", "--config"])
        .arg(&config)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let sock = dir.path().join("state/agent.sock");
    let start = Instant::now();
    while UnixStream::connect(&sock).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the gate did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Proc {
        child,
        _dir: dir,
        sock,
        bin,
        config,
    }
}

fn process() {
    let p = start_gate();
    table_head("boxmaker __gate + runner, read_file in a box");
    let connect = || UnixStream::connect(&p.sock).unwrap();
    // Warm up: the runner starts on the first call.
    drop(drive_once(&p.sock));
    for n in levels() {
        drive(
            "read_file in a box",
            n,
            "read_file",
            "{\"path\":\"/data/notes/plan.txt\"}",
            &connect,
        );
    }
}

fn drive_once(sock: &Path) -> Vec<u64> {
    let s = UnixStream::connect(sock).unwrap();
    client(
        s,
        "warm",
        "read_file",
        "{\"path\":\"/data/notes/plan.txt\"}",
        Instant::now() + Duration::from_millis(1),
    )
}

// ---------------------------------------------------------------------------------------------
// pending

/// VmRSS (KiB) and threads of `pid`.
fn status_of(pid: u32) -> (u64, u64) {
    let (rss, threads, _) = status3(pid);
    (rss, threads)
}

/// VmRSS (KiB), threads, VmHWM (peak RSS, KiB) of `pid`.
fn status3(pid: u32) -> (u64, u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("Threads:"), field("VmHWM:"))
}

fn pending() {
    let total: usize = std::env::var("GATE_BENCH_PENDING")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let per_conn = 250;
    let p = start_gate();
    drop(drive_once(&p.sock));
    let pid = p.child.id();
    let (rss0, threads0) = status_of(pid);
    let start = Instant::now();
    let conns = total.div_ceil(per_conn);
    let streams: Vec<UnixStream> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..conns)
            .map(|c| {
                let sock = p.sock.clone();
                s.spawn(move || {
                    let stream = UnixStream::connect(&sock).unwrap();
                    let calls = per_conn.min(total - c * per_conn);
                    let mut w = BufWriter::new(stream.try_clone().unwrap());
                    for i in 0..calls {
                        let id = (c * per_conn + i) as u64 + 1;
                        let req = ToolRequest {
                            session: SessionId::new(format!("held{c}")).unwrap(),
                            call: CallId(id),
                            tool: "run".into(),
                            arguments: format!("{{\"argv\":[\"true\"],\"n\":{id}}}"),
                        };
                        write_frame(&mut w, &Envelope::request(id, req)).unwrap();
                    }
                    w.flush().unwrap();
                    let mut r = BufReader::new(stream.try_clone().unwrap());
                    for _ in 0..calls {
                        let env = read_frame(&mut r).unwrap();
                        match env.msg {
                            Message::ToolResponse(ToolResponse::PendingApproval { .. }) => {}
                            other => panic!("expected pending_approval, got {other:?}"),
                        }
                    }
                    stream
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let held_in = start.elapsed();
    std::thread::sleep(Duration::from_secs(3));
    let (rss, threads, hwm) = status3(pid);
    println!("\n## {total} pending approvals held by boxmaker __gate\n");
    println!("| | VmRSS | threads |");
    println!("|---|---:|---:|");
    println!(
        "| peak while they arrived (VmHWM) | {:.1} MiB | |",
        hwm as f64 / 1024.0
    );
    println!(
        "| idle (after one call) | {:.1} MiB | {threads0} |",
        rss0 as f64 / 1024.0
    );
    println!(
        "| {total} held ({} connections × {per_conn}), all pending after {:.2} s | {:.1} MiB | {threads} |",
        conns,
        held_in.as_secs_f64(),
        rss as f64 / 1024.0
    );
    if let Ok(ttl) = std::env::var("GATE_BENCH_TTL") {
        // Every held call ends `denied approval_expired` at once when its approval expires.
        let t = Instant::now();
        std::thread::scope(|s| {
            for (c, stream) in streams.iter().enumerate() {
                s.spawn(move || {
                    let calls = per_conn.min(total - c * per_conn);
                    let mut r = BufReader::new(stream);
                    for _ in 0..calls {
                        match read_frame(&mut r).unwrap().msg {
                            Message::ToolResponse(ToolResponse::Denied { .. }) => {}
                            other => panic!("expected denied, got {other:?}"),
                        }
                    }
                });
            }
        });
        std::thread::sleep(Duration::from_secs(2));
        let (rss, threads, hwm) = status3(pid);
        println!(
            "| all {total} expired (ttl {ttl} s; the last answer {:.1} s after the held row) | {:.1} MiB (peak {:.1}) | {threads} |",
            t.elapsed().as_secs_f64() - 2.0,
            rss as f64 / 1024.0,
            hwm as f64 / 1024.0
        );
    }
    let t = Instant::now();
    drop(streams);
    // The gate withdraws every held approval when its connection closes.
    loop {
        let (_, th) = status_of(pid);
        if th <= threads0 + 2 || t.elapsed() > Duration::from_secs(60) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let (rss2, threads2) = status_of(pid);
    println!(
        "| after the clients closed ({:.2} s to withdraw all) | {:.1} MiB | {threads2} |",
        t.elapsed().as_secs_f64(),
        rss2 as f64 / 1024.0
    );
}

fn main() {
    let modes: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let modes = if modes.is_empty() {
        vec!["floor".to_string(), "inproc".to_string()]
    } else {
        modes
    };
    for m in &modes {
        match m.as_str() {
            "floor" => floor(),
            "inproc" => inproc(),
            "process" => process(),
            "pending" => pending(),
            "reach" => reach(),
            "fleet" => fleet(),
            other => panic!("unknown mode {other} (floor, inproc, reach, process, pending, fleet)"),
        }
    }
}
