//! A log checked against signed checkpoints: does it extend each of them?
//!
//! One [`Checker`] does it, fed the log's lines in order by two readers: [`verify`] (`audit
//! verify`, the control socket's `audit_verify`), which checks every record's chain as well,
//! and [`crate::audit::AuditLog::open_checked`] (a gate at start, docs/spec.md §6 "At
//! start"), which reads the log once anyway to rebuild its tree and checks it against the
//! checkpoints it knows in that same pass.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use super::checkpoint::Checkpoint;
use super::key::PublicKey;
use super::tree::{Tree, empty_root, leaf_hash};
use crate::audit::{ChainReader, Digest, Event, Record, VerifyError};

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
    /// The log starts a new chain (`boxmaker audit new-chain`): its first two records.
    pub chain: Option<ChainStart>,
    /// Given checkpoints of the chains before it, left out (see [`current_chain`]).
    pub earlier: u64,
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

/// Which signatures a pass checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signatures {
    /// Every checkpoint's, given or in the log (`audit verify`: a forged one is named even
    /// where the log matches it).
    Every,
    /// A checkpoint's only when the log does not match it (a gate at start). Whoever signed
    /// a checkpoint the log matches, it says nothing against the log; one it does not match
    /// is named forged or the log broken by its signature. Every checkpoint's key id is
    /// still compared with the key's, which costs nothing.
    OnMismatch,
}

/// A log's first two records when they start a new chain (`boxmaker audit new-chain`,
/// docs/spec.md §6 "A new chain"): a `chain_restarted` record, then the checkpoint of it
/// alone, signed by the key. Only the signature makes it one: anyone who can write the log
/// can write a `chain_restarted` record, nobody without the key the checkpoint that covers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainStart {
    /// The checkpoint of record 1 (record 2).
    pub checkpoint: Checkpoint,
    /// Where the log before it is kept (record 1's `previous`).
    pub previous: String,
}

impl ChainStart {
    /// The chain start the log's first two lines (`first`, `second`, without `\n`) make,
    /// if they make one signed by `key`.
    pub fn read(first: &[u8], second: &[u8], key: &PublicKey) -> Option<ChainStart> {
        let one = Record::parse_line(first).ok()?;
        let two = Record::parse_line(second).ok()?;
        let Event::ChainRestarted { previous, .. } = one.event else {
            return None;
        };
        let cp = two.event.as_checkpoint(two.time)?;
        let starts = one.seq == 1
            && two.seq == 2
            && two.prev == one.hash
            && cp.tree_size == 1
            && cp.last_seq == 1
            && cp.last_hash == one.hash
            && cp.root == leaf_hash(first)
            && cp.key_id == key.id()
            && key.signed(&cp);
        starts.then_some(ChainStart {
            checkpoint: cp,
            previous,
        })
    }
}

/// The given checkpoints that belong to the log's chain, and how many were left out. All of
/// them, unless the log starts a new chain (`start`, signed by the key): then a checkpoint
/// signed before the chain's first checkpoint is of an earlier chain (nothing is signed
/// while `new-chain` runs: it holds the gate's lock), and so is one signed in the same
/// second that comes before the first copy of that checkpoint in `given` (a witness keeps
/// checkpoints in the order they were signed). One signed in that second elsewhere is
/// checked: that errs towards a false alarm, never towards a cut that goes unseen.
pub fn current_chain<'a>(given: &'a [Given], start: Option<&ChainStart>) -> (Vec<&'a Given>, u64) {
    let Some(start) = start else {
        return (given.iter().collect(), 0);
    };
    let first = &start.checkpoint;
    let is_first = |g: &Given| g.checkpoint == *first;
    let at = given.iter().position(is_first).unwrap_or(0);
    let mut earlier = 0;
    let current = given
        .iter()
        .enumerate()
        .filter(|&(i, g)| {
            let t = g.checkpoint.time;
            let before = t < first.time || (t == first.time && i < at && !is_first(g));
            earlier += u64::from(before);
            !before
        })
        .map(|(_, g)| g)
        .collect();
    (current, earlier)
}

/// Checks that `g` is signed by `key` and consistent with itself.
fn check_signed(g: &Given, key: &PublicKey) -> Result<(), AnchorError> {
    check_shape(g, key)?;
    if !key.signed(&g.checkpoint) {
        return Err(forged(g, key, "its signature does not verify".into()));
    }
    Ok(())
}

