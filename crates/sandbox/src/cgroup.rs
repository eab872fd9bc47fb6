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
//!
//! **Names and sweeping, across pid namespaces.** Several boxmakers may share a cgroup
//! parent, each in a pid namespace of its own (containers, `unshare`), so neither a name nor
//! a liveness test may rest on a pid. A box cgroup is `boxmaker-` and 128 random bits in hex,
//! and its owner holds an exclusive `flock` on the directory itself (an open descriptor of
//! it) for as long as the cgroup is its own; the kernel lets go when the owner dies, SIGKILL
//! included, whatever namespace it was in. [`sweep`] removes a directory only when it can
//! take that lock, i.e. when its owner is provably dead. A directory is locked before any
//! sweeper can look at it: the creator holds the *parent* directory with a shared lock from
//! before its `mkdir` until it has the new directory's lock, and a sweeper holds the parent
//! exclusively (or, if it cannot at once, sweeps another time). Names of any other shape —
//! older boxmakers' `boxmaker-<pid>-<n>`, whose owners hold no lock — are never swept.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The start of every box cgroup's name; 32 lowercase hex digits follow.
const PREFIX: &str = "boxmaker-";
/// Bytes of randomness in a name: two boxmakers never pick the same one.
const ID_BYTES: usize = 16;

/// The cgroup directories of one box; removed on drop.
#[derive(Debug)]
pub struct BoxCgroup {
    dirs: Vec<PathBuf>,
    /// Each of `dirs`, open and exclusively `flock`ed while this lives: the proof, to a
    /// sweeper in any pid namespace, that its owner is alive. Released after the removal.
    locks: Vec<fs::File>,
    v1: bool,
}

/// A fresh box cgroup name: [`PREFIX`] and [`ID_BYTES`] random bytes in hex.
fn new_name() -> Result<String> {
    let mut id = [0u8; ID_BYTES];
    crate::sys::random_bytes(&mut id)?;
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{PREFIX}{hex}"))
}

