//! boxmaker's own files on the host, and the one rule that keeps every box off them
//! (docs/spec.md §3.5 "boxmaker's own files").
//!
//! **What they are** ([`Config::own_files`], the one list):
//! - *no box may see* ([`Guard::Unseen`]): the state directory — and so all it holds: the
//!   database, the audit log, the sockets, the OAuth tokens `oauth/`, `http.token`,
//!   `approvals.token`, the workspaces `work/`, the program copies `pins/`, the servers' logs
//!   `logs/` —, the audit key and the OAuth sealing key beside it ([`beside`], the one place
//!   that names a key beside the state directory), and every `[[secret]]` file;
//! - *no box may change* ([`Guard::Unchanged`]): what decides what boxmaker does or runs on
//!   the host — the config file, the witness file, the boxmaker program itself, and the
//!   programs of `command` secrets and of `witness_command` with every argument of theirs
//!   that names a file (as `read::host_command` resolved them: a relative program is the
//!   config directory's, a bare one what `PATH` finds).
//!
//! **The rule** ([`conflict`], the one check; `config` refuses a file that breaks it, naming
//! the mount and the file). Every path is compared twice: as written (`.` and `..` folded)
//! and as the kernel resolves it now ([`resolve`]: every symlink followed; from the first
//! part that does not exist yet, as written). A mount may not hold a file no box may see,
//! be it, or lie inside it (the state directory); a writable mount may not hold a file no
//! box may change. And a writable mount may hold no symlink on the way to any of them (a
//! box could point it elsewhere, and the next process would follow it), nor the host path
//! of another mount, or a symlink on its way.
//!
//! **The masks** ([`masks`], the one place a box's masks come from): where a mount still
//! reaches one of them when a box is built — the file system changed since the config was
//! read — the directory that holds it inside the box is hidden under an empty read-only
//! tmpfs (a whole mount, if that is the directory): defence in depth, never the rule.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::model::{Audit, Config, Mount};
use crate::secret::{Secret, SecretSource};

/// The audit key's default name beside the state directory: `STATE.audit-key`.
pub const AUDIT_KEY: &str = "audit-key";
/// The OAuth sealing key's name beside the state directory: `STATE.oauth-key`.
pub const OAUTH_KEY: &str = "oauth-key";

/// The most symlinks one path resolution follows (as Linux's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// `STATE.NAME`: a key kept beside the state directory `state`, never in it (a trailing `/`
/// or a `..` in `state` does not move it inside). `None` for a state directory with no name
/// (`/`), which the config refuses.
pub fn beside(state: &Path, name: &str) -> Option<PathBuf> {
    let state = lexical(state);
    let mut file = state.file_name()?.to_os_string();
    file.push(".");
    file.push(name);
    Some(state.with_file_name(file))
}

/// What a box may not do to one of boxmaker's own files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// See it: no mount may hold it, be it or lie inside it.
    Unseen,
    /// Change it: no writable mount may hold it or be it.
    Unchanged,
}

/// One of boxmaker's own files (or directories) on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnFile {
    /// What it is, for a person: `the audit key`, `the file of secret "gh"`.
    pub what: String,
    /// As the config names it (absolute).
    pub path: PathBuf,
    pub guard: Guard,
    /// What a person does about a mount that reaches it (a clause, after a `;`).
    pub fix: String,
}

impl Config {
    /// boxmaker's own files: what the config check keeps every mount off, and what a box's
    /// masks hide ([`masks`]).
    pub fn own_files(&self) -> Vec<OwnFile> {
        own_files(
            &self.gate.state,
            &self.audit,
            &self.secrets,
            self.file.as_deref(),
        )
    }
}

