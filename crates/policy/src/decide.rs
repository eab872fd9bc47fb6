//! The decision for one request (docs/spec.md §3.3 steps 1–5), and its explanation.
//!
//! [`decide`] visits only the grants whose tool pattern can match (see [`Grants`]) and
//! folds each into order-independent flags; the decision is then read off the flags in the
//! order of the specification's steps. [`explain`] makes the same decision and also says,
//! for every grant whose tool pattern matched, why it did or did not count.

use std::fmt;

use proto::control::{Concern, ConcernKind};
use proto::{DataClass, DenyReason, SessionId, Timestamp};
use serde_json::Value;

use crate::condition::{Arguments, Context, NoContext, Test, closed_holds, unnamed_key};
use crate::grant::{Effect, Grant, Grants};
use crate::provenance::{AssumeTrusted, InSession, WithoutIntent, sentence};
use crate::taint::Taint;

/// What the gate does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Hold it until a person approves it (docs/spec.md §3.3 step 6).
    Ask,
    /// Refuse it, for this reason.
    Deny(DenyReason),
}

impl fmt::Display for Decision {
    /// `allow`, `ask`, or `denied REASON` — the line `boxmaker check` prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Allow => f.write_str("allow"),
            Decision::Ask => f.write_str("ask"),
            Decision::Deny(reason) => write!(f, "denied {}", reason.as_str()),
        }
    }
}

/// What the grants that matched add up to. Every field is an "any grant …" flag, so the
/// order grants are visited in cannot change it.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// Step 1: some grant's tool and sessions patterns match.
    matched: bool,
    /// Step 2: some matching `deny` grant has not expired.
    live_deny: bool,
    /// Step 3: some matching `allow`/`ask` grant has not expired.
    live: bool,
    /// Step 4: some live grant admits the taint.
    admits: bool,
    /// Step 5: some admitting grant is `allow`, and not held back by `if_untrusted = "ask"`.
    runs: bool,
}

/// Do a grant's argument conditions let it match a call with `args` (docs/spec.md §3.3
/// step 1)? An unconditional grant always; a conditional one when every condition holds on
/// parsed arguments, never on unparsed ones, and, with [`Arguments::Unknown`], when it is
/// an `allow` or `ask` (some call could satisfy it; a conditional `deny` may not refuse
/// every call). A closed grant also needs every key of the arguments named by a condition.
/// `cx` is what the session knows beyond the arguments (its provenance index).
fn conditions_match(grant: &Grant, args: &Arguments, cx: &dyn Context) -> bool {
    if !grant.is_conditional() {
        return true;
    }
    match args {
        Arguments::Json(v) => {
            grant.when.iter().all(|c| c.check_in(v, cx).is_ok())
                && (!grant.closed || closed_holds(&grant.when, v))
        }
        Arguments::Unparsed => false,
        Arguments::Unknown => grant.effect != Effect::Deny,
    }
}

impl Tally {
    fn add(&mut self, grant: &Grant, taint: Taint, now: Timestamp) {
        self.matched = true;
        if !grant.is_live(now) {
            return;
        }
        if grant.effect == Effect::Deny {
            self.live_deny = true;
            return;
        }
        self.live = true;
        if grant.admits(taint) {
            self.admits = true;
            if grant.runs(taint) {
                self.runs = true;
            }
        }
    }

    fn decision(self) -> Decision {
        if !self.matched {
            Decision::Deny(DenyReason::NoGrant)
        } else if self.live_deny {
            Decision::Deny(DenyReason::DeniedByGrant)
        } else if !self.live {
            Decision::Deny(DenyReason::GrantExpired)
        } else if !self.admits {
            Decision::Deny(DenyReason::TaintTooHigh)
        } else if self.runs {
            Decision::Allow
        } else {
            Decision::Ask
        }
    }
}

/// Decides whether `session`, whose taint is `taint`, may call `tool` at `now`, for a call
/// whose arguments are not known: no grant with argument conditions matches (as for
/// arguments that do not parse). The gate decides calls with [`decide_call`].
pub fn decide(
    grants: &Grants,
    session: &SessionId,
    tool: &str,
    taint: Taint,
    now: Timestamp,
) -> Decision {
    decide_call(grants, session, tool, &Arguments::Unparsed, taint, now)
}

