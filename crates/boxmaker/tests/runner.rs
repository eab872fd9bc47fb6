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
        let lab = Lab::temp(env!("CARGO_BIN_EXE_boxmaker"));
        lab.write("notes/plan.txt", "the secret plan\n");
        lab.write("pub/readme.txt", "hello\n");
        lab.write("outside.txt", "host only\n");
        lab.write_config(
            r#"
[gate]
state = "state"

[box]
timeout_seconds = 20

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
"#,
        );
        Self { lab }
    }

    fn path(&self) -> &Path {
        &self.lab.dir
    }

    fn start(&self) -> Runner {
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
        let id = self.next;
        self.next += 1;
        let req = ToolRequest {
            session: SessionId::new(session).unwrap(),
            call: CallId(id),
            tool: tool.into(),
            arguments: arguments.into(),
        };
        // A fresh session, as the gate would say it: public, trusted.
        write_runner_request(
            &mut self.stdin,
            &RunnerRequest::call(id, req, DataClass::Public, false),
        )
        .unwrap();
        id
    }

    fn call(&mut self, session: &str, tool: &str, arguments: &str) -> ToolResponse {
        let id = self.send(session, tool, arguments);
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
