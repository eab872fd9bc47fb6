//! `decide` at 10, 1,000 and 10,000 grants, side by side with the same grants written as
//! a Cedar policy set and evaluated by the `cedar-policy` crate.
//!
//! Run: `cargo bench -p policy --bench decide -- --warm-up-time 1 --measurement-time 3`
//!
//! The grant set: most grants name a distinct tool exactly (`tool{i}`); every 20th is a
//! glob (`grp{i}_*`); some carry `max_class`, `if_untrusted`, `expires`, and every 50th is
//! a deny. Three requests: an exact hit, a glob hit, and a tool no grant names.
//!
//! Cedar has no `ask`, so its policy set answers only allow/deny; each grant becomes one
//! `permit` or `forbid` whose `when` clause carries the same conditions. Both sides get
//! their request ready-made (our `SessionId` and `Taint`; Cedar's `Request`), so only the
//! decision is timed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::str::FromStr;

use cedar_policy::{
    Authorizer, Context, Entities, EntityUid, PolicySet, Request, RestrictedExpression,
};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use policy::{Decision, Effect, Grant, Grants, Pattern, Taint, decide};
use proto::{DataClass, SessionId, Timestamp};

const SIZES: [usize; 3] = [10, 1_000, 10_000];
const NOW: u64 = 1_000;

/// The grants of size `n`, in our form and as Cedar source.
fn grant_set(n: usize) -> (Grants, String) {
    let mut grants = Grants::new();
    let mut cedar = String::new();
    for i in 0..n {
        let (tool_pat, cedar_scope, cedar_tool_cond) = if i % 20 == 0 {
            let p = format!("grp{i}_*");
            let cond = format!("context.tool like \"grp{i}_*\"");
            (p, "resource".to_owned(), Some(cond))
        } else {
            let t = format!("tool{i}");
            let scope = format!("resource == Tool::\"{t}\"");
            (t, scope, None)
        };
        let effect = if i % 50 == 7 {
            Effect::Deny
        } else {
            Effect::Allow
        };
        let mut g = Grant::new(Pattern::new(tool_pat).unwrap(), effect);
        let mut conds: Vec<String> = cedar_tool_cond.into_iter().collect();
        if i % 10 == 5 {
            g = g.max_class(DataClass::Internal);
            conds.push("context.class <= 1".to_owned());
        }
        if i % 10 == 3 {
            g = g.expires(Timestamp(2_000));
            conds.push("context.now < 2000".to_owned());
        }
        if i % 10 == 9 {
            g = g.if_untrusted(Effect::Deny);
            conds.push("!context.untrusted".to_owned());
        }
        grants.push(g);
        let verb = if effect == Effect::Deny {
            "forbid"
        } else {
            "permit"
        };
        let _ = write!(
            cedar,
            "{verb}(principal, action == Action::\"call\", {cedar_scope})"
        );
        if !conds.is_empty() {
            let _ = write!(cedar, " when {{ {} }}", conds.join(" && "));
        }
        cedar.push_str(";\n");
    }
    (grants, cedar)
}

fn cedar_request(session: &str, tool: &str, taint: Taint, now: u64) -> Request {
    let class = DataClass::ALL
        .iter()
        .position(|&c| c == taint.class())
        .unwrap();
    let ctx = Context::from_pairs([
        (
            "tool".to_owned(),
            RestrictedExpression::new_string(tool.to_owned()),
        ),
        (
            "class".to_owned(),
            RestrictedExpression::new_long(class as i64),
        ),
        (
            "untrusted".to_owned(),
            RestrictedExpression::new_bool(taint.untrusted()),
        ),
        ("now".to_owned(), RestrictedExpression::new_long(now as i64)),
    ])
    .unwrap();
    Request::new(
        EntityUid::from_str(&format!("Session::\"{session}\"")).unwrap(),
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
    let now = Timestamp(NOW);
    let authorizer = Authorizer::new();
    let entities = Entities::empty();
    // tool1 is an exact allow; grp0_get hits the first glob; nothing_here hits no grant.
    let queries = [
        ("exact", "tool1"),
        ("glob", "grp0_get"),
        ("miss", "nothing_here"),
    ];

    for n in SIZES {
        let (grants, cedar_src) = grant_set(n);
        let policies = PolicySet::from_str(&cedar_src).unwrap();
        let mut group = c.benchmark_group(format!("decide/{n}"));
        if n >= 1_000 {
            group.sample_size(30);
        }
        for (label, tool) in queries {
            // Both engines must agree before their speed means anything.
            let ours = decide(&grants, &session, tool, taint, now);
            let req = cedar_request("s1", tool, taint, NOW);
            let theirs = authorizer
                .is_authorized(&req, &policies, &entities)
                .decision();
            assert_eq!(
                ours == Decision::Allow,
                theirs == cedar_policy::Decision::Allow,
                "engines disagree on {tool} at {n} grants"
            );
            group.bench_function(BenchmarkId::new("boxmaker", label), |b| {
                b.iter(|| decide(black_box(&grants), &session, black_box(tool), taint, now));
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
