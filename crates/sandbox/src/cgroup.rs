//! A per-box cgroup with memory and pids limits, created by the helper before the box starts
//! and removed after it ends. cgroup v1 (`/sys/fs/cgroup/{memory,pids}`) and v2 (a cgroup2
//! mount whose `cgroup.subtree_control` enables both controllers) are supported. The box's
//! cgroup is created under the helper's own cgroup, so limits set on the caller still apply.
//!
//! Where no writable cgroup exists, [`BoxCgroup::create`] returns `None` with the reason; the
//! caller decides (fail closed if `Requirements::cgroups`).
//!
//! **Joining, fast.** Writing another process's pid to `cgroup.procs` write-locks the global
//! `cgroup_threadgroup_rwsem`, which waits for an RCU grace period when the lock was idle —
//! 5 to 15 ms on a small VM, on the path of every box. A task writing `0` (itself) to a v1
//! `tasks` file skips that lock (kernel `cgroup_procs_write_start`: a single thread moving
//! itself cannot race with its thread group changing). So on v1 the helper opens the `tasks`
//! files here, as the host user ([`BoxCgroup::self_join_files`]), passes them to the box's
//! init, and init — single-threaded, before it starts the command — writes `0` to each
//! (`child.rs` step 12). The kernel checks the *opener's* credentials, so the descriptors
//! are all init needs; they are close-on-exec and dropped once used. v2 has no such file:
//! the helper writes init's pid to `cgroup.procs` ([`BoxCgroup::add`]).
//!
//! Either way the cgroup is created after init is cloned, while init builds the box's root,
//! so creating it (a few hundred microseconds for two v1 hierarchies) costs no wall time.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The cgroup directories of one box; removed on drop.
#[derive(Debug)]
pub struct BoxCgroup {
    dirs: Vec<PathBuf>,
    v1: bool,
}

fn write(path: &Path, value: &str) -> Result<()> {
    fs::write(path, value).map_err(|source| Error::File {
        context: "write cgroup file",
        path: path.into(),
        source,
    })
}

/// This process's path in a v1 hierarchy with `controller`, or in v2 (`controller` = "").
fn own_path(controller: &str) -> Option<String> {
    let text = fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_id, ctrls, path) = (parts.next()?, parts.next()?, parts.next()?);
        let hit = if controller.is_empty() {
            ctrls.is_empty()
        } else {
            ctrls.split(',').any(|c| c == controller)
        };
        hit.then(|| path.to_owned())
    })
}

/// Where a box cgroup can be made, and which version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// v1: parent directories for memory and pids.
    V1 { memory: PathBuf, pids: PathBuf },
    /// v2: one parent directory with both controllers enabled for children.
    V2 { parent: PathBuf },
}

/// Finds a writable place for box cgroups, or says why there is none.
pub fn detect() -> std::result::Result<Layout, String> {
    let writable = crate::sys::writable;
    // v2 first: a pure v2 system mounts it at /sys/fs/cgroup; hybrid at /sys/fs/cgroup/unified.
    for mount in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        let root = Path::new(mount);
        if !root.join("cgroup.controllers").exists() {
            continue;
        }
        let parent = root.join(own_path("").unwrap_or_default().trim_start_matches('/'));
        let sub = fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
        let has = |c: &str| sub.split_whitespace().any(|x| x == c);
        if has("memory") && has("pids") && writable(&parent) {
            return Ok(Layout::V2 { parent });
        }
    }
    let v1 = |c: &str| -> Option<PathBuf> {
        let root = Path::new("/sys/fs/cgroup").join(c);
        if !root.join("tasks").exists() {
            return None;
        }
        let p = root.join(own_path(c)?.trim_start_matches('/'));
        writable(&p).then_some(p)
    };
    match (v1("memory"), v1("pids")) {
        (Some(memory), Some(pids)) => Ok(Layout::V1 { memory, pids }),
        _ => Err(
            "no writable cgroup with memory and pids controllers (v2 needs both in \
                  cgroup.subtree_control; v1 needs write access to memory/ and pids/)"
                .into(),
        ),
    }
}

