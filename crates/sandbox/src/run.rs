//! The caller's side: [`run`] starts the helper process (see `helper.rs`), hands it the spec
//! over a socket on its fd 3, feeds stdin, captures stdout and stderr up to a cap, and turns
//! the helper's [`Report`] into an [`Outcome`]. Safe to call from a multi-threaded program:
//! the only thing done between fork and exec is a `dup2`.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::helper::{Report, Status, read_frame, write_frame};
use crate::spec::{Io, Spec};

/// The first argument that puts a binary into helper mode.
pub const HELPER_ARG: &str = "__boxmaker-sandbox-helper";

/// How to start the helper: a binary that calls [`crate::helper_main`] when its first
/// argument is [`HELPER_ARG`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl HelperCommand {
    /// The running binary itself, re-executed in helper mode.
    pub fn current_exe() -> Result<Self> {
        let program = std::env::current_exe().map_err(|source| Error::HelperIo {
            context: "find current exe",
            source,
        })?;
        Ok(Self {
            program,
            args: vec![HELPER_ARG.into()],
        })
    }
}

/// If this process was started in helper mode, become the helper (never returns); otherwise
/// return. Call it first thing in `main` of any binary that runs boxes.
pub fn enter_helper_if_requested() {
    let mut args = std::env::args_os().skip(1);
    if args.next().is_some_and(|a| a == HELPER_ARG) {
        if args.next().is_some_and(|a| a == crate::pool::ZYGOTE_FLAG) {
            crate::pool::zygote_main();
        }
        crate::helper::helper_main();
    }
}

/// What a box run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: Status,
    /// Captured output ([`Io::Capture`]); empty with [`Io::Inherit`].
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// More output was produced than the cap; the rest was read and dropped.
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// The memory cgroup killed a process of the box.
    pub oom_killed: bool,
    /// Memory and pids cgroup limits were in force.
    pub cgroup_limits: bool,
    pub elapsed: Duration,
}

/// Runs `spec` in a new box and waits for it. A box that could not be built is an `Err`
/// with the reason; a command that failed is an `Ok` whose status says so.
pub fn run(spec: &Spec, helper: &HelperCommand) -> Result<Outcome> {
    run_with_listener(spec, helper, &mut drop)
}

/// As [`run`]; for a [`Spec::proxy`] box, `serve` gets the box's listener (inside the
/// box, [`crate::PROXY_ADDR`]) once the box is built and before its command starts, and
/// may accept on it from this process while the box runs. Without `serve` keeping it, the
/// box's connections there are refused.
pub fn run_with_listener(
    spec: &Spec,
    helper: &HelperCommand,
    serve: &mut dyn FnMut(TcpListener),
) -> Result<Outcome> {
    run_stoppable(spec, helper, &mut drop, serve)
}

/// Ends a box from any thread while [`run_stoppable`] (or a [`BoxProcess`]) runs it: its
/// helper kills the box's init, so the kernel kills every process of its pid namespace, and
/// the run returns once the helper has reaped them, removed the box's cgroup and exited.
/// (A box that was not stopped may be answered for sooner: once every process of it is
/// dead, its helper's cleanup following.)
///
/// A clone of the caller's end of the helper's socket: the helper reads nothing after the
/// spec, so end-of-file there means "kill the box now" — the same signal a caller that
/// vanished gives. Stopping is idempotent, and does nothing once the box has ended.
#[derive(Debug, Clone)]
pub struct Stopper {
    control: Arc<UnixStream>,
    stopped: Arc<AtomicBool>,
}

impl Stopper {
    fn of(control: &UnixStream) -> Result<Self> {
        control
            .try_clone()
            .map(|c| Self {
                control: Arc::new(c),
                stopped: Arc::default(),
            })
            .map_err(|source| Error::HelperIo {
                context: "keep a way to stop the box",
                source,
            })
    }

    /// Asks the box's helper to kill the box now; returns at once (the run that holds the
    /// box returns when it is gone).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        // Our write half only: the helper's report still reaches the run.
        let _ = self.control.shutdown(std::net::Shutdown::Write);
    }
}

/// As [`run_with_listener`]; `stopper` gets a [`Stopper`] for the box as soon as its helper
/// runs, before the box is built, so another thread can end the box at any point. A box
/// stopped before it was built fails to start (an `Err`); one stopped while its command ran
/// ends `Signaled(9)`, like one killed by the wall clock.
pub fn run_stoppable(
    spec: &Spec,
    helper: &HelperCommand,
    stopper: &mut dyn FnMut(Stopper),
    serve: &mut dyn FnMut(TcpListener),
) -> Result<Outcome> {
    spec.validate()?;
    let began = Instant::now();
    let started = Started::exec(helper, spec.io != Io::Inherit)?;
    if let Err(e) = hand_over(&started.control, spec) {
        started.abandon(&mut drop);
        return Err(e);
    }
    drive(spec, started, began, stopper, serve, &mut drop)
}

