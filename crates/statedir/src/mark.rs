//! Whose state this is (docs/spec.md §6, "Whose state").
//!
//! The repository a person opens can ship `.boxmaker/` — the default state directory,
//! beside the config in the project — with a `boxmaker.db` in it that holds a run-time grant
//! allowing every tool, sign-ins sealed for the attacker's accounts, tokens the attacker
//! knows; and the keys beside it (`STATE.audit-key`, `STATE.oauth-key`). Nothing in a
//! project can say who made it. So boxmaker keeps one secret of the person's **outside every
//! project** — the mark key, `$XDG_STATE_HOME/boxmaker/mark.key` (else
//! `~/.local/state/boxmaker/mark.key`), 32 random bytes made `0600` on first use — and
//! marks with it what it makes:
//!
//! - a **state directory** bears a file [`MARK`]: a random id and the HMAC-SHA256 of it
//!   under the mark key. [`check_state`] (every [`crate::file::Dir::own`]) uses a state
//!   directory only when its mark is the person's; one that holds boxmaker's files with no
//!   mark, or a mark made with another key, is refused whole, before anything in it is read.
//!   A directory that holds nothing at all (new, or an empty one the person made) is
//!   marked then and there: nothing in it could carry trust;
//! - a **key file** beside it carries a `mark` line, [`seal`] of what the key is: a key
//!   without the person's mark is never used ([`verify`]).
//!
//! A mark binds no path: a project moved or renamed keeps its state. It binds the person's
//! key, which no repository holds: a shipped mark was made with another key and fails.
//!
//! **Must never:** take a mark's word without checking its HMAC in constant time, keep the
//! mark key anywhere a project can write, or make a mark over a directory that holds
//! anything.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::file::{Dir, Error};

/// The mark's file name in a state directory.
pub const MARK: &str = "mark";

/// The mark key's file name in the person's state home.
pub const KEY_FILE: &str = "mark.key";

const KEY_HEADER: &str = "# boxmaker mark key (docs/spec.md §6, \"Whose state\"): it marks the \
                          state directories and keys boxmaker made for you; keep it secret, \
                          never in a project";
const MARK_HEADER: &str = "boxmaker state mark v1";

/// The most bytes a mark or a mark key file may have.
const MAX_FILE: u64 = 4096;

/// The mark key, once read, for the path it was read from.
static KEY: Mutex<Option<(PathBuf, Zeroizing<[u8; 32]>)>> = Mutex::new(None);

/// Where the person's mark key is: `$XDG_STATE_HOME/boxmaker/mark.key` when that is an
/// absolute path, else `$HOME/.local/state/boxmaker/mark.key`.
pub fn key_path() -> Result<PathBuf, Error> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(x) = absolute("XDG_STATE_HOME") {
        return Ok(x.join("boxmaker").join(KEY_FILE));
    }
    match absolute("HOME") {
        Some(h) => Ok(h.join(".local/state/boxmaker").join(KEY_FILE)),
        None => Err(Error::NoHome),
    }
}

/// HMAC-SHA256 (RFC 2104) of `parts`, concatenated, under `key`.
fn hmac(key: &[u8; 32], parts: &[&[u8]]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    for p in parts {
        inner.update(p);
    }
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    outer.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Equal, in time that does not depend on where they differ.
fn same(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The person's mark key: read, or made `0600` when there is none.
fn user_key() -> Result<Zeroizing<[u8; 32]>, Error> {
    let path = key_path()?;
    let mut cached = KEY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, k)) = cached.as_ref().filter(|(p, _)| *p == path) {
        return Ok(k.clone());
    }
    let key = read_or_make_key(&path)?;
    *cached = Some((path, key.clone()));
    Ok(key)
}

