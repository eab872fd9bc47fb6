//! The box's mount table, as data. [`mount_table`] is computed on the host from a [`Spec`]
//! (resolving symlinks there, once); `child.rs` applies it inside the new mount namespace and
//! `landlock.rs` turns the same table into landlock rules, so the two can never disagree.
//!
//! Shape of the box's root (a fresh tmpfs, read-only once built):
//!
//! ```text
//! /usr /bin /lib /lib64 /sbin   read-only binds, or the host's symlinks (bin -> usr/bin)
//! /etc/{ld.so.*,ssl,...}        read-only binds of the few files programs need
//! /etc/{passwd,group,hosts}     written for the box, not the host's
//! <extra mounts>                read-only unless `write`
//! /work                         the workspace, read-write
//! /tmp  /dev/shm                private tmpfs
//! /proc                         fresh, for the box's pid namespace
//! /dev/{null,zero,full,random,urandom,tty}  binds of the host's nodes; /dev/pts new instance
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::spec::{BOX_UID, Spec};

/// One line of the mount table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountEntry {
    /// Path inside the box.
    pub at: PathBuf,
    pub kind: MountKind,
}

/// What is placed at a path of the box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum MountKind {
    /// A bind mount of a host path (already canonical), read-only unless `write`.
    Bind {
        host: PathBuf,
        write: bool,
        dir: bool,
    },
    /// A bind mount of a host device node (read-write, no other access).
    Device { host: PathBuf },
    /// A symbolic link, e.g. `/bin -> usr/bin`.
    Symlink { target: PathBuf },
    /// A file written for the box.
    File { contents: String },
    /// A private tmpfs, writable by the box user.
    Tmpfs { writable: bool },
    /// A fresh procfs for the box's pid namespace.
    Proc,
    /// A new devpts instance.
    Devpts,
    /// The entry already at this path, inside a writable bind, bound over itself read-only
    /// when it is there and not a symlink; its mount point is never made (the path is the
    /// host's own file).
    Keep,
    /// A directory between a writable bind and a kept entry deeper in it, bound over itself
    /// as it is (still writable): a mount point cannot be renamed or removed, so the box
    /// cannot move the directory that holds the kept entry and put its own in its place.
    /// Made, like [`MountKind::Keep`], only where it is there and not a symlink.
    Pin,
}

