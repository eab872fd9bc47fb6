//! What durability costs on the gate's path: a durable taint raise (one SQLite transaction,
//! WAL, `synchronous=FULL`), and an audit append with its `fdatasync`, one record per sync
//! or 16 per sync (group commit).
//!
//! `cargo bench -p gate --bench store -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use gate::audit::{AuditLog, Event, Outcome};
use gate::store::{Store, TaintRaise};
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

fn store(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path()).unwrap();
    let sessions: Vec<SessionId> = (0..64)
        .map(|i| SessionId::new(format!("s{i}")).unwrap())
        .collect();
    let mut n = 0usize;
    c.bench_function("raise_taint (durable)", |b| {
        b.iter(|| {
            n += 1;
            let s = &sessions[n % sessions.len()];
            store
                .raise_taint(s, DataClass::Internal, n.is_multiple_of(7), Timestamp(1))
                .unwrap()
        })
    });
    let raises: Vec<TaintRaise> = sessions
        .iter()
        .take(16)
        .map(|s| TaintRaise {
            session: s.clone(),
            class: DataClass::Confidential,
            untrusted: false,
        })
        .collect();
    let mut group = c.benchmark_group("raise_taints");
    group.throughput(Throughput::Elements(16));
    group.bench_function("16 per commit", |b| {
        b.iter(|| store.raise_taints(&raises, Timestamp(2)).unwrap())
    });
    group.finish();
    c.bench_function("taint (read)", |b| {
        b.iter(|| store.taint(&sessions[3]).unwrap())
    });
}

fn audit(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, _) = AuditLog::open(dir.path()).unwrap();
    let mut n = 0u64;
    let mut group = c.benchmark_group("audit append");
    group.throughput(Throughput::Elements(1));
    group.bench_function("1 per fdatasync", |b| {
        b.iter(|| {
            n += 1;
            log.append(Timestamp(n), result_event(n)).unwrap()
        })
    });
    group.throughput(Throughput::Elements(16));
    group.bench_function("16 per fdatasync", |b| {
        b.iter_batched(
            || {
                (0..16)
                    .map(|i| (Timestamp(i), result_event(i)))
                    .collect::<Vec<_>>()
            },
            |batch| log.append_batch(batch).unwrap(),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, store, audit);
criterion_main!(benches);
