//! The discovery file, `tools.json` in the state directory: for each server command line,
//! the tools it offered when last asked and the tools an operator accepted.
//!
//! Several processes use it (the front's host discovers, the runner records what a running
//! server says, `boxmaker tools accept` accepts), so every change takes an exclusive lock on
//! `tools.lock`, reads, changes, and replaces the file atomically (write, fsync, rename).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use statedir::file::{Dir, Mode, Open};

use crate::{ToolDef, server_key};

/// The file's name in the state directory.
pub const FILE: &str = "tools.json";
const LOCK: &str = "tools.lock";
/// The format version this build reads and writes.
pub const VERSION: u32 = 1;
/// A discovery file larger than this is refused as damaged (and never written).
const MAX_BYTES: u64 = 256 << 20;

/// Why the discovery file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// Written or read the one way (`statedir::file`): a link refused (a repository can
    /// ship `.boxmaker/`), a failed write.
    #[error(transparent)]
    File(#[from] statedir::file::Error),
    #[error("cannot {what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("not recorded: {0}")]
    Refused(String),
    #[error(
        "{path} is damaged ({detail}); move it away and run `boxmaker tools refresh` to \
         discover (and accept) every server's tools again"
    )]
    Damaged { path: PathBuf, detail: String },
}

/// What one server command line offered, and what was accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerRecord {
    pub argv: Vec<String>,
    /// When it was last asked (seconds since the epoch).
    pub discovered: u64,
    /// Its tools when last asked.
    pub tools: Vec<ToolDef>,
    /// The tools an operator accepted: those first seen, until `boxmaker tools accept`.
    pub accepted: Vec<ToolDef>,
}

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    pub version: u32,
    pub servers: BTreeMap<String, ServerRecord>,
}

impl Default for ToolsFile {
    fn default() -> Self {
        Self {
            version: VERSION,
            servers: BTreeMap::new(),
        }
    }
}

impl ToolsFile {
    /// Reads the file in `state_dir`; a missing file is an empty one.
    pub fn load(state_dir: &Path) -> Result<Self, CatalogError> {
        match Dir::own_existing(state_dir) {
            Ok(dir) => read(&dir),
            Err(e) if e.is_not_found() => Ok(ToolsFile::default()),
            Err(e) => Err(e.into()),
        }
    }

    /// Changes the file in `state_dir` under its lock: reads it, lets `f` change it, and
    /// writes it back if `f` changed it. Returns what `f` returned.
    pub fn update<T>(
        state_dir: &Path,
        f: impl FnOnce(&mut ToolsFile) -> T,
    ) -> Result<T, CatalogError> {
        let dir = Dir::own(state_dir)?;
        let lock = dir.open_file(LOCK, Open::Lock, 0o600)?;
        lock.lock().map_err(|source| CatalogError::Io {
            what: "lock",
            path: dir.join(LOCK),
            source,
        })?;
        let mut file = read(&dir)?;
        let before = file.clone();
        let out = f(&mut file);
        if file != before {
            write(&dir, &file)?;
        }
        drop(lock);
        Ok(out)
    }

    /// Records that the server `argv` offers `tools` now. The first time a command line is
    /// seen its tools are also accepted (trust on first use, reported by `boxmaker tools
    /// list`); afterwards only an operator accepts. Returns whether anything differs from
    /// what was accepted.
    pub fn record(&mut self, argv: &[String], tools: Vec<ToolDef>, now: u64) -> bool {
        let rec = self
            .servers
            .entry(server_key(argv))
            .or_insert_with(|| ServerRecord {
                argv: argv.to_vec(),
                discovered: now,
                tools: tools.clone(),
                accepted: tools.clone(),
            });
        if rec.tools != tools {
            rec.tools = tools;
            rec.discovered = now;
        }
        rec.tools != rec.accepted
    }

    /// Accepts the current definition of tool `name` of server `argv` (adds it, replaces
    /// it, or, if the server no longer offers it, forgets it). Returns whether it changed.
    pub fn accept(&mut self, argv: &[String], name: &str) -> bool {
        let Some(rec) = self.servers.get_mut(&server_key(argv)) else {
            return false;
        };
        let seen = rec.tools.iter().find(|d| d.name == name).cloned();
        let at = rec.accepted.iter().position(|d| d.name == name);
        match (seen, at) {
            (Some(s), Some(i)) => {
                let changed = rec.accepted.get(i) != Some(&s);
                if let Some(slot) = rec.accepted.get_mut(i) {
                    *slot = s;
                }
                changed
            }
            (Some(s), None) => {
                rec.accepted.push(s);
                true
            }
            (None, Some(i)) => {
                rec.accepted.remove(i);
                true
            }
            (None, None) => false,
        }
    }
}

