//! Grants, and the set that holds them indexed for fast lookup.
//!
//! A [`Grants`] set keeps every grant in the order it was added (for `explain`, which
//! numbers them as the config file does) and two indexes over the tool patterns:
//! - exact tool names in a hash map, so the common case is one lookup;
//! - glob tool patterns in a byte trie keyed by their literal prefix (the text before the
//!   first wildcard). Walking a name down the trie visits only the globs that can match it,
//!   so a decision costs at most one trie step per byte of the tool name however many glob
//!   grants there are.
//!
//! The order of grants never affects a decision: `decide` folds every candidate into flags
//! that do not depend on the order it visits them in.

use std::collections::HashMap;
use std::fmt;

use proto::{DataClass, Timestamp};

use crate::condition::Condition;
use crate::pattern::Pattern;
use crate::taint::Taint;

/// What a grant says: run the call, ask a person first, or refuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Effect {
    Allow,
    Ask,
    Deny,
}

impl Effect {
    /// Every effect, in the order the config file documents them.
    pub const ALL: &'static [Effect] = &[Effect::Allow, Effect::Ask, Effect::Deny];

    /// The name used in `boxmaker.toml`: `allow`, `ask` or `deny`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Ask => "ask",
            Effect::Deny => "deny",
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One grant: which tools, for which sessions, with what effect, until when, and at which
/// taint it stops applying.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Grant {
    /// The tools it covers: an exact name or a glob.
    pub tool: Pattern,
    /// The sessions it covers: a glob over session ids (`*` for all).
    pub sessions: Pattern,
    pub effect: Effect,
    /// The grant applies while `now < expires`; `None` is for ever.
    pub expires: Option<Timestamp>,
    /// The highest session taint class the grant admits.
    pub max_class: DataClass,
    /// What the grant does once the session has seen untrusted content.
    pub if_untrusted: Effect,
    /// Argument conditions (docs/spec.md §3.3): all must hold on the call's arguments for
    /// the grant to match. Empty: the grant matches whatever the arguments.
    pub when: Vec<Condition>,
    /// `closed = true`: an argument key that none of `when`'s pointers names makes the grant
    /// not match ([`crate::closed_holds`]).
    pub closed: bool,
}

impl Grant {
    /// A grant for `tool` with `effect`, for every session, for ever, at any class, whether
    /// or not the session has seen untrusted content.
    pub fn new(tool: Pattern, effect: Effect) -> Self {
        Self {
            tool,
            sessions: Pattern::any(),
            effect,
            expires: None,
            max_class: DataClass::Secret,
            if_untrusted: Effect::Allow,
            when: Vec::new(),
            closed: false,
        }
    }

    /// The same grant, matching only where `condition` also holds.
    #[must_use]
    pub fn when(mut self, condition: Condition) -> Self {
        self.when.push(condition);
        self
    }

    /// The same grant, closed: a key of the arguments that none of its conditions names
    /// makes it not match.
    #[must_use]
    pub fn closed(mut self) -> Self {
        self.closed = true;
        self
    }

    /// Whether the grant looks at the arguments: it carries conditions or is closed.
    pub fn is_conditional(&self) -> bool {
        !self.when.is_empty() || self.closed
    }

    /// The same grant, for the sessions `sessions` matches.
    #[must_use]
    pub fn sessions(mut self, sessions: Pattern) -> Self {
        self.sessions = sessions;
        self
    }

    /// The same grant, expiring at `at`.
    #[must_use]
    pub fn expires(mut self, at: Timestamp) -> Self {
        self.expires = Some(at);
        self
    }

    /// The same grant, admitting taint up to `class`.
    #[must_use]
    pub fn max_class(mut self, class: DataClass) -> Self {
        self.max_class = class;
        self
    }

    /// The same grant, with `effect` once the session has seen untrusted content.
    #[must_use]
    pub fn if_untrusted(mut self, effect: Effect) -> Self {
        self.if_untrusted = effect;
        self
    }

    /// Does the grant still apply at `now`? A grant with `expires = T` applies while
    /// `now < T`.
    pub fn is_live(&self, now: Timestamp) -> bool {
        self.expires.is_none_or(|t| now < t)
    }

