//! The one place where `unsafe` meets the kernel. Every wrapper goes through [`cvt`], which
//! turns a `-1` return into [`Error::Syscall`] with the call's name and what it acted on.
//! Wrappers take Rust types (`&Path`, `&CStr`) so callers never build raw pointers.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::error::{Error, Result};

/// Return values of system calls: a signed integer where `-1` means "see errno".
pub(crate) trait SysRet: Copy {
    fn is_err(self) -> bool;
}
impl SysRet for libc::c_int {
    fn is_err(self) -> bool {
        self == -1
    }
}
impl SysRet for libc::c_long {
    fn is_err(self) -> bool {
        self == -1
    }
}
impl SysRet for libc::ssize_t {
    fn is_err(self) -> bool {
        self == -1
    }
}

/// Turns a raw return code into a typed error naming the call and its target.
pub(crate) fn cvt<T: SysRet>(
    ret: T,
    call: &'static str,
    context: impl FnOnce() -> String,
) -> Result<T> {
    if ret.is_err() {
        Err(Error::Syscall {
            call,
            context: context(),
            source: io::Error::last_os_error(),
        })
    } else {
        Ok(ret)
    }
}

/// Converts a path to a C string; a NUL inside a path is a spec error, not a panic.
pub(crate) fn cpath(path: &Path) -> Result<CString> {
    cstr(path.as_os_str())
}

pub(crate) fn cstr(s: &OsStr) -> Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| Error::InvalidSpec(format!("NUL byte in {s:?}")))
}

// Constants of the new mount API, not all of which the libc crate exports.
const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
/// `MOUNT_ATTR_*` flags of `mount_setattr(2)`.
pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x4;
pub(crate) const MOUNT_ATTR_NOEXEC: u64 = 0x8;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

