//! What a kept `.git` names in its work tree (docs/spec.md §4, "What a writable mount
//! keeps"): the places git runs code from or reads its config from that lie in the mount
//! beside `.git`, and so a box could write even with `.git` itself read-only —
//! `core.hooksPath = .husky` (the person's next commit runs `.husky/pre-commit`), an
//! `include.path` of a file in the work tree (it could add `core.fsmonitor`), a submodule's
//! work tree (its `.git` file could be pointed at a git directory the box made, whose
//! `core.fsmonitor` the person's `git status` runs).
//!
//! Read only from the git directory a box cannot change (the kept `.git`, and what it
//! includes from the work tree, which is kept in turn), bounded in bytes, files and depth.
//! The answer is names in the mount's top directory: only those hold (a box renames the
//! directory that holds a deeper one).
//!
//! **Must never:** run git (running git in a directory a box can write is the hazard), or
//! follow a symlink out of the mount.

use std::path::{Component, Path, PathBuf};

/// The most bytes read of one config file, or of a `.git` file.
const MAX_FILE: u64 = 1 << 20;
/// The most config files read for one mount.
const MAX_FILES: usize = 256;
/// How deep `modules/` nests, and includes include.
const MAX_DEPTH: usize = 8;

/// Names in `root`'s top directory that the git directory of `root/.git` names as a place
/// git runs code from or reads config from (not `.git` itself), sorted, each once.
pub fn named_by_git(root: &Path) -> Vec<String> {
    let mut walk = Walk {
        root,
        names: Vec::new(),
        files: 0,
    };
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return Vec::new();
    };
    let gitdir = if meta.is_dir() {
        dot_git
    } else if meta.is_file() {
        // A linked work tree's or an absorbed submodule's pointer: `gitdir: PATH`.
        let Some(text) = read_small(&dot_git) else {
            return Vec::new();
        };
        let Some(target) = text.strip_prefix("gitdir: ") else {
            return Vec::new();
        };
        let target = config::own::lexical(&root.join(target.trim_end_matches(['\n', '\r'])));
        walk.note(&target);
        target
    } else {
        return Vec::new();
    };
    walk.git_dir(&gitdir, root, 0);
    walk.names.sort();
    walk.names.dedup();
    walk.names
}

struct Walk<'a> {
    root: &'a Path,
    names: Vec<String>,
    files: usize,
}

impl Walk<'_> {
    /// Keeps the top name of `path` when it lies in the mount (and is not `.git`).
    fn note(&mut self, path: &Path) {
        let Ok(rel) = config::own::lexical(path)
            .strip_prefix(self.root)
            .map(Path::to_path_buf)
        else {
            return;
        };
        if let Some(Component::Normal(top)) = rel.components().next()
            && let Some(top) = top.to_str()
            && top != ".git"
        {
            self.names.push(top.to_owned());
        }
    }

    /// A git directory whose work tree is `worktree`: its config files, then its modules.
    fn git_dir(&mut self, gitdir: &Path, worktree: &Path, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        for name in ["config", "config.worktree"] {
            self.config_file(&gitdir.join(name), worktree, depth);
        }
        self.modules(&gitdir.join("modules"), depth + 1);
    }

    /// Every git directory under `modules` (a submodule's name may hold `/`): its work tree
    /// (`core.worktree`, relative to it) is kept, and read as a work tree of its own.
    fn modules(&mut self, dir: &Path, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            if self.files >= MAX_FILES {
                return;
            }
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if path.join("HEAD").is_file() || path.join("config").is_file() {
                let worktree = read_config(&path.join("config"))
                    .into_iter()
                    .find(|(k, _)| k == "core.worktree")
                    .map(|(_, v)| config::own::lexical(&path.join(v)));
                self.files += 1;
                if let Some(w) = &worktree {
                    self.note(w);
                }
                let worktree = worktree.unwrap_or_else(|| self.root.to_path_buf());
                self.git_dir(&path, &worktree, depth + 1);
            } else {
                self.modules(&path, depth + 1);
            }
        }
    }

    /// One config file: `core.hooksPath` (relative to the work tree) and each
    /// `include.path`/`includeIf.*.path` (relative to the file's directory), the included
    /// files read in turn.
    fn config_file(&mut self, file: &Path, worktree: &Path, depth: usize) {
        if depth > MAX_DEPTH || self.files >= MAX_FILES {
            return;
        }
        self.files += 1;
        let dir = file.parent().unwrap_or(self.root).to_path_buf();
        for (key, value) in read_config(file) {
            let home = || std::env::var_os("HOME").map(PathBuf::from);
            let expand = |base: &Path| -> Option<PathBuf> {
                if let Some(rest) = value.strip_prefix("~/") {
                    Some(home()?.join(rest))
                } else {
                    Some(base.join(&value))
                }
            };
            if key == "core.hookspath" {
                if let Some(p) = expand(worktree) {
                    self.note(&p);
                }
            } else if (key == "include.path"
                || (key.starts_with("includeif.") && key.ends_with(".path")))
                && let Some(p) = expand(&dir)
            {
                let p = config::own::lexical(&p);
                if p.starts_with(self.root) {
                    self.note(&p);
                    self.config_file(&p, worktree, depth + 1);
                }
            }
        }
    }
}

