//! `boxmaker add URL`: a remote MCP server behind boxmaker in one command (docs/spec.md §7);
//! `boxmaker add -- COMMAND…` the same for a stdio server (its `[[tool]] mcp = [...]` and the
//! grant; no egress rule: its box has no network until the person gives it one).
//!
//! It writes into the person's `boxmaker.toml` — everything there kept as it was, byte for
//! byte (`toml_edit`: the new tables are appended at the end, each after a comment that says
//! why it is so) — four things:
//!
//! - the `[[tool]]` with the URL, named after the host (or `--name`), its answers
//!   `untrusted` (they come from someone else's machine; `--trusted` says otherwise),
//!   `pin = true` (its tools as first listed, or not at all), and `egress = ["NAME"]` (it
//!   reaches its own rule and no other, so a redirect to another cleared host is refused);
//! - the `[[egress]]` rule naming that host and port, cleared for `--class` (default
//!   `public`: the host is someone else's, and boxmaker's default file tools read
//!   `internal` data — a session that has read any of it cannot send it there until the
//!   person raises the clearance), with `trusted = true` under `--trusted` (what a
//!   destination answers is untrusted unless its rule says so);
//! - a `[[grant]]` `NAME_*` with `effect = "ask"`: a new server's tools are not trusted
//!   until the person says so, so each call waits for a person until they change it;
//! - with `--bearer-env VAR`, a `[[secret]]` read from that variable and sent as the
//!   tool's `bearer`.
//!
//! Before anything is written, the server is asked once (`runner::downstream::probe`, the
//! remote client's own egress-checked connection), unless `--no-probe`: a server that wants
//! an OAuth sign-in is added and the sign-in command printed; one that refuses without
//! naming a sign-in is not added (it needs `--bearer-env`); one that cannot be reached, or
//! answers anything but 2xx or 401, is not added. The edited text must load with the config crate (from a temporary file
//! beside the config) before it replaces the file; the old file is kept as
//! `boxmaker.toml.bak`. Both are written the one way (`statedir::file`): a config that is a
//! link, or a link at `boxmaker.toml.bak`, is refused in one sentence — the default config
//! is in the project, where the repository can ship `boxmaker.toml.bak ->
//! ~/.ssh/authorized_keys` — and the sentence names the file a config link leads to, for a
//! person whose config it is to give it with `--config`. Then discovery runs, as
//! `boxmaker tools refresh` does for this one server, and its tools are printed.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use config::{Config, Host, RemoteUrl};
use proto::DataClass;
use runner::downstream::probe::Probe;
use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table, value};

use statedir::file::{Backup, Dir, Mode};

use crate::error::CliError;

/// The largest config `add` edits.
const MAX_CONFIG: u64 = 64 << 20;

/// The longest URL `add` takes.
pub const MAX_URL: usize = 2048;

/// Put a remote MCP server behind boxmaker: its tool, where it may be reached, and a grant
/// that asks a person.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The server's URL: https://HOST[:PORT]/PATH, or plain http:// to an address (a server
    /// on loopback, such as http://127.0.0.1:8931/mcp).
    #[arg(value_name = "URL", required_unless_present = "command")]
    url: Option<String>,
    /// A stdio server instead of a URL: its command line, after `--` (it runs in a box, as
    /// `mcp = [...]` does).
    #[arg(last = true, value_name = "COMMAND", conflicts_with_all = ["url", "class", "bearer_env"])]
    command: Vec<String>,
    /// The tool's name, and the prefix of its tools' names (default: from the URL's host).
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// The highest label a call may have and still reach the server: public, internal,
    /// confidential or secret.
    #[arg(long, value_name = "CLASS", default_value = "public")]
    class: DataClass,
    /// Its answers come from outside: they mark the session untrusted (the default).
    #[arg(long, conflicts_with = "trusted")]
    untrusted: bool,
    /// Its answers are as trusted as your own data (a server you run yourself).
    #[arg(long)]
    trusted: bool,
    /// The variable of boxmaker's environment that holds the server's token, sent as
    /// `Authorization: Bearer …` (a [[secret]] is written; never the value).
    #[arg(long, value_name = "VAR")]
    bearer_env: Option<String>,
    /// Do not contact the server: write the config only (its tools are listed by
    /// `boxmaker tools refresh`).
    #[arg(long)]
    no_probe: bool,
    /// The config file (made from `boxmaker init`'s default when it does not exist).
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
}

