//! The lab of the tests of what a writable mount keeps (`host_run_files.rs`,
//! `host_run_nested.rs`; docs/spec.md §4, "What a writable mount keeps"): a person, their
//! project mounted writable at /src, the real binary's `run`, `write_file` and `box show`,
//! the person's own `git` on the host, and the broken promises collected.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use testkit::{As, Run, run_to_end};

use crate::people::{Person, World};

/// A command that has not finished by then has hung: the test fails.
pub const LIMIT: Duration = Duration::from_secs(90);
/// What the kernel says to a write under a read-only bind.
pub const EROFS: &str = "Read-only file system";

// ---------------------------------------------------------------------------------------
// Broken promises, collected.

/// The promises a test found broken, each with who ran it; the test fails at the end with
/// all of them.
#[derive(Default)]
pub struct Faults(Vec<String>);

impl Faults {
    pub fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.0.push(what());
        }
    }

    #[track_caller]
    pub fn finish(self) {
        if !self.0.is_empty() {
            panic!(
                "{} broken promise(s):\n\n{}",
                self.0.len(),
                self.0.join("\n\n----------------\n\n")
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// The lab: a person, their git project, a config mounting it writable at /src.

pub struct Lab {
    pub w: World,
    pub me: Person,
    /// The project: a git repository with one commit, `a.txt`, `b.txt`, `old.txt`, `sub/`.
    pub proj: PathBuf,
}

impl Lab {
    /// A fresh project. `files` are written into it (relative path, contents) before it is
    /// committed and handed to the person.
    pub fn new(name: &str, who: As, files: &[(&str, &str)]) -> Lab {
        Lab::with_repos(name, who, true, &[], files)
    }

    /// A fresh project whose top is a repository only where `top` says so (a directory of
    /// repositories, like `~/code`, is not one), with a repository of its own at each of
    /// `nested` (a path relative to the project, made where it is not there): `git init`
    /// there, what `files` put in it committed. The top's plain files (`a.txt`, …, `sub/`)
    /// are there either way; the whole handed to the person.
    pub fn with_repos(
        name: &str,
        who: As,
        top: bool,
        nested: &[&str],
        files: &[(&str, &str)],
    ) -> Lab {
        let w = World::fresh(env!("CARGO_CRATE_NAME"), name, who);
        let me = w.person("me");
        let proj = w.dir.join("proj");
        std::fs::create_dir_all(proj.join("sub")).unwrap();
        std::fs::write(proj.join("a.txt"), "a: the person's\n").unwrap();
        std::fs::write(proj.join("b.txt"), "b: the person's\n").unwrap();
        std::fs::write(proj.join("old.txt"), "old\n").unwrap();
        std::fs::write(proj.join("sub/keep.txt"), "keep\n").unwrap();
        for (rel, text) in files {
            let p = proj.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        for rel in nested {
            let readme = proj.join(rel).join("README");
            std::fs::create_dir_all(readme.parent().unwrap()).unwrap();
            std::fs::write(&readme, format!("{rel}: the person's\n")).unwrap();
        }
        let lab = Lab { w, me, proj };
        for rel in nested.iter().copied().chain(top.then_some("")) {
            lab.init_repo(As::Me, rel);
        }
        lab.hand_over(&lab.proj.clone());
        lab
    }

    /// The person's `git init`, `add -A` and first commit in the project's directory `rel`
    /// (`""`: its top), as `who`; fails the test where git does.
    pub fn init_repo(&self, who: As, rel: &str) {
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["add", "-A"],
            &[
                "-c",
                "user.name=Me",
                "-c",
                "user.email=me@example.com",
                "commit",
                "-q",
                "-m",
                "first",
            ],
        ] {
            let r = self.git_at(who, rel, args);
            assert!(r.ok(), "git {args:?} in /{rel}\n{}", r.show());
        }
    }

    pub fn who(&self) -> As {
        self.w.who
    }

    /// `path` (and all below it) the box's to write: the person's (uid 1000) when boxmaker
    /// runs as them; open to everyone (`a+rwX`) when it runs as root, whose boxes run as a
    /// per-session uid (docs/spec.md §4) that owns nothing here.
    pub fn hand_over(&self, path: &Path) {
        match self.who() {
            As::User => self.w.give(path),
            As::Me => {
                let ok = Command::new("chmod")
                    .args(["-R", "a+rwX"])
                    .arg(path)
                    .status()
                    .unwrap();
                assert!(ok.success(), "chmod {}", path.display());
            }
        }
    }

    /// `git ARGS` in the project, as `who`, in the person's environment: no system or
    /// global config but the person's HOME, never a repository above the test's directory.
    pub fn git_as(&self, who: As, args: &[&str]) -> Run {
        self.git_at(who, "", args)
    }

    /// [`Lab::git_as`] in the project's directory `rel` (`""`: its top).
    pub fn git_at(&self, who: As, rel: &str, args: &[&str]) -> Run {
        let mut c = who.command("git");
        c.current_dir(self.p(rel))
            .args(args)
            .env("HOME", self.me.home.as_ref().unwrap())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CEILING_DIRECTORIES", &self.w.dir)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("XDG_CONFIG_HOME");
        run_to_end(c, &self.w.dir, &format!("git {}", args.join(" ")), LIMIT)
    }

    /// The person's own `git ARGS` on the host (as the user boxmaker runs as).
    pub fn git(&self, args: &[&str]) -> Run {
        self.git_as(self.who(), args)
    }

    /// The person's own `git ARGS` on the host in the project's directory `rel`.
    pub fn git_in(&self, rel: &str, args: &[&str]) -> Run {
        self.git_at(self.who(), rel, args)
    }

    /// The config `cfg-NAME/boxmaker.toml` (state in `state-NAME`, both outside the
    /// project): the project mounted writable at /src (`internal`), `read_only` as given
    /// (`None`: no key), `run` and `write_file` allowed, then `extra`. Not trusted yet.
    pub fn write_config(&self, name: &str, read_only: Option<&str>, extra: &str) -> PathBuf {
        self.write_config_of(name, "", read_only, extra)
    }

    /// [`Lab::write_config`] with the project's directory `rel` (`""`: its top) the
    /// mount's host at /src: a mount of a directory inside the project's repository (the
    /// `frontend` of a monorepo), which has no `.git` of its own.
    pub fn write_config_of(
        &self,
        name: &str,
        rel: &str,
        read_only: Option<&str>,
        extra: &str,
    ) -> PathBuf {
        let host = if rel.is_empty() {
            self.proj.clone()
        } else {
            self.p(rel)
        };
        let dir = self.w.dir.join(format!("cfg-{name}"));
        std::fs::create_dir_all(&dir).unwrap();
        let ro = read_only
            .map(|l| format!("read_only = {l}\n"))
            .unwrap_or_default();
        let text = format!(
            "[gate]\nstate = {state:?}\n\n[box]\ntimeout_seconds = 60\n\n\
             [[mount]]\nname = \"proj\"\nhost = {proj:?}\nat = \"/src\"\nclass = \"internal\"\n\
             write = true\n{ro}\n\
             [[tool]]\nname = \"run\"\nbuiltin = \"run\"\nclass = \"internal\"\n\n\
             [[tool]]\nname = \"write_file\"\nbuiltin = \"write_file\"\nclass = \"internal\"\n\n\
             [[grant]]\ntool = \"run\"\neffect = \"allow\"\n\n\
             [[grant]]\ntool = \"write_file\"\neffect = \"allow\"\n\n{extra}",
            state = self
                .w
                .dir
                .join(format!("state-{name}"))
                .display()
                .to_string(),
            proj = host.display().to_string(),
        );
        let config = dir.join("boxmaker.toml");
        std::fs::write(&config, text).unwrap();
        self.w.give(&dir);
        config
    }

    /// `boxmaker ARGS` as the person, in `config`'s directory, `--config CONFIG` appended.
    pub fn bm(&self, person: &Person, config: &Path, args: &[&str]) -> Run {
        let mut c = self.w.as_person(person, config.parent().unwrap());
        c.args(args).arg("--config").arg(config);
        run_to_end(c, &self.w.dir, &args.join(" "), LIMIT)
    }

    /// The person's `boxmaker trust` of `config`.
    pub fn trust(&self, config: &Path) -> Run {
        self.bm(&self.me, config, &["trust"])
    }

    /// [`Lab::write_config`], trusted by the person; fails the test when it is not.
    #[track_caller]
    pub fn config(&self, name: &str, read_only: Option<&str>, extra: &str) -> PathBuf {
        self.config_of(name, "", read_only, extra)
    }

    /// [`Lab::write_config_of`], trusted by the person; fails the test when it is not.
    #[track_caller]
    pub fn config_of(
        &self,
        name: &str,
        rel: &str,
        read_only: Option<&str>,
        extra: &str,
    ) -> PathBuf {
        let config = self.write_config_of(name, rel, read_only, extra);
        let r = self.trust(&config);
        assert!(
            r.ok(),
            "{:?}: the person could not trust the config (read_only = {read_only:?})\n{}\n\
             --- config ---\n{}",
            self.who(),
            r.show(),
            std::fs::read_to_string(&config).unwrap()
        );
        config
    }

    /// A `run` call of `sh -c SCRIPT` in session `s1`: the call and the box's
    /// `{"exit","stdout","stderr"}` (`Value::Null` when the call gave no such answer).
    pub fn sh(&self, config: &Path, script: &str) -> (Run, Value) {
        let args = json!({"argv": ["/bin/sh", "-c", script]}).to_string();
        let r = self.bm(
            &self.me,
            config,
            &["call", "--session", "s1", "--json", "run", &args],
        );
        let content = serde_json::from_str::<Value>(r.stdout.trim())
            .ok()
            .and_then(|v| v["content"].as_str().map(str::to_string))
            .and_then(|c| serde_json::from_str::<Value>(&c).ok())
            .unwrap_or(Value::Null);
        (r, content)
    }

    /// A `write_file` call in session `s1`: the call and its wire answer.
    pub fn write_file(&self, config: &Path, path: &str, content: &str) -> (Run, Value) {
        let args = json!({"path": path, "content": content}).to_string();
        let r = self.bm(
            &self.me,
            config,
            &["call", "--session", "s1", "--json", "write_file", &args],
        );
        let v = serde_json::from_str::<Value>(r.stdout.trim()).unwrap_or(Value::Null);
        (r, v)
    }

    /// `boxmaker box show --tool run --session s1`.
    pub fn box_show(&self, config: &Path) -> Run {
        self.bm(
            &self.me,
            config,
            &["box", "show", "--tool", "run", "--session", "s1"],
        )
    }

    pub fn p(&self, rel: &str) -> PathBuf {
        self.proj.join(rel)
    }

    /// A file of the test's directory, outside the project and every box: where a planted
    /// command leaves its mark.
    pub fn marker(&self, name: &str) -> PathBuf {
        self.w.dir.join(format!("MARK-{name}"))
    }
}

/// A shell script that runs each `(tag, command)` in turn and prints `DONE:tag` or
/// `REFUSED:tag` by the command's status (its own errors on stderr).
pub fn steps(steps: &[(&str, String)]) -> String {
    let mut s = String::new();
    for (tag, cmd) in steps {
        s.push_str(&format!(
            "if {{ {cmd} ; }}; then echo DONE:{tag}; else echo REFUSED:{tag}; fi\n"
        ));
    }
    s
}

/// What the box printed, and whether the call ran at all.
pub struct Boxed<'a> {
    pub who: As,
    pub run: &'a Run,
    pub out: &'a Value,
}

impl Boxed<'_> {
    pub fn stdout(&self) -> &str {
        self.out["stdout"].as_str().unwrap_or("")
    }

    pub fn stderr(&self) -> &str {
        self.out["stderr"].as_str().unwrap_or("")
    }

    pub fn ran(&self, f: &mut Faults, what: &str) -> bool {
        let ok = self.out.is_object() && self.run.ok();
        f.check(ok, || {
            format!(
                "{:?} {what}: the box did not run\n{}",
                self.who,
                self.run.show()
            )
        });
        ok
    }

    pub fn said(&self, tag: &str, word: &str) -> bool {
        self.stdout().lines().any(|l| l == format!("{word}:{tag}"))
    }

    /// Step `tag` failed in the box.
    pub fn refused(&self, f: &mut Faults, tag: &str) {
        f.check(self.said(tag, "REFUSED"), || {
            format!(
                "{:?}: step {tag:?} was not refused in the box\n--- box stdout ---\n{}\n\
                 --- box stderr ---\n{}",
                self.who,
                self.stdout(),
                self.stderr()
            )
        });
    }

    /// Step `tag` worked in the box.
    pub fn done(&self, f: &mut Faults, tag: &str) {
        f.check(self.said(tag, "DONE"), || {
            format!(
                "{:?}: step {tag:?} failed in the box, which should have been free to do it\n\
                 --- box stdout ---\n{}\n--- box stderr ---\n{}",
                self.who,
                self.stdout(),
                self.stderr()
            )
        });
    }

    /// The box's stderr says `word` (the kernel's refusal).
    pub fn stderr_says(&self, f: &mut Faults, words: &[&str]) {
        f.check(words.iter().any(|w| self.stderr().contains(w)), || {
            format!(
                "{:?}: the box's stderr does not show a refusal ({words:?})\n--- box stderr ---\n{}",
                self.who,
                self.stderr()
            )
        });
    }
}

// ---------------------------------------------------------------------------------------
// What is on the host.

/// One file, directory or link as the host has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub kind: &'static str,
    pub mode: u32,
    pub uid: u32,
    pub ino: u64,
    pub mtime: (i64, i64),
    pub bytes: Vec<u8>,
}

