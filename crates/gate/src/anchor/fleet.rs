//! A fleet checkpoint (docs/spec.md §6, "The audit trail of a fleet"): one signed statement
//! over every replica's latest signed checkpoint, kept outside the database.
//!
//! Each replica of a fleet keeps its own hash chain and signs its own checkpoints; it also
//! publishes each one in the shared store (`audit_heads`, the `Fleet` witness). `boxmaker
//! audit fleet` gathers them: it checks every published line against the public key beside
//! it (a line the store forged or changed is refused, naming the replica), checks that the
//! heads follow the last fleet checkpoint of the file it appends to (no replica gone, none
//! gone back), and appends one line that binds them all, signed by the audit key of the
//! replica it runs on. A replica's `audit verify --fleet FILE` then checks its own log
//! against its head in every fleet checkpoint: the fleet's history is the replicas' chains,
//! each extending the head the fleet vouched for at each time.
//!
//! What the database can do, and what shows: it carries only signed lines, so it cannot
//! forge a head; it can hide a replica or hand back an older head, which the next `audit
//! fleet` refuses against the file; it can add a replica of a key of its own, which the
//! fleet checkpoint then lists by key for a person to see.
//!
//! # The line
//! Compact JSON, these fields in this order: `fleet` (`"v1"`), `time`, `heads` (each
//! `public_key`, 64 hex, and `checkpoint`, the replica's checkpoint as its witnesses keep
//! it; by key id), `signer` (the public key, 64 hex), `signature` (128 hex): pure Ed25519
//! over [`FleetCheckpoint::message`]:
//! ```text
//! boxmaker fleet checkpoint v1\n
//! time <decimal>\n
//! head <public key hex> <the checkpoint's line>\n      (one a replica, by key id)
//! signer <public key hex>\n
//! ```

use serde::{Deserialize, Serialize};

use proto::Timestamp;

use super::checkpoint::{Checkpoint, Signature};
use super::key::{AuditKey, PublicKey};

const HEADER: &str = "boxmaker fleet checkpoint v1";

/// One replica's head in a fleet checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetHead {
    pub public_key: String,
    pub checkpoint: Checkpoint,
}

/// A fleet checkpoint, as its file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetCheckpoint {
    pub fleet: String,
    pub time: Timestamp,
    pub heads: Vec<FleetHead>,
    pub signer: String,
    pub signature: Signature,
}

/// What is wrong with a fleet's heads or its file, in a sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FleetError {
    #[error(
        "the store's audit checkpoint of replica {key_id} is not one its key signed ({why}): \
         the store was changed"
    )]
    Forged { key_id: String, why: String },
    #[error(
        "replica {key_id} had a fleet checkpoint's head of {before} records and the store \
         now has {now}{}: the store was changed, or the replica started a new chain (`audit \
         new-chain`)",
        if .now == .before { " with another root" } else { "" }
    )]
    Back {
        key_id: String,
        before: u64,
        now: u64,
    },
    #[error(
        "replica {key_id} is in the last fleet checkpoint and not in the store: the store \
         was changed"
    )]
    Gone { key_id: String },
    #[error("line {line} of {file}: {why}")]
    Line {
        file: String,
        line: usize,
        why: String,
    },
}

impl FleetCheckpoint {
    /// The bytes the signature covers.
    pub fn message(time: Timestamp, heads: &[FleetHead], signer: &str) -> Vec<u8> {
        let mut m = format!("{HEADER}\ntime {}\n", time.0);
        for h in heads {
            m.push_str(&format!(
                "head {} {}\n",
                h.public_key,
                h.checkpoint.to_line()
            ));
        }
        m.push_str(&format!("signer {signer}\n"));
        m.into_bytes()
    }

    /// Signs `heads` (sorted here by key id) as of `time`.
    pub fn sign(key: &AuditKey, time: Timestamp, mut heads: Vec<FleetHead>) -> FleetCheckpoint {
        heads.sort_by_key(|h| h.checkpoint.key_id.to_hex());
        let signer = key.public().to_hex();
        let signature = key.sign_message(&FleetCheckpoint::message(time, &heads, &signer));
        FleetCheckpoint {
            fleet: "v1".into(),
            time,
            heads,
            signer,
            signature,
        }
    }

