//! Attacks on the downstream MCP server feature (issue 7), through the real binary: a hostile
//! server (`tests/servers/attack_server.py`, stdlib Python in a box), a hostile agent (an MCP
//! client written here, speaking raw JSON-RPC to `boxmaker mcp`), and a hostile local file
//! (`state/tools.json` edited by hand).
//!
//! Each test states the promise it attacks and documents a defended attack. (Six of them
//! were bugs when first written — a quadratic cut of many images, answers to unread requests
//! piling up, `tools.json` made unreadable by a deep or huge definition, `tools accept`
//! taking a definition nobody reviewed, a closed stdout noticed only at the timeout — and
//! were fixed with these tests.) Every child has a deadline; every process a test started (found by the
//! test's own directory or marker in its command line) is killed by pid when the test ends.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use testkit::{Lab, McpClient, Run, pids_with, servers_dir, text_of, wait_until};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
/// A boxmaker command that has not finished by then has hung: it is killed, the test fails.
const LIMIT: Duration = Duration::from_secs(30);
/// One frame (docs/spec.md §2): no result may be larger.
const MAX_FRAME: usize = 1 << 20;

// ---------------------------------------------------------------------------------------
// Processes.

fn kill_pids(pids: &[u32]) {
    for pid in pids {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

/// A field of `/proc/PID/status` in kB (`VmRSS`, `VmHWM`).
fn status_kb(pid: u32, field: &str) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .map(|v| v.trim().trim_end_matches(" kB").trim().parse().unwrap())
        .unwrap_or_else(|| panic!("no {field} for {pid}"))
}

fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// `boxmaker mcp` in `session`, initialized.
fn start_mcp(env: &Env, session: &str) -> McpClient {
    let mut m = McpClient::spawn(env.lab.mcp(session), LIMIT);
    let init = m.initialize("attacker");
    assert!(init.get("result").is_some(), "{init}");
    m
}

// ---------------------------------------------------------------------------------------
// A test's config dir, `boxmaker serve` in it, and every process it started.

fn toml_array(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

struct Env {
    lab: Lab,
    dir: PathBuf,
    marker: String,
    serve: Option<Child>,
}

impl Env {
    /// A config with `[box] timeout_seconds = timeout`, the servers' directory mounted at
    /// `/opt/servers` (public), and `body` (where `ATTACK(args)` is written by [`Env::attack`]).
    fn new(name: &str, timeout: u64, body: &str) -> Env {
        assert!(
            Path::new("/usr/bin/python3").exists(),
            "the attack server runs under /usr/bin/python3, which is missing"
        );
        let lab = testkit::lab!("attacks", name);
        let dir = lab.dir.clone();
        let marker = format!("bxatk-{name}-{}", std::process::id());
        let text = format!(
            "[gate]\nstate = \"state\"\n\n[box]\ntimeout_seconds = {timeout}\n\n\
             [[mount]]\nhost = {:?}\nat = \"/opt/servers\"\nclass = \"public\"\n\n{}",
            servers_dir().display().to_string(),
            body.replace("MARKER", &marker)
        );
        lab.write_config(&text);
        // The tester's config, trusted as a person would (the test runs boxmaker directly
        // too, as this process's user).
        assert!(testkit::trust(BIN, lab.config()), "boxmaker trust");
        Env {
            lab,
            dir,
            marker,
            serve: None,
        }
    }

    fn config(&self) -> PathBuf {
        self.lab.config()
    }

    fn state(&self) -> PathBuf {
        self.dir.join("state")
    }

    fn tools_json(&self) -> PathBuf {
        self.state().join("tools.json")
    }

    /// `boxmaker ARGS --config C`, killed after `limit` (which fails the test).
    fn run(&mut self, args: &[&str], limit: Duration) -> Run {
        self.lab.run_within(args, limit)
    }

    /// `boxmaker call --json`: the run and the answer it printed.
    fn call(&mut self, session: &str, tool: &str, args: &Value, limit: Duration) -> (Run, Value) {
        let a = args.to_string();
        let run = self.run(&["call", "--session", session, "--json", tool, &a], limit);
        let body = serde_json::from_str(run.stdout.trim())
            .unwrap_or_else(|e| panic!("{tool}: no JSON answer: {e}\n{}", run.show()));
        (run, body)
    }

    /// A call that must be a `result`: its content (a downstream `{"content": [...]}`).
    fn ok(&mut self, session: &str, tool: &str, args: &Value) -> Value {
        let (run, body) = self.call(session, tool, args, LIMIT);
        assert_eq!(body["status"], "result", "{tool}: {}", run.show());
        serde_json::from_str(body["content"].as_str().unwrap()).unwrap()
    }

    /// A call that must be `failed`: its message, and how long it took.
    fn failed(
        &mut self,
        session: &str,
        tool: &str,
        args: &Value,
        limit: Duration,
    ) -> (String, Duration) {
        let (run, body) = self.call(session, tool, args, limit);
        assert_eq!(body["status"], "failed", "{tool}: {}", run.show());
        (body["message"].as_str().unwrap().to_string(), run.took)
    }

    fn echo(&mut self, session: &str, tool: &str, text: &str) -> String {
        let c = self.ok(session, tool, &json!({"text": text}));
        c["content"][0]["text"].as_str().unwrap().to_string()
    }

    fn start_serve(&mut self) {
        let err = File::create(self.dir.join("serve.err")).unwrap();
        let child = Command::new(BIN)
            .arg("serve")
            .arg("--config")
            .arg(self.config())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .unwrap();
        self.serve = Some(child);
        let sock = self.state().join("agent.sock");
        wait_until("serve making its socket", Duration::from_secs(20), || {
            sock.exists()
        });
    }

    /// The runner process of this test (serve's, or an embedded one).
    fn runner_pid(&self) -> u32 {
        let config = self.config().display().to_string();
        let pids: Vec<u32> = pids_with(&config)
            .into_iter()
            .filter(|p| {
                std::fs::read(format!("/proc/{p}/cmdline"))
                    .is_ok_and(|c| String::from_utf8_lossy(&c).contains("__runner"))
            })
            .collect();
        assert_eq!(pids.len(), 1, "runner processes: {pids:?}");
        pids[0]
    }

    /// Processes of this test's servers (and what they started).
    fn servers(&self) -> Vec<u32> {
        pids_with(&self.marker)
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(mut child) = self.serve.take() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        // Whatever is left (a runner stuck in a call, a server, a daemon): by pid.
        // With its slash: `…/closeout` must not match `…/closeout-prompt`, another test's.
        kill_pids(&pids_with(&format!("{}/", self.dir.display())));
        kill_pids(&pids_with(&self.marker));
    }
}

/// The attack server as a `mcp = [...]` array.
fn attack(list: &str, n: usize, size: usize) -> String {
    toml_array(&[
        "/usr/bin/python3",
        "/opt/servers/attack_server.py",
        list,
        "MARKER",
        &n.to_string(),
        &size.to_string(),
    ])
}

/// A config with the attack server (tool list `list`) as `a` and a normal one as `good`.
fn two_servers(list: &str, n: usize, size: usize) -> String {
    format!(
        "[[tool]]\nname = \"good\"\nmcp = {}\nclass = \"internal\"\n\n\
         [[tool]]\nname = \"a\"\nmcp = {}\nclass = \"internal\"\n\n\
         [[grant]]\ntool = \"good_*\"\neffect = \"allow\"\n\n\
         [[grant]]\ntool = \"a_*\"\neffect = \"allow\"\n",
        attack("normal", 0, 0).replace("MARKER", "MARKER-good"),
        attack(list, n, size)
    )
}

// ---------------------------------------------------------------------------------------
// A hostile agent: an MCP client over `boxmaker mcp`'s stdio.

// ---------------------------------------------------------------------------------------
// Server → client requests.

/// Promise: nothing the client answers a server's own requests gives it anything. Sampling
/// (the model's voice), an unknown method are refused; roots/list names no host directory;
/// elicitation (asking the person) is declined. And the result is labelled by the config.
#[test]
fn server_requests_to_the_client_get_nothing() {
    let mut env = Env::new("client-requests", 10, &two_servers("normal", 0, 0));
    let c = env.ok("s", "a_probe", &json!({}));
    let got: Value = serde_json::from_str(c["content"][0]["text"].as_str().unwrap()).unwrap();
    assert!(got["sampling"]["error"].is_object(), "{got}");
    assert!(got["unknown"]["error"].is_object(), "{got}");
    assert!(
        got["roots"]["error"].is_object() || got["roots"]["result"]["roots"] == json!([]),
        "{got}"
    );
    let elicitation = &got["elicitation"];
    assert!(
        elicitation["error"].is_object()
            || matches!(
                elicitation["result"]["action"].as_str(),
                Some("decline" | "cancel")
            ),
        "{got}"
    );
    assert!(elicitation["result"]["content"].is_null(), "{got}");
}

/// Promise: a server cannot pick its own label. It claims `public`/trusted in the result's
/// `_meta`, a block's `_meta` and `structuredContent`; the front shows the model the label
/// of the config (max of the tool's class and every mount's: `confidential`, untrusted), and
/// the gate's taint follows it (a public-only builtin is then denied).
#[test]
fn a_server_cannot_label_its_own_result() {
    let secret = Path::new(env!("CARGO_TARGET_TMPDIR")).join("attacks-secret");
    std::fs::create_dir_all(&secret).unwrap();
    let body = format!(
        "[[mount]]\nhost = {:?}\nat = \"/data/secret\"\nclass = \"confidential\"\n\n\
         [[tool]]\nname = \"list_dir\"\nbuiltin = \"list_dir\"\nclass = \"public\"\n\n\
         [[tool]]\nname = \"a\"\nmcp = {}\nclass = \"internal\"\nuntrusted = true\n\n\
         [[grant]]\ntool = \"list_dir\"\neffect = \"allow\"\nmax_class = \"public\"\n\n\
         [[grant]]\ntool = \"a_*\"\neffect = \"allow\"\n",
        secret.display().to_string(),
        attack("normal", 0, 0)
    );
    let env = Env::new("label", 10, &body);
    let mut mcp = start_mcp(&env, "lbl");
    let before = mcp.call("list_dir", json!({"path": "/work"}));
    assert_eq!(before["result"]["isError"], false, "{before}");
    let r = mcp.call("a_label", json!({}));
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(
        r["result"]["_meta"]["boxmaker"],
        json!({"class": "confidential", "untrusted": true, "truncated": false}),
        "{r}"
    );
    let after = mcp.call("list_dir", json!({"path": "/work"}));
    assert_eq!(after["result"]["isError"], true, "{after}");
    assert!(text_of(&after).contains("taint_too_high"), "{after}");
}

// ---------------------------------------------------------------------------------------
// Names, shadowing, what the model is shown.

/// Promise: a server cannot shadow a builtin, nor offer a name outside `[A-Za-z0-9_-]{1,64}`
/// (`..`, `/`, unicode, control characters, empty, too long), even with `prefix = ""`; the
/// builtin answers its own name.
#[test]
fn tool_names_cannot_escape_or_shadow() {
    let body = format!(
        "[[tool]]\nname = \"read_file\"\nbuiltin = \"read_file\"\n\n\
         [[tool]]\nname = \"run\"\nbuiltin = \"run\"\n\n\
         [[tool]]\nname = \"n\"\nmcp = {}\nprefix = \"\"\n\n\
         [[grant]]\ntool = \"*\"\neffect = \"allow\"\n",
        attack("names", 0, 0)
    );
    let mut env = Env::new("names", 10, &body);
    let list = env.run(&["tools", "list"], LIMIT);
    assert_eq!(list.code(), Some(0), "{}", list.show());
    let offered: Vec<&str> = list
        .stdout
        .lines()
        .filter(|l| !l.starts_with("not offered"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(offered, ["h_echo", "ok"], "{}", list.show());
    let not_offered = list
        .stdout
        .lines()
        .filter(|l| l.starts_with("not offered"))
        .count();
    assert_eq!(not_offered, 8, "{}", list.show());
    let mcp_names: Vec<String> = {
        let mut mcp = start_mcp(&env, "names");
        let tools = mcp.tools();
        let rf = tools.iter().find(|t| t["name"] == "read_file").unwrap();
        assert!(
            !rf["description"].as_str().unwrap().contains("named"),
            "the builtin's description was replaced: {rf}"
        );
        // The builtin answers its own name.
        let r = mcp.call(
            "read_file",
            json!({"path": "/opt/servers/attack_server.py"}),
        );
        assert!(text_of(&r).contains("stdio MCP server that attacks"), "{r}");
        tools
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(mcp_names, ["read_file", "run", "h_echo", "ok"]);
}

// ---------------------------------------------------------------------------------------
// Memory, CPU, hangs, processes, file descriptors.

/// Promise: a tool never causes a `TooLarge` (docs/spec.md §3.4), and a server's JSON-RPC error is
/// an answer, not a fault. The server refuses a call with an error whose message is 8 MiB:
/// the call fails with a bounded message naming the refusal, the runner (shared by every
/// session) keeps serving, and the same server answers the next call.
#[test]
fn a_huge_json_rpc_error_is_bounded_and_the_server_kept() {
    let mut env = Env::new("bigerror", 8, &two_servers("normal", 0, 0));
    env.start_serve();
    assert_eq!(env.echo("s", "a_echo", "before"), "before");
    let runner = env.runner_pid();
    let (message, _) = env.failed("s", "a_bigerror", &json!({"size": 8 << 20}), LIMIT);
    assert!(
        message.contains("refused the call"),
        "{}",
        &message[..200.min(message.len())]
    );
    assert!(
        message.len() <= 64 * 1024,
        "a failed message of {} bytes",
        message.len()
    );
    assert_eq!(env.runner_pid(), runner, "the runner was replaced");
    assert_eq!(env.echo("other", "good_echo", "bystander"), "bystander");
    assert_eq!(env.echo("s", "a_echo", "after"), "after");
}

/// Promise: a server that asks the client many small things and never reads the answers
/// is cut off by count, at once, not left to pile up answers until the call times out.
#[test]
fn requests_whose_answers_are_never_read_are_cut_off() {
    let mut env = Env::new("unread", 8, &two_servers("normal", 0, 0));
    env.start_serve();
    let (message, _) = env.failed(
        "s",
        "a_bigids",
        &json!({"n": 1000, "size": 8}),
        Duration::from_secs(30),
    );
    assert!(message.contains("without reading the answers"), "{message}");
    assert_eq!(env.echo("s", "a_echo", "again"), "again");
}

/// Promise: a server never harms the runner's memory. It floods the client with `ping`
/// requests whose string ids are 8 MiB each (rmcp answers each, echoing the id) and never
/// reads its stdin, so every answer waits. The runner's peak memory must stay bounded.
#[test]
fn requests_with_huge_ids_do_not_grow_the_runner() {
    const N: usize = 24;
    const SIZE: usize = 8 << 20;
    let mut env = Env::new("bigids", 8, &two_servers("normal", 0, 0));
    env.start_serve();
    assert_eq!(env.echo("s", "a_echo", "hi"), "hi");
    let runner = env.runner_pid();
    let base = status_kb(runner, "VmRSS");
    let (message, _) = env.failed(
        "s",
        "a_bigids",
        &json!({"n": N, "size": SIZE}),
        Duration::from_secs(30),
    );
    // Cut off at the first oversized id (at most 256 bytes), long before any timeout.
    assert!(message.contains("an id of"), "{message}");
    let peak = status_kb(runner, "VmHWM");
    let grew_mib = peak.saturating_sub(base) / 1024;
    println!(
        "bigids: runner RSS {} MiB before, peak {} MiB after {} MiB of ids",
        base / 1024,
        peak / 1024,
        (N * SIZE) >> 20
    );
    assert!(
        grew_mib < 64,
        "the runner grew by {grew_mib} MiB holding a server's {} MiB of request ids",
        (N * SIZE) >> 20
    );
}

/// Promise: a flood of notifications during a call (100 MB of log messages) neither grows
/// the runner's memory without bound nor keeps the call from its answer.
#[test]
fn a_notification_flood_is_drained_without_growing_the_runner() {
    const N: usize = 50_000;
    const SIZE: usize = 2000;
    let mut env = Env::new("notify", 20, &two_servers("normal", 0, 0));
    env.start_serve();
    assert_eq!(env.echo("s", "a_echo", "hi"), "hi");
    let runner = env.runner_pid();
    let base = status_kb(runner, "VmRSS");
    let start = Instant::now();
    let c = env.ok("s", "a_notify", &json!({"n": N, "size": SIZE}));
    let took = start.elapsed();
    assert_eq!(c["content"][0]["text"], "done");
    let peak = status_kb(runner, "VmHWM");
    // About 2 s in a debug build on 2 idle cores, 3.5 s with both cores busy (it was 7.5 s
    // and 15 s while the runner measured every note it dropped and rmcp woke a thread for
    // each: past 20 s on a slower machine).
    println!(
        "notify: runner RSS {} MiB before, peak {} MiB after {} MB of notifications in {took:?}",
        base / 1024,
        peak / 1024,
        N * SIZE / 1_000_000
    );
    assert!(
        peak.saturating_sub(base) < 64 * 1024,
        "the runner grew by {} MiB",
        peak.saturating_sub(base) / 1024
    );
}

/// Promise: a result never costs the runner more than a bounded effort. Many non-text blocks
/// over the frame (here 4000 images of 3.5 kB, 14 MB in all, under the 16 MiB message
/// limit) must be cut promptly; today `content::fit_content` re-encodes the whole result once
/// per block it replaces (quadratic), so the call holds a runner thread (and a CPU) for
/// many minutes, outside every timeout.
#[test]
fn many_image_blocks_are_cut_promptly() {
    let mut env = Env::new("manyimages", 10, &two_servers("normal", 0, 0));
    env.start_serve();
    assert_eq!(env.echo("s", "a_echo", "hi"), "hi");
    let start = Instant::now();
    let (run, body) = env.call(
        "s",
        "a_manyimages",
        &json!({"n": 4000, "size": 3500}),
        Duration::from_secs(60),
    );
    assert_eq!(body["status"], "result", "{}", run.show());
    assert_eq!(body["truncated"], true);
    assert!(run.stdout.len() < 2 * MAX_FRAME);
    // About 9 s in a debug build on 2 loaded cores (most of it the server writing, and the
    // runner reading, 14 MB of JSON); the quadratic cut took many minutes. 60 s tells the
    // two apart on a machine running the whole suite, which 15 s did not.
    println!("manyimages: {:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(60));
}

/// Promise: a server that closes its stdout but keeps running gets its call `failed` with a
/// reason, is stopped, and starts again on the next call; three such cycles leak no file
/// descriptor of the runner and leave one server process (the last one). (It is noticed only
/// at the timeout: see the next test.)
#[test]
fn a_server_that_closes_stdout_is_failed_and_restarted() {
    let mut env = Env::new("closeout", 2, &two_servers("normal", 0, 0));
    env.start_serve();
    assert_eq!(env.echo("s", "a_echo", "warm"), "warm");
    let runner = env.runner_pid();
    let fds = fd_count(runner);
    for i in 0..3 {
        let (message, took) = env.failed("s", "a_closeout", &json!({}), LIMIT);
        assert!(
            message.contains("closed its output") || message.contains("timed out"),
            "{message}"
        );
        assert!(took < Duration::from_secs(10), "took {took:?}: {message}");
        assert_eq!(
            env.echo("s", "a_echo", &format!("again {i}")),
            format!("again {i}")
        );
    }
    wait_until("the runner's fds settling", Duration::from_secs(5), || {
        fd_count(runner) <= fds + 2
    });
    assert_eq!(env.servers().len(), 1);
}

/// Promise (the guide: a server is stopped "when ... its connection breaks"): a server that
/// closes its stdout is noticed at once, not after `[box] timeout_seconds` (300 s by
/// default). Today the box's init and its helper keep their own copies of the command's
/// stdout, so the runner never reads end-of-file and waits for the timeout.
#[test]
fn a_server_that_closes_stdout_is_noticed_at_once() {
    let mut env = Env::new("closeout-prompt", 20, &two_servers("normal", 0, 0));
    env.start_serve();
    let (message, took) = env.failed("s", "a_closeout", &json!({}), LIMIT);
    println!("closeout: {message} (after {:.1} s)", took.as_secs_f64());
    assert!(message.contains("closed its output"), "{message}");
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// Promise: no process a server starts outlives its box. It double-forks a `setsid` daemon
/// that closes every descriptor; when the idle server is stopped, the daemon goes too.
#[test]
fn a_daemon_dies_with_its_server() {
    let body = two_servers("normal", 0, 0).replace(
        "class = \"internal\"\n\n[[grant]]",
        "class = \"internal\"\nidle_timeout = 1\n\n[[grant]]",
    );
    assert!(body.contains("idle_timeout = 1"));
    let mut env = Env::new("daemon", 10, &body);
    env.start_serve();
    let c = env.ok("s", "a_daemon", &json!({}));
    assert_eq!(c["content"][0]["text"], "forked");
    let daemon = format!("{}-daemon", env.marker);
    assert_eq!(pids_with(&daemon).len(), 1, "no daemon running");
    wait_until(
        "the daemon dying with the idle server",
        Duration::from_secs(10),
        || pids_with(&daemon).is_empty() && env.servers().is_empty(),
    );
}

/// Promise: a server that exits while a child of it keeps its stdout open is noticed (the
/// box ends with its command), the call fails with a reason, and the child is gone.
#[test]
fn a_server_whose_child_holds_stdout_is_failed_and_cleaned_up() {
    let mut env = Env::new("orphanout", 20, &two_servers("normal", 0, 0));
    env.start_serve();
    let (message, took) = env.failed("s", "a_orphanout", &json!({}), LIMIT);
    println!("orphanout: {message} (after {:.1} s)", took.as_secs_f64());
    assert!(took < Duration::from_secs(10), "took {took:?}: {message}");
    let orphan = format!("{}-orphan", env.marker);
    wait_until("the orphan dying", Duration::from_secs(10), || {
        pids_with(&orphan).is_empty()
    });
    assert_eq!(env.echo("s", "a_echo", "next"), "next");
}

/// Promise: a server that stops reading its stdin while the agent sends a 900 kB argument
/// (through `boxmaker mcp`) blocks nothing but its own calls: both fail at the timeout, and
/// the next call starts a new server.
#[test]
fn a_server_that_stops_reading_while_a_big_argument_is_sent() {
    let mut env = Env::new("noread", 3, &two_servers("normal", 0, 0));
    env.start_serve();
    let cfg = env.config();
    let noread = std::thread::spawn(move || {
        Command::new(BIN)
            .args([
                "call",
                "--session",
                "nr",
                "--json",
                "a_noread",
                "{}",
                "--config",
            ])
            .arg(cfg)
            .output()
            .unwrap()
    });
    std::thread::sleep(Duration::from_millis(800));
    let start = Instant::now();
    let mut mcp = start_mcp(&env, "nr");
    let big = mcp.call("a_echo", json!({"text": "b".repeat(900_000)}));
    assert_eq!(big["result"]["isError"], true, "{big}");
    assert!(text_of(&big).contains("timed out"), "{}", text_of(&big));
    // About 9 s in a debug build on 2 loaded cores (most of it the server writing, and the
    // runner reading, 14 MB of JSON); the quadratic cut took many minutes. 60 s tells the
    // two apart on a machine running the whole suite, which 15 s did not.
    println!("manyimages: {:?}", start.elapsed());
    assert!(start.elapsed() < Duration::from_secs(60));
    let first = noread.join().unwrap();
    let first = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(first.contains("timed out"), "{first}");
    assert_eq!(text_of(&mcp.call("a_echo", json!({"text": "ok"}))), "ok");
}

/// Promise: a server that answers two concurrent calls with each other's ids only confuses
/// its own session's calls (both end, labelled as the server's); one that answers with an
/// id no JSON-RPC peer can hold (10^30) gets its call `failed` with the reason at once, and
/// a new server for the next call.
#[test]
fn forged_response_ids() {
    let mut env = Env::new("ids", 10, &two_servers("normal", 0, 0));
    env.start_serve();
    assert_eq!(env.echo("s", "a_echo", "hi"), "hi");
    let cfg = env.config();
    let slow = std::thread::spawn(move || {
        Command::new(BIN)
            .args([
                "call",
                "--session",
                "s",
                "--json",
                "a_slow",
                "{}",
                "--config",
            ])
            .arg(cfg)
            .output()
            .unwrap()
    });
    std::thread::sleep(Duration::from_millis(800));
    let swapped = env.ok("s", "a_swapped", &json!({}));
    let slow: Value = serde_json::from_slice(&slow.join().unwrap().stdout).unwrap();
    let slow_content: Value = serde_json::from_str(slow["content"].as_str().unwrap()).unwrap();
    assert_eq!(swapped["content"][0]["text"], "for-slow");
    assert_eq!(slow_content["content"][0]["text"], "for-swapped");
    assert_eq!(slow["class"], "internal");

    let (message, took) = env.failed("s", "a_hugeid", &json!({}), LIMIT);
    assert!(message.contains("malformed"), "{message}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert_eq!(env.echo("s", "a_echo", "after"), "after");
}

// ---------------------------------------------------------------------------------------
// Tool lists.

/// Promise: a tool list of 100k tools, or a cursor that never ends, costs a bounded effort:
/// the server is refused with the reason, and the other server of the config still works.
#[test]
fn endless_tool_lists_are_cut_off() {
    for (name, list, n, words) in [
        ("manytools", "manytools", 100_000, "over 1024 tools"),
        ("endless", "endless", 0, "past 32 pages"),
    ] {
        let mut env = Env::new(name, 10, &two_servers(list, n, 0));
        assert_eq!(env.echo("s", "good_echo", "hi"), "hi");
        let (message, took) = env.failed("s", "a_t0", &json!({}), LIMIT);
        assert!(message.contains(words), "{message}");
        assert!(took < Duration::from_secs(20), "took {took:?}");
        assert_eq!(env.echo("s", "good_echo", "still"), "still");
    }
}

/// Depth of nesting serde_json accepts in one document (its recursion limit), found here.
fn max_depth() -> usize {
    let doc = |d: usize| "[".repeat(d) + &"]".repeat(d);
    (1..1000)
        .take_while(|d| serde_json::from_str::<Value>(&doc(*d)).is_ok())
        .last()
        .unwrap()
}

/// Promise: nothing a server offers can damage `state/tools.json`. A tool whose schema is as
/// deeply nested as one JSON-RPC message may be is recorded one level deeper in the file,
/// where serde_json's recursion limit refuses it: every downstream tool of every server and
/// session then fails with "tools.json is damaged", and `tools list` / `boxmaker mcp` refuse
/// to run, until an operator deletes the file (re-accepting every server's tools).
#[test]
fn a_deep_schema_does_not_damage_the_discovery_file() {
    // The message is `{"result":{"tools":[{"inputSchema": S}]}}`: S's own depth plus four.
    // `nested(n)` is n+1 objects deep.
    let n = max_depth() - 5;
    let mut env = Env::new("deep", 10, &two_servers("deep", n, 0));
    assert_eq!(env.echo("s", "good_echo", "hi"), "hi");
    let r = env.call("s2", "a_echo", &json!({"text": "x"}), LIMIT).1;
    println!("deep (schema {} levels): a_echo answered {r}", n + 1);
    let good = env
        .call("s", "good_echo", &json!({"text": "again"}), LIMIT)
        .1;
    assert_eq!(good["status"], "result", "{good}");
    let list = env.run(&["tools", "list"], LIMIT);
    assert_eq!(list.code(), Some(0), "{}", list.show());
}

/// Promise: as above, with size. Three pages of one tool with a 12 MiB description each
/// (every page under the 16 MiB message limit) are recorded twice (seen and accepted), 72 MiB,
/// over the 64 MiB the file reader takes: the same lock-out. The definitions are over the
/// 64 KiB a definition may have to be offered, so nothing needed them recorded whole.
#[test]
fn huge_definitions_do_not_damage_the_discovery_file() {
    let mut env = Env::new("bigdefs", 20, &two_servers("bigdefs", 3, 12 << 20));
    assert_eq!(env.echo("s", "good_echo", "hi"), "hi");
    let _ = env.call("s2", "a_big0", &json!({}), LIMIT);
    let size = std::fs::metadata(env.tools_json()).unwrap().len();
    println!("bigdefs: tools.json is {} MiB", size >> 20);
    let good = env
        .call("s", "good_echo", &json!({"text": "again"}), LIMIT)
        .1;
    assert_eq!(good["status"], "result", "{good}");
}

// ---------------------------------------------------------------------------------------
// state/tools.json.

/// Promise: sessions whose servers race to record different definitions (a pinned server
/// whose every process shows a new description) never corrupt the file or get a change
/// accepted: every call is refused, the file parses, and what is accepted is still what
/// discovery saw first.
#[test]
fn racing_sessions_never_corrupt_or_accept() {
    let body = format!(
        "[[tool]]\nname = \"a\"\nmcp = {}\npin = true\n\n[[grant]]\ntool = \"a_*\"\neffect = \"allow\"\n",
        attack("random", 0, 0)
    );
    let mut env = Env::new("race", 10, &body);
    let list = env.run(&["tools", "list"], LIMIT);
    assert_eq!(list.code(), Some(0), "{}", list.show());
    let file = env.tools_json();
    let accepted = || {
        let f: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let rec = f["servers"]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .clone();
        rec["accepted"][0]["description"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = accepted();
    env.start_serve();
    let cfg = env.config();
    let calls: Vec<_> = (0..6)
        .map(|i| {
            let cfg = cfg.clone();
            std::thread::spawn(move || {
                Command::new(BIN)
                    .args(["call", "--session", &format!("r{i}"), "--json", "a_echo"])
                    .arg(r#"{"text":"x"}"#)
                    .arg("--config")
                    .arg(cfg)
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for c in calls {
        let o = c.join().unwrap();
        let body: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(body["status"], "failed", "{body}");
        assert!(
            body["message"].as_str().unwrap().contains("refused"),
            "{body}"
        );
    }
    assert_eq!(accepted(), first);
    assert!(!env.state().join("tools.json.tmp").exists());
}

/// Promise: a `tools.json` damaged by hand is never silently replaced (which would accept
/// whatever the servers say next): downstream calls fail with the reason, `tools refresh`
/// and `tools accept --all` refuse, the file is left as it was; builtin tools still work.
#[test]
fn a_hand_damaged_discovery_file_is_never_replaced() {
    let body = format!(
        "[[tool]]\nname = \"list_dir\"\nbuiltin = \"list_dir\"\n\n\
         [[grant]]\ntool = \"list_dir\"\neffect = \"allow\"\n\n{}",
        two_servers("normal", 0, 0)
    );
    let mut env = Env::new("damaged", 10, &body);
    let list = env.run(&["tools", "list"], LIMIT);
    assert_eq!(list.code(), Some(0), "{}", list.show());
    let whole = std::fs::read(env.tools_json()).unwrap();
    let damaged = whole.get(..whole.len() / 2).unwrap().to_vec();
    std::fs::write(env.tools_json(), &damaged).unwrap();
    env.start_serve();
    let (message, _) = env.failed("s", "a_echo", &json!({"text": "x"}), LIMIT);
    assert!(message.contains("damaged"), "{message}");
    for args in [&["tools", "refresh"][..], &["tools", "accept", "--all"]] {
        let r = env.run(args, LIMIT);
        assert_ne!(r.code(), Some(0), "{args:?}: {}", r.show());
    }
    assert_eq!(std::fs::read(env.tools_json()).unwrap(), damaged);
    let (run, body) = env.call("s", "list_dir", &json!({"path": "/opt/servers"}), LIMIT);
    assert_eq!(body["status"], "result", "{}", run.show());
}

/// Promise: an operator accepts what they reviewed. `tools diff` shows a pinned tool's new
/// description (after `tools refresh` asked the server in a box with no session data); the
/// server then changes it again while running — which is never recorded — and `tools
/// accept NAME@FINGERPRINT`, as `diff` prints it, accepts exactly what the operator saw,
/// never what the running server says since. (A bare `NAME` accepts whatever is there when it runs, as `diff` and
/// `--help` say.)
#[test]
fn accept_takes_only_what_diff_showed() {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("attacks-accept-desc");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("desc.txt"), "v1").unwrap();
    let body = format!(
        "[[mount]]\nhost = {:?}\nat = \"/data/d\"\nclass = \"public\"\n\n\
         [[tool]]\nname = \"p\"\nmcp = {}\npin = true\n\n\
         [[grant]]\ntool = \"p_*\"\neffect = \"allow\"\n",
        d.display().to_string(),
        attack("swapfile", 0, 0)
    );
    let mut env = Env::new("accept", 10, &body);
    env.start_serve();
    assert_eq!(env.echo("s", "p_echo", "hi"), "hi");
    std::fs::write(d.join("desc.txt"), "v2 reviewed").unwrap();
    let c = env.ok("s", "p_stable", &json!({}));
    assert_eq!(c["content"][0]["text"], "stable");
    let (m, _) = env.failed("s", "p_echo", &json!({"text": "hi"}), LIMIT);
    assert!(m.contains("refused"), "{m}");
    // The running server's word is never recorded; the operator asks it again first.
    assert_eq!(env.run(&["tools", "refresh"], LIMIT).code(), Some(0));
    let diff = env.run(&["tools", "diff"], LIMIT);
    assert!(diff.stdout.contains("v2 reviewed"), "{}", diff.show());
    // The operator reads the diff; meanwhile the server changes again.
    std::fs::write(d.join("desc.txt"), "v3 never reviewed").unwrap();
    let c = env.ok("s", "p_stable", &json!({}));
    assert_eq!(c["content"][0]["text"], "stable");
    let exact = diff
        .stdout
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("accept exactly this: boxmaker tools accept ")
        })
        .unwrap_or_else(|| panic!("no fingerprint in {}", diff.show()))
        .to_string();
    // The running server's v3 was never recorded: accepting what the operator read accepts
    // exactly v2, and the running server, which now says v3, is still refused.
    let accept = env.run(&["tools", "accept", &exact], LIMIT);
    assert_eq!(accept.code(), Some(0), "{}", accept.show());
    let f: Value = serde_json::from_slice(&std::fs::read(env.tools_json()).unwrap()).unwrap();
    let rec = f["servers"].as_object().unwrap().values().next().unwrap();
    let accepted = rec["accepted"][0]["description"].as_str().unwrap();
    assert_eq!(
        accepted, "v2 reviewed",
        "accepted a description nobody reviewed"
    );
    assert!(!f.to_string().contains("v3 never reviewed"), "{f}");
    let (m, _) = env.failed("s", "p_echo", &json!({"text": "hi"}), LIMIT);
    assert!(m.contains("refused"), "{m}");
    // Once asked again, v3 is what diff shows, and the old fingerprint accepts nothing.
    assert_eq!(env.run(&["tools", "refresh"], LIMIT).code(), Some(0));
    let stale = env.run(&["tools", "accept", &exact], LIMIT);
    assert_ne!(stale.code(), Some(0), "a stale fingerprint was accepted");
}

/// Promise (docs/spec.md §5, "Bounds"): a call's server is there within one `[box]
/// timeout_seconds` of the call's arrival, or the call fails — however many calls of the
/// session wait on the same server. A server that never finishes `initialize` made the
/// calls queued behind the first each wait a start of their own in turn (3, 6, 9 s).
#[test]
fn calls_queued_behind_a_server_that_never_starts_fail_within_one_timeout() {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("attacks-slowinit");
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let body = format!(
        "[[mount]]\nhost = {:?}\nat = \"/data/s\"\nclass = \"public\"\n\n\
         [[tool]]\nname = \"a\"\nmcp = {}\nclass = \"internal\"\n\n\
         [[grant]]\ntool = \"a_*\"\neffect = \"allow\"\n",
        d.display().to_string(),
        attack("slowinit", 60, 0)
    );
    let mut env = Env::new("slowinit", 3, &body);
    env.start_serve();
    // Discovered and started while it answers at once.
    assert_eq!(env.echo("s", "a_echo", "warm"), "warm");
    std::fs::write(d.join("slow-init"), "").unwrap();
    // Three calls at once in a new session: each needs the server started anew.
    let started = Instant::now();
    let calls: Vec<_> = (0..3)
        .map(|i| {
            Command::new(BIN)
                .args(["call", "--config"])
                .arg(env.config())
                .args(["--session", "t", "--json", "a_echo"])
                .arg(json!({"text": format!("q{i}")}).to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in calls {
        let out = c.wait_with_output().unwrap();
        let took = started.elapsed();
        let body: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        assert_eq!(body["status"], "failed", "{body}");
        let m = body["message"].as_str().unwrap();
        assert!(
            m.contains("did not initialize within") || m.contains("was not free within"),
            "{m}"
        );
        // One timeout (3 s) and the time to start the commands; never two.
        assert!(took < Duration::from_millis(5500), "took {took:?}: {m}");
    }
    std::fs::remove_file(d.join("slow-init")).unwrap();
    assert_eq!(env.echo("t", "a_echo", "after"), "after");
}

// ---------------------------------------------------------------------------------------
// A hostile agent's arguments.

/// Promise: arguments near and over a frame never break the front or the runner: a string
/// of quotes whose escaping doubles it past a frame is refused cleanly, a 1 MB argument that
/// fits reaches the server and comes back whole.
#[test]
fn arguments_of_a_frame_are_refused_or_cut_cleanly() {
    let env = Env::new("bigargs", 10, &two_servers("normal", 0, 0));
    let mut mcp = start_mcp(&env, "args");
    let quotes = mcp.call("a_echo", json!({"text": "\"".repeat(500_000)}));
    assert!(
        quotes.get("error").is_some() || quotes["result"]["isError"] == true,
        "{}",
        quotes.to_string().chars().take(300).collect::<String>()
    );
    let over = mcp.call("a_echo", json!({"text": "o".repeat(MAX_FRAME + 10)}));
    assert!(over.get("error").is_some(), "not refused");
    // 800 kB of arguments, 900 kB once escaped again in the request's envelope.
    let sent = "\u{1}".repeat(100_000) + &"f".repeat(200_000);
    let fits = mcp.call("a_echo", json!({ "text": sent }));
    assert_eq!(
        fits["result"]["isError"],
        false,
        "{}",
        fits.to_string().chars().take(300).collect::<String>()
    );
    assert_eq!(text_of(&fits), sent);
    assert_eq!(
        text_of(&mcp.call("a_echo", json!({"text": "alive"}))),
        "alive"
    );
}
