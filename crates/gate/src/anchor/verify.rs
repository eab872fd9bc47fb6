//! A log checked against signed checkpoints: does it extend each of them?

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::checkpoint::Checkpoint;
use super::key::PublicKey;
use super::tree::{Tree, empty_root};
use crate::audit::{ChainReader, Digest, VerifyError};

/// A checkpoint to check the log against, and where it came from (`line 3 of FILE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Given {
    pub origin: String,
    pub checkpoint: Checkpoint,
}

/// A log that verified: its chain holds and it extends every checkpoint it was checked
/// against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchorOk {
    pub records: u64,
    /// The last record's hash (zeros for an empty log).
    pub last_hash: Digest,
    /// The root of the tree over the whole log.
    pub root: Digest,
    /// How many given checkpoints it extends.
    pub given: u64,
    /// How many of its own `checkpoint` records were checked (signature, place, root).
    pub in_log: u64,
    /// How many of its `checkpoint` records were not checked, for want of a key.
    pub unchecked: u64,
    /// The largest checkpoint it was shown to extend, and where it came from.
    pub newest: Option<Given>,
}

/// Why a log does not verify against its checkpoints.
#[derive(Debug, thiserror::Error)]
pub enum AnchorError {
    /// The chain itself is broken (a record changed in place, dropped or moved without the
    /// hashes recomputed).
    #[error(transparent)]
    Chain(#[from] VerifyError),
    #[error(
        "{origin} is not signed by the audit key {key}: {why}; it was forged or damaged and \
         proves nothing (a checkpoint from another key verifies with `--key` and that key's \
         public half)"
    )]
    Forged {
        origin: String,
        key: String,
        why: String,
    },
    #[error(
        "the audit log {path} was cut: it holds {records} records, but {origin} covers \
         {tree_size}; the first record missing is seq {}",
        records + 1
    )]
    Cut {
        path: PathBuf,
        records: u64,
        origin: String,
        tree_size: u64,
    },
    #[error(
        "the audit log does not extend {origin}: its first {tree_size} records hash to \
         root {computed}, the checkpoint signed root {signed} (records were changed, \
         reordered, inserted or replaced, and the chain recomputed); {}",
        differs_where(*from, *tree_size)
    )]
    Differs {
        origin: String,
        tree_size: u64,
        /// The first record that can differ: one after the largest checkpoint matched.
        from: u64,
        computed: Digest,
        signed: Digest,
    },
    #[error(
        "record {seq} of the audit log {path} is a checkpoint of {tree_size} records, where \
         only one of {} records belongs (a record was moved, inserted or removed)",
        seq - 1
    )]
    Misplaced {
        path: PathBuf,
        seq: u64,
        tree_size: u64,
    },
    #[error(
        "there are checkpoints to check the audit log against but no public key to check \
         their signatures with; pass the key's public half (`--key`, printed by `boxmaker \
         audit checkpoint`)"
    )]
    NoKey,
}

fn differs_where(from: u64, tree_size: u64) -> String {
    if from >= tree_size {
        format!("the first record that differs is seq {tree_size}")
    } else if from <= 1 {
        format!("the first record that differs is one of seq 1–{tree_size}")
    } else {
        format!(
            "the first record that differs is one of seq {from}–{tree_size} (the first {} \
             match an earlier checkpoint)",
            from - 1
        )
    }
}

impl AnchorError {
    /// The first record this error names as bad or missing, if it names one (the lower end
    /// of a range).
    pub fn first_bad(&self) -> Option<u64> {
        match self {
            AnchorError::Chain(VerifyError::Bad { line, .. }) => Some(*line),
            AnchorError::Chain(VerifyError::Io { .. })
            | AnchorError::Forged { .. }
            | AnchorError::NoKey => None,
            AnchorError::Cut { records, .. } => Some(records + 1),
            AnchorError::Differs { from, .. } => Some(*from),
            AnchorError::Misplaced { seq, .. } => Some(*seq),
        }
    }
}

