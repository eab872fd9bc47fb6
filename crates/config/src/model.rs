//! The checked configuration: the types the rest of boxmaker reads (`Config`, its tables,
//! tools, mounts and limits). How a file becomes one — every check, every default — is
//! `crate::read`; what it decides (egress, labels) is `crate::decide`.

use std::path::PathBuf;
use std::sync::Arc;

use policy::{Grants, Known, Label};
use proto::DataClass;

use crate::egress::EgressRule;
use crate::labels::LabelRule;
use crate::raw;
use crate::remote::{HeaderValue, RemoteUrl, Transport};
use crate::secret::{Secret, SecretVars};

/// The longest tool name the major model APIs accept.
pub const TOOL_NAME_MAX: usize = 64;

/// A checked `boxmaker.toml`.
#[derive(Debug, Clone)]
pub struct Config {
    pub gate: Gate,
    /// The `[box]` table.
    pub limits: BoxLimits,
    pub mounts: Vec<Mount>,
    /// In file order; names are unique.
    pub tools: Vec<Tool>,
    /// In file order (as `boxmaker check --explain` numbers them).
    pub grants: Grants,
    /// The `[[egress]]` rules, in file order: where networked boxes may connect.
    pub egress: Vec<EgressRule>,
    /// The `[audit]` table: how the audit log is anchored.
    pub audit: Audit,
    /// The `[[label]]` rules, in file order: what the answers of a call are at least
    /// (docs/spec.md §3.4 "Label rules"; [`Config::answer_label`] applies them).
    pub labels: Vec<LabelRule>,
    /// The file this config was read from (absolute), if it came from a file.
    pub file: Option<PathBuf>,
    /// SHA-256 (hex) of the config's text and the directory its relative paths start from:
    /// two processes with the same fingerprint decide by the same config. A running gate
    /// reports it, so a client can tell that the file changed since the gate read it.
    pub fingerprint: String,
    /// The values the config names (`[lists]` entries, conditions' literals), canonical: a
    /// `from` test counts them as trusted (docs/spec.md §3.7).
    pub known: Arc<Known>,
    /// The `[[secret]]`s, in file order: where each credential comes from (never its value;
    /// the runner reads it, docs/spec.md §3.8).
    pub secrets: Vec<Secret>,
}

impl Config {
    /// The tool called `name`, if the config defines one.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The `[[secret]]` called `name`, if the config defines one.
    pub fn secret(&self, name: &str) -> Option<&Secret> {
        self.secrets.iter().find(|s| s.name == name)
    }

    /// Whether a call to `name` could reach a tool of this config: a builtin tool by that
    /// name, or a name one of its downstream servers could expose (`PREFIX_…`). A server's
    /// own `[[tool]]` name is not a tool. Anything else is an unknown tool.
    pub fn could_name(&self, name: &str) -> bool {
        self.tool(name).map_or_else(
            || self.tools.iter().any(|t| t.could_expose(name)),
            |t| matches!(t.kind, ToolKind::Builtin(_)),
        )
    }
}

/// The `[gate]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gate {
    /// Directory of the database, the audit log and the sockets (absolute or relative to
    /// the current directory once resolved against the config file's directory).
    pub state: PathBuf,
    /// Seconds an approval waits for a person before it expires.
    pub approval_ttl: u64,
    /// Whether the audit log keeps tool arguments (otherwise only their hash).
    pub log_arguments: bool,
    /// The most calls one session may have decided or running at once (a call held for a
    /// person counts toward `max_pending_per_session` instead).
    pub max_calls_per_session: u64,
    /// The most approvals one session may have waiting for a person at once.
    pub max_pending_per_session: u64,
    /// Whether a person may approve a call in the agent's own MCP client, through MCP
    /// elicitation (docs/spec.md §5). A trust decision: whoever controls the client answers.
    pub approve_in_client: bool,
    /// The most identifying values one session's provenance index holds (docs/spec.md
    /// §3.7); past it a value the index cannot place counts as untrusted.
    pub max_provenance_values: u64,
    /// The fleet's shared store (docs/spec.md §6, "The store"): a `postgres://` URL
    /// (never with a password: `PGPASSWORD` gives it), or `None` for the embedded SQLite
    /// database in `state`. Replicas that name the same store serve the same conversations.
    pub store: Option<String>,
}

