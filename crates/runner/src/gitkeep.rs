//! What a kept `.git` names in its work tree (docs/spec.md §4, "What a writable mount
//! keeps"): the places git runs code from or reads its config from that lie in the mount
//! beside `.git`, and so a box could write even with `.git` itself read-only —
//! `core.hooksPath = .husky` (the person's next commit runs `.husky/pre-commit`), an
//! `include.path` of a file in the work tree (it could add `core.fsmonitor`), a submodule's
//! work tree (its `.git` file could be pointed at a git directory the box made, whose
//! `core.fsmonitor` the person's `git status` runs), a program a config value runs by a
//! relative path (`core.fsmonitor = tools/fsmon.sh`, a filter's `clean`, a `!` alias: git
//! runs it from the work tree's top) — in the repository's own config and in the person's
//! global and system config, which apply to every repository. And where the repositories
//! inside a mount are ([`nested`]): a mount of a directory of projects holds a `.git` in
//! each, not at its top.
//!
//! Read only from the git directory a box cannot change (the kept `.git`, and what it
//! includes from the work tree, which is kept in turn) and the person's own config outside
//! every mount, bounded in bytes, files, depth and directories. The answer is names in the
//! work tree's top directory.
//!
//! **Must never:** run git (running git in a directory a box can write is the hazard), or
//! follow a symlink out of the mount.

use std::path::{Component, Path, PathBuf};

/// The most bytes read of one config file, or of a `.git` file.
const MAX_FILE: u64 = 1 << 20;
/// The most config files read for one mount.
const MAX_FILES: usize = 256;
/// The most hooks read in one hooks directory.
const MAX_HOOKS: usize = 64;
/// Where lefthook reads what its hooks run: `lefthook` and `lefthook-local`, with or
/// without a dot, in each format, and its directories.
const LEFTHOOK: [&str; 18] = [
    "lefthook.yml",
    "lefthook.yaml",
    "lefthook.json",
    "lefthook.jsonc",
    "lefthook.toml",
    ".lefthook.yml",
    ".lefthook.yaml",
    ".lefthook.json",
    ".lefthook.toml",
    "lefthook-local.yml",
    "lefthook-local.yaml",
    "lefthook-local.json",
    "lefthook-local.toml",
    ".lefthook-local.yml",
    ".lefthook-local.yaml",
    ".lefthook-local.toml",
    ".lefthook",
    ".lefthook-local",
];
/// How deep `modules/` nests, and includes include.
const MAX_DEPTH: usize = 8;

/// Names in `root`'s top directory that the git directory of `root/.git` names as a place
/// git runs code from or reads config from (not `.git` itself), sorted, each once.
pub fn named_by_git(root: &Path) -> Vec<String> {
    named_with(root, &person_config())
}

/// [`named_by_git`], the person's own config read from `person`.
fn named_with(root: &Path, person: &[PathBuf]) -> Vec<String> {
    let mut walk = Walk {
        root,
        names: Vec::new(),
        files: 0,
        work_tree: true,
        hook_dirs: Vec::new(),
    };
    let mut worktree = root.to_path_buf();
    if let Some(gitdir) = git_dir_of(root, &mut walk) {
        walk.git_dir(&gitdir, root, 0, Reach::Mount);
    } else if let Some(top) = root.ancestors().skip(1).find(|a| {
        std::fs::symlink_metadata(a.join(".git")).is_ok_and(|m| m.is_dir() || m.is_file())
    }) && let Some(gitdir) = git_dir_of(top, &mut walk)
    {
        // The mount is a directory inside a repository (`frontend` of a monorepo): what
        // the repository's config names in its work tree may lie in the mount
        // (`core.hooksPath = frontend/.husky/_`). Its files outside the mount are the
        // person's, which no box writes, so its includes are followed wherever they are.
        walk.git_dir(&gitdir, top, 0, Reach::Anywhere);
        worktree = top.to_path_buf();
    } else {
        // No repository here (a directory of projects): the person's config still names
        // places by absolute path, which may lie in the mount (a global `core.hooksPath =
        // ~/code/hooks` serves every repository in it), but nothing relative to a work
        // tree that is not there.
        walk.work_tree = false;
    }
    // The person's global and system config apply to every repository.
    for file in person {
        walk.config_file(file, &worktree, 0, Reach::Anywhere);
    }
    for (dir, tree) in std::mem::take(&mut walk.hook_dirs) {
        walk.hooks(&dir, &tree);
    }
    walk.names.sort();
    walk.names.dedup();
    walk.names
}