pub(crate) fn mount(
    source: Option<&CStr>,
    target: &Path,
    fstype: Option<&CStr>,
    flags: libc::c_ulong,
    data: Option<&CStr>,
) -> Result<()> {
    let t = cpath(target)?;
    let what = source.map_or_else(|| "-".to_owned(), |s| s.to_string_lossy().into_owned());
    // SAFETY: every pointer is either null or a NUL-terminated string that outlives the call.
    let ret = unsafe {
        libc::mount(
            source.map_or(std::ptr::null(), CStr::as_ptr),
            t.as_ptr(),
            fstype.map_or(std::ptr::null(), CStr::as_ptr),
            flags,
            data.map_or(std::ptr::null(), |d| d.as_ptr().cast()),
        )
    };
    if ret == -1 {
        return Err(Error::Mount {
            what,
            target: target.to_owned(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

pub(crate) fn umount2(target: &Path, flags: libc::c_int) -> Result<()> {
    let t = cpath(target)?;
    // SAFETY: `t` is a valid C string for the duration of the call.
    cvt(
        unsafe { libc::umount2(t.as_ptr(), flags) },
        "umount2",
        || target.display().to_string(),
    )?;
    Ok(())
}

pub(crate) fn pivot_root(new_root: &Path, put_old: &Path) -> Result<()> {
    let n = cpath(new_root)?;
    let o = cpath(put_old)?;
    // SAFETY: both arguments are valid C strings; pivot_root has no libc wrapper.
    let ret = unsafe { libc::syscall(libc::SYS_pivot_root, n.as_ptr(), o.as_ptr()) };
    cvt(ret, "pivot_root", || new_root.display().to_string())?;
    Ok(())
}

/// `struct open_how` of `openat2(2)`.
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `RESOLVE_NO_SYMLINKS`: no component of the path may be a symlink.
const RESOLVE_NO_SYMLINKS: u64 = 0x04;

/// Opens a path for use as a mount source without following a symlink in **any** of its
/// components (`openat2` with `RESOLVE_NO_SYMLINKS`). Every source in the mount table was
/// resolved before (the system's, here; a config mount's, once, by the runner at its
/// start): a symlink found now is one that appeared since — a box swapping a path it could
/// write — and the box is not built (docs/spec.md §3.5, mounts are what the config names,
/// once).
pub(crate) fn open_path(path: &Path) -> Result<OwnedFd> {
    let p = cpath(path)?;
    let how = OpenHow {
        // Not O_NOFOLLOW: with O_PATH that would open a trailing symlink itself; without
        // it, RESOLVE_NO_SYMLINKS refuses a symlink in the last component too (ELOOP).
        flags: (libc::O_PATH | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: `p` is a valid C string and `how` a valid `open_how` of the size passed; the
    // returned descriptor is owned below.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            p.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    let fd = cvt(ret, "openat2(O_PATH, RESOLVE_NO_SYMLINKS)", || {
        format!(
            "{} (a symlink in this path appeared after it was resolved, or the path moved)",
            path.display()
        )
    })?;
    let fd =
        RawFd::try_from(fd).map_err(|_| Error::Setup("openat2 returned no descriptor".into()))?;
    // SAFETY: `fd` was just returned by openat2 and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Bind-mounts the tree under `source` (an `O_PATH` descriptor) onto `target`: a detached
/// recursive clone (`open_tree`) moved into place (`move_mount`). The source was resolved when
/// the descriptor was opened, so no path is looked up twice.
pub(crate) fn bind_fd(source: &OwnedFd, target: &Path, what: &str) -> Result<()> {
    let empty = c"";
    // SAFETY: `source` is a live descriptor and `empty` a valid C string.
    let tree = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            source.as_raw_fd(),
            empty.as_ptr(),
            OPEN_TREE_CLONE
                | AT_RECURSIVE
                | libc::AT_EMPTY_PATH as libc::c_uint
                | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    let tree = cvt(tree, "open_tree", || what.to_owned())?;
    // SAFETY: open_tree returned a new descriptor that nobody else owns.
    let tree = unsafe { OwnedFd::from_raw_fd(tree as RawFd) };
    let t = cpath(target)?;
    // SAFETY: `tree` is live, `empty` and `t` are valid C strings.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    if ret == -1 {
        return Err(Error::Mount {
            what: what.to_owned(),
            target: target.to_owned(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

/// Binds the file or directory at `target` over itself, with every mount below it: when
/// `read_only`, read-only, `nosuid` and `nodev` (a kept entry); else as it is (a pinned
/// directory: being a mount point, no rename or removal moves it) (docs/spec.md §4, "What
/// a writable mount keeps"). Nothing is created and no path is looked up twice: the entry
/// is opened once refusing any symlink (`RESOLVE_NO_SYMLINKS`), cloned from that
/// descriptor, made read-only while detached when it is to be, and moved onto that same
/// descriptor. `Ok(false)` when nothing is there or it is a symlink (a symlink's target is
/// not the entry, and is not kept).
pub(crate) fn bind_over_itself(target: &Path, what: &str, read_only: bool) -> Result<bool> {
    let entry = match open_path(target) {
        Ok(fd) => fd,
        Err(Error::Syscall { source, .. })
            if matches!(
                source.raw_os_error(),
                Some(libc::ENOENT | libc::ELOOP | libc::ENOTDIR)
            ) =>
        {
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    let empty = c"";
    let failed = |step: &str| Error::Mount {
        what: format!("{what} ({step})"),
        target: target.to_owned(),
        source: io::Error::last_os_error(),
    };
    // SAFETY: `entry` is a live descriptor and `empty` a valid C string.
    let tree = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            entry.as_raw_fd(),
            empty.as_ptr(),
            OPEN_TREE_CLONE
                | AT_RECURSIVE
                | libc::AT_EMPTY_PATH as libc::c_uint
                | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    if tree == -1 {
        return Err(failed("open_tree"));
    }
    // SAFETY: open_tree returned a new descriptor that nobody else owns.
    let tree = unsafe { OwnedFd::from_raw_fd(tree as RawFd) };
    if read_only {
        let attr = MountAttr {
            attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            attr_clr: 0,
            propagation: 0,
            userns_fd: 0,
        };
        // SAFETY: `tree` is live, `empty` a valid C string, `attr` a properly sized mount_attr.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_mount_setattr,
                tree.as_raw_fd(),
                empty.as_ptr(),
                libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
                &attr as *const MountAttr,
                std::mem::size_of::<MountAttr>(),
            )
        };
        if ret == -1 {
            return Err(failed("mount_setattr"));
        }
    }
    // SAFETY: both descriptors are live and `empty` is a valid C string.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            empty.as_ptr(),
            entry.as_raw_fd(),
            empty.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    if ret == -1 {
        return Err(failed("move_mount"));
    }
    Ok(true)
}

/// Sets mount attributes (read-only, nosuid, ...) on `target`, and on every mount below it
/// when `recursive`. Attributes the kernel locked (inherited from a more privileged mount
/// namespace) are only ever added to, never cleared.
pub(crate) fn mount_setattr(target: &Path, set: u64, recursive: bool) -> Result<()> {
    let t = cpath(target)?;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: `t` is a valid C string and `attr` a properly sized mount_attr struct.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            t.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if ret == -1 {
        return Err(Error::Mount {
            what: format!("attributes {set:#x}"),
            target: target.to_owned(),
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

pub(crate) fn prctl(
    option: libc::c_int,
    arg2: libc::c_ulong,
    what: &'static str,
) -> Result<libc::c_int> {
    // SAFETY: the prctl options used by this crate take integer arguments only.
    cvt(
        unsafe { libc::prctl(option, arg2, 0, 0, 0) },
        "prctl",
        || what.to_owned(),
    )
}

pub(crate) fn setresuid(uid: u32) -> Result<()> {
    // SAFETY: plain integer arguments.
    cvt(
        unsafe { libc::setresuid(uid, uid, uid) },
        "setresuid",
        || uid.to_string(),
    )?;
    Ok(())
}

pub(crate) fn setresgid(gid: u32) -> Result<()> {
    // SAFETY: plain integer arguments.
    cvt(
        unsafe { libc::setresgid(gid, gid, gid) },
        "setresgid",
        || gid.to_string(),
    )?;
    Ok(())
}

pub(crate) fn clear_groups() -> Result<()> {
    // SAFETY: a zero-length list with a null pointer is the documented way to drop all groups.
    cvt(
        unsafe { libc::setgroups(0, std::ptr::null()) },
        "setgroups",
        || "[]".to_owned(),
    )?;
    Ok(())
}

pub(crate) fn sethostname(name: &str) -> Result<()> {
    // SAFETY: the pointer and length describe `name`'s bytes.
    cvt(
        unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) },
        "sethostname",
        || name.to_owned(),
    )?;
    Ok(())
}

pub(crate) fn setrlimit(
    resource: libc::__rlimit_resource_t,
    value: u64,
    what: &'static str,
) -> Result<()> {
    let lim = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: `lim` is a valid rlimit struct.
    cvt(
        unsafe { libc::setrlimit(resource, &lim) },
        "setrlimit",
        || format!("{what}={value}"),
    )?;
    Ok(())
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit (a proxy holds several
/// descriptors per connection); returns the new soft limit. Boxes set their own.
pub fn raise_open_files_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit struct for getrlimit to fill.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == -1 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        lim.rlim_cur = lim.rlim_max;
        // SAFETY: `lim` is a valid rlimit struct; the soft limit is at most the hard one.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(lim.rlim_cur)
}

const CAP_VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Raises the effective capability set to the permitted set (used after `setresuid` with
/// `PR_SET_KEEPCAPS`, while the box is still being built).
pub(crate) fn raise_effective_caps() -> Result<()> {
    let mut hdr = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: header and a two-element data array, as capget's v3 ABI requires.
    cvt(
        unsafe {
            libc::syscall(
                libc::SYS_capget,
                &mut hdr as *mut CapHeader,
                data.as_mut_ptr(),
            )
        },
        "capget",
        || "self".to_owned(),
    )?;
    for d in &mut data {
        d.effective = d.permitted;
    }
    // SAFETY: as above.
    cvt(
        unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut CapHeader, data.as_ptr()) },
        "capset",
        || "effective=permitted".to_owned(),
    )?;
    Ok(())
}

/// Drops every capability: the bounding set, the ambient set, and the effective, permitted
/// and inheritable sets.
pub(crate) fn drop_all_caps() -> Result<()> {
    for cap in 0..64 {
        // SAFETY: integer arguments; EINVAL past the last capability ends the loop.
        let ret = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if ret == -1 {
            if io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            cvt(ret, "prctl", || format!("PR_CAPBSET_DROP {cap}"))?;
        }
    }
    // SAFETY: integer arguments only.
    cvt(
        unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL,
                0,
                0,
                0,
            )
        },
        "prctl",
        || "PR_CAP_AMBIENT_CLEAR_ALL".to_owned(),
    )?;
    let mut hdr = CapHeader {
        version: CAP_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: header and a two-element data array, as capset's v3 ABI requires.
    cvt(
        unsafe { libc::syscall(libc::SYS_capset, &mut hdr as *mut CapHeader, data.as_ptr()) },
        "capset",
        || "all zero".to_owned(),
    )?;
    Ok(())
}

/// `clone(2)` without a new stack: like `fork`, plus namespace flags. Returns 0 in the child.
///
/// # Safety
/// The caller must be single-threaded (the helper process is), as after `fork`.
pub(crate) unsafe fn clone_fork(flags: libc::c_int) -> Result<libc::pid_t> {
    let f = (flags | libc::SIGCHLD) as libc::c_ulong;
    // SAFETY: with a null stack the child runs on a copy of our stack, like fork; the caller
    // guarantees there are no other threads whose locks the child could inherit.
    let ret = unsafe { libc::syscall(libc::SYS_clone, f, 0usize, 0usize, 0usize, 0usize) };
    Ok(cvt(ret, "clone", || format!("{flags:#x}"))? as libc::pid_t)
}

/// Names this process (`PR_SET_NAME`: `/proc/PID/comm`, 15 bytes at most).
pub(crate) fn set_name(name: &str) -> Result<()> {
    let c = cstr(name.as_ref())?;
    // SAFETY: `c` is a valid C string that outlives the call; the kernel copies at most 16
    // bytes of it.
    cvt(
        unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr() as libc::c_ulong, 0, 0, 0) },
        "prctl",
        || format!("PR_SET_NAME {name}"),
    )?;
    Ok(())
}

/// Moves `fd` to `to` (`dup2`, which clears close-on-exec on the copy), and closes `fd`
/// unless it already was `to`.
pub(crate) fn move_fd(fd: OwnedFd, to: RawFd) -> Result<()> {
    use std::os::fd::IntoRawFd;
    let raw = fd.into_raw_fd();
    if raw == to {
        // SAFETY: integer arguments on the descriptor we just took from `fd`.
        cvt(
            unsafe { libc::fcntl(to, libc::F_SETFD, 0) },
            "fcntl",
            || format!("F_SETFD {to}"),
        )?;
        return Ok(());
    }
    // SAFETY: `raw` is open and ours; dup2 atomically replaces `to`, closing what it was.
    let duped = cvt(unsafe { libc::dup2(raw, to) }, "dup2", || {
        format!("{raw} -> {to}")
    });
    // SAFETY: `raw` came from `into_raw_fd`: nothing else owns or closes it.
    unsafe { libc::close(raw) };
    duped.map(drop)
}

pub(crate) fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    cvt(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) },
        "pipe2",
        String::new,
    )?;
    // SAFETY: pipe2 succeeded, so both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

pub(crate) fn pidfd_open(pid: libc::pid_t) -> Result<OwnedFd> {
    // SAFETY: integer arguments; the result is a new descriptor.
    let fd = cvt(
        unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) },
        "pidfd_open",
        || pid.to_string(),
    )?;
    // SAFETY: the descriptor is new and ours.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

pub(crate) fn kill(pid: libc::pid_t, sig: libc::c_int) -> Result<()> {
    // SAFETY: integer arguments.
    cvt(unsafe { libc::kill(pid, sig) }, "kill", || {
        format!("{pid} {sig}")
    })?;
    Ok(())
}

/// Waits for `pid` (or any child for -1), retrying on EINTR. Returns (pid, raw status).
pub(crate) fn waitpid(pid: libc::pid_t, flags: libc::c_int) -> Result<(libc::pid_t, libc::c_int)> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        let ret = unsafe { libc::waitpid(pid, &mut status, flags) };
        if ret == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        let ret = cvt(ret, "waitpid", || pid.to_string())?;
        return Ok((ret, status));
    }
}

/// `poll(2)` over the given descriptors; returns the revents in the same order.
pub(crate) fn poll(
    fds: &[(RawFd, libc::c_short)],
    timeout_ms: libc::c_int,
) -> Result<Vec<libc::c_short>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&(fd, events)| libc::pollfd {
            fd,
            events,
            revents: 0,
        })
        .collect();
    // SAFETY: `pfds` is a valid array of `pfds.len()` pollfd structs.
    let ret = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    if ret == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
        return Ok(vec![0; fds.len()]);
    }
    cvt(ret, "poll", String::new)?;
    Ok(pfds.iter().map(|p| p.revents).collect())
}

/// Marks every descriptor from 3 up close-on-exec, so a command inherits only stdio.
pub(crate) fn cloexec_from_3() -> Result<()> {
    // SAFETY: integer arguments.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    cvt(ret, "close_range", || "3.. CLOEXEC".to_owned())?;
    Ok(())
}

/// Closes every descriptor from `first` up (`close_range`).
pub(crate) fn close_from(first: u32) -> Result<()> {
    // SAFETY: integer arguments; closing descriptors this process does not use.
    let ret = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32) };
    cvt(ret, "close_range", || format!("{first}.."))?;
    Ok(())
}

