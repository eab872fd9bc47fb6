//! `boxmaker serve`: the supervisor, and `boxmaker __gate`, the gate role as a process.
//!
//! The supervisor starts the gate role as a child (`boxmaker __gate`), which takes the state
//! directory's gate lock, serves `agent.sock` and `control.sock`, and starts its runner role
//! as its own child over a socketpair (see [`crate::host`]). If the gate dies, the supervisor
//! starts it again (calls in flight lose their connection; nothing the gate acknowledged is
//! lost: it is in SQLite and the audit log). On SIGINT or SIGTERM the supervisor asks the
//! gate to stop (SIGTERM; SIGKILL after [`STOP_WAIT`]), removes the sockets, and exits 0.
//!
//! A gate role that is asked to stop — SIGTERM or SIGINT, its supervisor gone, or, on
//! demand, its last client gone — signs a last checkpoint of the audit log and waits for
//! the witnesses to take it before it exits (docs/spec.md §6).
//!
//! With `--approvals ADDR` the supervisor also serves the approvals page (crate `page`): a
//! client of the control socket, like the CLI, with a login token made at start, printed
//! once and kept `0600` in `STATE/approvals.token`.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::CliError;
use crate::host::{HostedGate, LINGER, Presence, try_host};

/// Run boxmaker: the gate and the runner, serving the agent and control sockets.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// Also serve the approvals page at this address (e.g. 127.0.0.1:8700; port 0 picks
    /// one): pending calls appear as they ask, to approve or refuse in the browser.
    #[arg(long, value_name = "ADDR")]
    approvals: Option<std::net::SocketAddr>,
    /// Allow `--approvals` on an address other than loopback (the page is then reachable
    /// from other machines, over plain HTTP).
    #[arg(long, requires = "approvals")]
    allow_remote: bool,
}

/// The approvals page's login token, in the state directory.
pub const APPROVALS_TOKEN: &str = "approvals.token";

/// Starts the approvals page on a thread of its own: binds `addr` (which `serve` checked is
/// loopback, or allowed), writes a fresh login token `0600` to the state directory, and
/// prints where the page is and the token, once.
fn start_page(addr: std::net::SocketAddr, state: &std::path::Path) -> Result<(), CliError> {
    let dir = crate::host::create_state_dir(state)?;
    let token = page::auth::random_token()
        .map_err(|e| CliError::Unexpected(format!("no randomness: {e}")))?;
    let path = state.join(APPROVALS_TOKEN);
    dir.replace(
        APPROVALS_TOKEN,
        token.as_bytes(),
        statedir::file::Mode::Private,
    )?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| CliError::State {
            path: state.to_path_buf(),
            source,
        })?;
    let listener = runtime
        .block_on(page::bind(addr))
        .map_err(|e| CliError::Local(e.to_string()))?;
    let bound = listener.local_addr().unwrap_or(addr);
    errln!(
        "boxmaker: approvals page at http://{bound}/ — log in with the token {token} (also in {})",
        path.display()
    );
    let state = state.to_path_buf();
    std::thread::Builder::new()
        .name("approvals-page".into())
        .spawn(move || {
            if let Err(e) = runtime.block_on(page::serve_on(listener, state, token)) {
                errln!("boxmaker: {e}");
            }
        })
        .map_err(|source| CliError::State {
            path: path.clone(),
            source,
        })?;
    Ok(())
}

/// The gate role (started by `serve`, or by a client on demand).
#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// Started by a client: say `ready` on stdout once serving, and end when the last
    /// client has gone (see `host`), instead of when the supervisor does.
    #[arg(long)]
    on_demand: bool,
}

/// How long the supervisor waits for a gate it asked to stop (its last checkpoint, and the
/// witnesses taking it) before it kills it.
pub const STOP_WAIT: Duration = Duration::from_secs(20);

/// How long a stopping gate waits for its witnesses to take the last checkpoint (a witness
/// command has 10 s of its own).
const WITNESS_WAIT: Duration = Duration::from_secs(15);

