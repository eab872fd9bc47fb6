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
// Every line goes through `out`'s macros, which never panic (docs/spec.md §7).
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod out;

mod client;
mod cmd_add;
mod cmd_auth;
mod cmd_box;
mod cmd_broker;
mod cmd_call;
mod cmd_check;
mod cmd_client;
mod cmd_demo;
mod cmd_doctor;
mod cmd_init;
mod cmd_intent;
mod cmd_mcp;
mod cmd_ops;
mod cmd_serve;
mod cmd_tools;
mod cmd_trust;
mod error;
mod host;
mod lint;
mod role_runner;
mod role_telemetry;
mod when;

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
    Demo(cmd_demo::DemoArgs),
    Init(cmd_init::InitArgs),
    Trust(cmd_trust::TrustArgs),
    Add(cmd_add::AddArgs),
    Client(cmd_client::ClientArgs),
    Serve(cmd_serve::ServeArgs),
    Mcp(cmd_mcp::McpArgs),
    Token(cmd_mcp::TokenArgs),
    Call(cmd_call::CallArgs),
    Check(cmd_check::CheckArgs),
    Intent(cmd_intent::IntentArgs),
    Approvals(cmd_ops::ApprovalsArgs),
    Approve(cmd_ops::ApproveArgs),
    Refuse(cmd_ops::RefuseArgs),
    Sessions(cmd_ops::SessionsArgs),
    Grants(cmd_ops::GrantsArgs),
    Audit(cmd_ops::AuditArgs),
    Tools(cmd_tools::ToolsArgs),
    Auth(cmd_auth::AuthArgs),
    Box(cmd_box::BoxArgs),
    Doctor(cmd_doctor::DoctorArgs),
    /// The gate role (started by `serve`).
    #[command(name = "__gate", hide = true)]
    Gate(cmd_serve::GateArgs),
    /// The runner role (started by boxmaker itself).
    #[command(name = "__runner", hide = true)]
    Runner(role_runner::RunnerArgs),
    /// The front's broker (started by `boxmaker mcp`).
    #[command(name = "__broker", hide = true)]
    Broker(cmd_broker::BrokerArgs),
    /// `doctor`'s probe of the front's confinement.
    #[command(name = "__front-probe", hide = true)]
    FrontProbe,
    /// Discovery of the servers that need secrets, for `boxmaker mcp` (which reads none).
    #[command(name = "__discover", hide = true)]
    Discover(cmd_tools::DiscoverArgs),
    /// The gate's OpenTelemetry exporter (started by the gate when `OTEL_*` asks for one).
    #[command(name = "__telemetry", hide = true)]
    Telemetry,
}

fn main() -> ExitCode {
    // Re-run as the box helper, or as a file tool inside a box: these never return.
    runner::enter_box_modes_if_requested();
    // What our caller left open (a shell's `exec 9<file`) never reaches a role we start, or
    // a box: every inherited descriptor past stdio is close-on-exec from here on.
    if let Err(e) = runner::seal_inherited_descriptors() {
        errln!("boxmaker: cannot mark inherited descriptors close-on-exec: {e}");
        return ExitCode::from(error::FAILURE);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version are "errors" to clap that print to stdout and exit 0.
            if !e.use_stderr() {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            errln!("{}", error::one_line_usage_error(&e));
            return ExitCode::from(error::USAGE);
        }
    };
    let ok = |r: Result<(), error::CliError>| r.map(|()| 0);
    let result = match cli.command {
        None => {
            outln!(
                "boxmaker {} (wire protocol {}): see `boxmaker --help`",
                env!("CARGO_PKG_VERSION"),
                proto::PROTOCOL_VERSION
            );
            Ok(0)
        }
        Some(Command::Demo(args)) => cmd_demo::run(&args),
        Some(Command::Init(args)) => ok(cmd_init::run(&args)),
        Some(Command::Trust(args)) => ok(cmd_trust::run(&args)),
        Some(Command::Add(args)) => cmd_add::run(&args),
        Some(Command::Client(args)) => cmd_client::run(&args),
        Some(Command::Serve(args)) => cmd_serve::serve(&args),
        Some(Command::Mcp(args)) => cmd_mcp::run(&args),
        Some(Command::Token(args)) => cmd_mcp::token(&args),
        Some(Command::Gate(args)) => cmd_serve::gate_role(&args),
        Some(Command::Call(args)) => cmd_call::run(&args),
        Some(Command::Check(args)) => ok(cmd_check::run(&args)),
        Some(Command::Intent(args)) => cmd_intent::run(&args),
        Some(Command::Approvals(args)) => cmd_ops::approvals(&args),
        Some(Command::Approve(args)) => cmd_ops::approve(&args),
        Some(Command::Refuse(args)) => cmd_ops::refuse(&args),
        Some(Command::Sessions(args)) => cmd_ops::sessions(&args),
        Some(Command::Grants(args)) => cmd_ops::grants(&args),
        Some(Command::Audit(args)) => cmd_ops::audit(&args),
        Some(Command::Tools(args)) => cmd_tools::run(&args),
        Some(Command::Auth(args)) => cmd_auth::run(&args),
        Some(Command::Box(args)) => cmd_box::run(&args),
        Some(Command::Doctor(args)) => cmd_doctor::run(&args),
        Some(Command::Runner(args)) => ok(role_runner::run(&args)),
        Some(Command::Broker(args)) => cmd_broker::run(&args),
        Some(Command::FrontProbe) => Ok(cmd_doctor::probe()),
        Some(Command::Discover(args)) => cmd_tools::discover_role(&args),
        Some(Command::Telemetry) => role_telemetry::run(),
    };
    exit(result)
}

/// One line on stderr for an error, and the exit status.
fn exit(result: Result<u8, error::CliError>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            errln!("boxmaker: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
