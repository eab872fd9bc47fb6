//! The operator's commands: `approvals [--watch]`, `approve [--for D]`, `refuse`,
//! `sessions`, `sessions reset`, `grants`, `grants revoke`, `audit tail`, `audit verify`,
//! `audit checkpoint`, `audit new-chain`.
//! Each sends control requests to the gate over `control.sock` (starting an on-demand gate
//! if none runs) and prints the answer, as text or, with `--json`, as the control reply's
//! JSON. `approve` and `refuse` say where the decision comes from (`via: cli`), which the
//! history of approvals and the audit log keep.

use std::path::PathBuf;
use std::sync::Arc;

use proto::SessionId;
use proto::control::{
    ApprovalInfo, ApprovalState, ApprovalUpdate, Choice, ControlAnswer, ControlOp, DecidedVia,
    GrantInfo, REMEMBER_MAX_SECONDS, SessionInfo,
};

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
    #[arg(long, conflicts_with = "watch")]
    all: bool,
    /// Keep watching: show each call that asks as it arrives (with the terminal bell), and
    /// each decision, until interrupted.
    #[arg(long)]
    watch: bool,
}

/// Approve a pending call: it runs (after the gate decides again with the taint of now).
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    common: Common,
    /// The approval id (`ap-…`).
    id: String,
    /// Also approve this exact call (same session, tool and arguments) for this long: it
    /// then runs again without asking (e.g. `10m`, `90s`, `2h`; at most 24h).
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    remember: Option<u64>,
}

/// `10m`, `90s`, `2h`, `1h30m` as seconds (1 s to 24 h).
fn parse_duration(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "`{text}` is not a duration: write it like 10m, 90s or 2h (at most {}h)",
            REMEMBER_MAX_SECONDS / 3600
        )
    };
    let mut total: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(bad()),
        };
        let n: u64 = number.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
        number.clear();
    }
    if !number.is_empty() || total == 0 || total > REMEMBER_MAX_SECONDS {
        return Err(bad());
    }
    Ok(total)
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

/// List the grants in force (from the config, added at run time, and remembered
/// approvals), or revoke a run-time one.
#[derive(Debug, clap::Args)]
pub struct GrantsArgs {
    #[command(flatten)]
    common: Common,
    #[command(subcommand)]
    command: Option<GrantsCommand>,
}

#[derive(Debug, clap::Subcommand)]
enum GrantsCommand {
    /// Revoke a run-time grant or a remembered approval (`rt-N`; audited).
    Revoke {
        /// The grant id, as `boxmaker grants` lists it.
        id: String,
    },
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
    /// Recompute the hash chain and check that the log extends every signed checkpoint it
    /// is given or knows of; name the first record that does not match (exit 1).
    Verify {
        /// A file of checkpoints, one a line as a witness keeps them (repeatable). Without
        /// it: every line of `[audit] witness_file` and the state directory's latest. The
        /// log's own checkpoint records are always checked.
        #[arg(long, value_name = "FILE")]
        checkpoint: Vec<PathBuf>,
        /// The public key that signed them (64 hex digits, as `audit checkpoint` prints);
        /// default: the public half of `[audit] key`.
        #[arg(long, value_name = "HEX")]
        key: Option<String>,
        /// A file of fleet checkpoints (`audit fleet --to`): each is checked, each must
        /// follow the one before, and this replica's log must extend its head in every one.
        #[arg(long, value_name = "FILE")]
        fleet: Option<PathBuf>,
        /// Check this log file instead of the state directory's: a copy of another gate's
        /// (an auditor's copy of a replica's state directory), read without a config or
        /// the mark, with the key given by --key and the checkpoints given by --checkpoint.
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
    },
    /// On a replica of a fleet (`[gate] store`): gather every replica's latest signed
    /// checkpoint from the store, check each against its key and against the last fleet
    /// checkpoint in FILE, and append one fleet checkpoint over them all, signed by this
    /// replica's audit key. Keep FILE outside the database (exit 1 if the store's heads do
    /// not hold).
    Fleet {
        /// The fleet checkpoints' file (appended to, made `0600` when missing).
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
    },
    /// Print the gate's latest signed checkpoint and the public key that checks it.
    Checkpoint,
    /// Start a new chain when the gate refuses a log that does not extend its checkpoints:
    /// the log is kept as found beside the new one, whose first record says what was
    /// refused, why and by whom, and whose checkpoint goes to every witness. Needs the gate
    /// stopped and the audit key.
    NewChain {
        /// Why (kept in the new log's first record).
        #[arg(long, value_name = "TEXT")]
        reason: String,
    },
}

