//! `boxmaker` — the one binary. It parses arguments and wires the roles together; the work
//! lives in the role crates. Every error leaves as one sentence on stderr and an exit status,
//! never a panic or a backtrace.
//!
//! Modules, one per command: [`cmd_init`] (`boxmaker init`), [`cmd_check`]
//! (`boxmaker check`), [`cmd_box`] (`box exec`, `box show`), [`cmd_doctor`]; one per role
//! this binary can become: [`role_runner`]; [`error`] holds the error every command returns.
//!
//! The binary is also the box helper and, inside boxes, the file tools: `main` checks for
//! those modes before anything else, so they run with nothing of the CLI set up.

#![forbid(unsafe_code)]

mod cmd_box;
mod cmd_check;
mod cmd_doctor;
mod cmd_init;
mod error;
mod role_runner;

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
    Box(cmd_box::BoxArgs),
    Doctor(cmd_doctor::DoctorArgs),
    /// The runner role (started by boxmaker itself).
    #[command(name = "__runner", hide = true)]
    Runner(role_runner::RunnerArgs),
}

fn main() -> ExitCode {
    // Re-run as the box helper, or as a file tool inside a box: these never return.
    sandbox::enter_helper_if_requested();
    runner::enter_inbox_if_requested();
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
        Some(Command::Box(args)) => match cmd_box::run(&args) {
            Ok(code) => return ExitCode::from(code),
            Err(e) => Err(e),
        },
        Some(Command::Doctor(args)) => return ExitCode::from(cmd_doctor::run(&args)),
        Some(Command::Runner(args)) => role_runner::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("boxmaker: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
