//! `boxmaker __broker`: the unconfined half of `boxmaker mcp`. Its standard input is a
//! socketpair to the front; for each request on it, it finds the gate of the state directory
//! — starting an on-demand gate when none answers, or when a changed config retired the old
//! one — and hands the front a connection to the gate's agent socket (`front::channel`).
//! It is the only thing the confined front can ask, and all it can give is that one kind of
//! connection (and, with `[gate] approve_in_client`, one to the gate's decision socket). It ends when the front closes the channel.

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::CliError;
use crate::host;

/// The front's broker (started by `boxmaker mcp`).
#[derive(Debug, clap::Args)]
pub struct BrokerArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// The front serves one conversation on stdio: its parent is the MCP client, recorded
    /// with the session for the client's prompt hook (docs/spec.md §3.10).
    #[arg(long)]
    stdio_client: bool,
}

/// The MCP client of a stdio front: this broker's parent is the front, and the front's
/// parent is the client. Read from `/proc` here, outside every box, before the front reads
/// the agent's first byte.
fn stdio_client() -> Option<statedir::live::Process> {
    let front = std::os::unix::process::parent_id();
    let (_, client) = statedir::live::Process::of(front).ok()?;
    if client <= 1 {
        return None;
    }
    statedir::live::Process::of(client).ok().map(|(p, _)| p)
}

pub fn run(args: &BrokerArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
    let client = if args.stdio_client {
        stdio_client()
    } else {
        None
    };
    // A gate now, so the front's first call does not wait for one to start; and a config
    // that changed since a running gate read it replaces that gate once, here.
    let _ = host::reach(&args.config, &cfg, host::Channel::Agent, true);
    front::channel::serve(std::io::stdin(), |kind| match kind {
        front::channel::Kind::Agent => host::reach(&args.config, &cfg, host::Channel::Agent, false)
            .map(Into::into)
            .map_err(|e| e.to_string()),
        // The decision socket only where the config lets a person approve in the client.
        front::channel::Kind::Decide if cfg.gate.approve_in_client => {
            host::reach(&args.config, &cfg, host::Channel::Decide, false)
                .map(Into::into)
                .map_err(|e| e.to_string())
        }
        front::channel::Kind::Decide => {
            Err("approving in the client is off (`[gate] approve_in_client = false`)".to_string())
        }
        // A connection session, live while the front keeps this file open (its remembered
        // approvals end with it: docs/spec.md §6).
        // On stdio, with the client whose conversation it is (docs/spec.md §3.10).
        front::channel::Kind::Live(session) => statedir::live::hold(&cfg.gate.state, &session)
            .and_then(|file| {
                if let Some(c) = client {
                    statedir::live::record_client(&file, c)?;
                }
                Ok(file)
            })
            .map(Into::into)
            .map_err(|e| format!("cannot mark session {session} live: {e}")),
    });
    Ok(0)
}
