//! What a box is asked to be: the [`Spec`] a caller builds and the helper process receives
//! (as JSON over a socket). Plain data with defaults from docs/spec.md §4; [`Spec::validate`] refuses
//! what the box cannot build safely before any namespace exists.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The uid and gid the command has inside the box.
pub const BOX_UID: u32 = 1000;
/// Host uid the box user maps to when the caller is root (and [`Spec::host_id`] is unset):
/// a dedicated high id that owns nothing else on the machine. Never 0.
pub const DEFAULT_ROOT_HOST_ID: u32 = 1_879_048_192;
/// Where a [`Spec::proxy`] box finds its way out, inside its own network namespace.
pub const PROXY_ADDR: std::net::SocketAddrV4 =
    std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 3128);
/// Largest spec (JSON bytes) the helper accepts.
pub const MAX_SPEC_BYTES: usize = 1 << 20;

/// One box run: a command, its environment, its mounts, its limits.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The command and its arguments; `argv[0]` is looked up in the box's `PATH` unless it
    /// holds a `/`.
    pub argv: Vec<String>,
    /// Variables passed in explicitly, on top of the base environment (`PATH`, `HOME`, `LANG`,
    /// `TERM`). Nothing else of the caller's environment reaches the box.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Host directory mounted read-write at `/work` (the command's working directory).
    pub workspace: PathBuf,
    /// Further host paths, read-only unless `write`. Each `host` is used as given — resolved
    /// once by whoever made the spec — and must not contain a symlink when the box is built.
    #[serde(default)]
    pub mounts: Vec<Mount>,
    /// Places inside the box hidden under an empty read-only tmpfs (a directory a mount
    /// shows that no box may see, such as boxmaker's state directory).
    #[serde(default)]
    pub masks: Vec<PathBuf>,
    /// Places inside a writable mount that the box may not change: each entry there when
    /// the box is built (not a symlink) is bound over itself read-only; nothing is created
    /// where none is (docs/spec.md §4, "What a writable mount keeps").
    #[serde(default)]
    pub keeps: Vec<PathBuf>,
    /// Share the host's network (no network namespace). Default: only `lo`.
    #[serde(default)]
    pub network: bool,
    /// A network namespace of its own with only `lo`, and on it a listener at
    /// [`PROXY_ADDR`] that init creates and hands to the caller (`SCM_RIGHTS`, through the
    /// helper): the box's only way out is whatever the caller serves on it (the runner's
    /// egress proxy). Not with `network`.
    #[serde(default)]
    pub proxy: bool,
    #[serde(default)]
    pub limits: Limits,
    /// Which protections must be enforced; one that is required but missing is an error.
    #[serde(default)]
    pub require: Requirements,
    /// Host uid/gid the box user maps to when the caller is root. `None`:
    /// [`DEFAULT_ROOT_HOST_ID`]. Ignored when the caller is not root (then the box user maps
    /// to the caller's own uid, the only mapping an unprivileged process may write).
    #[serde(default)]
    pub host_id: Option<u32>,
    /// Standard streams. Stays with the caller: the helper never sees stdin bytes.
    #[serde(skip)]
    pub io: Io,
}

/// A host path shown inside the box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mount {
    pub host: PathBuf,
    /// Absolute path inside the box.
    pub at: PathBuf,
    #[serde(default)]
    pub write: bool,
}

/// Resource limits. Defaults follow docs/spec.md §4.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Memory: the box's memory cgroup limit; where no memory cgroup bounds the box, every
    /// process's `RLIMIT_AS` too (see [`crate::address_space_limit`]).
    pub memory_bytes: u64,
    /// Every process's `RLIMIT_AS` where a memory cgroup bounds the box (`None`: unlimited):
    /// address space reserved and never touched costs no memory, and the cgroup bounds what
    /// is touched.
    pub address_space_bytes: Option<u64>,
    /// Processes: cgroup `pids.max`, and `RLIMIT_NPROC` (counted per box, see `child.rs`).
    pub processes: u64,
    /// Largest file a process may write (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Wall clock; then the whole pid namespace is killed.
    pub timeout: Duration,
    /// `RLIMIT_NOFILE`.
    pub open_files: u64,
    /// `RLIMIT_CPU`, seconds of CPU per process.
    pub cpu_seconds: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 2 << 30,
            address_space_bytes: None,
            processes: 256,
            file_size_bytes: 64 << 20,
            timeout: Duration::from_secs(300),
            open_files: 1024,
            cpu_seconds: 300,
        }
    }
}

/// Protections a caller may declare optional. Namespaces, `no_new_privs`, seccomp and the
/// capability drop are always required: without them there is no box.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Requirements {
    /// Landlock must enforce the mount table (default: yes).
    pub landlock: bool,
    /// Memory and pids cgroup limits must be applied (default: no — "where a writable cgroup
    /// exists"; `doctor` reports whether they are).
    pub cgroups: bool,
}

impl Default for Requirements {
    fn default() -> Self {
        Self {
            landlock: true,
            cgroups: false,
        }
    }
}

/// What happens to the command's standard streams.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Io {
    /// The box shares the caller's stdin, stdout and stderr (`boxmaker box exec`).
    #[default]
    Inherit,
    /// stdin is these bytes; stdout and stderr are captured, each up to `output_cap` bytes
    /// (the rest is read and dropped, and the outcome says `truncated`).
    Capture { stdin: Vec<u8>, output_cap: usize },
}

