//! A new chain (docs/spec.md §6, "A new chain"): the way on when the gate refuses to start
//! because its log does not extend its checkpoints.
//!
//! Deliberate and audited, never automatic: a person runs `boxmaker audit new-chain`, with
//! the gate stopped (it holds the gate's lock) and the key (it signs). The log as found is
//! kept beside the new one, untouched; the new log's first record says what was refused,
//! where the old log is kept (its size and SHA-256), why and by whom; its second record is
//! the checkpoint of that first one, signed, and handed to every witness. Only that
//! signature makes the new log a new chain ([`super::ChainStart`]): anyone who can write the
//! state directory can write a `chain_restarted` record, nobody without the key the
//! checkpoint that covers it.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use proto::Timestamp;
use sha2::{Digest as _, Sha256};

use super::checkpoint::Checkpoint;
use super::key::AuditKey;
use super::witness::{self, Witness};
use super::{Checker, Known, Signatures};
use crate::audit::{AUDIT_FILE, AuditError, AuditLog, Event};

/// A new chain, started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewChain {
    /// Where the log as found is kept (`None`: there was no log).
    pub kept: Option<PathBuf>,
    /// Why the gate refused it (the sentence record 1 keeps).
    pub refused: String,
    /// The new chain's first checkpoint (of its record 1).
    pub checkpoint: Checkpoint,
    /// The witnesses that did not take it: who, and why.
    pub failed: Vec<(String, String)>,
}

/// Why no new chain was started.
#[derive(Debug, thiserror::Error)]
pub enum NewChainError {
    #[error(
        "the audit log {path} extends every checkpoint the gate knows of ({records} records): \
         the gate starts on it, there is no break to record, and no new chain was started"
    )]
    NoBreak { path: PathBuf, records: u64 },
    #[error("could not read the checkpoints the audit log is checked against: {0}")]
    Checkpoints(String),
    #[error(transparent)]
    Audit(#[from] AuditError),
    #[error("could not keep the audit log {} as {}: {source}", from.display(), to.display())]
    Keep {
        from: PathBuf,
        to: PathBuf,
        source: std::io::Error,
    },
}

/// Starts a new chain in `state_dir` (whose gate is stopped; the caller holds its lock),
/// if the gate would refuse its log: the log is kept as `audit.log.broken-TIME`, and a new
/// one begins with a `chain_restarted` record (`reason`, `by`) and its checkpoint, signed by
/// `key` at `now` and handed to the witnesses of `audit`.
pub fn new_chain(
    audit: &config::Audit,
    state_dir: &Path,
    key: &AuditKey,
    reason: &str,
    by: &str,
    now: Timestamp,
) -> Result<NewChain, NewChainError> {
    let known =
        Known::of(audit, state_dir, key.public().clone()).map_err(NewChainError::Checkpoints)?;
    let path = state_dir.join(AUDIT_FILE);
    let exists = path.symlink_metadata().is_ok();
    let refused = if exists {
        match AuditLog::check(state_dir, &known) {
            Ok(ok) => {
                return Err(NewChainError::NoBreak {
                    path,
                    records: ok.records,
                });
            }
            Err(AuditError::NotExtended { source, .. }) => source.to_string(),
            Err(e @ AuditError::Malformed { .. }) => e.to_string(),
            Err(e) => return Err(e.into()),
        }
    } else {
        // No log at all: the gate would make an empty one and refuse it the same way, if it
        // knows of a checkpoint.
        let checker = Checker::new(
            &path,
            &known.given,
            known.key.as_ref(),
            Signatures::OnMismatch,
            None,
        );
        match checker.and_then(|c| c.finish(0, crate::audit::Digest::ZERO)) {
            Ok(_) => return Err(NewChainError::NoBreak { path, records: 0 }),
            Err(e) => e.to_string(),
        }
    };
    let (kept, bytes, sha256) = if exists {
        let kept = keep(&path, now)?;
        let (bytes, sha256) = digest(&kept).map_err(|source| NewChainError::Keep {
            from: path.clone(),
            to: kept.clone(),
            source,
        })?;
        (Some(kept), bytes, sha256)
    } else {
        (None, 0, crate::audit::sha256_hex(b""))
    };
    let previous = kept
        .as_ref()
        .and_then(|k| k.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut log = AuditLog::create_checked(
        state_dir,
        &Known {
            key: Some(key.public().clone()),
            given: Vec::new(),
        },
    )?;
    log.append(
        now,
        Event::ChainRestarted {
            previous,
            bytes,
            sha256,
            refused: refused.clone(),
            reason: reason.to_string(),
            by: by.to_string(),
        },
    )?;
    let checkpoint = key.sign(log.head(), now);
    log.append(now, Event::checkpoint(&checkpoint))?;
    // Handed over here, by the command, as the gate's witness thread would: the state
    // directory's copy first, then each witness. This one does not extend the checkpoint
    // before it, and is the only one that may not: a person asked for it.
    let mut failed = Vec::new();
    if let Err(why) = witness::write_latest(state_dir, &checkpoint) {
        failed.push(("state".to_string(), why));
    }
    for w in Witness::from_config(audit) {
        if let Err(why) = w.deliver(&checkpoint) {
            failed.push((w.name(), why));
        }
    }
    for (witness, detail) in &failed {
        log.append(
            now,
            Event::WitnessFailed {
                tree_size: checkpoint.tree_size,
                witness: witness.clone(),
                detail: detail.clone(),
            },
        )?;
    }
    Ok(NewChain {
        kept,
        refused,
        checkpoint,
        failed,
    })
}

/// Moves `path` aside, as it is, to `path.broken-TIME` (`-2`, `-3`… if taken), never over
/// another file.
fn keep(path: &Path, now: Timestamp) -> Result<PathBuf, NewChainError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut n = 1u32;
    loop {
        let suffix = if n == 1 {
            format!("{name}.broken-{}", now.0)
        } else {
            format!("{name}.broken-{}-{n}", now.0)
        };
        let to = path.with_file_name(suffix);
        let err = |source| NewChainError::Keep {
            from: path.to_path_buf(),
            to: to.clone(),
            source,
        };
        match std::fs::hard_link(path, &to) {
            Ok(()) => {
                std::fs::remove_file(path).map_err(err)?;
                if let Some(dir) = path.parent() {
                    File::open(dir).and_then(|d| d.sync_all()).map_err(err)?;
                }
                return Ok(to);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 1000 => n += 1,
            Err(e) => return Err(err(e)),
        }
    }
}

/// A file's size and the SHA-256 of its bytes, as hex.
fn digest(path: &Path) -> std::io::Result<(u64, String)> {
    let mut file = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(buf.get(..n).unwrap_or_default());
        bytes += u64::try_from(n).unwrap_or(0);
    }
    Ok((bytes, crate::audit::Digest(h.finalize().into()).to_hex()))
}