/// Decides whether `session`, whose taint is `taint`, may call `tool` with `args` at `now`
/// (docs/spec.md §3.3 steps 1–5). Pure: the same inputs always give the same decision,
/// whatever the order of the grants. Only grants whose tool pattern can match are visited
/// (see [`Grants`]); their conditions are evaluated last, after the sessions pattern.
///
/// A `from` test (docs/spec.md §3.7) fails here: no provenance index is known. The gate
/// decides with [`decide_call_in`] and the session's index.
pub fn decide_call(
    grants: &Grants,
    session: &SessionId,
    tool: &str,
    args: &Arguments,
    taint: Taint,
    now: Timestamp,
) -> Decision {
    decide_call_in(grants, session, tool, args, taint, now, &NoContext)
}

/// [`decide_call`] for a session whose provenance index `cx` answers (docs/spec.md §3.7):
/// a `from` test asks it where each value at its pointer was first seen.
pub fn decide_call_in(
    grants: &Grants,
    session: &SessionId,
    tool: &str,
    args: &Arguments,
    taint: Taint,
    now: Timestamp,
    cx: &dyn Context,
) -> Decision {
    let cx = &InSession::new(cx, taint.untrusted());
    let mut tally = Tally::default();
    grants.for_each_tool_match(tool, |_, g| {
        if g.sessions.matches(session.as_str()) && conditions_match(g, args, cx) {
            tally.add(g, taint, now);
        }
    });
    tally.decision()
}

/// Why one grant whose tool pattern matched did or did not count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Its sessions pattern does not match this session: it does not apply.
    OtherSessions,
    /// Its argument condition (0-based, the first that failed) does not hold: it does not
    /// apply.
    ConditionFails(usize),
    /// It is closed, its conditions hold, and the arguments hold a key none of them names:
    /// it does not apply.
    KeyNotNamed,
    /// It has argument conditions and the call's arguments are not strict JSON (or, for a
    /// `deny`, not known): it does not apply.
    NoArguments,
    /// It expired at this time (`now >= expires`): it no longer applies.
    Expired(Timestamp),
    /// A live `deny` grant: the call is refused whatever else matched.
    Denies,
    /// The session's taint class is above the grant's `max_class`.
    ClassAbove(DataClass),
    /// The session has seen untrusted content and the grant says `if_untrusted = "deny"`.
    UntrustedDenied,
    /// It admits the call and lets it run.
    Allows,
    /// It admits the call but a person must approve it: the grant says `ask`.
    AsksByGrant,
    /// It admits the call but a person must approve it: the session has seen untrusted
    /// content and the grant says `if_untrusted = "ask"`.
    AsksUntrusted,
}

impl Verdict {
    fn of(
        grant: &Grant,
        session: &SessionId,
        args: &Arguments,
        taint: Taint,
        now: Timestamp,
        cx: &dyn Context,
    ) -> Self {
        if !grant.sessions.matches(session.as_str()) {
            return Verdict::OtherSessions;
        }
        if !conditions_match(grant, args, cx) {
            return match args.json() {
                Some(v) => match grant.when.iter().position(|c| c.check_in(v, cx).is_err()) {
                    Some(i) => Verdict::ConditionFails(i),
                    None => Verdict::KeyNotNamed,
                },
                None => Verdict::NoArguments,
            };
        }
        if let Some(t) = grant.expires
            && now >= t
        {
            return Verdict::Expired(t);
        }
        if grant.effect == Effect::Deny {
            return Verdict::Denies;
        }
        if taint.class() > grant.max_class {
            return Verdict::ClassAbove(grant.max_class);
        }
        if taint.untrusted() && grant.if_untrusted == Effect::Deny {
            return Verdict::UntrustedDenied;
        }
        if grant.effect == Effect::Ask {
            return Verdict::AsksByGrant;
        }
        if taint.untrusted() && grant.if_untrusted == Effect::Ask {
            return Verdict::AsksUntrusted;
        }
        Verdict::Allows
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_with(f, &|t| t.to_string())
    }
}

