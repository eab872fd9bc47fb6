//! Test scaffolding for the end-to-end tests of `crates/boxmaker/tests/`, and never used by
//! shipped code (it is a dev-dependency of `crates/boxmaker` only).
//!
//! What it owns: a [`Lab`] (a fresh directory under the test crate's `CARGO_TARGET_TMPDIR`
//! with a config file and a state directory, and the `boxmaker` binary run against that
//! config), [`run_to_end`] (a child with a deadline, its output kept in files so a chatty
//! child never blocks), the paths `make deps` installs into ([`client_python`],
//! [`python_dir`], [`servers_dir`], …), a Python MCP SDK client run ([`Lab::python`]),
//! waiting for a file or socket ([`wait_for_path`]), and reading answers ([`stdout`],
//! [`json`]).
//!
//! `CARGO_BIN_EXE_boxmaker` and `CARGO_TARGET_TMPDIR` exist only while the test crate
//! compiles, so the kit takes them as arguments; [`lab!`] expands them at the call site.
//!
//! Test code: a failed unwrap or a panic here is a failed test, which is what we want.

#![forbid(unsafe_code)]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod pg;

use std::ffi::OsStr;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A [`Lab`] for the calling test crate: `lab!("group", "name")` is
/// `Lab::new(env!("CARGO_BIN_EXE_boxmaker"), env!("CARGO_TARGET_TMPDIR"), "group", "name")`.
#[macro_export]
macro_rules! lab {
    ($group:expr, $name:expr) => {
        $crate::Lab::new(
            env!("CARGO_BIN_EXE_boxmaker"),
            env!("CARGO_TARGET_TMPDIR"),
            $group,
            $name,
        )
    };
}

// ---------------------------------------------------------------------------------------
// Where things are.

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `crates/boxmaker/tests/python`: the client scripts.
pub fn python_dir() -> PathBuf {
    repo_root().join("crates/boxmaker/tests/python")
}

/// `crates/boxmaker/tests/servers`: the MCP servers written for the tests.
pub fn servers_dir() -> PathBuf {
    repo_root().join("crates/boxmaker/tests/servers")
}

/// `tests/node`: the npm clients and servers `make deps` installs.
pub fn node_dir() -> PathBuf {
    repo_root().join("tests/node")
}

/// The interpreter of the Python MCP SDK and Selenium: `make deps` installs them into the
/// project's own virtualenv, never into a system interpreter.
pub fn client_python() -> PathBuf {
    repo_root().join("tests/py/client-venv/bin/python3")
}

/// Fails (never skips) when `make deps` has not installed the Python SDK.
pub fn require_python_sdk() {
    let o = Command::new(client_python())
        .args(["-c", "import mcp.client.stdio, mcp.client.streamable_http"])
        .output();
    match o {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "the Python MCP SDK is missing: run `make deps` ({})",
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!(
            "the Python MCP SDK is missing: run `make deps` ({}: {e})",
            client_python().display()
        ),
    }
}

/// The tester's word for a config the test wrote (`BIN trust --config CONFIG`, as this
/// process's user and HOME; docs/spec.md §6, "Whose config"): boxmaker uses a config only
/// once trusted. `false` when boxmaker would not trust it (it does not load: the command
/// under test then says why).
pub fn trust(bin: impl AsRef<OsStr>, config: impl AsRef<OsStr>) -> bool {
    trust_as(&mut Command::new(bin), config).is_ok()
}

