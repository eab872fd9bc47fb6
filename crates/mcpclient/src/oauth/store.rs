//! Where a sign-in's tokens live (docs/spec.md §3.9, "Signing in"): one file per tool,
//! `STATE/oauth/TOOL.token`, sealed with ChaCha20-Poly1305 (ring) under a key of the state
//! directory's own, `STATE.oauth-key` — beside the state directory, never in it, like the
//! audit key, so a copy of the state directory (a backup, a bug report) carries no usable
//! token. The key is 32 random bytes, made `0600` on first use and refused when anyone else
//! may read it. The sealed text is bound (as associated data) to the tool's name and the
//! server's URL: a file copied to another tool's name, or from another state directory, or
//! changed by one bit, does not open, and is never used.
//!
//! A lock file per tool (`TOOL.lock`, `flock`) orders the writers — `boxmaker auth` and every
//! runner that refreshes — so a refresh token that rotates is used once.

use std::path::{Path, PathBuf};

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use statedir::file::{Dir, Mode, Open};
use zeroize::{Zeroize, Zeroizing};

/// What a sealed file starts with.
const MAGIC: &[u8] = b"BXMOAUTH1\n";
/// The largest sealed file read.
const MAX_FILE: u64 = 1 << 20;
const KEY_LEN: usize = 32;
/// The key file: the key, then its mark (`statedir::mark::seal`, 64 hex digits): only a key
/// the person's boxmaker made opens or seals a sign-in (docs/spec.md §6, "Whose state").
const FILE_LEN: usize = KEY_LEN + 64;
/// What a key file's mark is the person's seal of.
const MARKED: &str = "oauth key";

/// Why the store could not be used: one sentence each, never a token.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the OAuth key file {path} has mode {mode:04o}, which lets others read or write it; no \
         token is opened with it: make it private with `chmod 600 {path}`, and sign in again \
         if anyone else could have read it"
    )]
    KeyMode { path: String, mode: u32 },
    #[error(
        "the OAuth key file {path} is owned by uid {owner}, not by boxmaker's user (uid {me}); \
         no token is opened with it"
    )]
    KeyOwner { path: String, owner: u32, me: u32 },
    #[error(
        "the OAuth key file {path} is not a regular file of {FILE_LEN} bytes; move it away and \
         sign in again"
    )]
    KeyBad { path: String },
    #[error(
        "the OAuth key file {path} was not made by boxmaker for you (it bears no mark of yours); \
         a repository can ship one beside the state directory, and a sign-in sealed with a key \
         someone else holds is theirs to read: move it away and sign in again"
    )]
    KeyUnmarked { path: String },
    #[error(
        "the sign-in of {tool:?} ({path}) does not open with this state directory's key: it \
         was changed, or copied from another state directory or tool, and is not used; sign \
         in again with `boxmaker auth login {tool}`"
    )]
    Unreadable { tool: String, path: String },
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: String,
        source: std::io::Error,
    },
    #[error("cannot draw random bytes for the OAuth store")]
    Random,
    /// A file of the store refused or not written (`statedir::file`): a link where a token,
    /// a lock, the key or the `oauth` directory should be (a repository can ship
    /// `.boxmaker/`), a failed write.
    #[error(transparent)]
    File(#[from] statedir::file::Error),
}

/// What a sign-in left: the tokens and what refreshing or revoking them needs.
#[derive(Serialize, Deserialize, Clone, Default)]
pub struct Record {
    pub tool: String,
    /// The server's URL as configured (a record of another URL is not this tool's).
    pub server: String,
    /// The `resource` tokens are asked for (RFC 8707).
    pub resource: String,
    pub issuer: String,
    pub token_endpoint: String,
    #[serde(default)]
    pub revocation_endpoint: Option<String>,
    pub client_id: String,
    /// A secret the authorization server gave at registration (a configured one stays in
    /// its `[[secret]]`).
    #[serde(default)]
    pub client_secret: Option<String>,
    /// `client_secret_basic`, `client_secret_post` or `none`.
    pub auth_method: String,
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// Seconds since the epoch; `None`: the server said nothing.
    #[serde(default)]
    pub expires_at: Option<u64>,
    pub obtained_at: u64,
    #[serde(default)]
    pub scopes: Vec<String>,
    /// Scopes the server asked for since (a `403 insufficient_scope`), for the next sign-in.
    #[serde(default)]
    pub step_up: Vec<String>,
}

impl std::fmt::Debug for Record {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Record")
            .field("tool", &self.tool)
            .field("issuer", &self.issuer)
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        self.access_token.zeroize();
        if let Some(r) = self.refresh_token.as_mut() {
            r.zeroize();
        }
        if let Some(s) = self.client_secret.as_mut() {
            s.zeroize();
        }
    }
}

