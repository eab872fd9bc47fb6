//! Issue 19 item 6: an approval binds what the call runs, not only its text (docs/spec.md
//! §3.3 step 6, "What an approval binds"). Each attack runs through the real binary, real
//! boxes and a real gate: a person approves `sh /work/s.sh` while the script is harmless,
//! and the agent then changes what that same text runs — by rewriting the script, by
//! racing the run, through an interpreter or an executable in `/work`, or through a
//! symlink. Each must ask the person again (shown that the file changed) or fail; none may
//! run what nobody approved.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::Lab;

/// No call here may take longer; past it the test fails, never hangs.
const DEADLINE: Duration = Duration::from_secs(60);

const CONFIG: &str = r#"
[gate]
state = "state"
approval_ttl = 300

[box]
timeout_seconds = 30

[[mount]]
name = "scratch"
host = "scratch"
at = "/data/scratch"
class = "public"
write = true

# The call a person approves.
[[tool]]
name = "run"
builtin = "run"

# What the agent may do without asking: write files, and run its own shell in the box.
[[tool]]
name = "write_file"
builtin = "write_file"

[[tool]]
name = "prep"
builtin = "run"

[[grant]]
tool = "run"
effect = "ask"

[[grant]]
tool = "write_file"
effect = "allow"

[[grant]]
tool = "prep"
effect = "allow"
"#;

/// The lab's `uid` is the uid (and gid) every boxmaker process of the test runs as: `None`,
/// the test's own (root here); `Some`, an ordinary user's, with no capability at all.
struct Env {
    lab: Lab,
    dir: PathBuf,
}

impl Env {
    fn new(name: &str) -> Env {
        Env::as_user(name, None)
    }

    /// As [`Env::new`], with every boxmaker process running as `uid` when the test runs as
    /// root (the state directory and the mount then belong to it, as they would to a person
    /// running boxmaker).
    fn as_user(name: &str, uid: Option<u32>) -> Env {
        let mut lab = testkit::lab!("approval_files", name);
        let dir = lab.dir.clone();
        lab.mkdir("scratch");
        // World-writable: only boxmaker's rules stand between a box user and the mount.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("scratch"), std::fs::Permissions::from_mode(0o777))
            .unwrap();
        lab.write_config(CONFIG);
        if let Some(uid) = uid {
            for p in [dir.clone(), dir.join("scratch"), dir.join("boxmaker.toml")] {
                std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
            }
        }
        lab.uid = uid;
        // The tester's config, trusted by the user every boxmaker process runs as (with
        // that user's HOME), as a person trusts the config they wrote.
        if let Err(why) = testkit::trust_as(&mut lab.bare(), lab.config()) {
            panic!("boxmaker trust: {why}");
        }
        Env { lab, dir }
    }

    /// A boxmaker command as this test's user.
    fn cmd(&self) -> Command {
        self.lab.bare()
    }

    fn config(&self) -> PathBuf {
        self.lab.config()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.lab.cmd(args).stdin(Stdio::null()).output().unwrap()
    }

    /// A call the gate answers at once (the agent's own `write_file` and `prep`).
    fn call_now(&self, session: &str, tool: &str, args: &Value) -> Value {
        let o = self.run(&[
            "call",
            "--session",
            session,
            "--json",
            tool,
            &args.to_string(),
        ]);
        let text = String::from_utf8_lossy(&o.stdout);
        serde_json::from_str(text.trim()).unwrap_or_else(|_| {
            panic!(
                "{tool} {args}: no JSON answer: {text}{}",
                String::from_utf8_lossy(&o.stderr)
            )
        })
    }

    fn write(&self, session: &str, path: &str, content: &str) {
        let v = self.call_now(
            session,
            "write_file",
            &json!({"path": path, "content": content}),
        );
        assert_eq!(v["status"], "result", "{v}");
    }