/// See [`Config::own_files`]; `file` is the config file, when it came from one.
pub(crate) fn own_files(
    state: &Path,
    audit: &Audit,
    secrets: &[Secret],
    file: Option<&Path>,
) -> Vec<OwnFile> {
    let own = |what: String, path: &Path, guard, fix: &str| OwnFile {
        what,
        path: path.to_path_buf(),
        guard,
        fix: fix.into(),
    };
    let mut out = vec![own(
        "boxmaker's state directory".into(),
        state,
        Guard::Unseen,
        "move `[gate] state` out of it, or mount a directory that does not hold it",
    )];
    let default_key = beside(state, AUDIT_KEY);
    out.push(if default_key.as_deref() == Some(audit.key.as_path()) {
        own(
            "the audit key (by default beside the state directory)".into(),
            &audit.key,
            Guard::Unseen,
            "set `[audit] key` to put it elsewhere, or mount a directory that does not hold it",
        )
    } else {
        own(
            "the audit key".into(),
            &audit.key,
            Guard::Unseen,
            "move `[audit] key` out of it",
        )
    });
    // The person's mark key (docs/spec.md §6, "Whose state"), with the directory it is in:
    // a box that read it could mark a state directory a repository ships to this person.
    if let Some(dir) = statedir::mark::key_path()
        .ok()
        .and_then(|k| k.parent().map(Path::to_path_buf))
    {
        out.push(own(
            "the directory of your mark key".into(),
            &dir,
            Guard::Unseen,
            "mount a directory that does not hold it (it is under ~/.local/state)",
        ));
    }
    if let Some(key) = beside(state, OAUTH_KEY) {
        out.push(own(
            "the OAuth key (beside the state directory)".into(),
            &key,
            Guard::Unseen,
            "move `[gate] state`, or mount a directory that does not hold the key",
        ));
    }
    for s in secrets {
        match &s.source {
            SecretSource::File(path) => out.push(own(
                format!("the file of secret {:?}", s.name),
                path,
                Guard::Unseen,
                "keep it outside every mount",
            )),
            SecretSource::Command(argv) => {
                let name = format!("secret {:?}", s.name);
                host_command(&mut out, &name, &format!("the command of {name}"), argv);
            }
            SecretSource::Env(_) => {}
        }
    }
    if let Some(w) = &audit.witness_file {
        out.push(own(
            "the witness file".into(),
            w,
            Guard::Unchanged,
            "move `[audit] witness_file` out of it, or make the mount read-only",
        ));
    }
    if let Some(argv) = &audit.witness_command {
        host_command(&mut out, "the witness command", "the witness command", argv);
    }
    if let Some(file) = file {
        out.push(own(
            "the config file".into(),
            file,
            Guard::Unchanged,
            "make the mount read-only, or keep the config outside it",
        ));
    }
    // The program itself: what the client starts (`boxmaker mcp`), the prompt hook runs, and
    // every box's file tools are made of.
    if let Ok(exe) = std::env::current_exe()
        && exe.is_file()
    {
        out.push(own(
            "the boxmaker program".into(),
            &exe,
            Guard::Unchanged,
            "install boxmaker outside every writable mount, or make the mount read-only",
        ));
    }
    out
}

/// A host path as written (folded) and as the kernel resolves it now, with the symlinks
/// on the way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub written: PathBuf,
    pub real: PathBuf,
    /// Each symlink resolution followed, where it is (its directory resolved).
    pub links: Vec<PathBuf>,
}

impl Place {
    /// Looks `path` up now ([`resolve`]).
    pub fn of(path: &Path) -> Place {
        let (real, links) = resolve(path);
        Place {
            written: lexical(path),
            real,
            links,
        }
    }

    /// Whether `self` is `other` or a directory above it, as written or as resolved.
    pub fn holds(&self, other: &Place) -> bool {
        other.written.starts_with(&self.written) || other.real.starts_with(&self.real)
    }

