//! The witnesses: where each checkpoint goes, outside the state directory — a file and a
//! command the operator names in `[audit]`, and the system journal where one runs — and the
//! thread that hands them over, off the call path.
//!
//! A witness that fails never stops the gate, and is never silent: the failure is a line on
//! the gate's stderr and a `witness_failed` record in the log (docs/spec.md §6).

use std::io::{Read, Write};
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use statedir::file::{Dir, Mode, Open};

use super::checkpoint::Checkpoint;

/// Where systemd's journal takes native messages.
pub const JOURNAL_SOCKET: &str = "/run/systemd/journal/socket";

/// The name the journal files checkpoints under (`journalctl -t boxmaker-audit -o cat`
/// prints them one a line, as `audit verify --checkpoint` reads them).
pub const JOURNAL_IDENTIFIER: &str = "boxmaker-audit";

/// How long a witness command may take before it is killed and counted as failed.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// The gate's own copy of its latest checkpoint, in the state directory. Not a witness (it
/// sits beside the log it vouches for); `boxmaker audit checkpoint` prints it.
pub const LATEST_FILE: &str = "audit.checkpoint";

/// The most of a failing command's stderr that its failure quotes.
const STDERR_MAX: usize = 1024;

/// One witness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Witness {
    /// Each checkpoint appended to this file as one line, then `fdatasync`.
    File(PathBuf),
    /// This command run once per checkpoint with the line (and `\n`) on its stdin; it took
    /// the checkpoint when it exits 0 within [`COMMAND_TIMEOUT`].
    Command(Vec<String>),
    /// A native journal message on this socket, when the socket exists.
    Journal(PathBuf),
    /// A replica of a fleet: each checkpoint published in the shared store (`audit_heads`,
    /// under the replica's key), where a fleet checkpoint gathers every replica's latest
    /// (`boxmaker audit fleet`). Not a witness a database administrator cannot touch — the
    /// fleet checkpoint, kept outside the database, is; the store only carries the signed
    /// line there.
    Fleet {
        /// The store's URL (`[gate] store`).
        store: String,
        /// The replica's public key (64 hex digits), which checks the line.
        public_key: String,
    },
}

/// A witness took the checkpoint, or there was none to take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    Taken,
    /// The journal's socket does not exist: no journal runs here.
    Absent,
}

impl Witness {
    /// The witnesses `[audit]` names.
    pub fn from_config(audit: &config::Audit) -> Vec<Witness> {
        let mut out = Vec::new();
        if let Some(path) = &audit.witness_file {
            out.push(Witness::File(path.clone()));
        }
        if let Some(argv) = &audit.witness_command {
            out.push(Witness::Command(argv.clone()));
        }
        if audit.journal {
            out.push(Witness::Journal(PathBuf::from(JOURNAL_SOCKET)));
        }
        out
    }

    /// How a person names it.
    pub fn name(&self) -> String {
        match self {
            Witness::File(p) => format!("file {}", p.display()),
            Witness::Command(argv) => format!("command {}", argv.join(" ")),
            Witness::Journal(_) => "journal".into(),
            Witness::Fleet { .. } => "the fleet's store".into(),
        }
    }

    /// Hands `cp` over; the error says why it did not take it.
    pub fn deliver(&self, cp: &Checkpoint) -> Result<Delivered, String> {
        let line = cp.to_line();
        match self {
            Witness::File(path) => append_line(path, &line).map(|()| Delivered::Taken),
            Witness::Command(argv) => {
                run_command(argv, &line, COMMAND_TIMEOUT).map(|()| Delivered::Taken)
            }
            Witness::Journal(socket) => journal(socket, cp, &line),
            Witness::Fleet { store, public_key } => {
                let target = crate::store::PgTarget::from_url(store)?;
                crate::store::Store::open_shared(&target)
                    .and_then(|mut s| {
                        s.publish_audit_head(
                            &cp.key_id.to_hex(),
                            public_key,
                            cp.tree_size,
                            &line,
                            cp.time,
                        )
                    })
                    .map(|()| Delivered::Taken)
                    .map_err(|e| e.to_string())
            }
        }
    }
}

/// Appends `line` to the witness file, made `0600` when missing, never through a link at
/// its name (its directory is the operator's, as they named it).
pub fn append_line(path: &Path, line: &str) -> Result<(), String> {
    let (dir, name) = match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(d), Some(n)) => (
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            },
            n,
        ),
        _ => return Err("it names no file".into()),
    };
    let mut f = Dir::open(dir)
        .and_then(|d| d.open_file(name, Open::Append, 0o600))
        .map_err(|e| format!("could not open it: {e}"))?;
    f.write_all(format!("{line}\n").as_bytes())
        .map_err(|e| format!("could not write to it: {e}"))?;
    f.sync_data()
        .map_err(|e| format!("could not make it durable (fdatasync): {e}"))
}

