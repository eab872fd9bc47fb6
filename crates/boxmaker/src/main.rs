//! `boxmaker` — the one binary. It parses arguments and wires the roles together; the work
//! lives in the role crates. Every error leaves as one sentence on stderr and an exit status,
//! never a panic or a backtrace.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

/// Let an AI agent use tools on your machine without handing it the machine.
///
/// Every tool call passes a gate that checks a grant and the session's taint; every tool
/// runs in a Linux box; every result is labelled so private data cannot leave.
#[derive(Debug, Parser)]
#[command(
    name = "boxmaker",
    version,
    about,
    long_about,
    propagate_version = true
)]
struct Cli {}

fn main() -> ExitCode {
    let _cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are "errors" to clap that print to stdout and exit 0.
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    println!(
        "boxmaker {} (wire protocol {}): see `boxmaker --help`",
        env!("CARGO_PKG_VERSION"),
        proto::PROTOCOL_VERSION
    );
    ExitCode::SUCCESS
}