impl Verdict {
    fn write_with(
        &self,
        f: &mut fmt::Formatter<'_>,
        time: &dyn Fn(Timestamp) -> String,
    ) -> fmt::Result {
        match self {
            Verdict::OtherSessions => f.write_str("does not apply: its sessions do not match"),
            Verdict::ConditionFails(i) => {
                write!(f, "does not apply: its condition {} does not hold", i + 1)
            }
            Verdict::KeyNotNamed => f.write_str(
                "does not apply: it is closed and the arguments hold a key none of its \
                 conditions names",
            ),
            Verdict::NoArguments => f.write_str(
                "does not apply: it has argument conditions and the call's arguments are not \
                 strict JSON",
            ),
            Verdict::Expired(t) => write!(f, "does not apply: expired at {}", time(*t)),
            Verdict::Denies => f.write_str("denies the call"),
            Verdict::ClassAbove(max) => {
                write!(f, "does not admit: the taint is above its max_class {max}")
            }
            Verdict::UntrustedDenied => f.write_str(
                "does not admit: the session has seen untrusted content and it says \
                 if_untrusted = deny",
            ),
            Verdict::Allows => f.write_str("admits and allows the call"),
            Verdict::AsksByGrant => f.write_str("admits the call, with approval (effect ask)"),
            Verdict::AsksUntrusted => f.write_str(
                "admits the call, with approval (the session has seen untrusted content \
                 and it says if_untrusted = ask)",
            ),
        }
    }
}

/// One grant that [`explain`] looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictLine {
    /// The grant's position in the set, counting from 0 in the order grants were added.
    pub index: usize,
    pub grant: Grant,
    pub verdict: Verdict,
    /// For a grant with argument conditions and parsed arguments: each condition, in order,
    /// whether it held and on what (`condition 1 holds: /to is the string "a@b.c"`), and,
    /// for a closed grant, which key no condition names (`closed: /bcc is named by none of
    /// its conditions`).
    pub conditions: Vec<String>,
    /// For a grant with conditions whose `max_class` is below the taint: the destination's
    /// clearance in the egress refusal's words (docs/spec.md §3.3 "Sinks"): `this session
    /// holds confidential data and /channel "#general" is cleared for internal`.
    pub clearance: Option<String>,
}

impl fmt::Display for VerdictLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe(&|t| t.to_string()))
    }
}

impl VerdictLine {
    /// As `Display`, with every time worded by `time` (a person reads local time, not Unix
    /// seconds: `boxmaker check --explain`).
    pub fn describe(&self, time: &dyn Fn(Timestamp) -> String) -> String {
        struct Verdict<'a>(&'a VerdictLine, &'a dyn Fn(Timestamp) -> String);
        impl fmt::Display for Verdict<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.verdict.write_with(f, self.1)
            }
        }
        let mut out = format!(
            "grant {} ({}): {}",
            self.index + 1,
            self.grant.describe(time),
            Verdict(self, time)
        );
        if let Some(c) = &self.clearance {
            out.push_str(&format!(": {c}"));
        }
        if !self.conditions.is_empty() {
            out.push_str(&format!(" [{}]", self.conditions.join("; ")));
        }
        out
    }
}

/// What `explain` says of each of `grant`'s conditions on `args`.
fn condition_lines(grant: &Grant, args: &Arguments, cx: &dyn Context) -> Vec<String> {
    let Some(v) = args.json() else {
        return Vec::new();
    };
    let mut lines: Vec<String> = grant
        .when
        .iter()
        .enumerate()
        .map(|(i, c)| match c.check_in(v, cx) {
            Ok(()) => format!("condition {} holds: {}", i + 1, c.describe_hold_in(v, cx)),
            Err(fail) => format!("condition {} fails: {}", i + 1, c.describe_in(v, &fail, cx)),
        })
        .collect();
    if grant.closed {
        lines.push(match unnamed_key(&grant.when, v) {
            None => "closed: every key of the arguments is named by a condition".to_owned(),
            Some(key) => format!("closed: {key} is named by none of its conditions"),
        });
    }
    lines
}

