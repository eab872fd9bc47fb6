//! `Spec::keeps`: entries of a writable mount that no box may change (docs/spec.md §4, "What
//! a writable mount keeps"). Each test runs a real box over a real host directory and looks
//! at the host afterwards; where it matters the same write is shown to work without the
//! keep, so the test can fail.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::helper;

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use sandbox::{Io, Mount, Spec, Status};

/// A project directory any box user may write (as root the box runs as a uid of its own).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

fn open_up(path: &Path) {
    let mode = if path.is_dir() { 0o777 } else { 0o666 };
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs `sh -c script` in a box with `proj` at /src (writable) and `keeps` kept; returns
/// (exit status, stdout, stderr).
fn boxed(proj: &Path, keeps: &[&str], script: &str) -> (Status, String, String) {
    let ws = tempfile::tempdir().unwrap();
    let mut s = Spec::new(
        vec!["/bin/sh".into(), "-c".into(), script.into()],
        ws.path().to_path_buf(),
    );
    s.require.landlock = false;
    s.mounts.push(Mount {
        host: proj.to_path_buf(),
        at: "/src".into(),
        write: true,
    });
    s.keeps = keeps.iter().map(PathBuf::from).collect();
    s.io = Io::Capture {
        stdin: Vec::new(),
        output_cap: 1 << 16,
    };
    let out = sandbox::run(&s, &helper()).unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A git-like directory and a client's file, each open to every uid.
fn plant_host_files(proj: &Path) {
    fs::create_dir_all(proj.join(".git/hooks")).unwrap();
    fs::write(proj.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    fs::write(proj.join(".mcp.json"), "{\"mcpServers\":{}}\n").unwrap();
    fs::write(proj.join("a.txt"), "a\n").unwrap();
    for p in [".git", ".git/hooks", ".git/config", ".mcp.json", "a.txt"] {
        open_up(&proj.join(p));
    }
}

const ATTACK: &str = "printf '[core]\\n\\tfsmonitor = evil\\n' >> /src/.git/config; \
    echo evil > /src/.git/hooks/pre-commit; \
    echo '{\"mcpServers\":{\"x\":{\"command\":\"evil\"}}}' > /src/.mcp.json; \
    rm -rf /src/.git; mv /src/.git /src/moved; rm -f /src/.mcp.json; \
    echo b > /src/a.txt; echo new > /src/new.txt; mkdir -p /src/sub && echo x > /src/sub/x; \
    echo done";

#[test]
fn a_kept_entry_cannot_be_written_removed_or_moved_and_the_rest_stays_writable() {
    let proj = project();
    plant_host_files(proj.path());
    let (status, out, err) = boxed(proj.path(), &["/src/.git", "/src/.mcp.json"], ATTACK);
    assert_eq!(status, Status::Exited(0), "{out}{err}");
    assert_eq!(out, "done\n");
    assert!(err.contains("Read-only file system"), "{err}");
    let p = proj.path();
    assert_eq!(
        fs::read_to_string(p.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert!(!p.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        fs::read_to_string(p.join(".mcp.json")).unwrap(),
        "{\"mcpServers\":{}}\n"
    );
    assert!(!p.join("moved").exists());
    // Everything else in the mount is the box's to change.
    assert_eq!(fs::read_to_string(p.join("a.txt")).unwrap(), "b\n");
    assert_eq!(fs::read_to_string(p.join("new.txt")).unwrap(), "new\n");
    assert_eq!(fs::read_to_string(p.join("sub/x")).unwrap(), "x\n");
}

#[test]
fn without_the_keep_the_same_box_rewrites_them() {
    // The companion: the test above fails if keeps do nothing.
    let proj = project();
    plant_host_files(proj.path());
    let (status, out, err) = boxed(proj.path(), &[], ATTACK);
    assert_eq!(status, Status::Exited(0), "{out}{err}");
    assert!(!proj.path().join(".git").exists(), "rm -rf took it");
    assert!(!proj.path().join(".mcp.json").exists());
}

#[test]
fn building_a_box_makes_nothing_on_the_host() {
    let proj = project();
    plant_host_files(proj.path());
    let before = fs::metadata(proj.path().join(".mcp.json")).unwrap();
    let (status, _, err) = boxed(
        proj.path(),
        &[
            "/src/.mcp.json",
            "/src/.claude",
            "/src/deep/er/file",
            "/src/.git",
        ],
        "true",
    );
    assert_eq!(status, Status::Exited(0), "{err}");
    // Not there: not made (nor its parents); there: not truncated or touched.
    assert!(!proj.path().join(".claude").exists());
    assert!(!proj.path().join("deep").exists());
    let after = fs::metadata(proj.path().join(".mcp.json")).unwrap();
    assert_eq!(after.len(), before.len());
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
}

#[test]
fn a_symlink_at_a_kept_name_is_not_followed_to_the_host() {
    // An absolute link resolves on the host while the box is built; followed, it would bind
    // the host directory it names into the box.
    let host_private = tempfile::tempdir().unwrap();
    fs::write(host_private.path().join("marker"), "host-only-7731\n").unwrap();
    let proj = project();
    symlink(host_private.path(), proj.path().join(".claude")).unwrap();
    let (status, out, err) = boxed(
        proj.path(),
        &["/src/.claude"],
        "cat /src/.claude/marker; echo end",
    );
    assert_eq!(status, Status::Exited(0), "{err}");
    assert!(!out.contains("host-only-7731"), "{out}");
    assert_eq!(out, "end\n");
}

#[test]
fn a_keep_outside_every_writable_mount_is_refused() {
    let ws = tempfile::tempdir().unwrap();
    let proj = project();
    let mut s = Spec::new(vec!["/bin/true".into()], ws.path().to_path_buf());
    s.require.landlock = false;
    s.mounts.push(Mount {
        host: proj.path().to_path_buf(),
        at: "/src".into(),
        write: false,
    });
    s.keeps = vec!["/src/.git".into()];
    let err = sandbox::run(&s, &helper()).unwrap_err().to_string();
    assert!(err.contains("inside no writable mount"), "{err}");
    s.keeps = vec!["/elsewhere/.git".into()];
    assert!(sandbox::run(&s, &helper()).is_err());
}

#[test]
fn a_deeper_kept_entry_holds_because_the_directories_that_hold_it_are_pinned() {
    // Keeping `.git/hooks` and `.git/config` alone: without the pin, the directory that
    // holds them moves, mount points and all, and a `.git` of the box's own takes its
    // place (this was so before pins: the same script printed `swapped`). Pinned, the
    // directory between cannot be renamed or removed, and stays writable.
    let proj = project();
    plant_host_files(proj.path());
    let (status, out, err) = boxed(
        proj.path(),
        &["/src/.git/hooks", "/src/.git/config"],
        "mv /src/.git /src/moved && mkdir -p /src/.git && echo swapped > /src/.git/config \
         && echo swapped; rmdir /src/.git 2>/dev/null || echo not-removed; \
         echo still > /src/.git/description && echo writable",
    );
    assert_eq!(status, Status::Exited(0), "{out}{err}");
    assert_eq!(out, "not-removed\nwritable\n", "{err}");
    assert!(err.contains("busy"), "{err}");
    assert!(!proj.path().join("moved").exists());
    assert_eq!(
        fs::read_to_string(proj.path().join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    assert_eq!(
        fs::read_to_string(proj.path().join(".git/description")).unwrap(),
        "still\n"
    );
}

#[test]
fn a_repository_deep_in_a_mount_of_projects_cannot_be_swapped_for_the_boxs_own() {
    // `~/code` at /src: no `.git` at its top, one in `org/b`. Every directory between is
    // pinned, so neither `org` nor `org/b` moves; files beside them stay writable.
    let proj = project();
    let repo = proj.path().join("org/b");
    fs::create_dir_all(repo.join(".git")).unwrap();
    fs::write(repo.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    fs::write(repo.join("main.c"), "int main;\n").unwrap();
    for p in [
        "org",
        "org/b",
        "org/b/.git",
        "org/b/.git/config",
        "org/b/main.c",
    ] {
        open_up(&proj.path().join(p));
    }
    let swap = |from: &str| {
        format!(
            "mv {from} /src/elsewhere && mkdir -p /src/org/b/.git && \
             printf '[core]\\n\\tfsmonitor = evil\\n' > /src/org/b/.git/config && echo swapped-{from}; "
        )
    };
    let script = format!(
        "{}{}printf x >> /src/org/b/.git/config || echo kept; \
         rm -rf /src/org 2>/dev/null; echo x > /src/org/new.txt && echo y > /src/org/b/new.txt \
         && echo writable",
        swap("/src/org"),
        swap("/src/org/b")
    );
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&fs::metadata(p).unwrap());
    let before = (inode(&proj.path().join("org")), inode(&repo.join(".git")));
    let (status, out, err) = boxed(proj.path(), &["/src/org/b/.git"], &script);
    assert_eq!(status, Status::Exited(0), "{out}{err}");
    assert_eq!(out, "kept\nwritable\n", "{err}");
    // `mv` of a mount point to another mount copies (EXDEV): what it made is a copy, and the
    // person's directories are where they were.
    assert_eq!(
        (inode(&proj.path().join("org")), inode(&repo.join(".git"))),
        before
    );
    assert_eq!(
        fs::read_to_string(repo.join(".git/config")).unwrap(),
        "[core]\n\tbare = false\n"
    );
    // `rm -rf` took what a writable mount lets a box take, and nothing that holds the repo.
    assert!(!repo.join("main.c").exists());
    assert_eq!(fs::read_to_string(repo.join("new.txt")).unwrap(), "y\n");
    // Without the keep the same box swaps the repository for its own.
    let (_, out, err) = boxed(proj.path(), &[], &swap("/src/org"));
    assert_eq!(out, "swapped-/src/org\n", "{err}");
    assert!(
        fs::read_to_string(repo.join(".git/config"))
            .unwrap()
            .contains("fsmonitor")
    );
}
