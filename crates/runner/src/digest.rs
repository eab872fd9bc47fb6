//! What an approval binds (docs/spec.md §3.3 step 6, "What an approval binds"): the content
//! of each file a `run` call names in a place its box can write.
//!
//! A person approves `sh /work/s.sh` having read the script; the agent can rewrite the
//! script afterwards without changing the call's text. So the runner looks at every argument
//! of the call's argv that names a path in `/work` or in a mount the config makes writable
//! (relative paths from `/work`, the box's working directory; the program too, looked up in
//! the box's `PATH` as the box would), and reports what is there: a file and the SHA-256 of
//! its content, a directory, nothing, or something it cannot bind ([`FileKind::Unbound`]: a
//! symlink on the way, a file over [`DIGEST_LIMIT`], one it cannot read). The gate shows
//! these with the approval and binds the approval to them.
//!
//! **Where it looks.** On the host, through the same table the box is built from: `/work`
//! is the session's workspace, a mount's path its resolved host path, a masked place (the
//! state directory) nothing. Each path is opened with `openat2` beneath its root with
//! `RESOLVE_NO_SYMLINKS`, so a symlink is never followed — not out of the box, not even
//! within it: the agent can repoint a symlink after the approval, so a path through one is
//! shown (where it points, read with `readlink`) and not bound.
//!
//! **What runs is what was hashed.** An approved call comes back with the digests the
//! person approved. Before its box starts, the runner looks again; any file whose binding
//! differs fails the call ("changed since it was approved"). The program — `argv[0]` when
//! it lies in a writable place, else the first file argument of a known interpreter (`sh`,
//! `python3`, `node`, …) — is not run from its path at all: the bytes just hashed are
//! written to a read-only copy that only this box sees (at [`PIN_AT`]), and the argument
//! is pointed at it. A rewrite racing the run changes the file, never the copy.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use config::{Builtin, Tool, ToolKind};
use proto::ToolRequest;
use proto::run::{FileDigest, FileKind};
use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};

use crate::run::Runner;

/// The largest file whose content an approval binds: 16 MiB. A bigger one is `unbound`.
pub const DIGEST_LIMIT: u64 = 16 << 20;

/// The most places one call's digests name; past it the rest is one `unbound` entry.
pub const MAX_FILES: usize = 64;

/// Where the program's read-only copy shows in the box.
pub const PIN_AT: &str = "/.boxmaker/pin";

/// The longest argument that can name a file (`PATH_MAX` less its NUL); a longer one is
/// not looked at.
const PATH_MAX: usize = 4095;

/// Programs that take their program as a file argument: for these the first file argument
/// is the program that runs (and is pinned). Families match with a version (`python3.12`).
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox", "env", "node", "nodejs", "deno",
    "bun", "Rscript", "tclsh", "awk", "gawk", "mawk",
];
const INTERPRETER_FAMILIES: &[&str] = &["python", "pypy", "perl", "ruby", "php", "lua", "luajit"];

/// One place in the box's view: where it shows, its host path (`None`: a mask, where the
/// box sees an empty read-only directory), and whether the box may write there.
#[derive(Debug, Clone)]
struct Place {
    at: PathBuf,
    host: Option<PathBuf>,
    writable: bool,
}

/// The box's view of its writable places, and its `PATH`.
#[derive(Debug)]
pub(crate) struct View {
    places: Vec<Place>,
    path_var: String,
}

/// A digest, and for the program the bytes that were hashed (and whether it was executable).
#[derive(Debug)]
pub(crate) struct Looked {
    pub(crate) files: Vec<FileDigest>,
    /// The pinned entry's content and mode bits, when one is pinned.
    pub(crate) program: Option<(usize, Vec<u8>, u32)>,
}

