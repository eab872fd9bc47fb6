//! `decide_call` with argument conditions at 10 and 10,000 grants, side by side with the
//! same grants written as a Cedar policy set whose `when` clauses test the same arguments
//! on `context.args`, evaluated by the `cedar-policy` crate.
//!
//! Run: `cargo bench -p policy --bench conditions -- --warm-up-time 1 --measurement-time 3`
//!
//! The grant set: grant `i` names tool `tool{i}` exactly (every 20th a glob, `grp{i}_*`),
//! every 50th is a deny, and every grant carries argument conditions, by `i % 4`:
//! - 0: `/recipient` in a named list of 20 payees, and `/amount` in `0..=1000`;
//! - 1: every element of `/to` in a named list of 20 contacts (`/to/*`);
//! - 2: `/path` equals `"/work/notes.txt"`;
//! - 3: `/argv/0` one of `ls`, `cat`, `grep`, and `/argv/1` matches the glob `*.txt`.
//!
//! In Cedar: `[..].contains(context.args.recipient)`, `[..].containsAll(context.args.to)`
//! (every element in a set), `==`, `like`, `>=`/`<=`, each behind `context.args has …` so a
//! missing argument fails the policy rather than erroring. Requests: a payment to a payee
//! (holds), a payment to anyone else (fails), a mail to contacts only (every element holds),
//! and a tool no grant names. Both sides get their request ready-made (our parsed
//! `Arguments`; Cedar's `Request` with its context); `boxmaker+parse` also parses the
//! arguments' JSON text each time, as the gate does once per call.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::str::FromStr;
use std::sync::Arc;

use cedar_policy::{Authorizer, Context, Entities, EntityUid, PolicySet, Request};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use policy::{
    Arguments, Condition, Decision, Effect, Grant, Grants, List, Pattern, Pointer, Scalar, Taint,
    Test, decide_call,
};
use proto::{DataClass, SessionId, Timestamp};

const SIZES: [usize; 2] = [10, 10_000];

fn payees() -> Vec<String> {
    (0..20)
        .map(|i| format!("GB{i:02}NWBK6016133192681{i}"))
        .collect()
}

fn contacts() -> Vec<String> {
    (0..20).map(|i| format!("person{i}@acme.com")).collect()
}