fn ask(common: &Common, op: ControlOp) -> Result<ControlAnswer, CliError> {
    let cfg = Arc::new(config::load(&common.config)?);
    let conn = connect(&common.config, cfg, Channel::Control)?;
    control(&conn.stream, op)
}

fn print_json(answer: &ControlAnswer) -> Result<(), CliError> {
    let text = serde_json::to_string(answer).map_err(|e| CliError::Unexpected(e.to_string()))?;
    outln!("{text}");
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
    ) + &covers_lines(&a.files)
        + &a.concerns
            .iter()
            .map(|c| format!("\n    consider: {}", front::explain::concern(c)))
            .collect::<String>()
}

/// What an approval (or a remembered one) covers beyond its text, on the same line (one
/// line per approval, for `--watch` readers): each file it binds (docs/spec.md §3.3 step 6),
/// `; ` between them, and whether it can be remembered.
fn covers_lines(files: &[proto::run::FileDigest]) -> String {
    let covers = front::explain::covers(files);
    let mut out = String::new();
    if !covers.is_empty() {
        out.push_str("  covers: ");
        out.push_str(&covers.join("; "));
    }
    if !front::explain::rememberable(files) {
        out.push_str("  (a file it names cannot be bound: approve it once, not for the session)");
    }
    out
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
    if let Some(scope) = &g.scope {
        // A remembered approval: exactly this call, in this session, as the person saw it.
        let args = front::explain::for_person(&scope.arguments);
        return format!(
            "{}  remembered approval {} (approve for this session)  {} {}{}  session {}  \
             up to taint {}{}  expires {}",
            g.id,
            front::explain::for_person(&scope.approval).text,
            front::explain::for_person(&s.tool).text,
            args.text,
            args.marker(),
            front::explain::for_person(&s.sessions).text,
            s.max_class,
            if s.if_untrusted == proto::control::Effect::Allow {
                "+untrusted"
            } else {
                ""
            },
            s.expires.map_or("never".into(), crate::when::at)
        ) + &covers_lines(&scope.files);
    }
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

/// A decided approval's line: the approval, then who decided it and from where.
fn update_line(u: &ApprovalUpdate) -> String {
    let mut line = approval_line(&u.item);
    if let Some(by) = &u.by {
        line.push_str(&format!(
            "  decided {}by {}{}",
            u.decided
                .map_or(String::new(), |t| format!("{} ", crate::when::at(t))),
            front::explain::for_person(by).text,
            u.via.map_or(String::new(), |v| format!(" ({v})"))
        ));
    }
    if let Some(g) = &u.grant {
        line.push_str(&format!("  remembered as {g}"));
    }
    line
}

/// Who decides from this command line, in the history's words.
fn cli_decider() -> String {
    match std::env::var("USER").or_else(|_| std::env::var("LOGNAME")) {
        Ok(user) if !user.is_empty() => format!("{user}, at the command line"),
        _ => "a person at the command line".into(),
    }
}

fn unexpected(a: ControlAnswer) -> CliError {
    CliError::Unexpected(format!("{a:?}"))
}

pub fn approvals(args: &ApprovalsArgs) -> Result<u8, CliError> {
    if args.watch {
        return watch(&args.common);
    }
    let answer = match ask(&args.common, ControlOp::ListApprovals { all: args.all }) {
        // A history longer than one answer may carry is read page by page instead.
        Err(CliError::Refused(why)) if why.contains("over the frame limit") => {
            paged(&args.common, args.all)?
        }
        other => other?,
    };
    if args.common.json {
        print_json(&answer)?;
        return Ok(0);
    }
    let ControlAnswer::Approvals { items } = answer else {
        return Err(unexpected(answer));
    };
    if items.is_empty() {
        outln!("no {}approvals", if args.all { "" } else { "pending " });
    }
    for a in &items {
        outln!("{}", approval_line(a));
    }
    Ok(0)
}

/// Every approval (pending ones only unless `all`), read through the gate's numbered
/// changes a page at a time, as a watcher reads them (docs/spec.md §7), in the order
/// `ListApprovals` gives: oldest first. Each page is one answer the gate can carry.
fn paged(common: &Common, all: bool) -> Result<ControlAnswer, CliError> {
    let mut after = 0;
    let mut items = Vec::new();
    loop {
        let answer = ask(
            common,
            ControlOp::WatchApprovals {
                after,
                limit: proto::control::WATCH_LIMIT_MAX,
                wait_ms: 0,
                pending_only: !all,
            },
        )?;
        let ControlAnswer::ApprovalUpdates {
            items: page, head, ..
        } = answer
        else {
            return Err(unexpected(answer));
        };
        let Some(last) = page.iter().map(|u| u.change).max() else {
            break;
        };
        items.extend(page.into_iter().map(|u| u.item));
        if last >= head || last <= after {
            break;
        }
        after = last;
    }
    items.sort_by(|a, b| (a.created, &a.id).cmp(&(b.created, &b.id)));
    Ok(ControlAnswer::Approvals { items })
}

pub fn approve(args: &ApproveArgs) -> Result<u8, CliError> {
    decided(
        &args.common,
        ControlOp::DecideApproval {
            approval: args.id.clone(),
            choice: if args.remember.is_some() {
                Choice::ApproveForSession
            } else {
                Choice::ApproveOnce
            },
            remember_seconds: args.remember,
            reason: None,
            shown: None,
            via: DecidedVia::Cli,
            by: cli_decider(),
        },
    )
}

pub fn refuse(args: &RefuseArgs) -> Result<u8, CliError> {
    decided(
        &args.common,
        ControlOp::DecideApproval {
            approval: args.id.clone(),
            choice: Choice::Refuse,
            remember_seconds: None,
            reason: args.reason.clone(),
            shown: None,
            via: DecidedVia::Cli,
            by: cli_decider(),
        },
    )
}

fn decided(common: &Common, op: ControlOp) -> Result<u8, CliError> {
    let answer = ask(common, op)?;
    if common.json {
        print_json(&answer)?;
        return Ok(0);
    }
    let ControlAnswer::Decided { item } = answer else {
        return Err(unexpected(answer));
    };
    outln!("{}", update_line(&item));
    Ok(0)
}

/// `approvals --watch`: what waits now, then every call that asks as it arrives (with the
/// terminal bell) and every decision, until interrupted. A gate that goes away is reached
/// again (or started) and the watch goes on from the change it had reached: change numbers
/// are kept in the state database.
fn watch(common: &Common) -> Result<u8, CliError> {
    const PAGE: u64 = 1000;
    let cfg = Arc::new(config::load(&common.config)?);
    let mut conn = connect(&common.config, cfg.clone(), Channel::Control)?;
    if !common.json {
        outln!(
            "watching the approvals of {} (interrupt to stop)",
            cfg.gate.state.display()
        );
    }
    // Pending ones already shown, so a call is announced (and rung) once.
    let mut shown = std::collections::HashSet::new();
    // `None` while the pending list is read (from its start, page by page); then the
    // number of the last change seen.
    let mut after = 0;
    let mut first_head: Option<u64> = None;
    let mut cursor: Option<u64> = None;
    loop {
        let op = match cursor {
            None => ControlOp::WatchApprovals {
                after,
                limit: PAGE,
                wait_ms: 0,
                pending_only: true,
            },
            Some(c) => ControlOp::WatchApprovals {
                after: c,
                limit: PAGE,
                wait_ms: 25_000,
                pending_only: false,
            },
        };
        let (items, head) = match control(&conn.stream, op) {
            Ok(ControlAnswer::ApprovalUpdates { items, head, .. }) => (items, head),
            Ok(other) => return Err(unexpected(other)),
            Err(CliError::GateGone | CliError::Frame(_)) => {
                std::thread::sleep(std::time::Duration::from_millis(200));
                conn = connect(&common.config, cfg.clone(), Channel::Control)?;
                continue;
            }
            Err(e) => return Err(e),
        };
        if cursor.is_none() && first_head.is_none() {
            first_head = Some(head);
        }
        let mut rang = false;
        for u in &items {
            if common.json {
                let text =
                    serde_json::to_string(u).map_err(|e| CliError::Unexpected(e.to_string()))?;
                outln!("{text}");
            } else if u.item.state == ApprovalState::Pending {
                if shown.insert(u.item.id.clone()) {
                    let bell = if rang { "" } else { "\x07" };
                    rang = true;
                    outln!("{bell}waiting: {}", approval_line(&u.item));
                }
            } else {
                shown.remove(&u.item.id);
                outln!("{}", update_line(u));
            }
        }
        match (cursor, items.last()) {
            // More pending ones than a page: read on from the last one.
            (None, Some(last)) if items.len() as u64 >= PAGE => after = last.change,
            // The pending list is read: every change from the head of its first page on
            // comes next (those already shown are not announced twice).
            (None, _) => cursor = Some(first_head.unwrap_or(head)),
            (Some(_), Some(last)) => cursor = Some(last.change),
            (Some(_), None) => {}
        }
    }
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
                outln!("no sessions");
            }
            for s in &items {
                outln!("{}", session_line(s));
            }
        }
        ControlAnswer::Session { item } => outln!("reset: {}", session_line(&item)),
        other => return Err(unexpected(other)),
    }
    Ok(0)
}