/// The `[audit]` table: the signed checkpoints that anchor the audit log, and the witnesses
/// outside the state directory that are handed each one (docs/spec.md §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// The Ed25519 key that signs checkpoints (created `0600` on first use). Never inside
    /// the state directory, nor inside a mount.
    pub key: PathBuf,
    /// A checkpoint at least every this many records.
    pub checkpoint_every: u64,
    /// A checkpoint at least this often (seconds) while records come.
    pub checkpoint_secs: u64,
    /// A file every checkpoint is appended to, one line each. Never inside the state
    /// directory, nor inside a writable mount.
    pub witness_file: Option<PathBuf>,
    /// A command every checkpoint is handed to, on its stdin, one line; never empty.
    pub witness_command: Option<Vec<String>>,
    /// Whether checkpoints also go to the system journal, where one runs.
    pub journal: bool,
}

/// `[audit] checkpoint_every` when the config does not say.
pub const DEFAULT_CHECKPOINT_EVERY: u64 = 1000;
/// `[audit] checkpoint_secs` when the config does not say.
pub const DEFAULT_CHECKPOINT_SECS: u64 = 60;

/// Places inside the box that the box itself builds (system directories bound read-only,
/// `/etc` files written for it, its own `/proc`, `/dev` and `/tmp`): a mount there could not
/// be placed, so it is refused when the config is read, not when a box is built.
pub const RESERVED: &[&str] = &[
    "/proc", "/dev", "/tmp", "/etc", "/usr", "/bin", "/lib", "/lib32", "/lib64", "/sbin",
];

/// The `[box]` table: the limits of every box.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoxLimits {
    /// Memory: the box's memory cgroup limit where one exists; where none does, every
    /// process's address-space limit (`RLIMIT_AS`) too.
    pub memory_bytes: u64,
    /// Every process's address-space limit (`RLIMIT_AS`) where a memory cgroup bounds the
    /// box's memory (`None`: unlimited, the default). Address space that is reserved but
    /// never touched costs no memory (node reserves gigabytes for WebAssembly); the cgroup
    /// bounds what is used. At least `memory_bytes`.
    pub address_space_bytes: Option<u64>,
    pub max_processes: u64,
    pub file_size_bytes: u64,
    pub timeout_seconds: u64,
    /// Landlock must enforce the mount table (default true). Set false only on a kernel
    /// without landlock, knowing the mount table is then the only file-system confinement.
    pub require_landlock: bool,
    /// Memory and pids cgroup limits must be in force (default false: they apply where a
    /// writable cgroup exists, and rlimits apply always).
    pub require_cgroups: bool,
    /// The most downstream servers one session may have running at once.
    pub max_servers_per_session: u64,
    /// The most connections one session's boxes may have open through the egress proxy at
    /// once (docs/spec.md §4: fair to every session).
    pub max_connections_per_session: u64,
    /// A connection through the egress proxy with no byte either way for this long is
    /// closed.
    pub egress_idle_seconds: u64,
    /// The most bytes one connection may send out through the egress proxy; then it is
    /// closed.
    pub max_upload_bytes: u64,
}

/// `[gate] max_calls_per_session` when the config does not say: enough for an agent's
/// parallel calls, far below what the gate and the runner serve at once (256), so no one
/// session can fill them.
pub const DEFAULT_CALLS_PER_SESSION: u64 = 16;
/// `[gate] max_provenance_values` when the config does not say: far more than an agent's
/// task shows, few enough that a session's index stays a few megabytes.
pub const DEFAULT_PROVENANCE_VALUES: u64 = 10_000;

/// `[gate] max_pending_per_session` when the config does not say.
pub const DEFAULT_PENDING_PER_SESSION: u64 = 32;
/// `[box] max_servers_per_session` when the config does not say.
pub const DEFAULT_SERVERS_PER_SESSION: u64 = 8;
/// `[box] max_connections_per_session` when the config does not say: more than a browser
/// opens to one site (6) times a few sites, far below what starves the proxy.
pub const DEFAULT_CONNECTIONS_PER_SESSION: u64 = 32;
/// `[box] egress_idle_seconds` when the config does not say.
pub const DEFAULT_EGRESS_IDLE_SECONDS: u64 = 120;
/// `[box] max_upload_bytes` when the config does not say: 1 GiB.
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 1 << 30;

