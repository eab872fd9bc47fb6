//! Issue 22 item 2: a `run` call's box is built by a helper forked ahead of the call
//! (docs/spec.md §4, "Pre-forked helpers"), and the rules that keep that as sound as a helper
//! started for the call: an idle helper, and the zygote that forks it, hold nothing of any
//! session (no environment, no descriptor but their own four, not a byte of what a call
//! sent); a helper runs exactly one box and is gone after it; a killed runner leaves none
//! behind and a reset ends the one a session's call used; a killed idle helper, or a killed
//! zygote, is replaced, and a call meanwhile still runs.
//!
//! Each test drives a real `boxmaker __runner` over its frames (as the gate would), with real
//! boxes, started by root and by a normal user (`setpriv --reuid`) where this machine can.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use proto::run::{
    RunnerAnswer, RunnerReply, RunnerRequest, read_runner_reply, write_runner_request,
};
use proto::{CallId, DataClass, SessionId, ToolRequest, ToolResponse};
use serde_json::Value;
use testkit::{As, fresh_dir, open_to_everyone, wait_until};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");
/// What a call hands its box through the tool's `env`: never in an idle helper.
const SECRET_VAR: &str = "PREFORK_TEST_SECRET";
/// How long anything here may take before the test fails (not a timing assertion).
const PATIENCE: Duration = Duration::from_secs(60);

// ---- the runner, over its frames -----------------------------------------------------

struct Runner {
    child: Child,
    stdin: ChildStdin,
    replies: mpsc::Receiver<RunnerReply>,
    next: u64,
}

/// A config directory for `who`, and a runner started on it with `secret` in its
/// environment (the `run` tool passes it to its boxes).
fn start(name: &str, who: As, secret: &str) -> (PathBuf, Runner) {
    start_with(name, who, secret, "")
}

/// As [`start`], with `extra` TOML in the config (and `data/` made in its directory).
fn start_with(name: &str, who: As, secret: &str, extra: &str) -> (PathBuf, Runner) {
    let dir = fresh_dir(
        env!("CARGO_TARGET_TMPDIR"),
        "prefork",
        &format!("{name}-{who:?}"),
    );
    std::fs::create_dir_all(dir.join("data")).unwrap();
    // A normal user must be able to make the state directory and read the config.
    open_to_everyone(&dir.join("data"), env!("CARGO_TARGET_TMPDIR"));
    std::fs::write(
        dir.join("boxmaker.toml"),
        format!(
            "[gate]\nstate = \"state\"\n\n[box]\ntimeout_seconds = 60\n\n\
             [[tool]]\nname = \"run\"\nbuiltin = \"run\"\nenv = [\"{SECRET_VAR}\"]\n\n\
             [[grant]]\ntool = \"*\"\neffect = \"allow\"\n{extra}"
        ),
    )
    .unwrap();
    // The person's word for it, as `who` with the HOME the runner gets (docs/spec.md §6,
    // "Whose config").
    if let Err(why) = testkit::trust_as(
        who.command(BIN).env("HOME", &dir),
        dir.join("boxmaker.toml"),
    ) {
        panic!("{who:?}: boxmaker trust: {why}");
    }
    let runner = spawn_runner(&dir, who, secret);
    (dir, runner)
}

fn spawn_runner(dir: &Path, who: As, secret: &str) -> Runner {
    let mut child = who
        .command(BIN)
        .arg("__runner")
        .arg("--config")
        .arg(dir.join("boxmaker.toml"))
        .env(SECRET_VAR, secret)
        .env("HOME", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, replies) = mpsc::channel();
    std::thread::spawn(move || {
        while let Ok(reply) = read_runner_reply(&mut stdout) {
            if tx.send(reply).is_err() {
                break;
            }
        }
    });
    Runner {
        child,
        stdin,
        replies,
        next: 1,
    }
}

