//! What the person's mark costs (docs/performance.md, "Whose state: the mark"): opening a
//! marked state directory the one way boxmaker opens it (`Dir::own`: no link at its name,
//! its mark read and its HMAC checked under the mark key) against opening the same directory
//! plainly (`Dir::open`), and an existing key file's mark checked (`mark::verify`); and what
//! the person's trust in a config costs each load (docs/performance.md, "Whose config"):
//! `trust::check` of the default config's bytes (its record read, its seal checked, the
//! bytes hashed).
//!
//! `cargo bench -p statedir --bench own -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{Criterion, criterion_group, criterion_main};
use statedir::file::Dir;

fn own(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    Dir::own(&state).unwrap();
    std::fs::write(state.join("boxmaker.db"), "ours").unwrap();
    let mut g = c.benchmark_group("state directory");
    g.bench_function("Dir::open (no mark)", |b| {
        b.iter(|| Dir::open(&state).unwrap())
    });
    g.bench_function("Dir::own (the mark checked)", |b| {
        b.iter(|| Dir::own(&state).unwrap())
    });
    g.finish();
    let sealed = statedir::mark::seal("audit key", b"secret 00\npublic 11\n").unwrap();
    c.bench_function("mark::verify (a key file's mark)", |b| {
        b.iter(|| statedir::mark::verify("audit key", b"secret 00\npublic 11\n", &sealed).unwrap())
    });
    // A config of the default's size (about 3 KB).
    let config = tmp.path().join("boxmaker.toml");
    let text = "# a line of a config, about as long as the default's lines are\n".repeat(48);
    std::fs::write(&config, &text).unwrap();
    statedir::trust::record(&config, text.as_bytes()).unwrap();
    c.bench_function("trust::check (a 3 KB config, trusted)", |b| {
        b.iter(|| {
            assert_eq!(
                statedir::trust::check(&config, text.as_bytes()).unwrap(),
                statedir::trust::Trust::Trusted
            )
        })
    });
    statedir::trust::forget(&config).unwrap();
}

criterion_group!(benches, own);
criterion_main!(benches);
