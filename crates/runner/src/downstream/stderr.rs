//! A downstream server's stderr (docs/spec.md §4, "A server's stderr").
//!
//! Each server's stderr is read to its end by a thread of its own (a server that floods it
//! never blocks) and goes two places:
//!
//! - its log, for the operator: `STATE/logs/SESSION/SERVER.stderr` (discovery's under
//!   `STATE/logs/.discovery/`), a file only its owner may read (0600) in directories only it
//!   may enter (0700), in the state directory, which no box ever sees. It is bounded: once
//!   the file would pass [`LOG_MAX`] it is renamed `SERVER.stderr.1` (replacing the one
//!   before) and a new one is started, so at most twice that is kept, the newest part
//!   whole. A restarted server of the same session appends to it. `boxmaker tools log`
//!   prints it.
//! - its last [`TAIL`] bytes in memory, from which a failure that ended the server (it
//!   crashed, or could not start) quotes its last lines: at most [`SHOWN`] bytes, escaped as
//!   every text shown to a person is ([`proto::shown::for_person`]). A server's stderr may
//!   quote what its box read, so the caller withholds them by the same rule as anything
//!   else the server said (`fail` in `downstream::Runner::call`).
//!
//! The log is written on a best-effort basis: if it cannot be (a full disk), stderr is still
//! drained and its tail still kept.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use proto::SessionId;
use statedir::file::{Dir, Open};

/// The largest one log file grows before it is rotated (two are kept).
pub const LOG_MAX: u64 = 64 * 1024;
/// How much of a server's stderr is kept in memory, for its last lines.
pub const TAIL: usize = 4096;
/// The most bytes of last lines a failure carries (once escaped).
pub const SHOWN: usize = 400;
/// The directory, under `STATE/logs/`, of discovery's servers (a dot name: never a
/// session's, which starts with a letter or digit).
pub const DISCOVERY: &str = ".discovery";
/// The suffix of a log file; the older of the pair adds `.1`.
pub const SUFFIX: &str = ".stderr";

/// `STATE/logs`.
pub fn logs_dir(state: &Path) -> PathBuf {
    state.join("logs")
}

/// Where `server`'s stderr is kept for `session` (`None`: discovery).
pub fn log_path(state: &Path, session: Option<&SessionId>, server: &str) -> PathBuf {
    logs_dir(state)
        .join(session.map_or(DISCOVERY, SessionId::as_str))
        .join(format!("{server}{SUFFIX}"))
}

/// The older file of a log's pair.
pub fn older(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".1");
    PathBuf::from(s)
}

/// The command that prints it.
pub fn log_command(session: Option<&SessionId>, server: &str) -> String {
    match session {
        Some(s) => format!("boxmaker tools log {server} --session {}", s.as_str()),
        None => format!("boxmaker tools log {server} --discovery"),
    }
}

/// One server's stderr, as it is read.
#[derive(Debug)]
pub(crate) struct Stderr {
    tail: Mutex<Vec<u8>>,
    /// Whether it has been read to its end (every writer closed it).
    done: Mutex<bool>,
    done_cv: Condvar,
    /// Its log file.
    pub path: PathBuf,
    /// The command that prints it.
    pub command: String,
}

impl Stderr {
    /// Reads `r` to its end on a thread of its own, into `path`'s log and the tail.
    /// What it reads is redacted of every secret `redactor` knows before it is kept
    /// anywhere (docs/spec.md §3.8).
    pub fn drain(
        r: impl Read + Send + 'static,
        path: PathBuf,
        command: String,
        redactor: Arc<secrets::Redactor>,
    ) -> Arc<Self> {
        let me = Arc::new(Stderr {
            tail: Mutex::default(),
            done: Mutex::new(false),
            done_cv: Condvar::new(),
            path,
            command,
        });
        let it = me.clone();
        std::thread::spawn(move || it.read_all(r, redactor));
        me
    }

    /// The stderr of a server that has none (a remote one): empty, read to its end.
    pub fn none(path: PathBuf, command: String) -> Arc<Self> {
        Arc::new(Stderr {
            tail: Mutex::default(),
            done: Mutex::new(true),
            done_cv: Condvar::new(),
            path,
            command,
        })
    }

