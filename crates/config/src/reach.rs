//! Reach and labels (docs/spec.md §3.4, §3.5): the rules both the gate and the runner need,
//! written once. A rule here is the rule; neither role keeps a copy.
//!
//! - A tool's **mounts** are the ones its `[[tool]] mounts = [...]` names (default: all).
//! - A call **runs code boxmaker does not control** when its tool is `run` or a downstream
//!   server ([`Tool::runs_foreign_code`]). Its **reach** is the highest class of its mounts
//!   ([`Config::reach`]); with the session's workspace, whose content is never above the
//!   session's taint, its box can read nothing above `max(taint, reach)` — the call's
//!   **label** ([`box_label`]). The gate decides such a call at that label, commits it into
//!   the taint before the box starts, and every answer of the call — a result, a `failed`, a
//!   timeout, a crash, a box that did not start — carries at least its **floor**
//!   ([`Config::floor`]).
//! - The file tools (`read_file`, `write_file`, `list_dir`) are boxmaker's own code: their
//!   results are labelled by the file the kernel opened, which is at least the class of
//!   every mount whose host path holds it ([`Config::class_of_host_path`]: overlapping
//!   mounts label by the highest).
//! - **No write down**: a box sees a writable mount read-only when its label is above the
//!   mount's class ([`Mount::writable_at`]); `write_file` runs at the session's taint.

use std::path::Path;

use policy::Label;
use proto::DataClass;

use crate::model::{Builtin, Config, Mount, Tool, ToolKind};

impl Tool {
    /// Whether a call to this tool runs code boxmaker does not control: `run`, or any
    /// downstream server (the attacker may have chosen the code).
    pub fn runs_foreign_code(&self) -> bool {
        matches!(
            self.kind,
            ToolKind::Builtin(Builtin::Run) | ToolKind::Mcp { .. } | ToolKind::Remote { .. }
        )
    }
}

impl Mount {
    /// Whether a box whose label is `label` may write here: the mount is writable and its
    /// class is not below the label (no write down: data never moves into a place that a
    /// later call, or another session, reads under a lower label).
    pub fn writable_at(&self, label: DataClass) -> bool {
        self.write && label <= self.class
    }
}

/// The label of a box that can read up to `reach` in a session whose taint class is `taint`.
pub fn box_label(taint: DataClass, reach: DataClass) -> DataClass {
    taint.max(reach)
}

