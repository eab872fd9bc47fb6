//! What reading an answer for its identifying values costs (docs/spec.md §3.7): the gate
//! does it for every answer it labels. A 10 KB answer of prose with an IBAN, an address, a
//! URL and a phone number in every paragraph: plain ASCII (scanned in place), the same with
//! a zero-width space in each paragraph (normalised into a copy), the same with Cyrillic
//! look-alikes (read twice), and a 10 KB JSON answer of records with ids. Then the largest
//! answer the gate takes (1 MiB) in the shapes that cost the most: prose, JSON records, an
//! array of many short strings (every pair of neighbours is a seam to join), a base64 blob
//! of binary (one run to decode), a wall of words each a candidate base64 run, and round
//! 8's readers at their worst (single letters, encoded spaces, spaced defang markers).
//!
//! Run: `cargo bench -p policy --bench values -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use policy::values::in_answer;

const PARAGRAPH: &str = "Dear customer, thank you for your order of 3 items on 2024-05-01. \
    Please transfer the amount to DE89 3704 0044 0532 0130 00 within 14 days, quoting \
    reference 2024-0042. Questions? Write to billing@shop.example or call +49 30 1234567, \
    or see https://shop.example/help/orders for the status of your delivery. ";

const MIB: usize = 1 << 20;

fn sized(paragraph: &str, size: usize) -> String {
    let mut s = String::new();
    while s.len() < size {
        s.push_str(paragraph);
        s.push('\n');
    }
    s
}

fn json_records(size: usize) -> String {
    let mut s = String::from("[");
    let mut i = 0;
    while s.len() < size {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!(
            r#"{{"id":"msg-{i}","channel_id":"C{i:05}","sender":"user{i}@corp.example","body":"see the doc at docs.corp.example/d/{i} before friday"}}"#
        ));
        i += 1;
    }
    s.push(']');
    s
}

/// `["w0","w1",…]`: a million bytes of short strings, each a neighbour of the next.
fn short_strings(size: usize) -> String {
    let mut s = String::from("[");
    let mut i = 0u64;
    while s.len() < size {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&format!("\"k{}.x{}\"", i % 977, i % 13));
        i += 1;
    }
    s.push(']');
    s
}

/// A base64 blob of pseudo-random bytes (an attachment), wrapped at 76 columns.
fn base64_blob(size: usize) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut s = String::with_capacity(size + 80);
    while s.len() < size {
        for _ in 0..76 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push(char::from(ALPHABET[(x % 64) as usize]));
        }
        s.push('\n');
    }
    s
}

/// Words long enough to be base64 candidates, separated by spaces.
fn long_words(size: usize) -> String {
    sized(
        "internationalization responsibilities characteristically \
         Counterrevolutionaries 0123456789abcdef0123456789abcdef",
        size,
    )
}

fn bench(c: &mut Criterion) {
    let ascii = sized(PARAGRAPH, 10_000);
    let hidden = sized(&PARAGRAPH.replace("DE89 ", "DE89\u{200b} "), 10_000);
    let cyrillic = sized(&PARAGRAPH.replace("DE89", "D\u{415}89"), 10_000);
    let json = json_records(10_000);
    let n = in_answer(&ascii).len();
    assert!(n >= 5, "the answer shows {n} values");
    let mut g = c.benchmark_group("values_10kb");
    g.bench_function("prose_ascii", |b| b.iter(|| in_answer(black_box(&ascii))));
    g.bench_function("prose_zero_width", |b| {
        b.iter(|| in_answer(black_box(&hidden)))
    });
    g.bench_function("prose_cyrillic", |b| {
        b.iter(|| in_answer(black_box(&cyrillic)))
    });
    g.bench_function("json_records", |b| b.iter(|| in_answer(black_box(&json))));
    g.finish();

    let big: [(&str, String); 8] = [
        ("prose_ascii", sized(PARAGRAPH, MIB)),
        ("json_records", json_records(MIB)),
        ("json_short_strings", short_strings(MIB)),
        ("base64_blob", base64_blob(MIB)),
        ("long_words", long_words(MIB)),
        // Round 8's readers, at their worst: a wall of single letters (each may start a
        // name spelled one at a time), of encoded spaces (each a gap between words), and
        // of defang markers with long runs of spaces around them.
        (
            "single_letters",
            sized("a b c d e f g h i j k l m n o p", MIB),
        ),
        (
            "encoded_spaces",
            sized("x&nbsp;y&nbsp;at&nbsp;z&nbsp;", MIB),
        ),
        (
            "spaced_markers",
            sized(
                &format!("mail{0}(at){0}host{0}(dot){0}x", " ".repeat(40)),
                MIB,
            ),
        ),
    ];
    let mut g = c.benchmark_group("values_1mib");
    g.sample_size(10);
    for (name, text) in &big {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(*name, |b| b.iter(|| in_answer(black_box(text))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
