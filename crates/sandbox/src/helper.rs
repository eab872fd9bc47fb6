//! The helper process: a fresh, single-threaded exec of the caller's binary (see
//! [`crate::HELPER_ARG`]), so that `clone` with namespace flags is safe no matter how many
//! threads the caller has. It is the box's supervisor, outside the box. (A single-threaded
//! caller may run [`run_box`] itself instead: [`crate::run_in_process`].)
//!
//! 1. reads the [`Spec`] from fd 3 (a socket to the caller: 4-byte big-endian length, JSON);
//! 2. checks required protections, resolves the mount table, compiles seccomp, finds where
//!    the box's cgroup can go — all before any namespace exists, so failures are cheap and
//!    clear;
//! 3. clones the box's init (`child.rs`) into new namespaces, writes its uid/gid maps, lets
//!    it build the root while creating the box's cgroup, has init join it (v1, passing the
//!    cgroup's `tasks` files) or moves it there (v2), and lets it start the command;
//! 4. waits for init to exit, for the timeout (then kills init: the kernel kills the whole pid
//!    namespace), or for the caller to hang up (same);
//! 5. answers the caller with a [`Report`] on the same socket, then removes the (empty)
//!    cgroup: the box's processes are all dead before the report goes, the cleanup after.

use std::fs;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::cgroup::{self, BoxCgroup};
use seccompiler::BpfProgram;

use crate::child::{self, Child, message};
use crate::error::{Error, Result};
use crate::spec::{BOX_UID, DEFAULT_ROOT_HOST_ID, MAX_SPEC_BYTES, Spec};
use crate::sys;

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// Exited with this code.
    Exited(i32),
    /// Killed by this signal (e.g. 9 after the memory cgroup's OOM killer, 25 for SIGXFSZ).
    Signaled(i32),
    /// Ran past the wall-clock limit; the whole box was killed.
    TimedOut,
}

impl Status {
    /// The shell's convention: the code, 128 + signal, or 124 for a timeout (as `timeout(1)`).
    pub fn exit_code(&self) -> i32 {
        match *self {
            Status::Exited(c) => c,
            Status::Signaled(s) => 128 + s,
            Status::TimedOut => 124,
        }
    }
}

/// The helper's answer to the caller.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// `Ok` with how the command ended, or `Err` with why the box did not run.
    pub result: std::result::Result<Status, String>,
    /// The memory cgroup killed a process of the box.
    pub oom_killed: bool,
    /// Memory and pids cgroup limits were applied.
    pub cgroup_limits: bool,
}

/// Entry point of helper mode. Call it from `main` when the binary was started with
/// [`crate::HELPER_ARG`] (or use [`crate::enter_helper_if_requested`]). Never returns.
pub fn helper_main() -> ! {
    run_helper(false)
}

/// A helper forked by the zygote (`pool.rs`): as [`helper_main`], but the next box's init
/// is cloned before the spec comes ([`clone_ahead`]).
pub(crate) fn pooled_helper_main() -> ! {
    run_helper(true)
}

fn run_helper(ahead: bool) -> ! {
    if !sys::fd_is_open(3) {
        eprintln!("sandbox helper: no control socket on fd 3 (started by hand?)");
        std::process::exit(2);
    }
    // Nothing the runner's own caller left open reaches the box: the helper needs fd 3
    // alone, and init is a copy of it.
    if sys::close_from(4).is_err() {
        eprintln!("sandbox helper: cannot close inherited descriptors");
        std::process::exit(2);
    }
    // SAFETY: fd 3 is open (checked above; `run` placed it with dup2 before exec) and
    // nothing else in this process owns it. We take ownership of it here, once.
    let control = unsafe { UnixStream::from_raw_fd(3) };
    let code = match sys::set_cloexec(control.as_raw_fd()).and_then(|()| {
        // Built while idle, with nothing of any session; without it (namespaces refused,
        // say) the box is cloned when its spec comes, and fails there with the reason.
        let ahead = if ahead { clone_ahead().ok() } else { None };
        serve(&control, ahead)
    }) {
        Ok(()) => 0,
        Err(e) => {
            let _ = write_frame(
                &control,
                &Report {
                    result: Err(e.to_string()),
                    oom_killed: false,
                    cgroup_limits: false,
                },
            );
            1
        }
    };
    std::process::exit(code)
}