    fn read_all(&self, mut r: impl Read, redactor: Arc<secrets::Redactor>) {
        let mut log = Log::open(&self.path);
        let mut chunk = vec![0u8; 16 * 1024];
        let mut redact = secrets::StreamRedactor::new(redactor);
        let mut keep = |got: &[u8]| {
            if let Some(l) = log.as_mut()
                && l.write(got).is_err()
            {
                log = None;
            }
            let mut t = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
            t.extend_from_slice(got);
            if t.len() > TAIL {
                let cut = t.len() - TAIL;
                t.drain(..cut);
            }
        };
        loop {
            match r.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => keep(&redact.push(chunk.get(..n).unwrap_or_default())),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        keep(&redact.finish());
        *self.done.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.done_cv.notify_all();
    }

    /// Waits up to `limit` for it to be read to its end: once a server's box is gone, what
    /// it wrote last is read in a moment, and its last lines should hold it.
    pub fn settle(&self, limit: Duration) {
        let done = self.done.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = self
            .done_cv
            .wait_timeout_while(done, limit, |d| !*d)
            .unwrap_or_else(PoisonError::into_inner);
    }

    /// Whether the server has written anything to stderr yet.
    pub fn any(&self) -> bool {
        !self
            .tail
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
    }

    /// Its last lines, escaped, at most [`SHOWN`] bytes; `None` when it said nothing.
    pub fn last_lines(&self) -> Option<String> {
        let tail = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        last_lines(&tail, SHOWN)
    }

    /// Where the whole of it is: "`boxmaker tools log …` (PATH)".
    pub fn whereabouts(&self) -> String {
        format!("`{}` ({})", self.command, self.path.display())
    }
}

/// The last lines of `tail` (blank ones skipped) whose escaped text fits in `max` bytes,
/// escaped as one line; a last line longer than that alone is cut at its start (`…`).
pub(crate) fn last_lines(tail: &[u8], max: usize) -> Option<String> {
    let text = String::from_utf8_lossy(tail);
    // The first line of the tail may be cut: it is never quoted unless it is all there is.
    let mut lines: Vec<&str> = text.lines().collect();
    if lines.len() > 1 && tail.len() >= TAIL {
        lines.remove(0);
    }
    let mut taken: Vec<&str> = Vec::new();
    let mut used = 0usize;
    for line in lines.iter().rev().map(|l| l.trim_end()) {
        if line.trim().is_empty() {
            continue;
        }
        // Each line joined after the first costs its escaped newline (`\u{a}`, 6 bytes).
        let cost = proto::shown::for_person(line).text.len() + if taken.is_empty() { 0 } else { 6 };
        if used + cost > max {
            if taken.is_empty() {
                let shown = proto::shown::for_person(line).text;
                let mut from = shown.len().saturating_sub(max.saturating_sub(3));
                while !shown.is_char_boundary(from) {
                    from += 1;
                }
                return Some(format!("…{}", shown.get(from..).unwrap_or_default()));
            }
            break;
        }
        used += cost;
        taken.push(line);
    }
    if taken.is_empty() {
        return None;
    }
    taken.reverse();
    Some(proto::shown::for_person(&taken.join("\n")).text)
}

/// A log file being written, rotated at [`LOG_MAX`].
struct Log {
    dir: Dir,
    name: String,
    file: File,
    size: u64,
}

impl Log {
    /// Opens (creating) `path` — a [`log_path`], `STATE/logs/DIR/FILE` — to append, in
    /// private directories; `None` if it cannot be. Like every file of the state directory
    /// it is written the one way (`statedir::file`): a link where the state directory,
    /// `logs`, `DIR` or the file should be is never followed, and the log is not kept.
    fn open(path: &Path) -> Option<Log> {
        let name = path.file_name()?.to_str()?;
        let sub = path.parent()?;
        let sub_name = sub.file_name()?.to_str()?;
        let logs = sub.parent()?;
        let state = logs.parent()?;
        if logs.file_name()? != "logs" {
            return None;
        }
        let dir = Dir::own(state)
            .and_then(|d| d.sub_make("logs", 0o700))
            .and_then(|d| d.sub_make(sub_name, 0o700))
            .ok()?;
        let file = dir.open_file(name, Open::Append, 0o600).ok()?;
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        Some(Log {
            dir,
            name: name.to_string(),
            file,
            size,
        })
    }

