//! The checks that make the checked configuration (`crate::model`) from the raw file.
//!
//! Defaults (each documented in the default file, `default.toml`):
//! - `[gate]`: `state = ".boxmaker"`, `approval_ttl = 300`, `log_arguments = false`,
//!   `max_calls_per_session = 16`, `max_pending_per_session = 32`, `approve_in_client = false`,
//!   `max_provenance_values = 10000`.
//! - `[audit]`: `key` = the state directory's path plus `.audit-key` (beside it, never in
//!   it), `checkpoint_every = 1000`, `checkpoint_secs = 60`, no `witness_file`, no
//!   `witness_command`, `journal = true`.
//! - `[box]`: `memory_bytes` 2 GiB, `address_space_bytes` `"unlimited"` (where a memory
//!   cgroup bounds the box; where none does, `memory_bytes` is the address-space limit),
//!   `max_processes` 256, `file_size_bytes` 64 MiB,
//!   `timeout_seconds` 300, `max_servers_per_session` 8, `max_connections_per_session` 32,
//!   `egress_idle_seconds` 120, `max_upload_bytes` 1 GiB. Every limit must be above 0.
//! - `[[mount]]`: `class = "internal"` (a person's files are not public unless they say
//!   so), `write = false`, `untrusted = false`, no `name` (then no tool can name it in
//!   `mounts`).
//! - `[[tool]]`: `class = "public"`, `untrusted = false`, `network = false`, `env = []`,
//!   `pin = false`, no `prefix` (tools are exposed as `NAME_TOOL`), no `idle_timeout`,
//!   `mounts` = every mount, `egress` = every egress rule, no `secrets`.
//! - `[[secret]]`: no defaults; `name` and exactly one of `env`, `file`, `command`
//!   (`crate::secret`).
//! - `[[egress]]`: `ports = [443, 80]`, `tunnel_ports = [443]` (when `ports` has 443, else
//!   none), `class = "public"`, `returns` = its `class`, `trusted = false`, no `name`. `host`
//!   has no default: a rule says what it names.
//! - `[[grant]]`: `sessions = "*"`, `max_class = "secret"`, `if_untrusted = "allow"`, no
//!   `expires`, no `when` (argument conditions). `effect` has no default: a grant says what
//!   it does. A `when` entry is `pointer` and exactly one of `equals`, `one_of`, `in` (a
//!   `[lists]` name), `glob`, `range`, `email`, `url`, `links` (the typed tests, read in
//!   `crate::typed`), `from` (`trusted` or `not_untrusted`: provenance), and `optional =
//!   false` by default. `closed = false` by default.
//! - `[[label]]`: no `when`, no `reason`, `untrusted = false`, no `class`; `tool` has no
//!   default, and a rule needs a `class` or `untrusted = true` (`crate::labels`).

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use policy::{
    Condition, Effect, FromTest, Grant, Grants, Known, List, Pattern, Pointer, Scalar, Test,
};
use proto::{DataClass, Timestamp};
use toml::Spanned;

use crate::egress::{DEFAULT_PORTS, DEFAULT_TUNNEL_PORT, EgressRule, HostPattern};
use crate::error::{ConfigError, Source};
use crate::labels::{LabelRule, Shows};
use crate::model::{
    Audit, BoxLimits, Builtin, Config, DEFAULT_CALLS_PER_SESSION, DEFAULT_CHECKPOINT_EVERY,
    DEFAULT_CHECKPOINT_SECS, DEFAULT_PENDING_PER_SESSION, DEFAULT_PROVENANCE_VALUES, Gate, Mount,
    RESERVED, TOOL_NAME_MAX, Tool, ToolKind, is_valid_tool_name,
};
use crate::own::{self, AUDIT_KEY, Place, beside};
use crate::raw;
use crate::remote::{self, HeaderValue, RemoteUrl, Transport};
use crate::secret::{RESERVED_VARIABLES, Secret, SecretSource, SecretVars};
use crate::typed::{self, Lists};

fn is_valid_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Checks `text` and builds the config; see [`crate::parse`].
pub(crate) fn parse(
    text: &str,
    origin: &str,
    base: &Path,
    home: Option<&Path>,
    file: Option<&Path>,
) -> Result<Config, ConfigError> {
    let src = Source { text, origin };
    let raw: raw::File = toml::from_str(text).map_err(|e| {
        let mut message = e.message().to_owned();
        if message.contains("expected a sequence") {
            message.push_str(&sequence_hint(text, e.span().map(|s| s.start)));
        }
        src.error(e.span().map(|s| s.start), message)
    })?;
    let ctx = Ctx { src, base, home };
    let known = Arc::new(known_values(&raw.lists, &raw.grant));
    let lists = ctx.lists(raw.lists)?;
    let gate = ctx.gate(raw.gate)?;
    let limits = ctx.limits(raw.limits)?;
    let (mounts, spans) = ctx.mounts(raw.mount)?;
    let egress = ctx.egress(raw.egress)?;
    let secrets = ctx.secrets(raw.secret)?;
    let tools = ctx.tools(raw.tool, &mounts, &egress, &secrets)?;
    let audit = ctx.audit(raw.audit, &gate.state)?;
    // No box reaches a file of boxmaker's own, whatever symlinks lie on the way
    // (docs/spec.md §3.5): one list, one check.
    let own = own::own_files(&gate.state, &audit, &secrets, file);
    if let Some((i, why)) = own::conflict(&own, &mounts) {
        return Err(ctx.src.error(spans.get(i).map(|s| s.start), why));
    }
    let grants = ctx.grants(raw.grant, &lists)?;
    let labels = ctx.labels(raw.label, &lists)?;
    Ok(Config {
        gate,
        limits,
        mounts,
        tools,
        grants,
        egress,
        audit,
        labels,
        file: file.map(Path::to_path_buf),
        fingerprint: fingerprint(text, base),
        known,
        secrets,
    })
}

