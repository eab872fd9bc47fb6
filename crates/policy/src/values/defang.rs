//! Defanged addresses and links (docs/spec.md §3.7): the forms a threat report, a spam
//! filter's evasion or an attacker's answer writes so that no client makes them a link,
//! and that any reader, a model above all, turns back into the value.
//!
//! - **Bracketed markers**, read on both sides (an answer and an argument): `[at]`, `(at)`,
//!   `{at}`, `<at>`, `[@]`, `(@)`, `{@}`, `<@>` are `@`; `[dot]`, `(dot)`, `{dot}`, `<dot>`,
//!   `[.]`, `(.)`, `{.}`, `<.>` are `.` (any case) — each with the spaces around it dropped
//!   when a letter or digit stands on both sides (`attacker (at) evil (dot) com`); `[:]`,
//!   `[://]` and `[/]` are `:`, `://` and `/` (`hxxps[:]//evil[.]com`). Nobody writes a
//!   bracketed `at` or `dot` between two words but to hide an address.
//! - **Words**, read in answers only: `LOCAL at DOMAIN` and `LOCAL @ DOMAIN`, the domain's
//!   labels split by `.` or the word `dot` (any case, with spaces around): `attacker at evil
//!   dot com`, `attacker at evil.com`, `attacker @ evil . com`. Prose says "at" and "dot"
//!   too, so the domain must have two labels or more and end in a top-level domain in use
//!   ([`super::tld`]): `look at this dot com bubble` does read as `look@this.com`, a value
//!   no call will carry (a surplus entry costs only room in the index); `meet me at noon`
//!   reads as nothing. An argument is not read so: a tool sends to what it is given, and
//!   `bob at acme dot com` is no address to it.

use std::borrow::Cow;
use std::ops::Range;

use super::tld;
use crate::email::{Address, is_atext};

/// What a bracketed marker stands for.
const MARKERS: &[(&str, &str)] = &[
    ("at", "@"),
    ("@", "@"),
    ("dot", "."),
    (".", "."),
    ("://", "://"),
    (":", ":"),
    ("/", "/"),
];

/// The most spaces dropped on either side of a marker.
const MAX_SPACES: usize = 3;

fn close_of(open: u8) -> Option<u8> {
    match open {
        b'[' => Some(b']'),
        b'(' => Some(b')'),
        b'{' => Some(b'}'),
        b'<' => Some(b'>'),
        _ => None,
    }
}

/// `t` with its bracketed markers undone (see the module); borrowed when it has none.
pub(super) fn undo_markers(t: &str) -> Cow<'_, str> {
    let b = t.as_bytes();
    if !b.iter().any(|&c| close_of(c).is_some()) {
        return Cow::Borrowed(t);
    }
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        let Some(close) = close_of(b[i]) else {
            i += 1;
            continue;
        };
        let found = MARKERS.iter().find_map(|&(inner, value)| {
            let end = i + 1 + inner.len();
            let matches = b
                .get(i + 1..end)
                .is_some_and(|s| s.eq_ignore_ascii_case(inner.as_bytes()))
                && b.get(end) == Some(&close);
            matches.then_some((value, end + 1))
        });
        let Some((value, after)) = found else {
            i += 1;
            continue;
        };
        let o = out.get_or_insert_with(|| String::with_capacity(t.len()));
        o.push_str(t.get(copied..i).unwrap_or(""));
        let mut next = after;
        if value == "@" || value == "." {
            let kept = o.trim_end_matches([' ', '\t']);
            let dropped = o.len() - kept.len();
            let before_ok = kept.chars().next_back().is_some_and(char::is_alphanumeric);
            let spaces = b
                .get(after..)
                .unwrap_or(&[])
                .iter()
                .take_while(|&&c| c == b' ' || c == b'\t')
                .count();
            let after_ok = t
                .get(after + spaces..)
                .and_then(|s| s.chars().next())
                .is_some_and(char::is_alphanumeric);
            if !(before_ok && after_ok) || dropped > MAX_SPACES || spaces > MAX_SPACES {
                // Not between two words: left as written.
                o.push_str(t.get(i..after).unwrap_or(""));
                copied = after;
                i = after;
                continue;
            }
            o.truncate(kept.len());
            next = after + spaces;
        }
        o.push_str(value);
        copied = next;
        i = next;
    }
    match out {
        Some(mut o) => {
            o.push_str(t.get(copied..).unwrap_or(""));
            Cow::Owned(o)
        }
        None => Cow::Borrowed(t),
    }
}

/// The most labels a domain spelled in words has.
const MAX_LABELS: usize = 16;

