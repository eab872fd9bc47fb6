//! `doctor`: which of the box's protections this machine enforces, each probed for real (in a
//! forked child that only makes raw system calls, so it is safe from a multi-threaded caller).
//! The lead exposes it as `boxmaker doctor`; the runner refuses to start where
//! [`DoctorReport::missing`] is not empty.

use std::fmt;

use crate::spec::{DEFAULT_ROOT_HOST_ID, Requirements};
use crate::sys;

/// One protection and whether this machine enforces it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: &'static str,
    pub enforced: bool,
    /// A box cannot start without it (given the [`Requirements`] passed to [`doctor`]).
    pub required: bool,
    pub detail: String,
}

/// Every check, in the order the box applies them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoctorReport {
    pub checks: Vec<Check>,
}

impl DoctorReport {
    /// Required protections this machine does not enforce.
    pub fn missing(&self) -> Vec<&Check> {
        self.checks
            .iter()
            .filter(|c| c.required && !c.enforced)
            .collect()
    }
}

impl fmt::Display for DoctorReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.checks {
            let mark = match (c.enforced, c.required) {
                (true, _) => "yes",
                (false, true) => "NO (required)",
                (false, false) => "no",
            };
            writeln!(f, "{:<22} {:<14} {}", c.name, mark, c.detail)?;
        }
        let missing = self.missing();
        if missing.is_empty() {
            writeln!(f, "boxes can run here")
        } else {
            let names: Vec<&str> = missing.iter().map(|c| c.name).collect();
            writeln!(f, "boxes cannot run here: missing {}", names.join(", "))
        }
    }
}

fn strerror(errno: i32) -> String {
    std::io::Error::from_raw_os_error(errno).to_string()
}

/// What the memory limit means on this machine, to follow the cgroup check's detail.
fn address_space_note(cgroup: bool, bounded: bool) -> String {
    match (cgroup, bounded) {
        (true, true) => "; memory is bounded there, and the address space apart \
                         (`[box] address_space_bytes`)"
            .into(),
        (true, false) => "; swap is not charged to it, so `[box] memory_bytes` is also every \
                          process's address-space limit (RLIMIT_AS)"
            .into(),
        (false, _) => "; without one, `[box] memory_bytes` is every process's address-space \
                       limit (RLIMIT_AS), the only bound of its memory: a program that reserves \
                       more address space than it uses (node's WebAssembly) fails at far less \
                       memory than that"
            .into(),
    }
}

/// A namespace probe, run in a forked child: `f` returns 0, an errno of its `unshare`, or
/// [`sys::PROBE_STEP_FAILED`] plus the errno of `step`, the call a box then makes in it.
fn ns_check(name: &'static str, f: impl FnOnce() -> libc::c_int, what: &str, step: &str) -> Check {
    let (enforced, detail) = match sys::probe_in_child(f) {
        Ok(0) => (true, what.to_owned()),
        Ok(e) if e > sys::PROBE_STEP_FAILED => (
            false,
            format!(
                "{step} failed: {} (the namespace was made, but a box could not start in it: \
                 docs/deploy.md lists the container settings it needs)",
                strerror(e - sys::PROBE_STEP_FAILED)
            ),
        ),
        Ok(e) => (false, format!("unshare failed: {}", strerror(e))),
        Err(e) => (false, e.to_string()),
    };
    Check {
        name,
        enforced,
        required: true,
        detail,
    }
}

