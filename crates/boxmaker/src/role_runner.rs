//! The runner role as a process: `boxmaker __runner --config FILE` serves `ToolRequest`
//! frames on its stdin and answers on its stdout. The gate process starts it with both ends
//! of a socketpair; tests start it with pipes.
//! It refuses to start where a protection every box requires is missing.

use std::path::PathBuf;
use std::sync::Arc;

use runner::Runner;

use crate::error::CliError;

/// The runner role (started by boxmaker itself).
#[derive(Debug, clap::Args)]
pub struct RunnerArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
}

pub fn run(args: &RunnerArgs) -> Result<(), CliError> {
    let cfg = config::load(&args.config)?;
    Runner::check_machine(&cfg)?;
    let state = cfg.gate.state.clone();
    // Its egress proxy holds several descriptors a connection; best effort.
    let _ = runner::raise_open_files_limit();
    // Box start times for the gate's telemetry (docs/spec.md §8), when its gate exports any.
    let timed = std::env::var_os(proto::telemetry::RUNNER_ENV).is_some();
    let runner = Arc::new(
        Runner::new(Arc::new(cfg), &state)?
            .with_timed_boxes(timed)
            .watching_kept_names(),
    );
    // Ended connection sessions' workspaces (see `Runner::sweep_workspaces`).
    runner.sweep_workspaces();
    // Program copies of approved calls a runner that died left behind.
    runner.sweep_pins();
    // Servers nobody has discovered yet are asked on the first call that names one of
    // their tools (not here: a server that hangs must not hold up every builtin call).
    runner::serve(runner, std::io::stdin(), std::io::stdout()).map_err(CliError::Serve)
}