impl Record {
    /// When it should be refreshed: a minute before it expires, or a quarter of its life
    /// for a shorter one.
    pub fn refresh_due(&self, now: u64) -> bool {
        let Some(exp) = self.expires_at else {
            return false;
        };
        let life = exp.saturating_sub(self.obtained_at);
        now + (life / 4).min(60) >= exp
    }
}

/// The store of one state directory. Every file of it is written and read the one way
/// (`statedir::file`): never through a link.
#[derive(Debug, Clone)]
pub struct Store {
    state: PathBuf,
    dir: PathBuf,
    key: PathBuf,
}

/// Held while a tool's sign-in is written.
#[derive(Debug)]
pub struct Lock(#[allow(dead_code)] std::fs::File);

/// The `oauth` directory's name in the state directory.
const DIR: &str = "oauth";

impl Store {
    pub fn of(state_dir: &Path) -> Store {
        // Beside the state directory, by the one function that places boxmaker's keys (the
        // config refuses a state directory with no name, and a mount that reaches the key).
        let key = config::own::beside(state_dir, config::own::OAUTH_KEY)
            .unwrap_or_else(|| state_dir.with_extension(config::own::OAUTH_KEY));
        Store {
            state: state_dir.to_path_buf(),
            dir: state_dir.join(DIR),
            key,
        }
    }

    pub fn key_path(&self) -> &Path {
        &self.key
    }

    pub fn path(&self, tool: &str) -> PathBuf {
        self.dir.join(token_name(tool))
    }

    /// `STATE/oauth`, made `0700` (the state directory too) when missing.
    fn made(&self) -> Result<Dir, StoreError> {
        Ok(Dir::own(&self.state)?.sub_make(DIR, 0o700)?)
    }

    /// `STATE/oauth` when it exists.
    fn existing(&self) -> Result<Option<Dir>, StoreError> {
        match Dir::own_existing(&self.state).and_then(|d| d.sub(DIR)) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Takes `tool`'s lock (waits for another writer).
    pub fn lock(&self, tool: &str) -> Result<Lock, StoreError> {
        let name = format!("{tool}.lock");
        let f = self.made()?.open_file(&name, Open::Lock, 0o600)?;
        rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive).map_err(|e| {
            StoreError::Io {
                what: "lock",
                path: self.dir.join(&name).display().to_string(),
                source: e.into(),
            }
        })?;
        Ok(Lock(f))
    }

    /// The key file's directory (beside the state directory) and its name.
    fn key_dir(&self) -> Result<(Dir, String), StoreError> {
        let bad = || StoreError::KeyBad {
            path: self.key.display().to_string(),
        };
        let name = self
            .key
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(bad)?;
        let dir = match self.key.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        Ok((Dir::open(dir)?, name.to_string()))
    }

    /// The key, made now when `create` and there is none.
    fn key(&self, create: bool) -> Result<Option<Zeroizing<[u8; KEY_LEN]>>, StoreError> {
        let shown = self.key.display().to_string();
        let (dir, name) = self.key_dir()?;
        let mut found = match dir.read(&name, FILE_LEN as u64) {
            Ok(Some(f)) => f,
            Ok(None) if create => {
                let mut k = Zeroizing::new([0u8; KEY_LEN]);
                SystemRandom::new()
                    .fill(k.as_mut())
                    .map_err(|_| StoreError::Random)?;
                let mut file = Zeroizing::new(k.to_vec());
                file.extend_from_slice(statedir::mark::seal(MARKED, k.as_ref())?.as_bytes());
                match dir.create_new(&name, &file, 0o600) {
                    Ok(()) => return Ok(Some(k)),
                    // Another process made one first: that one is the key.
                    Err(statedir::file::Error::Exists { .. }) => return self.key(false),
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(None) => return Ok(None),
            Err(
                statedir::file::Error::TooLarge { .. } | statedir::file::Error::NotAFile { .. },
            ) => {
                return Err(StoreError::KeyBad { path: shown });
            }
            Err(e) => return Err(e.into()),
        };
        // Checked on the file read: the key read is the file checked.
        let me = rustix::process::geteuid().as_raw();
        if found.bytes.len() != FILE_LEN {
            found.bytes.zeroize();
            // A key from before marks, one shipped, one cut short: nobody can say it is the
            // person's.
            return Err(StoreError::KeyUnmarked { path: shown });
        }
        if found.uid != me {
            return Err(StoreError::KeyOwner {
                path: shown,
                owner: found.uid,
                me,
            });
        }
        if found.mode & 0o077 != 0 {
            return Err(StoreError::KeyMode {
                path: shown,
                mode: found.mode,
            });
        }
        let mut k = Zeroizing::new([0u8; KEY_LEN]);
        k.copy_from_slice(found.bytes.get(..KEY_LEN).unwrap_or(&[0; KEY_LEN]));
        let mark = String::from_utf8_lossy(found.bytes.get(KEY_LEN..).unwrap_or(&[])).into_owned();
        found.bytes.zeroize();
        if !statedir::mark::verify(MARKED, k.as_ref(), &mark)? {
            return Err(StoreError::KeyUnmarked { path: shown });
        }
        Ok(Some(k))
    }

    /// `tool`'s sign-in for `server`, or `None` when it has none.
    pub fn load(&self, tool: &str, server: &str) -> Result<Option<Record>, StoreError> {
        let path = self.path(tool);
        let unreadable = || StoreError::Unreadable {
            tool: tool.to_string(),
            path: path.display().to_string(),
        };
        let Some(dir) = self.existing()? else {
            return Ok(None);
        };
        let sealed = match dir.read(&token_name(tool), MAX_FILE) {
            Ok(Some(f)) => f.bytes,
            Ok(None) => return Ok(None),
            Err(statedir::file::Error::TooLarge { .. }) => return Err(unreadable()),
            Err(e) => return Err(e.into()),
        };
        let Some(key) = self.key(false)? else {
            return Err(unreadable());
        };
        let rest = sealed.strip_prefix(MAGIC).ok_or_else(unreadable)?;
        if rest.len() < NONCE_LEN {
            return Err(unreadable());
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| unreadable())?;
        let key = LessSafeKey::new(
            UnboundKey::new(&CHACHA20_POLY1305, key.as_ref()).map_err(|_| unreadable())?,
        );
        let mut buf = Zeroizing::new(body.to_vec());
        let plain = key
            .open_in_place(nonce, Aad::from(aad(tool, server)), &mut buf)
            .map_err(|_| unreadable())?;
        let rec: Record = serde_json::from_slice(plain).map_err(|_| unreadable())?;
        if rec.tool != tool || rec.server != server {
            return Err(unreadable());
        }
        Ok(Some(rec))
    }

    /// Writes `rec` (sealed; atomically: a new file renamed over the old, `0600`).
    pub fn save(&self, rec: &Record) -> Result<(), StoreError> {
        let dir = self.made()?;
        let key = self.key(true)?.ok_or(StoreError::Random)?;
        let key = LessSafeKey::new(
            UnboundKey::new(&CHACHA20_POLY1305, key.as_ref()).map_err(|_| StoreError::Random)?,
        );
        let mut nonce = [0u8; NONCE_LEN];
        SystemRandom::new()
            .fill(&mut nonce)
            .map_err(|_| StoreError::Random)?;
        let mut buf = Zeroizing::new(serde_json::to_vec(rec).map_err(|_| StoreError::Random)?);
        key.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad(&rec.tool, &rec.server)),
            &mut *buf,
        )
        .map_err(|_| StoreError::Random)?;
        let mut sealed = Vec::with_capacity(MAGIC.len() + NONCE_LEN + buf.len());
        sealed.extend_from_slice(MAGIC);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&buf);
        dir.replace(&token_name(&rec.tool), &sealed, Mode::Private)?;
        Ok(())
    }

    /// Removes `tool`'s sign-in; whether there was one.
    pub fn remove(&self, tool: &str) -> Result<bool, StoreError> {
        match self.existing()? {
            Some(dir) => Ok(dir.remove(&token_name(tool))?),
            None => Ok(false),
        }
    }
}

