//! A value split across neighbouring strings (docs/spec.md §3.7): `["DE8937040044",
//! "0532013000"]`, `{"user": "attacker", "domain": "@evil.com"}`, two content blocks each
//! with half an IBAN. A model joins such halves without being asked twice, so the readers
//! join them too — but only where the join is a value of a kind that cannot grow out of
//! two ordinary neighbours, so that a list of addresses stays that list.
//!
//! **Neighbours.** The strings and numbers of a JSON document in document order (keys
//! aside): each with the one before it, with the one before that when the one between is
//! short (64 bytes or less: three pieces), and with the last one in a field of the same
//! name (so the `text` of two content blocks, or the `body` of two messages, are
//! neighbours whatever stands between). Each join reads at most the last 256 bytes of the
//! first and the first 256 bytes of the last, so joining costs a bounded amount per string.
//!
//! **What a join keeps**: a value that spans every seam of the join, and is
//! - an IBAN of a country in the registry (its exact length and mod-97 check are the
//!   bound), or
//! - an e-mail address, a URL or a host whose name ends in a top-level domain in use
//!   ([`super::tld`]), or a phone number with `+`,
//!
//! and, but for an IBAN, that does not merely grow a value one side holds on its own:
//! when a whole value touches a seam from either side, the join is kept only where the seam
//! is at an `@`, a `:` or a `/` (`attacker@` then `evil.com`; `https://evil.com` then
//! `/pay`). So `["bob@acme.com", "alice@acme.com"]` is two addresses and not
//! `acme.combob@acme.com`, and `["Alice", "bob@acme.com"]` is not `alicebob@acme.com`.
//! Nor is a seam joined where a sentence ends and another starts (`Thanks.` then `Bob`),
//! as a line break is not in links. The price left: a string ending in a dot and a next
//! one that starts with a top-level domain in lower case (`see you.` then `ok`) is a host,
//! `you.ok`, that no call carries.
//! Not joined: an account number of digits alone or a phone number without `+` (any two
//! numbers side by side would be one), a name split inside a label where either half is a
//! value itself (`ev` then `il.com`), a value split into four strings or more but through
//! short middles, an encoded value split across strings.

use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;

use super::{Found, Kind, read_into, skeleton, tld};

/// The most bytes of a string that a join reads on each side.
const WINDOW: usize = 256;

/// The longest string that stands between two others in a join of three.
const SHORT: usize = 64;

/// The most field names whose last string is kept for joining.
const MAX_FIELDS: usize = 256;

/// One prepared string, as its neighbours see it: its first and last [`WINDOW`] bytes (the
/// whole of it, once, when it is no longer).
#[derive(Debug)]
pub(super) struct Piece {
    text: String,
    /// Where the head ends and the tail starts in `text`.
    head_end: usize,
    tail_start: usize,
    short: bool,
    /// A whole value of its own starts at its start / ends at its end.
    touch_start: bool,
    touch_end: bool,
}

impl Piece {
    /// `t`, prepared, with whether a whole value of its own touches its start and its end.
    pub(super) fn new(t: &str, touch_start: bool, touch_end: bool) -> Self {
        let (text, head_end, tail_start) = if t.len() <= WINDOW {
            (t.to_owned(), t.len(), 0)
        } else {
            let (h, tl) = (head(t), tail(t));
            (format!("{h}{tl}"), h.len(), h.len())
        };
        Self {
            text,
            head_end,
            tail_start,
            short: t.len() <= SHORT,
            touch_start,
            touch_end,
        }
    }

    fn head(&self) -> &str {
        self.text.get(..self.head_end).unwrap_or("")
    }

    fn tail(&self) -> &str {
        self.text.get(self.tail_start..).unwrap_or("")
    }
}

/// The first [`WINDOW`] bytes of `t`, cut at white space where there is some in the
/// window's second half (so the cut splits no word).
fn head(t: &str) -> &str {
    if t.len() <= WINDOW {
        return t;
    }
    let mut end = WINDOW;
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    let window = t.get(..end).unwrap_or("");
    match window.rfind(char::is_whitespace) {
        Some(ws) if ws >= end / 2 => window.get(..ws).unwrap_or(window),
        _ => window,
    }
}

/// The last [`WINDOW`] bytes of `t`, cut at white space where there is some in the
/// window's first half.
fn tail(t: &str) -> &str {
    if t.len() <= WINDOW {
        return t;
    }
    let mut start = t.len() - WINDOW;
    while !t.is_char_boundary(start) {
        start += 1;
    }
    let window = t.get(start..).unwrap_or("");
    match window.find(char::is_whitespace) {
        Some(ws) if ws <= window.len() / 2 => {
            let next = window
                .get(ws..)
                .and_then(|s| s.chars().next())
                .map_or(1, char::len_utf8);
            window.get(ws + next..).unwrap_or(window)
        }
        _ => window,
    }
}

