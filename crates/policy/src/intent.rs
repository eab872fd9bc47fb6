//! The person's own words (docs/spec.md §3.10 "Intent"): what a prompt the person typed
//! makes trusted for their conversation, and the sources it names.
//!
//! [`read_prompt`] reads a prompt into
//! - its **values**: every identifying value [`crate::values::in_answer`] reads in it (the
//!   same canonical forms a `from` test looks up), and the values a call carries whole that
//!   no identifying reader takes — **amounts** (`1,200.50 EUR` is `1200.5`, `1200.50`),
//!   **dates** (`5 March 2026`, `2026/03/05`, `05.03.2026` are `2026-03-05`), **quoted
//!   text** (`"Rent for March"`, `“…”`, `‘…’`, `«…»`, `` `…` ``) and **names** (two to four
//!   capitalised words in a row: `Dora Lee`), each an id as [`crate::values::in_argument`]
//!   reads a string or number that carries nothing else;
//! - its **sources** ([`Source`]): each host or URL it names (`the page at dora.example`)
//!   and each file (`notes.txt`, `./invoices/march.pdf`). A call that read a source the
//!   person named vouches, through the gate, for the values its answer showed.
//!
//! Pure: no I/O, linear in the prompt's length, bounded in what it returns
//! ([`MAX_PROMPT_VALUES`], [`MAX_PROMPT_SOURCES`]; past either the prompt is refused whole
//! by the gate).

use std::collections::HashSet;

use crate::values::{Found, Ident, Kind, MAX_ID_CHARS, canonical_id, in_answer};

/// The longest prompt the gate takes (bytes). A longer one adds nothing, and says so.
pub const MAX_PROMPT_BYTES: usize = proto::control::MAX_INTENT_TEXT;

/// The most values one prompt may add.
pub const MAX_PROMPT_VALUES: usize = 2_000;

/// The most sources one prompt may name.
pub const MAX_PROMPT_SOURCES: usize = 64;

/// A source a prompt names: a host (every URL on it), or a file by the path the person
/// wrote (its components, matched against the end of the path a call read).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// A canonical host ([`crate::values::canonical_host`]).
    Host(String),
    /// A path's components (`invoices/march.pdf`), no `.`, `..` or empty one; `absolute`
    /// when the person wrote it from `/` (then it must be the whole path read).
    File { path: String, absolute: bool },
}

impl Source {
    /// How it is stored: `host:dora.example`, `file:invoices/march.pdf`,
    /// `file:/data/march.pdf`.
    pub fn key(&self) -> String {
        match self {
            Source::Host(h) => format!("host:{h}"),
            Source::File { path, absolute } => {
                format!("file:{}{path}", if *absolute { "/" } else { "" })
            }
        }
    }

    /// The source stored as `key`.
    pub fn from_key(key: &str) -> Option<Source> {
        if let Some(h) = key.strip_prefix("host:") {
            return Some(Source::Host(h.to_owned()));
        }
        let p = key.strip_prefix("file:")?;
        Some(match p.strip_prefix('/') {
            Some(rest) => Source::File {
                path: rest.to_owned(),
                absolute: true,
            },
            None => Source::File {
                path: p.to_owned(),
                absolute: false,
            },
        })
    }

    /// How a sentence names it: `the page at dora.example`, `the file notes.txt`.
    pub fn describe(&self) -> String {
        match self {
            Source::Host(h) => format!("the pages at {h}"),
            Source::File { path, absolute } => {
                format!("the file {}{path}", if *absolute { "/" } else { "" })
            }
        }
    }

    /// Whether this source, as the person named it, covers `read` (a source a call read:
    /// [`Source::Host`] by equality; a file when the person's path is the read path's last
    /// components, or the whole of it when they wrote it from `/`).
    pub fn covers(&self, read: &Source) -> bool {
        match (self, read) {
            (Source::Host(a), Source::Host(b)) => a == b,
            (
                Source::File { path, absolute },
                Source::File {
                    path: read_path, ..
                },
            ) => {
                if *absolute {
                    return path == read_path;
                }
                read_path == path
                    || read_path
                        .strip_suffix(path.as_str())
                        .is_some_and(|head| head.ends_with('/'))
            }
            _ => false,
        }
    }