/// The names `add` writes for one server.
#[derive(Debug, Clone)]
struct Names {
    tool: String,
    secret: Option<String>,
}

/// What is added: a remote server or a stdio one.
#[derive(Debug, Clone)]
enum Server {
    Remote(RemoteUrl),
    Stdio(Vec<String>),
}

pub fn run(args: &AddArgs) -> Result<u8, CliError> {
    let server = match &args.url {
        Some(u) => Server::Remote(check_url(u)?),
        None => Server::Stdio(args.command.clone()),
    };
    let path = &args.config;
    let (dir, name) = config_dir(path)?;
    let (old, existed) = match read_config(dir.as_ref(), &name, path)? {
        Some(t) => (t, true),
        None => (config::DEFAULT_CONFIG.to_string(), false),
    };
    let base = base_of(path);
    // It must load (`add` edits a working file, never a broken one; what is broken is said
    // first), and be the person's (docs/spec.md §6, "Whose config"): `add` trusts what it
    // writes, so adding to a shipped config would make the repository's words the person's.
    let before = config::parse(&old, &path.display().to_string(), &base)?;
    if existed {
        config::check_trusted(path, &old)?;
    }
    let names = names(args, &server, &before)?;
    if let Some(var) = &args.bearer_env
        && std::env::var_os(var).is_none()
        && !args.no_probe
    {
        return Err(CliError::Usage(format!(
            "--bearer-env {var}: boxmaker's environment has no variable {var} (export it first, \
             or add --no-probe to write the config without asking the server)"
        )));
    }
    let mut new = edit(&old, &server, &names, args, false)?;
    let after = config::parse(&new, &path.display().to_string(), &base).map_err(|e| {
        CliError::Local(format!(
            "the edited config would not load ({e}); nothing was written"
        ))
    })?;
    let after = Arc::new(after);
    let tool = after
        .tool(&names.tool)
        .cloned()
        .ok_or_else(|| CliError::Local("the edited config lost the new tool".into()))?;
    let me = crate::cmd_client::this_binary()?;
    let abs_config = std::path::absolute(path).unwrap_or_else(|_| path.clone());
    let mut runner = None;
    let mut sign_in = None;
    if !args.no_probe {
        crate::host::create_state_dir(&after.gate.state)?;
        runner = Some(runner::Runner::new(after.clone(), &after.gate.state)?);
    }
    if let (Some(r), Server::Remote(url)) = (&runner, &server) {
        match r.probe_remote(&tool) {
            Ok(Probe::Answered(status)) if (200..300).contains(&status) => {}
            Ok(Probe::Speaks(version)) => {
                errln!("boxmaker: {} speaks MCP {version}", url.text);
            }
            Ok(Probe::NoVersion { supported }) => {
                return Err(CliError::Local(format!(
                    "{} speaks none of the MCP revisions boxmaker speaks ({}): it supports {}; \
                     nothing was written",
                    url.text,
                    runner::SPOKEN_VERSIONS.join(", "),
                    supported
                )));
            }
            Ok(Probe::Answered(status)) => {
                // A wrong path (404), a method the server refuses, a broken server: its tools
                // could not be listed either, and a tool that cannot work is not written.
                return Err(CliError::Local(format!(
                    "{} answered HTTP {status} to MCP's first requests (`server/discover`, then \
                     `initialize`: is it the server's MCP endpoint?); nothing was written \
                     (--no-probe adds it without asking it)",
                    url.text
                )));
            }
            Ok(Probe::SignIn { metadata }) => {
                // The tool is written to sign in with OAuth; that config must load too.
                new = edit(&old, &server, &names, args, true)?;
                config::parse(&new, &path.display().to_string(), &base).map_err(|e| {
                    CliError::Local(format!(
                        "the edited config would not load ({e}); nothing was written"
                    ))
                })?;
                sign_in = Some(metadata);
            }
            Ok(Probe::Credential { challenge }) => {
                let said = if challenge.is_empty() {
                    String::new()
                } else {
                    format!(", {challenge}")
                };
                return Err(CliError::Local(match &args.bearer_env {
                    Some(var) => format!(
                        "{} refused the token in ${var} (HTTP 401{said}); nothing was written",
                        url.text
                    ),
                    None => format!(
                        "{} asks for a credential (HTTP 401{said}) and names no OAuth sign-in; \
                         nothing was written: add it with --bearer-env VAR, VAR holding its token",
                        url.text
                    ),
                }));
            }
            Err(why) => {
                return Err(CliError::Local(format!(
                    "cannot reach {}: {why}; nothing was written (--no-probe adds it without \
                     asking it)",
                    url.text
                )));
            }
        }
    }
    // The one way (`statedir::file`): a temporary file beside the config, loaded as a
    // config, the old file kept as `FILE.bak` beside it, then renamed over it.
    let dir = match dir {
        Some(d) => d,
        None => Dir::make(&base, 0o755)?,
    };
    let backup = format!("{name}.bak");
    dir.write(
        &name,
        new.as_bytes(),
        Mode::Keep(0o644),
        Some(Backup::Over(&backup)),
        |written| {
            config::load_untrusted(written)
                .map(drop)
                .map_err(|e| format!("the edited config would not load ({e})"))
        },
    )?;
    config::trust(path, &new)?;
    report(&names, &server, args, existed, path);
    if let Some(metadata) = sign_in {
        outln!(
            "{} signs in with OAuth (its metadata: {metadata}): sign in with `{} auth login {} \
             --config {}`; its tools are listed once you have",
            names.tool,
            me.display(),
            names.tool,
            abs_config.display()
        );
        return Ok(0);
    }
    let Some(runner) = runner else {
        outln!(
            "not asked (--no-probe): `{} tools refresh --config {}` lists its tools",
            me.display(),
            abs_config.display()
        );
        return Ok(0);
    };
    discover(&runner, &after, &names.tool, &me, &abs_config)
}

