//! Labels of the file tools' results (docs/spec.md §3.4): the runner labels each result,
//! never the tool, by the files the kernel opened.
//!
//! A path the in-box tool read is named as the kernel named the open file (inside the box).
//! Under `/work` it is the session's workspace, whose content is at most what the session
//! may hold (the runner's floor for the session, class and untrusted bit: the taint the
//! gate sent, joined with every label given since — a `run` that copied a secret there
//! raised it before its box started, and once the session read untrusted data, what any
//! box of it wrote there is untrusted). Under a mount it is mapped back to the host path it
//! shows, and labelled by **every** mount whose host path holds that file
//! (`config::Config::label_of_host_path`: the highest class, untrusted if one says so):
//! with overlapping mounts (`notes` internal, `notes/hr` secret) a file read as
//! `/data/notes/hr/pay.csv` is secret, as it is through `/data/hr/pay.csv`. Anything else
//! (`/usr`, `/tmp` of that box) adds nothing.
//!
//! Every answer starts from the call's own label, `config::Config::answer_label`: the
//! tool's floor (its class; its reach, for code boxmaker does not control) raised by every
//! label rule that matches the call (docs/spec.md §3.4) — the same function the gate raises
//! the taint by for its failures. A file tool's result is raised from there by the files
//! read; the answer of code boxmaker does not control (`run`, a downstream server) by the
//! session's floor (see `Runner::foreign_label`) and by what its box reached: what
//! destinations answered it, for a server since it started ([`call_class`]).

use std::path::{Path, PathBuf};

use config::{Config, Label};
#[cfg(test)]
use proto::DataClass;

/// The config's mounts with their host paths as resolved on this machine (symlinks
/// followed once, when the runner starts), so a host path the kernel names can be matched.
#[derive(Debug, Clone)]
pub struct Hosts {
    config: std::sync::Arc<Config>,
    /// Per mount, in config order: where it shows in the box, and its resolved host path.
    mounts: Vec<(PathBuf, PathBuf)>,
    /// boxmaker's own files (`config::own`): no box may see them (or change some of them).
    own: Vec<config::own::OwnFile>,
}

impl Hosts {
    /// Resolves every mount's host path (`config::own::resolve`, the one resolver: the
    /// config was checked by the same).
    pub fn resolve(config: std::sync::Arc<Config>) -> Self {
        let mounts = config
            .mounts
            .iter()
            .map(|m| (m.at.clone(), config::own::resolve(&m.host).0))
            .collect();
        let own = config.own_files();
        Self {
            config,
            mounts,
            own,
        }
    }

    /// The host path the mount shown at `at` was resolved to when the runner started (the
    /// path every box of it uses: mounts are what the config names, once).
    pub fn resolved(&self, at: &Path) -> Option<&Path> {
        self.mounts
            .iter()
            .find(|(a, _)| a == at)
            .map(|(_, h)| h.as_path())
    }

    /// What a box showing the mount at `at` (`write`: bound writable) hides: where
    /// boxmaker's own files, resolved now, would show in it (`config::own::masks`). The
    /// config refuses a mount that reaches one; this holds if the file system changed since.
    pub fn masks(&self, at: &Path, write: bool) -> Vec<PathBuf> {
        self.resolved(at)
            .map(|host| config::own::masks(&self.own, at, host, write))
            .unwrap_or_default()
    }

    /// The host path that the in-box `path` shows, through the innermost mount whose `at`
    /// is a whole-component prefix of it; `None` outside every mount.
    pub fn host_of(&self, path: &Path) -> Option<PathBuf> {
        self.mounts
            .iter()
            .filter(|(at, _)| path.starts_with(at))
            .max_by_key(|(at, _)| at.components().count())
            .and_then(|(at, host)| path.strip_prefix(at).ok().map(|rel| host.join(rel)))
    }

    /// The label of what the in-box `path` holds, `workspace` being the session's floor:
    /// under `/work`, that floor, untrusted bit and all (any box of the session may have
    /// written it); under a mount, the join of every mount whose host path holds the file
    /// — the highest class, untrusted when one says so (`Config::label_of_host_path`, the
    /// rule).
    pub fn label_of(&self, path: &Path, workspace: Label) -> Option<Label> {
        if path.starts_with("/work") {
            return Some(workspace);
        }
        let host = self.host_of(path)?;
        let hosts: Vec<&Path> = self.mounts.iter().map(|(_, h)| h.as_path()).collect();
        self.config.label_of_host_path(&host, &hosts)
    }
}

/// The label of an answer of code boxmaker does not control whose floor (its tool's own
/// label joined with the session's, `Runner::foreign_label`) is `floor` and whose box
/// reached `reached` in the call (docs/spec.md §3.6: its calls' own labels and what
/// destinations answered it; `egress::Float::reached`): the answer carries both.
pub fn call_label(floor: Label, reached: Label) -> Label {
    floor.join(reached)
}

