//! Which connection sessions are still open (docs/spec.md §6): a session `boxmaker mcp`
//! made for one MCP connection (`mcp-` and 16 hex digits, never made again) is *live* while
//! some process holds a shared lock on `STATE/live/SESSION`, and has *ended* once none does.
//! The lock is the kernel's (`flock`), so a client killed with SIGKILL lets go too, and no
//! goodbye message can be lost. The front's broker takes the lock when a session starts and
//! hands the front the descriptor; the front closes it when the session ends (the process
//! exits, or an HTTP session is deleted). The gate asks [`ended`] before it lists remembered
//! approvals, and ends those of sessions that have ended. The directory is the operator's
//! own (`0700`, in the state directory no box ever sees).

use std::fs::{File, OpenOptions, TryLockError};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The directory in the state directory that holds one lock file per live session.
pub const LIVE_DIR: &str = "live";

/// Whether `name` is a session `boxmaker mcp` made for one connection: `mcp-` and 16 hex
/// digits. Only these end; a session named by a person (`--session ID`) is never over.
pub fn is_connection_session(name: &str) -> bool {
    name.strip_prefix("mcp-")
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn file_of(state: &Path, session: &str) -> io::Result<PathBuf> {
    if !is_connection_session(session) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{session:?} is not a connection session (mcp- and 16 hex digits)"),
        ));
    }
    Ok(state.join(LIVE_DIR).join(session))
}

/// Marks `session` live for as long as the returned file (or a copy of its descriptor, in
/// any process) stays open.
pub fn hold(state: &Path, session: &str) -> io::Result<File> {
    let path = file_of(state, session)?;
    let dir = state.join(LIVE_DIR);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&path)?;
    file.lock_shared()?;
    Ok(file)
}

/// Whether connection session `session` has ended: no process holds it live (or it was
/// never held, which a session made by `boxmaker mcp` always is before its first call). A
/// session that has ended loses its lock file. A name that is not a connection session never
/// ends; an error other than "no such file" is taken as live (nothing is ended on a doubt).
pub fn ended(state: &Path, session: &str) -> bool {
    let Ok(path) = file_of(state, session) else {
        return false;
    };
    let file = match OpenOptions::new().read(true).open(&path) {
        Ok(f) => f,
        Err(e) => return e.kind() == io::ErrorKind::NotFound,
    };
    match file.try_lock() {
        Ok(()) => {
            // Nobody holds it, and nobody can take it while this lock is held: a name is
            // never made again, so the file can go.
            let _ = std::fs::remove_file(&path);
            true
        }
        Err(TryLockError::WouldBlock) => false,
        Err(TryLockError::Error(_)) => false,
    }
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
}