impl Config {
    /// The mounts `tool`'s box is given, in file order.
    pub fn mounts_of<'a>(&'a self, tool: &'a Tool) -> impl Iterator<Item = &'a Mount> + 'a {
        self.mounts.iter().filter(move |m| match &tool.mounts {
            None => true,
            Some(names) => m
                .name
                .as_ref()
                .is_some_and(|n| names.iter().any(|x| x == n)),
        })
    }

    /// The lowest-class mount a box of `tool` built at `label` may write (bound writable:
    /// [`Mount::writable_at`]), if any: the box may not float above its class, or what it
    /// read could be written there below its label (no write down, docs/spec.md §3.5).
    pub fn lowest_writable<'a>(&'a self, tool: &'a Tool, label: DataClass) -> Option<&'a Mount> {
        self.mounts_of(tool)
            .filter(|m| m.writable_at(label))
            .min_by_key(|m| m.class)
    }

    /// The highest class of every mount `tool`'s box is given (`public` with none).
    pub fn reach(&self, tool: &Tool) -> DataClass {
        self.mounts_of(tool)
            .map(|m| m.class)
            .fold(DataClass::Public, DataClass::max)
    }

    /// The configured tools a call to `name` may reach: the builtin tool of that name, or
    /// every downstream server that could expose it (more than one only with `prefix = ""`),
    /// and the server whose own `[[tool]]` name it is (a client's request for its resources
    /// or prompts is a call to that name, docs/spec.md §5: it is labelled as its tools are).
    pub(crate) fn candidates<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Tool> + 'a {
        let builtin = self
            .tool(name)
            .filter(|t| matches!(t.kind, ToolKind::Builtin(_)));
        let servers = self.tools.iter().filter(move |t| {
            builtin.is_none() && (t.could_expose(name) || (t.kind.is_server() && t.name == name))
        });
        builtin.into_iter().chain(servers)
    }

    /// The reach of a call to `name` when it runs code boxmaker does not control, else
    /// `None` (a file tool, or no such tool): the gate decides such a call at
    /// `max(taint, reach)` and commits that before the box starts.
    pub fn call_reach(&self, name: &str) -> Option<DataClass> {
        self.candidates(name)
            .filter(|t| t.runs_foreign_code())
            .map(|t| self.reach(t))
            .reduce(DataClass::max)
    }

    /// The lowest label any answer of a call to `name` may carry — the gate raises the taint
    /// by it for a `failed`, the runner labels results at least this: the tool's own label,
    /// raised to its reach when it runs code boxmaker does not control (a timeout or a
    /// message can carry what the box read). For a name no tool has: `public`, trusted.
    pub fn floor(&self, name: &str) -> Label {
        self.candidates(name)
            .map(|t| {
                let class = if t.runs_foreign_code() {
                    t.class.max(self.reach(t))
                } else {
                    t.class
                };
                Label::new(class, t.untrusted)
            })
            .reduce(|a, b| Label::new(a.class.max(b.class), a.untrusted || b.untrusted))
            .unwrap_or(Label::new(DataClass::Public, false))
    }

    /// The class of a file at `host` (as the kernel resolved it), from the mounts: the
    /// highest class of every mount whose host path holds it, `None` when none does.
    /// `hosts` are the mounts' host paths as resolved on this machine, in `self.mounts`
    /// order (the runner resolves them once).
    pub fn class_of_host_path(&self, host: &Path, hosts: &[&Path]) -> Option<DataClass> {
        self.mounts
            .iter()
            .zip(hosts)
            .filter(|(_, h)| host.starts_with(h))
            .map(|(m, _)| m.class)
            .max()
    }

    /// Pairs of mounts (indexes into `self.mounts`) whose host paths overlap, as written or
    /// after symlinks: one holds the other. Allowed — a file there is labelled by the
    /// highest of the two — but worth a note: the lower mount shows the higher one's files
    /// too.
    pub fn overlapping_mounts(&self) -> Vec<(usize, usize)> {
        let places: Vec<crate::own::Place> = self
            .mounts
            .iter()
            .map(|m| crate::own::Place::of(&m.host))
            .collect();
        let mut out = Vec::new();
        for (i, a) in places.iter().enumerate() {
            for (j, b) in places.iter().enumerate().skip(i + 1) {
                if a.holds(b) || b.holds(a) {
                    out.push((i, j));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Config {
        crate::parse(text, "t.toml", Path::new("/base")).unwrap()
    }

    const BASE: &str = r#"
[[mount]]
name = "pub"
host = "/srv/pub"
at = "/data/pub"
class = "public"

[[mount]]
name = "notes"
host = "/srv/notes"
at = "/data/notes"
class = "internal"

[[mount]]
name = "outbox"
host = "/srv/outbox"
at = "/data/outbox"
class = "internal"
write = true

[[mount]]
name = "vault"
host = "/srv/notes/hr"
at = "/data/hr"
class = "secret"

[[tool]]
name = "run"
builtin = "run"

[[tool]]
name = "post"
builtin = "run"
network = true
mounts = ["pub"]

[[tool]]
name = "read_file"
builtin = "read_file"
class = "internal"

[[tool]]
name = "fs"
mcp = ["srv"]
class = "internal"
untrusted = true
mounts = ["notes", "outbox"]
"#;

    #[test]
    fn reach_is_the_highest_mount_a_tool_is_given() {
        let c = cfg(BASE);
        assert_eq!(c.reach(c.tool("run").unwrap()), DataClass::Secret);
        assert_eq!(c.reach(c.tool("post").unwrap()), DataClass::Public);
        assert_eq!(c.call_reach("run"), Some(DataClass::Secret));
        assert_eq!(c.call_reach("post"), Some(DataClass::Public));
        assert_eq!(c.call_reach("fs_read"), Some(DataClass::Internal));
        // File tools keep exact labels.
        assert_eq!(c.call_reach("read_file"), None);
        assert_eq!(c.call_reach("nothing"), None);
    }

    #[test]
    fn a_request_for_a_servers_resources_is_labelled_as_its_tools_are() {
        // `resources/read` of server "fs" is a call to "fs" (docs/spec.md §5): what it answers
        // is what the server read, never a public, trusted answer.
        let c = cfg(BASE);
        assert_eq!(c.call_reach("fs"), Some(DataClass::Internal));
        assert_eq!(c.floor("fs"), Label::new(DataClass::Internal, true));
        let label = c.call_label("fs", "{}", DataClass::Public, DataClass::Internal);
        assert_eq!(label.call, DataClass::Internal);
    }

    #[test]
    fn the_floor_of_foreign_code_is_its_reach() {
        let c = cfg(BASE);
        // A timed-out `run` that saw the vault carries the vault's class.
        assert_eq!(c.floor("run"), Label::new(DataClass::Secret, false));
        assert_eq!(c.floor("post"), Label::new(DataClass::Public, false));
        assert_eq!(c.floor("fs_x"), Label::new(DataClass::Internal, true));
        assert_eq!(c.floor("read_file"), Label::new(DataClass::Internal, false));
        assert_eq!(c.floor("nope"), Label::new(DataClass::Public, false));
    }

    #[test]
    fn overlapping_mounts_label_by_the_highest_and_are_reported() {
        let c = cfg(BASE);
        let hosts: Vec<&Path> = c.mounts.iter().map(|m| m.host.as_path()).collect();
        assert_eq!(
            c.class_of_host_path(Path::new("/srv/notes/hr/pay.csv"), &hosts),
            Some(DataClass::Secret)
        );
        assert_eq!(
            c.class_of_host_path(Path::new("/srv/notes/a.txt"), &hosts),
            Some(DataClass::Internal)
        );
        assert_eq!(
            c.class_of_host_path(Path::new("/srv/notesX/a"), &hosts),
            None
        );
        assert_eq!(c.overlapping_mounts(), vec![(1, 3)]);
    }

    #[test]
    fn no_write_down() {
        let c = cfg(BASE);
        let notes = &c.mounts[2];
        assert!(notes.writable_at(DataClass::Public));
        assert!(notes.writable_at(DataClass::Internal));
        assert!(!notes.writable_at(DataClass::Confidential));
        assert!(
            !c.mounts[0].writable_at(DataClass::Public),
            "not writable at all"
        );
        assert_eq!(
            box_label(DataClass::Internal, DataClass::Secret),
            DataClass::Secret
        );
    }

    #[test]
    fn a_box_may_not_float_above_the_lowest_mount_it_can_write() {
        let c = cfg(BASE);
        let run = c.tool("run").unwrap();
        let at = |label| c.lowest_writable(run, label).map(|m| m.at.clone());
        assert_eq!(at(DataClass::Public), Some("/data/outbox".into()));
        assert_eq!(at(DataClass::Internal), Some("/data/outbox".into()));
        assert_eq!(at(DataClass::Confidential), None, "read-only there already");
        // A tool not given it writes nowhere but /work.
        assert!(
            c.lowest_writable(c.tool("post").unwrap(), DataClass::Public)
                .is_none()
        );
    }

    #[test]
    fn no_mount_holds_the_state_directory_and_no_writable_one_holds_another() {
        let err = |text: &str| {
            crate::parse(text, "t.toml", Path::new("/home/me/proj"))
                .unwrap_err()
                .to_string()
        };
        // The natural layout: the project mounted, the state beside boxmaker.toml.
        let e = err("[[mount]]\nhost = \".\"\nat = \"/data/project\"\n");
        assert!(
            e.contains("holds boxmaker's state directory /home/me/proj/.boxmaker")
                && e.contains("move `[gate] state`"),
            "{e}"
        );
        let e = err(
            "[gate]\nstate = \"/home/me/proj/x/../.boxmaker\"\n[[mount]]\nhost = \"/home/me\"\nat = \"/data/home\"\n",
        );
        assert!(e.contains("state directory"), "{e}");
        let e = err(
            "[[mount]]\nhost = \"/srv/proj\"\nat = \"/data/p\"\nwrite = true\n[[mount]]\nhost = \"/srv/proj/notes\"\nat = \"/data/notes\"\n",
        );
        assert!(
            e.contains("t.toml:2:")
                && e.contains("is writable and holds the host path of mount /data/notes"),
            "{e}"
        );
        // Read-only overlap is fine; a state directory elsewhere is fine.
        crate::parse(
            "[gate]\nstate = \"/var/lib/bm\"\n[[mount]]\nhost = \".\"\nat = \"/data/project\"\n[[mount]]\nhost = \"sub\"\nat = \"/data/sub\"\n",
            "t.toml",
            Path::new("/home/me/proj"),
        )
        .unwrap();
    }

    #[test]
    fn tool_mounts_name_mounts_that_exist() {
        let bad = crate::parse(
            "[[mount]]\nhost = \"/a\"\nat = \"/data/a\"\n[[tool]]\nname = \"r\"\nbuiltin = \"run\"\nmounts = [\"a\"]\n",
            "t.toml",
            Path::new("/"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            bad.contains("t.toml:7:") && bad.contains("no mount has a name yet"),
            "{bad}"
        );
        let twice = crate::parse(
            "[[mount]]\nname = \"a\"\nhost = \"/a\"\nat = \"/data/a\"\n[[mount]]\nname = \"a\"\nhost = \"/b\"\nat = \"/data/b\"\n",
            "t.toml",
            Path::new("/"),
        )
        .unwrap_err()
        .to_string();
        assert!(twice.contains("used twice (first on line 2)"), "{twice}");
        let none = cfg(
            "[[mount]]\nname = \"a\"\nhost = \"/a\"\nat = \"/data/a\"\nclass = \"secret\"\n[[tool]]\nname = \"r\"\nbuiltin = \"run\"\nmounts = []\n",
        );
        assert_eq!(none.call_reach("r"), Some(DataClass::Public));
        assert_eq!(none.mounts_of(none.tool("r").unwrap()).count(), 0);
    }
}
