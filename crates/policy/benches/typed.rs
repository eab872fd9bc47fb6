//! `decide_call` on the guide's "mail only inside my domain" grant: written with globs (as
//! it was) and typed and closed (as it is), on the honest mail, the attacks the glob form
//! let through, and a 2 KB body read for links (plain ASCII, which is scanned in place, and
//! with a zero-width space, which is normalised first).
//!
//! Run: `cargo bench -p policy --bench typed -- --warm-up-time 1 --measurement-time 3`

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use policy::{
    Arguments, Condition, Decision, Effect, EmailTest, Grant, Grants, HostSet, LinksTest, Pattern,
    Pointer, Taint, Test, decide_call,
};
use proto::{DataClass, SessionId, Timestamp};

fn cond(pointer: &str, test: Test) -> Condition {
    Condition::new(Pointer::new(pointer).unwrap(), test)
}

fn globs() -> Grants {
    let g = |p: &str| Test::Glob(vec![Pattern::new(p).unwrap()]);
    [
        Grant::new(Pattern::new("mail_send_email").unwrap(), Effect::Allow)
            .when(cond("/recipients/*", g("*@acme.com")))
            .when(cond("/cc/*", g("*@acme.com")).optional()),
    ]
    .into_iter()
    .collect()
}

fn typed() -> Grants {
    let domain = Arc::new(HostSet::new(None, ["acme.com"], true).unwrap());
    let ours = Arc::new(HostSet::new(None, ["acme.com", "*.acme.com"], false).unwrap());
    let at = || Test::Email(EmailTest::Domain(Arc::clone(&domain)));
    [
        Grant::new(Pattern::new("mail_send_email").unwrap(), Effect::Allow)
            .when(cond("/recipients/*", at()))
            .when(cond("/cc/*", at()).optional())
            .when(cond("/subject", Test::Links(LinksTest::None)))
            .when(cond("/body", Test::Links(LinksTest::Hosts(ours))))
            .closed(),
    ]
    .into_iter()
    .collect()
}

fn bench(c: &mut Criterion) {
    let session = SessionId::new("s1").unwrap();
    let taint = Taint::new(DataClass::Internal, false);
    let now = Timestamp(1_000);
    let prose = "Hello Bob, here are the notes from today's meeting, see docs.acme.com/notes \
                 for the rest. "
        .repeat(24);
    let zw = format!("{prose} and ev\u{200b}il.com");
    let mail = |to: &str, extra: &str, body: &str| {
        serde_json::json!({"recipients": [to], "subject": "notes", "body": body})
            .to_string()
            .replacen('{', &format!("{{{extra}"), 1)
    };
    let queries = [
        ("honest", mail("bob@acme.com", "", "see you")),
        ("list", mail("evil@x.com, bob@acme.com", "", "x")),
        ("header", mail("evil@x.com\r\nBcc: a@acme.com", "", "x")),
        ("bcc", mail("bob@acme.com", r#""bcc":["evil@x.com"],"#, "x")),
        ("body-2k-ascii", mail("bob@acme.com", "", &prose)),
        ("body-2k-zero-width", mail("bob@acme.com", "", &zw)),
    ];
    let mut group = c.benchmark_group("typed");
    for (form, grants) in [("globs", globs()), ("typed", typed())] {
        for (label, text) in &queries {
            let args = Arguments::parse(text);
            assert!(args.json().is_some(), "{label}");
            let d = decide_call(&grants, &session, "mail_send_email", &args, taint, now);
            if form == "typed" {
                let want_allow = matches!(*label, "honest" | "body-2k-ascii");
                assert_eq!(d == Decision::Allow, want_allow, "{form} {label}: {d}");
            }
            group.bench_function(BenchmarkId::new(form, label), |b| {
                b.iter(|| {
                    decide_call(
                        black_box(&grants),
                        &session,
                        "mail_send_email",
                        black_box(&args),
                        taint,
                        now,
                    )
                });
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
