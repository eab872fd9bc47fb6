//! Whose config this is (docs/spec.md §6, "Whose config").
//!
//! Every command reads `boxmaker.toml` from the directory it runs in unless told otherwise,
//! and that directory is the project the person opened — which a repository can ship with a
//! `boxmaker.toml` of its own: `run` allowed with nobody asked, the person's home mounted, a
//! server of its choosing. Marking the state directory ([`crate::mark`]) keeps a shipped
//! database from speaking for the person; the config speaks louder. So a config is used
//! only when the person has **trusted** it, as `direnv allow` does for an `.envrc`:
//!
//! - a **record** under the person's state home, beside the mark key and never in a project
//!   — `trusted/<first 32 hex digits of SHA-256 of the path>` in the mark key's directory —
//!   says that the config at this path, with these bytes, is the person's:
//!   ```text
//!   boxmaker trusted config v1
//!   path /home/ann/proj/boxmaker.toml
//!   sha256 <64 hex digits of the bytes>
//!   mark <the mark key's seal of the path and the hash>
//!   ```
//! - [`record`] writes it (`boxmaker trust`, and the commands that write a config for the
//!   person: `init`, `add`, `demo`); [`check`] answers for the bytes a load read (the same
//!   bytes are then parsed: no second read can differ).
//!
//! The binding is the **path as given, made absolute** (links not followed) and the bytes:
//! a config's meaning is its text and its directory (relative paths, the state directory,
//! mounts are read against it), so the same bytes elsewhere, or a link to the person's
//! config from a repository's directory, are other configs. A change of a single byte needs
//! the person's word again; a project moved needs it too.
//!
//! **Must never:** trust a config by its name, its owner or its place alone; take a record's
//! word without checking its mark in constant time; keep a record anywhere a project can
//! write.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::file::{Dir, Error, Mode};
use crate::mark;

/// The directory of trust records, in the mark key's directory.
pub const DIR: &str = "trusted";

const HEADER: &str = "boxmaker trusted config v1";

/// What a record's mark seals (with the path and the hash).
const SEALED: &str = "trusted config";

/// The most bytes of a config a record keeps a copy of (to show what changed since).
const MAX_COPY: usize = 256 * 1024;

/// The most bytes a record may have (a path is at most 4096, the copy [`MAX_COPY`]).
const MAX_RECORD: u64 = 8192 + MAX_COPY as u64;

/// The line after which a record holds a copy of the bytes it trusted.
const COPY: &str = "bytes";

/// What the person's records say of a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trust {
    /// Trusted with these very bytes.
    Trusted,
    /// Never trusted at this path.
    Never,
    /// Trusted at this path, with other bytes.
    Changed,
}

/// The directory the records are kept in: `trusted/` beside the mark key.
pub fn dir_path() -> Result<PathBuf, Error> {
    let key = mark::key_path()?;
    Ok(key
        .parent()
        .map_or_else(|| PathBuf::from(DIR), |p| p.join(DIR)))
}