fn run_command(argv: &[String], line: &str, timeout: Duration) -> Result<(), String> {
    let (program, args) = argv.split_first().ok_or("it is empty")?;
    // Its own process group, so that a timeout kills whatever it started too (a shell's
    // children would otherwise hold its stderr open).
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("could not start it: {e}"))?;
    // Its stderr is read on a thread of its own, so a chatty command cannot block on a full
    // pipe while we wait for it.
    let (said_tx, said_rx) = mpsc::channel();
    if let Some(mut err) = child.stderr.take() {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let room = STDERR_MAX.saturating_sub(kept.len());
                kept.extend_from_slice(buf.get(..n.min(room)).unwrap_or_default());
            }
            let _ = said_tx.send(kept);
        });
    }
    let wrote = child.stdin.take().map(|mut stdin| {
        // A command that does not read its stdin has not taken the checkpoint; that shows
        // as a failed write here, or as its exit status below.
        stdin.write_all(format!("{line}\n").as_bytes())
    });
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if Instant::now() >= deadline => {
                let _ = rustix::process::kill_process_group(
                    rustix::process::Pid::from_child(&child),
                    rustix::process::Signal::KILL,
                );
                let _ = child.kill();
                let _ = child.wait();
                break Err(format!(
                    "it did not finish within {} ms and was killed",
                    timeout.as_millis()
                ));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => break Err(format!("could not wait for it: {e}")),
        }
    };
    // Something it left running may hold its stderr open: what came so far is enough.
    let said = said_rx
        .recv_timeout(Duration::from_millis(500))
        .map(|b| String::from_utf8_lossy(&b).trim().replace('\n', " / "))
        .unwrap_or_default();
    let status = status?;
    if !status.success() {
        return Err(if said.is_empty() {
            format!("it exited with {status}")
        } else {
            format!("it exited with {status}: {said}")
        });
    }
    if let Some(Err(e)) = wrote {
        return Err(format!("it did not read the checkpoint on its stdin: {e}"));
    }
    Ok(())
}

/// One datagram in the journal's native protocol: `KEY=value` lines (no value here holds a
/// newline: the checkpoint line is JSON of numbers and hex).
fn journal(socket: &Path, cp: &Checkpoint, line: &str) -> Result<Delivered, String> {
    if !socket.exists() {
        return Ok(Delivered::Absent);
    }
    let message = format!(
        "MESSAGE={line}\nSYSLOG_IDENTIFIER={JOURNAL_IDENTIFIER}\nPRIORITY=6\n\
         BOXMAKER_TREE_SIZE={}\nBOXMAKER_ROOT={}\nBOXMAKER_KEY_ID={}\n",
        cp.tree_size, cp.root, cp.key_id
    );
    let sock = UnixDatagram::unbound().map_err(|e| format!("could not make a socket: {e}"))?;
    sock.send_to(message.as_bytes(), socket)
        .map_err(|e| format!("could not send to {}: {e}", socket.display()))?;
    Ok(Delivered::Taken)
}

/// Replaces `STATE/audit.checkpoint` with `cp` (written whole, then renamed into place;
/// never through a link: `statedir::file`). A state directory removed under a running gate
/// is not made again (and marked) for it: the checkpoint is then not written, and says so.
pub fn write_latest(state_dir: &Path, cp: &Checkpoint) -> Result<(), String> {
    let path = state_dir.join(LATEST_FILE);
    Dir::own_existing(state_dir)
        .and_then(|d| {
            d.replace(
                LATEST_FILE,
                format!("{}\n", cp.to_line()).as_bytes(),
                Mode::Private,
            )
        })
        .map_err(|e| format!("could not write {}: {e}", path.display()))
}

/// The latest checkpoint the gate of `state_dir` wrote, if any.
pub fn read_latest(state_dir: &Path) -> Result<Option<Checkpoint>, String> {
    let path = state_dir.join(LATEST_FILE);
    let found = match Dir::own_existing(state_dir).and_then(|d| d.read(LATEST_FILE, 1 << 20)) {
        Ok(f) => f,
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(format!("could not read {}: {e}", path.display())),
    };
    let Some(found) = found else {
        return Ok(None);
    };
    Checkpoint::parse(&String::from_utf8_lossy(&found.bytes))
        .map(Some)
        .map_err(|why| format!("{} is not a checkpoint: {why}", path.display()))
}

/// The last checkpoint in the witness file at `path`, if its last line (blank lines and `#`
/// lines skipped) is one. Reads the file's end only.
pub fn last_in_file(path: &Path) -> Option<Checkpoint> {
    use std::io::{Seek, SeekFrom};
    const TAIL: u64 = 64 * 1024;
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(TAIL))).ok()?;
    let mut tail = Vec::new();
    f.read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let line = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('#'))?;
    Checkpoint::parse(line).ok()
}

/// Why a checkpoint writer did not write `cp` after `found`: `found` is a checkpoint the log
/// is not known to extend (docs/spec.md §6, "The writer").
fn not_after(found: &Checkpoint, cp: &Checkpoint, place: &str) -> String {
    format!(
        "{place} a checkpoint of {} records (signed at {}, key {}) that this log does not \
         extend, so the checkpoint of {} records was not written there: it would stand in for \
         the evidence of a log that was cut or rewritten (see `boxmaker audit verify`)",
        found.tree_size, found.time.0, found.key_id, cp.tree_size
    )
}

