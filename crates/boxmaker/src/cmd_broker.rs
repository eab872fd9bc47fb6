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
}

pub fn run(args: &BrokerArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
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
        front::channel::Kind::Live(session) => statedir::live::hold(&cfg.gate.state, &session)
            .map(Into::into)
            .map_err(|e| format!("cannot mark session {session} live: {e}")),
    });
    Ok(0)
}
