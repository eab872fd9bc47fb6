//! `boxmaker tools`: the downstream MCP servers' tools, as discovered, and what changed.
//!
//! - `tools list` — every exposed tool, its server, and how it stands against what an
//!   operator accepted; then anything not offered, and why.
//! - `tools diff` — only the tools that changed since accepted (exit 1 if any, 0 if none).
//! - `tools accept NAME[@FINGERPRINT]... | --all` — accept their current definitions; with a
//!   fingerprint (printed by `diff`), only if the definition is still the one shown.
//! - `tools refresh` — run every server again in a box with no session data and record
//!   what it offers now.
//! - `tools log NAME [--session ID | --discovery] [--raw]` — a server's stderr, as kept for
//!   the operator (`runner::downstream::stderr`), escaped as every text shown is; it only
//!   reads (no discovery, nothing written).
//!
//! Discovery runs servers the discovery file does not know yet, before any of the others. The
//! first definitions seen are accepted (trust on first use); `list` says when that was.

use std::path::PathBuf;
use std::sync::Arc;

use catalog::{Catalog, Standing, ToolsFile};
use config::{Config, ToolKind};
use runner::Runner;

use crate::error::CliError;
use crate::host::create_state_dir;

/// Show, compare, accept and refresh downstream MCP servers' tools.
#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME, global = true)]
    config: PathBuf,
    #[command(subcommand)]
    what: ToolsCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ToolsCommand {
    /// Every downstream tool, its server, and whether it is as accepted.
    List,
    /// The tools whose name, description or schema changed since accepted (exit 1 if any).
    Diff,
    /// Accept the current definitions of these tools (exposed names; NAME@FINGERPRINT, as
    /// `diff` prints it, accepts only that exact definition), or of all.
    Accept {
        /// A downstream tool's exposed name (see `boxmaker tools list`), or NAME@FINGERPRINT
        /// (as `boxmaker tools diff` prints it) to accept only that exact definition.
        #[arg(value_name = "NAME", required_unless_present = "all")]
        names: Vec<String>,
        /// Every changed tool.
        #[arg(long, conflicts_with = "names")]
        all: bool,
    },
    /// Ask every server again what it offers (each runs once in a box with no session data).
    Refresh,
    /// Print a downstream server's stderr as kept for the operator: the session's where
    /// --session says, its discovery's with --discovery, else the newest one kept.
    Log {
        /// The server: the name of a [[tool]] with `mcp = [...]`.
        #[arg(value_name = "NAME")]
        name: String,
        /// The session whose server's stderr to print.
        #[arg(long, value_name = "ID", conflicts_with = "discovery")]
        session: Option<proto::SessionId>,
        /// The stderr of its discovery (the run, with no session data, that lists its tools).
        #[arg(long)]
        discovery: bool,
        /// The bytes as the server wrote them, terminal control characters included (by
        /// default every hidden or control character is shown as `\u{…}`).
        #[arg(long)]
        raw: bool,
    },
}

/// Discovery for a process that hosts a front (`boxmaker mcp`), which never reads a secret
/// (docs/spec.md §3.8): the servers that need one are discovered first by a process of their
/// own, `boxmaker __discover` (the runner's code, as `tools list` runs it), which holds the
/// values and exits; then the rest here. A server that cannot be asked only loses its
/// tools; the rest are offered.
pub fn discover_for_front(
    cfg: &Arc<Config>,
    config: &std::path::Path,
) -> Result<Arc<Catalog>, CliError> {
    if cfg.tools.iter().any(|t| match &t.kind {
        ToolKind::Mcp { .. } => !t.secrets.is_empty(),
        // A remote server is discovered by the runner's code too: its connection is a
        // destination, and its credential a secret (never the front's).
        ToolKind::Remote { .. } => true,
        ToolKind::Builtin(_) => false,
    }) {
        let me = std::env::current_exe().map_err(|e| {
            CliError::Local(format!("cannot find this binary to discover with: {e}"))
        })?;
        let status = std::process::Command::new(me)
            .arg("__discover")
            .arg("--config")
            .arg(std::path::absolute(config).unwrap_or_else(|_| config.to_path_buf()))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status();
        if let Err(e) = status {
            errln!("boxmaker: cannot discover the servers that need secrets: {e}");
        }
    }
    discover_counting(cfg, false, false).map(|(catalog, _)| catalog)
}

/// `boxmaker __discover --config FILE`: discovery of the servers the discovery file does
/// not know yet, with their secrets, for `boxmaker mcp` (see [`discover_for_front`]).
#[derive(Debug, clap::Args)]
pub struct DiscoverArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
}

pub fn discover_role(args: &DiscoverArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
    create_state_dir(&cfg.gate.state)?;
    let (_, failed) = discover_counting(&cfg, false, true)?;
    Ok(u8::from(failed > 0))
}