fn token_name(tool: &str) -> String {
    format!("{tool}.token")
}

fn aad(tool: &str, server: &str) -> Vec<u8> {
    let mut a = b"boxmaker oauth 1\0".to_vec();
    a.extend_from_slice(tool.as_bytes());
    a.push(0);
    a.extend_from_slice(server.as_bytes());
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn rec(tool: &str) -> Record {
        let mut r = Record::default();
        r.tool = tool.into();
        r.server = "https://mcp.example.com/mcp".into();
        r.access_token = "at-0123456789".into();
        r.refresh_token = Some("rt-0123456789".into());
        r
    }

    #[test]
    fn a_record_round_trips_and_the_file_holds_no_token() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::of(&dir.path().join("state"));
        std::fs::create_dir(dir.path().join("state")).unwrap();
        s.save(&rec("gh")).unwrap();
        let back = s
            .load("gh", "https://mcp.example.com/mcp")
            .unwrap()
            .unwrap();
        assert_eq!(back.access_token, "at-0123456789");
        let bytes = std::fs::read(s.path("gh")).unwrap();
        assert!(!bytes.windows(13).any(|w| w == b"at-0123456789"));
        let mode = std::fs::metadata(s.key_path())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        assert!(format!("{back:?}").find("0123456789").is_none());
        assert!(s.load("other", "x").unwrap().is_none());
    }

    /// Attack: a token file changed by one bit, copied to another tool's name, or from
    /// another state directory, is refused with one sentence and never used.
    #[test]
    fn a_tampered_or_copied_token_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        for d in ["a", "b"] {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        let a = Store::of(&dir.path().join("a"));
        let b = Store::of(&dir.path().join("b"));
        a.save(&rec("gh")).unwrap();
        b.save(&rec("other")).unwrap();
        let server = "https://mcp.example.com/mcp";
        let good = std::fs::read(a.path("gh")).unwrap();
        for i in [0, MAGIC.len() + 3, good.len() / 2, good.len() - 1] {
            let mut bad = good.clone();
            bad[i] ^= 0x01;
            std::fs::write(a.path("gh"), &bad).unwrap();
            let e = a.load("gh", server).unwrap_err().to_string();
            assert!(
                e.contains("does not open") && e.contains("auth login gh"),
                "{e}"
            );
        }
        // Another tool's name in the same directory.
        std::fs::write(a.path("copy"), &good).unwrap();
        assert!(a.load("copy", server).is_err());
        // Another state directory (another key).
        std::fs::write(b.path("gh"), &good).unwrap();
        assert!(b.load("gh", server).is_err());
        // Another server URL for the same tool name.
        std::fs::write(a.path("gh"), &good).unwrap();
        assert!(a.load("gh", "https://evil.example/mcp").is_err());
        assert!(a.load("gh", server).is_ok());
    }

    /// Attack: a key file others may read is refused (the tokens it seals are not opened).
    #[test]
    fn a_key_file_others_may_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("s")).unwrap();
        let s = Store::of(&dir.path().join("s"));
        s.save(&rec("gh")).unwrap();
        std::fs::set_permissions(s.key_path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = s
            .load("gh", "https://mcp.example.com/mcp")
            .unwrap_err()
            .to_string();
        assert!(e.contains("mode 0644") && e.contains("chmod 600"), "{e}");
        assert!(s.save(&rec("gh")).is_err());
    }

    /// Attack: the repository ships `.boxmaker/` with links where the store's files go (a
    /// token, a lock, the `oauth` directory) or a link where the key goes: nothing is
    /// written through one, and no key is read through one.
    #[test]
    fn no_file_of_the_store_is_written_or_read_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        let theirs = [7u8; KEY_LEN];
        let state = dir.path().join("s");
        for (at, to) in [
            ("s/oauth/gh.token", "victim"),
            ("s/oauth/gh.lock", "victim"),
            ("s/oauth", "elsewhere"),
            ("s.oauth-key", "victim"),
        ] {
            let _ = std::fs::remove_dir_all(&state);
            let _ = std::fs::remove_file(dir.path().join("s.oauth-key"));
            let _ = std::fs::remove_dir_all(dir.path().join("elsewhere"));
            // The person's own state directory (marked), a link planted in it after.
            Dir::own(&state).unwrap();
            std::fs::create_dir_all(state.join("oauth")).unwrap();
            std::fs::create_dir(dir.path().join("elsewhere")).unwrap();
            std::fs::write(&victim, theirs).unwrap();
            std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
            let link = dir.path().join(at);
            let _ = std::fs::remove_dir(&link);
            std::os::unix::fs::symlink(dir.path().join(to), &link).unwrap();
            let s = Store::of(&state);
            let e = match at {
                "s/oauth/gh.lock" => s.lock("gh").unwrap_err(),
                _ => s.save(&rec("gh")).unwrap_err(),
            };
            assert!(e.to_string().contains("symbolic link"), "{at}: {e}");
            assert_eq!(std::fs::read(&victim).unwrap(), theirs, "{at}");
            assert_eq!(
                std::fs::read_dir(dir.path().join("elsewhere"))
                    .unwrap()
                    .count(),
                0
            );
        }
    }

    #[test]
    fn a_refresh_is_due_before_expiry() {
        let mut r = Record::default();
        r.obtained_at = 1000;
        r.expires_at = Some(4600);
        assert!(!r.refresh_due(4000));
        assert!(r.refresh_due(4541));
        let mut short = Record::default();
        short.obtained_at = 1000;
        short.expires_at = Some(1020);
        assert!(!short.refresh_due(1010));
        assert!(short.refresh_due(1016));
    }
}