/// The values the config names (docs/spec.md §3.7: the person's own knowledge): every
/// `[lists]` entry, and every string or integer a condition compares with (`equals`,
/// `one_of`, and the addresses and hosts a typed test names; not globs, paths or the names
/// of lists).
fn known_values(
    lists: &BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
    grants: &[raw::Grant],
) -> Known {
    fn walk<'v>(v: &'v toml::Value, key: &str, out: &mut Vec<std::borrow::Cow<'v, str>>) {
        if key == "path" || key == "in" || key.ends_with("_in") || key == "ports" {
            return;
        }
        match v {
            toml::Value::String(s) => out.push(std::borrow::Cow::Borrowed(s)),
            toml::Value::Integer(n) => out.push(std::borrow::Cow::Owned(n.to_string())),
            toml::Value::Array(items) => items.iter().for_each(|i| walk(i, key, out)),
            toml::Value::Table(t) => t.iter().for_each(|(k, i)| walk(i, k, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for entries in lists.values() {
        for e in entries.get_ref() {
            walk(e.get_ref(), "", &mut out);
        }
    }
    for w in grants.iter().flat_map(|g| &g.when) {
        if let Some(v) = &w.equals {
            walk(v.get_ref(), "", &mut out);
        }
        for v in w.one_of.iter().flat_map(|l| l.get_ref()) {
            walk(v.get_ref(), "", &mut out);
        }
        for t in [&w.email, &w.url, &w.links].into_iter().flatten() {
            walk(t.get_ref(), "", &mut out);
        }
    }
    Known::of(out.iter().map(|c| c.as_ref()))
}

/// What to write where a list was expected: a key's value (`mcp = "node server.js"`) is a
/// list of strings; a table name (`[mount]`) is a list of tables.
fn sequence_hint(text: &str, at: Option<usize>) -> String {
    let line = at
        .and_then(|at| text.get(..at))
        .map(|before| before.rsplit('\n').next().unwrap_or(before))
        .unwrap_or("");
    let key = line.split('=').next().map(str::trim).unwrap_or("");
    if line.contains('=') && !key.is_empty() && !key.starts_with('[') {
        let example = match key {
            "mcp" => r#"mcp = ["node", "server.js"]"#,
            "env" => r#"env = ["GITHUB_TOKEN"]"#,
            _ => return format!(" (`{key}` is a list, like {key} = [\"a\", \"b\"])"),
        };
        format!(" (`{key}` is a list of strings, like `{example}`)")
    } else {
        " (a list of tables is written [[mount]], [[tool]] or [[grant]])".into()
    }
}

/// See [`Config::fingerprint`].
fn fingerprint(text: &str, base: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(base.as_os_str().as_encoded_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

pub(crate) struct Ctx<'a> {
    pub src: Source<'a>,
    base: &'a Path,
    home: Option<&'a Path>,
}

fn start(span: Range<usize>) -> Option<usize> {
    Some(span.start)
}

impl Ctx<'_> {
    pub(crate) fn err<T>(
        &self,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Result<T, ConfigError> {
        Err(self.src.error(start(span), message))
    }

    /// `~` and `~/…` become the home directory; a relative path is made relative to the
    /// config file's directory.
    fn host_path(&self, value: &Spanned<String>, what: &str) -> Result<PathBuf, ConfigError> {
        let s = value.get_ref();
        if s.is_empty() {
            return self.err(value.span(), format!("{what} may not be empty"));
        }
        let expanded = if s == "~" || s.starts_with("~/") {
            let Some(home) = self.home else {
                return self.err(
                    value.span(),
                    format!("{what} {s:?} starts with ~ but $HOME is not set"),
                );
            };
            home.join(s.trim_start_matches('~').trim_start_matches('/'))
        } else if s.starts_with('~') {
            return self.err(
                value.span(),
                format!("{what} {s:?}: only ~ and ~/path are understood, not ~user"),
            );
        } else {
            PathBuf::from(s)
        };
        Ok(if expanded.is_absolute() {
            expanded
        } else {
            self.base.join(expanded)
        })
    }

    /// A command boxmaker runs on the host, outside every box (a `command` secret, the
    /// witness command), made to mean one thing wherever the gate was started — so that
    /// what runs is what the config check guards (`crate::own`): a program named by a
    /// relative path is the config directory's, like every relative path of the config; a
    /// bare name is looked up on `PATH` now, as it would be when it runs, and kept by the
    /// path it found (none found: left to `PATH`); an argument that names an existing file
    /// or directory relative to the config's directory is that path, made absolute.
    fn host_command(&self, mut argv: Vec<String>) -> Vec<String> {
        if let Some(program) = argv.first_mut() {
            let found = if program.contains('/') {
                Path::new(program.as_str())
                    .is_relative()
                    .then(|| self.base.join(program.as_str()))
            } else {
                on_path(program)
            };
            if let Some(p) = found.and_then(|p| p.to_str().map(str::to_owned)) {
                *program = p;
            }
        }
        for arg in argv.iter_mut().skip(1) {
            let path = Path::new(arg.as_str());
            if arg.is_empty() || path.is_absolute() || arg.starts_with('-') {
                continue;
            }
            let there = self.base.join(path);
            if std::fs::symlink_metadata(&there).is_ok()
                && let Some(s) = there.to_str()
            {
                *arg = s.to_owned();
            }
        }
        argv
    }

    fn positive(
        &self,
        value: Option<Spanned<u64>>,
        key: &str,
        default: u64,
    ) -> Result<u64, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) if *v.get_ref() == 0 => self.err(v.span(), format!("`{key}` must be above 0")),
            Some(v) => Ok(v.into_inner()),
        }
    }

    /// `[box] address_space_bytes`: bytes (at least `memory`), or `"unlimited"` (`None`).
    fn address_space(
        &self,
        value: Option<Spanned<toml::Value>>,
        memory: u64,
    ) -> Result<Option<u64>, ConfigError> {
        let Some(v) = value else { return Ok(None) };
        let span = v.span();
        match v.into_inner() {
            toml::Value::String(s) if s == "unlimited" => Ok(None),
            toml::Value::Integer(n) if n <= 0 => self.err(
                span,
                "`address_space_bytes` must be above 0 (or \"unlimited\")",
            ),
            toml::Value::Integer(n) => {
                let n = n.unsigned_abs();
                if n < memory {
                    return self.err(
                        span,
                        format!(
                            "`address_space_bytes` ({n}) is below `memory_bytes` ({memory}): it \
                             would be the tighter bound; lower `memory_bytes` instead, or give \
                             the address space at least as much"
                        ),
                    );
                }
                Ok(Some(n))
            }
            other => self.err(
                span,
                format!("`address_space_bytes` is a number of bytes or \"unlimited\", not {other}"),
            ),
        }
    }

    fn gate(&self, g: raw::Gate) -> Result<Gate, ConfigError> {
        let state = match &g.state {
            Some(s) => self.host_path(s, "`state`")?,
            None => self.base.join(".boxmaker"),
        };
        if beside(&state, AUDIT_KEY).is_none() {
            return Err(self.src.error(
                g.state.as_ref().map(|s| s.span().start),
                format!(
                    "the state directory {} has no name to keep boxmaker's keys beside \
                     (`STATE.audit-key`, `STATE.oauth-key`); name a directory of its own",
                    state.display()
                ),
            ));
        }
        let store = match g.store {
            None => None,
            Some(url) => {
                let text = url.get_ref();
                let scheme_ok = ["postgres://", "postgresql://"]
                    .iter()
                    .any(|s| text.starts_with(s));
                if !scheme_ok {
                    return self.err(
                        url.span(),
                        "`[gate] store` is a PostgreSQL URL (`postgres://USER@HOST/DB`); leave \
                         it out for the embedded SQLite database in `state`",
                    );
                }
                // `user:password@`: a password never goes in the config (docs/spec.md §6).
                let authority = text
                    .split_once("://")
                    .map_or("", |(_, rest)| rest.split(['/', '?']).next().unwrap_or(""));
                if authority
                    .rsplit_once('@')
                    .is_some_and(|(userinfo, _)| userinfo.contains(':'))
                    || text.contains("password=")
                {
                    return self.err(
                        url.span(),
                        "`[gate] store` carries a password; give it in the gate's environment \
                         as PGPASSWORD, never in the config",
                    );
                }
                Some(url.into_inner())
            }
        };
        Ok(Gate {
            state,
            store,
            approval_ttl: self.positive(g.approval_ttl, "approval_ttl", 300)?,
            log_arguments: g.log_arguments,
            max_calls_per_session: self.positive(
                g.max_calls_per_session,
                "max_calls_per_session",
                DEFAULT_CALLS_PER_SESSION,
            )?,
            max_pending_per_session: self.positive(
                g.max_pending_per_session,
                "max_pending_per_session",
                DEFAULT_PENDING_PER_SESSION,
            )?,
            approve_in_client: g.approve_in_client,
            max_provenance_values: self.positive(
                g.max_provenance_values,
                "max_provenance_values",
                DEFAULT_PROVENANCE_VALUES,
            )?,
        })
    }

    /// `[audit]`: the key and the witness file live outside the state directory (whoever
    /// can rewrite the log must not reach its anchor through the same directory), as written
    /// and as resolved. Where mounts may not reach them is the one rule of [`own::conflict`].
    fn audit(&self, a: raw::Audit, state: &Path) -> Result<Audit, ConfigError> {
        let state_at = Place::of(state);
        let key = match &a.key {
            Some(k) => {
                let path = self.host_path(k, "`[audit] key`")?;
                self.outside_state(&path, start(k.span()), "`[audit] key`", state, &state_at)?;
                path
            }
            None => {
                let Some(path) = beside(state, AUDIT_KEY) else {
                    return Err(self.src.error(
                        None,
                        format!(
                            "the state directory {} has no name to put the audit key beside; \
                             set `[audit] key`",
                            state.display()
                        ),
                    ));
                };
                self.outside_state(
                    &path,
                    None,
                    "the audit key (by default beside the state directory; set `[audit] key` \
                     to put it elsewhere)",
                    state,
                    &state_at,
                )?;
                path
            }
        };
        let witness_file = match &a.witness_file {
            Some(w) => {
                let path = self.host_path(w, "`[audit] witness_file`")?;
                self.outside_state(
                    &path,
                    start(w.span()),
                    "`[audit] witness_file`",
                    state,
                    &state_at,
                )?;
                let (at, k) = (Place::of(&path), Place::of(&key));
                if at.written == k.written || at.real == k.real {
                    return self.err(w.span(), "`[audit] witness_file` is the audit key's file");
                }
                Some(path)
            }
            None => None,
        };
        let witness_command = match a.witness_command {
            None => None,
            Some(c) => {
                let span = c.span();
                let argv: Vec<String> = c
                    .into_inner()
                    .into_iter()
                    .map(Spanned::into_inner)
                    .collect();
                if argv.first().is_none_or(String::is_empty) {
                    return self.err(
                        span,
                        "`[audit] witness_command` is a program and its arguments, like \
                         [\"logger\", \"-t\", \"boxmaker-audit\"]; it may not be empty",
                    );
                }
                Some(self.host_command(argv))
            }
        };
        Ok(Audit {
            key,
            checkpoint_every: self.positive(
                a.checkpoint_every,
                "checkpoint_every",
                DEFAULT_CHECKPOINT_EVERY,
            )?,
            checkpoint_secs: self.positive(
                a.checkpoint_secs,
                "checkpoint_secs",
                DEFAULT_CHECKPOINT_SECS,
            )?,
            witness_file,
            witness_command,
            journal: a.journal.unwrap_or(true),
        })
    }

    /// Refuses `path` inside the state directory, as written or as resolved.
    fn outside_state(
        &self,
        path: &Path,
        at: Option<usize>,
        what: &str,
        state: &Path,
        state_at: &Place,
    ) -> Result<(), ConfigError> {
        let p = Place::of(path);
        if state_at.holds(&p) {
            return Err(self.src.error(
                at,
                format!(
                    "{what} {} is inside the state directory {}: whoever can rewrite the audit \
                     log could reach it too; put it beside the state directory or elsewhere",
                    path.display(),
                    state.display()
                ),
            ));
        }
        Ok(())
    }

    fn limits(&self, b: raw::Limits) -> Result<BoxLimits, ConfigError> {
        let d = BoxLimits::default();
        let memory_bytes = self.positive(b.memory_bytes, "memory_bytes", d.memory_bytes)?;
        Ok(BoxLimits {
            memory_bytes,
            address_space_bytes: self.address_space(b.address_space_bytes, memory_bytes)?,
            max_processes: self.positive(b.max_processes, "max_processes", d.max_processes)?,
            file_size_bytes: self.positive(
                b.file_size_bytes,
                "file_size_bytes",
                d.file_size_bytes,
            )?,
            timeout_seconds: self.positive(
                b.timeout_seconds,
                "timeout_seconds",
                d.timeout_seconds,
            )?,
            require_landlock: b.require_landlock.unwrap_or(d.require_landlock),
            require_cgroups: b.require_cgroups.unwrap_or(d.require_cgroups),
            max_servers_per_session: self.positive(
                b.max_servers_per_session,
                "max_servers_per_session",
                d.max_servers_per_session,
            )?,
            max_connections_per_session: self.positive(
                b.max_connections_per_session,
                "max_connections_per_session",
                d.max_connections_per_session,
            )?,
            egress_idle_seconds: self.positive(
                b.egress_idle_seconds,
                "egress_idle_seconds",
                d.egress_idle_seconds,
            )?,
            max_upload_bytes: self.positive(
                b.max_upload_bytes,
                "max_upload_bytes",
                d.max_upload_bytes,
            )?,
        })
    }

    /// The mounts, and where each one's `host` is in the file.
    fn mounts(&self, raw: Vec<raw::Mount>) -> Result<(Vec<Mount>, Vec<Range<usize>>), ConfigError> {
        let mut seen: HashMap<PathBuf, usize> = HashMap::new();
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut out: Vec<Mount> = Vec::with_capacity(raw.len());
        let mut spans = Vec::with_capacity(raw.len());
        for m in raw {
            let host = self.host_path(&m.host, "mount `host`")?;
            spans.push(m.host.span());
            let at = self.box_path(&m.at)?;
            let line = self.src.line_of(m.at.span().start);
            if let Some(first) = seen.insert(at.clone(), line) {
                return self.err(
                    m.at.span(),
                    format!("{} is mounted twice (first on line {first})", at.display()),
                );
            }
            let name = match m.name {
                None => None,
                Some(n) => {
                    let name = n.get_ref().clone();
                    if !is_valid_tool_name(&name) {
                        return self.err(
                            n.span(),
                            format!(
                                "mount name {name:?} must be 1 to 64 ASCII letters, digits, `_` \
                                 or `-`"
                            ),
                        );
                    }
                    let line = self.src.line_of(n.span().start);
                    if let Some(first) = names.insert(name.clone(), line) {
                        return self.err(
                            n.span(),
                            format!("mount name {name:?} is used twice (first on line {first})"),
                        );
                    }
                    Some(name)
                }
            };
            let read_only = match m.read_only {
                None => crate::model::HOST_RUN.iter().map(PathBuf::from).collect(),
                Some(list) => self.read_only(&at, list)?,
            };
            out.push(Mount {
                name,
                host,
                at,
                class: m.class.unwrap_or(DataClass::Internal),
                write: m.write,
                untrusted: m.untrusted,
                read_only,
            });
        }
        Ok((out, spans))
    }

    /// A mount's `read_only`: each a name in the mount's top directory (one normal part:
    /// no `/`, not `.` or `..`), none twice. Only a name there holds: a box can rename the
    /// directory that holds a deeper entry, mount point and all, and put its own in its
    /// place (docs/spec.md §4, "What a writable mount keeps").
    fn read_only(
        &self,
        at: &Path,
        list: Vec<Spanned<String>>,
    ) -> Result<Vec<PathBuf>, ConfigError> {
        let mut out: Vec<PathBuf> = Vec::with_capacity(list.len());
        for entry in list {
            let s = entry.get_ref();
            if s.is_empty() || s == "." || s == ".." || s.contains('/') || s.contains('\0') {
                let deeper = s
                    .split('/')
                    .find(|seg| !seg.is_empty() && *seg != "." && *seg != "..")
                    .filter(|_| s.contains('/') && !s.starts_with('/'));
                return self.err(
                    entry.span(),
                    format!(
                        "`read_only` of the mount at {}: {s:?} is not a name in the mount's top \
                         directory (like \".git\"){}",
                        at.display(),
                        match deeper {
                            Some(top) => format!(
                                ": a box can rename the directory that holds a deeper entry and \
                                 put its own in its place; keep {top:?} instead"
                            ),
                            None => String::new(),
                        }
                    ),
                );
            }
            let path = PathBuf::from(s);
            if out.contains(&path) {
                return self.err(
                    entry.span(),
                    format!(
                        "`read_only` of the mount at {} names {s:?} twice",
                        at.display()
                    ),
                );
            }
            out.push(path);
        }
        Ok(out)
    }

    /// A mount point inside the box: absolute, normal components only, not `/` and not
    /// the workspace `/work` or anything under it.
    fn box_path(&self, at: &Spanned<String>) -> Result<PathBuf, ConfigError> {
        let s = at.get_ref();
        let path = Path::new(s);
        if !path.is_absolute() {
            return self.err(
                at.span(),
                format!("mount `at` {s:?} must be an absolute path inside the box"),
            );
        }
        // `Path::components` silently drops interior `.`, so look at the text itself.
        if s.split('/').any(|seg| seg == "." || seg == "..")
            || path
                .components()
                .any(|c| !matches!(c, Component::RootDir | Component::Normal(_)))
        {
            return self.err(
                at.span(),
                format!("mount `at` {s:?} may not contain `.` or `..`"),
            );
        }
        let normal: PathBuf = path.components().collect();
        if normal == Path::new("/") {
            return self.err(at.span(), "mount `at` may not be / (the box's root)");
        }
        if normal.starts_with("/work") {
            return self.err(
                at.span(),
                format!("mount `at` {s:?} is inside /work, which is the session's workspace"),
            );
        }
        if let Some(r) = RESERVED.iter().find(|r| normal.starts_with(r)) {
            return self.err(
                at.span(),
                format!(
                    "mount `at` {s:?} is under {r}, which the box builds itself; \
                     mount somewhere else, such as /data/NAME"
                ),
            );
        }
        Ok(normal)
    }

    /// A tool's `mounts = [...]`: names of mounts, each defined, none twice.
    fn tool_mounts(
        &self,
        tool: &str,
        list: Option<Spanned<Vec<Spanned<String>>>>,
        mounts: &[Mount],
    ) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(list) = list else {
            return Ok(None);
        };
        let mut out: Vec<String> = Vec::new();
        for n in list.into_inner() {
            let name = n.get_ref();
            if !mounts
                .iter()
                .any(|m| m.name.as_deref() == Some(name.as_str()))
            {
                let known: Vec<&str> = mounts.iter().filter_map(|m| m.name.as_deref()).collect();
                return self.err(
                    n.span(),
                    format!(
                        "tool {tool:?} names the mount {name:?}, but no [[mount]] has `name = \
                         {name:?}` ({})",
                        if known.is_empty() {
                            "no mount has a name yet".to_string()
                        } else {
                            format!("named mounts: {}", known.join(", "))
                        }
                    ),
                );
            }
            if out.contains(name) {
                return self.err(
                    n.span(),
                    format!("tool {tool:?} names the mount {name:?} twice"),
                );
            }
            out.push(name.clone());
        }
        Ok(Some(out))
    }

    /// The `[[egress]]` rules: each `host` a name, a `*.suffix` glob, `*` or an address or
    /// CIDR; `ports` 1 to 65535, none twice; names unique.
    fn egress(&self, raw: Vec<raw::Egress>) -> Result<Vec<EgressRule>, ConfigError> {
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut out = Vec::with_capacity(raw.len());
        for e in raw {
            let written = e.host.get_ref().clone();
            let host = HostPattern::parse(&written)
                .or_else(|why| self.err(e.host.span(), format!("egress `host` {why}")))?;
            let line = self.src.line_of(e.host.span().start);
            let name = match e.name {
                None => None,
                Some(n) => {
                    let name = n.get_ref().clone();
                    if !is_valid_tool_name(&name) {
                        return self.err(
                            n.span(),
                            format!(
                                "egress name {name:?} must be 1 to 64 ASCII letters, digits, `_` or `-`"
                            ),
                        );
                    }
                    let at = self.src.line_of(n.span().start);
                    if let Some(first) = names.insert(name.clone(), at) {
                        return self.err(
                            n.span(),
                            format!("egress name {name:?} is used twice (first on line {first})"),
                        );
                    }
                    Some(name)
                }
            };
            let ports = match e.ports {
                None => DEFAULT_PORTS.to_vec(),
                Some(list) => {
                    let span = list.span();
                    let ports = self.port_list(list.into_inner(), "port")?;
                    if ports.is_empty() {
                        return self.err(
                            span,
                            "`ports` may not be empty (leave it out for 443 and 80)",
                        );
                    }
                    ports
                }
            };
            // A tunnel is for TLS: by default only to 443, and only where `ports` lets a
            // connection go at all.
            let tunnel_ports = match e.tunnel_ports {
                None => ports
                    .iter()
                    .copied()
                    .filter(|p| *p == DEFAULT_TUNNEL_PORT)
                    .collect(),
                Some(list) => {
                    let spans: Vec<Range<usize>> =
                        list.get_ref().iter().map(Spanned::span).collect();
                    let tunnels = self.port_list(list.into_inner(), "tunnel port")?;
                    for (port, span) in tunnels.iter().zip(spans) {
                        if !ports.contains(port) {
                            let all: Vec<String> = ports.iter().map(u16::to_string).collect();
                            return self.err(
                                span,
                                format!(
                                    "tunnel port {port} is not one of this rule's `ports` \
                                     ({}): a tunnel goes only where the rule lets connections go",
                                    all.join(", ")
                                ),
                            );
                        }
                    }
                    tunnels
                }
            };
            let class = e.class.unwrap_or(DataClass::Public);
            out.push(EgressRule {
                name,
                host,
                ports,
                tunnel_ports,
                class,
                // What it answers is, unless the rule says otherwise, what it is cleared for.
                returns: e.returns.unwrap_or(class),
                // What it answers is someone else's words unless the person says otherwise.
                trusted: e.trusted.unwrap_or(false),
                written,
                line,
            });
        }
        Ok(out)
    }

    /// A list of ports (`what`: `port` or `tunnel port`, for messages): each 1 to 65535,
    /// none twice.
    fn port_list(&self, list: Vec<Spanned<u64>>, what: &str) -> Result<Vec<u16>, ConfigError> {
        let mut ports: Vec<u16> = Vec::new();
        for p in list {
            let port = match u16::try_from(*p.get_ref()) {
                Ok(port) if port > 0 => port,
                _ => {
                    return self.err(
                        p.span(),
                        format!("{what} {} is not from 1 to 65535", p.get_ref()),
                    );
                }
            };
            if ports.contains(&port) {
                return self.err(p.span(), format!("{what} {port} is listed twice"));
            }
            ports.push(port);
        }
        Ok(ports)
    }

    /// A tool's `egress = [...]`: each a rule's `name` or `host` as written, none twice.
    fn tool_egress(
        &self,
        tool: &str,
        network: bool,
        list: Option<Spanned<Vec<Spanned<String>>>>,
        rules: &[EgressRule],
    ) -> Result<Option<Vec<String>>, ConfigError> {
        let Some(list) = list else {
            return Ok(None);
        };
        if !network {
            return self.err(
                list.span(),
                format!(
                    "tool {tool:?} names egress rules but has no `network = true`: its box reaches nothing"
                ),
            );
        }
        let mut out: Vec<String> = Vec::new();
        for n in list.into_inner() {
            let name = n.get_ref();
            if !rules
                .iter()
                .any(|r| r.name.as_deref() == Some(name.as_str()) || r.written == *name)
            {
                return self.err(
                    n.span(),
                    format!(
                        "tool {tool:?} names the egress rule {name:?}, but no [[egress]] has that `name` or `host`"
                    ),
                );
            }
            if out.contains(name) {
                return self.err(
                    n.span(),
                    format!("tool {tool:?} names the egress rule {name:?} twice"),
                );
            }
            out.push(name.clone());
        }
        Ok(Some(out))
    }

    fn tools(
        &self,
        raw: Vec<raw::Tool>,
        mounts: &[Mount],
        egress: &[EgressRule],
        secrets: &[Secret],
    ) -> Result<Vec<Tool>, ConfigError> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut out = Vec::with_capacity(raw.len());
        for t in raw {
            let name = t.name.get_ref().clone();
            if !is_valid_tool_name(&name) {
                return self.err(
                    t.name.span(),
                    format!("tool name {name:?} must be 1 to 64 ASCII letters, digits, `_` or `-`"),
                );
            }
            let line = self.src.line_of(t.name.span().start);
            if let Some(first) = seen.insert(name.clone(), line) {
                return self.err(
                    t.name.span(),
                    format!("tool {name:?} is defined twice (first on line {first})"),
                );
            }
            if let Some(url) = t.url {
                if let Some(span) = t
                    .builtin
                    .as_ref()
                    .map(|_| url.span())
                    .or_else(|| t.mcp.as_ref().map(Spanned::span))
                {
                    return self.err(
                        span,
                        format!(
                            "tool {name:?} has `url` and also `builtin` or `mcp`; give exactly one"
                        ),
                    );
                }
                for (key, span) in [
                    ("network", t.network.then(|| url.span())),
                    ("env", (!t.env.is_empty()).then(|| url.span())),
                    ("mounts", t.mounts.as_ref().map(Spanned::span)),
                    ("secrets", t.secrets.as_ref().map(Spanned::span)),
                ] {
                    if let Some(span) = span {
                        return self.err(
                            span,
                            format!(
                                "`{key}` is not for a remote tool: {name:?} runs in no box (its \
                                 connection is decided by the [[egress]] rules, `egress = [...]` \
                                 names those it may use; its credential is `bearer` or `headers`)"
                            ),
                        );
                    }
                }
                let kind = self.remote(
                    &name,
                    url,
                    t.transport,
                    t.bearer,
                    t.headers,
                    t.oauth,
                    t.prefix,
                    t.pin,
                    t.idle_timeout,
                    secrets,
                )?;
                let tool_egress = self.tool_egress(&name, true, t.egress, egress)?;
                out.push(Tool {
                    name,
                    kind,
                    class: t.class.unwrap_or(DataClass::Public),
                    untrusted: t.untrusted,
                    network: false,
                    env: Vec::new(),
                    // No box: it can read no mount, so its reach is public.
                    mounts: Some(Vec::new()),
                    egress: tool_egress,
                    secrets: SecretVars::new(),
                });
                continue;
            }
            for (key, span) in [
                ("transport", t.transport.as_ref().map(Spanned::span)),
                ("bearer", t.bearer.as_ref().map(Spanned::span)),
                ("headers", t.headers.as_ref().map(Spanned::span)),
                ("oauth", t.oauth.as_ref().map(Spanned::span)),
            ] {
                if let Some(span) = span {
                    return self.err(
                        span,
                        format!("`{key}` is only for a remote tool (`url = \"https://…\"`), and {name:?} is not one"),
                    );
                }
            }
            let kind = match (t.builtin, t.mcp) {
                (Some(_), Some(mcp)) => {
                    return self.err(
                        mcp.span(),
                        format!("tool {name:?} has both `builtin` and `mcp`; give exactly one"),
                    );
                }
                (None, None) => {
                    return self.err(
                        t.name.span(),
                        format!(
                            "tool {name:?} needs `builtin = \"...\"` (read_file, write_file, \
                             list_dir or run), `mcp = [\"command\", ...]` or `url = \
                             \"https://…\"`"
                        ),
                    );
                }
                (Some(b), None) => {
                    for (key, span) in [
                        ("prefix", t.prefix.as_ref().map(Spanned::span)),
                        ("pin", t.pin.as_ref().map(Spanned::span)),
                        ("idle_timeout", t.idle_timeout.as_ref().map(Spanned::span)),
                    ] {
                        if let Some(span) = span {
                            return self.err(
                                span,
                                format!("`{key}` is only for an mcp tool, and {name:?} is builtin"),
                            );
                        }
                    }
                    ToolKind::Builtin(b.into())
                }
                (None, Some(mcp)) => self.mcp(&name, mcp, t.prefix, t.pin, t.idle_timeout)?,
            };
            let mut env = Vec::with_capacity(t.env.len());
            for v in t.env {
                if !is_valid_env_name(v.get_ref()) {
                    return self.err(
                        v.span(),
                        format!(
                            "{:?} is not an environment variable name (letters, digits and `_`, \
                             not starting with a digit)",
                            v.get_ref()
                        ),
                    );
                }
                if let Some(s) = secrets
                    .iter()
                    .find(|s| s.source == SecretSource::Env(v.get_ref().clone()))
                {
                    return self.err(
                        v.span(),
                        format!(
                            "tool {name:?} passes {:?} through `env`, which is where the secret \
                             {:?} is read from: hand it over with `secrets = [{:?}]`, so its \
                             value is redacted from every answer",
                            v.get_ref(),
                            s.name,
                            s.name
                        ),
                    );
                }
                env.push(v.into_inner());
            }
            let tool_mounts = self.tool_mounts(&name, t.mounts, mounts)?;
            let tool_egress = self.tool_egress(&name, t.network, t.egress, egress)?;
            let tool_secrets = self.tool_secrets(&name, &kind, t.secrets, &env, secrets)?;
            out.push(Tool {
                name,
                kind,
                class: t.class.unwrap_or(DataClass::Public),
                untrusted: t.untrusted,
                network: t.network,
                env,
                mounts: tool_mounts,
                egress: tool_egress,
                secrets: tool_secrets,
            });
        }
        Ok(out)
    }

    /// The `[[secret]]`s: each name unique, exactly one of `env`, `file`, `command`; a file
    /// never inside a mount (a box would read it).
    fn secrets(&self, raw: Vec<raw::Secret>) -> Result<Vec<Secret>, ConfigError> {
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut out = Vec::with_capacity(raw.len());
        for s in raw {
            let name = s.name.get_ref().clone();
            if !is_valid_tool_name(&name) {
                return self.err(
                    s.name.span(),
                    format!(
                        "secret name {name:?} must be 1 to 64 ASCII letters, digits, `_` or `-`"
                    ),
                );
            }
            let line = self.src.line_of(s.name.span().start);
            if let Some(first) = seen.insert(name.clone(), line) {
                return self.err(
                    s.name.span(),
                    format!("secret {name:?} is defined twice (first on line {first})"),
                );
            }
            let given = [s.env.is_some(), s.file.is_some(), s.command.is_some()]
                .iter()
                .filter(|x| **x)
                .count();
            if given != 1 {
                return self.err(
                    s.name.span(),
                    format!(
                        "secret {name:?} needs exactly one of `env = \"VARIABLE\"`, `file = \
                         \"PATH\"` or `command = [\"program\", ...]` (it has {given})"
                    ),
                );
            }
            let source = if let Some(v) = s.env {
                if !is_valid_env_name(v.get_ref()) {
                    return self.err(
                        v.span(),
                        format!(
                            "`env` of secret {name:?}: {:?} is not an environment variable name \
                             (letters, digits and `_`, not starting with a digit)",
                            v.get_ref()
                        ),
                    );
                }
                SecretSource::Env(v.into_inner())
            } else if let Some(f) = s.file {
                let path = self.host_path(&f, &format!("`file` of secret {name:?}"))?;
                // Outside every mount: `own::conflict`.
                SecretSource::File(path)
            } else if let Some(c) = s.command {
                let span = c.span();
                let argv: Vec<String> = c
                    .into_inner()
                    .into_iter()
                    .map(Spanned::into_inner)
                    .collect();
                if argv.first().is_none_or(String::is_empty) {
                    return self.err(
                        span,
                        format!(
                            "`command` of secret {name:?} is a program and its arguments, like \
                             [\"pass\", \"show\", \"gh\"]; it may not be empty"
                        ),
                    );
                }
                SecretSource::Command(self.host_command(argv))
            } else {
                return self.err(
                    s.name.span(),
                    format!("secret {name:?} says where it comes from"),
                );
            };
            out.push(Secret { name, source, line });
        }
        Ok(out)
    }

    /// A tool's `secrets`: a table `{ VARIABLE = "NAME" }`, or a list of names of secrets read
    /// from a variable (each passed under that variable's name). Only a stdio server or `run`
    /// has a box that runs a program to hand a variable to; every name must be a
    /// `[[secret]]`, every variable a name no other part of the box's environment uses.
    fn tool_secrets(
        &self,
        tool: &str,
        kind: &ToolKind,
        value: Option<Spanned<toml::Value>>,
        env: &[String],
        secrets: &[Secret],
    ) -> Result<SecretVars, ConfigError> {
        let mut out = SecretVars::new();
        let Some(value) = value else {
            return Ok(out);
        };
        let span = value.span();
        if !matches!(kind, ToolKind::Mcp { .. } | ToolKind::Builtin(Builtin::Run)) {
            return self.err(
                span,
                format!(
                    "tool {tool:?} names `secrets`, which only a stdio server (`mcp`) or `run` \
                     is handed (as variables of its box)"
                ),
            );
        }
        let defined = |name: &str| -> Result<&Secret, ConfigError> {
            secrets.iter().find(|s| s.name == name).map_or_else(
                || {
                    self.err(
                        span.clone(),
                        format!(
                            "tool {tool:?} names the secret {name:?}, but no [[secret]] has \
                             `name = {name:?}`"
                        ),
                    )
                },
                Ok,
            )
        };
        let pairs: Vec<(String, String)> = match value.into_inner() {
            toml::Value::Table(t) => {
                let mut pairs = Vec::with_capacity(t.len());
                for (var, v) in t {
                    let Some(secret) = v.as_str() else {
                        return self.err(
                            span,
                            format!(
                                "`secrets` of tool {tool:?} maps a variable to a secret's name, \
                                 like {{ GITHUB_TOKEN = \"gh\" }}; {var:?} maps to a {}",
                                v.type_str()
                            ),
                        );
                    };
                    defined(secret)?;
                    pairs.push((var, secret.to_string()));
                }
                pairs
            }
            toml::Value::Array(items) => {
                let mut pairs = Vec::with_capacity(items.len());
                for v in items {
                    let Some(secret) = v.as_str() else {
                        return self.err(
                            span,
                            format!("`secrets` of tool {tool:?} lists secrets by name (strings)"),
                        );
                    };
                    let s = defined(secret)?;
                    let SecretSource::Env(var) = &s.source else {
                        return self.err(
                            span,
                            format!(
                                "tool {tool:?} lists the secret {secret:?}, which is read from {}: \
                                 there is no variable name to pass it under; write \
                                 `secrets = {{ VARIABLE = {secret:?} }}`",
                                s.source.describe()
                            ),
                        );
                    };
                    if pairs.iter().any(|(_, n)| n == secret) {
                        return self.err(
                            span,
                            format!("tool {tool:?} names the secret {secret:?} twice"),
                        );
                    }
                    pairs.push((var.clone(), secret.to_string()));
                }
                pairs
            }
            other => {
                return self.err(
                    span,
                    format!(
                        "`secrets` of tool {tool:?} is a table {{ VARIABLE = \"NAME\" }} or a list \
                         of names, not a {}",
                        other.type_str()
                    ),
                );
            }
        };
        for (var, secret) in pairs {
            if !is_valid_env_name(&var) {
                return self.err(
                    span,
                    format!(
                        "`secrets` of tool {tool:?}: {var:?} is not an environment variable name \
                         (letters, digits and `_`, not starting with a digit)"
                    ),
                );
            }
            if RESERVED_VARIABLES.contains(&var.as_str()) {
                return self.err(
                    span,
                    format!(
                        "`secrets` of tool {tool:?} passes a secret as {var}, which boxmaker \
                         sets in every box itself; choose another variable"
                    ),
                );
            }
            if env.contains(&var) {
                return self.err(
                    span,
                    format!(
                        "tool {tool:?} passes {var} both through `env` and as the secret \
                         {secret:?}; name it once"
                    ),
                );
            }
            if out.insert(var.clone(), secret).is_some() {
                return self.err(
                    span,
                    format!("`secrets` of tool {tool:?} passes {var} twice"),
                );
            }
        }
        Ok(out)
    }

    /// A remote tool's `url`, `transport`, credentials and server settings.
    #[allow(clippy::too_many_arguments)]
    fn remote(
        &self,
        name: &str,
        url: Spanned<String>,
        transport: Option<Spanned<String>>,
        bearer: Option<Spanned<String>>,
        headers: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
        oauth: Option<Spanned<toml::Value>>,
        prefix: Option<Spanned<String>>,
        pin: Option<Spanned<bool>>,
        idle_timeout: Option<Spanned<u64>>,
        secrets: &[Secret],
    ) -> Result<ToolKind, ConfigError> {
        let parsed = RemoteUrl::parse(url.get_ref())
            .or_else(|why| self.err(url.span(), format!("`url` of tool {name:?} {why}")))?;
        let transport = match transport {
            None => Transport::StreamableHttp,
            Some(t) => match t.get_ref().as_str() {
                "streamable-http" => Transport::StreamableHttp,
                "sse" => Transport::Sse,
                other => {
                    return self.err(
                        t.span(),
                        format!("`transport` is \"streamable-http\" or \"sse\", not {other:?}"),
                    );
                }
            },
        };
        let defined = |n: &Spanned<String>, what: &str| -> Result<String, ConfigError> {
            if secrets.iter().any(|s| s.name == *n.get_ref()) {
                Ok(n.get_ref().clone())
            } else {
                self.err(
                    n.span(),
                    format!(
                        "{what} of tool {name:?} names the secret {:?}, but no [[secret]] has \
                         `name = {:?}`",
                        n.get_ref(),
                        n.get_ref()
                    ),
                )
            }
        };
        let bearer = bearer.map(|b| defined(&b, "`bearer`")).transpose()?;
        let oauth = match oauth {
            None => None,
            Some(o) => {
                if let Some(b) = &bearer {
                    return self.err(
                        o.span(),
                        format!(
                            "tool {name:?} has both `oauth` and `bearer = {b:?}`; the sign-in's \
                             token is its credential, so give one of them"
                        ),
                    );
                }
                let span = o.span();
                let read = remote::OAuth::read(o.get_ref()).or_else(|why| {
                    self.err(span.clone(), format!("`oauth` of tool {name:?} {why}"))
                })?;
                if let Some(s) = &read.client_secret {
                    defined(&Spanned::new(span, s.clone()), "`oauth.client_secret`")?;
                }
                Some(read)
            }
        };
        let mut out_headers = Vec::new();
        for (h, v) in headers.map(Spanned::into_inner).unwrap_or_default() {
            if !remote::is_header_name(&h) {
                return self.err(v.span(), format!("{h:?} is not an HTTP header name"));
            }
            let lower = h.to_ascii_lowercase();
            if remote::RESERVED_HEADERS.contains(&lower.as_str())
                || (lower == "authorization" && (bearer.is_some() || oauth.is_some()))
            {
                return self.err(
                    v.span(),
                    format!("tool {name:?} may not set the header {h}: boxmaker's client sets it"),
                );
            }
            let value = match v
                .get_ref()
                .strip_prefix(crate::secret::HEADER_SECRET_PREFIX)
            {
                Some(secret) => HeaderValue::Secret(defined(
                    &Spanned::new(v.span(), secret.to_string()),
                    &format!("header {h}"),
                )?),
                None => {
                    if !v
                        .get_ref()
                        .bytes()
                        .all(|b| b == b' ' || b.is_ascii_graphic())
                    {
                        return self.err(
                            v.span(),
                            format!("the header {h} of tool {name:?} holds a character a header value may not"),
                        );
                    }
                    HeaderValue::Literal(v.into_inner())
                }
            };
            out_headers.push((h, value));
        }
        let ToolKind::Mcp {
            prefix,
            pin,
            idle_timeout,
            ..
        } = self.mcp(
            name,
            Spanned::new(url.span(), vec![Spanned::new(url.span(), "remote".into())]),
            prefix,
            pin,
            idle_timeout,
        )?
        else {
            return self.err(url.span(), "internal: a server's settings");
        };
        Ok(ToolKind::Remote {
            url: parsed,
            transport,
            prefix,
            pin,
            idle_timeout,
            bearer,
            headers: out_headers,
            oauth,
        })
    }

    fn mcp(
        &self,
        name: &str,
        mcp: Spanned<Vec<Spanned<String>>>,
        prefix: Option<Spanned<String>>,
        pin: Option<Spanned<bool>>,
        idle_timeout: Option<Spanned<u64>>,
    ) -> Result<ToolKind, ConfigError> {
        let span = mcp.span();
        let argv = mcp.into_inner();
        let Some(first) = argv.first() else {
            return self.err(span, format!("`mcp` of tool {name:?} must name a command"));
        };
        if first.get_ref().is_empty() {
            return self.err(
                first.span(),
                format!("the command of tool {name:?} may not be empty"),
            );
        }
        let prefix = match prefix {
            None => None,
            Some(p) => {
                let s = p.get_ref();
                // The exposed name is PREFIX_TOOL: the prefix and `_` must leave room.
                if !(s.is_empty() || (s.len() < TOOL_NAME_MAX && is_valid_tool_name(s))) {
                    return self.err(
                        p.span(),
                        format!(
                            "`prefix` {s:?} must be empty or up to {} ASCII letters, digits, \
                             `_` or `-`",
                            TOOL_NAME_MAX - 2
                        ),
                    );
                }
                Some(p.into_inner())
            }
        };
        let idle_timeout = match idle_timeout {
            Some(t) if *t.get_ref() == 0 => {
                return self.err(
                    t.span(),
                    "`idle_timeout` must be above 0 (leave it out for none)",
                );
            }
            t => t.map(Spanned::into_inner),
        };
        Ok(ToolKind::Mcp {
            argv: argv.into_iter().map(Spanned::into_inner).collect(),
            prefix,
            pin: pin.is_some_and(Spanned::into_inner),
            idle_timeout,
        })
    }

    /// `[lists]`: each a name of tool-name characters and a list of strings, integers or
    /// booleans, shared by every condition that names it (and kept as written, for the
    /// typed tests that read a list as addresses or hosts).
    fn lists(
        &self,
        raw: BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
    ) -> Result<Lists, ConfigError> {
        let mut out = Lists::default();
        for (name, values) in raw {
            if !is_valid_tool_name(&name) {
                return self.err(
                    values.span(),
                    format!("list name {name:?} must be 1 to 64 ASCII letters, digits, `_` or `-`"),
                );
            }
            let what = format!("list {name:?}");
            let values = values.into_inner();
            let scalars = values
                .iter()
                .map(|v| self.scalar(v, &what))
                .collect::<Result<Vec<_>, _>>()?;
            out.plain.insert(
                name.clone(),
                Arc::new(List::new(Some(name.clone()), scalars)),
            );
            out.entries.insert(name, values);
        }
        Ok(out)
    }

    /// A value a condition compares with: a string, an integer or a boolean.
    fn scalar(&self, v: &Spanned<toml::Value>, what: &str) -> Result<Scalar, ConfigError> {
        match v.get_ref() {
            toml::Value::String(s) => Ok(Scalar::Str(s.clone())),
            toml::Value::Integer(n) => Ok(Scalar::Int(*n)),
            toml::Value::Boolean(b) => Ok(Scalar::Bool(*b)),
            other => self.err(
                v.span(),
                format!(
                    "{what} holds a {}; a condition compares strings, integers and booleans",
                    other.type_str()
                ),
            ),
        }
    }

    /// One `when` entry: a checked pointer and exactly one test.
    pub(crate) fn condition(&self, w: raw::When, lists: &Lists) -> Result<Condition, ConfigError> {
        let pointer = Pointer::new(w.pointer.get_ref().clone())
            .or_else(|e| self.err(w.pointer.span(), format!("condition `pointer`: {e}")))?;
        let at = format!("condition on {pointer}");
        let mut tests: Vec<(Range<usize>, Test)> = Vec::new();
        if let Some(v) = &w.equals {
            tests.push((
                v.span(),
                Test::Equals(self.scalar(v, &format!("`equals` of the {at}"))?),
            ));
        }
        if let Some(list) = &w.one_of {
            let what = format!("`one_of` of the {at}");
            let values = list
                .get_ref()
                .iter()
                .map(|v| self.scalar(v, &what))
                .collect::<Result<Vec<_>, _>>()?;
            tests.push((list.span(), Test::OneOf(Arc::new(List::new(None, values)))));
        }
        let typed_at = typed::At {
            src: &self.src,
            what: &at,
        };
        if let Some(name) = &w.in_list {
            let (list, _) = typed_at.list(lists, name.get_ref(), name.span())?;
            tests.push((name.span(), Test::OneOf(Arc::clone(list))));
        }
        if let Some(g) = &w.glob {
            tests.push((g.span(), Test::Glob(self.globs(g, &at)?)));
        }
        if let Some(r) = &w.range {
            let &[min, max] = r.get_ref().as_slice() else {
                return self.err(
                    r.span(),
                    format!("`range` of the {at} is [min, max], two integers"),
                );
            };
            if min > max {
                return self.err(
                    r.span(),
                    format!("`range` of the {at} has min {min} above max {max}"),
                );
            }
            tests.push((r.span(), Test::Range { min, max }));
        }
        if let Some(v) = &w.email {
            tests.push((v.span(), typed::email(&typed_at, v, lists)?));
        }
        if let Some(v) = &w.url {
            tests.push((v.span(), typed::url(&typed_at, v, lists)?));
        }
        if let Some(v) = &w.links {
            tests.push((v.span(), typed::links(&typed_at, v, lists)?));
        }
        if let Some(v) = &w.from {
            let Some(t) = FromTest::from_name(v.get_ref()) else {
                return self.err(
                    v.span(),
                    format!(
                        "`from` of the {at} is \"trusted\" or \"not_untrusted\", not {:?}",
                        v.get_ref()
                    ),
                );
            };
            tests.push((v.span(), Test::From(t)));
        }
        let mut tests = tests.into_iter();
        let Some((_, test)) = tests.next() else {
            return self.err(
                w.pointer.span(),
                format!(
                    "{at} needs one test: equals, one_of, in, glob, range, email, url, links or \
                     from"
                ),
            );
        };
        if let Some((span, _)) = tests.next() {
            return self.err(
                span,
                format!("{at} has more than one test; write each as a `when` of its own"),
            );
        }
        let c = Condition::new(pointer, test);
        Ok(if w.optional { c.optional() } else { c })
    }

    /// `glob = "pattern"` or `glob = ["p1", "p2"]` (any of them).
    fn globs(&self, g: &Spanned<toml::Value>, at: &str) -> Result<Vec<Pattern>, ConfigError> {
        let texts: Vec<&toml::Value> = match g.get_ref() {
            toml::Value::Array(items) if !items.is_empty() => items.iter().collect(),
            one @ toml::Value::String(_) => vec![one],
            _ => {
                return self.err(
                    g.span(),
                    format!("`glob` of the {at} is a string or a non-empty list of strings"),
                );
            }
        };
        texts
            .into_iter()
            .map(|t| match t.as_str().map(Pattern::new) {
                Some(Ok(p)) => Ok(p),
                Some(Err(e)) => self.err(g.span(), format!("`glob` of the {at}: {e}")),
                None => self.err(g.span(), format!("`glob` of the {at} holds a non-string")),
            })
            .collect()
    }

    fn grants(&self, raw: Vec<raw::Grant>, lists: &Lists) -> Result<Grants, ConfigError> {
        let mut out = Grants::new();
        for g in raw {
            let tool = self.tool_pattern(&g.tool, "grant")?;
            let sessions = match &g.sessions {
                None => Pattern::any(),
                Some(s) => self.pattern(s, "grant", "sessions", |b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':')
                })?,
            };
            let mut grant = Grant::new(tool, g.effect.into())
                .sessions(sessions)
                .max_class(g.max_class.unwrap_or(DataClass::Secret))
                .if_untrusted(g.if_untrusted.map_or(Effect::Allow, Effect::from));
            if let Some(t) = g.expires {
                grant = grant.expires(Timestamp(t));
            }
            let conditions = g.when.len();
            for w in g.when {
                grant = grant.when(self.condition(w, lists)?);
            }
            if let Some(c) = &g.closed
                && *c.get_ref()
            {
                if conditions > policy::MAX_CLOSED_CONDITIONS {
                    return self.err(
                        c.span(),
                        format!(
                            "a closed grant has at most {} conditions; this one has {conditions}",
                            policy::MAX_CLOSED_CONDITIONS
                        ),
                    );
                }
                grant = grant.closed();
            }
            out.push(grant);
        }
        Ok(out)
    }

    /// The `tool` pattern of a `table` (`grant`, `label rule`): tool-name characters and
    /// the wildcards.
    pub(crate) fn tool_pattern(
        &self,
        value: &Spanned<String>,
        table: &str,
    ) -> Result<Pattern, ConfigError> {
        self.pattern(value, table, "tool", |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
        })
    }

    /// A pattern of a `table` (`grant`, `label rule`): not empty, and only characters that
    /// can occur in what it matches (checked by `ok`) or the wildcards `*` and `?`.
    fn pattern(
        &self,
        value: &Spanned<String>,
        table: &str,
        key: &str,
        ok: impl Fn(u8) -> bool,
    ) -> Result<Pattern, ConfigError> {
        let s = value.get_ref();
        if let Some(bad) = s
            .chars()
            .find(|&c| !(c.is_ascii() && (ok(c as u8) || c == '*' || c == '?')))
        {
            return self.err(
                value.span(),
                format!(
                    "{table} `{key}` pattern {s:?} holds {bad:?}, which no {key} name can contain"
                ),
            );
        }
        Pattern::new(s.clone()).or_else(|e| self.err(value.span(), format!("{table} `{key}`: {e}")))
    }
}

