//! What a writable mount keeps beyond its top directory's `.git` (docs/spec.md §4, "What a
//! writable mount keeps"): three holes of one class, each a way for a box to plant code the
//! person's own `git` runs on the host, outside every box.
//!
//! 1. *Nested repositories.* A person mounts a directory of repositories (like `~/code`)
//!    writable at /src: /src has no `.git` of its own, but /src/a, /src/org/b and /src/x/y/z
//!    are repositories. Where the mount keeps `.git` (the default list), each repository found
//!    1–3 directories below its top has its `.git` kept read-only, and what its git directory
//!    names in its work tree (`core.hooksPath`, …) kept too; every directory between the top
//!    and it is pinned (it cannot be renamed or removed: `EBUSY`), so no box moves a
//!    repository aside and puts one of its own in its place — while the files in those
//!    directories stay the box's to write.
//! 2. *A program a kept git config runs by a relative path* (`core.fsmonitor =
//!    tools/fsmon.sh`, a filter's `clean`, a `!` alias, a diff's `textconv`, …): the path's
//!    top name is kept, so the person's `git status` runs the person's script.
//! 3. *The person's global git config* (`~/.gitconfig`, `~/.config/git/config`): a relative
//!    `core.hooksPath` there applies to every repository, so each kept repository keeps what
//!    it names in its work tree.
//!
//! As `host_run_files.rs` (whose lab this is, `hostrun`): each attack as the attacker would
//! run it, through the real binary (`boxmaker call … run` of `sh -c`), then the person's own
//! `git` on the host, then the marks looked for; a plain write beside in the same box, so a
//! box that could not write at all does not pass for a protected one; as root and, where
//! this process can become one, as uid 1000; every broken promise collected before the test
//! fails.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use testkit::As;

mod hostrun;
mod people;

use hostrun::{
    Boxed, EROFS, Faults, Lab, kept_lines, read, shows_kept, snapshot, steps, unchanged,
};

/// The repositories of a directory of projects, at depth 1, 2 and 3 below the mount's top.
const REPOS: [&str; 3] = ["a", "org/b", "x/y/z"];

/// What the kernel says to a rename or removal of a pinned directory, or of a mount point.
const EBUSY: &str = "Device or resource busy";

/// A project like `~/code`: no repository at its top, one at each of [`REPOS`].
fn code_dir(name: &str, who: As) -> Lab {
    let lab = Lab::with_repos(name, who, false, &REPOS, &[]);
    assert!(
        std::fs::symlink_metadata(lab.p(".git")).is_err(),
        "the lab made a repository at the project's top"
    );
    lab
}

/// A step (for [`steps`]) appending `core.fsmonitor = "touch MARK; false"` to the git
/// config at `config` (a path in the box).
fn fsmonitor_to(config: &str, mark: &Path) -> String {
    format!(
        "printf '[core]\\n\\tfsmonitor = \"touch {}; false\"\\n' >> {config}",
        mark.display()
    )
}

/// A step making a git directory of the box's own at `DIR/.git` (a path in the box), whose
/// `core.fsmonitor` touches `mark`: what a box that moved the person's repository aside puts
/// in its place.
fn box_repo(dir: &str, mark: &Path) -> String {
    format!(
        "mkdir -p {dir}/.git-made/objects {dir}/.git-made/refs/heads && \
         printf 'ref: refs/heads/main\\n' > {dir}/.git-made/HEAD && \
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {m}; false\"\\n' \
         > {dir}/.git-made/config && mv {dir}/.git-made {dir}/.git",
        m = mark.display()
    )
}

/// `cmd` with each line of its stderr prefixed `TAG: ` (its status kept), so [`busy`] can
/// tell which step the kernel refused with which error.
fn tagged(tag: &str, cmd: &str) -> String {
    format!(
        "{{ {cmd} ; }} 2>/tmp/err.{tag}; s=$?; sed 's/^/{tag}: /' /tmp/err.{tag} >&2; [ $s -eq 0 ]"
    )
}

/// The box's stderr shows step `tag` (run [`tagged`]) refused with `EBUSY`.
fn busy(b: &Boxed, f: &mut Faults, tag: &str) {
    let prefix = format!("{tag}: ");
    f.check(
        b.stderr()
            .lines()
            .any(|l| l.starts_with(&prefix) && l.contains(EBUSY)),
        || {
            format!(
                "{:?}: step {tag:?} was not refused with {EBUSY:?} (a pinned directory)\n\
                 --- box stderr ---\n{}",
                b.who,
                b.stderr()
            )
        },
    );
}

/// A shell script of the person's that touches `mark` (then `tail`, verbatim).
fn script(mark: &Path, tail: &str) -> String {
    format!("#!/bin/sh\ntouch {}\n{tail}", mark.display())
}

/// The same, as the box writes it (`printf` in the box) over `path`.
fn box_script(path: &str, mark: &Path, tail: &str) -> String {
    format!(
        "printf '#!/bin/sh\\ntouch {}\\n{tail}' > {path}",
        mark.display()
    )
}

/// Writes the person's executable `rel` in the project (and hands it over).
fn person_script(lab: &Lab, rel: &str, text: &str) {
    let p = lab.p(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    lab.hand_over(&lab.proj.clone());
}

/// The person's `git commit` (no message editor) in the project's directory `rel`.
fn commit(lab: &Lab, rel: &str) -> testkit::Run {
    lab.git_in(
        rel,
        &[
            "-c",
            "user.name=Me",
            "-c",
            "user.email=me@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "next",
        ],
    )
}

/// A global git config of the person's (`~/.gitconfig` or `~/.config/git/config`, `rel`
/// under their HOME), the HOME boxmaker and the person's git both run with.
fn global_config(lab: &Lab, rel: &str, text: &str) {
    let home = lab.me.home.clone().unwrap();
    let p = home.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, text).unwrap();
    lab.w.give(&home);
}

/// `mark` is not there: the person's git ran none of the box's code.
fn no_mark(f: &mut Faults, who: As, mark: &Path, what: &str) {
    f.check(!mark.exists(), || format!("{who:?}: {what}"));
}

/// The person's git (`how`) ran the person's own script (its mark, `mine`, is there) and
/// not the box's (`theirs`, whose appearing is said as `what`); where it ran neither, the
/// test proves nothing.
fn ran_the_persons(f: &mut Faults, who: As, mine: &Path, theirs: &Path, how: &str, what: &str) {
    if theirs.exists() {
        f.check(false, || format!("{who:?}: {what}"));
    } else {
        f.check(mine.exists(), || {
            format!(
                "{who:?}: {how} ran neither the person's script nor the box's: the test proves \
                 nothing"
            )
        });
    }
}

/// The person's own `git ARGS` in the project's directory `rel`, a fault (not a panic)
/// where the box took that directory away.
fn git_in(f: &mut Faults, lab: &Lab, rel: &str, args: &[&str]) -> Option<testkit::Run> {
    let there = lab.p(rel).is_dir();
    f.check(there, || {
        format!(
            "{:?}: /src/{rel} is not a directory on the host any more (the box moved or removed \
             it)",
            lab.who()
        )
    });
    there.then(|| lab.git_in(rel, args))
}

// ---------------------------------------------------------------------------------------
// 1. Nested repositories.

/// The reported attack on a directory of repositories: a box appends `core.fsmonitor` to
/// `/src/a/.git/config`, `/src/org/b/.git/config` and `/src/x/y/z/.git/config` (depth 1, 2,
/// 3), plants `/src/a/.git/hooks/pre-commit` and makes a directory in `/src/org/b/.git`.
/// Every step is refused (`EROFS` on its stderr), each `.git` on the host is as it was, and
/// neither the person's `git status` in each repository nor their `git commit` in `a` runs
/// the box's command. The same box was free to write, create, rename and remove files in
/// those directories (`/src/a/new.txt`, `/src/org/x.txt`, `/src/x/y/new.txt`, …), and the
/// host sees each.
#[test]
fn a_box_cannot_plant_code_in_a_repository_nested_in_the_mount() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("nested-git", who);
        let config = lab.config("c", None, "");
        let marks: Vec<_> = REPOS
            .iter()
            .map(|r| {
                (
                    *r,
                    lab.marker(&format!("fsmonitor-{}", r.replace('/', "-"))),
                )
            })
            .collect();
        let hook = lab.marker("hook-a");
        let before: Vec<_> = REPOS
            .iter()
            .map(|r| (*r, snapshot(&lab.p(&format!("{r}/.git")))))
            .collect();

        let mut s: Vec<(&str, String)> = vec![
            ("plain-a", "printf 'new\\n' > /src/a/new.txt".into()),
            ("plain-org", "printf 'x\\n' > /src/org/x.txt".into()),
            ("plain-y", "printf 'y\\n' > /src/x/y/new.txt".into()),
            ("plain-z", "printf 'z\\n' >> /src/x/y/z/README".into()),
            (
                "newdir-org",
                "mkdir /src/org/c && printf 'c\\n' > /src/org/c/c.txt".into(),
            ),
            ("mv-file-a", "mv /src/a/README /src/a/README.md".into()),
        ];
        let tags = ["fsmonitor-a", "fsmonitor-org-b", "fsmonitor-x-y-z"];
        for ((r, m), tag) in marks.iter().zip(tags) {
            s.push((tag, fsmonitor_to(&format!("/src/{r}/.git/config"), m)));
        }
        s.push((
            "hook-a",
            format!(
                "{} && chmod 0755 /src/a/.git/hooks/pre-commit",
                box_script("/src/a/.git/hooks/pre-commit", &hook, "")
            ),
        ));
        s.push(("mkdir-under-b", "mkdir /src/org/b/.git/hooks2".into()));
        let (r, out) = lab.sh(&config, &steps(&s));
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the write attack") {
            for tag in [
                "plain-a",
                "plain-org",
                "plain-y",
                "plain-z",
                "newdir-org",
                "mv-file-a",
            ] {
                b.done(&mut f, tag);
            }
            for tag in tags.iter().copied().chain(["hook-a", "mkdir-under-b"]) {
                b.refused(&mut f, tag);
            }
            b.stderr_says(&mut f, &[EROFS]);
        }
        for (rel, want) in [
            ("a/new.txt", Some("new\n")),
            ("org/x.txt", Some("x\n")),
            ("x/y/new.txt", Some("y\n")),
            ("org/c/c.txt", Some("c\n")),
            ("a/README.md", Some("a: the person's\n")),
            ("a/README", None),
        ] {
            let got = read(&lab.p(rel));
            f.check(got.as_deref() == want.map(str::as_bytes), || {
                format!(
                    "{who:?}: /src/{rel} on the host is {:?}, want {want:?}: the box could not \
                     write beside the kept repositories (proves nothing)",
                    got.map(|g| String::from_utf8_lossy(&g).into_owned())
                )
            });
        }
        for (r, snap) in &before {
            unchanged(
                &mut f,
                who,
                &format!("after the write attack, {r}/.git"),
                snap,
                &snapshot(&lab.p(&format!("{r}/.git"))),
            );
        }

        // The person's next git commands, on the host, in each repository.
        for (r, m) in &marks {
            if let Some(st) = git_in(&mut f, &lab, r, &["status", "--short"]) {
                f.check(st.ok(), || {
                    format!("{who:?}: git status in {r} failed\n{}", st.show())
                });
            }
            no_mark(
                &mut f,
                who,
                m,
                &format!(
                    "the person's `git status` in {r} ran the box's core.fsmonitor on the host"
                ),
            );
        }
        let cm = commit(&lab, "a");
        f.check(cm.ok(), || {
            format!("{who:?}: git commit in a failed\n{}", cm.show())
        });
        no_mark(
            &mut f,
            who,
            &hook,
            "the person's `git commit` in a ran the box's pre-commit hook on the host",
        );
    }
    f.finish();
}