/// Hands `spec` to a helper waiting for one and waits for its one-byte answer that it has
/// it ([`crate::helper`]'s `SPEC_TAKEN`). An `Err` means the helper never took the spec —
/// it had died, or died before reading it — so nothing of the box ran.
pub(crate) fn hand_over(control: &UnixStream, spec: &Spec) -> Result<()> {
    write_frame(control, spec)?;
    let mut answer = [0u8; 1];
    match (&*control).read(&mut answer) {
        Ok(1) if answer[0] == crate::helper::SPEC_TAKEN => Ok(()),
        Ok(_) => Err(Error::Helper(
            "the helper ended before it took the box's spec".into(),
        )),
        Err(source) => Err(Error::HelperIo {
            context: "read the helper's answer to the spec",
            source,
        }),
    }
}

/// A helper ready for one box, waiting for its spec: our end of its control socket, our
/// ends of its stdio pipes (none when it shares ours), and the process when we started it
/// ourselves (a pre-forked helper's parent is the zygote, which reaps it: `pool.rs`).
#[derive(Debug)]
pub(crate) struct Started {
    pub control: UnixStream,
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
    pub child: Helper,
}

/// Whose child a helper is, and so who waits for it.
#[derive(Debug)]
pub(crate) enum Helper {
    /// Started by us (fork and exec): waited for before the run returns, so its cleanup
    /// (the box's cgroup) is done by then.
    Exec(std::process::Child),
    /// Forked by the zygote as our child (`CLONE_PARENT`, `pool.rs`): waited for before
    /// the run returns when its box was stopped, else later, by the pool.
    Pooled(u32),
}

impl Started {
    /// Starts a helper of our own (fork and exec of `helper`), its stdio piped (`piped`) or
    /// shared with ours.
    pub(crate) fn exec(helper: &HelperCommand, piped: bool) -> Result<Self> {
        let (mut child, control) = start_helper(helper, piped)?;
        Ok(Self {
            control,
            stdin: child.stdin.take().map(OwnedFd::from),
            stdout: child.stdout.take().map(OwnedFd::from),
            stderr: child.stderr.take().map(OwnedFd::from),
            child: Helper::Exec(child),
        })
    }

