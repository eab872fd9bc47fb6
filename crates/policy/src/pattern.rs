//! Glob patterns over tool names and session ids.
//!
//! `*` matches any run of characters (also none), `?` exactly one character, every other
//! character itself; a pattern matches the whole name, so `fetch_*` matches `fetch_get` but
//! not `fetch`. There is no escape: tool names and session ids never hold `*` or `?`.
//!
//! Matching is iterative with a single backtrack point (the last `*` seen), so it takes at
//! most `O(pattern × name)` steps and never the exponential time a recursive matcher can
//! take on a hostile pattern such as `*a*a*a*a*a*b`.

use std::fmt;

/// Why a string is not a [`Pattern`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("a pattern may not be empty (use \"*\" to match every name)")]
    Empty,
}

/// A checked glob pattern. Patterns without `*` or `?` are compared as plain strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pattern {
    text: String,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    /// No wildcard: equal strings only.
    Exact,
    /// Only `*`s: every name.
    Any,
    /// Anything else.
    Glob,
}

impl Pattern {
    /// Checks `text` and makes it a pattern. The empty pattern is refused: it would match
    /// only the empty name, which no tool or session has, and is always a mistake.
    pub fn new(text: impl Into<String>) -> Result<Self, PatternError> {
        let text = text.into();
        if text.is_empty() {
            return Err(PatternError::Empty);
        }
        let kind = if text.bytes().all(|b| b == b'*') {
            Kind::Any
        } else if text.bytes().any(|b| b == b'*' || b == b'?') {
            Kind::Glob
        } else {
            Kind::Exact
        };
        Ok(Self { text, kind })
    }

    /// The pattern that matches every name: `*`.
    pub fn any() -> Self {
        Self {
            text: "*".to_owned(),
            kind: Kind::Any,
        }
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the pattern has no wildcard and so matches exactly one name.
    pub fn is_exact(&self) -> bool {
        self.kind == Kind::Exact
    }

    /// The characters before the first wildcard: every name the pattern matches starts with
    /// them. For an exact pattern this is the whole pattern.
    pub fn literal_prefix(&self) -> &str {
        match self.text.find(['*', '?']) {
            Some(at) => self.text.get(..at).unwrap_or(""),
            None => &self.text,
        }
    }

    /// Does the pattern match the whole of `name`?
    pub fn matches(&self, name: &str) -> bool {
        match self.kind {
            Kind::Exact => self.text == name,
            Kind::Any => true,
            Kind::Glob => glob_match(&self.text, name),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for Pattern {
    type Err = PatternError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

/// The character at byte offset `at` of `s`, if any.
fn char_at(s: &str, at: usize) -> Option<char> {
    s.get(at..).and_then(|rest| rest.chars().next())
}

/// Whole-name glob match, iteratively. Offsets are byte offsets that always sit on
/// character boundaries, because they only ever move by a character's UTF-8 length.
///
/// When a literal or `?` fails to match, the only choice that can be revisited is how much
/// the most recent `*` swallowed: earlier stars never need more, because anything they could
/// take the latest star can take as well. So one backtrack point is enough.
fn glob_match(pattern: &str, name: &str) -> bool {
    let (mut p, mut n) = (0usize, 0usize);
    // After the latest `*`: where the pattern resumes, and where in the name it last tried.
    let mut star: Option<(usize, usize)> = None;
    while let Some(c) = char_at(name, n) {
        match char_at(pattern, p) {
            Some('*') => {
                p += 1;
                star = Some((p, n));
                continue;
            }
            Some('?') => {
                p += 1;
                n += c.len_utf8();
                continue;
            }
            Some(pc) if pc == c => {
                p += pc.len_utf8();
                n += c.len_utf8();
                continue;
            }
            _ => {}
        }
        // Mismatch: let the latest star swallow one more character, or fail.
        let Some((resume, tried)) = star else {
            return false;
        };
        let Some(swallowed) = char_at(name, tried) else {
            return false;
        };
        let next = tried + swallowed.len_utf8();
        star = Some((resume, next));
        p = resume;
        n = next;
    }
    // The name is used up: the rest of the pattern must be stars.
    pattern
        .get(p..)
        .is_some_and(|rest| rest.bytes().all(|b| b == b'*'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        Pattern::new(p).unwrap().matches(n)
    }

    #[test]
    fn test_pattern_star_matches_any_run_including_empty() {
        assert!(m("fetch_*", "fetch_get"));
        assert!(m("fetch_*", "fetch_"));
        assert!(!m("fetch_*", "fetch"));
        assert!(m("*", ""));
        assert!(m("*", "anything"));
        assert!(m("a*b*c", "abc"));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "axxbyy"));
        assert!(m("**", "x"));
        assert!(m("*_get", "fetch_get"));
        assert!(!m("*_get", "fetch_got"));
    }

    #[test]
    fn test_pattern_question_mark_matches_exactly_one_char() {
        assert!(m("run?", "run1"));
        assert!(!m("run?", "run"));
        assert!(!m("run?", "run12"));
        assert!(m("??", "éx"));
        assert!(!m("???", "éx"));
        assert!(m("a?*", "ab"));
        assert!(!m("a?*", "a"));
    }

    #[test]
    fn test_pattern_matches_whole_name_only() {
        assert!(m("read_file", "read_file"));
        assert!(!m("read_file", "read_file2"));
        assert!(!m("read_file", "xread_file"));
        assert!(!m("read", "read_file"));
        assert!(!m("a*", "ba"));
    }

    #[test]
    fn test_pattern_empty_is_refused() {
        assert_eq!(Pattern::new(""), Err(PatternError::Empty));
    }

    #[test]
    fn test_pattern_literal_prefix() {
        assert_eq!(Pattern::new("fetch_*").unwrap().literal_prefix(), "fetch_");
        assert_eq!(Pattern::new("a?b*").unwrap().literal_prefix(), "a");
        assert_eq!(Pattern::new("*x").unwrap().literal_prefix(), "");
        assert_eq!(Pattern::new("exact").unwrap().literal_prefix(), "exact");
    }

    #[test]
    fn test_pattern_hostile_star_pattern_stays_fast() {
        let name = "a".repeat(100_000);
        let start = std::time::Instant::now();
        assert!(!m("*a*a*a*a*a*a*a*a*b", &name));
        assert!(m("*a*a*a*a*a*a*a*a*", &name));
        assert!(!m("*?*?*?*?*?*?*b", &name));
        // A backtracking matcher would not finish; ours is a few milliseconds.
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }
}
