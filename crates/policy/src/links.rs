//! The links in free text, as the `links` test finds them (docs/spec.md §3.3 "Typed
//! conditions"). A security tool: the rule errs toward finding a link.
//!
//! **Normalising.** Before looking, the text is read as a person (or a client that renders
//! it) would see it, repeatedly until nothing changes (at most four rounds, so `%252E` is
//! undone too):
//! - invisible characters are dropped (zero-width spaces and joiners, bidirectional marks,
//!   the soft hyphen, variation selectors, tags): `ev\u{200b}il.com` is `evil.com`;
//! - look-alike dots are dots (`。` U+3002, `．` U+FF0E, `｡` U+FF61 — which IDNA maps to a
//!   dot — and `․` U+2024, `﹒` U+FE52; the letters and stops of other scripts drawn as a
//!   full stop on the line, Lisu `ꓸ` U+A4F8 and `꓿` U+A4FF, Vai U+A60E, Syriac U+0701 and
//!   U+0702, Arabic U+06D4, runic U+16EB, stenographic U+2E3C, and the operators `∙` U+2219
//!   and `⋅` U+22C5), and full-width ASCII is ASCII (`ｅｖｉｌ．ｃｏｍ`);
//! - any other mark or symbol outside ASCII (neither letter nor digit, white space, control
//!   or invisible) between a letter or digit (any script) and a registered top-level domain
//!   that ends the name is a dot (`evil·com`, `evil・com`, `evil•com`), and so are the digits and
//!   letters drawn as one there (U+0660, U+06F0, U+1427, U+10A50, U+A78F, U+02D1): a list
//!   of dots is lost to the attacker's next pick;
//! - `%XX` that spells a printable ASCII character is that character (`evil%2Ecom`,
//!   `https%3A%2F%2F…`), and so is a character outside ASCII written as its UTF-8 bytes
//!   (`%C2%B7`), HTML references `&#46;`, `&#x2e;`, `&period;`, `&sol;`, `&colon;`, and the
//!   escapes a YAML or JSON dump writes, `\uXXXX` (a surrogate pair as one), `\UXXXXXXXX`,
//!   `\xXX` — unless the character would end a word (white space, a control, or the
//!   punctuation below that cuts words): a decoder never cuts a link the text as sent holds
//!   whole (`www.x.com/%3CKEY` is one link, with its key);
//! - the defanged dots `[.]`, `(.)`, `{.}`, `[dot]`, `(dot)` and the Markdown escape `\.`
//!   are dots;
//! - a line break is white space, except that it is dropped where a line ends right after
//!   a letter or digit and the next starts with a dot (`evil⏎.com`), or a line ends in a
//!   dot and the next starts with a lower-case letter or digit (`evil.⏎com`), or a line ends
//!   in a name in capitals and a dot and the next is a registered top-level domain in
//!   capitals, alone or before a path (`CARHIRE-DEPOSIT.⏎COM/HOLD`). (A line that ends in a
//!   dot and a next one that starts in upper case is otherwise two sentences: `Thanks.⏎Bob`,
//!   `PLEASE READ.⏎IT IS`.)
//!
//! **Finding.** The text is cut into words at white space and at ``<>"'`()[]{}|^,*!``, and
//! at `;` before white space or the end (inside a word it is a link's own: a path
//! parameter, `/;jsessionid=…`, or user info, `user:pw;@host`)
//! (so a link inside Markdown `[x](…)` or an HTML attribute is a word of its own) — except
//! that a `(` inside a link's path (a word that already holds `://…/`, or a dotted name and
//! a `/`) and the `)` that closes it are the path's own, as GitHub reads autolinks
//! (`/(S(KEY))/`, `/wiki/Foo_(bar)`). In a word, a link is:
//! - anything with `://`, whatever the scheme (`HTTPS://`, `ftp://`, `hxxp://`, none): from
//!   its scheme to the end of the word; a `://` inside it (a redirect's target) is a link
//!   of its own;
//! - otherwise a run of letters (any script), digits, `-`, `_` and dots, not followed by
//!   `@` (then it is an address's local part), that has two labels or more and whose last
//!   label is two letters or more (any script: `evil.com`, `x.co`, `evil.рф`, but also
//!   `notes.txt` and `main.rs` — every such name could be a host), or an `xn--` label; or
//!   that starts with `www.`; or that is four numbers (`10.0.0.1`). What follows it up to
//!   the end of the word (`/path`, `:8080`) belongs to it. An address `bob@evil.com` thus
//!   carries the link `evil.com`.
//!
//! Each link's host is read by [`Url::parse`] (scheme http, https or none; no user info),
//! so `links = { host = [...] }` checks every host; a link whose host cannot be read
//! (another scheme, user info, a look-alike letter) is to no allowed host.
//!
//! Not found here: a name spelled in words (`evil dot com`) or split by spaces (`evil .
//! com`) — no client renders it, but a person types it, so the `links` test counts it
//! apart ([`crate::values::spelled_names`]); a name broken across a line right after a dot
//! with the next line in upper case; a bare address in a single number (`2130706433`)
//! without a scheme; a single-label name without a scheme (`localhost`).