/// Closes every descriptor but stdio and `keep` (any order).
pub(crate) fn close_all_but(keep: &[RawFd]) -> Result<()> {
    let mut keep: Vec<u32> = keep
        .iter()
        .filter_map(|&fd| u32::try_from(fd).ok())
        .filter(|&fd| fd > 2)
        .collect();
    keep.sort_unstable();
    keep.dedup();
    let mut from = 3u32;
    for k in keep {
        if k > from {
            // SAFETY: integer arguments; the range holds no descriptor we keep.
            let ret = unsafe { libc::syscall(libc::SYS_close_range, from, k - 1, 0u32) };
            cvt(ret, "close_range", || format!("{from}..{}", k - 1))?;
        }
        from = k.saturating_add(1);
    }
    close_from(from)
}

/// Marks every descriptor from 3 up close-on-exec: what this process inherited from whoever
/// started it never passes into a process it starts.
pub fn seal_inherited_descriptors() -> Result<()> {
    cloexec_from_3()
}

pub(crate) fn set_cloexec(fd: RawFd) -> Result<()> {
    // SAFETY: integer arguments on a descriptor the caller owns.
    cvt(
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) },
        "fcntl",
        || format!("F_SETFD {fd}"),
    )?;
    Ok(())
}

/// Ends the current process at once, without running destructors or atexit handlers (used in
/// forked children, whose copies of the parent's state must not be flushed twice).
pub(crate) fn exit_now(code: libc::c_int) -> ! {
    // SAFETY: _exit is always safe to call.
    unsafe { libc::_exit(code) }
}