/// Whether `name` (argv[0], maybe a path) is an interpreter that takes a program file.
pub fn is_interpreter(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    INTERPRETERS.contains(&base)
        || INTERPRETER_FAMILIES.iter().any(|f| {
            base.strip_prefix(f)
                .is_some_and(|v| v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        })
}

/// `arg` as an absolute, normal path in the box: relative ones from `/work`; `.` dropped,
/// `..` taken lexically (nothing on a bound path is a symlink, so that is what the kernel
/// does too).
pub fn box_path(arg: &str) -> PathBuf {
    let joined = if arg.starts_with('/') {
        PathBuf::from(arg)
    } else {
        Path::new("/work").join(arg)
    };
    let mut out = PathBuf::from("/");
    for c in joined.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

impl View {
    /// The place that shows `path` in the box: the innermost one whose `at` holds it.
    fn place_of(&self, path: &Path) -> Option<&Place> {
        self.places
            .iter()
            .filter(|p| path.starts_with(&p.at))
            .max_by_key(|p| p.at.components().count())
    }

    /// Whether the box may write at `path` (and so whether an approval must bind it).
    fn watched(&self, path: &Path) -> bool {
        self.place_of(path).is_some_and(|p| p.writable)
    }

    /// Whether a program file exists at `path` in a place the box may not write (a system
    /// directory or a read-only mount): where the `PATH` lookup stops.
    fn runs_from_elsewhere(&self, path: &Path) -> bool {
        let host = match self.place_of(path) {
            Some(Place {
                host: Some(h), at, ..
            }) => path
                .strip_prefix(at)
                .map_or_else(|_| h.clone(), |r| h.join(r)),
            Some(Place { host: None, .. }) => return false,
            // The system directories are the host's own, read-only.
            None => {
                const SYSTEM: &[&str] = &["/usr", "/bin", "/lib", "/lib32", "/lib64", "/sbin"];
                if !SYSTEM.iter().any(|s| path.starts_with(s)) {
                    return false;
                }
                path.to_path_buf()
            }
        };
        std::fs::metadata(host).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }

    /// Looks at what is at `path` (which must be watched): its digest, and its bytes and
    /// mode when `keep` (for the program).
    fn look(&self, path: &Path, arg: u32, keep: bool) -> (FileDigest, Option<(Vec<u8>, u32)>) {
        let mut d = FileDigest {
            path: path.display().to_string(),
            arg,
            kind: FileKind::Unbound,
            sha256: None,
            size: None,
            note: None,
            pinned: false,
            was: None,
        };
        let Some(Place {
            at,
            host: Some(root),
            ..
        }) = self.place_of(path)
        else {
            d.kind = FileKind::Absent;
            return (d, None);
        };
        let rel = path.strip_prefix(at).unwrap_or(Path::new(""));
        let opened = open_beneath(root, rel);
        let fd = match opened {
            Ok(fd) => fd,
            // Nothing there, or a name no file can have: bound as absent.
            Err(Errno::NOENT | Errno::NOTDIR | Errno::NAMETOOLONG) => {
                d.kind = FileKind::Absent;
                return (d, None);
            }
            Err(Errno::LOOP) => {
                d.note = Some(symlink_note(root, at, rel));
                return (d, None);
            }
            Err(e) => {
                d.note = Some(format!(
                    "the runner cannot open it ({e}), so it is not covered"
                ));
                return (d, None);
            }
        };
        let mut file = std::fs::File::from(fd);
        let meta = match file.metadata() {
            Ok(m) => m,
            Err(e) => {
                d.note = Some(format!(
                    "the runner cannot read it ({e}), so it is not covered"
                ));
                return (d, None);
            }
        };
        if meta.is_dir() {
            d.kind = FileKind::Directory;
            d.note = Some("a directory: bound as one, what it holds is not covered".into());
            return (d, None);
        }
        if !meta.is_file() {
            d.note = Some("not a regular file, so its content is not covered".into());
            return (d, None);
        }
        let too_large = || {
            format!(
                "larger than {} MiB, so its content is not covered: every call asks",
                DIGEST_LIMIT >> 20
            )
        };
        if meta.len() > DIGEST_LIMIT {
            d.note = Some(too_large());
            return (d, None);
        }
        // Hashed as read; only the program's bytes are kept (at most one file a call).
        let mut hasher = Sha256::new();
        let mut kept_bytes =
            keep.then(|| Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0)));
        let mut total: u64 = 0;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match (&mut file).take(DIGEST_LIMIT + 1 - total).read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    d.note = Some(format!(
                        "the runner cannot read it ({e}), so it is not covered"
                    ));
                    return (d, None);
                }
            };
            let chunk = buf.get(..n).unwrap_or_default();
            hasher.update(chunk);
            if let Some(k) = kept_bytes.as_mut() {
                k.extend_from_slice(chunk);
            }
            total = total.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
            if total > DIGEST_LIMIT {
                d.note = Some(too_large());
                return (d, None);
            }
        }
        d.kind = FileKind::File;
        d.sha256 = Some(hex(&hasher.finalize()));
        d.size = Some(total);
        let kept = kept_bytes.map(|b| (b, meta.permissions().mode()));
        (d, kept)
    }

    /// The digests of `argv` (see the module docs), with the program's bytes when
    /// `keep_program`.
    pub(crate) fn digests(&self, argv: &[String], keep_program: bool) -> Looked {
        let interpreter = argv.first().is_some_and(|a| is_interpreter(a));
        let mut c = Collect {
            view: self,
            files: Vec::new(),
            program: None,
            more: false,
            keep: keep_program,
            interpreter,
            decided: false,
        };
        // The program: a path as given, or the box's PATH walked as the box walks it.
        if let Some(first) = argv.first().filter(|a| a.len() <= PATH_MAX) {
            if first.contains('/') {
                let p = box_path(first);
                if self.watched(&p) {
                    c.add(p, 0);
                }
            } else {
                for dir in self.path_var.split(':').filter(|d| !d.is_empty()) {
                    let p = box_path(&format!("{dir}/{first}"));
                    if self.watched(&p) {
                        if c.add(p, 0).is_some_and(|k| k != FileKind::Absent) {
                            break;
                        }
                    } else if self.runs_from_elsewhere(&p) {
                        break;
                    }
                }
            }
        }
        // Every other argument that names a writable place; options are not files (an
        // argument after `--` is one whatever it looks like).
        let mut options = true;
        for (i, a) in argv.iter().enumerate().skip(1) {
            if options && a == "--" {
                options = false;
                continue;
            }
            if a.is_empty() || a.len() > PATH_MAX || (options && a.starts_with('-')) {
                continue;
            }
            let p = box_path(a);
            if self.watched(&p) {
                c.add(p, i);
                if c.more {
                    break;
                }
            }
        }
        let Collect {
            mut files,
            program,
            more,
            ..
        } = c;
        if more {
            files.push(FileDigest {
                path: String::new(),
                arg: u32::try_from(argv.len()).unwrap_or(u32::MAX),
                kind: FileKind::Unbound,
                sha256: None,
                size: None,
                note: Some(format!(
                    "more than {MAX_FILES} arguments name places in /work or a writable mount; \
                     the rest are not covered"
                )),
                pinned: false,
                was: None,
            });
        }
        Looked { files, program }
    }
}