/// The attacker's next move on a directory of repositories: move the repository (or a
/// directory above it, or its `.git`) aside and make a repository of its own where the
/// person's was — `mv /src/a /src/a2`, `mv /src/a/.git …`, `mv /src/org /src/x2`, `mv
/// /src/org/b …`, `mv /src/x/y/z …`, `mv /src/x/y …`, `mv /src/x …`, `rmdir /src/org`, `rm
/// -rf /src/org` — then a `.git` with `core.fsmonitor` at `/src/a`, `/src/org/b`,
/// `/src/x/y/z`. Each rename fails with `EBUSY` (the repository's directory and every one
/// between it and the top are pinned, and the `.git` is a mount point), the removals fail, no box-made git directory lands, nothing was moved aside on the
/// host, each `.git` is as it was, and the person's `git status` in each repository runs
/// nothing of the box's. Plain writes in `/src/a` and `/src/org` worked in the same box.
#[test]
fn a_box_cannot_move_a_nested_repository_aside_and_put_its_own_in_its_place() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("nested-swap", who);
        let config = lab.config("c", None, "");
        let m = |r: &str| lab.marker(&format!("swap-{}", r.replace('/', "-")));
        let before: Vec<_> = REPOS
            .iter()
            .map(|r| (*r, snapshot(&lab.p(&format!("{r}/.git")))))
            .collect();
        let renames = [
            ("mv-a", "mv /src/a /src/a2"),
            ("mv-a-git", "mv /src/a/.git /src/a/git.old"),
            ("mv-org", "mv /src/org /src/x2"),
            ("mv-org-b", "mv /src/org/b /src/org/b2"),
            ("mv-z", "mv /src/x/y/z /src/x/y/z2"),
            ("mv-y", "mv /src/x/y /src/x/y2"),
            ("mv-x", "mv /src/x /src/x0"),
        ];
        let mut s: Vec<(&str, String)> = vec![];
        for (tag, cmd) in renames {
            s.push((tag, tagged(tag, cmd)));
        }
        s.push(("fake-a", box_repo("/src/a", &m("a"))));
        s.push(("fake-b", box_repo("/src/org/b", &m("org/b"))));
        s.push(("fake-z", box_repo("/src/x/y/z", &m("x/y/z"))));
        s.push(("rmdir-org", "rmdir /src/org".into()));
        s.push(("rm-org", "rm -rf /src/org".into()));
        s.push(("fake-b-again", box_repo("/src/org/b", &m("org/b"))));
        // Last, as a pinned directory is still the box's to write in.
        s.push(("plain-a", "printf 'new\\n' > /src/a/new.txt".into()));
        s.push(("plain-org", "printf 'x\\n' > /src/org/x.txt".into()));
        let (r, out) = lab.sh(&config, &steps(&s));
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the swap attack") {
            b.done(&mut f, "plain-a");
            b.done(&mut f, "plain-org");
            for (tag, _) in renames {
                b.refused(&mut f, tag);
                busy(&b, &mut f, tag);
            }
            for tag in [
                "fake-a",
                "fake-b",
                "fake-z",
                "rmdir-org",
                "rm-org",
                "fake-b-again",
            ] {
                b.refused(&mut f, tag);
            }
        }
        for (rel, want) in [("a/new.txt", "new\n"), ("org/x.txt", "x\n")] {
            f.check(
                read(&lab.p(rel)).as_deref() == Some(want.as_bytes()),
                || {
                    format!(
                        "{who:?}: the box's plain write to /src/{rel} is not on the host: the test \
                     proves nothing"
                    )
                },
            );
        }
        for aside in ["a2", "a/git.old", "x2", "org/b2", "x/y/z2", "x/y2", "x0"] {
            f.check(std::fs::symlink_metadata(lab.p(aside)).is_err(), || {
                format!("{who:?}: the box moved a directory of the person's aside to /src/{aside}")
            });
        }
        for (r, snap) in &before {
            unchanged(
                &mut f,
                who,
                &format!("after the swap attack, {r}/.git"),
                snap,
                &snapshot(&lab.p(&format!("{r}/.git"))),
            );
        }
        for r in REPOS {
            let _ = git_in(&mut f, &lab, r, &["status", "--short"]);
            no_mark(
                &mut f,
                who,
                &m(r),
                &format!(
                    "the box put a repository of its own at /src/{r}, and the person's `git \
                     status` there ran its core.fsmonitor on the host"
                ),
            );
        }
    }
    f.finish();
}

/// A repository's `.git` may be a file (`git worktree add`: `gitdir: …/a/.git/worktrees/wt`):
/// `/src/wt/.git` is kept as a `.git` directory is. A box makes a git directory of its own in
/// the project and points `/src/wt/.git` at it (or moves `/src/wt` aside and makes a `wt` of
/// its own): refused, the file as it was, and the person's `git status` in `wt` runs nothing
/// of the box's.
#[test]
fn a_nested_worktrees_git_file_cannot_be_pointed_at_a_box_made_git_directory() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("nested-worktree", who);
        let r = lab.git_in("a", &["worktree", "add", "-q", "../wt"]);
        assert!(r.ok(), "git worktree add\n{}", r.show());
        lab.hand_over(&lab.proj.clone());
        let st = lab.git_in("wt", &["status", "--short"]);
        assert!(
            st.ok(),
            "{who:?}: git status in the worktree\n{}",
            st.show()
        );
        let config = lab.config("c", None, "");
        let mark = lab.marker("worktree");
        let before = snapshot(&lab.p("wt/.git"));
        let point = format!("printf 'gitdir: {}/evil/.git\\n'", lab.proj.display());
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("evil", box_repo("/src/evil", &mark)),
                ("repoint", format!("{point} > /src/wt/.git")),
                ("rm", format!("rm /src/wt/.git && {point} > /src/wt/.git")),
                (
                    "mv-wt",
                    format!(
                        "{} && mkdir /src/wt && {point} > /src/wt/.git",
                        tagged("mv-wt", "mv /src/wt /src/wt.old")
                    ),
                ),
                ("plain", "printf 'x\\n' > /src/wt/new.txt".into()),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            b.done(&mut f, "evil");
            for tag in ["repoint", "mv-wt", "rm"] {
                b.refused(&mut f, tag);
            }
            busy(&b, &mut f, "mv-wt");
        }
        f.check(!lab.p("wt.old").exists(), || {
            format!("{who:?}: the box moved the worktree aside to /src/wt.old")
        });
        unchanged(
            &mut f,
            who,
            "wt/.git (a file)",
            &before,
            &snapshot(&lab.p("wt/.git")),
        );
        let _ = git_in(&mut f, &lab, "wt", &["status", "--short"]);
        no_mark(
            &mut f,
            who,
            &mark,
            "the box pointed the worktree's .git file at its own git directory, and the \
             person's `git status` there ran its core.fsmonitor on the host",
        );
    }
    f.finish();
}

/// What a nested repository's git directory names in its work tree is kept there: `a`'s
/// `core.hooksPath = .husky` keeps `/src/a/.husky` (the person's next commit in `a` runs
/// `.husky/pre-commit`), and its `core.fsmonitor = tools/fsmon.sh` keeps `/src/a/tools`
/// (their next `git status` there runs it). The box's rewrites, and its moving either
/// aside, are refused; the person's commit and status run the person's scripts (their
/// marks appear) and never the box's. A plain write in `/src/a` worked in the same box.
#[test]
fn what_a_nested_repository_names_in_its_work_tree_is_kept() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("nested-names", who);
        let (hook_mine, hook_box) = (lab.marker("husky-person"), lab.marker("husky-box"));
        let (fsm_mine, fsm_box) = (lab.marker("fsmon-person"), lab.marker("fsmon-box"));
        person_script(&lab, "a/.husky/pre-commit", &script(&hook_mine, ""));
        person_script(&lab, "a/tools/fsmon.sh", &script(&fsm_mine, "exit 1\n"));
        for args in [
            &["config", "core.hooksPath", ".husky"][..],
            &["config", "core.fsmonitor", "tools/fsmon.sh"],
        ] {
            let r = lab.git_in("a", args);
            assert!(r.ok(), "git {args:?}\n{}", r.show());
        }
        lab.hand_over(&lab.proj.clone());
        let config = lab.config("c", None, "");
        let husky = snapshot(&lab.p("a/.husky"));
        let tools = snapshot(&lab.p("a/tools"));
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("plain", "printf 'new\\n' > /src/a/new.txt".into()),
                (
                    "hook",
                    box_script("/src/a/.husky/pre-commit", &hook_box, ""),
                ),
                (
                    "fsmon",
                    box_script("/src/a/tools/fsmon.sh", &fsm_box, "exit 1\\n"),
                ),
                (
                    "mv-husky",
                    format!(
                        "mv /src/a/.husky /src/a/husky.old && mkdir /src/a/.husky && {} && \
                         chmod 0755 /src/a/.husky/pre-commit",
                        box_script("/src/a/.husky/pre-commit", &hook_box, "")
                    ),
                ),
                (
                    "mv-tools",
                    format!(
                        "mv /src/a/tools /src/a/tools.old && mkdir /src/a/tools && {} && \
                         chmod 0755 /src/a/tools/fsmon.sh",
                        box_script("/src/a/tools/fsmon.sh", &fsm_box, "exit 1\\n")
                    ),
                ),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            for tag in ["hook", "fsmon", "mv-husky", "mv-tools"] {
                b.refused(&mut f, tag);
            }
        }
        unchanged(
            &mut f,
            who,
            "a/.husky",
            &husky,
            &snapshot(&lab.p("a/.husky")),
        );
        unchanged(&mut f, who, "a/tools", &tools, &snapshot(&lab.p("a/tools")));
        let _ = git_in(&mut f, &lab, "a", &["status", "--short"]);
        ran_the_persons(
            &mut f,
            who,
            &fsm_mine,
            &fsm_box,
            "the person's `git status` in a",
            "the box rewrote a/tools/fsmon.sh (a's core.fsmonitor), and the person's `git \
             status` in a ran it on the host",
        );
        let _ = commit(&lab, "a");
        ran_the_persons(
            &mut f,
            who,
            &hook_mine,
            &hook_box,
            "the person's `git commit` in a",
            "the box rewrote a/.husky/pre-commit (a's core.hooksPath), and the person's `git \
             commit` in a ran it on the host",
        );
    }
    f.finish();
}