/// Checks that `g` is signed by `key` and consistent with itself.
fn check_signed(g: &Given, key: &PublicKey) -> Result<(), AnchorError> {
    let cp = &g.checkpoint;
    let forged = |why: String| AnchorError::Forged {
        origin: g.origin.clone(),
        key: key.id().to_hex(),
        why,
    };
    if cp.key_id != key.id() {
        return Err(forged(format!("it names the key {}", cp.key_id)));
    }
    if !key.signed(cp) {
        return Err(forged("its signature does not verify".into()));
    }
    if cp.last_seq != cp.tree_size
        || (cp.tree_size == 0 && (cp.root != empty_root() || cp.last_hash != Digest::ZERO))
    {
        return Err(forged(
            "it is signed, but no gate makes such a checkpoint (its sizes disagree)".into(),
        ));
    }
    Ok(())
}

/// Reads the log at `path` once and checks that it extends every checkpoint in `given` and
/// every `checkpoint` record it holds (see the module docs). `key` checks the signatures;
/// without it only the chain is checked, and `given` must be empty.
pub fn verify(
    path: &Path,
    given: &[Given],
    key: Option<&PublicKey>,
) -> Result<AnchorOk, AnchorError> {
    let mut by_size: BTreeMap<u64, Vec<&Given>> = BTreeMap::new();
    if !given.is_empty() {
        let key = key.ok_or(AnchorError::NoKey)?;
        for g in given {
            check_signed(g, key)?;
            by_size.entry(g.checkpoint.tree_size).or_default().push(g);
        }
    }
    let differs = |g: &Given, tree: &Tree, last_hash: Digest, matched: u64| {
        let cp = &g.checkpoint;
        let computed = tree.root();
        (computed != cp.root || last_hash != cp.last_hash).then(|| AnchorError::Differs {
            origin: g.origin.clone(),
            tree_size: cp.tree_size,
            from: matched + 1,
            computed,
            signed: cp.root,
        })
    };
    let mut ok = AnchorOk {
        records: 0,
        last_hash: Digest::ZERO,
        root: empty_root(),
        given: 0,
        in_log: 0,
        unchecked: 0,
        newest: None,
    };
    // The largest tree size a signed checkpoint showed to match.
    let mut matched = 0u64;
    let mut tree = Tree::new();
    for g in by_size.get(&0).into_iter().flatten() {
        ok.given += 1;
        ok.newest.get_or_insert_with(|| (*g).clone());
    }
    let mut reader = ChainReader::open(path)?;
    while let Some((record, line)) = reader.next_record()? {
        let seq = record.seq;
        if let Some(cp) = record.event.as_checkpoint(record.time) {
            match key {
                None => ok.unchecked += 1,
                Some(key) => {
                    let g = Given {
                        origin: format!("the log's own checkpoint record {seq}"),
                        checkpoint: cp,
                    };
                    check_signed(&g, key)?;
                    if g.checkpoint.tree_size != seq - 1 {
                        return Err(AnchorError::Misplaced {
                            path: path.to_path_buf(),
                            seq,
                            tree_size: g.checkpoint.tree_size,
                        });
                    }
                    if let Some(e) = differs(&g, &tree, record.prev, matched) {
                        return Err(e);
                    }
                    matched = g.checkpoint.tree_size;
                    ok.in_log += 1;
                    // A given checkpoint of the same size (a witness's) names it better.
                    if ok
                        .newest
                        .as_ref()
                        .is_none_or(|n| n.checkpoint.tree_size < matched)
                    {
                        ok.newest = Some(g);
                    }
                }
            }
        }
        tree.push(line);
        for g in by_size.get(&seq).into_iter().flatten() {
            if let Some(e) = differs(g, &tree, record.hash, matched) {
                return Err(e);
            }
            matched = seq;
            ok.given += 1;
            ok.newest = Some((*g).clone());
        }
    }
    let records = reader.records();
    if let Some((&tree_size, gs)) = by_size.range(records + 1..).next_back() {
        return Err(AnchorError::Cut {
            path: path.to_path_buf(),
            records,
            origin: gs.first().map(|g| g.origin.clone()).unwrap_or_default(),
            tree_size,
        });
    }
    ok.records = records;
    ok.last_hash = reader.last_hash();
    ok.root = tree.root();
    Ok(ok)
}
