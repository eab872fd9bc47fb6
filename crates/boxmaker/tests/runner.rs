//! The runner role over real frames: `boxmaker __runner` with a real config, real boxes, and
//! every builtin tool, bad argument, label and cut that docs/spec.md §3.4 and issue 4 promise.

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use proto::run::{
    RunnerAnswer, RunnerReply, RunnerRequest, read_runner_reply, write_runner_request,
};
use proto::{
    CallId, DataClass, Envelope, ErrorCode, MAX_FRAME, SessionId, ToolRequest, ToolResponse,
    write_frame,
};
use testkit::Lab;

/// A call's answer from a reply (panics on any other kind).
fn answer_of(reply: RunnerReply) -> ToolResponse {
    match reply.reply {
        RunnerAnswer::Answer { response } => response,
        other => panic!("expected a tool response, got {other:?}"),
    }
}

struct Fixture {
    lab: Lab,
}

impl Fixture {
    fn new() -> Self {
        Self::configured(20, "")
    }

    /// The fixture's config with a `[box]` timeout of `timeout` seconds and `extra` TOML.
    fn configured(timeout: u64, extra: &str) -> Self {
        let lab = Lab::temp(env!("CARGO_BIN_EXE_boxmaker"));
        lab.write("notes/plan.txt", "the secret plan\n");
        lab.write("pub/readme.txt", "hello\n");
        lab.write("outside.txt", "host only\n");
        lab.write_config(
            &(r#"
[gate]
state = "state"

[box]
timeout_seconds = {timeout}

[[mount]]
host = "notes"
at = "/data/notes"
class = "confidential"

[[mount]]
host = "pub"
at = "/data/pub"
class = "public"

[[tool]]
name = "read_file"
builtin = "read_file"
class = "internal"

[[tool]]
name = "web_read"
builtin = "read_file"
class = "public"
untrusted = true

[[tool]]
name = "write_file"
builtin = "write_file"

[[tool]]
name = "list_dir"
builtin = "list_dir"

[[tool]]
name = "run"
builtin = "run"

[[grant]]
tool = "*"
effect = "allow"
"#
            .replace("{timeout}", &timeout.to_string())
                + extra),
        );
        Self { lab }
    }

    fn path(&self) -> &Path {
        &self.lab.dir
    }