/// The directories a box's kept entries need pinned ([`MountKind::Pin`]): each directory
/// strictly between a kept entry and the writable mount that holds it, unless it is kept
/// itself or lies inside a kept entry (read-only already). A kept entry at a mount's top
/// needs none: the mount's own root cannot be renamed.
fn pins(spec: &Spec) -> Vec<PathBuf> {
    let kept_by_another = |p: &Path| {
        spec.keeps
            .iter()
            .any(|k| p.starts_with(k) && p != k.as_path())
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for at in spec.keeps.iter().filter(|k| !kept_by_another(k)) {
        let Some(mount) = spec
            .mounts
            .iter()
            .filter(|m| m.write && at.starts_with(&m.at) && at != &m.at)
            .max_by_key(|m| m.at.components().count())
        else {
            continue;
        };
        for dir in at.ancestors().skip(1) {
            if dir == mount.at || !dir.starts_with(&mount.at) {
                break;
            }
            if !spec.keeps.iter().any(|k| dir.starts_with(k)) {
                out.push(dir.to_path_buf());
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Top-level system directories shown read-only where they exist.
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/lib", "/lib32", "/lib64", "/sbin"];

/// Files and directories of `/etc` that programs need to load libraries, find certificates
/// and tell the time. Bound read-only (after resolving symlinks on the host) where they exist.
const ETC_ENTRIES: &[&str] = &[
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "localtime",
    "nsswitch.conf",
];

/// Device nodes the box gets, bound from the host.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// Builds the mount table for `spec`, looking at the host's filesystem to resolve symlinks
/// and skip what does not exist. Host paths in the result are canonical.
pub fn mount_table(spec: &Spec) -> Result<Vec<MountEntry>> {
    spec.validate()?;
    let mut t = Vec::new();
    let entry = |at: &str, kind| MountEntry {
        at: PathBuf::from(at),
        kind,
    };

    for dir in SYSTEM_DIRS {
        let p = Path::new(dir);
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(p).map_err(|source| Error::File {
                    context: "readlink",
                    path: p.into(),
                    source,
                })?;
                t.push(entry(dir, MountKind::Symlink { target }));
            }
            Ok(m) if m.is_dir() => t.push(entry(
                dir,
                MountKind::Bind {
                    host: p.into(),
                    write: false,
                    dir: true,
                },
            )),
            _ => {}
        }
    }
    if !t.iter().any(|e| e.at == Path::new("/usr")) {
        return Err(Error::InvalidSpec(
            "the host has no /usr directory to show in the box".into(),
        ));
    }

    let mut etc: Vec<&str> = ETC_ENTRIES.to_vec();
    if spec.network {
        // Name resolution is only useful, and only shown, when the box has the network.
        etc.push("resolv.conf");
    }
    for name in etc {
        let p = Path::new("/etc").join(name);
        if let Ok(real) = std::fs::canonicalize(&p) {
            let dir = real.is_dir();
            t.push(MountEntry {
                at: p,
                kind: MountKind::Bind {
                    host: real,
                    write: false,
                    dir,
                },
            });
        }
    }
    let id = BOX_UID;
    t.push(entry(
        "/etc/passwd",
        MountKind::File {
            contents: format!(
                "box:x:{id}:{id}:box:/work:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
            ),
        },
    ));
    t.push(entry(
        "/etc/group",
        MountKind::File {
            contents: format!("box:x:{id}:\nnogroup:x:65534:\n"),
        },
    ));
    t.push(entry(
        "/etc/hosts",
        MountKind::File {
            contents: "127.0.0.1 localhost box\n::1 localhost\n".into(),
        },
    ));
    t.push(entry(
        "/etc/hostname",
        MountKind::File {
            contents: "box\n".into(),
        },
    ));

    let workspace = canonical(&spec.workspace)?;
    if !workspace.is_dir() {
        return Err(Error::InvalidSpec(format!(
            "workspace {} is not a directory",
            workspace.display()
        )));
    }
    t.push(entry(
        "/work",
        MountKind::Bind {
            host: workspace,
            write: true,
            dir: true,
        },
    ));
    t.push(entry("/tmp", MountKind::Tmpfs { writable: true }));

    let mut extra: Vec<MountEntry> = Vec::new();
    for m in &spec.mounts {
        // Not resolved again here: the spec's maker resolved it once, and init opens it
        // refusing any symlink on the way (`sys::open_path`).
        let host = m.host.clone();
        if !host.is_absolute() {
            return Err(Error::InvalidSpec(format!(
                "mount source {} is not an absolute path",
                host.display()
            )));
        }
        let dir = host.is_dir();
        extra.push(MountEntry {
            at: m.at.clone(),
            kind: MountKind::Bind {
                host,
                write: m.write,
                dir,
            },
        });
    }
    for at in &spec.masks {
        extra.push(MountEntry {
            at: at.clone(),
            kind: MountKind::Tmpfs { writable: false },
        });
    }
    for at in &spec.keeps {
        extra.push(MountEntry {
            at: at.clone(),
            kind: MountKind::Keep,
        });
    }
    for at in pins(spec) {
        extra.push(MountEntry {
            at,
            kind: MountKind::Pin,
        });
    }
    // Parents before children, so a mount inside another is not hidden by it (and a mask,
    // inside its mount, comes after it: a stable sort keeps masks after mounts of a depth).
    extra.sort_by_key(|e| e.at.components().count());
    t.extend(extra);

    t.push(entry("/proc", MountKind::Proc));
    t.push(entry("/dev", MountKind::Tmpfs { writable: false }));
    for d in DEVICES {
        let host = Path::new("/dev").join(d);
        if host.exists() {
            t.push(MountEntry {
                at: host.clone(),
                kind: MountKind::Device { host },
            });
        }
    }
    t.push(entry("/dev/pts", MountKind::Devpts));
    t.push(entry(
        "/dev/ptmx",
        MountKind::Symlink {
            target: "pts/ptmx".into(),
        },
    ));
    t.push(entry("/dev/shm", MountKind::Tmpfs { writable: true }));
    t.push(entry(
        "/dev/fd",
        MountKind::Symlink {
            target: "/proc/self/fd".into(),
        },
    ));
    t.push(entry(
        "/dev/stdin",
        MountKind::Symlink {
            target: "/proc/self/fd/0".into(),
        },
    ));
    t.push(entry(
        "/dev/stdout",
        MountKind::Symlink {
            target: "/proc/self/fd/1".into(),
        },
    ));
    t.push(entry(
        "/dev/stderr",
        MountKind::Symlink {
            target: "/proc/self/fd/2".into(),
        },
    ));
    Ok(t)
}

fn canonical(p: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(p).map_err(|source| Error::File {
        context: "resolve mount source",
        path: p.into(),
        source,
    })
}

/// Renders the table one mount a line, for `boxmaker box show`.
pub fn describe(table: &[MountEntry]) -> String {
    let mut out = String::new();
    for e in table {
        let what = match &e.kind {
            MountKind::Bind { host, write, .. } => {
                format!(
                    "{} ({})",
                    host.display(),
                    if *write { "read-write" } else { "read-only" }
                )
            }
            MountKind::Device { host } => format!("{} (device)", host.display()),
            MountKind::Symlink { target } => format!("-> {}", target.display()),
            MountKind::File { .. } => "written for the box (read-only)".into(),
            MountKind::Tmpfs { writable: true } => "private tmpfs (read-write)".into(),
            MountKind::Tmpfs { writable: false } => "private tmpfs (read-only)".into(),
            MountKind::Proc => "proc of the box's pid namespace".into(),
            MountKind::Devpts => "new devpts instance".into(),
            MountKind::Keep => {
                "kept read-only: what a program on the host runs from (no box changes it)".into()
            }
            MountKind::Pin => {
                "pinned: holds a kept entry, so no box renames or removes it (still writable)"
                    .into()
            }
        };
        out.push_str(&format!("{:<24} {what}\n", e.at.display()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_mount_table_has_workspace_rw_and_no_host_root() {
        let dir = tempfile::tempdir().unwrap();
        let spec = Spec::new(vec!["true".into()], dir.path());
        let t = mount_table(&spec).unwrap();
        let work = t.iter().find(|e| e.at == Path::new("/work")).unwrap();
        assert!(matches!(work.kind, MountKind::Bind { write: true, .. }));
        assert!(!t.iter().any(|e| e.at == Path::new("/")
            || e.at == Path::new("/root")
            || e.at == Path::new("/home")));
        assert!(!t.iter().any(|e| e.at == Path::new("/etc/resolv.conf")));
        assert!(!t.iter().any(|e| e.at == Path::new("/etc/shadow")));
    }

    #[test]
    fn test_mount_table_missing_workspace_is_error() {
        let spec = Spec::new(vec!["true".into()], "/nonexistent/boxmaker/ws");
        assert!(mount_table(&spec).is_err());
    }

    #[test]
    fn pins_are_the_directories_between_a_kept_entry_and_its_writable_mount() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = Spec::new(vec!["true".into()], dir.path());
        spec.mounts.push(crate::Mount {
            host: dir.path().to_path_buf(),
            at: "/src".into(),
            write: true,
        });
        spec.keeps = [
            "/src/.git",
            "/src/.git/hooks",
            "/src/org/b/.git",
            "/src/org/c/.husky",
            "/src/x/y/z/.git",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let want: Vec<PathBuf> = ["/src/org", "/src/org/b", "/src/org/c", "/src/x", "/src/x/y"]
            .iter()
            .chain(["/src/x/y/z"].iter())
            .map(PathBuf::from)
            .collect();
        assert_eq!(pins(&spec), want);
        let t = mount_table(&spec).unwrap();
        let at = |p: &str| t.iter().position(|e| e.at == Path::new(p)).unwrap();
        // Parents first: the mount, then the pins, then the kept entry inside them.
        assert!(at("/src") < at("/src/org") && at("/src/org") < at("/src/org/b"));
        assert!(at("/src/org/b") < at("/src/org/b/.git"));
        assert!(matches!(t[at("/src/org/b")].kind, MountKind::Pin));
    }
}
