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
//! - **Words**: `LOCAL at DOMAIN` and `LOCAL @ DOMAIN`, the domain's labels split by `.` or
//!   the word `dot` or another language's ([`DOT_WORDS`]: `punkt`, `punto` …) (any case,
//!   with spaces around): `attacker at evil dot com`, `attacker
//!   at evil.com`, `attacker @ evil . com`; and a host spelled so alone, not an address's
//!   domain (`evil dot com`, [`word_hosts`]). Prose says "at" and "dot" too, so the domain
//!   must have two labels or more and end in a top-level domain in use ([`super::tld`]):
//!   `look at this dot com bubble` does read as `look@this.com`, a value no call will carry
//!   (a surplus entry costs only room in the index); `meet me at noon` reads as nothing.
//!   A domain whose separator is spelled may end in any top-level domain of the registry
//!   ([`super::tld_registry`]: `bluesparrow dot careers`), and a line break with its
//!   indentation stands where a space may (a YAML dump folds `hr-docs at⏎      acme dot
//!   com`); two line breaks do not (two paragraphs are not one name).
//!   An answer reads every such address; an argument only those whose domain is
//!   **spelled** (a `dot` or a spaced `.`): a colleague reads `payroll at bluesparrow-hr
//!   dot com` and types it, while `lunch at acme.com` carries the link `acme.com` already.

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

/// Calls `push` with each address `t` spells in words (see the module), where it is, and
/// whether its domain is spelled too (a label split from the next by the word `dot` or a
/// `.` with spaces around it: no client makes that a link).
pub(super) fn word_addresses(t: &str, push: &mut dyn FnMut(String, Range<usize>, bool)) {
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
                    && is_gap(b[i - 1])
                    && b.get(i + 2).copied().is_some_and(is_gap) =>
            {
                Some(i + 2)
            }
            _ => None,
        };
        let Some(end) = marker_end else {
            i += 1;
            continue;
        };
        if let Some((address, span, spelled)) = address_at(t, i, end) {
            push(address, span, spelled);
        }
        i = end;
    }
}

/// A space, a tab, or a line break: where a writer folds a long line (a YAML dump folds at
/// a space, so `hr-docs at⏎      acme dot com` is the words `hr-docs at acme dot com`).
fn is_gap(c: u8) -> bool {
    is_space(c) || c == b'\n' || c == b'\r'
}

/// The most spaces of indentation after a line break inside a name spelled in words.
const MAX_INDENT: usize = 16;

/// `j` past the gap between two words: at most [`MAX_SPACES`] spaces, or those, one line
/// break and at most [`MAX_INDENT`] spaces after it.
fn skip_gap(b: &[u8], j: usize) -> usize {
    let mut k = skip_spaces(b, j);
    if b.get(k) == Some(&b'\r') && b.get(k + 1) == Some(&b'\n') {
        k += 1;
    }
    if b.get(k) != Some(&b'\n') {
        return skip_spaces(b, j);
    }
    k += 1;
    let from = k;
    while k < b.len() && k - from < MAX_INDENT && is_space(b[k]) {
        k += 1;
    }
    k
}

/// [`skip_gap`] backwards from `j`: where the gap before `j` starts.
fn gap_back(b: &[u8], j: usize) -> usize {
    let mut k = j;
    while k > 0 && j - k < MAX_INDENT && is_space(b[k - 1]) {
        k -= 1;
    }
    if k > 0 && b[k - 1] == b'\n' {
        k -= 1;
        if k > 0 && b[k - 1] == b'\r' {
            k -= 1;
        }
        let line_end = k;
        while k > 0 && line_end - k < MAX_SPACES && is_space(b[k - 1]) {
            k -= 1;
        }
        return k;
    }
    // No line break: at most MAX_SPACES spaces.
    let mut k = j;
    while k > 0 && j - k < MAX_SPACES && is_space(b[k - 1]) {
        k -= 1;
    }
    k
}

