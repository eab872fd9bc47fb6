//! Identifying values (docs/spec.md §3.7 "Provenance"): the e-mail addresses, URLs and host
//! names, IBANs and account numbers, phone numbers and ids that an answer shows and an
//! argument carries, each in **one canonical form**, so that the value a call carries can be
//! looked up among the values earlier answers showed, however either was written.
//!
//! **Reading the text.** Before anything is looked for, a text is read as a person sees it:
//! Unicode NFKC (full-width `ＤＥ８９` is `DE89`, `ﬁ` is `fi`, a no-break or thin space a
//! space), invisible characters dropped (zero-width spaces and joiners, bidirectional marks
//! …), any other white space a space (the line and paragraph separators a line break),
//! bracketed markers undone ([`defang`]: `attacker (at) evil [dot] com`, `hxxps[:]//`),
//! then [`links::normalize`]: look-alike dots made dots, `%XX`, HTML references and a
//! dump's `\uXXXX` escapes decoded,
//! defanged dots undone, and a line break inside a name joined (`evil.⏎com`). When the text
//! holds a letter of another script that looks like a Latin one (Cyrillic `а`, Greek `Ο`
//! …) or a dash that looks like a hyphen (`‐`, `–`, `−`), it is read a second time with
//! those made Latin, and what that reading finds counts too: an IBAN or a host written with
//! one Cyrillic letter is also the value a model that "corrects" it would use.
//!
//! **Beyond the plain text** (the forms a model, or a shell, turns back into the value):
//! - a run of base64 or hex that decodes to text is read as that text too, two levels deep
//!   ([`encoded`]);
//! - an answer is read for addresses spelled in words (`attacker at evil dot com`,
//!   [`defang`]); an argument for those whose domain is spelled too (`payroll at
//!   bluesparrow-hr dot com`: a person types it; `lunch at acme.com` carries the link
//!   `acme.com` and no address); both for a host spelled so alone (`evil dot com`);
//! - a JSON document is read in document order, its keys too (for the values they hold,
//!   never as ids), and neighbouring strings are joined where the join is a value no two
//!   ordinary neighbours make ([`seams`]).
//!
//! **What is a value**, and its canonical form:
//! - an **e-mail address**: a run of address characters, `@`, a run of name characters,
//!   read by [`Address::parse`]; the domain converted by IDNA to ASCII; all in lower case
//!   (`Bob@ACME.com.` is `bob@acme.com`; the index folds the local part too, so an address
//!   seen as `Evil@x.com` is the one a call spells `evil@x.com`);
//! - a **host**: every link [`links::scan`] finds (with or without a scheme, any case), its
//!   host after any user info, converted by IDNA to ASCII (`bücher.de` is
//!   `xn--bcher-kva.de`, Cyrillic `раураl.com` is an `xn--` name of its own, never
//!   `paypal.com`), in lower case without a trailing dot; an IPv4 address in any spelling
//!   as its dotted form ([`crate::host`]). The domain of an address found above is not a
//!   host of its own: a mailbox is the value;
//! - a **URL**: a link with a path: `host[:port]/path`, the port only when it is not 80 or
//!   443, the path percent-decoded, without a trailing `/`; scheme, query and fragment are
//!   not part of it (the host is the destination, the path what is asked of it). A URL is
//!   also its host, and, when it has a query or a fragment, also `host/path?query#fragment`
//!   (percent-decoded): what it carries to its host is a value too, so a link to a known
//!   host that carries a secret in its query is not placed by its host alone;
//! - an **IBAN**: two letters, two digits and up to 30 letters or digits (a gap may fall
//!   among the first four only when the letters are a country's), in groups split by
//!   white space (two line breaks at most between two groups: a value split across lines or
//!   a blank line) and at most one `-` or `.` (`DE89-3704-…`, `DE89.3704.…`),
//!   as long as its country's IBANs are (ISO 13616; 15 to 34 for a country not in the
//!   table), whose ISO 7064 mod-97 check holds; upper case, no spaces;
//! - an **account number**: an IBAN-shaped word whose check fails (`US133000000121212121212`),
//!   or a run of 8 to 34 digits, alone or in groups split by spaces (each group of 8 or more
//!   is one too); digits only;
//! - a **phone number**: `+` (or `00`) and 7 to 15 digits in groups split by spaces, `-`,
//!   `.`, `(`, `)`: `+` and the digits; or 7 to 15 digits in groups split by `-`, `.` or
//!   parentheses: the digits. A date (`2024-05-01`, `01.05.2024`) or an IPv4 address is none;
//! - an **id**: the value of a JSON field named `id`, `ids`, `uuid`, `…_id`, `…_ids`,
//!   `…Id` (and the same keys with a trailing `_`, as YAML dumps write `id_`), or of a line
//!   `KEY: VALUE` / `KEY = VALUE` with such a key in text; a string (NFKC, invisible
//!   characters dropped, trimmed, 1 to 256 characters, no control character, case kept) or
//!   an integer.
//!
//! Values are keyed by their text alone: the same text found as two kinds is one value.
//!
//! Not found: a host that written alone is no link (one label, `http://intranet/`; a last
//! label with digits), an address whose local part is outside ASCII (its domain is then a
//! host), an address split across lines at its `@`, a number split by anything but the
//! separators above, and the joins [`seams`] leaves out. Each of these is also not found in
//! the argument that carries it, so both readings agree.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use serde_json::Value;
use unicode_normalization::UnicodeNormalization;

use crate::email::{Address, is_atext};
use crate::host::parse_host;
use crate::links;
use crate::url::is_invisible;

mod defang;
mod encoded;
mod seams;
mod tld;
mod tld_registry;
mod walk;

use seams::{Chain, Piece};
use walk::Event;

/// The longest id, in characters.
pub const MAX_ID_CHARS: usize = 256;

/// The most values one reading keeps; past it the reading says it overflowed (and the
/// index then fails closed for that session).
pub const MAX_VALUES: usize = 100_000;

/// How deep a JSON string holding JSON is read into (MCP servers often answer JSON as text).
const MAX_NESTED_JSON: usize = 3;

/// What kind of value an identifying value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Email,
    Url,
    Host,
    Iban,
    Account,
    Phone,
    Id,
}

impl Kind {
    /// Every kind, in declaration order.
    pub const ALL: &'static [Kind] = &[
        Kind::Email,
        Kind::Url,
        Kind::Host,
        Kind::Iban,
        Kind::Account,
        Kind::Phone,
        Kind::Id,
    ];

    /// The name stored and sent: `email`, `url`, `host`, `iban`, `account`, `phone`, `id`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::Email => "email",
            Kind::Url => "url",
            Kind::Host => "host",
            Kind::Iban => "iban",
            Kind::Account => "account",
            Kind::Phone => "phone",
            Kind::Id => "id",
        }
    }

    /// The kind named `name` (see [`Kind::as_str`]).
    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| k.as_str() == name)
    }

    /// How a sentence names it: `the IBAN`, `the e-mail address`.
    pub const fn noun(self) -> &'static str {
        match self {
            Kind::Email => "the e-mail address",
            Kind::Url => "the URL",
            Kind::Host => "the host",
            Kind::Iban => "the IBAN",
            Kind::Account => "the account number",
            Kind::Phone => "the phone number",
            Kind::Id => "the id",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One identifying value in canonical form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ident {
    pub kind: Kind,
    pub text: String,
}

impl fmt::Display for Ident {
    /// `the IBAN DE89370400440532013000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind.noun(), self.text)
    }
}