/// The digests of one argv as they are taken, and the program once it is known.
struct Collect<'a> {
    view: &'a View,
    files: Vec<FileDigest>,
    /// The pinned entry: its index, and (with `keep`) the bytes hashed and the mode.
    program: Option<(usize, Vec<u8>, u32)>,
    more: bool,
    keep: bool,
    interpreter: bool,
    /// The program is known (or known to be none): the first thing found that is not
    /// absent, at `argv[0]` or (for an interpreter) among the arguments, decides it.
    decided: bool,
}

impl Collect<'_> {
    /// Looks at `path` (named by argument `arg`) unless it was already; returns its kind.
    /// The program is `argv[0]` when it is a file here, else (for an interpreter) the
    /// first file argument: it is marked pinned, and its bytes are kept.
    fn add(&mut self, path: PathBuf, arg: usize) -> Option<FileKind> {
        if let Some(f) = self.files.iter().find(|f| Path::new(&f.path) == path) {
            return Some(f.kind);
        }
        if self.files.len() >= MAX_FILES {
            self.more = true;
            return None;
        }
        let candidate = !self.decided && (arg == 0 || self.interpreter);
        let arg = u32::try_from(arg).unwrap_or(u32::MAX);
        let (mut d, kept) = self.view.look(&path, arg, self.keep && candidate);
        let kind = d.kind;
        if candidate && kind != FileKind::Absent {
            self.decided = true;
            if kind == FileKind::File {
                d.pinned = true;
                let (bytes, mode) = kept.unwrap_or_default();
                self.program = Some((self.files.len(), bytes, mode));
            }
        }
        self.files.push(d);
        Some(kind)
    }
}

