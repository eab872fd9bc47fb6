//! What the audit anchor costs (docs/performance.md, "Audit: the anchor"): appending 1000
//! records in group commits of 16 without checkpoints, and with the checkpoint the gate
//! signs every 1000 (paired, same log, same records); one checkpoint alone (the root, the
//! Ed25519 signature, and with its record appended and synced); rebuilding the tree when a
//! log of 100,000 records is opened, alone and with a gate's start check against its
//! checkpoints in the same pass; and verifying that log by its chain alone against
//! verifying it against its checkpoints.
//!
//! `cargo bench -p gate --bench anchor -- --warm-up-time 1 --measurement-time 5`
//! (the append pairs run on tmpfs, where `fdatasync` is nearly free, and on the disk).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gate::anchor::{self, AuditKey, Given};
use gate::audit::{self, AuditLog, Event, Outcome};
use proto::{CallId, DataClass, SessionId, Timestamp};

fn result_event(n: u64) -> Event {
    Event::result(
        SessionId::new("bench-session").unwrap(),
        CallId(n),
        "read_file",
        Outcome::Result,
        "some content of a typical size for a small file read by a tool",
        DataClass::Internal,
        false,
        false,
    )
}

fn batches(start: u64) -> Vec<Vec<(Timestamp, Event)>> {
    (0..1000u64)
        .map(|i| (Timestamp(start + i), result_event(start + i)))
        .collect::<Vec<_>>()
        .chunks(16)
        .map(<[_]>::to_vec)
        .collect()
}

/// What `Gate::append_audit` does once `checkpoint_every` records wait: sign the head and
/// append its `checkpoint` record (one more write and `fdatasync`).
fn checkpoint(log: &mut AuditLog, key: &AuditKey, t: u64) {
    let cp = key.sign(log.head(), Timestamp(t));
    log.append(Timestamp(t), Event::checkpoint(&cp)).unwrap();
}

fn append(c: &mut Criterion) {
    // On the disk `fdatasync` dominates and varies; on tmpfs it costs nearly nothing, so
    // what the checkpoint itself adds shows.
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        append_on(c, tempfile::tempdir_in(shm).unwrap(), "tmpfs");
    }
    append_on(c, tempfile::tempdir().unwrap(), "disk");
}

fn append_on(c: &mut Criterion, dir: tempfile::TempDir, on: &str) {
    let key = AuditKey::load_or_create(&dir.path().join("key")).unwrap();
    let (mut log, _) = AuditLog::open(&dir.path().join("state")).unwrap();
    let n = std::cell::Cell::new(0u64);
    let next = |by: u64| {
        n.set(n.get() + by);
        n.get()
    };
    let mut group = c.benchmark_group(format!("audit append 1000 records, 16 per fdatasync, {on}"));
    group.sample_size(20);
    group.throughput(Throughput::Elements(1000));
    // Paired: each iteration runs both workloads, one after the other, and times its own,
    // so both see the same machine (the other helpers' builds, the page cache) alike.
    let mut both = |b: &mut criterion::Bencher<'_>, timed_with_checkpoint: bool| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for with_checkpoint in [!timed_with_checkpoint, timed_with_checkpoint] {
                    let bs = batches(next(1000));
                    let start = Instant::now();
                    for batch in bs {
                        log.append_batch(batch).unwrap();
                    }
                    if with_checkpoint {
                        checkpoint(&mut log, &key, n.get());
                    }
                    if with_checkpoint == timed_with_checkpoint {
                        total += start.elapsed();
                    }
                }
            }
            total
        })
    };
    group.bench_function("no checkpoint", |b| both(b, false));
    group.bench_function("a checkpoint per 1000", |b| both(b, true));
    group.finish();

    let mut group = c.benchmark_group(format!("one checkpoint, {on}"));
    group.bench_function("root of the head", |b| b.iter(|| log.head()));
    group.bench_function("root and Ed25519 signature", |b| {
        b.iter(|| key.sign(log.head(), Timestamp(1)))
    });
    group.bench_function("signed and its record appended (fdatasync)", |b| {
        b.iter(|| checkpoint(&mut log, &key, next(1)))
    });
    group.finish();
}

fn whole_log(c: &mut Criterion) {
    // `AUDIT_BENCH_RECORDS=1000000` for the log of a million records.
    let records_wanted: u64 = std::env::var("AUDIT_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let key = AuditKey::load_or_create(&dir.path().join("key")).unwrap();
    let mut given = Vec::new();
    {
        let (mut log, _) = AuditLog::open(&state).unwrap();
        let mut n = 0;
        while n < records_wanted {
            for batch in batches(n) {
                log.append_batch(batch).unwrap();
            }
            n += 1000;
            let cp = key.sign(log.head(), Timestamp(n));
            given.push(Given {
                origin: format!("checkpoint {n}"),
                checkpoint: cp.clone(),
            });
            log.append(Timestamp(n), Event::checkpoint(&cp)).unwrap();
        }
    }
    let path = state.join(audit::AUDIT_FILE);
    let records = audit::verify(&path).unwrap().records;
    let mut group = c.benchmark_group(format!("a log of {records} records"));
    group.sample_size(10);
    group.throughput(Throughput::Elements(records));
    // What a gate does at start: the same pass, checked against its witnessed checkpoints
    // and its own checkpoint records (docs/spec.md §6, "At start"). Paired with the open
    // that checks nothing, as the appends above are, so both see the same machine.
    let known = anchor::Known {
        key: Some(key.public().clone()),
        given: given.clone(),
    };
    let opens = |b: &mut criterion::Bencher<'_>, timed_checked: bool| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for checked in [!timed_checked, timed_checked] {
                    let start = Instant::now();
                    let log = if checked {
                        AuditLog::open_checked(&state, &known).unwrap()
                    } else {
                        AuditLog::open(&state).unwrap()
                    };
                    if checked == timed_checked {
                        total += start.elapsed();
                    }
                    drop(log);
                }
            }
            total
        })
    };
    group.bench_function("open (the tree rebuilt), paired", |b| opens(b, false));
    group.bench_function(
        "open, checked against its witnessed and own checkpoints (a gate's start), paired",
        |b| opens(b, true),
    );
    group.bench_function("verify: the chain alone", |b| {
        b.iter(|| audit::verify(&path).unwrap())
    });
    group.bench_function(
        "verify: against its 100 witnessed and 100 own checkpoints",
        |b| b.iter(|| anchor::verify(&path, &given, Some(key.public())).unwrap()),
    );
    group.finish();
}

criterion_group!(benches, append, whole_log);
criterion_main!(benches);