    fn write(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        if self.size + bytes.len() as u64 > LOG_MAX {
            // A chunk larger than a whole file keeps only its end.
            if bytes.len() as u64 > LOG_MAX {
                let cut = bytes.len() - LOG_MAX as usize;
                bytes = bytes.get(cut..).unwrap_or_default();
            }
            if self.size > 0 {
                // Renamed in its directory (a link at the older name is replaced as a name,
                // never followed), then a new file, never through a link.
                self.dir.rename(&self.name, &format!("{}.1", self.name))?;
                self.file = self.dir.open_file(&self.name, Open::Truncate, 0o600)?;
                self.size = 0;
            }
        }
        self.file.write_all(bytes)?;
        self.size += bytes.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_last_lines_fit_and_are_escaped() {
        let got = last_lines(b"one\n\ntwo \x1b[31m\nthree\n\n", 400).unwrap();
        assert_eq!(got, "one\\u{a}two \\u{1b}[31m\\u{a}three");
        // Only the lines that fit, the newest kept.
        let got = last_lines(b"aaaaaaaaaa\nbbbbbbbbbb\ncccccccccc\n", 26).unwrap();
        assert_eq!(got, "bbbbbbbbbb\\u{a}cccccccccc");
        // One line longer than the room: its end.
        let long = format!("{}END", "x".repeat(1000));
        let got = last_lines(long.as_bytes(), 50).unwrap();
        assert!(got.starts_with('…') && got.ends_with("END"), "{got}");
        assert!(got.len() <= 50, "{}", got.len());
        assert_eq!(last_lines(b"  \n\n", 400), None);
        assert_eq!(last_lines(b"", 400), None);
    }

    #[test]
    fn a_log_is_private_and_bounded_and_keeps_its_newest_part() {
        let dir = tempfile::tempdir().unwrap();
        let path = log_path(dir.path(), None, "srv");
        let mut log = Log::open(&path).unwrap();
        for i in 0..20_000u32 {
            log.write(format!("line {i:05}\n").as_bytes()).unwrap();
        }
        log.write(&vec![b'z'; 3 * LOG_MAX as usize]).unwrap();
        log.write(b"\nlast\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        let now = std::fs::read(&path).unwrap();
        let before = std::fs::read(older(&path)).unwrap();
        assert!(now.len() as u64 <= LOG_MAX && before.len() as u64 <= LOG_MAX);
        // The flood filled one whole file, then the last line started the next.
        assert_eq!(now, b"\nlast\n");
        assert!(before.len() as u64 == LOG_MAX && before.iter().all(|&b| b == b'z'));
        for p in [&path, &older(&path)] {
            let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{}", p.display());
        }
        let mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o700);
    }

    #[test]
    fn a_log_is_never_written_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let state = dir.path().join("state");
        for link in ["logs", "logs/.discovery", "logs/.discovery/srv.stderr"] {
            let _ = std::fs::remove_dir_all(&state);
            let at = state.join(link);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(elsewhere.join("x"), &at).unwrap();
            assert!(
                Log::open(&log_path(&state, None, "srv")).is_none(),
                "{link}"
            );
            assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0, "{link}");
        }
        // Rotation renames in the directory: a link at the older name is replaced, its file
        // left alone.
        let _ = std::fs::remove_dir_all(&state);
        let path = log_path(&state, None, "srv");
        let mut log = Log::open(&path).unwrap();
        std::fs::write(elsewhere.join("theirs"), "theirs").unwrap();
        std::os::unix::fs::symlink(elsewhere.join("theirs"), older(&path)).unwrap();
        log.write(&vec![b'a'; LOG_MAX as usize]).unwrap();
        log.write(b"b").unwrap();
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("theirs")).unwrap(),
            "theirs"
        );
        assert!(std::fs::symlink_metadata(older(&path)).unwrap().is_file());
    }
}