fn serve(control: &UnixStream, ahead: Option<Ahead>) -> Result<()> {
    let spec: Result<Spec> = read_frame(control);
    // The caller waits for this byte before anything else (`run.rs`, `hand_over`): from here
    // on this helper holds the call's spec, so if it dies the call fails; before it, the
    // caller may hand the spec to another helper, as nothing of it ran.
    let _ = (&*control).write_all(&[SPEC_TAKEN]);
    let spec = spec?;
    // A proxy box's caller reads one message before the report: the listener, or nothing
    // when the box failed before it had one.
    let mut handed = false;
    let mut hand = |fds: Vec<OwnedFd>| {
        handed = true;
        let _ = sys::send_with_fds(control, &fds);
    };
    let (report, rest) = match run_box(&spec, Some(control), &mut hand, ahead) {
        Ok(ended) => (ended.report.clone(), Some(ended)),
        Err(e) => (
            Report {
                result: Err(e.to_string()),
                oom_killed: false,
                cgroup_limits: false,
            },
            None,
        ),
    };
    if spec.proxy && !handed {
        sys::send_with_fds(control, &[]).map_err(|source| Error::HelperIo {
            context: "hand out the proxy listener",
            source,
        })?;
    }
    // The report goes out first: every process of the box is dead already (init said so
    // after killing and reaping them all, or init itself was reaped, which the kernel does
    // only after the rest of its pid namespace). Init's exit, the empty cgroup's removal
    // and the sweep are not on the caller's path; if this process is killed before they are
    // done, init dies with it (its parent-death signal) and the next box's sweep removes
    // the cgroup (`cgroup.rs`).
    let sent = write_frame(control, &report);
    if let Some(rest) = rest {
        rest.finish();
    }
    sent
}

/// What [`run_box`] leaves behind: the report, and what is left to do once it is out —
/// init to reap (it has reported that every other process of the box is dead, and exits),
/// the box's cgroup to remove (empty), dead supervisors' cgroups to sweep.
pub(crate) struct Ended {
    pub report: Report,
    cgroup: Option<BoxCgroup>,
    init: Option<libc::pid_t>,
    sweep: Option<cgroup::Layout>,
}

impl Ended {
    /// Reaps init, removes the box's cgroup and sweeps; returns the report.
    pub(crate) fn finish(self) -> Report {
        let Ended {
            report,
            cgroup,
            init,
            sweep,
        } = self;
        if let Some(pid) = init {
            let _ = sys::waitpid(pid, 0);
        }
        drop(cgroup);
        if let Some(layout) = &sweep {
            cgroup::sweep(layout);
        }
        report
    }
}

/// The byte a helper answers a spec with, at once: it has it (`hand_over` in `run.rs`).
pub(crate) const SPEC_TAKEN: u8 = b'T';

/// Writes one frame: 4-byte big-endian length, then JSON. Shared with the caller side.
pub(crate) fn write_frame<T: Serialize>(mut w: &UnixStream, value: &T) -> Result<()> {
    let body = serde_json::to_vec(value).map_err(|e| Error::Helper(format!("encode: {e}")))?;
    if body.len() > MAX_SPEC_BYTES {
        return Err(Error::Helper(format!(
            "frame of {} bytes exceeds {MAX_SPEC_BYTES}",
            body.len()
        )));
    }
    let io = |source| Error::HelperIo {
        context: "write frame",
        source,
    };
    w.write_all(&(body.len() as u32).to_be_bytes())
        .map_err(io)?;
    w.write_all(&body).map_err(io)
}

