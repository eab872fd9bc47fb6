//! `catalog` — what downstream MCP servers offer, as boxmaker shows it (docs/spec.md §3.1 `mcp`, §4
//! last paragraph).
//!
//! **Owns:** the definition of a downstream tool as discovered ([`ToolDef`]); the rule that
//! names it for the model (`PREFIX_TOOL`, within `[A-Za-z0-9_-]{1,64}`, never shadowing a
//! configured tool); the discovery file `tools.json` in the state directory, which keeps for
//! each server command line the tools last seen and the tools an operator accepted (the first
//! ones seen, until an operator accepts others); the [`Catalog`] built from a config and that
//! file, which says which exposed name is which server's which tool, and which tools changed
//! since they were accepted; and the form in which a downstream result crosses from the
//! runner to the front ([`Content`]).
//!
//! **Must never:** run a server, decide policy, or trust a server's word: a definition that
//! changed since it was accepted is reported, and under `pin = true` is not offered or run
//! until an operator accepts it. A damaged discovery file is an error, never an empty one (an
//! empty file would silently accept everything a server says next).
//!
//! Reading order: [`ToolDef`] and [`exposed_name`]; [`file`] (the discovery file);
//! [`Catalog`]; [`Content`]; [`schema`] (arguments checked against a tool's input schema).

#![forbid(unsafe_code)]

pub mod file;
pub mod schema;

use std::collections::{BTreeMap, BTreeSet};

use config::{Config, is_valid_tool_name};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use file::{CatalogError, ServerRecord, ToolsFile};

/// The largest definition (name, description, schemas, annotations as JSON) offered to the
/// model, in bytes; a larger one is not offered (a description is read by the model: a
/// server must not fill its context).
pub const MAX_DEFINITION: usize = 64 * 1024;

/// Seconds an idle downstream server is kept when the config does not say.
pub const DEFAULT_IDLE_TIMEOUT: u64 = 300;

/// One tool a downstream server offers, as it described itself: what the model is shown and
/// what an operator accepts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolDef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments.
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

impl ToolDef {
    /// A short fingerprint of the whole definition (the first 12 hex digits of the SHA-256
    /// of its JSON, keys sorted): what `boxmaker tools diff` shows and `tools accept
    /// NAME@FINGERPRINT` checks, so an operator accepts exactly what they read.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        // Canonical whatever serde_json's map order is (with `preserve_order`, which another
        // crate of a build may switch on, maps keep the server's order).
        let mut json = String::new();
        canonical(&serde_json::to_value(self).unwrap_or_default(), &mut json);
        Sha256::digest(json.as_bytes())
            .iter()
            .take(6)
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The parts of `self` that differ from `other`, by name (`"description"`, `"schema"`…).
    pub fn changes(&self, other: &ToolDef) -> Vec<&'static str> {
        let mut what = Vec::new();
        if self.title != other.title {
            what.push("title");
        }
        if self.description != other.description {
            what.push("description");
        }
        if self.input_schema != other.input_schema {
            what.push("schema");
        }
        if self.output_schema != other.output_schema {
            what.push("output schema");
        }
        if self.annotations != other.annotations {
            what.push("annotations");
        }
        what
    }
}

