//! Which connection sessions are still open (docs/spec.md §6): a session `boxmaker mcp`
//! made for one MCP connection (`mcp-` and 16 hex digits, never made again) is *live* while
//! some process holds a shared lock on `STATE/live/SESSION`, and has *ended* once none does.
//! The lock is the kernel's (`flock`), so a client killed with SIGKILL lets go too, and no
//! goodbye message can be lost. The front's broker takes the lock when a session starts and
//! hands the front the descriptor; the front closes it when the session ends (the process
//! exits, or an HTTP session is deleted). The gate asks [`ended`] before it lists remembered
//! approvals, and ends those of sessions that have ended. The directory is the operator's
//! own (`0700`, in the state directory no box ever sees).

use std::fs::{File, TryLockError};
use std::io;
use std::path::Path;

use crate::file::{Dir, Open};

/// The directory in the state directory that holds one lock file per live session.
pub const LIVE_DIR: &str = "live";

/// Whether `name` is a session `boxmaker mcp` made for one connection: `mcp-` and 16 hex
/// digits. Only these end; a session named by a person (`--session ID`) is never over.
pub fn is_connection_session(name: &str) -> bool {
    name.strip_prefix("mcp-")
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Checks that `session` is a connection session: one plain name in the directory.
fn file_of(session: &str) -> io::Result<()> {
    if !is_connection_session(session) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{session:?} is not a connection session (mcp- and 16 hex digits)"),
        ));
    }
    Ok(())
}

/// Marks `session` live for as long as the returned file (or a copy of its descriptor, in
/// any process) stays open. The lock file is made as every file of the state directory is
/// ([`crate::file`]): never through a link.
pub fn hold(state: &Path, session: &str) -> io::Result<File> {
    file_of(session)?;
    let file = Dir::own(state)?
        .sub_make(LIVE_DIR, 0o700)?
        .open_file(session, Open::Lock, 0o600)?;
    file.lock_shared()?;
    Ok(file)
}

/// Whether connection session `session` has ended: no process holds it live (or it was
/// never held, which a session made by `boxmaker mcp` always is before its first call). A
/// session that has ended loses its lock file. A name that is not a connection session never
/// ends; an error other than "no such file" (a link where the file or its directory should
/// be, too) is taken as live (nothing is ended on a doubt).
pub fn ended(state: &Path, session: &str) -> bool {
    if file_of(session).is_err() {
        return false;
    }
    let dir = match Dir::own_existing(state).and_then(|d| d.sub(LIVE_DIR)) {
        Ok(d) => d,
        Err(e) => return e.is_not_found(),
    };
    let file = match dir.open_file(session, Open::Existing, 0) {
        Ok(f) => f,
        Err(e) => return e.is_not_found(),
    };
    match file.try_lock() {
        Ok(()) => {
            // Nobody holds it, and nobody can take it while this lock is held: a name is
            // never made again, so the file can go.
            let _ = dir.remove(session);
            true
        }
        Err(TryLockError::WouldBlock) => false,
        Err(TryLockError::Error(_)) => false,
    }
}

/// A process, told apart from a later one with the same pid by its start time (clock ticks
/// after boot, `/proc/PID/stat` field 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Process {
    pub pid: u32,
    pub start: u64,
}

impl Process {
    /// Process `pid` as `/proc` shows it now, and its parent's pid.
    pub fn of(pid: u32) -> io::Result<(Process, u32)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // `PID (COMM) STATE PPID …`: the name may hold spaces and `)`, so read after the
        // last `)`.
        let bad = || io::Error::new(io::ErrorKind::InvalidData, format!("/proc/{pid}/stat"));
        let rest = stat.rsplit_once(')').ok_or_else(bad)?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let ppid = fields.get(1).and_then(|f| f.parse().ok()).ok_or_else(bad)?;
        let start = fields
            .get(19)
            .and_then(|f| f.parse().ok())
            .ok_or_else(bad)?;
        Ok((Process { pid, start }, ppid))
    }
}