    /// The file source a call that reads `path` (as the box sees it, absolute or relative
    /// to `/work`) reads: its normal components; `None` for a path with `..`.
    pub fn of_read_path(path: &str) -> Option<Source> {
        let absolute = path.starts_with('/');
        let parts = components(path)?;
        if parts.is_empty() {
            return None;
        }
        let joined = parts.join("/");
        Some(Source::File {
            path: if absolute {
                joined
            } else {
                format!("work/{joined}")
            },
            absolute: true,
        })
    }
}

/// A path's normal components; `None` when one is `..`.
fn components(path: &str) -> Option<Vec<&str>> {
    let mut out = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => return None,
            c => out.push(c),
        }
    }
    Some(out)
}

/// What one prompt adds.
#[derive(Debug, Clone, Default)]
pub struct Prompt {
    pub values: Found,
    pub sources: Vec<Source>,
}

/// Reads a prompt the person typed (see the module's documentation).
pub fn read_prompt(text: &str) -> Prompt {
    let mut values = in_answer(text);
    let mut sources: Vec<Source> = Vec::new();
    let mut named: HashSet<Source> = HashSet::new();
    let emails: Vec<String> = values
        .values()
        .iter()
        .filter(|v| v.kind == Kind::Email)
        .filter_map(|v| v.text.rsplit_once('@').map(|(_, d)| d.to_owned()))
        .collect();
    for v in values.values() {
        let host = match v.kind {
            Kind::Host if !emails.contains(&v.text) => v.text.clone(),
            _ => continue,
        };
        let s = Source::Host(host);
        if named.insert(s.clone()) {
            sources.push(s);
        }
    }
    for f in files(text) {
        if named.insert(f.clone()) {
            sources.push(f);
        }
    }
    let mut extra = Vec::new();
    amounts(text, &mut extra);
    dates(text, &mut extra);
    quoted(text, &mut extra);
    names(text, &mut extra);
    for e in extra {
        if let Some(c) = canonical_id(&e) {
            values.push_id(c);
        }
    }
    Prompt { values, sources }
}

/// The words of `text`, split at white space and at the brackets and quotes around them.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '"' | '\''
                    | '`'
                    | '('
                    | ')'
                    | '['
                    | ']'
                    | '{'
                    | '}'
                    | '<'
                    | '>'
                    | ','
                    | ';'
                    | '“'
                    | '”'
                    | '‘'
                    | '’'
                    | '«'
                    | '»'
            )
    })
    .map(|w| w.trim_end_matches(['.', ':', '!', '?']))
    .filter(|w| !w.is_empty())
}

/// The files a prompt names: a word with a `/` between two names (`invoices/march.pdf`,
/// `./notes.txt`, `/data/x.csv`, `~/notes.txt`) or a name with an extension of one to
/// eight letters or digits, one letter at least (`notes.txt`); never a URL or an address.
fn files(text: &str) -> Vec<Source> {
    let mut out = Vec::new();
    for w in words(text) {
        if out.len() >= MAX_PROMPT_SOURCES {
            break;
        }
        out.extend(file_word(w));
    }
    out
}

/// The file one word names: a name with an extension (`notes.txt`) or a path of two
/// components or more (`invoices/march.pdf`, `/data/x.csv`, `~/notes.txt`); never a link or
/// an address.
fn file_word(w: &str) -> Option<Source> {
    if w.contains("://") || w.contains('@') {
        return None;
    }
    let (w, absolute) = match w.strip_prefix("~/") {
        Some(rest) => (rest, false),
        None => (w, w.starts_with('/')),
    };
    let parts = components(w)?;
    let last = parts.last()?;
    let has_ext = last.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=8).contains(&ext.len())
            && ext.bytes().all(|b| b.is_ascii_alphanumeric())
            && ext.bytes().any(|b| b.is_ascii_alphabetic())
    });
    let is_path = parts.len() >= 2 || (absolute && !parts.is_empty());
    if !(has_ext || is_path) {
        return None;
    }
    let ok = parts.iter().all(|p| {
        p.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '+' | '~'))
    });
    ok.then(|| Source::File {
        path: parts.join("/"),
        absolute,
    })
}