/// `v` as compact JSON with every object's keys sorted.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                if let Some(x) = m.get(k) {
                    canonical(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The name the model sees for downstream tool `tool` of a server with `prefix`:
/// `PREFIX_TOOL`, or `TOOL` when the prefix is empty. `None` when that name is not within
/// `[A-Za-z0-9_-]{1,64}` (such a tool is not offered).
pub fn exposed_name(prefix: &str, tool: &str) -> Option<String> {
    if tool.is_empty() {
        return None;
    }
    let name = if prefix.is_empty() {
        tool.to_string()
    } else {
        format!("{prefix}_{tool}")
    };
    is_valid_tool_name(&name).then_some(name)
}

/// The key of a server's record in the discovery file: its command line, as JSON.
pub fn server_key(argv: &[String]) -> String {
    serde_json::to_string(argv).unwrap_or_default()
}

/// Where a downstream tool stands against what an operator accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// As accepted.
    Accepted,
    /// Offered, but these parts differ from the accepted definition.
    Changed(Vec<&'static str>),
    /// Offered, never accepted (it appeared after the server was first seen).
    Added,
    /// Accepted, no longer offered.
    Removed,
}

impl Standing {
    /// How `boxmaker tools` prints it.
    pub fn describe(&self) -> String {
        match self {
            Standing::Accepted => "accepted".into(),
            Standing::Changed(what) => format!("changed: {}", what.join(", ")),
            Standing::Added => "added since first seen".into(),
            Standing::Removed => "removed".into(),
        }
    }
}

/// One exposed downstream tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The name the model and the grants see.
    pub exposed: String,
    /// The `[[tool]]` (server) it belongs to.
    pub server: String,
    /// Its name at the server.
    pub downstream: String,
    /// Whether the server is pinned (`pin = true`).
    pub pinned: bool,
    /// What the model is shown: the accepted definition when pinned, else the one last seen.
    /// `None` when nothing may be shown (pinned and never accepted, or removed).
    pub shown: Option<ToolDef>,
    /// The definition an operator accepted, if any.
    pub accepted: Option<ToolDef>,
    pub standing: Standing,
}

impl Entry {
    /// Whether a call may run, as far as the catalog knows (the runner checks the running
    /// server's own definition again): not pinned, or pinned and unchanged.
    pub fn callable(&self) -> bool {
        if self.pinned {
            self.standing == Standing::Accepted
        } else {
            self.standing != Standing::Removed
        }
    }
}

/// Every downstream tool a config's servers expose, as last discovered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    entries: Vec<Entry>,
    by_name: BTreeMap<String, usize>,
    /// Why some server or tool is not offered, one sentence each.
    pub problems: Vec<String>,
}

impl Catalog {
    /// The catalog of `config`'s downstream servers from the discovery file `file`.
    pub fn build(config: &Config, file: &ToolsFile) -> Self {
        let mut cat = Catalog::default();
        let configured: BTreeSet<&str> = config.tools.iter().map(|t| t.name.as_str()).collect();
        for tool in &config.tools {
            let (Some(argv), Some(prefix)) = (tool.kind.server_argv(), tool.exposed_prefix())
            else {
                continue;
            };
            let pin = &tool.kind.pinned();
            let Some(record) = file.servers.get(&server_key(&argv)) else {
                cat.problems.push(format!(
                    "{}: not discovered yet (`boxmaker tools refresh` runs it once to ask)",
                    tool.name
                ));
                continue;
            };
            let mut names: Vec<&str> = record.tools.iter().map(|d| d.name.as_str()).collect();
            for d in &record.accepted {
                if !names.contains(&d.name.as_str()) {
                    names.push(&d.name);
                }
            }
            for name in names {
                let seen = record.tools.iter().find(|d| d.name == name);
                let accepted = record.accepted.iter().find(|d| d.name == name);
                let size = seen
                    .or(accepted)
                    .and_then(|d| serde_json::to_vec(d).ok())
                    .map_or(0, |v| v.len());
                if size > MAX_DEFINITION {
                    cat.problems.push(format!(
                        "{}: tool {name:?} is not offered: its definition is {size} bytes, over \
                         {MAX_DEFINITION}",
                        tool.name
                    ));
                    continue;
                }
                let Some(exposed) = exposed_name(prefix, name) else {
                    cat.problems.push(format!(
                        "{}: tool {name:?} is not offered: its name would not be within \
                         [A-Za-z0-9_-]{{1,64}}",
                        tool.name
                    ));
                    continue;
                };
                if configured.contains(exposed.as_str()) || cat.by_name.contains_key(&exposed) {
                    cat.problems.push(format!(
                        "{}: tool {name:?} is not offered: {exposed:?} is already the name of \
                         another tool",
                        tool.name
                    ));
                    continue;
                }
                let standing = match (seen, accepted) {
                    (Some(s), Some(a)) => {
                        let what = a.changes(s);
                        if what.is_empty() {
                            Standing::Accepted
                        } else {
                            Standing::Changed(what)
                        }
                    }
                    (Some(_), None) => Standing::Added,
                    _ => Standing::Removed,
                };
                let shown = match (*pin, &standing) {
                    (_, Standing::Removed) => None,
                    (true, _) => accepted.cloned(),
                    (false, _) => seen.cloned(),
                };
                cat.by_name.insert(exposed.clone(), cat.entries.len());
                cat.entries.push(Entry {
                    exposed,
                    server: tool.name.clone(),
                    downstream: name.to_string(),
                    pinned: *pin,
                    shown,
                    accepted: accepted.cloned(),
                    standing,
                });
            }
        }
        cat
    }

