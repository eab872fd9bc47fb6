//! `boxmaker call`: one tool call from a script.
//!
//! Uses the running gate (`serve`, or another process's embedded gate) if there is one, else
//! hosts an embedded gate and runner for the call, on the same state directory, so taint and
//! approvals persist between calls. Prints the content (with `--json`, the final
//! `ToolResponse` body exactly as the wire encodes it); prints `pending approval ID (expires
//! T)` on stderr while a person decides. Exit status: 0 `result`, 1 `failed`, 3 `denied`,
//! 2 a usage, config or connection error.

use std::path::PathBuf;
use std::sync::Arc;

use proto::{CallId, SessionId, ToolRequest, ToolResponse};

use crate::client::agent_call;
use crate::error::CliError;
use crate::host::{Channel, connect};

/// Exit status of a `denied` answer.
pub const DENIED: u8 = 3;

/// Make one tool call through the gate.
#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// The session the call belongs to (its taint, its workspace).
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    session: SessionId,
    /// Print the final answer as its wire JSON (`{"status":...}`).
    #[arg(long)]
    json: bool,
    /// The tool to call.
    #[arg(value_name = "TOOL")]
    tool: String,
    /// The tool's arguments: one JSON object.
    #[arg(value_name = "ARGS_JSON", default_value = "{}")]
    arguments: String,
}

/// Runs the call; returns the exit status.
pub fn run(args: &CallArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
    // The same vocabulary as MCP (docs/spec.md, "Unknown and denied tools"): a name the
    // config has no tool for is unknown, and nothing is sent; a tool it has is decided by
    // the gate, and a denial is the same sentence a model reads.
    if !cfg.could_name(&args.tool) {
        return Err(CliError::UnknownTool {
            tool: args.tool.clone(),
            known: known_tools(&cfg),
        });
    }
    let conn = connect(&args.config, cfg.clone(), Channel::Agent)?;
    let req = ToolRequest {
        session: args.session.clone(),
        call: CallId(call_number()),
        tool: args.tool.clone(),
        arguments: args.arguments.clone(),
    };
    let resp = agent_call(&conn.stream, req, &mut |p| {
        if let ToolResponse::PendingApproval { approval, expires } = p {
            let (approve, refuse) = front::explain::approval_commands(&cfg, approval);
            errln!(
                "pending approval {approval} ({}): a person runs `{approve}` or `{refuse}`",
                crate::when::expires(*expires)
            );
        }
    })?;
    drop(conn);
    if args.json {
        let text = serde_json::to_string(&resp).map_err(|e| CliError::Unexpected(e.to_string()))?;
        outln!("{text}");
    }
    Ok(match resp {
        ToolResponse::Result { content, .. } => {
            if !args.json {
                // A shell prompt after the answer starts on a line of its own.
                if content.is_empty() || content.ends_with('\n') {
                    crate::out::stdout_bytes(content.as_bytes());
                } else {
                    outln!("{content}");
                }
            }
            0
        }
        ToolResponse::Failed { message } => {
            if !args.json {
                errln!("failed: {message}");
            }
            1
        }
        ToolResponse::Denied { reason } => {
            if !args.json {
                errln!(
                    "{}",
                    front::explain::denial(
                        &cfg,
                        &args.session,
                        &args.tool,
                        reason,
                        session_taint(&cfg, &args.session),
                        proto::Timestamp::from_system_time(std::time::SystemTime::now()),
                    )
                );
            }
            DENIED
        }
        ToolResponse::PendingApproval { .. } => 2,
    })
}

/// A call's number within its session: the time in microseconds, which keeps numbers rising
/// between separate `call` processes without any shared counter.
fn call_number() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// The tools of `cfg` as a person names them: builtin tools by name, a server's as `NAME_*`.
pub fn known_tools(cfg: &config::Config) -> String {
    let names: Vec<String> = cfg
        .tools
        .iter()
        .map(|t| match t.exposed_prefix() {
            None => t.name.clone(),
            Some("") => format!("{}'s tools", t.name),
            Some(p) => format!("{p}_*"),
        })
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The session's taint as the gate has it (to word a denial), or clean if it cannot say.
fn session_taint(cfg: &config::Config, session: &SessionId) -> (proto::DataClass, bool) {
    let asked = statedir::connect(&cfg.gate.state, statedir::CONTROL_SOCKET)
        .ok()
        .and_then(|s| crate::client::control(&s, proto::control::ControlOp::ListSessions {}).ok());
    match asked {
        Some(proto::control::ControlAnswer::Sessions { items }) => items
            .iter()
            .find(|i| &i.id == session)
            .map_or((proto::DataClass::Public, false), |i| {
                (i.class, i.untrusted)
            }),
        _ => (proto::DataClass::Public, false),
    }
}
