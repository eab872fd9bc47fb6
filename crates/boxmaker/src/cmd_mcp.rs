//! `boxmaker mcp`: the front role — boxmaker as an MCP server on stdio, or with `--http ADDR`
//! on streamable HTTP with a bearer token.
//!
//! This process is the front alone (docs/spec.md §1): it reads the config and the discovery
//! file, starts a broker (`boxmaker __broker`, [`crate::cmd_broker`]) that finds — or starts
//! — the gate for every call and hands it the connection, binds its HTTP listener if any,
//! and then confines itself (`front::confine`: no file, no exec, no socket or connect) on
//! its only thread, before it reads the agent's first byte. It is never stranded by another
//! client's exit: the broker starts a gate when none answers (see [`crate::host`]). Each MCP connection (each HTTP MCP
//! session) is a new boxmaker session with a fresh id, printed on stderr, unless `--session`
//! names one.

use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
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
    /// After confining itself, try to open this file and say what happened (tests).
    #[arg(long, value_name = "PATH", hide = true)]
    probe_open: Option<PathBuf>,
    /// With `--http`: a browser origin allowed to call (`http://localhost:6274`); repeat for
    /// more. A request with any other `Origin` is refused (403); one with none is not a
    /// browser's and needs only the token.
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
}

/// Make a bearer credential for a new conversation of `boxmaker mcp --http`.
///
/// Over HTTP a conversation is a credential: every request carrying it, of either MCP era,
/// shares one session (its taint, provenance, approvals and box), and no request reaches
/// another. Give each agent, or each conversation you want kept apart, its own.
#[derive(Debug, clap::Args)]
pub struct TokenArgs {
    /// The config file.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
}

/// `boxmaker token`: prints a new conversation's credential (stdout) and its session
/// (stderr). Any `boxmaker mcp --http` of the state directory serves it, now or after a
/// restart, until `STATE/http.key` is removed.
pub fn token(args: &TokenArgs) -> Result<u8, CliError> {
    let cfg = config::load(&args.config)?;
    host::create_state_dir(&cfg.gate.state)?;
    let credentials = http_key(&cfg.gate)?;
    let (credential, session) = credentials
        .mint()
        .map_err(|e| CliError::Unexpected(e.to_string()))?;
    outln!("{credential}");
    errln!("boxmaker: conversation {session}: send `Authorization: Bearer` with the line above");
    Ok(0)
}

