//! `boxmaker doctor`: which of the box's protections this machine enforces, each probed for
//! real. Exits 0 when boxes can run here, 1 when a required protection is missing (the runner
//! refuses to start in that case). What is required comes from the config's `[box]` table
//! when `--config` names one (landlock required, cgroup limits optional, by default).

use std::path::PathBuf;

use sandbox::Requirements;

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
    let require = match &args.config {
        None => Requirements::default(),
        Some(path) => {
            let cfg = config::load(path)?;
            Requirements {
                landlock: cfg.limits.require_landlock,
                cgroups: cfg.limits.require_cgroups,
            }
        }
    };
    let report = sandbox::doctor(&require);
    print!("{report}");
    Ok(if report.missing().is_empty() { 0 } else { 1 })
}
