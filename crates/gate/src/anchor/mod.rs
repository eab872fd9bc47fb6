//! The audit log's anchor (docs/spec.md §6): signed checkpoints of the log's head, handed
//! to witnesses outside the state directory, and the verification of a log against them.
//!
//! The hash chain of [`crate::audit`] finds a record changed in place. It cannot find a log
//! cut short, nor one rewritten by someone who recomputed every hash after the change: the
//! result is a chain that holds. So the gate **signs its head** every so often and gives the
//! signature to someone else; a log that does not extend a checkpoint taken before is then
//! found, whatever its chain says.
//!
//! # The tree
//! [`tree::Tree`] is the Merkle tree of RFC 6962 §2.1 over the log's records, in order: leaf
//! `i` is `SHA-256(0x00 ‖ line_i)` where `line_i` is the record's line exactly as stored,
//! without its `\n`; a node is `SHA-256(0x01 ‖ left ‖ right)`; the empty tree's root is
//! `SHA-256()` of nothing.
//!
//! # A checkpoint
//! [`Checkpoint`]: `tree_size` (records `1..=tree_size`), `root` (the tree's), `last_seq`
//! (always `tree_size`), `last_hash` (that record's chain hash), `time` (the gate's clock),
//! `key_id` (the first 8 bytes of SHA-256 of the Ed25519 public key) and `signature`: pure
//! Ed25519 (RFC 8032) over the seven lines of [`Checkpoint::signed_bytes`]:
//! ```text
//! boxmaker audit checkpoint v1\n
//! tree_size <decimal>\n   root <64 hex>\n   last_seq <decimal>\n   last_hash <64 hex>\n
//! time <decimal>\n   key_id <16 hex>\n
//! ```
//! (one field a line, in this order, hex lower-case). A witness keeps a checkpoint as one
//! line of JSON, these fields in this order and `signature` last (128 hex).
//!
//! # When
//! The gate signs when `[audit] checkpoint_every` records have come since the last
//! checkpoint (right after the write that brought them, under the log's lock), when
//! `checkpoint_secs` have passed and records came meanwhile, and when it stops. Then it
//! appends a `checkpoint` record holding the checkpoint (so the log says where it was
//! anchored, and that record is covered by the next checkpoint), and queues the checkpoint
//! for the witnesses ([`witness`]). The records of the anchor itself (`checkpoint`,
//! `witness_failed`) do not count toward the next one, so an idle gate stays idle.
//!
//! # Verify
//! [`verify`] reads the whole log once: the chain as [`crate::audit::verify`] does, the tree
//! as it grows, and at each given checkpoint's size the root and the last hash; every
//! `checkpoint` record in the log is checked too (its signature, that it covers exactly the
//! records before it, its root). A log shorter than a checkpoint was cut (the first missing
//! record is named); a root that differs names the first record that can differ: the one
//! after the largest checkpoint the log did match (exact when checkpoints are adjacent, a
//! range otherwise: a root cannot say which of its leaves changed).
//!
//! The key ([`key`]) lives outside the state directory; who can read it can sign, so it is
//! `0600` and never inside a mount.

pub mod chain;
pub mod checkpoint;
pub mod fleet;
pub mod key;
pub mod tree;
mod verify;
pub mod witness;

use std::path::Path;
use std::time::Duration;

pub use checkpoint::{Checkpoint, Head, KeyId, NotACheckpoint, Signature};
pub use key::{AuditKey, KeyError, PublicKey, read_public};
pub use verify::{
    AnchorError, AnchorOk, ChainStart, Checked, Checker, Extends, Given, Signatures, current_chain,
    verify,
};
pub use witness::{Witness, WitnessQueue};

/// How a gate anchors its log: the key that signs, when, and who is handed each checkpoint.
#[derive(Debug)]
pub struct Anchor {
    pub key: AuditKey,
    /// A checkpoint once this many records wait for one.
    pub every: u64,
    /// A checkpoint once this long has passed since the last, if records came meanwhile.
    pub period: Duration,
    pub witnesses: Vec<Witness>,
}

impl Anchor {
    /// The anchor `[audit]` describes; reads the key, or makes it on first use.
    pub fn from_config(audit: &config::Audit) -> Result<Anchor, KeyError> {
        Ok(Anchor {
            key: AuditKey::load_or_create(&audit.key)?,
            every: audit.checkpoint_every,
            period: Duration::from_secs(audit.checkpoint_secs),
            witnesses: Witness::from_config(audit),
        })
    }
}

/// What a gate checks its log against when it starts (docs/spec.md §6, "At start"): the
/// checkpoints it can read back ([`configured`]: the witness file's, the state directory's
/// latest) and the key that signs them, which also checks the log's own `checkpoint`
/// records. A witness command and the journal cannot be read back: they are not here.
#[derive(Debug, Clone, Default)]
pub struct Known {
    pub key: Option<PublicKey>,
    pub given: Vec<Given>,
}

impl Known {
    /// Nothing: a log opened alone, checked against nothing.
    pub fn none() -> Known {
        Known::default()
    }

    /// What the gate of `state_dir` knows, under `[audit]` and the key `key` signs with.
    pub fn of(audit: &config::Audit, state_dir: &Path, key: PublicKey) -> Result<Known, String> {
        Ok(Known {
            given: configured(audit, state_dir)?,
            key: Some(key),
        })
    }
}

/// The checkpoints a gate's config knows of: every line of `[audit] witness_file` (when it
/// exists) and the state directory's latest ([`witness::LATEST_FILE`]). Either may be
/// missing (no checkpoint was signed yet); one that cannot be read or parsed is an error.
pub fn configured(audit: &config::Audit, state_dir: &Path) -> Result<Vec<Given>, String> {
    let mut out = Vec::new();
    if let Some(path) = &audit.witness_file {
        match std::fs::read_to_string(path) {
            Ok(text) => out.extend(from_text(&text, &path.display().to_string())?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(format!(
                    "could not read the witness file {}: {e}",
                    path.display()
                ));
            }
        }
    }
    if let Some(cp) = witness::read_latest(state_dir)? {
        out.push(Given {
            origin: format!(
                "the latest checkpoint in {}",
                state_dir.join(witness::LATEST_FILE).display()
            ),
            checkpoint: cp,
        });
    }
    Ok(out)
}

/// The checkpoints of a file's text (one a line; `#` lines and blank ones skipped), each
/// named by its line: `line 3 of FILE`.
pub fn from_text(text: &str, origin: &str) -> Result<Vec<Given>, String> {
    Ok(Checkpoint::parse_all(text, origin)
        .map_err(|e| e.to_string())?
        .into_iter()
        .map(|(line, checkpoint)| Given {
            origin: format!("the checkpoint on line {line} of {origin}"),
            checkpoint,
        })
        .collect())
}