impl BoxCgroup {
    /// Creates `boxmaker-<name>` with the given limits.
    pub fn create(layout: &Layout, name: &str, memory_bytes: u64, processes: u64) -> Result<Self> {
        let leaf = format!("boxmaker-{name}");
        let mut cg = BoxCgroup {
            dirs: Vec::new(),
            v1: matches!(layout, Layout::V1 { .. }),
        };
        let mkdir = |p: &Path| {
            fs::create_dir(p).map_err(|source| Error::File {
                context: "create cgroup",
                path: p.into(),
                source,
            })
        };
        match layout {
            Layout::V1 { memory, pids } => {
                let m = memory.join(&leaf);
                mkdir(&m)?;
                cg.dirs.push(m.clone());
                write(&m.join("memory.limit_in_bytes"), &memory_bytes.to_string())?;
                // Swap counts too where the kernel accounts it, else swap would lift the limit.
                let memsw = m.join("memory.memsw.limit_in_bytes");
                if memsw.exists() {
                    write(&memsw, &memory_bytes.to_string())?;
                }
                let p = pids.join(&leaf);
                mkdir(&p)?;
                cg.dirs.push(p.clone());
                write(&p.join("pids.max"), &processes.to_string())?;
            }
            Layout::V2 { parent } => {
                let d = parent.join(&leaf);
                mkdir(&d)?;
                cg.dirs.push(d.clone());
                write(&d.join("memory.max"), &memory_bytes.to_string())?;
                let swap = d.join("memory.swap.max");
                if swap.exists() {
                    write(&swap, "0")?;
                }
                write(&d.join("pids.max"), &processes.to_string())?;
            }
        }
        Ok(cg)
    }

    /// v1: the `tasks` file of every directory, opened for writing (close-on-exec), for the
    /// box's init to join by writing `0`. v2: `None` (use [`BoxCgroup::add`]).
    pub fn self_join_files(&self) -> Result<Option<Vec<OwnedFd>>> {
        if !self.v1 {
            return Ok(None);
        }
        let mut files = Vec::with_capacity(self.dirs.len());
        for d in &self.dirs {
            let path = d.join("tasks");
            let f = fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|source| Error::File {
                    context: "open cgroup tasks",
                    path,
                    source,
                })?;
            files.push(OwnedFd::from(f));
        }
        Ok(Some(files))
    }

    /// Moves process `pid` (and so everything it later forks) into the box's cgroup.
    pub fn add(&self, pid: libc::pid_t) -> Result<()> {
        for d in &self.dirs {
            write(&d.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// Whether the memory controller killed a process of the box (best effort).
    pub fn oom_killed(&self) -> bool {
        self.dirs.iter().any(|d| {
            let v1 = fs::read_to_string(d.join("memory.oom_control")).unwrap_or_default();
            let v2 = fs::read_to_string(d.join("memory.events")).unwrap_or_default();
            v1.lines().chain(v2.lines()).any(|l| {
                l.strip_prefix("oom_kill ")
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .is_some_and(|n| n > 0)
            })
        })
    }
}

/// Removes box cgroups left behind by supervisors that died without cleaning up (a caller
/// running its box in process — [`crate::run_in_process`] — that was killed with SIGKILL):
/// every `boxmaker-<pid>-<n>` directory under the layout's parents whose `<pid>` no longer
/// exists. Best effort, and safe: a cgroup that still holds a process cannot be removed, and
/// one whose creator is alive (it may be about to join it) is left alone.
pub fn sweep(layout: &Layout) {
    let parents = match layout {
        Layout::V1 { memory, pids } => vec![memory, pids],
        Layout::V2 { parent } => vec![parent],
    };
    for parent in parents {
        let Ok(entries) = fs::read_dir(parent) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("boxmaker-"))
                .and_then(|rest| rest.split_once('-'))
                .and_then(|(pid, _)| pid.parse::<u32>().ok())
            else {
                continue;
            };
            if !Path::new("/proc").join(pid.to_string()).exists() {
                let _ = fs::remove_dir(e.path());
            }
        }
    }
}