/// A repository is kept when a box is built, not when the config was trusted: the person
/// clones one more into the directory of projects (`/src/later/c`, depth 2) after a `run`
/// box and a `write_file` (whose warm box then serves the session) ran. The next `run` box
/// cannot append `core.fsmonitor` to its config nor move `later` or `later/c` aside, and
/// `write_file` is refused its config; the person's `git status` there runs nothing of the
/// box's.
#[test]
fn a_repository_the_person_makes_after_a_box_ran_is_kept_in_the_next_one() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("nested-later", who);
        let config = lab.config("c", None, "");
        let (r, _) = lab.sh(&config, "true");
        f.check(r.ok(), || format!("{who:?}: the first box\n{}", r.show()));
        let (r, v) = lab.write_file(&config, "/src/a/first.txt", "first\n");
        f.check(v["status"] == "result", || {
            format!("{who:?}: the first write_file\n{}", r.show())
        });
        // The person's new repository, after both boxes were built.
        std::fs::create_dir_all(lab.p("later/c")).unwrap();
        std::fs::write(lab.p("later/c/README"), "c\n").unwrap();
        lab.w.give(&lab.proj);
        lab.init_repo(who, "later/c");
        lab.hand_over(&lab.proj.clone());
        let mark = lab.marker("later");
        let before = snapshot(&lab.p("later/c/.git"));
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("plain", "printf 'x\\n' > /src/later/x.txt".into()),
                ("fsmonitor", fsmonitor_to("/src/later/c/.git/config", &mark)),
                ("mv-c", tagged("mv-c", "mv /src/later/c /src/later/c2")),
                ("mv-later", tagged("mv-later", "mv /src/later /src/later2")),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the next box") {
            b.done(&mut f, "plain");
            for tag in ["fsmonitor", "mv-c", "mv-later"] {
                b.refused(&mut f, tag);
            }
            busy(&b, &mut f, "mv-c");
            busy(&b, &mut f, "mv-later");
        }
        let (r, v) = lab.write_file(
            &config,
            "/src/later/c/.git/config",
            &format!(
                "[core]\n\tfsmonitor = \"touch {}; false\"\n",
                mark.display()
            ),
        );
        f.check(
            v["status"] == "failed" && r.show().contains("kept read-only"),
            || {
                format!(
                    "{who:?}: write_file into a repository made after its warm box was built was \
                     not refused as kept read-only\n{}",
                    r.show()
                )
            },
        );
        unchanged(
            &mut f,
            who,
            "later/c/.git",
            &before,
            &snapshot(&lab.p("later/c/.git")),
        );
        let _ = git_in(&mut f, &lab, "later/c", &["status", "--short"]);
        no_mark(
            &mut f,
            who,
            &mark,
            "the box planted core.fsmonitor in a repository the person made after an earlier \
             box, and the person's `git status` there ran it on the host",
        );
    }
    f.finish();
}

/// The search for repositories inside a mount is bounded, and a box writes the mount: it
/// makes thousands of directories whose names sort before the person's (`/src/0000` …
/// `/src/4199`), so that a search that stopped at its bound would never reach `/src/a`, and
/// the next box could rewrite `a/.git/config`. What cannot be searched cannot be placed: the
/// next box gets the whole mount read-only (its plain write fails too), `write_file` says
/// why, and the person's `git status` runs nothing of the box's. Once the person clears the
/// directories away the mount is writable again (so the test can fail the other way).
#[test]
fn a_box_that_fills_the_mount_with_directories_gets_no_writable_mount_in_the_next_box() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("nested-clutter", who);
        let config = lab.config("c", None, "");
        let (r, out) = lab.sh(
            &config,
            "cd /src && seq -w 0 4199 | xargs mkdir && echo made",
        );
        let made = out["stdout"].as_str().unwrap_or("").contains("made");
        f.check(made, || {
            format!(
                "{who:?}: the box could not make the directories\n{}",
                r.show()
            )
        });
        let mark = lab.marker("clutter");
        let before = snapshot(&lab.p("a/.git"));
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("fsmonitor", fsmonitor_to("/src/a/.git/config", &mark)),
                ("plain", "printf 'x\\n' > /src/a/new.txt".into()),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box after the directories") {
            b.refused(&mut f, "fsmonitor");
            b.refused(&mut f, "plain");
        }
        let (r, v) = lab.write_file(&config, "/src/a/new.txt", "x\n");
        f.check(
            v["status"] == "failed" && r.show().contains("holds more directories"),
            || {
                format!(
                    "{who:?}: write_file into a mount the search could not finish was not \
                     refused saying why\n{}",
                    r.show()
                )
            },
        );
        unchanged(&mut f, who, "a/.git", &before, &snapshot(&lab.p("a/.git")));
        let _ = git_in(&mut f, &lab, "a", &["status", "--short"]);
        no_mark(
            &mut f,
            who,
            &mark,
            "a box spent the search for repositories with directories of its own, and the \
             person's `git status` in a ran the core.fsmonitor the next box planted",
        );
        // The person clears them away: the mount is the boxes' to write again.
        for i in 0..4200 {
            let _ = std::fs::remove_dir(lab.p(&format!("{i:04}")));
        }
        let (r, out) = lab.sh(
            &config,
            &steps(&[("plain", "printf 'x\\n' > /src/a/new.txt".into())]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box after the person cleared the directories") {
            b.done(&mut f, "plain");
        }
    }
    f.finish();
}

/// `write_file` (boxmaker's own code) is refused a path under a nested repository's `.git`,
/// there or not, however spelt — `/src/a/.git/config`, `/src/a/.git/hooks/pre-commit`
/// (absent), `/src/org/b/.git/config`, `/src/org/./b/.git/description`,
/// `/src/x/y/z/.git/hooks/post-checkout` (absent) — saying it is kept read-only; the
/// project is as it was; `/src/a/ok.txt` and `/src/org/ok.txt` are written.
#[test]
fn write_file_cannot_write_into_a_nested_repositorys_git() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("nested-write-file", who);
        let config = lab.config("c", None, "");
        let before = snapshot(&lab.proj);
        let mark = lab.marker("write-file");
        let fsmonitor = format!(
            "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch {}; false\"\n",
            mark.display()
        );
        let hook = script(&mark, "");
        for (path, content) in [
            ("/src/a/.git/config", &fsmonitor),
            ("/src/a/.git/hooks/pre-commit", &hook),
            ("/src/org/b/.git/config", &fsmonitor),
            ("/src/org/./b/.git/description", &hook),
            ("/src/x/y/z/.git/hooks/post-checkout", &hook),
        ] {
            let (r, v) = lab.write_file(&config, path, content);
            f.check(
                v["status"] == "failed" && r.show().contains("kept read-only"),
                || {
                    format!(
                        "{who:?}: write_file {path} was not refused as kept read-only\n{}",
                        r.show()
                    )
                },
            );
        }
        unchanged(
            &mut f,
            who,
            "after write_file into the nested repositories' .git, the project",
            &before,
            &snapshot(&lab.proj),
        );
        for (path, rel) in [
            ("/src/a/ok.txt", "a/ok.txt"),
            ("/src/org/ok.txt", "org/ok.txt"),
        ] {
            let (r, v) = lab.write_file(&config, path, "fine\n");
            f.check(
                v["status"] == "result" && read(&lab.p(rel)).as_deref() == Some(b"fine\n"),
                || format!("{who:?}: write_file {path} did not work\n{}", r.show()),
            );
        }
        for r in REPOS {
            let _ = git_in(&mut f, &lab, r, &["status", "--short"]);
        }
        no_mark(
            &mut f,
            who,
            &mark,
            "after write_file, the person's git status ran the planted command",
        );
    }
    f.finish();
}

/// `box show` lists `/src/a/.git`, `/src/org/b/.git` and `/src/x/y/z/.git` as kept
/// read-only (and no `/src/.git`, which is not there); building boxes (a `run` box, `box
/// show`) changes nothing on the host.
#[test]
fn box_show_lists_each_nested_repositorys_git_as_kept() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("nested-show", who);
        let config = lab.config("c", None, "");
        let before = snapshot(&lab.proj);
        let show = lab.box_show(&config);
        f.check(show.ok(), || format!("{who:?}: box show\n{}", show.show()));
        for r in REPOS {
            f.check(shows_kept(&show.stdout, &format!("{r}/.git")), || {
                format!(
                    "{who:?}: box show does not list /src/{r}/.git as kept read-only\n{}",
                    show.stdout
                )
            });
        }
        f.check(!shows_kept(&show.stdout, ".git"), || {
            format!(
                "{who:?}: box show lists /src/.git (which does not exist) as kept\n{}",
                show.stdout
            )
        });
        let (r, _) = lab.sh(&config, "true");
        f.check(r.ok(), || format!("{who:?}: a box\n{}", r.show()));
        unchanged(
            &mut f,
            who,
            "after building boxes, the project",
            &before,
            &snapshot(&lab.proj),
        );
    }
    f.finish();
}

/// The companion: with `read_only = []` nothing is kept, and the very append of the first
/// test lands in `/src/a/.git/config` and `/src/x/y/z/.git/config`, and the person's `git
/// status` there runs it on the host. So those tests fail where the protection is missing;
/// and `box show` claims nothing kept.
#[test]
fn with_an_empty_list_a_nested_repositorys_git_is_the_boxs() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("nested-empty-list", who);
        let config = lab.config("c", Some("[]"), "");
        let (ma, mz) = (lab.marker("open-a"), lab.marker("open-z"));
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("a", fsmonitor_to("/src/a/.git/config", &ma)),
                ("z", fsmonitor_to("/src/x/y/z/.git/config", &mz)),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "a");
            b.done(&mut f, "z");
        }
        let _ = git_in(&mut f, &lab, "a", &["status", "--short"]);
        let _ = git_in(&mut f, &lab, "x/y/z", &["status", "--short"]);
        f.check(ma.exists() && mz.exists(), || {
            format!(
                "{who:?}: with read_only = [] the person's git status did not run the box's \
                 core.fsmonitor (a: {}, x/y/z: {}): the attack the other tests refuse does not \
                 work here, so they prove nothing",
                ma.exists(),
                mz.exists()
            )
        });
        let show = lab.box_show(&config);
        f.check(show.ok() && kept_lines(&show.stdout).is_empty(), || {
            format!(
                "{who:?}: with read_only = [] box show claims something kept\n{}",
                show.show()
            )
        });
    }
    f.finish();
}

// ---------------------------------------------------------------------------------------
// 2. A program a kept git config runs by a relative path.

/// The person's kept `.git/config` runs programs by paths in the work tree: `core.fsmonitor
/// = tools/fsmon.sh` (every `git status`), `filter.x.clean = filters/clean.sh` (`git add` of
/// a `*.dat`), `diff.tc.textconv = conv/tc.sh` (`git diff` of a `*.dat`), `alias.st = !sh
/// scripts/st.sh` (`git st`). A box rewrites each, and moves `tools` aside for one of its
/// own: all refused, each script as it was; the person's `git status`, `git diff`, `git add
/// -A` and `git st` run the person's scripts (their marks appear), none of the box's. The
/// box's plain write (`/src/data.dat`, which makes `git add` and `git diff` filter it) landed.
#[test]
fn a_program_a_kept_git_config_runs_by_a_relative_path_cannot_be_rewritten() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("relative-programs", who, &[("data.dat", "1\n")]);
        // (config key, value, the script's path, what it does after touching its mark, how
        // the person's git runs it)
        let programs: [(&str, &str, &str, &str, &[&str]); 4] = [
            (
                "core.fsmonitor",
                "tools/fsmon.sh",
                "tools/fsmon.sh",
                "exit 1\n",
                &["status", "--short"],
            ),
            (
                "diff.tc.textconv",
                "conv/tc.sh",
                "conv/tc.sh",
                "cat \"$1\"\n",
                &["diff", "--no-ext-diff"],
            ),
            (
                "filter.x.clean",
                "filters/clean.sh",
                "filters/clean.sh",
                "cat\n",
                &["add", "-A"],
            ),
            (
                "alias.st",
                "!sh scripts/st.sh",
                "scripts/st.sh",
                "",
                &["st"],
            ),
        ];
        let mut s: Vec<(String, String)> =
            vec![("plain".into(), "printf '2\\n' >> /src/data.dat".into())];
        let mut before = vec![];
        for (key, value, path, tail, _) in programs {
            let (mine, theirs) = marks(&lab, key);
            person_script(&lab, path, &script(&mine, tail));
            let r = lab.git(&["config", key, value]);
            assert!(r.ok(), "git config {key}\n{}", r.show());
            s.push((
                key.into(),
                box_script(&format!("/src/{path}"), &theirs, &tail.replace('\n', "\\n")),
            ));
            let top = path.split('/').next().unwrap();
            before.push((top, snapshot(&lab.p(top))));
        }
        std::fs::write(lab.p(".gitattributes"), "*.dat filter=x diff=tc\n").unwrap();
        lab.hand_over(&lab.proj.clone());
        let (_, fsm_box) = marks(&lab, "core.fsmonitor");
        s.push((
            "mv-tools".into(),
            format!(
                "mv /src/tools /src/tools.old && mkdir /src/tools && {} && chmod 0755 \
                 /src/tools/fsmon.sh",
                box_script("/src/tools/fsmon.sh", &fsm_box, "exit 1\\n")
            ),
        ));
        let config = lab.config("c", None, "");
        let s_ref: Vec<(&str, String)> = s.iter().map(|(t, c)| (t.as_str(), c.clone())).collect();
        let (r, out) = lab.sh(&config, &steps(&s_ref));
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            for (tag, _) in &s_ref[1..] {
                b.refused(&mut f, tag);
            }
        }
        f.check(
            read(&lab.p("data.dat")).as_deref() == Some(b"1\n2\n".as_slice()),
            || format!("{who:?}: the box's plain write to /src/data.dat did not land: the test proves nothing"),
        );
        for (top, snap) in &before {
            unchanged(&mut f, who, top, snap, &snapshot(&lab.p(top)));
        }
        f.check(!lab.p("tools.old").exists(), || {
            format!("{who:?}: the box moved tools/ aside")
        });
        for (key, value, _, _, args) in programs {
            let (mine, theirs) = marks(&lab, key);
            let _ = lab.git(args);
            ran_the_persons(
                &mut f,
                who,
                &mine,
                &theirs,
                &format!("the person's `git {}` ({key} = {value})", args.join(" ")),
                &format!(
                    "the box rewrote the program of {key} = {value:?}, and the person's `git {}` \
                     ran it on the host",
                    args.join(" ")
                ),
            );
        }
    }
    f.finish();
}

