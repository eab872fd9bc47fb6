//! `statedir` — the state directory's layout, and its Unix sockets at any path length.
//!
//! **Owns:** the names of the files the gate keeps in its state directory (the sockets, the
//! lock, the gate's log) and the two operations every role needs on its sockets: [`bind`]
//! and [`connect`]. A Unix socket's address holds at most 107 bytes of path (`SUN_LEN`), and
//! a state directory under a real home directory is often longer than that. So neither
//! operation ever puts the directory's path into a socket address: the directory is opened
//! (a descriptor held for the length of the call) and the socket is named through that
//! descriptor, `/proc/self/fd/N/NAME`, which is a few dozen bytes whatever the directory's
//! path. Where the whole path is short enough it is used as it is, so a machine without
//! `/proc` still works for short paths.
//!
//! It also owns **the one way boxmaker writes a file for a person** ([`file`]): configs,
//! backups, state, tokens, keys, logs and locks are written by name in a directory held open,
//! never through a symbolic link (a temporary file `O_CREAT|O_EXCL|O_NOFOLLOW`, renamed into
//! place), and a person's file behind a link of theirs is resolved on purpose, a project's
//! only inside the project. [`open`] is the state directory, refused when it or a name of
//! [`NAMES`] in it is a link, and used only when it bears the person's mark ([`mark`]: a
//! repository can ship `.boxmaker/` whole, a database of grants in it). Beside the mark key
//! it keeps the person's word for each config they trusted ([`trust`]: a repository can
//! ship `boxmaker.toml` too, and `config::load` uses one only when a record sealed with the
//! mark key names its path and its bytes).
//!
//! **Must never:** decide anything, create a socket anywhere but in the directory it was
//! given, or write a file any other way than [`file`]'s. It holds no descriptor beyond one
//! call (a [`file::Dir`] is its caller's).

#![forbid(unsafe_code)]

pub mod file;
pub mod live;
pub mod mark;
pub mod trust;

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The agent socket's file name in the state directory.
pub const AGENT_SOCKET: &str = "agent.sock";

/// The control socket's file name in the state directory.
pub const CONTROL_SOCKET: &str = "control.sock";

/// The decision socket's file name in the state directory: a front shows and decides a
/// pending approval of its own session there (bound only with `approve_in_client`).
pub const DECIDE_SOCKET: &str = "decide.sock";

/// The lock that makes one process the gate of a state directory.
pub const LOCK_FILE: &str = "gate.lock";

/// Where a gate process started on demand writes what it has to say.
pub const GATE_LOG: &str = "gate.log";

/// Every name boxmaker keeps in a state directory, whichever part of it writes there: the
/// sockets, locks and logs above; the gate's database (and SQLite's files beside it), audit
/// log and latest checkpoint; the discovery file and its lock; the fronts' and the page's
/// tokens; and the directories of workspaces, servers' logs, live sessions, program copies
/// and sign-ins. [`open`] refuses a state directory where any of them is a link.
pub const NAMES: &[&str] = &[
    AGENT_SOCKET,
    CONTROL_SOCKET,
    DECIDE_SOCKET,
    LOCK_FILE,
    GATE_LOG,
    "clients.lock",
    "boxmaker.db",
    "boxmaker.db-wal",
    "boxmaker.db-shm",
    "boxmaker.db-journal",
    "audit.log",
    "audit.checkpoint",
    "tools.json",
    "tools.lock",
    "http.token",
    "http.key",
    "approvals.token",
    "work",
    "logs",
    live::LIVE_DIR,
    "pins",
    "oauth",
    mark::MARK,
];

/// The state directory, held (`file::Dir::own`: made `0700` when missing, refused when it
/// is a link or a name of [`NAMES`] in it is one, and used only when it bears the person's
/// mark, [`mark`]). A repository ships `.boxmaker/` (the default state directory, beside
/// the config) with anything in it; this says so at once, before anything starts.
pub fn open(state: &Path) -> Result<file::Dir, file::Error> {
    let dir = file::Dir::own(state)?;
    for name in NAMES {
        dir.refuse_link(name)?;
    }
    Ok(dir)
}