    fn start(&self) -> Runner {
        // The state directory made (and marked, docs/spec.md §6 "Whose state") before the
        // runner starts, as the gate does: a test that puts a file in a workspace right after
        // this finds the directory the person's, not one a repository could have shipped.
        statedir::file::Dir::own(&self.path().join("state")).unwrap();
        let mut child = self
            .lab
            .cmd(&["__runner"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Runner {
            child,
            stdin,
            stdout,
            next: 1,
        }
    }

    fn workspace(&self, session: &str) -> PathBuf {
        self.path().join("state/work").join(session)
    }
}

struct Runner {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Runner {
    fn send(&mut self, session: &str, tool: &str, arguments: &str) -> u64 {
        // A fresh session, as the gate would say it: public, trusted.
        self.send_at(session, tool, arguments, DataClass::Public)
    }

    /// Sends a call of a session whose committed taint is `class`.
    fn send_at(&mut self, session: &str, tool: &str, arguments: &str, class: DataClass) -> u64 {
        let id = self.next;
        self.next += 1;
        let req = ToolRequest {
            session: SessionId::new(session).unwrap(),
            call: CallId(id),
            tool: tool.into(),
            arguments: arguments.into(),
        };
        write_runner_request(&mut self.stdin, &RunnerRequest::call(id, req, class, false)).unwrap();
        id
    }

    fn call(&mut self, session: &str, tool: &str, arguments: &str) -> ToolResponse {
        self.call_at(session, tool, arguments, DataClass::Public)
    }

    /// A call of a session whose committed taint is `class`.
    fn call_at(
        &mut self,
        session: &str,
        tool: &str,
        arguments: &str,
        class: DataClass,
    ) -> ToolResponse {
        let id = self.send_at(session, tool, arguments, class);
        let reply = read_runner_reply(&mut self.stdout).unwrap();
        assert_eq!(reply.id, id);
        answer_of(reply)
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[track_caller]
fn result(r: &ToolResponse) -> (&str, DataClass, bool, bool) {
    match r {
        ToolResponse::Result {
            content,
            class,
            untrusted,
            truncated,
        } => (content, *class, *untrusted, *truncated),
        other => panic!("expected a result, got {other:?}"),
    }
}

#[track_caller]
fn failure(r: &ToolResponse) -> &str {
    match r {
        ToolResponse::Failed { message } => message,
        other => panic!("expected failed, got {other:?}"),
    }
}

// ---- builtin tools and labels --------------------------------------------------------------

#[test]
fn test_write_then_read_in_the_workspace_is_labelled_with_the_tool_floor() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let w = r.call(
        "s1",
        "write_file",
        r#"{"path":"notes.md","content":"draft\n"}"#,
    );
    let (content, class, _, _) = result(&w);
    assert!(content.contains("wrote 6 bytes"), "{content}");
    assert_eq!(class, DataClass::Public);
    assert_eq!(
        std::fs::read_to_string(fx.workspace("s1").join("notes.md")).unwrap(),
        "draft\n"
    );
    let rd = r.call("s1", "read_file", r#"{"path":"/work/notes.md"}"#);
    assert_eq!(result(&rd), ("draft\n", DataClass::Internal, false, false));
}

#[test]
fn test_read_under_a_confidential_mount_is_labelled_confidential() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let rd = r.call("s1", "read_file", r#"{"path":"/data/notes/plan.txt"}"#);
    assert_eq!(
        result(&rd),
        ("the secret plan\n", DataClass::Confidential, false, false)
    );
    let rd = r.call("s1", "read_file", r#"{"path":"/data/pub/readme.txt"}"#);
    assert_eq!(
        result(&rd).1,
        DataClass::Internal,
        "floor above a public mount"
    );
    let web = r.call("s1", "web_read", r#"{"path":"/data/pub/readme.txt"}"#);
    assert_eq!(result(&web), ("hello\n", DataClass::Public, true, false));
}

#[test]
fn test_symlink_in_workspace_to_a_confidential_mount_is_labelled_by_what_was_opened() {
    let fx = Fixture::new();
    let mut r = fx.start();
    // Made inside the box, as a hostile tool would.
    let made = r.call(
        "s1",
        "run",
        r#"{"argv":["ln","-s","/data/notes/plan.txt","/work/innocent.txt"]}"#,
    );
    assert!(result(&made).0.contains(r#""exit":0"#), "{made:?}");
    let rd = r.call("s1", "web_read", r#"{"path":"innocent.txt"}"#);
    let (content, class, untrusted, _) = result(&rd);
    assert_eq!(content, "the secret plan\n");
    assert_eq!(
        class,
        DataClass::Confidential,
        "a laundered read must keep its label"
    );
    assert!(untrusted);
}

#[test]
fn test_symlink_in_workspace_to_a_host_path_does_not_reach_the_host() {
    let fx = Fixture::new();
    let mut r = fx.start();
    std::fs::create_dir_all(fx.workspace("s1")).unwrap();
    let host_file = fx.path().join("outside.txt");
    std::os::unix::fs::symlink(&host_file, fx.workspace("s1").join("escape.txt")).unwrap();
    let rd = r.call("s1", "read_file", r#"{"path":"escape.txt"}"#);
    assert!(failure(&rd).contains("no such file"), "{rd:?}");
    let rd = r.call("s1", "read_file", r#"{"path":"/etc/shadow"}"#);
    assert!(failure(&rd).contains("no such file"), "{rd:?}");
}

#[test]
fn test_list_dir_marks_directories_and_labels_by_mount() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let l = r.call("s1", "list_dir", r#"{"path":"/data"}"#);
    assert_eq!(result(&l).0, "notes/\npub/\n");
    let l = r.call("s1", "list_dir", r#"{"path":"/data/notes"}"#);
    assert_eq!(
        result(&l),
        ("plan.txt\n", DataClass::Confidential, false, false)
    );
}

#[test]
fn test_write_to_a_read_only_mount_fails() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let w = r.call(
        "s1",
        "write_file",
        r#"{"path":"/data/notes/plan.txt","content":"overwritten"}"#,
    );
    assert!(failure(&w).contains("read-only"), "{w:?}");
    assert_eq!(
        std::fs::read_to_string(fx.path().join("notes/plan.txt")).unwrap(),
        "the secret plan\n"
    );
}

#[test]
fn test_read_file_refuses_what_is_not_utf8_text() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let rd = r.call("s1", "read_file", r#"{"path":"/usr/bin/env"}"#);
    assert!(failure(&rd).contains("not UTF-8 text"), "{rd:?}");
    let rd = r.call("s1", "read_file", r#"{"path":"/dev/zero"}"#);
    assert!(failure(&rd).contains("not a regular file"), "{rd:?}");
}

#[test]
fn test_run_reports_exit_stdout_stderr_and_is_labelled_by_every_mount() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let out = r.call(
        "s1",
        "run",
        r#"{"argv":["sh","-c","read x; echo got $x; echo oops >&2; exit 3"],"stdin":"42\n"}"#,
    );
    let (content, class, _, truncated) = result(&out);
    let v: serde_json::Value = serde_json::from_str(content).unwrap();
    assert_eq!(v["exit"], 3);
    assert_eq!(v["stdout"], "got 42\n");
    assert_eq!(v["stderr"], "oops\n");
    assert_eq!(class, DataClass::Confidential, "run can read every mount");
    assert!(!truncated);
}

#[test]
fn test_run_timeout_fails_with_the_reason() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let out = r.call("s1", "run", r#"{"argv":["sleep","30"],"timeout":1}"#);
    assert!(failure(&out).contains("timed out after 1 s"), "{out:?}");
}

#[test]
fn test_a_missing_program_is_a_result_with_its_exit_or_a_clear_failure() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let out = r.call("s1", "run", r#"{"argv":["no-such-program"]}"#);
    match &out {
        ToolResponse::Failed { message } => {
            assert!(message.contains("no-such-program"), "{message}")
        }
        ToolResponse::Result { content, .. } => {
            assert!(content.contains(r#""exit":127"#), "{content}")
        }
        other => panic!("{other:?}"),
    }
}

// ---- bad arguments -------------------------------------------------------------------------

#[test]
fn test_each_kind_of_bad_arguments_fails_naming_the_problem_and_runs_nothing() {
    let fx = Fixture::new();
    let mut r = fx.start();
    for (tool, args, needle) in [
        ("read_file", "not json", "must be a JSON object"),
        ("read_file", r#"["/etc/hosts"]"#, "not an array"),
        ("read_file", "{}", "missing field `path`"),
        (
            "read_file",
            r#"{"path":"a","mode":"x"}"#,
            "unknown field `mode`",
        ),
        ("read_file", r#"{"path":7}"#, "invalid type"),
        ("read_file", r#"{"path":"a","path":"b"}"#, "duplicate field"),
        ("write_file", r#"{"path":"x"}"#, "missing field `content`"),
        ("run", r#"{"argv":"touch /work/pwned"}"#, "invalid type"),
        ("run", r#"{"argv":[]}"#, "empty"),
        (
            "run",
            r#"{"argv":["touch","/work/pwned"],"timeout":"5"}"#,
            "invalid type",
        ),
    ] {
        let out = r.call("s1", tool, args);
        let msg = failure(&out);
        assert!(msg.contains(needle), "{tool} {args}: {msg}");
        assert!(msg.starts_with(tool), "{msg}");
    }
    assert!(!fx.workspace("s1").join("pwned").exists());
}

#[test]
fn test_an_unknown_tool_fails() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let out = r.call("s1", "format_disk", "{}");
    assert!(failure(&out).contains("no tool named"), "{out:?}");
}

// ---- cutting to a frame --------------------------------------------------------------------

#[test]
fn test_a_large_file_is_cut_to_fit_one_frame() {
    let fx = Fixture::new();
    let mut r = fx.start();
    std::fs::create_dir_all(fx.workspace("s1")).unwrap();
    // Three MiB of text that JSON escapes six-fold.
    std::fs::write(fx.workspace("s1").join("big.txt"), "\u{1}".repeat(3 << 20)).unwrap();
    let rd = r.call("s1", "read_file", r#"{"path":"big.txt"}"#);
    let (content, _, _, truncated) = result(&rd);
    assert!(truncated);
    assert!(!content.is_empty());
    let encoded = serde_json::to_vec(&Envelope::response(u64::MAX, rd.clone())).unwrap();
    assert!(encoded.len() <= MAX_FRAME, "{}", encoded.len());
}

#[test]
fn test_100_mb_of_output_is_truncated_within_max_frame() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let out = r.call(
        "s1",
        "run",
        r#"{"argv":["sh","-c","head -c 100000000 /dev/zero | tr '\\0' 'x'; echo done >&2"]}"#,
    );
    let (content, _, _, truncated) = result(&out);
    assert!(truncated);
    let v: serde_json::Value = serde_json::from_str(content).unwrap();
    assert!(v["stdout"].as_str().unwrap().len() > 100_000);
    let encoded = serde_json::to_vec(&Envelope::response(u64::MAX, out.clone())).unwrap();
    assert!(encoded.len() <= MAX_FRAME, "{}", encoded.len());
}

// ---- sessions, concurrency, bad peers ------------------------------------------------------

#[test]
fn test_one_session_cannot_read_another_sessions_workspace() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let w = r.call(
        "alice",
        "write_file",
        r#"{"path":"diary.txt","content":"mine"}"#,
    );
    result(&w);
    for path in [
        "diary.txt",
        "/work/../alice/diary.txt",
        "../alice/diary.txt",
    ] {
        let rd = r.call("bob", "read_file", &format!(r#"{{"path":"{path}"}}"#));
        assert!(failure(&rd).contains("no such file"), "{path}: {rd:?}");
    }
    let host_path = fx.workspace("alice").join("diary.txt");
    let rd = r.call(
        "bob",
        "read_file",
        &format!(r#"{{"path":"{}"}}"#, host_path.display()),
    );
    assert!(failure(&rd).contains("no such file"), "{rd:?}");
}

#[test]
fn test_many_calls_at_once_from_many_sessions_are_all_answered() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let mut ids = Vec::new();
    for i in 0..24 {
        let session = format!("s{}", i % 6);
        ids.push(r.send(
            &session,
            "run",
            &format!(r#"{{"argv":["sh","-c","sleep 0.2; echo {i}"]}}"#),
        ));
    }
    let mut seen = Vec::new();
    for _ in 0..ids.len() {
        let reply = read_runner_reply(&mut r.stdout).unwrap();
        let id = reply.id;
        let resp = answer_of(reply);
        let i = ids.iter().position(|&x| x == id).unwrap();
        let v: serde_json::Value = serde_json::from_str(result(&resp).0).unwrap();
        assert_eq!(v["stdout"], format!("{i}\n"));
        seen.push(id);
    }
    seen.sort_unstable();
    assert_eq!(seen, ids);
}

#[test]
fn test_a_bad_frame_gets_an_error_envelope_and_the_runner_stops() {
    let fx = Fixture::new();
    let mut r = fx.start();
    r.stdin.write_all(&[0, 0, 0, 3, b'{', b'{', b'{']).unwrap();
    r.stdin.flush().unwrap();
    let reply = read_runner_reply(&mut r.stdout).unwrap();
    assert!(
        matches!(
            reply.reply,
            RunnerAnswer::Error {
                code: ErrorCode::BadFrame,
                ..
            }
        ),
        "{reply:?}"
    );
    assert_eq!(reply.id, 0);
    assert!(!r.child.wait().unwrap().success());
}

#[test]
fn test_a_message_the_gate_may_not_send_gets_bad_message() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let bogus = Envelope::response(
        9,
        ToolResponse::Result {
            content: "x".into(),
            class: DataClass::Public,
            untrusted: false,
            truncated: false,
        },
    );
    // An agent's envelope is not a runner request: refused, whatever it holds.
    write_frame(&mut r.stdin, &bogus).unwrap();
    let reply = read_runner_reply(&mut r.stdout).unwrap();
    assert!(
        matches!(
            reply.reply,
            RunnerAnswer::Error {
                code: ErrorCode::BadMessage,
                ..
            }
        ),
        "{reply:?}"
    );
    assert_eq!(reply.id, 0);
}

// ---- warm file boxes (docs/spec.md §4, "Warm file boxes") ---------------------------------

/// The in-box file servers of the warm boxes `runner` (a runner role's pid) runs now.
fn warm_servers(runner: u32) -> Vec<u32> {
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
        let after = &stat[stat.rfind(')')? + 2..];
        after.split(' ').nth(1)?.parse().ok()
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        if cmdline.split(|&b| b == 0).nth(1) != Some(b"__boxmaker-inbox-serve") {
            continue;
        }
        let mut up = Some(pid);
        while let Some(p) = up.filter(|&p| p > 1) {
            if p == runner {
                found.push(pid);
                break;
            }
            up = parent(p);
        }
    }
    found.sort_unstable();
    found
}

/// The mount options of the mount at `at` in `pid`'s mount namespace (`rw,...` or `ro,...`).
fn mount_options(pid: u32, at: &str) -> String {
    let info = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap();
    info.lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .filter(|f| f.len() > 5 && f[4] == at)
        .map(|f| f[5].to_string())
        .next_back()
        .unwrap_or_else(|| panic!("no mount at {at} in {pid}:\n{info}"))
}

/// Whether `pid`'s `/work` is the workspace of `session`.
fn works_for(pid: u32, session: &str) -> bool {
    let info = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
    let needle = format!("/state/work/{session} /work ");
    info.lines().any(|l| l.contains(&needle))
}

fn reset(r: &mut Runner, session: &str) -> u64 {
    let id = r.next;
    r.next += 1;
    let order = proto::run::Order::ResetSession {
        session: SessionId::new(session).unwrap(),
    };
    write_runner_request(&mut r.stdin, &RunnerRequest::new(id, order)).unwrap();
    id
}

#[test]
fn test_file_calls_reuse_one_warm_box_per_session_and_tool_and_sessions_never_share_one() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let runner = r.child.id();
    result(&r.call("s1", "write_file", r#"{"path":"a.txt","content":"one"}"#));
    assert_eq!(
        result(&r.call("s1", "read_file", r#"{"path":"a.txt"}"#)).0,
        "one"
    );
    let first = warm_servers(runner);
    assert_eq!(first.len(), 2, "one box for write_file, one for read_file");
    assert_eq!(
        result(&r.call("s1", "read_file", r#"{"path":"a.txt"}"#)).0,
        "one"
    );
    assert_eq!(
        warm_servers(runner),
        first,
        "the second read used the same box"
    );
    assert!(first.iter().all(|&p| works_for(p, "s1")));

    // Another session gets a box of its own, over its own workspace.
    assert!(failure(&r.call("s2", "read_file", r#"{"path":"a.txt"}"#)).contains("no such file"));
    let now = warm_servers(runner);
    assert_eq!(now.len(), 3);
    let s2: Vec<u32> = now.iter().copied().filter(|p| !first.contains(p)).collect();
    assert_eq!(s2.len(), 1);
    assert!(works_for(s2[0], "s2") && !works_for(s2[0], "s1"));

    // A reset of s1 ends its warm boxes before it answers; s2's stays.
    let id = reset(&mut r, "s1");
    let reply = read_runner_reply(&mut r.stdout).unwrap();
    assert_eq!(reply.id, id);
    assert!(
        matches!(reply.reply, RunnerAnswer::Reset { .. }),
        "{reply:?}"
    );
    assert_eq!(warm_servers(runner), s2);
}

#[test]
fn test_a_file_call_that_blocks_times_out_and_its_warm_box_is_killed_and_replaced() {
    let fx = Fixture::configured(2, "");
    let mut r = fx.start();
    let runner = r.child.id();
    result(&r.call("s1", "write_file", r#"{"path":"ok.txt","content":"fine"}"#));
    result(&r.call("s1", "run", r#"{"argv":["mkfifo","/work/pipe"]}"#));
    // Opening a FIFO with no writer blocks: the in-box server never answers.
    let stuck = r.call("s1", "read_file", r#"{"path":"/work/pipe"}"#);
    assert!(failure(&stuck).contains("timed out after 2 s"), "{stuck:?}");
    let left: Vec<u32> = warm_servers(runner);
    assert_eq!(left.len(), 1, "only write_file's box is left: {left:?}");
    assert_eq!(
        result(&r.call("s1", "read_file", r#"{"path":"ok.txt"}"#)).0,
        "fine"
    );
    assert_eq!(warm_servers(runner).len(), 2);
}

#[test]
fn test_a_reset_stops_a_file_call_blocked_in_its_warm_box_and_ends_the_box() {
    let fx = Fixture::new();
    let mut r = fx.start();
    let runner = r.child.id();
    result(&r.call("s1", "run", r#"{"argv":["mkfifo","/work/pipe"]}"#));
    let call = r.send("s1", "read_file", r#"{"path":"/work/pipe"}"#);
    testkit::wait_until(
        "the warm box to start",
        std::time::Duration::from_secs(10),
        || !warm_servers(runner).is_empty(),
    );
    let id = reset(&mut r, "s1");
    let mut answered = Vec::new();
    for _ in 0..2 {
        answered.push(read_runner_reply(&mut r.stdout).unwrap());
    }
    let stopped = answered.iter().find(|a| a.id == call).unwrap();
    match &stopped.reply {
        RunnerAnswer::Answer {
            response: ToolResponse::Failed { message },
        } => assert!(message.contains("reset by an operator"), "{message}"),
        other => panic!("expected the call to be stopped, got {other:?}"),
    }
    assert!(answered.iter().any(|a| a.id == id));
    assert!(warm_servers(runner).is_empty());
}

#[test]
fn test_a_warm_boxs_own_proc_files_are_closed_to_what_it_reads() {
    let fx = Fixture::new();
    let mut r = fx.start();
    // Its memory may hold earlier calls' data; its descriptors are its request pipes.
    for path in ["/proc/self/environ", "/proc/self/mem", "/proc/self/fd/0"] {
        let out = r.call("s1", "read_file", &format!(r#"{{"path":"{path}"}}"#));
        let why = failure(&out);
        assert!(
            why.contains("permission denied") || why.contains("not a regular file"),
            "{path}: {why}"
        );
    }
    // Between calls it holds nothing open but its stdio: listing its descriptors shows
    // those and the two this listing opened (the directory, and its listing).
    let out = r.call("s1", "list_dir", r#"{"path":"/proc/self/fd"}"#);
    assert_eq!(result(&out).0, "0\n1\n2\n3\n4\n");
}

#[test]
fn test_a_rise_of_the_label_gives_write_file_a_new_box_where_the_lower_mount_is_read_only() {
    let fx = Fixture::configured(
        20,
        r#"
[[mount]]
host = "out"
at = "/data/out"
class = "public"
write = true
"#,
    );
    let out = fx.lab.mkdir("out");
    // The box user is not the test's user: the mount is open to it as the config says.
    std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let mut r = fx.start();
    let runner = r.child.id();
    let w = r.call(
        "s1",
        "write_file",
        r#"{"path":"/data/out/a.txt","content":"x"}"#,
    );
    result(&w);
    let before = warm_servers(runner);
    assert_eq!(before.len(), 1);
    assert!(mount_options(before[0], "/data/out").starts_with("rw"));

    // The session has read confidential data: its next write gets a box built at that label.
    let w = r.call_at(
        "s1",
        "write_file",
        r#"{"path":"/work/b.txt","content":"y"}"#,
        DataClass::Confidential,
    );
    result(&w);
    let after = warm_servers(runner);
    assert_eq!(after.len(), 1, "the old box was ended: {after:?}");
    assert_ne!(after, before);
    assert!(mount_options(after[0], "/data/out").starts_with("ro"));
    let down = r.call(
        "s1",
        "write_file",
        r#"{"path":"/data/out/c.txt","content":"z"}"#,
    );
    assert!(failure(&down).contains("refused"), "{down:?}");
    assert!(!fx.path().join("out/c.txt").exists());
}

#[test]
fn test_file_calls_at_once_in_one_session_each_get_their_own_answer() {
    let fx = Fixture::new();
    let mut r = fx.start();
    for i in 0..8 {
        let w = r.call(
            "s1",
            "write_file",
            &format!(r#"{{"path":"f{i}.txt","content":"content {i}"}}"#),
        );
        result(&w);
    }
    let ids: Vec<u64> = (0..8)
        .map(|i| r.send("s1", "read_file", &format!(r#"{{"path":"f{i}.txt"}}"#)))
        .collect();
    for _ in 0..ids.len() {
        let reply = read_runner_reply(&mut r.stdout).unwrap();
        let i = ids.iter().position(|&x| x == reply.id).unwrap();
        assert_eq!(result(&answer_of(reply)).0, format!("content {i}"));
    }
}
