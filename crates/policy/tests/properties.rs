//! Property tests of the decision against the promises of docs/spec.md §3.2–3.3, and against a
//! small reference model that is obviously correct: a linear scan over the grants in the
//! words of the specification, with a naive recursive glob matcher.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use policy::{
    Arguments, Condition, Decision, Effect, Grant, Grants, Label, List, Pattern, Pointer, Scalar,
    Taint, Test, decide_call,
};
use proptest::prelude::*;
use proto::{DataClass, DenyReason, SessionId, Timestamp};
use serde_json::{Value, json};

// ---- the reference model -------------------------------------------------------------

/// Naive recursive glob: exponential in the worst case, so only for short inputs.
fn ref_glob(p: &[char], n: &[char]) -> bool {
    match p.split_first() {
        None => n.is_empty(),
        Some(('*', rest)) => (0..=n.len()).any(|k| ref_glob(rest, &n[k..])),
        Some(('?', rest)) => !n.is_empty() && ref_glob(rest, &n[1..]),
        Some((c, rest)) => n.first() == Some(c) && ref_glob(rest, &n[1..]),
    }
}

fn ref_match(p: &str, n: &str) -> bool {
    let p: Vec<char> = p.chars().collect();
    let n: Vec<char> = n.chars().collect();
    ref_glob(&p, &n)
}

/// Whether the condition holds on `v` from this pointer step on, read aloud: each element
/// of a `*` must pass on its own; a step that finds nothing (or `null`) passes only when the
/// condition is optional; a step into a value it cannot enter fails.
fn ref_holds(c: &RefCondition, v: &Value, segs: &[&str]) -> bool {
    let Some((first, rest)) = segs.split_first() else {
        return (c.optional && v.is_null()) || ref_test(&c.test, v);
    };
    match (*first, v) {
        (_, Value::Null) => c.optional,
        ("*", Value::Array(items)) => items.iter().all(|item| ref_holds(c, item, rest)),
        ("*", _) => false,
        (key, Value::Object(m)) => m.get(key).map_or(c.optional, |n| ref_holds(c, n, rest)),
        (key, Value::Array(items)) => key
            .parse::<usize>()
            .ok()
            .and_then(|i| items.get(i))
            .map_or(c.optional, |n| ref_holds(c, n, rest)),
        _ => false,
    }
}

/// One test on one value, read aloud.
fn ref_test(t: &RefTest, v: &Value) -> bool {
    match t {
        RefTest::Equals(want) => v == want,
        RefTest::OneOf(list) => list.contains(v),
        RefTest::Glob(p) => v.as_str().is_some_and(|s| ref_match(p, s)),
        RefTest::Range(lo, hi) => v.as_i64().is_some_and(|n| *lo <= n && n <= *hi),
    }
}

/// docs/spec.md §3.3 "Argument conditions", read aloud.
fn ref_condition(c: &RefCondition, args: &Value) -> bool {
    let segs: Vec<&str> = c.pointer.iter().map(String::as_str).collect();
    ref_holds(c, args, &segs)
}