/// Asks the new server for its tools, records them as `tools refresh` does, and prints them.
fn discover(
    runner: &runner::Runner,
    cfg: &Config,
    name: &str,
    me: &Path,
    config: &Path,
) -> Result<u8, CliError> {
    let tool = cfg
        .tool(name)
        .ok_or_else(|| CliError::Local(format!("the config has no tool {name:?}")))?;
    let Some(argv) = tool.kind.server_argv() else {
        return Err(CliError::Local(format!("{name} is not a server")));
    };
    let found = runner.discover(tool).and_then(|tools| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        catalog::ToolsFile::update(&cfg.gate.state, |f| f.record(&argv, tools, now))
            .map_err(|e| e.to_string())
    });
    if let Err(why) = found {
        errln!(
            "boxmaker: {name} was added, but its tools could not be listed: {why}; `{} tools \
             refresh --config {}` tries again",
            me.display(),
            config.display()
        );
        return Ok(1);
    }
    let catalog = runner
        .catalog()
        .map_err(|e| CliError::Local(e.to_string()))?;
    let mine: Vec<_> = catalog
        .entries()
        .iter()
        .filter(|e| e.server == name)
        .collect();
    outln!(
        "{name} offers {} tool{}:",
        mine.len(),
        if mine.len() == 1 { "" } else { "s" }
    );
    for e in mine {
        let about = e
            .shown
            .as_ref()
            .and_then(|d| d.description.as_deref())
            .unwrap_or_default();
        let about = proto::shown::for_person(about.lines().next().unwrap_or_default()).text;
        outln!("  {:<32} {}", e.exposed, shorten(&about, 100));
    }
    for p in catalog.problems.iter().filter(|p| p.contains(name)) {
        outln!("not offered: {p}");
    }
    Ok(0)
}

