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

// Spaces: a run of spaces and tabs of any length is one gap (round 8: a bound of three was
// the attacker's next pick, `procurement    (at)    …` with four). Each run is walked by the
// markers on either side of it, so a text is still read in linear time.

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
            if !(before_ok && after_ok) {
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

/// The spaces a web page or a link writes encoded (HTML references, percent-encoding),
/// which a browser or a model shows as a space: `hiking&nbsp;at&nbsp;club&nbsp;dot&nbsp;ch`
/// reads `hiking at club dot ch`.
const ENCODED_SPACES: &[&str] = &[
    "&nbsp;", "&ensp;", "&emsp;", "&thinsp;", "&#160;", "&#xa0;", "&#32;", "&#x20;", "%20",
    "%c2%a0", // Without its `;`, as a browser still reads it.
    "&nbsp",
];

/// `t` as the readers of names spelled in words see it: each encoded space
/// ([`ENCODED_SPACES`], any case) as as many spaces as it has bytes, so every place in it is
/// where it is in `t` (a span of a name read here names the words of `t` that spell it).
/// Only these readers see it: a link scanner must not be cut where the text as sent holds
/// one word (`www.x.com/%20KEY`).
pub(super) fn gap_view(t: &str) -> Cow<'_, str> {
    if !t.bytes().any(|b| b == b'&' || b == b'%') {
        return Cow::Borrowed(t);
    }
    let b = t.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    while i < b.len() {
        if matches!(b[i], b'&' | b'%')
            && let Some(e) = ENCODED_SPACES.iter().find(|e| {
                b.get(i..i + e.len())
                    .is_some_and(|s| s.eq_ignore_ascii_case(e.as_bytes()))
            })
        {
            let o = out.get_or_insert_with(|| b.to_vec());
            o[i..i + e.len()].fill(b' ');
            i += e.len();
        } else {
            i += 1;
        }
    }
    // Only ASCII was replaced by ASCII: still UTF-8, every boundary where it was.
    match out.map(String::from_utf8) {
        Some(Ok(s)) => Cow::Owned(s),
        _ => Cow::Borrowed(t),
    }
}

/// A space, a tab, or a line break: where a writer folds a long line (a YAML dump folds at
/// a space, so `hr-docs at⏎      acme dot com` is the words `hr-docs at acme dot com`).
fn is_gap(c: u8) -> bool {
    is_space(c) || c == b'\n' || c == b'\r'
}

/// `j` past the gap between two words: spaces, or spaces, one line break and the
/// indentation after it.
fn skip_gap(b: &[u8], j: usize) -> usize {
    let mut k = skip_spaces(b, j);
    if b.get(k) == Some(&b'\r') && b.get(k + 1) == Some(&b'\n') {
        k += 1;
    }
    if b.get(k) != Some(&b'\n') {
        return skip_spaces(b, j);
    }
    k += 1;
    while k < b.len() && is_space(b[k]) {
        k += 1;
    }
    k
}