impl Default for BoxLimits {
    fn default() -> Self {
        Self {
            memory_bytes: 2 << 30,
            address_space_bytes: None,
            max_processes: 256,
            file_size_bytes: 64 << 20,
            timeout_seconds: 300,
            require_landlock: true,
            require_cgroups: false,
            max_servers_per_session: DEFAULT_SERVERS_PER_SESSION,
            max_connections_per_session: DEFAULT_CONNECTIONS_PER_SESSION,
            egress_idle_seconds: DEFAULT_EGRESS_IDLE_SECONDS,
            max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
        }
    }
}

/// One `[[mount]]`: a host directory shown inside boxes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The name a tool's `mounts = [...]` gives it by (`[A-Za-z0-9_-]{1,64}`, unique), if
    /// it has one.
    pub name: Option<String>,
    /// On the host, with `~` expanded and made relative to the config's directory.
    pub host: PathBuf,
    /// Inside the box: absolute, no `..`, not `/` and not `/work` or under it.
    pub at: PathBuf,
    /// Files read under here are at least this class.
    pub class: DataClass,
    pub write: bool,
    /// Its files come from outside (`untrusted = true`): a file read under here is
    /// untrusted, and a box of an untrusted session may write here (docs/spec.md §3.5).
    pub untrusted: bool,
    /// What no box may change in it, even where it is writable (`read_only`, default
    /// [`HOST_RUN`]): paths under `host`, relative, of normal components (docs/spec.md §4,
    /// "What a writable mount keeps").
    pub read_only: Vec<PathBuf>,
}

/// The entries of a writable mount that no box may change unless its `read_only` says
/// otherwise: those through which a write becomes code that a program on the host runs
/// later, without the person choosing to run it — git's hooks and `core.fsmonitor`, an
/// agent client's project hooks, servers and plugins (Claude Code, Codex, Cursor, Gemini,
/// Continue, Amazon Q, Roo, Kiro, opencode), an editor's tasks, language servers and dev
/// containers (VS Code, JetBrains, Zed, Helix, Emacs, vim, neovim), direnv's
/// `.envrc`, mise's config (its `[hooks]` and `[env]` run on `cd`, trusted by path), and a
/// `boxmaker.toml` (docs/spec.md §4, "What a writable mount keeps").
pub const HOST_RUN: &[&str] = &[
    ".git",
    ".claude",
    ".codex",
    ".cursor",
    ".gemini",
    ".continue",
    ".amazonq",
    ".roo",
    ".kiro",
    ".opencode",
    "opencode.json",
    ".vscode",
    ".idea",
    ".zed",
    ".helix",
    ".devcontainer",
    ".devcontainer.json",
    ".mcp.json",
    ".envrc",
    "mise.toml",
    ".mise.toml",
    "mise.local.toml",
    ".mise.local.toml",
    ".mise",
    "mise",
    ".config",
    ".exrc",
    ".vimrc",
    ".nvimrc",
    ".nvim.lua",
    ".lazy.lua",
    ".dir-locals.el",
    "boxmaker.toml",
];

/// The builtin tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    ReadFile,
    WriteFile,
    ListDir,
    Run,
}

impl Builtin {
    pub const ALL: &'static [Builtin] = &[
        Builtin::ReadFile,
        Builtin::WriteFile,
        Builtin::ListDir,
        Builtin::Run,
    ];

    /// The name in `builtin = "..."`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Builtin::ReadFile => "read_file",
            Builtin::WriteFile => "write_file",
            Builtin::ListDir => "list_dir",
            Builtin::Run => "run",
        }
    }
}

impl From<raw::Builtin> for Builtin {
    fn from(b: raw::Builtin) -> Self {
        match b {
            raw::Builtin::ReadFile => Builtin::ReadFile,
            raw::Builtin::WriteFile => Builtin::WriteFile,
            raw::Builtin::ListDir => Builtin::ListDir,
            raw::Builtin::Run => Builtin::Run,
        }
    }
}