impl Drop for BoxCgroup {
    fn drop(&mut self) {
        // The box's init has been reaped, and with it every process of its pid namespace, so
        // the directories are empty; a few retries cover the kernel finishing the exits.
        for d in &self.dirs {
            for _ in 0..50 {
                if fs::remove_dir(d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's place for box cgroups; these tests need one (root, as the suite runs).
    fn real_layout() -> Layout {
        detect().unwrap_or_else(|e| panic!("these tests need a writable cgroup: {e}"))
    }

    fn dirs_of(layout: &Layout) -> Vec<PathBuf> {
        match layout {
            Layout::V1 { memory, pids } => vec![memory.clone(), pids.clone()],
            Layout::V2 { parent } => vec![parent.clone()],
        }
    }

    /// Runs this binary's ignored test `name` as pid 1 of a new pid namespace with a /proc of
    /// its own (`unshare --pid --fork --mount-proc`): a boxmaker that cannot see our pids.
    fn in_another_pid_namespace(name: &str, env: (&str, &str)) -> std::process::Output {
        let exe = std::env::current_exe().unwrap();
        std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc"])
            .arg(exe)
            .args(["--exact", name, "--ignored", "--test-threads=1"])
            .env(env.0, env.1)
            .output()
            .unwrap()
    }

    #[test]
    fn test_a_sweeper_in_another_pid_namespace_leaves_a_live_boxs_cgroup() {
        let layout = real_layout();
        // A box cgroup just made, not joined yet (the window in which init joins it).
        let name = format!("{}-{}", std::process::id(), 1);
        let live = BoxCgroup::create(&layout, &name, 1 << 30, 64).unwrap();
        let out =
            in_another_pid_namespace("cgroup::tests::sweep_here", ("BOXMAKER_TEST_SWEEP", "1"));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        for d in &live.dirs {
            assert!(
                d.exists(),
                "a sweeper in another pid namespace removed the live {d:?}"
            );
        }
    }

    #[test]
    fn test_a_dead_owners_cgroup_is_swept_whatever_its_pid_namespace() {
        let layout = real_layout();
        let list = tempfile::NamedTempFile::new().unwrap();
        let path = list.path().to_str().unwrap().to_owned();
        let out =
            in_another_pid_namespace("cgroup::tests::own_and_die", ("BOXMAKER_TEST_OWN", &path));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let left: Vec<PathBuf> = fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(PathBuf::from)
            .collect();
        assert!(
            !left.is_empty() && left.iter().all(|d| d.exists()),
            "{left:?}"
        );
        assert!(
            left.iter()
                .all(|d| dirs_of(&layout).iter().any(|p| d.parent() == Some(p)))
        );
        sweep(&layout);
        let unswept: Vec<_> = left.iter().filter(|d| d.exists()).collect();
        assert!(
            unswept.is_empty(),
            "a dead owner's cgroups were not swept: {unswept:?}"
        );
    }

    /// Run by the test above in its own pid namespace: sweeps once.
    #[test]
    #[ignore = "run by test_a_sweeper_in_another_pid_namespace_leaves_a_live_boxs_cgroup"]
    fn sweep_here() {
        if std::env::var_os("BOXMAKER_TEST_SWEEP").is_none() {
            return;
        }
        assert_eq!(std::process::id(), 1, "not in a pid namespace of its own");
        sweep(&real_layout());
    }

    /// Run by the test above in its own pid namespace: makes a box cgroup, writes where, and
    /// exits without removing it, as an owner killed with SIGKILL would.
    #[test]
    #[ignore = "run by test_a_dead_owners_cgroup_is_swept_whatever_its_pid_namespace"]
    fn own_and_die() {
        let Some(list) = std::env::var_os("BOXMAKER_TEST_OWN") else {
            return;
        };
        assert_eq!(std::process::id(), 1, "not in a pid namespace of its own");
        let name = format!("{}-{}", std::process::id(), 2);
        let cg = BoxCgroup::create(&real_layout(), &name, 1 << 30, 64).unwrap();
        let text: String = cg
            .dirs
            .iter()
            .map(|d| format!("{}\n", d.display()))
            .collect();
        fs::write(list, text).unwrap();
        std::mem::forget(cg);
        std::process::exit(0);
    }

    #[test]
    fn test_sweep_removes_only_dead_creators_leftovers() {
        let parent = tempfile::tempdir().unwrap();
        let mine = parent
            .path()
            .join(format!("boxmaker-{}-1", std::process::id()));
        // Pids are below 2^22 on Linux: this one cannot exist.
        let dead = parent.path().join("boxmaker-4294967-2");
        let other = parent.path().join("not-a-box-4294967-3");
        for d in [&mine, &dead, &other] {
            fs::create_dir(d).unwrap();
        }
        sweep(&Layout::V2 {
            parent: parent.path().to_path_buf(),
        });
        assert!(mine.exists());
        assert!(!dead.exists());
        assert!(other.exists());
    }
}
