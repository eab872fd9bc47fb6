//! `config` — `boxmaker.toml`, the file a person writes to say what an agent may do
//! (docs/spec.md §3.1), parsed strictly and checked before anything uses it.
//!
//! **Owns:** the file format (`[gate]`, `[box]`, `[[mount]]`, `[[tool]]`, `[[grant]]`,
//! `[[egress]]`, `[[label]]`, `[[secret]]`, `[audit]`),
//! the commented default that `boxmaker init` writes ([`DEFAULT_CONFIG`]), and the
//! conversion of the file's grants into [`policy::Grants`].
//!
//! **Must never:** accept a key, a class, an effect or a value it does not know (every
//! table is `deny_unknown_fields`, every name is checked), or report a bad file as more than
//! one line: an error names the file, the line and column, and what was expected. It
//! reads the file and `$HOME`, and looks up the symlinks on the paths it names (to compare
//! them as the kernel resolves them, [`own`]), and nothing else: no writing, no network, no
//! clock.
//!
//! Reading order:
//! 1. [`error`] — `ConfigError`, and how a byte offset becomes `file:line:column`.
//! 2. `raw` — the serde shapes of the file, exactly as written (private).
//! 3. [`model`] — `Config`, `Gate`, `BoxLimits`, `Mount`, `Tool`: the checked result;
//!    `read` — the checks that turn a raw file into one, every default (private).
//! 4. [`reach`] — what a call's box can read and where it may write; the floor label of
//!    every answer (one rule for the gate and the runner).
//! 5. [`egress`] — the `[[egress]]` rules, and how a host and an address are read.
//! 6. [`labels`] — the `[[label]]` rules: a tool pattern, conditions, what they raise;
//!    `decide` — what the config decides with both (private; methods of `Config`): the
//!    label of a call's answers, by tool and arguments (`Config::answer_label`, the one
//!    place a call's label comes from), and where a networked box may connect at that
//!    label (`Config::clearance`, the rule the runner's proxy decides every connection by).
//! 7. [`secret`] — `[[secret]]`: where a credential comes from (never its value), and the
//!    variables a tool's box is handed.
//! 8. [`remote`] — a remote MCP server's URL, transport and credentials (by name).
//! 9. [`own`] — boxmaker's own files on the host (the state directory, the keys beside it,
//!    secret files, the config): the one rule that keeps every box off them, after
//!    symlinks, and where a box's masks come from.
//! 10. [`args`] — the builtin tools' arguments, decoded strictly (the gate checks with it
//!     before it asks anyone; the runner decodes with it before it runs).

#![forbid(unsafe_code)]

pub mod args;
mod decide;
pub mod egress;
pub mod error;
pub mod labels;
pub mod model;
pub mod own;
mod raw;
pub mod reach;
mod read;
pub mod remote;
pub mod secret;
mod typed;

use std::path::Path;

pub use egress::{CallLabel, Destination, EgressRule, Host, HostPattern, Refusal, Way};
pub use error::ConfigError;
pub use labels::{AnswerLabel, LabelRule, Shows};
pub use model::{
    Audit, BoxLimits, Builtin, Config, Gate, HOST_RUN, Mount, Tool, ToolKind, is_valid_tool_name,
};
pub use policy::Label;
pub use reach::box_label;
pub use remote::{HeaderValue, OAuth, RemoteUrl, Transport};
pub use secret::{Secret, SecretSource, SecretVars};

/// The name of the config file `boxmaker init` writes and the commands look for.
pub const FILE_NAME: &str = "boxmaker.toml";

/// The commented default configuration that `boxmaker init` writes: state under
/// `.boxmaker/`, no mounts (the box shows only the session's workspace), the four builtin
/// tools, reading, listing and writing allowed, and `run` only with a person's approval.
pub const DEFAULT_CONFIG: &str = include_str!("default.toml");

/// Reads and checks the config file at `path`, which the person must have trusted with the
/// very bytes read (docs/spec.md §6, "Whose config": [`statedir::trust`]). Relative paths in
/// it are relative to the file's directory.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = read_file(path)?;
    // Parsed first (it acts on nothing), so a person's broken edit is named as what it is;
    // nothing of it is used before the trust is checked on the same bytes.
    let config = parse_file(&text, path)?;
    check_trusted(path, &text)?;
    Ok(config)
}

/// Whether the person trusted the config at `path` holding `text` (docs/spec.md §6, "Whose
/// config"): `Ok` only when a record of theirs names that path and those bytes. The one
/// check [`load`] makes, and `boxmaker add` before it edits a config.
pub fn check_trusted(path: &Path, text: &str) -> Result<(), ConfigError> {
    let trust_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ConfigError::Trust { path, source }
    };
    let bound = statedir::trust::bound_path(path).map_err(trust_err(path))?;
    match statedir::trust::check(&bound, text.as_bytes()).map_err(trust_err(&bound))? {
        statedir::trust::Trust::Trusted => Ok(()),
        statedir::trust::Trust::Never => Err(ConfigError::untrusted(bound)),
        statedir::trust::Trust::Changed => Err(ConfigError::changed(bound)),
    }
}

/// [`load`] without asking whether the person trusted it: for `boxmaker trust` (which is how
/// they say so, and which trusts only a config that loads) and for checking a file boxmaker
/// is about to write. Returns the bytes read beside the config, so that what is trusted is
/// what was checked.
pub fn load_untrusted(path: &Path) -> Result<(Config, String), ConfigError> {
    let text = read_file(path)?;
    let config = parse_file(&text, path)?;
    Ok((config, text))
}

/// Records that the person trusts the config at `path` holding `text` (a config boxmaker
/// wrote for them, or one they said so of with `boxmaker trust`). Returns the record's path.
pub fn trust(path: &Path, text: &str) -> Result<std::path::PathBuf, ConfigError> {
    statedir::trust::record(path, text.as_bytes()).map_err(|source| ConfigError::Trust {
        path: path.to_path_buf(),
        source,
    })
}

fn read_file(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            ConfigError::NotFound {
                path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            }
        } else {
            ConfigError::Read {
                path: path.to_path_buf(),
                source,
            }
        }
    })
}

fn parse_file(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let base = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // Every path the config hands out is absolute: a box, a socket or a database must not
    // depend on the directory a later process happens to run in.
    let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
    let file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    read::parse(
        text,
        &path.display().to_string(),
        &base,
        home.as_deref(),
        Some(&file),
    )
}

/// Checks config `text`. `origin` names it in errors (a file name); relative paths are
/// relative to `base`; `~` is `$HOME`.
pub fn parse(text: &str, origin: &str, base: &Path) -> Result<Config, ConfigError> {
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    read::parse(text, origin, base, home.as_deref(), None)
}

/// The embedded default configuration, as if it were a file in `base`.
pub fn default_config(base: &Path) -> Result<Config, ConfigError> {
    parse(DEFAULT_CONFIG, "<default boxmaker.toml>", base)
}