use std::borrow::Cow;

use crate::url::{Url, is_invisible};

/// One link found in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link<'t> {
    /// The link as found, after normalising.
    pub text: &'t str,
    /// It read as a URL, and this is it; `None` when its host cannot be read.
    pub url: Option<Url<'t>>,
}

/// The most rounds of normalising: enough for double percent-encoding and a reference
/// inside it.
const ROUNDS: usize = 4;

/// Calls `f` with every link in `text`, in order, until `f` returns `false`. Returns
/// whether it went through the whole text. Allocates only when the text holds something
/// to normalise (anything outside ASCII, `%`, `&`, `\`, a bracket or a line break).
pub fn for_each_link(text: &str, f: impl FnMut(Link<'_>) -> bool) -> bool {
    let text = normalize(text);
    scan(&text, f)
}

/// [`for_each_link`] on text that is already [`normalize`]d: every link's `text` is a slice
/// of `text` itself (so a caller can tell what stands before it).
pub fn scan(text: &str, mut f: impl FnMut(Link<'_>) -> bool) -> bool {
    let bytes = text.as_bytes();
    let (mut start, mut at) = (0, 0);
    // Parentheses open inside a link's path (`/(S(KEY))/`, `/wiki/Foo_(bar)`), and whether
    // the word is known to be in a link's path: once it is, it stays so to the word's end,
    // so a word of many `(` is looked over once, not once for each.
    let mut depth = 0usize;
    let mut in_path = false;
    while let Some(&b) = bytes.get(at) {
        let (sep, len) =
            if b == b'(' && (in_path || in_link_path(text.get(start..at).unwrap_or(""))) {
                // Inside a link's path a `(` is the path's own, as GitHub's autolinks read it.
                in_path = true;
                depth += 1;
                (false, 1)
            } else if b == b')' && depth > 0 {
                depth -= 1;
                (false, 1)
            } else if b == b';' {
                // Inside a word `;` is a link's own (a path parameter, `/;jsessionid=…`, or user
                // info, `user:pw;@host`): it ends a word only before white space or the end.
                let next = text.get(at + 1..).and_then(|t| t.chars().next());
                (next.is_none_or(is_separator), 1)
            } else if b.is_ascii() {
                (ASCII_SEPARATOR[usize::from(b)], 1)
            } else {
                let c = text.get(at..).and_then(|t| t.chars().next()).unwrap_or(' ');
                (is_separator(c), c.len_utf8())
            };
        if sep {
            if at > start && !links_in_word(text.get(start..at).unwrap_or(""), &mut f) {
                return false;
            }
            start = at + len;
            depth = 0;
            in_path = false;
        }
        at += len;
    }
    at <= start || links_in_word(text.get(start..).unwrap_or(""), &mut f)
}

/// Whether a word, read up to here, is a link already into its path: a scheme's `://`, or
/// a name with a dot followed by a `/` (so a `(` there is the path's own, while one before
/// a link, `[x](https://…)`, still ends the word before it).
fn in_link_path(word: &str) -> bool {
    if let Some(p) = word.find("://") {
        return word.get(p + 3..).is_some_and(|rest| rest.contains('/'));
    }
    word.find('/')
        .is_some_and(|slash| word.get(..slash).is_some_and(|h| h.contains('.')))
}

/// [`is_separator`] for every ASCII byte, looked up rather than computed: prose is mostly
/// ASCII, and every byte of it is asked.
const ASCII_SEPARATOR: [bool; 128] = {
    let mut table = [false; 128];
    let mut b = 0;
    while b < 128 {
        // For ASCII, white space and control characters are at or below space, and DEL.
        table[b] = b <= 0x20 || b == 0x7f || is_punctuation_separator(b as u8);
        b += 1;
    }
    table
};

/// Every link in `text`, owned (for `explain` and tests).
pub fn links(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for_each_link(text, |l| {
        out.push((l.text.to_owned(), l.url.map(|u| u.host.to_string())));
        true
    });
    out
}

fn is_separator(c: char) -> bool {
    c.is_whitespace() || c.is_control() || (c.is_ascii() && is_punctuation_separator(c as u8))
}

/// The ASCII punctuation that ends a word (see the module's docs).
const fn is_punctuation_separator(b: u8) -> bool {
    matches!(
        b,
        b'<' | b'>'
            | b'"'
            | b'\''
            | b'`'
            | b'('
            | b')'
            | b'['
            | b']'
            | b'{'
            | b'}'
            | b'|'
            | b'^'
            | b','
            | b';'
            | b'*'
            | b'!'
    )
}

/// `text` as it reads (see the module's docs), borrowed when nothing changes.
pub fn normalize(text: &str) -> Cow<'_, str> {
    let needs = |t: &str| t.bytes().any(needs_work);
    if !needs(text) {
        return Cow::Borrowed(text);
    }
    let mut current = Cow::Borrowed(text);
    for _ in 0..ROUNDS {
        let next = normalize_once(&current);
        if next == *current {
            break;
        }
        current = Cow::Owned(next);
        if !needs(&current) {
            break;
        }
    }
    current
}

/// Whether normalising may change this byte (or the character it starts).
fn needs_work(b: u8) -> bool {
    !b.is_ascii() || matches!(b, b'%' | b'&' | b'\\' | b'[' | b'(' | b'{' | b'\n' | b'\r')
}

/// HTML character references that spell URL punctuation by name.
const NAMED: [(&str, char); 5] = [
    ("&period;", '.'),
    ("&sol;", '/'),
    ("&colon;", ':'),
    ("&commat;", '@'),
    ("&bsol;", '\\'),
];

/// Defanged dots.
const DEFANGED: [&str; 5] = ["[.]", "(.)", "{.}", "[dot]", "(dot)"];

fn normalize_once(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        // Copy what needs no work at once: ASCII other than the characters below.
        let plain = rest.bytes().position(needs_work).unwrap_or(rest.len());
        out.push_str(rest.get(..plain).unwrap_or(""));
        rest = rest.get(plain..).unwrap_or("");
        let Some(c) = rest.chars().next() else {
            break;
        };
        let len = c.len_utf8();
        let after = rest.get(len..).unwrap_or("");
        match c {
            _ if is_invisible(c) => {}
            '\u{3002}' | '\u{FF0E}' | '\u{FF61}' | '\u{2024}' | '\u{FE52}' => out.push('.'),
            // Letters and stops of other scripts drawn as a full stop on the line (Lisu,
            // Vai, Syriac, Arabic, runic, stenographic) and the dot operators: read as one.
            '\u{A4F8}' | '\u{A4FF}' | '\u{A60E}' | '\u{0701}' | '\u{0702}' | '\u{06D4}'
            | '\u{16EB}' | '\u{2E3C}' | '\u{2219}' | '\u{22C5}' => out.push('.'),
            // Letters and digits drawn as a dot (Unicode's confusables for `.` and `·`),
            // which the rule below cannot tell from a letter: Arabic-Indic and extended
            // Arabic-Indic zero, the Canadian syllabics middle dot, Kharoshthi's dot, the
            // Latin letter sinological dot, the modifier half triangular colon.
            '\u{0660}' | '\u{06F0}' | '\u{1427}' | '\u{10A50}' | '\u{A78F}' | '\u{02D1}'
                if prev_is_label(&out) && tld_follows(after) =>
            {
                out.push('.');
            }
            '\u{FF01}'..='\u{FF5E}' => {
                out.push(char::from_u32(u32::from(c) - 0xFEE0).unwrap_or(c));
            }
            '%' => {
                if let Some(d) = hex_pair(after)
                    .filter(|d| (0x21..=0x7E).contains(d) && decodes_to(char::from(*d)))
                {
                    out.push(char::from(d));
                    rest = after.get(2..).unwrap_or("");
                    continue;
                }
                // A character outside ASCII, its UTF-8 bytes percent-encoded (`%C2%B7`).
                if let Some((ch, used)) = percent_utf8(rest) {
                    out.push(ch);
                    rest = rest.get(used..).unwrap_or("");
                    continue;
                }
                out.push('%');
            }
            '&' => {
                if let Some((ch, used)) = reference(rest) {
                    out.push(ch);
                    rest = rest.get(used..).unwrap_or("");
                    continue;
                }
                out.push('&');
            }
            '\\' if after.starts_with('.') => {}
            '\\' => {
                // An escape a YAML or JSON dump wrote (`\uA4F8`, `\U0001F600`, `\xE9`): the
                // character a reader (a model above all) decodes it to.
                if let Some((ch, used)) = escape(rest) {
                    out.push(ch);
                    rest = rest.get(used..).unwrap_or("");
                    continue;
                }
                out.push('\\');
            }
            '[' | '(' | '{' => {
                if let Some(d) = DEFANGED.iter().find(|d| {
                    rest.len() >= d.len()
                        && rest.as_bytes()[..d.len()].eq_ignore_ascii_case(d.as_bytes())
                }) {
                    out.push('.');
                    rest = rest.get(d.len()..).unwrap_or("");
                    continue;
                }
                out.push(c);
            }
            '\r' | '\n' => {
                // The line break and what it joins: `\r\n` is one.
                let brk = if c == '\r' && after.starts_with('\n') {
                    2
                } else {
                    1
                };
                let next_line = rest.get(brk..).unwrap_or("");
                let prev = out.chars().next_back();
                let next = next_line.chars().next();
                let joins = match (prev, next) {
                    (Some(p), Some('.')) => p.is_alphanumeric(),
                    (Some('.'), Some(n)) => {
                        n.is_lowercase() || n.is_ascii_digit() || shouted_tld(&out, next_line)
                    }
                    _ => false,
                };
                if joins {
                    rest = next_line;
                    continue;
                }
                out.push(c);
            }
            // Any other mark or symbol outside ASCII between a name and a registered
            // top-level domain (`evil·com`, `evil・com`, `evil•com`) is drawn as a dot.
            _ if may_be_dot(c) && prev_is_label(&out) && tld_follows(after) => out.push('.'),
            _ => out.push(c),
        }
        rest = after;
    }
    out
}