/// The values one reading found, each once (by text), in the order found.
#[derive(Debug, Clone, Default)]
pub struct Found {
    values: Vec<Ident>,
    texts: HashSet<String>,
    /// The texts found only by joining neighbouring strings or decoding a run ([`seams`],
    /// [`encoded`]), never as written: the reader made them, so they vouch for nothing
    /// (docs/spec.md §3.7).
    made: HashSet<String>,
    overflow: bool,
}

impl Found {
    /// Nothing found yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, kind: Kind, text: String) {
        if self.texts.contains(&text) {
            // Found as written too: no longer only made.
            if !self.made.is_empty() {
                self.made.remove(&text);
            }
            return;
        }
        if self.values.len() >= MAX_VALUES {
            self.overflow = true;
            return;
        }
        self.texts.insert(text.clone());
        self.values.push(Ident { kind, text });
    }

    /// Adds `text` (canonical) as an id, as the readers add theirs.
    pub(crate) fn push_id(&mut self, text: String) {
        self.push(Kind::Id, text);
    }

    /// A value a join or a decode made (see [`Found::made`]): kept as made unless it is,
    /// or is later, found as written.
    fn push_made(&mut self, kind: Kind, text: String) {
        if self.texts.contains(&text) {
            return;
        }
        if self.values.len() >= MAX_VALUES {
            self.overflow = true;
            return;
        }
        self.made.insert(text.clone());
        self.texts.insert(text.clone());
        self.values.push(Ident { kind, text });
    }

    fn absorb(&mut self, other: Found) {
        self.overflow |= other.overflow;
        for v in other.values {
            if other.made.contains(&v.text) {
                self.push_made(v.kind, v.text);
            } else {
                self.push(v.kind, v.text);
            }
        }
    }

    /// Whether the value with this canonical text was found only by joining neighbouring
    /// strings or decoding an encoded run — never as written. Such a value is the reader's
    /// doing: the pieces it was made of may each have been a value the session passed in
    /// apart (two halves saved in two calls and listed side by side), so it never vouches
    /// (docs/spec.md §3.7).
    pub fn made(&self, text: &str) -> bool {
        self.made.contains(text)
    }

    /// The values, in the order found.
    pub fn values(&self) -> &[Ident] {
        &self.values
    }

    /// The values, owned.
    pub fn into_values(self) -> Vec<Ident> {
        self.values
    }

    /// Whether a value with this canonical text was found.
    pub fn contains(&self, text: &str) -> bool {
        self.texts.contains(text)
    }

    /// How many values were found.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Whether more than [`MAX_VALUES`] were there: some were not kept.
    pub fn overflowed(&self) -> bool {
        self.overflow
    }
}

// ---------------------------------------------------------------------------------------------
// Entry points

/// Which side a text is read for: an answer the index learns from, or an argument a `from`
/// test looks up. Both read every form a tool or a shell turns back into the value; an
/// answer is read for the forms a model does too (an address spelled in words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Answer,
    Argument,
}

/// How the strings of a JSON document are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// An answer: ids of id fields, JSON inside a string (`depth` levels in so far).
    Answer { depth: usize },
    /// A `from` test's value: a string that carries no value is an id as a whole.
    Argument,
    /// Every string of a call's arguments is an id as a whole too (the echo guard).
    Arguments,
}

/// Every identifying value an answer shows: its text, or, when it is JSON, every key,
/// string and number in it (JSON inside a string too, a few levels deep), every id field,
/// and the values neighbouring strings spell together ([`seams`]).
pub fn in_answer(content: &str) -> Found {
    let mut out = Found::new();
    answer_into(content, 0, &mut out);
    out
}

fn answer_into(content: &str, depth: usize, out: &mut Found) {
    if depth < MAX_NESTED_JSON
        && content.trim_start().starts_with(['{', '['])
        && let Some(events) = walk::parse(content)
    {
        doc_into(&events, Mode::Answer { depth }, out);
        return;
    }
    text_into(content, Side::Answer, 0, out);
}

/// Reads a document's events in order: each key for the values it holds (never an id of
/// its own), each string and number by `mode`, and the joins of neighbours.
fn doc_into<'a>(events: &'a [Event<'a>], mode: Mode, out: &mut Found) {
    let side = match mode {
        Mode::Answer { .. } => Side::Answer,
        Mode::Argument | Mode::Arguments => Side::Argument,
    };
    let mut chain = Chain::new();
    for event in events {
        let (text, number, id, field) = match event {
            Event::Key(k) => {
                text_into(k, side, 0, out);
                continue;
            }
            Event::Leaf {
                text,
                number,
                id,
                field,
            } => (text.as_ref(), *number, *id, *field),
        };
        let field = Event::key_at(events, field);
        let piece = match mode {
            Mode::Answer { depth } => {
                if id {
                    let canonical = if number {
                        Some(text.to_owned())
                    } else {
                        canonical_id(text)
                    };
                    if let Some(c) = canonical {
                        out.push(Kind::Id, c);
                    }
                }
                if !number
                    && depth + 1 < MAX_NESTED_JSON
                    && text.trim_start().starts_with(['{', '['])
                    && let Some(inner) = walk::parse(text)
                {
                    doc_into(&inner, Mode::Answer { depth: depth + 1 }, out);
                    continue;
                }
                leaf_into(text, side, out)
            }
            Mode::Argument => {
                let mut one = Found::new();
                let piece = leaf_into(text, side, &mut one);
                if one.is_empty()
                    && let Some(c) = canonical_id(text)
                {
                    one.push(Kind::Id, c);
                }
                out.absorb(one);
                piece
            }
            Mode::Arguments => {
                let piece = leaf_into(text, side, out);
                if let Some(c) = canonical_id(text) {
                    out.push(Kind::Id, c);
                }
                piece
            }
        };
        chain.feed(piece, field, out);
    }
}

/// The values a condition looks up for what its pointer found (docs/spec.md §3.7): at every
/// string or number under it, each identifying value it carries — or, when it carries none,
/// the whole of it as an id (so a value nothing here can read still has to have been seen);
/// in every key, the values it carries; and the values neighbouring strings spell together.
/// Booleans and `null` carry none.
pub fn in_argument(v: &Value) -> Found {
    let mut out = Found::new();
    doc_into(&walk::of_value(v), Mode::Argument, &mut out);
    out
}

/// Every value a call's arguments carry, for the echo guard: at every string or number, each
/// identifying value it carries and the whole of it as an id; in every key, the values it
/// carries; and the values neighbouring strings spell together.
pub fn in_arguments(v: &Value) -> Found {
    let mut out = Found::new();
    doc_into(&walk::of_value(v), Mode::Arguments, &mut out);
    out
}

