//! `boxmaker client add|remove|list`: boxmaker in an MCP client's own configuration, in the
//! file and format that client documents (docs/spec.md §7), as `thv client register` does
//! for ToolHive.
//!
//! Where each client keeps its MCP servers, as its documentation says (looked up 2026-12):
//!
//! | client | `--scope user` (default) | `--scope project` (this directory) | servers key, entry |
//! |---|---|---|---|
//! | `claude-code` | `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when set) | `.mcp.json` | `mcpServers`, `{"type":"stdio","command","args"}` |
//! | `claude-desktop` | `$XDG_CONFIG_HOME/Claude/claude_desktop_config.json` (`~/.config/…`) | — | `mcpServers`, `{"command","args"}` |
//! | `codex` | `$CODEX_HOME/config.toml` (`~/.codex/…`) | `.codex/config.toml` | `[mcp_servers.NAME]`, `command`, `args` |
//! | `cursor` | `~/.cursor/mcp.json` | `.cursor/mcp.json` | `mcpServers`, `{"command","args"}` |
//! | `vscode` | `$XDG_CONFIG_HOME/Code/User/mcp.json` (the default profile) | `.vscode/mcp.json` | `servers`, `{"type":"stdio","command","args"}` |
//!
//! Sources: Claude Code, code.claude.com/docs/en/mcp ("MCP installation scopes": local and
//! user in `~/.claude.json`, project in `.mcp.json` at the project root); Claude Desktop,
//! modelcontextprotocol.io/quickstart/user (`claude_desktop_config.json`, `mcpServers`; on
//! Linux under the XDG config directory, as the Linux builds keep it); Codex,
//! developers.openai.com/codex/mcp (`~/.codex/config.toml`, `[mcp_servers.<name>]` with
//! `command` and `args`; `.codex/config.toml` for a trusted project; `CODEX_HOME` moves the
//! directory); Cursor, cursor.com/docs/mcp (`~/.cursor/mcp.json` for every project,
//! `.cursor/mcp.json` for one, `mcpServers`); VS Code,
//! code.visualstudio.com/docs/copilot/reference/mcp-configuration (`.vscode/mcp.json` or
//! `mcp.json` in the user profile, a top-level `servers` object, `"type": "stdio"`
//! required).
//!
//! The entry runs `/abs/boxmaker mcp --config /abs/boxmaker.toml` (this binary, and the config,
//! which must load). Everything else in the file is kept: a JSON file keeps its keys in their
//! order (an order-keeping value of our own: serde_json's map sorts them), a TOML file keeps
//! its comments and layout (`toml_edit`). A file that does not parse — VS Code allows
//! comments in its `mcp.json`, which this does not keep — is refused in one sentence and
//! never written. A change is written the one way boxmaker writes a file
//! (`statedir::file`): a temporary file beside it (the file's mode and owner kept), parsed
//! again, the old file kept as `FILE.bak-<local time>` beside it, then renamed over it.
//! Adding what is already there changes nothing and says so; a different server under the
//! same name is refused (`--name` picks another).
//!
//! Links (docs/spec.md §7): a user's file is followed through the person's links, on
//! purpose — a dotfile manager keeps `~/.claude.json` behind one, and a repository cannot
//! put a link in the home directory — and its backup sits beside the file the link names.
//! A project's file is the repository's to ship, link and all (`.mcp.json ->
//! ~/.docker/config.json`, `.vscode -> ~/.config/Code/User`): it is followed only while it
//! stays beneath the project's real path, every directory below the project then opened
//! without following a link; anything else is refused in one sentence, nothing written. A
//! link to nothing is refused either way.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use toml_edit::{Array, DocumentMut, Item, Table, value};

use statedir::file::{Backup, Dir, Mode, Reach};

use crate::error::CliError;

/// The largest client configuration file read (`~/.claude.json` keeps project history too).
const MAX_FILE: u64 = 64 << 20;