/// What was written, one line a table.
fn report(names: &Names, server: &Server, args: &AddArgs, existed: bool, path: &Path) {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    if existed {
        outln!(
            "added {} to {} (the file as it was: {})",
            names.tool,
            abs.display(),
            abs.with_file_name(format!(
                "{}.bak",
                abs.file_name().unwrap_or_default().to_string_lossy()
            ))
            .display()
        );
    } else {
        outln!(
            "wrote {} (boxmaker init's default) with {}",
            abs.display(),
            names.tool
        );
    }
    let answers = if args.trusted { "trusted" } else { "untrusted" };
    match server {
        Server::Remote(url) => {
            outln!(
                "  [[tool]]   {}: {}, answers {answers}, tools pinned as first listed",
                names.tool,
                url.text
            );
            outln!(
                "  [[egress]] {}: {} port {}, cleared for {}{}",
                names.tool,
                url.host_text(),
                url.port,
                args.class,
                if args.class == DataClass::Public {
                    " (a session that has read anything above public cannot reach it; --class \
                     or the rule's `class` raises that)"
                } else {
                    ""
                }
            );
        }
        Server::Stdio(argv) => {
            outln!(
                "  [[tool]]   {}: `{}` in a box (no network, every mount), answers {answers}, \
                 tools pinned as first listed",
                names.tool,
                shorten(&proto::shown::for_person(&argv.join(" ")).text, 120)
            );
        }
    }
    outln!(
        "  [[grant]]  {}_*: ask (each call waits for a person; change `effect` once you trust \
         its tools)",
        names.tool
    );
    if let (Some(secret), Some(var)) = (&names.secret, &args.bearer_env) {
        outln!("  [[secret]] {secret}: ${var}, sent as its bearer token");
    }
}

/// Checks the URL before anything else: one sentence when it is not one boxmaker can use.
fn check_url(text: &str) -> Result<RemoteUrl, CliError> {
    let refuse = |why: &str| {
        CliError::Usage(format!(
            "cannot add the URL {}: it {why}",
            shown_briefly(text)
        ))
    };
    if text.len() > MAX_URL {
        return Err(refuse(&format!(
            "is {} bytes long, over the {MAX_URL} a server's URL may be",
            text.len()
        )));
    }
    // Read as the config reads it: a scheme other than https (or http to an address), user
    // info, a control character or white space are refused here, before any file is read.
    RemoteUrl::parse(text).map_err(|why| refuse(&why))
}

/// `text` for a message: escaped as every text shown is, and at most 80 characters.
fn shown_briefly(text: &str) -> String {
    let shown = proto::shown::for_person(text).text;
    format!("\"{}\"", shorten(&shown, 80))
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The directory relative paths in the config start at, as `config::load` reads it.
fn base_of(path: &Path) -> PathBuf {
    let base = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf())
}

/// The config's directory, held (`None` when it does not exist yet), and its file name.
fn config_dir(path: &Path) -> Result<(Option<Dir>, String), CliError> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--config {}: a config is a file with a UTF-8 name",
                path.display()
            ))
        })?
        .to_string();
    match Dir::open(&base_of(path)) {
        Ok(d) => Ok((Some(d), name)),
        Err(e) if e.is_not_found() => Ok((None, name)),
        Err(e) => Err(e.into()),
    }
}

/// The config's text, `None` when there is none yet. A config that is a link is refused:
/// `add` rewrites the file it is given, never the one a link leads to (the default config
/// is in the project, where the repository can ship `boxmaker.toml -> ~/.ssh/…`); the
/// sentence names that file, for the person to give it with `--config` when it is theirs.
fn read_config(dir: Option<&Dir>, name: &str, path: &Path) -> Result<Option<String>, CliError> {
    let Some(dir) = dir else {
        return Ok(None);
    };
    let found = match dir.read(name, MAX_CONFIG) {
        Ok(f) => f,
        Err(statedir::file::Error::Link { to, .. }) => {
            let real = std::fs::canonicalize(path);
            return Err(CliError::Usage(match real {
                Ok(real) => format!(
                    "{} is a symbolic link (to {}); `add` rewrites only the config file itself, \
                     never through a link (a repository can ship one): if that file is yours, \
                     run it again with --config {}",
                    path.display(),
                    to.display(),
                    real.display()
                ),
                Err(_) => format!(
                    "{} is a symbolic link to {}, which does not exist; `add` makes no config \
                     through a link",
                    path.display(),
                    to.display()
                ),
            }));
        }
        Err(e) => return Err(e.into()),
    };
    let Some(found) = found else {
        return Ok(None);
    };
    String::from_utf8(found.bytes).map(Some).map_err(|_| {
        CliError::Local(format!(
            "{} is not UTF-8 text; it was left as it is",
            path.display()
        ))
    })
}