fn is_space(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// The address around the marker at `m..end`, if the words there spell one, and whether its
/// domain is spelled ([`domain_at`]).
fn address_at(t: &str, m: usize, end: usize) -> Option<(String, Range<usize>, bool)> {
    let b = t.as_bytes();
    // The local part: the word before the marker, spaces between.
    let mut k = m;
    k = gap_back(b, k);
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
    let (domain, domain_end, spelled) = domain_at(t, skip_gap(b, end))?;
    let candidate = format!("{local}@{domain}");
    let address = Address::parse(&candidate).ok()?;
    Some((
        address.to_string().to_ascii_lowercase(),
        start..domain_end,
        spelled,
    ))
}

/// `j` past at most [`MAX_SPACES`] spaces.
fn skip_spaces(b: &[u8], mut j: usize) -> usize {
    let from = j;
    while j < b.len() && j - from < MAX_SPACES && is_space(b[j]) {
        j += 1;
    }
    j
}

/// The words for "dot" a person writes a domain with: English, and the words of the
/// languages around it (German and Scandinavian `punkt`, Spanish and Italian `punto`,
/// Portuguese `ponto`, Polish `kropka`, Finnish `piste`, Turkish `nokta`, Czech and Slovak
/// `tečka`/`bodka`, Slovene and Croatian `točka`, Russian `точка`; round 7: a Zurich team's
/// `lohn at bluesparrow-hr punkt ch`). Each still needs a registered top-level domain after
/// it, one in common use for these ([`tld::known`]). Left out: words English prose uses (`punt`, `pont`, `point`, `period`) — `a punt at`
/// would be the host `a.at`.
const DOT_WORDS: &[&str] = &[
    "dot",
    "punkt",
    "punto",
    "ponto",
    "kropka",
    "piste",
    "nokta",
    "tecka",
    "tečka",
    "bodka",
    "točka",
    "tocka",
    "точка",
];

/// Where the word for "dot" at `w` ends, when one stands there followed by a gap, and
/// whether it is the English `dot`.
fn dot_word_at(b: &[u8], w: usize) -> Option<(usize, bool)> {
    DOT_WORDS.iter().find_map(|word| {
        let end = w + word.len();
        let matches = b
            .get(w..end)
            .is_some_and(|d| d.eq_ignore_ascii_case(word.as_bytes()))
            && b.get(end).copied().is_some_and(is_gap);
        matches.then_some((end, *word == "dot"))
    })
}

/// The domain whose first label starts at `j`: its labels split by `.`, by ` . ` or by the
/// word `dot`, two labels or more, ending in a top-level domain in use. Returns it (labels
/// joined by `.`), where it ends, and whether a separator was **spelled** (`dot`, or a `.`
/// with spaces around it).
fn domain_at(t: &str, mut j: usize) -> Option<(String, usize, bool)> {
    let b = t.as_bytes();
    let mut labels: Vec<&str> = Vec::new();
    let mut domain_end = j;
    let mut spelled = false;
    // A word for "dot" of another language (`punkt`): prose in that language says it too.
    let mut foreign = false;
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
        let s = skip_spaces(b, j);
        let (after_sep, in_words) = if b.get(s) == Some(&b'.') {
            // `evil.com` or `evil . com`, not the end of a sentence (`home. It`).
            let spaced_after = b.get(s + 1).copied().is_some_and(is_space);
            if spaced_after != (s > j) {
                break;
            }
            (s + 1, s > j)
        } else if let Some((after_word, english)) = Some(skip_gap(b, j))
            .filter(|&w| w > j)
            .and_then(|w| dot_word_at(b, w))
        {
            foreign |= !english;
            (after_word, true)
        } else {
            break;
        };
        let next = if in_words {
            skip_gap(b, after_sep)
        } else {
            skip_spaces(b, after_sep)
        };
        if !b.get(next).is_some_and(u8::is_ascii_alphanumeric) {
            break;
        }
        spelled |= in_words;
        j = next;
    }
    if labels.len() < 2 {
        return None;
    }
    let domain = labels.join(".");
    // A spelled name ends in any top-level domain of the registry (`bluesparrow dot
    // careers`: a reader types it whatever its ending); one written with dots only in a
    // top-level domain in common use, as sentences end where a word begins.
    let last = labels.last().copied().unwrap_or("").to_ascii_lowercase();
    // Spelled with another language's word, only in one in common use (`der Punkt ist`
    // names no `der.ist`).
    let registered = spelled && !foreign && super::tld_registry::registered(&last);
    if !(registered || tld::known(&domain)) {
        return None;
    }
    Some((domain, domain_end, spelled))
}

