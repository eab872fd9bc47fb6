//! Pre-forked helpers: a box whose helper is already running when its call comes
//! (docs/spec.md §4, "Pre-forked helpers").
//!
//! ```text
//!  caller (any threads)                      zygote (__boxmaker-sandbox-helper --zygote)
//!  HelperPool ── filler thread ──fd 3: 4 fds ──▶ fork ──▶ idle helper: fds 0-3 are the
//!     ▲                          ◀── its pid ──          four it was given; blocks reading
//!     │ take(): an idle helper                           a spec on fd 3 (helper.rs)
//!     └── run_stoppable(spec) ── spec on fd 3 ──▶ the helper builds, runs and reports on
//!                                                 ONE box, then exits (the caller reaps it)
//! ```
//!
//! The zygote is the caller's binary started once more, with [`crate::HELPER_ARG`] and
//! [`ZYGOTE_FLAG`]: a fresh, single-threaded process with an empty environment and only
//! its socket to the caller open. For each helper the caller sends it a socketpair end and
//! the three ends of the helper's stdio pipes, made for that helper; it forks the helper as
//! the caller's child (`CLONE_PARENT`), which puts them on fds 3, 0, 1, 2, clones its next
//! box's init ahead and waits, an ordinary helper otherwise (`helper.rs`); the zygote closes
//! its copies and answers with the child's pid. A fork of a small
//! single-threaded process costs a fraction of an exec of the binary, and it happens while
//! no call waits: a call takes an idle helper, and the filler thread asks for the next one.
//!
//! What an idle helper (and the zygote) may hold: nothing of any session. No spec, no
//! workspace, no secret, no session's environment: the zygote never receives a spec, and a
//! helper receives one only when a call that is already decided hands it its own. A helper
//! runs exactly one box and exits. A helper found dead when taken (killed while idle) is
//! dropped and the next taken; with none idle, a call waits a moment for the filler and then
//! starts a helper of its own, as [`crate::run`] does, so no call waits forever for one. When
//! the pool is dropped (or the caller dies), the zygote and every idle helper read end of file
//! on their sockets and exit.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::run::{
    Helper, HelperCommand, Outcome, Started, Stopper, drive, hand_over, run_stoppable,
};
use crate::spec::{Io, Spec};
use crate::sys;

/// The argument after [`crate::HELPER_ARG`] that makes the helper binary the zygote.
pub const ZYGOTE_FLAG: &str = "--zygote";

/// The name (`/proc/PID/comm`) of a helper the zygote forked.
pub const HELPER_NAME: &str = "boxmaker-helper";

/// How many idle helpers a pool keeps.
pub const IDLE_HELPERS: usize = 4;

/// How long a call waits for the filler when no helper is idle, before it starts one itself.
const WAIT_FOR_IDLE: Duration = Duration::from_millis(20);

/// How often the filler waits for ended helpers when no call wakes it.
const REAP_EVERY: Duration = Duration::from_secs(1);

/// How long the filler waits for the zygote's answer before it gives that zygote up.
const ZYGOTE_ANSWER: Duration = Duration::from_secs(5);

/// Helpers started ahead of their calls, for [`spec`s](Spec) with captured output
/// ([`Io::Capture`]). Starts nothing until first used.
#[derive(Debug)]
pub struct HelperPool {
    helper: HelperCommand,
    shared: Arc<Shared>,
    /// Boxes an idle helper built (the rest had a helper of their own).
    served: AtomicU64,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    /// Rung when an idle helper is taken or added, and when the pool closes.
    changed: Condvar,
    /// Helpers that ended or are ending, ours to wait for (the zygote forks them as our
    /// children); the filler does, at each wake.
    ended: Mutex<Vec<u32>>,
}

#[derive(Debug, Default)]
struct State {
    idle: VecDeque<Idle>,
    filling: bool,
    closed: bool,
}

