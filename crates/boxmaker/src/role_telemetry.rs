//! OpenTelemetry for the gate (docs/spec.md §8). The gate may not open the network, so the
//! OTLP connection belongs to a process of its own: `boxmaker __telemetry`, the gate's child,
//! reads the gate's call records from a pipe and exports them (crate `telemetry`). It is
//! started only when the standard `OTEL_*` variables name an endpoint; otherwise nothing is
//! started, no thread runs, and the call path does nothing more than before.

use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::error::CliError;

/// Whether this process's environment asks for an export.
pub fn wanted() -> bool {
    telemetry::wanted().any()
}

/// Starts the exporter and returns what the gate traces its calls into; `None` when nothing
/// is wanted, or the exporter could not start (said on stderr: the gate runs without it).
pub fn start_exporter() -> Option<Arc<gate::telemetry::Calls>> {
    if !wanted() {
        return None;
    }
    let started = std::env::current_exe().and_then(|exe| {
        Command::new(exe)
            .arg("__telemetry")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
    });
    let mut child = match started {
        Ok(c) => c,
        Err(e) => {
            errln!("boxmaker: cannot start the telemetry exporter ({e}); nothing is exported");
            return None;
        }
    };
    let stdin = child.stdin.take()?;
    let calls = match gate::telemetry::Calls::start(Box::new(stdin)) {
        Ok(c) => c,
        Err(e) => {
            errln!("boxmaker: cannot start the telemetry writer ({e}); nothing is exported");
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
    };
    // Reaped when it ends (it ends when the gate's pipe closes, or on its own error).
    let _ = std::thread::Builder::new()
        .name("telemetry-wait".into())
        .spawn(move || {
            if let Ok(status) = child.wait()
                && !status.success()
            {
                errln!(
                    "boxmaker: the telemetry exporter ended ({status}); nothing more is exported"
                );
            }
        });
    Some(Arc::new(calls))
}

/// `boxmaker __telemetry`: the exporter process, reading the gate's records on stdin.
pub fn run() -> Result<u8, CliError> {
    match telemetry::serve(std::io::stdin().lock()) {
        Ok(()) => Ok(0),
        Err(e) => {
            errln!("boxmaker: telemetry: {e}");
            Ok(1)
        }
    }
}