    /// Does the grant admit a session with this taint (docs/spec.md §3.3 step 4)?
    pub fn admits(&self, taint: Taint) -> bool {
        taint.class() <= self.max_class && !(taint.untrusted() && self.if_untrusted == Effect::Deny)
    }

    /// Does an admitting grant run the call without asking (docs/spec.md §3.3 step 5)?
    pub fn runs(&self, taint: Taint) -> bool {
        self.effect == Effect::Allow && !(taint.untrusted() && self.if_untrusted == Effect::Ask)
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_with(f, &|t| t.to_string())
    }
}

impl Grant {
    /// As `Display`, with its expiry worded by `time` (a person reads local time, not Unix
    /// seconds: `boxmaker check --explain`).
    pub fn describe(&self, time: &dyn Fn(Timestamp) -> String) -> String {
        struct With<'a>(&'a Grant, &'a dyn Fn(Timestamp) -> String);
        impl fmt::Display for With<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.write_with(f, self.1)
            }
        }
        With(self, time).to_string()
    }

    fn write_with(
        &self,
        f: &mut fmt::Formatter<'_>,
        time: &dyn Fn(Timestamp) -> String,
    ) -> fmt::Result {
        write!(
            f,
            "tool {:?}, sessions {:?}, effect {}",
            self.tool.as_str(),
            self.sessions.as_str(),
            self.effect
        )?;
        if self.max_class != DataClass::Secret {
            write!(f, ", max_class {}", self.max_class)?;
        }
        if self.if_untrusted != Effect::Allow {
            write!(f, ", if_untrusted {}", self.if_untrusted)?;
        }
        if let Some(t) = self.expires {
            write!(f, ", expires {}", time(t))?;
        }
        for (i, c) in self.when.iter().enumerate() {
            let lead = if i == 0 { ", when " } else { " and " };
            write!(f, "{lead}{c}")?;
        }
        if self.closed {
            f.write_str(", closed")?;
        }
        Ok(())
    }
}

/// A set of grants, indexed by tool pattern.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    /// Every grant, in the order added.
    all: Vec<Grant>,
    /// Exact tool name → positions in `all`.
    exact: HashMap<String, Vec<usize>>,
    /// Glob tool patterns by literal prefix.
    globs: PrefixTrie,
}

impl Grants {
    /// An empty set: every call is `denied no_grant`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a grant.
    pub fn push(&mut self, grant: Grant) {
        let at = self.all.len();
        if grant.tool.is_exact() {
            self.exact
                .entry(grant.tool.as_str().to_owned())
                .or_default()
                .push(at);
        } else {
            self.globs
                .insert(grant.tool.literal_prefix().as_bytes(), at);
        }
        self.all.push(grant);
    }

    /// How many grants the set holds.
    pub fn len(&self) -> usize {
        self.all.len()
    }

    /// True when the set holds no grant.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// Every grant, in the order added.
    pub fn iter(&self) -> std::slice::Iter<'_, Grant> {
        self.all.iter()
    }

    /// The grant at position `at` (in the order added).
    pub fn get(&self, at: usize) -> Option<&Grant> {
        self.all.get(at)
    }

    /// Calls `f` with the position and grant of every grant whose tool pattern matches
    /// `tool`, in no particular order. Grants whose pattern cannot match are never visited.
    pub fn for_each_tool_match(&self, tool: &str, mut f: impl FnMut(usize, &Grant)) {
        if let Some(list) = self.exact.get(tool) {
            for &at in list {
                if let Some(g) = self.all.get(at) {
                    f(at, g);
                }
            }
        }
        self.globs.walk(tool.as_bytes(), |at| {
            if let Some(g) = self.all.get(at)
                && g.tool.matches(tool)
            {
                f(at, g);
            }
        });
    }
}

impl FromIterator<Grant> for Grants {
    fn from_iter<I: IntoIterator<Item = Grant>>(iter: I) -> Self {
        let mut set = Self::new();
        for g in iter {
            set.push(g);
        }
        set
    }
}