/// Installs a classic BPF seccomp program on the calling thread.
pub(crate) fn seccomp_install(prog: &[seccompiler::sock_filter]) -> Result<()> {
    let fprog = libc::sock_fprog {
        len: prog.len() as libc::c_ushort,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `fprog` points at `prog`, which outlives the call; the kernel copies it.
    let ret = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
            0,
            0,
        )
    };
    cvt(ret, "prctl", || {
        format!("PR_SET_SECCOMP ({} instructions)", prog.len())
    })?;
    Ok(())
}

pub(crate) fn geteuid() -> u32 {
    // SAFETY: always succeeds.
    unsafe { libc::geteuid() }
}

pub(crate) fn getegid() -> u32 {
    // SAFETY: always succeeds.
    unsafe { libc::getegid() }
}

/// Brings the loopback interface up in the current network namespace.
pub(crate) fn loopback_up() -> Result<()> {
    // SAFETY: creating a socket has no memory-safety preconditions.
    let s = cvt(
        unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) },
        "socket",
        || "AF_INET".to_owned(),
    )?;
    // SAFETY: `s` is a new descriptor that we own.
    let sock = unsafe { OwnedFd::from_raw_fd(s) };
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: `req` is a valid ifreq for SIOCGIFFLAGS.
    cvt(
        unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) },
        "ioctl",
        || "SIOCGIFFLAGS lo".to_owned(),
    )?;
    // SAFETY: after SIOCGIFFLAGS the flags member of the union is the initialised one.
    unsafe {
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    // SAFETY: `req` is a valid ifreq for SIOCSIFFLAGS.
    cvt(
        unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) },
        "ioctl",
        || "SIOCSIFFLAGS lo up".to_owned(),
    )?;
    Ok(())
}