/// docs/spec.md §3.3 steps 1–5, read aloud.
fn reference(
    grants: &[(Grant, Vec<RefCondition>)],
    session: &str,
    tool: &str,
    args: Option<&Value>,
    taint: Taint,
    now: u64,
) -> Decision {
    let live = |g: &Grant| g.expires.is_none_or(|t| now < t.0);
    let matching: Vec<&Grant> = grants
        .iter()
        .filter(|(g, conds)| {
            ref_match(g.tool.as_str(), tool)
                && ref_match(g.sessions.as_str(), session)
                && (conds.is_empty()
                    || args.is_some_and(|a| conds.iter().all(|c| ref_condition(c, a))))
        })
        .map(|(g, _)| g)
        .collect();
    if matching.is_empty() {
        return Decision::Deny(DenyReason::NoGrant);
    }
    if matching.iter().any(|g| g.effect == Effect::Deny && live(g)) {
        return Decision::Deny(DenyReason::DeniedByGrant);
    }
    let live_grants: Vec<&Grant> = matching
        .into_iter()
        .filter(|g| g.effect != Effect::Deny && live(g))
        .collect();
    if live_grants.is_empty() {
        return Decision::Deny(DenyReason::GrantExpired);
    }
    let admitting: Vec<&Grant> = live_grants
        .into_iter()
        .filter(|g| {
            taint.class() <= g.max_class && !(taint.untrusted() && g.if_untrusted == Effect::Deny)
        })
        .collect();
    if admitting.is_empty() {
        return Decision::Deny(DenyReason::TaintTooHigh);
    }
    if admitting
        .iter()
        .any(|g| g.effect == Effect::Allow && !(taint.untrusted() && g.if_untrusted == Effect::Ask))
    {
        Decision::Allow
    } else {
        Decision::Ask
    }
}

// ---- generators ----------------------------------------------------------------------

/// Names over a tiny alphabet, so random patterns and names often meet.
fn name() -> impl Strategy<Value = String> {
    "[ab_]{1,5}"
}

fn pattern() -> impl Strategy<Value = String> {
    "[ab_*?]{1,5}"
}

fn class() -> impl Strategy<Value = DataClass> {
    prop::sample::select(DataClass::ALL.to_vec())
}

fn effect() -> impl Strategy<Value = Effect> {
    prop::sample::select(Effect::ALL.to_vec())
}

/// A condition in the reference model's own terms.
#[derive(Debug, Clone)]
struct RefCondition {
    pointer: Vec<String>,
    test: RefTest,
    optional: bool,
}

#[derive(Debug, Clone)]
enum RefTest {
    Equals(Value),
    OneOf(Vec<Value>),
    Glob(String),
    Range(i64, i64),
}

/// Scalars over a tiny space, so random conditions and arguments often meet.
fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec!["x", "y", "xy"]).prop_map(|s| json!(s)),
        (0i64..4).prop_map(|n| json!(n)),
        any::<bool>().prop_map(|b| json!(b)),
    ]
}

fn to_scalar(v: &Value) -> Scalar {
    match v {
        Value::String(s) => Scalar::Str(s.clone()),
        Value::Bool(b) => Scalar::Bool(*b),
        other => Scalar::Int(other.as_i64().unwrap()),
    }
}

fn condition() -> impl Strategy<Value = RefCondition> {
    let pointer = prop::sample::select(vec!["/a", "/b", "/a/*", "/a/0", "/c/k", "/c/*/k"]);
    let test = prop_oneof![
        scalar().prop_map(RefTest::Equals),
        prop::collection::vec(scalar(), 0..4).prop_map(RefTest::OneOf),
        "[xy*?]{1,3}".prop_map(RefTest::Glob),
        (0i64..4, 0i64..4).prop_map(|(a, b)| RefTest::Range(a.min(b), a.max(b))),
    ];
    (pointer, test, any::<bool>()).prop_map(|(p, test, optional)| RefCondition {
        pointer: p
            .trim_start_matches('/')
            .split('/')
            .map(str::to_owned)
            .collect(),
        test,
        optional,
    })
}

fn to_condition(c: &RefCondition) -> Condition {
    let test = match &c.test {
        RefTest::Equals(v) => Test::Equals(to_scalar(v)),
        RefTest::OneOf(vs) => Test::OneOf(Arc::new(List::new(None, vs.iter().map(to_scalar)))),
        RefTest::Glob(p) => Test::Glob(vec![Pattern::new(p.clone()).unwrap()]),
        RefTest::Range(lo, hi) => Test::Range { min: *lo, max: *hi },
    };
    let cond = Condition::new(
        Pointer::new(format!("/{}", c.pointer.join("/"))).unwrap(),
        test,
    );
    if c.optional { cond.optional() } else { cond }
}