/// Every key whose value git runs as a program (or hands to one), set in the person's kept
/// `.git/config` to a path in the work tree, keeps that path's top name: a box can neither
/// rewrite the program nor make a file beside it nor move its directory aside. The path is
/// any word of the value that is relative and has a `/` (`ssh -F ssh/config`, `!sh
/// credhelper/h.sh`, `mergedrv/m.sh %O %A %B`, and `!aliasdir/x.sh` — a `!` alias's first
/// word). Most of these run only on a push, a fetch, a merge or a tty, so this test looks at
/// the box's refusals; the test above runs the person's git for those that run on
/// `status`, `diff`, `add` and an alias.
#[test]
fn every_program_key_of_a_kept_git_config_keeps_its_relative_path() {
    let keys: [(&str, &str, &str); 18] = [
        ("core.sshCommand", "ssh -F ssh/config", "ssh/config"),
        ("core.editor", "editor/ed.sh", "editor/ed.sh"),
        ("core.pager", "pager/p.sh", "pager/p.sh"),
        ("core.askPass", "askpass/a.sh", "askpass/a.sh"),
        ("sequence.editor", "seq/e.sh", "seq/e.sh"),
        ("diff.external", "extdiff/d.sh", "extdiff/d.sh"),
        ("gpg.program", "gpg/g.sh", "gpg/g.sh"),
        ("gpg.ssh.program", "gpgssh/s.sh", "gpgssh/s.sh"),
        (
            "credential.helper",
            "!sh credhelper/h.sh",
            "credhelper/h.sh",
        ),
        (
            "credential.https://example.com.helper",
            "!sh credurl/h.sh",
            "credurl/h.sh",
        ),
        ("filter.y.smudge", "smudge/s.sh", "smudge/s.sh"),
        ("filter.z.process", "process/p.sh", "process/p.sh"),
        ("diff.y.command", "diffcmd/c.sh", "diffcmd/c.sh"),
        ("merge.m.driver", "mergedrv/m.sh %O %A %B", "mergedrv/m.sh"),
        ("pager.log", "pagerlog/p.sh", "pagerlog/p.sh"),
        (
            "interactive.diffFilter",
            "difffilter/f.sh",
            "difffilter/f.sh",
        ),
        ("alias.x", "!aliasdir/x.sh --fast", "aliasdir/x.sh"),
        ("core.fsmonitor", "sh fsm/run.sh", "fsm/run.sh"),
    ];
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("program-keys", who, &[]);
        let mut s: Vec<(String, String)> =
            vec![("plain".into(), "printf 'x\\n' > /src/notes.txt".into())];
        let mut before = vec![];
        let mark = lab.marker("program-keys");
        for (key, value, path) in keys {
            person_script(&lab, path, &script(&lab.marker("never"), "exit 1\n"));
            let r = lab.git(&["config", key, value]);
            assert!(r.ok(), "git config {key} {value:?}\n{}", r.show());
            let top = path.split('/').next().unwrap();
            s.push((
                format!("{key}:rewrite"),
                box_script(&format!("/src/{path}"), &mark, "exit 1\\n"),
            ));
            s.push((
                format!("{key}:beside"),
                format!("printf 'x\\n' > /src/{top}/planted.sh"),
            ));
            s.push((
                format!("{key}:mv"),
                format!("mv /src/{top} /src/{top}.moved"),
            ));
            before.push((key, top, snapshot(&lab.p(top))));
        }
        lab.hand_over(&lab.proj.clone());
        let config = lab.config("c", None, "");
        let s_ref: Vec<(&str, String)> = s.iter().map(|(t, c)| (t.as_str(), c.clone())).collect();
        let (r, out) = lab.sh(&config, &steps(&s_ref));
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            for (tag, _) in &s_ref[1..] {
                b.refused(&mut f, tag);
            }
        }
        for (key, top, snap) in &before {
            unchanged(
                &mut f,
                who,
                &format!("{top}/ (named by {key})"),
                snap,
                &snapshot(&lab.p(top)),
            );
            f.check(!lab.p(&format!("{top}.moved")).exists(), || {
                format!("{who:?}: the box moved {top}/ (named by {key}) aside")
            });
        }
    }
    f.finish();
}

/// The person's mark and the box's for a config key.
fn marks(lab: &Lab, key: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let k = key.replace('.', "-");
    (
        lab.marker(&format!("{k}-person")),
        lab.marker(&format!("{k}-box")),
    )
}

// ---------------------------------------------------------------------------------------
// 3. The person's global git config.

/// `core.hooksPath = .githooks` in the person's `~/.gitconfig` applies to every repository
/// they have, this one too: the box rewrites `/src/.githooks/pre-commit` (`EROFS`), moves
/// `.githooks` aside for one of its own (refused), and the person's next commit runs their
/// own hook, not the box's. The same for a program key there (`alias.g = !sh gtools/g.sh`,
/// run by the person's `git g`). A plain write worked in the same box.
#[test]
fn a_relative_hooks_path_in_the_persons_gitconfig_is_kept() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("global-hooks-path", who, &[]);
        let (mine, theirs) = (lab.marker("global-person"), lab.marker("global-box"));
        let (g_mine, g_theirs) = (lab.marker("alias-person"), lab.marker("alias-box"));
        person_script(&lab, ".githooks/pre-commit", &script(&mine, ""));
        person_script(&lab, "gtools/g.sh", &script(&g_mine, ""));
        global_config(
            &lab,
            ".gitconfig",
            "[core]\n\thooksPath = .githooks\n[alias]\n\tg = !sh gtools/g.sh\n",
        );
        let config = lab.config("c", None, "");
        let hooks = snapshot(&lab.p(".githooks"));
        let gtools = snapshot(&lab.p("gtools"));
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("plain", "printf 'box was here\\n' >> /src/a.txt".into()),
                ("hook", box_script("/src/.githooks/pre-commit", &theirs, "")),
                (
                    "mv",
                    format!(
                        "mv /src/.githooks /src/githooks.old && mkdir /src/.githooks && {} && \
                         chmod 0755 /src/.githooks/pre-commit",
                        box_script("/src/.githooks/pre-commit", &theirs, "")
                    ),
                ),
                ("alias", box_script("/src/gtools/g.sh", &g_theirs, "")),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            b.refused(&mut f, "hook");
            b.refused(&mut f, "mv");
            b.refused(&mut f, "alias");
            b.stderr_says(&mut f, &[EROFS]);
        }
        unchanged(
            &mut f,
            who,
            ".githooks",
            &hooks,
            &snapshot(&lab.p(".githooks")),
        );
        let _ = commit(&lab, "");
        ran_the_persons(
            &mut f,
            who,
            &mine,
            &theirs,
            "the person's `git commit` (~/.gitconfig core.hooksPath)",
            "the box rewrote .githooks/pre-commit (core.hooksPath in the person's ~/.gitconfig), \
             and the person's `git commit` ran it on the host",
        );
        unchanged(&mut f, who, "gtools", &gtools, &snapshot(&lab.p("gtools")));
        let _ = lab.git(&["g"]);
        ran_the_persons(
            &mut f,
            who,
            &g_mine,
            &g_theirs,
            "the person's `git g` (~/.gitconfig alias.g = !sh gtools/g.sh)",
            "the box rewrote gtools/g.sh (alias.g in the person's ~/.gitconfig), and the \
             person's `git g` ran it on the host",
        );
    }
    f.finish();
}

/// The same from `~/.config/git/config`, in a directory of repositories: `core.hooksPath =
/// .githooks` there keeps `/src/a/.githooks` and `/src/org/b/.githooks` (relative to each
/// kept repository's work tree); the box's rewrites are refused and the person's commits in
/// `a` and `org/b` run their own hooks, not the box's.
#[test]
fn a_relative_hooks_path_in_the_persons_xdg_git_config_is_kept_in_each_nested_repository() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = code_dir("global-xdg-nested", who);
        global_config(
            &lab,
            ".config/git/config",
            "[core]\n\thooksPath = .githooks\n",
        );
        let repos = [("a", "a"), ("org/b", "b")];
        let mut s: Vec<(String, String)> =
            vec![("plain".into(), "printf 'x\\n' > /src/org/x.txt".into())];
        let mut before = vec![];
        for (r, tag) in repos {
            let (mine, theirs) = (
                lab.marker(&format!("xdg-{tag}-person")),
                lab.marker(&format!("xdg-{tag}-box")),
            );
            person_script(
                &lab,
                &format!("{r}/.githooks/pre-commit"),
                &script(&mine, ""),
            );
            s.push((
                format!("hook-{tag}"),
                box_script(&format!("/src/{r}/.githooks/pre-commit"), &theirs, ""),
            ));
            before.push((r, snapshot(&lab.p(&format!("{r}/.githooks")))));
        }
        let config = lab.config("c", None, "");
        let s_ref: Vec<(&str, String)> = s.iter().map(|(t, c)| (t.as_str(), c.clone())).collect();
        let (r, out) = lab.sh(&config, &steps(&s_ref));
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            b.refused(&mut f, "hook-a");
            b.refused(&mut f, "hook-b");
        }
        for (r, snap) in &before {
            unchanged(
                &mut f,
                who,
                &format!("{r}/.githooks"),
                snap,
                &snapshot(&lab.p(&format!("{r}/.githooks"))),
            );
        }
        for (r, tag) in repos {
            let _ = commit(&lab, r);
            ran_the_persons(
                &mut f,
                who,
                &lab.marker(&format!("xdg-{tag}-person")),
                &lab.marker(&format!("xdg-{tag}-box")),
                &format!("the person's `git commit` in {r} (~/.config/git/config core.hooksPath)"),
                &format!(
                    "the box rewrote {r}/.githooks/pre-commit (core.hooksPath in the person's \
                     ~/.config/git/config), and the person's `git commit` in {r} ran it on the host"
                ),
            );
        }
    }
    f.finish();
}

