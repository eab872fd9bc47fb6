//! Where the gate lives, and how every command reaches it.
//!
//! There is one gate per state directory, held by an exclusive lock on `gate.lock`. The
//! process that holds it — `serve`'s gate child, or an *embedded* gate inside `call`, `mcp`
//! or an operator command when no `serve` runs — serves `agent.sock` and `control.sock`, and
//! every client, the embedding process included, talks to it over those sockets. So there is
//! one code path, two gates can never write the same audit log, and `boxmaker approve` in
//! another shell reaches a call that an embedded gate holds.
//!
//! The gate process starts its runner as a child (`boxmaker __runner`) over a socketpair and,
//! if that runner dies, starts a new one for the next call; calls in flight when it died are
//! answered `failed` by the link. The supervisor (`serve`) restarts the gate itself.

use std::fs::File;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use config::Config;
use gate::serve::{accept_loop, bind_agent_socket, bind_control_socket};
use gate::{Gate, RunnerLink, ToolRunner};
use proto::{ToolRequest, ToolResponse};

use crate::error::CliError;

/// The lock that makes one process the gate of a state directory.
pub const LOCK_FILE: &str = "gate.lock";

/// A [`ToolRunner`] that starts `boxmaker __runner` as a child on first use, and again after
/// the child dies.
pub struct ChildRunner {
    config_path: PathBuf,
    current: Mutex<Option<(Child, Arc<RunnerLink>)>>,
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
        }
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
        let child = Command::new(exe)
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
        let link = Arc::new(RunnerLink::new(reader, ours));
        *cur = Some((child, link.clone()));
        Ok(link)
    }
}

impl ToolRunner for ChildRunner {
    fn run(&self, req: &ToolRequest) -> ToolResponse {
        match self.link() {
            Ok(link) => link.run(req),
            Err(message) => ToolResponse::Failed { message },
        }
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
/// Dropping it waits (up to [`DRAIN`]) for the connections it serves to end: a `call` that
/// hosts the gate must not exit between an operator's `refuse` waking its held call and the
/// gate's reply to that `refuse`. Several long-lived clients should use `boxmaker serve`.
#[derive(Debug)]
pub struct HostedGate {
    /// Kept alive for as long as this process serves the gate.
    _gate: Arc<Gate>,
    _lock: File,
    active: Arc<AtomicUsize>,
}

impl Drop for HostedGate {
    fn drop(&mut self) {
        let start = Instant::now();
        while self.active.load(Ordering::SeqCst) > 0 && start.elapsed() < DRAIN {
            std::thread::sleep(Duration::from_millis(5));
        }
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
    create_state_dir(&state)?;
    let lock_path = state.join(LOCK_FILE);
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|source| CliError::State {
            path: lock_path.clone(),
            source,
        })?;
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
    let runner = ChildRunner::new(std::path::absolute(config_path).unwrap_or(config_path.into()));
    let (gate, repaired) = Gate::open(cfg, Box::new(runner)).map_err(CliError::Gate)?;
    if let Some(notice) = repaired {
        eprintln!("boxmaker: {notice}");
    }
    let agent = bind_agent_socket(&state).map_err(CliError::Socket)?;
    let control = bind_control_socket(&state).map_err(CliError::Socket)?;
    let active = Arc::new(AtomicUsize::new(0));
    for (listener, is_control) in [(agent, false), (control, true)] {
        let g = gate.clone();
        let active = active.clone();
        std::thread::Builder::new()
            .name(
                if is_control {
                    "gate-control"
                } else {
                    "gate-agent"
                }
                .into(),
            )
            .spawn(move || {
                let g2 = g.clone();
                let err = accept_loop(listener, move |stream| {
                    let _active = Active::new(&active);
                    let g = g2.clone();
                    let _ = if is_control {
                        gate::serve::serve_control_stream(g, stream)
                    } else {
                        gate::serve::serve_agent_stream(g, stream)
                    };
                });
                eprintln!("boxmaker: the gate stopped accepting connections: {err}");
            })
            .map_err(|source| CliError::State {
                path: state.clone(),
                source,
            })?;
    }
    Ok(Some(HostedGate {
        _gate: gate,
        _lock: lock,
        active,
    }))
}

/// Which socket a client wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Agent,
    Control,
}

impl Channel {
    fn file(self) -> &'static str {
        match self {
            Channel::Agent => gate::serve::AGENT_SOCKET,
            Channel::Control => gate::serve::CONTROL_SOCKET,
        }
    }
}

/// A connection to the gate of `cfg`'s state directory, and the gate this process hosts if
/// it had to start one (keep it alive as long as the connection).
#[derive(Debug)]
pub struct Connection {
    pub stream: UnixStream,
    /// The gate this process started for the connection, kept as long as it.
    _hosted: Option<HostedGate>,
}

/// Connects to the running gate, or hosts one in this process and connects to it.
pub fn connect(
    config_path: &Path,
    cfg: Arc<Config>,
    channel: Channel,
) -> Result<Connection, CliError> {
    let path = cfg.gate.state.join(channel.file());
    for attempt in 0..50 {
        if let Ok(stream) = UnixStream::connect(&path) {
            return Ok(Connection {
                stream,
                _hosted: None,
            });
        }
        if let Some(hosted) = try_host(config_path, cfg.clone())? {
            let stream = UnixStream::connect(&path).map_err(|source| CliError::Connect {
                path: path.clone(),
                source,
            })?;
            return Ok(Connection {
                stream,
                _hosted: Some(hosted),
            });
        }
        // Another process holds the gate but has not bound its sockets yet.
        std::thread::sleep(Duration::from_millis(20 * (attempt + 1).min(5)));
    }
    Err(CliError::Connect {
        path: path.clone(),
        source: std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "another process holds the gate lock but does not answer",
        ),
    })
}

/// Makes sure a gate serves `cfg`'s state directory: `None` when another process serves it,
/// else the gate this process now hosts (keep it for as long as clients need it).
pub fn ensure(config_path: &Path, cfg: Arc<Config>) -> Result<Option<HostedGate>, CliError> {
    let conn = connect(config_path, cfg, Channel::Agent)?;
    Ok(conn._hosted)
}

pub(crate) fn create_state_dir(state: &Path) -> Result<(), CliError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state)
        .map_err(|source| CliError::State {
            path: state.to_path_buf(),
            source,
        })
}