/// The git directory of the work tree `root` (its `.git`, or what a `.git` file names,
/// which is kept too), if it is one.
fn git_dir_of(root: &Path, walk: &mut Walk<'_>) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    if !meta.is_file() {
        return None;
    }
    // A linked work tree's or an absorbed submodule's pointer: `gitdir: PATH`.
    let text = read_small(&dot_git)?;
    let target = text.strip_prefix("gitdir: ")?;
    let target = config::own::lexical(&root.join(target.trim_end_matches(['\n', '\r'])));
    walk.note(&target);
    Some(target)
}

/// How deep below a mount's top [`nested`] looks for a repository's work tree.
pub const NESTED_DEPTH: usize = 3;
/// The most directories [`nested`] looks at for one mount (lists, or, at the deepest level,
/// looks for a `.git` in).
pub const NESTED_DIRS: usize = 4096;
/// Directories [`nested`] does not look into: what tools fill with what they download or
/// build, whose size would spend the search. Whether one is a repository itself is still
/// looked at (one `lstat`).
const NOT_SEARCHED: [&str; 7] = [
    "node_modules",
    "target",
    ".venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
];

/// The repositories inside a mount (below its top), found by [`nested`].
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Nested {
    /// Each work tree holding a `.git` (a directory or a file, not a symlink), relative to
    /// the mount's top, shallowest first.
    pub repos: Vec<PathBuf>,
    /// The search stopped at [`NESTED_DIRS`] directories: a repository further in was not
    /// looked for, so the mount's repositories are not known (and no box may write it).
    pub cut: bool,
}

/// The work trees inside `root`, 1 to [`NESTED_DEPTH`] directories below it, breadth
/// first: a mount of a directory of projects (`~/code`) holds a `.git` in each, which a box
/// that may write the mount could otherwise rewrite for the person's next `git status`
/// there. No symlink is followed, no `.git` looked into, at most [`NESTED_DIRS`]
/// directories looked at.
pub fn nested(root: &Path) -> Nested {
    let mut out = Nested::default();
    let mut queue: std::collections::VecDeque<(PathBuf, usize)> = Default::default();
    queue.push_back((PathBuf::new(), 0));
    let mut looked = 0usize;
    while let Some((rel, depth)) = queue.pop_front() {
        if looked >= NESTED_DIRS {
            out.cut = true;
            break;
        }
        looked += 1;
        let dir = root.join(&rel);
        if depth == NESTED_DEPTH {
            // The deepest level: only whether it is a work tree (one `lstat`, no listing).
            if std::fs::symlink_metadata(dir.join(".git")).is_ok_and(|m| m.is_dir() || m.is_file())
            {
                out.repos.push(rel);
            }
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut subdirs = Vec::new();
        let mut repo = false;
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if name == ".git" {
                repo = kind.is_dir() || kind.is_file();
            } else if kind.is_dir() && !NOT_SEARCHED.iter().any(|n| name == *n) {
                subdirs.push(rel.join(name));
            } else if kind.is_dir()
                && std::fs::symlink_metadata(dir.join(&name).join(".git"))
                    .is_ok_and(|m| m.is_dir() || m.is_file())
            {
                // Not searched, but a repository of its own all the same (`~/code/target`).
                out.repos.push(rel.join(name));
            }
        }
        if repo && depth > 0 {
            out.repos.push(rel);
        }
        subdirs.sort();
        queue.extend(subdirs.into_iter().map(|d| (d, depth + 1)));
    }
    out
}