    /// The line its file keeps: compact JSON, no `\n`.
    pub fn to_line(&self) -> String {
        // Numbers and hex strings only: encoding cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Checks its signature and every head's; the error says which failed.
    pub fn verify(&self) -> Result<(), String> {
        if self.fleet != "v1" {
            return Err(format!("it is version {:?}, not v1", self.fleet));
        }
        let signer = PublicKey::from_hex(&self.signer).map_err(|e| e.to_string())?;
        if !signer.verifies(
            &FleetCheckpoint::message(self.time, &self.heads, &self.signer),
            &self.signature,
        ) {
            return Err(format!(
                "its signature is not one of key {}",
                signer.id().to_hex()
            ));
        }
        let mut last = None;
        for h in &self.heads {
            let id = h.checkpoint.key_id.to_hex();
            check_head(h).map_err(|why| format!("replica {id}: {why}"))?;
            if last.as_ref().is_some_and(|l: &String| *l >= id) {
                return Err("its heads are not one a replica, by key id".into());
            }
            last = Some(id);
        }
        Ok(())
    }
}

/// Whether `h`'s checkpoint was signed by the key beside it.
fn check_head(h: &FleetHead) -> Result<(), String> {
    let key = PublicKey::from_hex(&h.public_key).map_err(|e| e.to_string())?;
    if !key.signed(&h.checkpoint) {
        return Err("its checkpoint is not signed by its public key".into());
    }
    Ok(())
}

/// The heads the store published (`(key id, public key, line)` rows), each checked: the
/// line parses, its key id is the row's and its key's, and its key signed it.
pub fn gather(rows: &[(String, String, String)]) -> Result<Vec<FleetHead>, FleetError> {
    rows.iter()
        .map(|(key_id, public_key, line)| {
            let forged = |why: String| FleetError::Forged {
                key_id: key_id.clone(),
                why,
            };
            let checkpoint = Checkpoint::parse(line).map_err(&forged)?;
            let head = FleetHead {
                public_key: public_key.clone(),
                checkpoint,
            };
            if head.checkpoint.key_id.to_hex() != *key_id {
                return Err(forged("it is filed under another key id".into()));
            }
            check_head(&head).map_err(forged)?;
            Ok(head)
        })
        .collect()
}

/// Whether `heads` follow `before`: every replica in it is still there, none with fewer
/// records, none with the same number under another root.
pub fn follows(before: &FleetCheckpoint, heads: &[FleetHead]) -> Result<(), FleetError> {
    for old in &before.heads {
        let key_id = old.checkpoint.key_id.to_hex();
        let Some(new) = heads
            .iter()
            .find(|h| h.checkpoint.key_id == old.checkpoint.key_id)
        else {
            return Err(FleetError::Gone { key_id });
        };
        let (b, n) = (&old.checkpoint, &new.checkpoint);
        if n.tree_size < b.tree_size || (n.tree_size == b.tree_size && n.root != b.root) {
            return Err(FleetError::Back {
                key_id,
                before: b.tree_size,
                now: n.tree_size,
            });
        }
    }
    Ok(())
}

/// Every fleet checkpoint of a file's text (one a line; blank and `#` lines skipped), each
/// with its line number, each verified and each following the one before.
pub fn read_all(text: &str, file: &str) -> Result<Vec<(usize, FleetCheckpoint)>, FleetError> {
    let mut out: Vec<(usize, FleetCheckpoint)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |why: String| FleetError::Line {
            file: file.to_string(),
            line: i + 1,
            why,
        };
        let fc: FleetCheckpoint =
            serde_json::from_str(line).map_err(|e| at(format!("not a fleet checkpoint: {e}")))?;
        fc.verify().map_err(&at)?;
        if let Some((_, before)) = out.last() {
            follows(before, &fc.heads).map_err(|e| at(e.to_string()))?;
        }
        out.push((i + 1, fc));
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::anchor::checkpoint::Head;
    use crate::audit::Digest;

    fn key(dir: &std::path::Path, name: &str) -> AuditKey {
        AuditKey::load_or_create(&dir.join(name)).unwrap()
    }

    fn head(k: &AuditKey, size: u64, root: u8) -> FleetHead {
        let cp = k.sign(
            Head {
                tree_size: size,
                root: Digest([root; 32]),
                last_seq: size,
                last_hash: Digest([root ^ 1; 32]),
            },
            Timestamp(100 + size),
        );
        FleetHead {
            public_key: k.public().to_hex(),
            checkpoint: cp,
        }
    }

    fn row(h: &FleetHead) -> (String, String, String) {
        (
            h.checkpoint.key_id.to_hex(),
            h.public_key.clone(),
            h.checkpoint.to_line(),
        )
    }

    #[test]
    fn a_fleet_checkpoint_round_trips_and_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (key(dir.path(), "a"), key(dir.path(), "b"));
        let heads = gather(&[row(&head(&a, 3, 7)), row(&head(&b, 5, 9))]).unwrap();
        let fc = FleetCheckpoint::sign(&a, Timestamp(200), heads);
        let back: FleetCheckpoint = serde_json::from_str(&fc.to_line()).unwrap();
        assert_eq!(back, fc);
        back.verify().unwrap();
        // Changing any head, or the time, breaks the signature.
        let mut changed = back.clone();
        changed.time = Timestamp(201);
        assert!(changed.verify().is_err());
        let mut changed = back;
        changed.heads[0] = head(&a, 4, 7);
        changed.heads.sort_by_key(|h| h.checkpoint.key_id.to_hex());
        assert!(changed.verify().is_err());
    }