    /// Runs `script` with `sh -c` in the session's box, without asking anyone.
    fn prep(&self, session: &str, script: &str) {
        let v = self.call_now(session, "prep", &json!({"argv": ["sh", "-c", script]}));
        assert_eq!(v["status"], "result", "{v}");
        let content: Value = serde_json::from_str(v["content"].as_str().unwrap()).unwrap();
        assert_eq!(content["exit"], 0, "{script}: {content}");
    }

    /// `run` with `argv` in the background: it waits for a person, or answers at once.
    fn spawn_run(&self, session: &str, argv: &[&str]) -> Call {
        let args = json!({ "argv": argv }).to_string();
        let mut child = self
            .cmd()
            .args(["call", "--config"])
            .arg(self.config())
            .args(["--session", session, "--json", "run", &args])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = BufReader::new(child.stderr.take().unwrap());
        Call {
            child,
            err,
            what: args,
        }
    }

    /// The pending approval `id` as `approvals --json` shows it.
    fn shown(&self, id: &str) -> Value {
        let o = self.run(&["approvals", "--json"]);
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["body"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} is not listed: {v}"))
    }

    /// What `approvals` prints for a person.
    fn listing(&self) -> String {
        let o = self.run(&["approvals"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn decide(&self, args: &[&str]) -> Output {
        self.run(args)
    }

    fn approve(&self, id: &str) {
        let o = self.decide(&["approve", id]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    fn approve_for_session(&self, id: &str) {
        let o = self.decide(&["approve", "--for", "10m", id]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    fn refuse(&self, id: &str) {
        let o = self.decide(&["refuse", id]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

struct Call {
    child: Child,
    err: BufReader<ChildStderr>,
    what: String,
}

/// How a call went: it asked a person (the approval id), or it ended with this answer.
enum Went {
    Asked(String),
    Ended(Value),
}

impl Call {
    /// Reads the call's stderr until it asks for approval, or until it ends.
    fn went(&mut self) -> Went {
        let mut line = String::new();
        loop {
            line.clear();
            if self.err.read_line(&mut line).unwrap() == 0 {
                return Went::Ended(self.answer());
            }
            if let Some(rest) = line.strip_prefix("pending approval ") {
                return Went::Asked(rest.split_whitespace().next().unwrap().to_string());
            }
        }
    }

    /// Waits for the call to ask a person; a call that ran without asking fails the test.
    fn asks(&mut self) -> String {
        match self.went() {
            Went::Asked(id) => id,
            Went::Ended(v) => panic!("{} ran without asking anyone: {v}", self.what),
        }
    }

    /// The call's final answer.
    fn answer(&mut self) -> Value {
        let start = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("{} did not finish within {DEADLINE:?}", self.what);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut out = String::new();
        std::io::Read::read_to_string(self.child.stdout.as_mut().unwrap(), &mut out).unwrap();
        serde_json::from_str(out.trim())
            .unwrap_or_else(|_| panic!("{}: no JSON answer: {out:?}", self.what))
    }
}

/// The `run` result's stdout, or the `failed` message prefixed with `failed: `.
fn outcome(v: &Value) -> String {
    match v["status"].as_str() {
        Some("result") => {
            let c: Value = serde_json::from_str(v["content"].as_str().unwrap()).unwrap();
            c["stdout"].as_str().unwrap().to_string()
        }
        Some("failed") => format!("failed: {}", v["message"].as_str().unwrap()),
        _ => format!("{v}"),
    }
}

/// The file entry an approval shows for `path`.
fn file_shown<'a>(approval: &'a Value, path: &str) -> &'a Value {
    approval["files"]
        .as_array()
        .unwrap_or_else(|| panic!("the approval shows no files it covers: {approval}"))
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("the approval does not show {path}: {approval}"))
}

/// Asks for `argv`, approves it for the session, and returns what it printed.
fn approved_for_session(env: &Env, session: &str, argv: &[&str]) -> String {
    let mut call = env.spawn_run(session, argv);
    let id = call.asks();
    env.approve_for_session(&id);
    outcome(&call.answer())
}

// ---------------------------------------------------------------------------------------

#[test]
fn a_script_rewritten_after_approval_for_the_session_asks_again_and_says_it_changed() {
    let env = Env::new("rewrite");
    env.write("s1", "/work/s.sh", "echo harmless\n");
    let argv = ["sh", "/work/s.sh"];
    assert_eq!(approved_for_session(&env, "s1", &argv), "harmless\n");
    // The same call with the same script: the remembered approval covers it.
    let mut same = env.spawn_run("s1", &argv);
    match same.went() {
        Went::Ended(v) => assert_eq!(outcome(&v), "harmless\n"),
        Went::Asked(id) => panic!("the unchanged call asked again ({id})"),
    }
    // The agent rewrites the script; the text of the call is the same.
    env.write("s1", "/work/s.sh", "echo EVIL\n");
    let mut call = env.spawn_run("s1", &argv);
    let id = call.asks();
    let shown = env.shown(&id);
    let file = file_shown(&shown, "/work/s.sh");
    assert_eq!(file["kind"], "file", "{shown}");
    assert!(
        file["was"]
            .as_str()
            .is_some_and(|w| w.starts_with("sha256:")),
        "the person is not shown that the script changed: {shown}"
    );
    assert_ne!(Some(file["was"].as_str().unwrap()), file["sha256"].as_str());
    let listing = env.listing();
    assert!(
        listing.contains("covers: /work/s.sh") && listing.contains("CHANGED since"),
        "{listing}"
    );
    env.refuse(&id);
    assert_eq!(call.answer()["reason"], "approval_refused");
    // Written back as it was, the script is the one the person approved again.
    env.write("s1", "/work/s.sh", "echo harmless\n");
    let mut back = env.spawn_run("s1", &argv);
    match back.went() {
        Went::Ended(v) => assert_eq!(outcome(&v), "harmless\n"),
        Went::Asked(id) => panic!("the approved content asked again ({id})"),
    }
}

#[test]
fn a_script_rewritten_between_approval_and_exec_never_runs_unapproved() {
    rewritten_between_approval_and_exec(&Env::new("race"), "s1");
}

/// The runner as an ordinary user (no capability, the box user mapped to that user's own
/// uid): the files are read, hashed and pinned the same way, and the copy runs.
#[test]
fn the_same_holds_when_boxmaker_runs_as_an_ordinary_user() {
    // Only root can start processes as another user; an ordinary user already is one.
    let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    let uid = root.then_some(65534);
    let env = Env::as_user("user-race", uid);
    env.write("s1", "/work/s.sh", "echo harmless\n");
    let argv = ["sh", "/work/s.sh"];
    assert_eq!(approved_for_session(&env, "s1", &argv), "harmless\n");
    env.write("s1", "/work/s.sh", "echo EVIL\n");
    let mut call = env.spawn_run("s1", &argv);
    let id = call.asks();
    assert!(file_shown(&env.shown(&id), "/work/s.sh")["was"].is_string());
    env.refuse(&id);
    call.answer();
    if uid.is_some() {
        let owner = std::os::unix::fs::MetadataExt::uid(
            &std::fs::metadata(env.dir.join("state/work/s1/s.sh")).unwrap(),
        );
        assert_eq!(owner, 65534, "the box wrote as the ordinary user");
    }
    // A session of its own: the approval remembered above must not answer there.
    rewritten_between_approval_and_exec(&env, "s2");
}

fn rewritten_between_approval_and_exec(env: &Env, session: &str) {
    env.write(session, "/work/s.sh", "echo harmless\n");
    let argv = ["sh", "/work/s.sh"];
    // Rewritten while the person looks: what they approve is what they were shown.
    let mut call = env.spawn_run(session, &argv);
    let id = call.asks();
    env.write(session, "/work/s.sh", "echo EVIL\n");
    env.approve(&id);
    let got = outcome(&call.answer());
    assert!(
        got.starts_with("failed: ") && got.contains("/work/s.sh") && got.contains("changed"),
        "ran what nobody approved: {got}"
    );

    // Flipped as fast as a box can, all through the calls: each run prints what the person
    // was shown, or fails; never the other script.
    env.prep(
        session,
        "printf 'echo harmless\\n' > /work/good; printf 'echo EVIL\\n' > /work/evil",
    );
    let flipper = env
        .cmd()
        .args(["call", "--config"])
        .arg(env.config())
        .args(["--session", session, "prep"])
        .arg(
            json!({"argv": ["sh", "-c",
                "end=$(($(date +%s)+20)); while [ $(date +%s) -lt $end ]; do \
                 cp /work/good /work/.t; mv /work/.t /work/s.sh; \
                 cp /work/evil /work/.t; mv /work/.t /work/s.sh; done"]})
            .to_string(),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sha_of = |text: &str| {
        use std::io::Write;
        let mut c = Command::new("sha256sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        let o = c.wait_with_output().unwrap();
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    let (good, evil) = (sha_of("echo harmless\n"), sha_of("echo EVIL\n"));
    // The race is on: the script is seen both ways from the host.
    let script = env.dir.join("state/work").join(session).join("s.sh");
    let (mut seen_good, mut seen_evil) = (false, false);
    let start = Instant::now();
    while !(seen_good && seen_evil) {
        assert!(start.elapsed() < DEADLINE, "the flipper never flipped");
        match std::fs::read_to_string(&script).as_deref() {
            Ok("echo harmless\n") => seen_good = true,
            Ok("echo EVIL\n") => seen_evil = true,
            _ => {}
        }
    }
    let (mut ran, mut refused_to_run) = (0, 0);
    for _ in 0..6 {
        let mut call = env.spawn_run(session, &argv);
        let id = call.asks();
        let shown = env.shown(&id);
        let sha = file_shown(&shown, "/work/s.sh")["sha256"]
            .as_str()
            .unwrap()
            .to_string();
        let expect = if sha == good {
            "harmless\n"
        } else {
            assert_eq!(sha, evil, "{shown}");
            "EVIL\n"
        };
        env.approve(&id);
        let got = outcome(&call.answer());
        if got.starts_with("failed: ") {
            assert!(got.contains("changed"), "{got}");
            refused_to_run += 1;
        } else {
            assert_eq!(got, expect, "shown {sha}, ran something else");
            ran += 1;
        }
    }
    let mut flipper = flipper;
    let _ = flipper.kill();
    let _ = flipper.wait();
    eprintln!("under the race: {ran} ran what was shown, {refused_to_run} refused to run");
    assert_eq!(ran + refused_to_run, 6);
    // Each program copy went with its call's box (and when the race refused every call,
    // none was made: the directory is made with the first).
    let left: Vec<_> = match std::fs::read_dir(env.dir.join("state/pins")) {
        Ok(dir) => dir.flatten().map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => panic!("cannot read the pins directory: {e}"),
    };
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn an_interpreters_program_and_an_executable_in_work_are_bound_and_a_c_string_is_not() {
    let env = Env::new("forms");
    env.prep(
        "s1",
        "printf 'print(\"harmless\")\\n' > /work/x.py; \
         printf '#!/bin/sh\\necho harmless\\n' > /work/run.sh; chmod +x /work/run.sh; \
         printf 'echo harmless\\n' > /work/s.sh",
    );
    // python3 /work/x.py: the interpreter's program.
    let py = ["python3", "/work/x.py"];
    assert_eq!(approved_for_session(&env, "s1", &py), "harmless\n");
    env.write("s1", "/work/x.py", "print('EVIL')\n");
    let mut call = env.spawn_run("s1", &py);
    let id = call.asks();
    let shown = env.shown(&id);
    assert!(
        file_shown(&shown, "/work/x.py")["was"].is_string(),
        "{shown}"
    );
    env.refuse(&id);
    call.answer();

    // ./run.sh: the executable itself lies in /work.
    let exe = ["./run.sh"];
    assert_eq!(approved_for_session(&env, "s1", &exe), "harmless\n");
    env.prep("s1", "printf '#!/bin/sh\\necho EVIL\\n' > /work/run.sh");
    let mut call = env.spawn_run("s1", &exe);
    let id = call.asks();
    let shown = env.shown(&id);
    let file = file_shown(&shown, "/work/run.sh");
    assert_eq!(file["arg"], 0, "{shown}");
    assert!(file["was"].is_string(), "{shown}");
    env.refuse(&id);
    call.answer();

    // A writable mount is a writable place too.
    env.prep("s1", "printf 'echo harmless\\n' > /data/scratch/m.sh");
    let mounted = ["sh", "/data/scratch/m.sh"];
    assert_eq!(approved_for_session(&env, "s1", &mounted), "harmless\n");
    env.prep("s1", "printf 'echo EVIL\\n' > /data/scratch/m.sh");
    let mut call = env.spawn_run("s1", &mounted);
    let id = call.asks();
    env.refuse(&id);
    call.answer();

    // bash -c 'sh /work/s.sh': the -c string is a program text, not a file; what it names
    // is not bound, and the approval does not claim it is (docs/spec.md says so).
    let mut call = env.spawn_run("s1", &["bash", "-c", "sh /work/s.sh"]);
    let id = call.asks();
    let shown = env.shown(&id);
    let claims = shown["files"]
        .as_array()
        .map(|fs| fs.iter().any(|f| f["path"] == "/work/s.sh"))
        .unwrap_or(false);
    assert!(!claims, "{shown}");
    env.refuse(&id);
    call.answer();
}

#[test]
fn a_symlink_is_shown_as_one_never_followed_out_of_the_box_and_never_remembered() {
    let env = Env::new("symlink");
    // A host file the box cannot see: a symlink to it shows nothing of it.
    let outside = env.dir.join("outside.txt");
    std::fs::write(&outside, "host secret\n").unwrap();
    env.prep(
        "s1",
        &format!(
            "printf 'echo harmless\\n' > /work/good.sh; printf 'echo EVIL\\n' > /work/evil.sh; \
             ln -s /work/good.sh /work/s.sh; ln -s /etc/passwd /work/p; ln -s {} /work/out",
            outside.display()
        ),
    );
    let argv = ["sh", "/work/s.sh"];
    let mut call = env.spawn_run("s1", &argv);
    let id = call.asks();
    // What cannot be bound cannot be remembered for the session: asked every time.
    let remembered = env.decide(&["approve", "--for", "10m", &id]);
    if !remembered.status.success() {
        env.approve(&id);
    }
    assert_eq!(outcome(&call.answer()), "harmless\n");
    // The agent points the link elsewhere: the same call asks again.
    env.prep("s1", "ln -sf /work/evil.sh /work/s.sh");
    let mut call = env.spawn_run("s1", &argv);
    let id = call.asks();
    let shown = env.shown(&id);
    let file = file_shown(&shown, "/work/s.sh");
    assert_eq!(file["kind"], "unbound", "{shown}");
    let note = file["note"].as_str().unwrap();
    assert!(
        note.contains("symlink") && note.contains("/work/evil.sh"),
        "{shown}"
    );
    assert!(
        !remembered.status.success(),
        "a symlinked script was remembered for the session"
    );
    let why = String::from_utf8_lossy(&remembered.stderr);
    assert!(why.contains("/work/s.sh"), "{why}");
    env.refuse(&id);
    call.answer();

    // Links to /etc/passwd and out of the box: shown as links, their targets never read.
    let mut call = env.spawn_run("s1", &["cat", "/work/p", "/work/out"]);
    let id = call.asks();
    let shown = env.shown(&id);
    for path in ["/work/p", "/work/out"] {
        let f = file_shown(&shown, path);
        assert_eq!(f["kind"], "unbound", "{shown}");
        assert!(f["sha256"].is_null(), "{shown}");
    }
    assert!(!shown.to_string().contains("host secret"));
    env.refuse(&id);
    call.answer();
}