/// The sources one argument of a call names, read as a tool that reads a place by its
/// name reads it (the gate asks only of the arguments a config says are such a name, and
/// of a `url`): the host of a link, with or without its scheme (`https://dora.example/rent`,
/// `www.dora-website.com`), and the file a name or path is (`bill-december-2023.txt`,
/// `/data/x.csv`). The whole string must be that one word: a sentence, a query or a list
/// names no source, whatever it mentions.
pub fn sources_in_argument(arg: &str) -> Vec<Source> {
    let w = arg.trim();
    if w.is_empty() || w.len() > MAX_ID_CHARS || w.contains(char::is_whitespace) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let lower = w.get(..8).map(str::to_ascii_lowercase).unwrap_or_default();
    let rest = if lower.starts_with("https://") {
        w.get(8..)
    } else if lower.starts_with("http://") {
        w.get(7..)
    } else if w.contains("://") {
        None
    } else {
        Some(w)
    };
    if let Some(rest) = rest {
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = rest.get(..end).unwrap_or("");
        let host = authority.rsplit_once(':').map_or(authority, |(h, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                authority
            }
        });
        if !authority.contains('@')
            && let Some(h) =
                crate::values::canonical_host(host).filter(|h| crate::values::reads_as_link(h))
        {
            out.push(Source::Host(h));
        }
    }
    if !lower.starts_with("http") {
        out.extend(file_word(w));
    }
    out
}

/// Which of a named source's answer's values stand alone (docs/spec.md §3.10, "One of
/// each"), and which do not: a named source stands for one place to reach, one account and
/// one id. Where its answer shows two of a group — two places (mail addresses, phone numbers,
/// and hosts, a link counted as its host and an address's domain as the address), two
/// accounts, two ids — the person's words do not say which they meant, and none of that
/// group is vouched for. `own` are the hosts the call itself read (a page's links to its
/// own pages are that page, not a second place). Counted over everything the answer shows,
/// before the echo guard, so a session cannot hide one of two accounts by passing it in.
///
/// A link or a host is counted but never vouched for: it names another place, which the
/// person did not name (the page at dora.example is theirs to name; where its links lead is
/// not), so a named page's links stay the strangers' who wrote them.
pub fn one_of_each(values: Vec<Ident>, own: &[String]) -> (Vec<Ident>, Vec<Ident>) {
    #[derive(PartialEq, Eq, Hash, Clone, Copy)]
    enum Group {
        Place,
        Account,
        Id,
    }
    let group = |k: Kind| match k {
        Kind::Email | Kind::Url | Kind::Host | Kind::Phone => Group::Place,
        Kind::Iban | Kind::Account => Group::Account,
        Kind::Id => Group::Id,
    };
    let domains: HashSet<&str> = values
        .iter()
        .filter(|v| v.kind == Kind::Email)
        .filter_map(|v| v.text.rsplit_once('@').map(|(_, d)| d))
        .collect();
    // What one value counts as: a link its host, a host on an address nothing more.
    let place = |v: &Ident| -> Option<String> {
        let host = match v.kind {
            Kind::Url => {
                let h = crate::values::url_host(&v.text);
                h.split(':').next().unwrap_or(h)
            }
            Kind::Host => v.text.as_str(),
            _ => return Some(v.text.clone()),
        };
        (!own.iter().any(|h| h == host) && !domains.contains(host)).then(|| host.to_owned())
    };
    let mut seen: std::collections::HashMap<Group, HashSet<String>> = Default::default();
    for v in &values {
        if let Some(p) = place(v) {
            seen.entry(group(v.kind)).or_default().insert(p);
        }
    }
    let two: HashSet<Group> = seen
        .iter()
        .filter(|(_, s)| s.len() > 1)
        .map(|(g, _)| *g)
        .collect();
    values
        .into_iter()
        .partition(|v| !two.contains(&group(v.kind)) && !matches!(v.kind, Kind::Url | Kind::Host))
}