/// Opens `rel` beneath `root` without following any symlink, for reading; never blocks on
/// a FIFO. `rel` empty is `root` itself.
fn open_beneath(root: &Path, rel: &Path) -> Result<OwnedFd, Errno> {
    let dir = rustix::fs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    rustix::fs::openat2(
        &dir,
        rel,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
}

/// Which component of `rel` (under `root`, shown at `at`) is a symlink, and where it points
/// (read, never followed).
fn symlink_note(root: &Path, at: &Path, rel: &Path) -> String {
    let mut host = root.to_path_buf();
    let mut shown = at.to_path_buf();
    for c in rel.components() {
        host.push(c);
        shown.push(c);
        if let Ok(m) = std::fs::symlink_metadata(&host)
            && m.file_type().is_symlink()
        {
            let to = std::fs::read_link(&host)
                .map_or_else(|_| "somewhere".into(), |t| t.display().to_string());
            return format!(
                "{} is a symlink (to {to}), which the agent can point elsewhere after an \
                 approval: not covered, every call asks",
                shown.display()
            );
        }
    }
    "a symlink is on the way, which the agent can point elsewhere after an approval: not \
     covered, every call asks"
        .into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Runner {
    /// The view of a box of `tool` in `session`: `/work`, the tool's mounts (writable where
    /// the config says, whatever the session's label: a label that goes down on a reset
    /// makes them writable again), the masks, the entries no box changes, and the box's
    /// `PATH`.
    pub(crate) fn view(&self, session: &proto::SessionId, tool: &Tool) -> View {
        let mounts = self.box_mounts(Some(tool), None);
        let masks = self.masks(&mounts);
        // Inside a writable mount, but no box changes them: read-only places of their own.
        let keeps: Vec<Place> = self
            .keeps(&mounts)
            .into_iter()
            .filter_map(|at| {
                let m = mounts.iter().find(|m| at.starts_with(&m.at))?;
                let host = m.host.join(at.strip_prefix(&m.at).ok()?);
                Some(Place {
                    at,
                    host: Some(host),
                    writable: false,
                })
            })
            .collect();
        let mut places = vec![Place {
            at: PathBuf::from("/work"),
            host: Some(self.workspace(session)),
            writable: true,
        }];
        places.extend(mounts.into_iter().map(|m| Place {
            at: m.at,
            host: Some(m.host),
            writable: m.write,
        }));
        places.extend(masks.into_iter().map(|at| Place {
            at,
            host: None,
            writable: false,
        }));
        places.extend(keeps);
        let env = self
            .box_spec(
                session,
                false,
                &tool.env,
                vec!["true".into()],
                sandbox::Io::Inherit,
            )
            .environment();
        let path_var = env
            .into_iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v)
            .unwrap_or_default();
        View { places, path_var }
    }

    /// `digest`: what the call would run (module docs). Empty for anything but a `run`
    /// builtin with arguments that decode; nothing runs.
    pub fn digest(&self, req: &ToolRequest) -> Vec<FileDigest> {
        let Some(
            tool @ Tool {
                kind: ToolKind::Builtin(Builtin::Run),
                ..
            },
        ) = self.config().tool(&req.tool)
        else {
            return Vec::new();
        };
        let Ok(crate::builtin::BuiltinCall::Run(args)) =
            crate::builtin::parse(Builtin::Run, &req.arguments)
        else {
            return Vec::new();
        };
        if self.ensure_workspace(&req.session).is_err() {
            return Vec::new();
        }
        self.view(&req.session, tool)
            .digests(&args.argv, false)
            .files
    }
}

/// A pinned program: the directory that holds its copy (removed when dropped), the argument
/// that named it, and where the copy shows in the box.
pub(crate) type Pin = (tempfile::TempDir, usize, String);

impl Runner {
    /// Writes the program `looked` kept to a fresh directory under `STATE/pins/`, read-only
    /// (executable if it was), to be bound at [`PIN_AT`] in this call's box only. `None`
    /// when there is no program to pin.
    pub(crate) fn pin(&self, looked: &Looked) -> std::io::Result<Option<Pin>> {
        let Some((i, bytes, mode)) = &looked.program else {
            return Ok(None);
        };
        let Some(f) = looked.files.get(*i) else {
            return Ok(None);
        };
        let name = Path::new(&f.path)
            .file_name()
            .map_or_else(|| "program".into(), |n| n.to_os_string());
        // `STATE/pins`, never a link (`statedir::file`): through one, the copies would go
        // elsewhere, and the sweep would remove what is there.
        crate::run::state_sub(self.state_dir(), "pins", true)?;
        let root = self.state_dir().join("pins");
        // Resolved once: a box's bind source may hold no symlink.
        let root = std::fs::canonicalize(root)?;
        let dir = tempfile::Builder::new().prefix("call-").tempdir_in(root)?;
        let copy = dir.path().join(&name);
        std::fs::write(&copy, bytes)?;
        let exec = if mode & 0o111 != 0 { 0o555 } else { 0o444 };
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(exec))?;
        // Read-only in the box by its bind; on the host only the runner reaches `pins/`.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        let at = Path::new(PIN_AT).join(&name).display().to_string();
        let arg = usize::try_from(f.arg).unwrap_or(usize::MAX);
        Ok(Some((dir, arg, at)))
    }
}

