//! Where the gate lives, and how every command reaches it.
//!
//! There is one gate per state directory, held by an exclusive lock on `gate.lock`. The
//! process that holds it serves `agent.sock` and `control.sock`, and every client talks to
//! it over those sockets, so there is one code path and two gates can never write the same
//! audit log. The gate is one of:
//! - **kept**: the gate role under `boxmaker serve` (see `cmd_serve`), for as long as
//!   `serve` runs;
//! - **on demand**: when a command needs a gate and none answers, it starts one —
//!   `boxmaker __gate --on-demand`, a process of its own (its own process group, its
//!   stderr in `state/gate.log`) — and every later client of the state directory uses it.
//!   It ends [`LINGER`] after its last client: a client holds a shared lock on
//!   `state/clients.lock` for as long as it runs ([`Presence`]), and the gate looks for the
//!   moment when nobody holds it and no connection is open. So no client is ever stranded
//!   by another one's exit: whoever started the gate, it stays while anyone uses it, and
//!   the next call after it ended starts a new one ([`connect`]).
//!
//! A client whose config file changed since the running gate read it (the fingerprints
//! differ) asks an on-demand gate to retire — it stops taking connections and ends once the
//! calls it holds are answered — and starts a new one; a kept gate is only warned about.
//!
//! [`try_host`] hosts a gate in the calling process: the gate role uses it, and so does
//! `demo`, whose state directory is its own.
//!
//! The gate process starts its runner as a child (`boxmaker __runner`) over a socketpair and,
//! if that runner dies, starts a new one for the next call; calls in flight when it died are
//! answered `failed` by the link.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use config::Config;
use gate::serve::{accept_loop, bind_agent_socket, bind_control_socket};
use gate::{Gate, RunnerLink, ToolRunner};
use proto::control::{ControlAnswer, ControlOp};
use proto::{ToolRequest, ToolResponse};

use crate::error::CliError;

pub use statedir::LOCK_FILE;
use statedir::file::{Dir, Open};

/// The file every client of a state directory holds a shared lock on while it runs.
pub const CLIENTS_LOCK: &str = "clients.lock";

/// How long an on-demand gate stays after its last client went: long enough that a script's
/// `boxmaker call`s one after another share one gate (and the session's servers).
pub const LINGER: Duration = Duration::from_secs(3);

/// How long a client waits for a gate it started (or one another client is starting).
const START_WAIT: Duration = Duration::from_secs(30);

/// How long a client waits for a running gate to say which config it read: the first
/// thing every command asks it, answered at once by a gate that is alive.
const STATUS_WAIT: Duration = Duration::from_secs(10);

/// What the gate's bound on its runner's answer adds to two `[box] timeout_seconds`.
const BACKSTOP_SPARE: Duration = Duration::from_secs(60);

/// `gate.log` is started afresh when it is larger than this.
const GATE_LOG_MAX: u64 = 1 << 20;

/// A [`ToolRunner`] that starts `boxmaker __runner` as a child on first use, and again after
/// the child dies.
pub struct ChildRunner {
    config_path: PathBuf,
    current: Mutex<Option<(Child, Arc<RunnerLink>)>>,
    /// Where every link it makes delivers the runner's events (the gate's audit log).
    events: gate::EventSink,
    /// Its runners report box starts, for the gate's telemetry (docs/spec.md §8).
    timed: bool,
    /// The gate's own bound on one answer of its runners ([`RunnerLink::backstop`]).
    backstop: Option<Duration>,
}

impl std::fmt::Debug for ChildRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildRunner")
            .field("config_path", &self.config_path)
            .finish_non_exhaustive()
    }
}

impl ChildRunner {
    pub fn new(config_path: PathBuf) -> Self {
        Self {
            config_path,
            current: Mutex::new(None),
            events: gate::EventSink::default(),
            timed: false,
            backstop: None,
        }
    }

    /// The longest its links wait for one answer: past every bound the runner keeps for
    /// a call of `[box] timeout_seconds` (a server's start and its answer, one each; a
    /// box's wall clock; a secret's command), with a minute to spare.
    pub fn backstop_for(mut self, timeout_seconds: u64) -> Self {
        self.backstop = Some(
            Duration::from_secs(timeout_seconds.saturating_mul(2)).saturating_add(BACKSTOP_SPARE),
        );
        self
    }

