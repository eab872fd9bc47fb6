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
fn a_deeper_kept_entry_does_not_hold_which_is_why_read_only_takes_names() {
    // Keeping `.git/hooks` and `.git/config` alone would let a box commit, but the directory
    // that holds them moves, mount points and all, and a `.git` of the box's own takes its
    // place: so the config takes only names in a mount's top directory, whose own directory
    // (the mount point) cannot move.
    let proj = project();
    plant_host_files(proj.path());
    let (status, out, err) = boxed(
        proj.path(),
        &["/src/.git/hooks", "/src/.git/config"],
        "mv /src/.git /src/moved && mkdir -p /src/.git && echo swapped > /src/.git/config \
         && echo swapped",
    );
    assert_eq!(status, Status::Exited(0), "{out}{err}");
    assert_eq!(out, "swapped\n", "{err}");
    // The kept `.git` whole cannot move.
    let (_, out, err) = boxed(
        proj.path(),
        &["/src/.git"],
        "mv /src/.git /src/again && echo moved",
    );
    assert!(!out.contains("moved"), "{out}");
    assert!(err.contains("busy") || err.contains("Read-only"), "{err}");
}