/// Reads one frame; the length is checked before anything is allocated.
pub(crate) fn read_frame<T: for<'de> Deserialize<'de>>(mut r: &UnixStream) -> Result<T> {
    let io = |source| Error::HelperIo {
        context: "read frame",
        source,
    };
    let mut len = [0u8; 4];
    r.read_exact(&mut len).map_err(io)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_SPEC_BYTES {
        return Err(Error::Helper(format!(
            "frame of {len} bytes exceeds {MAX_SPEC_BYTES}"
        )));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).map_err(io)?;
    serde_json::from_slice(&body).map_err(|e| Error::Helper(format!("decode: {e}")))
}

/// Builds, runs and supervises one box; the helper's whole job. `control` is the socket to
/// the caller (a hang-up kills the box); `None` when the caller runs this itself
/// ([`crate::run_in_process`]), which must then be single-threaded.
/// A [`Spec::proxy`] box's listener goes to `hand` once init has made it (before the
/// command starts).
/// `ahead`: an init cloned before the spec came ([`clone_ahead`]), used unless the spec
/// shares the host's network.
pub(crate) fn run_box(
    spec: &Spec,
    control: Option<&UnixStream>,
    hand: &mut dyn FnMut(Vec<OwnedFd>),
    ahead: Option<Ahead>,
) -> Result<Ended> {
    let ahead = match ahead {
        Some(a) if spec.network => {
            a.discard();
            None
        }
        a => a,
    };
    // Everything that can fail without a namespace fails here, first.
    spec.validate()?;
    let table = crate::mounts::mount_table(spec)?;
    let filters = match &ahead {
        Some(a) => a.filters.clone(),
        None => crate::seccomp::compile()?,
    };
    if spec.require.landlock && crate::landlock::abi_version() <= 0 {
        return Err(Error::Unavailable {
            protection: "landlock",
            reason: "the kernel does not enforce landlock".into(),
        });
    }

    // Identity. As root the box user maps to a dedicated unprivileged host id (never 0), and
    // the workspace is handed to it; otherwise to our own id, the only one we may map.
    let root = sys::geteuid() == 0;
    let (host_uid, host_gid) = if root {
        let id = spec.host_id.unwrap_or(DEFAULT_ROOT_HOST_ID);
        (id, id)
    } else {
        (sys::geteuid(), sys::getegid())
    };
    if root {
        let ws = fs::canonicalize(&spec.workspace).map_err(|source| Error::File {
            context: "resolve workspace",
            path: spec.workspace.clone(),
            source,
        })?;
        std::os::unix::fs::chown(&ws, Some(host_uid), Some(host_gid)).map_err(|source| {
            Error::File {
                context: "chown workspace",
                path: ws.clone(),
                source,
            }
        })?;
        // So `/dev/stdout` and friends can be reopened by the box user.
        sys::give_stdio_pipes(host_uid, host_gid)?;
    }

    // Cgroup limits, where a writable cgroup exists (required if the spec says so). Only
    // found here; the cgroup is made after the clone, while init builds the root.
    let detected = match &ahead {
        Some(a) => a.layout.clone(),
        None => cgroup::detect(),
    };
    let layout = match detected {
        Ok(layout) => Some(layout),
        Err(reason) if spec.require.cgroups => {
            return Err(Error::Unavailable {
                protection: "cgroups",
                reason,
            });
        }
        Err(_) => None,
    };

    // Where the box's cgroup bounds its memory, the address space is limited apart (by
    // default not at all); else the memory limit is every process's address-space limit.
    let address_space = crate::cgroup::address_space_limit(
        &spec.limits,
        layout.as_ref().is_some_and(cgroup::Layout::bounds_memory),
    )
    .unwrap_or(libc::RLIM_INFINITY);
    let (pid, sync, report_rd, handed) = match ahead {
        Some(a) => {
            let Ahead {
                pid,
                sync,
                report_rd,
                spec_wr,
                ..
            } = a;
            let handed = Handed {
                spec: spec.clone(),
                table: table.clone(),
                address_space,
                clear_groups: root,
            };
            (pid, sync, report_rd, Some((spec_wr, handed)))
        }
        None => {
            let (sync, sync_child) = sys::seqpacket_pair()?;
            let (report_rd, report_wr) = sys::pipe()?;
            let mut flags = libc::CLONE_NEWUSER
                | libc::CLONE_NEWNS
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWIPC
                | libc::CLONE_NEWUTS
                | libc::CLONE_NEWCGROUP;
            if !spec.network {
                flags |= libc::CLONE_NEWNET;
            }
            // SAFETY: the helper is single-threaded: it is a fresh exec (or fork of the
            // zygote) that starts no threads, or, in process, `run_in_process` checked that
            // the caller has exactly one thread.
            let pid = unsafe { sys::clone_fork(flags)? };
            if pid == 0 {
                drop(sync);
                drop(report_rd);
                if control.is_none() {
                    // A copy of the caller's own process: nothing of its environment stays
                    // in init.
                    sys::scrub_environ();
                }
                child::run(Child {
                    spec,
                    table: &table,
                    filters: &filters,
                    sync: sync_child,
                    report: report_wr,
                    clear_groups: root,
                    address_space,
                    ahead: false,
                });
            }
            (pid, sync, report_rd, None)
        }
    };
    if control.is_some() {
        // The helper process: init holds the box's stdio now; let go of ours, so the
        // caller's end sees end-of-file as soon as the box's command closes its stdout.
        // (Not in process: there stdio is the caller's terminal.)
        let _ = sys::stdio_to_devnull();
    }
    let started = Instant::now();

    // Two go-aheads. The first once the id maps exist: init needs them to build the root.
    // Then, while init builds it, the box's cgroup is made; the second go-ahead says init may
    // start the command. On v1 it carries the cgroup's `tasks` files, and init joins by
    // writing `0` to them (fast: see `cgroup.rs`); on v2 we move init here first (which can
    // wait for an RCU grace period, also overlapped with init's build). Init starts nothing
    // before the second go-ahead, so the command always runs inside the limits.
    //
    // An init cloned ahead gets what it builds (the spec, the mount table) once the maps
    // exist, before the first go-ahead; it makes its mount namespace then, from ours as it
    // is now.
    let mut cg: Option<BoxCgroup> = None;
    let admitted = write_id_maps(pid, root, host_uid, host_gid)
        .and_then(|()| match handed {
            Some((spec_wr, handed)) => hand_to_init(spec_wr, &handed),
            None => Ok(()),
        })
        .and_then(|()| go_ahead(&sync, &[]))
        .and_then(|()| {
            let Some(layout) = &layout else {
                return go_ahead(&sync, &[]);
            };
            let made = cg.insert(BoxCgroup::create(
                layout,
                spec.limits.memory_bytes,
                spec.limits.processes,
            )?);
            match made.self_join_files()? {
                Some(files) => go_ahead(&sync, &files),
                None => made.add(pid).and_then(|()| go_ahead(&sync, &[])),
            }
        });
    if let Err(e) = admitted {
        let _ = sys::kill(pid, libc::SIGKILL);
        let _ = sys::waitpid(pid, 0);
        // If init failed first (and so broke our pipe), its reason is the one to give.
        let mut buf = Vec::new();
        let _ = Read::by_ref(&mut fs::File::from(report_rd))
            .take(65536)
            .read_to_end(&mut buf);
        return Err(parse_messages(&buf).error.map_or(e, Error::Setup));
    }

    // The maps are written (which needed init's /proc files to be ours): from here no one
    // can read the helper's memory or descriptors (not dumpable; ptrace and /proc/PID/fd
    // need that). Init made itself undumpable too, before it started the command.
    if let Err(e) = sys::prctl(libc::PR_SET_DUMPABLE, 0, "PR_SET_DUMPABLE") {
        let _ = sys::kill(pid, libc::SIGKILL);
        let _ = sys::waitpid(pid, 0);
        return Err(e);
    }

    // The proxy's listener: init sends it once it has built the root and brought `lo` up,
    // before it waits for the second go-ahead (already sent), so this never waits on us.
    // End of file means init failed first; its report says why.
    if spec.proxy {
        match sys::recv_with_fds(&sync) {
            Ok(Some(fds)) => hand(fds),
            Ok(None) => {}
            Err(e) => {
                let _ = sys::kill(pid, libc::SIGKILL);
                let _ = sys::waitpid(pid, 0);
                return Err(Error::HelperIo {
                    context: "receive the proxy listener",
                    source: e,
                });
            }
        }
    }

    // While the box runs (we are idle): remove cgroups that killed supervisors left behind.
    // A helper process does it after its report instead (`Ended::finish`): a short command
    // ends before a sweep does.
    if control.is_none()
        && let Some(layout) = &layout
    {
        cgroup::sweep(layout);
    }

    let (messages, timed_out, reaped) =
        supervise(pid, report_rd, control, started + spec.limits.timeout)?;
    drop(sync);
    let oom_killed = cg.as_ref().is_some_and(BoxCgroup::oom_killed);
    let cgroup_limits = cg.is_some();

    let result = if timed_out {
        Ok(Status::TimedOut)
    } else if let Some(err) = messages.error {
        Err(err)
    } else if let Some(status) = messages.exit {
        Ok(decode_status(status))
    } else if messages.started {
        // Init itself was killed after starting the command (the memory cgroup's OOM killer
        // may pick it): the whole box died with it, which is how the command ended.
        Ok(decode_status(messages.init_status))
    } else {
        Err(format!(
            "the box's init ended without a report ({})",
            describe_status(messages.init_status)
        ))
    };
    Ok(Ended {
        report: Report {
            result,
            oom_killed,
            cgroup_limits,
        },
        cgroup: cg,
        init: (!reaped).then_some(pid),
        sweep: layout.filter(|_| control.is_some()),
    })
}

