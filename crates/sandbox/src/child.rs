//! The box's init: the process `helper.rs` clones into the new namespaces. [`run`] is the
//! ordered, fail-closed setup script — every step either succeeds or the box does not start,
//! and the comments say why each step sits where it does. After the last step it starts the
//! command (`posix_spawn`) and stays behind as pid 1 of the box's pid namespace, reaping orphans; when the
//! command exits, init reports its status and exits, and the kernel kills whatever else is
//! left in the namespace. A box never outlives its command.
//!
//! Runs in a copy of the single-threaded helper (or of the single-threaded caller, with
//! [`crate::run_in_process`]), so allocation is safe here.

use std::collections::HashSet;
use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use seccompiler::BpfProgram;

use crate::error::{Error, Result};
use crate::helper::{Handed, MAX_HANDED_BYTES};
use crate::mounts::{MountEntry, MountKind};
use crate::spec::{BOX_UID, Spec};
use crate::sys;

/// Everything init needs, prepared by the helper before `clone`.
pub(crate) struct Child<'a> {
    pub spec: &'a Spec,
    pub table: &'a [MountEntry],
    pub filters: &'a [BpfProgram],
    /// A seqpacket socket to the helper: one message once it has written our id maps,
    /// another (on cgroup v1 carrying the box cgroup's `tasks` files) once we may start the
    /// command; end of file means the helper died.
    pub sync: OwnedFd,
    /// Write end of the report pipe to the helper (see [`Message`]).
    pub report: OwnedFd,
    /// The helper is root: drop supplementary groups (allowed because it did not deny
    /// `setgroups`); an unprivileged helper had to deny them and the groups stay.
    pub clear_groups: bool,
    /// Every process's `RLIMIT_AS` (`RLIM_INFINITY`: none), as the helper decided it
    /// ([`crate::address_space_limit`]).
    pub address_space: u64,
    /// Cloned ahead ([`ahead`]): the hostname is set and `lo` is up already.
    pub ahead: bool,
}

/// Messages from the box to the helper: a tag byte, a 4-byte big-endian length, the payload.
pub(crate) mod message {
    /// Setup or exec failed; payload: UTF-8 reason.
    pub const ERROR: u8 = b'E';
    /// The command was started (init forked it); empty payload.
    pub const STARTED: u8 = b'S';
    /// The command ended; payload: its raw wait status, 4 bytes big-endian.
    pub const EXIT: u8 = b'X';
}

fn send(report: &OwnedFd, tag: u8, payload: &[u8]) {
    let mut frame = Vec::with_capacity(5 + payload.len());
    frame.push(tag);
    frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    frame.extend_from_slice(payload);
    // A helper that died cannot be told anything; the parent-death signal ends us anyway.
    if let Ok(fd) = report.try_clone() {
        let _ = fs::File::from(fd).write_all(&frame);
    }
}

/// Entry point of a box's init cloned before its spec came (`helper.rs`, `clone_ahead`), in
/// every namespace of the box but the mount namespace. Never returns.
///
/// While it waits it holds nothing of any session: it sets the hostname and brings `lo` up
/// (neither needs an identity in the new user namespace, only its capabilities), then reads
/// what to build from `spec_rd`, which the helper writes once it has written the id maps; end
/// of file there means the helper went away, and init ends. Then it makes its mount
/// namespace, a copy of the host's mounts as they are now, and goes on as an init cloned at
/// the call does ([`run`]).
pub(crate) fn ahead(sync: OwnedFd, report: OwnedFd, spec_rd: OwnedFd, filters: &[BpfProgram]) -> ! {
    let handed = sys::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        "PR_SET_PDEATHSIG",
    )
    .and_then(|_| sys::sethostname("box"))
    .and_then(|()| sys::loopback_up())
    .and_then(|()| read_handed(spec_rd));
    let handed = match handed {
        Ok(Some(h)) => h,
        // The helper went away (or never handed a box): nobody to tell.
        Ok(None) => sys::exit_now(0),
        Err(e) => {
            send(&report, message::ERROR, e.to_string().as_bytes());
            sys::exit_now(126)
        }
    };
    if let Err(e) = sys::unshare(libc::CLONE_NEWNS) {
        send(&report, message::ERROR, e.to_string().as_bytes());
        sys::exit_now(126)
    }
    run(Child {
        spec: &handed.spec,
        table: &handed.table,
        filters,
        sync,
        report,
        clear_groups: handed.clear_groups,
        address_space: handed.address_space,
        ahead: true,
    })
}

