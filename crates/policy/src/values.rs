//! Identifying values (docs/spec.md §3.7 "Provenance"): the e-mail addresses, URLs and host
//! names, IBANs and account numbers, phone numbers and ids that an answer shows and an
//! argument carries, each in **one canonical form**, so that the value a call carries can be
//! looked up among the values earlier answers showed, however either was written.
//!
//! **Reading the text.** Before anything is looked for, a text is read as a person sees it:
//! Unicode NFKC (full-width `ＤＥ８９` is `DE89`, `ﬁ` is `fi`), then [`links::normalize`]:
//! invisible characters dropped (zero-width spaces and joiners, bidirectional marks …),
//! look-alike dots made dots, `%XX` and HTML references decoded, defanged dots undone, and
//! a line break inside a name joined (`evil.⏎com`). When the text holds a letter of another
//! script that looks like a Latin one (Cyrillic `а`, Greek `Ο` …), it is read a second time
//! with those letters made Latin, and what that reading finds counts too: an IBAN or a host
//! written with one Cyrillic letter is also the value a model that "corrects" it would use.
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
//!   not part of it (the host is the destination, the path what is asked of it; a query
//!   carries data, not a destination). A URL is also its host;
//! - an **IBAN**: two letters, two digits and up to 30 letters or digits, in groups split by
//!   white space (one line break at most between two groups: a value split across lines),
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
//! label with digits), an address whose local part is outside ASCII (its domain is then a host), an
//! address split across lines at its `@`, a number split by anything but the separators
//! above. Each of these is also not found in the argument that carries it, so both readings
//! agree.

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
    overflow: bool,
}