/// Whether `name` is one [`new_name`] makes (the only ones [`sweep`] may remove).
fn is_box_name(name: &str) -> bool {
    name.strip_prefix(PREFIX).is_some_and(|id| {
        id.len() == 2 * ID_BYTES && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

fn open_dir(path: &Path) -> Result<fs::File> {
    fs::File::open(path).map_err(|source| Error::File {
        context: "open cgroup",
        path: path.into(),
        source,
    })
}

/// Makes `parent/name` and takes its lock before any sweeper can see it unlocked: `parent`
/// is held shared from before the `mkdir` until then ([`sweep`] holds it exclusively).
fn make_locked(parent: &Path, name: &str) -> Result<(PathBuf, fs::File)> {
    let guard = open_dir(parent)?;
    guard.lock_shared().map_err(|source| Error::File {
        context: "lock cgroup parent",
        path: parent.into(),
        source,
    })?;
    let dir = parent.join(name);
    fs::create_dir(&dir).map_err(|source| Error::File {
        context: "create cgroup",
        path: dir.clone(),
        source,
    })?;
    let locked = open_dir(&dir).and_then(|f| match f.try_lock() {
        Ok(()) => Ok(f),
        Err(e) => Err(Error::File {
            context: "lock cgroup",
            path: dir.clone(),
            source: e.into(),
        }),
    });
    match locked {
        Ok(lock) => Ok((dir, lock)),
        Err(e) => {
            let _ = fs::remove_dir(&dir);
            Err(e)
        }
    }
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

impl Layout {
    /// Whether a box cgroup made here bounds all of the box's memory: the kernel charges
    /// swap to it (so the limit written covers swap too, `create`), or the machine has no
    /// swap. Then the memory limit is the cgroup's alone, and the address space is set apart
    /// (docs/spec.md §4, Limits).
    pub fn bounds_memory(&self) -> bool {
        let accounted = match self {
            Layout::V1 { memory, .. } => memory.join("memory.memsw.limit_in_bytes").exists(),
            // A v2 kernel charges swap to every cgroup but the root, which has no
            // memory.max (and boxes are never made in the root: they are its children).
            Layout::V2 { parent } => {
                parent.join("memory.swap.max").exists() || !parent.join("memory.max").exists()
            }
        };
        accounted || no_swap()
    }
}

/// Whether the machine has no swap space in use (`/proc/swaps` lists none).
fn no_swap() -> bool {
    fs::read_to_string("/proc/swaps").is_ok_and(|s| s.lines().skip(1).all(|l| l.trim().is_empty()))
}

/// Whether boxes on this machine have their memory bounded by a cgroup (see
/// [`Layout::bounds_memory`]); where not, the memory limit is every process's address-space
/// limit.
pub fn memory_cgroup() -> bool {
    detect().is_ok_and(|l| l.bounds_memory())
}

/// Every process's `RLIMIT_AS` in a box of `limits` (`None`: unlimited): where a memory
/// cgroup bounds the box (`cgroup`), `address_space_bytes`; where none does, `memory_bytes`,
/// the only bound of its memory.
pub fn address_space_limit(limits: &crate::Limits, cgroup: bool) -> Option<u64> {
    if cgroup {
        limits.address_space_bytes
    } else {
        Some(limits.memory_bytes)
    }
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
    /// Creates a box cgroup of a fresh name (see the module's docs), locked as this one's,
    /// with the given limits.
    pub fn create(layout: &Layout, memory_bytes: u64, processes: u64) -> Result<Self> {
        let leaf = new_name()?;
        let mut cg = BoxCgroup {
            dirs: Vec::new(),
            locks: Vec::new(),
            v1: matches!(layout, Layout::V1 { .. }),
        };
        let mut mkdir = |parent: &Path| -> Result<PathBuf> {
            let (dir, lock) = make_locked(parent, &leaf)?;
            cg.dirs.push(dir.clone());
            cg.locks.push(lock);
            Ok(dir)
        };
        match layout {
            Layout::V1 { memory, pids } => {
                let m = mkdir(memory)?;
                let p = mkdir(pids)?;
                write(&m.join("memory.limit_in_bytes"), &memory_bytes.to_string())?;
                // Swap counts too where the kernel accounts it, else swap would lift the limit.
                let memsw = m.join("memory.memsw.limit_in_bytes");
                if memsw.exists() {
                    write(&memsw, &memory_bytes.to_string())?;
                }
                write(&p.join("pids.max"), &processes.to_string())?;
            }
            Layout::V2 { parent } => {
                let d = mkdir(parent)?;
                write(&d.join("memory.max"), &memory_bytes.to_string())?;
                let swap = d.join("memory.swap.max");
                if swap.exists() {
                    write(&swap, "0")?;
                }
                write(&d.join("pids.max"), &processes.to_string())?;
                // A box over its memory dies whole: the OOM killer takes every process of
                // the cgroup, never one of them while the rest go on with half the work
                // done (a shell that prints "survived" after its child was killed).
                let group = d.join("memory.oom.group");
                if group.exists() {
                    write(&group, "1")?;
                }
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

/// Removes box cgroups left behind by owners that died without cleaning up (a caller
/// running its box in process — [`crate::run_in_process`] — that was killed with SIGKILL),
/// in whatever pid namespace they ran: every directory of a box cgroup's name under the
/// layout's parents whose lock can be taken, which only its owner's death releases. Best
/// effort, and safe: a parent where a box cgroup is being made is left for another time, a
/// locked directory is never touched, and a cgroup that still holds a process cannot be
/// removed.
pub fn sweep(layout: &Layout) {
    let parents = match layout {
        Layout::V1 { memory, pids } => vec![memory, pids],
        Layout::V2 { parent } => vec![parent],
    };
    for parent in parents {
        let Ok(guard) = fs::File::open(parent) else {
            continue;
        };
        if guard.try_lock().is_err() {
            continue;
        }
        let Ok(entries) = fs::read_dir(parent) else {
            continue;
        };
        for e in entries.flatten() {
            if !e.file_name().to_str().is_some_and(is_box_name) {
                continue;
            }
            let Ok(dir) = fs::File::open(e.path()) else {
                continue;
            };
            if dir.try_lock().is_ok() {
                let _ = fs::remove_dir(e.path());
            }
        }
    }
}

impl Drop for BoxCgroup {
    fn drop(&mut self) {
        // The box's init has been reaped, and with it every process of its pid namespace, so
        // the directories are empty; a few retries cover the kernel finishing the exits. The
        // locks go after (the fields drop once this returns).
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

    #[test]
    fn the_address_space_is_the_memory_limit_only_where_no_memory_cgroup_bounds_the_box() {
        let mut l = crate::Limits {
            memory_bytes: 1 << 30,
            ..crate::Limits::default()
        };
        assert_eq!(address_space_limit(&l, true), None);
        assert_eq!(address_space_limit(&l, false), Some(1 << 30));
        l.address_space_bytes = Some(64 << 30);
        assert_eq!(address_space_limit(&l, true), Some(64 << 30));
        assert_eq!(address_space_limit(&l, false), Some(1 << 30));
    }

    /// The tests below that make and sweep real box cgroups, one at a time: each one's sweep
    /// would remove the other's dead owner's cgroup before it looks.
    static REAL_CGROUPS: std::sync::Mutex<()> = std::sync::Mutex::new(());

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
        let _one = REAL_CGROUPS.lock().unwrap_or_else(|e| e.into_inner());
        let layout = real_layout();
        // A box cgroup just made, not joined yet (the window in which init joins it).
        let live = BoxCgroup::create(&layout, 1 << 30, 64).unwrap();
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
        let _one = REAL_CGROUPS.lock().unwrap_or_else(|e| e.into_inner());
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
        let cg = BoxCgroup::create(&real_layout(), 1 << 30, 64).unwrap();
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
    fn test_sweep_removes_only_unlocked_box_names() {
        let parent = tempfile::tempdir().unwrap();
        let (live, _lock) = make_locked(parent.path(), &new_name().unwrap()).unwrap();
        let dead = parent.path().join(new_name().unwrap());
        // An older boxmaker's name (its owner holds no lock), and names of other shapes.
        let old = parent.path().join("boxmaker-4294967-2");
        let other = parent
            .path()
            .join("not-a-box-0123456789abcdef0123456789abcdef");
        let upper = parent
            .path()
            .join("boxmaker-0123456789ABCDEF0123456789ABCDEF");
        for d in [&dead, &old, &other, &upper] {
            fs::create_dir(d).unwrap();
        }
        sweep(&Layout::V2 {
            parent: parent.path().to_path_buf(),
        });
        assert!(live.exists(), "a locked box cgroup was swept");
        assert!(!dead.exists(), "an unlocked box cgroup was left");
        assert!(old.exists() && other.exists() && upper.exists());
    }

    #[test]
    fn test_sweep_leaves_a_parent_where_a_box_cgroup_is_being_made() {
        let parent = tempfile::tempdir().unwrap();
        let dead = parent.path().join(new_name().unwrap());
        fs::create_dir(&dead).unwrap();
        // A creator between its mkdir and its lock holds the parent shared.
        let creating = fs::File::open(parent.path()).unwrap();
        creating.lock_shared().unwrap();
        let layout = Layout::V2 {
            parent: parent.path().to_path_buf(),
        };
        sweep(&layout);
        assert!(dead.exists(), "swept while a box cgroup was being made");
        drop(creating);
        // A child another test forked in between holds a copy of `creating` (the same open
        // file, the same lock) until its exec closes it: seen once under load. The lock goes
        // with that exec, and the next sweep removes what this one left.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while dead.exists() && std::time::Instant::now() < deadline {
            sweep(&layout);
            if dead.exists() {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        assert!(!dead.exists());
    }

    #[test]
    fn test_box_names_are_fresh_and_recognised() {
        let (a, b) = (new_name().unwrap(), new_name().unwrap());
        assert_ne!(a, b);
        assert!(is_box_name(&a) && is_box_name(&b), "{a} {b}");
        assert!(!is_box_name("boxmaker-1-2") && !is_box_name(&format!("{a}0")));
    }
}