/// A fresh session id: `mcp-` and 16 hex digits from the OS's random source.
fn fresh_session() -> Result<SessionId, CliError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| CliError::Unexpected(format!("no randomness: {e}")))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    SessionId::new(format!("mcp-{hex}")).map_err(|e| CliError::Unexpected(e.to_string()))
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
    if let Some(bad) = args
        .allow_origin
        .iter()
        .find(|o| !front::http::is_origin(o))
    {
        return Err(CliError::Local(format!(
            "--allow-origin {bad:?} is not an origin: write it as a browser sends it, like \
             http://localhost:6274 (scheme, host, optional port, nothing after)"
        )));
    }
    // Downstream servers' tools, discovered once per command line (before any runtime
    // exists here: discovery runs its own). Those that need a secret are discovered by a
    // process of their own: this one never reads one (docs/spec.md §3.8).
    let catalog = crate::cmd_tools::discover_for_front(&cfg, &args.config)?;
    // This process is a client of the state directory for as long as it runs: the gate
    // stays while it does.
    let _presence = host::Presence::take(&cfg.gate.state)?;
    // The broker finds (or starts) a gate for every call and hands this process the
    // connection: once confined, this process can make none itself.
    let channel = start_broker(&args.config, args.http.is_none())?;
    let connector = front::channel::connector(channel.clone());
    let http = match args.http {
        None => None,
        Some(addr) => Some(http_setup(&cfg, addr)?),
    };
    // With `approve_in_client`, each front also asks the person in the client and passes
    // their answer on over the gate's decision socket (never the control socket), a
    // connection the broker hands it like the others.
    let decide: Option<front::approve::DecideConnector> = cfg.gate.approve_in_client.then(|| {
        let channel = channel.clone();
        Arc::new(move || {
            channel
                .ask(front::channel::Kind::Decide)
                .map_err(|e| std::io::Error::other(e.to_string()))
        }) as front::approve::DecideConnector
    });
    // What will not work with this config (a mount whose host path is not there, …) is
    // said now, on stderr and to each client's log, not first by a failing call.
    let notes: Arc<Vec<String>> = Arc::new(
        crate::lint::lint(&cfg)
            .into_iter()
            .map(|f| format!("warning: {}", f.text))
            .collect(),
    );
    for n in notes.iter() {
        front::note!("boxmaker mcp: {n}");
    }
    let with_decide = move |f: Front| {
        let f = f.with_notes(notes.clone());
        match &decide {
            Some(d) => f.with_client_approvals(d.clone()),
            None => f,
        }
    };
    // A connection session is live while its front holds the lock the broker hands it; its
    // remembered approvals end with it (docs/spec.md §6). A session named with --session
    // may be used again and is never over.
    let live_channel = channel.clone();
    let hold_live = move |f: Front| -> Result<Front, String> {
        if !statedir::live::is_connection_session(f.session().as_str()) {
            return Ok(f);
        }
        let live = live_channel
            .hold_live(f.session().as_str())
            .map_err(|e| e.to_string())?;
        Ok(f.holding_live(live))
    };
    // What the front words for a person needs two things it cannot read once confined:
    // the time zone (a file) and this binary's path (a link). Read them now.
    let _ = front::when::zone();
    let _ = front::explain::program();
    // Before the first byte from the agent, and on the process's only thread (the
    // runtime's threads start after, confined too).
    confine(args.probe_open.as_deref())?;
    // Confined already: its threads are too. (No signal driver: it would make a socketpair,
    // and the front handles no signal.)
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|source| CliError::State {
            path: cfg.gate.state.clone(),
            source,
        })?;
    match http {
        None => {
            let session = match &args.session {
                Some(s) => s.clone(),
                None => fresh_session()?,
            };
            front::note!("boxmaker mcp: session {session}");
            let front = hold_live(with_decide(Front::new(
                cfg.clone(),
                catalog,
                session,
                connector,
            )))
            .map_err(CliError::Local)?;
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
        Some((listener, http)) => {
            let listener = {
                let _enter = runtime.enter();
                tokio::net::TcpListener::from_std(listener)
                    .map_err(|e| CliError::Local(format!("cannot serve the HTTP listener: {e}")))?
            };
            let bound = listener
                .local_addr()
                .map_err(|e| CliError::Local(format!("cannot serve the HTTP listener: {e}")))?;
            front::note!(
                "boxmaker mcp: http://{bound}/mcp with `Authorization: Bearer {}` (also in {}); \
                 that credential is conversation {} (`boxmaker token` makes another)",
                http.credential,
                http.token_file.display(),
                http.session
            );
            // Over HTTP a conversation is a credential (docs/spec.md §5): each gets its own
            // front, made at its first request; `--session` puts them all in that one.
            let fixed = args.session.clone();
            let conversations =
                front::conversation::Conversations::new(http.credentials, move |session| {
                    let session = fixed.clone().unwrap_or(session);
                    front::note!("boxmaker mcp: conversation {session}");
                    hold_live(with_decide(Front::new(
                        cfg.clone(),
                        catalog.clone(),
                        session,
                        connector.clone(),
                    )))
                    .map_err(std::io::Error::other)
                });
            runtime
                .block_on(front::http::serve_on(
                    listener,
                    conversations,
                    args.allow_origin.clone(),
                ))
                .map_err(|e| CliError::Local(e.to_string()))?;
        }
    }
    Ok(0)
}

/// Starts `boxmaker __broker` with one end of a socketpair as its standard input, and
/// returns the connector that asks it for gate connections over the other end.
///
/// On stdio (`stdio_client`), the process that started this one is the MCP client whose
/// conversation this is: the broker records it with each live session, for the client's
/// prompt hook to find (docs/spec.md §3.10). Over HTTP a conversation is a credential, and
/// no process is its client.
fn start_broker(
    config: &std::path::Path,
    stdio_client: bool,
) -> Result<front::channel::Channel, CliError> {
    let (ours, theirs) = UnixStream::pair()
        .map_err(|e| CliError::Local(format!("cannot make the broker's channel: {e}")))?;
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Local(format!("cannot find boxmaker to start the broker: {e}")))?;
    let config = std::path::absolute(config).unwrap_or_else(|_| config.to_path_buf());
    // Not waited for: a thread waiting here would be a thread outside the confinement. It
    // ends when this process closes the channel; what is left of it goes with this process.
    let _child = std::process::Command::new(exe)
        .arg("__broker")
        .arg("--config")
        .arg(config)
        .args(stdio_client.then_some("--stdio-client"))
        .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
            theirs,
        )))
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| CliError::Local(format!("cannot start the broker: {e}")))?;
    Ok(front::channel::Channel::new(ours))
}

/// The HTTP front's token file, in the state directory: the credential it printed.
const HTTP_TOKEN: &str = "http.token";

/// The state directory's HTTP key, which signs conversation credentials.
const HTTP_KEY: &str = "http.key";

/// What the HTTP front is set up with before it confines itself.
struct HttpSetup {
    /// The state directory's key, which signs conversation credentials.
    credentials: front::conversation::Credentials,
    /// A credential for a new conversation, printed and written to `token_file`.
    credential: String,
    session: SessionId,
    token_file: PathBuf,
}