/// [`trust`] said by `cmd` — the binary as the user, with the HOME, the test's other
/// commands run with (the records are that user's) — and boxmaker's refusal when it would
/// not trust it.
pub fn trust_as(cmd: &mut Command, config: impl AsRef<OsStr>) -> Result<(), String> {
    let o = cmd
        .arg("trust")
        .arg("--config")
        .arg(config)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("boxmaker trust did not start: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// A Python MCP SDK client: `client_python() tests/python/SCRIPT`, in that directory, with
/// `BOXMAKER_BIN`, `BOXMAKER_CONFIG` and `env` in its environment. Fails when the SDK is
/// missing.
///
/// The config is trusted first (`boxmaker trust`): the test wrote it, it is the tester's.
pub fn python_client(bin: &Path, config: &Path, script: &str, env: &[(&str, &str)]) -> Command {
    require_python_sdk();
    trust(bin, config);
    let mut cmd = Command::new(client_python());
    cmd.arg(python_dir().join(script))
        .current_dir(python_dir())
        .env("BOXMAKER_BIN", bin)
        .env("BOXMAKER_CONFIG", config)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// A fresh, empty directory `tmpdir/group/name` (what was there before is removed).
pub fn fresh_dir(tmpdir: impl AsRef<Path>, group: &str, name: &str) -> PathBuf {
    let dir = tmpdir.as_ref().join(group).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---------------------------------------------------------------------------------------
// Running as a normal user.

/// Whether this process can run boxmaker as a normal user (it is root, setpriv exists).
pub fn can_be_a_user() -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    root && Path::new("/usr/bin/setpriv").exists()
}

/// `bin` as uid and gid 1000 with no supplementary groups (`setpriv --reuid`).
pub fn as_a_user(bin: impl AsRef<OsStr>) -> Command {
    let mut c = Command::new("/usr/bin/setpriv");
    c.args(["--reuid=1000", "--regid=1000", "--clear-groups"])
        .arg(bin);
    c
}

/// Who runs boxmaker: this process's user (root in CI), or a normal user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum As {
    Me,
    User,
}

impl As {
    /// Both, where this process can become a normal user ([`can_be_a_user`]); else `Me`.
    pub fn all() -> Vec<As> {
        if can_be_a_user() {
            vec![As::Me, As::User]
        } else {
            vec![As::Me]
        }
    }

    /// `bin`, run as this one.
    pub fn command(self, bin: impl AsRef<OsStr>) -> Command {
        match self {
            As::Me => Command::new(bin),
            As::User => as_a_user(bin),
        }
    }
}

/// Opens `dir` and every directory above it up to `top` to everyone (mode 0777), so a
/// normal user can make a state directory there and read the files.
pub fn open_to_everyone(dir: &Path, top: impl AsRef<Path>) {
    use std::os::unix::fs::PermissionsExt;
    let mut d = dir.to_path_buf();
    while d.starts_with(top.as_ref()) {
        let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777));
        if !d.pop() {
            break;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Reading answers.

/// A finished process's stdout, which must be UTF-8.
pub fn utf8_stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A finished process's stderr, which must be UTF-8.
pub fn utf8_stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// A finished process's stdout, lossily decoded.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A finished process's stderr, lossily decoded.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `text` as JSON; a test fails on anything else, showing the text.
pub fn json(text: &str) -> Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

// ---------------------------------------------------------------------------------------
// Children with deadlines.

/// `bin serve --config CONFIG` in the background, its stdio closed.
pub fn quiet_serve(bin: impl AsRef<OsStr>, config: impl AsRef<OsStr>) -> Child {
    Command::new(bin)
        .args(["serve", "--config"])
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The live pids (not this process, not a zombie) whose command line contains `needle`:
/// what a test started and must stop, found by the directory it runs in.
pub fn pids_with(needle: &str) -> Vec<u32> {
    let me = std::process::id();
    let mut found = vec![];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == me || pid_gone(pid) {
            continue;
        }
        if std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
        {
            found.push(pid);
        }
    }
    found
}

/// Whether `pid` has ended (a zombie has).
pub fn pid_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

/// A finished process: its exit status and what it printed.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Run {
    /// Everything about the run, for a failure message.
    pub fn show(&self) -> String {
        format!(
            "exit {} after {:.1} s\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            self.took.as_secs_f64(),
            cut(&self.stdout),
            cut(&self.stderr)
        )
    }

    pub fn ok(&self) -> bool {
        self.status.success()
    }

    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// `run`'s content: `{"exit":N,"stdout":…,"stderr":…}` (from `call --json`'s result).
    pub fn run_content(&self) -> Value {
        let v = self.json();
        let content = v["content"]
            .as_str()
            .unwrap_or_else(|| panic!("no content:\n{}", self.show()));
        serde_json::from_str(content)
            .unwrap_or_else(|e| panic!("content not JSON ({e}): {content}"))
    }

    /// stdout as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", self.show()))
    }
}

/// `s`, or its first 6000 bytes and its length when longer (a failure message stays readable).
fn cut(s: &str) -> String {
    if s.len() > 6000 {
        let mut end = 6000;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} bytes)", &s[..end], s.len())
    } else {
        s.to_string()
    }
}

