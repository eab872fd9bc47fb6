//! The error every command returns, and how errors become one line and an exit status.

use std::path::PathBuf;

/// Exit status of a bad invocation: a bad argument, a bad config, a refused `init`.
pub const USAGE: u8 = 2;
/// Exit status of a failure of the machine (a file that cannot be written).
pub const FAILURE: u8 = 1;

/// Why a command failed. Each message is one sentence.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("{} already exists; not overwriting it", path.display())]
    InitExists { path: PathBuf },
    #[error("cannot create directory {}: {source}", path.display())]
    InitCreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    InitWrite {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Runner(#[from] runner::RunnerError),
    #[error("the box could not start: {0}")]
    Box(#[source] runner::BoxError),
    #[error(transparent)]
    Serve(runner::ServeError),
    #[error("cannot use the state directory at {}: {source}", path.display())]
    State {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the gate: {0}")]
    Gate(#[source] gate::GateError),
    #[error("cannot serve the gate's sockets: {0}")]
    Socket(#[source] gate::serve::SocketError),
    #[error("cannot reach the gate at {}: {source}", path.display())]
    Connect {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the gate connection failed: {0}")]
    Frame(#[source] proto::FrameError),
    #[error("the gate stopped before it answered (internal error); the call may not have run")]
    GateGone,
    #[error("the gate refused: {0}")]
    Refused(String),
    #[error("the gate answered something this command did not ask for: {0}")]
    Unexpected(String),
    #[error("the demo went wrong: {0}")]
    Demo(String),
}

impl CliError {
    /// 2 for what the person can fix in the command or the config; 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Config(_) | CliError::InitExists { .. } => USAGE,
            CliError::InitCreateDir { .. }
            | CliError::InitWrite { .. }
            | CliError::Runner(_)
            | CliError::Serve(_) => FAILURE,
            CliError::Box(_) => crate::cmd_box::BOX_FAILED,
            CliError::State { .. }
            | CliError::Gate(_)
            | CliError::Socket(_)
            | CliError::Connect { .. }
            | CliError::Frame(_)
            | CliError::GateGone
            | CliError::Unexpected(_) => USAGE,
            CliError::Refused(_) | CliError::Demo(_) => FAILURE,
        }
    }
}

/// Clap's usage errors span several lines (the error, a list of missing arguments, the
/// usage, a hint). Fold them into one: keep what the error says, drop the repeated usage and
/// the hint, and end with where to look.
pub fn one_line_usage_error(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let parts: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information")
        })
        .collect();
    let mut line = parts.join(" ");
    if let Some(rest) = line.strip_prefix("error: ") {
        line = format!("boxmaker: {rest}");
    }
    line.push_str(" (see `boxmaker --help`)");
    line
}
