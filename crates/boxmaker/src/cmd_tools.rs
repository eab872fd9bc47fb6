//! `boxmaker tools`: the downstream MCP servers' tools, as discovered, and what changed.
//!
//! - `tools list` — every exposed tool, its server, and how it stands against what an
//!   operator accepted; then anything not offered, and why.
//! - `tools diff` — only the tools that changed since accepted (exit 1 if any, 0 if none).
//! - `tools accept NAME... | --all` — accept their current definitions.
//! - `tools refresh` — run every server again in a box with no session data and record
//!   what it offers now.
//!
//! Discovery runs servers the discovery file does not know yet, before any of these. The
//! first definitions seen are accepted (trust on first use); `list` says when that was.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use catalog::{Catalog, Standing, ToolsFile};
use config::{Config, ToolKind};
use runner::Runner;

use crate::error::CliError;

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
    /// Accept the current definitions of these tools (exposed names), or of all.
    Accept {
        #[arg(value_name = "NAME", required_unless_present = "all")]
        names: Vec<String>,
        /// Every changed tool.
        #[arg(long, conflicts_with = "names")]
        all: bool,
    },
    /// Ask every server again what it offers (each runs once in a box with no session data).
    Refresh,
}

/// Runs discovery for the servers the discovery file does not know (all of them with
/// `all`), reporting each failure on stderr, and returns the catalog. A server that cannot
/// be asked only loses its tools; the rest are offered.
pub fn discover(cfg: &Arc<Config>, all: bool) -> Result<Arc<Catalog>, CliError> {
    if !cfg
        .tools
        .iter()
        .any(|t| matches!(t.kind, ToolKind::Mcp { .. }))
    {
        return Ok(Arc::default());
    }
    let runner = Runner::new(cfg.clone(), &cfg.gate.state)?;
    for (server, r) in runner.refresh_tools(all) {
        if let Err(e) = r {
            eprintln!("boxmaker: {server}: cannot discover its tools: {e}");
        }
    }
    runner
        .catalog()
        .map_err(|e| CliError::Refused(e.to_string()))
}

pub fn run(args: &ToolsArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
    create_state_dir(&cfg.gate.state)?;
    let refresh = matches!(args.what, ToolsCommand::Refresh);
    let catalog = discover(&cfg, refresh)?;
    match &args.what {
        ToolsCommand::List | ToolsCommand::Refresh => {
            for e in catalog.entries() {
                println!(
                    "{:<40} {} {:?}: {}",
                    e.exposed,
                    e.server,
                    e.downstream,
                    e.standing.describe()
                );
            }
            for p in &catalog.problems {
                println!("not offered: {p}");
            }
            Ok(0)
        }
        ToolsCommand::Diff => {
            let mut any = false;
            for e in catalog.changes() {
                any = true;
                println!("{}: {}", e.exposed, e.standing.describe());
                if let (Standing::Changed(_), Some(old), Some(new)) = (
                    &e.standing,
                    &e.accepted,
                    seen(&cfg, &e.server, &e.downstream),
                ) {
                    if old.description != new.description {
                        println!("  accepted description: {:?}", old.description);
                        println!("  now:                  {:?}", new.description);
                    }
                    if old.input_schema != new.input_schema {
                        println!("  accepted schema: {}", old.input_schema);
                        println!("  now:             {}", new.input_schema);
                    }
                }
            }
            if any {
                println!(
                    "accept with `boxmaker tools accept NAME` (or --all) once you have read them"
                );
            }
            Ok(u8::from(any))
        }
        ToolsCommand::Accept { names, all } => {
            let chosen: Vec<_> = if *all {
                catalog.changes().collect()
            } else {
                let mut v = Vec::new();
                for n in names {
                    let e = catalog.get(n).ok_or_else(|| {
                        CliError::Refused(format!(
                            "there is no downstream tool named {n:?} (see `boxmaker tools list`)"
                        ))
                    })?;
                    v.push(e);
                }
                v
            };
            let state = cfg.gate.state.clone();
            for e in chosen {
                let Some(ToolKind::Mcp { argv, .. }) = cfg.tool(&e.server).map(|t| &t.kind) else {
                    continue;
                };
                let changed = ToolsFile::update(&state, |f| f.accept(argv, &e.downstream))
                    .map_err(|err| CliError::Refused(err.to_string()))?;
                println!(
                    "{}: {}",
                    e.exposed,
                    if changed {
                        "accepted"
                    } else {
                        "already accepted"
                    }
                );
            }
            Ok(0)
        }
    }
}

/// The definition of `server`'s tool `name` last seen.
fn seen(cfg: &Config, server: &str, name: &str) -> Option<catalog::ToolDef> {
    let ToolKind::Mcp { argv, .. } = &cfg.tool(server)?.kind else {
        return None;
    };
    let file = ToolsFile::load(&cfg.gate.state).ok()?;
    let rec = file.servers.get(&catalog::server_key(argv))?;
    rec.tools.iter().find(|d| d.name == name).cloned()
}

fn create_state_dir(state: &Path) -> Result<(), CliError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state)
        .map_err(|source| CliError::State {
            path: state.to_path_buf(),
            source,
        })
}