fn read(dir: &Dir) -> Result<ToolsFile, CatalogError> {
    let path = dir.join(FILE);
    let path = path.as_path();
    let text = match dir.read(FILE, MAX_BYTES) {
        Ok(Some(found)) => found.bytes,
        Ok(None) => return Ok(ToolsFile::default()),
        Err(statedir::file::Error::TooLarge { .. }) => {
            return Err(CatalogError::Damaged {
                path: path.to_path_buf(),
                detail: format!("larger than {MAX_BYTES} bytes"),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let damaged = |detail: String| CatalogError::Damaged {
        path: path.to_path_buf(),
        detail,
    };
    let f: ToolsFile = serde_json::from_slice(&text).map_err(|e| damaged(e.to_string()))?;
    if f.version != VERSION {
        return Err(damaged(format!(
            "format version {} where this build knows {VERSION}",
            f.version
        )));
    }
    Ok(f)
}

fn write(dir: &Dir, f: &ToolsFile) -> Result<(), CatalogError> {
    let path = dir.join(FILE);
    let io = |what, source| CatalogError::Io {
        what,
        path: path.clone(),
        source,
    };
    let mut body = serde_json::to_vec_pretty(f).map_err(|e| io("encode", e.into()))?;
    body.push(b'\n');
    // Never write a file this build could not read back (too large, nested past serde's
    // depth limit): that would turn one server's odd tool list into a denial of every one.
    if body.len() as u64 > MAX_BYTES {
        return Err(CatalogError::Refused(format!(
            "the discovery file would be {} bytes, over {MAX_BYTES}",
            body.len()
        )));
    }
    if let Err(e) = serde_json::from_slice::<ToolsFile>(&body) {
        return Err(CatalogError::Refused(format!(
            "the discovery file would not read back ({e})"
        )));
    }
    // The one way (`statedir::file`): a temporary file beside it, never through a link,
    // fsynced, renamed over it.
    dir.replace(FILE, &body, Mode::Private)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(name: &str, d: &str) -> ToolDef {
        ToolDef {
            name: name.into(),
            title: None,
            description: Some(d.into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
        }
    }

    #[test]
    fn first_sight_is_accepted_and_later_changes_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let argv = vec!["srv".to_string()];
        let differs =
            ToolsFile::update(dir.path(), |f| f.record(&argv, vec![def("a", "1")], 5)).unwrap();
        assert!(!differs);
        let differs =
            ToolsFile::update(dir.path(), |f| f.record(&argv, vec![def("a", "2")], 6)).unwrap();
        assert!(differs);
        let f = ToolsFile::load(dir.path()).unwrap();
        let rec = f.servers.values().next().unwrap();
        assert_eq!(rec.accepted, vec![def("a", "1")]);
        assert_eq!(rec.tools, vec![def("a", "2")]);
        ToolsFile::update(dir.path(), |f| assert!(f.accept(&argv, "a"))).unwrap();
        let f = ToolsFile::load(dir.path()).unwrap();
        assert_eq!(
            f.servers.values().next().unwrap().accepted,
            vec![def("a", "2")]
        );
    }

    #[test]
    fn accepting_a_removed_tool_forgets_it_and_an_added_one_adds_it() {
        let argv = vec!["srv".to_string()];
        let mut f = ToolsFile::default();
        f.record(&argv, vec![def("old", "o")], 1);
        f.record(&argv, vec![def("new", "n")], 2);
        assert!(f.accept(&argv, "old"));
        assert!(f.accept(&argv, "new"));
        assert!(!f.accept(&argv, "nothing"));
        let rec = f.servers.values().next().unwrap();
        assert_eq!(rec.accepted, vec![def("new", "n")]);
    }

    #[test]
    fn a_damaged_file_is_an_error_that_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        // The person's state directory (marked, docs/spec.md §6 "Whose state"), then damaged.
        Dir::own(dir.path()).unwrap();
        std::fs::write(dir.path().join(FILE), "{not json").unwrap();
        let e = ToolsFile::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("damaged") && e.contains("tools refresh"), "{e}");
        std::fs::write(dir.path().join(FILE), r#"{"version":9,"servers":{}}"#).unwrap();
        let e = ToolsFile::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("version 9"), "{e}");
        // An update never overwrites a damaged file with an empty one.
        assert!(ToolsFile::update(dir.path(), |_| ()).is_err());
    }

    #[test]
    fn the_file_its_lock_and_the_state_directory_are_never_written_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("bashrc");
        std::fs::write(&victim, "export IMPORTANT=1\n").unwrap();
        let state = dir.path().join("state");
        let argv = vec!["srv".to_string()];
        for name in [FILE, LOCK] {
            let _ = std::fs::remove_dir_all(&state);
            std::fs::create_dir(&state).unwrap();
            std::os::unix::fs::symlink(&victim, state.join(name)).unwrap();
            let e =
                ToolsFile::update(&state, |f| f.record(&argv, vec![def("a", "1")], 1)).unwrap_err();
            assert!(e.to_string().contains("symbolic link"), "{name}: {e}");
            assert_eq!(
                std::fs::read_to_string(&victim).unwrap(),
                "export IMPORTANT=1\n"
            );
        }
        std::fs::remove_dir_all(&state).unwrap();
        std::os::unix::fs::symlink(dir.path(), &state).unwrap();
        assert!(ToolsFile::update(&state, |f| f.record(&argv, vec![def("a", "1")], 1)).is_err());
        assert!(ToolsFile::load(&state).is_err());
        assert!(!dir.path().join(FILE).exists());
    }

    #[test]
    fn a_definition_nested_past_what_reads_back_is_never_written() {
        let dir = tempfile::tempdir().unwrap();
        let argv = vec!["srv".to_string()];
        ToolsFile::update(dir.path(), |f| f.record(&argv, vec![def("a", "1")], 1)).unwrap();
        let mut deep = serde_json::Value::Null;
        for _ in 0..200 {
            deep = json!({ "d": deep });
        }
        let mut bad = def("a", "1");
        bad.input_schema = deep;
        let e = ToolsFile::update(dir.path(), |f| f.record(&argv, vec![bad], 2)).unwrap_err();
        assert!(e.to_string().contains("read back"), "{e}");
        // The file on disk is the one before, whole.
        let f = ToolsFile::load(dir.path()).unwrap();
        assert_eq!(
            f.servers.values().next().unwrap().tools,
            vec![def("a", "1")]
        );
    }

    #[test]
    fn a_missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(ToolsFile::load(dir.path()).unwrap(), ToolsFile::default());
    }
}