    /// Its runners report how long each box took to start (only with telemetry on).
    pub fn timed(mut self, on: bool) -> Self {
        self.timed = on;
        self
    }

    /// The sink its links deliver the runner's events to; set it once the gate exists.
    pub fn events(&self) -> gate::EventSink {
        self.events.clone()
    }

    /// The live link, starting a runner if there is none or the last one died.
    fn link(&self) -> Result<Arc<RunnerLink>, String> {
        let mut cur = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((child, link)) = cur.as_mut() {
            if link.dead_reason().is_none() {
                return Ok(link.clone());
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        *cur = None;
        let (ours, theirs) =
            UnixStream::pair().map_err(|e| format!("cannot make a socketpair: {e}"))?;
        let theirs_out = theirs
            .try_clone()
            .map_err(|e| format!("cannot clone a socket: {e}"))?;
        let exe = std::env::current_exe().map_err(|e| format!("cannot find boxmaker: {e}"))?;
        let mut cmd = Command::new(exe);
        if self.timed {
            cmd.env(proto::telemetry::RUNNER_ENV, "1");
        }
        let child = cmd
            .arg("__runner")
            .arg("--config")
            .arg(&self.config_path)
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
            .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the runner: {e}"))?;
        let reader = ours
            .try_clone()
            .map_err(|e| format!("cannot clone a socket: {e}"))?;
        let mut link = RunnerLink::with_events(reader, ours, self.events.clone());
        if let Some(wait) = self.backstop {
            link = link.backstop(wait);
        }
        let link = Arc::new(link);
        *cur = Some((child, link.clone()));
        Ok(link)
    }
}

impl ToolRunner for ChildRunner {
    fn run_approved(
        &self,
        req: &ToolRequest,
        taint: policy::Taint,
        files: &[proto::run::FileDigest],
    ) -> ToolResponse {
        match self.link() {
            Ok(link) => link.run_approved(req, taint, files),
            Err(message) => ToolResponse::Failed { message },
        }
    }

    fn run_if(
        &self,
        req: &ToolRequest,
        taint: policy::Taint,
        files: &[proto::run::FileDigest],
        admit: &mut dyn FnMut() -> Result<(), String>,
    ) -> ToolResponse {
        match self.link() {
            Ok(link) => link.run_if(req, taint, files, admit),
            Err(message) => ToolResponse::Failed { message },
        }
    }

    fn digest(&self, req: &ToolRequest) -> Result<Vec<proto::run::FileDigest>, String> {
        self.link()?.digest(req)
    }

    fn reset(&self, session: &proto::SessionId) -> Result<gate::link::Cleared, String> {
        self.link()?.reset(session)
    }
}

impl Drop for ChildRunner {
    fn drop(&mut self) {
        let cur = self
            .current
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((child, _)) = cur.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How long a hosted gate, when dropped, waits for the connections it serves to finish.
pub const DRAIN: Duration = Duration::from_secs(5);

/// A gate this process hosts: it holds the lock and serves both sockets until dropped (or
/// until the process exits).
///
/// Dropping it waits (up to [`DRAIN`]) for the connections it serves to end: a process that
/// hosts the gate must not exit between an operator's `refuse` waking a held call and the
/// gate's reply to that `refuse`.
#[derive(Debug)]
pub struct HostedGate {
    gate: Arc<Gate>,
    state: PathBuf,
    _lock: File,
    active: Arc<AtomicUsize>,
    agents: Arc<AtomicUsize>,
    /// When the gate began to wait for its connections: [`DRAIN`] counts from here, once,
    /// however many of its waits (a retiring gate's, then its drop's) come after.
    draining: OnceLock<Instant>,
}

impl HostedGate {
    /// The gate itself.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// Connections being served now.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Agent connections being served now: once drained, each ends when its calls are
    /// answered (a control or decision connection is its owner's to close, and may stay
    /// open idle for as long as it likes).
    pub fn agents_active(&self) -> usize {
        self.agents.load(Ordering::SeqCst)
    }

    /// What a gate that stops taking connections waits for before it ends: every agent
    /// connection, to its calls' answers (bounded by the runner's own bounds and the
    /// gate's backstop on them), and the other connections for [`DRAIN`] at most, so that
    /// an operator's request in progress is answered but an idle connection (a script
    /// that keeps one for a whole run) cannot keep a retiring gate, and its lock, for
    /// ever.
    pub fn wait_for_connections(&self) {
        let since = self.drain_began();
        while self.agents_active() > 0 || (self.active() > 0 && since.elapsed() < DRAIN) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ends agent connections once their calls are answered and waits for every
    /// connection to end, up to [`DRAIN`] from when this gate first began to wait: a
    /// retiring gate that waited already is not held a second time when dropped.
    pub fn drain(&self) {
        self.gate.drain_agent_connections();
        let since = self.drain_began();
        while self.active() > 0 && since.elapsed() < DRAIN {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn drain_began(&self) -> Instant {
        *self.draining.get_or_init(Instant::now)
    }

    /// Stops new connections from reaching this gate: its sockets leave the state directory
    /// (the lock is still held, so no other gate has bound them). Connections already
    /// accepted are served to their end.
    pub fn unlink_sockets(&self) {
        for sock in [
            statedir::AGENT_SOCKET,
            statedir::CONTROL_SOCKET,
            statedir::DECIDE_SOCKET,
        ] {
            let _ = std::fs::remove_file(self.state.join(sock));
        }
    }
}

impl Drop for HostedGate {
    fn drop(&mut self) {
        self.drain();
    }
}

/// Counts a connection as active from creation to drop.
struct Active(Arc<AtomicUsize>);

impl Active {
    fn new(counter: &Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Ordering::SeqCst);
        Self(counter.clone())
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Takes the gate of `cfg`'s state directory, if no other process has it, and serves its
/// sockets on background threads. `Ok(None)`: another process is the gate.
pub fn try_host(config_path: &Path, cfg: Arc<Config>) -> Result<Option<HostedGate>, CliError> {
    let state = cfg.gate.state.clone();
    let lock_path = state.join(LOCK_FILE);
    let lock = create_state_dir(&state)?.open_file(LOCK_FILE, Open::Lock, 0o600)?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
        Err(std::fs::TryLockError::Error(source)) => {
            return Err(CliError::State {
                path: lock_path,
                source,
            });
        }
    }
    // OpenTelemetry (docs/spec.md §8): only when the `OTEL_*` variables name an endpoint.
    let traced = crate::role_telemetry::wanted();
    let runner = ChildRunner::new(std::path::absolute(config_path).unwrap_or(config_path.into()))
        .timed(traced)
        .backstop_for(cfg.limits.timeout_seconds);
    let events = runner.events();
    let (gate, repaired) = Gate::open(cfg, Box::new(runner)).map_err(CliError::Gate)?;
    // The runner's egress records go to this gate's audit log.
    events.set(gate.runner_events());
    if traced && let Some(calls) = crate::role_telemetry::start_exporter() {
        gate.set_telemetry(calls);
    }
    if let Some(notice) = repaired {
        errln!("boxmaker: {notice}");
    }
    let agent = bind_agent_socket(&state).map_err(CliError::Socket)?;
    let control = bind_control_socket(&state).map_err(CliError::Socket)?;
    let mut listeners = vec![(agent, Socket::Agent), (control, Socket::Control)];
    // The front's decision socket exists only when the config lets a person approve in the
    // agent's client (docs/spec.md §2.5); a stale one from an earlier config goes.
    if gate.config().gate.approve_in_client {
        let decide = gate::serve_decide::bind_decide_socket(&state).map_err(CliError::Socket)?;
        listeners.push((decide, Socket::Decide));
    } else {
        let _ = std::fs::remove_file(state.join(statedir::DECIDE_SOCKET));
    }
    let active = Arc::new(AtomicUsize::new(0));
    let agents = Arc::new(AtomicUsize::new(0));
    for (listener, which) in listeners {
        let g = gate.clone();
        let active = active.clone();
        let agents = agents.clone();
        std::thread::Builder::new()
            .name(
                match which {
                    Socket::Agent => "gate-agent",
                    Socket::Control => "gate-control",
                    Socket::Decide => "gate-decide",
                }
                .into(),
            )
            .spawn(move || {
                let g2 = g.clone();
                let err = accept_loop(listener, move |stream| {
                    let _active = Active::new(&active);
                    let _agent = matches!(which, Socket::Agent).then(|| Active::new(&agents));
                    let g = g2.clone();
                    let _ = match which {
                        Socket::Agent => gate::serve::serve_agent_stream(g, stream),
                        Socket::Control => gate::serve::serve_control_stream(g, stream),
                        Socket::Decide => gate::serve_decide::serve_decide_stream(g, stream),
                    };
                });
                errln!("boxmaker: the gate stopped accepting connections: {err}");
            })
            .map_err(|source| CliError::State {
                path: state.clone(),
                source,
            })?;
    }
    Ok(Some(HostedGate {
        gate,
        state,
        _lock: lock,
        active,
        agents,
        draining: OnceLock::new(),
    }))
}

/// The sockets a hosted gate serves.
#[derive(Debug, Clone, Copy)]
enum Socket {
    Agent,
    Control,
    Decide,
}

/// This process is a client of a state directory: a shared lock on `clients.lock`, held
/// until dropped (or the process ends, however it ends). An on-demand gate stays while any
/// client holds it.
#[derive(Debug)]
pub struct Presence {
    _file: File,
}

impl Presence {
    /// Declares this process a client of `state`.
    pub fn take(state: &Path) -> Result<Self, CliError> {
        let path = state.join(CLIENTS_LOCK);
        let file = create_state_dir(state)?.open_file(CLIENTS_LOCK, Open::Lock, 0o600)?;
        file.lock_shared()
            .map_err(|source| CliError::State { path, source })?;
        Ok(Self { _file: file })
    }

    /// Whether any process is a client of `state` now. No lock file (the state directory
    /// was removed) is nobody; another error reading it counts as yes: a gate that cannot
    /// tell stays.
    pub fn anyone(state: &Path) -> bool {
        let file = match Dir::own_existing(state)
            .and_then(|d| d.open_file(CLIENTS_LOCK, Open::Existing, 0))
        {
            Ok(file) => file,
            Err(e) => return !e.is_not_found(),
        };
        // Taken and dropped at once: nobody holds a shared lock.
        !matches!(file.try_lock(), Ok(()))
    }
}

/// Which socket a client wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Agent,
    Control,
    Decide,
}

impl Channel {
    fn file(self) -> &'static str {
        match self {
            Channel::Agent => statedir::AGENT_SOCKET,
            Channel::Control => statedir::CONTROL_SOCKET,
            Channel::Decide => statedir::DECIDE_SOCKET,
        }
    }
}

/// A connection to the gate of a state directory, and this process's presence as its
/// client (keep both as long as the connection is used).
#[derive(Debug)]
pub struct Connection {
    pub stream: UnixStream,
    /// Held for as long as the connection is used.
    _presence: Presence,
}

/// Connects to the gate of `cfg`'s state directory, starting an on-demand gate if none
/// answers (see the module's doc). A gate that decides by another version of the config is
/// retired and replaced when it was started on demand.
pub fn connect(
    config_path: &Path,
    cfg: Arc<Config>,
    channel: Channel,
) -> Result<Connection, CliError> {
    let presence = Presence::take(&cfg.gate.state)?;
    let stream = reach(config_path, &cfg, channel, true)?;
    Ok(Connection {
        stream,
        _presence: presence,
    })
}

/// A stream to `channel` of a gate for `cfg`, starting one when none answers. With
/// `check_config`, a gate that answers is asked for its config's fingerprint first.
pub fn reach(
    config_path: &Path,
    cfg: &Config,
    channel: Channel,
    check_config: bool,
) -> Result<UnixStream, CliError> {
    let state = &cfg.gate.state;
    let deadline = Instant::now() + START_WAIT;
    let mut checked = !check_config;
    loop {
        if let Ok(stream) = statedir::connect(state, channel.file()) {
            if checked || same_config(cfg)? {
                return Ok(stream);
            }
            checked = true;
            continue;
        }
        if Instant::now() >= deadline {
            return Err(CliError::Connect {
                path: state.join(channel.file()),
                source: std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!(
                        "no gate answered within {} s (see {})",
                        START_WAIT.as_secs(),
                        state.join(statedir::GATE_LOG).display()
                    ),
                ),
            });
        }
        // The gate we start has our config: no need to ask it.
        checked = true;
        start_gate(config_path, state)?;
    }
}

/// Whether the gate that answers decides by `cfg` (its fingerprint). If it does not: an
/// on-demand gate is asked to retire (`false`: start another); a kept one is warned about
/// and used (`true`).
fn same_config(cfg: &Config) -> Result<bool, CliError> {
    let Ok(stream) = statedir::connect(&cfg.gate.state, statedir::CONTROL_SOCKET) else {
        // It went between the two connects; the caller tries again.
        return Ok(false);
    };
    // A gate that accepts and answers nothing (stopped, wedged) ends the command here,
    // saying so, instead of holding it.
    let _ = stream.set_read_timeout(Some(STATUS_WAIT));
    let _ = stream.set_write_timeout(Some(STATUS_WAIT));
    let status = crate::client::control(&stream, ControlOp::Status {});
    if let Err(e) = &status
        && crate::client::timed_out(e)
    {
        return Err(CliError::Connect {
            path: cfg.gate.state.join(statedir::CONTROL_SOCKET),
            source: std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "the gate accepted but did not answer within {} s (is it stopped or \
                     wedged? see {})",
                    STATUS_WAIT.as_secs(),
                    cfg.gate.state.join(statedir::GATE_LOG).display()
                ),
            ),
        });
    }
    match status {
        Ok(ControlAnswer::Status { config, .. }) if config == cfg.fingerprint => Ok(true),
        Ok(ControlAnswer::Status { kept: true, .. }) => {
            errln!(
                "boxmaker: the gate `boxmaker serve` keeps for {} read another version of the \
                 config; restart `serve` to apply your changes",
                cfg.gate.state.display()
            );
            Ok(true)
        }
        Ok(ControlAnswer::Status { kept: false, .. }) => {
            let _ = crate::client::control(&stream, ControlOp::Retire {});
            Ok(false)
        }
        // A gate of another version, or one that went away: use it as it is.
        _ => Ok(true),
    }
}

/// Starts an on-demand gate for the config at `config_path` and waits until it serves (or
/// until it ends: another gate took the state directory first, which is as good).
fn start_gate(config_path: &Path, state: &Path) -> Result<(), CliError> {
    let dir = create_state_dir(state)?;
    let log_path = state.join(statedir::GATE_LOG);
    // Emptied once it has grown past its bound; appended to otherwise.
    let fresh = dir
        .open_file(statedir::GATE_LOG, Open::Append, 0o600)?
        .metadata()
        .is_ok_and(|m| m.len() > GATE_LOG_MAX);
    let how = if fresh { Open::Truncate } else { Open::Append };
    let log = dir.open_file(statedir::GATE_LOG, how, 0o600)?;
    let exe = std::env::current_exe().map_err(|source| CliError::State {
        path: state.to_path_buf(),
        source,
    })?;
    let config_path = std::path::absolute(config_path).unwrap_or(config_path.into());
    let mut child = Command::new(exe)
        .arg("__gate")
        .arg("--on-demand")
        .arg("--config")
        .arg(&config_path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(log))
        // Its own process group: a ^C meant for the client does not reach the gate that
        // other clients share.
        .process_group(0)
        .spawn()
        .map_err(|source| CliError::State {
            path: state.to_path_buf(),
            source,
        })?;
    // One line, `ready`, once it serves; end of file if it ends without serving.
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    if line.trim() == "ready" {
        // Reaped when it ends, so a long-lived client collects no zombies.
        std::thread::spawn(move || child.wait());
        return Ok(());
    }
    let status = child.wait().map_err(|source| CliError::State {
        path: state.to_path_buf(),
        source,
    })?;
    if status.success() {
        // Another process serves the state directory.
        return Ok(());
    }
    let said = std::fs::read_to_string(&log_path).unwrap_or_default();
    let last = said
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("it said nothing")
        .trim_start_matches("boxmaker: ")
        .to_string();
    Err(CliError::GateStart { why: last })
}

/// The state directory, made `0700` when missing, and held: every file in it is written
/// through `statedir::file`, and it is refused when it, or a name boxmaker keeps in it, is a
/// link (`statedir::open`, docs/spec.md §6).
pub(crate) fn create_state_dir(state: &Path) -> Result<Dir, CliError> {
    Ok(statedir::open(state)?)
}
