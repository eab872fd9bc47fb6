//! A signed checkpoint of the log's head, and the line a witness keeps of it.

use std::fmt;

use proto::Timestamp;
use serde::{Deserialize, Serialize};

use crate::audit::Digest;

/// The first line of the bytes a checkpoint's signature covers: the format and its version.
pub const SIGNED_HEADER: &str = "boxmaker audit checkpoint v1";

/// A signing key's short name: the first 8 bytes of the SHA-256 of its 32-byte public key,
/// as 16 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId(pub [u8; 8]);

/// An Ed25519 signature (RFC 8032), as 128 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Signature(pub [u8; 64]);

/// What the gate signs of its log's head (docs/spec.md §6, `anchor` module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// How many records the tree holds: records `1..=tree_size`.
    pub tree_size: u64,
    /// The RFC 6962 root of the tree over those records.
    pub root: Digest,
    /// The `seq` of the last record the tree holds (always `tree_size`: `seq` counts lines).
    pub last_seq: u64,
    /// The `hash` of that record: the chain's head at this size.
    pub last_hash: Digest,
    /// When the gate signed it (its clock, whole seconds).
    pub time: Timestamp,
    /// The key that signed it.
    pub key_id: KeyId,
    pub signature: Signature,
}

/// The fields a gate signs: a checkpoint without its key and signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub tree_size: u64,
    pub root: Digest,
    pub last_seq: u64,
    pub last_hash: Digest,
}

/// Why a line is not a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of {origin} is not a checkpoint: {why}")]
pub struct NotACheckpoint {
    pub origin: String,
    pub line: u64,
    pub why: String,
}

impl Checkpoint {
    /// The exact bytes the signature covers: seven lines, each ending in `\n`.
    /// ```text
    /// boxmaker audit checkpoint v1
    /// tree_size 1000
    /// root <64 hex>
    /// last_seq 1000
    /// last_hash <64 hex>
    /// time 1764465600
    /// key_id <16 hex>
    /// ```
    pub fn signed_bytes(head: &Head, time: Timestamp, key_id: KeyId) -> Vec<u8> {
        format!(
            "{SIGNED_HEADER}\ntree_size {}\nroot {}\nlast_seq {}\nlast_hash {}\ntime {}\nkey_id {}\n",
            head.tree_size, head.root, head.last_seq, head.last_hash, time.0, key_id
        )
        .into_bytes()
    }

    /// The bytes this checkpoint's signature must cover.
    pub fn message(&self) -> Vec<u8> {
        Checkpoint::signed_bytes(&self.head(), self.time, self.key_id)
    }

    /// The head it signs.
    pub fn head(&self) -> Head {
        Head {
            tree_size: self.tree_size,
            root: self.root,
            last_seq: self.last_seq,
            last_hash: self.last_hash,
        }
    }

    /// The line a witness keeps: compact JSON, fields in declared order, no `\n`.
    pub fn to_line(&self) -> String {
        // Every field is a number or a hex string: encoding cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads one line written by [`Checkpoint::to_line`] (strictly: every field, nothing
    /// else). It does not check the signature.
    pub fn parse(line: &str) -> Result<Checkpoint, String> {
        serde_json::from_str(line.trim()).map_err(|e| e.to_string())
    }

    /// Every checkpoint in `text`, one a line, with its line number; blank lines and lines
    /// starting with `#` are skipped (`boxmaker audit checkpoint` prints its notes so).
    pub fn parse_all(text: &str, origin: &str) -> Result<Vec<(u64, Checkpoint)>, NotACheckpoint> {
        let mut out = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line_no = u64::try_from(i).unwrap_or(u64::MAX).saturating_add(1);
            let t = line.trim();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let cp = Checkpoint::parse(t).map_err(|why| NotACheckpoint {
                origin: origin.to_string(),
                line: line_no,
                why,
            })?;
            out.push((line_no, cp));
        }
        Ok(out)
    }
}

// ---------------------------------------------------------------------------------------------
// Hex

pub(crate) fn to_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(HEX[usize::from(b >> 4)]));
        s.push(char::from(HEX[usize::from(b & 15)]));
    }
    s
}

/// Exactly `2 * N` lower-case hex digits.
pub(crate) fn from_hex<const N: usize>(s: &str) -> Option<[u8; N]> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        }
    }
    let bytes = s.as_bytes();
    if bytes.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = (nibble(*pair.first()?)? << 4) | nibble(*pair.get(1)?)?;
    }
    Some(out)
}

macro_rules! hex_newtype {
    ($t:ident, $n:expr, $what:expr) => {
        impl $t {
            /// Lower-case hex.
            pub fn to_hex(&self) -> String {
                to_hex(&self.0)
            }

            /// Parses exactly the lower-case hex [`Self::to_hex`] writes.
            pub fn from_hex(s: &str) -> Option<$t> {
                from_hex::<$n>(s).map($t)
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.to_hex())
            }
        }

        impl fmt::Debug for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($t), self.to_hex())
            }
        }

        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_hex())
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                $t::from_hex(&s).ok_or_else(|| serde::de::Error::custom($what))
            }
        }
    };
}

hex_newtype!(KeyId, 8, "expected 16 lower-case hex digits");
hex_newtype!(Signature, 64, "expected 128 lower-case hex digits");

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        Checkpoint {
            tree_size: 3,
            root: Digest::of(b"r"),
            last_seq: 3,
            last_hash: Digest::of(b"h"),
            time: Timestamp(1_764_465_600),
            key_id: KeyId([0xab; 8]),
            signature: Signature([0xcd; 64]),
        }
    }

    #[test]
    fn the_signed_bytes_are_the_documented_lines() {
        let cp = sample();
        let text = String::from_utf8(cp.message()).unwrap();
        assert_eq!(
            text,
            format!(
                "boxmaker audit checkpoint v1\ntree_size 3\nroot {}\nlast_seq 3\nlast_hash {}\n\
                 time 1764465600\nkey_id abababababababab\n",
                Digest::of(b"r"),
                Digest::of(b"h")
            )
        );
    }

    #[test]
    fn a_line_round_trips_and_strangers_are_refused() {
        let cp = sample();
        let line = cp.to_line();
        assert!(line.starts_with(r#"{"tree_size":3,"root":""#), "{line}");
        assert_eq!(Checkpoint::parse(&line).unwrap(), cp);
        let extra = line.replacen("{", r#"{"x":1,"#, 1);
        assert!(Checkpoint::parse(&extra).is_err());
        let upper = line.replace(
            &cp.signature.to_hex(),
            &cp.signature.to_hex().to_uppercase(),
        );
        assert!(Checkpoint::parse(&upper).is_err());
        let text = format!("# a note\n\n{line}\n{line}\n");
        let all = Checkpoint::parse_all(&text, "f").unwrap();
        assert_eq!(all.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [3, 4]);
        let bad = Checkpoint::parse_all("{}\n", "f").unwrap_err();
        assert_eq!(bad.line, 1);
    }
}