/// The tool's name (given or derived from the host) and its secret's, each checked against
/// what the config already has.
fn names(args: &AddArgs, server: &Server, cfg: &Config) -> Result<Names, CliError> {
    let tool = match &args.name {
        Some(n) => {
            if !config::is_valid_tool_name(n) || n.len() > 62 {
                return Err(CliError::Usage(format!(
                    "--name {}: a name is 1 to 62 ASCII letters, digits, `_` or `-`",
                    shown_briefly(n)
                )));
            }
            n.clone()
        }
        None => match server {
            Server::Remote(url) => name_from_host(&url.host),
            Server::Stdio(argv) => name_from_command(argv),
        },
    };
    if cfg.tool(&tool).is_some() {
        return Err(CliError::Usage(format!(
            "the config already has a tool named {tool:?}; give this one another with --name"
        )));
    }
    if cfg.egress.iter().any(|r| r.name.as_deref() == Some(&tool)) {
        return Err(CliError::Usage(format!(
            "the config already has an [[egress]] rule named {tool:?}; give the tool another \
             name with --name"
        )));
    }
    let secret = match &args.bearer_env {
        None => None,
        Some(var) => {
            let ok = var
                .bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && var.len() <= 128;
            if !ok {
                return Err(CliError::Usage(format!(
                    "--bearer-env {}: a variable name is letters, digits and `_`, not starting \
                     with a digit",
                    shown_briefly(var)
                )));
            }
            let s = format!("{tool}-token");
            if !config::is_valid_tool_name(&s) {
                return Err(CliError::Usage(format!(
                    "the tool's name {tool:?} is too long to name its secret {s:?}; give a \
                     shorter one with --name"
                )));
            }
            if cfg.secret(&s).is_some() {
                return Err(CliError::Usage(format!(
                    "the config already has a [[secret]] named {s:?}; give the tool another \
                     name with --name"
                )));
            }
            Some(s)
        }
    };
    Ok(Names { tool, secret })
}

/// A tool name from a host: the name a person would call the service by. For a name, its
/// registrable part without the top-level domain (`api.githubcopilot.com` → `githubcopilot`,
/// `mcp.notion.com` → `notion`, `mcp.example.co.uk` → `example`); for an address, `mcp-`
/// and the address (`127.0.0.1` → `mcp-127-0-0-1`).
fn name_from_host(host: &Host) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect::<String>()
            .trim_matches('-')
            .chars()
            .take(40)
            .collect()
    };
    match host {
        Host::Address(a) => format!("mcp-{}", clean(&a.to_string())),
        Host::Name(n) => {
            let mut labels: Vec<&str> = n.trim_end_matches('.').split('.').collect();
            if labels.len() > 1 {
                labels.pop();
            }
            // A second-level domain under a country's (`co.uk`, `com.au`): the label before it.
            if labels.len() > 1 && labels.last().is_some_and(|l| l.len() <= 3) {
                labels.pop();
            }
            let name = clean(labels.last().copied().unwrap_or("remote"));
            if name.is_empty() {
                "remote".into()
            } else {
                name
            }
        }
    }
}

/// A tool name from a stdio server's command line: the package a launcher runs
/// (`npx -y @modelcontextprotocol/server-filesystem /data` → `filesystem`, `uvx
/// mcp-server-fetch` → `fetch`), else the program's or script's file name without
/// `mcp-server-`, `server-`, `-mcp` and the like.
fn name_from_command(argv: &[String]) -> String {
    const LAUNCHERS: &[&str] = &[
        "npx", "uvx", "pipx", "bunx", "pnpx", "pnpm", "yarn", "deno", "node", "python", "python3",
        "uv", "bun",
    ];
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let mut words = argv.iter().map(String::as_str);
    let program = base(words.next().unwrap_or("server"));
    let subject = if LAUNCHERS.contains(&program.as_str()) || program.starts_with("python3.") {
        words
            .find(|w| !w.starts_with('-') && !matches!(*w, "run" | "exec" | "dlx" | "x"))
            .map_or(program.clone(), base)
    } else {
        program
    };
    // `@scope/name@1.2` → `name`; `name==1.2` → `name`; `script.py` → `script`.
    let mut name = subject
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .split(['@', '='])
        .find(|p| !p.is_empty())
        .unwrap_or_default()
        .to_ascii_lowercase();
    for ext in [".py", ".js", ".mjs", ".ts"] {
        if let Some(n) = name.strip_suffix(ext) {
            name = n.to_string();
        }
    }
    for affix in ["mcp-server-", "mcp_server_", "server-", "mcp-"] {
        if let Some(n) = name.strip_prefix(affix) {
            name = n.to_string();
        }
    }
    for affix in [
        "-mcp-server",
        "_mcp_server",
        "-mcp",
        "_mcp",
        "-server",
        "_server",
    ] {
        if let Some(n) = name.strip_suffix(affix) {
            name = n.to_string();
        }
    }
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    let name = name.trim_matches('-');
    if name.is_empty() {
        "server".into()
    } else {
        name.to_string()
    }
}