/// Reads the helper's [`Handed`]: `None` at end of file before any byte.
fn read_handed(spec_rd: OwnedFd) -> Result<Option<Handed>> {
    use std::io::Read;
    let mut r = fs::File::from(spec_rd);
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < len.len() {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(Error::Setup("the helper stopped mid-message".into())),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::Setup(format!("read the box's spec: {e}"))),
        }
    }
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_HANDED_BYTES {
        return Err(Error::Setup(format!(
            "the box's spec of {len} bytes exceeds {MAX_HANDED_BYTES}"
        )));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)
        .map_err(|e| Error::Setup(format!("read the box's spec: {e}")))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| Error::Setup(format!("decode the box's spec: {e}")))
}

/// Entry point of the box's init. Never returns.
pub(crate) fn run(c: Child<'_>) -> ! {
    match setup(&c) {
        Ok(command) => {
            send(&c.report, message::STARTED, &[]);
            // Init needs no stdio; holding the command's would keep its stdout open after
            // the command closes it (a server that closed its output would look alive).
            let _ = sys::stdio_to_devnull();
            reap(&c, command)
        }
        Err(e) => {
            // The helper wraps what it reads in `Error::Setup`: a setup error is sent as its
            // own words, so a person reads "box setup failed" once.
            let words = match &e {
                Error::Setup(why) => why.clone(),
                other => other.to_string(),
            };
            send(&c.report, message::ERROR, words.as_bytes());
            sys::exit_now(126)
        }
    }
}