impl Runner {
    /// Removes program copies a runner that died left under `STATE/pins/` (a copy lives as
    /// long as its call's box, which is far less than a day). Returns how many. The runner
    /// sweeps when it starts.
    pub fn sweep_pins(&self) -> usize {
        // Only a real `STATE/pins`: a repository can ship `.boxmaker/pins -> ~`, and every
        // directory there not changed for a day would go.
        if crate::run::state_sub(self.state_dir(), "pins", false).is_err() {
            return 0;
        }
        let Ok(entries) = std::fs::read_dir(self.state_dir().join("pins")) else {
            return 0;
        };
        let now = std::time::SystemTime::now();
        let mut removed = 0;
        for e in entries.flatten() {
            let old = e.metadata().and_then(|m| m.modified()).is_ok_and(|t| {
                now.duration_since(t).unwrap_or_default() > crate::run::WORKSPACE_KEEP
            });
            if old && std::fs::remove_dir_all(e.path()).is_ok() {
                removed += 1;
            }
        }
        removed
    }
}

/// Why an approved call does not run: the files whose binding differs now, in words.
pub(crate) fn changed(approved: &[FileDigest], now: &[FileDigest]) -> Option<String> {
    let mut out = Vec::new();
    for a in approved.iter().filter(|a| a.bindable()) {
        let current = now.iter().find(|n| n.path == a.path);
        let binding = current.map_or_else(|| "not named".to_string(), FileDigest::binding);
        if binding != a.binding() {
            out.push(format!(
                "{} (approved as {}, now {binding})",
                a.path,
                a.binding()
            ));
        }
    }
    for n in now.iter().filter(|n| n.bindable()) {
        if !approved.iter().any(|a| a.path == n.path) {
            out.push(format!(
                "{} (not in the approval, now {})",
                n.path,
                n.binding()
            ));
        }
    }
    (!out.is_empty()).then(|| out.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A runner over a config with a writable and a read-only mount; its state directory
    /// and the mounts' host directories live in `dir`.
    fn runner(dir: &Path) -> Runner {
        for d in ["rw", "ro"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let text = r#"
[[mount]]
name = "rw"
host = "rw"
at = "/data/rw"
write = true

[[mount]]
name = "ro"
host = "ro"
at = "/data/ro"

[[tool]]
name = "run"
builtin = "run"

[[tool]]
name = "read_file"
builtin = "read_file"
"#;
        let cfg = Arc::new(config::parse(text, "t.toml", dir).unwrap());
        Runner::with_binary(cfg, &dir.join("state"), "/bin/true".into()).unwrap()
    }

    fn req(tool: &str, argv: &[&str]) -> ToolRequest {
        ToolRequest {
            session: proto::SessionId::new("s1").unwrap(),
            call: proto::CallId(1),
            tool: tool.into(),
            arguments: serde_json::json!({ "argv": argv }).to_string(),
        }
    }

    fn sha(bytes: &[u8]) -> String {
        hex(&Sha256::digest(bytes))
    }

    #[test]
    fn each_argument_naming_a_writable_place_is_bound_and_the_program_is_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(dir.path());
        let ws = r.ensure_workspace(&req("run", &[]).session).unwrap();
        std::fs::write(ws.join("s.sh"), "echo harmless\n").unwrap();
        std::fs::create_dir(ws.join("out")).unwrap();
        std::fs::write(dir.path().join("rw/m.txt"), "m").unwrap();
        std::fs::write(dir.path().join("ro/r.txt"), "r").unwrap();
        let files = r.digest(&req(
            "run",
            &[
                "sh",
                "-x",
                "s.sh",
                "/data/rw/m.txt",
                "/data/ro/r.txt",
                "out",
                "gone",
                "/etc/passwd",
                "--",
                "-y",
            ],
        ));
        let got: Vec<(&str, u32, FileKind, bool)> = files
            .iter()
            .map(|f| (f.path.as_str(), f.arg, f.kind, f.pinned))
            .collect();
        assert_eq!(
            got,
            [
                ("/work/s.sh", 2, FileKind::File, true),
                ("/data/rw/m.txt", 3, FileKind::File, false),
                ("/work/out", 5, FileKind::Directory, false),
                ("/work/gone", 6, FileKind::Absent, false),
                ("/work/-y", 9, FileKind::Absent, false),
            ]
        );
        let script = files.first().unwrap();
        assert_eq!(
            script.sha256.as_deref(),
            Some(sha(b"echo harmless\n").as_str())
        );
        assert_eq!(script.size, Some(14));
        // Not a run call: nothing to bind.
        assert!(r.digest(&req("read_file", &["sh", "s.sh"])).is_empty());
    }

    #[test]
    fn a_symlink_is_named_never_followed_and_a_huge_file_is_not_bound() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(dir.path());
        let ws = r.ensure_workspace(&req("run", &[]).session).unwrap();
        let outside = dir.path().join("host-secret");
        std::fs::write(&outside, "secret").unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("out")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", ws.join("p")).unwrap();
        std::fs::create_dir(ws.join("real")).unwrap();
        std::fs::write(ws.join("real/s.sh"), "x").unwrap();
        std::os::unix::fs::symlink("real", ws.join("via")).unwrap();
        let big = std::fs::File::create(ws.join("big")).unwrap();
        big.set_len(DIGEST_LIMIT + 1).unwrap();
        let files = r.digest(&req("run", &["cat", "out", "p", "via/s.sh", "big"]));
        assert_eq!(files.len(), 4);
        for f in &files {
            assert_eq!(f.kind, FileKind::Unbound, "{f:?}");
            assert_eq!(f.sha256, None, "{f:?}");
        }
        let note = |i: usize| files.get(i).unwrap().note.clone().unwrap();
        assert!(
            note(0).contains(&outside.display().to_string()),
            "{}",
            note(0)
        );
        assert!(
            note(1).contains("/work/p is a symlink (to /etc/passwd)"),
            "{}",
            note(1)
        );
        assert!(
            note(2).contains("/work/via is a symlink (to real)"),
            "{}",
            note(2)
        );
        assert!(note(3).contains("larger than 16 MiB"), "{}", note(3));
    }

    #[test]
    fn the_program_is_looked_up_in_the_boxs_path_where_the_box_writes() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("bin")).unwrap();
        std::fs::write(ws.join("bin/tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(ws.join("bin/tool"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        let view = |path_var: &str| View {
            places: vec![Place {
                at: "/work".into(),
                host: Some(ws.clone()),
                writable: true,
            }],
            path_var: path_var.into(),
        };
        let argv = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Found in /work/bin before /usr/bin: bound, and it is the program.
        let l = view("/work/nobin:/work/bin:/usr/bin").digests(&argv(&["tool", "x"]), true);
        let got: Vec<(&str, FileKind, bool)> = l
            .files
            .iter()
            .map(|f| (f.path.as_str(), f.kind, f.pinned))
            .collect();
        assert_eq!(
            got,
            [
                ("/work/nobin/tool", FileKind::Absent, false),
                ("/work/bin/tool", FileKind::File, true),
                ("/work/x", FileKind::Absent, false),
            ]
        );
        assert_eq!(
            l.program.as_ref().map(|p| p.1.as_slice()),
            Some(&b"#!/bin/sh\n"[..])
        );
        // A system program found first ends the walk: /work/bin is never reached.
        let l = view("/usr/bin:/work/bin").digests(&argv(&["sh", "-c", "x"]), true);
        assert!(l.files.iter().all(|f| f.arg != 0), "{:?}", l.files);
        assert!(l.program.is_none());
        // An executable named with a slash is the program; arguments after it are data.
        std::fs::write(ws.join("data"), "d").unwrap();
        let l = view("/usr/bin").digests(&argv(&["./bin/tool", "data"]), true);
        let pinned: Vec<&str> = l
            .files
            .iter()
            .filter(|f| f.pinned)
            .map(|f| f.path.as_str())
            .collect();
        assert_eq!(pinned, ["/work/bin/tool"]);
    }

    #[test]
    fn an_approved_call_runs_only_while_its_files_bind_the_same() {
        let f = |path: &str, kind, sha: Option<&str>| FileDigest {
            path: path.into(),
            arg: 1,
            kind,
            sha256: sha.map(str::to_string),
            size: None,
            note: None,
            pinned: false,
            was: None,
        };
        let approved = [
            f("/work/s.sh", FileKind::File, Some("aa")),
            f("/work/x", FileKind::Absent, None),
            f("/work/big", FileKind::Unbound, None),
        ];
        assert_eq!(changed(&approved, &approved), None);
        let now = [
            f("/work/s.sh", FileKind::File, Some("bb")),
            f("/work/x", FileKind::File, Some("cc")),
            f("/work/big", FileKind::Unbound, None),
        ];
        let why = changed(&approved, &now).unwrap();
        assert!(
            why.contains("/work/s.sh (approved as sha256:aa, now sha256:bb)"),
            "{why}"
        );
        assert!(
            why.contains("/work/x (approved as absent, now sha256:cc)"),
            "{why}"
        );
        assert!(!why.contains("/work/big"), "{why}");
    }

    #[test]
    fn the_pinned_copy_holds_exactly_the_bytes_hashed_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let r = runner(dir.path());
        let ws = r.ensure_workspace(&req("run", &[]).session).unwrap();
        std::fs::write(ws.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        let tool = r.config().tool("run").unwrap().clone();
        let looked = r
            .view(&req("run", &[]).session, &tool)
            .digests(&["./run.sh".to_string()], true);
        // The file changes after it was hashed: the copy is what was hashed.
        std::fs::write(ws.join("run.sh"), "#!/bin/sh\necho EVIL\n").unwrap();
        let (pin_dir, arg, at) = r.pin(&looked).unwrap().unwrap();
        assert_eq!((arg, at.as_str()), (0, "/.boxmaker/pin/run.sh"));
        let copy = pin_dir.path().join("run.sh");
        let bytes = std::fs::read(&copy).unwrap();
        assert_eq!(bytes, b"#!/bin/sh\necho hi\n");
        assert_eq!(
            looked.files.first().unwrap().sha256.as_deref(),
            Some(sha(&bytes).as_str())
        );
        let mode = std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o555);
        assert!(
            pin_dir
                .path()
                .starts_with(std::fs::canonicalize(dir.path()).unwrap())
        );
        // Gone with its call; and one a dead runner left a day ago is swept.
        let left = pin_dir.path().to_path_buf();
        drop(pin_dir);
        assert!(!left.exists());
        let stale = dir.path().join("state/pins/call-stale");
        std::fs::create_dir_all(&stale).unwrap();
        std::fs::File::open(&stale)
            .unwrap()
            .set_modified(std::time::SystemTime::now() - crate::run::WORKSPACE_KEEP * 2)
            .unwrap();
        std::fs::create_dir_all(dir.path().join("state/pins/call-live")).unwrap();
        assert_eq!(r.sweep_pins(), 1);
        assert!(!stale.exists());
    }

    #[test]
    fn arguments_are_paths_from_work_taken_lexically() {
        assert_eq!(box_path("s.sh"), Path::new("/work/s.sh"));
        assert_eq!(box_path("./a/../b"), Path::new("/work/b"));
        assert_eq!(box_path("/work/../etc/x"), Path::new("/etc/x"));
        assert_eq!(box_path("../../../x"), Path::new("/x"));
        assert_eq!(box_path("/data//m/./f"), Path::new("/data/m/f"));
    }

    #[test]
    fn interpreters_are_known_by_name_with_or_without_a_version() {
        for yes in [
            "sh",
            "/bin/bash",
            "python3",
            "python3.12",
            "/usr/bin/node",
            "perl",
        ] {
            assert!(is_interpreter(yes), "{yes}");
        }
        for no in ["cat", "./run.sh", "python-config", "shx", "cp"] {
            assert!(!is_interpreter(no), "{no}");
        }
    }
}
