//! Issue 21, item 5, through the real binary: `[box] memory_bytes` is the box's memory, not
//! every process's address space, where a memory cgroup bounds the box. A program that
//! reserves far more address space than it touches (node's WebAssembly: mcp-server-fetch's
//! page simplifier failed at 2, 4 and 8 GiB of `memory_bytes`) runs in a box of 1 GiB;
//! `[box] address_space_bytes` limits the address space apart; `box show` and `doctor` say
//! what the limit means here.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_boxmaker");

/// Maps 8 GiB of address space and touches none of it.
const MAP_8_GIB: &str = "import mmap; m = mmap.mmap(-1, 8 << 30); print('mapped')";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A config dir of `boxmaker init`, its `[box] memory_bytes` set to `memory`, plus `extra`
/// in `[box]`.
fn config(name: &str, memory: u64, extra: &str) -> PathBuf {
    let lab = testkit::lab!("address-space", name).init();
    let path = lab.config();
    let old = lab.config_text();
    let line = old
        .lines()
        .find(|l| l.starts_with("memory_bytes = "))
        .unwrap()
        .to_string();
    let new = old.replacen(&line, &format!("memory_bytes = {memory}\n{extra}"), 1);
    std::fs::write(&path, new).unwrap();
    // The tester's own edit: trusted, as a person would (a config that does not load is
    // left untrusted, and says why).
    testkit::trust(BIN, &path);
    path
}

fn boxmaker(config: &Path, args: &[&str], tail: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--config")
        .arg(config)
        .args(tail)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn in_box(config: &Path, code: &str) -> Output {
    boxmaker(
        config,
        &["box", "exec", "--session", "s1"],
        &["--", "/usr/bin/python3", "-c", code],
    )
}

fn memory_cgroup_here(config: &Path) -> bool {
    let o = boxmaker(config, &["doctor"], &[]);
    let out = text(&o.stdout);
    out.lines()
        .any(|l| l.contains("cgroup limits") && l.contains("memory is bounded there"))
}

#[test]
fn a_box_of_one_gib_maps_eight_gib_untouched_where_a_memory_cgroup_bounds_it() {
    let cfg = config("default", 1 << 30, "");
    assert!(
        memory_cgroup_here(&cfg),
        "this test needs a memory cgroup (CI runs as root with one): {}",
        text(&boxmaker(&cfg, &["doctor"], &[]).stdout)
    );
    let o = in_box(&cfg, MAP_8_GIB);
    assert!(
        o.status.success() && text(&o.stdout) == "mapped\n",
        "{:?}\n{}{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    let show = text(&boxmaker(&cfg, &["box", "show"], &[]).stdout);
    assert!(
        show.contains(
            "memory 1073741824 bytes (a memory cgroup bounds it), address space unlimited"
        ),
        "{show}"
    );
    // The memory is still bounded, by the cgroup: touching 1.5 GiB does not run.
    let o = in_box(&cfg, "b = b'x' * (1536 << 20); print('touched')");
    assert!(!o.status.success(), "{:?}", o.status);
    assert!(!text(&o.stdout).contains("touched"));
}

#[test]
fn address_space_bytes_is_every_processs_address_space_limit_where_a_cgroup_exists() {
    let cfg = config("limited", 1 << 30, "address_space_bytes = 2147483648\n");
    assert!(memory_cgroup_here(&cfg));
    let o = in_box(&cfg, MAP_8_GIB);
    assert!(!o.status.success(), "{:?} {}", o.status, text(&o.stdout));
    assert!(
        text(&o.stderr).contains("Cannot allocate memory")
            || text(&o.stderr).contains("MemoryError")
            || text(&o.stderr).contains("mmap"),
        "{}",
        text(&o.stderr)
    );
    let show = text(&boxmaker(&cfg, &["box", "show"], &[]).stdout);
    assert!(show.contains("address space 2147483648 bytes"), "{show}");
    // Below the memory limit, the config is refused with its line.
    let bad = config("below", 1 << 30, "address_space_bytes = 1048576\n");
    let o = boxmaker(&bad, &["box", "show"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("below `memory_bytes`"),
        "{}",
        text(&o.stderr)
    );
}