/// Arguments over the keys the conditions point at: `a` (a scalar or an array of them),
/// `b`, `c` (an object or an array of objects with `k`), each possibly missing or null.
fn arguments() -> impl Strategy<Value = Option<Value>> {
    let leaf = prop_oneof![scalar(), Just(Value::Null)];
    let a = prop_oneof![
        leaf.clone(),
        prop::collection::vec(prop_oneof![scalar(), Just(Value::Null)], 0..3)
            .prop_map(Value::Array),
    ];
    let kobj = prop::option::of(leaf.clone()).prop_map(|k| match k {
        Some(k) => json!({ "k": k }),
        None => json!({}),
    });
    let c = prop_oneof![
        kobj.clone(),
        prop::collection::vec(kobj, 0..3).prop_map(Value::Array),
        scalar(),
    ];
    let obj = (
        prop::option::of(a),
        prop::option::of(leaf),
        prop::option::of(c),
    )
        .prop_map(|(a, b, c)| {
            let mut m = serde_json::Map::new();
            for (k, v) in [("a", a), ("b", b), ("c", c)] {
                if let Some(v) = v {
                    m.insert(k.to_owned(), v);
                }
            }
            Value::Object(m)
        });
    prop_oneof![4 => obj.prop_map(Some), 1 => Just(None)]
}

fn grant() -> impl Strategy<Value = (Grant, Vec<RefCondition>)> {
    (
        prop_oneof![pattern(), name()],
        prop_oneof![Just("*".to_owned()), pattern(), name()],
        effect(),
        prop::option::of(0u64..20),
        class(),
        effect(),
        prop_oneof![2 => Just(Vec::new()), 1 => prop::collection::vec(condition(), 1..3)],
    )
        .prop_map(
            |(tool, sessions, effect, expires, max_class, if_untrusted, conds)| {
                let mut g = Grant::new(Pattern::new(tool).unwrap(), effect)
                    .sessions(Pattern::new(sessions).unwrap())
                    .max_class(max_class)
                    .if_untrusted(if_untrusted);
                g.expires = expires.map(Timestamp);
                for c in &conds {
                    g = g.when(to_condition(c));
                }
                (g, conds)
            },
        )
}

fn taint() -> impl Strategy<Value = Taint> {
    (class(), any::<bool>()).prop_map(|(c, u)| Taint::new(c, u))
}

#[derive(Debug, Clone)]
struct Request {
    session: String,
    tool: String,
    /// `None`: the arguments did not parse.
    args: Option<Value>,
    taint: Taint,
    now: u64,
}

fn request() -> impl Strategy<Value = Request> {
    // Session ids must start with a letter or digit.
    ("[ab][ab_]{0,4}", name(), arguments(), taint(), 0u64..22).prop_map(
        |(session, tool, args, taint, now)| Request {
            session,
            tool,
            args,
            taint,
            now,
        },
    )
}

fn run(grants: &[(Grant, Vec<RefCondition>)], r: &Request) -> Decision {
    let set: Grants = grants.iter().map(|(g, _)| g.clone()).collect();
    let args = r.args.clone().map_or(Arguments::Unparsed, Arguments::Json);
    decide_call(
        &set,
        &SessionId::new(r.session.clone()).unwrap(),
        &r.tool,
        &args,
        r.taint,
        Timestamp(r.now),
    )
}

// ---- properties ------------------------------------------------------------------------