fn key_error(path: &Path, why: impl Into<String>) -> Error {
    Error::MarkKey {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

fn read_or_make_key(path: &Path) -> Result<Zeroizing<[u8; 32]>, Error> {
    let (parent, name) = match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(p), Some(n)) => (p, n),
        _ => return Err(key_error(path, "that is not a file's path")),
    };
    // The person's own directory, as the kernel resolves it (links in a home are theirs).
    let dir = Dir::make(parent, 0o700)?;
    for attempt in 0..2 {
        if let Some(found) = dir.read(name, MAX_FILE)? {
            if found.mode & 0o077 != 0 {
                return Err(key_error(
                    path,
                    format!(
                        "other users can read it (mode {:03o}): run `chmod 600 {}`",
                        found.mode,
                        path.display()
                    ),
                ));
            }
            let me = rustix::process::geteuid().as_raw();
            if found.uid != me {
                return Err(key_error(
                    path,
                    format!("it belongs to user {}, not to you (user {me})", found.uid),
                ));
            }
            let text = Zeroizing::new(String::from_utf8(found.bytes).unwrap_or_default());
            let key = text
                .lines()
                .find_map(|l| l.strip_prefix("key "))
                .and_then(|h| unhex::<32>(h.trim()));
            return match key {
                Some(k) => Ok(Zeroizing::new(k)),
                None => Err(key_error(
                    path,
                    "it is not a boxmaker mark key (no `key` line of 64 hex digits): move it \
                     away to have a new one made (what the old key marked is then refused)",
                )),
            };
        }
        if attempt == 1 {
            break;
        }
        let mut key = Zeroizing::new([0u8; 32]);
        getrandom::fill(key.as_mut_slice())
            .map_err(|e| key_error(path, format!("the system's randomness failed ({e})")))?;
        let text = Zeroizing::new(format!("{KEY_HEADER}\nkey {}\n", hex(key.as_slice())));
        match dir.create_new(name, text.as_bytes(), 0o600) {
            Ok(()) => return Ok(key),
            // Another process made it first: read theirs.
            Err(Error::Exists { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(key_error(
        path,
        "it appeared and vanished while boxmaker made it",
    ))
}

/// The `mark` of `what` (a key file's kind and its bytes): 64 hex digits a key file keeps
/// beside the key, which only the person's mark key makes.
pub fn seal(what: &str, bytes: &[u8]) -> Result<String, Error> {
    let key = user_key()?;
    Ok(hex(&hmac(
        &key,
        &[b"boxmaker mark v1\0", what.as_bytes(), b"\0", bytes],
    )))
}

/// Whether `mark` (64 hex digits) is the person's [`seal`] of `what`.
pub fn verify(what: &str, bytes: &[u8], mark: &str) -> Result<bool, Error> {
    let key = user_key()?;
    let want = hmac(
        &key,
        &[b"boxmaker mark v1\0", what.as_bytes(), b"\0", bytes],
    );
    Ok(unhex::<32>(mark.trim()).is_some_and(|m| same(&m, &want)))
}

/// The first entry `dir` holds, whatever its name: an unmarked directory is taken only when
/// it is empty. A list of the names boxmaker reads would miss the next one it reads (a
/// shipped `http.key` alone signed the person's HTTP credentials), so nothing is trusted to
/// be harmless by its name.
fn first_entry(dir: &Dir) -> Result<Option<String>, Error> {
    let io = |e: std::io::Error| Error::Io {
        what: "list",
        path: dir.path().to_path_buf(),
        source: e,
    };
    let fd = rustix::fs::openat(
        dir.fd(),
        ".",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| io(e.into()))?;
    let mut entries = rustix::fs::Dir::read_from(&fd).map_err(|e| io(e.into()))?;
    for entry in entries.by_ref() {
        let entry = entry.map_err(|e| io(e.into()))?;
        let name = entry.file_name().to_string_lossy();
        // Another opener's mark, being written (`Dir::create_new`'s temporary file, which
        // nothing reads) or just linked in after this one looked for it, is not content:
        // first openers of a new directory race, and the mark is read again below.
        let marking = name == MARK || name.starts_with(".mark.") && name.ends_with(".tmp");
        if name != "." && name != ".." && !marking {
            return Ok(Some(name.into_owned()));
        }
    }
    Ok(None)
}

/// A state directory is used only when it bears the person's mark (see the module's doc).
/// Unmarked and holding nothing of boxmaker's: marked now.
pub(crate) fn check_state(dir: &Dir) -> Result<(), Error> {
    let unmarked = |why: String| Error::Unmarked {
        path: dir.path().to_path_buf(),
        why,
    };
    for attempt in 0..2 {
        if let Some(found) = dir.read(MARK, MAX_FILE)? {
            let text = String::from_utf8(found.bytes).unwrap_or_default();
            let mut lines = text.lines();
            let header = lines.next();
            let id = lines.next().and_then(|l| l.strip_prefix("id "));
            let mac = lines.next().and_then(|l| l.strip_prefix("mac "));
            let (Some(MARK_HEADER), Some(id), Some(mac)) = (header, id, mac) else {
                return Err(unmarked("its mark is not one boxmaker writes".into()));
            };
            if unhex::<16>(id).is_none() {
                return Err(unmarked("its mark is not one boxmaker writes".into()));
            }
            return if verify("state directory", id.as_bytes(), mac)? {
                Ok(())
            } else {
                Err(unmarked(
                    "its mark was made with another key than yours, so not by you on this \
                     machine"
                        .into(),
                ))
            };
        }
        if let Some(name) = first_entry(dir)? {
            return Err(unmarked(format!("it holds files ({name}) but no mark")));
        }
        if attempt == 1 {
            break;
        }
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).map_err(|e| Error::Io {
            what: "make a mark for",
            path: dir.path().to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let id = hex(&id);
        let mac = seal("state directory", id.as_bytes())?;
        match dir.create_new(
            MARK,
            format!("{MARK_HEADER}\nid {id}\nmac {mac}\n").as_bytes(),
            0o600,
        ) {
            Ok(()) => return Ok(()),
            // Another process marked it first: check theirs.
            Err(Error::Exists { .. }) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(unmarked(
        "its mark appeared and vanished while boxmaker made one".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_is_rfc_4231s() {
        // RFC 4231 test case 2 has a 4-byte key; ours are 32 bytes, so check the
        // construction against case 2 with the key zero-padded (HMAC pads it the same way).
        let mut key = [0u8; 32];
        key[..4].copy_from_slice(b"Jefe");
        assert_eq!(
            hex(&hmac(&key, &[b"what do ya want ", b"for nothing?"])),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    /// (These use the mark key of the HOME the tests run with, as every command does.)
    fn state() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        (tmp, state)
    }

    #[test]
    fn a_new_state_directory_is_marked_and_opens_again() {
        let (_tmp, state) = state();
        Dir::own(&state).unwrap();
        let mark = std::fs::read_to_string(state.join(MARK)).unwrap();
        assert!(mark.starts_with("boxmaker state mark v1\nid "), "{mark}");
        std::fs::write(state.join("boxmaker.db"), "ours").unwrap();
        Dir::own(&state).unwrap();
        Dir::own_existing(&state).unwrap();
    }

    #[test]
    fn an_empty_directory_is_marked_but_one_holding_anything_is_refused() {
        let (_tmp, state) = state();
        std::fs::create_dir(&state).unwrap();
        Dir::own(&state).unwrap();
        assert!(state.join(MARK).exists());
        for name in [
            "boxmaker.db",
            "tools.json",
            "oauth",
            "approvals.token",
            "pins",
        ] {
            let (_tmp, shipped) = self::state();
            std::fs::create_dir(&shipped).unwrap();
            std::fs::write(shipped.join(name), "shipped").unwrap();
            let e = Dir::own(&shipped).unwrap_err().to_string();
            assert!(
                e.contains("was not made by boxmaker for you")
                    && e.contains(&format!("holds files ({name}) but no mark")),
                "{e}"
            );
            assert!(
                !shipped.join(MARK).exists(),
                "a shipped directory was marked"
            );
        }
    }

    #[test]
    fn a_mark_made_with_another_key_or_not_boxmakers_is_refused() {
        let (_tmp, state) = state();
        std::fs::create_dir(&state).unwrap();
        std::fs::write(state.join("boxmaker.db"), "shipped").unwrap();
        let other = [7u8; 32];
        let id = "00112233445566778899aabbccddeeff";
        let forged = hex(&hmac(
            &other,
            &[
                b"boxmaker mark v1\0",
                b"state directory",
                b"\0",
                id.as_bytes(),
            ],
        ));
        std::fs::write(
            state.join(MARK),
            format!("{MARK_HEADER}\nid {id}\nmac {forged}\n"),
        )
        .unwrap();
        let e = Dir::own(&state).unwrap_err().to_string();
        assert!(e.contains("made with another key than yours"), "{e}");
        for text in [
            "",
            "boxmaker state mark v1\n",
            "id x\nmac y\n",
            "boxmaker state mark v1\nid zz\nmac 00\n",
        ] {
            std::fs::write(state.join(MARK), text).unwrap();
            let e = Dir::own(&state).unwrap_err().to_string();
            assert!(e.contains("not one boxmaker writes"), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_link_at_the_mark_or_at_a_name_is_refused_as_a_link() {
        let (tmp, state) = state();
        std::fs::create_dir(&state).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::write(&elsewhere, "x").unwrap();
        std::os::unix::fs::symlink(&elsewhere, state.join(MARK)).unwrap();
        let e = Dir::own(&state).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        std::fs::remove_file(state.join(MARK)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, state.join("boxmaker.db")).unwrap();
        let e = Dir::own(&state).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
    }

    #[test]
    fn many_openers_of_a_new_directory_at_once_agree_on_one_mark() {
        let (_tmp, state) = state();
        std::fs::create_dir(&state).unwrap();
        let opened: Vec<Result<(), String>> = std::thread::scope(|s| {
            let all: Vec<_> = (0..8)
                .map(|_| s.spawn(|| Dir::own(&state).map(drop).map_err(|e| e.to_string())))
                .collect();
            all.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(opened.iter().all(Result::is_ok), "{opened:?}");
        let mark = std::fs::read_to_string(state.join(MARK)).unwrap();
        for _ in 0..3 {
            Dir::own(&state).unwrap();
            assert_eq!(std::fs::read_to_string(state.join(MARK)).unwrap(), mark);
        }
    }

    #[test]
    fn a_seal_verifies_only_for_what_it_sealed() {
        let m = seal("audit key", b"secret 00").unwrap();
        assert!(verify("audit key", b"secret 00", &m).unwrap());
        assert!(!verify("audit key", b"secret 01", &m).unwrap());
        assert!(!verify("oauth key", b"secret 00", &m).unwrap());
        assert!(!verify("audit key", b"secret 00", "00").unwrap());
    }

    #[test]
    fn unhex_takes_only_lower_case_of_the_length() {
        assert_eq!(unhex::<2>("0aff"), Some([0x0a, 0xff]));
        assert_eq!(unhex::<2>("0AFF"), None);
        assert_eq!(unhex::<2>("0af"), None);
        assert_eq!(unhex::<2>("0a+f"), None);
    }
}
