//! What a writable mount's keeps cost each box (docs/performance.md, "What a writable mount
//! keeps"): the runner looks at each `read_only` name of a writable mount (`lstat`) and, where
//! `.git` is kept, reads what its git directory names in the work tree
//! (`runner::gitkeep::named_by_git`) — every time it makes a box's spec, a file tool's call
//! included. Here over a repository shaped like a person's project: a `.git` with a config
//! naming `core.hooksPath`, one submodule, and the default list. And the search for the
//! repositories inside a mount (`runner::gitkeep::nested`): over a project of this one's
//! shape (85 directories within three levels, `target` aside) and over a directory of
//! 40 projects.
//!
//! And what a kept `.envrc` names (`runner::envkeep::named_by_envrc`), and the sentry that
//! watches a box's absent kept names while it lives (`runner::sentry`).
//!
//! `cargo bench -p runner --bench keeps -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{Criterion, criterion_group, criterion_main};

fn keeps(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        root.join(".git/config"),
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
         \tlogallrefupdates = true\n\thooksPath = .husky/_\n[remote \"origin\"]\n\
         \turl = git@example.com:me/shop.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
         [branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n",
    )
    .unwrap();
    let m = root.join(".git/modules/vendor");
    std::fs::create_dir_all(&m).unwrap();
    std::fs::write(m.join("HEAD"), "x\n").unwrap();
    std::fs::write(m.join("config"), "[core]\n\tworktree = ../../../vendor\n").unwrap();
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    c.bench_function("gitkeep::named_by_git (a config, a submodule)", |b| {
        b.iter(|| std::hint::black_box(runner::gitkeep::named_by_git(root)))
    });
    std::fs::write(
        root.join(".envrc"),
        "# nix project\nuse flake\nPATH_add bin\nexport PATH=$PWD/tools:$PATH\n\
         source_env_if_exists .envrc.local\ndotenv_if_exists\n",
    )
    .unwrap();
    c.bench_function("envkeep::named_by_envrc (use flake, PATH_add, …)", |b| {
        b.iter(|| std::hint::black_box(runner::envkeep::named_by_envrc(root)))
    });
    c.bench_function("lstat of the default names", |b| {
        b.iter(|| {
            for name in config::HOST_RUN {
                std::hint::black_box(std::fs::symlink_metadata(root.join(name)).is_ok());
            }
        })
    });
    // A project: 17 crates of src/tests/benches, docs, bench, deploy, .github.
    let proj = tempfile::tempdir().unwrap();
    for i in 0..17 {
        for sub in ["src/bin", "tests/common", "benches"] {
            std::fs::create_dir_all(proj.path().join(format!("crates/c{i}/{sub}"))).unwrap();
        }
    }
    for d in [
        "docs/guide",
        "bench/agentdojo",
        "deploy/k8s",
        ".github/workflows",
        ".git/x",
    ] {
        std::fs::create_dir_all(proj.path().join(d)).unwrap();
    }
    c.bench_function("gitkeep::nested (a project, ~85 directories)", |b| {
        b.iter(|| std::hint::black_box(runner::gitkeep::nested(proj.path())))
    });
    // `~/code`: 40 projects of 10 directories of 5 (2,441 directories looked at).
    let code = tempfile::tempdir().unwrap();
    for p in 0..40 {
        std::fs::create_dir_all(code.path().join(format!("p{p}/.git"))).unwrap();
        for d in 0..10 {
            for e in 0..5 {
                std::fs::create_dir_all(code.path().join(format!("p{p}/d{d}/e{e}"))).unwrap();
            }
        }
    }
    assert!(!runner::gitkeep::nested(code.path()).cut);
    c.bench_function("gitkeep::nested (40 projects, 2,441 directories)", |b| {
        b.iter(|| std::hint::black_box(runner::gitkeep::nested(code.path())))
    });
}

/// The sentry a box with absent kept names gets (`runner::sentry`): a watch on the mount's
/// top on the runner's inotify instance, set before the box starts and removed after it —
/// here with the default list's 33 names, all absent, and nothing made.
fn sentry(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = std::sync::Arc::new(config::parse("", "bench.toml", tmp.path()).unwrap());
    let events = std::sync::Arc::new(egress::Egress::new(cfg, Default::default()));
    let absent: Vec<_> = config::HOST_RUN
        .iter()
        .map(|n| (tmp.path().join(n), std::path::Path::new("/src").join(n)))
        .collect();
    let session = proto::SessionId::new("bench").unwrap();
    let sentries = runner::sentry::Sentries::default();
    c.bench_function("sentry: watch and finish (33 absent names)", |b| {
        b.iter(|| {
            let s = sentries
                .watch(events.clone(), &absent, &session, "run", None)
                .unwrap();
            std::hint::black_box(s.finish())
        })
    });
}

criterion_group!(benches, keeps, sentry);
criterion_main!(benches);