/// The path a config at `path` is bound by: absolute, `.` components gone, links not
/// followed (a link is its own config: see the module's documentation).
pub fn bound_path(path: &Path) -> Result<PathBuf, Error> {
    std::path::absolute(path).map_err(|e| Error::Io {
        what: "make absolute",
        path: path.to_path_buf(),
        source: e,
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `bytes`, 64 hex digits (what a record keeps of a config).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn record_name(path: &Path) -> String {
    let digest = sha256_hex(path.as_os_str().as_encoded_bytes());
    digest[..32].to_owned()
}

fn sealed_bytes(path: &Path, sha256: &str) -> Vec<u8> {
    let mut b = path.as_os_str().as_encoded_bytes().to_vec();
    b.push(0);
    b.extend_from_slice(sha256.as_bytes());
    b
}

/// Records that the config at `path` (bound as [`bound_path`] says) with `bytes` is the
/// person's. Returns the record's path.
pub fn record(path: &Path, bytes: &[u8]) -> Result<PathBuf, Error> {
    let path = bound_path(path)?;
    let sha = sha256_hex(bytes);
    let seal = mark::seal(SEALED, &sealed_bytes(&path, &sha))?;
    let mut text = format!(
        "{HEADER}\npath {}\nsha256 {sha}\nmark {seal}\n",
        path.display()
    )
    .into_bytes();
    // A copy of what was trusted, so that a change can be shown (`boxmaker trust --diff`);
    // it is only ever shown, and only when it hashes to the sealed `sha256`.
    if bytes.len() <= MAX_COPY {
        text.extend_from_slice(COPY.as_bytes());
        text.push(b'\n');
        text.extend_from_slice(bytes);
    }
    let dir = Dir::make(&dir_path()?, 0o700)?;
    let name = record_name(&path);
    dir.replace(&name, &text, Mode::Private)?;
    prune(&dir, &name);
    Ok(dir.join(&name))
}

/// Removes the records of configs that are gone (their path names nothing now: a project
/// deleted, a temporary directory cleaned): without this the records of every config ever
/// trusted — a test suite's thousands — would pile up. Only a record whose path is *not
/// found* goes (a directory that cannot be read now keeps its record), never `keep`, and
/// nothing here can make a config trusted. Best effort: a record that cannot be read or
/// removed stays.
fn prune(dir: &Dir, keep: &str) {
    let Ok(entries) = std::fs::read_dir(dir.path()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name == keep || name.len() != 32 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let Ok(Some(found)) = dir.read(name, MAX_RECORD) else {
            continue;
        };
        let mut lines = found.bytes.split(|b| *b == b'\n');
        if lines.next() != Some(HEADER.as_bytes()) {
            continue;
        }
        let Some(path) = lines
            .next()
            .and_then(|l| l.strip_prefix(b"path "))
            .and_then(|p| std::str::from_utf8(p).ok())
        else {
            continue;
        };
        let gone = std::fs::symlink_metadata(path)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
        if gone {
            let _ = dir.remove(name);
        }
    }
}

/// Removes the record for the config at `path`, if there is one (a config boxmaker wrote in
/// a temporary directory and is done with: `boxmaker demo`).
pub fn forget(path: &Path) -> Result<bool, Error> {
    let path = bound_path(path)?;
    let dir = match Dir::open(&dir_path()?) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(false),
        Err(e) => return Err(e),
    };
    dir.remove(&record_name(&path))
}

/// What the person's records say of the config at `path` (as [`bound_path`] binds it)
/// holding `bytes`. A record that is not the person's (no valid mark, another path) counts
/// as none.
pub fn check(path: &Path, bytes: &[u8]) -> Result<Trust, Error> {
    Ok(match record_of(path)? {
        Some((sha, _)) if sha == sha256_hex(bytes) => Trust::Trusted,
        Some(_) => Trust::Changed,
        None => Trust::Never,
    })
}

/// The bytes the person last trusted at `path` (as [`bound_path`] binds it), when the record
/// is theirs and kept a copy that hashes to what it sealed: to show what changed since.
pub fn trusted_bytes(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    Ok(match record_of(path)? {
        Some((sha, Some(copy))) if sha256_hex(&copy) == sha => Some(copy),
        _ => None,
    })
}

/// The person's record for the config at `path`, read once, its seal checked ([`sealed`]);
/// `None` when there is none of theirs.
fn record_of(path: &Path) -> Result<Option<Sealed>, Error> {
    let path = bound_path(path)?;
    let dir = match Dir::open(&dir_path()?) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e),
    };
    match dir.read(&record_name(&path), MAX_RECORD)? {
        Some(found) => sealed(&path, &found.bytes),
        None => Ok(None),
    }
}

/// What a record of the person's says: the hash it sealed, and the copy after it, if any.
type Sealed = (String, Option<Vec<u8>>);