impl Extend<Grant> for Grants {
    fn extend<I: IntoIterator<Item = Grant>>(&mut self, iter: I) {
        for g in iter {
            self.push(g);
        }
    }
}

impl<'a> IntoIterator for &'a Grants {
    type Item = &'a Grant;
    type IntoIter = std::slice::Iter<'a, Grant>;
    fn into_iter(self) -> Self::IntoIter {
        self.all.iter()
    }
}

/// A byte trie from literal prefixes to grant positions. Node 0 is the root (the empty
/// prefix, for patterns that start with a wildcard).
#[derive(Debug, Clone)]
struct PrefixTrie {
    nodes: Vec<TrieNode>,
}

#[derive(Debug, Clone, Default)]
struct TrieNode {
    /// Children sorted by byte, for binary search.
    children: Vec<(u8, usize)>,
    /// Grants whose literal prefix ends here.
    grants: Vec<usize>,
}

impl Default for PrefixTrie {
    fn default() -> Self {
        Self {
            nodes: vec![TrieNode::default()],
        }
    }
}

impl PrefixTrie {
    fn insert(&mut self, prefix: &[u8], grant: usize) {
        let mut node = 0usize;
        for &b in prefix {
            let next_free = self.nodes.len();
            let Some(current) = self.nodes.get_mut(node) else {
                return;
            };
            node = match current.children.binary_search_by_key(&b, |&(k, _)| k) {
                Ok(i) => match current.children.get(i) {
                    Some(&(_, child)) => child,
                    None => return,
                },
                Err(i) => {
                    current.children.insert(i, (b, next_free));
                    self.nodes.push(TrieNode::default());
                    next_free
                }
            };
        }
        if let Some(n) = self.nodes.get_mut(node) {
            n.grants.push(grant);
        }
    }

    /// Calls `f` for every grant whose literal prefix is a prefix of `name`.
    fn walk(&self, name: &[u8], mut f: impl FnMut(usize)) {
        let mut node = 0usize;
        let mut bytes = name.iter();
        loop {
            let Some(n) = self.nodes.get(node) else {
                return;
            };
            for &g in &n.grants {
                f(g);
            }
            let Some(b) = bytes.next() else {
                return;
            };
            match n.children.binary_search_by_key(b, |&(k, _)| k) {
                Ok(i) => match n.children.get(i) {
                    Some(&(_, child)) => node = child,
                    None => return,
                },
                Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Pattern {
        Pattern::new(s).unwrap()
    }

    fn matched(set: &Grants, tool: &str) -> Vec<usize> {
        let mut v = Vec::new();
        set.for_each_tool_match(tool, |at, _| v.push(at));
        v.sort_unstable();
        v
    }

    #[test]
    fn test_grants_index_finds_exact_and_glob_matches_only() {
        let set: Grants = [
            Grant::new(p("read_file"), Effect::Allow),
            Grant::new(p("fetch_*"), Effect::Allow),
            Grant::new(p("*"), Effect::Deny),
            Grant::new(p("fe?ch_get"), Effect::Ask),
            Grant::new(p("fetch"), Effect::Allow),
            Grant::new(p("read_file"), Effect::Deny),
            Grant::new(p("fetch_x*"), Effect::Allow),
        ]
        .into_iter()
        .collect();
        assert_eq!(matched(&set, "read_file"), vec![0, 2, 5]);
        assert_eq!(matched(&set, "fetch_get"), vec![1, 2, 3]);
        assert_eq!(matched(&set, "fetch"), vec![2, 4]);
        assert_eq!(matched(&set, ""), vec![2]);
        assert_eq!(matched(&set, "fetch_xy"), vec![1, 2, 6]);
    }

    #[test]
    fn test_grant_expires_at_exactly_t() {
        let g = Grant::new(p("x"), Effect::Allow).expires(Timestamp(100));
        assert!(g.is_live(Timestamp(99)));
        assert!(!g.is_live(Timestamp(100)));
        assert!(!g.is_live(Timestamp(101)));
        assert!(Grant::new(p("x"), Effect::Allow).is_live(Timestamp(u64::MAX)));
    }
}
