//! The file exactly as written: serde shapes, every table `deny_unknown_fields`. Values
//! that later checks need to point at are `Spanned`, so their errors name the line.
//! Defaults that are a policy choice live in `model`, not here.

use std::collections::BTreeMap;

use proto::DataClass;
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct File {
    #[serde(default)]
    pub gate: Gate,
    #[serde(default, rename = "box")]
    pub limits: Limits,
    #[serde(default)]
    pub mount: Vec<Mount>,
    #[serde(default)]
    pub tool: Vec<Tool>,
    #[serde(default)]
    pub grant: Vec<Grant>,
    /// Named lists for argument conditions (`in = "NAME"`).
    #[serde(default)]
    pub lists: BTreeMap<String, Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(default)]
    pub egress: Vec<Egress>,
    #[serde(default)]
    pub audit: Audit,
    /// Label rules (`[[label]]`): what a call's answers are, by tool and arguments.
    #[serde(default)]
    pub label: Vec<Label>,
    /// Where credentials come from (`[[secret]]`, docs/spec.md §3.8).
    #[serde(default)]
    pub secret: Vec<Secret>,
}

/// One `[[secret]]`: a name and exactly one of `env`, `file`, `command` (checked in `model`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Secret {
    pub name: Spanned<String>,
    pub env: Option<Spanned<String>>,
    pub file: Option<Spanned<String>>,
    pub command: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Gate {
    pub state: Option<Spanned<String>>,
    pub approval_ttl: Option<Spanned<u64>>,
    #[serde(default)]
    pub log_arguments: bool,
    pub max_calls_per_session: Option<Spanned<u64>>,
    pub max_pending_per_session: Option<Spanned<u64>>,
    #[serde(default)]
    pub approve_in_client: bool,
    pub max_provenance_values: Option<Spanned<u64>>,
    pub store: Option<Spanned<String>>,
}