/// The ordered setup. Returns the pid of the command.
fn setup(c: &Child<'_>) -> Result<libc::pid_t> {
    // 1. Die with the helper: the helper is what enforces the timeout and removes the
    //    cgroup, so a box without it must not go on. (Reset by the uid change below; set again.)
    sys::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        "PR_SET_PDEATHSIG",
    )?;

    // 2. Wait until the helper has written our uid/gid maps. Before that we have no mapped
    //    identity inside the new user namespace.
    go_ahead(c, "the helper went away before the box started")?;

    // 3. Make every mount private, so nothing done below propagates to the host's mount
    //    namespace (or from it into the box later).
    sys::mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;

    // 4. Open every bind source now, while we still have the caller's identity on the host
    //    (as root: owner access to root's 0700 directories). Binding from descriptors means
    //    no host path is looked up again once we start building.
    let mut sources: Vec<Option<OwnedFd>> = Vec::with_capacity(c.table.len());
    for e in c.table {
        sources.push(match &e.kind {
            MountKind::Bind { host, .. } | MountKind::Device { host } => {
                Some(sys::open_path(host).map_err(|err| match &err {
                    // Said as what it is: the path is not there (a symlink that appeared is
                    // ELOOP, and keeps its own sentence).
                    Error::Syscall { source, .. }
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        Error::Setup(format!(
                            "{} (shown at {}) does not exist on the host: create it, or remove \
                             its [[mount]]",
                            host.display(),
                            e.at.display()
                        ))
                    }
                    _ => err,
                })?)
            }
            _ => None,
        });
    }

    // 5. Become the box user, keeping our capabilities *within the new user namespace* for
    //    the build: files we create on the box's tmpfs must be owned by a mapped id.
    sys::prctl(libc::PR_SET_KEEPCAPS, 1, "PR_SET_KEEPCAPS")?;
    if c.clear_groups {
        sys::clear_groups()?;
    }
    sys::setresgid(BOX_UID)?;
    sys::setresuid(BOX_UID)?;
    sys::raise_effective_caps()?;

    // 6. A hostname of our own (UTS namespace): the host's name says nothing to the command.
    //    (An init cloned ahead set it while it waited.)
    if !c.ahead {
        sys::sethostname("box")?;
    }

    // 7. Build the new root on a tmpfs. It is mounted over /tmp of *this* mount namespace
    //    (the host's /tmp is untouched); the sources are already open, so hiding /tmp hides
    //    nothing we need.
    let new_root = Path::new("/tmp");
    sys::mount(
        Some(c"tmpfs"),
        new_root,
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(c"mode=0755"),
    )?;
    // Directories known to exist, so each is made once (not looked up again per entry).
    let mut made = HashSet::from([new_root.to_path_buf()]);
    for (e, src) in c.table.iter().zip(sources.iter()) {
        place(c.spec, new_root, e, src.as_ref(), &mut made)?;
    }
    drop(sources);

    // 8. Switch root: pivot_root(".", ".") stacks the old root on top of the new one, and a
    //    lazy unmount of "." detaches it — the host's tree is no longer reachable by any path.
    //    (/proc was mounted in step 7 while the host's /proc was still visible, which the
    //    kernel requires of a new proc mount in a user namespace.)
    std::env::set_current_dir(new_root).map_err(|source| Error::File {
        context: "chdir",
        path: new_root.into(),
        source,
    })?;
    sys::pivot_root(Path::new("."), Path::new("."))?;
    sys::umount2(Path::new("."), libc::MNT_DETACH)?;
    std::env::set_current_dir("/").map_err(|source| Error::File {
        context: "chdir",
        path: "/".into(),
        source,
    })?;

    // 9. Network: in a new network namespace only `lo` exists, and it starts down. (An init
    //    cloned ahead brought it up while it waited.)
    if !c.spec.network && !c.ahead {
        sys::loopback_up()?;
    }
    // 9b. The proxy's listener, made here because only a process in this network
    //     namespace can bind its loopback; it goes out to the helper (and on to the caller,
    //     which accepts on it from outside) and is closed here in 12b, so the command never
    //     holds it. While the caller keeps it open nobody in the box can bind that port.
    if c.spec.proxy {
        let listener = std::net::TcpListener::bind(crate::spec::PROXY_ADDR).map_err(|e| {
            Error::Setup(format!(
                "cannot listen on {} in the box: {e}",
                crate::spec::PROXY_ADDR
            ))
        })?;
        sys::send_with_fds(&c.sync, &[OwnedFd::from(listener)])
            .map_err(|e| Error::Setup(format!("cannot hand out the proxy listener: {e}")))?;
    }

    // 10. Freeze the skeleton: the root tmpfs and /dev become read-only (/work, /tmp,
    //     /dev/shm and the `write` mounts are separate mounts and stay writable).
    sys::mount_setattr(
        Path::new("/"),
        sys::MOUNT_ATTR_RDONLY | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV,
        false,
    )?;
    sys::mount_setattr(
        Path::new("/dev"),
        sys::MOUNT_ATTR_RDONLY | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NOEXEC,
        false,
    )?;

    // 11. Drop every capability (bounding, ambient, effective, permitted, inheritable). The
    //     build is done; nothing below needs privilege.
    sys::prctl(libc::PR_SET_KEEPCAPS, 0, "PR_SET_KEEPCAPS")?;
    sys::drop_all_caps()?;

    // 12. The uid change cleared the parent-death signal: set it again. Then wait for the
    //     helper's second go-ahead: the box's cgroup exists (made while we built the root).
    //     On v2 the helper has moved us into it. On v1 the message carries the cgroup's
    //     `tasks` files and we join by writing `0`, moving ourselves, which skips the global
    //     lock a move by pid takes (see `cgroup.rs`); the kernel checks the credentials of
    //     the files' opener, the helper. Either way the command, started below, runs inside
    //     the limits. End of file here means the helper died.
    sys::prctl(
        libc::PR_SET_PDEATHSIG,
        libc::SIGKILL as libc::c_ulong,
        "PR_SET_PDEATHSIG",
    )?;
    for f in go_ahead(c, "the helper went away during setup")? {
        fs::File::from(f)
            .write_all(b"0")
            .map_err(|e| Error::Setup(format!("join the box's cgroup: {e}")))?;
    }

    // 12b. Init holds nothing the command can use, and nothing the command does can change
    //      what init reports: every descriptor but stdio (the command's), the report pipe
    //      and the helper's socket is closed — what the caller of boxmaker left open, the
    //      bind sources — and init is not dumpable, so the command (same uid, no
    //      capabilities) cannot open /proc/1/fd/N, /proc/1/mem or ptrace it. (setresuid in a
    //      user namespace leaves a process dumpable; the command's exec makes *it* dumpable
    //      again, which is only itself.)
    sys::close_all_but(&[c.report.as_raw_fd(), c.sync.as_raw_fd()])?;
    sys::prctl(libc::PR_SET_DUMPABLE, 0, "PR_SET_DUMPABLE")?;

    // 13. Resource limits, inherited by the command. RLIMIT_NPROC is counted per user per
    //     user namespace on current kernels, so it limits this box and no other; the pids
    //     cgroup (where available) is the hard limit. The address space is the memory limit
    //     only where no memory cgroup bounds the box (the helper decided: `address_space`).
    let l = &c.spec.limits;
    sys::setrlimit(libc::RLIMIT_AS, c.address_space, "RLIMIT_AS")?;
    sys::setrlimit(libc::RLIMIT_NPROC, l.processes, "RLIMIT_NPROC")?;
    sys::setrlimit(libc::RLIMIT_NOFILE, l.open_files, "RLIMIT_NOFILE")?;
    sys::setrlimit(libc::RLIMIT_FSIZE, l.file_size_bytes, "RLIMIT_FSIZE")?;
    sys::setrlimit(libc::RLIMIT_CPU, l.cpu_seconds, "RLIMIT_CPU")?;
    sys::setrlimit(libc::RLIMIT_CORE, 0, "RLIMIT_CORE")?;

    // 14. no_new_privs: exec can never grant privilege again (setuid bits, file
    //     capabilities); also what lets an unprivileged process install landlock and seccomp.
    sys::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, "PR_SET_NO_NEW_PRIVS")?;

    // 15. Landlock: the mount table again, enforced by path, in case a mount is wrong.
    crate::landlock::apply(c.table, c.spec.require.landlock)?;

    // 16. Seccomp last: it denies mount, unshare and friends, which the steps above used.
    for f in c.filters {
        sys::seccomp_install(f)?;
    }

    // 17. Start the command; we stay behind as the box's init.
    let argv: Vec<CString> = c
        .spec
        .argv
        .iter()
        .map(|a| sys::cstr(a.as_ref()))
        .collect::<Result<_>>()?;
    let env: Vec<CString> = c
        .spec
        .environment()
        .iter()
        .map(|(k, v)| sys::cstr(format!("{k}={v}").as_ref()))
        .collect::<Result<_>>()?;
    let program = resolve(&c.spec.argv[0], c.spec);
    // The command inherits only stdio: every other descriptor (ours, and any the caller
    // inherited) is marked close-on-exec; init itself keeps using them.
    sys::cloexec_from_3()?;
    // posix_spawn (a vfork-style clone: no copy of init's page tables, which are a copy of
    // the caller's) starts the command in /work, with SIGPIPE back to its default (the Rust
    // runtime ignores it, and an ignored signal stays ignored across exec). A failed exec
    // comes back here as an error.
    sys::spawn(&program, &argv, &env, c"/work").map_err(|e| Error::Setup(exec_failed(c.spec, &e)))
}

