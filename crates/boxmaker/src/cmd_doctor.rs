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
    out!("{report}");
    // The front (`boxmaker mcp`) confines itself before it reads the agent's first byte:
    // probed for real, in a process of its own that confines itself and tries to open a file.
    match front_probe() {
        Ok(line) => outln!("front: {line}"),
        Err(why) => {
            ok = false;
            outln!(
                "front: cannot confine itself here ({why}); `boxmaker mcp` will refuse to serve"
            );
        }
    }
    // With a config, also what in it would stop boxes (a mount that is not there) or grant
    // nothing (a grant for no tool).
    for f in cfg.iter().flat_map(crate::lint::lint) {
        if f.blocks_boxes {
            ok = false;
            outln!("config: {}", f.text);
        } else {
            outln!("config (warning): {}", f.text);
        }
    }
    if !ok && cfg.is_some() {
        outln!("boxes cannot run with this config until the lines above are fixed");
    }
    Ok(if ok { 0 } else { 1 })
}

/// Runs `boxmaker __front-probe` and returns what it said.
fn front_probe() -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let o = std::process::Command::new(exe)
        .arg("__front-probe")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let said = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if o.status.success() {
        Ok(said)
    } else {
        Err(if said.is_empty() {
            String::from_utf8_lossy(&o.stderr).trim().to_string()
        } else {
            said
        })
    }
}

/// `boxmaker __front-probe`: confines this process as the front does, then tries to open a
/// file it could open a moment before. Exit 0 when the confinement is in force and the
/// open was refused.
pub fn probe() -> u8 {
    let path = "/proc/self/status";
    if std::fs::File::open(path).is_err() {
        outln!("cannot open {path} even before confinement; no probe possible");
        return 1;
    }
    match front::confine::confine() {
        Err(e) => {
            outln!("{e}");
            1
        }
        Ok(confined) => match std::fs::File::open(path) {
            Ok(_) => {
                outln!("confined ({confined}), yet it could still open {path}");
                1
            }
            Err(e) => {
                outln!("confines itself: {confined}; a probe could not open a file ({e})");
                0
            }
        },
    }
}
