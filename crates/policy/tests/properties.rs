//! Property tests of the decision against the promises of docs/spec.md §3.2–3.3, and against a
//! small reference model that is obviously correct: a linear scan over the grants in the
//! words of the specification, with a naive recursive glob matcher.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use policy::{Decision, Effect, Grant, Grants, Label, Pattern, Taint, decide};
use proptest::prelude::*;
use proto::{DataClass, DenyReason, SessionId, Timestamp};

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

/// docs/spec.md §3.3 steps 1–5, read aloud.
fn reference(grants: &[Grant], session: &str, tool: &str, taint: Taint, now: u64) -> Decision {
    let live = |g: &Grant| g.expires.is_none_or(|t| now < t.0);
    let matching: Vec<&Grant> = grants
        .iter()
        .filter(|g| ref_match(g.tool.as_str(), tool) && ref_match(g.sessions.as_str(), session))
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

fn grant() -> impl Strategy<Value = Grant> {
    (
        prop_oneof![pattern(), name()],
        prop_oneof![Just("*".to_owned()), pattern(), name()],
        effect(),
        prop::option::of(0u64..20),
        class(),
        effect(),
    )
        .prop_map(
            |(tool, sessions, effect, expires, max_class, if_untrusted)| {
                let mut g = Grant::new(Pattern::new(tool).unwrap(), effect)
                    .sessions(Pattern::new(sessions).unwrap())
                    .max_class(max_class)
                    .if_untrusted(if_untrusted);
                g.expires = expires.map(Timestamp);
                g
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
    taint: Taint,
    now: u64,
}

fn request() -> impl Strategy<Value = Request> {
    // Session ids must start with a letter or digit.
    ("[ab][ab_]{0,4}", name(), taint(), 0u64..22).prop_map(|(session, tool, taint, now)| Request {
        session,
        tool,
        taint,
        now,
    })
}

fn run(grants: &[Grant], r: &Request) -> Decision {
    let set: Grants = grants.iter().cloned().collect();
    decide(
        &set,
        &SessionId::new(r.session.clone()).unwrap(),
        &r.tool,
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
        let want = reference(&grants, &r.session, &r.tool, r.taint, r.now);
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
        with_deny.push(d);
        prop_assert_eq!(run(&with_deny, &r), Decision::Deny(DenyReason::DeniedByGrant));
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
        more.push(g);
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