/// A record's sealed hash (and the copy after it, if any), when the record is for `path`
/// and sealed by the person's mark key; `None` otherwise.
fn sealed(path: &Path, record: &[u8]) -> Result<Option<Sealed>, Error> {
    // The four lines of the head, then (optionally) `bytes` and the copy, raw.
    let mut rest = record;
    let mut head: Vec<&str> = Vec::with_capacity(4);
    while head.len() < 4 {
        let Some(end) = rest.iter().position(|b| *b == b'\n') else {
            return Ok(None);
        };
        let (line, tail) = rest.split_at(end);
        let Ok(line) = std::str::from_utf8(line) else {
            return Ok(None);
        };
        head.push(line);
        rest = tail.get(1..).unwrap_or_default();
    }
    let copy = rest
        .strip_prefix(COPY.as_bytes())
        .and_then(|r| r.strip_prefix(b"\n"))
        .map(<[u8]>::to_vec);
    let text = head.join("\n");
    let mut lines = text.lines();
    if lines.next() != Some(HEADER) {
        return Ok(None);
    }
    let field = |line: Option<&str>, key: &str| -> Option<String> {
        line?
            .strip_prefix(key)?
            .strip_prefix(' ')
            .map(str::to_owned)
    };
    let (Some(rec_path), Some(sha), Some(seal)) = (
        field(lines.next(), "path"),
        field(lines.next(), "sha256"),
        field(lines.next(), "mark"),
    ) else {
        return Ok(None);
    };
    // The record must be for this very path (a name is a hash's first half), and sealed
    // by the person's key over what it says.
    if Path::new(&rec_path) != path || !mark::verify(SEALED, &sealed_bytes(path, &sha), &seal)? {
        return Ok(None);
    }
    Ok(Some((sha, copy)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A config in a temporary directory, and its record removed at the end (these use
    /// the mark key and the records of the HOME the tests run with, as every command does).
    struct Case {
        _tmp: tempfile::TempDir,
        config: PathBuf,
        records: Vec<PathBuf>,
    }

    impl Case {
        fn new() -> Case {
            let tmp = tempfile::tempdir().unwrap();
            let config = tmp.path().join("boxmaker.toml");
            std::fs::write(&config, "[gate]\n").unwrap();
            Case {
                _tmp: tmp,
                config,
                records: Vec::new(),
            }
        }

        fn record(&mut self, path: &Path, bytes: &[u8]) -> PathBuf {
            let r = record(path, bytes).unwrap();
            self.records.push(r.clone());
            r
        }
    }

    impl Drop for Case {
        fn drop(&mut self) {
            for r in &self.records {
                let _ = std::fs::remove_file(r);
            }
        }
    }

    #[test]
    fn a_config_is_trusted_only_with_the_bytes_and_at_the_path_it_was_trusted() {
        let mut c = Case::new();
        let config = c.config.clone();
        assert_eq!(check(&config, b"[gate]\n").unwrap(), Trust::Never);
        let rec = c.record(&config, b"[gate]\n");
        assert_eq!(check(&config, b"[gate]\n").unwrap(), Trust::Trusted);
        // One byte more: the person's word is needed again.
        assert_eq!(check(&config, b"[gate]\n\n").unwrap(), Trust::Changed);
        // The same bytes elsewhere, or the same file through a link: other configs.
        let other = config.with_file_name("other.toml");
        assert_eq!(check(&other, b"[gate]\n").unwrap(), Trust::Never);
        let link = config.with_file_name("link.toml");
        std::os::unix::fs::symlink(&config, &link).unwrap();
        assert_eq!(check(&link, b"[gate]\n").unwrap(), Trust::Never);
        // A relative path is bound as the absolute one it names.
        let text = std::fs::read_to_string(&rec).unwrap();
        assert!(
            text.starts_with("boxmaker trusted config v1\npath /"),
            "{text}"
        );
        let meta = std::fs::metadata(&rec).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            0o600
        );
    }

    #[test]
    fn a_record_whose_lines_were_changed_is_no_record() {
        let mut c = Case::new();
        let config = c.config.clone();
        let rec = c.record(&config, b"ours");
        let text = std::fs::read_to_string(&rec).unwrap();
        let theirs = sha256_hex(b"theirs");
        // The hash changed to the shipped file's, the mark kept: not the person's.
        let forged: String = text
            .lines()
            .map(|l| {
                if l.starts_with("sha256 ") {
                    format!("sha256 {theirs}\n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        std::fs::write(&rec, forged).unwrap();
        assert_eq!(check(&config, b"theirs").unwrap(), Trust::Never);
        assert_eq!(check(&config, b"ours").unwrap(), Trust::Never);
        // A record for another path under this one's name, and malformed ones.
        let elsewhere = config.with_file_name("elsewhere.toml");
        // There, so that no other test's `record` prunes its record meanwhile.
        std::fs::write(&elsewhere, b"ours").unwrap();
        let other = record(&elsewhere, b"ours").unwrap();
        c.records.push(other.clone());
        std::fs::copy(&other, &rec).unwrap();
        assert_eq!(check(&config, b"ours").unwrap(), Trust::Never);
        for bad in [
            "",
            "boxmaker trusted config v1\n",
            "junk\npath x\nsha256 y\nmark z\n",
        ] {
            std::fs::write(&rec, bad).unwrap();
            assert_eq!(check(&config, b"ours").unwrap(), Trust::Never, "{bad:?}");
        }
        // The copy a record keeps is shown only when it hashes to what was sealed.
        let mine = c.record(&config, b"ours\n");
        assert_eq!(
            trusted_bytes(&config).unwrap().as_deref(),
            Some(&b"ours\n"[..])
        );
        let text = std::fs::read(&mine).unwrap();
        let tampered: Vec<u8> = text
            .strip_suffix(b"ours\n")
            .unwrap()
            .iter()
            .chain(b"theirs\n")
            .copied()
            .collect();
        std::fs::write(&mine, tampered).unwrap();
        assert_eq!(trusted_bytes(&config).unwrap(), None);
        // The head still holds: the bytes trusted are what the mark sealed.
        assert_eq!(check(&config, b"ours\n").unwrap(), Trust::Trusted);
        // A link where the record is: refused, never followed.
        std::fs::remove_file(&rec).unwrap();
        std::os::unix::fs::symlink(&other, &rec).unwrap();
        assert!(check(&config, b"ours").unwrap_err().is_link());
    }

    #[test]
    fn records_of_configs_that_are_gone_are_pruned_when_another_is_trusted() {
        let mut c = Case::new();
        let kept = c.record(&c.config.clone(), b"[gate]\n");
        // A config in a directory removed since it was trusted (a test's, a project deleted).
        let gone_dir = tempfile::tempdir().unwrap();
        let gone = gone_dir.path().join("boxmaker.toml");
        std::fs::write(&gone, "x").unwrap();
        let gone_record = c.record(&gone, b"x");
        // Checked while its config is still there: the records are the test HOME's, shared
        // with the tests running beside this one, and any of them trusting a config prunes
        // this record once its directory is gone (a CI run saw it go before this check).
        assert!(gone_record.exists());
        drop(gone_dir);
        // A junk file of another name in the directory is left alone.
        let junk = kept.with_file_name("notes.txt");
        std::fs::write(&junk, "mine").unwrap();
        let mut again = Case::new();
        again.record(&again.config.clone(), b"[gate]\n");
        assert!(
            !gone_record.exists(),
            "the record of a config that is gone stayed"
        );
        assert!(
            kept.exists(),
            "the record of a config that is there was pruned"
        );
        assert_eq!(check(&c.config, b"[gate]\n").unwrap(), Trust::Trusted);
        assert!(junk.exists());
        let _ = std::fs::remove_file(&junk);
    }
}