/// Why the command could not start, in words that say what to change: a program that is
/// not inside the box is named with what the box does see.
fn exec_failed(spec: &Spec, e: &std::io::Error) -> String {
    let name = &spec.argv[0];
    if e.kind() != std::io::ErrorKind::NotFound {
        return format!("exec {name}: {e}");
    }
    let mut seen: Vec<String> = ["/usr", "/bin", "/lib", "/lib64", "/sbin", "/work", "/tmp"]
        .iter()
        .map(|s| (*s).to_string())
        .collect();
    seen.extend(spec.mounts.iter().map(|m| m.at.display().to_string()));
    let seen = seen.join(", ");
    if let Some((link, target)) = dangling_link(Path::new(name)) {
        return format!(
            "{name} is a symlink{} to {}, which is not inside the box (it sees only {seen}); \
             a virtualenv made from a Python under a home directory (pyenv, …) points there: \
             make it with `/usr/bin/python3 -m venv DIR`, or mount the directory that holds \
             the target",
            if link == Path::new(name) {
                String::new()
            } else {
                format!(" (through {})", link.display())
            },
            target.display()
        );
    }
    if name.contains('/') {
        format!(
            "{name} is not inside the box: no file is there in the box, which sees only \
             {seen}; mount the directory that holds it (a [[mount]]), or name a program inside \
             one of these"
        )
    } else {
        let env = spec.environment();
        let path = env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map_or("", |(_, v)| v.as_str());
        format!(
            "{name} is not on the box's PATH ({path}); the box sees only {seen}: give the \
             program's full path inside one of these, or mount the directory that holds it"
        )
    }
}

