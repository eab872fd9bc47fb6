//! Decode and encode cost of every wire fixture, and of a `result` carrying 64 KiB.
//!
//! Goals (docs/performance.md): a fixture envelope decodes in under 1 µs; 64 KiB of content
//! decodes at 500 MB/s or more. Run: `cargo bench -p proto --bench wire`.

// Test code: a failed unwrap or panic here is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::io::Cursor;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use proto::{DataClass, Envelope, ToolResponse, read_frame, write_frame};

const FIXTURES: [&str; 6] = [
    "tool_request",
    "result",
    "pending_approval",
    "failed",
    "denied",
    "error",
];

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/wire/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("read {path}: {e}"))
}

/// 64 KiB of text shaped like a file a tool would read: lines of ASCII, tabs and quotes that
/// JSON must escape, and some UTF-8.
fn content_64k() -> String {
    let line = "127.0.0.1\tlocalhost # \"quoted\" path C:\\tmp — ünïcode\n";
    let mut s = String::with_capacity(65_536 + line.len());
    while s.len() < 65_536 {
        s.push_str(line);
    }
    while s.len() > 65_536 {
        s.pop();
    }
    s
}

fn bench_fixtures(c: &mut Criterion) {
    let mut g = c.benchmark_group("fixture");
    for name in FIXTURES {
        let bytes = fixture(name);
        let env: Envelope = serde_json::from_slice(&bytes).unwrap();
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(format!("decode/{name}"), |b| {
            b.iter(|| serde_json::from_slice::<Envelope>(black_box(&bytes)).unwrap())
        });
        g.bench_function(format!("encode/{name}"), |b| {
            b.iter(|| serde_json::to_vec(black_box(&env)).unwrap())
        });
    }
    g.finish();
}

fn bench_64k(c: &mut Criterion) {
    let env = Envelope::response(
        1,
        ToolResponse::Result {
            content: content_64k(),
            class: DataClass::Internal,
            untrusted: false,
            truncated: false,
        },
    );
    let body = serde_json::to_vec(&env).unwrap();
    let mut frame = Vec::new();
    write_frame(&mut frame, &env).unwrap();

    let mut g = c.benchmark_group("result_64KiB");
    // Throughput is the content's size: what a tool returned, not what JSON made of it.
    g.throughput(Throughput::Bytes(65_536));
    g.bench_function("decode", |b| {
        b.iter(|| serde_json::from_slice::<Envelope>(black_box(&body)).unwrap())
    });
    g.bench_function("encode", |b| {
        b.iter(|| serde_json::to_vec(black_box(&env)).unwrap())
    });
    g.bench_function("read_frame", |b| {
        b.iter(|| read_frame(&mut Cursor::new(black_box(&frame[..]))).unwrap())
    });
    g.bench_function("write_frame", |b| {
        let mut out = Vec::with_capacity(frame.len());
        b.iter(|| {
            out.clear();
            write_frame(&mut out, black_box(&env)).unwrap();
        })
    });
    g.finish();
}

criterion_group!(benches, bench_fixtures, bench_64k);
criterion_main!(benches);