/// Probes the machine. `require` says which optional protections count as required.
pub fn doctor(require: &Requirements) -> DoctorReport {
    let mut checks = Vec::new();
    let user = libc::CLONE_NEWUSER;
    let unshare = |flags: libc::c_int| move || sys::unshare_errno(flags);
    checks.push(ns_check(
        "user namespace",
        unshare(user),
        "unprivileged user namespaces work",
        "unshare",
    ));
    checks.push(ns_check(
        "mount namespace",
        unshare(user | libc::CLONE_NEWNS),
        "private mount table, pivot_root",
        "unshare",
    ));
    checks.push(ns_check(
        "pid namespace",
        sys::proc_errno,
        "box sees only its own processes (its own /proc mounted)",
        "mounting a fresh /proc in it",
    ));
    checks.push(ns_check(
        "ipc namespace",
        unshare(user | libc::CLONE_NEWIPC),
        "private SysV IPC and message queues",
        "unshare",
    ));
    checks.push(ns_check(
        "uts namespace",
        sys::uts_errno,
        "own hostname",
        "sethostname in it",
    ));
    checks.push(ns_check(
        "network namespace",
        unshare(user | libc::CLONE_NEWNET),
        "only lo; a network = true box too, its way out only boxmaker's egress proxy",
        "unshare",
    ));
    checks.push(ns_check(
        "cgroup namespace",
        unshare(user | libc::CLONE_NEWCGROUP),
        "own view of /proc/self/cgroup",
        "unshare",
    ));

    let (enforced, detail) = if sys::geteuid() == 0 {
        (
            true,
            format!("box uid 1000 maps to host uid {DEFAULT_ROOT_HOST_ID} (caller is root)"),
        )
    } else {
        (
            true,
            format!("box uid 1000 maps to the caller's uid {}", sys::geteuid()),
        )
    };
    checks.push(Check {
        name: "unprivileged box user",
        enforced,
        required: true,
        detail,
    });

    let (enforced, detail) = match sys::probe_in_child(sys::nnp_errno) {
        Ok(0) => (true, "exec can never gain privileges".to_owned()),
        Ok(e) => (false, strerror(e)),
        Err(e) => (false, e.to_string()),
    };
    checks.push(Check {
        name: "no_new_privs",
        enforced,
        required: true,
        detail,
    });

    let (enforced, detail) = match crate::seccomp::compile() {
        Ok(progs) => match sys::probe_in_child(|| {
            progs
                .iter()
                .map(|p| sys::seccomp_errno(p))
                .find(|e| *e != 0)
                .unwrap_or(0)
        }) {
            Ok(0) => (true, crate::seccomp::denied_summary()),
            Ok(e) => (
                false,
                format!("installing the filter failed: {}", strerror(e)),
            ),
            Err(e) => (false, e.to_string()),
        },
        Err(e) => (false, e.to_string()),
    };
    checks.push(Check {
        name: "seccomp",
        enforced,
        required: true,
        detail,
    });

    let abi = crate::landlock::abi_version();
    let (enforced, detail) = if abi > 0 {
        (
            true,
            format!(
                "ABI version {abi}{}",
                if abi >= 6 {
                    ", signal and abstract-socket scoping"
                } else {
                    ""
                }
            ),
        )
    } else {
        (
            false,
            "not enabled in this kernel (see /sys/kernel/security/lsm)".to_owned(),
        )
    };
    checks.push(Check {
        name: "landlock",
        enforced,
        required: require.landlock,
        detail,
    });

    let layout = crate::cgroup::detect();
    let bounded = layout
        .as_ref()
        .is_ok_and(crate::cgroup::Layout::bounds_memory);
    let (enforced, mut detail) = match layout {
        Ok(crate::cgroup::Layout::V1 { memory, pids }) => (
            true,
            format!(
                "cgroup v1: memory at {}, pids at {}",
                memory.display(),
                pids.display()
            ),
        ),
        Ok(crate::cgroup::Layout::V2 { parent }) => (
            true,
            format!("cgroup v2: memory and pids under {}", parent.display()),
        ),
        Err(reason) => (false, reason),
    };
    detail.push_str(&address_space_note(enforced, bounded));
    checks.push(Check {
        name: "cgroup limits",
        enforced,
        required: require.cgroups,
        detail,
    });
    checks.push(Check {
        name: "rlimits",
        enforced: true,
        required: true,
        detail: format!(
            "address space ({}), processes, open files, file size, CPU time, no core dumps",
            if bounded {
                "`[box] address_space_bytes`: the memory cgroup bounds memory"
            } else {
                "`[box] memory_bytes`: no memory cgroup bounds memory here"
            }
        ),
    });
    DoctorReport { checks }
}