/// What [`check_signed`] checks but the signature: the key it names, and sizes a gate
/// could have signed.
fn check_shape(g: &Given, key: &PublicKey) -> Result<(), AnchorError> {
    let cp = &g.checkpoint;
    if cp.key_id != key.id() {
        return Err(forged(g, key, format!("it names the key {}", cp.key_id)));
    }
    if cp.last_seq != cp.tree_size
        || (cp.tree_size == 0 && (cp.root != empty_root() || cp.last_hash != Digest::ZERO))
    {
        return Err(forged(
            g,
            key,
            "it is signed, but no gate makes such a checkpoint (its sizes disagree)".into(),
        ));
    }
    Ok(())
}

fn forged(g: &Given, key: &PublicKey, why: String) -> AnchorError {
    AnchorError::Forged {
        origin: g.origin.clone(),
        key: key.id().to_hex(),
        why,
    }
}

/// The most checkpoint sizes [`Extends`] remembers (the largest are kept).
const EXTENDS_MAX: usize = 4096;

/// The roots a log is known to have had at some sizes: those of the checkpoints it was
/// shown to extend at start, and of those its gate signed since. What the checkpoint writer
/// asks before it writes after a checkpoint it finds (docs/spec.md §6, "The writer").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extends {
    roots: BTreeMap<u64, Digest>,
}

impl Extends {
    /// The log's tree had `root` at `size`.
    pub fn note(&mut self, size: u64, root: Digest) {
        self.roots.insert(size, root);
        while self.roots.len() > EXTENDS_MAX {
            self.roots.pop_first();
        }
    }

    /// Whether the log is known to extend `cp`: its tree had `cp`'s root at `cp`'s size.
    pub fn extends(&self, cp: &Checkpoint) -> bool {
        self.roots.get(&cp.tree_size) == Some(&cp.root)
    }
}

/// A log checked against checkpoints as its lines come, in order, from whichever reader.
#[derive(Debug)]
pub struct Checker<'a> {
    path: PathBuf,
    key: Option<&'a PublicKey>,
    signatures: Signatures,
    by_size: BTreeMap<u64, Vec<&'a Given>>,
    /// The smallest size in `by_size` not yet reached: one comparison a line, not a lookup.
    next_size: Option<u64>,
    tree: Tree,
    /// The largest tree size a checkpoint showed to match.
    matched: u64,
    ok: AnchorOk,
    extends: Extends,
}

/// What a whole log checked to: the answer, its tree and the roots it was shown to have.
#[derive(Debug)]
pub struct Checked {
    pub ok: AnchorOk,
    pub tree: Tree,
    pub extends: Extends,
}