/// A state directory is used only when it bears the person's mark ([`mark`]); every
/// [`file::Dir::own`] asks here.
pub(crate) fn check_marked(dir: &file::Dir) -> Result<(), file::Error> {
    mark::check_state(dir)
}

/// The longest path a `sockaddr_un` holds (108 bytes less the terminating NUL).
pub const SUN_PATH_MAX: usize = 107;

/// A socket name in `dir`, in a form that fits a socket address, and what keeps that form
/// valid (the directory's descriptor, when the name goes through `/proc/self/fd`).
fn address(dir: &Path, name: &str) -> io::Result<(PathBuf, Option<File>)> {
    let full = dir.join(name);
    if full.as_os_str().len() <= SUN_PATH_MAX {
        return Ok((full, None));
    }
    // Opening a directory read-only gives a descriptor that names it; the kernel resolves
    // `/proc/self/fd/N` to the directory itself, and `NAME` inside it.
    let held = File::open(dir)?;
    if !held.metadata()?.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a directory", dir.display()),
        ));
    }
    let short = PathBuf::from(format!("/proc/self/fd/{}/{name}", held.as_raw_fd()));
    Ok((short, Some(held)))
}

/// Binds a listening socket called `name` in `dir`, whatever the length of `dir`'s path.
pub fn bind(dir: &Path, name: &str) -> io::Result<UnixListener> {
    let (addr, _held) = address(dir, name)?;
    UnixListener::bind(&addr)
}

/// Connects to the socket called `name` in `dir`, whatever the length of `dir`'s path.
pub fn connect(dir: &Path, name: &str) -> io::Result<UnixStream> {
    let (addr, _held) = address(dir, name)?;
    UnixStream::connect(&addr)
}

/// Connects to the socket at `path` (its directory and file name), whatever its length.
pub fn connect_path(path: &Path) -> io::Result<UnixStream> {
    match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(dir), Some(name)) if !dir.as_os_str().is_empty() => connect(dir, name),
        _ => UnixStream::connect(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A directory whose path is at least `len` bytes long.
    fn long_dir(root: &Path, len: usize) -> PathBuf {
        let mut dir = root.to_path_buf();
        while dir.as_os_str().len() < len {
            dir.push("d".repeat(40));
        }
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_socket_in_a_300_byte_directory_binds_and_connects() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = long_dir(tmp.path(), 300);
        assert!(dir.join(AGENT_SOCKET).as_os_str().len() > SUN_PATH_MAX);
        let listener = bind(&dir, AGENT_SOCKET).unwrap();
        // The socket is in the directory itself, not somewhere else.
        assert!(dir.join(AGENT_SOCKET).exists());
        let t = std::thread::spawn(move || {
            for _ in 0..2 {
                let (mut s, _) = listener.accept().unwrap();
                s.write_all(b"hi").unwrap();
            }
        });
        for mut c in [
            connect(&dir, AGENT_SOCKET).unwrap(),
            connect_path(&dir.join(AGENT_SOCKET)).unwrap(),
        ] {
            let mut got = String::new();
            c.read_to_string(&mut got).unwrap();
            assert_eq!(got, "hi");
        }
        t.join().unwrap();
    }

    #[test]
    fn a_short_path_is_used_as_it_is() {
        let tmp = tempfile::tempdir().unwrap();
        let (addr, held) = address(tmp.path(), CONTROL_SOCKET).unwrap();
        assert_eq!(addr, tmp.path().join(CONTROL_SOCKET));
        assert!(held.is_none());
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_panic() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = long_dir(tmp.path(), 200).join("gone");
        assert_eq!(
            connect(&dir, AGENT_SOCKET).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
