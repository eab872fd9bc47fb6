//! The Merkle tree of RFC 6962 §2.1 over the log's records, kept as the roots of its perfect
//! subtrees so that appending a record and taking the root are `O(log n)`.
//!
//! For records `d[0..n]` (each a line of `audit.log` without its `\n`):
//! ```text
//! MTH({})       = SHA-256()                                   (the empty tree)
//! MTH({d0})     = SHA-256(0x00 ‖ d0)                          (a leaf)
//! MTH(d[0..n])  = SHA-256(0x01 ‖ MTH(d[0..k]) ‖ MTH(d[k..n])) (k the largest power of 2 < n)
//! ```

use sha2::{Digest as _, Sha256};

use crate::audit::Digest;

/// The hash of a leaf: `SHA-256(0x00 ‖ record)`.
pub fn leaf_hash(record: &[u8]) -> Digest {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(record);
    Digest(h.finalize().into())
}

/// The hash of an interior node: `SHA-256(0x01 ‖ left ‖ right)`.
pub fn node_hash(left: &Digest, right: &Digest) -> Digest {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left.0);
    h.update(right.0);
    Digest(h.finalize().into())
}

/// The root of the empty tree: `SHA-256()` of no bytes.
pub fn empty_root() -> Digest {
    Digest(Sha256::digest([]).into())
}

/// A tree that grows by appending leaves.
///
/// It keeps one root per perfect subtree, left to right, largest first: the binary digits of
/// its size. Appending a leaf merges equal heights like a binary carry; the root folds the
/// subtrees from the right, which is exactly RFC 6962's split at the largest power of two.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tree {
    size: u64,
    /// `(height, root)`: a subtree of `2^height` leaves. Heights strictly decrease.
    peaks: Vec<(u32, Digest)>,
}

impl Tree {
    /// The empty tree.
    pub fn new() -> Tree {
        Tree::default()
    }

    /// How many leaves it holds.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends the record `record` (its bytes, not yet hashed).
    pub fn push(&mut self, record: &[u8]) {
        self.push_leaf(leaf_hash(record));
    }

    /// Appends a leaf by its hash.
    pub fn push_leaf(&mut self, leaf: Digest) {
        let mut node = (0u32, leaf);
        while let Some(&(height, left)) = self.peaks.last() {
            if height != node.0 {
                break;
            }
            self.peaks.pop();
            node = (height + 1, node_hash(&left, &node.1));
        }
        self.peaks.push(node);
        self.size += 1;
    }

    /// The tree's root (RFC 6962's `MTH`).
    pub fn root(&self) -> Digest {
        let mut peaks = self.peaks.iter().rev();
        let Some(&(_, mut acc)) = peaks.next() else {
            return empty_root();
        };
        for (_, left) in peaks {
            acc = node_hash(left, &acc);
        }
        acc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6962 §2.1 read literally: split at the largest power of two below `n`.
    fn mth(leaves: &[Digest]) -> Digest {
        match leaves.len() {
            0 => empty_root(),
            1 => leaves[0],
            n => {
                let mut k = 1;
                while k * 2 < n {
                    k *= 2;
                }
                node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
            }
        }
    }

    #[test]
    fn the_incremental_root_is_the_recursive_definition_at_every_size() {
        let mut tree = Tree::new();
        let mut leaves = Vec::new();
        assert_eq!(tree.root(), mth(&leaves));
        for i in 0u32..300 {
            let record = i.to_be_bytes();
            tree.push(&record);
            leaves.push(leaf_hash(&record));
            assert_eq!(tree.size(), u64::from(i) + 1);
            assert_eq!(tree.root(), mth(&leaves), "size {}", i + 1);
        }
    }

    #[test]
    fn a_different_record_anywhere_changes_the_root() {
        let records: Vec<Vec<u8>> = (0u8..13).map(|i| vec![i; 3]).collect();
        let root = |rs: &[Vec<u8>]| {
            let mut t = Tree::new();
            rs.iter().for_each(|r| t.push(r));
            t.root()
        };
        let base = root(&records);
        for i in 0..records.len() {
            let mut changed = records.clone();
            changed[i][1] ^= 1;
            assert_ne!(root(&changed), base, "record {i}");
        }
        let mut swapped = records.clone();
        swapped.swap(3, 4);
        assert_ne!(root(&swapped), base);
    }
}
