//! `boxmaker doctor`: which of the box's protections this machine enforces, each probed for
//! real. Exits 0 when boxes can run here, 1 when a required protection is missing (the runner
//! refuses to start in that case).

use sandbox::Requirements;

/// Report which protections this machine enforces.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {}

/// Prints the report; returns the exit status.
pub fn run(_args: &DoctorArgs) -> u8 {
    let report = sandbox::doctor(&Requirements::default());
    print!("{report}");
    if report.missing().is_empty() { 0 } else { 1 }
}