/// `text` with each combining mark that stands between a label's letter or digit and a
/// registered top-level domain made a dot, before NFKC composes it into the letter before
/// it (`perks` + U+0323 + `com` would compose to `perkṣcom`, one word with no dot). What
/// [`normalize`] does with any other mark, for text about to be composed; borrowed when
/// there is none.
pub fn dots_before_composing(text: &str) -> Cow<'_, str> {
    use unicode_normalization::char::is_combining_mark;
    if text.is_ascii() || !text.chars().any(is_combining_mark) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        let after = text.get(at + c.len_utf8()..).unwrap_or("");
        if is_combining_mark(c) && prev_is_label(&out) && tld_follows(after) {
            out.push('.');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `c` may be drawn as a dot between a name and its top-level domain: outside
/// ASCII, neither a letter nor a digit, nor white space, a control or an invisible
/// character (which are dropped or cut words) — a mark or a symbol.
fn may_be_dot(c: char) -> bool {
    !c.is_ascii()
        && !c.is_alphanumeric()
        && !c.is_whitespace()
        && !c.is_control()
        && !is_invisible(c)
}

/// Whether what was read so far ends in a label's letter or digit, of any script (a name
/// may be internationalised: `bluesparrow-café·com` is `bluesparrow-café.com`).
fn prev_is_label(out: &str) -> bool {
    out.chars().next_back().is_some_and(char::is_alphanumeric)
}

/// Whether a line that ends in a dot after a name in capitals (`CARHIRE-DEPOSIT.`) and the
/// next, which starts with a registered top-level domain in capitals that ends there or
/// runs into a path (`COM/HOLD`, `COM`), are one link wrapped at its dot — or, after an
/// address's domain (`PAYROLL@BLUESPARROW-LOHN.`), whatever follows that top-level domain.
/// A sentence's next line goes on in words (`PLEASE READ.⏎IT IS`), and is left alone.
fn shouted_tld(out: &str, next_line: &str) -> bool {
    let before = out.strip_suffix('.').unwrap_or("");
    let label = before
        .bytes()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == b'-')
        .collect::<Vec<u8>>();
    // The word the dot ends, back to white space: an address's domain when it holds `@`.
    let word = before
        .rsplit(|c: char| c.is_whitespace())
        .next()
        .unwrap_or("");
    let b = next_line.as_bytes();
    let n = b.iter().take_while(|c| c.is_ascii_uppercase()).count();
    let ends = if word.contains('@') {
        // `PAYROLL@BLUESPARROW-LOHN.⏎CH BEFORE FRIDAY`: an address's domain needs its
        // top-level domain, whatever follows it.
        b.get(n)
            .is_none_or(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_')))
    } else {
        b.get(n)
            .is_none_or(|c| matches!(c, b'/' | b':' | b'?' | b'#' | b'\r' | b'\n'))
    };
    label.iter().any(u8::is_ascii_uppercase)
        && !label.iter().any(u8::is_ascii_lowercase)
        && (2..=24).contains(&n)
        && ends
        && crate::values::registered_tld(&next_line[..n].to_ascii_lowercase())
}

/// Whether `after` starts with a registered top-level domain (ASCII letters, any case) that
/// ends the name: followed by the end, or by anything but a letter, digit, `-` or `_`.
fn tld_follows(after: &str) -> bool {
    let b = after.as_bytes();
    let n = b.iter().take_while(|c| c.is_ascii_alphabetic()).count();
    if !(2..=24).contains(&n) {
        return false;
    }
    let ends = after
        .get(n..)
        .and_then(|t| t.chars().next())
        .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
    ends && crate::values::registered_tld(&after[..n].to_ascii_lowercase())
}

/// An escape at the start of `s` (which starts with `\\`): `\uXXXX` (a surrogate pair as
/// two), `\UXXXXXXXX` or `\xXX`, decoding to a character that is not a control; the
/// character and the escape's length.
fn escape(s: &str) -> Option<(char, usize)> {
    let b = s.as_bytes();
    let hex = |from: usize, n: usize| -> Option<u32> {
        let digits = s.get(from..from + n)?;
        if !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
            return None;
        }
        u32::from_str_radix(digits, 16).ok()
    };
    let (value, used) = match b.get(1)? {
        b'u' => {
            let hi = hex(2, 4)?;
            if (0xD800..0xDC00).contains(&hi) {
                let lo = s
                    .get(6..8)
                    .filter(|p| *p == "\\u")
                    .and_then(|_| hex(8, 4))
                    .filter(|lo| (0xDC00..0xE000).contains(lo))?;
                (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), 12)
            } else {
                (hi, 6)
            }
        }
        b'U' => (hex(2, 8)?, 10),
        b'x' => (hex(2, 2)?, 4),
        _ => return None,
    };
    let ch = char::from_u32(value).filter(|&c| decodes_to(c))?;
    Some((ch, used))
}