/// Asks the gate role to stop, and kills it if it has not within [`STOP_WAIT`].
fn stop_gate(child: &mut Child) {
    let _ = rustix::process::kill_process(
        rustix::process::Pid::from_child(child),
        rustix::process::Signal::TERM,
    );
    let start = Instant::now();
    while start.elapsed() < STOP_WAIT {
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    errln!(
        "boxmaker: the gate did not stop within {} s; killing it",
        STOP_WAIT.as_secs()
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// SIGTERM and SIGINT set the returned flag.
fn stop_flag(state: &std::path::Path) -> Result<Arc<AtomicBool>, CliError> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(|source| CliError::State {
            path: state.to_path_buf(),
            source,
        })?;
    }
    Ok(stop)
}

/// More restarts than this within [`RESTART_WINDOW`] and the supervisor gives up.
const MAX_RESTARTS: usize = 5;
const RESTART_WINDOW: Duration = Duration::from_secs(60);

pub fn serve(args: &ServeArgs) -> Result<u8, CliError> {
    let cfg = config::load(&args.config)?;
    if let Some(addr) = args.approvals
        && !addr.ip().is_loopback()
        && !args.allow_remote
    {
        return Err(CliError::Local(format!(
            "{addr} is not a loopback address; pass --allow-remote to serve the approvals page \
             to other machines"
        )));
    }
    let state = cfg.gate.state.clone();
    let config_path = std::path::absolute(&args.config).unwrap_or(args.config.clone());
    let stop = stop_flag(&state)?;
    let mut restarts: Vec<Instant> = Vec::new();
    let start = || -> Result<Child, CliError> {
        let exe = std::env::current_exe().map_err(|source| CliError::State {
            path: state.clone(),
            source,
        })?;
        Command::new(exe)
            .arg("__gate")
            .arg("--config")
            .arg(&config_path)
            .spawn()
            .map_err(|source| CliError::State {
                path: state.clone(),
                source,
            })
    };
    let mut child = start()?;
    errln!(
        "boxmaker: serving; agent socket {}, control socket {}",
        state.join(gate::serve::AGENT_SOCKET).display(),
        state.join(gate::serve::CONTROL_SOCKET).display()
    );
    if let Some(addr) = args.approvals
        && let Err(e) = start_page(addr, &state)
    {
        let _ = child.kill();
        let _ = child.wait();
        return Err(e);
    }
    let code = loop {
        if stop.load(Ordering::SeqCst) {
            stop_gate(&mut child);
            errln!("boxmaker: stopped");
            break 0;
        }
        match child.try_wait() {
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Ok(Some(status)) => {
                if stop.load(Ordering::SeqCst) {
                    break 0;
                }
                let now = Instant::now();
                restarts.retain(|t| now.duration_since(*t) < RESTART_WINDOW);
                if status.code() == Some(2) || restarts.len() >= MAX_RESTARTS {
                    errln!("boxmaker: the gate exited ({status}); not restarting it");
                    break 1;
                }
                restarts.push(now);
                errln!("boxmaker: the gate exited ({status}); restarting it");
                std::thread::sleep(Duration::from_millis(200));
                child = start()?;
            }
            Err(source) => {
                return Err(CliError::State {
                    path: state.clone(),
                    source,
                });
            }
        }
    };
    for sock in [
        gate::serve::AGENT_SOCKET,
        gate::serve::CONTROL_SOCKET,
        statedir::DECIDE_SOCKET,
    ] {
        let _ = std::fs::remove_file(state.join(sock));
    }
    Ok(code)
}

/// The gate role under `serve`: host the gate and serve until killed or until the
/// supervisor is gone.
///
/// If another process holds the state directory's gate (an on-demand gate a client
/// started), ask it to retire and take over once it has answered what it holds: the lock
/// guarantees one gate at a time, and the supervisor must not give up because of it.
pub fn gate_role(args: &GateArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
    if args.on_demand {
        return on_demand(args, cfg);
    }
    // The supervisor that started this role; if it dies (even by SIGKILL, which it cannot
    // pass on), this role ends too, and with it the runner and every box it holds: an
    // orphaned gate would keep the state directory's lock from the next `serve`.
    let supervisor = std::os::unix::process::parent_id();
    let stop = stop_flag(&cfg.gate.state)?;
    let mut waited: Option<Instant> = None;
    let hosted = loop {
        if let Some(hosted) = try_host(&args.config, cfg.clone())? {
            break hosted;
        }
        if let Ok(stream) = statedir::connect(&cfg.gate.state, statedir::CONTROL_SOCKET) {
            let _ = crate::client::control(&stream, proto::control::ControlOp::Retire {});
        }
        if waited.is_none() {
            errln!("boxmaker: another process holds the gate; waiting for it to finish");
            waited = Some(Instant::now());
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // Said once the wait is over, so a person watching knows it is this gate that serves.
    if let Some(since) = waited {
        errln!(
            "boxmaker: took over the gate of {} after {:.1} s: this serve's gate serves it now",
            cfg.gate.state.display(),
            since.elapsed().as_secs_f64()
        );
    }
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if stop.load(Ordering::SeqCst) {
            break;
        }
        if std::os::unix::process::parent_id() != supervisor {
            errln!("boxmaker: the supervisor is gone; the gate role stops");
            break;
        }
    }
    // No new connections; those open get a moment to end, so that the last checkpoint
    // covers what they write.
    hosted.unlink_sockets();
    hosted.drain();
    hosted.gate().shutdown(WITNESS_WAIT);
    Ok(0)
}

/// How long an on-demand gate waits for the lock before it gives up.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// An on-demand gate: take the lock (or leave at once if another gate already serves),
/// say `ready`, and serve until there has been no client and no connection for
/// [`LINGER`], or until a client asks it to retire.
fn on_demand(args: &GateArgs, cfg: Arc<config::Config>) -> Result<u8, CliError> {
    let state = cfg.gate.state.clone();
    let deadline = Instant::now() + LOCK_WAIT;
    let hosted: HostedGate = loop {
        if let Some(hosted) = try_host(&args.config, cfg.clone())? {
            break hosted;
        }
        // Another gate holds the lock. If it serves, our client will use it; if it is
        // retiring, wait for it to end.
        if statedir::connect(&state, statedir::AGENT_SOCKET).is_ok() {
            return Ok(0);
        }
        if Instant::now() >= deadline {
            return Err(CliError::GateStart {
                why: format!(
                    "another process has held {} for {} s without serving",
                    state.join(statedir::LOCK_FILE).display(),
                    LOCK_WAIT.as_secs()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    hosted.gate().set_on_demand();
    let stop = stop_flag(&state)?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        // The client that started us may be gone already; that is no reason to stop.
        let _ = writeln!(out, "ready").and_then(|()| out.flush());
    }
    let mut idle_since: Option<Instant> = None;
    loop {
        std::thread::sleep(Duration::from_millis(100));
        if hosted.gate().retire_requested() {
            errln!("boxmaker: a client asked this gate to retire");
            break;
        }
        if stop.load(Ordering::SeqCst) {
            errln!("boxmaker: asked to stop");
            break;
        }
        if hosted.active() == 0 && !Presence::anyone(&state) {
            let since = *idle_since.get_or_insert_with(Instant::now);
            if since.elapsed() >= LINGER {
                break;
            }
        } else {
            idle_since = None;
        }
    }
    hosted.unlink_sockets();
    // Connections accepted just before the sockets went are served to their end; those a
    // front keeps between calls end once their calls are answered.
    hosted.gate().drain_agent_connections();
    std::thread::sleep(Duration::from_millis(200));
    hosted.wait_for_connections();
    hosted.gate().shutdown(WITNESS_WAIT);
    Ok(0)
}