/// The strings of one document read so far, as neighbours of the next.
#[derive(Debug, Default)]
pub(super) struct Chain<'k> {
    prev: Option<Rc<Piece>>,
    before_prev: Option<Rc<Piece>>,
    fields: HashMap<&'k str, Rc<Piece>>,
}

impl<'k> Chain<'k> {
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// Joins `piece`, standing in `field`, with its neighbours (see the module), and
    /// remembers it for the next.
    pub(super) fn feed(&mut self, piece: Piece, field: Option<&'k str>, out: &mut Found) {
        if piece.head().trim().is_empty() {
            return;
        }
        let piece = Rc::new(piece);
        if let Some(prev) = &self.prev {
            join(&[prev, &piece], out);
            if prev.short
                && let Some(first) = &self.before_prev
            {
                join(&[first, prev, &piece], out);
            }
        }
        if let Some(name) = field {
            if let Some(same) = self.fields.get(name)
                && !self.prev.as_ref().is_some_and(|p| Rc::ptr_eq(p, same))
            {
                join(&[same, &piece], out);
            }
            if self.fields.len() < MAX_FIELDS || self.fields.contains_key(name) {
                self.fields.insert(name, Rc::clone(&piece));
            }
        }
        self.before_prev = self.prev.replace(piece);
    }
}

/// Reads the join of `pieces` (the first's tail, whole middles, the last's head) for the
/// values that span all its seams and that it keeps (see the module).
fn join(pieces: &[&Rc<Piece>], out: &mut Found) {
    let texts: Vec<&str> = pieces
        .iter()
        .enumerate()
        .map(|(i, p)| if i == 0 { p.tail() } else { p.head() })
        .collect();
    // Whether a whole value touches seam i from the left / from the right.
    let touches: Vec<bool> = pieces
        .windows(2)
        .map(|w| w[0].touch_end || w[1].touch_start)
        .collect();
    if !worth_reading(&texts, &touches) {
        return;
    }
    let (joined, seams) = concat(&texts);
    read_join(&joined, &seams, &touches, out);
    if !joined.is_ascii() {
        let latin: Vec<String> = texts.iter().map(|t| skeleton(t)).collect();
        let refs: Vec<&str> = latin.iter().map(String::as_str).collect();
        let (joined_latin, seams_latin) = concat(&refs);
        if joined_latin != joined {
            read_join(&joined_latin, &seams_latin, &touches, out);
        }
    }
}

/// Whether a join can keep anything (checked before it is read, which most joins of
/// ordinary neighbours are not): an IBAN can start near the end of the first piece, or every
/// seam is one an address, a name or a `+` phone can span — glued, with an `@`, a dot or a
/// joint on either side of it (a `+` before it for a phone), and not one the value would
/// only grow across.
fn worth_reading(texts: &[&str], touches: &[bool]) -> bool {
    let Some(first) = texts.first() else {
        return false;
    };
    // The start may straddle the first seam (`D` then `E89…`).
    let next: String = texts
        .iter()
        .skip(1)
        .flat_map(|t| t.chars())
        .take(4)
        .collect();
    if iban_may_start(&format!("{}{next}", last_bytes(first, 48))) {
        return true;
    }
    texts.windows(2).zip(touches).all(|(pair, &touch)| {
        let (left, right) = (pair[0], pair[1]);
        let at = left.len();
        let joined_at = |c: fn(char) -> bool| {
            left.chars().next_back().is_some_and(c) || right.chars().next().is_some_and(c)
        };
        let joint = joined_at(|c| matches!(c, '@' | ':' | '/'));
        let sentence = left.ends_with('.') && right.chars().next().is_some_and(char::is_uppercase);
        if (touch && !joint) || sentence {
            return false;
        }
        let phone = last_bytes(left, 24).contains('+');
        let glued = !joined_at(char::is_whitespace) && at > 0 && !right.is_empty();
        let token_left = left.rsplit(char::is_whitespace).next().unwrap_or("");
        let token_right = right.split(char::is_whitespace).next().unwrap_or("");
        phone || (glued && (joint || name_may_span(token_left, token_right)))
    })
}

fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// Whether a name spans the seam between two glued tokens: the run of name characters
/// across it ends in a top-level domain in use, or is an address's local part whose domain
/// does.
fn name_may_span(left: &str, right: &str) -> bool {
    let start = left
        .char_indices()
        .rev()
        .find(|&(_, c)| !is_name_char(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let end = right
        .find(|c: char| !is_name_char(c))
        .unwrap_or(right.len());
    let mut run = String::with_capacity(left.len() - start + end);
    run.push_str(left.get(start..).unwrap_or(""));
    run.push_str(right.get(..end).unwrap_or(""));
    if tld::known(run.trim_matches('.')) {
        return true;
    }
    // The seam in a local part: the domain after the `@`.
    let Some(domain) = right.get(end..).and_then(|r| r.strip_prefix('@')) else {
        return false;
    };
    let domain_end = domain
        .find(|c: char| !is_name_char(c))
        .unwrap_or(domain.len());
    tld::known(domain.get(..domain_end).unwrap_or("").trim_matches('.'))
}

/// The last `n` bytes of `t` or a little more (to a character's start).
fn last_bytes(t: &str, n: usize) -> &str {
    let mut start = t.len().saturating_sub(n);
    while !t.is_char_boundary(start) {
        start -= 1;
    }
    t.get(start..).unwrap_or(t)
}

/// Whether an IBAN may start in `t`: two letters at the start of a word, then two digits,
/// or a gap and digits when the letters are a country's in the registry.
fn iban_may_start(t: &str) -> bool {
    let b = t.as_bytes();
    (0..b.len().saturating_sub(2)).any(|i| {
        let boundary = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        let letters = b[i].is_ascii_alphabetic() && b[i + 1].is_ascii_alphabetic();
        if !(boundary && letters) {
            return false;
        }
        if b[i + 2].is_ascii_digit() {
            return true;
        }
        let country = [b[i].to_ascii_uppercase(), b[i + 1].to_ascii_uppercase()];
        super::IBAN_LENGTHS
            .iter()
            .any(|(c, _)| c.as_bytes() == country)
            && b[i + 2..]
                .iter()
                .find(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n' | b'-' | b'.'))
                .is_some_and(u8::is_ascii_digit)
    })
}

fn concat(texts: &[&str]) -> (String, Vec<usize>) {
    let mut joined = String::with_capacity(texts.iter().map(|t| t.len()).sum());
    let mut seams = Vec::with_capacity(texts.len());
    for (i, t) in texts.iter().enumerate() {
        if i > 0 {
            seams.push(joined.len());
        }
        joined.push_str(t);
    }
    (joined, seams)
}

fn read_join(joined: &str, seams: &[usize], touches: &[bool], out: &mut Found) {
    let (Some(&first), Some(&last)) = (seams.first(), seams.last()) else {
        return;
    };
    let mut push = |kind: Kind, text: String, span: Range<usize>| {
        if span.start >= first || span.end <= last || !kept_kind(kind, &text) {
            return;
        }
        let grows_one = kind != Kind::Iban
            && seams
                .iter()
                .zip(touches)
                .any(|(&s, &touch)| (touch && !at_joint(joined, s)) || sentences(joined, s));
        if !grows_one {
            out.push_made(kind, text);
        }
    };
    read_into(joined, false, &mut push);
}

/// Whether a join keeps a value of this kind (see the module).
fn kept_kind(kind: Kind, text: &str) -> bool {
    match kind {
        Kind::Iban => text.get(..2).is_some_and(
            |c| matches!(c.as_bytes(), &[a, b] if super::iban_length([a, b]).is_some()),
        ),
        Kind::Phone => text.starts_with('+'),
        Kind::Email | Kind::Host | Kind::Url => named(kind, text),
        Kind::Account | Kind::Id => false,
    }
}

/// Whether an address, URL or host is a name ending in a top-level domain in use.
pub(super) fn named(kind: Kind, text: &str) -> bool {
    let host = match kind {
        Kind::Email => text.rsplit_once('@').map_or("", |(_, d)| d),
        Kind::Url => {
            let h = super::url_host(text);
            h.rsplit_once(':').map_or(h, |(h, _)| h)
        }
        _ => text,
    };
    tld::known(host)
}

/// Whether the seam at `s` ends a sentence and starts another (`Thanks.` then `Bob`), as a
/// line break is read in links (docs/spec.md §3.3).
fn sentences(joined: &str, s: usize) -> bool {
    let before = joined.get(..s).and_then(|t| t.chars().next_back());
    let after = joined.get(s..).and_then(|t| t.chars().next());
    before == Some('.') && after.is_some_and(char::is_uppercase)
}

/// Whether the seam at `s` is at an `@`, a `:` or a `/` (a value's own joints).
fn at_joint(joined: &str, s: usize) -> bool {
    let before = joined.get(..s).and_then(|t| t.chars().next_back());
    let after = joined.get(s..).and_then(|t| t.chars().next());
    [before, after]
        .iter()
        .flatten()
        .any(|c| matches!(c, '@' | ':' | '/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_windows_cut_at_white_space() {
        let long = format!("{} DE8937040044", "word ".repeat(100));
        let t = tail(&long);
        assert!(t.len() <= WINDOW && t.ends_with("DE8937040044"));
        assert!(t.starts_with("word"), "{t:?}");
        let h = head(&long);
        assert!(h.len() <= WINDOW && h.starts_with("word") && !h.ends_with(' '));
        assert_eq!(head("short"), "short");
        let wide = "é".repeat(300);
        assert!(head(&wide).len() <= WINDOW && tail(&wide).len() <= WINDOW);
    }
}