// ---------------------------------------------------------------------------------------
// 4. A mount inside a repository.

/// The directory of a monorepo that the config mounts alone at /src (the project's top
/// holds the repository, `.git` and all; the mount has no `.git` of its own).
const FRONTEND: &str = "frontend";

/// A monorepo: a repository at the project's top with a `frontend` directory in it.
fn monorepo(name: &str, who: As) -> Lab {
    let lab = Lab::new(name, who, &[("frontend/package.json", "{}\n")]);
    assert!(
        lab.p(".git").is_dir() && std::fs::symlink_metadata(lab.p("frontend/.git")).is_err(),
        "the lab's monorepo is not a repository at the top with none in frontend"
    );
    lab
}

/// The box's stderr shows step `tag` (run [`tagged`]) refused with `err`.
fn refused_saying(b: &Boxed, f: &mut Faults, tag: &str, err: &str) {
    let prefix = format!("{tag}: ");
    f.check(
        b.stderr()
            .lines()
            .any(|l| l.starts_with(&prefix) && l.contains(err)),
        || {
            format!(
                "{:?}: step {tag:?} was not refused with {err:?}\n--- box stderr ---\n{}",
                b.who,
                b.stderr()
            )
        },
    );
}

/// The host file `rel` of the project says `want` (the box's write there landed); where
/// not, the test proves nothing.
fn landed(f: &mut Faults, lab: &Lab, rel: &str, want: &str) {
    let got = read(&lab.p(rel));
    f.check(got.as_deref() == Some(want.as_bytes()), || {
        format!(
            "{:?}: the box's plain write to {rel} is not on the host ({:?}): the test proves \
             nothing",
            lab.who(),
            got.map(|g| String::from_utf8_lossy(&g).into_owned())
        )
    });
}

/// The names in the project's directory of `rel` that `rel` was moved aside to after a box
/// (`NAME.made-in-a-box-NANOS`).
fn moved_aside(lab: &Lab, rel: &str) -> Vec<String> {
    let p = lab.p(rel);
    let name = format!(
        "{}.made-in-a-box-",
        p.file_name().unwrap().to_str().unwrap()
    );
    std::fs::read_dir(p.parent().unwrap())
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(&name))
                .collect()
        })
        .unwrap_or_default()
}

/// `rel`, absent when the box started and made by it, was moved aside after the call: it is
/// not there, one `NAME.made-in-a-box-*` is, and the call's answer said so.
fn was_moved_aside(f: &mut Faults, b: &Boxed, lab: &Lab, rel: &str, at: &str) {
    let who = lab.who();
    f.check(std::fs::symlink_metadata(lab.p(rel)).is_err(), || {
        format!(
            "{who:?}: {at}, made by the box where a writable mount keeps it, is still there on \
             the host after the call"
        )
    });
    let aside = moved_aside(lab, rel);
    f.check(aside.len() == 1, || {
        format!("{who:?}: {at} was not moved aside to one NAME.made-in-a-box-* ({aside:?})")
    });
    f.check(
        b.stderr().contains(&format!(
            "{at} was made in this box where a writable mount keeps it"
        )),
        || {
            format!(
                "{who:?}: the call's answer does not say {at} was moved aside\n--- box stderr \
                 ---\n{}",
                b.stderr()
            )
        },
    );
}

/// A monorepo whose `frontend` alone is mounted at /src; its repository's config (in
/// `P/.git`, outside the mount) says `core.hooksPath = frontend/.husky` (husky installed in
/// a subdirectory) and `alias.lint = !sh frontend/tools/lint.sh`: `/src/.husky` and
/// `/src/tools` are kept. The box rewrites `/src/.husky/pre-commit` and `/src/tools/lint.sh`
/// (`EROFS`), moves either aside for one of its own (refused), and makes a `.git` of its own
/// at /src (there was none: after the call it is moved aside). A plain write to
/// `/src/new.txt` lands. The person's `git commit` and `git lint` in the monorepo run their
/// own scripts, never the box's, and their `git status` in `frontend` runs nothing of the
/// box's.
#[test]
fn a_mount_inside_a_repository_keeps_what_the_repositorys_config_names_in_it() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = monorepo("inside-repo", who);
        let (hook_mine, hook_box) = (lab.marker("husky-person"), lab.marker("husky-box"));
        let (lint_mine, lint_box) = (lab.marker("lint-person"), lab.marker("lint-box"));
        let git_box = lab.marker("git-box");
        person_script(&lab, "frontend/.husky/pre-commit", &script(&hook_mine, ""));
        person_script(&lab, "frontend/tools/lint.sh", &script(&lint_mine, ""));
        for args in [
            &["config", "core.hooksPath", "frontend/.husky"][..],
            &["config", "alias.lint", "!sh frontend/tools/lint.sh"],
        ] {
            let r = lab.git(args);
            assert!(r.ok(), "git {args:?}\n{}", r.show());
        }
        lab.hand_over(&lab.proj.clone());
        let config = lab.config_of("c", FRONTEND, None, "");
        let husky = snapshot(&lab.p("frontend/.husky"));
        let tools = snapshot(&lab.p("frontend/tools"));
        let repo = snapshot(&lab.p(".git"));
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("plain", "printf 'new\\n' > /src/new.txt".into()),
                (
                    "hook",
                    tagged("hook", &box_script("/src/.husky/pre-commit", &hook_box, "")),
                ),
                (
                    "beside",
                    tagged("beside", "printf 'x\\n' > /src/.husky/pre-push"),
                ),
                (
                    "mv-husky",
                    format!(
                        "{} && mkdir /src/.husky && {} && chmod 0755 /src/.husky/pre-commit",
                        tagged("mv-husky", "mv /src/.husky /src/h2"),
                        box_script("/src/.husky/pre-commit", &hook_box, "")
                    ),
                ),
                (
                    "lint",
                    tagged("lint", &box_script("/src/tools/lint.sh", &lint_box, "")),
                ),
                (
                    "mv-tools",
                    format!(
                        "{} && mkdir /src/tools && {}",
                        tagged("mv-tools", "mv /src/tools /src/tools.old"),
                        box_script("/src/tools/lint.sh", &lint_box, "")
                    ),
                ),
                // Last: a repository of the box's own where there was none.
                ("own-git", box_repo("/src", &git_box)),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            b.done(&mut f, "own-git");
            for tag in ["hook", "beside", "mv-husky", "lint", "mv-tools"] {
                b.refused(&mut f, tag);
            }
            for tag in ["hook", "beside", "lint"] {
                refused_saying(&b, &mut f, tag, EROFS);
            }
            was_moved_aside(&mut f, &b, &lab, "frontend/.git", "/src/.git");
        }
        landed(&mut f, &lab, "frontend/new.txt", "new\n");
        for aside in ["frontend/h2", "frontend/tools.old"] {
            f.check(std::fs::symlink_metadata(lab.p(aside)).is_err(), || {
                format!("{who:?}: the box moved a directory of the person's aside to {aside}")
            });
        }
        unchanged(
            &mut f,
            who,
            "frontend/.husky",
            &husky,
            &snapshot(&lab.p("frontend/.husky")),
        );
        unchanged(
            &mut f,
            who,
            "frontend/tools",
            &tools,
            &snapshot(&lab.p("frontend/tools")),
        );
        unchanged(&mut f, who, ".git", &repo, &snapshot(&lab.p(".git")));
        let _ = git_in(&mut f, &lab, FRONTEND, &["status", "--short"]);
        no_mark(
            &mut f,
            who,
            &git_box,
            "the box made /src/.git in a mount inside a repository, and the person's `git \
             status` in frontend ran its core.fsmonitor on the host",
        );
        let _ = commit(&lab, "");
        ran_the_persons(
            &mut f,
            who,
            &hook_mine,
            &hook_box,
            "the person's `git commit` in the monorepo (core.hooksPath = frontend/.husky)",
            "the box rewrote /src/.husky/pre-commit (the monorepo's core.hooksPath = \
             frontend/.husky), and the person's `git commit` ran it on the host",
        );
        let _ = lab.git(&["lint"]);
        ran_the_persons(
            &mut f,
            who,
            &lint_mine,
            &lint_box,
            "the person's `git lint` (alias.lint = !sh frontend/tools/lint.sh)",
            "the box rewrote /src/tools/lint.sh (the monorepo's alias.lint), and the person's \
             `git lint` ran it on the host",
        );
    }
    f.finish();
}

/// The companion: with `read_only = []` the same rewrite of `/src/.husky/pre-commit` lands,
/// and the person's `git commit` in the monorepo runs the box's hook on the host. So the
/// test above fails where the protection is missing.
#[test]
fn with_an_empty_list_a_mount_inside_a_repository_keeps_nothing() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = monorepo("inside-repo-open", who);
        let (mine, theirs) = (lab.marker("husky-person"), lab.marker("husky-box"));
        person_script(&lab, "frontend/.husky/pre-commit", &script(&mine, ""));
        let r = lab.git(&["config", "core.hooksPath", "frontend/.husky"]);
        assert!(r.ok(), "git config core.hooksPath\n{}", r.show());
        lab.hand_over(&lab.proj.clone());
        let config = lab.config_of("c", FRONTEND, Some("[]"), "");
        let (r, out) = lab.sh(
            &config,
            &steps(&[("hook", box_script("/src/.husky/pre-commit", &theirs, ""))]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "hook");
        }
        let _ = commit(&lab, "");
        f.check(theirs.exists(), || {
            format!(
                "{who:?}: with read_only = [] the person's `git commit` did not run the box's \
                 /src/.husky/pre-commit: the attack the test above refuses does not work here, \
                 so it proves nothing"
            )
        });
    }
    f.finish();
}

// ---------------------------------------------------------------------------------------
// 5. Hook managers' configs.

/// A hook as a hook manager's does it in spirit: `head` (what the manager's installer
/// writes: its name, its `--config`), then, for each of `files` that is there (relative to
/// the work tree's top, where git runs a hook), each line `KEY: CMD` run with `sh`; then
/// each executable in `dir` (`""`: none).
fn manager_hook(head: &str, key: &str, files: &[&str], dir: &str) -> String {
    let mut s = format!(
        "#!/bin/sh\n{head}\nfor f in {files}; do\n  [ -f \"$f\" ] || continue\n  \
         sed -n 's/^[[:space:]]*{key}:[[:space:]]*//p' \"$f\" | while IFS= read -r cmd; do \
         sh -c \"$cmd\" || exit 1; done\ndone\n",
        files = files.join(" ")
    );
    if !dir.is_empty() {
        s.push_str(&format!(
            "for h in {dir}/*; do [ -x \"$h\" ] && \"$h\"; done\n"
        ));
    }
    s.push_str("exit 0\n");
    s
}

/// pre-commit's hook, as `pre-commit install` writes it (its `ARGS`, in a comment: the
/// real one is bash), reading `config`.
fn pre_commit_hook(args: &str, config: &str) -> String {
    manager_hook(
        &format!(
            "# File generated by pre-commit: https://pre-commit.com\n\
             # ID: 138fd403232d2ddd5efb44317e38bf03\n# {args}\n\
             # (pre-commit itself is not installed here: this runs each entry of {config})"
        ),
        "entry",
        &[config],
        "",
    )
}

/// A pre-commit config whose one hook's `entry` touches `mark`.
fn pre_commit_config(id: &str, mark: &Path) -> String {
    format!(
        "repos:\n  - repo: local\n    hooks:\n      - id: {id}\n        name: {id}\n        \
         language: system\n        entry: touch {}\n",
        mark.display()
    )
}