/// Every amount: a run of digits with `,`, `.` or `'` between groups, read with its last
/// separator as the decimal point when one or two digits follow it (or it is the only
/// one, a `.`), else as a thousands separator; both readings when a single separator has
/// three digits after it (`1.200` is 1200 in Berlin and 1.2 in a program). Each reading in
/// the forms a call sends it: `1200`, `1200.5`, `1200.50`, `1200.0`.
fn amounts(text: &str, out: &mut Vec<String>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit() && (i == 0 || !is_word_byte(bytes[i - 1]));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < bytes.len()
            && (bytes[j].is_ascii_digit() || matches!(bytes[j], b',' | b'.' | b'\''))
        {
            j += 1;
        }
        let run = text
            .get(i..j)
            .unwrap_or("")
            .trim_end_matches([',', '.', '\'']);
        let start = i;
        i = j.max(i + 1);
        if run.len() > 40 || part_of_other(text, start, start + run.len()) {
            continue;
        }
        for (int, frac) in readings(run) {
            number_forms(&int, &frac, out);
        }
    }
}

/// Whether the number at `text[start..end]` is part of something else the person wrote,
/// and so no amount or id of its own: a date (`2024-05-19`, `05/19/2024`, `05.03.2026`,
/// `May 15`, `15 May`, `May 15, 2024`), a time (`12:00`, `3pm`, `3 p.m.`), an ordinal
/// (`15th`, `2nd`), a duration (`4 hours`, `1-hour`), or a list's marker (`1.`, `2)` opening
/// a line, or inline after a colon or a sentence's end). "May 15th" names a day, not the
/// file whose id is 15 (docs/spec.md §3.10).
fn part_of_other(text: &str, start: usize, end: usize) -> bool {
    let b = text.as_bytes();
    let before = |k: usize| start.checked_sub(k).and_then(|at| b.get(at)).copied();
    let after = |k: usize| b.get(end + k).copied();
    let digit = |x: Option<u8>| x.is_some_and(|c| c.is_ascii_digit());
    // A time or a date written with `:`, `-` or `/` between its numbers.
    if matches!(after(0), Some(b':' | b'-' | b'/')) && digit(after(1))
        || matches!(before(1), Some(b':' | b'-' | b'/')) && digit(before(2))
    {
        return true;
    }
    // A date written with dots: three numbers, a year first or last.
    let run = text.get(start..end).unwrap_or("");
    let parts: Vec<&str> = run.split('.').collect();
    if parts.len() == 3 && (parts[0].len() == 4 || parts[2].len() == 4) {
        return true;
    }
    // An ordinal or a time of day: `15th`, `3pm`, `3 pm`, `3 p.m.`
    let rest = text.get(end..).unwrap_or("");
    let suffix = |w: &str| {
        let w: String = w
            .chars()
            .take_while(|c| c.is_ascii_alphabetic() || *c == '.')
            .filter(char::is_ascii_alphabetic)
            .collect::<String>()
            .to_ascii_lowercase();
        w
    };
    if matches!(
        suffix(rest).as_str(),
        "st" | "nd" | "rd" | "th" | "am" | "pm" | "h"
    ) || matches!(suffix(rest.trim_start_matches(' ')).as_str(), "am" | "pm")
    {
        return true;
    }
    // A day or a year beside a month's name.
    let prev = words_before(text.get(..start).unwrap_or(""));
    let next = rest
        .trim_start_matches([' ', ','])
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    if is_month(next)
        || prev.first().is_some_and(|w| is_month(w))
        || prev
            .first()
            .is_some_and(|w| w.len() <= 2 && w.bytes().all(|c| c.is_ascii_digit()))
            && prev.get(1).is_some_and(|w| is_month(w))
    {
        return true;
    }
    // A duration: `4 hours`, `1-hour`, `30 min`.
    let unit = rest
        .strip_prefix([' ', '-'])
        .unwrap_or("")
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if DURATION_UNITS.contains(&unit.as_str()) {
        return true;
    }
    // A list's marker: `1.` or `2)` at the start of a line, or after a colon or a sentence's
    // end in a list written inline (`do this: 1. read … 2. answer …`).
    let head = text.get(..start).unwrap_or("");
    let opens = head.rsplit('\n').next().unwrap_or("").trim().is_empty()
        || head.trim_end().ends_with([':', '.', ';', '!', '?'])
            && head.ends_with(char::is_whitespace);
    opens
        && run.len() <= 2
        && matches!(after(0), Some(b'.' | b')'))
        && after(1).is_none_or(|c| c.is_ascii_whitespace())
}

