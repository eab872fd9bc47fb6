//! The operator's commands: `approvals`, `approve`, `refuse`, `sessions`, `sessions reset`,
//! `grants`, `audit tail`, `audit verify`. Each sends one control request to the gate over
//! `control.sock` (hosting an embedded gate if none runs) and prints the answer, as text or,
//! with `--json`, as the control reply's JSON.

use std::path::PathBuf;
use std::sync::Arc;

use proto::SessionId;
use proto::control::{ApprovalInfo, ControlAnswer, ControlOp, GrantInfo, SessionInfo};

use crate::client::control;
use crate::error::CliError;
use crate::host::{Channel, connect};

/// Options every operator command takes.
#[derive(Debug, clap::Args)]
pub struct Common {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME, global = true)]
    config: PathBuf,
    /// Print the gate's answer as JSON.
    #[arg(long, global = true)]
    json: bool,
}

/// List approvals (pending ones unless `--all`).
#[derive(Debug, clap::Args)]
pub struct ApprovalsArgs {
    #[command(flatten)]
    common: Common,
    /// Every approval, decided ones too.
    #[arg(long)]
    all: bool,
}

/// Approve a pending call: it runs (after the gate decides again with the taint of now).
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    common: Common,
    /// The approval id (`ap-…`).
    id: String,
}

/// Refuse a pending call: it ends `denied approval_refused`.
#[derive(Debug, clap::Args)]
pub struct RefuseArgs {
    #[command(flatten)]
    common: Common,
    /// The approval id (`ap-…`).
    id: String,
    /// Why, for the audit log.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
}

/// List sessions and their taint, or reset one.
#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: Option<SessionsCommand>,
}

#[derive(Debug, clap::Subcommand)]
enum SessionsCommand {
    /// Set a session's taint back to public and trusted (audited).
    Reset {
        /// The session id.
        #[arg(allow_hyphen_values = true)]
        id: SessionId,
    },
}

/// List the grants in force (from the config, and added at run time).
#[derive(Debug, clap::Args)]
pub struct GrantsArgs {
    #[command(flatten)]
    common: Common,
}

/// Read or check the audit log.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: AuditCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AuditCommand {
    /// Print the last records.
    Tail {
        /// How many.
        #[arg(short = 'n', long, default_value_t = 20)]
        n: u64,
    },
    /// Recompute the hash chain; name the first record that does not match (exit 1).
    Verify,
}

fn ask(common: &Common, op: ControlOp) -> Result<ControlAnswer, CliError> {
    let cfg = Arc::new(config::load(&common.config)?);
    let conn = connect(&common.config, cfg, Channel::Control)?;
    control(&conn.stream, op)
}

fn print_json(answer: &ControlAnswer) -> Result<(), CliError> {
    let text = serde_json::to_string(answer).map_err(|e| CliError::Unexpected(e.to_string()))?;
    println!("{text}");
    Ok(())
}

/// One approval as a person reads it: the exact call with hidden and control characters
/// escaped (and a marker saying so), times in local time and relative to now.
fn approval_line(a: &ApprovalInfo) -> String {
    let tool = front::explain::for_person(&a.tool);
    let args = front::explain::for_person(&a.arguments);
    let marker = if tool.escaped + args.escaped > 0 {
        front::explain::ForPerson {
            text: String::new(),
            escaped: tool.escaped + args.escaped,
        }
        .marker()
    } else {
        String::new()
    };
    format!(
        "{}  {}  session {} call {}  {} {}{marker}  taint {}{}  {}  asked {}  {}",
        a.id,
        a.state,
        front::explain::for_person(a.session.as_str()).text,
        a.call,
        tool.text,
        args.text,
        a.class,
        if a.untrusted { "+untrusted" } else { "" },
        a.reason,
        crate::when::at(a.created),
        crate::when::expires(a.expires)
    )
}

fn session_line(s: &SessionInfo) -> String {
    format!(
        "{}  {}{}  updated {}",
        s.id,
        s.class,
        if s.untrusted { "  untrusted" } else { "" },
        crate::when::at(s.updated)
    )
}

fn grant_line(g: &GrantInfo) -> String {
    let s = &g.grant;
    format!(
        "{}  {} {}  sessions {}  max_class {}  if_untrusted {}  expires {}",
        g.id,
        s.effect,
        front::explain::for_person(&s.tool).text,
        front::explain::for_person(&s.sessions).text,
        s.max_class,
        s.if_untrusted,
        s.expires.map_or("never".into(), crate::when::at)
    )
}

fn unexpected(a: ControlAnswer) -> CliError {
    CliError::Unexpected(format!("{a:?}"))
}

pub fn approvals(args: &ApprovalsArgs) -> Result<u8, CliError> {
    let answer = ask(&args.common, ControlOp::ListApprovals { all: args.all })?;
    if args.common.json {
        print_json(&answer)?;
        return Ok(0);
    }
    let ControlAnswer::Approvals { items } = answer else {
        return Err(unexpected(answer));
    };
    if items.is_empty() {
        println!("no {}approvals", if args.all { "" } else { "pending " });
    }
    for a in &items {
        println!("{}", approval_line(a));
    }
    Ok(0)
}