/// A decision, and every grant whose tool pattern matched with its verdict, in the order
/// the grants were added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explanation {
    pub decision: Decision,
    pub lines: Vec<VerdictLine>,
    /// What a person asked about this call should be told (docs/spec.md §3.7, §3.3
    /// "Sinks"): each value a `from` test refused in a grant that would otherwise have
    /// matched, and each destination a grant whose conditions held is not cleared for.
    pub concerns: Vec<Concern>,
    /// Provenance changed the decision: with every `from` test holding it would differ.
    pub by_provenance: bool,
    /// The person's own words changed the decision (docs/spec.md §3.10): had their prompts
    /// named nothing, it would differ.
    pub by_intent: bool,
    /// Each value a `from` test looked up that the person's words vouch for
    /// ([`ConcernKind::IntentValue`]), in the order found: what the audit record and
    /// `check --explain` name when intent changed the decision. When the decision asks a
    /// person, these are among the `concerns` too.
    pub intent: Vec<Concern>,
}

/// Like [`decide`], and also says why: for every grant whose tool pattern matches `tool`,
/// whether it applied to this session and time and whether it admitted the call. The
/// decision is always the one `decide` gives. Slower than `decide`; for people, not for the
/// gate's hot path.
pub fn explain(
    grants: &Grants,
    session: &SessionId,
    tool: &str,
    taint: Taint,
    now: Timestamp,
) -> Explanation {
    explain_call(grants, session, tool, &Arguments::Unparsed, taint, now)
}

/// Like [`decide_call`], and also says why, as [`explain`] does, with each argument
/// condition of a grant and whether it held on `args`.
pub fn explain_call(
    grants: &Grants,
    session: &SessionId,
    tool: &str,
    args: &Arguments,
    taint: Taint,
    now: Timestamp,
) -> Explanation {
    explain_call_in(grants, session, tool, args, taint, now, &NoContext)
}

/// [`explain_call`] for a session whose provenance index `cx` answers: a `from` test's line
/// names where each value first appeared, and the explanation carries the concerns a person
/// is shown and whether provenance changed the decision.
pub fn explain_call_in(
    grants: &Grants,
    session: &SessionId,
    tool: &str,
    args: &Arguments,
    taint: Taint,
    now: Timestamp,
    cx: &dyn Context,
) -> Explanation {
    let cx = &InSession::new(cx, taint.untrusted());
    let mut lines = Vec::new();
    grants.for_each_tool_match(tool, |index, g| {
        let verdict = Verdict::of(g, session, args, taint, now, cx);
        lines.push(VerdictLine {
            index,
            grant: g.clone(),
            verdict,
            conditions: condition_lines(g, args, cx),
            clearance: clearance(g, verdict, args, taint),
        });
    });
    lines.sort_by_key(|l| l.index);
    let decision = decide_call_in(grants, session, tool, args, taint, now, cx);
    let asks_provenance = lines
        .iter()
        .any(|l| l.grant.when.iter().any(|c| c.test.is_from()));
    let by_provenance = asks_provenance
        && decide_call_in(grants, session, tool, args, taint, now, &AssumeTrusted) != decision;
    let mut concerns = Vec::new();
    let mut intent = Vec::new();
    if let Some(v) = args.json() {
        for l in &lines {
            line_concerns(l, v, cx, taint, &mut concerns);
            if asks_provenance {
                intent_concerns(&l.grant, v, cx, &mut intent);
            }
        }
    }
    let by_intent = !intent.is_empty()
        && decide_call_in(grants, session, tool, args, taint, now, &WithoutIntent(cx)) != decision;
    let mut seen = std::collections::HashSet::new();
    intent.retain(|c: &Concern| seen.insert((c.kind, c.pointer.clone(), c.value.clone())));
    if decision == Decision::Ask {
        if let Some(v) = args.json() {
            left_clearance(&lines, v, taint, &mut concerns);
        }
        concerns.extend(intent.iter().cloned());
    }
    let mut seen = std::collections::HashSet::new();
    concerns.retain(|c: &Concern| seen.insert((c.kind, c.pointer.clone(), c.value.clone())));
    Explanation {
        decision,
        lines,
        concerns,
        by_provenance,
        by_intent,
        intent,
    }
}