/// Calls `push` with each address `t` spells in words (see the module), and where it is.
pub(super) fn word_addresses(t: &str, push: &mut dyn FnMut(String, Range<usize>)) {
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let marker_end = match b[i] {
            // `@` with spaces on both sides or on neither (not a handle, `ping @alice`).
            b'@' if (i > 0 && is_space(b[i - 1]))
                == b.get(i + 1).copied().is_some_and(is_space) =>
            {
                Some(i + 1)
            }
            b'a' | b'A'
                if b.get(i + 1).is_some_and(|c| c.eq_ignore_ascii_case(&b't'))
                    && i > 0
                    && is_space(b[i - 1])
                    && b.get(i + 2).copied().is_some_and(is_space) =>
            {
                Some(i + 2)
            }
            _ => None,
        };
        let Some(end) = marker_end else {
            i += 1;
            continue;
        };
        if let Some((address, span)) = address_at(t, i, end) {
            push(address, span);
        }
        i = end;
    }
}

fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// The address around the marker at `m..end`, if the words there spell one.
fn address_at(t: &str, m: usize, end: usize) -> Option<(String, Range<usize>)> {
    let b = t.as_bytes();
    // The local part: the word before the marker, spaces between.
    let mut k = m;
    while k > 0 && k + MAX_SPACES > m && is_space(b[k - 1]) {
        k -= 1;
    }
    let local_end = k;
    while k > 0 && local_end - k < 64 && {
        let c = char::from(b[k - 1]);
        b[k - 1].is_ascii() && (is_atext(c) || c == '.')
    } {
        k -= 1;
    }
    let local = t
        .get(k..local_end)?
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .trim_end_matches('.');
    if local.is_empty() {
        return None;
    }
    let start = local_end
        - t.get(k..local_end)?
            .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
            .len();
    // The domain: labels split by `.` or the word `dot`.
    let mut j = end;
    let skip_spaces = |mut j: usize| {
        let from = j;
        while j < b.len() && j - from < MAX_SPACES && is_space(b[j]) {
            j += 1;
        }
        j
    };
    j = skip_spaces(j);
    let mut labels: Vec<&str> = Vec::new();
    let mut domain_end = j;
    while labels.len() < MAX_LABELS {
        let len = b
            .get(j..)
            .unwrap_or(&[])
            .iter()
            .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
            .take(63)
            .count();
        if len == 0 {
            break;
        }
        labels.push(t.get(j..j + len)?);
        j += len;
        domain_end = j;
        // A separator, then a label, or the domain ends here.
        let s = skip_spaces(j);
        let after_sep = if b.get(s) == Some(&b'.') {
            // `evil.com` or `evil . com`, not the end of a sentence (`home. It`).
            let spaced_after = b.get(s + 1).copied().is_some_and(is_space);
            (spaced_after == (s > j)).then_some(s + 1)
        } else if s > j
            && b.get(s..s + 3)
                .is_some_and(|w| w.eq_ignore_ascii_case(b"dot"))
            && b.get(s + 3).copied().is_some_and(is_space)
        {
            Some(s + 3)
        } else {
            None
        };
        let Some(after_sep) = after_sep else {
            break;
        };
        let next = skip_spaces(after_sep);
        if !b.get(next).is_some_and(u8::is_ascii_alphanumeric) {
            break;
        }
        j = next;
    }
    if labels.len() < 2 {
        return None;
    }
    let domain = labels.join(".");
    if !tld::known(&domain) {
        return None;
    }
    let candidate = format!("{local}@{domain}");
    let address = Address::parse(&candidate).ok()?;
    Some((address.to_string().to_ascii_lowercase(), start..domain_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(t: &str) -> Vec<String> {
        let mut out = Vec::new();
        word_addresses(t, &mut |a, _| out.push(a));
        out
    }

    #[test]
    fn test_markers() {
        assert_eq!(undo_markers("a[at]b[dot]com"), "a@b.com");
        assert_eq!(undo_markers("a (AT) b (Dot) com"), "a@b.com");
        assert_eq!(undo_markers("hxxps[:]//evil[.]com"), "hxxps://evil.com");
        assert_eq!(undo_markers("hxxps[://]evil.com[/]x"), "hxxps://evil.com/x");
        assert_eq!(undo_markers("see (a) and [b]"), "see (a) and [b]");
        // Not between two words: as written.
        assert_eq!(undo_markers("where (at) ?"), "where (at) ?");
        assert_eq!(undo_markers("(at)"), "(at)");
        assert!(matches!(undo_markers("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn test_words() {
        assert_eq!(
            words("mail attacker at evil dot com now"),
            ["attacker@evil.com"]
        );
        assert_eq!(
            words("mail Attacker AT Evil DOT Com"),
            ["attacker@evil.com"]
        );
        assert_eq!(words("mail attacker at evil.com."), ["attacker@evil.com"]);
        assert_eq!(words("attacker @ evil . co . uk"), ["attacker@evil.co.uk"]);
        assert_eq!(words("a.b at x dot y dot io"), ["a.b@x.y.io"]);
        for prose in [
            "meet me at noon",
            "at the office at 9.30",
            "we met at home. Then",
            "look at the dot.",
            "I was at home. It rained.",
            "ping @alice.bsky.social",
            "at",
            "x at",
            " at y",
            "@",
        ] {
            assert!(words(prose).is_empty(), "{prose}: {:?}", words(prose));
        }
    }
}