/// Whether a decoder (`%XX`, [`escape`], [`percent_utf8`], [`reference`]) may write `c`:
/// never a character that ends a word — white space, a control, or the punctuation that
/// cuts words (`<`, `"`, `(`, `;`, …) — which would cut the word a link is read from where
/// the text as sent has none (`www.x.com/%C2%A0KEY`, `www.x.com/%3CKEY`, `x.com/&#32;KEY`
/// are each one word to the client that sends them).
fn decodes_to(c: char) -> bool {
    !is_separator(c)
}

/// A character outside ASCII at the start of `s`, written as its UTF-8 bytes each
/// percent-encoded (`%C2%B7`); the character and the length written.
fn percent_utf8(s: &str) -> Option<(char, usize)> {
    let first = hex_pair(s.get(1..)?)?;
    let len = match first {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return None,
    };
    let mut bytes = [0u8; 4];
    for (i, byte) in bytes.iter_mut().enumerate().take(len) {
        let at = i * 3;
        if s.as_bytes().get(at) != Some(&b'%') {
            return None;
        }
        *byte = hex_pair(s.get(at + 1..)?)?;
    }
    let ch = std::str::from_utf8(bytes.get(..len)?)
        .ok()?
        .chars()
        .next()?;
    decodes_to(ch).then_some((ch, len * 3))
}