/// The values a literal of the config stands for (a `[lists]` entry, an `equals`): as
/// [`in_argument`] reads it.
pub fn in_literal(text: &str) -> Found {
    in_argument(&Value::String(text.to_owned()))
}

/// An id's canonical form: NFKC, invisible characters dropped, trimmed; `None` when that is
/// empty, longer than [`MAX_ID_CHARS`] or holds a control character.
pub fn canonical_id(s: &str) -> Option<String> {
    let text: String = if s.is_ascii() {
        s.trim().to_owned()
    } else {
        s.nfkc()
            .filter(|c| !is_invisible(*c))
            .collect::<String>()
            .trim()
            .to_owned()
    };
    let ok = !text.is_empty()
        && text.chars().count() <= MAX_ID_CHARS
        && !text.chars().any(char::is_control);
    ok.then_some(text)
}

/// Whether a JSON key (or a `KEY:` line) names an id: `id`, `ids`, `uuid`, `…_id`, `…-id`,
/// `…_ids`, `…Id`, `…ID`, and each with a trailing `_`.
pub fn is_id_key(key: &str) -> bool {
    let k = key.strip_suffix('_').unwrap_or(key);
    if k.len() > 64 {
        return false;
    }
    let lower = k.to_ascii_lowercase();
    matches!(lower.as_str(), "id" | "ids" | "uuid")
        || lower.ends_with("_id")
        || lower.ends_with("-id")
        || lower.ends_with("_ids")
        || (k.len() > 2 && (k.ends_with("Id") || k.ends_with("ID") || k.ends_with("Ids")))
}

/// Text as it reads (see the module's docs): NFKC, invisible characters dropped and other
/// spaces made spaces, bracketed markers undone ([`defang`]), then [`links::normalize`].
/// Borrowed when nothing changes.
pub fn prepare(text: &str) -> Cow<'_, str> {
    let nfkc: Cow<'_, str> = if text.is_ascii() {
        Cow::Borrowed(text)
    } else {
        // A combining mark drawn as a dot is read before NFKC composes it into a letter.
        Cow::Owned(
            links::dots_before_composing(text)
                .nfkc()
                .filter(|c| !is_invisible(*c))
                .map(plain_space)
                .collect(),
        )
    };
    let unmarked = match defang::undo_markers(&nfkc).into_owned_if_changed() {
        Some(s) => Cow::Owned(s),
        None => nfkc,
    };
    let normalized = links::normalize(&unmarked).into_owned_if_changed();
    match normalized {
        Some(s) => Cow::Owned(s),
        None => unmarked,
    }
}

/// The host names `text` spells in words, which no link reader finds (docs/spec.md §3.3,
/// the `links` test): each a host (canonical) and the words that spell it — a host written
/// `bluesparrow-hr dot com` or `evil . com`, and the domain of an address whose domain is
/// spelled so (`payroll at bluesparrow-hr dot com`). A person reads them and types them
/// into a mail client or a browser, so a text that carries one carries a link.
pub fn spelled_names(text: &str) -> Vec<(String, String)> {
    if !may_hold_value(text) {
        return Vec::new();
    }
    spelled_names_in(&prepare(text))
}

/// [`spelled_names`] in text already [`prepare`]d (the `links` test reads a text once).
pub fn spelled_names_in(t: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let written = |span: Range<usize>| t.get(span).unwrap_or("").to_owned();
    let g = defang::gap_view(t);
    defang::word_addresses(&g, &mut |address, span, spelled| {
        if spelled
            && let Some((_, domain)) = address.rsplit_once('@')
            && let Some(h) = canonical_host(domain)
        {
            out.push((h, written(span)));
        }
    });
    defang::word_hosts(&g, &mut |host, span| {
        if let Some(h) = canonical_host(&host).filter(|h| reads_as_link(h)) {
            out.push((h, written(span)));
        }
    });
    out
}

/// White space outside ASCII that NFKC leaves (the ogham space mark, the line and
/// paragraph separators, NEL) as a space or a line break.
fn plain_space(c: char) -> char {
    match c {
        '\u{85}' | '\u{2028}' | '\u{2029}' => '\n',
        c if !c.is_ascii() && c.is_whitespace() => ' ',
        c => c,
    }
}

trait OwnedIfChanged {
    fn into_owned_if_changed(self) -> Option<String>;
}

impl OwnedIfChanged for Cow<'_, str> {
    fn into_owned_if_changed(self) -> Option<String> {
        match self {
            Cow::Owned(s) => Some(s),
            Cow::Borrowed(_) => None,
        }
    }
}

/// Every identifying value in free text (not JSON), read as an answer: see the module's docs.
pub fn in_text(text: &str) -> Found {
    let mut out = Found::new();
    text_into(text, Side::Answer, 0, &mut out);
    out
}

/// How many times a value encoded in base64 or hex is decoded, one inside another.
const MAX_DECODED: usize = 2;

/// Where a pushed value stood in the text read.
type Push<'p> = dyn FnMut(Kind, String, Range<usize>) + 'p;

fn text_into(text: &str, side: Side, depth: usize, out: &mut Found) {
    read_text(text, side, depth, out);
}

/// One string of a document, read, and as its neighbours see it.
fn leaf_into(text: &str, side: Side, out: &mut Found) -> Piece {
    let (t, touch_start, touch_end) = read_text(text, side, 0, out);
    Piece::new(&t, touch_start, touch_end)
}

/// Reads `text` (prepared; again with look-alike letters made Latin; and what its encoded
/// runs decode to). Returns the prepared text and whether a whole value touches its start
/// and its end.
fn read_text<'t>(
    text: &'t str,
    side: Side,
    depth: usize,
    out: &mut Found,
) -> (Cow<'t, str>, bool, bool) {
    if !may_hold_value(text) {
        return (Cow::Borrowed(text), false, false);
    }
    let t = prepare(text);
    let (mut touch_start, mut touch_end) = (false, false);
    // Where the plain reading found a number of digits: such a run is not decoded as well
    // (`3030303030303030` is an account number, not hex for `00000000`).
    let mut numbers: Vec<Range<usize>> = Vec::new();
    let words = side == Side::Answer;
    let mut read = |t: &str, out: &mut Found, numbers: Option<&mut Vec<Range<usize>>>| {
        let lead = t.len() - t.trim_start().len();
        let trail = t.trim_end().len();
        let mut numbers = numbers;
        read_into(t, words, &mut |kind, value, span| {
            if whole(kind, &value) {
                touch_start |= span.start <= lead;
                touch_end |= span.end >= trail;
            }
            let number = matches!(kind, Kind::Account | Kind::Phone)
                && value.bytes().all(|b| b.is_ascii_digit());
            if number && let Some(n) = numbers.as_deref_mut() {
                n.push(span);
            }
            out.push(kind, value);
        });
    };
    read(&t, out, Some(&mut numbers));
    if !t.is_ascii() {
        let latin = skeleton(&t);
        if latin != *t {
            read(&latin, out, None);
        }
    }
    if depth < MAX_DECODED {
        encoded::decoded_runs(&t, |run, decoded| {
            if !numbers
                .iter()
                .any(|n| n.start <= run.start && run.end <= n.end)
            {
                decoded_into(&decoded, side, depth + 1, out);
            }
        });
    }
    (t, touch_start, touch_end)
}