struct Walk<'a> {
    root: &'a Path,
    names: Vec<String>,
    files: usize,
    /// Whether `root` is a work tree, so a path relative to it names something.
    work_tree: bool,
    /// Each hooks directory seen (a git directory's `hooks`, a `core.hooksPath`), with the
    /// work tree its hooks run in: [`Walk::hooks`] reads what they run from.
    hook_dirs: Vec<(PathBuf, PathBuf)>,
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
    fn git_dir(&mut self, gitdir: &Path, worktree: &Path, depth: usize, reach: Reach) {
        if depth > MAX_DEPTH {
            return;
        }
        self.hook_dirs
            .push((gitdir.join("hooks"), worktree.to_path_buf()));
        for name in ["config", "config.worktree"] {
            self.config_file(&gitdir.join(name), worktree, depth, reach);
        }
        self.modules(&gitdir.join("modules"), depth + 1, reach);
    }

    /// Every git directory under `modules` (a submodule's name may hold `/`): its work tree
    /// (`core.worktree`, relative to it) is kept, and read as a work tree of its own.
    fn modules(&mut self, dir: &Path, depth: usize, reach: Reach) {
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
                self.git_dir(&path, &worktree, depth + 1, reach);
            } else {
                self.modules(&path, depth + 1, reach);
            }
        }
    }

    /// One config file: `core.hooksPath` (relative to the work tree), each program a value
    /// runs by a relative path (git runs it from the work tree's top: [`runs_a_program`]),
    /// and each `include.path`/`includeIf.*.path` (relative to the file's directory), the
    /// included files read in turn — those in the mount, or, for the person's own config
    /// (`Reach::Anywhere`), wherever they are.
    fn config_file(&mut self, file: &Path, worktree: &Path, depth: usize, reach: Reach) {
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
            let relative = !value.starts_with('/') && !value.starts_with("~/");
            if key == "core.hookspath" {
                if let Some(p) = expand(worktree)
                    && (self.work_tree || !relative)
                {
                    self.note(&p);
                    self.hook_dirs.push((p, worktree.to_path_buf()));
                }
            } else if key == "include.path"
                || (key.starts_with("includeif.") && key.ends_with(".path"))
            {
                let Some(p) = expand(&dir) else { continue };
                let p = config::own::lexical(&p);
                if p.starts_with(self.root) {
                    self.note(&p);
                }
                if p.starts_with(self.root) || reach == Reach::Anywhere {
                    self.config_file(&p, worktree, depth + 1, reach);
                }
            } else if runs_a_program(&key, &value) && self.work_tree {
                for word in relative_paths(&value) {
                    self.note(&worktree.join(word));
                }
            }
        }
    }

    /// The hooks in `dir` (run in `tree`): where a hook manager's hook is installed, the
    /// file in the work tree that says what it runs is as much a hook as the hook itself —
    /// pre-commit's `.pre-commit-config.yaml` (or the `--config` its hook names), lefthook's
    /// `lefthook.yml` and `lefthook-local.yml` (in each spelling, and their directories),
    /// overcommit's `.overcommit.yml` and `.git-hooks`. Samples are not hooks.
    fn hooks(&mut self, dir: &Path, tree: &Path) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten().take(MAX_HOOKS) {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "sample") {
                continue;
            }
            let Some(text) = read_small(&path) else {
                continue;
            };
            let mut named = false;
            let mut words = text.split(|c: char| c.is_whitespace() || "'\";|&()<>`".contains(c));
            while let Some(word) = words.next() {
                let config = match word.strip_prefix("--config") {
                    Some(rest) if rest.starts_with('=') => Some(&rest[1..]),
                    Some("") => words.find(|w| !w.is_empty()),
                    _ => None,
                };
                if let Some(config) = config.filter(|c| !c.is_empty() && !c.starts_with('$')) {
                    named = true;
                    self.note(&tree.join(config));
                }
            }
            let mut keep = |names: &[&str]| {
                for name in names {
                    self.note(&tree.join(name));
                }
            };
            if text.contains("pre-commit") && !named {
                keep(&[".pre-commit-config.yaml"]);
            }
            if text.contains("lefthook") {
                keep(&LEFTHOOK);
            }
            if text.contains("overcommit") {
                keep(&[".overcommit.yml", ".git-hooks"]);
            }
        }
    }
}