    /// Gives the helper up: it reads end of file and exits (killing its box, if it had
    /// one).
    pub(crate) fn abandon(self, reap_later: &mut dyn FnMut(u32)) {
        let Started { control, child, .. } = self;
        drop(control);
        match child {
            Helper::Exec(mut child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            Helper::Pooled(pid) => reap_later(pid),
        }
    }
}

/// Runs `spec` on a helper that took it ([`hand_over`]): feeds stdin, captures the output,
/// and turns the helper's report into an [`Outcome`]. `stopper` gets the box's [`Stopper`]
/// first thing (a caller that was stopped meanwhile stops the box at once). Returns once
/// the report is in and the output has ended (every process of the box is dead by then); a
/// helper we started ourselves is waited for too, so its cgroup is gone when this returns.
pub(crate) fn drive(
    spec: &Spec,
    started: Started,
    began: Instant,
    stopper: &mut dyn FnMut(Stopper),
    serve: &mut dyn FnMut(TcpListener),
    reap_later: &mut dyn FnMut(u32),
) -> Result<Outcome> {
    let capture = match &spec.io {
        Io::Inherit => None,
        Io::Capture { stdin, output_cap } => Some((stdin, *output_cap)),
    };
    let stopped = match Stopper::of(&started.control) {
        Ok(s) => {
            let stopped = s.stopped.clone();
            stopper(s);
            stopped
        }
        Err(e) => {
            started.abandon(reap_later);
            return Err(e);
        }
    };
    let Started {
        control: ours,
        stdin,
        stdout,
        stderr,
        child,
    } = started;

    // A proxy box's listener first, as soon as it comes (while the box is being built):
    // a caller that does not keep it should have dropped it before the command runs.
    let listened = if spec.proxy {
        take_listener(&ours).map(|l| l.map(&mut *serve)).map(drop)
    } else {
        Ok(())
    };
    let mut readers = Vec::new();
    if let Some((stdin_bytes, cap)) = capture {
        if let Some(w) = stdin
            && !stdin_bytes.is_empty()
        {
            let mut w = std::fs::File::from(w);
            let stdin_bytes = stdin_bytes.clone();
            // A command that does not read its stdin makes this write fail; that is fine.
            thread::spawn(move || {
                let _ = w.write_all(&stdin_bytes);
            });
        }
        if let Some(r) = stdout {
            let r = std::fs::File::from(r);
            readers.push(thread::spawn(move || read_capped(r, cap)));
        }
        if let Some(r) = stderr {
            let r = std::fs::File::from(r);
            readers.push(thread::spawn(move || read_capped(r, cap)));
        }
    }

    let report: Result<Report> = listened.and_then(|()| read_frame(&ours));
    match child {
        Helper::Exec(mut child) => {
            let _ = child.wait();
        }
        // A stopped box (a reset, say) is over only when nothing of it runs, its helper
        // included: whoever stopped it may go on at once (lower the session's label).
        Helper::Pooled(pid) if stopped.load(Ordering::SeqCst) => {
            let _ = crate::sys::waitpid(pid as libc::pid_t, 0);
        }
        Helper::Pooled(pid) => reap_later(pid),
    }
    let mut outputs = readers.into_iter().map(|h| h.join().unwrap_or_default());
    let (stdout, stdout_truncated) = outputs.next().unwrap_or_default();
    let (stderr, stderr_truncated) = outputs.next().unwrap_or_default();
    let report = report.map_err(|e| Error::Helper(format!("no report from the helper: {e}")))?;
    let status = report.result.map_err(Error::Setup)?;
    Ok(Outcome {
        status,
        stdout,
        stderr,
        stdout_truncated,
        stderr_truncated,
        oom_killed: report.oom_killed,
        cgroup_limits: report.cgroup_limits,
        elapsed: began.elapsed(),
    })
}

/// The one message a proxy box's helper sends before its report: the listener, if the box
/// got that far.
fn take_listener(control: &UnixStream) -> Result<Option<TcpListener>> {
    let io = |source| Error::HelperIo {
        context: "receive the proxy listener",
        source,
    };
    let fds = crate::sys::recv_with_fds(control)
        .map_err(io)?
        .ok_or_else(|| Error::Helper("the helper ended before the box was built".into()))?;
    Ok(fds.into_iter().next().map(TcpListener::from))
}

/// Starts the helper with our end of a fresh socketpair on its fd 3, and its stdio piped
/// (`piped`) or shared with ours. Returns the helper and our end.
fn start_helper(helper: &HelperCommand, piped: bool) -> Result<(std::process::Child, UnixStream)> {
    let (ours, theirs) = UnixStream::pair().map_err(|source| Error::HelperIo {
        context: "socketpair",
        source,
    })?;
    let mut cmd = Command::new(&helper.program);
    cmd.args(&helper.args).env_clear();
    if piped {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
    }
    let fd = theirs.as_raw_fd();
    // SAFETY: the closure runs between fork and exec and only calls dup2/fcntl, which are
    // async-signal-safe and do not allocate.
    unsafe {
        cmd.pre_exec(move || crate::sys::dup_to_3(fd));
    }
    let child = cmd.spawn().map_err(|source| Error::HelperIo {
        context: "spawn helper",
        source,
    })?;
    drop(theirs);
    Ok((child, ours))
}

/// As [`run`], but when this process is single-threaded and the box shares its terminal
/// ([`Io::Inherit`]) the caller does the helper's work itself instead of starting `helper`:
/// one exec fewer per box (a dynamic loader and a runtime start, about 1 ms here). Otherwise
/// (more than one thread, or captured output) it is exactly [`run`].
///
/// For a one-shot CLI such as `boxmaker box exec`. The box is the same either way: the same
/// setup, checks and supervision (timeout; init dies with this process), and the box's init,
/// a copy of this process, first wipes the environment it inherited. While the box runs,
/// this process is its supervisor and reaps the box's init, so it must not be waiting for
/// other children with `wait(-1)` meanwhile.
pub fn run_in_process(spec: &Spec, helper: &HelperCommand) -> Result<Outcome> {
    // Only this thread can start another, so "one thread" stays true until the clone.
    if spec.io != Io::Inherit || spec.proxy || crate::sys::thread_count() != Some(1) {
        return run(spec, helper);
    }
    spec.validate()?;
    let started = Instant::now();
    // This process is the supervisor: its caller gets the answer once init is reaped and
    // the cgroup is gone.
    let report = crate::helper::run_box(spec, None, &mut drop, None)?.finish();
    let status = report.result.map_err(Error::Setup)?;
    Ok(Outcome {
        status,
        stdout: Vec::new(),
        stderr: Vec::new(),
        stdout_truncated: false,
        stderr_truncated: false,
        oom_killed: report.oom_killed,
        cgroup_limits: report.cgroup_limits,
        elapsed: started.elapsed(),
    })
}

/// A box that keeps running after [`spawn`] returns: a server the caller talks to over the
/// command's standard streams (a downstream MCP server, say).
///
/// Dropping it, or [`BoxProcess::stop`], kills the whole box (every process of its pid
/// namespace) and removes its cgroup; the box also dies with its helper, and at the wall-clock
/// limit of its spec.
#[derive(Debug)]
pub struct BoxProcess {
    child: std::process::Child,
    control: Option<UnixStream>,
    /// The command's stdin (its end is the box's fd 0).
    pub stdin: Option<std::process::ChildStdin>,
    /// The command's stdout. The caller must read it, or the command blocks when the pipe
    /// is full.
    pub stdout: Option<std::process::ChildStdout>,
    /// The command's stderr; the same holds.
    pub stderr: Option<std::process::ChildStderr>,
    /// A [`Spec::proxy`] box's listener (inside the box, [`crate::PROXY_ADDR`]), for the
    /// caller to accept on; `None` when the box failed before it had one.
    pub listener: Option<TcpListener>,
}

/// Starts `spec` in a new box and returns at once, with pipes to the command's standard
/// streams (`spec.io` is ignored). Building the box goes on in the helper; if it fails, the
/// command's stdout ends at once and [`BoxProcess::stop`] says why.
pub fn spawn(spec: &Spec, helper: &HelperCommand) -> Result<BoxProcess> {
    spec.validate()?;
    let (mut child, ours) = start_helper(helper, true)?;
    let listener = hand_over(&ours, spec).and_then(|()| {
        if spec.proxy {
            take_listener(&ours)
        } else {
            Ok(None)
        }
    });
    let listener = match listener {
        Ok(l) => l,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    Ok(BoxProcess {
        listener,
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        child,
        control: Some(ours),
    })
}

impl BoxProcess {
    /// The helper's process id (the box's supervisor, outside the box).
    pub fn helper_pid(&self) -> u32 {
        self.child.id()
    }

    /// A [`Stopper`] for this box, which another thread can use while this one talks to
    /// the box (`Err` once it was stopped, or when no descriptor is left to clone).
    pub fn stopper(&self) -> Result<Stopper> {
        match &self.control {
            Some(c) => Stopper::of(c),
            None => Err(Error::Helper("the box was already stopped".into())),
        }
    }

    /// Whether the box has ended (its helper exited), without waiting.
    pub fn has_ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the box if it still runs, waits for its helper, and says how the command ended
    /// (`Err` if the box never started, with the reason).
    pub fn stop(mut self) -> Result<Status> {
        self.stop_inner()
    }

    /// As [`BoxProcess::stop`], but first gives the box up to `grace` to end by itself: a
    /// caller that has just seen the command's stdout end learns how it exited, rather than
    /// racing its own kill against the exit.
    pub fn stop_after(mut self, grace: Duration) -> Result<Status> {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            thread::sleep(Duration::from_millis(2));
        }
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<Status> {
        drop(self.stdin.take());
        let Some(control) = self.control.take() else {
            return Err(Error::Helper("the box was already stopped".into()));
        };
        // The helper reads nothing after the spec: end-of-file on its side means "kill the
        // box now". Our read half stays open for its report.
        let _ = control.shutdown(std::net::Shutdown::Write);
        let report: Result<Report> = read_frame(&control);
        let _ = self.child.wait();
        let report =
            report.map_err(|e| Error::Helper(format!("no report from the helper: {e}")))?;
        report.result.map_err(Error::Setup)
    }
}

impl Drop for BoxProcess {
    fn drop(&mut self) {
        if self.control.is_some() {
            let _ = self.stop_inner();
        }
    }
}

/// Reads `r` to its end, keeping at most `cap` bytes; never buffers more than that.
fn read_capped(mut r: impl Read, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                if n > room {
                    truncated = true;
                }
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    (kept, truncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_read_capped_over_cap_is_truncated() {
        let data = vec![7u8; 300_000];
        let (kept, truncated) = read_capped(&data[..], 1000);
        assert_eq!(kept.len(), 1000);
        assert!(truncated);
        let (kept, truncated) = read_capped(&data[..10], 1000);
        assert_eq!(kept.len(), 10);
        assert!(!truncated);
    }
}