/// The step appending a hook of the box's, whose entry touches `mark`, to the pre-commit
/// config at `path` (in the box).
fn box_pre_commit_entry(path: &str, mark: &Path) -> String {
    format!(
        "printf '      - id: theirs\\n        entry: touch {}\\n' >> {path}",
        mark.display()
    )
}

/// pre-commit installed in `.git/hooks/pre-commit`: the file its hook reads is kept, by its
/// top name — as `pre-commit install` writes it (`--config=.pre-commit-config.yaml`), with
/// `--config ci/pre-commit.yaml` (a word apart; keeps `ci`), and a hook that only mentions
/// pre-commit (keeps `.pre-commit-config.yaml`). The box appends an entry touching its mark
/// (`EROFS`), moves the config (or its directory) aside for one of its own (refused); a
/// plain write beside lands; the person's `git commit` runs their entry, never the box's.
#[test]
fn the_config_an_installed_pre_commit_hook_runs_from_is_kept() {
    // (lab, the hook's ARGS line, the config it reads, its top name)
    let variants = [
        (
            "pre-commit-installed",
            "ARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)",
            ".pre-commit-config.yaml",
            ".pre-commit-config.yaml",
        ),
        (
            "pre-commit-space",
            "exec pre-commit hook-impl --config ci/pre-commit.yaml --hook-type=pre-commit",
            "ci/pre-commit.yaml",
            "ci",
        ),
        (
            "pre-commit-bare",
            "exec pre-commit run --hook-stage pre-commit",
            ".pre-commit-config.yaml",
            ".pre-commit-config.yaml",
        ),
    ];
    let mut f = Faults::default();
    for who in As::all() {
        for (name, args, cfg, top) in variants {
            let lab = Lab::new(name, who, &[]);
            let (mine, theirs) = (lab.marker("entry-person"), lab.marker("entry-box"));
            person_script(&lab, cfg, &pre_commit_config("mine", &mine));
            person_script(&lab, ".git/hooks/pre-commit", &pre_commit_hook(args, cfg));
            let config = lab.config("c", None, "");
            let before = snapshot(&lab.p(top));
            let at = format!("/src/{cfg}");
            let (r, out) = lab.sh(
                &config,
                &steps(&[
                    ("plain", "printf 'x\\n' > /src/notes.txt".into()),
                    (
                        "append",
                        tagged("append", &box_pre_commit_entry(&at, &theirs)),
                    ),
                    (
                        "mv",
                        format!(
                            "{} && {{ mkdir -p $(dirname {at}); printf '{}' > {at}; }}",
                            tagged("mv", &format!("mv /src/{top} /src/{top}.old")),
                            pre_commit_config("theirs", &theirs).replace('\n', "\\n")
                        ),
                    ),
                ]),
            );
            let b = Boxed {
                who,
                run: &r,
                out: &out,
            };
            if b.ran(&mut f, name) {
                b.done(&mut f, "plain");
                b.refused(&mut f, "append");
                b.refused(&mut f, "mv");
                refused_saying(&b, &mut f, "append", EROFS);
            }
            landed(&mut f, &lab, "notes.txt", "x\n");
            unchanged(
                &mut f,
                who,
                &format!("{top} ({name})"),
                &before,
                &snapshot(&lab.p(top)),
            );
            f.check(!lab.p(&format!("{top}.old")).exists(), || {
                format!("{who:?}: the box moved {top} aside ({name})")
            });
            let cm = commit(&lab, "");
            f.check(cm.ok(), || {
                format!(
                    "{who:?}: the person's git commit failed ({name})\n{}",
                    cm.show()
                )
            });
            ran_the_persons(
                &mut f,
                who,
                &mine,
                &theirs,
                &format!("the person's `git commit` ({name})"),
                &format!(
                    "the box added an entry to {cfg} (read by the installed pre-commit hook, \
                     {args:?}), and the person's `git commit` ran it on the host"
                ),
            );
        }
    }
    f.finish();
}

/// lefthook installed in `.git/hooks/pre-commit`: its hook runs the `run:` lines of
/// `lefthook.yml` (the person's: kept, the box's append refused with `EROFS`) and of
/// `lefthook-local.yml` (absent when the box starts). The box makes
/// `/src/lefthook-local.yml` with a `run:` touching its mark, and a `.lefthook` directory;
/// after the call both are moved aside (`NAME.made-in-a-box-*`, the answer says so), and the
/// person's `git commit` runs their own command, never the box's. A plain write landed.
#[test]
fn a_lefthook_config_a_box_makes_is_moved_aside() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("lefthook", who, &[]);
        let (mine, theirs, local) = (
            lab.marker("run-person"),
            lab.marker("run-box"),
            lab.marker("run-box-local"),
        );
        person_script(
            &lab,
            "lefthook.yml",
            &format!(
                "pre-commit:\n  commands:\n    mine:\n      run: touch {}\n",
                mine.display()
            ),
        );
        person_script(
            &lab,
            ".git/hooks/pre-commit",
            &manager_hook(
                "# lefthook's hook (call_lefthook run \"pre-commit\" \"$@\"): lefthook itself is \
                 not installed here",
                "run",
                &["lefthook.yml", "lefthook-local.yml"],
                "",
            ),
        );
        let config = lab.config("c", None, "");
        let before = snapshot(&lab.p("lefthook.yml"));
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("plain", "printf 'x\\n' > /src/notes.txt".into()),
                (
                    "append",
                    tagged(
                        "append",
                        &format!(
                            "printf '    theirs:\\n      run: touch {}\\n' >> /src/lefthook.yml",
                            theirs.display()
                        ),
                    ),
                ),
                (
                    "local",
                    format!(
                        "printf 'pre-commit:\\n  commands:\\n    theirs:\\n      run: touch {}\\n' \
                         > /src/lefthook-local.yml",
                        local.display()
                    ),
                ),
                (
                    "dir",
                    "mkdir /src/lh && printf 'x\\n' > /src/lh/x && mv /src/lh /src/.lefthook"
                        .into(),
                ),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            b.refused(&mut f, "append");
            refused_saying(&b, &mut f, "append", EROFS);
            // Absent names are the box's to make; they are moved aside after the call.
            b.done(&mut f, "local");
            b.done(&mut f, "dir");
            was_moved_aside(
                &mut f,
                &b,
                &lab,
                "lefthook-local.yml",
                "/src/lefthook-local.yml",
            );
            was_moved_aside(&mut f, &b, &lab, ".lefthook", "/src/.lefthook");
        }
        landed(&mut f, &lab, "notes.txt", "x\n");
        unchanged(
            &mut f,
            who,
            "lefthook.yml",
            &before,
            &snapshot(&lab.p("lefthook.yml")),
        );
        let cm = commit(&lab, "");
        f.check(cm.ok(), || {
            format!("{who:?}: the person's git commit failed\n{}", cm.show())
        });
        no_mark(
            &mut f,
            who,
            &local,
            "the box made lefthook-local.yml, and the person's `git commit` ran its command on \
             the host",
        );
        ran_the_persons(
            &mut f,
            who,
            &mine,
            &theirs,
            "the person's `git commit` (lefthook)",
            "the box appended to lefthook.yml, and the person's `git commit` ran it on the host",
        );
    }
    f.finish();
}

/// overcommit installed in `.git/hooks/pre-commit`: its hook runs `.overcommit.yml`'s
/// `command:` lines and the executables of `.git-hooks/pre_commit`. The box's append to
/// `.overcommit.yml` is refused (`EROFS`); `.git-hooks`, absent when the box starts and
/// made by it with a hook of its own, is moved aside after the call; the person's `git
/// commit` runs their command, never the box's.
#[test]
fn an_overcommit_config_and_its_hooks_directory_are_kept() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("overcommit", who, &[]);
        let (mine, theirs, dir_box) = (
            lab.marker("oc-person"),
            lab.marker("oc-box"),
            lab.marker("oc-box-dir"),
        );
        person_script(
            &lab,
            ".overcommit.yml",
            &format!(
                "PreCommit:\n  Mine:\n    enabled: true\n    command: touch {}\n",
                mine.display()
            ),
        );
        person_script(
            &lab,
            ".git/hooks/pre-commit",
            &manager_hook(
                "# overcommit's hook (overcommit itself is not installed here)",
                "command",
                &[".overcommit.yml"],
                ".git-hooks/pre_commit",
            ),
        );
        let config = lab.config("c", None, "");
        let before = snapshot(&lab.p(".overcommit.yml"));
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("plain", "printf 'x\\n' > /src/notes.txt".into()),
                (
                    "append",
                    tagged(
                        "append",
                        &format!(
                            "printf '  Theirs:\\n    command: touch {}\\n' >> /src/.overcommit.yml",
                            theirs.display()
                        ),
                    ),
                ),
                (
                    "dir",
                    format!(
                        "mkdir -p /src/gh/pre_commit && {} && chmod 0755 \
                         /src/gh/pre_commit/theirs && mv /src/gh /src/.git-hooks",
                        box_script("/src/gh/pre_commit/theirs", &dir_box, "")
                    ),
                ),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            b.refused(&mut f, "append");
            refused_saying(&b, &mut f, "append", EROFS);
            b.done(&mut f, "dir");
            was_moved_aside(&mut f, &b, &lab, ".git-hooks", "/src/.git-hooks");
        }
        landed(&mut f, &lab, "notes.txt", "x\n");
        unchanged(
            &mut f,
            who,
            ".overcommit.yml",
            &before,
            &snapshot(&lab.p(".overcommit.yml")),
        );
        let _ = commit(&lab, "");
        no_mark(
            &mut f,
            who,
            &dir_box,
            "the box made .git-hooks/pre_commit/theirs, and the person's `git commit` ran it \
             on the host",
        );
        ran_the_persons(
            &mut f,
            who,
            &mine,
            &theirs,
            "the person's `git commit` (overcommit)",
            "the box appended to .overcommit.yml, and the person's `git commit` ran it on the \
             host",
        );
    }
    f.finish();
}

/// The companion that shows the rule reads hooks, not samples: `.git/hooks/pre-commit.sample`
/// is pre-commit's hook, word for word, but git does not run a sample, so
/// `.pre-commit-config.yaml` is the box's to write — its append lands, and `box show` does
/// not list it as kept.
#[test]
fn a_sample_hook_keeps_nothing() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("pre-commit-sample", who, &[]);
        let (mine, theirs) = (lab.marker("entry-person"), lab.marker("entry-box"));
        let cfg = ".pre-commit-config.yaml";
        person_script(&lab, cfg, &pre_commit_config("mine", &mine));
        person_script(
            &lab,
            ".git/hooks/pre-commit.sample",
            &pre_commit_hook(
                "ARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)",
                cfg,
            ),
        );
        let config = lab.config("c", None, "");
        let (r, out) = lab.sh(
            &config,
            &steps(&[(
                "append",
                box_pre_commit_entry("/src/.pre-commit-config.yaml", &theirs),
            )]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "append");
        }
        let text = read(&lab.p(cfg)).unwrap_or_default();
        f.check(
            String::from_utf8_lossy(&text).contains(&format!("entry: touch {}", theirs.display())),
            || {
                format!(
                    "{who:?}: with only a sample hook, the box's append to {cfg} did not land: \
                     a sample keeps it\n--- {cfg} ---\n{}",
                    String::from_utf8_lossy(&text)
                )
            },
        );
        let show = lab.box_show(&config);
        f.check(show.ok() && !shows_kept(&show.stdout, cfg), || {
            format!(
                "{who:?}: with only a sample hook, box show lists {cfg} as kept\n{}",
                show.show()
            )
        });
    }
    f.finish();
}