/// What a tool runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolKind {
    /// One of boxmaker's own tools.
    Builtin(Builtin),
    /// A stdio MCP server, run inside the session's box.
    Mcp {
        /// The command line; never empty.
        argv: Vec<String>,
        /// The prefix of its exposed tool names (`PREFIX_TOOL`); `None` means the tool's
        /// own name, `Some("")` no prefix at all.
        prefix: Option<String>,
        /// Keep the server's tool list as first discovered.
        pin: bool,
        /// Stop an idle server after this many seconds.
        idle_timeout: Option<u64>,
    },
    /// A remote MCP server, reached by the runner itself (no box): docs/spec.md §3.9.
    Remote {
        url: RemoteUrl,
        transport: Transport,
        /// As for `Mcp`.
        prefix: Option<String>,
        pin: bool,
        idle_timeout: Option<u64>,
        /// The secret sent as `Authorization: Bearer …`.
        bearer: Option<String>,
        /// Headers sent with every request, in name order.
        headers: Vec<(String, HeaderValue)>,
        /// Signed in with OAuth (`boxmaker auth login`): the token is sent as `Authorization`.
        oauth: Option<crate::remote::OAuth>,
    },
}

impl ToolKind {
    /// Whether it is a downstream MCP server (stdio or remote).
    pub fn is_server(&self) -> bool {
        matches!(self, ToolKind::Mcp { .. } | ToolKind::Remote { .. })
    }

    /// The key its record has in the discovery file: a stdio server's command line, a
    /// remote server's `["<remote>", URL]` (no command line starts with that).
    pub fn server_argv(&self) -> Option<Vec<String>> {
        match self {
            ToolKind::Mcp { argv, .. } => Some(argv.clone()),
            ToolKind::Remote { url, .. } => Some(vec!["<remote>".into(), url.text.clone()]),
            ToolKind::Builtin(_) => None,
        }
    }

    /// `pin` of a server.
    pub fn pinned(&self) -> bool {
        match self {
            ToolKind::Mcp { pin, .. } | ToolKind::Remote { pin, .. } => *pin,
            ToolKind::Builtin(_) => false,
        }
    }

    /// `idle_timeout` of a server.
    pub fn idle_timeout(&self) -> Option<u64> {
        match self {
            ToolKind::Mcp { idle_timeout, .. } | ToolKind::Remote { idle_timeout, .. } => {
                *idle_timeout
            }
            ToolKind::Builtin(_) => None,
        }
    }
}

/// One `[[tool]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tool {
    /// `[A-Za-z0-9_-]{1,64}`, unique in the file.
    pub name: String,
    pub kind: ToolKind,
    /// Floor label of every result of the tool.
    pub class: DataClass,
    /// Whether what it returns comes from outside.
    pub untrusted: bool,
    /// Whether its box reaches out, through boxmaker's egress proxy (otherwise only `lo`,
    /// and nothing beyond it).
    pub network: bool,
    /// Names of the caller's environment variables passed into its box.
    pub env: Vec<String>,
    /// The mounts its box is given, by name; `None` is every mount (`[[tool]] mounts`).
    pub mounts: Option<Vec<String>>,
    /// The egress rules it may use, by a rule's `name` or `host` as written; `None` is
    /// every rule (`[[tool]] egress`).
    pub egress: Option<Vec<String>>,
    /// The secrets its box is handed, as environment variables: variable → secret name
    /// (`[[tool]] secrets`; only a stdio server or `run`, docs/spec.md §3.8).
    pub secrets: SecretVars,
}

impl Tool {
    /// The floor label of the tool's results (docs/spec.md §3.4).
    pub fn label(&self) -> Label {
        Label::new(self.class, self.untrusted)
    }

    /// The prefix of its exposed tool names if it is a downstream server (docs/spec.md §4): its
    /// `prefix`, else its own name; `""` for none. `None` for a builtin.
    pub fn exposed_prefix(&self) -> Option<&str> {
        match &self.kind {
            ToolKind::Mcp { prefix, .. } | ToolKind::Remote { prefix, .. } => {
                Some(prefix.as_deref().unwrap_or(&self.name))
            }
            ToolKind::Builtin(_) => None,
        }
    }

    /// Whether `name` could be one of its exposed tools: `PREFIX_…`, or any name when the
    /// prefix is empty. Never for a builtin.
    pub fn could_expose(&self, name: &str) -> bool {
        self.exposed_prefix().is_some_and(|p| {
            p.is_empty()
                || name
                    .strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with('_'))
        })
    }
}

/// True for a name of 1 to 64 ASCII letters, digits, `_` and `-`, which the major model
/// APIs accept as a tool name.
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=TOOL_NAME_MAX).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}