fn hex_pair(s: &str) -> Option<u8> {
    let b = s.as_bytes();
    let digit = |x: u8| char::from(x).to_digit(16);
    let hi = digit(*b.first()?)?;
    let lo = digit(*b.get(1)?)?;
    u8::try_from(hi * 16 + lo).ok()
}

/// An HTML character reference at the start of `s`: the character and its length.
fn reference(s: &str) -> Option<(char, usize)> {
    for (name, ch) in NAMED {
        if s.len() >= name.len() && s.as_bytes()[..name.len()].eq_ignore_ascii_case(name.as_bytes())
        {
            return Some((ch, name.len()));
        }
    }
    let body = s.strip_prefix("&#")?;
    let (digits, radix, skip) = match body.strip_prefix(['x', 'X']) {
        Some(hex) => (hex, 16, 3),
        None => (body, 10, 2),
    };
    let n = digits
        .bytes()
        .take_while(|b| char::from(*b).is_digit(radix))
        .count();
    if n == 0 || n > 7 {
        return None;
    }
    let value = u32::from_str_radix(digits.get(..n)?, radix).ok()?;
    let ch = char::from_u32(value).filter(|&c| decodes_to(c))?;
    let used = skip + n + usize::from(digits.as_bytes().get(n) == Some(&b';'));
    Some((ch, used))
}