    /// The first symlink on the way to `other` that `self` is or holds (resolved): whoever
    /// writes `self` could point it elsewhere.
    pub fn holds_a_link_of<'p>(&self, other: &'p Place) -> Option<&'p Path> {
        other
            .links
            .iter()
            .find(|l| l.starts_with(&self.real))
            .map(PathBuf::as_path)
    }

    /// `WRITTEN`, or `WRITTEN (which is REAL)` when a symlink moves it.
    fn show(&self) -> String {
        if self.real == self.written {
            self.written.display().to_string()
        } else {
            format!(
                "{} (which is {})",
                self.written.display(),
                self.real.display()
            )
        }
    }
}

/// `path` as the kernel would resolve it now, and where each symlink it follows is: every
/// symlink followed (at most 40), a `..` taken from where a link led; from the first part
/// that does not exist or cannot be looked at, the rest as written (folded) — so a file not
/// made yet resolves to where it will be made. A relative path is only folded.
pub fn resolve(path: &Path) -> (PathBuf, Vec<PathBuf>) {
    if !path.is_absolute() {
        return (lexical(path), Vec::new());
    }
    let mut real = PathBuf::from("/");
    let mut links = Vec::new();
    // Still to walk, last first.
    let mut todo: Vec<OsString> = Vec::new();
    push_parts(&mut todo, path);
    let mut found = true;
    while let Some(part) = todo.pop() {
        if part == ".." {
            real.pop();
            continue;
        }
        let next = real.join(&part);
        if !found {
            real = next;
            continue;
        }
        let target = match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() && links.len() < MAX_LINKS => {
                std::fs::read_link(&next).ok()
            }
            Ok(m) if !m.file_type().is_symlink() => {
                real = next;
                continue;
            }
            _ => None,
        };
        match target {
            Some(t) => {
                links.push(next);
                if t.is_absolute() {
                    real = PathBuf::from("/");
                }
                push_parts(&mut todo, &t);
            }
            None => {
                found = false;
                real = next;
            }
        }
    }
    (real, links)
}

/// Pushes `path`'s parts onto `todo` so that its first part is popped first (`.` dropped,
/// `..` kept).
fn push_parts(todo: &mut Vec<OsString>, path: &Path) {
    let parts: Vec<OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect();
    todo.extend(parts.into_iter().rev());
}

/// `path` with `.` and `..` components folded (no file system access): `/a/b/../c` is
/// `/a/c`, so a containment check cannot be dodged by spelling.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The first way a mount reaches one of `own`, or a writable mount another mount: the index
/// of the mount to blame and one sentence naming both and the fix. `None`: no box reaches
/// any of boxmaker's own files, and none can change what a later box shows.
pub fn conflict(own: &[OwnFile], mounts: &[Mount]) -> Option<(usize, String)> {
    let places: Vec<Place> = mounts.iter().map(|m| Place::of(&m.host)).collect();
    let owned: Vec<Place> = own.iter().map(|f| Place::of(&f.path)).collect();
    for (i, (m, host)) in mounts.iter().zip(&places).enumerate() {
        for (f, file) in own.iter().zip(&owned) {
            if f.guard == Guard::Unchanged && !m.write {
                continue;
            }
            let verb = match f.guard {
                Guard::Unseen => "read",
                Guard::Unchanged => "rewrite",
            };
            if host.holds(file) {
                return Some((
                    i,
                    format!(
                        "mount {} shows {}, which holds {} {}: a box could {verb} it; {}",
                        m.at.display(),
                        host.show(),
                        f.what,
                        file.show(),
                        f.fix
                    ),
                ));
            }
            if f.guard == Guard::Unseen && file.holds(host) {
                return Some((
                    i,
                    format!(
                        "mount {} shows {}, which is inside {} {}: a box could read what it \
                         holds; mount a directory outside it",
                        m.at.display(),
                        host.show(),
                        f.what,
                        file.show()
                    ),
                ));
            }
            if m.write
                && let Some(link) = host.holds_a_link_of(file)
            {
                return Some((
                    i,
                    format!(
                        "{} {} is reached through the symlink {}, which the writable mount {} \
                         ({}) holds: a box could point it elsewhere; name it by its real path \
                         {}, or make {} read-only",
                        f.what,
                        file.written.display(),
                        link.display(),
                        m.at.display(),
                        host.show(),
                        file.real.display(),
                        m.at.display()
                    ),
                ));
            }
        }
    }
    // A box may change what is under a writable mount — including swapping another mount's
    // host path, or a symlink on its way, for a symlink — so a writable mount holds neither.
    for (i, (holder, h)) in mounts.iter().zip(&places).enumerate() {
        if !holder.write {
            continue;
        }
        for (j, (held, p)) in mounts.iter().zip(&places).enumerate() {
            if i == j {
                continue;
            }
            let how = if h.holds(p) {
                format!(
                    "holds the host path of mount {} ({})",
                    held.at.display(),
                    p.show()
                )
            } else if let Some(link) = h.holds_a_link_of(p) {
                format!(
                    "holds the symlink {} on the way to the host path of mount {} ({})",
                    link.display(),
                    held.at.display(),
                    p.show()
                )
            } else {
                continue;
            };
            return Some((
                i,
                format!(
                    "mount {} is writable and {how}: a box could replace it and make a later \
                     box show something else; make {} read-only, or mount directories that do \
                     not hold each other",
                    holder.at.display(),
                    holder.at.display()
                ),
            ));
        }
    }
    None
}