/// The words after a number that make it a duration.
const DURATION_UNITS: &[&str] = &[
    "second", "seconds", "sec", "secs", "minute", "minutes", "min", "mins", "hour", "hours", "hr",
    "hrs", "day", "days", "week", "weeks", "month", "months", "year", "years",
];

/// The two words before the end of `text`, nearest first, without the commas and dots
/// around them.
fn words_before(text: &str) -> Vec<&str> {
    text.rsplit(|c: char| c.is_whitespace())
        .map(|w| w.trim_matches([',', '.']))
        .filter(|w| !w.is_empty())
        .take(2)
        .collect()
}

/// Whether `w` names a month: in full or by its first three letters (`Sept` too).
fn is_month(w: &str) -> bool {
    let w = w.trim_end_matches('.').to_ascii_lowercase();
    w == "sept"
        || MONTHS
            .iter()
            .any(|m| *m == w || (w.len() == 3 && m.starts_with(w.as_str())))
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// The (integer digits, fraction digits) an amount may be.
fn readings(run: &str) -> Vec<(String, String)> {
    let seps: Vec<(usize, char)> = run
        .char_indices()
        .filter(|(_, c)| matches!(c, ',' | '.' | '\''))
        .collect();
    let digits = |s: &str| s.chars().filter(char::is_ascii_digit).collect::<String>();
    let Some(&(last, sep)) = seps.last() else {
        return vec![(run.to_owned(), String::new())];
    };
    let after = run.get(last + 1..).unwrap_or("");
    let before = run.get(..last).unwrap_or("");
    if seps.len() == 1 && after.len() == 3 && sep != '\'' {
        // `1.200` or `1,200`: both readings.
        return vec![
            (digits(run), String::new()),
            (digits(before), after.to_owned()),
        ];
    }
    if sep != '\'' && (after.len() <= 2 || (seps.len() == 1 && sep == '.')) {
        return vec![(digits(before), after.to_owned())];
    }
    vec![(digits(run), String::new())]
}

fn number_forms(int: &str, frac: &str, out: &mut Vec<String>) {
    let int = int.trim_start_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let trimmed = frac.trim_end_matches('0');
    if trimmed.is_empty() {
        out.push(int.to_owned());
        out.push(format!("{int}.0"));
        if !frac.is_empty() {
            out.push(format!("{int}.{frac}"));
        }
    } else {
        out.push(format!("{int}.{trimmed}"));
        if trimmed.len() != frac.len() {
            out.push(format!("{int}.{frac}"));
        }
    }
}

const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Every date, as `YYYY-MM-DD`: ISO (`2026-03-05`, `2026/03/05`), day first with dots or
/// slashes (`05.03.2026`, `5/3/2026`), and in English words (`5 March 2026`, `March 5,
/// 2026`, `Mar 5 2026`).
fn dates(text: &str, out: &mut Vec<String>) {
    let mut push = |y: u32, m: u32, d: u32| {
        if (1..=12).contains(&m) && (1..=31).contains(&d) && (1000..=9999).contains(&y) {
            out.push(format!("{y:04}-{m:02}-{d:02}"));
        }
    };
    for w in words(text) {
        let parts: Vec<&str> = w.split(['-', '/', '.']).collect();
        if parts.len() == 3
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        {
            let n: Vec<u32> = parts.iter().filter_map(|p| p.parse().ok()).collect();
            if let [a, b, c] = n[..] {
                if parts[0].len() == 4 {
                    push(a, b, c);
                } else if parts[2].len() == 4 {
                    push(c, b, a);
                }
            }
        }
    }
    let ws: Vec<String> = words(text).map(str::to_lowercase).collect();
    let month = |w: &str| {
        MONTHS
            .iter()
            .position(|m| *m == w || (w.len() >= 3 && m.starts_with(w) && w.len() <= m.len()))
            .map(|i| i as u32 + 1)
    };
    let num = |w: &str| -> Option<u32> {
        let w = w
            .trim_end_matches("st")
            .trim_end_matches("nd")
            .trim_end_matches("rd")
            .trim_end_matches("th");
        w.parse().ok()
    };
    for k in 0..ws.len() {
        let (Some(a), Some(b), Some(c)) = (ws.get(k), ws.get(k + 1), ws.get(k + 2)) else {
            continue;
        };
        // `5 March 2026`
        if let (Some(d), Some(m), Some(y)) = (num(a), month(b), num(c)) {
            push(y, m, d);
        }
        // `March 5 2026` (the comma is a word break)
        if let (Some(m), Some(d), Some(y)) = (month(a), num(b), num(c)) {
            push(y, m, d);
        }
    }
}

/// The text between quotes: `"…"`, `“…”`, `„…“`, `‘…’`, `«…»`, `` `…` ``, and `'…'` opened
/// after a non-letter (never an apostrophe inside a word). At most [`MAX_ID_CHARS`].
fn quoted(text: &str, out: &mut Vec<String>) {
    let pairs = [
        ('"', '"'),
        ('“', '”'),
        ('„', '“'),
        ('‘', '’'),
        ('«', '»'),
        ('`', '`'),
        ('\'', '\''),
    ];
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut k = 0;
    while k < chars.len() {
        let (at, c) = chars[k];
        let Some(&(_, close)) = pairs.iter().find(|(o, _)| *o == c) else {
            k += 1;
            continue;
        };
        if c == '\'' && k > 0 && chars[k - 1].1.is_alphanumeric() {
            k += 1;
            continue;
        }
        let start = at + c.len_utf8();
        let end = chars[k + 1..]
            .iter()
            .take(MAX_ID_CHARS + 1)
            .position(|(_, x)| *x == close)
            .map(|p| k + 1 + p);
        match end {
            Some(e) => {
                if let Some(inner) = text.get(start..chars[e].0)
                    && !inner.trim().is_empty()
                {
                    out.push(inner.to_owned());
                }
                k = e + 1;
            }
            None => k += 1,
        }
    }
}

/// Names: every run of two to four words in a row that each start with a capital letter
/// followed by small letters (`Dora Lee`, `Jean-Paul Sartre`, `Acme Holdings Ltd`).
fn names(text: &str, out: &mut Vec<String>) {
    let is_name = |w: &str| {
        let mut cs = w.chars();
        cs.next().is_some_and(char::is_uppercase)
            && w.chars().count() >= 2
            && cs.all(|c| c.is_alphabetic() || c == '-' || c == '\'')
            && w.chars().skip(1).any(char::is_lowercase)
    };
    let mut run: Vec<&str> = Vec::new();
    let flush = |run: &mut Vec<&str>, out: &mut Vec<String>| {
        for len in 2..=4.min(run.len()) {
            for start in 0..=run.len() - len {
                out.push(run[start..start + len].join(" "));
            }
        }
        run.clear();
    };
    for raw in text.split_whitespace() {
        let w = raw.trim_matches(|c: char| !c.is_alphanumeric());
        let ends = raw.ends_with([',', '.', ';', ':', '!', '?']);
        if is_name(w) && run.len() < 8 {
            run.push(w);
        } else {
            flush(&mut run, out);
        }
        if ends {
            flush(&mut run, out);
        }
    }
    flush(&mut run, out);
}

/// Where a prompt was given: its number in the conversation and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PromptRef {
    pub n: u64,
    pub at: proto::Timestamp,
}

