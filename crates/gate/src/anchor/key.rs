//! The audit key: an Ed25519 key kept in a file of its own, outside the state directory,
//! created `0600` the first time a gate needs it.
//!
//! The file is three lines of text:
//! ```text
//! # boxmaker audit key (Ed25519, docs/spec.md §6): keep it secret, outside the state directory
//! secret <64 hex: the 32-byte seed of RFC 8032>
//! public <64 hex: the 32-byte public key>
//! mark <64 hex: the person's seal of the two lines above (statedir::mark)>
//! ```
//! The `public` line is the key's public half: `boxmaker audit verify` reads only that, and
//! `boxmaker audit checkpoint` prints it for a verifier elsewhere (`--key`).

use std::path::{Path, PathBuf};

use ed25519_dalek::{Signer, SigningKey, VerifyingKey};
use proto::Timestamp;
use sha2::{Digest as _, Sha256};
use statedir::file::Dir;

use super::checkpoint::{Checkpoint, Head, KeyId, Signature, from_hex, to_hex};

const HEADER: &str = "# boxmaker audit key (Ed25519, docs/spec.md §6): keep it secret, outside \
                      the state directory";

/// What can go wrong with the audit key.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("could not read the audit key {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not create the audit key {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("could not make a new audit key: the system's randomness failed ({0})")]
    Random(String),
    #[error(
        "the audit key {path} is not a boxmaker audit key ({why}); restore it from a backup, or \
         move it away to have a new one made (checkpoints signed by the old key then verify \
         only with its public key)"
    )]
    Malformed { path: PathBuf, why: String },
    #[error(
        "the audit key {path} can be read by other users (mode {mode:03o}); run `chmod 600 {}`",
        path.display()
    )]
    Exposed { path: PathBuf, mode: u32 },
    #[error(
        "the audit key {path} was not made by boxmaker for you (it bears no mark of yours); a \
         repository can ship one beside the state directory, and checkpoints signed with a key \
         someone else holds prove nothing: move it away to have a new one made"
    )]
    Unmarked { path: PathBuf },
    #[error("{0}")]
    Mark(#[from] statedir::file::Error),
    #[error("{0:?} is not a public key: expected 64 lower-case hex digits")]
    BadPublic(String),
}

/// A public key that checks checkpoints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Parses 64 lower-case hex digits (what `boxmaker audit checkpoint` prints).
    pub fn from_hex(s: &str) -> Result<PublicKey, KeyError> {
        from_hex::<32>(s.trim())
            .and_then(|b| VerifyingKey::from_bytes(&b).ok())
            .map(PublicKey)
            .ok_or_else(|| KeyError::BadPublic(s.to_string()))
    }

    /// 64 lower-case hex digits.
    pub fn to_hex(&self) -> String {
        to_hex(self.0.as_bytes())
    }

    /// Its short name: the first 8 bytes of SHA-256 of the 32 key bytes.
    pub fn id(&self) -> KeyId {
        let d = Sha256::digest(self.0.as_bytes());
        let mut id = [0u8; 8];
        id.copy_from_slice(d.get(..8).unwrap_or(&[0; 8]));
        KeyId(id)
    }

    /// Whether `signature` is this key's over `message` (strictly, RFC 8032).
    pub fn verifies(&self, message: &[u8], signature: &Signature) -> bool {
        self.0
            .verify_strict(message, &ed25519_dalek::Signature::from_bytes(&signature.0))
            .is_ok()
    }

    /// Whether `cp` was signed by this key: its key id is this key's, and its signature
    /// verifies (strictly, RFC 8032) over [`Checkpoint::message`].
    pub fn signed(&self, cp: &Checkpoint) -> bool {
        cp.key_id == self.id()
            && self
                .0
                .verify_strict(
                    &cp.message(),
                    &ed25519_dalek::Signature::from_bytes(&cp.signature.0),
                )
                .is_ok()
    }
}

/// The gate's signing key.
pub struct AuditKey {
    signing: SigningKey,
    public: PublicKey,
    path: PathBuf,
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditKey")
            .field("path", &self.path)
            .field("public", &self.public.to_hex())
            .finish_non_exhaustive()
    }
}

impl AuditKey {
    /// Reads the key at `path`, or makes one there (`0600`, its directory `0700` if
    /// missing) when there is none. A key file others can read is refused, and so is a
    /// link at its name, whether to a file or to none (`statedir::file`: a repository can
    /// ship `.boxmaker.audit-key -> ~/.ssh/id_ed25519`).
    pub fn load_or_create(path: &Path) -> Result<AuditKey, KeyError> {
        match read_key_file(path, true) {
            Ok(text) => AuditKey::from_text(path, &text),
            Err(KeyError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                AuditKey::create(path)
            }
            Err(e) => Err(e),
        }
    }

    /// Reads the key at `path`.
    pub fn load(path: &Path) -> Result<AuditKey, KeyError> {
        let text = read_key_file(path, true)?;
        AuditKey::from_text(path, &text)
    }