/// Everything at and below `root` (links not followed), by path relative to `root`.
pub fn snapshot(root: &Path) -> BTreeMap<PathBuf, Node> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        let ft = m.file_type();
        let (kind, bytes) = if ft.is_symlink() {
            (
                "link",
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes(),
            )
        } else if ft.is_dir() {
            for e in std::fs::read_dir(&p).unwrap().flatten() {
                stack.push(e.path());
            }
            ("dir", vec![])
        } else if ft.is_file() {
            ("file", std::fs::read(&p).unwrap())
        } else {
            ("other", vec![])
        };
        out.insert(
            p.strip_prefix(root).unwrap().to_path_buf(),
            Node {
                kind,
                mode: m.mode(),
                uid: m.uid(),
                ino: m.ino(),
                mtime: (m.mtime(), m.mtime_nsec()),
                bytes,
            },
        );
    }
    out
}

/// How `after` differs from `before`, one line a path.
pub fn changes(before: &BTreeMap<PathBuf, Node>, after: &BTreeMap<PathBuf, Node>) -> Vec<String> {
    let shown = |p: &Path| {
        if p.as_os_str().is_empty() {
            ".".to_string()
        } else {
            p.display().to_string()
        }
    };
    let mut v = vec![];
    for (p, b) in before {
        match after.get(p) {
            None => v.push(format!("removed: {}", shown(p))),
            Some(a) if a != b => {
                let mut what = vec![];
                if a.kind != b.kind {
                    what.push(format!("{} -> {}", b.kind, a.kind));
                }
                if a.bytes != b.bytes {
                    what.push(format!(
                        "contents now {:?}",
                        String::from_utf8_lossy(&a.bytes)
                            .chars()
                            .rev()
                            .take(200)
                            .collect::<String>()
                            .chars()
                            .rev()
                            .collect::<String>()
                    ));
                }
                if a.mode != b.mode {
                    what.push(format!("mode {:o} -> {:o}", b.mode, a.mode));
                }
                if a.uid != b.uid {
                    what.push(format!("owner {} -> {}", b.uid, a.uid));
                }
                if a.ino != b.ino {
                    what.push("replaced (new inode)".into());
                }
                if a.mtime != b.mtime {
                    what.push("mtime changed".into());
                }
                v.push(format!("changed: {}: {}", shown(p), what.join(", ")));
            }
            Some(_) => {}
        }
    }
    for p in after.keys() {
        if !before.contains_key(p) {
            v.push(format!("created: {}", shown(p)));
        }
    }
    v
}

