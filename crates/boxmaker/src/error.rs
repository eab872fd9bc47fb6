//! The error every command returns, and how errors become one line and an exit status.

use std::path::PathBuf;

/// Exit status of a bad invocation: a bad argument, a bad config, a refused `init`.
pub const USAGE: u8 = 2;
/// Exit status of a failure of the machine (a file that cannot be written).
pub const FAILURE: u8 = 1;

/// Exit status when the box itself could not be built (as `docker run` and `sandbox-exec`).
pub const BOX_FAILED: u8 = 125;

/// Why a command failed. Each message is one sentence.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error(
        "{} already exists; not overwriting it (if a repository shipped it, read it before you \
         `boxmaker trust` it: until you do, boxmaker uses nothing of it)",
        path.display()
    )]
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
    /// A file written (or read) the one way, `statedir::file`: a link refused, a project's
    /// file outside the project, a failed write.
    #[error(transparent)]
    File(#[from] statedir::file::Error),
    #[error("cannot use the state directory at {}: {source}", path.display())]
    State {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start the gate: {0}")]
    Gate(#[source] gate::GateError),
    #[error("cannot serve the gate's sockets: {0}")]
    Socket(#[source] gate::serve::SocketError),
    #[error("unknown tool {tool:?}: the config has no tool by that name (its tools: {known})")]
    UnknownTool { tool: String, known: String },
    #[error("the gate could not start: {why}")]
    GateStart { why: String },
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
    /// Something this command could not do itself (nothing to do with the gate): the text
    /// is the whole sentence.
    #[error("{0}")]
    Local(String),
    #[error("the gate answered something this command did not ask for: {0}")]
    Unexpected(String),
    #[error("the demo went wrong: {0}")]
    Demo(String),
    /// A bad invocation the command itself finds (a URL it cannot use, a name taken): the
    /// text is the whole sentence; exit 2.
    #[error("{0}")]
    Usage(String),
}

impl CliError {
    /// 2 for what the person can fix in the command or the config; 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Config(_)
            | CliError::InitExists { .. }
            | CliError::UnknownTool { .. }
            | CliError::Usage(_) => USAGE,
            CliError::InitCreateDir { .. }
            | CliError::InitWrite { .. }
            | CliError::Runner(_)
            | CliError::Serve(_) => FAILURE,
            CliError::Box(_) => BOX_FAILED,
            CliError::File(statedir::file::Error::Io { .. }) => FAILURE,
            CliError::File(_) => USAGE,
            CliError::State { .. }
            | CliError::Gate(_)
            | CliError::Socket(_)
            | CliError::Connect { .. }
            | CliError::GateStart { .. }
            | CliError::Frame(_)
            | CliError::GateGone
            | CliError::Unexpected(_) => USAGE,
            CliError::Refused(_) | CliError::Local(_) | CliError::Demo(_) => FAILURE,
        }
    }
}

/// Clap's usage errors span several lines (the error, a list of missing arguments, the
/// usage, a hint). Fold them into one: keep what the error says, drop the repeated usage and
/// the hint, and end with where to look.
pub fn one_line_usage_error(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        // clap shows the whole help here; one line names what is missing instead.
        let command = command_of(&rendered);
        let subcommands: Vec<&str> = rendered
            .lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|w| *w != "help")
            .collect();
        return format!(
            "boxmaker: `{command}` needs one of: {} (see `{command} --help`)",
            subcommands.join(", ")
        );
    }
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
    line.push_str(&format!(" (see `{} --help`)", command_of(&rendered)));
    line
}

/// The (sub)command a usage error is about, from clap's `Usage:` line: `boxmaker sessions
/// reset` for `Usage: boxmaker sessions reset [OPTIONS] <ID>`; `boxmaker` when there is none.
fn command_of(rendered: &str) -> String {
    let usage = rendered
        .lines()
        .find_map(|l| l.trim().strip_prefix("Usage:"))
        .unwrap_or("");
    let words: Vec<&str> = usage
        .split_whitespace()
        .take_while(|w| !w.starts_with(['-', '<', '[']))
        .collect();
    if words.first() == Some(&"boxmaker") {
        words.join(" ")
    } else {
        "boxmaker".into()
    }
}