/// The destination a grant's conditions name, for a sentence: its first condition's
/// concrete paths and values (at most three).
fn destination(grant: &Grant, v: &Value) -> Vec<(String, String)> {
    let Some(c) = grant
        .when
        .iter()
        .find(|c| !c.test.is_from())
        .or(grant.when.first())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut path = String::new();
    c.leaves(v, 0, &mut path, &mut |p, found| {
        if out.len() < 3 {
            out.push((crate::condition::shown_path(p).to_owned(), shown(found)));
        }
    });
    out
}

/// For a conditional grant that matched but whose `max_class` is below the taint: the
/// clearance sentence (docs/spec.md §3.3 "Sinks").
fn clearance(grant: &Grant, verdict: Verdict, args: &Arguments, taint: Taint) -> Option<String> {
    let Verdict::ClassAbove(max) = verdict else {
        return None;
    };
    let v = args.json()?;
    let named = destination(grant, v);
    let first = named.first()?;
    Some(format!(
        "this session holds {} data and {} {} is cleared for {max}",
        taint.class(),
        first.0,
        first.1
    ))
}

/// For a call a person is asked about: each grant of the tool that clears it for less than
/// the session holds and whose conditions this call left (docs/spec.md §3.3 "Sinks", "A
/// clearance left"). A call just above a payment's range, or a post with a link the
/// outright grant refuses, falls to a wider `ask` that names no clearance; the person is
/// told what the call left, at the condition it failed. An admitting grant that names its
/// own clearance (`max_class` below `secret`, at or above the taint) settles it: that
/// destination was cleared with a look.
fn left_clearance(lines: &[VerdictLine], v: &Value, taint: Taint, out: &mut Vec<Concern>) {
    let admits = |l: &VerdictLine| {
        matches!(
            l.verdict,
            Verdict::Allows | Verdict::AsksByGrant | Verdict::AsksUntrusted
        )
    };
    if lines
        .iter()
        .any(|l| admits(l) && l.grant.max_class < DataClass::Secret)
    {
        return;
    }
    for l in lines {
        let g = &l.grant;
        if g.effect == Effect::Deny || !g.is_conditional() || g.max_class >= taint.class() {
            continue;
        }
        let mut left = Vec::new();
        match l.verdict {
            Verdict::ConditionFails(i) => {
                if let Some(c) = g.when.get(i) {
                    let mut path = String::new();
                    c.leaves(v, 0, &mut path, &mut |p, found| {
                        if left.len() < 3 {
                            left.push((crate::condition::shown_path(p).to_owned(), shown(found)));
                        }
                    });
                    if left.is_empty() {
                        left.push((c.pointer.to_string(), "(absent)".to_owned()));
                    }
                }
            }
            Verdict::KeyNotNamed => {
                if let Some(key) = unnamed_key(&g.when, v) {
                    left.push((key.to_string(), "(not named)".to_owned()));
                }
            }
            _ => continue,
        }
        for (pointer, value) in left {
            out.push(Concern {
                kind: ConcernKind::AboveClearance,
                detail: format!(
                    "this session holds {} data and grant {} clears this tool only for {} \
                     where its conditions hold; at {pointer} this call leaves it",
                    taint.class(),
                    l.index + 1,
                    g.max_class
                ),
                pointer,
                value: value.trim_matches('"').to_owned(),
            });
        }
    }
}

/// A value as a sentence shows it: a string quoted and cut at 60 characters.
fn shown(found: &Value) -> String {
    match found {
        Value::String(s) => {
            let cut: String = s.chars().take(60).collect();
            if cut.len() < s.len() {
                format!("{cut:?}…")
            } else {
                format!("{cut:?}")
            }
        }
        other => other.to_string().chars().take(60).collect(),
    }
}

