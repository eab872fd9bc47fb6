//! `boxmaker doctor`: which of the box's protections this machine enforces, each probed for
//! real. Exits 0 when boxes can run here, 1 when a required protection is missing (the runner
//! refuses to start in that case). What is required comes from the config's `[box]` table
//! when `--config` names one (landlock required, cgroup limits optional, by default).

use std::path::PathBuf;

use crate::error::CliError;

/// Report which protections this machine enforces.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Judge against this config's `[box]` requirements instead of the defaults.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

/// Prints the report; returns the exit status.
pub fn run(args: &DoctorArgs) -> Result<u8, CliError> {
    let limits = match &args.config {
        None => config::BoxLimits::default(),
        Some(path) => config::load(path)?.limits,
    };
    let (report, ok) = runner::doctor(&limits);
    print!("{report}");
    Ok(if ok { 0 } else { 1 })
}