/// Whether `text` may hold a value at all: every value has a digit, `@`, `.`, `:` or `=`
/// (an id line), or is spelled in something to undo (`%`, `&`, a bracket, a backslash,
/// anything outside ASCII), or is a base64 run of 11 characters or more. Most keys and
/// many short strings of a JSON answer have none of these, and are not read further.
fn may_hold_value(text: &str) -> bool {
    text.len() >= 11
        || text.bytes().any(|b| {
            !b.is_ascii()
                || b.is_ascii_digit()
                || matches!(
                    b,
                    b'@' | b'.' | b':' | b'=' | b'%' | b'&' | b'[' | b'(' | b'{' | b'<' | b'\\'
                )
        })
}

/// The values text decoded from base64 or hex shows: those that cannot come out of bytes
/// that only happen to be text — an IBAN (its check), a number, an id, and an address,
/// URL or host whose name ends in a top-level domain in use (`DE93795057…`, read as hex,
/// is `ޓyPWHrT@Gd`, and `yPWHrT@Gd` is no value a call will carry).
fn decoded_into(decoded: &str, side: Side, depth: usize, out: &mut Found) {
    let mut found = Found::new();
    text_into(decoded, side, depth, &mut found);
    out.overflow |= found.overflow;
    for v in found.values {
        let keep = match v.kind {
            Kind::Email | Kind::Url | Kind::Host => seams::named(v.kind, &v.text),
            Kind::Iban | Kind::Account | Kind::Phone | Kind::Id => true,
        };
        if keep {
            out.push_made(v.kind, v.text);
        }
    }
}

/// Whether a value is whole on its own, for telling a join from a value grown by its
/// neighbour ([`seams`]): an address, URL or host only with a top-level domain in use; an
/// id never.
fn whole(kind: Kind, text: &str) -> bool {
    match kind {
        Kind::Email | Kind::Url | Kind::Host => seams::named(kind, text),
        Kind::Iban | Kind::Account | Kind::Phone => true,
        Kind::Id => false,
    }
}

/// One reading of prepared text; `words`: every address spelled in words too (an answer's
/// reading), not only those whose domain is spelled.
fn read_into(t: &str, words: bool, push: &mut Push<'_>) {
    // Bytes inside an address or a link are not read again as numbers.
    let mut taken: Vec<Range<usize>> = Vec::new();
    let domains = emails_into(t, push, &mut taken);
    links::scan(t, |link| {
        let start = offset_in(t, link.text);
        let span = start..start + link.text.len();
        let domain = domains.binary_search(&start).is_ok();
        if domain || link_into(link.text, span.clone(), push) {
            taken.push(span);
        }
        true
    });
    // Names spelled in words: the hosts, on both sides; the addresses, in an answer all
    // (a model turns `bob at acme.com` back into the address), in an argument those whose
    // domain is spelled too (`bob at acme dot com`: a person reads it and types it, and no
    // link reader sees it; `bob at acme.com` carries the link `acme.com` already). An
    // encoded space is a gap between those words (`defang::gap_view`), never in a link.
    let g = defang::gap_view(t);
    defang::word_addresses(&g, &mut |address, span, spelled| {
        if words || spelled {
            push(Kind::Email, address, span);
        }
    });
    defang::word_hosts(&g, &mut |host, span| {
        if let Some(h) = canonical_host(&host).filter(|h| reads_as_link(h)) {
            push(Kind::Host, h, span);
        }
    });
    taken.sort_by_key(|r| r.start);
    numbers_into(t, &taken, push);
    id_lines_into(t, push);
}

/// Where `part`, a slice of `whole`, starts in it.
fn offset_in(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize)
}

