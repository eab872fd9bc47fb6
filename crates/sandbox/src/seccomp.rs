//! The seccomp filter, as reviewed data: one table row per denied system call, each with the
//! reason it is denied. Everything not listed is allowed (the other layers — namespaces,
//! dropped capabilities, landlock — confine what is left); a listed call fails with `EPERM`
//! so programs see an ordinary error instead of being killed.
//!
//! `clone3` is the exception: its flags live in memory, where a filter cannot read them, so
//! it fails with `ENOSYS`, which makes libc fall back to `clone`, whose flags the filter can
//! check.
//!
//! Sockets are the other: `socket(2)` and `socketpair(2)` are allowed only for the families
//! in [`SOCKET_FAMILIES`] (the first argument, which is in a register the filter reads) and
//! fail with `EAFNOSUPPORT` for every other — what the kernel itself answers for a family it
//! does not have, so programs take it as "not here". A namespace confines `AF_INET` and
//! `AF_INET6` (the network namespace) and `AF_UNIX` (paths by the mount namespace and
//! landlock, abstract names by the network namespace), but not every family: `AF_VSOCK`
//! reaches the hypervisor host's port space from any network namespace (docs/spec.md §4).
//! `io_uring`, which could make a socket without a `socket(2)` call, is denied below; on
//! x86-64 `socketcall(2)` exists only in the i386 table, and every filter here kills a
//! process that calls with an audit arch other than the native one (seccompiler's first
//! instructions), so `int 0x80` never reaches it.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::error::{Error, Result};

/// System calls denied outright, with the reason.
const DENIED: &[(libc::c_long, &str)] = &[
    // Filesystem view: the mount table is fixed once the box is built.
    (
        libc::SYS_mount,
        "new mounts could reveal host filesystems or undo read-only binds",
    ),
    (
        libc::SYS_umount2,
        "unmounting could reveal what a mount covers",
    ),
    (
        libc::SYS_pivot_root,
        "changing the root is the box's job, done before this filter",
    ),
    (libc::SYS_open_tree, "new mount API: cloning mount trees"),
    (libc::SYS_move_mount, "new mount API: attaching mounts"),
    (libc::SYS_fsopen, "new mount API: creating filesystems"),
    (libc::SYS_fsconfig, "new mount API: configuring filesystems"),
    (libc::SYS_fsmount, "new mount API: creating mounts"),
    (libc::SYS_fspick, "new mount API: reconfiguring mounts"),
    (
        libc::SYS_mount_setattr,
        "could clear read-only or nosuid on a mount",
    ),
    (
        libc::SYS_chroot,
        "no use inside a box; a classic step of escapes",
    ),
    // Other processes' memory.
    (libc::SYS_ptrace, "reading or steering another process"),
    (
        libc::SYS_process_vm_readv,
        "reading another process's memory",
    ),
    (
        libc::SYS_process_vm_writev,
        "writing another process's memory",
    ),
    (
        libc::SYS_pidfd_getfd,
        "stealing another process's file descriptors",
    ),
    (libc::SYS_kcmp, "probing another process's kernel objects"),
    // Kernel attack surface with a long history of bugs.
    (libc::SYS_bpf, "loading BPF programs into the kernel"),
    (
        libc::SYS_perf_event_open,
        "kernel profiling: information leaks and a large attack surface",
    ),
    (
        libc::SYS_userfaultfd,
        "stalls kernel page faults, a standard exploit primitive",
    ),
    (
        libc::SYS_io_uring_setup,
        "io_uring bypasses this filter for the calls it performs",
    ),
    (
        libc::SYS_io_uring_enter,
        "io_uring bypasses this filter for the calls it performs",
    ),
    (
        libc::SYS_io_uring_register,
        "io_uring bypasses this filter for the calls it performs",
    ),
    (
        libc::SYS_open_by_handle_at,
        "opens files by handle, bypassing path-based confinement",
    ),
    (
        libc::SYS_name_to_handle_at,
        "companion of open_by_handle_at",
    ),
    // Kernel keyrings are not namespaced.
    (
        libc::SYS_keyctl,
        "the kernel keyring is shared with the host",
    ),
    (
        libc::SYS_add_key,
        "the kernel keyring is shared with the host",
    ),
    (
        libc::SYS_request_key,
        "the kernel keyring is shared with the host",
    ),
    // The machine itself.
    (libc::SYS_init_module, "loading kernel modules"),
    (libc::SYS_finit_module, "loading kernel modules"),
    (libc::SYS_delete_module, "unloading kernel modules"),
    (libc::SYS_kexec_load, "replacing the running kernel"),
    (libc::SYS_kexec_file_load, "replacing the running kernel"),
    (libc::SYS_reboot, "rebooting the machine"),
    (libc::SYS_swapon, "changing swap"),
    (libc::SYS_swapoff, "changing swap"),
    (libc::SYS_acct, "process accounting to a file"),
    (libc::SYS_quotactl, "filesystem quotas"),
    (libc::SYS_syslog, "reading the kernel log"),
    // New namespaces: a new user namespace regains every capability inside it.
    (
        libc::SYS_unshare,
        "creating namespaces (new user namespace = capabilities again)",
    ),
    (libc::SYS_setns, "entering other namespaces"),
];