impl<'a> Checker<'a> {
    /// A checker of the log at `path` against `given` (those of the chain `start` begins,
    /// [`current_chain`]) and the log's own `checkpoint` records, whose signatures `key`
    /// checks. Without a key only the tree is built, and `given` must be empty.
    pub fn new(
        path: &Path,
        given: &'a [Given],
        key: Option<&'a PublicKey>,
        signatures: Signatures,
        start: Option<ChainStart>,
    ) -> Result<Checker<'a>, AnchorError> {
        let (current, earlier) = current_chain(given, start.as_ref());
        let mut by_size: BTreeMap<u64, Vec<&Given>> = BTreeMap::new();
        if !current.is_empty() {
            let key = key.ok_or(AnchorError::NoKey)?;
            for g in current {
                match signatures {
                    Signatures::Every => check_signed(g, key)?,
                    Signatures::OnMismatch => check_shape(g, key)?,
                }
                by_size.entry(g.checkpoint.tree_size).or_default().push(g);
            }
        }
        let mut ok = AnchorOk {
            records: 0,
            last_hash: Digest::ZERO,
            root: empty_root(),
            given: 0,
            in_log: 0,
            unchecked: 0,
            newest: None,
            chain: start,
            earlier,
        };
        for g in by_size.get(&0).into_iter().flatten() {
            ok.given += 1;
            ok.newest.get_or_insert_with(|| (*g).clone());
        }
        let next_size = by_size.range(1..).next().map(|(&n, _)| n);
        Ok(Checker {
            path: path.to_path_buf(),
            key,
            signatures,
            next_size,
            by_size,
            tree: Tree::new(),
            matched: 0,
            ok,
            extends: Extends::default(),
        })
    }

    /// With [`Signatures::OnMismatch`], the log does not match `g`: its signature says
    /// whether that is the log's fault (`Ok`) or the checkpoint's (forged).
    fn confirm(&self, g: &Given) -> Result<(), AnchorError> {
        match (self.signatures, self.key) {
            (Signatures::OnMismatch, Some(key)) => check_signed(g, key),
            _ => Ok(()),
        }
    }

    /// `g` against the tree as it is now; `last_hash` is the last record's hash where the
    /// reader parsed it (a root that matches fixes that record's bytes, hash included).
    fn check(&self, g: &Given, last_hash: Option<Digest>) -> Result<(), AnchorError> {
        let cp = &g.checkpoint;
        let computed = self.tree.root();
        if computed == cp.root && last_hash.is_none_or(|h| h == cp.last_hash) {
            return Ok(());
        }
        self.confirm(g)?;
        Err(AnchorError::Differs {
            origin: g.origin.clone(),
            tree_size: cp.tree_size,
            from: self.matched + 1,
            computed,
            signed: cp.root,
        })
    }

    /// The log's record `seq`: its line as stored (without `\n`), and the record parsed,
    /// when the reader parsed it (`verify` parses every one; a gate at start its `checkpoint`
    /// records only).
    pub fn line(
        &mut self,
        seq: u64,
        line: &[u8],
        record: Option<&Record>,
    ) -> Result<(), AnchorError> {
        if let Some(record) = record
            && let Some(cp) = record.event.as_checkpoint(record.time)
        {
            match self.key {
                None => self.ok.unchecked += 1,
                Some(key) => {
                    let g = Given {
                        origin: format!("its own checkpoint record {seq}"),
                        checkpoint: cp,
                    };
                    match self.signatures {
                        Signatures::Every => check_signed(&g, key)?,
                        Signatures::OnMismatch => check_shape(&g, key)?,
                    }
                    if g.checkpoint.tree_size != seq - 1 {
                        self.confirm(&g)?;
                        return Err(AnchorError::Misplaced {
                            path: self.path.clone(),
                            seq,
                            tree_size: g.checkpoint.tree_size,
                        });
                    }
                    self.check(&g, Some(record.prev))?;
                    self.matched = g.checkpoint.tree_size;
                    self.extends.note(self.matched, g.checkpoint.root);
                    self.ok.in_log += 1;
                    // A given checkpoint of the same size (a witness's) names it better.
                    if self
                        .ok
                        .newest
                        .as_ref()
                        .is_none_or(|n| n.checkpoint.tree_size < self.matched)
                    {
                        self.ok.newest = Some(g);
                    }
                }
            }
        }
        self.tree.push(line);
        if self.next_size == Some(seq) {
            if let Some(gs) = self.by_size.get(&seq) {
                for g in gs {
                    self.check(g, record.map(|r| r.hash))?;
                    self.ok.given += 1;
                    self.ok.newest = Some((*g).clone());
                }
                self.matched = seq;
                self.extends.note(seq, self.tree.root());
            }
            self.next_size = self.by_size.range(seq + 1..).next().map(|(&n, _)| n);
        }
        Ok(())
    }

    /// The log ended after `records` records, the last with hash `last_hash`: a checkpoint
    /// larger than that says it was cut.
    pub fn finish(mut self, records: u64, last_hash: Digest) -> Result<Checked, AnchorError> {
        if let Some((&tree_size, gs)) = self.by_size.range(records + 1..).next_back()
            && let Some(g) = gs.first()
        {
            self.confirm(g)?;
            return Err(AnchorError::Cut {
                path: self.path.clone(),
                records,
                origin: g.origin.clone(),
                tree_size,
            });
        }
        self.ok.records = records;
        self.ok.last_hash = last_hash;
        self.ok.root = self.tree.root();
        if self.by_size.contains_key(&0) {
            self.extends.note(0, empty_root());
        }
        Ok(Checked {
            ok: self.ok,
            tree: self.tree,
            extends: self.extends,
        })
    }
}

/// Reads the log at `path` once and checks that it extends every checkpoint in `given` and
/// every `checkpoint` record it holds (see the module docs), every signature included.
/// `key` checks the signatures; without it only the chain is checked, and `given` must be
/// empty. A log that starts a new chain is checked against the given checkpoints of its own
/// chain ([`current_chain`]).
pub fn verify(
    path: &Path,
    given: &[Given],
    key: Option<&PublicKey>,
) -> Result<AnchorOk, AnchorError> {
    let io = |source| {
        AnchorError::Chain(VerifyError::Io {
            path: path.to_path_buf(),
            source,
        })
    };
    let file = File::open(path).map_err(io)?;
    let start = match key {
        Some(key) => crate::audit::chain_start(&file, u64::MAX, key).map_err(io)?,
        None => None,
    };
    let mut checker = Checker::new(path, given, key, Signatures::Every, start)?;
    let mut reader = ChainReader::from_file(path, file);
    while let Some((record, line)) = reader.next_record()? {
        checker.line(record.seq, line, Some(&record))?;
    }
    Ok(checker.finish(reader.records(), reader.last_hash())?.ok)
}
