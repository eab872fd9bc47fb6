//! Issue 5 end to end, with real processes: `call` waits for a person, `approve` and `refuse`
//! from another process decide, approvals expire with nobody asking, `serve` restarts a
//! killed gate, tampering is found, and `demo` works.

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::time::{Duration, Instant};

use testkit::{Lab, stderr, stdout, wait_with_timeout};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

struct Env {
    lab: Lab,
}

impl Env {
    fn new(extra: &str) -> Self {
        let lab = Lab::temp(BIN);
        lab.write("notes/plan.txt", "secret\n");
        lab.write_config(&format!(
            r#"
[gate]
state = "state"
approval_ttl = 300

[[mount]]
host = "notes"
at = "/data/notes"
class = "confidential"

[[tool]]
name = "read_file"
builtin = "read_file"
class = "internal"

[[tool]]
name = "run"
builtin = "run"

[[tool]]
name = "share"
builtin = "write_file"

[[grant]]
tool = "read_file"
effect = "allow"

[[grant]]
tool = "run"
effect = "ask"

[[grant]]
tool = "share"
effect = "allow"
max_class = "public"
{extra}"#
        ));
        Self { lab }
    }

    fn config(&self) -> PathBuf {
        self.lab.config()
    }

    fn state(&self) -> PathBuf {
        self.lab.path("state")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        self.lab.cmd(args)
    }

    fn run(&self, args: &[&str]) -> Output {
        self.lab.run(args)
    }

    /// `boxmaker call` in the background, with its stderr readable line by line.
    fn spawn_call(&self, session: &str, tool: &str, args: &str) -> (Child, BufReader<ChildStderr>) {
        // The config as the test last wrote it is the tester's own: trusted (again, when a
        // test edited it) before the binary reads it (docs/spec.md §6, "Whose config").
        self.lab.trust_config();
        let mut child = Command::new(BIN)
            .args(["call", "--config"])
            .arg(self.config())
            .args(["--session", session, "--json", tool, args])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = BufReader::new(child.stderr.take().unwrap());
        (child, err)
    }
}

/// Reads stderr lines until `pending approval ID (expires T)`; returns the id.
fn pending_id(err: &mut BufReader<ChildStderr>) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "call ended before asking"
        );
        if let Some(rest) = line.strip_prefix("pending approval ") {
            let id = rest.split_whitespace().next().unwrap().to_string();
            assert!(rest.contains("(expires "), "{line}");
            return id;
        }
    }
}