/// Runs discovery for the servers the discovery file does not know (all of them with
/// `all`), reporting each failure on stderr, and returns the catalog and how many servers
/// could not be asked. Without `secrets`, a server that needs one is left for a process that
/// reads them.
fn discover_counting(
    cfg: &Arc<Config>,
    all: bool,
    secrets: bool,
) -> Result<(Arc<Catalog>, usize), CliError> {
    if !cfg.tools.iter().any(|t| t.kind.is_server()) {
        return Ok((Arc::default(), 0));
    }
    let runner = Runner::new(cfg.clone(), &cfg.gate.state)?;
    let runner = if secrets {
        runner
    } else {
        runner.without_secrets()
    };
    let mut failed = 0;
    for (server, r) in runner.refresh_tools(all) {
        if let Err(e) = r {
            failed += 1;
            errln!("boxmaker: {server}: cannot discover its tools: {e}");
        }
    }
    let catalog = runner
        .catalog()
        .map_err(|e| CliError::Local(e.to_string()))?;
    Ok((catalog, failed))
}

pub fn run(args: &ToolsArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
    if let ToolsCommand::Log {
        name,
        session,
        discovery,
        raw,
    } = &args.what
    {
        return log(&cfg, name, session.as_ref(), *discovery, *raw);
    }
    create_state_dir(&cfg.gate.state)?;
    let refresh = matches!(args.what, ToolsCommand::Refresh);
    let (catalog, failed) = discover_counting(&cfg, refresh, true)?;
    match &args.what {
        ToolsCommand::List | ToolsCommand::Refresh => {
            if catalog.entries().is_empty() && catalog.problems.is_empty() && failed == 0 {
                outln!("no downstream tools: the config has no [[tool]] with `mcp = [...]`");
            }
            for e in catalog.entries() {
                outln!(
                    "{:<40} {} {:?}: {}",
                    e.exposed,
                    e.server,
                    e.downstream,
                    e.standing.describe()
                );
            }
            for p in &catalog.problems {
                outln!("not offered: {p}");
            }
            // A server that could not be asked is a failure to report, not an empty list.
            if failed > 0 {
                errln!(
                    "boxmaker: {failed} server{} could not be asked for {} tools (see above)",
                    if failed == 1 { "" } else { "s" },
                    if failed == 1 { "its" } else { "their" }
                );
                return Ok(1);
            }
            Ok(0)
        }
        ToolsCommand::Diff => {
            let mut any = false;
            for e in catalog.changes() {
                any = true;
                outln!("{}: {}", e.exposed, e.standing.describe());
                let now = seen(&cfg, &e.server, &e.downstream);
                match (&e.standing, &e.accepted, &now) {
                    (Standing::Changed(_), Some(old), Some(new)) => {
                        if old.description != new.description {
                            outln!("  accepted description: {:?}", old.description);
                            outln!("  now:                  {:?}", new.description);
                        }
                        if old.input_schema != new.input_schema {
                            outln!("  accepted schema: {}", old.input_schema);
                            outln!("  now:             {}", new.input_schema);
                        }
                    }
                    (Standing::Added, _, Some(new)) => {
                        outln!("  description: {:?}", new.description);
                        outln!("  schema:      {}", new.input_schema);
                    }
                    _ => {}
                }
                if let Some(new) = &now {
                    outln!(
                        "  accept exactly this: boxmaker tools accept {}@{}",
                        e.exposed,
                        new.fingerprint()
                    );
                }
            }
            if !any {
                outln!("no changes: every downstream tool is as accepted");
            }
            if any {
                outln!(
                    "NAME@FINGERPRINT accepts only the definition shown here; a bare NAME (or \
                     --all) accepts whatever the server offers when you run it"
                );
            }
            Ok(u8::from(any))
        }
        ToolsCommand::Log { .. } => Ok(0),
        ToolsCommand::Accept { names, all } => {
            let chosen: Vec<_> = if *all {
                catalog.changes().map(|e| (e, None)).collect()
            } else {
                let mut v = Vec::new();
                for n in names {
                    let (name, expect) = match n.split_once('@') {
                        Some((name, fp)) => (name, Some(fp)),
                        None => (n.as_str(), None),
                    };
                    let e = catalog.get(name).ok_or_else(|| {
                        CliError::Local(format!(
                            "there is no downstream tool named {name:?} (see `boxmaker tools list`)"
                        ))
                    })?;
                    v.push((e, expect));
                }
                v
            };
            let state = cfg.gate.state.clone();
            for (e, expect) in chosen {
                let Some(argv) = cfg.tool(&e.server).and_then(|t| t.kind.server_argv()) else {
                    continue;
                };
                let argv = &argv;
                // Under the file's lock: the definition checked is the one accepted.
                let outcome = ToolsFile::update(&state, |f| {
                    let now = f
                        .servers
                        .get(&catalog::server_key(argv))
                        .and_then(|r| r.tools.iter().find(|d| d.name == e.downstream))
                        .cloned();
                    let fp = now.as_ref().map(catalog::ToolDef::fingerprint);
                    if let Some(want) = expect
                        && fp.as_deref() != Some(want)
                    {
                        return Err(fp);
                    }
                    Ok((f.accept(argv, &e.downstream), now))
                })
                .map_err(|err| CliError::Local(err.to_string()))?;
                match outcome {
                    Err(now) => {
                        return Err(CliError::Local(format!(
                            "{}: not accepted: its definition is now {} (not {}); run `boxmaker \
                             tools diff` again",
                            e.exposed,
                            now.unwrap_or_else(|| "gone".into()),
                            expect.unwrap_or_default()
                        )));
                    }
                    Ok((changed, now)) => outln!(
                        "{}: {}{}",
                        e.exposed,
                        if changed {
                            "accepted"
                        } else {
                            "already accepted"
                        },
                        now.map(|d| format!(" ({}: {:?})", d.fingerprint(), d.description))
                            .unwrap_or_else(|| " (removed)".into())
                    ),
                }
            }
            Ok(0)
        }
    }
}