proptest! {
    #[test]
    fn prop_agrees_with_reference_model(
        grants in prop::collection::vec(grant(), 0..12),
        r in request(),
    ) {
        let want = reference(&grants, &r.session, &r.tool, r.args.as_ref(), r.taint, r.now);
        prop_assert_eq!(run(&grants, &r), want);
    }

    #[test]
    fn prop_glob_agrees_with_reference(p in "[ab*?]{1,8}", n in "[ab]{0,10}") {
        prop_assert_eq!(Pattern::new(p.clone()).unwrap().matches(&n), ref_match(&p, &n));
    }

    #[test]
    fn prop_live_deny_always_wins(
        grants in prop::collection::vec(grant(), 0..12),
        r in request(),
    ) {
        // A deny that names this very tool and session and has not expired.
        let mut with_deny = grants.clone();
        let mut d = Grant::new(Pattern::new(r.tool.clone()).unwrap(), Effect::Deny)
            .sessions(Pattern::new(r.session.clone()).unwrap());
        d.expires = Some(Timestamp(r.now + 1));
        with_deny.push((d, Vec::new()));
        prop_assert_eq!(run(&with_deny, &r), Decision::Deny(DenyReason::DeniedByGrant));
    }

    #[test]
    fn prop_a_conditional_deny_whose_conditions_hold_wins(
        grants in prop::collection::vec(grant(), 0..12),
        r in request(),
        conds in prop::collection::vec(condition(), 1..3),
    ) {
        let Some(args) = r.args.clone() else { return Ok(()); };
        let mut with_deny = grants.clone();
        let mut d = Grant::new(Pattern::new(r.tool.clone()).unwrap(), Effect::Deny);
        for c in &conds {
            d = d.when(to_condition(c));
        }
        with_deny.push((d, conds.clone()));
        let all_hold = conds.iter().all(|c| ref_condition(c, &args));
        if all_hold {
            prop_assert_eq!(run(&with_deny, &r), Decision::Deny(DenyReason::DeniedByGrant));
        } else {
            prop_assert_eq!(run(&with_deny, &r), run(&grants, &r));
        }
    }

    #[test]
    fn prop_unparsed_arguments_are_as_if_no_conditional_grant_existed(
        grants in prop::collection::vec(grant(), 0..12),
        r in request(),
    ) {
        let r = Request { args: None, ..r };
        let plain: Vec<_> = grants.iter().filter(|(g, _)| !g.is_conditional()).cloned().collect();
        prop_assert_eq!(run(&grants, &r), run(&plain, &r));
    }

    #[test]
    fn prop_order_does_not_matter(
        grants in prop::collection::vec(grant(), 0..12),
        r in request(),
        seed in any::<u64>(),
    ) {
        let mut shuffled = grants.clone();
        // Fisher–Yates with a small LCG driven by the seed.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let j = (state >> 33) as usize % (i + 1);
            shuffled.swap(i, j);
        }
        prop_assert_eq!(run(&grants, &r), run(&shuffled, &r));
    }

    #[test]
    fn prop_adding_allow_never_turns_allow_into_denial(
        grants in prop::collection::vec(grant(), 0..12),
        extra_tool in prop_oneof![pattern(), name()],
        extra_sessions in prop_oneof![Just("*".to_owned()), pattern()],
        max_class in class(),
        if_untrusted in effect(),
        expires in prop::option::of(0u64..20),
        r in request(),
    ) {
        let before = run(&grants, &r);
        let mut more = grants.clone();
        let mut g = Grant::new(Pattern::new(extra_tool).unwrap(), Effect::Allow)
            .sessions(Pattern::new(extra_sessions).unwrap())
            .max_class(max_class)
            .if_untrusted(if_untrusted);
        g.expires = expires.map(Timestamp);
        more.push((g, Vec::new()));
        let after = run(&more, &r);
        if before == Decision::Allow {
            prop_assert_eq!(after, Decision::Allow);
        }
    }

    #[test]
    fn prop_taint_never_falls(
        start in taint(),
        labels in prop::collection::vec((class(), any::<bool>()), 0..10),
    ) {
        let mut t = start;
        for (c, u) in labels {
            let before = t;
            t.absorb(Label::new(c, u));
            prop_assert!(t.class() >= before.class());
            prop_assert!(t.class() >= c);
            prop_assert!(t.untrusted() >= before.untrusted());
            prop_assert!(t.untrusted() >= u);
        }
    }
}