/// `rel` under `root` is as it was (nothing below it added, removed or changed).
pub fn unchanged(
    f: &mut Faults,
    who: As,
    what: &str,
    before: &BTreeMap<PathBuf, Node>,
    after: &BTreeMap<PathBuf, Node>,
) {
    let mut c = changes(before, after);
    if c.len() > 12 {
        let more = c.len() - 12;
        c.truncate(12);
        c.push(format!("… and {more} more"));
    }
    f.check(c.is_empty(), || {
        format!(
            "{who:?} {what}: the host's files changed:\n  {}",
            c.join("\n  ")
        )
    });
}

pub fn read(p: &Path) -> Option<Vec<u8>> {
    std::fs::read(p).ok()
}

/// The `box show` lines that say an entry is kept read-only.
pub fn kept_lines(show: &str) -> Vec<&str> {
    show.lines()
        .filter(|l| l.contains("kept read-only"))
        .collect()
}

/// `box show` lists `/src/REL` (or the host's `PROJ/REL`) as kept read-only.
pub fn shows_kept(show: &str, rel: &str) -> bool {
    let at = format!("/src/{rel}");
    let host = format!("/proj/{rel}");
    kept_lines(show).iter().any(|l| {
        l.split_whitespace().any(|w| {
            let w = w.trim_matches(|c: char| matches!(c, ':' | ',' | '(' | ')' | '"' | '\''));
            w == at || w.ends_with(&host)
        })
    })
}