/// `clone` flags that create namespaces; `clone` with any of them is denied, one rule each
/// (conditions inside one rule are ANDed, rules are ORed).
const CLONE_NS_FLAGS: &[(u64, &str)] = &[
    (
        libc::CLONE_NEWUSER as u64,
        "new user namespace: capabilities again",
    ),
    (libc::CLONE_NEWNS as u64, "new mount namespace"),
    (libc::CLONE_NEWPID as u64, "new pid namespace"),
    (libc::CLONE_NEWNET as u64, "new network namespace"),
    (libc::CLONE_NEWIPC as u64, "new IPC namespace"),
    (libc::CLONE_NEWUTS as u64, "new UTS namespace"),
    (libc::CLONE_NEWCGROUP as u64, "new cgroup namespace"),
    (0x0000_0080, "CLONE_NEWTIME: new time namespace"),
];

// `libc::Ioctl` is `c_ulong` on glibc and `c_int` on musl, hence the casts.
#[allow(clippy::unnecessary_cast)]
/// `ioctl` requests denied on any descriptor: both push input into a terminal, which, with an
/// inherited terminal, would type commands into the caller's shell.
const DENIED_IOCTLS: &[(u64, &str)] = &[
    (
        libc::TIOCSTI as u64,
        "inject characters into the terminal's input queue",
    ),
    (
        libc::TIOCLINUX as u64,
        "virtual console tricks, including input injection",
    ),
];

/// The socket families a box may open, with the reason it needs each. Everything else —
/// `AF_VSOCK`, `AF_NETLINK`, `AF_PACKET`, `AF_BLUETOOTH`, `AF_ALG`, every family a kernel
/// adds later — fails with `EAFNOSUPPORT`.
const SOCKET_FAMILIES: &[(libc::c_int, &str)] = &[
    (
        libc::AF_UNIX,
        "pipes and sockets between a tool's own processes, and socketpair(2)",
    ),
    (
        libc::AF_INET,
        "the box's own lo and the egress proxy's listener at 127.0.0.1:3128",
    ),
    (
        libc::AF_INET6,
        "the box's own lo; programs try IPv6 first and fall back",
    ),
];

/// The calls whose first argument is a socket family.
const SOCKET_CALLS: &[libc::c_long] = &[libc::SYS_socket, libc::SYS_socketpair];

#[cfg(target_arch = "x86_64")]
const ARCH: TargetArch = TargetArch::x86_64;
#[cfg(target_arch = "aarch64")]
const ARCH: TargetArch = TargetArch::aarch64;

fn cond(arg: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompRule> {
    let c = SeccompCondition::new(arg, SeccompCmpArgLen::Qword, op, value)
        .map_err(|e| Error::Seccomp(e.to_string()))?;
    SeccompRule::new(vec![c]).map_err(|e| Error::Seccomp(e.to_string()))
}

/// One rule that matches a family outside [`SOCKET_FAMILIES`]: `arg0 != f` for each, ANDed.
/// The kernel reads the family as an `int`, so only the low 32 bits are compared (`Dword`):
/// `2^32 + AF_VSOCK` is `AF_VSOCK` to the kernel and to this rule alike.
fn foreign_family() -> Result<SeccompRule> {
    let conds = SOCKET_FAMILIES
        .iter()
        .map(|(family, _why)| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, *family as u64)
                .map_err(|e| Error::Seccomp(e.to_string()))
        })
        .collect::<Result<Vec<_>>>()?;
    SeccompRule::new(conds).map_err(|e| Error::Seccomp(e.to_string()))
}