/// The label of a file tool's result that read `read` (in-box paths of the opened files),
/// for a call whose own label is `floor`, in a session whose workspace is at `workspace`.
pub fn label_of_reads(floor: Label, read: &[PathBuf], hosts: &Hosts, workspace: Label) -> Label {
    read.iter()
        .filter_map(|p| hosts.label_of(p, workspace))
        .fold(floor, Label::join)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts() -> Hosts {
        let text = r#"
[[mount]]
host = "/srv/notes"
at = "/data/notes"
class = "internal"

[[mount]]
host = "/srv/notes/hr"
at = "/data/hr"
class = "secret"

[[mount]]
host = "/srv/pub"
at = "/data/public"
class = "public"
"#;
        Hosts::resolve(std::sync::Arc::new(
            config::parse(text, "t.toml", Path::new("/")).unwrap(),
        ))
    }

    #[test]
    fn overlapping_mounts_label_a_file_by_the_highest_whichever_way_it_is_read() {
        let h = hosts();
        for p in ["/data/notes/hr/pay.csv", "/data/hr/pay.csv"] {
            assert_eq!(
                h.label_of(Path::new(p), Label::new(DataClass::Public, false))
                    .map(|l| l.class),
                Some(DataClass::Secret),
                "{p}"
            );
        }
        assert_eq!(
            h.label_of(
                Path::new("/data/notes/a.txt"),
                Label::new(DataClass::Public, false)
            )
            .map(|l| l.class),
            Some(DataClass::Internal)
        );
        assert_eq!(
            h.host_of(Path::new("/data/notes/hr/pay.csv")),
            Some(PathBuf::from("/srv/notes/hr/pay.csv"))
        );
    }

    #[test]
    fn a_state_directory_moved_into_a_mount_after_the_check_is_hidden_from_its_boxes() {
        // Checked while `home` was a directory of its own; then it became a symlink into the
        // mounted `data` (and the state directory and its keys with it).
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("home/.boxmaker")).unwrap();
        std::fs::create_dir_all(root.join("data/u/.boxmaker")).unwrap();
        std::fs::create_dir_all(root.join("data/u/sub")).unwrap();
        let text = format!(
            "[gate]\nstate = \"{}/home/.boxmaker\"\n[[mount]]\nhost = \"{}/data\"\n\
             at = \"/data/d\"\n",
            root.display(),
            root.display()
        );
        let config = std::sync::Arc::new(config::parse(&text, "t.toml", &root).unwrap());
        let h = Hosts::resolve(config.clone());
        assert!(h.masks(Path::new("/data/d"), false).is_empty());
        std::fs::rename(root.join("home"), root.join("home.old")).unwrap();
        std::os::unix::fs::symlink(root.join("data/u"), root.join("home")).unwrap();
        // The config, read now, refuses it; a box built now hides the state directory and
        // the directory that holds the keys beside it (here the whole `u`).
        assert!(config::parse(&text, "t.toml", &root).is_err());
        assert_eq!(
            h.masks(Path::new("/data/d"), false),
            vec![PathBuf::from("/data/d/u")]
        );
    }

    #[test]
    fn prefixes_count_whole_components_only() {
        let h = hosts();
        assert_eq!(
            h.label_of(
                Path::new("/data/notesX/a"),
                Label::new(DataClass::Public, false)
            )
            .map(|l| l.class),
            None
        );
        assert_eq!(
            h.label_of(
                Path::new("/data/note"),
                Label::new(DataClass::Public, false)
            )
            .map(|l| l.class),
            None
        );
        assert_eq!(
            h.label_of(
                Path::new("/usr/bin/ls"),
                Label::new(DataClass::Secret, false)
            )
            .map(|l| l.class),
            None
        );
    }

    #[test]
    fn the_workspace_holds_what_the_session_may_hold() {
        let h = hosts();
        // A `run` copied a secret into /work: the session's floor was raised first.
        assert_eq!(
            h.label_of(
                Path::new("/work/leak"),
                Label::new(DataClass::Secret, false)
            )
            .map(|l| l.class),
            Some(DataClass::Secret)
        );
        let reads = vec![PathBuf::from("/work/x"), PathBuf::from("/data/public/p")];
        let l = |c, u| Label::new(c, u);
        assert_eq!(
            label_of_reads(
                l(DataClass::Public, false),
                &reads,
                &h,
                l(DataClass::Confidential, false)
            ),
            l(DataClass::Confidential, false)
        );
        assert_eq!(
            label_of_reads(
                l(DataClass::Internal, false),
                &[],
                &h,
                l(DataClass::Secret, true)
            ),
            l(DataClass::Internal, false),
            "a result that read nothing carries its floor"
        );
    }

    /// Issue 30: a box of the session may have written any file of the workspace, so in a
    /// session that read untrusted data, every file read there is untrusted — the mount's
    /// own files are not (a box cannot write a read-only mount).
    #[test]
    fn a_workspace_file_is_untrusted_in_a_session_that_read_untrusted_data() {
        let h = hosts();
        let tainted = Label::new(DataClass::Public, true);
        let trusted = Label::new(DataClass::Public, false);
        let work = [PathBuf::from("/work/invoice.txt")];
        assert_eq!(label_of_reads(trusted, &work, &h, tainted), tainted);
        let mount = [PathBuf::from("/data/public/p")];
        assert_eq!(label_of_reads(trusted, &mount, &h, tainted), trusted);
    }
}
