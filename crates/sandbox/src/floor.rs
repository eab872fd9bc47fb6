//! The floor of the box's startup cost, for `bench/box-startup.sh`: only the kernel work no
//! box can skip, done with this crate's own data, then `exec` of the command. Used by
//! `examples/floor.rs`; not part of the box and not a sandbox (no mounts, no pivot_root, no
//! capabilities dropped, no rlimits, no cgroup, no supervision).
//!
//! What it does, in order: `clone` into the same seven new namespaces as a box (user, mount,
//! pid, ipc, uts, cgroup, network); the parent writes the same uid/gid maps and waits; the
//! child takes the box user's ids, sets `no_new_privs`, applies landlock rules built from the
//! box's mount table (paths that do not exist outside a box are skipped, as in a box),
//! installs the box's seccomp filter, and execs the command as pid 1 of the new pid
//! namespace.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::spec::{BOX_UID, DEFAULT_ROOT_HOST_ID, Spec};
use crate::sys;

/// Runs `argv` behind the bare namespace, landlock and seccomp calls, waits for it, and
/// returns its exit code (128 + signal if killed). `workspace` must be a directory (the
/// mount table the landlock rules come from names it).
#[doc(hidden)]
pub fn bench_floor(argv: &[String], workspace: &Path) -> Result<i32> {
    let spec = Spec::new(argv.to_vec(), workspace);
    spec.validate()?;
    let table = crate::mounts::mount_table(&spec)?;
    let filters = crate::seccomp::compile()?;
    let root = sys::geteuid() == 0;
    let (uid, gid) = if root {
        (DEFAULT_ROOT_HOST_ID, DEFAULT_ROOT_HOST_ID)
    } else {
        (sys::geteuid(), sys::getegid())
    };
    let (sync_rd, sync_wr) = sys::pipe()?;
    let flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP
        | libc::CLONE_NEWNET;
    // SAFETY: the example that calls this is single-threaded.
    let pid = unsafe { sys::clone_fork(flags)? };
    if pid == 0 {
        drop(sync_wr);
        let mut byte = [0u8; 1];
        let ready = std::fs::File::from(sync_rd).read(&mut byte).unwrap_or(0) == 1;
        let err = if ready {
            child(&spec, &table, &filters, root)
        } else {
            Error::Setup("parent went away".into())
        };
        eprintln!("floor: {err}");
        sys::exit_now(127);
    }
    drop(sync_rd);
    let proc = format!("/proc/{pid}");
    let write = |name: &str, text: String| {
        std::fs::write(format!("{proc}/{name}"), text).map_err(|source| Error::File {
            context: "write",
            path: format!("{proc}/{name}").into(),
            source,
        })
    };
    if !root {
        write("setgroups", "deny".into())?;
    }
    write("uid_map", format!("{BOX_UID} {uid} 1\n"))?;
    write("gid_map", format!("{BOX_UID} {gid} 1\n"))?;
    std::fs::File::from(sync_wr)
        .write_all(&[1])
        .map_err(|source| Error::HelperIo {
            context: "start floor child",
            source,
        })?;
    let (_, status) = sys::waitpid(pid, 0)?;
    Ok(if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        libc::WEXITSTATUS(status)
    })
}

/// In the cloned child: the box's identity, no_new_privs, landlock, seccomp, exec. Returns
/// only on failure.
fn child(
    spec: &Spec,
    table: &[crate::mounts::MountEntry],
    filters: &[seccompiler::BpfProgram],
    root: bool,
) -> Error {
    let steps = || -> Result<()> {
        if root {
            sys::clear_groups()?;
        }
        sys::setresgid(BOX_UID)?;
        sys::setresuid(BOX_UID)?;
        sys::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, "PR_SET_NO_NEW_PRIVS")?;
        crate::landlock::apply(table, spec.require.landlock)?;
        for f in filters {
            sys::seccomp_install(f)?;
        }
        Ok(())
    };
    if let Err(e) = steps() {
        return e;
    }
    let err = std::process::Command::new(&spec.argv[0])
        .args(&spec.argv[1..])
        .env_clear()
        .envs(spec.environment())
        .exec();
    Error::Setup(format!("exec {}: {err}", spec.argv[0]))
}
