//! `boxmaker box exec` and `boxmaker box show`: a person's view of the box a tool call gets.
//!
//! `box exec` runs a command in a session's box — the same box the runner builds for a call in
//! that session (workspace, mounts, limits, no network unless asked) — with the terminal's
//! stdin, stdout and stderr, and exits with the command's status (128 + signal when it was
//! killed, 124 when it timed out). A box that cannot be built exits 125 with the reason.

use std::path::PathBuf;
use std::sync::Arc;

use proto::SessionId;
use runner::Runner;

use crate::error::CliError;

/// Run a command in a session's box, or show what a box contains.
#[derive(Debug, clap::Args)]
pub struct BoxArgs {
    #[command(subcommand)]
    command: BoxCommand,
}

#[derive(Debug, clap::Subcommand)]
enum BoxCommand {
    /// Run a command in a session's box with this terminal's stdin, stdout and stderr.
    Exec(ExecArgs),
    /// Print the mount table a box gets.
    Show(ShowArgs),
}

#[derive(Debug, clap::Args)]
struct ExecArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// The session whose box (and workspace) to use.
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    session: SessionId,
    /// Give the box the host's network (default: only `lo`).
    #[arg(long)]
    network: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct ShowArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// The session whose box to show (nothing is created: a missing workspace is shown by
    /// the path its first call makes).
    #[arg(
        long,
        value_name = "ID",
        default_value = "example",
        allow_hyphen_values = true
    )]
    session: SessionId,
    /// Show the box of a tool with `network = true`.
    #[arg(long)]
    network: bool,
    /// Show the box this tool's calls get: its mounts (writable as the session's label
    /// allows now), its network, and its reach.
    #[arg(long, value_name = "NAME")]
    tool: Option<String>,
}

/// Runs `box exec` or `box show`; returns the exit status.
pub fn run(args: &BoxArgs) -> Result<u8, CliError> {
    match &args.command {
        BoxCommand::Exec(a) => exec(a),
        BoxCommand::Show(a) => show(a),
    }
}

fn runner_for(config: &std::path::Path) -> Result<Runner, CliError> {
    let cfg = config::load(config)?;
    let state = cfg.gate.state.clone();
    Ok(Runner::new(Arc::new(cfg), &state)?)
}

fn exec(a: &ExecArgs) -> Result<u8, CliError> {
    let runner = runner_for(&a.config)?;
    let code = runner
        .exec_in_box(&a.session, a.network, a.command.clone())
        .map_err(CliError::Box)?;
    Ok(u8::try_from(code.clamp(0, 255)).unwrap_or(1))
}

fn show(a: &ShowArgs) -> Result<u8, CliError> {
    // A look: nothing is created or touched on disk (docs/spec.md §7).
    let cfg = config::load(&a.config)?;
    let state = cfg.gate.state.clone();
    let runner = Runner::to_describe(Arc::new(cfg), &state)?;
    let tool = match &a.tool {
        None => None,
        Some(name) => Some(
            runner
                .config()
                .tool(name)
                .ok_or_else(|| CliError::UnknownTool {
                    tool: name.clone(),
                    known: crate::cmd_call::known_tools(runner.config()),
                })?,
        ),
    };
    out!(
        "{}",
        runner
            .describe_box(&a.session, a.network, tool)
            .map_err(CliError::Box)?
    );
    Ok(0)
}
