//! `boxmaker` — the one binary. It parses arguments and wires the roles together; the work
//! lives in the role crates. Every error leaves as one sentence on stderr and an exit status,
//! never a panic or a backtrace.
//!
//! Modules, one per command: [`cmd_init`] (`boxmaker init`), [`cmd_check`]
//! (`boxmaker check`); [`error`] holds the error every command returns.

#![forbid(unsafe_code)]

mod cmd_check;
mod cmd_init;
mod error;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    Init(cmd_init::InitArgs),
    Check(cmd_check::CheckArgs),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are "errors" to clap that print to stdout and exit 0.
            if !e.use_stderr() {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            eprintln!("{}", error::one_line_usage_error(&e));
            return ExitCode::from(error::USAGE);
        }
    };
    let result = match cli.command {
        None => {
            println!(
                "boxmaker {} (wire protocol {}): see `boxmaker --help`",
                env!("CARGO_PKG_VERSION"),
                proto::PROTOCOL_VERSION
            );
            Ok(())
        }
        Some(Command::Init(args)) => cmd_init::run(&args),
        Some(Command::Check(args)) => cmd_check::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("boxmaker: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