/// Each value a `from` test of `grant` looks up that the person's words vouch for
/// (docs/spec.md §3.10), whatever the grant's verdict.
fn intent_concerns(grant: &Grant, v: &Value, cx: &dyn Context, out: &mut Vec<Concern>) {
    for c in &grant.when {
        let Test::From(t) = &c.test else { continue };
        let mut path = String::new();
        c.leaves(v, 0, &mut path, &mut |p, found| {
            for (ident, seen, _) in t.judge(found, cx) {
                if seen.is_intent() {
                    out.push(Concern {
                        kind: ConcernKind::IntentValue,
                        pointer: crate::condition::shown_path(p).to_owned(),
                        value: ident.text.clone(),
                        detail: sentence(&ident, &seen),
                    });
                }
            }
        });
    }
}

/// What one grant's verdict tells a person (see [`Explanation::concerns`]).
fn line_concerns(
    l: &VerdictLine,
    v: &Value,
    cx: &dyn Context,
    taint: Taint,
    out: &mut Vec<Concern>,
) {
    match l.verdict {
        Verdict::ConditionFails(_) => {
            let g = &l.grant;
            let others_hold = g
                .when
                .iter()
                .filter(|c| !c.test.is_from())
                .all(|c| c.check_in(v, cx).is_ok())
                && (!g.closed || closed_holds(&g.when, v));
            if !others_hold {
                return;
            }
            for c in g.when.iter().filter(|c| c.check_in(v, cx).is_err()) {
                let Test::From(t) = &c.test else { continue };
                let mut path = String::new();
                c.leaves(v, 0, &mut path, &mut |p, found| {
                    for (ident, seen, ok) in t.judge(found, cx) {
                        let Some(kind) = seen.concern().filter(|_| !ok) else {
                            continue;
                        };
                        out.push(Concern {
                            kind,
                            pointer: crate::condition::shown_path(p).to_owned(),
                            value: ident.text.clone(),
                            detail: sentence(&ident, &seen),
                        });
                    }
                });
            }
        }
        Verdict::ClassAbove(max) if l.grant.is_conditional() => {
            for (pointer, value) in destination(&l.grant, v) {
                out.push(Concern {
                    kind: ConcernKind::AboveClearance,
                    detail: format!(
                        "this session holds {} data and {pointer} {value} is cleared for {max} \
                         (grant {}'s max_class)",
                        taint.class(),
                        l.index + 1
                    ),
                    pointer,
                    value: value.trim_matches('"').to_owned(),
                });
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Pattern;

    #[test]
    fn test_decision_display_is_the_check_line() {
        assert_eq!(Decision::Allow.to_string(), "allow");
        assert_eq!(Decision::Ask.to_string(), "ask");
        assert_eq!(
            Decision::Deny(DenyReason::TaintTooHigh).to_string(),
            "denied taint_too_high"
        );
    }

    #[test]
    fn test_explain_lists_matching_grants_in_order_with_verdicts() {
        let p = |s: &str| Pattern::new(s).unwrap();
        let grants: Grants = [
            Grant::new(p("fetch_*"), Effect::Allow).max_class(DataClass::Public),
            Grant::new(p("other"), Effect::Allow),
            Grant::new(p("fetch_get"), Effect::Deny).expires(Timestamp(10)),
            Grant::new(p("*"), Effect::Allow).sessions(p("admin-*")),
        ]
        .into_iter()
        .collect();
        let s = SessionId::new("s1").unwrap();
        let taint = Taint::new(DataClass::Internal, false);
        let e = explain(&grants, &s, "fetch_get", taint, Timestamp(20));
        assert_eq!(e.decision, Decision::Deny(DenyReason::TaintTooHigh));
        let verdicts: Vec<_> = e.lines.iter().map(|l| (l.index, l.verdict)).collect();
        assert_eq!(
            verdicts,
            vec![
                (0, Verdict::ClassAbove(DataClass::Public)),
                (2, Verdict::Expired(Timestamp(10))),
                (3, Verdict::OtherSessions),
            ]
        );
        assert!(
            e.lines[0]
                .to_string()
                .starts_with("grant 1 (tool \"fetch_*\"")
        );
    }
}
