//! The front confines itself (docs/spec.md §1) — after its setup, before it reads the first
//! byte from the agent, in the order OpenSSH's and Chromium's sandboxes take:
//!
//! 1. `no_new_privs`: nothing it could exec (it can exec nothing) gains privilege;
//! 2. landlock, every file access right handled and none granted: no file can be opened,
//!    created, read or written by path (descriptors already open stay usable), and, from
//!    ABI 6, no abstract Unix socket or signal outside its own domain;
//! 3. seccomp, an allowlist ([`ALLOWED`], one reviewed row per call): what a tokio runtime,
//!    the MCP server, and reading and writing its descriptors need; no `socket`, `connect`,
//!    `open`, `execve`, `ptrace` or new process — every connection to the gate comes from
//!    the launcher over [`crate::channel`]. Anything else fails with `EPERM`.
//!
//! Call [`confine`] from the one thread the process has, before any runtime starts: landlock
//! and seccomp apply to the calling thread and the threads it starts after.

use std::collections::BTreeMap;

use landlock::{ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope};

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Why the front could not confine itself.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("cannot set no_new_privs: {0}")]
    NoNewPrivs(#[source] std::io::Error),
    #[error("cannot apply landlock: {0}")]
    Landlock(String),
    #[error("cannot build or install the seccomp filter: {0}")]
    Seccomp(String),
}

/// What [`confine`] put in force, for the log line the front prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confined {
    /// How landlock was enforced: fully, partly (an older kernel: fewer rights handled; no
    /// file can be opened still), or not at all (no landlock; seccomp still refuses `open`).
    pub landlock: &'static str,
    /// How many system calls the seccomp allowlist admits.
    pub syscalls: usize,
}

impl std::fmt::Display for Confined {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no_new_privs, seccomp (an allowlist of {} system calls: no open, exec, socket or \
             connect), landlock {} (no file access)",
            self.syscalls, self.landlock
        )
    }
}

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

/// The system calls the confined front may make, with why.
const ALLOWED: &[(libc::c_long, &str)] = &[
    // Its descriptors: stdio (the agent), the launcher's channel, gate connections, and an
    // HTTP listener and its connections.
    (libc::SYS_read, "read a descriptor"),
    (libc::SYS_write, "write a descriptor"),
    (libc::SYS_readv, "read a descriptor"),
    (libc::SYS_writev, "write a descriptor"),
    (libc::SYS_close, "close a descriptor"),
    (
        libc::SYS_fcntl,
        "duplicate a socket (try_clone), descriptor flags",
    ),
    (libc::SYS_fstat, "what a descriptor is"),
    (
        libc::SYS_newfstatat,
        "what a descriptor is (fstat by AT_EMPTY_PATH)",
    ),
    (libc::SYS_statx, "what a descriptor is (std's metadata)"),
    (libc::SYS_lseek, "position on a descriptor"),
    (libc::SYS_recvfrom, "read a socket"),
    (
        libc::SYS_recvmsg,
        "read a socket; receive a gate connection (SCM_RIGHTS)",
    ),
    (libc::SYS_sendto, "write a socket"),
    (libc::SYS_sendmsg, "write a socket"),
    (
        libc::SYS_shutdown,
        "cancel a call: close its gate connection",
    ),
    (
        libc::SYS_accept4,
        "take an HTTP connection on the listener bound before",
    ),
    (libc::SYS_getsockname, "the HTTP listener's address"),
    (libc::SYS_getpeername, "an HTTP peer's address"),
    (
        libc::SYS_setsockopt,
        "TCP_NODELAY and keep-alive on an accepted connection",
    ),
    (libc::SYS_getsockopt, "a socket's pending error"),
    (libc::SYS_ppoll, "wait on descriptors"),
    // The runtime: readiness, timers, wakeups.
    (libc::SYS_epoll_create1, "the runtime's poller"),
    (libc::SYS_epoll_ctl, "the runtime's poller"),
    (libc::SYS_epoll_pwait, "the runtime's poller"),
    (libc::SYS_epoll_pwait2, "the runtime's poller"),
    (libc::SYS_eventfd2, "the runtime's wakeup"),
    (
        libc::SYS_socketpair,
        "the runtime's signal driver: a pair inside this process, connected to nothing else",
    ),
    (libc::SYS_futex, "locks and condition variables"),
    (libc::SYS_sched_yield, "spin then yield"),
    (
        libc::SYS_sched_getaffinity,
        "how many processors (thread pools)",
    ),
    (libc::SYS_clock_gettime, "time (when the vDSO falls back)"),
    (libc::SYS_clock_getres, "timer resolution"),
    (libc::SYS_clock_nanosleep, "sleep"),
    (libc::SYS_nanosleep, "sleep"),
    (libc::SYS_getrandom, "hash map seeds, session ids"),
    // Memory.
    (libc::SYS_brk, "the heap"),
    (libc::SYS_mmap, "the heap and thread stacks"),
    (libc::SYS_munmap, "the heap and thread stacks"),
    (libc::SYS_mremap, "the heap"),
    (libc::SYS_mprotect, "thread stack guard pages"),
    (libc::SYS_madvise, "giving memory back"),
    // Threads (clone only with CLONE_THREAD: see below) and their end.
    (libc::SYS_clone, "start a thread (CLONE_THREAD only)"),
    (
        libc::SYS_clone3,
        "answered ENOSYS by the first filter, so libc uses clone",
    ),
    (libc::SYS_set_robust_list, "a new thread's setup"),
    (libc::SYS_rseq, "a new thread's setup"),
    (
        libc::SYS_prctl,
        "name a thread (PR_SET_NAME only: see below)",
    ),
    (libc::SYS_sigaltstack, "a thread's signal stack"),
    (
        libc::SYS_rt_sigaction,
        "signal handlers (std installs a few)",
    ),
    (libc::SYS_rt_sigprocmask, "signal masks of new threads"),
    (libc::SYS_rt_sigreturn, "return from a signal handler"),
    (libc::SYS_gettid, "which thread"),
    (libc::SYS_getpid, "which process"),
    (libc::SYS_tgkill, "abort on a fatal error"),
    (libc::SYS_exit, "a thread ends"),
    (libc::SYS_exit_group, "the process ends"),
    (
        libc::SYS_restart_syscall,
        "a call interrupted by a signal goes on",
    ),
];