/// The landlock ABI version of the running kernel, or a value <= 0 when unavailable.
pub(crate) fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer and size 0 this call only reports the version.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    v as i32
}

/// Whether this process may write to `path` (by `access(2)`, with the real ids).
pub(crate) fn writable(path: &Path) -> bool {
    let Ok(c) = cpath(path) else { return false };
    // SAFETY: `c` is a valid C string; access() only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// In a child between fork and exec: make `fd` the child's fd 3, inheritable. Only
/// async-signal-safe calls, no allocation.
pub(crate) fn dup_to_3(fd: RawFd) -> io::Result<()> {
    if fd == 3 {
        // SAFETY: integer arguments on an open descriptor.
        if unsafe { libc::fcntl(3, libc::F_SETFD, 0) } == -1 {
            return Err(io::Error::last_os_error());
        }
        return Ok(());
    }
    // SAFETY: integer arguments; dup2 leaves the new descriptor without FD_CLOEXEC.
    if unsafe { libc::dup2(fd, 3) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Points this process's stdin, stdout and stderr at `/dev/null`. The helper does this once
/// init holds the box's stdio: the caller then sees end-of-file on the command's stdout when
/// the box closes it, not only when the helper exits.
pub(crate) fn stdio_to_devnull() -> io::Result<()> {
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    for fd in 0..=2 {
        // SAFETY: integer arguments on descriptors we own (`null` stays open across the
        // loop); dup2 atomically replaces `fd`, closing what it was.
        if unsafe { libc::dup2(null.as_raw_fd(), fd) } == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Runs `f` in a forked child and returns its exit code (for `doctor`'s probes). The child
/// must only make raw system calls: the caller may be multi-threaded.
pub(crate) fn probe_in_child(f: impl FnOnce() -> libc::c_int) -> Result<libc::c_int> {
    // SAFETY: the child only runs `f`, which by contract makes async-signal-safe calls, then
    // `_exit`s; nothing of the parent's state is touched or flushed.
    let pid = cvt(unsafe { libc::fork() }, "fork", || "probe".to_owned())?;
    if pid == 0 {
        let code = f();
        exit_now(code);
    }
    let (_, status) = waitpid(pid, 0)?;
    Ok(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        255
    })
}

/// `unshare(2)`: this process leaves the namespaces `flags` names for new ones.
pub(crate) fn unshare(flags: libc::c_int) -> Result<()> {
    // SAFETY: integer argument.
    cvt(unsafe { libc::unshare(flags) }, "unshare", || {
        format!("{flags:#x}")
    })?;
    Ok(())
}

/// Raw `unshare(2)` returning errno (0 on success), for probes in forked children.
pub(crate) fn unshare_errno(flags: libc::c_int) -> libc::c_int {
    // SAFETY: integer argument; async-signal-safe.
    if unsafe { libc::unshare(flags) } == -1 {
        errno()
    } else {
        0
    }
}

/// What a namespace probe's child reports when its namespaces were made but the step a box
/// takes in them failed: this plus that step's errno (a code, not an errno, above it).
pub(crate) const PROBE_STEP_FAILED: libc::c_int = 150;

fn step_failed(errno: libc::c_int) -> libc::c_int {
    (PROBE_STEP_FAILED + errno).min(254)
}

/// `doctor`'s UTS probe, for a forked child: new user and UTS namespaces, then the
/// `sethostname` a box makes there. A container engine's seccomp profile may allow the
/// `unshare` and refuse the `sethostname`, and a box then cannot start: probing the
/// `unshare` alone said it could. 0, an errno of `unshare`, or [`PROBE_STEP_FAILED`] plus
/// the errno of `sethostname`.
pub(crate) fn uts_errno() -> libc::c_int {
    let e = unshare_errno(libc::CLONE_NEWUSER | libc::CLONE_NEWUTS);
    if e != 0 {
        return e;
    }
    let name = b"box";
    // SAFETY: a pointer and the length of a live byte string; async-signal-safe.
    if unsafe { libc::sethostname(name.as_ptr().cast(), name.len()) } == -1 {
        step_failed(errno())
    } else {
        0
    }
}

/// `doctor`'s pid probe, for a forked child: new user, mount and pid namespaces, then, in
/// the new pid namespace's first process, a fresh `proc` mounted as a box mounts one. The
/// kernel refuses that mount to an unprivileged user where the `/proc` it sees is partly
/// covered (a container engine's masked paths), and a box then cannot start. 0, an errno of
/// `unshare` or `fork`, or [`PROBE_STEP_FAILED`] plus the errno of the mount.
pub(crate) fn proc_errno() -> libc::c_int {
    let e = unshare_errno(libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID);
    if e != 0 {
        return e;
    }
    // SAFETY: this probe runs in a forked, single-threaded child; the grandchild makes only
    // raw system calls and then `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid == -1 {
        return errno();
    }
    if pid == 0 {
        // SAFETY: raw calls on static C strings and null pointers the calls accept;
        // async-signal-safe. The mounts are in this probe's own mount namespace, made
        // private first, and end with it.
        let code = unsafe {
            let private = libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) == 0;
            if private
                && libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) == 0
            {
                0
            } else {
                step_failed(errno())
            }
        };
        exit_now(code);
    }
    let mut status = 0;
    // SAFETY: waiting for our own child, into a live integer.
    if unsafe { libc::waitpid(pid, &mut status, 0) } == -1 {
        return errno();
    }
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        255
    }
}

/// Raw `prctl(PR_SET_NO_NEW_PRIVS)` + check, returning 0 on success, for probes.
pub(crate) fn nnp_errno() -> libc::c_int {
    // SAFETY: integer arguments; async-signal-safe.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
            return errno();
        }
        if libc::prctl(libc::PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 {
            0
        } else {
            1
        }
    }
}