/// Which includes a config file's reading follows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Only those in the mount (a repository's own config: what lies outside is the
    /// person's, and not this repository's to name).
    Mount,
    /// Wherever they are (the person's global and system config).
    Anywhere,
}

/// The person's own config files git reads for every repository, as git finds them:
/// `GIT_CONFIG_GLOBAL`, else `$XDG_CONFIG_HOME/git/config` (or `~/.config/git/config`) and
/// `~/.gitconfig`; then `GIT_CONFIG_SYSTEM`, else `/etc/gitconfig`, unless
/// `GIT_CONFIG_NOSYSTEM`.
fn person_config() -> Vec<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let home = env("HOME").map(PathBuf::from);
    let mut out = Vec::new();
    if let Some(g) = env("GIT_CONFIG_GLOBAL") {
        out.push(PathBuf::from(g));
    } else {
        match (env("XDG_CONFIG_HOME"), &home) {
            (Some(x), _) => out.push(PathBuf::from(x).join("git/config")),
            (None, Some(h)) => out.push(h.join(".config/git/config")),
            (None, None) => {}
        }
        if let Some(h) = &home {
            out.push(h.join(".gitconfig"));
        }
    }
    if env("GIT_CONFIG_NOSYSTEM").is_none() {
        out.push(env("GIT_CONFIG_SYSTEM").map_or_else(|| "/etc/gitconfig".into(), PathBuf::from));
    }
    out
}

/// Whether git runs `value` of `key` as a program or a shell command (a relative path in
/// it is then a file of the work tree, where git runs it from).
fn runs_a_program(key: &str, value: &str) -> bool {
    let Some((section, rest)) = key.split_once('.') else {
        return false;
    };
    let last = key.rsplit('.').next().unwrap_or_default();
    let sub = rest.contains('.');
    match section {
        "core" => matches!(
            rest,
            "fsmonitor" | "sshcommand" | "editor" | "pager" | "askpass" | "gitproxy"
        ),
        "sequence" => rest == "editor",
        "diff" => rest == "external" || (sub && matches!(last, "textconv" | "command")),
        "gpg" => last == "program",
        "credential" => last == "helper",
        "alias" => value.trim_start().starts_with('!'),
        "filter" => sub && matches!(last, "clean" | "smudge" | "process"),
        "merge" => sub && last == "driver",
        "pager" => true,
        "interactive" => rest == "difffilter",
        _ => false,
    }
}

/// The words of a command that name a file by a path relative to where it runs: they hold
/// a `/`, and are not an option, a home or variable path, or a URL.
fn relative_paths(value: &str) -> Vec<&str> {
    value
        .split(|c: char| c.is_whitespace() || "!;|&()<>'\"`=".contains(c))
        .filter(|w| {
            w.contains('/')
                && !w.starts_with('/')
                && !w.starts_with('-')
                && !w.starts_with('~')
                && !w.starts_with('$')
                && !w.contains("://")
        })
        .collect()
}