/// Calls of the same kinds that only x86_64 has (aarch64 has only the newer forms above).
#[cfg(target_arch = "x86_64")]
const ALLOWED_X86_64: &[(libc::c_long, &str)] = &[
    (libc::SYS_epoll_wait, "the runtime's poller"),
    (libc::SYS_poll, "wait on descriptors"),
];
#[cfg(not(target_arch = "x86_64"))]
const ALLOWED_X86_64: &[(libc::c_long, &str)] = &[];

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule, ConfineError> {
    let c = SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value)
        .map_err(|e| ConfineError::Seccomp(e.to_string()))?;
    SeccompRule::new(vec![c]).map_err(|e| ConfineError::Seccomp(e.to_string()))
}

/// The front's two filters: `clone3` → `ENOSYS` (its flags are in memory, where a filter
/// cannot read them; libc then uses `clone`), then the allowlist.
fn filters() -> Result<(Vec<BpfProgram>, usize), ConfineError> {
    let mut allowed: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (nr, _why) in ALLOWED.iter().chain(ALLOWED_X86_64) {
        allowed.insert(*nr, Vec::new());
    }
    // A thread, never a process: CLONE_THREAD must be set.
    let thread = libc::CLONE_THREAD as u64;
    allowed.insert(
        libc::SYS_clone,
        vec![cond(0, SeccompCmpOp::MaskedEq(thread), thread)?],
    );
    // prctl(PR_SET_NAME, …) alone (std names its threads).
    allowed.insert(
        libc::SYS_prctl,
        vec![cond(0, SeccompCmpOp::Eq, libc::PR_SET_NAME as u64)?],
    );
    let count = allowed.len();
    let mk = |rules, mismatch, matched| -> Result<BpfProgram, ConfineError> {
        let f = SeccompFilter::new(rules, mismatch, matched, ARCH)
            .map_err(|e| ConfineError::Seccomp(e.to_string()))?;
        BpfProgram::try_from(f).map_err(|e| ConfineError::Seccomp(e.to_string()))
    };
    let mut enosys: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    enosys.insert(libc::SYS_clone3, Vec::new());
    let first = mk(
        enosys,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
    )?;
    let second = mk(
        allowed,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
    )?;
    Ok((vec![first, second], count))
}

/// Confines this process (see the module's doc). Call it on the process's only thread.
pub fn confine() -> Result<Confined, ConfineError> {
    rustix::thread::set_no_new_privs(true)
        .map_err(|e| ConfineError::NoNewPrivs(std::io::Error::from(e)))?;
    let abi = ABI::V6;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .and_then(|r| r.scope(Scope::from_all(abi)))
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self())
        .map_err(|e| ConfineError::Landlock(e.to_string()))?;
    let landlock = match status.ruleset {
        landlock::RulesetStatus::FullyEnforced => "fully enforced",
        landlock::RulesetStatus::PartiallyEnforced => "partly enforced",
        landlock::RulesetStatus::NotEnforced => "not enforced by this kernel",
    };
    let (programs, syscalls) = filters()?;
    for p in &programs {
        seccompiler::apply_filter(p).map_err(|e| ConfineError::Seccomp(e.to_string()))?;
    }
    Ok(Confined { landlock, syscalls })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_allowlist_compiles_and_names_no_door() {
        let (programs, count) = filters().unwrap();
        assert_eq!(programs.len(), 2);
        assert!(count > 30);
        for door in [
            libc::SYS_socket,
            libc::SYS_connect,
            libc::SYS_openat,
            libc::SYS_execve,
            libc::SYS_execveat,
            libc::SYS_ptrace,
            libc::SYS_fork,
            libc::SYS_vfork,
            libc::SYS_bind,
            libc::SYS_listen,
            libc::SYS_open,
        ] {
            assert!(!ALLOWED.iter().any(|(nr, _)| *nr == door), "{door}");
        }
    }
}
