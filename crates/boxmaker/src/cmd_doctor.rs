//! `boxmaker doctor`: which of the box's protections this machine enforces, each probed for
//! real. Exits 0 when boxes can run here, 1 when a required protection is missing (the runner
//! refuses to start in that case). What is required comes from the config's `[box]` table
//! when `--config` names one (landlock required, cgroup limits optional, by default); with a
//! config it also reports what in it would stop every box (a mount whose host path is not
//! there: exit 1) or grant nothing (a grant for no tool: a warning).

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
    let cfg = args.config.as_deref().map(config::load).transpose()?;
    let limits = cfg
        .as_ref()
        .map_or_else(config::BoxLimits::default, |c| c.limits);
    let (report, mut ok) = runner::doctor(&limits);
    print!("{report}");
    // With a config, also what in it would stop boxes (a mount that is not there) or grant
    // nothing (a grant for no tool).
    for f in cfg.iter().flat_map(crate::lint::lint) {
        if f.blocks_boxes {
            ok = false;
            println!("config: {}", f.text);
        } else {
            println!("config (warning): {}", f.text);
        }
    }
    if !ok && cfg.is_some() {
        println!("boxes cannot run with this config until the lines above are fixed");
    }
    Ok(if ok { 0 } else { 1 })
}