/// Writes the new user namespace's id maps: one line, box user to an unprivileged host id.
fn write_id_maps(pid: libc::pid_t, root: bool, uid: u32, gid: u32) -> Result<()> {
    let proc = Path::new("/proc").join(pid.to_string());
    let write = |name: &str, text: String| {
        let path = proc.join(name);
        fs::write(&path, text).map_err(|source| Error::File {
            context: "write",
            path,
            source,
        })
    };
    if !root {
        // An unprivileged process may only map its gid after giving up setgroups.
        write("setgroups", "deny".into())?;
    }
    write("uid_map", format!("{BOX_UID} {uid} 1\n"))?;
    write("gid_map", format!("{BOX_UID} {gid} 1\n"))
}

/// A box's init cloned before any spec came, by an idle pooled helper: in new user, pid,
/// network, ipc, uts and cgroup namespaces, its hostname set and `lo` up, holding nothing of
/// any session. It waits on a pipe for what to build ([`Handed`]), and makes its mount
/// namespace then (`child.rs`, `ahead`): a copy of the host's mounts as they are at the
/// call, not as they were while it waited.
pub(crate) struct Ahead {
    pid: libc::pid_t,
    sync: OwnedFd,
    report_rd: OwnedFd,
    spec_wr: OwnedFd,
    /// Found while idle too: the seccomp filter, and where the box's cgroup can go.
    filters: Vec<BpfProgram>,
    layout: std::result::Result<cgroup::Layout, String>,
}