/// The config text with the new tables appended (see the module): what was there is kept as
/// it was, and the file's own last comments stay before them.
fn edit(
    old: &str,
    server: &Server,
    names: &Names,
    args: &AddArgs,
    oauth: bool,
) -> Result<String, CliError> {
    let mut doc: DocumentMut = old
        .parse()
        .map_err(|e| CliError::Local(format!("cannot edit the config: {e}")))?;
    let mut last = 0;
    crate::cmd_client::last_position(doc.as_table(), &mut last);
    let trailing = doc.trailing().as_str().unwrap_or_default().to_string();
    doc.set_trailing("");
    let name = &names.tool;
    let today = crate::when::local(crate::when::now());
    let today = today.get(..10).unwrap_or(&today);
    // A blank line between the file's end (its last comments included) and what is added.
    let lead = if trailing.ends_with("\n\n") || (trailing.is_empty() && old.trim().is_empty()) {
        trailing.clone()
    } else if trailing.is_empty() || trailing.ends_with('\n') {
        format!("{trailing}\n")
    } else {
        format!("{trailing}\n\n")
    };
    let answers = if args.trusted {
        "you said they are trusted (--trusted)"
    } else {
        "they come from outside (untrusted)"
    };

    let mut tool = Table::new();
    tool.insert("name", value(name.as_str()));
    let mut tables = Vec::new();
    match server {
        Server::Remote(url) => {
            tool.insert("url", value(url.text.as_str()));
            tool.insert("untrusted", value(!args.trusted));
            tool.insert("pin", value(true));
            tool.insert("egress", value(Array::from_iter([name.as_str()])));
            if let Some(secret) = &names.secret {
                tool.insert("bearer", value(secret.as_str()));
            } else if oauth {
                // It named an OAuth sign-in: `boxmaker auth login NAME` signs in
                // (docs/spec.md §3.9, "Signing in").
                tool.insert("oauth", value(true));
            }
            tool.decor_mut().set_prefix(format!(
                "{lead}# Added by `boxmaker add` on {today}: the remote MCP server at {}.\n\
                 # Its answers: {answers}. Its tools are pinned as first listed (`boxmaker\n\
                 # tools diff` shows a change), and it reaches only its own [[egress]] rule below.\n",
                comment_safe(&url.text)
            ));
            tables.push(("tool", tool));

            let mut rule = Table::new();
            rule.insert("name", value(name.as_str()));
            rule.insert(
                "host",
                value(match &url.host {
                    Host::Name(n) => n.clone(),
                    Host::Address(a) => a.to_string(),
                }),
            );
            rule.insert("ports", value(Array::from_iter([i64::from(url.port)])));
            if url.tls && url.port != 443 {
                // Its connections are TLS tunnels, which a rule allows only to `tunnel_ports`.
                rule.insert(
                    "tunnel_ports",
                    value(Array::from_iter([i64::from(url.port)])),
                );
            }
            rule.insert("class", value(args.class.as_str()));
            if args.trusted {
                // What a destination answers is untrusted unless its rule says otherwise
                // (docs/spec.md §3.6): the server's answers come through this rule.
                rule.insert("trusted", value(true));
            }
            rule.decor_mut().set_prefix(format!(
                "\n# Where {name} may be reached: cleared for {}. A session that has read anything\n\
                 # above that may not reach it{}.\n",
                args.class,
                if args.class == DataClass::Public {
                    " (your files are `internal` by default); raise `class` to let it"
                } else {
                    ""
                }
            ));
            tables.push(("egress", rule));
        }
        Server::Stdio(argv) => {
            tool.insert(
                "mcp",
                value(Array::from_iter(argv.iter().map(String::as_str))),
            );
            tool.insert("untrusted", value(!args.trusted));
            tool.insert("pin", value(true));
            tool.decor_mut().set_prefix(format!(
                "{lead}# Added by `boxmaker add` on {today}: the stdio MCP server `{}`.\n\
                 # It runs in a box of each session's own: the session's /work and the mounts\n\
                 # (`mounts = [...]` picks them), no network (`network = true` and an\n\
                 # [[egress]] rule let it out). Its answers: {answers}.\n\
                 # Its tools are pinned as first listed (`boxmaker tools diff` shows a change).\n",
                comment_safe(&shorten(&argv.join(" "), 100))
            ));
            tables.push(("tool", tool));
        }
    }

    let mut grant = Table::new();
    grant.insert("tool", value(format!("{name}_*")));
    grant.insert("effect", value("ask"));
    grant.decor_mut().set_prefix(
        "\n# A new server's tools are not trusted until you say so: each call waits for a\n\
         # person (`boxmaker approvals`). Write a grant per tool with `allow` once you trust it.\n",
    );

    tables.push(("grant", grant));
    if let (Some(secret), Some(var)) = (&names.secret, &args.bearer_env) {
        let mut s = Table::new();
        s.insert("name", value(secret.as_str()));
        s.insert("env", value(var.as_str()));
        s.decor_mut().set_prefix(format!(
            "\n# {name}'s token, read from ${var} by boxmaker alone: never shown to the model,\n\
             # never written anywhere, redacted from every answer.\n"
        ));
        tables.push(("secret", s));
    }
    for (i, (key, mut table)) in tables.into_iter().enumerate() {
        table.set_position(Some(last + 1 + isize::try_from(i).unwrap_or(0)));
        match doc.get_mut(key) {
            None => {
                let mut a = ArrayOfTables::new();
                a.push(table);
                doc.insert(key, Item::ArrayOfTables(a));
            }
            Some(Item::ArrayOfTables(a)) => a.push(table),
            Some(_) => {
                return Err(CliError::Usage(format!(
                    "the config writes `{key}` as something other than [[{key}]] tables; write \
                     it as [[{key}]] tables to use `boxmaker add`"
                )));
            }
        }
    }
    Ok(doc.to_string())
}