/// Raw seccomp install (after no_new_privs), returning errno, for probes.
pub(crate) fn seccomp_errno(prog: &[seccompiler::sock_filter]) -> libc::c_int {
    if nnp_errno() != 0 {
        return 1;
    }
    let fprog = libc::sock_fprog {
        len: prog.len() as libc::c_ushort,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `fprog` points at `prog`, alive for the call.
    if unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &fprog as *const libc::sock_fprog,
            0,
            0,
        )
    } == -1
    {
        return errno();
    }
    0
}

/// Fills `buf` from the kernel's random pool (`getrandom(2)`, blocking only until the pool is
/// initialised at boot), retrying on `EINTR` and short reads.
pub(crate) fn random_bytes(buf: &mut [u8]) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let rest = &mut buf[done..];
        // SAFETY: the kernel writes at most `rest.len()` bytes into `rest`, which we own.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        done += cvt(n, "getrandom", || format!("{} bytes", rest.len()))? as usize;
    }
    Ok(())
}

fn errno() -> libc::c_int {
    // SAFETY: __errno_location always returns a valid thread-local pointer.
    unsafe { *libc::__errno_location() }
}

/// Hands anonymous pipes on fds 0-2 that this process owns to `uid`/`gid`, so that the box
/// user can reopen them through `/dev/stdout` and friends (a pipe's inode is mode 0600, owned
/// by its creator). Terminals and files are left alone: they are not ours to give.
pub(crate) fn give_stdio_pipes(uid: u32, gid: u32) -> Result<()> {
    for fd in 0..=2 {
        // SAFETY: `st` is a valid out-pointer; fstat on a closed fd just fails.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd, &mut st) } == -1 {
            continue;
        }
        if st.st_mode & libc::S_IFMT == libc::S_IFIFO && st.st_uid == geteuid() {
            // SAFETY: integer arguments on an open descriptor.
            cvt(unsafe { libc::fchown(fd, uid, gid) }, "fchown", || {
                format!("stdio pipe {fd}")
            })?;
        }
    }
    Ok(())
}