/// Put boxmaker into an MCP client's own configuration, take it out, or list where it is.
#[derive(Debug, clap::Args)]
pub struct ClientArgs {
    #[command(subcommand)]
    what: ClientCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ClientCommand {
    /// Write boxmaker into CLIENT's MCP configuration (its own file, in its format).
    Add(Target),
    /// Take boxmaker out of CLIENT's MCP configuration.
    Remove(Target),
    /// Which clients' configurations run boxmaker, and with which config.
    List,
}

#[derive(Debug, clap::Args)]
struct Target {
    /// The MCP client.
    #[arg(value_enum, value_name = "CLIENT")]
    client: Client,
    /// The client's configuration for you (user) or for the project in this directory.
    #[arg(long, value_enum, default_value = "user")]
    scope: Scope,
    /// The server's name in the client's configuration.
    #[arg(long, value_name = "NAME", default_value = "boxmaker")]
    name: String,
    /// The boxmaker config the client's sessions use.
    #[arg(long, value_name = "FILE", default_value = config::FILE_NAME)]
    config: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Client {
    ClaudeCode,
    ClaudeDesktop,
    Codex,
    Cursor,
    Vscode,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Scope {
    User,
    Project,
}

impl Client {
    const ALL: [Client; 5] = [
        Client::ClaudeCode,
        Client::ClaudeDesktop,
        Client::Codex,
        Client::Cursor,
        Client::Vscode,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Codex => "codex",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
        }
    }

    /// The key the servers are under, for a JSON file.
    fn servers_key(self) -> &'static str {
        match self {
            Client::Vscode => "servers",
            _ => "mcpServers",
        }
    }

    fn is_toml(self) -> bool {
        self == Client::Codex
    }

    /// Where the client keeps its MCP servers for `scope` (see the module's table).
    fn file(self, scope: Scope) -> Result<PathBuf, CliError> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = || {
            var("HOME").ok_or_else(|| {
                CliError::Local("HOME is not set, so the client's file cannot be found".into())
            })
        };
        let xdg = || -> Result<PathBuf, CliError> {
            match var("XDG_CONFIG_HOME") {
                Some(p) if p.is_absolute() => Ok(p),
                _ => Ok(home()?.join(".config")),
            }
        };
        let here = || {
            std::env::current_dir()
                .map_err(|e| CliError::Local(format!("cannot tell which directory this is: {e}")))
        };
        Ok(match (self, scope) {
            (Client::ClaudeCode, Scope::User) => match var("CLAUDE_CONFIG_DIR") {
                Some(d) => d.join(".claude.json"),
                None => home()?.join(".claude.json"),
            },
            (Client::ClaudeCode, Scope::Project) => here()?.join(".mcp.json"),
            (Client::ClaudeDesktop, Scope::User) => {
                xdg()?.join("Claude").join("claude_desktop_config.json")
            }
            (Client::ClaudeDesktop, Scope::Project) => {
                return Err(CliError::Usage(
                    "Claude Desktop has no project configuration; use --scope user".into(),
                ));
            }
            (Client::Codex, Scope::User) => match var("CODEX_HOME") {
                Some(d) => d.join("config.toml"),
                None => home()?.join(".codex").join("config.toml"),
            },
            (Client::Codex, Scope::Project) => here()?.join(".codex").join("config.toml"),
            (Client::Cursor, Scope::User) => home()?.join(".cursor").join("mcp.json"),
            (Client::Cursor, Scope::Project) => here()?.join(".cursor").join("mcp.json"),
            (Client::Vscode, Scope::User) => xdg()?.join("Code").join("User").join("mcp.json"),
            (Client::Vscode, Scope::Project) => here()?.join(".vscode").join("mcp.json"),
        })
    }