/// The companion of the hook managers' tests: with `read_only = []` nothing is kept, the
/// box's entry in `.pre-commit-config.yaml` and its `lefthook-local.yml` stay where it put
/// them, and the person's `git commit` runs both on the host — the hooks these tests install
/// do run what the config names, so the tests above fail where the protection is missing.
#[test]
fn with_an_empty_list_a_hook_managers_config_is_the_boxs() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("hook-managers-open", who, &[]);
        let (pc, lh) = (lab.marker("pre-commit-box"), lab.marker("lefthook-box"));
        person_script(
            &lab,
            ".pre-commit-config.yaml",
            &pre_commit_config("mine", &lab.marker("pre-commit-person")),
        );
        person_script(
            &lab,
            ".git/hooks/pre-commit",
            &format!(
                "{}{}",
                pre_commit_hook(
                    "ARGS=(hook-impl --config=.pre-commit-config.yaml --hook-type=pre-commit)",
                    ".pre-commit-config.yaml",
                )
                .trim_end_matches("exit 0\n"),
                manager_hook("# lefthook", "run", &["lefthook-local.yml"], "")
                    .trim_start_matches("#!/bin/sh\n")
            ),
        );
        let config = lab.config("c", Some("[]"), "");
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                (
                    "pre-commit",
                    box_pre_commit_entry("/src/.pre-commit-config.yaml", &pc),
                ),
                (
                    "lefthook",
                    format!(
                        "printf 'pre-commit:\\n  commands:\\n    theirs:\\n      run: touch {}\\n' \
                         > /src/lefthook-local.yml",
                        lh.display()
                    ),
                ),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "pre-commit");
            b.done(&mut f, "lefthook");
        }
        f.check(lab.p("lefthook-local.yml").is_file(), || {
            format!(
                "{who:?}: with read_only = [] the box's lefthook-local.yml was moved aside ({:?})",
                moved_aside(&lab, "lefthook-local.yml")
            )
        });
        let _ = commit(&lab, "");
        f.check(pc.exists() && lh.exists(), || {
            format!(
                "{who:?}: with read_only = [] the person's `git commit` did not run the box's \
                 commands (pre-commit entry: {}, lefthook-local.yml: {}): the attacks the tests \
                 above refuse do not work here, so they prove nothing",
                pc.exists(),
                lh.exists()
            )
        });
    }
    f.finish();
}

// ---------------------------------------------------------------------------------------
// 6. What a kept `.envrc` runs from.

/// The `.envrc` of the flake project: nix-direnv's `use flake`, a directory of the work
/// tree put first on `PATH` two ways, and a local file sourced where it exists.
const FLAKE_ENVRC: &str =
    "use flake\nPATH_add bin\nexport PATH=$PWD/tools:$PATH\nsource_env_if_exists .envrc.local\n";

/// A `flake.nix` whose dev shell's `shellHook` touches `mark` (one line, as the stand-in
/// for nix reads it: `shellHook = "CMD";`).
fn flake_nix(mark: &Path) -> String {
    format!(
        "{{\n  description = \"the person's project\";\n  outputs = {{ self, nixpkgs }}: {{\n    \
         devShells.x86_64-linux.default = nixpkgs.legacyPackages.x86_64-linux.mkShell {{\n      \
         shellHook = \"touch {}\";\n    }};\n  }};\n}}\n",
        mark.display()
    )
}

/// What direnv and nix-direnv do on the person's `cd` into a directory whose `.envrc` they
/// allowed (neither is installed here), in POSIX sh: direnv's stdlib functions, then the
/// `.envrc` sourced; `use flake` `eval`s nix-direnv's cached environment
/// (`.direnv/flake-profile-x.rc`) where there is one — unless `RELOAD` is set, as
/// `nix-direnv-reload` does — and otherwise runs the flake's `shellHook`s. Then the
/// person's next commands in that shell: `ls`, and `x` where something on `PATH` has one.
const DIRENV_CD: &str = r#"
use() {
  [ "$1" = flake ] || return 0
  if [ -z "${RELOAD:-}" ] && [ -f .direnv/flake-profile-x.rc ]; then
    . ./.direnv/flake-profile-x.rc
  else
    sed -n 's/^[[:space:]]*shellHook = "\(.*\)";[[:space:]]*$/\1/p' flake.nix |
      while IFS= read -r hook; do sh -c "$hook"; done
  fi
}
PATH_add() { PATH="$PWD/$1:$PATH"; }
source_env_if_exists() { if [ -f "$1" ]; then . "./$1"; fi; }
. ./.envrc
export PATH
ls >/dev/null
if command -v x >/dev/null; then x; fi
true
"#;

/// The person's `cd` into the project's directory `rel` on the host ([`DIRENV_CD`]), as the
/// user boxmaker runs as; `reload`: nix-direnv's cache ignored (the flake evaluated).
fn direnv_cd(f: &mut Faults, lab: &Lab, rel: &str, reload: bool) {
    let who = lab.who();
    let dir = lab.p(rel);
    if !dir.join(".envrc").is_file() {
        f.check(false, || {
            format!("{who:?}: /src/{rel}/.envrc is not on the host any more")
        });
        return;
    }
    let mut c = who.command("/bin/sh");
    c.current_dir(&dir)
        .args(["-c", DIRENV_CD])
        .env("HOME", lab.me.home.as_ref().unwrap())
        .env("PATH", "/usr/local/bin:/usr/bin:/bin");
    if reload {
        c.env("RELOAD", "1");
    }
    let r = testkit::run_to_end(c, &lab.w.dir, &format!("cd {rel}"), hostrun::LIMIT);
    f.check(r.ok(), || {
        format!(
            "{who:?}: the person's `cd` into /src/{rel} failed\n{}",
            r.show()
        )
    });
}

/// Nothing was moved aside to `/src/REL.old` on the host.
fn not_moved(f: &mut Faults, lab: &Lab, rel: &str) {
    f.check(
        std::fs::symlink_metadata(lab.p(&format!("{rel}.old"))).is_err(),
        || {
            format!(
                "{:?}: the box moved /src/{rel} aside to /src/{rel}.old on the host",
                lab.who()
            )
        },
    );
}

/// A nix-direnv project: `.envrc` is [`FLAKE_ENVRC`]; `flake.nix` (its `shellHook` touches
/// the person's mark), `flake.lock`, `bin/ls`, `tools/x` and nix-direnv's cache
/// `.direnv/flake-profile-x.rc` are the person's, each touching a mark of theirs. The box
/// rewrites each — appends a `shellHook` to `flake.nix` and puts a file of its own over it
/// with `mv`, rewrites `flake.lock`, the cache, `bin/ls`, `tools/x` and `.envrc`, adds
/// `.direnv/flake-profile-y.rc` and `bin/git` — and moves `bin` and `.direnv` aside: each
/// refused (`EROFS` for a write, `EBUSY` for a rename). It makes `.envrc.local` (absent:
/// the box's to make), which is moved aside after the call, the answer saying so. A plain
/// write to `/src/a.txt` lands. On the host every file is as the person left it, and their
/// next `cd` (cache and reload) runs their commands, never the box's.
#[test]
fn what_a_kept_envrc_runs_from_cannot_be_rewritten() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("envrc-flake", who, &[(".envrc", FLAKE_ENVRC)]);
        let pair = |n: &str| {
            (
                lab.marker(&format!("{n}-person")),
                lab.marker(&format!("{n}-box")),
            )
        };
        let (flake_a, flake_b) = pair("flake");
        let (cache_a, cache_b) = pair("cache");
        let (ls_a, ls_b) = pair("ls");
        let (tools_a, tools_b) = pair("tools");
        let (local_b, other_b) = (lab.marker("local-box"), lab.marker("other-box"));
        person_script(&lab, "flake.nix", &flake_nix(&flake_a));
        person_script(&lab, "flake.lock", "{\"version\": 7}\n");
        person_script(&lab, "bin/ls", &script(&ls_a, "exec /bin/ls \"$@\"\n"));
        person_script(&lab, "tools/x", &script(&tools_a, ""));
        person_script(
            &lab,
            ".direnv/flake-profile-x.rc",
            &format!("export IN_NIX_SHELL=impure\ntouch {}\n", cache_a.display()),
        );
        let tops = [
            ".envrc",
            "flake.nix",
            "flake.lock",
            "bin",
            "tools",
            ".direnv",
        ];
        let before: Vec<_> = tops.iter().map(|t| (*t, snapshot(&lab.p(t)))).collect();
        let config = lab.config("c", None, "");
        let writes: Vec<(&str, String)> = vec![
            (
                "flake-append",
                format!(
                    "printf '      shellHook = \"touch {}\";\\n' >> /src/flake.nix",
                    flake_b.display()
                ),
            ),
            (
                "flake-lock",
                "printf '{\"version\": 7, \"theirs\": 1}\\n' > /src/flake.lock".into(),
            ),
            (
                "cache",
                box_script("/src/.direnv/flake-profile-x.rc", &cache_b, ""),
            ),
            (
                "cache-new",
                box_script("/src/.direnv/flake-profile-y.rc", &other_b, ""),
            ),
            ("ls", box_script("/src/bin/ls", &ls_b, "")),
            ("bin-new", box_script("/src/bin/git", &other_b, "")),
            ("tools", box_script("/src/tools/x", &tools_b, "")),
            ("envrc", "printf 'PATH_add theirs\\n' >> /src/.envrc".into()),
        ];
        let renames: Vec<(&str, String)> = vec![
            (
                "flake-mv-over",
                format!(
                    "printf '{{ shellHook = \"touch {}\"; }}\\n' > /tmp/evil.nix && \
                     cp /tmp/evil.nix /src/evil.nix && mv /src/evil.nix /src/flake.nix",
                    flake_b.display()
                ),
            ),
            ("flake-mv", "mv /src/flake.nix /src/flake.nix.old".into()),
            ("cache-mv", "mv /src/.direnv /src/.direnv.old".into()),
            ("bin-mv", "mv /src/bin /src/bin.old".into()),
            ("tools-mv", "mv /src/tools /src/tools.old".into()),
        ];
        let mut s: Vec<(&str, String)> = vec![("plain", "printf 'box\\n' > /src/a.txt".into())];
        for (tag, cmd) in writes.iter().chain(&renames) {
            s.push((tag, tagged(tag, cmd)));
        }
        s.push((
            "local",
            format!(
                "printf 'touch {}\\n' > /src/.envrc.local",
                local_b.display()
            ),
        ));
        let (r, out) = lab.sh(&config, &steps(&s));
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the .envrc attack") {
            b.done(&mut f, "plain");
            for (tag, _) in &writes {
                b.refused(&mut f, tag);
                refused_saying(&b, &mut f, tag, EROFS);
            }
            for (tag, _) in &renames {
                b.refused(&mut f, tag);
                busy(&b, &mut f, tag);
            }
            // Absent, so the box's to make: moved aside after the call.
            b.done(&mut f, "local");
            was_moved_aside(&mut f, &b, &lab, ".envrc.local", "/src/.envrc.local");
        }
        landed(&mut f, &lab, "a.txt", "box\n");
        for (t, snap) in &before {
            unchanged(
                &mut f,
                who,
                &format!("after the .envrc attack, {t}"),
                snap,
                &snapshot(&lab.p(t)),
            );
        }
        for t in ["flake.nix", ".direnv", "bin", "tools"] {
            not_moved(&mut f, &lab, t);
        }

        // The person's next `cd`, with nix-direnv's cache, then reloaded.
        direnv_cd(&mut f, &lab, "", false);
        direnv_cd(&mut f, &lab, "", true);
        for (mine, theirs, how, what) in [
            (
                &flake_a,
                &flake_b,
                "the person's `cd` (nix-direnv-reload: the flake evaluated)",
                "the box changed flake.nix (`use flake` in the kept .envrc), and the person's \
                 next `cd` ran its shellHook on the host",
            ),
            (
                &cache_a,
                &cache_b,
                "the person's `cd` (nix-direnv's cache)",
                "the box rewrote .direnv/flake-profile-x.rc, and the person's next `cd` \
                 eval'd it on the host",
            ),
            (
                &ls_a,
                &ls_b,
                "the person's `ls` after `cd` (PATH_add bin)",
                "the box rewrote bin/ls (`PATH_add bin` in the kept .envrc), and the person's \
                 next `ls` ran it on the host",
            ),
            (
                &tools_a,
                &tools_b,
                "the person's `x` after `cd` (export PATH=$PWD/tools:$PATH)",
                "the box rewrote tools/x (`$PWD/tools` on PATH in the kept .envrc), and the \
                 person's next `x` ran it on the host",
            ),
        ] {
            ran_the_persons(&mut f, who, mine, theirs, how, what);
        }
        no_mark(
            &mut f,
            who,
            &local_b,
            "the box made .envrc.local (`source_env_if_exists .envrc.local`), and the person's \
             next `cd` sourced it on the host",
        );
        no_mark(
            &mut f,
            who,
            &other_b,
            "a file the box added to .direnv or bin ran on the host",
        );
    }
    f.finish();
}