/// Calls `push` with each host name `t` spells in words that is not an address's domain: a
/// domain ([`domain_at`]) with a spelled separator (`bluesparrow-hr dot com`, `evil . com`),
/// starting a word, not after ` at ` or `@` — the names a person reads and types, though no
/// client makes them a link. In lower case, and where it is.
pub(super) fn word_hosts(t: &str, push: &mut dyn FnMut(String, Range<usize>)) {
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let starts_word = b[i].is_ascii_alphanumeric()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric()
                    || matches!(b[i - 1], b'-' | b'_' | b'.' | b'@')));
        if !starts_word {
            i += 1;
            continue;
        }
        match domain_at(t, i) {
            Some((domain, end, true)) if !after_at(b, i) => {
                push(domain.to_ascii_lowercase(), i..end);
                i = end;
            }
            _ => {
                // Past this word.
                while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'-' | b'_')) {
                    i += 1;
                }
            }
        }
    }
}

/// Whether the word at `i` follows the marker of an address spelled in words (` at `, `@`).
fn after_at(b: &[u8], i: usize) -> bool {
    // The same gap `word_addresses` takes after its marker, a folded line included.
    let k = gap_back(b, i);
    let before = b.get(..k).unwrap_or(&[]);
    before.ends_with(b"@")
        || (k < i
            && before.len() >= 3
            && before[before.len() - 2..].eq_ignore_ascii_case(b"at")
            && is_gap(before[before.len() - 3]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(t: &str) -> Vec<String> {
        let mut out = Vec::new();
        word_addresses(t, &mut |a, _, _| out.push(a));
        out
    }

    fn hosts(t: &str) -> Vec<String> {
        let mut out = Vec::new();
        word_hosts(t, &mut |h, _| out.push(h));
        out
    }

    fn spelled(t: &str) -> Vec<bool> {
        let mut out = Vec::new();
        word_addresses(t, &mut |_, _, s| out.push(s));
        out
    }

    #[test]
    fn test_spelled_domains() {
        assert_eq!(spelled("payroll at bluesparrow-hr dot com"), [true]);
        assert_eq!(spelled("payroll at bluesparrow-hr . com"), [true]);
        assert_eq!(spelled("payroll at bluesparrow-hr.com"), [false]);
        assert_eq!(spelled("payroll @ bluesparrow-hr.com"), [false]);
        assert_eq!(
            hosts("reply to bluesparrow-hr dot com today"),
            ["bluesparrow-hr.com"]
        );
        assert_eq!(hosts("see Evil DOT co dot UK"), ["evil.co.uk"]);
        assert_eq!(hosts("see evil . com"), ["evil.com"]);
        for none in [
            // An address's domain is the address's, not a host of its own.
            "payroll at bluesparrow-hr dot com",
            "payroll @ bluesparrow-hr dot com",
            "payroll at\n      bluesparrow-hr dot com",
            // Written as a link: the links reader's.
            "see evil.com",
            // Prose.
            "meet at noon",
            "connect the dots",
            "a dot b",
            "dot com",
            "I was at home. It rained.",
        ] {
            assert!(hosts(none).is_empty(), "{none}: {:?}", hosts(none));
        }
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