/// `[audit]`: the audit log's anchor (docs/spec.md §6).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Audit {
    pub key: Option<Spanned<String>>,
    pub checkpoint_every: Option<Spanned<u64>>,
    pub checkpoint_secs: Option<Spanned<u64>>,
    pub witness_file: Option<Spanned<String>>,
    pub witness_command: Option<Spanned<Vec<Spanned<String>>>>,
    pub journal: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Limits {
    pub memory_bytes: Option<Spanned<u64>>,
    /// A number of bytes, or `"unlimited"` (checked in `model`).
    pub address_space_bytes: Option<Spanned<toml::Value>>,
    pub max_processes: Option<Spanned<u64>>,
    pub file_size_bytes: Option<Spanned<u64>>,
    pub timeout_seconds: Option<Spanned<u64>>,
    pub require_landlock: Option<bool>,
    pub require_cgroups: Option<bool>,
    pub max_servers_per_session: Option<Spanned<u64>>,
    pub max_connections_per_session: Option<Spanned<u64>>,
    pub egress_idle_seconds: Option<Spanned<u64>>,
    pub max_upload_bytes: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Mount {
    pub name: Option<Spanned<String>>,
    pub host: Spanned<String>,
    pub at: Spanned<String>,
    pub class: Option<DataClass>,
    #[serde(default)]
    pub write: bool,
    #[serde(default)]
    pub untrusted: bool,
    pub read_only: Option<Vec<Spanned<String>>>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(try_from = "String")]
pub(crate) enum Builtin {
    ReadFile,
    WriteFile,
    ListDir,
    Run,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Tool {
    pub name: Spanned<String>,
    pub builtin: Option<Builtin>,
    pub mcp: Option<Spanned<Vec<Spanned<String>>>>,
    pub class: Option<DataClass>,
    #[serde(default)]
    pub untrusted: bool,
    #[serde(default)]
    pub network: bool,
    #[serde(default)]
    pub env: Vec<Spanned<String>>,
    pub prefix: Option<Spanned<String>>,
    pub pin: Option<Spanned<bool>>,
    pub idle_timeout: Option<Spanned<u64>>,
    pub mounts: Option<Spanned<Vec<Spanned<String>>>>,
    pub egress: Option<Spanned<Vec<Spanned<String>>>>,
    /// The secrets its box is handed as variables: a table `{ VARIABLE = "NAME" }` or a list
    /// of names of `env` secrets (checked in `model`).
    pub secrets: Option<Spanned<toml::Value>>,
    /// A remote MCP server (docs/spec.md §3.9): its URL, transport and credentials.
    pub url: Option<Spanned<String>>,
    pub transport: Option<Spanned<String>>,
    pub bearer: Option<Spanned<String>>,
    pub headers: Option<Spanned<BTreeMap<String, Spanned<String>>>>,
    /// OAuth sign-in (docs/spec.md §3.9): `true`, or a table read by `remote::OAuth::read`.
    pub oauth: Option<Spanned<toml::Value>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Egress {
    pub name: Option<Spanned<String>>,
    pub host: Spanned<String>,
    pub ports: Option<Spanned<Vec<Spanned<u64>>>>,
    pub tunnel_ports: Option<Spanned<Vec<Spanned<u64>>>>,
    pub class: Option<DataClass>,
    pub returns: Option<DataClass>,
    pub trusted: Option<bool>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(try_from = "String")]
pub(crate) enum Effect {
    Allow,
    Ask,
    Deny,
}

impl TryFrom<String> for Builtin {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        match s.as_str() {
            "read_file" => Ok(Builtin::ReadFile),
            "write_file" => Ok(Builtin::WriteFile),
            "list_dir" => Ok(Builtin::ListDir),
            "run" => Ok(Builtin::Run),
            _ => Err(format!(
                "unknown builtin {s:?}: expected read_file, write_file, list_dir or run"
            )),
        }
    }
}

impl TryFrom<String> for Effect {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        match s.as_str() {
            "allow" => Ok(Effect::Allow),
            "ask" => Ok(Effect::Ask),
            "deny" => Ok(Effect::Deny),
            _ => Err(format!("unknown effect {s:?}: expected allow, ask or deny")),
        }
    }
}

impl From<Effect> for policy::Effect {
    fn from(e: Effect) -> Self {
        match e {
            Effect::Allow => policy::Effect::Allow,
            Effect::Ask => policy::Effect::Ask,
            Effect::Deny => policy::Effect::Deny,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Grant {
    pub tool: Spanned<String>,
    pub sessions: Option<Spanned<String>>,
    pub effect: Effect,
    pub max_class: Option<DataClass>,
    pub if_untrusted: Option<Effect>,
    pub expires: Option<u64>,
    #[serde(default)]
    pub when: Vec<When>,
    /// An argument key that no condition names makes the grant not match.
    pub closed: Option<Spanned<bool>>,
}

/// One argument condition of a grant: a pointer and exactly one test.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct When {
    pub pointer: Spanned<String>,
    pub equals: Option<Spanned<toml::Value>>,
    pub one_of: Option<Spanned<Vec<Spanned<toml::Value>>>>,
    #[serde(rename = "in")]
    pub in_list: Option<Spanned<String>>,
    pub glob: Option<Spanned<toml::Value>>,
    pub range: Option<Spanned<Vec<i64>>>,
    /// The typed tests (docs/spec.md §3.3 "Typed conditions"), read by `crate::typed`.
    pub email: Option<Spanned<toml::Value>>,
    pub url: Option<Spanned<toml::Value>>,
    pub links: Option<Spanned<toml::Value>>,
    /// Where every identifying value at the pointer came from (docs/spec.md §3.7).
    pub from: Option<Spanned<String>>,
    #[serde(default)]
    pub optional: bool,
}

/// One `[[label]]` rule: a tool pattern, optional argument conditions (a grant's `when`), and
/// what the answers of a call it matches are at least.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Label {
    pub tool: Spanned<String>,
    #[serde(default)]
    pub when: Vec<When>,
    pub class: Option<DataClass>,
    pub untrusted: Option<Spanned<bool>>,
    pub reason: Option<Spanned<String>>,
    /// The argument (a JSON pointer) that names the place the call reads.
    pub source: Option<Spanned<String>>,
    /// A `[lists]` name: the rule labels an answer that shows one of its values.
    pub shows: Option<Spanned<String>>,
    /// Not a key of a label rule: read only to refuse it with a sentence of its own.
    pub closed: Option<Spanned<toml::Value>>,
}