/// What a cloned-ahead init is handed at the call: what an init cloned at the call would
/// have had in its memory.
#[derive(Serialize, Deserialize)]
pub(crate) struct Handed {
    pub spec: Spec,
    pub table: Vec<crate::mounts::MountEntry>,
    pub address_space: u64,
    pub clear_groups: bool,
}

/// Most bytes of a [`Handed`]: the largest spec and a table as large again.
pub(crate) const MAX_HANDED_BYTES: usize = 2 * MAX_SPEC_BYTES;

impl Ahead {
    /// Kills the init cloned ahead and reaps it (a spec it cannot serve came).
    fn discard(self) {
        let _ = sys::kill(self.pid, libc::SIGKILL);
        let _ = sys::waitpid(self.pid, 0);
    }
}

/// Clones the next box's init while idle (see [`Ahead`]). Only from a single-threaded
/// process that holds nothing of any session: a helper the zygote forked, before it read a
/// spec.
pub(crate) fn clone_ahead() -> Result<Ahead> {
    let filters = crate::seccomp::compile()?;
    let (sync, sync_child) = sys::seqpacket_pair()?;
    let (report_rd, report_wr) = sys::pipe()?;
    let (spec_rd, spec_wr) = sys::pipe()?;
    let flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP
        | libc::CLONE_NEWNET;
    // SAFETY: a pooled helper is single-threaded: a fork of the single-threaded zygote that
    // starts no threads.
    let pid = unsafe { sys::clone_fork(flags)? };
    if pid == 0 {
        drop(sync);
        drop(report_rd);
        drop(spec_wr);
        child::ahead(sync_child, report_wr, spec_rd, &filters);
    }
    Ok(Ahead {
        pid,
        sync,
        report_rd,
        spec_wr,
        filters,
        layout: cgroup::detect(),
    })
}