/// The definition of `server`'s tool `name` last seen.
fn seen(cfg: &Config, server: &str, name: &str) -> Option<catalog::ToolDef> {
    let argv = cfg.tool(server)?.kind.server_argv()?;
    let file = ToolsFile::load(&cfg.gate.state).ok()?;
    let rec = file.servers.get(&catalog::server_key(&argv))?;
    rec.tools.iter().find(|d| d.name == name).cloned()
}

/// `tools log`: prints `server`'s stderr log (the older file of its pair first).
fn log(
    cfg: &Config,
    server: &str,
    session: Option<&proto::SessionId>,
    discovery: bool,
    raw: bool,
) -> Result<u8, CliError> {
    use runner::downstream::stderr;
    let state = &cfg.gate.state;
    let is_server = cfg.tool(server).is_some_and(|t| t.kind.is_server());
    // A name is one file name: never a path out of the logs' directory.
    if server.is_empty() || server.contains('/') || server.starts_with('.') {
        return Err(CliError::Local(format!(
            "{server:?} is not a downstream server's name (see the config's [[tool]]s with \
             `mcp = [...]`)"
        )));
    }
    let path = if discovery {
        stderr::log_path(state, None, server)
    } else if let Some(s) = session {
        stderr::log_path(state, Some(s), server)
    } else {
        match newest_log(state, server) {
            Some((which, path)) => {
                errln!(
                    "boxmaker: {server}'s stderr in {which} ({}); --session ID or --discovery \
                     picks another",
                    path.display()
                );
                path
            }
            None if is_server => {
                return Err(CliError::Local(format!(
                    "no stderr is kept for {server} yet: it is kept from the server's first \
                     start, under {}",
                    stderr::logs_dir(state).display()
                )));
            }
            None => {
                return Err(CliError::Local(format!(
                    "there is no downstream server named {server:?} in the config (a [[tool]] \
                     with `mcp = [...]`), and no stderr is kept for one"
                )));
            }
        }
    };
    let older = stderr::older(&path);
    let mut bytes = std::fs::read(&older).unwrap_or_default();
    match std::fs::read(&path) {
        Ok(b) => bytes.extend_from_slice(&b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !bytes.is_empty() => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let which = match session {
                Some(s) => format!("session {}", s.as_str()),
                None => "its discovery".into(),
            };
            return Err(CliError::Local(format!(
                "no stderr is kept for {server} in {which} ({} does not exist){}",
                path.display(),
                if is_server {
                    ""
                } else {
                    "; the config has no downstream server of that name"
                }
            )));
        }
        Err(e) => {
            return Err(CliError::Local(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    }
    if raw {
        crate::out::stdout_bytes(&bytes);
        return Ok(0);
    }
    for line in String::from_utf8_lossy(&bytes).lines() {
        outln!("{}", proto::shown::for_person(line).text);
    }
    Ok(0)
}

/// The newest log kept for `server`, whichever session's (or discovery's), and which.
fn newest_log(state: &std::path::Path, server: &str) -> Option<(String, PathBuf)> {
    use runner::downstream::stderr;
    let dirs = std::fs::read_dir(stderr::logs_dir(state)).ok()?;
    dirs.flatten()
        .filter_map(|d| {
            let path = d.path().join(format!("{server}{}", stderr::SUFFIX));
            let when = std::fs::metadata(&path).and_then(|m| m.modified()).ok()?;
            let name = d.file_name().to_string_lossy().into_owned();
            let which = if name == stderr::DISCOVERY {
                "its discovery".to_string()
            } else {
                format!("session {name}")
            };
            Some((when, which, path))
        })
        .max_by_key(|(when, _, _)| *when)
        .map(|(_, which, path)| (which, path))
}