/// A file's text, when it is a regular file of at most [`MAX_FILE`] bytes (not followed
/// through a symlink) and UTF-8.
pub(crate) fn read_small(path: &Path) -> Option<String> {
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

    /// What a repository names, the person's own config aside (this machine's is not the
    /// test's).
    fn named(root: &Path) -> Vec<String> {
        named_with(root, &[])
    }

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
        assert!(named(r.path()).is_empty());
        assert!(named(tempfile::tempdir().unwrap().path()).is_empty());
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
        assert_eq!(named(r.path()), vec![".husky", "conf", "more"]);
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
        assert_eq!(named(r.path()), vec!["third_party"]);
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
        assert_eq!(named(dir.path()), vec![".bare", "tools"]);
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

    #[test]
    fn a_program_a_config_value_runs_by_a_relative_path_is_named() {
        let r = repo();
        std::fs::write(
            r.path().join(".git/config"),
            "[core]\n\tfsmonitor = tools/fsmon.sh\n\tpager = less -R\n\
             [filter \"lfsish\"]\n\tclean = sh scripts/clean.sh %f\n\
             [alias]\n\tst = !./bin/st --x=conf/y\n\tlg = log --graph lib/x\n\
             [remote \"o\"]\n\turl = ../other/repo\n\
             [diff \"img\"]\n\ttextconv = https://x/y ~/h/t $HOME/v/w -o/p\n",
        )
        .unwrap();
        // Not `lib` (an alias that is not a shell command), not `other` (a URL is data),
        // not a URL, a home or variable path, or an option.
        assert_eq!(named(r.path()), vec!["bin", "conf", "scripts", "tools"]);
        assert!(runs_a_program("core.fsmonitor", "true"));
        assert!(runs_a_program("gpg.ssh.program", "x"));
        assert!(runs_a_program("credential.https://h.helper", "x"));
        assert!(!runs_a_program("alias.lg", "log"));
        assert!(!runs_a_program("filter.clean", "x"));
        assert!(!runs_a_program("core.worktree", "x/y"));
    }

    #[test]
    fn the_persons_own_config_applies_to_every_repository() {
        let r = repo();
        let home = tempfile::tempdir().unwrap();
        let global = home.path().join(".gitconfig");
        std::fs::write(
            &global,
            "[core]\n\thooksPath = .githooks\n[include]\n\tpath = more.inc\n",
        )
        .unwrap();
        // An include of the person's own, outside every mount, is read too.
        std::fs::write(
            home.path().join("more.inc"),
            "[core]\n\tsshCommand = ssh -F etc/ssh_config\n",
        )
        .unwrap();
        let missing = home.path().join("no/such/config");
        assert_eq!(
            named_with(r.path(), &[missing, global]),
            vec![".githooks", "etc"]
        );
        // A repository's own config does not follow an include out of the mount.
        std::fs::write(
            r.path().join(".git/config"),
            format!(
                "[include]\n\tpath = {}\n",
                home.path().join("more.inc").display()
            ),
        )
        .unwrap();
        assert!(named_with(r.path(), &[]).is_empty());
    }

    #[test]
    fn repositories_inside_a_mount_are_found_breadth_first_without_links() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        for repo in [
            "a",
            "org/b",
            "x/y/z",
            "x/y/z/w/deep",
            "node_modules/m",
            "target",
        ] {
            std::fs::create_dir_all(p.join(repo).join(".git")).unwrap();
        }
        // A linked work tree's `.git` file counts; a link to a repository does not.
        std::fs::create_dir_all(p.join("wt")).unwrap();
        std::fs::write(p.join("wt/.git"), "gitdir: ../a/.git/worktrees/wt\n").unwrap();
        std::os::unix::fs::symlink(p.join("a"), p.join("link")).unwrap();
        std::fs::create_dir_all(p.join("lnk")).unwrap();
        std::os::unix::fs::symlink(p.join("a/.git"), p.join("lnk/.git")).unwrap();
        // Nothing inside a `.git` is looked at.
        std::fs::create_dir_all(p.join("a/.git/modules/s/.git")).unwrap();
        let n = nested(p);
        // `target` is not searched, but is a repository of its own; `node_modules/m` is not
        // looked for.
        let want: Vec<PathBuf> = ["target", "a", "wt", "org/b", "x/y/z"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(
            n,
            Nested {
                repos: want,
                cut: false
            }
        );
        // The top's own `.git` is not a nested one.
        std::fs::create_dir_all(p.join(".git")).unwrap();
        assert_eq!(nested(p).repos.len(), 5);
    }

    #[test]
    fn the_search_says_when_it_stopped_short() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..NESTED_DIRS {
            std::fs::create_dir_all(d.path().join(format!("d{i:04}"))).unwrap();
        }
        std::fs::create_dir_all(d.path().join("zz/.git")).unwrap();
        let n = nested(d.path());
        assert!(n.cut);
        assert!(n.repos.is_empty());
    }

    #[test]
    fn without_a_repository_at_the_top_only_absolute_paths_of_the_persons_config_count() {
        let code = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        let global = home.path().join(".gitconfig");
        std::fs::write(
            &global,
            format!(
                "[core]\n\thooksPath = {}\n\tfsmonitor = tools/x.sh\n\
                 [alias]\n\tx = !sh scripts/x.sh\n",
                code.path().join("shared-hooks/git").display()
            ),
        )
        .unwrap();
        assert_eq!(
            named_with(code.path(), std::slice::from_ref(&global)),
            vec!["shared-hooks"]
        );
        std::fs::write(&global, "[core]\n\thooksPath = .githooks\n").unwrap();
        assert!(named_with(code.path(), &[global]).is_empty());
    }

    #[test]
    fn a_mount_inside_a_repository_keeps_what_the_repositorys_config_names_in_it() {
        // `frontend` of a monorepo, mounted alone: husky installed there (`core.hooksPath =
        // frontend/.husky/_`), a lint alias running a script of it.
        let r = repo();
        std::fs::write(
            r.path().join(".git/config"),
            "[core]\n\thooksPath = frontend/.husky/_\n[include]\n\tpath = ../conf/more.inc\n",
        )
        .unwrap();
        std::fs::create_dir_all(r.path().join("conf")).unwrap();
        std::fs::write(
            r.path().join("conf/more.inc"),
            "[alias]\n\tlint = !sh frontend/tools/lint.sh\n\tother = !sh backend/x.sh\n",
        )
        .unwrap();
        let mount = r.path().join("frontend");
        std::fs::create_dir_all(&mount).unwrap();
        assert_eq!(named(&mount), vec![".husky", "tools"]);
        // Deeper in: the repository is found however far up it is.
        let deep = mount.join("app");
        std::fs::create_dir_all(&deep).unwrap();
        assert!(named(&deep).is_empty());
        std::fs::write(
            r.path().join(".git/config"),
            "[core]\n\thooksPath = frontend/app/hooks\n",
        )
        .unwrap();
        assert_eq!(named(&deep), vec!["hooks"]);
    }

    #[test]
    fn what_an_installed_hook_managers_hook_runs_from_is_named() {
        let r = repo();
        let hooks = r.path().join(".git/hooks");
        // pre-commit's hook, as `pre-commit install` writes it.
        std::fs::write(
            hooks.join("pre-commit"),
            "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n\
             ARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)\n\
             exec \"$INSTALL_PYTHON\" -mpre_commit \"${ARGS[@]}\"\n",
        )
        .unwrap();
        // A sample is not a hook.
        std::fs::write(hooks.join("pre-push.sample"), "lefthook overcommit\n").unwrap();
        assert_eq!(named(r.path()), vec![".pre-commit-config.yaml"]);
        std::fs::write(
            hooks.join("pre-commit"),
            "#!/bin/sh\npre-commit hook-impl --config ci/pc.yaml --hook-type=pre-commit\n",
        )
        .unwrap();
        assert_eq!(named(r.path()), vec!["ci"]);
        std::fs::write(
            hooks.join("post-checkout"),
            "#!/bin/sh\ncall_lefthook run\n",
        )
        .unwrap();
        let names = named(r.path());
        assert!(
            names.contains(&"lefthook-local.yml".to_string()),
            "{names:?}"
        );
        assert!(names.contains(&".lefthook".to_string()), "{names:?}");
        std::fs::write(hooks.join("post-checkout"), "#!/bin/sh\n# overcommit\n").unwrap();
        assert_eq!(named(r.path()), vec![".git-hooks", ".overcommit.yml", "ci"]);
    }
}