impl Runner {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a `run` call of `session` with `argv`; returns its id.
    fn send_run(&mut self, session: &str, argv: &[&str]) -> u64 {
        let id = self.next;
        self.next += 1;
        let args = serde_json::json!({ "argv": argv }).to_string();
        let req = ToolRequest {
            session: SessionId::new(session).unwrap(),
            call: CallId(id),
            tool: "run".into(),
            arguments: args,
        };
        write_runner_request(
            &mut self.stdin,
            &RunnerRequest::call(id, req, DataClass::Public, false),
        )
        .unwrap();
        self.stdin.flush().unwrap();
        id
    }

    fn reset(&mut self, session: &str) -> u64 {
        let id = self.next;
        self.next += 1;
        let order = proto::run::Order::ResetSession {
            session: SessionId::new(session).unwrap(),
        };
        write_runner_request(&mut self.stdin, &RunnerRequest::new(id, order)).unwrap();
        self.stdin.flush().unwrap();
        id
    }

    /// The reply to `id` (egress events and other replies are skipped).
    fn reply(&mut self, id: u64) -> RunnerAnswer {
        loop {
            let r = self
                .replies
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|e| panic!("no reply to call {id}: {e}"));
            if r.id == id {
                return r.reply;
            }
        }
    }

    /// A `run` call to its end: the command's exit and stdout.
    fn run(&mut self, session: &str, argv: &[&str]) -> (i64, String) {
        let id = self.send_run(session, argv);
        match self.reply(id) {
            RunnerAnswer::Answer {
                response: ToolResponse::Result { content, .. },
            } => {
                let v: Value = serde_json::from_str(&content).unwrap();
                (
                    v["exit"].as_i64().unwrap(),
                    v["stdout"].as_str().unwrap().to_string(),
                )
            }
            other => panic!("run {argv:?}: {other:?}"),
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---- processes, from /proc -------------------------------------------------------------

/// A process as the kernel names it: pid and start time (a reused pid is another process).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Proc {
    pid: u32,
    start: u64,
}

/// `pid`'s parent and start time.
fn stat(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`: comm may hold spaces and parentheses.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split(' ').collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    Some((fields.get(1)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

fn alive(p: Proc) -> bool {
    stat(p.pid).is_some_and(|(_, start)| start == p.start)
}

fn children(parent: u32) -> Vec<Proc> {
    let mut found: Vec<Proc> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let (ppid, start) = stat(pid)?;
            (ppid == parent).then_some(Proc { pid, start })
        })
        .collect();
    found.sort_by_key(|p| p.pid);
    found
}

fn cmdline(pid: u32) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .unwrap_or_default()
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect()
}

/// `pid`'s name (`/proc/PID/comm`).
fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim_end()
        .to_string()
}

/// The runner's zygote: its child started as `boxmaker __boxmaker-sandbox-helper --zygote`
/// (the helpers it forks share that command line, under another name).
fn zygote(runner: u32) -> Option<Proc> {
    children(runner).into_iter().find(|p| {
        cmdline(p.pid).get(1..) == Some(&[sandbox::HELPER_ARG.into(), sandbox::ZYGOTE_FLAG.into()])
            && comm(p.pid) != sandbox::HELPER_NAME
    })
}

/// The runner's helpers that are idle: forked by the zygote as the runner's children, and
/// no box of theirs running a command (each has at most its next box's init, cloned ahead,
/// which has no child).
fn idle_helpers(runner: u32) -> Vec<Proc> {
    children(runner)
        .into_iter()
        .filter(|h| comm(h.pid) == sandbox::HELPER_NAME)
        .filter(|h| {
            children(h.pid)
                .iter()
                .all(|init| children(init.pid).is_empty())
        })
        .collect()
}

/// Waits until the runner's pool is full again; returns the zygote and its idle helpers.
fn full_pool(runner: u32) -> (Proc, Vec<Proc>) {
    let mut found = None;
    wait_until("the pool to fill", PATIENCE, || {
        found = zygote(runner)
            .map(|z| (z, idle_helpers(runner)))
            .filter(|(_, idle)| idle.len() == sandbox::IDLE_HELPERS);
        found.is_some()
    });
    found.unwrap()
}

/// The helper that built the box in which the process whose command line holds `marker`
/// runs: that process's parent is the box's init, whose parent is the helper.
fn helper_of(marker: &str) -> Proc {
    let mut found = None;
    wait_until("the box's command to start", PATIENCE, || {
        found = std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|&pid| cmdline(pid).iter().any(|a| a == marker))
            .and_then(stat)
            .and_then(|(init, _)| stat(init))
            .and_then(|(helper, _)| Some((helper, stat(helper)?.1)));
        found.is_some()
    });
    let (pid, start) = found.unwrap();
    Proc { pid, start }
}

/// Every byte of `pid`'s memory that a process can write — heap, stack, anonymous and
/// writable mappings, where anything it received would be — (root reads any process's).
fn memory(pid: u32) -> Vec<u8> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    let mut all = Vec::new();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        if !perms.starts_with("rw") || line.ends_with("[vvar]") || line.ends_with("[vsyscall]") {
            continue;
        }
        let (a, b) = range.split_once('-').unwrap();
        let (a, b) = (
            u64::from_str_radix(a, 16).unwrap(),
            u64::from_str_radix(b, 16).unwrap(),
        );
        let mut buf = vec![0u8; (b - a) as usize];
        if mem.seek(SeekFrom::Start(a)).is_ok() && mem.read_exact(&mut buf).is_ok() {
            all.extend_from_slice(&buf);
        }
    }
    all
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// What `pid`'s descriptors are (`pipe:[…]`, `socket:[…]`, `/dev/null`, …), by number.
fn descriptors(pid: u32) -> Vec<(u32, String)> {
    let mut fds: Vec<(u32, String)> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_str()?.parse().ok()?;
            Some((n, std::fs::read_link(e.path()).ok()?.display().to_string()))
        })
        .collect();
    fds.sort();
    fds
}

// ---- the rules ---------------------------------------------------------------------------

/// A `run` call's box is built by a helper that was idle before the call came (no helper
/// started on the call's path), and that helper runs that one box and is gone once the call
/// is answered; the next call gets another.
#[test]
fn test_a_run_call_takes_an_idle_helper_which_runs_that_one_box_and_is_gone() {
    for who in As::all() {
        let (_dir, mut r) = start("one-box", who, "unused");
        // The first call starts the pool.
        assert_eq!(r.run("s1", &["/bin/true"]).0, 0);
        let (_, idle) = full_pool(r.pid());

        let marker = format!("7.{}", std::process::id());
        let call = r.send_run("s1", &["/bin/sleep", &marker]);
        let helper = helper_of(&marker);
        assert!(
            idle.contains(&helper),
            "{who:?}: the box's helper {helper:?} was not one of the idle ones {idle:?}: \
             it was started for the call"
        );
        match r.reply(call) {
            RunnerAnswer::Answer {
                response: ToolResponse::Result { .. },
            } => {}
            other => panic!("{who:?}: {other:?}"),
        }
        wait_until("the used helper to exit", PATIENCE, || !alive(helper));
        let (_, idle_now) = full_pool(r.pid());
        assert!(
            !idle_now.contains(&helper),
            "{who:?}: a used helper is idle again"
        );

        let marker2 = format!("8.{}", std::process::id());
        let call = r.send_run("s2", &["/bin/sleep", &marker2]);
        let second = helper_of(&marker2);
        assert_ne!(second, helper, "{who:?}: one helper ran two boxes");
        r.reply(call);
    }
}

/// What a call sends its box — the tool's `env` variable, its arguments, its session — is in
/// no idle helper and not in the zygote: not in their environment, not in their memory, not
/// behind a descriptor (they hold only their own four: three pipes and a socket; the zygote
/// its socket and its stdio).
#[test]
fn test_idle_helpers_and_the_zygote_hold_nothing_of_any_session() {
    for who in As::all() {
        let secret = format!("secret-{}-{who:?}-x9", std::process::id());
        let (_dir, mut r) = start("nothing-held", who, &secret);
        let argument = format!("argument-{}-{who:?}-q4", std::process::id());
        let session = format!("alice-{}", std::process::id());
        let script = format!("echo ${SECRET_VAR}; echo {argument}");
        let (exit, out) = r.run(&session, &["/bin/sh", "-c", &script]);
        // The box did get them: the test looks for something that was there to leak.
        assert_eq!(exit, 0);
        assert_eq!(out, format!("{secret}\n{argument}\n"), "{who:?}");
        // Every idle helper now was forked after that call (the pool refilled), and one of
        // the first four may still be idle: both kinds are looked at.
        assert_eq!(r.run(&session, &["/bin/true"]).0, 0);
        let (zygote, idle) = full_pool(r.pid());
        // The inits the idle helpers cloned ahead for their next boxes.
        let inits: Vec<Proc> = idle.iter().flat_map(|h| children(h.pid)).collect();
        assert_eq!(
            inits.len(),
            idle.len(),
            "{who:?}: {idle:?} cloned {inits:?} ahead"
        );
        for p in std::iter::once(zygote)
            .chain(idle.iter().copied())
            .chain(inits.iter().copied())
        {
            let environ = std::fs::read(format!("/proc/{}/environ", p.pid)).unwrap();
            assert!(
                environ.is_empty(),
                "{who:?}: {p:?} has an environment: {}",
                String::from_utf8_lossy(&environ).replace('\0', " ")
            );
            let mem = memory(p.pid);
            assert!(!mem.is_empty(), "{who:?}: could not read {p:?}'s memory");
            for needle in [&secret, &argument, &session] {
                assert!(
                    !holds(&mem, needle),
                    "{who:?}: {p:?} holds {needle:?} in its memory"
                );
            }
            let fds = descriptors(p.pid);
            let numbers: Vec<u32> = fds.iter().map(|(n, _)| *n).collect();
            if p == zygote {
                // Its stdio and its socket to the runner.
                assert_eq!(numbers, [0, 1, 2, 3], "{who:?}: the zygote holds {fds:?}");
                assert!(fds[3].1.starts_with("socket:"), "{who:?}: {fds:?}");
                continue;
            }
            // A helper: its stdio pipes and its socket to the runner, and the pipes and the
            // socket between it and its next init; the init cloned ahead, copies of those.
            assert_eq!(numbers[..4], [0, 1, 2, 3], "{who:?}: {p:?} holds {fds:?}");
            assert!(
                fds[..3].iter().all(|(_, what)| what.starts_with("pipe:"))
                    && fds[3].1.starts_with("socket:"),
                "{who:?}: {p:?} holds {fds:?}"
            );
            assert!(
                fds.iter()
                    .all(|(_, what)| what.starts_with("pipe:") || what.starts_with("socket:")),
                "{who:?}: {p:?} holds {fds:?}"
            );
        }
    }
}

/// A runner killed outright leaves no zygote and no idle helper: each reads end of file on
/// its socket and exits. A new runner starts its own.
#[test]
fn test_a_killed_runner_leaves_no_helper_behind() {
    for who in As::all() {
        let (dir, mut r) = start("killed", who, "unused");
        assert_eq!(r.run("s1", &["/bin/true"]).0, 0);
        let (zygote, idle) = full_pool(r.pid());
        r.child.kill().unwrap();
        r.child.wait().unwrap();
        wait_until("the zygote and idle helpers to exit", PATIENCE, || {
            !alive(zygote) && idle.iter().all(|h| !alive(*h))
        });

        let mut again = spawn_runner(&dir, who, "unused");
        assert_eq!(again.run("s1", &["/bin/true"]).0, 0);
        let (zygote2, idle2) = full_pool(again.pid());
        assert_ne!(zygote2, zygote);
        assert!(idle2.iter().all(|h| !idle.contains(h)));
    }
}

/// A reset ends the helper of the session's running call with its box; the next call, of
/// another session, runs on another helper.
#[test]
fn test_a_reset_ends_the_helper_of_the_sessions_running_call() {
    let (_dir, mut r) = start("reset", As::Me, "unused");
    assert_eq!(r.run("s1", &["/bin/true"]).0, 0);
    full_pool(r.pid());
    let marker = format!("300.{}", std::process::id());
    let call = r.send_run("s1", &["/bin/sleep", &marker]);
    let helper = helper_of(&marker);
    let reset = r.reset("s1");
    match r.reply(call) {
        RunnerAnswer::Answer {
            response: ToolResponse::Failed { message },
        } => assert!(message.contains("reset by an operator"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(r.reply(reset), RunnerAnswer::Reset { .. }));
    wait_until("the stopped call's helper to exit", PATIENCE, || {
        !alive(helper)
    });
    let marker2 = format!("301.{}", std::process::id());
    let call = r.send_run("s2", &["/bin/sleep", &marker2]);
    assert_ne!(helper_of(&marker2), helper);
    r.reset("s2");
    r.reply(call);
}

/// Killed idle helpers are dropped and replaced, and so is a killed zygote; a call that comes
/// meanwhile runs (on a helper of its own if none is idle yet).
#[test]
fn test_killed_idle_helpers_and_zygote_are_replaced_and_calls_still_run() {
    for who in As::all() {
        let (_dir, mut r) = start("replaced", who, "unused");
        assert_eq!(r.run("s1", &["/bin/true"]).0, 0);
        let (zygote, idle) = full_pool(r.pid());

        // Every idle helper killed: the next calls find them dead and go on. The inits they
        // cloned ahead die with them.
        let inits: Vec<Proc> = idle.iter().flat_map(|h| children(h.pid)).collect();
        assert_eq!(inits.len(), idle.len(), "{who:?}");
        for h in &idle {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(h.pid as i32).unwrap(),
                rustix::process::Signal::KILL,
            );
        }
        for _ in 0..sandbox::IDLE_HELPERS + 1 {
            assert_eq!(r.run("s1", &["/bin/echo", "hi"]), (0, "hi\n".into()));
        }
        wait_until(
            "the inits cloned ahead to die with their helpers",
            PATIENCE,
            || inits.iter().all(|i| !alive(*i)),
        );
        let (zygote_now, idle_now) = full_pool(r.pid());
        assert_eq!(
            zygote_now, zygote,
            "{who:?}: the zygote was replaced needlessly"
        );
        assert!(idle_now.iter().all(|h| !idle.contains(h)), "{who:?}");

        // The zygote killed, and the idle helpers with it: a new zygote, new helpers.
        for p in std::iter::once(zygote).chain(idle_now.iter().copied()) {
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(p.pid as i32).unwrap(),
                rustix::process::Signal::KILL,
            );
        }
        for _ in 0..sandbox::IDLE_HELPERS + 2 {
            assert_eq!(r.run("s2", &["/bin/echo", "hi"]), (0, "hi\n".into()));
        }
        let (zygote_new, _) = full_pool(r.pid());
        assert_ne!(zygote_new, zygote, "{who:?}");
    }
}

/// An idle helper's next init was cloned before the call, but the box's mounts are the host's
/// as they are at the call: a file system mounted on a `[[mount]]`'s host directory while the
/// pool was full is what the next box shows there, not the empty directory under it.
#[test]
fn test_a_box_shows_the_host_mounts_of_its_call_not_of_its_helpers_start() {
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    assert!(
        root,
        "this test mounts a tmpfs on the host: it runs as root (CI does)"
    );
    for who in As::all() {
        let extra = "\n[[mount]]\nhost = \"data\"\nat = \"/data/m\"\nclass = \"public\"\n";
        let (dir, mut r) = start_with("host-mounts", who, "unused", extra);
        assert_eq!(r.run("s1", &["/bin/true"]).0, 0);
        full_pool(r.pid());
        let data = dir.join("data");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "mode=0755,size=1m", "prefork-test"])
            .arg(&data)
            .status()
            .unwrap();
        assert!(mounted.success());
        std::fs::write(data.join("fresh.txt"), "mounted after the pool filled\n").unwrap();
        let seen = r.run("s1", &["/bin/cat", "/data/m/fresh.txt"]);
        let _ = std::process::Command::new("umount").arg(&data).status();
        assert_eq!(
            seen,
            (0, "mounted after the pool filled\n".into()),
            "{who:?}"
        );
    }
}
