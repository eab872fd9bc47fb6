//! The official MCP conformance suite's CLIENT `auth` scenarios (`@modelcontextprotocol/
//! conformance`, pinned in tests/node-conformance) with boxmaker's remote client as the client
//! under test (docs/spec.md §3.9, "Signing in"). The harness starts each scenario's
//! authorization server and MCP server on loopback and runs
//! `tests/python/conformance_auth_client.py URL`, which plays boxmaker's user: it writes a
//! config, runs `boxmaker auth login` (adding the `[[egress]]` rules login prints, playing the
//! browser), and calls the server's tool through the gate with `boxmaker call`.
//!
//! Every scenario of the suite (those of the 2025-06-18 and 2025-11-25 spec, as `conformance
//! list` tags them) must pass with no failed check and no warning. Then nothing the runs left
//! — configs, state directories, sealed tokens, logs, the audit log — holds a token or a
//! client secret the harness issued.
//!
//! Skips (with a message) only when `make deps` has not installed the suite.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use testkit::{repo_root, run_to_end};

fn conformance_dir() -> PathBuf {
    repo_root().join("tests/node-conformance/node_modules")
}

fn harness(bin_dir: &Path) -> Command {
    let mut c = Command::new(bin_dir.join("node"));
    c.arg(conformance_dir().join("@modelcontextprotocol/conformance/dist/index.js"));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![bin_dir.to_path_buf()];
    paths.extend(std::env::split_paths(&path));
    c.env("PATH", std::env::join_paths(paths).unwrap());
    c
}

/// The client scenarios of the `auth` suite: `auth/…` tagged with a dated spec version the
/// suite scores (not only `2025-03-26`, `draft` or `extension`).
fn auth_scenarios(bin_dir: &Path, dir: &Path) -> Vec<String> {
    let run = run_to_end(
        {
            let mut c = harness(bin_dir);
            c.arg("list");
            c
        },
        dir,
        "conformance list",
        Duration::from_secs(60),
    );
    assert!(run.ok(), "{}", run.show());
    run.stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .filter(|l| l.starts_with("auth/"))
        .filter(|l| l.contains("2025-11-25") || l.contains("2025-06-18"))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn every_auth_scenario_of_the_conformance_suite_passes() {
    let bin_dir = conformance_dir().join(".bin");
    if !bin_dir.join("conformance").exists() {
        eprintln!(
            "SKIPPED: the MCP conformance suite is not installed (tests/node-conformance): run \
             `make deps`"
        );
        return;
    }
    let dir = testkit::fresh_dir(env!("CARGO_TARGET_TMPDIR"), "conformance-auth", "suite");
    let clients = dir.join("clients");
    let results = dir.join("results");
    std::fs::create_dir_all(&clients).unwrap();
    let scenarios = auth_scenarios(&bin_dir, &dir);
    assert!(scenarios.len() >= 14, "the suite lists only {scenarios:?}");
    let client = format!(
        "python3 {}",
        repo_root()
            .join("crates/boxmaker/tests/python/conformance_auth_client.py")
            .display()
    );
    let mut failed = Vec::new();
    for s in &scenarios {
        let mut c = harness(&bin_dir);
        c.args(["client", "--command", &client, "--scenario", s])
            .args(["--timeout", "120000", "-o"])
            .arg(&results)
            .env("BOXMAKER_BIN", env!("CARGO_BIN_EXE_boxmaker"))
            .env("BXM_CONFORMANCE_DIR", &clients);
        let run = run_to_end(c, &dir, &s.replace('/', "-"), Duration::from_secs(180));
        let text = format!("{}{}", run.stdout, run.stderr);
        if !run.ok() || !text.contains("OVERALL: PASSED") {
            failed.push(format!("{s}:\n{}", run.show()));
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} auth scenarios failed:\n{}",
        failed.len(),
        scenarios.len(),
        failed.join("\n\n")
    );
    // The on-demand gates end 3 s after their last client; their files are final then.
    std::thread::sleep(Duration::from_secs(4));
    // No token or client secret the harness issued is anywhere a run left (the sealed
    // tokens, the audit log, the gate's log, tools.json) or in anything boxmaker printed
    // (the client's output, as the harness kept it), except the pre-registered client's
    // secret file the person wrote.
    let printed = walk(&results).into_iter().filter(|f| {
        f.file_name()
            .is_some_and(|n| n == "stdout.txt" || n == "stderr.txt")
    });
    let files: Vec<PathBuf> = walk(&clients).into_iter().chain(printed).collect();
    assert!(files.len() > 14 * 3, "{files:?}");
    for f in files {
        if f.file_name().is_some_and(|n| n == "client-secret") {
            continue;
        }
        let bytes = std::fs::read(&f).unwrap_or_default();
        for needle in [
            &b"test-token"[..],
            b"test-secret-",
            b"test-client-secret",
            b"pre-registered-secret",
        ] {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle),
                "{} holds {}",
                f.display(),
                String::from_utf8_lossy(needle)
            );
        }
    }
}