/// [`skip_gap`] backwards from `j`: where the gap before `j` starts.
fn gap_back(b: &[u8], j: usize) -> usize {
    let mut k = j;
    while k > 0 && is_space(b[k - 1]) {
        k -= 1;
    }
    if k > 0 && b[k - 1] == b'\n' {
        k -= 1;
        if k > 0 && b[k - 1] == b'\r' {
            k -= 1;
        }
        while k > 0 && is_space(b[k - 1]) {
            k -= 1;
        }
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

/// `j` past the spaces there.
fn skip_spaces(b: &[u8], mut j: usize) -> usize {
    while j < b.len() && is_space(b[j]) {
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

/// Where the top-level domain starts when the English `dot` and a registered top-level
/// domain stand at `w` as one word (`dotcom`, `dotnet`, `DotCom`, and with one `-` or `_`
/// between, `dot-com`), ended by anything but a letter, digit, `-` or `_`.
fn fused_dot_word_at(b: &[u8], w: usize) -> Option<usize> {
    let word = b.get(w..w + 3)?;
    if !word.eq_ignore_ascii_case(b"dot") {
        return None;
    }
    // `dot-com`, `dot_com`: one joiner between them is still the word and the domain.
    let joiner = usize::from(matches!(b.get(w + 3), Some(b'-' | b'_')));
    let w = w + joiner;
    let rest = b.get(w + 3..).unwrap_or(&[]);
    let n = rest.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    let ends = rest
        .get(n)
        .is_none_or(|&c| !(c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
    let tld = std::str::from_utf8(rest.get(..n)?)
        .ok()?
        .to_ascii_lowercase();
    ((2..=24).contains(&n) && ends && super::tld_registry::registered(&tld)).then_some(w + 3)
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
        } else if let Some(tld_at) = Some(skip_gap(b, j))
            .filter(|&w| w > j)
            .and_then(|w| fused_dot_word_at(b, w))
        {
            // `boarding-desk dotcom/pass`: the word and the top-level domain run together.
            (tld_at, true)
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
    // Where a run of single characters with no dot, already read, ends.
    let mut spaced_until = 0;
    while i < b.len() {
        let starts_word = b[i].is_ascii_alphanumeric()
            && (i == 0
                || !(b[i - 1].is_ascii_alphanumeric()
                    || matches!(b[i - 1], b'-' | b'_' | b'.' | b'@')));
        if !starts_word {
            i += 1;
            continue;
        }
        if i >= spaced_until {
            match letter_spaced_at(b, i) {
                Spaced::Name(domain, end) => {
                    push(domain, i..end);
                    i = end;
                    continue;
                }
                // No single character up to `end` starts a name spelled so; each word
                // there is still read as itself below.
                Spaced::Skip(end) => spaced_until = end,
                Spaced::Not => {}
            }
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

/// The fewest characters a name spelled one at a time has (`e v i l . e u`).
const MIN_SPACED: usize = 5;

/// The most characters of a name spelled one at a time read from one start (a longer one
/// is read from a later start, its tail: still a link). Bounds the work at each single
/// character to a constant, so a wall of them is read in linear time.
const MAX_SPACED: usize = 64;

/// What stands at a single character (see [`letter_spaced_at`]).
enum Spaced {
    /// A host name, and where its spelling ends.
    Name(String, usize),
    /// A run of single characters with no dot among them: none of it starts a name spelled
    /// so, up to where the run (as far as it was read) ends.
    Skip(usize),
    /// Nothing here.
    Not,
}

/// A host name spelled one character at a time, each standing alone between spaces, as
/// spam writes it (`e t i a s - f a s t . e u / apply`): the characters run together,
/// a domain with a dot, ending in a top-level domain in common use. Prose has single
/// letters too (`a`, `I`), never five in a row with a dot among them before a top-level
/// domain.
fn letter_spaced_at(b: &[u8], i: usize) -> Spaced {
    let single = |k: usize| {
        b.get(k)
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.'))
            && b.get(k + 1)
                .is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b'-' && *c != b'.')
    };
    if !single(i) {
        return Spaced::Not;
    }
    let mut chars = String::new();
    let mut k = i;
    let mut end = i;
    while chars.len() < MAX_SPACED {
        // The English `dot` standing alone among them is their dot (`h o l d dot c o m`).
        let (c, after) = if single(k) {
            (char::from(b[k]), k + 1)
        } else if let Some((after, true)) = dot_word_at(b, k).filter(|_| !chars.is_empty()) {
            ('.', after)
        } else {
            break;
        };
        chars.push(c);
        end = after;
        let next = skip_spaces(b, after);
        if next == after {
            break;
        }
        k = next;
    }
    if !chars.contains('.') {
        return Spaced::Skip(end);
    }
    let found = (chars.len() >= MIN_SPACED)
        .then(|| domain_at(&chars, 0))
        .flatten();
    let Some((domain, used, _)) = found else {
        return Spaced::Not;
    };
    // The whole run is the name, up to where the domain ends.
    let mut at = i;
    for _ in 0..used {
        at = skip_spaces(b, at);
        at += dot_word_at(b, at)
            .filter(|_| !single(at))
            .map_or(1, |(after, _)| after - at);
    }
    Spaced::Name(domain.to_ascii_lowercase(), at)
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