    fn from_text(path: &Path, text: &str) -> Result<AuditKey, KeyError> {
        let (secret, public, mark) = parse(path, text)?;
        let Some(secret) = secret else {
            return Err(malformed(path, "it has no `secret` line"));
        };
        let signing = SigningKey::from_bytes(&secret);
        let derived = PublicKey(signing.verifying_key());
        if derived != public {
            return Err(malformed(
                path,
                "its `public` line is not its secret's public key",
            ));
        }
        // docs/spec.md §6, "Whose state": only a key the person's boxmaker made signs.
        let marked = match mark {
            Some(m) => statedir::mark::verify(MARKED, &marked_bytes(&secret, &public), &m)?,
            None => false,
        };
        if !marked {
            return Err(KeyError::Unmarked {
                path: path.to_path_buf(),
            });
        }
        Ok(AuditKey {
            signing,
            public: derived,
            path: path.to_path_buf(),
        })
    }

    fn create(path: &Path) -> Result<AuditKey, KeyError> {
        let create = |source| KeyError::Create {
            path: path.to_path_buf(),
            source,
        };
        let (dir, name) = split(path).map_err(create)?;
        let dir = Dir::make(dir, 0o700).map_err(|e| create(e.into()))?;
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|e| KeyError::Random(e.to_string()))?;
        let signing = SigningKey::from_bytes(&seed);
        let public = PublicKey(signing.verifying_key());
        let mark = statedir::mark::seal(MARKED, &marked_bytes(&seed, &public))?;
        let text = format!(
            "{HEADER}\nsecret {}\npublic {}\nmark {mark}\n",
            to_hex(&seed),
            public.to_hex()
        );
        // Written whole under a temporary name, then linked into place: a crash never leaves
        // half a key, and of two processes making one at once, one key wins and both use it.
        match dir.create_new(name, text.as_bytes(), 0o600) {
            Ok(()) => Ok(AuditKey {
                signing,
                public,
                path: path.to_path_buf(),
            }),
            Err(statedir::file::Error::Exists { .. }) => AuditKey::load(path),
            Err(e) => Err(create(e.into())),
        }
    }

    /// The key file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its public half.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// Signs `message` (a fleet checkpoint's bytes, `fleet.rs`).
    pub fn sign_message(&self, message: &[u8]) -> Signature {
        Signature(self.signing.sign(message).to_bytes())
    }

    /// Signs `head` as of `time`.
    pub fn sign(&self, head: Head, time: Timestamp) -> Checkpoint {
        let key_id = self.public.id();
        let message = Checkpoint::signed_bytes(&head, time, key_id);
        let signature = Signature(self.signing.sign(&message).to_bytes());
        Checkpoint {
            tree_size: head.tree_size,
            root: head.root,
            last_seq: head.last_seq,
            last_hash: head.last_hash,
            time,
            key_id,
            signature,
        }
    }
}

/// The public half of the key file at `path` (its `public` line; the secret is not read).
pub fn read_public(path: &Path) -> Result<PublicKey, KeyError> {
    let text = read_key_file(path, false)?;
    parse(path, &text).map(|(_, public, _)| public)
}

/// What a key's `mark` line is the person's seal of (`statedir::mark`).
const MARKED: &str = "audit key";

/// The bytes a key's mark covers: its secret and its public half.
fn marked_bytes(secret: &[u8; 32], public: &PublicKey) -> Vec<u8> {
    format!("secret {}\npublic {}\n", to_hex(secret), public.to_hex()).into_bytes()
}

/// The key file's directory (as the operator named it) and its name.
fn split(path: &Path) -> Result<(&Path, &str), std::io::Error> {
    match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(d), Some(n)) => Ok((
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            },
            n,
        )),
        _ => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path names no file",
        )),
    }
}

/// The key file's text: a regular file, never through a link; with `secret`, one only its
/// owner may read (its public line alone may be read from any).
fn read_key_file(path: &Path, secret: bool) -> Result<String, KeyError> {
    let read = |source| KeyError::Read {
        path: path.to_path_buf(),
        source,
    };
    let (dir, name) = split(path).map_err(read)?;
    let found = Dir::open(dir)
        .and_then(|d| d.read(name, 64 << 10))
        .map_err(|e| read(e.into()))?
        .ok_or_else(|| read(std::io::ErrorKind::NotFound.into()))?;
    let mode = found.mode & 0o777;
    if secret && mode & 0o077 != 0 {
        return Err(KeyError::Exposed {
            path: path.to_path_buf(),
            mode,
        });
    }
    String::from_utf8(found.bytes).map_err(|_| malformed(path, "it is not UTF-8 text"))
}

fn malformed(path: &Path, why: &str) -> KeyError {
    KeyError::Malformed {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

/// The `secret` (if present), `public` and `mark` (if present) lines of a key file.
type Parsed = (Option<[u8; 32]>, PublicKey, Option<String>);

fn parse(path: &Path, text: &str) -> Result<Parsed, KeyError> {
    let mut secret = None;
    let mut public = None;
    let mut mark = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once(' ') {
            Some(("secret", hex)) if secret.is_none() => {
                secret = Some(
                    from_hex::<32>(hex)
                        .ok_or_else(|| malformed(path, "its `secret` is not 64 hex digits"))?,
                );
            }
            Some(("public", hex)) if public.is_none() => {
                public = Some(
                    PublicKey::from_hex(hex)
                        .map_err(|_| malformed(path, "its `public` is not a public key"))?,
                );
            }
            Some(("mark", hex)) if mark.is_none() => mark = Some(hex.to_string()),
            _ => {
                return Err(malformed(
                    path,
                    "it has a line other than `secret`, `public` and `mark`",
                ));
            }
        }
    }
    let public = public.ok_or_else(|| malformed(path, "it has no `public` line"))?;
    Ok((secret, public, mark))
}