/// Calls `f` with each link in one word; `false` once `f` says stop.
fn links_in_word(word: &str, f: &mut impl FnMut(Link<'_>) -> bool) -> bool {
    // Most words of prose hold neither a dot nor a colon, and so no link.
    if !word.bytes().any(|b| b == b'.' || b == b':') {
        return true;
    }
    let first = scheme_link_at(word, 0);
    // Bare runs are looked for only before the first scheme link.
    let head_end = first.map_or(word.len(), |(start, _)| start);
    if !bare_links(word.get(..head_end).unwrap_or(""), f) {
        return false;
    }
    let mut cur = first;
    while let Some((start, resume)) = cur {
        let next = scheme_link_at(word, resume);
        let end = next.map_or(word.len(), |(s, _)| s);
        let text = word.get(start..end).unwrap_or("");
        if !f(Link {
            text,
            url: Url::parse(text).ok(),
        }) {
            return false;
        }
        cur = next;
    }
    true
}

/// The next `://` in `word` at or after `from`: where its link starts (its scheme, scanned
/// back over scheme characters, but not before `from`) and where to look for the next.
fn scheme_link_at(word: &str, from: usize) -> Option<(usize, usize)> {
    let p = from + word.get(from..)?.find("://")?;
    let scheme = word
        .get(from..p)?
        .bytes()
        .rev()
        .take_while(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        .count();
    Some((p - scheme, p + 3))
}

fn is_label_char(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_'
}

/// The bare links (no `://`) in part of a word.
fn bare_links(part: &str, f: &mut impl FnMut(Link<'_>) -> bool) -> bool {
    // Every bare link has a dot.
    if !part.contains('.') {
        return true;
    }
    let mut rest = part;
    while let Some(start) = rest.find(|c: char| is_label_char(c) || c == '.') {
        let tail = rest.get(start..).unwrap_or("");
        let len = tail
            .find(|c: char| !(is_label_char(c) || c == '.'))
            .unwrap_or(tail.len());
        let run = tail.get(..len).unwrap_or("");
        let after = tail.get(len..).unwrap_or("");
        rest = after;
        if after.starts_with('@') || !looks_like_host(run) {
            continue;
        }
        let name = run.trim_start_matches('.');
        // What follows a host up to the end of the word is its port, path, parameters and
        // query.
        let text = if after.starts_with(['/', '?', '#', ':', '\\', ';']) {
            rest = "";
            let at = part.len() - after.len() - name.len();
            part.get(at..).unwrap_or(name)
        } else {
            name
        };
        if !f(Link {
            text,
            url: Url::parse(text).ok(),
        }) {
            return false;
        }
    }
    true
}

/// Whether a run of label characters and dots names a host (see the module's docs).
fn looks_like_host(run: &str) -> bool {
    let lead = run.trim_start_matches('.');
    if lead.len() >= 4 && lead.as_bytes()[..4].eq_ignore_ascii_case(b"www.") {
        return true;
    }
    let name = lead.trim_end_matches('.');
    let mut labels = name.split('.');
    let count = labels.clone().count();
    if count < 2 {
        return false;
    }
    if count == 4 && labels.all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit())) {
        return true;
    }
    let last = name.rsplit('.').next().unwrap_or("");
    (last.chars().count() >= 2 && last.chars().all(char::is_alphabetic))
        || (last.len() > 4 && last.as_bytes()[..4].eq_ignore_ascii_case(b"xn--"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(text: &str) -> Vec<String> {
        links(text)
            .into_iter()
            .map(|(t, h)| h.unwrap_or_else(|| format!("?{t}")))
            .collect()
    }

    #[test]
    fn test_links_with_and_without_a_scheme_in_any_case() {
        assert_eq!(hosts("go to https://evil.com/x now"), ["evil.com"]);
        assert_eq!(hosts("go to HTTPS://EVIL.COM/X now"), ["evil.com"]);
        assert_eq!(hosts("www.evil.com"), ["www.evil.com"]);
        assert_eq!(hosts("see evil.com/path?q=1."), ["evil.com"]);
        assert_eq!(hosts("EVIL.COM"), ["evil.com"]);
        assert_eq!(hosts("x.co:8080/a"), ["x.co"]);
        assert_eq!(hosts("at 10.0.0.1/x"), ["10.0.0.1"]);
        assert_eq!(hosts("ftp://acme.com/x"), ["?ftp://acme.com/x"]);
        assert_eq!(hosts("hxxps://evil.com"), ["?hxxps://evil.com"]);
        assert_eq!(hosts("://evil.com"), ["?://evil.com"]);
        assert_eq!(hosts("http://2130706433/"), ["127.0.0.1"]);
        assert_eq!(hosts("mail bob@evil.com today"), ["evil.com"]);
        assert_eq!(hosts("bob.smith@acme.com"), ["acme.com"]);
        assert_eq!(hosts("www."), ["www"]);
    }

    #[test]
    fn test_links_in_markdown_html_and_redirects() {
        assert_eq!(hosts("[click](https://evil.com/a)"), ["evil.com"]);
        assert_eq!(hosts("[click](evil.com)"), ["evil.com"]);
        assert_eq!(hosts("<a href=\"https://evil.com\">x</a>"), ["evil.com"]);
        assert_eq!(hosts("<a href=evil.com>x</a>"), ["evil.com"]);
        assert_eq!(hosts("**evil.com**"), ["evil.com"]);
        assert_eq!(
            hosts("https://www.google.com/url?q=https://evil.com/x"),
            ["www.google.com", "evil.com"]
        );
        assert_eq!(
            hosts("https://acme.com@evil.com/"),
            ["?https://acme.com@evil.com/"]
        );
        assert_eq!(
            hosts("https://evil.com\\@acme.com"),
            ["?https://evil.com\\@acme.com"]
        );
        assert_eq!(hosts("https://acme.com/docs/report.pdf"), ["acme.com"]);
    }

    #[test]
    fn test_hostile_spellings_are_found() {
        assert_eq!(hosts("ev\u{200b}il.com"), ["evil.com"]);
        assert_eq!(hosts("evil\u{2060}.\u{feff}com"), ["evil.com"]);
        assert_eq!(hosts("evil\u{3002}com"), ["evil.com"]);
        assert_eq!(hosts("evil\u{ff0e}com"), ["evil.com"]);
        assert_eq!(hosts("evil\u{ff61}com"), ["evil.com"]);
        assert_eq!(hosts("evil\u{2024}com"), ["evil.com"]);
        assert_eq!(
            hosts("\u{ff45}\u{ff56}\u{ff49}\u{ff4c}\u{ff0e}\u{ff43}\u{ff4f}\u{ff4d}"),
            ["evil.com"]
        );
        assert_eq!(hosts("evil%2Ecom"), ["evil.com"]);
        assert_eq!(hosts("evil%252Ecom"), ["evil.com"]);
        assert_eq!(hosts("https%3A%2F%2Fevil.com%2Fx"), ["evil.com"]);
        assert_eq!(hosts("evil&#46;com"), ["evil.com"]);
        assert_eq!(hosts("evil&#x2E;com"), ["evil.com"]);
        assert_eq!(hosts("evil&period;com"), ["evil.com"]);
        assert_eq!(hosts("evil[.]com"), ["evil.com"]);
        assert_eq!(hosts("evil(DOT)com"), ["evil.com"]);
        assert_eq!(hosts("evil\\.com"), ["evil.com"]);
        assert_eq!(hosts("https://evil.\ncom/x"), ["evil.com"]);
        assert_eq!(hosts("https://ev\nil.com"), ["ev", "il.com"]);
        assert_eq!(hosts("evil.\r\ncom"), ["evil.com"]);
        assert_eq!(hosts("evil\n.com"), ["evil.com"]);
        // Look-alike letters are found, and their host is not a name.
        assert_eq!(hosts("\u{430}cme.com"), ["?\u{430}cme.com"]);
        assert_eq!(hosts("evil.\u{440}\u{444}"), ["?evil.\u{440}\u{444}"]);
        assert_eq!(
            hosts("xn--80ak6aa92e.xn--p1ai"),
            ["xn--80ak6aa92e.xn--p1ai"]
        );
    }

    #[test]
    fn test_prose_without_links() {
        for text in [
            "",
            "Hello Bob, the meeting is at 3.30 tomorrow.",
            "Thanks.\nBob",
            "Thanks.\r\nBob",
            "e.g. this, i.e. that, U.S. only",
            "version 1.2.3 and 3.14",
            "a...b",
            "evil dot com",
            "evil . com",
            "localhost",
        ] {
            assert_eq!(hosts(text), Vec::<String>::new(), "{text:?}");
        }
        // The price of erring toward finding: a file name reads as a host.
        assert_eq!(hosts("see notes.txt"), ["notes.txt"]);
    }

    #[test]
    fn test_normalize_borrows_plain_text() {
        assert!(matches!(normalize("plain text evil.com"), Cow::Borrowed(_)));
        assert!(matches!(normalize("evil%2ecom"), Cow::Owned(_)));
        assert_eq!(normalize("100%"), "100%");
        assert_eq!(normalize("a & b"), "a & b");
        assert_eq!(normalize("&#"), "&#");
        assert_eq!(normalize("&#xZZ;"), "&#xZZ;");
        assert_eq!(normalize("%e9"), "%e9");
    }

    #[test]
    fn test_stop_early() {
        let mut seen = 0;
        let done = for_each_link("a.com b.com c.com", |_| {
            seen += 1;
            seen < 2
        });
        assert!(!done);
        assert_eq!(seen, 2);
    }
}