/// A witness that did not take a checkpoint, for the gate to audit.
pub type OnFailure = Box<dyn Fn(&Checkpoint, &str, &str) + Send>;

/// Whether the gate's log is known to extend a checkpoint (`AuditLog::extends`): asked of
/// the checkpoint a witness that can be read back holds before another is written there.
pub type ExtendsFn = Box<dyn Fn(&Checkpoint) -> bool + Send>;

enum Job {
    Deliver(Checkpoint),
    Flush(mpsc::SyncSender<()>),
}

/// The thread that hands checkpoints to the witnesses, one after another, in order.
#[derive(Debug)]
pub struct WitnessQueue {
    tx: mpsc::Sender<Job>,
}

impl WitnessQueue {
    /// Starts the thread. `state_dir` gets the latest checkpoint ([`LATEST_FILE`]) first;
    /// then each witness. `on_failure(checkpoint, witness, why)` is called for each one that
    /// did not take it. The thread ends when the queue is dropped.
    ///
    /// The two that can be read back, the state directory's copy and a witness file, are
    /// read first: a checkpoint is never written over or after one the log is not known to
    /// extend (`extends`; docs/spec.md §6, "The writer"). That one is left in place, and the
    /// refusal is a failure like any other.
    pub fn start(
        state_dir: PathBuf,
        witnesses: Vec<Witness>,
        extends: ExtendsFn,
        on_failure: OnFailure,
    ) -> std::io::Result<WitnessQueue> {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("gate-witness".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Deliver(cp) => {
                            match read_latest(&state_dir) {
                                Ok(Some(found)) if !extends(&found) => on_failure(
                                    &cp,
                                    "state",
                                    &not_after(
                                        &found,
                                        &cp,
                                        &format!("{} holds", state_dir.join(LATEST_FILE).display()),
                                    ),
                                ),
                                _ => {
                                    if let Err(why) = write_latest(&state_dir, &cp) {
                                        on_failure(&cp, "state", &why);
                                    }
                                }
                            }
                            for w in &witnesses {
                                if let Witness::File(path) = w
                                    && let Some(found) = last_in_file(path)
                                    && !extends(&found)
                                {
                                    let why = not_after(&found, &cp, "its last line is");
                                    on_failure(&cp, &w.name(), &why);
                                    continue;
                                }
                                if let Err(why) = w.deliver(&cp) {
                                    on_failure(&cp, &w.name(), &why);
                                }
                            }
                        }
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })?;
        Ok(WitnessQueue { tx })
    }

    /// Queues `cp` for every witness.
    pub fn send(&self, cp: Checkpoint) {
        let _ = self.tx.send(Job::Deliver(cp));
    }

    /// Waits until every checkpoint queued before now was handed over (or `timeout`
    /// passed); whether it was.
    pub fn flush(&self, timeout: Duration) -> bool {
        let (done, wait) = mpsc::sync_channel(1);
        self.tx.send(Job::Flush(done)).is_ok() && wait.recv_timeout(timeout).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(script: &str) -> Vec<String> {
        ["sh", "-c", script].map(String::from).to_vec()
    }

    #[test]
    fn a_command_gets_the_line_on_stdin_and_its_failures_are_said() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("got");
        let script = format!("cat > {}", out.display());
        run_command(&argv(&script), "{\"a\":1}", Duration::from_secs(10)).unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "{\"a\":1}\n");
        let err =
            run_command(&argv("echo full >&2; exit 4"), "x", Duration::from_secs(10)).unwrap_err();
        assert!(
            err.contains("exit status: 4") && err.contains("full"),
            "{err}"
        );
        let err = run_command(
            &["/no/such/program".to_string()],
            "x",
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(err.contains("could not start it"), "{err}");
    }

    /// Attack: a link where the witness file, or the latest checkpoint, goes (`.boxmaker/`
    /// and the config's directory are the repository's): never written through.
    #[test]
    fn a_witness_file_or_checkpoint_that_is_a_link_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("bashrc");
        std::fs::write(&victim, "export IMPORTANT=1\n").unwrap();
        let witness = dir.path().join("witness.log");
        std::os::unix::fs::symlink(&victim, &witness).unwrap();
        let e = append_line(&witness, "{}").unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        append_line(&dir.path().join("real.log"), "{}").unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::os::unix::fs::symlink(&victim, state.join(LATEST_FILE)).unwrap();
        assert!(read_latest(&state).unwrap_err().contains("symbolic link"));
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "export IMPORTANT=1\n"
        );
    }

    #[test]
    fn a_command_that_hangs_is_killed() {
        let err = run_command(&argv("sleep 30"), "x", Duration::from_millis(200)).unwrap_err();
        assert!(err.contains("did not finish within 200 ms"), "{err}");
    }
}