/// Runs `cmd` to its end, killing it after `limit`, its output kept in files under
/// `dir/runs` so a chatty child never blocks on a full pipe. A killed child fails the test.
pub fn run_to_end(mut cmd: Command, dir: &Path, name: &str, limit: Duration) -> Run {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, Ordering::SeqCst);
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(60)
        .collect();
    let out_path = runs.join(format!("{n:04}-{safe}.stdout"));
    let err_path = runs.join(format!("{n:04}-{safe}.stderr"));
    cmd.stdin(Stdio::null())
        .stdout(File::create(&out_path).unwrap())
        .stderr(File::create(&err_path).unwrap());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let status = wait_or_kill(&mut child, start + limit);
    let took = start.elapsed();
    let run = Run {
        status,
        stdout: String::from_utf8_lossy(&std::fs::read(&out_path).unwrap_or_default()).into(),
        stderr: String::from_utf8_lossy(&std::fs::read(&err_path).unwrap_or_default()).into(),
        took,
    };
    assert!(
        took < limit,
        "{name} was killed after {} s: it hung\n{}",
        limit.as_secs(),
        run.show()
    );
    run
}

/// Waits for `child` to end; kills it at `deadline`.
pub fn wait_or_kill(child: &mut Child, deadline: Instant) -> ExitStatus {
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            return child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to `limit` for `child` to end and returns its output; a child still running
/// then is killed and fails the test.
pub fn wait_with_timeout(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the process did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Waits up to `limit` for `path` (a file or a socket) to exist; whether it does.
pub fn wait_for_path(path: &Path, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if path.exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    path.exists()
}

/// Polls `f` every 50 ms until it holds; fails the test when it has not within `limit`.
pub fn wait_until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < limit,
            "{what} did not happen within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A TCP port free on loopback when asked (a test's server binds it soon after).
/// A slow client at `127.0.0.1:port` (slowloris): it sends part of a request's head and
/// then a byte every second, never finishing it. How long the server kept the connection
/// before closing it, or `None` if it was still open after `limit`.
pub fn slow_head_held_for(port: u16, limit: Duration) -> Option<Duration> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let started = std::time::Instant::now();
    let _ = s.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    s.set_read_timeout(Some(Duration::from_secs(1)))
        .expect("timeout");
    let mut buf = [0u8; 4096];
    while started.elapsed() < limit {
        match s.read(&mut buf) {
            Ok(0) => return Some(started.elapsed()),
            // An answer (a 408, say) before the close: read on to the close.
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                if s.write_all(b"X").is_err() {
                    return Some(started.elapsed());
                }
            }
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
}

/// Fails the test unless something accepts connections on loopback `port` within 30 s.
pub fn wait_listening(port: u16, what: &str) {
    wait_until(what, Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
}

/// A child process, killed and reaped when dropped.
#[derive(Debug)]
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A test server of `servers_dir()` run by the Python SDK's interpreter as
/// `SCRIPT PORT ARGS…` on a free loopback port, its stderr in `stderr`; returned once it
/// listens, with its port.
pub fn python_server(script: &str, args: &[&str], stderr: &Path) -> (Killed, u16) {
    require_python_sdk();
    let port = free_port();
    let err = std::fs::File::create(stderr)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", stderr.display()));
    let child = Command::new(client_python())
        .arg(servers_dir().join(script))
        .arg(port.to_string())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {script}: {e}"));
    let child = Killed(child);
    wait_listening(port, &format!("{script} listens"));
    (child, port)
}

/// Every regular file below `dir`, recursively, but none below `except`.
pub fn files_below(dir: &Path, except: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if except.is_some_and(|x| p.starts_with(x)) {
                continue;
            }
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() {
                out.push(p);
            }
        }
    }
    out
}

/// Polls `f` every 50 ms for up to `limit`; its first `Some`, or `None` when time ran out.
pub fn poll<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if start.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------------------------------
// The lab.

/// One test's directory: a config file `boxmaker.toml`, its state directory, and the
/// `boxmaker` binary run against that config.
#[derive(Debug)]
pub struct Lab {
    bin: PathBuf,
    /// The lab's directory (the config's directory).
    pub dir: PathBuf,
    /// Variables set in boxmaker's environment (for `env = [...]` in a `[[tool]]`).
    pub vars: Vec<(String, String)>,
    /// The uid (and gid) boxmaker runs as; `None`: this process's.
    pub uid: Option<u32>,
    /// The directory boxmaker runs in; `None`: this process's.
    pub cwd: Option<PathBuf>,
    /// A lab in a temporary directory is removed with it.
    _temp: Option<tempfile::TempDir>,
    /// The config's bytes last trusted, and as whom (see [`Lab::trust_config`]).
    trusted: std::sync::Mutex<Option<(Option<u32>, Vec<u8>)>>,
}

impl Lab {
    /// A lab in the fresh directory `tmpdir/group/name`, with no config yet.
    pub fn new(bin: impl AsRef<Path>, tmpdir: impl AsRef<Path>, group: &str, name: &str) -> Lab {
        Lab {
            bin: bin.as_ref().to_path_buf(),
            dir: fresh_dir(tmpdir, group, name),
            vars: vec![],
            uid: None,
            cwd: None,
            _temp: None,
            trusted: Default::default(),
        }
    }

    /// A lab in a new temporary directory, removed when the lab is dropped.
    pub fn temp(bin: impl AsRef<Path>) -> Lab {
        let temp = tempfile::tempdir().unwrap();
        Lab {
            bin: bin.as_ref().to_path_buf(),
            dir: temp.path().to_path_buf(),
            vars: vec![],
            uid: None,
            cwd: None,
            _temp: Some(temp),
            trusted: Default::default(),
        }
    }

    /// Runs boxmaker in the lab's directory.
    pub fn in_its_dir(mut self) -> Lab {
        self.cwd = Some(self.dir.clone());
        self
    }

    /// The `boxmaker` binary.
    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// Writes `boxmaker init`'s default config into the lab.
    pub fn init(self) -> Lab {
        let o = Command::new(&self.bin)
            .arg("init")
            .arg(&self.dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "boxmaker init: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        self
    }

    /// `rel` inside the lab.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.join(rel)
    }

    /// The config file.
    pub fn config(&self) -> PathBuf {
        self.dir.join("boxmaker.toml")
    }

    /// The config file's text.
    pub fn config_text(&self) -> String {
        std::fs::read_to_string(self.config()).unwrap()
    }

    /// Writes the config file.
    pub fn write_config(&self, text: &str) {
        std::fs::write(self.config(), text).unwrap();
    }

    /// Appends `toml` to the config file.
    pub fn append(&self, toml: &str) {
        let mut text = self.config_text();
        text.push_str(toml);
        self.write_config(&text);
    }

    /// Writes `contents` to `rel` inside the lab, making its directories.
    pub fn write(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// `rel` inside the lab, made (with its parents) when missing.
    pub fn mkdir(&self, rel: impl AsRef<Path>) -> PathBuf {
        let path = self.dir.join(rel);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// The binary with the lab's variables, uid and directory: no arguments.
    pub fn bare(&self) -> Command {
        let mut c = Command::new(&self.bin);
        if let Some(dir) = &self.cwd {
            c.current_dir(dir);
        }
        for (k, v) in &self.vars {
            c.env(k, v);
        }
        if let Some(uid) = self.uid {
            use std::os::unix::process::CommandExt;
            c.uid(uid).gid(uid).env("HOME", &self.dir);
        }
        c
    }

    /// The person's word for the lab's config as it is now (`boxmaker trust`, as the lab's
    /// uid and HOME; docs/spec.md §6, "Whose config"): the lab's config is the tester's own,
    /// written by the test. Done again only when the bytes or the uid changed; a config that
    /// does not load is left untrusted (the command then says why it does not load).
    pub fn trust_config(&self) {
        let Ok(bytes) = std::fs::read(self.config()) else {
            return;
        };
        let mut last = self
            .trusted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.as_ref() == Some(&(self.uid, bytes.clone())) {
            return;
        }
        if trust_as(&mut self.bare(), self.config()).is_ok() {
            *last = Some((self.uid, bytes));
        }
    }

    /// `boxmaker ARGS --config CONFIG`, the config trusted first ([`Lab::trust_config`]).
    pub fn cmd(&self, args: &[&str]) -> Command {
        self.trust_config();
        let mut c = self.bare();
        c.args(args).arg("--config").arg(self.config());
        c
    }

    /// `boxmaker ARGS --config CONFIG` to its end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// `boxmaker ARGS --config CONFIG` to its end within `limit` (output under `runs/`).
    pub fn run_within(&self, args: &[&str], limit: Duration) -> Run {
        run_to_end(self.cmd(args), &self.dir, &args.join(" "), limit)
    }

    /// A Python MCP SDK client: `client_python() tests/python/SCRIPT`, in that directory, with
    /// `BOXMAKER_BIN`, `BOXMAKER_CONFIG` and `env` in its environment. Fails when the SDK is
    /// missing.
    pub fn python_cmd(&self, script: &str, env: &[(&str, &str)]) -> Command {
        self.trust_config();
        python_client(&self.bin, &self.config(), script, env)
    }

    /// [`Lab::python_cmd`] to its end within `limit`.
    pub fn python(&self, script: &str, env: &[(&str, &str)], limit: Duration) -> Run {
        run_to_end(self.python_cmd(script, env), &self.dir, script, limit)
    }

    /// `boxmaker mcp --session SESSION --config CONFIG`, its stderr in `mcp-SESSION.err`.
    pub fn mcp(&self, session: &str) -> Command {
        let mut c = self.cmd(&["mcp", "--session", session]);
        c.stderr(File::create(self.dir.join(format!("mcp-{session}.err"))).unwrap());
        c
    }

    /// A command of any program, its environment carrying the lab's variables.
    pub fn program(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new(program);
        for (k, v) in &self.vars {
            c.env(k, v);
        }
        c
    }
}

// ---------------------------------------------------------------------------------------
// A raw MCP client over a child's stdio.

/// A plain JSON-RPC client of `boxmaker mcp` over its stdin and stdout; the child is killed
/// on drop.
#[derive(Debug)]
pub struct McpClient {
    child: Child,
    stdin: ChildStdin,
    /// Every line the child printed, in order (a reader thread feeds it).
    pub lines: mpsc::Receiver<String>,
    next: u64,
    /// How long an answer may take; a later one fails the test.
    pub limit: Duration,
}

impl McpClient {
    /// Starts `cmd` with piped stdin and stdout (its stderr as the caller set it).
    pub fn spawn(mut cmd: Command, limit: Duration) -> McpClient {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        McpClient {
            child,
            stdin,
            lines,
            next: 1,
            limit,
        }
    }

    /// `initialize` as `client`, then `notifications/initialized`: the answer to
    /// `initialize`, for the test to check.
    pub fn initialize(&mut self, client: &str) -> Value {
        let init = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": client, "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init
    }

    /// Writes one message as a line.
    pub fn send(&mut self, v: &Value) {
        let mut line = serde_json::to_vec(v).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request; its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The response to request `id` (what comes before it is skipped); every line must be
    /// JSON.
    pub fn answer(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + self.limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|e| {
                panic!("no answer to request {id} within {:?}: {e}", self.limit)
            });
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("the front sent a line that is not JSON: {e}"));
            if v["id"] == json!(id) {
                return v;
            }
        }
    }

    /// A request and its response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.answer(id)
    }

    /// Sends `tools/call`; its id.
    pub fn start_call(&mut self, tool: &str, args: Value) -> u64 {
        self.send_request("tools/call", json!({"name": tool, "arguments": args}))
    }

    /// `tools/call` and its response.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let id = self.start_call(tool, args);
        self.answer(id)
    }

    /// `tools/list`'s tools.
    pub fn tools(&mut self) -> Vec<Value> {
        let r = self.request("tools/list", json!({}));
        r["result"]["tools"].as_array().unwrap().clone()
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text of a `tools/call` response's first content block ("" when there is none).
pub fn text_of(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_dir_empties_what_was_there() {
        let tmp = tempfile::tempdir().unwrap();
        let d = fresh_dir(tmp.path(), "g", "n");
        std::fs::write(d.join("old"), "x").unwrap();
        let d = fresh_dir(tmp.path(), "g", "n");
        assert!(d.is_dir());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
    }

    #[test]
    fn run_to_end_keeps_output_and_status() {
        let tmp = tempfile::tempdir().unwrap();
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let r = run_to_end(c, tmp.path(), "sh", Duration::from_secs(30));
        assert_eq!(
            (r.code(), r.stdout.as_str(), r.stderr.as_str()),
            (Some(3), "out\n", "err\n")
        );
    }

    #[test]
    fn run_to_end_fails_on_a_child_that_hangs() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let hung = std::thread::spawn(move || {
            let mut c = Command::new("/bin/sleep");
            c.arg("30");
            run_to_end(c, &dir, "sleep", Duration::from_millis(200))
        })
        .join();
        assert!(hung.is_err(), "a child killed at its deadline passed");
    }

    #[test]
    fn wait_for_path_sees_a_file_and_gives_up_on_a_missing_one() {
        let tmp = tempfile::tempdir().unwrap();
        let there = tmp.path().join("there");
        std::fs::write(&there, "").unwrap();
        assert!(wait_for_path(&there, Duration::from_millis(100)));
        assert!(!wait_for_path(
            &tmp.path().join("never"),
            Duration::from_millis(100)
        ));
    }

    #[test]
    fn a_labs_command_carries_the_config_and_its_variables() {
        let mut lab = Lab::temp("/bin/echo");
        lab.vars.push(("BXM_TESTKIT".into(), "1".into()));
        let c = lab.cmd(&["call"]);
        let args: Vec<_> = c.get_args().collect();
        assert_eq!(args[0], "call");
        assert_eq!(args[1], "--config");
        assert_eq!(Path::new(args[2]), lab.config());
        assert!(
            c.get_envs()
                .any(|(k, v)| k == "BXM_TESTKIT" && v == Some(OsStr::new("1")))
        );
    }
}