    /// Where the client keeps the prompt hook that hands the person's words to the gate
    /// (docs/spec.md §3.10), if it has one boxmaker can install: Claude Code's settings,
    /// `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR/settings.json` when set) for the
    /// user, `.claude/settings.json` for the project (code.claude.com/docs/en/settings and
    /// …/hooks: `hooks.UserPromptSubmit`, a list of `{"hooks": [{"type": "command",
    /// "command"}]}`). Codex's `UserPromptSubmit` also fires for the prompts Codex writes to
    /// its subagents, with nothing to tell them from the person's (docs/spec.md §3.10), so
    /// none is installed there; Cursor, VS Code and Claude Desktop have no prompt hook:
    /// `boxmaker intent --session` is for them.
    fn hook_file(self, scope: Scope) -> Result<Option<PathBuf>, CliError> {
        if self != Client::ClaudeCode {
            return Ok(None);
        }
        let dir = match scope {
            Scope::User => match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
                Some(d) => PathBuf::from(d),
                None => PathBuf::from(std::env::var_os("HOME").ok_or_else(|| {
                    CliError::Local("HOME is not set, so the client's file cannot be found".into())
                })?)
                .join(".claude"),
            },
            Scope::Project => std::env::current_dir()
                .map_err(|e| CliError::Local(format!("cannot tell which directory this is: {e}")))?
                .join(".claude"),
        };
        Ok(Some(dir.join("settings.json")))
    }

    /// `path` (this client's file for `scope`) opened where it really is: its directory,
    /// held, and its name there. A user's file is followed through the person's links (a
    /// dotfile manager keeps `~/.claude.json` behind one, and a repository cannot put one in
    /// the home directory); a project's only while it stays beneath the project's real path
    /// (the repository can ship `.mcp.json -> ~/.docker/config.json`). A link to nothing is
    /// refused either way. With `make`, missing directories are made (`0700` for a user's,
    /// `0755` for a project's); without, `None` when the directory is not there.
    fn open(
        self,
        path: &Path,
        scope: Scope,
        make: bool,
    ) -> Result<Option<(Dir, String)>, CliError> {
        let here = match scope {
            Scope::User => None,
            Scope::Project => Some(std::env::current_dir().map_err(|e| {
                CliError::Local(format!("cannot tell which directory this is: {e}"))
            })?),
        };
        let (reach, mode) = match &here {
            None => (Reach::Anywhere, 0o700),
            Some(root) => (Reach::Beneath(root), 0o755),
        };
        let place = statedir::file::locate(path, reach)?;
        Ok(place.dir(make.then_some(mode))?)
    }

    /// The entry that runs `command args` (JSON clients).
    fn entry(self, command: &str, args: &[String]) -> Json {
        let mut fields = Vec::new();
        if matches!(self, Client::ClaudeCode | Client::Vscode) {
            fields.push(("type".to_string(), Json::String("stdio".into())));
        }
        fields.push(("command".to_string(), Json::String(command.into())));
        fields.push((
            "args".to_string(),
            Json::Array(args.iter().map(|a| Json::String(a.clone())).collect()),
        ));
        Json::Object(fields)
    }
}

pub fn run(args: &ClientArgs) -> Result<u8, CliError> {
    match &args.what {
        ClientCommand::Add(t) => add(t),
        ClientCommand::Remove(t) => remove(t),
        ClientCommand::List => list(),
    }
}

/// The highest position of any table in `t` (tables are written in position order;
/// `boxmaker add` writes after it too).
pub(crate) fn last_position(t: &Table, last: &mut isize) {
    if let Some(p) = t.position() {
        *last = (*last).max(p);
    }
    for (_, item) in t.iter() {
        match item {
            Item::Table(sub) => last_position(sub, last),
            Item::ArrayOfTables(a) => {
                for sub in a.iter() {
                    last_position(sub, last);
                }
            }
            _ => {}
        }
    }
}

/// This binary's absolute path, symbolic links resolved: what a client's entry runs.
pub fn this_binary() -> Result<PathBuf, CliError> {
    let me = std::env::current_exe()
        .map_err(|e| CliError::Local(format!("cannot find this binary's path: {e}")))?;
    Ok(std::fs::canonicalize(&me).unwrap_or(me))
}

/// What the client's entry runs: this binary, `mcp --config ABS`.
fn command_line(config: &Path) -> Result<(String, Vec<String>), CliError> {
    // A client started with that config must get a working boxmaker: it loads, or no entry.
    config::load(config)?;
    let config = std::fs::canonicalize(config).map_err(|e| {
        CliError::Local(format!(
            "cannot find the absolute path of {}: {e}",
            config.display()
        ))
    })?;
    let (Some(me), Some(cfg)) = (this_binary()?.to_str().map(str::to_string), config.to_str())
    else {
        return Err(CliError::Local(
            "this binary's or the config's path is not UTF-8, which a client's JSON or TOML \
             file cannot hold"
                .into(),
        ));
    };
    Ok((me, vec!["mcp".into(), "--config".into(), cfg.to_string()]))
}

fn check_name(name: &str) -> Result<(), CliError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "--name {name:?}: a server's name is 1 to 64 ASCII letters, digits, `_` or `-`"
        )))
    }
}