impl Spec {
    /// A spec with default limits and requirements.
    pub fn new(argv: Vec<String>, workspace: impl Into<PathBuf>) -> Self {
        Self {
            argv,
            env: BTreeMap::new(),
            workspace: workspace.into(),
            mounts: Vec::new(),
            masks: Vec::new(),
            keeps: Vec::new(),
            network: false,
            proxy: false,
            limits: Limits::default(),
            require: Requirements::default(),
            host_id: None,
            io: Io::Inherit,
        }
    }

    /// Checks what can be checked without touching the kernel.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(Error::InvalidSpec(m));
        if self.argv.is_empty() || self.argv[0].is_empty() {
            return bad("argv is empty".into());
        }
        if self.argv.iter().any(|a| a.contains('\0')) {
            return bad("NUL byte in argv".into());
        }
        for (k, v) in &self.env {
            if k.is_empty() || k.contains('=') || k.contains('\0') || v.contains('\0') {
                return bad(format!("bad environment variable name or value: {k:?}"));
            }
        }
        if !self.workspace.is_absolute() {
            return bad(format!(
                "workspace {} is not absolute",
                self.workspace.display()
            ));
        }
        for m in &self.mounts {
            if !m.host.is_absolute() {
                return bad(format!("mount source {} is not absolute", m.host.display()));
            }
            check_box_path(&m.at)?;
        }
        for at in &self.masks {
            check_box_path(at)?;
            if !self.mounts.iter().any(|m| at.starts_with(&m.at)) {
                return bad(format!("mask {} is under no mount", at.display()));
            }
        }
        for at in &self.keeps {
            check_box_path(at)?;
            if !self
                .mounts
                .iter()
                .any(|m| m.write && at.starts_with(&m.at) && at != &m.at)
            {
                return bad(format!(
                    "kept entry {} is inside no writable mount",
                    at.display()
                ));
            }
        }
        let l = &self.limits;
        if l.memory_bytes < (16 << 20)
            || l.address_space_bytes.is_some_and(|a| a < (16 << 20))
            || l.processes == 0
            || l.open_files < 16
            || l.timeout.is_zero()
        {
            return bad(format!("limits too small to run anything: {l:?}"));
        }
        if self.network && self.proxy {
            return bad("a box either shares the host's network or has the proxy, not both".into());
        }
        if self.host_id == Some(0) {
            return bad("host_id 0 would make the box user host root".into());
        }
        Ok(())
    }

    /// The environment the command starts with, built from scratch.
    pub fn environment(&self) -> Vec<(String, String)> {
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
        env.insert("HOME".into(), "/work".into());
        env.insert("LANG".into(), "C.UTF-8".into());
        env.insert("TERM".into(), "dumb".into());
        for (k, v) in &self.env {
            env.insert(k.clone(), v.clone());
        }
        env.into_iter().collect()
    }
}

/// Places inside the box a mount may not cover: the box's own machinery.
const RESERVED: &[&str] = &[
    "/", "/proc", "/dev", "/work", "/tmp", "/etc", "/usr", "/bin", "/lib", "/lib64", "/sbin",
];

/// A mount target must be absolute, normal (no `.`/`..`), and must not cover or sit inside
/// the box's own machinery or a system directory (whose symlinks and read-only binds the
/// mount point would have to be created through).
fn check_box_path(at: &Path) -> Result<()> {
    if !at.is_absolute()
        || at
            .components()
            .any(|c| !matches!(c, Component::RootDir | Component::Normal(_)))
    {
        return Err(Error::InvalidSpec(format!(
            "mount target {} must be absolute and normal",
            at.display()
        )));
    }
    if at == Path::new("/") || RESERVED.iter().any(|r| *r != "/" && at.starts_with(r)) {
        return Err(Error::InvalidSpec(format!(
            "mount target {} is reserved by the box",
            at.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_spec_json_round_trip_keeps_fields() {
        let mut s = Spec::new(vec!["true".into()], "/tmp/w");
        s.mounts.push(Mount {
            host: "/srv".into(),
            at: "/data".into(),
            write: false,
        });
        let j = serde_json::to_string(&s).unwrap();
        let back: Spec = serde_json::from_str(&j).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn test_spec_unknown_field_is_rejected() {
        let j = r#"{"argv":["x"],"workspace":"/w","nope":1}"#;
        assert!(serde_json::from_str::<Spec>(j).is_err());
    }

    #[test]
    fn test_spec_mount_over_proc_is_invalid() {
        let mut s = Spec::new(vec!["true".into()], "/tmp/w");
        s.mounts.push(Mount {
            host: "/srv".into(),
            at: "/proc/x".into(),
            write: false,
        });
        assert!(s.validate().is_err());
        s.mounts[0].at = "/data/../etc".into();
        assert!(s.validate().is_err());
        s.mounts[0].at = "/data".into();
        assert!(s.validate().is_ok());
    }

    #[test]
    fn test_spec_environment_has_base_and_named_only() {
        let mut s = Spec::new(vec!["true".into()], "/tmp/w");
        s.env.insert("TOKEN".into(), "x".into());
        let env = s.environment();
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["HOME", "LANG", "PATH", "TERM", "TOKEN"]);
    }

    #[test]
    fn test_spec_host_id_zero_is_invalid() {
        let mut s = Spec::new(vec!["true".into()], "/tmp/w");
        s.host_id = Some(0);
        assert!(s.validate().is_err());
    }
}