/// A flake project whose `.direnv` is not there yet (the person has not `cd`ed into it
/// since cloning): the box makes `.direnv/flake-profile-x.rc` touching its mark, which
/// nix-direnv would `eval` on the next `cd`. After the call `.direnv` is moved aside
/// (`.direnv.made-in-a-box-*`, the answer says so), and the person's next `cd` evaluates
/// their flake, never the box's cache. A plain write landed.
#[test]
fn a_direnv_cache_a_box_makes_is_moved_aside() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("envrc-no-cache", who, &[(".envrc", "use flake\n")]);
        let (mine, theirs) = (lab.marker("flake-person"), lab.marker("cache-box"));
        person_script(&lab, "flake.nix", &flake_nix(&mine));
        assert!(
            std::fs::symlink_metadata(lab.p(".direnv")).is_err(),
            "the lab made .direnv"
        );
        let config = lab.config("c", None, "");
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("plain", "printf 'box\\n' > /src/a.txt".into()),
                (
                    "cache",
                    format!(
                        "mkdir /src/dv && {} && mv /src/dv /src/.direnv",
                        box_script("/src/dv/flake-profile-x.rc", &theirs, "")
                    ),
                ),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "plain");
            b.done(&mut f, "cache");
            was_moved_aside(&mut f, &b, &lab, ".direnv", "/src/.direnv");
        }
        landed(&mut f, &lab, "a.txt", "box\n");
        direnv_cd(&mut f, &lab, "", false);
        ran_the_persons(
            &mut f,
            who,
            &mine,
            &theirs,
            "the person's `cd` (no cache: the flake evaluated)",
            "the box made .direnv/flake-profile-x.rc where there was none, and the person's \
             next `cd` eval'd it on the host",
        );
    }
    f.finish();
}

/// A directory of projects (no `.envrc` at its top) with repositories `a` and `org/b`:
/// `a/.envrc` says `PATH_add bin`, and `a/bin/ls` is the person's. The box cannot rewrite
/// `/src/a/bin/ls` or `/src/a/.envrc` (`EROFS`), nor move `/src/a/bin` aside or remove it
/// (`EBUSY`); `/src/a/.direnv`, absent, is moved aside after the call. `org/b` has no
/// `.envrc`: its `bin/ls` is the box's to make, and lands on the host; so does a plain write
/// in `/src/a`. The person's next `cd a` and `ls` run their script, never the box's.
#[test]
fn a_nested_repositorys_envrc_keeps_what_it_names_in_its_work_tree() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::with_repos(
            "envrc-nested",
            who,
            false,
            &["a", "org/b"],
            &[("a/.envrc", "PATH_add bin\n")],
        );
        let (mine, theirs) = (lab.marker("ls-person"), lab.marker("ls-box"));
        let (cache_b, b_ls) = (lab.marker("cache-box"), lab.marker("b-ls-box"));
        person_script(&lab, "a/bin/ls", &script(&mine, "exec /bin/ls \"$@\"\n"));
        let before: Vec<_> = ["a/.envrc", "a/bin"]
            .iter()
            .map(|t| (*t, snapshot(&lab.p(t))))
            .collect();
        let config = lab.config("c", None, "");
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("plain", "printf 'new\\n' > /src/a/new.txt".into()),
                (
                    "ls",
                    tagged("ls", &box_script("/src/a/bin/ls", &theirs, "")),
                ),
                (
                    "envrc",
                    tagged("envrc", "printf 'PATH_add theirs\\n' >> /src/a/.envrc"),
                ),
                ("bin-mv", tagged("bin-mv", "mv /src/a/bin /src/a/bin.old")),
                ("bin-rm", tagged("bin-rm", "rm -rf /src/a/bin")),
                (
                    "cache",
                    format!(
                        "mkdir /src/a/dv && {} && mv /src/a/dv /src/a/.direnv",
                        box_script("/src/a/dv/flake-profile-x.rc", &cache_b, "")
                    ),
                ),
                (
                    "b-ls",
                    format!(
                        "mkdir -p /src/org/b/bin && {}",
                        box_script("/src/org/b/bin/ls", &b_ls, "")
                    ),
                ),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the nested .envrc attack") {
            b.done(&mut f, "plain");
            b.done(&mut f, "b-ls");
            b.done(&mut f, "cache");
            for tag in ["ls", "envrc", "bin-mv", "bin-rm"] {
                b.refused(&mut f, tag);
            }
            refused_saying(&b, &mut f, "ls", EROFS);
            refused_saying(&b, &mut f, "envrc", EROFS);
            busy(&b, &mut f, "bin-mv");
            was_moved_aside(&mut f, &b, &lab, "a/.direnv", "/src/a/.direnv");
        }
        landed(&mut f, &lab, "a/new.txt", "new\n");
        let got = read(&lab.p("org/b/bin/ls"));
        f.check(
            got.as_deref().is_some_and(|g| {
                String::from_utf8_lossy(g).contains(&format!("touch {}", b_ls.display()))
            }),
            || {
                format!(
                    "{who:?}: /src/org/b/bin/ls (org/b has no .envrc) is not the box's on the \
                     host ({:?}): the box could not write beside the kept one (proves nothing)",
                    got.map(|g| String::from_utf8_lossy(&g).into_owned())
                )
            },
        );
        for (t, snap) in &before {
            unchanged(
                &mut f,
                who,
                &format!("after the nested .envrc attack, {t}"),
                snap,
                &snapshot(&lab.p(t)),
            );
        }
        not_moved(&mut f, &lab, "a/bin");
        direnv_cd(&mut f, &lab, "a", false);
        ran_the_persons(
            &mut f,
            who,
            &mine,
            &theirs,
            "the person's `ls` after `cd a` (PATH_add bin)",
            "the box rewrote a/bin/ls (`PATH_add bin` in a's kept .envrc), and the person's \
             next `ls` in a ran it on the host",
        );
        no_mark(
            &mut f,
            who,
            &cache_b,
            "the box made a/.direnv/flake-profile-x.rc, and it ran on the host",
        );
    }
    f.finish();
}

/// The companion: with `read_only = []` nothing is kept — the box's rewrites of `bin/ls`
/// and `.direnv/flake-profile-x.rc` land, and the person's next `cd` and `ls` run both on
/// the host. So the tests above fail where the protection is missing; and `box show`
/// claims nothing kept.
#[test]
fn with_an_empty_list_what_an_envrc_runs_from_is_the_boxs() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new("envrc-open", who, &[(".envrc", FLAKE_ENVRC)]);
        let (ls_b, cache_b) = (lab.marker("ls-box"), lab.marker("cache-box"));
        person_script(&lab, "flake.nix", &flake_nix(&lab.marker("flake-person")));
        person_script(
            &lab,
            "bin/ls",
            &script(&lab.marker("ls-person"), "exec /bin/ls \"$@\"\n"),
        );
        person_script(
            &lab,
            ".direnv/flake-profile-x.rc",
            &format!("touch {}\n", lab.marker("cache-person").display()),
        );
        let config = lab.config("c", Some("[]"), "");
        let (r, out) = lab.sh(
            &config,
            &steps(&[
                ("ls", box_script("/src/bin/ls", &ls_b, "")),
                (
                    "cache",
                    box_script("/src/.direnv/flake-profile-x.rc", &cache_b, ""),
                ),
            ]),
        );
        let b = Boxed {
            who,
            run: &r,
            out: &out,
        };
        if b.ran(&mut f, "the box") {
            b.done(&mut f, "ls");
            b.done(&mut f, "cache");
        }
        direnv_cd(&mut f, &lab, "", false);
        f.check(ls_b.exists() && cache_b.exists(), || {
            format!(
                "{who:?}: with read_only = [] the person's `cd` did not run the box's bin/ls \
                 ({}) and .direnv/flake-profile-x.rc ({}): the attack the tests above refuse \
                 does not work here, so they prove nothing",
                ls_b.exists(),
                cache_b.exists()
            )
        });
        let show = lab.box_show(&config);
        f.check(show.ok() && kept_lines(&show.stdout).is_empty(), || {
            format!(
                "{who:?}: with read_only = [] box show claims something kept\n{}",
                show.show()
            )
        });
    }
    f.finish();
}

/// `box show` lists what the flake project's `.envrc` runs from as kept read-only —
/// `/src/.envrc`, `/src/flake.nix`, `/src/flake.lock`, `/src/bin`, `/src/tools`,
/// `/src/.direnv` — and not `/src/sub`, which it does not name; building boxes changes
/// nothing on the host.
#[test]
fn box_show_lists_what_an_envrc_runs_from_as_kept() {
    let mut f = Faults::default();
    for who in As::all() {
        let lab = Lab::new(
            "envrc-show",
            who,
            &[
                (".envrc", FLAKE_ENVRC),
                ("flake.nix", "{ }\n"),
                ("flake.lock", "{}\n"),
                ("bin/ls", "#!/bin/sh\n"),
                ("tools/x", "#!/bin/sh\n"),
                (".direnv/flake-profile-x.rc", "\n"),
            ],
        );
        let config = lab.config("c", None, "");
        let before = snapshot(&lab.proj);
        let show = lab.box_show(&config);
        f.check(show.ok(), || format!("{who:?}: box show\n{}", show.show()));
        for rel in [
            ".envrc",
            "flake.nix",
            "flake.lock",
            "bin",
            "tools",
            ".direnv",
        ] {
            f.check(shows_kept(&show.stdout, rel), || {
                format!(
                    "{who:?}: box show does not list /src/{rel} as kept read-only\n{}",
                    show.stdout
                )
            });
        }
        f.check(!shows_kept(&show.stdout, "sub"), || {
            format!(
                "{who:?}: box show lists /src/sub (the .envrc does not name it) as kept\n{}",
                show.stdout
            )
        });
        let (r, _) = lab.sh(&config, "true");
        f.check(r.ok(), || format!("{who:?}: a box\n{}", r.show()));
        unchanged(
            &mut f,
            who,
            "after building boxes, the project",
            &before,
            &snapshot(&lab.proj),
        );
    }
    f.finish();
}