/// Latin letters for the Cyrillic and Greek ones that look like them, and `-` for the dashes
/// that look like it; everything else as it is.
fn skeleton(t: &str) -> String {
    t.chars()
        .map(|c| match c {
            'А' | 'Α' => 'A',
            'В' | 'Β' => 'B',
            'С' | 'Ϲ' => 'C',
            'Е' | 'Ε' => 'E',
            'Н' | 'Η' => 'H',
            'І' | 'Ι' => 'I',
            'Ј' => 'J',
            'К' | 'Κ' => 'K',
            'М' | 'Μ' => 'M',
            'Ν' => 'N',
            'О' | 'Ο' => 'O',
            'Р' | 'Ρ' => 'P',
            'Ѕ' => 'S',
            'Т' | 'Τ' => 'T',
            'Х' | 'Χ' => 'X',
            'У' | 'Υ' => 'Y',
            'Ζ' => 'Z',
            // Dashes that look like a hyphen: group separators in numbers.
            '\u{2010}'..='\u{2013}' | '\u{2212}' => '-',
            'а' => 'a',
            'с' | 'ϲ' => 'c',
            'е' => 'e',
            'һ' => 'h',
            'і' => 'i',
            'ј' => 'j',
            'о' | 'ο' => 'o',
            'р' | 'ρ' => 'p',
            'ѕ' => 's',
            'х' | 'χ' => 'x',
            'у' => 'y',
            other => other,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Addresses and links

/// The addresses in `t`; returns where each address's domain starts (sorted), so the link
/// scan does not take it for a host of its own.
fn emails_into(t: &str, push: &mut Push<'_>, taken: &mut Vec<Range<usize>>) -> Vec<usize> {
    let mut domains = Vec::new();
    for (at, _) in t.match_indices('@') {
        let before = t.get(..at).unwrap_or("");
        let after = t.get(at + 1..).unwrap_or("");
        let local_len: usize = before
            .chars()
            .rev()
            .take_while(|&c| c.is_ascii() && (is_atext(c) || c == '.'))
            .map(char::len_utf8)
            .sum();
        let local = before
            .get(before.len() - local_len..)
            .unwrap_or("")
            .trim_start_matches('.');
        let domain_len: usize = after
            .chars()
            .take_while(|&c| c.is_alphanumeric() || matches!(c, '-' | '.' | '_'))
            .map(char::len_utf8)
            .sum();
        let domain = after.get(..domain_len).unwrap_or("").trim_end_matches('.');
        let domain_end = at + 1 + domain.len();
        if local.is_empty() || domain.is_empty() {
            continue;
        }
        let Some(domain) = ascii_domain(domain) else {
            continue;
        };
        let mut pushed = false;
        // The whole run, and the run less leading punctuation (`'bob@x.com'` is read as
        // `bob@x.com` too): erring toward finding the address the text means.
        let trimmed = local.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
        for l in [local, trimmed] {
            if l.is_empty() {
                continue;
            }
            let candidate = format!("{l}@{domain}");
            if let Ok(a) = Address::parse(&candidate) {
                push(
                    Kind::Email,
                    a.to_string().to_ascii_lowercase(),
                    at - l.len()..domain_end,
                );
                pushed = true;
            }
        }
        if pushed {
            domains.push(at + 1);
            taken.push(at - local.len()..at + 1 + domain_len);
        }
    }
    domains.sort_unstable();
    domains
}

/// A domain in ASCII: IDNA's ToASCII for one outside ASCII, else as it is.
fn ascii_domain(d: &str) -> Option<Cow<'_, str>> {
    if d.is_ascii() {
        Some(Cow::Borrowed(d))
    } else {
        idna::domain_to_ascii(d).ok().map(Cow::Owned)
    }
}

/// A host's canonical form: IDNA to ASCII, one trailing dot dropped, read by
/// [`parse_host`] (names in lower case, IPv4 in its dotted form, IPv6 in brackets).
pub fn canonical_host(h: &str) -> Option<String> {
    let h = h.strip_suffix('.').unwrap_or(h);
    let ascii = ascii_domain(h)?;
    let ascii = ascii.strip_suffix('.').unwrap_or(&ascii);
    parse_host(ascii).ok().map(|host| host.to_string())
}

/// The host, and the URL when it has a path, of one link as [`links::scan`] found it;
/// whether it was one. A host that written alone is no link (`http://intranet/x`, a last
/// label with digits) is not: an argument naming it plainly would not read as that host.
fn link_into(link: &str, span: Range<usize>, push: &mut Push<'_>) -> bool {
    let rest = match link.find("://") {
        Some(i) => link.get(i + 3..).unwrap_or(""),
        None => link,
    };
    // User info ends at the last `@` before the path (`user:pw;@host`); the host's
    // authority at the first `/ ? # \` or `;` after it (`host;param`).
    let at_end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let (user, after_user) = match rest.get(..at_end).and_then(|a| a.rfind('@')) {
        Some(i) => (rest.get(..i), rest.get(i + 1..).unwrap_or("")),
        None => (None, rest),
    };
    let end = after_user
        .find(['/', '?', '#', '\\', ';'])
        .unwrap_or(after_user.len());
    let (authority, tail) = after_user.split_at(end);
    let (host, port) = split_port(authority);
    let Some(host) = canonical_host(host).filter(|h| reads_as_link(h)) else {
        return false;
    };
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    let path = percent_decoded(&tail.get(..path_end).unwrap_or("").replace('\\', "/"));
    let path = path.trim_end_matches('/');
    let port = match port {
        Some(p) if p != "80" && p != "443" => format!(":{p}"),
        _ => String::new(),
    };
    if !path.is_empty() {
        push(Kind::Url, format!("{host}{port}{path}"), span.clone());
    }
    // What the link carries to its host beyond the page it asks for: the query and the
    // fragment, as one more value (`www.x.com?member=1a7b3d`), so that a link the agent
    // builds to a known host is placed by all it sends, not by its host alone.
    if let Some(carried) = carried(tail.get(path_end..).unwrap_or("")) {
        push(
            Kind::Url,
            format!("{host}{port}{path}{carried}"),
            span.clone(),
        );
    }
    // User info is sent to the host too (a client's login): a value of its own, written
    // with a scheme so that it reads back as itself (`bob@acme.com` alone is an address).
    if let Some(user) = user.filter(|u| !u.is_empty()) {
        push(
            Kind::Url,
            format!("https://{}@{host}{port}{path}", percent_decoded(user)),
            span.clone(),
        );
    }
    push(Kind::Host, host, span);
    true
}

/// A link's query and fragment (`?…`, `#…`, from the first of them), percent-decoded as a
/// path is; `None` when there is neither, or only an empty `?` or `#`.
fn carried(rest: &str) -> Option<String> {
    let rest = rest.trim_end_matches(['?', '#', '&']);
    (!rest.is_empty()).then(|| percent_decoded(rest))
}

/// The host (with its port) a URL value names: its text up to the first `/`, `?` or `#`.
/// The user-info form (`https://user@host/path`) names its host after the user info.
pub(crate) fn url_host(url: &str) -> &str {
    let rest = url.strip_prefix("https://").unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit('@').next().unwrap_or(authority);
    host.split(';').next().unwrap_or(host)
}

/// Whether `label` (lower-case ASCII) is a top-level domain of the registry
/// ([`tld_registry`]): where a look-alike dot before it is read as a dot ([`links`]).
pub(crate) fn registered_tld(label: &str) -> bool {
    tld_registry::registered(label)
}

/// Whether a canonical host, written alone, is a link (so an argument that names it plainly
/// reads as the same host): a name of two labels or more whose last is letters or `xn--`,
/// or an address.
pub(crate) fn reads_as_link(host: &str) -> bool {
    if host.starts_with('[') {
        return true;
    }
    let mut whole = false;
    links::scan(host, |l| {
        whole = l.text == host;
        false
    });
    whole
}

fn split_port(authority: &str) -> (&str, Option<&str>) {
    if authority.starts_with('[') {
        return match authority.find(']') {
            Some(end) => {
                let (h, rest) = authority.split_at(end + 1);
                (h, rest.strip_prefix(':').filter(|p| !p.is_empty()))
            }
            None => (authority, None),
        };
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => {
            (h, Some(p).filter(|p| !p.is_empty()))
        }
        _ => (authority, None),
    }
}

/// `%XX` that spells printable ASCII other than `/ ? # %` decoded.
fn percent_decoded(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut rest = path;
    while let Some(i) = rest.find('%') {
        out.push_str(rest.get(..i).unwrap_or(""));
        let after = rest.get(i + 1..).unwrap_or("");
        let decoded = after
            .get(..2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .filter(|b| (0x21..=0x7e).contains(b) && !matches!(b, b'/' | b'?' | b'#' | b'%'));
        match decoded {
            Some(b) => {
                out.push(char::from(b));
                rest = after.get(2..).unwrap_or("");
            }
            None => {
                out.push('%');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

// ---------------------------------------------------------------------------------------------
// IBANs, account numbers, phone numbers

/// IBAN lengths by country (ISO 13616 registry).
const IBAN_LENGTHS: &[(&str, usize)] = &[
    ("AD", 24),
    ("AE", 23),
    ("AL", 28),
    ("AT", 20),
    ("AZ", 28),
    ("BA", 20),
    ("BE", 16),
    ("BG", 22),
    ("BH", 22),
    ("BI", 27),
    ("BR", 29),
    ("BY", 28),
    ("CH", 21),
    ("CR", 22),
    ("CY", 28),
    ("CZ", 24),
    ("DE", 22),
    ("DJ", 27),
    ("DK", 18),
    ("DO", 28),
    ("EE", 20),
    ("EG", 29),
    ("ES", 24),
    ("FI", 18),
    ("FK", 18),
    ("FO", 18),
    ("FR", 27),
    ("GB", 22),
    ("GE", 22),
    ("GI", 23),
    ("GL", 18),
    ("GR", 27),
    ("GT", 28),
    ("HN", 28),
    ("HR", 21),
    ("HU", 28),
    ("IE", 22),
    ("IL", 23),
    ("IQ", 23),
    ("IS", 26),
    ("IT", 27),
    ("JO", 30),
    ("KW", 30),
    ("KZ", 20),
    ("LB", 28),
    ("LC", 32),
    ("LI", 21),
    ("LT", 20),
    ("LU", 20),
    ("LV", 21),
    ("LY", 25),
    ("MC", 27),
    ("MD", 24),
    ("ME", 22),
    ("MK", 19),
    ("MN", 20),
    ("MR", 27),
    ("MT", 31),
    ("MU", 30),
    ("NI", 28),
    ("NL", 18),
    ("NO", 15),
    ("OM", 23),
    ("PK", 24),
    ("PL", 28),
    ("PS", 29),
    ("PT", 25),
    ("QA", 29),
    ("RO", 24),
    ("RS", 22),
    ("RU", 33),
    ("SA", 24),
    ("SC", 31),
    ("SD", 18),
    ("SE", 24),
    ("SI", 19),
    ("SK", 24),
    ("SM", 27),
    ("SO", 23),
    ("ST", 25),
    ("SV", 28),
    ("TL", 23),
    ("TN", 24),
    ("TR", 26),
    ("UA", 29),
    ("VA", 22),
    ("VG", 24),
    ("XK", 20),
    ("YE", 30),
];

/// The registry's IBAN length of a country (two upper-case letters), looked up in a table
/// built once: an IBAN may start at any word of two letters, so this is asked often.
fn iban_length(country: [u8; 2]) -> Option<usize> {
    let [a, b] = country;
    if !(a.is_ascii_uppercase() && b.is_ascii_uppercase()) {
        return None;
    }
    let n = IBAN_BY_COUNTRY[usize::from(a - b'A') * 26 + usize::from(b - b'A')];
    (n > 0).then_some(usize::from(n))
}

/// [`IBAN_LENGTHS`] indexed by the country's two letters (0: none).
const IBAN_BY_COUNTRY: [u8; 26 * 26] = {
    let mut table = [0u8; 26 * 26];
    let mut i = 0;
    while i < IBAN_LENGTHS.len() {
        let (c, n) = IBAN_LENGTHS[i];
        let c = c.as_bytes();
        table[(c[0] - b'A') as usize * 26 + (c[1] - b'A') as usize] = n as u8;
        i += 1;
    }
    table
};

const IBAN_MIN: usize = 15;
const IBAN_MAX: usize = 34;

/// Whether `chars` (upper-case ASCII letters and digits) pass the ISO 7064 mod-97-10 check.
pub fn iban_check(chars: &[u8]) -> bool {
    if chars.len() < 5 {
        return false;
    }
    let (head, tail) = chars.split_at(4);
    let mut rem: u32 = 0;
    for &c in tail.iter().chain(head) {
        let v = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// The end of a gap between two groups at `i`, when a group follows it: spaces and tabs,
/// at most two line breaks (a value split across lines, or across a blank line), and at
/// most one `-` or `.` (`DE89-3704-…`, `DE89.3704.…`); `None` when no group follows.
fn gap_end(b: &[u8], i: usize, group: impl Fn(u8) -> bool) -> Option<usize> {
    let mut j = i;
    let (mut breaks, mut marks) = (0, 0);
    while let Some(&c) = b.get(j) {
        match c {
            b' ' | b'\t' | b'\r' => {}
            b'\n' => breaks += 1,
            b'-' | b'.' => marks += 1,
            _ => break,
        }
        j += 1;
        if j - i > 12 || breaks > 2 || marks > 1 {
            return None;
        }
    }
    (j > i && b.get(j).is_some_and(|&c| group(c))).then_some(j)
}

fn inside(taken: &[Range<usize>], at: usize) -> bool {
    let i = taken.partition_point(|r| r.start <= at);
    i > 0 && taken.get(i - 1).is_some_and(|r| r.contains(&at))
}

fn numbers_into(t: &str, taken: &[Range<usize>], push: &mut Push<'_>) {
    let b = t.as_bytes();
    let mut ibans: Vec<Range<usize>> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || b.get(i - 1).is_none_or(|&p| !is_word_byte(p));
        if boundary && iban_shaped(b, i) && !inside(taken, i) {
            let end = iban_at(b, i, push);
            ibans.push(i..end);
            i = end.max(i + 1);
            continue;
        }
        i += 1;
    }
    let mut skip: Vec<Range<usize>> = taken.iter().cloned().chain(ibans).collect();
    skip.sort_by_key(|r| r.start);
    digits_into(b, &skip, push);
}

/// Whether an IBAN may start at `i`: two letters and two digits (`DE89…`), or a country's
/// two letters and two digits with a gap among them (`DE 89 37…`, `DE8 937 …`).
fn iban_shaped(b: &[u8], i: usize) -> bool {
    let (Some(x), Some(y)) = (b.get(i), b.get(i + 1)) else {
        return false;
    };
    if !(x.is_ascii_alphabetic() && y.is_ascii_alphabetic()) {
        return false;
    }
    if b.get(i + 2).is_some_and(u8::is_ascii_digit) && b.get(i + 3).is_some_and(u8::is_ascii_digit)
    {
        return true;
    }
    let country = [x.to_ascii_uppercase(), y.to_ascii_uppercase()];
    if iban_length(country).is_none() {
        return false;
    }
    let mut j = i + 2;
    let mut digits = 0;
    while digits < 2 {
        match b.get(j) {
            Some(c) if c.is_ascii_digit() => {
                digits += 1;
                j += 1;
            }
            Some(c) if is_word_byte(*c) => return false,
            Some(_) => match gap_end(b, j, is_word_byte) {
                Some(next) => j = next,
                None => return false,
            },
            None => return false,
        }
    }
    true
}

/// Reads an IBAN (or, failing its check, an account number) starting at `i`; returns where
/// reading stopped.
fn iban_at(b: &[u8], i: usize, push: &mut Push<'_>) -> usize {
    let mut chars: Vec<u8> = Vec::with_capacity(IBAN_MAX);
    // gap[k]: a gap stands before chars[k]; ends[k]: the byte just after chars[k].
    let mut gap: Vec<bool> = Vec::with_capacity(IBAN_MAX + 1);
    let mut ends: Vec<usize> = Vec::with_capacity(IBAN_MAX);
    let mut j = i;
    let mut after_gap = false;
    while chars.len() < IBAN_MAX {
        match b.get(j) {
            Some(&c) if is_word_byte(c) => {
                chars.push(c.to_ascii_uppercase());
                gap.push(after_gap);
                after_gap = false;
                j += 1;
                ends.push(j);
            }
            Some(_) => match gap_end(b, j, is_word_byte) {
                Some(next) => {
                    after_gap = true;
                    j = next;
                }
                None => break,
            },
            None => break,
        }
    }
    // Whether chars[..n] ends at a group's end (a gap or the end of what was read follows).
    let ends_group = |n: usize| {
        n == chars.len() && !b.get(j).is_some_and(|&c| is_word_byte(c))
            || gap.get(n).copied().unwrap_or(false)
    };
    // Every length that holds: a country's own, or, for a country not in the table, each
    // length ending at a group's end whose check holds (a value then a word — `XX71…5650
    // today` — may hold by chance as well; both are read, the longest first).
    let registered = match chars.get(..2) {
        Some(&[a, b]) => iban_length([a, b]),
        _ => None,
    };
    let lens: Vec<usize> = match registered {
        Some(n) => (chars.len() >= n && ends_group(n) && iban_check(&chars[..n]))
            .then_some(n)
            .into_iter()
            .collect(),
        None => (IBAN_MIN..=chars.len())
            .rev()
            .filter(|&n| ends_group(n) && iban_check(&chars[..n]))
            .collect(),
    };
    if let Some(&longest) = lens.first() {
        for &n in &lens {
            let end = ends.get(n - 1).copied().unwrap_or(j);
            push(
                Kind::Iban,
                String::from_utf8_lossy(&chars[..n]).into_owned(),
                i..end,
            );
        }
        return ends.get(longest - 1).copied().unwrap_or(j);
    }
    // No IBAN: the word itself (up to its first gap), if it is an account number.
    let word = gap
        .iter()
        .skip(1)
        .position(|&g| g)
        .map_or(chars.len(), |p| p + 1);
    let token = &chars[..word];
    let digits = token.iter().filter(|c| c.is_ascii_digit()).count();
    let whole_word = word < chars.len() || !b.get(j).is_some_and(|&c| is_word_byte(c));
    let end = ends.get(word.saturating_sub(1)).copied().unwrap_or(j);
    if whole_word && (8..=IBAN_MAX).contains(&token.len()) && digits >= 6 {
        push(
            Kind::Account,
            String::from_utf8_lossy(token).into_owned(),
            i..end,
        );
    }
    end
}

/// Phone numbers and account numbers made of digits.
fn digits_into(b: &[u8], skip: &[Range<usize>], push: &mut Push<'_>) {
    let mut i = 0;
    while i < b.len() {
        let prev_ok = i == 0 || b.get(i - 1).is_none_or(|&p| !is_word_byte(p) && p != b'+');
        let c = b.get(i).copied().unwrap_or(0);
        let next_digit = b.get(i + 1).is_some_and(u8::is_ascii_digit);
        let starts = prev_ok
            && (c.is_ascii_digit() || ((c == b'+' || c == b'(') && next_digit))
            && !inside(skip, i);
        if !starts {
            i += 1;
            continue;
        }
        i = digit_run(b, i, push).max(i + 1);
    }
}

/// Reads one run of digit groups at `i`; returns where it stopped.
fn digit_run(b: &[u8], start: usize, push: &mut Push<'_>) -> usize {
    let plus = b.get(start) == Some(&b'+');
    let mut j = if plus { start + 1 } else { start };
    let mut groups: Vec<String> = vec![String::new()];
    let mut seps: Vec<u8> = Vec::new();
    let mut spaces_only = true;
    loop {
        match b.get(j) {
            Some(&c) if c.is_ascii_digit() => {
                if let Some(g) = groups.last_mut() {
                    g.push(char::from(c));
                }
                j += 1;
            }
            Some(b' ' | b'-' | b'.' | b'(' | b')' | b'/' | b'\n' | b'\t') => {
                // One or two separators, then a digit (or an opening parenthesis and a digit).
                let mut k = j;
                let mut run = Vec::new();
                while let Some(&s) = b.get(k) {
                    if matches!(s, b' ' | b'-' | b'.' | b'(' | b')' | b'/' | b'\n' | b'\t')
                        && run.len() < 3
                    {
                        run.push(s);
                        k += 1;
                    } else {
                        break;
                    }
                }
                let groups_so_far = groups.last().is_some_and(|g| !g.is_empty());
                if !b.get(k).is_some_and(u8::is_ascii_digit)
                    || run.iter().filter(|&&s| s == b'\n').count() > 1
                {
                    break;
                }
                if groups_so_far {
                    groups.push(String::new());
                }
                spaces_only &= run.iter().all(|s| matches!(s, b' ' | b'\t' | b'\n'));
                seps.extend(run);
                j = k;
            }
            _ => break,
        }
    }
    // A digit run glued to letters (`123abc`) is a word, not a number.
    if b.get(j).is_some_and(u8::is_ascii_alphabetic) {
        return j;
    }
    let groups: Vec<String> = groups.into_iter().filter(|g| !g.is_empty()).collect();
    let digits: String = groups.concat();
    let n = digits.len();
    let international = plus || (digits.starts_with("00") && groups.len() > 1);
    if international {
        let national = if plus {
            digits.as_str()
        } else {
            digits.get(2..).unwrap_or("")
        };
        if (7..=15).contains(&national.len()) {
            push(Kind::Phone, format!("+{national}"), start..j);
            return j;
        }
    }
    if groups.len() == 1 {
        if (8..=IBAN_MAX).contains(&n) {
            push(Kind::Account, digits, start..j);
        }
        return j;
    }
    if is_date(&groups, &seps) || is_ipv4(&groups, &seps) {
        return j;
    }
    if spaces_only {
        if (8..=IBAN_MAX).contains(&n) {
            push(Kind::Account, digits, start..j);
        }
        // Each long group alone too: two numbers on two lines are not only one number.
        for g in &groups {
            if (8..=IBAN_MAX).contains(&g.len()) {
                push(Kind::Account, g.clone(), start..j);
            }
        }
        return j;
    }
    if (7..=15).contains(&n) {
        push(Kind::Phone, digits, start..j);
    } else if (8..=IBAN_MAX).contains(&n) {
        push(Kind::Account, digits, start..j);
    }
    j
}

fn is_date(groups: &[String], seps: &[u8]) -> bool {
    let lens: Vec<usize> = groups.iter().map(String::len).collect();
    let date_seps = seps.iter().all(|s| matches!(s, b'-' | b'.' | b'/'));
    date_seps
        && matches!(
            lens.as_slice(),
            [4, 1..=2, 1..=2] | [1..=2, 1..=2, 4] | [1..=2, 1..=2, 2]
        )
}

fn is_ipv4(groups: &[String], seps: &[u8]) -> bool {
    groups.len() == 4 && seps.iter().all(|&s| s == b'.') && groups.iter().all(|g| g.len() <= 3)
}

// ---------------------------------------------------------------------------------------------
// Ids in text

/// `KEY: VALUE` and `KEY = VALUE` lines whose key names an id (YAML, logs, key-value text).
fn id_lines_into(t: &str, push: &mut Push<'_>) {
    if !t.contains(':') && !t.contains('=') {
        return;
    }
    for line in t.lines() {
        let l = line.trim_start();
        let l = l.strip_prefix("- ").unwrap_or(l).trim_start();
        let Some(sep) = l.find([':', '=']) else {
            continue;
        };
        let key = l.get(..sep).unwrap_or("").trim().trim_matches(['"', '\'']);
        if key.is_empty() || !is_id_key(key) {
            continue;
        }
        let value = l
            .get(sep + 1..)
            .unwrap_or("")
            .trim()
            .trim_end_matches(',')
            .trim_matches(['"', '\''])
            .trim();
        if value.is_empty() || value.contains(char::is_whitespace) {
            continue;
        }
        if let Some(id) = canonical_id(value) {
            push(Kind::Id, id, 0..0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<(Kind, String)> {
        in_text(text)
            .into_values()
            .into_iter()
            .map(|v| (v.kind, v.text))
            .collect()
    }

    fn has(text: &str, kind: Kind, value: &str) -> bool {
        texts(text).iter().any(|(k, v)| *k == kind && v == value)
    }

    /// Issue 30: a value the readers only made — a join of neighbouring strings, a decoded
    /// run — is marked so, and loses the mark once it is also found as written.
    #[test]
    fn test_values_only_joined_or_decoded_are_marked_made() {
        let joined = in_answer(r#"["DE8937040044", "0532013000"]"#);
        assert!(joined.contains("DE89370400440532013000"));
        assert!(joined.made("DE89370400440532013000"));
        let decoded = in_answer("ref REU4OTM3MDQwMDQ0MDUzMjAxMzAwMA==");
        assert!(decoded.contains("DE89370400440532013000"));
        assert!(decoded.made("DE89370400440532013000"));
        // Written out too, before or after: not made.
        for text in [
            r#"["DE8937040044", "0532013000", "DE89370400440532013000"]"#,
            r#"["DE89370400440532013000", "DE8937040044", "0532013000"]"#,
            "DE89370400440532013000 ref REU4OTM3MDQwMDQ0MDUzMjAxMzAwMA==",
            "ref REU4OTM3MDQwMDQ0MDUzMjAxMzAwMA== DE89 3704 0044 0532 0130 00",
        ] {
            let found = in_answer(text);
            assert!(found.contains("DE89370400440532013000"), "{text}");
            assert!(!found.made("DE89370400440532013000"), "{text}");
        }
        // What a plain reading finds is never made.
        let plain = in_answer("pay bob@acme.com");
        assert!(plain.contains("bob@acme.com") && !plain.made("bob@acme.com"));
    }

    #[test]
    fn test_iban_check_and_lengths() {
        assert!(iban_check(b"DE89370400440532013000"));
        assert!(iban_check(b"GB29NWBK60161331926819"));
        assert!(!iban_check(b"DE89370400440532013001"));
        assert!(!iban_check(b"US133000000121212121212"));
        assert!(has(
            "pay DE89 3704 0044 0532 0130 00 now",
            Kind::Iban,
            "DE89370400440532013000"
        ));
        assert!(has(
            "de89370400440532013000",
            Kind::Iban,
            "DE89370400440532013000"
        ));
        assert_eq!(
            texts("to DE89 3704 0044 0532 0130 00 and GB29 NWBK 6016 1331 9268 19."),
            vec![
                (Kind::Iban, "DE89370400440532013000".to_owned()),
                (Kind::Iban, "GB29NWBK60161331926819".to_owned()),
            ]
        );
    }

    #[test]
    fn test_a_failed_check_is_an_account_number() {
        assert_eq!(
            texts("send to US133000000121212121212 today"),
            vec![(Kind::Account, "US133000000121212121212".to_owned())]
        );
        assert_eq!(
            texts("acct 12345678 ref"),
            vec![(Kind::Account, "12345678".to_owned())]
        );
        assert!(texts("in 2024 we had 1234567 of them").is_empty());
    }

    #[test]
    fn test_phones_dates_and_addresses() {
        assert!(has("call +1 (555) 123-4567", Kind::Phone, "+15551234567"));
        assert!(has("call 0044 20 7946 0958", Kind::Phone, "+442079460958"));
        assert!(has("call 555-123-4567", Kind::Phone, "5551234567"));
        assert!(
            texts("on 2024-05-01 and 01.05.2024 at 10.0.0.1")
                .iter()
                .all(|(k, _)| *k == Kind::Host)
        );
    }

    #[test]
    fn test_emails_hosts_and_urls() {
        assert_eq!(
            texts("write to Bob@ACME.com."),
            vec![(Kind::Email, "bob@acme.com".to_owned())]
        );
        assert_eq!(
            texts("see HTTPS://Evil.COM./Pay%6Dent?x=1 now"),
            vec![
                (Kind::Url, "evil.com/Payment".to_owned()),
                (Kind::Url, "evil.com/Payment?x=1".to_owned()),
                (Kind::Host, "evil.com".to_owned()),
            ]
        );
        // What a link carries beyond its page is a value of its own; a bare `?` carries none.
        assert_eq!(
            texts("https://www.informations.com/?member=1a7b3d"),
            vec![
                (Kind::Url, "www.informations.com?member=1a7b3d".to_owned()),
                (Kind::Host, "www.informations.com".to_owned()),
            ]
        );
        assert!(has("x.com/a#k%3D1", Kind::Url, "x.com/a#k=1"));
        // Every URL form names its host for one of each and the seams.
        for (form, host) in [
            ("x.com:8080/a?k=1", "x.com:8080"),
            ("https://team:k;@x.com/a", "x.com"),
            ("x.com;k", "x.com"),
        ] {
            assert_eq!(url_host(form), host);
        }
        assert_eq!(texts("see https://x.com/?").len(), 1);
        assert!(has("at https://x.com:8080/a/", Kind::Url, "x.com:8080/a"));
        assert!(has("https://acme.com@evil.com/x", Kind::Host, "evil.com"));
        assert!(has("http://2130706433/", Kind::Host, "127.0.0.1"));
    }

    #[test]
    fn test_ids_in_json_and_lines() {
        let f = in_answer(r#"{"files":[{"id":"f-13","name":"a"},{"file_id":7}],"ownerId":"u9"}"#);
        for id in ["f-13", "7", "u9"] {
            assert!(f.contains(id), "{id}: {:?}", f.values());
        }
        assert!(!f.contains("a"));
        let f = in_answer("- id_: '13'\n  sender: bob@acme.com\n  note = x");
        assert!(
            f.contains("13") && f.contains("bob@acme.com"),
            "{:?}",
            f.values()
        );
        // JSON inside a text block.
        let f = in_answer(
            r#"{"content":[{"type":"text","text":"{\"id\": \"abc\", \"to\": \"DE89370400440532013000\"}"}]}"#,
        );
        assert!(
            f.contains("abc") && f.contains("DE89370400440532013000"),
            "{:?}",
            f.values()
        );
    }

    #[test]
    fn test_arguments_fall_back_to_the_whole_value() {
        let f = in_argument(&serde_json::json!("Alice"));
        assert_eq!(
            f.values(),
            [Ident {
                kind: Kind::Id,
                text: "Alice".into()
            }]
        );
        let f = in_argument(&serde_json::json!(["DE89370400440532013000", 17, true]));
        assert!(f.contains("DE89370400440532013000") && f.contains("17"));
        assert_eq!(f.len(), 2);
        let f = in_arguments(&serde_json::json!({"to": "bob@acme.com"}));
        assert!(f.contains("bob@acme.com"));
    }
}