pub fn grants(args: &GrantsArgs) -> Result<u8, CliError> {
    if let Some(GrantsCommand::Revoke { id }) = &args.command {
        let answer = ask(&args.common, ControlOp::RevokeGrant { grant: id.clone() })?;
        if args.common.json {
            print_json(&answer)?;
            return Ok(0);
        }
        let ControlAnswer::Grant { item } = answer else {
            return Err(unexpected(answer));
        };
        outln!("revoked: {}", grant_line(&item));
        return Ok(0);
    }
    let answer = ask(&args.common, ControlOp::ListGrants {})?;
    if args.common.json {
        print_json(&answer)?;
        return Ok(0);
    }
    let ControlAnswer::Grants { items } = answer else {
        return Err(unexpected(answer));
    };
    for g in &items {
        outln!("{}", grant_line(g));
    }
    Ok(0)
}

/// `audit tail` and `audit verify` read `audit.log` directly rather than through the gate: a
/// log damaged enough that the gate refuses to open it must still be checkable.
pub fn audit(args: &AuditArgs) -> Result<u8, CliError> {
    if let AuditCommand::Verify {
        checkpoint,
        key,
        fleet,
        log: Some(log),
    } = &args.command
    {
        // A copied log: a file, checked against what the auditor was given. Checking it
        // trusts nothing in it, so neither a config nor the person's mark is needed.
        let key = key
            .as_deref()
            .map(gate::anchor::PublicKey::from_hex)
            .transpose()
            .map_err(|e| CliError::Local(e.to_string()))?;
        let why_no_key = key
            .is_none()
            .then(|| "a log given with --log is checked with the key given with --key".into());
        let dir = log
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(std::path::Path::new("."));
        let checked = Checked {
            path: log,
            dir,
            key,
            why_no_key,
            configured: None,
        };
        let answer = audit_verify(&checked, checkpoint, fleet.as_deref())?;
        return show_audit(args.common.json, answer);
    }
    let cfg = config::load(&args.common.config)?;
    // Only the person's own state directory is read (docs/spec.md §6, "Whose state"): a
    // shipped log is someone else's story, not this gate's.
    match statedir::file::Dir::own_existing(&cfg.gate.state) {
        Ok(_) => {}
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    let path = cfg.gate.state.join(gate::audit::AUDIT_FILE);
    let answer = match &args.command {
        AuditCommand::Checkpoint => return audit_checkpoint(&cfg, args.common.json),
        AuditCommand::NewChain { reason } => return audit_new_chain(&cfg, reason),
        AuditCommand::Fleet { to } => return audit_fleet(&cfg, to),
        AuditCommand::Verify {
            checkpoint,
            key,
            fleet,
            log: None,
        } => {
            let (key, why_no_key) = match key {
                Some(hex) => (
                    Some(
                        gate::anchor::PublicKey::from_hex(hex)
                            .map_err(|e| CliError::Local(e.to_string()))?,
                    ),
                    None,
                ),
                None => match gate::anchor::read_public(&cfg.audit.key) {
                    Ok(k) => (Some(k), None),
                    Err(e) => (None, Some(e.to_string())),
                },
            };
            let checked = Checked {
                path: &path,
                dir: &cfg.gate.state,
                key,
                why_no_key,
                configured: Some(&cfg),
            };
            audit_verify(&checked, checkpoint, fleet.as_deref())?
        }
        AuditCommand::Verify { log: Some(_), .. } => unreachable!("verified above"),
        &AuditCommand::Tail { n } => {
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
    };
    show_audit(args.common.json, answer)
}

/// Prints what `audit tail` or `audit verify` found; exit 1 for a broken log.
fn show_audit(json: bool, answer: ControlAnswer) -> Result<u8, CliError> {
    let broken = matches!(
        answer,
        ControlAnswer::AuditVerified {
            first_bad: Some(_),
            ..
        }
    );
    if json {
        print_json(&answer)?;
        return Ok(u8::from(broken));
    }
    match answer {
        ControlAnswer::AuditRecords { lines } => {
            for l in &lines {
                outln!("{l}");
            }
        }
        ControlAnswer::AuditVerified {
            records,
            first_bad: None,
            detail,
        } => outln!("audit log intact: {records} records ({detail})"),
        ControlAnswer::AuditVerified {
            first_bad: Some(seq),
            detail,
            ..
        } => errln!("audit log broken: the first bad record is {seq} ({detail})"),
        other => return Err(unexpected(other)),
    }
    Ok(u8::from(broken))
}

/// `audit verify`: the chain, and every checkpoint against the log (docs/spec.md §6). The
/// answer is the control socket's `audit_verified`; a checkpoint that is forged, or one that
/// cannot be checked, is an error.
/// What `audit verify` checks: a log, the directory its earlier chains are kept in, the
/// public key (or why there is none), and the config whose witnesses and state directory
/// hold the checkpoints to check it against when none are given (`None` for a copied log).
struct Checked<'a> {
    path: &'a std::path::Path,
    dir: &'a std::path::Path,
    key: Option<gate::anchor::PublicKey>,
    why_no_key: Option<String>,
    configured: Option<&'a config::Config>,
}

fn audit_verify(
    checked: &Checked<'_>,
    files: &[PathBuf],
    fleet: Option<&std::path::Path>,
) -> Result<ControlAnswer, CliError> {
    use gate::anchor::{self, AnchorError};
    let local = |e: String| CliError::Local(e);
    let (path, key, why_no_key) = (checked.path, &checked.key, &checked.why_no_key);
    let given = if files.is_empty() {
        match checked.configured {
            Some(cfg) => anchor::configured(&cfg.audit, &cfg.gate.state).map_err(local)?,
            None => Vec::new(),
        }
    } else {
        let mut given = Vec::new();
        for f in files {
            let text = std::fs::read_to_string(f)
                .map_err(|e| local(format!("could not read {}: {e}", f.display())))?;
            given.extend(anchor::from_text(&text, &f.display().to_string()).map_err(local)?);
        }
        given
    };
    let mut given = given;
    let mut fleet_note = None;
    if let Some(file) = fleet {
        let Some(own) = key.as_ref() else {
            return Err(local(format!(
                "--fleet needs this replica's public key to find its heads: {}",
                why_no_key.as_deref().unwrap_or("pass --key")
            )));
        };
        let (heads, checkpoints) = fleet_heads(file, own)?;
        fleet_note = Some(format!(
            "; {} fleet checkpoints in {} hold and follow one another, {} of them with this \
             replica's head",
            checkpoints,
            file.display(),
            heads.len()
        ));
        given.extend(heads);
    }
    match anchor::verify(path, &given, key.as_ref()) {
        Ok(ok) => {
            let mut detail = format!("last hash {}", ok.last_hash);
            if let Some(note) = &fleet_note {
                detail.push_str(note);
            }
            if let Some(chain) = &ok.chain {
                detail.push_str(&format!(
                    "; a new chain, started {} by `audit new-chain` (the log before it is kept \
                     as {}), so {} given checkpoints of the chains before it were left out",
                    crate::when::at(chain.checkpoint.time),
                    checked.dir.join(&chain.previous).display(),
                    ok.earlier
                ));
            }
            match &ok.newest {
                Some(n) => {
                    let size = n.checkpoint.tree_size;
                    detail.push_str(&format!(
                        "; it extends {} given checkpoints and {} of its own, the newest of {size} \
                         records ({}, signed {})",
                        ok.given,
                        ok.in_log,
                        n.origin,
                        crate::when::at(n.checkpoint.time)
                    ));
                    if ok.records > size + 1 {
                        detail.push_str(&format!(
                            "; records {}–{} are not anchored yet",
                            size + 1,
                            ok.records
                        ));
                    }
                }
                None => detail.push_str(
                    "; no signed checkpoint anchors it yet, so a cut tail or a rewritten log \
                     would not show (the gate signs one every `[audit] checkpoint_every` \
                     records, every `checkpoint_secs`, and when it stops)",
                ),
            }
            if ok.unchecked > 0 {
                detail.push_str(&format!(
                    "; its {} checkpoint records were not checked: {}; pass --key",
                    ok.unchecked,
                    why_no_key.as_deref().unwrap_or("no public key")
                ));
            }
            Ok(ControlAnswer::AuditVerified {
                records: ok.records,
                first_bad: None,
                detail,
            })
        }
        // `first_bad` is the record's position in the log (its line): a dropped or
        // reordered record makes seq numbers disagree with positions, and the position is
        // what a person opens the file at.
        Err(AnchorError::Chain(gate::audit::VerifyError::Bad {
            line, seq, problem, ..
        })) => Ok(ControlAnswer::AuditVerified {
            records: line.saturating_sub(1),
            first_bad: Some(line),
            detail: match seq {
                Some(seq) => format!("line {line}, seq {seq}: {problem}"),
                None => format!("line {line}: {problem}"),
            },
        }),
        Err(e @ AnchorError::NoKey) => Err(local(match why_no_key {
            Some(why) => format!("{e} ({why})"),
            None => e.to_string(),
        })),
        Err(e) => match e.first_bad() {
            Some(first) => Ok(ControlAnswer::AuditVerified {
                records: first.saturating_sub(1),
                first_bad: Some(first),
                detail: e.to_string(),
            }),
            None => Err(local(e.to_string())),
        },
    }
}

/// The fleet checkpoints of `file`, each checked and following the one before; the heads
/// in them signed by `own` (this replica's), as checkpoints its log must extend.
fn fleet_heads(
    file: &std::path::Path,
    own: &gate::anchor::PublicKey,
) -> Result<(Vec<gate::anchor::Given>, usize), CliError> {
    use gate::anchor::fleet;
    let text = std::fs::read_to_string(file).map_err(|e| {
        CliError::Local(format!(
            "could not read the fleet checkpoints {}: {e}",
            file.display()
        ))
    })?;
    let all = fleet::read_all(&text, &file.display().to_string())
        .map_err(|e| CliError::Local(e.to_string()))?;
    let heads = all
        .iter()
        .flat_map(|(line, fc)| {
            fc.heads
                .iter()
                .filter(|h| own.signed(&h.checkpoint))
                .map(move |h| gate::anchor::Given {
                    origin: format!(
                        "this replica's head in the fleet checkpoint on line {line} of {}",
                        file.display()
                    ),
                    checkpoint: h.checkpoint.clone(),
                })
        })
        .collect();
    Ok((heads, all.len()))
}

/// `audit fleet --to FILE` (docs/spec.md §6, "The audit trail of a fleet").
fn audit_fleet(cfg: &config::Config, to: &std::path::Path) -> Result<u8, CliError> {
    use gate::anchor::{AuditKey, fleet};
    let local = |e: String| CliError::Local(e);
    if cfg.gate.store.is_none() {
        return Err(CliError::Usage(
            "`audit fleet` gathers a fleet's replicas from their shared store: this config \
             has no `[gate] store`"
                .into(),
        ));
    }
    let store = gate::store::Store::open_configured(&cfg.gate).map_err(|e| local(e.to_string()))?;
    let rows = store.audit_heads().map_err(|e| local(e.to_string()))?;
    let before = match std::fs::read_to_string(to) {
        Ok(text) => fleet::read_all(&text, &to.display().to_string())
            .map_err(|e| local(e.to_string()))?
            .pop()
            .map(|(_, fc)| fc),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return Err(local(format!(
                "could not read the fleet checkpoints {}: {e}",
                to.display()
            )));
        }
    };
    let checked = fleet::gather(&rows).and_then(|heads| {
        if let Some(before) = &before {
            fleet::follows(before, &heads)?;
        }
        Ok(heads)
    });
    let heads = match checked {
        Ok(heads) => heads,
        Err(e) => {
            errln!("fleet checkpoint refused: {e}");
            return Ok(1);
        }
    };
    if heads.is_empty() {
        return Err(local(
            "no replica has published a checkpoint in the store yet: a replica publishes each \
             one it signs (every `[audit] checkpoint_every` records, every `checkpoint_secs`, \
             and when it stops)"
                .into(),
        ));
    }
    let key = AuditKey::load(&cfg.audit.key).map_err(|e| local(e.to_string()))?;
    let now = proto::Timestamp(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    );
    let fc = fleet::FleetCheckpoint::sign(&key, now, heads);
    gate::anchor::witness::append_line(to, &fc.to_line())
        .map_err(|why| local(format!("could not append to {}: {why}", to.display())))?;
    let list = fc
        .heads
        .iter()
        .map(|h| {
            format!(
                "{} at {} records",
                h.checkpoint.key_id, h.checkpoint.tree_size
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    outln!(
        "fleet checkpoint of {} replicas ({list}) appended to {}",
        fc.heads.len(),
        to.display()
    );
    Ok(0)
}

/// `audit new-chain` (docs/spec.md §6, "A new chain"): with the gate's lock held, so no gate
/// runs on the log meanwhile, and only when the gate would refuse the log.
fn audit_new_chain(cfg: &config::Config, reason: &str) -> Result<u8, CliError> {
    use gate::anchor::{AuditKey, chain};
    let state = &cfg.gate.state;
    if reason.trim().is_empty() {
        return Err(CliError::Usage(
            "`audit new-chain --reason` needs a reason: it is kept in the new log".into(),
        ));
    }
    let lock_path = state.join(statedir::LOCK_FILE);
    let lock = std::fs::File::options()
        .write(true)
        .open(&lock_path)
        .map_err(|source| CliError::State {
            path: lock_path.clone(),
            source,
        })?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(CliError::Local(format!(
                "a gate is running on {} (it holds {}): stop it first (`serve` stopped, an \
                 on-demand gate's clients gone), then start the new chain",
                state.display(),
                lock_path.display()
            )));
        }
        Err(std::fs::TryLockError::Error(source)) => {
            return Err(CliError::State {
                path: lock_path,
                source,
            });
        }
    }
    let key =
        AuditKey::load_or_create(&cfg.audit.key).map_err(|e| CliError::Local(e.to_string()))?;
    let by = match std::env::var("USER").or_else(|_| std::env::var("LOGNAME")) {
        Ok(user) if !user.is_empty() => {
            format!("{user} (uid {})", rustix::process::getuid().as_raw())
        }
        _ => format!("uid {}", rustix::process::getuid().as_raw()),
    };
    let now = proto::Timestamp::from_system_time(std::time::SystemTime::now());
    let started = chain::new_chain(&cfg.audit, state, &key, reason, &by, now)
        .map_err(|e| CliError::Local(e.to_string()))?;
    drop(lock);
    errln!(
        "boxmaker: the gate refused the audit log: {}",
        started.refused
    );
    match &started.kept {
        Some(kept) => errln!(
            "boxmaker: that log is kept, as it was found, as {}",
            kept.display()
        ),
        None => errln!("boxmaker: there was no log to keep"),
    }
    for (witness, why) in &started.failed {
        errln!(
            "boxmaker: the audit witness {witness} did not take the new chain's first \
             checkpoint: {why}"
        );
    }
    outln!(
        "started a new audit chain in {}: record 1 says what was refused, why and by whom, \
         record 2 is its checkpoint, signed and handed to the witnesses ({} of them did not \
         take it)",
        state.join(gate::audit::AUDIT_FILE).display(),
        started.failed.len()
    );
    if !started.failed.is_empty() {
        // The new chain is started either way; a witness that missed its first checkpoint
        // should still be given it, or it holds nothing of the new chain until the next.
        outln!(
            "give each witness that did not take it this line by hand: {}",
            started.checkpoint.to_line()
        );
        return Ok(1);
    }
    Ok(0)
}

/// `audit checkpoint`: the gate's latest checkpoint, as a witness keeps it, after two `#`
/// lines (which `audit verify --checkpoint` skips) saying what it covers and the public
/// key that checks it. Exit 1 if there is none yet, or if it is not signed by that key.
fn audit_checkpoint(cfg: &config::Config, json: bool) -> Result<u8, CliError> {
    use gate::anchor;
    let latest = anchor::witness::read_latest(&cfg.gate.state).map_err(CliError::Local)?;
    let Some(cp) = latest else {
        return Err(CliError::Local(format!(
            "no checkpoint yet in {}: the gate signs one every {} records, every {} s while \
             records come, and when it stops",
            cfg.gate.state.display(),
            cfg.audit.checkpoint_every,
            cfg.audit.checkpoint_secs
        )));
    };
    let key = anchor::read_public(&cfg.audit.key);
    let signed = key.as_ref().ok().map(|k| k.signed(&cp));
    if json {
        let v = serde_json::json!({
            "checkpoint": cp,
            "public_key": key.as_ref().ok().map(anchor::PublicKey::to_hex),
            "signed_by_key": signed,
        });
        outln!("{v}");
    } else {
        outln!(
            "# the latest checkpoint of {}: {} records, signed {}, key id {}",
            cfg.gate.state.join(gate::audit::AUDIT_FILE).display(),
            cp.tree_size,
            crate::when::at(cp.time),
            cp.key_id
        );
        match &key {
            Ok(k) => outln!(
                "# public key {} (the public half of {}); elsewhere: `boxmaker audit verify \
                 --checkpoint FILE --key {}`",
                k.to_hex(),
                cfg.audit.key.display(),
                k.to_hex()
            ),
            Err(e) => outln!("# public key unknown: {e}"),
        }
        outln!("{}", cp.to_line());
    }
    if signed == Some(false) {
        errln!(
            "boxmaker: this checkpoint is not signed by the key in {}: it was forged or \
             damaged, or the key was replaced",
            cfg.audit.key.display()
        );
        return Ok(1);
    }
    Ok(0)
}