fn add(t: &Target) -> Result<u8, CliError> {
    check_name(&t.name)?;
    let (command, args) = command_line(&t.config)?;
    let path = t.client.file(t.scope)?;
    let (dir, name) = t.client.open(&path, t.scope, true)?.ok_or_else(|| {
        CliError::Local(format!("cannot make the directory of {}", path.display()))
    })?;
    let old = read(&dir, &name)?;
    let new = if t.client.is_toml() {
        toml_add(&path, old.as_deref(), &t.name, &command, &args)?
    } else {
        json_add(t.client, &path, old.as_deref(), &t.name, &command, &args)?
    };
    let hook = hook_command(&command, &args);
    let Some(new) = new else {
        outln!(
            "{} already runs boxmaker as {:?} in {}: nothing changed",
            t.client.as_str(),
            t.name,
            path.display()
        );
        add_hook(t, &hook)?;
        return Ok(0);
    };
    let backup = write(&dir, &name, &new, t.scope, t.client)?;
    outln!(
        "{} runs boxmaker as {:?}: {} {} (in {}{})",
        t.client.as_str(),
        t.name,
        command,
        args.join(" "),
        path.display(),
        backup
            .map(|b| format!("; the file as it was: {}", b.display()))
            .unwrap_or_else(|| ", a new file".into())
    );
    add_hook(t, &hook)?;
    outln!(
        "restart {} (or open a new session) for it to start boxmaker",
        t.client.as_str()
    );
    Ok(0)
}

/// The prompt hook's command for a front that runs `command args` (`mcp --config ABS`):
/// `BIN intent --hook --config ABS`, each word quoted for the shell the client runs it in
/// when it needs to be.
fn hook_command(command: &str, args: &[String]) -> Option<String> {
    let config = args
        .iter()
        .position(|a| a == "--config")
        .and_then(|i| args.get(i + 1))?;
    let q = |w: &str| {
        if !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@%=,".contains(&b))
        {
            w.to_owned()
        } else {
            format!("'{}'", w.replace('\'', "'\\''"))
        }
    };
    Some(format!(
        "{} intent --hook --config {}",
        q(command),
        q(config)
    ))
}

/// Puts the prompt hook into the client's settings (docs/spec.md §3.10), when it has one;
/// nothing when it is there already.
fn add_hook(t: &Target, hook: &Option<String>) -> Result<(), CliError> {
    let (Some(path), Some(hook)) = (t.client.hook_file(t.scope)?, hook) else {
        return Ok(());
    };
    let (dir, name) = t.client.open(&path, t.scope, true)?.ok_or_else(|| {
        CliError::Local(format!("cannot make the directory of {}", path.display()))
    })?;
    let old = read(&dir, &name)?;
    match hooks_edit(&path, old.as_deref(), hook, true)? {
        None => outln!(
            "{} already hands each prompt you type to the gate ({}): nothing changed",
            t.client.as_str(),
            path.display()
        ),
        Some(new) => {
            write(&dir, &name, &new, t.scope, t.client)?;
            outln!(
                "{} hands each prompt you type to the gate, for that conversation alone: a \
                 UserPromptSubmit hook in {} runs `{hook}`",
                t.client.as_str(),
                path.display()
            );
        }
    }
    Ok(())
}

/// Takes the prompt hook of the front `server` ran out of the client's settings.
fn remove_hook(t: &Target, server: Option<(String, Vec<String>)>) -> Result<(), CliError> {
    let Some(path) = t.client.hook_file(t.scope)? else {
        return Ok(());
    };
    let Some(hook) = server.and_then(|(c, a)| hook_command(&c, &a)) else {
        return Ok(());
    };
    let Some((dir, name)) = t.client.open(&path, t.scope, false)? else {
        return Ok(());
    };
    let Some(old) = read(&dir, &name)? else {
        return Ok(());
    };
    if let Some(new) = hooks_edit(&path, Some(&old), &hook, false)? {
        write(&dir, &name, &new, t.scope, t.client)?;
        outln!("took its prompt hook out of {}", path.display());
    }
    Ok(())
}

