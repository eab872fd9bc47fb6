//! `boxmaker mcp`: the front role — boxmaker as an MCP server on stdio, or with `--http ADDR`
//! on streamable HTTP with a bearer token.
//!
//! It uses the gate of the state directory, whatever process runs it (`serve`, or an
//! on-demand gate another client started), and starts an on-demand gate when none answers —
//! at start and again at any later call, so it is never stranded by another client's exit
//! (see [`crate::host`]). Each MCP connection (each HTTP MCP
//! session) is a new boxmaker session with a fresh id, printed on stderr, unless `--session`
//! names one.

use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::Arc;

use front::Front;
use proto::SessionId;
use rmcp::ServiceExt;

use crate::error::CliError;
use crate::host;

/// Serve boxmaker's tools to an MCP client (stdio by default).
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
    /// Use this session (its taint and workspace) instead of a fresh one per connection.
    #[arg(long, value_name = "ID", allow_hyphen_values = true)]
    session: Option<SessionId>,
    /// Serve streamable HTTP at this address (e.g. 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// Allow `--http` on an address other than loopback.
    #[arg(long)]
    allow_remote: bool,
}

/// A fresh session id: `mcp-` and 16 hex digits from the OS's random source.
fn fresh_session() -> Result<SessionId, CliError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| CliError::Unexpected(format!("no randomness: {e}")))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    SessionId::new(format!("mcp-{hex}")).map_err(|e| CliError::Unexpected(e.to_string()))
}

fn token() -> Result<String, CliError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| CliError::Unexpected(format!("no randomness: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

pub fn run(args: &McpArgs) -> Result<u8, CliError> {
    let cfg = Arc::new(config::load(&args.config)?);
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && !args.allow_remote
    {
        return Err(CliError::Local(format!(
            "{addr} is not a loopback address; pass --allow-remote to serve other machines"
        )));
    }
    // Downstream servers' tools, discovered once per command line (before any runtime
    // exists here: discovery runs its own).
    let catalog = crate::cmd_tools::discover(&cfg, false)?;
    // This process is a client of the state directory for as long as it runs: the gate
    // stays while it does.
    let _presence = host::ensure(&args.config, cfg.clone())?;
    let connector: front::gatecall::Connector = {
        let (config_path, cfg) = (args.config.clone(), cfg.clone());
        Arc::new(move || {
            host::reach(&config_path, &cfg, host::Channel::Agent, false).map_err(|e| {
                front::gatecall::GateCallError::Connect {
                    path: cfg
                        .gate
                        .state
                        .join(statedir::AGENT_SOCKET)
                        .display()
                        .to_string(),
                    source: std::io::Error::other(e.to_string()),
                }
            })
        })
    };
    // With `approve_in_client`, each front also asks the person in the client and passes
    // their answer on over the gate's decision socket (never the control socket).
    let decide: Option<front::approve::DecideConnector> = cfg.gate.approve_in_client.then(|| {
        let state = cfg.gate.state.clone();
        Arc::new(move || statedir::connect(&state, statedir::DECIDE_SOCKET))
            as front::approve::DecideConnector
    });
    let with_decide = move |f: Front| match &decide {
        Some(d) => f.with_client_approvals(d.clone()),
        None => f,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|source| CliError::State {
            path: cfg.gate.state.clone(),
            source,
        })?;
    match args.http {
        None => {
            let session = match &args.session {
                Some(s) => s.clone(),
                None => fresh_session()?,
            };
            eprintln!("boxmaker mcp: session {session}");
            let front = with_decide(Front::new(cfg.clone(), catalog, session, connector));
            runtime.block_on(async move {
                let service = front
                    // front's own stdio transport: bounded lines, and the JSON-RPC error for
                    // malformed input that rmcp's would drop or misname (issue 6).
                    .serve(front::stdio::stdio())
                    .await
                    .map_err(|e| CliError::Local(format!("MCP initialization failed: {e}")))?;
                service
                    .waiting()
                    .await
                    .map_err(|e| CliError::Local(format!("the MCP session failed: {e}")))?;
                Ok::<(), CliError>(())
            })?;
        }
        Some(addr) => {
            let token = token()?;
            let path = cfg.gate.state.join("http.token");
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&path)
                .map_err(|source| CliError::State {
                    path: path.clone(),
                    source,
                })?;
            std::io::Write::write_all(&mut f, token.as_bytes()).map_err(|source| {
                CliError::State {
                    path: path.clone(),
                    source,
                }
            })?;
            // Bind before the banner: a client that reads the banner can connect at once, and
            // with port 0 the banner names the port actually bound (issue 6 / mcp_clients).
            let listener = runtime
                .block_on(front::http::bind(addr))
                .map_err(|e| CliError::Local(e.to_string()))?;
            let bound = listener.local_addr().unwrap_or(addr);
            eprintln!(
                "boxmaker mcp: http://{bound}/mcp with `Authorization: Bearer {token}` (also in {})",
                path.display()
            );
            let fixed = args.session.clone();
            let new_front = move || {
                let session = match &fixed {
                    Some(s) => s.clone(),
                    None => fresh_session().map_err(|e| std::io::Error::other(e.to_string()))?,
                };
                eprintln!("boxmaker mcp: new MCP session {session}");
                Ok(with_decide(Front::new(
                    cfg.clone(),
                    catalog.clone(),
                    session,
                    connector.clone(),
                )))
            };
            runtime
                .block_on(front::http::serve_on(listener, token, new_front))
                .map_err(|e| CliError::Local(e.to_string()))?;
        }
    }
    Ok(0)
}