impl Found {
    /// Nothing found yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn push(&mut self, kind: Kind, text: String) {
        if self.texts.contains(&text) {
            return;
        }
        if self.values.len() >= MAX_VALUES {
            self.overflow = true;
            return;
        }
        self.texts.insert(text.clone());
        self.values.push(Ident { kind, text });
    }

    fn absorb(&mut self, other: Found) {
        self.overflow |= other.overflow;
        for v in other.values {
            self.push(v.kind, v.text);
        }
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

/// Every identifying value an answer shows: its text, or, when it is JSON, every string in
/// it (JSON inside a string too, a few levels deep) and every id field.
pub fn in_answer(content: &str) -> Found {
    let mut out = Found::new();
    answer_into(content, 0, &mut out);
    out
}

fn answer_into(content: &str, depth: usize, out: &mut Found) {
    if depth < MAX_NESTED_JSON
        && content.trim_start().starts_with(['{', '['])
        && let Ok(v) = serde_json::from_str::<Value>(content)
    {
        json_into(&v, false, depth, out);
        return;
    }
    text_into(content, out);
}

fn json_into(v: &Value, id_field: bool, depth: usize, out: &mut Found) {
    match v {
        Value::String(s) => {
            if id_field && let Some(id) = canonical_id(s) {
                out.push(Kind::Id, id);
            }
            answer_into(s, depth + 1, out);
        }
        Value::Number(n) => {
            let text = n.to_string();
            if id_field {
                out.push(Kind::Id, text.clone());
            }
            text_into(&text, out);
        }
        Value::Array(items) => {
            for item in items {
                json_into(item, id_field, depth, out);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                json_into(item, is_id_key(k), depth, out);
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

/// The values a condition looks up for what its pointer found (docs/spec.md §3.7): at every
/// string or number under it, each identifying value it carries — or, when it carries none,
/// the whole of it as an id (so a value nothing here can read still has to have been seen).
/// Booleans and `null` carry none.
pub fn in_argument(v: &Value) -> Found {
    let mut out = Found::new();
    leaves(v, &mut |leaf| {
        let mut one = Found::new();
        text_into(leaf, &mut one);
        if one.is_empty()
            && let Some(id) = canonical_id(leaf)
        {
            one.push(Kind::Id, id);
        }
        out.absorb(one);
    });
    out
}

/// Every value a call's arguments carry, for the echo guard: at every string or number, each
/// identifying value it carries and the whole of it as an id.
pub fn in_arguments(v: &Value) -> Found {
    let mut out = Found::new();
    leaves(v, &mut |leaf| {
        text_into(leaf, &mut out);
        if let Some(id) = canonical_id(leaf) {
            out.push(Kind::Id, id);
        }
    });
    out
}

/// The values a literal of the config stands for (a `[lists]` entry, an `equals`): as
/// [`in_argument`] reads it.
pub fn in_literal(text: &str) -> Found {
    in_argument(&Value::String(text.to_owned()))
}

fn leaves(v: &Value, f: &mut impl FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Number(n) => f(&n.to_string()),
        Value::Array(items) => items.iter().for_each(|i| leaves(i, f)),
        Value::Object(map) => map.values().for_each(|i| leaves(i, f)),
        Value::Bool(_) | Value::Null => {}
    }
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

/// Text as it reads (see the module's docs): NFKC and invisible characters dropped, then
/// [`links::normalize`]. Borrowed when nothing changes.
pub fn prepare(text: &str) -> Cow<'_, str> {
    let nfkc: Cow<'_, str> = if text.is_ascii() {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfkc().filter(|c| !is_invisible(*c)).collect())
    };
    let normalized = links::normalize(&nfkc).into_owned_if_changed();
    match normalized {
        Some(s) => Cow::Owned(s),
        None => nfkc,
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

/// Every identifying value in free text (not JSON): see the module's docs.
pub fn in_text(text: &str) -> Found {
    let mut out = Found::new();
    text_into(text, &mut out);
    out
}

fn text_into(text: &str, out: &mut Found) {
    let t = prepare(text);
    read_into(&t, out);
    if !t.is_ascii() {
        let latin = skeleton(&t);
        if latin != *t {
            read_into(&latin, out);
        }
    }
}

/// One reading of prepared text.
fn read_into(t: &str, out: &mut Found) {
    // Bytes inside an address or a link are not read again as numbers.
    let mut taken: Vec<Range<usize>> = Vec::new();
    let domains = emails_into(t, out, &mut taken);
    links::scan(t, |link| {
        let start = offset_in(t, link.text);
        let domain = domains.binary_search(&start).is_ok();
        if domain || link_into(link.text, out) {
            taken.push(start..start + link.text.len());
        }
        true
    });
    taken.sort_by_key(|r| r.start);
    numbers_into(t, &taken, out);
    id_lines_into(t, out);
}

/// Where `part`, a slice of `whole`, starts in it.
fn offset_in(whole: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(whole.as_ptr() as usize)
}

/// Latin letters for the Cyrillic and Greek ones that look like them; everything else as it is.
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
fn emails_into(t: &str, out: &mut Found, taken: &mut Vec<Range<usize>>) -> Vec<usize> {
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
                out.push(Kind::Email, a.to_string().to_ascii_lowercase());
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
fn link_into(link: &str, out: &mut Found) -> bool {
    let rest = match link.find("://") {
        Some(i) => link.get(i + 3..).unwrap_or(""),
        None => link,
    };
    let end = rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let authority = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = split_port(authority);
    let Some(host) = canonical_host(host).filter(|h| reads_as_link(h)) else {
        return false;
    };
    let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
    let path = percent_decoded(&tail.get(..path_end).unwrap_or("").replace('\\', "/"));
    let path = path.trim_end_matches('/');
    if !path.is_empty() {
        let port = match port {
            Some(p) if p != "80" && p != "443" => format!(":{p}"),
            _ => String::new(),
        };
        out.push(Kind::Url, format!("{host}{port}{path}"));
    }
    out.push(Kind::Host, host);
    true
}

/// Whether a canonical host, written alone, is a link (so an argument that names it plainly
/// reads as the same host): a name of two labels or more whose last is letters or `xn--`,
/// or an address.
fn reads_as_link(host: &str) -> bool {
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

/// The end of a gap between two groups at `i` (spaces and tabs, with at most one line
/// break), when a group follows it; `None` when no group does.
fn gap_end(b: &[u8], i: usize, group: impl Fn(u8) -> bool) -> Option<usize> {
    let mut j = i;
    let mut breaks = 0;
    while let Some(&c) = b.get(j) {
        match c {
            b' ' | b'\t' => {}
            b'\n' => breaks += 1,
            b'\r' => {}
            _ => break,
        }
        j += 1;
        if j - i > 8 || breaks > 1 {
            return None;
        }
    }
    (j > i && b.get(j).is_some_and(|&c| group(c))).then_some(j)
}

fn inside(taken: &[Range<usize>], at: usize) -> bool {
    let i = taken.partition_point(|r| r.start <= at);
    i > 0 && taken.get(i - 1).is_some_and(|r| r.contains(&at))
}

fn numbers_into(t: &str, taken: &[Range<usize>], out: &mut Found) {
    let b = t.as_bytes();
    let mut ibans: Vec<Range<usize>> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || b.get(i - 1).is_none_or(|&p| !is_word_byte(p));
        let shaped = matches!(
            (b.get(i), b.get(i + 1), b.get(i + 2), b.get(i + 3)),
            (Some(a), Some(c), Some(d), Some(e))
                if a.is_ascii_alphabetic() && c.is_ascii_alphabetic()
                    && d.is_ascii_digit() && e.is_ascii_digit()
        );
        if boundary && shaped && !inside(taken, i) {
            let end = iban_at(b, i, out);
            ibans.push(i..end);
            i = end.max(i + 1);
            continue;
        }
        i += 1;
    }
    let mut skip: Vec<Range<usize>> = taken.iter().cloned().chain(ibans).collect();
    skip.sort_by_key(|r| r.start);
    digits_into(b, &skip, out);
}

/// Reads an IBAN (or, failing its check, an account number) starting at `i`; returns where
/// reading stopped.
fn iban_at(b: &[u8], i: usize, out: &mut Found) -> usize {
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
    let country = chars.get(..2).and_then(|c| std::str::from_utf8(c).ok());
    let len = match country.and_then(|c| IBAN_LENGTHS.iter().find(|(k, _)| *k == c)) {
        Some(&(_, n)) => {
            (chars.len() >= n && ends_group(n) && iban_check(&chars[..n])).then_some(n)
        }
        None => (IBAN_MIN..=chars.len())
            .rev()
            .find(|&n| ends_group(n) && iban_check(&chars[..n])),
    };
    if let Some(n) = len {
        out.push(
            Kind::Iban,
            String::from_utf8_lossy(&chars[..n]).into_owned(),
        );
        return ends.get(n - 1).copied().unwrap_or(j);
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
    if whole_word && (8..=IBAN_MAX).contains(&token.len()) && digits >= 6 {
        out.push(Kind::Account, String::from_utf8_lossy(token).into_owned());
    }
    ends.get(word.saturating_sub(1)).copied().unwrap_or(j)
}

/// Phone numbers and account numbers made of digits.
fn digits_into(b: &[u8], skip: &[Range<usize>], out: &mut Found) {
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
        i = digit_run(b, i, out).max(i + 1);
    }
}

/// Reads one run of digit groups at `i`; returns where it stopped.
fn digit_run(b: &[u8], start: usize, out: &mut Found) -> usize {
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
            out.push(Kind::Phone, format!("+{national}"));
            return j;
        }
    }
    if groups.len() == 1 {
        if (8..=IBAN_MAX).contains(&n) {
            out.push(Kind::Account, digits);
        }
        return j;
    }
    if is_date(&groups, &seps) || is_ipv4(&groups, &seps) {
        return j;
    }
    if spaces_only {
        if (8..=IBAN_MAX).contains(&n) {
            out.push(Kind::Account, digits);
        }
        // Each long group alone too: two numbers on two lines are not only one number.
        for g in &groups {
            if (8..=IBAN_MAX).contains(&g.len()) {
                out.push(Kind::Account, g.clone());
            }
        }
        return j;
    }
    if (7..=15).contains(&n) {
        out.push(Kind::Phone, digits);
    } else if (8..=IBAN_MAX).contains(&n) {
        out.push(Kind::Account, digits);
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
fn id_lines_into(t: &str, out: &mut Found) {
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
            out.push(Kind::Id, id);
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
                (Kind::Host, "evil.com".to_owned()),
            ]
        );
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