/// Claude Code's settings with the command hook `hook` under `hooks.UserPromptSubmit`
/// added (`add`) or taken out; `None` when nothing changes. Every other key, hook and
/// matcher group is kept as it was, in its order.
fn hooks_edit(
    path: &Path,
    old: Option<&str>,
    hook: &str,
    add: bool,
) -> Result<Option<String>, CliError> {
    let mut doc = match old {
        Some(t) if !t.trim().is_empty() => parse_json(Client::ClaudeCode, path, t)?,
        _ => Json::Object(Vec::new()),
    };
    let not_object = |what: &str| {
        CliError::Local(format!(
            "{}: `{what}` is not what Claude Code writes there; it was left as it is",
            path.display()
        ))
    };
    let Json::Object(top) = &mut doc else {
        return Err(not_object("the file"));
    };
    let ours = |entry: &Json| entry.get("command").and_then(Json::as_str) == Some(hook);
    let has_hooks = top.iter().any(|(k, _)| k == "hooks");
    if !has_hooks {
        if !add {
            return Ok(None);
        }
        top.push(("hooks".into(), Json::Object(Vec::new())));
    }
    let Some((_, Json::Object(hooks))) = top.iter_mut().find(|(k, _)| k == "hooks") else {
        return Err(not_object("hooks"));
    };
    if !hooks.iter().any(|(k, _)| k == "UserPromptSubmit") {
        if !add {
            return Ok(None);
        }
        hooks.push(("UserPromptSubmit".into(), Json::Array(Vec::new())));
    }
    let Some((_, Json::Array(groups))) = hooks.iter_mut().find(|(k, _)| k == "UserPromptSubmit")
    else {
        return Err(not_object("hooks.UserPromptSubmit"));
    };
    let there = groups.iter().any(|g| match g.get("hooks") {
        Some(Json::Array(hs)) => hs.iter().any(ours),
        _ => false,
    });
    if add {
        if there {
            return Ok(None);
        }
        groups.push(Json::Object(vec![(
            "hooks".into(),
            Json::Array(vec![Json::Object(vec![
                ("type".into(), Json::String("command".into())),
                ("command".into(), Json::String(hook.into())),
            ])]),
        )]));
    } else {
        if !there {
            return Ok(None);
        }
        for g in groups.iter_mut() {
            if let Json::Object(fields) = g
                && let Some((_, Json::Array(hs))) = fields.iter_mut().find(|(k, _)| k == "hooks")
            {
                hs.retain(|h| !ours(h));
            }
        }
        groups.retain(|g| !matches!(g.get("hooks"), Some(Json::Array(hs)) if hs.is_empty()));
        if groups.is_empty() {
            hooks.retain(|(k, _)| k != "UserPromptSubmit");
        }
        if hooks.is_empty() {
            top.retain(|(k, _)| k != "hooks");
        }
    }
    to_text(&doc).map(Some)
}

fn remove(t: &Target) -> Result<u8, CliError> {
    check_name(&t.name)?;
    let path = t.client.file(t.scope)?;
    let opened = t.client.open(&path, t.scope, false)?;
    let Some((dir, name)) = opened else {
        outln!(
            "{} does not exist: {} has no {:?} there, nothing changed",
            path.display(),
            t.client.as_str(),
            t.name
        );
        return Ok(0);
    };
    let Some(old) = read(&dir, &name)? else {
        outln!(
            "{} does not exist: {} has no {:?} there, nothing changed",
            path.display(),
            t.client.as_str(),
            t.name
        );
        return Ok(0);
    };
    let server = if t.client.is_toml() {
        None
    } else {
        json_servers(t.client, &path, &old)
            .ok()
            .and_then(|all| all.into_iter().find(|(n, _, _)| *n == t.name))
            .map(|(_, c, a)| (c, a))
    };
    let new = if t.client.is_toml() {
        toml_remove(&path, &old, &t.name)?
    } else {
        json_remove(t.client, &path, &old, &t.name)?
    };
    let Some(new) = new else {
        outln!(
            "{} has no server {:?} in {}: nothing changed",
            t.client.as_str(),
            t.name,
            path.display()
        );
        return Ok(0);
    };
    let backup = write(&dir, &name, &new, t.scope, t.client)?;
    outln!(
        "took {:?} out of {} ({}; the file as it was: {})",
        t.name,
        t.client.as_str(),
        path.display(),
        backup.map(|b| b.display().to_string()).unwrap_or_default()
    );
    remove_hook(t, server)?;
    Ok(0)
}

fn list() -> Result<u8, CliError> {
    for client in Client::ALL {
        for scope in [Scope::User, Scope::Project] {
            let Ok(path) = client.file(scope) else {
                continue;
            };
            let where_ = format!(
                "{} ({}, {})",
                client.as_str(),
                match scope {
                    Scope::User => "user",
                    Scope::Project => "project",
                },
                path.display()
            );
            let text = match client
                .open(&path, scope, false)
                .and_then(|d| d.map_or(Ok(None), |(dir, name)| read(&dir, &name)))
            {
                Ok(Some(t)) => t,
                Ok(None) => {
                    outln!("{where_}: no file");
                    continue;
                }
                Err(e) => {
                    outln!("{where_}: {e}");
                    continue;
                }
            };
            let found = if client.is_toml() {
                toml_servers(&path, &text)
            } else {
                json_servers(client, &path, &text)
            };
            match found {
                Err(e) => outln!("{where_}: {e}"),
                Ok(servers) => {
                    let ours: Vec<_> = servers
                        .into_iter()
                        .filter(|(_, c, a)| runs_boxmaker(c, a))
                        .collect();
                    if ours.is_empty() {
                        outln!("{where_}: no boxmaker");
                    }
                    for (name, command, args) in ours {
                        outln!("{where_}: {name:?} runs {command} {}", args.join(" "));
                    }
                }
            }
        }
    }
    Ok(0)
}