    #[test]
    fn the_store_cannot_forge_swap_hide_or_roll_back_a_head() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, dba) = (
            key(dir.path(), "a"),
            key(dir.path(), "b"),
            key(dir.path(), "dba"),
        );
        // A line changed in place: its signature fails.
        let mut forged = row(&head(&a, 3, 7));
        forged.2 = forged.2.replace("\"tree_size\":3", "\"tree_size\":30");
        assert!(matches!(gather(&[forged]), Err(FleetError::Forged { .. })));
        // A head signed by a key of the store's own, filed under replica a's id.
        let mut swapped = row(&head(&dba, 3, 7));
        swapped.0 = a.public().id().to_hex();
        assert!(matches!(gather(&[swapped]), Err(FleetError::Forged { .. })));
        // Replica a's line beside another public key.
        let mut other_key = row(&head(&a, 3, 7));
        other_key.1 = dba.public().to_hex();
        assert!(matches!(
            gather(&[other_key]),
            Err(FleetError::Forged { .. })
        ));
        let before = FleetCheckpoint::sign(&a, Timestamp(1), vec![head(&a, 3, 7), head(&b, 5, 9)]);
        // Hidden, gone back, or the same size under another root.
        assert!(matches!(
            follows(&before, &[head(&a, 3, 7)]),
            Err(FleetError::Gone { .. })
        ));
        assert!(matches!(
            follows(&before, &[head(&a, 2, 7), head(&b, 5, 9)]),
            Err(FleetError::Back { .. })
        ));
        assert!(matches!(
            follows(&before, &[head(&a, 3, 8), head(&b, 5, 9)]),
            Err(FleetError::Back { .. })
        ));
        // Grown, and a new replica beside: follows.
        follows(&before, &[head(&a, 4, 1), head(&b, 5, 9), head(&dba, 1, 1)]).unwrap();
    }

    #[test]
    fn a_file_whose_checkpoints_do_not_follow_is_refused_at_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let a = key(dir.path(), "a");
        let first = FleetCheckpoint::sign(&a, Timestamp(1), vec![head(&a, 5, 1)]);
        let second = FleetCheckpoint::sign(&a, Timestamp(2), vec![head(&a, 4, 1)]);
        let text = format!("# note\n{}\n\n{}\n", first.to_line(), second.to_line());
        match read_all(&text, "f") {
            Err(FleetError::Line { line: 4, .. }) => {}
            other => panic!("{other:?}"),
        }
        let good = FleetCheckpoint::sign(&a, Timestamp(2), vec![head(&a, 6, 1)]);
        let text = format!("{}\n{}\n", first.to_line(), good.to_line());
        assert_eq!(read_all(&text, "f").unwrap().len(), 2);
    }
}