/// An idle helper: blocked reading its spec on fd 3; holds nothing of any session.
#[derive(Debug)]
struct Idle {
    pid: u32,
    control: UnixStream,
    stdin: OwnedFd,
    stdout: OwnedFd,
    stderr: OwnedFd,
}

impl Idle {
    /// An idle helper writes nothing: a control socket that reads (end of file) or hangs up
    /// means it died.
    fn alive(&self) -> bool {
        sys::poll(&[(self.control.as_raw_fd(), libc::POLLIN)], 0)
            .is_ok_and(|ev| ev.first() == Some(&0))
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl HelperPool {
    /// A pool of helpers started from `helper` (whose binary must call
    /// [`crate::enter_helper_if_requested`] first thing in `main`).
    pub fn new(helper: HelperCommand) -> Self {
        Self {
            helper,
            shared: Arc::default(),
            served: AtomicU64::new(0),
        }
    }

    /// Starts the pool if it is not running, and waits up to `wait` for it to be full;
    /// returns how many helpers are idle.
    pub fn prefill(&self, wait: Duration) -> usize {
        let mut state = lock(&self.shared.state);
        self.start_filler(&mut state);
        let deadline = Instant::now() + wait;
        while state.idle.len() < IDLE_HELPERS && state.filling {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        state.idle.len()
    }

    /// How many boxes an idle helper built so far (the others had a helper started for
    /// them, as [`crate::run`] does).
    pub fn served(&self) -> u64 {
        self.served.load(Ordering::Relaxed)
    }

    /// Starts the filler thread unless it runs (or the pool is closed).
    fn start_filler(&self, state: &mut State) {
        if state.filling || state.closed {
            return;
        }
        let shared = self.shared.clone();
        let helper = self.helper.clone();
        state.filling = std::thread::Builder::new()
            .name("helper-pool".into())
            .spawn(move || fill(&shared, &helper))
            .is_ok();
    }

    /// As [`crate::run_stoppable`], on an idle helper when there is one. A spec that shares
    /// the caller's stdio ([`Io::Inherit`]) gets a helper of its own.
    pub fn run_stoppable(
        &self,
        spec: &Spec,
        stopper: &mut dyn FnMut(Stopper),
        serve: &mut dyn FnMut(TcpListener),
    ) -> Result<Outcome> {
        if spec.io == Io::Inherit {
            return run_stoppable(spec, &self.helper, stopper, serve);
        }
        spec.validate()?;
        let began = Instant::now();
        // An idle helper that died (killed, say) never takes the spec: the next one gets it.
        // With none left — or after as many tries as the pool holds, should every helper
        // the zygote forks die at once — a helper of our own.
        let mut tries = IDLE_HELPERS + 1;
        let started = loop {
            let idle = if tries == 0 { None } else { self.take() };
            tries = tries.saturating_sub(1);
            let Some(idle) = idle else {
                let started = Started::exec(&self.helper, true)?;
                if let Err(e) = hand_over(&started.control, spec) {
                    started.abandon(&mut drop);
                    return Err(e);
                }
                break started;
            };
            if hand_over(&idle.control, spec).is_ok() {
                self.served.fetch_add(1, Ordering::Relaxed);
                break Started {
                    control: idle.control,
                    stdin: Some(idle.stdin),
                    stdout: Some(idle.stdout),
                    stderr: Some(idle.stderr),
                    child: Helper::Pooled(idle.pid),
                };
            }
            self.reap_later(idle.pid);
        };
        drive(spec, started, began, stopper, serve, &mut |pid| {
            self.reap_later(pid)
        })
    }

    /// A helper of ours that ended or is ending: the filler waits for it.
    fn reap_later(&self, pid: u32) {
        lock(&self.shared.ended).push(pid);
    }

    /// An idle helper, waiting [`WAIT_FOR_IDLE`] at most for one; starts the filler on first
    /// use and wakes it to replace what was taken.
    fn take(&self) -> Option<Idle> {
        let mut state = lock(&self.shared.state);
        self.start_filler(&mut state);
        let deadline = Instant::now() + WAIT_FOR_IDLE;
        let taken = loop {
            match state.idle.pop_front() {
                Some(idle) if idle.alive() => break Some(idle),
                // Killed while idle: dropping it closes our ends; take the next.
                Some(dead) => {
                    self.reap_later(dead.pid);
                    continue;
                }
                None => {}
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || !state.filling {
                break None;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        };
        drop(state);
        self.shared.changed.notify_all();
        taken
    }

    /// The process ids of the helpers idle now (for tests and `doctor`-like reports).
    pub fn idle_pids(&self) -> Vec<u32> {
        lock(&self.shared.state)
            .idle
            .iter()
            .map(|i| i.pid)
            .collect()
    }
}

impl Drop for HelperPool {
    fn drop(&mut self) {
        let mut state = lock(&self.shared.state);
        state.closed = true;
        // Our ends close: each idle helper reads end of file and exits.
        state.idle.clear();
        drop(state);
        self.shared.changed.notify_all();
    }
}

/// The filler: keeps [`IDLE_HELPERS`] idle helpers, forked by a zygote it starts (and
/// starts again when it dies), until the pool closes.
fn fill(shared: &Shared, helper: &HelperCommand) {
    let mut zygote: Option<Zygote> = None;
    let mut pause = Duration::ZERO;
    loop {
        let mut state = lock(&shared.state);
        while !state.closed && state.idle.len() >= IDLE_HELPERS {
            reap(shared);
            state = shared
                .changed
                .wait_timeout(state, REAP_EVERY)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        reap(shared);
        if state.closed {
            break;
        }
        drop(state);
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        let made = match &zygote {
            Some(z) => z.fork_helper(),
            None => Zygote::start(helper).and_then(|z| zygote.insert(z).fork_helper()),
        };
        match made {
            Ok(idle) => {
                pause = Duration::ZERO;
                let mut state = lock(&shared.state);
                if !state.closed {
                    state.idle.push_back(idle);
                }
                drop(state);
                shared.changed.notify_all();
            }
            Err(_) => {
                // Start afresh, slower each time it fails (a call meanwhile starts its own
                // helper after a short wait).
                zygote = None;
                pause = (pause * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
            }
        }
    }
    lock(&shared.state).filling = false;
}

/// Waits for the ended helpers that have exited (a zombie holds nothing but its pid).
fn reap(shared: &Shared) {
    lock(&shared.ended)
        .retain(|&pid| matches!(sys::waitpid(pid as libc::pid_t, libc::WNOHANG), Ok((0, _))));
}

/// The zygote process and our end of its socket.
#[derive(Debug)]
struct Zygote {
    child: std::process::Child,
    control: UnixStream,
}

impl Zygote {
    fn start(helper: &HelperCommand) -> Result<Self> {
        let (ours, theirs) = sys::seqpacket_pair()?;
        let mut cmd = Command::new(&helper.program);
        cmd.args(&helper.args)
            .arg(ZYGOTE_FLAG)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let fd = theirs.as_raw_fd();
        // SAFETY: the closure runs between fork and exec and only calls dup2/fcntl, which are
        // async-signal-safe and do not allocate.
        unsafe {
            cmd.pre_exec(move || sys::dup_to_3(fd));
        }
        let child = cmd.spawn().map_err(|source| Error::HelperIo {
            context: "spawn the helper zygote",
            source,
        })?;
        drop(theirs);
        let control = UnixStream::from(ours);
        control
            .set_read_timeout(Some(ZYGOTE_ANSWER))
            .map_err(|source| Error::HelperIo {
                context: "set the zygote's answer timeout",
                source,
            })?;
        Ok(Self { child, control })
    }

    /// Has the zygote fork one idle helper, with a fresh socketpair and fresh stdio pipes.
    fn fork_helper(&self) -> Result<Idle> {
        let io = |context| move |source| Error::HelperIo { context, source };
        let (ours, theirs) = UnixStream::pair().map_err(io("socketpair"))?;
        let (stdin_r, stdin_w) = sys::pipe()?;
        let (stdout_r, stdout_w) = sys::pipe()?;
        let (stderr_r, stderr_w) = sys::pipe()?;
        sys::send_with_fds(
            &self.control,
            &[OwnedFd::from(theirs), stdin_r, stdout_w, stderr_w],
        )
        .map_err(io("hand the zygote a helper's descriptors"))?;
        let mut pid = [0u8; 4];
        let n = (&self.control)
            .read(&mut pid)
            .map_err(io("read the zygote's answer"))?;
        let pid = u32::from_be_bytes(pid);
        if n != pid.to_be_bytes().len() || pid == 0 {
            return Err(Error::Helper("the zygote could not fork a helper".into()));
        }
        Ok(Idle {
            pid,
            control: ours,
            stdin: stdin_w,
            stdout: stdout_r,
            stderr: stderr_r,
        })
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        // It exits at end of file on its socket; killing it covers one that hangs.
        let _ = self.control.shutdown(std::net::Shutdown::Both);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The zygote's `main`: forks one helper per message until its caller hangs up. Never
/// returns.
pub(crate) fn zygote_main() -> ! {
    if !sys::fd_is_open(3) {
        eprintln!("sandbox zygote: no control socket on fd 3 (started by hand?)");
        std::process::exit(2);
    }
    // Only fd 3 of what we were given stays.
    if sys::close_from(4).is_err() {
        eprintln!("sandbox zygote: cannot close inherited descriptors");
        std::process::exit(2);
    }
    // SAFETY: fd 3 is open (checked above; the caller placed it with dup2 before exec) and
    // nothing else in this process owns it. We take ownership of it here, once.
    let control = unsafe { UnixStream::from_raw_fd(3) };
    loop {
        let pid = match sys::recv_with_fds(&control) {
            Ok(Some(fds)) => match <[OwnedFd; 4]>::try_from(fds) {
                Ok(fds) => fork_helper(fds),
                // Not a helper's descriptors: they are closed here.
                Err(_) => 0,
            },
            // The caller hung up (or broke the protocol): nobody will ask for a helper.
            Ok(None) | Err(_) => std::process::exit(0),
        };
        if (&control).write_all(&pid.to_be_bytes()).is_err() {
            std::process::exit(0);
        }
    }
}

/// Forks one helper on `fds` (its control socket, stdin, stdout, stderr); returns its pid,
/// or 0 when the fork failed. Our copies of `fds` close on return.
///
/// The helper is the caller's child, not ours (`CLONE_PARENT`): the caller waits for it —
/// at once for a box it stopped, so a reset answers only once the helper is gone — and its
/// CPU time counts in the caller's, as an exec'd helper's did.
fn fork_helper(fds: [OwnedFd; 4]) -> u32 {
    // SAFETY: the zygote is single-threaded: a fresh exec that starts no threads.
    match unsafe { sys::clone_fork(libc::CLONE_PARENT) } {
        Ok(0) => become_helper(fds),
        Ok(pid) => u32::try_from(pid).unwrap_or(0),
        Err(_) => 0,
    }
}

/// In the forked child: the four descriptors become fds 3, 0, 1 and 2 (fd 3, the zygote's
/// socket, is replaced: a helper cannot ask for helpers), and the child is an ordinary
/// helper from here.
fn become_helper(fds: [OwnedFd; 4]) -> ! {
    let [control, stdin, stdout, stderr] = fds;
    // Told apart from the zygote, whose command line it shares, in `ps -o comm` and
    // `/proc/PID/comm`.
    let placed = sys::set_name(HELPER_NAME)
        .and_then(|()| sys::move_fd(control, 3))
        .and_then(|()| sys::move_fd(stdin, 0))
        .and_then(|()| sys::move_fd(stdout, 1))
        .and_then(|()| sys::move_fd(stderr, 2));
    if placed.is_err() {
        sys::exit_now(2);
    }
    crate::helper::pooled_helper_main()
}