/// A file's text, when it is a regular file of at most [`MAX_FILE`] bytes (not followed
/// through a symlink) and UTF-8.
fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// The `section.key` (and `section.subsection.key`) pairs of a git config file, section
/// and key names lower-cased (git's are case-insensitive), values unquoted. Lines it cannot
/// read are skipped: it only ever looks for more to keep.
fn read_config(path: &Path) -> Vec<(String, String)> {
    let Some(text) = read_small(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let Some(end) = rest.find(']') else { continue };
            let head = &rest[..end];
            section = match head.split_once(char::is_whitespace) {
                // `[includeIf "gitdir:…"]`: the subsection keeps its case.
                Some((name, sub)) => format!(
                    "{}.{}",
                    name.to_ascii_lowercase(),
                    sub.trim().trim_matches('"')
                ),
                None => head.to_ascii_lowercase(),
            };
            // A key on the header's line: `[core] hooksPath = x`.
            let after = rest[end + 1..].trim();
            if let Some(kv) = key_value(after) {
                out.push((format!("{section}.{}", kv.0), kv.1));
            }
            continue;
        }
        if let Some((key, value)) = key_value(line) {
            out.push((format!("{section}.{key}"), value));
        }
    }
    out
}

/// `key = value` (the key lower-cased, the value unquoted, a comment after it dropped).
fn key_value(line: &str) -> Option<(String, String)> {
    let (key, raw) = line.split_once('=')?;
    let key = key.trim();
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return None;
    }
    let mut value = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => value.push('\n'),
                Some('t') => value.push('\t'),
                Some(other) => value.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            c => value.push(c),
        }
    }
    Some((key.to_ascii_lowercase(), value.trim_end().to_owned()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        dir
    }

    #[test]
    fn a_plain_repository_names_nothing_beside_git() {
        let r = repo();
        std::fs::write(r.path().join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        assert!(named_by_git(r.path()).is_empty());
        assert!(named_by_git(tempfile::tempdir().unwrap().path()).is_empty());
    }

    #[test]
    fn hooks_path_and_includes_in_the_work_tree_are_named_by_their_top_directory() {
        let r = repo();
        std::fs::write(
            r.path().join(".git/config"),
            "[core]\n\tHooksPath = \".husky/_\" ; husky\n[include]\n\tpath = ../conf/git.inc\n\
             [includeIf \"gitdir:~/w/\"]\n  path = /elsewhere/x\n[Core] hookspath=/etc/hooks\n",
        )
        .unwrap();
        std::fs::create_dir_all(r.path().join("conf")).unwrap();
        // An included file in the work tree is read in turn.
        std::fs::write(
            r.path().join("conf/git.inc"),
            "[include]\n\tpath = ../more/x.inc\n",
        )
        .unwrap();
        assert_eq!(named_by_git(r.path()), vec![".husky", "conf", "more"]);
    }

    #[test]
    fn a_submodules_work_tree_is_named_and_read_as_a_work_tree() {
        let r = repo();
        let m = r.path().join(".git/modules/vendor/lib");
        std::fs::create_dir_all(&m).unwrap();
        std::fs::write(m.join("HEAD"), "x\n").unwrap();
        std::fs::write(
            m.join("config"),
            "[core]\n\tworktree = ../../../../third_party/lib\n\thooksPath = hooks-here\n",
        )
        .unwrap();
        assert_eq!(named_by_git(r.path()), vec!["third_party"]);
    }

    #[test]
    fn a_git_file_names_its_git_directory_when_it_lies_in_the_mount() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".bare")).unwrap();
        std::fs::write(
            dir.path().join(".bare/config"),
            "[core]\n\thooksPath = tools/hooks\n",
        )
        .unwrap();
        std::fs::write(dir.path().join(".git"), "gitdir: .bare\n").unwrap();
        assert_eq!(named_by_git(dir.path()), vec![".bare", "tools"]);
    }

    #[test]
    fn config_lines_read_as_git_reads_them() {
        assert_eq!(
            key_value("hooksPath = \"a b\" # c"),
            Some(("hookspath".into(), "a b".into()))
        );
        assert_eq!(
            key_value("path = x\\\"y ; z"),
            Some(("path".into(), "x\"y".into()))
        );
        assert_eq!(key_value("not a key = 1"), None);
    }
}