impl Ctx<'_> {
    /// The `[[label]]` tables: each a tool pattern, a grant's conditions, and a `class`
    /// and/or `untrusted = true`.
    pub(crate) fn labels(
        &self,
        raw: Vec<raw::Label>,
        lists: &Lists,
    ) -> Result<Vec<LabelRule>, ConfigError> {
        let mut out = Vec::with_capacity(raw.len());
        for l in raw {
            let line = self.src.line_of(l.tool.span().start);
            if let Some(c) = &l.closed {
                return self.err(
                    c.span(),
                    format!(
                        "the label rule on line {line} has `closed`, which only a grant has: \
                         it narrows what a grant lets through, and a label rule lets nothing \
                         through (remove it; the rule's `when` says which calls it labels)"
                    ),
                );
            }
            let tool = self.tool_pattern(&l.tool, "label rule")?;
            let untrusted = l.untrusted.as_ref().is_some_and(|u| *u.get_ref());
            let source = match &l.source {
                Some(p) if p.get_ref().starts_with('/') && p.get_ref().len() > 1 => {
                    Some(p.get_ref().clone())
                }
                Some(p) => {
                    return self.err(
                        p.span(),
                        format!(
                            "the label rule on line {line} has `source = {:?}`, which is not \
                             a JSON pointer to an argument: write the argument that names the \
                             place read, like \"/url\" or \"/file_path\"",
                            p.get_ref()
                        ),
                    );
                }
                None => None,
            };
            let shows = match &l.shows {
                Some(name) => Some(self.shows(name, lists, line)?),
                None => None,
            };
            if shows.is_some() && source.is_some() {
                return self.err(
                    l.tool.span(),
                    format!(
                        "the label rule on line {line} has both `shows` and `source`: a \
                         `shows` rule labels an answer after the call, a `source` says what a \
                         call reads before it; write them as two rules"
                    ),
                );
            }
            if shows.is_some() && l.class.is_none() && !untrusted {
                return self.err(
                    l.tool.span(),
                    format!(
                        "the label rule on line {line} has `shows` and raises nothing: give \
                         it a `class` (public, internal, confidential or secret) or \
                         `untrusted = true`"
                    ),
                );
            }
            if l.class.is_none() && !untrusted && source.is_none() {
                // At `untrusted = false` where the rule says it, else at its `tool`.
                let at = l
                    .untrusted
                    .as_ref()
                    .map_or(l.tool.span(), toml::Spanned::span);
                return self.err(
                    at,
                    format!(
                        "the label rule on line {line} raises nothing: give it a `class` \
                         (public, internal, confidential or secret), `untrusted = true`, or a \
                         `source`"
                    ),
                );
            }
            let mut when = Vec::with_capacity(l.when.len());
            for w in l.when {
                when.push(self.condition(w, lists)?);
            }
            out.push(LabelRule {
                tool,
                when,
                class: l.class,
                untrusted,
                reason: l.reason.map(toml::Spanned::into_inner),
                source,
                shows,
                line,
            });
        }
        Ok(out)
    }

    /// A label rule's `shows`: the `[lists]` list it names, each entry read as the values
    /// reader reads an answer; an entry that holds no such value is refused.
    fn shows(
        &self,
        name: &toml::Spanned<String>,
        lists: &Lists,
        line: usize,
    ) -> Result<Shows, ConfigError> {
        let what = format!("the label rule on line {line}'s `shows`");
        let at = crate::typed::At {
            src: &self.src,
            what: &what,
        };
        let (_, entries) = at.list(lists, name.get_ref(), name.span())?;
        let mut values = Vec::new();
        for e in entries {
            let Some(text) = e.get_ref().as_str() else {
                return self.err(
                    e.span(),
                    format!(
                        "{what}: list {:?} holds {}, which is no text an answer could show \
                         (write it as a string)",
                        name.get_ref(),
                        e.get_ref()
                    ),
                );
            };
            let found = policy::values::in_answer(text).into_values();
            if found.is_empty() {
                return self.err(
                    e.span(),
                    format!(
                        "{what}: {text:?} in list {:?} holds no value the values reader \
                         finds in an answer (an IBAN, a mail address, a phone number, a link \
                         or host, an account number): it would label nothing",
                        name.get_ref()
                    ),
                );
            }
            values.extend(found.into_iter().map(|v| v.text));
        }
        values.sort_unstable();
        values.dedup();
        Ok(Shows {
            list: name.get_ref().clone(),
            values,
        })
    }
}

/// Where `name` is on this process's `PATH`: the first regular file of that name with an
/// execute bit, as `execvp` would find it.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