#[test]
fn test_call_waits_and_approve_from_another_process_lets_it_run() {
    let env = Env::new("");
    let (child, mut err) = env.spawn_call("s1", "run", r#"{"argv":["echo","approved!"]}"#);
    let id = pending_id(&mut err);
    let listed = env.run(&["approvals"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    assert!(stdout(&listed).contains(&id), "{}", stdout(&listed));
    assert!(stdout(&listed).contains(r#"{"argv":["echo","approved!"]}"#));
    let ok = env.run(&["approve", &id]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let out = wait_with_timeout(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["status"], "result");
    assert!(v["content"].as_str().unwrap().contains("approved!"));
    // An approval is used once: approving again is a conflict.
    let again = env.run(&["approve", &id]);
    assert!(!again.status.success());
    assert!(stderr(&again).contains("conflict"), "{}", stderr(&again));
}

#[test]
fn test_refuse_from_another_process_ends_the_call_denied_approval_refused() {
    let env = Env::new("");
    let (child, mut err) = env.spawn_call("s1", "run", r#"{"argv":["rm","-rf","/work"]}"#);
    let id = pending_id(&mut err);
    let refused = env.run(&["refuse", &id, "--reason", "no thanks"]);
    assert!(refused.status.success(), "{}", stderr(&refused));
    let out = wait_with_timeout(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        stdout(&out).trim(),
        r#"{"status":"denied","reason":"approval_refused"}"#
    );
    let all = env.run(&["approvals", "--all", "--json"]);
    assert!(
        stdout(&all).contains(r#""state":"refused""#),
        "{}",
        stdout(&all)
    );
}

#[test]
fn test_an_approval_nobody_decides_expires_with_approval_expired() {
    let env = Env::new("");
    std::fs::write(
        env.config(),
        std::fs::read_to_string(env.config())
            .unwrap()
            .replace("approval_ttl = 300", "approval_ttl = 1"),
    )
    .unwrap();
    let (child, mut err) = env.spawn_call("s1", "run", r#"{"argv":["true"]}"#);
    let id = pending_id(&mut err);
    let out = wait_with_timeout(child, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        stdout(&out).trim(),
        r#"{"status":"denied","reason":"approval_expired"}"#
    );
    // Deciding after expiry is refused.
    let late = env.run(&["approve", &id]);
    assert!(!late.status.success());
}

#[test]
fn test_taint_persists_between_calls_and_denies_the_way_out() {
    let env = Env::new("");
    let ok = env.run(&[
        "call",
        "--session",
        "s1",
        "share",
        r#"{"path":"a","content":"x"}"#,
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let read = env.run(&[
        "call",
        "--session",
        "s1",
        "read_file",
        r#"{"path":"/data/notes/plan.txt"}"#,
    ]);
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    assert_eq!(stdout(&read), "secret\n");
    let out = env.run(&[
        "call",
        "--session",
        "s1",
        "share",
        r#"{"path":"a","content":"secret"}"#,
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("denied: taint_too_high"),
        "{}",
        stderr(&out)
    );
    // Another session is untouched.
    let other = env.run(&[
        "call",
        "--session",
        "s2",
        "share",
        r#"{"path":"a","content":"x"}"#,
    ]);
    assert_eq!(other.status.code(), Some(0), "{}", stderr(&other));
    let sessions = env.run(&["sessions"]);
    assert!(
        stdout(&sessions).contains("s1  confidential"),
        "{}",
        stdout(&sessions)
    );
    // Only an operator resets a session, and that is audited.
    let reset = env.run(&["sessions", "reset", "s1"]);
    assert!(reset.status.success(), "{}", stderr(&reset));
    let again = env.run(&[
        "call",
        "--session",
        "s1",
        "share",
        r#"{"path":"a","content":"x"}"#,
    ]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let tail = env.run(&["audit", "tail", "-n", "100"]);
    assert!(stdout(&tail).contains("session_reset"), "{}", stdout(&tail));
}

#[test]
fn test_exit_statuses_follow_the_outcome() {
    let env = Env::new("");
    let failed = env.run(&[
        "call",
        "--session",
        "s1",
        "read_file",
        r#"{"path":"/nope"}"#,
    ]);
    assert_eq!(failed.status.code(), Some(1), "{}", stderr(&failed));
    // A name the config has no tool for is unknown (as over MCP), and nothing is sent.
    let unknown = env.run(&["call", "--session", "s1", "format", "{}"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("unknown tool \"format\""),
        "{}",
        stderr(&unknown)
    );
    assert!(
        stderr(&unknown).contains("read_file, run, share"),
        "{}",
        stderr(&unknown)
    );
    // A tool the config has but no grant allows is denied, in the words a model reads.
    let env2 = Env::new("[[tool]]\nname = \"list\"\nbuiltin = \"list_dir\"\n");
    let denied = env2.run(&["call", "--session", "s1", "list", r#"{"path":"/"}"#]);
    assert_eq!(denied.status.code(), Some(3));
    assert!(
        stderr(&denied).contains("denied: no_grant — no grant lets this session call \"list\""),
        "{}",
        stderr(&denied)
    );
    let usage = env.run(&["call", "--session", "../x", "read_file", "{}"]);
    assert_eq!(usage.status.code(), Some(2));
    assert_eq!(stderr(&usage).lines().count(), 1, "{}", stderr(&usage));
    let json = env.run(&[
        "call",
        "--session",
        "s1",
        "--json",
        "read_file",
        r#"{"path":"/nope"}"#,
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(v["status"], "failed");
}

#[test]
fn test_audit_verify_names_the_first_tampered_record() {
    let env = Env::new("");
    for _ in 0..3 {
        let o = env.run(&[
            "call",
            "--session",
            "s1",
            "read_file",
            r#"{"path":"/data/notes/plan.txt"}"#,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let ok = env.run(&["audit", "verify"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let path = env.state().join("audit.log");
    let original = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = original.lines().collect();
    assert!(lines.len() >= 6);
    // Change one record: the 3rd.
    let mut changed = lines.clone();
    let tampered = changed[2].replace(r#""s1""#, r#""s9""#);
    assert_ne!(tampered, changed[2]);
    changed[2] = &tampered;
    std::fs::write(&path, changed.join("\n") + "\n").unwrap();
    let bad = env.run(&["audit", "verify"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("first bad record is 3"),
        "{}",
        stderr(&bad)
    );
    // Drop one record.
    let mut dropped = lines.clone();
    dropped.remove(3);
    std::fs::write(&path, dropped.join("\n") + "\n").unwrap();
    let bad = env.run(&["audit", "verify", "--json"]);
    assert_eq!(bad.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&bad)).unwrap();
    assert_eq!(v["kind"], "audit_verified");
    assert_eq!(v["body"]["first_bad"], 4);
    // Reorder two records.
    let mut swapped = lines.clone();
    swapped.swap(1, 2);
    std::fs::write(&path, swapped.join("\n") + "\n").unwrap();
    let bad = env.run(&["audit", "verify"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr(&bad).contains("first bad record is"),
        "{}",
        stderr(&bad)
    );
}

fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn gate_pid(state: &Path) -> Option<u32> {
    // The gate child is the process that holds `boxmaker __gate` in its command line.
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.iter().any(|a| a == "__gate")
            && args
                .iter()
                .any(|a| a.starts_with(&state.parent().unwrap().display().to_string()))
        {
            return Some(pid);
        }
    }
    None
}

#[test]
fn test_serve_restarts_a_killed_gate_and_stops_cleanly() {
    let env = Env::new("");
    let mut serve = env.cmd(&["serve"]).stderr(Stdio::null()).spawn().unwrap();
    wait_for(&env.state().join("agent.sock"));
    let o = env.run(&[
        "call",
        "--session",
        "s1",
        "read_file",
        r#"{"path":"/data/notes/plan.txt"}"#,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = gate_pid(&env.state()).expect("the gate role runs as its own process");
    let _ = Command::new("kill")
        .args(["-9", &first.to_string()])
        .status();
    // The supervisor starts a new gate process (a command run meanwhile may host the gate
    // for a moment; the new gate role waits for it and takes over).
    let start = Instant::now();
    let second = loop {
        if let Some(pid) = gate_pid(&env.state()).filter(|p| *p != first) {
            break pid;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no gate came back"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    wait_for(&env.state().join("agent.sock"));
    let o = env.run(&["sessions"]);
    assert!(stdout(&o).contains("s1  confidential"), "{}", stdout(&o));
    assert_ne!(first, second);
    let _ = Command::new("kill")
        .args(["-TERM", &serve.id().to_string()])
        .status();
    let status = wait_with_timeout_child(&mut serve, Duration::from_secs(20));
    assert!(status.success(), "{status}");
    assert!(!env.state().join("agent.sock").exists());
    assert!(gate_pid(&env.state()).is_none(), "the gate outlived serve");
}

fn wait_with_timeout_child(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("did not stop within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn test_demo_runs_every_step_on_the_embedded_default() {
    let out = Command::new(BIN).arg("demo").output().unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    for needle in [
        "labelled internal",
        "pending approval ap-",
        "approved ap-",
        "labelled confidential",
        "denied taint_too_high",
        "audit verify -> intact",
        "demo complete",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}