/// The HTTP front's listener (bound now, before confinement), the state directory's key
/// (`STATE/http.key`, made `0600` on first use), and a credential for a new conversation,
/// written `0600` to `STATE/http.token`.
fn http_setup(
    cfg: &config::Config,
    addr: SocketAddr,
) -> Result<(std::net::TcpListener, HttpSetup), CliError> {
    let credentials = http_key(&cfg.gate)?;
    let (credential, session) = credentials
        .mint()
        .map_err(|e| CliError::Unexpected(e.to_string()))?;
    let path = cfg.gate.state.join(HTTP_TOKEN);
    // Replaced whole, never through a link (a repository can ship `.boxmaker/`).
    crate::host::create_state_dir(&cfg.gate.state)?.replace(
        HTTP_TOKEN,
        credential.as_bytes(),
        statedir::file::Mode::Private,
    )?;
    // Bound before the banner: a client that reads the banner can connect at once, and with
    // port 0 the banner names the port actually bound.
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|source| CliError::Local(format!("cannot listen on {addr}: {source}")))?;
    listener
        .set_nonblocking(true)
        .map_err(|source| CliError::Local(format!("cannot listen on {addr}: {source}")))?;
    Ok((
        listener,
        HttpSetup {
            credentials,
            credential,
            session,
            token_file: path,
        },
    ))
}

/// The state directory's HTTP key (`STATE/http.key`), made `0600` on first use. Every front
/// of the state directory, and `boxmaker token`, sign conversation credentials with it, so a
/// credential names its conversation across restarts of the front; removing it ends them all.
///
/// A replica of a fleet (`[gate] store`) takes the fleet's key from the shared store
/// instead (made by whichever replica asked first), so a credential minted on one replica
/// names its conversation on every other (docs/spec.md §6, "Replicas").
pub(crate) fn http_key(gate: &config::Gate) -> Result<front::conversation::Credentials, CliError> {
    if gate.store.is_some() {
        let mut store = gate::store::Store::open_configured(gate)
            .map_err(|e| CliError::Local(e.to_string()))?;
        let fresh =
            front::conversation::new_key().map_err(|e| CliError::Unexpected(e.to_string()))?;
        let key = store
            .fleet_key(HTTP_KEY, &fresh)
            .map_err(|e| CliError::Local(e.to_string()))?
            .unwrap_or_default();
        return front::conversation::Credentials::from_hex(&key).map_err(|e| {
            CliError::Local(format!("the fleet's HTTP key in the shared store: {e}"))
        });
    }
    let state = &gate.state;
    let dir = crate::host::create_state_dir(state)?;
    let path = dir.join(HTTP_KEY);
    let bad = |why: &str| CliError::Local(format!("{}: {why}", path.display()));
    let key = match dir.read(HTTP_KEY, 4096)? {
        Some(found) => {
            if found.mode & 0o077 != 0 {
                return Err(bad(
                    "others may read it (it must be 0600); remove it to make a new key, which \
                     ends every conversation credential made with this one",
                ));
            }
            String::from_utf8(found.bytes).map_err(|_| bad("it is not text"))?
        }
        None => {
            let key =
                front::conversation::new_key().map_err(|e| CliError::Unexpected(e.to_string()))?;
            match dir.create_new(HTTP_KEY, key.as_bytes(), 0o600) {
                Ok(()) => key,
                // Another front made it first: use theirs.
                Err(statedir::file::Error::Exists { .. }) => {
                    let found = dir
                        .read(HTTP_KEY, 4096)?
                        .ok_or_else(|| bad("it vanished"))?;
                    String::from_utf8(found.bytes).map_err(|_| bad("it is not text"))?
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    front::conversation::Credentials::from_hex(&key).map_err(|e| bad(&e.to_string()))
}

/// Confines this process (`front::confine`), refusing to serve unconfined; says so on
/// stderr. With `probe`, then tries to open that file and says what happened (the tests'
/// proof that the front cannot open a file).
fn confine(probe: Option<&std::path::Path>) -> Result<(), CliError> {
    let threads = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse::<u32>().ok())
        })
        .unwrap_or(0);
    // Landlock and seccomp bind the calling thread and those it starts after: a thread
    // started before would stay outside. There must be none.
    if threads != 1 {
        return Err(CliError::Local(format!(
            "the front has {threads} threads before it confines itself; refusing to serve"
        )));
    }
    let confined = front::confine::confine()
        .map_err(|e| CliError::Local(format!("the front cannot confine itself: {e}")))?;
    front::note!("boxmaker mcp: front confined: {confined}");
    if let Some(path) = probe {
        match std::fs::File::open(path) {
            Ok(_) => front::note!("boxmaker mcp: probe: opened {}", path.display()),
            Err(e) => front::note!("boxmaker mcp: probe: cannot open {}: {e}", path.display()),
        }
    }
    Ok(())
}
