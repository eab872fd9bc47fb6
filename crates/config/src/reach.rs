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
//!   mount's ([`Mount::writable_at`]): a higher class, or untrusted where the mount's files
//!   are trusted — what an untrusted box writes there would be read back, in any session, as
//!   the person's own files. `write_file` runs at the session's taint.

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
    /// The label of what is read under it: its class, untrusted when it says so.
    pub fn label(&self) -> Label {
        Label::new(self.class, self.untrusted)
    }

    /// Whether a box whose label is `label` may write here: the mount is writable and the
    /// label is within the mount's (no write down: data never moves into a place that a
    /// later call, or another session, reads under a lower label — a lower class, or as
    /// trusted when it came from an untrusted context).
    pub fn writable_at(&self, label: Label) -> bool {
        self.write && label.within(self.label())
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

    /// The mounts a box of `tool` built at `label` may write (bound writable:
    /// [`Mount::writable_at`]): the box may not float above any of theirs — a higher class,
    /// or untrusted over a trusted one — or what it read could be written there below its
    /// label (no write down, docs/spec.md §3.5).
    pub fn writable_mounts<'a>(
        &'a self,
        tool: &'a Tool,
        label: Label,
    ) -> impl Iterator<Item = &'a Mount> + 'a {
        self.mounts_of(tool).filter(move |m| m.writable_at(label))
    }

    /// The highest class of every mount `tool`'s box is given (`public` with none).
    pub fn reach(&self, tool: &Tool) -> DataClass {
        self.reach_label(tool).class
    }

    /// The join of the labels of every mount `tool`'s box is given (`public`, trusted, with
    /// none): what its box can read.
    pub fn reach_label(&self, tool: &Tool) -> Label {
        self.mounts_of(tool)
            .map(Mount::label)
            .fold(Label::PUBLIC, Label::join)
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
                if t.runs_foreign_code() {
                    t.label().join(self.reach_label(t))
                } else {
                    t.label()
                }
            })
            .reduce(Label::join)
            .unwrap_or(Label::PUBLIC)
    }

    /// The class of a file at `host` (as the kernel resolved it), from the mounts: the
    /// highest class of every mount whose host path holds it, `None` when none does.
    /// `hosts` are the mounts' host paths as resolved on this machine, in `self.mounts`
    /// order (the runner resolves them once).
    pub fn class_of_host_path(&self, host: &Path, hosts: &[&Path]) -> Option<DataClass> {
        self.label_of_host_path(host, hosts).map(|l| l.class)
    }

    /// The label of a file at `host`: the join of the labels of every mount whose host path
    /// holds it (untrusted when any of them says so), `None` when none does.
    pub fn label_of_host_path(&self, host: &Path, hosts: &[&Path]) -> Option<Label> {
        self.mounts
            .iter()
            .zip(hosts)
            .filter(|(_, h)| host.starts_with(h))
            .map(|(m, _)| m.label())
            .reduce(Label::join)
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
    use std::path::PathBuf;

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
        let label = c.call_label("fs", "{}", Label::PUBLIC, DataClass::Internal);
        assert_eq!(label.call.class, DataClass::Internal);
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
        let at = |class| Label::new(class, false);
        assert!(notes.writable_at(at(DataClass::Public)));
        assert!(notes.writable_at(at(DataClass::Internal)));
        assert!(!notes.writable_at(at(DataClass::Confidential)));
        assert!(
            !c.mounts[0].writable_at(at(DataClass::Public)),
            "not writable at all"
        );
        assert_eq!(
            box_label(DataClass::Internal, DataClass::Secret),
            DataClass::Secret
        );
    }

    #[test]
    fn a_box_may_not_float_above_the_mounts_it_can_write() {
        let c = cfg(BASE);
        let run = c.tool("run").unwrap();
        let at = |class| {
            c.writable_mounts(run, Label::new(class, false))
                .map(|m| m.at.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(at(DataClass::Public), vec![PathBuf::from("/data/outbox")]);
        assert_eq!(at(DataClass::Internal), vec![PathBuf::from("/data/outbox")]);
        assert!(
            at(DataClass::Confidential).is_empty(),
            "read-only there already"
        );
        // A tool not given it writes nowhere but /work.
        assert!(
            c.writable_mounts(c.tool("post").unwrap(), Label::PUBLIC)
                .next()
                .is_none()
        );
    }

    /// Issue 30: no write down applies to the untrusted bit too. A box of a session that
    /// read untrusted data may not write a mount whose files are trusted — another session
    /// would read what it wrote back as the person's own files — unless the mount says
    /// `untrusted = true`, whose files are then read as untrusted by everyone, and make the
    /// boxes that can read them untrusted.
    #[test]
    fn an_untrusted_box_writes_only_a_mount_that_says_untrusted() {
        let c = cfg(&format!(
            "{BASE}
[[mount]]
name = \"inbox\"
host = \"/srv/inbox\"
at = \"/data/inbox\"
class = \"internal\"
write = true
untrusted = true

[[tool]]
name = \"fetch\"
builtin = \"run\"
mounts = [\"inbox\"]
"
        ));
        let outbox = &c.mounts[2];
        let inbox = &c.mounts[4];
        let tainted = Label::new(DataClass::Public, true);
        assert!(!outbox.writable_at(tainted));
        assert!(outbox.writable_at(Label::PUBLIC));
        assert!(inbox.writable_at(tainted) && inbox.writable_at(Label::PUBLIC));
        assert_eq!(inbox.label(), Label::new(DataClass::Internal, true));
        let run = c.tool("run").unwrap();
        let writable: Vec<PathBuf> = c
            .writable_mounts(run, tainted)
            .map(|m| m.at.clone())
            .collect();
        assert_eq!(writable, vec![PathBuf::from("/data/inbox")]);
        // A box that can read the untrusted mount answers untrusted, whatever its tool says.
        assert_eq!(c.reach_label(c.tool("fetch").unwrap()), inbox.label());
        assert!(c.floor("fetch").untrusted);
        let hosts: Vec<&Path> = c.mounts.iter().map(|m| m.host.as_path()).collect();
        assert_eq!(
            c.label_of_host_path(Path::new("/srv/inbox/mail.eml"), &hosts),
            Some(Label::new(DataClass::Internal, true))
        );
        assert_eq!(
            c.label_of_host_path(Path::new("/srv/outbox/a"), &hosts),
            Some(Label::new(DataClass::Internal, false))
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