/// When `name` is a symlink (or a chain of them) whose end is not there: the last link and
/// the target it names. Read inside the box, where the exec failed.
fn dangling_link(name: &Path) -> Option<(PathBuf, PathBuf)> {
    let mut at = name.to_path_buf();
    let mut last = None;
    for _ in 0..40 {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&at).ok()?;
                let next = match at.parent() {
                    Some(dir) if target.is_relative() => dir.join(&target),
                    _ => target,
                };
                last = Some(at);
                at = next;
            }
            Ok(_) => return None,
            Err(_) => return last.map(|l| (l, at)),
        }
    }
    None
}

/// Reads one go-ahead message from the helper; returns the descriptors it carried.
fn go_ahead(c: &Child<'_>, gone: &str) -> Result<Vec<OwnedFd>> {
    match sys::recv_with_fds(&c.sync) {
        Ok(Some(fds)) => Ok(fds),
        Ok(None) => Err(Error::Setup(gone.to_owned())),
        Err(e) => Err(Error::Setup(format!("waiting for the helper: {e}"))),
    }
}

/// Creates the mount point for `e` under `root` and mounts or writes it. `made` holds the
/// directories known to exist under `root`; it is kept up to date.
fn place(
    spec: &Spec,
    root: &Path,
    e: &MountEntry,
    src: Option<&OwnedFd>,
    made: &mut HashSet<PathBuf>,
) -> Result<()> {
    let target = root.join(e.at.strip_prefix("/").unwrap_or(&e.at));
    let io = |context: &'static str, path: &Path| {
        let path = path.to_owned();
        move |source| Error::File {
            context,
            path,
            source,
        }
    };
    if matches!(e.kind, MountKind::Keep | MountKind::Pin) {
        // The host's own entry, seen through a writable bind: nothing is made for it, not
        // even its parent (that would be a directory made on the host).
        let read_only = matches!(e.kind, MountKind::Keep);
        sys::bind_over_itself(&target, &e.at.display().to_string(), read_only)?;
        return Ok(());
    }
    let parent = target.parent().unwrap_or(root).to_owned();
    if !made.contains(&parent) {
        fs::create_dir_all(&parent).map_err(io("create directory", &parent))?;
        made.extend(
            parent
                .ancestors()
                .take_while(|a| a.starts_with(root))
                .map(Path::to_path_buf),
        );
    }
    // Whatever is mounted at `target` hides what was made below it.
    made.retain(|p| p == &target || !p.starts_with(&target));
    let make_dir = |p: &PathBuf| fs::create_dir_all(p).map_err(io("create mount point", p));
    let make_file = |p: &PathBuf| {
        fs::File::create(p)
            .map(drop)
            .map_err(io("create mount point", p))
    };
    let label = e.at.display().to_string();
    match (&e.kind, src) {
        (MountKind::Bind { write, dir, .. }, Some(fd)) => {
            if *dir {
                make_dir(&target)?
            } else {
                make_file(&target)?
            }
            sys::bind_fd(fd, &target, &label)?;
            let mut attrs = sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV;
            if !*write {
                attrs |= sys::MOUNT_ATTR_RDONLY;
            }
            sys::mount_setattr(&target, attrs, true)?;
        }
        (MountKind::Device { .. }, Some(fd)) => {
            make_file(&target)?;
            sys::bind_fd(fd, &target, &label)?;
            sys::mount_setattr(
                &target,
                sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NOEXEC,
                false,
            )?;
        }
        (MountKind::Symlink { target: to }, _) => {
            symlink(to, &target).map_err(io("create symlink", &target))?;
        }
        (MountKind::File { contents }, _) => {
            fs::write(&target, contents).map_err(io("write", &target))?;
            fs::set_permissions(&target, fs::Permissions::from_mode(0o644))
                .map_err(io("chmod", &target))?;
        }
        (MountKind::Tmpfs { writable }, _) => {
            make_dir(&target)?;
            let (flags, data) = if *writable {
                // Size-capped at the memory limit; its pages are charged to the box's cgroup.
                (
                    libc::MS_NOSUID | libc::MS_NODEV,
                    format!("mode=1777,size={}", spec.limits.memory_bytes),
                )
            } else {
                (libc::MS_NOSUID | libc::MS_NOEXEC, "mode=0755".to_owned())
            };
            let data = sys::cstr(data.as_ref())?;
            sys::mount(Some(c"tmpfs"), &target, Some(c"tmpfs"), flags, Some(&data))?;
        }
        (MountKind::Proc, _) => {
            make_dir(&target)?;
            sys::mount(
                Some(c"proc"),
                &target,
                Some(c"proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                None,
            )?;
        }
        (MountKind::Devpts, _) => {
            make_dir(&target)?;
            sys::mount(
                Some(c"devpts"),
                &target,
                Some(c"devpts"),
                libc::MS_NOSUID | libc::MS_NOEXEC,
                Some(c"newinstance,ptmxmode=0666,mode=0620"),
            )?;
        }
        (MountKind::Bind { .. } | MountKind::Device { .. }, None) => {
            return Err(Error::Setup(format!("no open source for {label}")));
        }
        (MountKind::Keep | MountKind::Pin, _) => {}
    }
    if matches!(
        e.kind,
        MountKind::Bind { dir: true, .. }
            | MountKind::Tmpfs { .. }
            | MountKind::Proc
            | MountKind::Devpts
    ) {
        made.insert(target);
    }
    Ok(())
}