pub fn approve(args: &ApproveArgs) -> Result<u8, CliError> {
    decided(
        &args.common,
        ControlOp::Approve {
            approval: args.id.clone(),
        },
    )
}

pub fn refuse(args: &RefuseArgs) -> Result<u8, CliError> {
    decided(
        &args.common,
        ControlOp::Refuse {
            approval: args.id.clone(),
            reason: args.reason.clone(),
        },
    )
}

fn decided(common: &Common, op: ControlOp) -> Result<u8, CliError> {
    let answer = ask(common, op)?;
    if common.json {
        print_json(&answer)?;
        return Ok(0);
    }
    let ControlAnswer::Approval { item } = answer else {
        return Err(unexpected(answer));
    };
    println!("{}", approval_line(&item));
    Ok(0)
}

pub fn sessions(args: &SessionsArgs) -> Result<u8, CliError> {
    let op = match &args.command {
        None => ControlOp::ListSessions {},
        Some(SessionsCommand::Reset { id }) => ControlOp::ResetSession {
            session: id.clone(),
        },
    };
    let answer = ask(&args.common, op)?;
    if args.common.json {
        print_json(&answer)?;
        return Ok(0);
    }
    match answer {
        ControlAnswer::Sessions { items } => {
            if items.is_empty() {
                println!("no sessions");
            }
            for s in &items {
                println!("{}", session_line(s));
            }
        }
        ControlAnswer::Session { item } => println!("reset: {}", session_line(&item)),
        other => return Err(unexpected(other)),
    }
    Ok(0)
}

pub fn grants(args: &GrantsArgs) -> Result<u8, CliError> {
    let answer = ask(&args.common, ControlOp::ListGrants {})?;
    if args.common.json {
        print_json(&answer)?;
        return Ok(0);
    }
    let ControlAnswer::Grants { items } = answer else {
        return Err(unexpected(answer));
    };
    for g in &items {
        println!("{}", grant_line(g));
    }
    Ok(0)
}

/// `audit tail` and `audit verify` read `audit.log` directly rather than through the gate: a
/// log damaged enough that the gate refuses to open it must still be checkable.
pub fn audit(args: &AuditArgs) -> Result<u8, CliError> {
    let cfg = config::load(&args.common.config)?;
    let path = cfg.gate.state.join(gate::audit::AUDIT_FILE);
    let answer = match args.command {
        AuditCommand::Tail { n } => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            let records =
                gate::audit::tail(&path, n).map_err(|e| CliError::Local(e.to_string()))?;
            let mut lines = Vec::with_capacity(records.len());
            for r in &records {
                let line = r.to_line().map_err(|e| CliError::Local(e.to_string()))?;
                let line = String::from_utf8_lossy(&line).trim_end().to_string();
                // As text, each record after its time as a person reads it; `--json` keeps
                // the records exactly as stored.
                lines.push(if args.common.json {
                    line
                } else {
                    format!("{}  {}", crate::when::at(r.time), line)
                });
            }
            ControlAnswer::AuditRecords { lines }
        }
        AuditCommand::Verify => match gate::audit::verify(&path) {
            Ok(ok) => ControlAnswer::AuditVerified {
                records: ok.records,
                first_bad: None,
                detail: format!("last hash {}", ok.last_hash.to_hex()),
            },
            // `first_bad` is the record's position in the log (its line): a dropped or
            // reordered record makes seq numbers disagree with positions, and the position
            // is what a person opens the file at.
            Err(gate::audit::VerifyError::Bad {
                line, seq, problem, ..
            }) => ControlAnswer::AuditVerified {
                records: line.saturating_sub(1),
                first_bad: Some(line),
                detail: match seq {
                    Some(seq) => format!("line {line}, seq {seq}: {problem}"),
                    None => format!("line {line}: {problem}"),
                },
            },
            Err(e @ gate::audit::VerifyError::Io { .. }) => {
                return Err(CliError::Local(e.to_string()));
            }
        },
    };
    let broken = matches!(
        answer,
        ControlAnswer::AuditVerified {
            first_bad: Some(_),
            ..
        }
    );
    if args.common.json {
        print_json(&answer)?;
        return Ok(u8::from(broken));
    }
    match answer {
        ControlAnswer::AuditRecords { lines } => {
            for l in &lines {
                println!("{l}");
            }
        }
        ControlAnswer::AuditVerified {
            records,
            first_bad: None,
            detail,
        } => println!("audit log intact: {records} records ({detail})"),
        ControlAnswer::AuditVerified {
            first_bad: Some(seq),
            detail,
            ..
        } => eprintln!("audit log broken: the first bad record is {seq} ({detail})"),
        other => return Err(unexpected(other)),
    }
    Ok(u8::from(broken))
}
