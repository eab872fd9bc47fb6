//! What reading an answer for its identifying values costs (docs/spec.md §3.7): the gate
//! does it for every answer it labels. A 10 KB answer of prose with an IBAN, an address, a
//! URL and a phone number in every paragraph: plain ASCII (scanned in place), the same with
//! a zero-width space in each paragraph (normalised into a copy), the same with Cyrillic
//! look-alikes (read twice), and a 10 KB JSON answer of records with ids.
//!
//! Run: `cargo bench -p policy --bench values -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use policy::values::in_answer;

const PARAGRAPH: &str = "Dear customer, thank you for your order of 3 items on 2024-05-01. \
    Please transfer the amount to DE89 3704 0044 0532 0130 00 within 14 days, quoting \
    reference 2024-0042. Questions? Write to billing@shop.example or call +49 30 1234567, \
    or see https://shop.example/help/orders for the status of your delivery. ";

fn ten_kb(paragraph: &str) -> String {
    let mut s = String::new();
    while s.len() < 10_000 {
        s.push_str(paragraph);
        s.push('\n');
    }
    s
}

fn json_records() -> String {
    let mut items = Vec::new();
    let mut i = 0;
    loop {
        items.push(format!(
            r#"{{"id":"msg-{i}","channel_id":"C{i:05}","sender":"user{i}@corp.example","body":"see the doc at docs.corp.example/d/{i} before friday"}}"#
        ));
        let s = format!("[{}]", items.join(","));
        if s.len() >= 10_000 {
            return s;
        }
        i += 1;
    }
}

fn bench(c: &mut Criterion) {
    let ascii = ten_kb(PARAGRAPH);
    let hidden = ten_kb(&PARAGRAPH.replace("DE89 ", "DE89\u{200b} "));
    let cyrillic = ten_kb(&PARAGRAPH.replace("DE89", "D\u{415}89"));
    let json = json_records();
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
}

criterion_group!(benches, bench);
criterion_main!(benches);