/// Whether `fd` is an open descriptor of this process.
pub(crate) fn fd_is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD only inspects the descriptor table.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
}

unsafe extern "C" {
    /// The C library's environment block (`environ(7)`).
    static mut environ: *mut *mut libc::c_char;
}

/// In the box's init when it is a copy of the caller's own process
/// ([`crate::run_in_process`]): overwrites every inherited environment string with zeros and
/// empties the environment, so the caller's variables (API keys live there) are not even in
/// init's memory. Only for a single-threaded process (a fresh clone is).
pub(crate) fn scrub_environ() {
    // SAFETY: this process has one thread (a clone of a single-threaded caller), so nothing
    // reads or changes the environment concurrently. `environ` is null or a null-terminated
    // array of pointers to NUL-terminated strings in writable memory (the initial stack or
    // the heap, as setenv leaves them); each string is zeroed within its own length, then
    // the array is made empty.
    unsafe {
        let env = environ;
        if env.is_null() {
            return;
        }
        let mut p = env;
        while !(*p).is_null() {
            let s = *p;
            std::ptr::write_bytes(s, 0, libc::strlen(s));
            p = p.add(1);
        }
        *env = std::ptr::null_mut();
    }
}

/// The number of threads of this process (from `/proc/self/status`); `None` if unknown.
pub(crate) fn thread_count() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
}

/// A connected pair of `AF_UNIX` seqpacket sockets (close-on-exec): messages keep their
/// boundaries, carry descriptors, and a closed peer reads as end of file.
pub(crate) fn seqpacket_pair() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    cvt(
        unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        },
        "socketpair",
        || "AF_UNIX SOCK_SEQPACKET".to_owned(),
    )?;
    // SAFETY: socketpair succeeded, so both descriptors are new and ours.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Most descriptors one message carries ([`send_with_fds`], [`recv_with_fds`]).
const MAX_PASSED_FDS: usize = 4;

/// Room for one `SCM_RIGHTS` control message of [`MAX_PASSED_FDS`] descriptors, aligned
/// as `cmsghdr` requires.
#[repr(C, align(8))]
struct CmsgBuf([u8; 64]);

/// Sends a one-byte message on `sock`, with `fds` attached (`SCM_RIGHTS`) if not empty.
pub(crate) fn send_with_fds(sock: &impl AsRawFd, fds: &[OwnedFd]) -> io::Result<()> {
    if fds.len() > MAX_PASSED_FDS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "too many descriptors for one message",
        ));
    }
    let byte = [1u8];
    let mut iov = libc::iovec {
        iov_base: byte.as_ptr() as *mut libc::c_void,
        iov_len: 1,
    };
    let mut cbuf = CmsgBuf([0; 64]);
    // SAFETY: msghdr is plain old data; all-zero is a valid, empty value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let data_len = std::mem::size_of_val(fds) as libc::c_uint;
        // SAFETY: CMSG_SPACE is pure arithmetic.
        let space = unsafe { libc::CMSG_SPACE(data_len) } as usize;
        msg.msg_control = cbuf.0.as_mut_ptr().cast();
        msg.msg_controllen = space;
        // SAFETY: `msg` points at `cbuf`, 8-aligned and at least `space` bytes long (at most
        // 4 descriptors: 16 + 16 bytes), so CMSG_FIRSTHDR returns a valid header inside it
        // and CMSG_DATA points at room for `data_len` bytes.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(data_len) as usize;
            let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
            for (i, fd) in fds.iter().enumerate() {
                data.add(i).write_unaligned(fd.as_raw_fd());
            }
        }
    }
    loop {
        // SAFETY: `msg` and everything it points at (iov, byte, cbuf) live across the call.
        let ret = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if ret == -1 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(());
    }
}