impl std::fmt::Display for PromptRef {
    /// `prompt 2 (2026-12-05 14:02 UTC)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "prompt {} ({})", self.n, utc(self.at.0))
    }
}

/// `YYYY-MM-DD HH:MM UTC` of seconds since the epoch (no time zone: policy does no I/O).
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}

/// Whether `ident`, as a prompt's reading holds it, is one the person wrote.
pub fn names_value(prompt: &Prompt, ident: &Ident) -> bool {
    prompt.values.contains(&ident.text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn has(p: &Prompt, v: &str) -> bool {
        p.values.contains(v)
    }

    #[test]
    fn a_prompt_names_its_payee_amount_date_memo_and_name() {
        let p = read_prompt(
            "Pay Dora Lee 1,200.50 EUR for \"Rent for March\" to GB29 NWBK 6016 1331 9268 19 \
             on 5 March 2026, and mail dora@lee.example.",
        );
        for v in [
            "GB29NWBK60161331926819",
            "1200.5",
            "1200.50",
            "Rent for March",
            "2026-03-05",
            "Dora Lee",
            "dora@lee.example",
        ] {
            assert!(has(&p, v), "{v}: {:?}", p.values.values());
        }
        // The whole argument a call sends, read as a `from` test reads it.
        for arg in [
            json!(1200.5),
            json!("1200.50"),
            json!("Dora Lee"),
            json!("2026-03-05"),
        ] {
            let found = crate::values::in_argument(&arg);
            assert!(
                found.values().iter().all(|i| has(&p, &i.text)),
                "{arg}: {:?}",
                found.values()
            );
        }
        // An e-mail's domain is no source the person named.
        assert!(p.sources.is_empty(), "{:?}", p.sources);
    }

    #[test]
    fn amounts_read_both_ways_when_ambiguous() {
        let mut out = Vec::new();
        amounts("1.200 and 1,200 and 99 and 3.50 and 1'000'000", &mut out);
        for v in ["1200", "1.2", "99", "99.0", "3.5", "3.50", "1000000"] {
            assert!(out.contains(&v.to_string()), "{v}: {out:?}");
        }
        let mut out = Vec::new();
        amounts("A1200 abc", &mut out);
        assert!(
            out.is_empty(),
            "a digit inside a word is no amount: {out:?}"
        );
    }

    #[test]
    fn a_prompt_names_pages_and_files() {
        let p = read_prompt(
            "Read the page at https://dora.example/rent and the file invoices/march.pdf, \
             then ~/notes.txt and /data/x.csv; not bob@acme.com.",
        );
        let keys: Vec<String> = p.sources.iter().map(Source::key).collect();
        for k in [
            "host:dora.example",
            "file:invoices/march.pdf",
            "file:notes.txt",
            "file:/data/x.csv",
        ] {
            assert!(keys.contains(&k.to_string()), "{k}: {keys:?}");
        }
        assert!(!keys.iter().any(|k| k.contains("acme")), "{keys:?}");
    }

    #[test]
    fn a_named_file_covers_the_paths_that_end_in_it() {
        let named = |s: &str| files(s).pop().unwrap();
        let read = |s: &str| Source::of_read_path(s).unwrap();
        assert!(named("notes.txt").covers(&read("/data/notes.txt")));
        assert!(named("notes.txt").covers(&read("notes.txt")));
        assert!(named("invoices/march.pdf").covers(&read("/mnt/invoices/march.pdf")));
        assert!(!named("notes.txt").covers(&read("/data/mynotes.txt")));
        assert!(!named("/data/x.csv").covers(&read("/other/data/x.csv")));
        assert!(named("/data/x.csv").covers(&read("/data/./x.csv")));
        assert!(Source::of_read_path("/data/../etc/passwd").is_none());
        assert!(!Source::Host("dora.example".into()).covers(&read("/dora.example")));
        for s in [named("notes.txt"), Source::Host("a.example".into())] {
            assert_eq!(Source::from_key(&s.key()), Some(s));
        }
    }

    #[test]
    fn an_argument_names_a_source_only_when_it_is_one_word() {
        let keys =
            |s: &str| -> Vec<String> { sources_in_argument(s).iter().map(Source::key).collect() };
        assert_eq!(keys("https://dora.example/rent?x=1"), ["host:dora.example"]);
        assert!(keys("www.dora-website.com").contains(&"host:www.dora-website.com".into()));
        assert_eq!(keys("dora.example:8080/about"), ["host:dora.example"]);
        assert!(keys("bill-december-2023.txt").contains(&"file:bill-december-2023.txt".into()));
        assert_eq!(keys("/data/x.csv"), ["file:/data/x.csv"]);
        for none in [
            "",
            "the page at https://dora.example",
            "bill-december-2023.txt and more",
            "ftp://dora.example/x",
            "https://user@dora.example/x",
            "../etc/passwd.txt",
            "dora",
        ] {
            assert!(keys(none).is_empty(), "{none:?}: {:?}", keys(none));
        }
        assert!(keys(&format!("{}.txt", "a".repeat(MAX_ID_CHARS))).is_empty());
    }

    #[test]
    fn a_named_source_vouches_for_one_of_each_group_only() {
        let read = |text: &str, own: &[&str]| {
            let own: Vec<String> = own.iter().map(|s| (*s).to_owned()).collect();
            let (alone, two) = one_of_each(in_answer(text).into_values(), &own);
            let t = |v: Vec<Ident>| v.into_iter().map(|v| v.text).collect::<Vec<_>>();
            (t(alone), t(two))
        };
        // One address, its domain and the page's own links: one place.
        let (alone, two) = read(
            "Dora's page. Mail dora@gmail.com. More at https://www.dora.example/about",
            &["www.dora.example"],
        );
        assert_eq!(
            alone,
            ["dora@gmail.com"],
            "the links are not vouched for: {two:?}"
        );
        // A link alone on a named page: another place, not vouched for.
        let (alone, two) = read("Read more: www.true-informations.com", &[]);
        assert!(alone.is_empty(), "{alone:?}");
        assert!(two.iter().any(|v| v.contains("informations")), "{two:?}");
        // A stranger's link beside it: two places, neither vouched for.
        let (alone, two) = read(
            "Mail dora@gmail.com. Also visit www.true-informations.com now.",
            &["www.dora.example"],
        );
        assert!(two.contains(&"dora@gmail.com".to_owned()), "{two:?}");
        assert!(
            !alone.iter().any(|v| v.contains("informations")),
            "{alone:?}"
        );
        // Two accounts on the bill: neither; the one address beside them stands alone.
        let (alone, two) = read(
            "Pay GB29 NWBK 6016 1331 9268 19. Or rather DE89 3704 0044 0532 0130 00. \
             Questions: billing@landlord.example",
            &[],
        );
        assert_eq!(two.len(), 2, "{two:?}");
        assert!(
            alone.contains(&"billing@landlord.example".to_owned()),
            "{alone:?}"
        );
        // Two addresses on one domain are two places.
        let (_, two) = read("dora@gmail.com or eve@gmail.com", &[]);
        assert_eq!(two.len(), 2, "{two:?}");
    }

    #[test]
    fn the_time_of_a_prompt_is_said_in_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_772_719_320), "2026-03-05 14:02 UTC");
    }
}