fn cedar_set(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

fn cond(pointer: &str, test: Test) -> Condition {
    Condition::new(Pointer::new(pointer).unwrap(), test)
}

/// The grants of size `n`, in our form and as Cedar source.
fn grant_set(n: usize) -> (Grants, String) {
    let payee_list = Arc::new(List::new(
        Some("payees".into()),
        payees().into_iter().map(Scalar::Str),
    ));
    let contact_list = Arc::new(List::new(
        Some("contacts".into()),
        contacts().into_iter().map(Scalar::Str),
    ));
    let tools = Arc::new(List::new(
        None,
        ["ls", "cat", "grep"].map(|s| Scalar::Str(s.into())),
    ));
    let (cedar_payees, cedar_contacts) = (cedar_set(&payees()), cedar_set(&contacts()));
    let mut grants = Grants::new();
    let mut cedar = String::new();
    for i in 0..n {
        let (tool_pat, scope, mut conds) = if i % 20 == 0 {
            let p = format!("grp{i}_*");
            let c = format!("context.tool like \"grp{i}_*\"");
            (p, "resource".to_owned(), vec![c])
        } else {
            let t = format!("tool{i}");
            (t.clone(), format!("resource == Tool::\"{t}\""), vec![])
        };
        let effect = if i % 50 == 7 {
            Effect::Deny
        } else {
            Effect::Allow
        };
        let mut g = Grant::new(Pattern::new(tool_pat).unwrap(), effect);
        match i % 4 {
            0 => {
                g = g
                    .when(cond("/recipient", Test::OneOf(Arc::clone(&payee_list))))
                    .when(cond("/amount", Test::Range { min: 0, max: 1000 }));
                conds.push(format!(
                    "context.args has recipient && {cedar_payees}.contains(context.args.recipient) \
                     && context.args has amount && context.args.amount >= 0 \
                     && context.args.amount <= 1000"
                ));
            }
            1 => {
                g = g.when(cond("/to/*", Test::OneOf(Arc::clone(&contact_list))));
                conds.push(format!(
                    "context.args has to && {cedar_contacts}.containsAll(context.args.to)"
                ));
            }
            2 => {
                g = g.when(cond(
                    "/path",
                    Test::Equals(Scalar::Str("/work/notes.txt".into())),
                ));
                conds.push(
                    "context.args has path && context.args.path == \"/work/notes.txt\"".into(),
                );
            }
            _ => {
                g = g
                    .when(cond("/argv/0", Test::OneOf(Arc::clone(&tools))))
                    .when(cond(
                        "/argv/1",
                        Test::Glob(vec![Pattern::new("*.txt").unwrap()]),
                    ));
                conds.push(
                    "context.args has argv0 && [\"ls\", \"cat\", \"grep\"].contains(context.args.argv0) \
                     && context.args has argv1 && context.args.argv1 like \"*.txt\""
                        .into(),
                );
            }
        }
        grants.push(g);
        let verb = if effect == Effect::Deny {
            "forbid"
        } else {
            "permit"
        };
        let _ = writeln!(
            cedar,
            "{verb}(principal, action == Action::\"call\", {scope}) when {{ {} }};",
            conds.join(" && ")
        );
    }
    (grants, cedar)
}

/// A Cedar request whose context holds the tool and the arguments (a record; Cedar has no
/// array indexing, so `argv` would be given as `argv0`, `argv1`).
fn cedar_request(tool: &str, args: &serde_json::Value) -> Request {
    let ctx =
        Context::from_json_value(serde_json::json!({"tool": tool, "args": args}), None).unwrap();
    Request::new(
        EntityUid::from_str("Session::\"s1\"").unwrap(),
        EntityUid::from_str("Action::\"call\"").unwrap(),
        EntityUid::from_str(&format!("Tool::\"{tool}\"")).unwrap(),
        ctx,
        None,
    )
    .unwrap()
}

fn bench(c: &mut Criterion) {
    let session = SessionId::new("s1").unwrap();
    let taint = Taint::new(DataClass::Internal, false);
    let now = Timestamp(1_000);
    let authorizer = Authorizer::new();
    let entities = Entities::empty();
    let payee = payees()[3].clone();
    // tool4: payees and range; tool5: every element of /to; tool9999 does not exist at 10.
    let queries: Vec<(&str, &str, String, bool)> = vec![
        (
            "payee",
            "tool4",
            format!(r#"{{"recipient":"{payee}","amount":250}}"#),
            true,
        ),
        (
            "stranger",
            "tool4",
            r#"{"recipient":"XX00EVIL","amount":250}"#.to_owned(),
            false,
        ),
        (
            "every",
            "tool5",
            r#"{"to":["person1@acme.com","person7@acme.com","person19@acme.com"]}"#.to_owned(),
            true,
        ),
        ("miss", "nothing_here", r#"{"x":1}"#.to_owned(), false),
    ];

    for n in SIZES {
        let (grants, cedar_src) = grant_set(n);
        let policies = PolicySet::from_str(&cedar_src).unwrap();
        let mut group = c.benchmark_group(format!("conditions/{n}"));
        if n >= 1_000 {
            group.sample_size(30);
        }
        for (label, tool, text, want_allow) in &queries {
            let args = Arguments::parse(text);
            let value = args.json().unwrap().clone();
            let req = cedar_request(tool, &value);
            // Both engines must agree, and say what the request was built to get.
            let ours = decide_call(&grants, &session, tool, &args, taint, now);
            let theirs = authorizer
                .is_authorized(&req, &policies, &entities)
                .decision();
            assert_eq!(
                ours == Decision::Allow,
                *want_allow,
                "{label} at {n}: {ours}"
            );
            assert_eq!(
                theirs == cedar_policy::Decision::Allow,
                *want_allow,
                "cedar {label} at {n}"
            );
            group.bench_function(BenchmarkId::new("boxmaker", label), |b| {
                b.iter(|| {
                    decide_call(
                        black_box(&grants),
                        &session,
                        tool,
                        black_box(&args),
                        taint,
                        now,
                    )
                });
            });
            group.bench_function(BenchmarkId::new("boxmaker+parse", label), |b| {
                b.iter(|| {
                    let args = Arguments::parse(black_box(text));
                    decide_call(black_box(&grants), &session, tool, &args, taint, now)
                });
            });
            group.bench_function(BenchmarkId::new("cedar", label), |b| {
                b.iter(|| {
                    authorizer
                        .is_authorized(black_box(&req), black_box(&policies), &entities)
                        .decision()
                });
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