    /// The entry for exposed name `name`.
    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).and_then(|i| self.entries.get(*i))
    }

    /// Every entry, servers in config order, each server's tools in its order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entries whose definition differs from what was accepted.
    pub fn changes(&self) -> impl Iterator<Item = &Entry> {
        self.entries
            .iter()
            .filter(|e| e.standing != Standing::Accepted)
    }
}

/// A downstream tool's result as it crosses from the runner to the front (the `content`
/// string of a `result`): the server's content blocks in MCP form (text, image, audio,
/// resource links and embedded resources), its structured content if it sent one, and the
/// notifications it sent while the call ran (docs/spec.md §5, "A server's notifications"):
/// content the server wrote, so they travel inside the result and are labelled, redacted and
/// indexed with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Content {
    pub content: Vec<Value>,
    #[serde(
        rename = "structuredContent",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// `{"method": "notifications/message" | "notifications/progress", "params": {…}}` in
    /// the order the server sent them; a progress notification without its token (the
    /// front gives it the client's own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(name: &str, description: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            title: None,
            description: Some(description.into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
        }
    }

    fn config(extra: &str) -> Config {
        let text = format!(
            "[[tool]]\nname = \"read_file\"\nbuiltin = \"read_file\"\n\n\
             [[tool]]\nname = \"fs\"\nmcp = [\"/usr/bin/srv\"]\n{extra}"
        );
        config::parse(&text, "test.toml", std::path::Path::new("/")).unwrap()
    }

    fn file(seen: Vec<ToolDef>, accepted: Vec<ToolDef>) -> ToolsFile {
        let mut f = ToolsFile::default();
        f.servers.insert(
            server_key(&["/usr/bin/srv".to_string()]),
            ServerRecord {
                argv: vec!["/usr/bin/srv".into()],
                discovered: 1,
                tools: seen,
                accepted,
            },
        );
        f
    }

    #[test]
    fn exposed_names_follow_the_prefix_rule_and_the_name_limit() {
        assert_eq!(exposed_name("fs", "read").as_deref(), Some("fs_read"));
        assert_eq!(exposed_name("", "read").as_deref(), Some("read"));
        assert_eq!(exposed_name("fs", "a.b"), None);
        assert_eq!(exposed_name("fs", ""), None);
        assert_eq!(exposed_name("", ""), None);
        assert_eq!(exposed_name("fs", &"x".repeat(62)), None);
        assert!(exposed_name("fs", &"x".repeat(61)).is_some());
        assert_eq!(exposed_name("fs", "ré"), None);
    }

    #[test]
    fn an_unchanged_server_is_accepted_and_callable() {
        let c = config("");
        let cat = Catalog::build(&c, &file(vec![def("read", "d")], vec![def("read", "d")]));
        let e = cat.get("fs_read").unwrap();
        assert_eq!(e.standing, Standing::Accepted);
        assert!(e.callable());
        assert_eq!(e.downstream, "read");
        assert_eq!(cat.changes().count(), 0);
    }

    #[test]
    fn a_changed_description_is_shown_as_accepted_and_refused_when_pinned() {
        let c = config("pin = true\n");
        let cat = Catalog::build(
            &c,
            &file(vec![def("read", "evil")], vec![def("read", "good")]),
        );
        let e = cat.get("fs_read").unwrap();
        assert_eq!(e.standing, Standing::Changed(vec!["description"]));
        assert!(!e.callable());
        assert_eq!(
            e.shown.as_ref().unwrap().description.as_deref(),
            Some("good")
        );
    }

    #[test]
    fn a_changed_tool_unpinned_is_shown_as_seen_and_still_callable() {
        let c = config("");
        let cat = Catalog::build(
            &c,
            &file(vec![def("read", "new")], vec![def("read", "old")]),
        );
        let e = cat.get("fs_read").unwrap();
        assert!(e.callable());
        assert_eq!(
            e.shown.as_ref().unwrap().description.as_deref(),
            Some("new")
        );
        assert_eq!(cat.changes().count(), 1);
    }

    #[test]
    fn added_and_removed_tools_are_reported_and_pinned_added_ones_hidden() {
        let c = config("pin = true\n");
        let cat = Catalog::build(&c, &file(vec![def("new", "n")], vec![def("old", "o")]));
        let added = cat.get("fs_new").unwrap();
        assert_eq!(added.standing, Standing::Added);
        assert!(added.shown.is_none() && !added.callable());
        let removed = cat.get("fs_old").unwrap();
        assert_eq!(removed.standing, Standing::Removed);
        assert!(removed.shown.is_none() && !removed.callable());
    }

    #[test]
    fn a_downstream_tool_never_shadows_a_configured_tool() {
        let c = config("prefix = \"\"\n");
        let cat = Catalog::build(
            &c,
            &file(
                vec![def("read_file", "mine now"), def("ok", "o")],
                vec![def("read_file", "mine now"), def("ok", "o")],
            ),
        );
        assert!(cat.get("read_file").is_none());
        assert!(cat.get("ok").is_some());
        assert!(cat.problems.iter().any(|p| p.contains("read_file")));
    }

    #[test]
    fn a_definition_too_large_for_the_model_is_not_offered() {
        let c = config("");
        let big = def("big", &"x".repeat(MAX_DEFINITION));
        let cat = Catalog::build(&c, &file(vec![big.clone()], vec![big]));
        assert!(cat.get("fs_big").is_none());
        assert!(cat.problems[0].contains("over"));
    }

    #[test]
    fn an_undiscovered_server_is_a_problem_not_an_entry() {
        let c = config("");
        let cat = Catalog::build(&c, &ToolsFile::default());
        assert!(cat.entries().is_empty());
        assert!(cat.problems[0].contains("not discovered"));
    }

    #[test]
    fn a_fingerprint_changes_with_any_part_and_not_with_key_order() {
        let a = def("t", "d");
        let mut b = a.clone();
        assert_eq!(a.fingerprint(), b.fingerprint());
        assert_eq!(a.fingerprint().len(), 12);
        b.input_schema = json!({"type": "object", "x": 1});
        assert_ne!(a.fingerprint(), b.fingerprint());
        let c: ToolDef = serde_json::from_str(
            r#"{"input_schema":{"x":1,"type":"object"},"description":"d","name":"t"}"#,
        )
        .unwrap();
        assert_eq!(b.fingerprint(), c.fingerprint());
    }

    #[test]
    fn content_round_trips_and_refuses_unknown_fields() {
        let c = Content {
            content: vec![json!({"type": "text", "text": "hi"})],
            structured_content: Some(json!({"a": 1})),
            notifications: vec![],
        };
        let s = serde_json::to_string(&c).unwrap();
        assert!(s.starts_with(r#"{"content":[{"#), "{s}");
        assert!(s.ends_with(r#"],"structuredContent":{"a":1}}"#), "{s}");
        assert_eq!(serde_json::from_str::<Content>(&s).unwrap(), c);
        assert!(serde_json::from_str::<Content>(r#"{"content":[],"x":1}"#).is_err());
    }
}