/// Writes `handed` to an init cloned ahead: 4-byte big-endian length, then JSON.
fn hand_to_init(spec_wr: OwnedFd, handed: &Handed) -> Result<()> {
    let body = serde_json::to_vec(handed).map_err(|e| Error::Helper(format!("encode: {e}")))?;
    if body.len() > MAX_HANDED_BYTES {
        return Err(Error::Helper(format!(
            "box of {} bytes exceeds {MAX_HANDED_BYTES}",
            body.len()
        )));
    }
    let mut w = fs::File::from(spec_wr);
    w.write_all(&(body.len() as u32).to_be_bytes())
        .and_then(|()| w.write_all(&body))
        .map_err(|source| Error::HelperIo {
            context: "hand the box to its init",
            source,
        })
}

/// One go-ahead to init: a one-byte message, carrying `fds` if any.
fn go_ahead(sync: &OwnedFd, fds: &[OwnedFd]) -> Result<()> {
    sys::send_with_fds(sync, fds).map_err(|source| Error::HelperIo {
        context: "start box",
        source,
    })
}

#[derive(Default)]
struct Messages {
    error: Option<String>,
    exit: Option<i32>,
    started: bool,
    init_status: i32,
}

/// Waits for init to end — or to report that the command ended and every other process
/// of the box is dead (`child.rs`, `reap`) — killing it at the deadline or when the caller
/// hangs up. Returns what init said, whether the box timed out, and whether init was
/// reaped (else it is exiting, and the caller reaps it).
fn supervise(
    pid: libc::pid_t,
    report: OwnedFd,
    control: Option<&UnixStream>,
    deadline: Instant,
) -> Result<(Messages, bool, bool)> {
    let pidfd = sys::pidfd_open(pid)?;
    let mut report = Some(fs::File::from(report));
    let mut buf = Vec::new();
    let mut timed_out = false;
    let mut killed = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout_ms = if killed {
            -1
        } else {
            left.as_millis().min(i32::MAX as u128) as i32
        };
        // Without a control socket (in process) slot 1 is -1, which poll ignores.
        let mut fds = vec![
            (pidfd.as_raw_fd(), libc::POLLIN),
            (control.map_or(-1, AsRawFd::as_raw_fd), libc::POLLIN),
        ];
        if let Some(r) = &report {
            fds.push((r.as_raw_fd(), libc::POLLIN));
        }
        let ev = sys::poll(&fds, timeout_ms)?;
        if ev.get(2).is_some_and(|e| *e != 0) {
            let mut chunk = [0u8; 4096];
            match report.as_mut().map(|r| r.read(&mut chunk)) {
                Some(Ok(0)) | Some(Err(_)) | None => report = None,
                Some(Ok(n)) => {
                    if buf.len() < 65536 {
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    // Init's last message: the box is over, init exits.
                    if !killed && parse_messages(&buf).exit.is_some() {
                        return Ok((parse_messages(&buf), timed_out, false));
                    }
                }
            }
        }
        if ev.first().is_some_and(|e| *e != 0) {
            break;
        }
        if !killed && ev.get(1).is_some_and(|e| *e != 0) {
            // The caller sends nothing after the spec: readable means it hung up (or broke
            // protocol). Either way nobody waits for this box any more.
            let _ = sys::kill(pid, libc::SIGKILL);
            killed = true;
        }
        if !killed && Instant::now() >= deadline {
            // Killing init makes the kernel kill every process of its pid namespace.
            let _ = sys::kill(pid, libc::SIGKILL);
            killed = true;
            timed_out = true;
        }
    }
    let (_, status) = sys::waitpid(pid, 0)?;
    if let Some(mut r) = report {
        let mut rest = Vec::new();
        let _ = Read::by_ref(&mut r).take(65536).read_to_end(&mut rest);
        buf.extend_from_slice(&rest);
    }
    let mut m = parse_messages(&buf);
    m.init_status = status;
    Ok((m, timed_out, true))
}