/// Where, inside a box that shows the host directory `host` (as resolved when the runner
/// started) at `at`, writable or not, boxmaker's own files would show as they resolve now:
/// each is hidden by hiding the directory that holds it (a file cannot be covered by an
/// empty tmpfs; its directory can), the whole mount when that is the directory or the mount
/// lies inside one of them. A file no box may change is hidden only from a writable mount.
/// Empty for a config `check` accepted, unless the file system changed since.
pub fn masks(own: &[OwnFile], at: &Path, host: &Path, write: bool) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for f in own {
        if f.guard == Guard::Unchanged && !write {
            continue;
        }
        let (real, _) = resolve(&f.path);
        if host.starts_with(&real) {
            out.push(at.to_path_buf());
            continue;
        }
        let Ok(rel) = real.strip_prefix(host) else {
            continue;
        };
        // The directory itself, else the one that holds the file; never one that is not
        // there (the box would have to make it).
        let mut dir = if real.is_dir() {
            rel.to_path_buf()
        } else {
            rel.parent().map(Path::to_path_buf).unwrap_or_default()
        };
        while !dir.as_os_str().is_empty() && !host.join(&dir).is_dir() {
            dir.pop();
        }
        out.push(if dir.as_os_str().is_empty() {
            at.to_path_buf()
        } else {
            at.join(dir)
        });
    }
    out.sort();
    out.dedup();
    // A mask inside another is hidden by it already.
    let all = out.clone();
    out.retain(|m| !all.iter().any(|o| o != m && m.starts_with(o)));
    out
}