/// Records in a live session's lock file (as [`hold`] returned it) the MCP client whose
/// conversation it is — the process that started `boxmaker mcp` on stdio — so that the
/// client's prompt hook, its child too, can find the session ([`sessions_of`],
/// docs/spec.md §3.10). Only the broker writes it, outside every box, before the front
/// reads the agent's first byte.
pub fn record_client(file: &File, client: Process) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::FileExt;
    file.set_len(0)?;
    let line = format!("client {} {}\n", client.pid, client.start);
    file.write_all_at(line.as_bytes(), 0)?;
    let mut f = file;
    f.flush()
}

/// The live connection sessions whose client (as [`record_client`] wrote it) is `client`,
/// in name order. A session whose lock no process holds is not live, and is left out; so is
/// anything in the directory that is not a session's lock file.
pub fn sessions_of(state: &Path, client: Process) -> Vec<String> {
    let Ok(dir) = Dir::own_existing(state).and_then(|d| d.sub(LIVE_DIR)) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(dir.path()) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| is_connection_session(n))
        .collect();
    names.sort();
    let want = format!("client {} {}\n", client.pid, client.start);
    names
        .into_iter()
        .filter(|name| {
            let Ok(Some(found)) = dir.read(name, 256) else {
                return false;
            };
            if found.bytes != want.as_bytes() {
                return false;
            }
            // Live: some process holds it (an exclusive try fails).
            match dir.open_file(name, Open::Existing, 0) {
                Ok(f) => matches!(f.try_lock(), Err(TryLockError::WouldBlock)),
                Err(_) => false,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: &str = "mcp-0123456789abcdef";

    #[test]
    fn a_session_is_live_while_any_copy_of_its_lock_is_open() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(ended(tmp.path(), S), "never held");
        let held = hold(tmp.path(), S).unwrap();
        let copy = held.try_clone().unwrap();
        assert!(!ended(tmp.path(), S));
        drop(held);
        assert!(
            !ended(tmp.path(), S),
            "a copy of the descriptor still holds it"
        );
        drop(copy);
        assert!(ended(tmp.path(), S));
        assert!(!tmp.path().join(LIVE_DIR).join(S).exists(), "its file goes");
    }

    #[test]
    fn only_connection_sessions_end_and_no_name_escapes_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        for name in [
            "s1",
            "mcp-short",
            "../mcp-0123456789abcdef",
            "mcp-0123456789abcdeg",
        ] {
            assert!(!ended(tmp.path(), name), "{name}");
            assert!(hold(tmp.path(), name).is_err(), "{name}");
        }
        assert!(is_connection_session(S));
    }

    #[test]
    fn a_session_is_found_by_its_client_only_while_live() {
        let tmp = tempfile::tempdir().unwrap();
        let (me, parent) = Process::of(std::process::id()).unwrap();
        assert_eq!(parent, std::os::unix::process::parent_id());
        let held = hold(tmp.path(), S).unwrap();
        record_client(&held, me).unwrap();
        let other = "mcp-fedcba9876543210";
        let held2 = hold(tmp.path(), other).unwrap();
        record_client(
            &held2,
            Process {
                pid: me.pid,
                start: me.start + 1,
            },
        )
        .unwrap();
        assert_eq!(sessions_of(tmp.path(), me), vec![S.to_string()]);
        drop(held);
        assert!(sessions_of(tmp.path(), me).is_empty(), "ended");
    }

    #[test]
    fn a_live_directory_that_is_a_link_is_never_written_or_emptied() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join(S), "theirs").unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::symlink(&elsewhere, state.join(LIVE_DIR)).unwrap();
        assert!(hold(&state, S).is_err());
        assert!(!ended(&state, S), "a doubt ends nothing");
        assert_eq!(
            std::fs::read_to_string(elsewhere.join(S)).unwrap(),
            "theirs"
        );
    }
}