fn parse_messages(mut buf: &[u8]) -> Messages {
    let mut m = Messages::default();
    while buf.len() >= 5 {
        let tag = buf[0];
        let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
        let Some(payload) = buf.get(5..5 + len) else {
            break;
        };
        match tag {
            message::ERROR if m.error.is_none() => {
                m.error = Some(String::from_utf8_lossy(payload).into_owned())
            }
            message::STARTED => m.started = true,
            message::EXIT => {
                if let Ok(b) = <[u8; 4]>::try_from(payload) {
                    m.exit = Some(i32::from_be_bytes(b));
                }
            }
            _ => {}
        }
        buf = &buf[5 + len..];
    }
    m
}

fn decode_status(status: i32) -> Status {
    if libc::WIFSIGNALED(status) {
        Status::Signaled(libc::WTERMSIG(status))
    } else {
        Status::Exited(libc::WEXITSTATUS(status))
    }
}

fn describe_status(status: i32) -> String {
    match decode_status(status) {
        Status::Signaled(s) => format!("killed by signal {s}"),
        Status::Exited(c) => format!("exit code {c}"),
        Status::TimedOut => "timed out".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_parse_messages_error_and_exit() {
        let mut b = vec![b'E', 0, 0, 0, 2, b'h', b'i'];
        b.extend_from_slice(&[b'X', 0, 0, 0, 4]);
        b.extend_from_slice(&(3i32 << 8).to_be_bytes());
        let m = parse_messages(&b);
        assert_eq!(m.error.as_deref(), Some("hi"));
        assert_eq!(m.exit.map(decode_status), Some(Status::Exited(3)));
    }

    #[test]
    fn test_parse_messages_truncated_frame_is_ignored() {
        let m = parse_messages(&[b'E', 0, 0, 1, 0, b'x']);
        assert!(m.error.is_none());
    }

    #[test]
    fn test_status_exit_code_follows_shell() {
        assert_eq!(Status::Signaled(9).exit_code(), 137);
        assert_eq!(Status::TimedOut.exit_code(), 124);
    }
}