/// Whether a server entry runs a boxmaker front (`…/boxmaker mcp …`).
fn runs_boxmaker(command: &str, args: &[String]) -> bool {
    Path::new(command)
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("boxmaker"))
        && args.first().is_some_and(|a| a == "mcp")
}

/// The text of `name` in `dir`, `None` when it does not exist; refused when it is a link
/// (a link of the person's was resolved by [`Client::open`]), not a regular file, too large
/// to be a client's configuration, or not UTF-8.
fn read(dir: &Dir, name: &str) -> Result<Option<String>, CliError> {
    let Some(found) = dir.read(name, MAX_FILE)? else {
        return Ok(None);
    };
    String::from_utf8(found.bytes).map(Some).map_err(|_| {
        CliError::Local(format!(
            "{} is not UTF-8 text; it was left as it is",
            dir.join(name).display()
        ))
    })
}

/// Writes `text` as a client's file `name` in `dir`, the one way (`statedir::file`): a
/// temporary file beside it with the old file's mode and owner, parsed again, the old file
/// kept beside it as `NAME.bak-YYYYMMDD-HHMMSS` (local time; `-2`, `-3`… when taken), then
/// renamed over it. Returns the backup, when there was a file to keep.
fn write(
    dir: &Dir,
    name: &str,
    text: &str,
    scope: Scope,
    client: Client,
) -> Result<Option<PathBuf>, CliError> {
    // A new file of the user's own may come to hold other servers' tokens: theirs alone. A
    // project's file is meant to be shared (committed).
    let mode = match scope {
        Scope::User => 0o600,
        Scope::Project => 0o644,
    };
    let check = |written: &Path| -> Result<(), String> {
        let text = std::fs::read_to_string(written).map_err(|e| e.to_string())?;
        if client.is_toml() {
            text.parse::<DocumentMut>()
                .map(drop)
                .map_err(|e| format!("the edited file would not parse: {e}"))
        } else {
            serde_json::from_str::<Json>(&text)
                .map(drop)
                .map_err(|e| format!("the edited file would not parse: {e}"))
        }
    };
    let stem = format!("{name}.bak-{}", stamp());
    let kept = dir.write(
        name,
        text.as_bytes(),
        Mode::Keep(mode),
        Some(Backup::Fresh(&stem)),
        check,
    )?;
    Ok(kept.map(|k| dir.join(&k)))
}