/// A command boxmaker runs on the host (`what`: `secret "gh"`, `the witness command`;
/// `command`: `the command of secret "gh"`, `the witness command`), as
/// the config resolved it (`read::host_command`): its program, and every argument that is
/// an absolute path of something there now (a script an interpreter runs, a file it reads),
/// are files no box may change — a box that rewrote one would run on the host, outside every
/// box, the next time the command runs.
fn host_command(out: &mut Vec<OwnFile>, what: &str, command: &str, argv: &[String]) {
    // A bare name `PATH` did not find when the config was read: where it would be found when
    // it runs, on any directory of `PATH`, is the program (a box could put one there).
    if let Some(name) = argv.first().filter(|p| !p.contains('/'))
        && let Some(path) = std::env::var_os("PATH")
    {
        for dir in std::env::split_paths(&path).filter(|d| d.is_absolute()) {
            out.push(OwnFile {
                what: format!("the program of {what}, were it there"),
                path: dir.join(name),
                guard: Guard::Unchanged,
                fix: "keep that directory off PATH or outside every writable mount, or make the \
                      mount read-only"
                    .into(),
            });
        }
    }
    for (i, arg) in argv.iter().enumerate() {
        let path = Path::new(arg);
        if !path.is_absolute() || (i > 0 && std::fs::symlink_metadata(path).is_err()) {
            continue;
        }
        out.push(OwnFile {
            what: if i == 0 {
                format!("the program of {what}")
            } else {
                format!("a file named by {command}")
            },
            path: path.to_path_buf(),
            guard: Guard::Unchanged,
            fix: "keep it outside every writable mount, or make the mount read-only".into(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_key_beside_the_state_directory_is_never_inside_it() {
        for state in ["/v/state", "/v/state/", "/v/x/../state", "/v/./state"] {
            assert_eq!(
                beside(Path::new(state), OAUTH_KEY),
                Some(PathBuf::from("/v/state.oauth-key")),
                "{state}"
            );
        }
        assert_eq!(beside(Path::new("/"), OAUTH_KEY), None);
    }

    #[test]
    fn resolve_follows_every_link_and_keeps_a_missing_tail_as_written() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("data/u/a")).unwrap();
        symlink(root.join("data/u"), root.join("home")).unwrap();
        // A relative link, a link to a link, a `..` after a link, a dangling link.
        symlink("home/a", root.join("rel")).unwrap();
        symlink(root.join("rel"), root.join("twice")).unwrap();
        symlink(root.join("data/u/not-yet"), root.join("dangling")).unwrap();
        let r = |p: &str| resolve(&root.join(p));
        assert_eq!(r("home/.boxmaker").0, root.join("data/u/.boxmaker"));
        assert_eq!(r("home/.boxmaker").1, vec![root.join("home")]);
        assert_eq!(r("twice/k").0, root.join("data/u/a/k"));
        assert_eq!(
            r("twice/k").1,
            vec![root.join("twice"), root.join("rel"), root.join("home")]
        );
        // The kernel takes `..` from where the link led, not from where it was named.
        assert_eq!(r("rel/../x").0, root.join("data/u/x"));
        assert_eq!(r("dangling/key").0, root.join("data/u/not-yet/key"));
        assert_eq!(r("missing/../b").0, root.join("b"));
        // A loop ends (as the kernel's ELOOP), with what it had.
        symlink(root.join("loop"), root.join("loop")).unwrap();
        assert_eq!(r("loop/k").1.len(), MAX_LINKS);
        assert_eq!(resolve(Path::new("a/./b/../c")).0, PathBuf::from("a/c"));
    }

    fn mount(host: &Path, at: &str, write: bool) -> Mount {
        Mount {
            name: None,
            host: host.to_path_buf(),
            at: at.into(),
            class: proto::DataClass::Internal,
            write,
            untrusted: false,
            read_only: Vec::new(),
        }
    }

    fn own(path: &Path, guard: Guard) -> OwnFile {
        OwnFile {
            what: "the thing".into(),
            path: path.to_path_buf(),
            guard,
            fix: "fix it".into(),
        }
    }

    #[test]
    fn the_mark_keys_directory_is_one_of_boxmakers_own_files() {
        let key = statedir::mark::key_path().unwrap();
        let audit = Audit {
            key: "/p/.boxmaker.audit-key".into(),
            checkpoint_every: 1,
            checkpoint_secs: 1,
            witness_file: None,
            witness_command: None,
            journal: false,
        };
        let files = own_files(Path::new("/p/.boxmaker"), &audit, &[], None);
        let f = files
            .iter()
            .find(|f| f.what.contains("mark key"))
            .expect("the mark key's directory");
        assert_eq!(f.path, key.parent().unwrap());
        assert_eq!(f.guard, Guard::Unseen);
    }

    #[test]
    fn a_mount_reaches_an_own_file_written_or_resolved_either_way() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("data/u/.boxmaker/work")).unwrap();
        symlink(root.join("data/u"), root.join("home")).unwrap();
        let state = own(&root.join("home/.boxmaker"), Guard::Unseen);
        let hit = |host: &str, write| {
            conflict(
                std::slice::from_ref(&state),
                &[mount(&root.join(host), "/data/m", write)],
            )
            .map(|(_, m)| m)
        };
        // Above it (by its real path), it (by another path), inside it.
        let m = hit("data/u", false).unwrap();
        assert!(
            m.contains("which holds the thing") && m.contains("(which is"),
            "{m}"
        );
        assert!(hit("home/.boxmaker", false).is_some());
        assert!(hit("data", false).is_some());
        let m = hit("data/u/.boxmaker/work", false).unwrap();
        assert!(m.contains("is inside the thing"), "{m}");
        // Beside it, nothing.
        std::fs::create_dir_all(root.join("data/v")).unwrap();
        assert_eq!(hit("data/v", true), None);
        // A file a box may not change: only a writable mount reaches it.
        let w = own(&root.join("home/w"), Guard::Unchanged);
        let ro = conflict(
            std::slice::from_ref(&w),
            &[mount(&root.join("data/u"), "/d", false)],
        );
        assert_eq!(ro, None);
        let rw = conflict(&[w], &[mount(&root.join("data/u"), "/d", true)]).unwrap();
        assert!(rw.1.contains("rewrite"), "{}", rw.1);
    }

    #[test]
    fn a_symlink_on_the_way_inside_a_writable_mount_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("vault")).unwrap();
        std::fs::create_dir_all(root.join("proj")).unwrap();
        symlink(root.join("vault"), root.join("proj/keylink")).unwrap();
        symlink(root.join("proj/keylink"), root.join("keys")).unwrap();
        let key = own(&root.join("keys/k"), Guard::Unseen);
        let read_only = [mount(&root.join("proj"), "/data/proj", false)];
        assert_eq!(conflict(std::slice::from_ref(&key), &read_only), None);
        let writable = [mount(&root.join("proj"), "/data/proj", true)];
        let (_, m) = conflict(std::slice::from_ref(&key), &writable).unwrap();
        assert!(
            m.contains("symlink") && m.contains("proj/keylink") && m.contains("point it"),
            "{m}"
        );
        // The same for another mount's host path.
        let both = [
            mount(&root.join("proj"), "/data/proj", true),
            mount(&root.join("keys"), "/data/keys", false),
        ];
        let (i, m) = conflict(&[], &both).unwrap();
        assert_eq!(i, 0);
        assert!(m.contains("holds the symlink"), "{m}");
    }

    #[test]
    fn masks_hide_the_directory_that_holds_an_own_file() {
        let t = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(t.path()).unwrap();
        std::fs::create_dir_all(root.join("u/.boxmaker")).unwrap();
        std::fs::create_dir_all(root.join("u/sub/deeper")).unwrap();
        let own = [
            own(&root.join("u/.boxmaker"), Guard::Unseen),
            own(&root.join("u/sub/deeper/key"), Guard::Unseen),
            own(&root.join("u/sub/deeper/not-made/key"), Guard::Unseen),
            own(&root.join("u/witness"), Guard::Unchanged),
        ];
        let at = Path::new("/data/u");
        assert_eq!(
            masks(&own, at, &root.join("u"), false),
            vec![
                PathBuf::from("/data/u/.boxmaker"),
                PathBuf::from("/data/u/sub/deeper")
            ]
        );
        // The witness file is in the mount's top: a writable mount is hidden whole.
        assert_eq!(
            masks(&own, at, &root.join("u"), true),
            vec![PathBuf::from("/data/u")]
        );
        // A mount inside the state directory is hidden whole; one beside it, not at all.
        assert_eq!(
            masks(&own, at, &root.join("u/.boxmaker"), false),
            vec![PathBuf::from("/data/u")]
        );
        std::fs::create_dir_all(root.join("v")).unwrap();
        assert!(masks(&own, at, &root.join("v"), true).is_empty());
    }
}