/// Receives one message sent by [`send_with_fds`]: `None` at end of file (the peer is
/// gone), else the descriptors it carried (close-on-exec).
pub(crate) fn recv_with_fds(sock: &impl AsRawFd) -> io::Result<Option<Vec<OwnedFd>>> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut cbuf = CmsgBuf([0; 64]);
    // SAFETY: msghdr is plain old data; all-zero is a valid, empty value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.0.as_mut_ptr().cast();
    msg.msg_controllen = cbuf.0.len();
    let n = loop {
        // SAFETY: `msg` points at `iov`/`byte` and `cbuf`, which live across the call.
        let ret = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if ret == -1 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        break ret;
    };
    let mut fds = Vec::new();
    // SAFETY: after a successful recvmsg, `msg.msg_control`/`msg_controllen` describe the
    // control messages the kernel wrote into `cbuf`; CMSG_FIRSTHDR/NXTHDR stay inside it.
    // Each SCM_RIGHTS payload is an array of new descriptors that now belong to us.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let header = libc::CMSG_LEN(0) as usize;
                let count = ((*cmsg).cmsg_len as usize).saturating_sub(header)
                    / std::mem::size_of::<RawFd>();
                let data = libc::CMSG_DATA(cmsg).cast::<RawFd>();
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(io::Error::other("descriptors were cut off"));
    }
    Ok(if n == 0 { None } else { Some(fds) })
}

/// Starts `path` with `argv` and `envp` in `dir`, with SIGPIPE at its default action, by
/// `posix_spawn` (glibc: `clone(CLONE_VM | CLONE_VFORK)` on a fresh stack, so nothing of this
/// process's memory is copied). Descriptors pass as their close-on-exec flags say. A failed
/// `chdir` or `execve` is returned as the error (glibc reports it from the child).
pub(crate) fn spawn(
    path: &CStr,
    argv: &[CString],
    envp: &[CString],
    dir: &CStr,
) -> io::Result<libc::pid_t> {
    let mut a: Vec<*mut libc::c_char> = argv.iter().map(|s| s.as_ptr().cast_mut()).collect();
    a.push(std::ptr::null_mut());
    let mut e: Vec<*mut libc::c_char> = envp.iter().map(|s| s.as_ptr().cast_mut()).collect();
    e.push(std::ptr::null_mut());
    let check = |rc: libc::c_int| {
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(rc))
        }
    };
    // SAFETY: the file actions and attributes objects are initialised by their `_init`
    // functions before use and destroyed once, below; every string is NUL-terminated and
    // outlives the call; `a` and `e` are NULL-terminated arrays of such strings (posix_spawn
    // does not write through them despite the `*mut` in its signature); `pid` is a valid
    // out-pointer; `sigset_t` is an array of 64-bit words (1024 bits on glibc), so its first
    // word may be read and written as a `u64`.
    unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        check(libc::posix_spawn_file_actions_init(&mut actions))?;
        let mut attr: libc::posix_spawnattr_t = std::mem::zeroed();
        if let Err(err) = check(libc::posix_spawnattr_init(&mut attr)) {
            libc::posix_spawn_file_actions_destroy(&mut actions);
            return Err(err);
        }
        let mut defaults: libc::sigset_t = std::mem::zeroed();
        let mut pid: libc::pid_t = 0;
        let result = check(libc::posix_spawn_file_actions_addchdir_np(
            &mut actions,
            dir.as_ptr(),
        ))
        .and_then(|()| check(libc::sigemptyset(&mut defaults)))
        .and_then(|()| check(libc::sigaddset(&mut defaults, libc::SIGPIPE)))
        .map(|()| {
            // glibc's spawn child sets its two internal signals (32 and 33) to "ignore"
            // unless they are in this set, and an ignored signal stays ignored across exec;
            // its `sigaddset` refuses them, so set their bits (sig - 1 of the first word of
            // the kernel's and glibc's sigset layout) directly: the command starts with no
            // signal ignored, as after fork + exec.
            let first = (&mut defaults as *mut libc::sigset_t).cast::<u64>();
            *first |= (1u64 << 31) | (1u64 << 32);
        })
        .and_then(|()| check(libc::posix_spawnattr_setsigdefault(&mut attr, &defaults)))
        .and_then(|()| {
            check(libc::posix_spawnattr_setflags(
                &mut attr,
                libc::POSIX_SPAWN_SETSIGDEF as libc::c_short,
            ))
        })
        .and_then(|()| {
            check(libc::posix_spawn(
                &mut pid,
                path.as_ptr(),
                &actions,
                &attr,
                a.as_ptr(),
                e.as_ptr(),
            ))
        });
        libc::posix_spawnattr_destroy(&mut attr);
        libc::posix_spawn_file_actions_destroy(&mut actions);
        result.map(|()| pid)
    }
}