/// `YYYYMMDD-HHMMSS`, local time.
fn stamp() -> String {
    let now = crate::when::local(crate::when::now());
    now.get(..19)
        .unwrap_or(&now)
        .chars()
        .filter_map(|c| match c {
            '-' | ':' => None,
            ' ' => Some('-'),
            c => Some(c),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// JSON clients.

/// A JSON value whose objects keep their keys in the file's order (serde_json's own map
/// sorts them, unless a feature every crate of the build would share is on). A key twice in
/// one object is refused when read.
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// `command` and `args` of a server entry (args only if every one is a string).
    fn command_line(&self) -> Option<(String, Vec<String>)> {
        let command = self.get("command")?.as_str()?.to_string();
        let args = match self.get("args") {
            None => Vec::new(),
            Some(Json::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()?,
            Some(_) => return None,
        };
        Some((command, args))
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
                Ok(Json::Number(n.into()))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(n)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E>(self, s: &str) -> Result<Json, E> {
                Ok(Json::String(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<Json, E> {
                Ok(Json::String(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(Json::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut out: Vec<(String, Json)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Json>()? {
                    if out.iter().any(|(seen, _)| *seen == k) {
                        return Err(de::Error::custom(format!(
                            "the key {k:?} is in one object twice"
                        )));
                    }
                    out.push((k, v));
                }
                Ok(Json::Object(out))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(t) => s.serialize_str(t),
            Json::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Json::Object(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

/// The file's JSON (an object), or one sentence saying why it cannot be used.
fn parse_json(client: Client, path: &Path, text: &str) -> Result<Json, CliError> {
    let doc: Json = serde_json::from_str(text).map_err(|e| {
        let hint = if client == Client::Vscode {
            " (VS Code allows comments in it, which boxmaker cannot keep: add the entry by hand)"
        } else {
            ""
        };
        CliError::Local(format!(
            "{} is not JSON boxmaker can edit ({e}){hint}; it was left as it is",
            path.display()
        ))
    })?;
    if !matches!(doc, Json::Object(_)) {
        return Err(CliError::Local(format!(
            "{} holds no JSON object; it was left as it is",
            path.display()
        )));
    }
    Ok(doc)
}

/// The servers object's fields of `doc`, made when missing; refused when not an object.
fn servers_mut<'a>(
    client: Client,
    path: &Path,
    doc: &'a mut Json,
) -> Result<&'a mut Vec<(String, Json)>, CliError> {
    let key = client.servers_key();
    let Json::Object(top) = doc else {
        return Err(CliError::Local(format!(
            "{} holds no JSON object; it was left as it is",
            path.display()
        )));
    };
    let i = match top.iter().position(|(k, _)| k == key) {
        Some(i) => i,
        None => {
            top.push((key.to_string(), Json::Object(Vec::new())));
            top.len() - 1
        }
    };
    match top.get_mut(i) {
        Some((_, Json::Object(fields))) => Ok(fields),
        _ => Err(CliError::Local(format!(
            "{}: `{key}` is not a JSON object; it was left as it is",
            path.display()
        ))),
    }
}

fn to_text(doc: &Json) -> Result<String, CliError> {
    serde_json::to_string_pretty(doc)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| CliError::Local(format!("cannot write JSON: {e}")))
}

/// The file with the entry added, or `None` when it is there already.
fn json_add(
    client: Client,
    path: &Path,
    old: Option<&str>,
    name: &str,
    command: &str,
    args: &[String],
) -> Result<Option<String>, CliError> {
    let mut doc = match old {
        Some(t) => parse_json(client, path, t)?,
        None => Json::Object(Vec::new()),
    };
    let servers = servers_mut(client, path, &mut doc)?;
    if let Some((_, there)) = servers.iter().find(|(k, _)| k == name) {
        return match there.command_line() {
            Some((c, a)) if c == command && a == args => Ok(None),
            _ => Err(taken(path, name, there.command_line())),
        };
    }
    servers.push((name.to_string(), client.entry(command, args)));
    to_text(&doc).map(Some)
}

/// The file without the entry, or `None` when it has none.
fn json_remove(
    client: Client,
    path: &Path,
    old: &str,
    name: &str,
) -> Result<Option<String>, CliError> {
    let mut doc = parse_json(client, path, old)?;
    let key = client.servers_key();
    if doc.get(key).is_none() {
        return Ok(None);
    }
    let servers = servers_mut(client, path, &mut doc)?;
    let Some(i) = servers.iter().position(|(k, _)| k == name) else {
        return Ok(None);
    };
    let line = servers.get(i).and_then(|(_, v)| v.command_line());
    if !line.as_ref().is_some_and(|(c, a)| runs_boxmaker(c, a)) {
        return Err(not_ours(path, name));
    }
    servers.remove(i);
    to_text(&doc).map(Some)
}

type Server = (String, String, Vec<String>);

fn json_servers(client: Client, path: &Path, text: &str) -> Result<Vec<Server>, CliError> {
    let doc = parse_json(client, path, text)?;
    Ok(match doc.get(client.servers_key()) {
        Some(Json::Object(fields)) => fields
            .iter()
            .filter_map(|(k, v)| v.command_line().map(|(c, a)| (k.clone(), c, a)))
            .collect(),
        _ => Vec::new(),
    })
}

fn taken(path: &Path, name: &str, runs: Option<(String, Vec<String>)>) -> CliError {
    CliError::Usage(format!(
        "{} already has a server named {name:?}, which runs {}; `boxmaker client remove` takes \
         it out first, or --name gives boxmaker another name",
        path.display(),
        match runs {
            Some((c, a)) => format!("`{c} {}`", a.join(" ")),
            None => "something else".into(),
        }
    ))
}

fn not_ours(path: &Path, name: &str) -> CliError {
    CliError::Usage(format!(
        "{}: the server named {name:?} does not run boxmaker, so it was left as it is",
        path.display()
    ))
}

// ---------------------------------------------------------------------------------------
// Codex: TOML.

fn parse_toml(path: &Path, text: &str) -> Result<DocumentMut, CliError> {
    text.parse::<DocumentMut>().map_err(|e| {
        let first = e.to_string();
        let first = first.lines().next().unwrap_or_default().to_string();
        CliError::Local(format!(
            "{} is not TOML boxmaker can edit ({first}); it was left as it is",
            path.display()
        ))
    })
}

/// `command` and `args` of a `[mcp_servers.NAME]` entry.
fn toml_command_line(entry: &Item) -> Option<(String, Vec<String>)> {
    let t = entry.as_table_like()?;
    let command = t.get("command")?.as_str()?.to_string();
    let args = match t.get("args") {
        None => Vec::new(),
        Some(a) => a
            .as_array()?
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?,
    };
    Some((command, args))
}

fn toml_add(
    path: &Path,
    old: Option<&str>,
    name: &str,
    command: &str,
    args: &[String],
) -> Result<Option<String>, CliError> {
    let mut doc = parse_toml(path, old.unwrap_or_default())?;
    let mut last = 0;
    last_position(doc.as_table(), &mut last);
    if doc.get("mcp_servers").is_none() {
        let mut t = Table::new();
        // `[mcp_servers.NAME]` alone, with no empty `[mcp_servers]` header above it.
        t.set_implicit(true);
        doc.insert("mcp_servers", Item::Table(t));
    }
    let servers = doc
        .get_mut("mcp_servers")
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| {
            CliError::Local(format!(
                "{}: `mcp_servers` is not a table; it was left as it is",
                path.display()
            ))
        })?;
    if let Some(there) = servers.get(name) {
        return match toml_command_line(there) {
            Some((c, a)) if c == command && a == args => Ok(None),
            runs => Err(taken(path, name, runs)),
        };
    }
    let args = Array::from_iter(args.iter().map(String::as_str));
    let inline = doc.get("mcp_servers").is_some_and(Item::is_inline_table);
    let entry = if inline {
        // `mcp_servers = { … }` written inline: the entry goes in as the file writes them.
        let mut t = toml_edit::InlineTable::new();
        t.insert("command", command.into());
        t.insert("args", args.into());
        value(t)
    } else {
        let mut t = Table::new();
        t.insert("command", value(command));
        t.insert("args", value(args));
        // At the end of the file, after its last comments, as `add` appends.
        t.set_position(Some(last + 1));
        let trailing = doc.trailing().as_str().unwrap_or_default().to_string();
        doc.set_trailing("");
        let lead = if trailing.is_empty() {
            if old.is_some_and(|o| !o.trim().is_empty()) {
                "\n".to_string()
            } else {
                String::new()
            }
        } else if trailing.ends_with("\n\n") {
            trailing
        } else {
            format!("{trailing}\n")
        };
        t.decor_mut().set_prefix(format!(
            "{lead}# This client's sessions through boxmaker's gate (`boxmaker client add codex`).\n"
        ));
        Item::Table(t)
    };
    if let Some(s) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) {
        s.insert(name, entry);
    }
    Ok(Some(doc.to_string()))
}

fn toml_remove(path: &Path, old: &str, name: &str) -> Result<Option<String>, CliError> {
    let mut doc = parse_toml(path, old)?;
    let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut) else {
        return Ok(None);
    };
    let Some(there) = servers.get(name) else {
        return Ok(None);
    };
    if !toml_command_line(there).is_some_and(|(c, a)| runs_boxmaker(&c, &a)) {
        return Err(not_ours(path, name));
    }
    servers.remove(name);
    Ok(Some(doc.to_string()))
}

fn toml_servers(path: &Path, text: &str) -> Result<Vec<Server>, CliError> {
    let doc = parse_toml(path, text)?;
    Ok(doc
        .get("mcp_servers")
        .and_then(Item::as_table_like)
        .map(|t| {
            t.iter()
                .filter_map(|(k, v)| toml_command_line(v).map(|(c, a)| (k.to_string(), c, a)))
                .collect()
        })
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_keeps_its_order_and_refuses_a_key_twice() {
        let text = r#"{"z":1,"a":{"y":[1,2.5,"x",null,true],"b":{}},"m":"é"}"#;
        let v: Json = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&v).unwrap(), text);
        assert!(serde_json::from_str::<Json>(r#"{"a":1,"a":2}"#).is_err());
        assert!(serde_json::from_str::<Json>(r#"{"a":1} x"#).is_err());
    }

    #[test]
    fn only_a_boxmaker_front_counts_as_boxmaker() {
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(runs_boxmaker(
            "/opt/bin/boxmaker",
            &s(&["mcp", "--config", "x"])
        ));
        assert!(!runs_boxmaker("/opt/bin/boxmaker", &s(&["serve"])));
        assert!(!runs_boxmaker("npx", &s(&["mcp"])));
    }
}