/// Finds `name` in the box's PATH (inside the box, so only box files are candidates).
fn resolve(name: &str, spec: &Spec) -> CString {
    let fallback = || CString::new(name.as_bytes()).unwrap_or_default();
    if name.contains('/') {
        return fallback();
    }
    let env = spec.environment();
    let path = env
        .iter()
        .find(|(k, _)| k == "PATH")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    for dir in path.split(':').filter(|d| !d.is_empty()) {
        let candidate = Path::new(dir).join(name);
        if let Ok(m) = fs::metadata(&candidate)
            && m.is_file()
            && m.permissions().mode() & 0o111 != 0
            && let Ok(c) = sys::cpath(&candidate)
        {
            return c;
        }
    }
    fallback()
}

/// Init's loop: reap every child; when the command ends, end every other process of the
/// box, reap them all, and only then report the command's status and exit.
///
/// The report is what lets the caller answer, so it says "the box's processes are all
/// dead": `kill(-1, SIGKILL)` from pid 1 signals every other process of this pid namespace
/// (the kernel walks them under the task list lock, so one forking meanwhile either is
/// signalled itself, and its fork fails, or its child is walked too); every orphan is
/// init's child, so `waitpid` failing with `ECHILD` means none is left, zombie or running.
/// Init's own exit — tearing down the box's mount, network and other namespaces, which
/// waits for RCU grace periods — comes after the report, off the answer's path. (Killing
/// init instead, as the timeout does, makes the kernel do the same kill and wait, but only
/// as part of that exit.)
fn reap(c: &Child<'_>, command: libc::pid_t) -> ! {
    loop {
        match sys::waitpid(-1, 0) {
            Ok((pid, status)) if pid == command => {
                let _ = sys::kill(-1, libc::SIGKILL);
                while sys::waitpid(-1, 0).is_ok() {}
                send(&c.report, message::EXIT, &status.to_be_bytes());
                sys::exit_now(0);
            }
            Ok(_) => {}
            Err(_) => sys::exit_now(0),
        }
    }
}