/// Compiles the box's filters: the `ENOSYS` one for `clone3`, the `EPERM` one, and the
/// `EAFNOSUPPORT` one for socket families (and, on x86-64, the x32 one first). Install them
/// in this order (all stay in force; the kernel applies every filter, and no call is in two
/// of them).
pub fn compile() -> Result<Vec<BpfProgram>> {
    let mut eperm: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (nr, _why) in DENIED {
        eperm.insert(*nr, Vec::new());
    }
    let mut clone_rules = Vec::new();
    for (flag, _why) in CLONE_NS_FLAGS {
        clone_rules.push(cond(0, SeccompCmpOp::MaskedEq(*flag), *flag)?);
    }
    eperm.insert(libc::SYS_clone, clone_rules);
    let mut ioctl_rules = Vec::new();
    for (req, _why) in DENIED_IOCTLS {
        // Compare the low 32 bits only: the kernel truncates the request to an int.
        ioctl_rules.push(cond(1, SeccompCmpOp::MaskedEq(0xffff_ffff), *req)?);
    }
    eperm.insert(libc::SYS_ioctl, ioctl_rules);

    let mut enosys: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    enosys.insert(libc::SYS_clone3, Vec::new());

    let mut eafnosupport: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for nr in SOCKET_CALLS {
        eafnosupport.insert(*nr, vec![foreign_family()?]);
    }

    let mk = |rules, errno: i32| -> Result<BpfProgram> {
        let f = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            ARCH,
        )
        .map_err(|e| Error::Seccomp(e.to_string()))?;
        BpfProgram::try_from(f).map_err(|e| Error::Seccomp(e.to_string()))
    };
    let mut progs = vec![
        mk(enosys, libc::ENOSYS)?,
        mk(eperm, libc::EPERM)?,
        mk(eafnosupport, libc::EAFNOSUPPORT)?,
    ];
    if cfg!(target_arch = "x86_64") {
        progs.insert(0, deny_x32());
    }
    Ok(progs)
}

/// x86-64 only: the x32 ABI reaches the same kernel entry points with the syscall number
/// plus `0x4000_0000` and the same audit arch, so a filter matching plain numbers would not
/// see them. This hand-written program refuses every number at or above that bit.
fn deny_x32() -> BpfProgram {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    let stmt = |code: u32, k: u32| seccompiler::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    vec![
        // A = seccomp_data.nr (offset 0)
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
        // if A >= X32_SYSCALL_BIT fall through to deny, else skip one instruction
        seccompiler::sock_filter {
            code: (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        stmt(
            libc::BPF_RET | libc::BPF_K,
            libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        ),
        stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
    ]
}

/// Names of the denied calls, for `doctor` and documentation.
pub fn denied_summary() -> String {
    format!(
        "{} calls denied with EPERM, clone with namespace flags denied, clone3 -> ENOSYS, TIOCSTI/TIOCLINUX denied, x32 ABI denied, sockets only AF_UNIX/AF_INET/AF_INET6 (else EAFNOSUPPORT)",
        DENIED.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_seccomp_filter_compiles() {
        let progs = compile().unwrap();
        assert_eq!(
            progs.len(),
            if cfg!(target_arch = "x86_64") { 4 } else { 3 }
        );
        assert!(progs.iter().all(|p| !p.is_empty()));
    }

    #[test]
    fn test_seccomp_table_has_no_duplicates() {
        let mut nrs: Vec<_> = DENIED.iter().map(|(n, _)| *n).collect();
        nrs.sort();
        nrs.dedup();
        assert_eq!(nrs.len(), DENIED.len());
        assert!(!nrs.contains(&libc::SYS_clone) && !nrs.contains(&libc::SYS_ioctl));
        assert!(SOCKET_CALLS.iter().all(|n| !nrs.contains(n)));
    }
}