/// Text in a comment: a line break would end the comment and a control character is not
/// allowed in one (a URL has none, it is checked visible ASCII; a command line may).
fn comment_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_service_not_its_subdomain() {
        let n = |h: &str| name_from_host(&config::egress::classify_host(h).unwrap());
        assert_eq!(n("api.githubcopilot.com"), "githubcopilot");
        assert_eq!(n("mcp.notion.com"), "notion");
        assert_eq!(n("mcp.linear.app"), "linear");
        assert_eq!(n("mcp.example.co.uk"), "example");
        assert_eq!(n("127.0.0.1"), "mcp-127-0-0-1");
        assert_eq!(n("::1"), "mcp-1");
        assert_eq!(n("localhost"), "localhost");
    }

    #[test]
    fn names_come_from_the_package_a_command_runs() {
        let n = |argv: &[&str]| {
            name_from_command(&argv.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        };
        assert_eq!(
            n(&[
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/data"
            ]),
            "filesystem"
        );
        assert_eq!(n(&["uvx", "mcp-server-fetch"]), "fetch");
        assert_eq!(n(&["uvx", "mcp-server-time==2026.1.1"]), "time");
        assert_eq!(
            n(&["/usr/bin/python3", "/opt/servers/hostile_server.py", "well"]),
            "hostile"
        );
        assert_eq!(n(&["/usr/local/bin/github-mcp-server", "stdio"]), "github");
        assert_eq!(n(&["node", "dist/index.js"]), "index");
        assert_eq!(n(&["/usr/bin/python3", "-m", "mcp_server_git"]), "git");
    }
}
