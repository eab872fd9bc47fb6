//! Issue 11, a newcomer's first hour, driven through the real binary the way the newcomer
//! did: a state directory of 200+ bytes for every command, two MCP clients on one config,
//! a call that can never run, the approval hint from another directory, a missing config,
//! a config that cannot work caught by `check` and `doctor`, one vocabulary for unknown and
//! denied tools, local errors not blamed on the gate, and times a person reads.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{stderr, stdout};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
const WAIT: Duration = Duration::from_secs(60);

/// A fresh directory for one test, whose path is at least `len` bytes long (in components of
/// at most 60 bytes), wherever the project is cloned.
fn long_dir(name: &str, len: usize) -> PathBuf {
    let mut dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("newcomer")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let mut i = 0;
    while dir.as_os_str().len() < len {
        i += 1;
        dir.push(format!("home-of-a-person-with-a-long-name-{i:02}"));
    }
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `boxmaker init DIR`, plus `extra` appended to the config it wrote (and trusted again, as
/// the person does after an edit: docs/spec.md §6, "Whose config").
fn init(dir: &Path, extra: &str) -> PathBuf {
    let o = Command::new(BIN).arg("init").arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let config = dir.join("boxmaker.toml");
    if !extra.is_empty() {
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(extra);
        edit(&config, &text);
    }
    config
}

/// The person's edit of their config: the new text written, then trusted (`boxmaker
/// trust`), as every command uses a config only once trusted (docs/spec.md §6).
#[track_caller]
fn edit(config: &Path, text: &str) {
    std::fs::write(config, text).unwrap();
    assert!(
        testkit::trust(BIN, config),
        "boxmaker trust --config {}",
        config.display()
    );
}

fn run(config: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[track_caller]
fn ok(config: &Path, args: &[&str]) -> String {
    let o = run(config, args);
    assert!(
        o.status.success(),
        "{args:?} exited {:?}: {}{}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// A `boxmaker call` that waits for approval: started, and its stderr read up to the line
/// that names the approval. Returns the child and that line.
fn call_pending(config: &Path, args: &str) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(["call", "--session", "s1", "run", args, "--config"])
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(WAIT)
        .unwrap_or_else(|e| panic!("no pending line from call: {e}"));
    assert!(line.starts_with("pending approval ap-"), "{line}");
    (child, line)
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "a child did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The approval id in a `pending approval ap-… (…)` line.
fn approval_of(line: &str) -> String {
    line.split_whitespace().nth(2).unwrap().to_string()
}

/// Pids of `boxmaker __gate` processes for `config`.
fn gate_pids(config: &Path) -> Vec<u32> {
    let want = config.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains("__gate") && c.contains(&want)
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// A raw MCP client over stdio.

struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    next: u64,
}

impl Mcp {
    fn start(config: &Path) -> Self {
        Self::start_env(config, &[])
    }

    fn start_env(config: &Path, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(BIN)
            .args(["mcp", "--config"])
            .arg(config)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut m = Self {
            child,
            stdin,
            lines,
            next: 1,
        };
        let init = m.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "newcomer", "version": "0"}}),
        );
        assert!(init.get("result").is_some(), "{init}");
        m.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        m
    }

    fn send(&mut self, v: &Value) {
        let w = self.stdin.as_mut().unwrap();
        writeln!(w, "{v}").unwrap();
        w.flush().unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            if v.get("id") == Some(&json!(id)) {
                return v;
            }
        }
    }

    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Closes stdin (the client goes away) and waits for the process to end.
    fn close(mut self) {
        drop(self.stdin.take());
        wait_exit(&mut self.child);
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text_of(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
        .to_string()
}

// ---------------------------------------------------------------------------------------

#[test]
fn every_command_works_with_a_state_directory_of_200_bytes() {
    let dir = long_dir("every-command", 200);
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(dir.join("notes/plan.txt"), "Q3 plan\n").unwrap();
    let config = init(
        &dir,
        "\n[[mount]]\nhost = \"notes\"\nat = \"/data/notes\"\nclass = \"confidential\"\n",
    );
    let state = dir.join(".boxmaker");
    assert!(
        state.join("control.sock").as_os_str().len() > 200,
        "the test must exercise a long path"
    );

    assert_eq!(
        ok(
            &config,
            &["check", "--session", "s1", "--tool", "read_file"]
        ),
        "allow\n"
    );
    ok(&config, &["doctor"]);
    ok(
        &config,
        &[
            "call",
            "--session",
            "s1",
            "write_file",
            r#"{"path":"a.txt","content":"hi"}"#,
        ],
    );
    assert_eq!(
        ok(
            &config,
            &[
                "call",
                "--session",
                "s1",
                "read_file",
                r#"{"path":"a.txt"}"#
            ]
        ),
        "hi\n"
    );
    // An approval, decided from another process, then a refusal.
    let (mut held, line) = call_pending(&config, r#"{"argv":["true"]}"#);
    let id = approval_of(&line);
    assert!(ok(&config, &["approvals"]).contains(&id));
    ok(&config, &["approve", &id]);
    assert!(wait_exit(&mut held).success());
    let (mut held, line) = call_pending(&config, r#"{"argv":["false"]}"#);
    ok(&config, &["refuse", &approval_of(&line)]);
    assert_eq!(wait_exit(&mut held).code(), Some(3));

    assert!(ok(&config, &["sessions"]).contains("s1"));
    ok(&config, &["grants"]);
    ok(&config, &["audit", "tail"]);
    ok(&config, &["audit", "verify"]);
    assert!(ok(&config, &["tools", "list"]).contains("no downstream tools"));
    assert!(ok(&config, &["tools", "diff"]).contains("no changes"));
    assert!(ok(&config, &["box", "show", "--session", "s1"]).contains("/data/notes"));
    ok(&config, &["sessions", "reset", "s1"]);

    // MCP over stdio.
    let mut m = Mcp::start(&config);
    let list = m.call("list_dir", json!({"path": "/work"}));
    assert_eq!(list["result"]["isError"], json!(false), "{list}");
    m.close();

    // serve, and a call through it.
    let mut serve = testkit::quiet_serve(BIN, &config);
    let deadline = Instant::now() + WAIT;
    loop {
        let o = run(&config, &["sessions", "--json"]);
        if o.status.success() && gate_pids(&config).len() == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "serve never served");
        std::thread::sleep(Duration::from_millis(100));
    }
    ok(
        &config,
        &[
            "call",
            "--session",
            "s2",
            "read_file",
            r#"{"path":"/data/notes/plan.txt"}"#,
        ],
    );
    let _ = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status();
    assert!(wait_exit(&mut serve).success());

    // demo, with its throw-away state directory under the same long path.
    let o = Command::new(BIN)
        .arg("demo")
        .env("TMPDIR", &dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
}

#[test]
fn two_mcp_clients_on_one_config_never_strand_each_other() {
    let dir = long_dir("two-clients", 0);
    let config = init(&dir, "");
    let mut a = Mcp::start(&config);
    let mut b = Mcp::start(&config);
    for m in [&mut a, &mut b] {
        let r = m.call("list_dir", json!({"path": "/work"}));
        assert_eq!(r["result"]["isError"], json!(false), "{r}");
    }
    assert_eq!(
        gate_pids(&config).len(),
        1,
        "one gate for the state directory"
    );
    // The client that started the gate goes away: the other one keeps working.
    a.close();
    std::thread::sleep(Duration::from_millis(500));
    let r = b.call("list_dir", json!({"path": "/work"}));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    // Even if the gate itself dies, the next call finds (starts) one. (Once it is dead: a
    // call racing the kill may reach the dying gate and fail, which is right — it cannot
    // know whether the call ran.)
    let killed = gate_pids(&config);
    for pid in &killed {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    // Dead means every thread gone: a killed process's leader shows `Z` while its other
    // threads still exit, and its sockets close only with the last of them (until then a
    // connection to its listener, or a request on a connection the front kept, is reset).
    let deadline = Instant::now() + Duration::from_secs(10);
    while killed.iter().any(|p| {
        let threads = std::fs::read_dir(format!("/proc/{p}/task")).map_or(0, |d| d.count());
        let zombie = std::fs::read_to_string(format!("/proc/{p}/status"))
            .unwrap_or_default()
            .contains("State:\tZ");
        threads > 1 || (threads == 1 && !zombie)
    }) {
        assert!(Instant::now() < deadline, "the gate outlived SIGKILL");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A call racing the gate's death is answered "the gate connection failed: … reset by
    // peer": it must say so, never hang, and the call after it must find a new gate.
    let mut r = b.call("list_dir", json!({"path": "/work"}));
    if r["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("the gate connection failed"))
    {
        r = b.call("list_dir", json!({"path": "/work"}));
    }
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    // When the last client is gone, so is the gate (it lingers a few seconds).
    b.close();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !gate_pids(&config).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the gate outlived its last client"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_gate_started_on_an_older_config_is_replaced_by_the_next_client() {
    let dir = long_dir("config-changed", 0);
    let config = init(&dir, "");
    let mut m = Mcp::start(&config);
    let r = m.call("list_dir", json!({"path": "/work"}));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    // The person edits the config, and says it is theirs (`boxmaker trust`): `run` is now
    // allowed without asking.
    let text = std::fs::read_to_string(&config).unwrap();
    edit(
        &config,
        &text.replace(
            "effect = \"ask\"             # a person approves every command before it runs",
            "effect = \"allow\"",
        ),
    );
    // A `call` now decides by the new config, not by the gate the MCP client keeps.
    let o = run(
        &config,
        &[
            "call",
            "--session",
            "s1",
            "run",
            r#"{"argv":["echo","new"]}"#,
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("new"), "{}", stdout(&o));
    // And the MCP client is not stranded: its next call reaches the new gate.
    let r = m.call("list_dir", json!({"path": "/work"}));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
}

#[test]
fn a_call_that_can_never_run_is_refused_before_anyone_is_asked() {
    let dir = long_dir("bad-arguments", 0);
    let config = init(&dir, "");
    let start = Instant::now();
    let o = run(
        &config,
        &["call", "--session", "s1", "run", r#"{"command":"ls"}"#],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("unknown field `command`, expected one of `argv`, `stdin`, `timeout`"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("pending approval"), "{}", stderr(&o));
    assert!(start.elapsed() < Duration::from_secs(20));
    let pending: Value =
        serde_json::from_str(&ok(&config, &["approvals", "--all", "--json"])).unwrap();
    assert_eq!(pending["body"]["items"], json!([]), "{pending}");
    // Over MCP too, for a builtin: a failed result at once, not a wait for a person.
    let mut m = Mcp::start(&config);
    let r = m.call("run", json!({"command": "ls"}));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(text_of(&r).contains("unknown field `command`"), "{r}");
    // The guide and the comments `init` writes list the arguments.
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(
        written.contains(r#"run        {"argv": ["ls", "-l"]"#),
        "{written}"
    );
    let guide = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/guide/src/clients.md"
    ))
    .unwrap();
    assert!(
        guide.contains(r#"{"argv": ["ls", "-l"]"#),
        "the guide lists run's arguments"
    );
}

#[test]
fn the_approval_hint_is_a_command_that_works_from_any_directory() {
    let dir = long_dir("approval-hint", 0);
    let config = init(&dir, "");
    let (mut held, line) = call_pending(&config, r#"{"argv":["echo","approved"]}"#);
    let command = line
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in {line}"));
    // The binary by its absolute path: `boxmaker` alone need not be on PATH (issue 21).
    assert!(
        command.starts_with(&format!("{} approve ap-", bin_path())),
        "{line}"
    );
    assert!(
        command.contains(&format!("--config {}", config.display())),
        "{line}"
    );
    // Typed as shown, from another directory with an empty PATH (the shell is not needed:
    // the paths have no characters a shell would treat specially).
    let words: Vec<&str> = command.split_whitespace().collect();
    let o = Command::new(words[0])
        .args(&words[1..])
        .current_dir("/")
        .env("PATH", "")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(wait_exit(&mut held).success());
    let out = std::io::read_to_string(held.stdout.take().unwrap()).unwrap();
    let out: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out["stdout"], "approved\n");
}

#[test]
fn a_missing_config_says_so_and_names_init_and_config() {
    let dir = long_dir("no-config", 0);
    let o = Command::new(BIN)
        .args(["call", "--session", "s1", "read_file", "{}"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "no config file at {}",
            dir.join("boxmaker.toml").display()
        )),
        "{err}"
    );
    assert!(
        err.contains("boxmaker init") && err.contains("--config"),
        "{err}"
    );
}

#[test]
fn check_and_doctor_catch_a_missing_mount_and_a_grant_for_no_tool() {
    let dir = long_dir("lint", 0);
    let config = init(
        &dir,
        "\n[[mount]]\nhost = \"not-there\"\nat = \"/data/x\"\n\n[[grant]]\ntool = \"raed_file\"\neffect = \"allow\"\n",
    );
    let o = run(&config, &["doctor"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("not-there"), "{}", stdout(&o));
    assert!(stdout(&o).contains("does not exist"), "{}", stdout(&o));
    let o = run(
        &config,
        &["check", "--session", "s1", "--tool", "read_file"],
    );
    assert!(o.status.success());
    assert_eq!(stdout(&o), "allow\n");
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("did you mean \"read_file\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn unknown_and_denied_tools_are_said_the_same_way_everywhere() {
    let dir = long_dir("vocabulary", 0);
    let config = init(
        &dir,
        "\n[[tool]]\nname = \"erase\"\nbuiltin = \"write_file\"\n\n[[grant]]\ntool = \"erase\"\neffect = \"deny\"\n",
    );
    let mut m = Mcp::start(&config);
    // Unknown: boxmaker has no such tool.
    let r = m.call("nope", json!({}));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tool: nope"),
        "{r}"
    );
    let o = run(&config, &["call", "--session", "s1", "nope", "{}"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown tool \"nope\""),
        "{}",
        stderr(&o)
    );
    // Denied: not listed, and calling it anyway is a denial with the same sentence.
    let list = m.request("tools/list", json!({}));
    assert!(!list.to_string().contains("\"erase\""), "{list}");
    let r = m.call("erase", json!({"path": "a", "content": ""}));
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    let sentence = text_of(&r);
    assert!(
        sentence.starts_with("denied: denied_by_grant — "),
        "{sentence}"
    );
    let o = run(
        &config,
        &[
            "call",
            "--session",
            "s1",
            "erase",
            r#"{"path":"a","content":""}"#,
        ],
    );
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(stderr(&o).trim_end(), sentence);
}

#[test]
fn a_local_error_is_not_blamed_on_the_gate() {
    let dir = long_dir("local-error", 0);
    let config = init(&dir, "");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = run(&config, &["mcp", "--http", &addr]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(!err.contains("the gate refused"), "{err}");
    assert!(err.contains(&addr), "{err}");
}

#[test]
fn times_a_person_reads_are_local_and_relative_and_json_keeps_seconds() {
    let dir = long_dir("times", 0);
    let config = init(&dir, "");
    let (mut held, line) = call_pending(&config, r#"{"argv":["true"]}"#);
    assert!(line.contains("(in "), "{line}");
    let text = ok(&config, &["approvals"]);
    assert!(
        text.contains("expires 20") && text.contains("(in "),
        "{text}"
    );
    assert!(text.contains("ago)") || text.contains("(now)"), "{text}");
    let json: Value = serde_json::from_str(&ok(&config, &["approvals", "--json"])).unwrap();
    assert!(json["body"]["items"][0]["expires"].is_u64(), "{json}");
    ok(&config, &["refuse", &approval_of(&line)]);
    wait_exit(&mut held);
    ok(
        &config,
        &["call", "--session", "s1", "list_dir", r#"{"path":"/work"}"#],
    );
    let sessions = ok(&config, &["sessions"]);
    assert!(
        sessions.contains("s1") && (sessions.contains(" ago)") || sessions.contains("(now)")),
        "{sessions}"
    );
}

#[test]
fn a_downstream_command_the_box_cannot_see_says_so_and_tools_list_fails() {
    let dir = long_dir("invisible-server", 0);
    let config = init(
        &dir,
        "\n[[tool]]\nname = \"srv\"\nmcp = [\"/opt/boxmaker-test-nothing/bin/srv\"]\n\n\
         [[tool]]\nname = \"fetcher\"\nmcp = [\"npx\", \"-y\", \"boxmaker-test-no-such-package\"]\n",
    );
    let text = std::fs::read_to_string(&config).unwrap();
    edit(
        &config,
        &text.replace("timeout_seconds = 300", "timeout_seconds = 5"),
    );
    let o = run(&config, &["tools", "list"]);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("/opt/boxmaker-test-nothing/bin/srv is not inside the box"),
        "{err}"
    );
    assert!(err.contains("/work"), "it says what the box sees: {err}");
    assert!(!err.contains("box setup failed: box setup failed"), "{err}");
    assert!(err.contains("could not be asked"), "{err}");
    if which("npx") {
        assert!(
            err.contains("network = true"),
            "the npx server gets a network hint: {err}"
        );
    }
}

fn which(program: &str) -> bool {
    ["/usr/local/bin", "/usr/bin", "/bin"]
        .iter()
        .any(|d| Path::new(d).join(program).exists())
}

#[test]
fn the_guides_inspector_command_runs_as_written() {
    let guide = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/guide/src/clients.md"
    ))
    .unwrap();
    // The version the guide names is the one the tests pin (issue 21: an unversioned
    // `npx` fetches 0.15 on Node 20, whose arguments differ).
    let pinned: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/node/package.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let version = pinned["dependencies"]["@modelcontextprotocol/inspector"]
        .as_str()
        .unwrap();
    let line = guide
        .lines()
        .find(|l| l.starts_with("npx @modelcontextprotocol/inspector"))
        .expect("the guide shows the inspector's command line");
    assert!(
        line.starts_with(&format!(
            "npx @modelcontextprotocol/inspector@{version} --cli"
        )),
        "the guide's inspector line names another version than tests/node pins ({version}): {line}"
    );
    let dir = long_dir("guide-inspector", 0);
    let config = init(&dir, "");
    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/node");
    let inspector = node.join("node_modules/.bin/inspector");
    assert!(
        inspector.exists(),
        "run `make deps` (no {})",
        inspector.display()
    );
    // The guide's words, with the paths put in.
    let words: Vec<String> = line
        .split_whitespace()
        .skip(2)
        .map(|w| match w {
            "/path/to/boxmaker" => BIN.to_string(),
            "/path/to/boxmaker.toml" => config.display().to_string(),
            w => w.to_string(),
        })
        .collect();
    let o = Command::new(&inspector)
        .args(&words)
        .current_dir(&node)
        .env("MCP_CATALOG_PATH", dir.join("inspector-catalog.json"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("read_file"), "{}", stdout(&o));
}

// ---------------------------------------------------------------------------------------
// Issue 21: the two commands on a stock machine.

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Programs that write their name and arguments to `log` and fail, named `names`, in `dir`.
fn tattletales(dir: &Path, log: &Path, names: &[&str]) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    for name in names {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "#!/bin/sh\necho \"{name} $*\" >> '{}'\nexit 1\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Modification times of every stamp and lock file `make deps` keeps.
fn deps_stamps(root: &Path) -> Vec<(PathBuf, std::time::SystemTime)> {
    [
        "tests/node/package-lock.json",
        "tests/node-proxy/package-lock.json",
        "tests/node-conformance/package-lock.json",
        "tests/node-claude/package-lock.json",
        "tests/node/node_modules/.package-lock.json",
        "tests/node-proxy/node_modules/.package-lock.json",
        "tests/node-conformance/node_modules/.package-lock.json",
        "tests/node-claude/node_modules/.package-lock.json",
        "tests/py/venv",
        "tests/py/client-venv",
        "bench/agentdojo/venv",
        "tests/mdbook/bin/mdbook",
    ]
    .iter()
    .map(|f| {
        let path = root.join(f);
        let modified = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .unwrap_or_else(|e| panic!("run `make deps` first: {}: {e}", path.display()));
        (path, modified)
    })
    .collect()
}

#[test]
fn make_deps_again_installs_nothing_rewrites_nothing_and_never_runs_the_path_python() {
    let root = repo_root();
    let dir = long_dir("make-deps", 0);
    let log = dir.join("called.log");
    // The interpreter on PATH (a pyenv's, or Debian's, which refuses `pip install`) and
    // every installer: none may run when everything is in place.
    let shims = dir.join("bin");
    tattletales(
        &shims,
        &log,
        &[
            "python3", "python", "pip", "pip3", "npm", "npx", "apt-get", "sudo", "cargo",
        ],
    );
    let git_status = || {
        let o = Command::new("git")
            .args(["status", "--porcelain", "--untracked-files=all"])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let before = (git_status(), deps_stamps(&root));
    let path = format!(
        "{}:{}",
        shims.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("make")
        .args(["--no-print-directory", "-s", "-C"])
        .arg(&root)
        .arg("deps")
        .arg(format!("SYSTEM_PYTHON={}", shims.join("python3").display()))
        .arg(format!("NPM={}", shims.join("npm").display()))
        .arg(format!("APT_GET={}", shims.join("apt-get").display()))
        .arg(format!("CARGO={}", shims.join("cargo").display()))
        .env("PATH", path)
        .env_remove("MAKEFLAGS")
        .output()
        .unwrap();
    let called = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        o.status.success() && called.is_empty(),
        "a `make deps` with everything installed ran {called:?}: {}{}",
        stdout(&o),
        stderr(&o)
    );
    assert_eq!(stdout(&o), "deps: ok\n", "{}", stderr(&o));
    assert_eq!((git_status(), deps_stamps(&root)), before);
}

#[test]
fn the_python_clients_run_from_the_projects_own_virtualenv() {
    let python = repo_root().join("tests/py/client-venv/bin/python3");
    let o = Command::new(&python)
        .args([
            "-c",
            "import sys, mcp.client.stdio, selenium\n\
             import importlib.metadata as m\n\
             print(sys.prefix != sys.base_prefix, m.version('mcp'), m.version('selenium'))",
        ])
        .output()
        .unwrap_or_else(|e| panic!("run `make deps`: {}: {e}", python.display()));
    assert!(o.status.success(), "{}", stderr(&o));
    let makefile = std::fs::read_to_string(repo_root().join("Makefile")).unwrap();
    let pinned = |name: &str| {
        let reqs =
            std::fs::read_to_string(repo_root().join("tests/py/client-requirements.txt")).unwrap();
        reqs.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}==")))
            .unwrap_or_else(|| panic!("{name} is not pinned"))
            .to_string()
    };
    assert_eq!(
        stdout(&o),
        format!("True {} {}\n", pinned("mcp"), pinned("selenium"))
    );
    // Nothing in `make deps` installs with an interpreter's own pip: only a virtualenv's.
    for line in makefile.lines().filter(|l| l.contains("pip install")) {
        assert!(line.contains("$(1)/bin/python3 -m pip install"), "{line}");
    }
}

/// `tests/sysdeps.sh` in a mount namespace where `hidden` look absent (each covered by
/// /dev/null, which is not executable), as `uid`, with `apt_get` as the installer.
fn sysdeps_without(hidden: &[&str], uid: u32, apt_get: &Path) -> Output {
    let mut script = String::from("mount --make-rprivate / || exit 99\n");
    for h in hidden {
        script.push_str(&format!("mount --bind /dev/null {h} || exit 99\n"));
    }
    script.push_str(&format!(
        "exec setpriv --reuid={uid} --regid={uid} --clear-groups env APT_GET={} sh {}\n",
        apt_get.display(),
        repo_root().join("tests/sysdeps.sh").display()
    ));
    Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn sysdeps_installs_what_is_missing_as_root_and_prints_the_exact_command_otherwise() {
    assert!(
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| stdout(&o).trim() == "0"),
        "this test needs root (CI runs as root) to hide packages in a mount namespace"
    );
    let dir = long_dir("sysdeps", 0);
    let log = dir.join("apt.log");
    let apt = dir.join("apt-get");
    std::fs::write(
        &apt,
        format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&apt, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hidden = ["/usr/bin/chromium", "/usr/bin/chromedriver"];
    for h in hidden {
        assert!(Path::new(h).exists(), "{h} is missing: run `make sysdeps`");
    }

    // Everything present: nothing to do, as anyone.
    let o = sysdeps_without(&[], 65534, &apt);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o) + &stderr(&o), "");

    // Root: apt-get installs exactly what is missing.
    let o = sysdeps_without(&hidden, 0, &apt);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "update -qq\ninstall -y -qq chromium chromium-driver\n"
    );

    // Anyone else: the exact command, and a failure, so `make deps` stops there.
    std::fs::remove_file(&log).unwrap();
    let o = sysdeps_without(&hidden, 65534, &apt);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("\n    sudo apt-get install -y chromium chromium-driver\n"),
        "{}",
        stderr(&o)
    );
    assert!(!log.exists(), "apt-get ran as a user");
}

// ---------------------------------------------------------------------------------------
// Issue 21 item 11: a reader that goes away (`boxmaker sessions | head -1`).

/// Runs `boxmaker ARGS` with stdout (and, with `both`, stderr too) the write end of a pipe
/// whose read end is already closed, as `| head -1` leaves it once head has exited. Returns
/// the exit status and what went to stderr (nothing, with `both`).
fn into_a_closed_pipe(args: &[&str], both: bool) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut cmd = Command::new(BIN);
    cmd.args(args).stdin(Stdio::null());
    if both {
        cmd.stderr(writer.try_clone().unwrap());
    } else {
        cmd.stderr(Stdio::piped());
    }
    let mut child = cmd.stdout(writer).spawn().unwrap();
    let err = child.stderr.take();
    let reading = std::thread::spawn(move || err.map(std::io::read_to_string));
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} went on writing into a closed pipe");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = reading
        .join()
        .unwrap()
        .transpose()
        .unwrap()
        .unwrap_or_default();
    (status.code(), err)
}

#[test]
fn no_command_panics_when_its_reader_goes_away_and_each_exits_141() {
    let dir = long_dir("broken-pipe", 0);
    let config = init(&dir, "");
    let c = config.to_str().unwrap();
    ok(
        &config,
        &[
            "call",
            "--session",
            "s1",
            "write_file",
            r#"{"path":"a.txt","content":"hi"}"#,
        ],
    );
    let fresh = dir.join("fresh");
    let fresh = fresh.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec![],
        vec!["init", fresh],
        vec![
            "check",
            "--session",
            "s1",
            "--tool",
            "read_file",
            "--config",
            c,
        ],
        vec![
            "check",
            "--session",
            "s1",
            "--tool",
            "run",
            "--explain",
            "--config",
            c,
        ],
        vec!["doctor", "--config", c],
        vec!["sessions", "--config", c],
        vec!["sessions", "--json", "--config", c],
        vec!["grants", "--config", c],
        vec!["approvals", "--all", "--config", c],
        vec!["approvals", "--watch", "--config", c],
        vec!["audit", "tail", "--config", c],
        vec!["audit", "verify", "--config", c],
        vec!["tools", "list", "--config", c],
        vec!["tools", "diff", "--config", c],
        vec!["box", "show", "--session", "s1", "--config", c],
        vec![
            "call",
            "--session",
            "s1",
            "read_file",
            r#"{"path":"a.txt"}"#,
            "--config",
            c,
        ],
        vec!["demo"],
    ];
    for args in &commands {
        let (code, err) = into_a_closed_pipe(args, false);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(code, Some(141), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}: a reader gone is no error to report");
        // `2>&1 | head -1`: nowhere to say anything, and still no panic (101).
        if args.first() == Some(&"init") {
            std::fs::remove_dir_all(fresh).unwrap();
        }
        let (code, _) = into_a_closed_pipe(args, true);
        assert_eq!(code, Some(141), "{args:?} with stderr gone too");
        if args.first() == Some(&"init") {
            std::fs::remove_dir_all(fresh).unwrap();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Issue 21 item 13: every answer carries a label, failures and denials too.

#[test]
fn failed_and_denied_answers_carry_a_label_in_meta_like_results() {
    let dir = long_dir("labels-on-failures", 0);
    let config = init(
        &dir,
        "\n[[tool]]\nname = \"peek\"\nbuiltin = \"read_file\"\nclass = \"confidential\"\n\
         untrusted = true\n\n[[grant]]\ntool = \"peek\"\neffect = \"allow\"\n\n\
         [[tool]]\nname = \"erase\"\nbuiltin = \"write_file\"\n\n\
         [[grant]]\ntool = \"erase\"\neffect = \"deny\"\n",
    );
    let mut m = Mcp::start(&config);
    let label = |r: &Value| r["result"]["_meta"]["boxmaker"].clone();

    let ok = m.call("list_dir", json!({"path": "/work"}));
    assert_eq!(ok["result"]["isError"], json!(false), "{ok}");
    assert_eq!(
        label(&ok),
        json!({"class": "internal", "untrusted": false, "truncated": false}),
        "{ok}"
    );
    // A failure is labelled as the gate raised the session by: the tool's floor (the
    // default config's read_file is `internal`).
    let failed = m.call("read_file", json!({"path": "no-such-file"}));
    assert_eq!(failed["result"]["isError"], json!(true), "{failed}");
    assert!(text_of(&failed).starts_with("failed: "), "{failed}");
    assert_eq!(
        label(&failed),
        json!({"class": "internal", "untrusted": false, "truncated": false}),
        "{failed}"
    );
    let failed = m.call("peek", json!({"path": "no-such-file"}));
    assert!(text_of(&failed).starts_with("failed: "), "{failed}");
    assert_eq!(
        label(&failed),
        json!({"class": "confidential", "untrusted": true, "truncated": false}),
        "{failed}"
    );
    // A denial ran nothing: boxmaker's own sentence, public and trusted.
    let denied = m.call("erase", json!({"path": "a", "content": ""}));
    assert!(text_of(&denied).starts_with("denied: "), "{denied}");
    assert_eq!(
        label(&denied),
        json!({"class": "public", "untrusted": false, "truncated": false}),
        "{denied}"
    );
    // A `run` the gate refuses for its arguments ran nothing either, yet is a `failed`:
    // labelled at least the floor, never left without a label.
    let refused = m.call("run", json!({"command": "ls"}));
    assert!(text_of(&refused).starts_with("failed: "), "{refused}");
    assert!(label(&refused)["class"].is_string(), "{refused}");
    m.close();
}

// ---------------------------------------------------------------------------------------
// Issue 21 item 14: a look changes nothing.

/// Every path under `dir` with its type, mode, size and modification time.
fn tree(dir: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(p) = todo.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        out.push(format!(
            "{} {:o} {} {}.{}",
            p.display(),
            m.mode(),
            if m.is_dir() { 0 } else { m.size() },
            m.mtime(),
            m.mtime_nsec()
        ));
        if m.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                todo.push(e.unwrap().path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn box_show_changes_nothing_on_disk() {
    let dir = long_dir("box-show-looks", 0);
    let config = init(&dir, "");
    let looks: [&[&str]; 4] = [
        &["box", "show"],
        &["box", "show", "--session", "s1"],
        &["box", "show", "--session", "s1", "--tool", "run"],
        &["box", "show", "--session", "s1", "--network"],
    ];
    // Before anything ever ran: no state directory is made, no workspace.
    let before = tree(&dir);
    for look in looks {
        let shown = ok(&config, look);
        assert!(shown.contains("/work "), "{shown}");
        assert_eq!(tree(&dir), before, "{look:?} changed the disk");
    }
    assert!(!dir.join(".boxmaker").exists());
    // With a session that has a workspace (and a gate that has gone): not even its time.
    ok(
        &config,
        &[
            "call",
            "--session",
            "s1",
            "write_file",
            r#"{"path":"a.txt","content":"hi"}"#,
        ],
    );
    let deadline = Instant::now() + WAIT;
    while !gate_pids(&config).is_empty() {
        assert!(Instant::now() < deadline, "the on-demand gate did not end");
        std::thread::sleep(Duration::from_millis(100));
    }
    let before = tree(&dir);
    for look in looks {
        ok(&config, look);
        assert_eq!(tree(&dir), before, "{look:?} changed the disk");
    }
}

// ---------------------------------------------------------------------------------------
// Issue 21 item 10: `check` says what the call would, bad arguments included.

#[test]
fn check_says_what_the_real_call_would_for_bad_arguments() {
    let dir = long_dir("check-arguments", 0);
    let servers = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/servers")
        .canonicalize()
        .unwrap();
    let config = init(
        &dir,
        &format!(
            "\n[[mount]]\nhost = \"{}\"\nat = \"/opt/servers\"\nclass = \"public\"\n\n\
             [[tool]]\nname = \"h\"\nmcp = [\"/usr/bin/python3\", \"/opt/servers/hostile_server.py\", \"well\"]\n\n\
             [[grant]]\ntool = \"h_*\"\neffect = \"ask\"\n\n\
             [[tool]]\nname = \"erase\"\nbuiltin = \"write_file\"\n\n\
             [[grant]]\ntool = \"erase\"\neffect = \"deny\"\n",
            servers.display()
        ),
    );
    let check = |tool: &str, arguments: &str, explain: bool| {
        let mut a = vec![
            "check",
            "--session",
            "s1",
            "--tool",
            tool,
            "--arguments",
            arguments,
        ];
        if explain {
            a.push("--explain");
        }
        ok(&config, &a)
    };
    // A builtin: the grant says ask, but the call fails at once, and `check` says so in the
    // words `call` prints.
    let said = check("run", r#"{"argv":"ls"}"#, false);
    let real = run(
        &config,
        &["call", "--session", "s1", "run", r#"{"argv":"ls"}"#],
    );
    assert_eq!(real.status.code(), Some(1), "{}", stderr(&real));
    assert!(
        stderr(&real).starts_with("failed: run: bad arguments"),
        "{}",
        stderr(&real)
    );
    assert_eq!(said, stderr(&real));
    let explained = check("run", r#"{"argv":"ls"}"#, true);
    assert!(explained.starts_with(&said), "{explained}");
    assert!(
        explained.contains("the grants say ask, but these arguments can never run"),
        "{explained}"
    );
    // Good arguments, and a denial (the gate denies before it looks at arguments): as before.
    assert_eq!(check("run", r#"{"argv":["ls"]}"#, false), "ask\n");
    // Without --arguments the question is the grants' alone (`{}` would never decode).
    assert_eq!(
        ok(&config, &["check", "--session", "s1", "--tool", "run"]),
        "ask\n"
    );
    let denied = check("erase", r#"{"path":1}"#, false);
    assert!(denied.starts_with("denied "), "{denied}");
    let real = run(
        &config,
        &["call", "--session", "s1", "erase", r#"{"path":1}"#],
    );
    assert_eq!(real.status.code(), Some(3), "{}", stderr(&real));

    // A downstream tool, once discovered: checked against its input schema, as the front does.
    assert!(ok(&config, &["tools", "list"]).contains("h_echo"));
    assert_eq!(check("h_echo", r#"{"text":"hi"}"#, false), "ask\n");
    let said = check("h_echo", r#"{"txt":"hi"}"#, false);
    assert!(
        said.starts_with("failed: h_echo: bad arguments: ") && said.contains("nothing ran"),
        "{said}"
    );
    let mut m = Mcp::start(&config);
    let r = m.call("h_echo", json!({"txt": "hi"}));
    assert_eq!(format!("{}\n", text_of(&r)), said, "{r}");
    m.close();
}

// ---------------------------------------------------------------------------------------
// Issue 21 item 12: times a person reads, and a command a person can type.

/// The binary as boxmaker names itself (its absolute path, symlinks resolved).
fn bin_path() -> String {
    Path::new(BIN).canonicalize().unwrap().display().to_string()
}

/// Fails when `text` holds a word of nine or more digits: a Unix time left for a person.
/// (Digits inside a word — an approval id's hex, `ap-3824939246b5a3dd` — are not a time.)
#[track_caller]
fn no_unix_seconds(text: &str) {
    for word in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        assert!(
            word.len() < 9 || !word.bytes().all(|b| b.is_ascii_digit()),
            "raw Unix seconds in: {text}"
        );
    }
}

/// A zone with an offset no machine's default would have, to tell local time from UTC.
const ZONE: (&str, &str) = ("TZ", "Asia/Kolkata");

#[test]
fn the_demo_check_and_the_mcp_log_line_show_local_times_and_the_binarys_path() {
    // The demo's pending approval.
    let o = Command::new(BIN)
        .arg("demo")
        .env(ZONE.0, ZONE.1)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    let line = stdout(&o)
        .lines()
        .find(|l| l.contains("pending approval"))
        .unwrap_or_else(|| panic!("no pending line: {}", stdout(&o)))
        .to_string();
    assert!(
        line.contains("expires 20") && line.contains("+05:30 (in "),
        "{line}"
    );
    no_unix_seconds(&line);

    // `check --explain`: the time of the call and a grant's expiry.
    let dir = long_dir("local-times", 0);
    let config = init(
        &dir,
        "\n[[grant]]\ntool = \"write_file\"\neffect = \"allow\"\nexpires = 1900000000\n",
    );
    let o = Command::new(BIN)
        .args([
            "check",
            "--session",
            "s1",
            "--tool",
            "write_file",
            "--explain",
            "--config",
        ])
        .arg(&config)
        .env(ZONE.0, ZONE.1)
        .output()
        .unwrap();
    let explained = stdout(&o);
    assert!(o.status.success(), "{explained}{}", stderr(&o));
    assert!(
        explained.contains(", at 20") && explained.contains("+05:30"),
        "{explained}"
    );
    assert!(
        explained.contains("expires 2030-03-17 23:16:40 +05:30 (in "),
        "{explained}"
    );
    no_unix_seconds(&explained);
    let o = Command::new(BIN)
        .args([
            "check",
            "--session",
            "s1",
            "--tool",
            "write_file",
            "--explain",
            "--at",
            "1900000100",
        ])
        .arg("--config")
        .arg(&config)
        .env(ZONE.0, ZONE.1)
        .output()
        .unwrap();
    let explained = stdout(&o);
    assert!(
        explained.contains("expired at 2030-03-17 23:16:40 +05:30 (2 min ago)"),
        "{explained}"
    );
    no_unix_seconds(&explained);

    // The MCP log notification a pending call sends: local time, from the confined front,
    // and commands that name the binary by its absolute path.
    let mut m = Mcp::start_env(&config, &[ZONE]);
    m.send(&json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call",
                   "params": {"name": "run", "arguments": {"argv": ["true"]}}}));
    let deadline = Instant::now() + WAIT;
    let note = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let v = m.lines.recv_timeout(left).expect("no log notification");
        if v["method"] == "notifications/message" {
            break v;
        }
    };
    let message = note["params"]["data"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(note["params"]["data"]["expires"].is_u64(), "{note}");
    assert!(
        message.contains("expires 20") && message.contains("+05:30 (in "),
        "{message}"
    );
    no_unix_seconds(&message);
    let approve = format!("`{} approve ap-", bin_path());
    assert!(message.contains(&approve), "{message}");
    let id = note["params"]["data"]["approval"]
        .as_str()
        .unwrap()
        .to_string();
    ok(&config, &["refuse", &id]);
    let answer = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let v = m
            .lines
            .recv_timeout(left)
            .expect("no answer after the refusal");
        if v["id"] == json!(99) {
            break v;
        }
    };
    assert!(text_of(&answer).starts_with("denied: "), "{answer}");
    m.close();
}

// ---------------------------------------------------------------------------------------
// Issue 21 item 15: an ended connection session's remembered approvals end with it.

/// Over `m`, a `run` call that asks; a person approves it for the session from the CLI.
/// Returns the session it was remembered for.
fn remember_a_run(m: &mut Mcp, config: &Path, id: u64) -> String {
    m.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "run", "arguments": {"argv": ["true"]}}}));
    let deadline = Instant::now() + WAIT;
    let approval = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let v = m.lines.recv_timeout(left).expect("no log notification");
        if v["method"] == "notifications/message" {
            break v["params"]["data"]["approval"]
                .as_str()
                .unwrap()
                .to_string();
        }
    };
    let listed: Value = serde_json::from_str(&ok(config, &["approvals", "--json"])).unwrap();
    let session = listed["body"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == json!(approval))
        .unwrap_or_else(|| panic!("{approval} not pending: {listed}"))["session"]
        .as_str()
        .unwrap()
        .to_string();
    ok(config, &["approve", &approval, "--for", "10m"]);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let v = m
            .lines
            .recv_timeout(left)
            .expect("no answer after approval");
        if v["id"] == json!(id) {
            assert_eq!(v["result"]["isError"], json!(false), "{v}");
            break;
        }
    }
    session
}

/// The sessions that have a remembered approval listed by `grants`.
fn remembered_sessions(config: &Path) -> Vec<String> {
    let g: Value = serde_json::from_str(&ok(config, &["grants", "--json"])).unwrap();
    g["body"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| !i["scope"].is_null())
        .map(|i| i["grant"]["sessions"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn an_ended_sessions_remembered_approvals_end_with_it_and_a_live_ones_stay() {
    let dir = long_dir("remembered-end", 0);
    let config = init(&dir, "");
    let mut stays = Mcp::start(&config);
    let live = remember_a_run(&mut stays, &config, 10);
    let mut closes = Mcp::start(&config);
    let closed = remember_a_run(&mut closes, &config, 20);
    let mut killed = Mcp::start(&config);
    let gone = remember_a_run(&mut killed, &config, 30);
    assert!(live.starts_with("mcp-") && closed.starts_with("mcp-") && gone.starts_with("mcp-"));
    let all = remembered_sessions(&config);
    for s in [&live, &closed, &gone] {
        assert!(all.contains(s), "{s} not remembered: {all:?}");
    }
    // One client goes away as clients do; another is killed (no goodbye at all).
    closes.close();
    killed.child.kill().unwrap();
    killed.child.wait().unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let now = remembered_sessions(&config);
        if !now.contains(&closed) && !now.contains(&gone) {
            assert!(
                now.contains(&live),
                "a live session lost its approval: {now:?}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "still remembered: {now:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Not listed anywhere a person looks: `grants` (text), and the audit says why.
    let text = ok(&config, &["grants"]);
    assert!(!text.contains(&closed) && !text.contains(&gone), "{text}");
    assert!(text.contains(&live), "{text}");
    let audit = ok(&config, &["audit", "tail", "-n", "50"]);
    assert!(audit.contains("grant_revoked"), "{audit}");
    // The live session's approval still answers its calls.
    let r = stays.call("run", json!({"argv": ["true"]}));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    stays.close();
}

// ---------------------------------------------------------------------------------------
// Issue 21 items 6 and 7: a venv python the box cannot follow, a mount that is not there.

#[test]
fn a_venv_python_whose_symlink_leads_outside_the_box_is_named_as_a_symlink() {
    let dir = long_dir("venv-symlink", 0);
    // What `python -m venv` makes from a Python under the home directory: bin/python3 a
    // symlink to an interpreter the box does not show.
    let venv = dir.join("venv");
    std::fs::create_dir_all(venv.join("bin")).unwrap();
    std::os::unix::fs::symlink("python", venv.join("bin/python3")).unwrap();
    std::os::unix::fs::symlink(
        "/opt/boxmaker-test-pyenv/versions/3.11.7/bin/python3.11",
        venv.join("bin/python"),
    )
    .unwrap();
    let config = init(
        &dir,
        "\n[[mount]]\nhost = \"venv\"\nat = \"/opt/venv\"\nclass = \"public\"\n\n\
         [[tool]]\nname = \"srv\"\nmcp = [\"/opt/venv/bin/python3\", \"-m\", \"srv\"]\n",
    );
    let text = std::fs::read_to_string(&config).unwrap();
    edit(
        &config,
        &text.replace("timeout_seconds = 300", "timeout_seconds = 5"),
    );
    let o = run(&config, &["tools", "list"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{}{err}", stdout(&o));
    assert!(!err.contains("no file is there"), "{err}");
    assert!(
        err.contains(
            "/opt/venv/bin/python3 is a symlink (through /opt/venv/bin/python) to \
             /opt/boxmaker-test-pyenv/versions/3.11.7/bin/python3.11, which is not inside the box"
        ),
        "{err}"
    );
    assert!(
        err.contains("points there: make it with `/usr/bin/python3 -m venv DIR`"),
        "{err}"
    );
}

#[test]
fn a_mount_that_is_not_there_is_said_at_start_and_by_each_call() {
    let dir = long_dir("missing-mount", 0);
    let config = init(
        &dir,
        "\n[[mount]]\nhost = \"not-there\"\nat = \"/data/x\"\n",
    );
    let missing = dir.join("not-there").display().to_string();
    // `boxmaker mcp` says so on stderr as it starts, and in the MCP log once the client is
    // initialized.
    let mut child = Command::new(BIN)
        .args(["mcp", "--config"])
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    writeln!(
        input,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "newcomer", "version": "0"}}})
    )
    .unwrap();
    writeln!(
        input,
        "{}",
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
    )
    .unwrap();
    writeln!(
        input,
        "{}",
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "list_dir", "arguments": {"path": "/work"}}})
    )
    .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let (mut logged, mut answer) = (None, None);
    for line in out.lines().map_while(Result::ok) {
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["method"] == "notifications/message" {
            logged = Some(v.clone());
        }
        if v["id"] == json!(2) {
            answer = Some(v);
            break;
        }
    }
    drop(input);
    let _ = child.wait();
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    let said = format!("mount /data/x: its host path {missing} cannot be used (it does not exist)");
    assert!(err.contains(&said), "{err}");
    let logged = logged.expect("no MCP log notification about the mount");
    assert_eq!(logged["params"]["level"], "warning", "{logged}");
    assert!(logged.to_string().contains(&said), "{logged}");
    // The call says the path does not exist, not that a symlink appeared.
    let answer = answer.unwrap();
    let text = text_of(&answer);
    assert!(
        text.contains(&format!("{missing} (shown at /data/x) does not exist")),
        "{text}"
    );
    assert!(!text.contains("appeared after"), "{text}");
}

// ---------------------------------------------------------------------------------------
// Issue 21 item 18: `serve` says when it took over the gate.

#[test]
fn serve_says_when_it_has_taken_over_a_gate_another_process_held() {
    serve_takes_over("serve-takes-over", false);
}

/// An operator's connection left open and idle on the on-demand gate's control socket (a
/// script that keeps one for a whole run) does not keep the retiring gate, and its lock,
/// for ever: it was waited for without end, so `serve` never took over and every client
/// that came meanwhile failed with "another process has held gate.lock for 30 s". Nor is it
/// waited for twice (once by the retiring gate, again when the gate was dropped).
#[test]
fn an_idle_control_connection_does_not_keep_a_retiring_gate() {
    serve_takes_over("serve-takes-over-idle", true);
}

fn serve_takes_over(name: &str, idle_control: bool) {
    let dir = long_dir(name, 0);
    let config = init(&dir, "");
    // A client's on-demand gate holds the state directory.
    let mut m = Mcp::start(&config);
    let r = m.call("list_dir", json!({"path": "/work"}));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    let on_demand = gate_pids(&config);
    assert_eq!(on_demand.len(), 1);
    let _idle = idle_control.then(|| {
        // By the state directory's descriptor: the test's path is longer than a socket
        // address holds.
        statedir::connect(&dir.join(".boxmaker"), statedir::CONTROL_SOCKET).unwrap()
    });
    let mut serve = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = serve.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    let took = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            break None;
        };
        if line.contains("took over") {
            break Some(line);
        }
        seen.push(line);
    };
    let _ = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status();
    wait_exit(&mut serve);
    let took = took.unwrap_or_else(|| panic!("serve never said it took over: {seen:?}"));
    assert!(
        seen.iter()
            .any(|l| l.contains("another process holds the gate")),
        "{seen:?}"
    );
    assert!(
        took.contains(&dir.join(".boxmaker").display().to_string()),
        "{took}"
    );
    if idle_control {
        // The idle connection is waited for once, for the gate's drain of 5 s: the
        // retiring gate waited it a second time when it was dropped, and `serve` took over
        // only after 10 s.
        let waited: f64 = took
            .split(" after ")
            .nth(1)
            .and_then(|t| t.split(" s").next())
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("no wait in {took:?}"));
        assert!(waited < 9.0, "serve waited {waited} s: {took}");
    }
    assert!(
        on_demand.iter().all(|p| !gate_pids(&config).contains(p)),
        "the on-demand gate still runs"
    );
    m.close();
}
