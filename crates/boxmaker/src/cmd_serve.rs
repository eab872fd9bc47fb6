//! `boxmaker serve`: the supervisor, and `boxmaker __gate`, the gate role as a process.
//!
//! The supervisor starts the gate role as a child (`boxmaker __gate`), which takes the state
//! directory's gate lock, serves `agent.sock` and `control.sock`, and starts its runner role
//! as its own child over a socketpair (see [`crate::host`]). If the gate dies, the supervisor
//! starts it again (calls in flight lose their connection; nothing the gate acknowledged is
//! lost: it is in SQLite and the audit log). On SIGINT or SIGTERM the supervisor stops the
//! gate, removes the sockets, and exits 0.

use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::CliError;
use crate::host::try_host;

/// Run boxmaker: the gate and the runner, serving the agent and control sockets.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
}

/// The gate role (started by `serve`).
#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
}

/// More restarts than this within [`RESTART_WINDOW`] and the supervisor gives up.
const MAX_RESTARTS: usize = 5;
const RESTART_WINDOW: Duration = Duration::from_secs(60);

pub fn serve(args: &ServeArgs) -> Result<u8, CliError> {
    let cfg = config::load(&args.config)?;
    let state = cfg.gate.state.clone();
    let config_path = std::path::absolute(&args.config).unwrap_or(args.config.clone());
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(|source| CliError::State {
            path: state.clone(),
            source,
        })?;
    }
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
    eprintln!(
        "boxmaker: serving; agent socket {}, control socket {}",
        state.join(gate::serve::AGENT_SOCKET).display(),
        state.join(gate::serve::CONTROL_SOCKET).display()
    );
    let code = loop {
        if stop.load(Ordering::SeqCst) {
            let _ = child.kill();
            let _ = child.wait();
            eprintln!("boxmaker: stopped");
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
                    eprintln!("boxmaker: the gate exited ({status}); not restarting it");
                    break 1;
                }
                restarts.push(now);
                eprintln!("boxmaker: the gate exited ({status}); restarting it");
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
    for sock in [gate::serve::AGENT_SOCKET, gate::serve::CONTROL_SOCKET] {
        let _ = std::fs::remove_file(state.join(sock));
    }
    Ok(code)
}

/// The gate role: host the gate and serve until killed.
///
/// If another process holds the state directory's gate (a command that hosted an embedded
/// gate while this role was being restarted), wait for it to finish and take over: the lock
/// guarantees one gate at a time, and the supervisor must not give up because of it.
pub fn gate_role(args: &GateArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
    // The supervisor that started this role; if it dies (even by SIGKILL, which it cannot
    // pass on), this role ends too, and with it the runner and every box it holds: an
    // orphaned gate would keep the state directory's lock from the next `serve`.
    let supervisor = std::os::unix::process::parent_id();
    let mut waited = false;
    let _hosted = loop {
        if let Some(hosted) = try_host(&args.config, cfg.clone())? {
            break hosted;
        }
        if !waited {
            eprintln!("boxmaker: another process holds the gate; waiting for it to finish");
            waited = true;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    loop {
        std::thread::sleep(Duration::from_millis(200));
        if std::os::unix::process::parent_id() != supervisor {
            eprintln!("boxmaker: the supervisor is gone; the gate role stops");
            return Ok(0);
        }
    }
}
