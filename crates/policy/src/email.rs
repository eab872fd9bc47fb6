//! One e-mail address, as the `email` test reads it (docs/spec.md §3.3 "Typed conditions").
//!
//! A string is an address only when it is **exactly one** RFC 5321 addr-spec,
//! `local@domain`, that a person can read: the local part a dot-atom of ASCII letters,
//! digits and ``#$&'*+-/=?^_`{|}~`` (no leading, trailing or double dot, at most 64
//! characters), the domain a host name ([`crate::host`]: ASCII, no address literal, one
//! trailing dot ignored), at most 254 characters in all. Everything else is refused, with
//! the reason:
//! - a list (`,` or `;`), a display name or angle brackets (`Bob <bob@acme.com>`), a group
//!   (`team: a@b;`), a comment (`(…)`), a quoted local part (`"a b"@acme.com` — no person
//!   reads those reliably), any line break (a header injected after `\r\n`), white space or
//!   control character, more than one `@`;
//! - anything outside ASCII, in either part: a look-alike (`bob@аcme.com`, Cyrillic `а`) is
//!   never `acme.com`; an international domain is written in its `xn--` form;
//! - `%` and `!` in the local part: some mail servers still route `a%evil.com@acme.com` and
//!   `evil.com!a@acme.com` on to another host.
//!
//! The domain is compared case-insensitively; the local part **exactly** (RFC 5321 §2.4: only
//! the domain's own server knows whether `Bob` and `bob` are one mailbox; a mismatch fails
//! the grant closed — the call falls to the next grant, an approval at worst — where
//! treating them as one could send to a mailbox the list does not name).

use std::cmp::Ordering;
use std::fmt;

use crate::host::{Host, HostError, parse_host};

/// Longest address (RFC 5321 §4.5.3.1: a path of 256 less the angle brackets).
const MAX_ADDRESS: usize = 254;
/// Longest local part (RFC 5321 §4.5.3.1.1).
const MAX_LOCAL: usize = 64;

/// A checked address: its local part as written and its domain without a trailing dot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address<'a> {
    local: &'a str,
    domain: &'a str,
}

/// Why a string is not one e-mail address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotAddress {
    #[error("it is empty")]
    Empty,
    #[error("it holds a line break")]
    LineBreak,
    #[error("it holds a list (a {0:?})")]
    List(char),
    #[error("it has a display name or angle brackets")]
    DisplayName,
    #[error("it has a comment in parentheses")]
    Comment,
    #[error("it has a quoted local part")]
    Quoted,
    #[error("it holds white space or a control character ({0:?})")]
    Space(char),
    #[error("it holds {0:?} (U+{code:04X}), which is not ASCII", code = u32::from(*.0))]
    NotAscii(char),
    #[error("it has no @")]
    NoAt,
    #[error("it has more than one @")]
    ManyAt,
    #[error("its domain is an address literal in brackets")]
    Literal,
    #[error("its local part is empty")]
    EmptyLocal,
    #[error("its local part is longer than 64 characters")]
    LongLocal,
    #[error("it is longer than 254 characters")]
    TooLong,
    #[error("its local part holds {0:?}, which some servers read as a route to another host")]
    Route(char),
    #[error("its local part holds {0:?}, which an address cannot hold unquoted")]
    BadLocal(char),
    #[error("its local part has a dot at its start or end, or two in a row")]
    Dots,
    #[error("its domain is an IP address, not a name")]
    IpDomain,
    #[error("its domain is not a host name: {0}")]
    Domain(HostError),
}

impl<'a> Address<'a> {
    /// Reads `s` as exactly one address.
    pub fn parse(s: &'a str) -> Result<Self, NotAddress> {
        if s.is_empty() {
            return Err(NotAddress::Empty);
        }
        // The reasons a person would give, most telling first; an address of only the
        // characters an address holds needs none of them.
        let plain = s
            .bytes()
            .all(|b| (b.is_ascii() && is_atext(char::from(b))) || b == b'.' || b == b'@');
        if !plain {
            return Self::refuse(s);
        }
        Self::structure(s)
    }

    /// Why `s`, which holds something an address does not, is not one.
    fn refuse(s: &'a str) -> Result<Self, NotAddress> {
        if s.contains(['\r', '\n', '\u{85}', '\u{2028}', '\u{2029}']) {
            return Err(NotAddress::LineBreak);
        }
        if let Some(c) = s.chars().find(|c| matches!(c, ',' | ';')) {
            return Err(NotAddress::List(c));
        }
        if s.contains(['<', '>']) {
            return Err(NotAddress::DisplayName);
        }
        if s.contains(['(', ')']) {
            return Err(NotAddress::Comment);
        }
        if s.contains('"') {
            return Err(NotAddress::Quoted);
        }
        if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(NotAddress::Space(c));
        }
        if let Some(c) = s.chars().find(|c| !c.is_ascii()) {
            return Err(NotAddress::NotAscii(c));
        }
        Self::structure(s)
    }

    /// The parts of `s`, which holds only ASCII without white space, and their checks.
    fn structure(s: &'a str) -> Result<Self, NotAddress> {
        let (local, domain) = s.split_once('@').ok_or(NotAddress::NoAt)?;
        if domain.contains('@') {
            return Err(NotAddress::ManyAt);
        }
        if s.len() > MAX_ADDRESS {
            return Err(NotAddress::TooLong);
        }
        if local.is_empty() {
            return Err(NotAddress::EmptyLocal);
        }
        if local.len() > MAX_LOCAL {
            return Err(NotAddress::LongLocal);
        }
        if let Some(c) = local.chars().find(|c| matches!(c, '%' | '!')) {
            return Err(NotAddress::Route(c));
        }
        if let Some(c) = local.chars().find(|&c| !is_atext(c) && c != '.') {
            return Err(NotAddress::BadLocal(c));
        }
        if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
            return Err(NotAddress::Dots);
        }
        if domain.starts_with('[') {
            return Err(NotAddress::Literal);
        }
        match parse_host(domain) {
            Ok(Host::Name(d)) => Ok(Self { local, domain: d }),
            Ok(Host::Ip(_)) => Err(NotAddress::IpDomain),
            Err(e) => Err(NotAddress::Domain(e)),
        }
    }

    /// The local part, as written.
    pub fn local(&self) -> &'a str {
        self.local
    }

    /// The domain, as a host name.
    pub fn domain(&self) -> Host<'a> {
        Host::Name(self.domain)
    }

    /// Compares the address with a canonical one (`local@domain`, domain in lower case):
    /// the local part exactly, the domain ignoring case. Never allocates.
    pub fn cmp_canonical(&self, canonical: &str) -> Ordering {
        self.local
            .bytes()
            .chain(std::iter::once(b'@'))
            .chain(self.domain.bytes().map(|b| b.to_ascii_lowercase()))
            .cmp(canonical.bytes())
    }
}

impl fmt::Display for Address<'_> {
    /// The canonical form: the local part as written, `@`, the domain in lower case.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.local, self.domain())
    }
}

/// RFC 5322 `atext`, less `%` and `!` (refused before with their own reason).
pub(crate) fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '#' | '$'
                | '&'
                | '\''
                | '*'
                | '+'
                | '-'
                | '/'
                | '='
                | '?'
                | '^'
                | '_'
                | '`'
                | '{'
                | '|'
                | '}'
                | '~'
        )
}

/// The canonical form of an address the config names (`Ann@ACME.com.` is
/// `Ann@acme.com`), or why it is not one.
pub fn canonical(s: &str) -> Result<String, NotAddress> {
    Address::parse(s).map(|a| a.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn not(s: &str) -> NotAddress {
        match Address::parse(s) {
            Ok(a) => panic!("{s:?} read as the address {a}"),
            Err(e) => e,
        }
    }

    #[test]
    fn test_one_plain_address_is_read() {
        let a = Address::parse("Bob.Smith+news@ACME.com.").unwrap();
        assert_eq!(a.local(), "Bob.Smith+news");
        assert_eq!(a.domain().to_string(), "acme.com");
        assert_eq!(a.to_string(), "Bob.Smith+news@acme.com");
        assert_eq!(a.cmp_canonical("Bob.Smith+news@acme.com"), Ordering::Equal);
        assert_ne!(a.cmp_canonical("bob.smith+news@acme.com"), Ordering::Equal);
        assert!(Address::parse("x@localhost").is_ok());
        assert!(Address::parse("o'brien@acme.com").is_ok());
    }

    #[test]
    fn test_everything_that_is_not_one_address_is_refused_with_its_reason() {
        assert_eq!(not("evil@x.com, bob@acme.com"), NotAddress::List(','));
        assert_eq!(not("evil@x.com;bob@acme.com"), NotAddress::List(';'));
        assert_eq!(not("evil@x.com\r\nBcc: a@acme.com"), NotAddress::LineBreak);
        assert_eq!(not("bob@acme.com\n"), NotAddress::LineBreak);
        assert_eq!(not("a@acme.com\u{2028}"), NotAddress::LineBreak);
        assert_eq!(not("Bob <bob@acme.com>"), NotAddress::DisplayName);
        assert_eq!(not("<evil@x.com>"), NotAddress::DisplayName);
        assert_eq!(not("bob(evil@x.com)@acme.com"), NotAddress::Comment);
        assert_eq!(not("\"evil@x.com\"@acme.com"), NotAddress::Quoted);
        assert_eq!(not("team: a@acme.com"), NotAddress::Space(' '));
        assert_eq!(not("team:a@acme.com"), NotAddress::BadLocal(':'));
        assert_eq!(not("bob@acme.com\t"), NotAddress::Space('\t'));
        assert_eq!(not("bob@acme.com\0"), NotAddress::Space('\0'));
        assert_eq!(not("bob@acme.com\u{a0}"), NotAddress::Space('\u{a0}'));
        assert_eq!(not("bob@\u{430}cme.com"), NotAddress::NotAscii('\u{430}'));
        assert_eq!(
            not("b\u{200b}ob@acme.com"),
            NotAddress::NotAscii('\u{200b}')
        );
        assert_eq!(not("bob@acme\u{ff0e}com"), NotAddress::NotAscii('\u{ff0e}'));
        assert_eq!(not("bob.acme.com"), NotAddress::NoAt);
        assert_eq!(not("evil@x.com@acme.com"), NotAddress::ManyAt);
        assert_eq!(not("bob@[10.0.0.1]"), NotAddress::Literal);
        assert_eq!(not("bob@10.0.0.1"), NotAddress::IpDomain);
        assert_eq!(not("bob@0x7f.1"), NotAddress::IpDomain);
        assert_eq!(not("@acme.com"), NotAddress::EmptyLocal);
        assert_eq!(not("a%evil.com@acme.com"), NotAddress::Route('%'));
        assert_eq!(not("evil.com!a@acme.com"), NotAddress::Route('!'));
        assert_eq!(not("a\\b@acme.com"), NotAddress::BadLocal('\\'));
        assert_eq!(not(".bob@acme.com"), NotAddress::Dots);
        assert_eq!(not("bob.@acme.com"), NotAddress::Dots);
        assert_eq!(not("b..ob@acme.com"), NotAddress::Dots);
        assert_eq!(not("bob@"), NotAddress::Domain(HostError::Empty));
        assert_eq!(
            not("bob@acme..com"),
            NotAddress::Domain(HostError::EmptyLabel)
        );
        assert_eq!(
            not("bob@acme.com%0a"),
            NotAddress::Domain(HostError::Percent)
        );
        assert_eq!(not(""), NotAddress::Empty);
        assert_eq!(
            not(&format!("{}@acme.com", "a".repeat(65))),
            NotAddress::LongLocal
        );
        assert_eq!(
            not(&format!("a@{}.com", ["b".repeat(62).as_str(); 4].join("."))),
            NotAddress::TooLong
        );
    }

    #[test]
    fn test_canonical_lowers_only_the_domain() {
        assert_eq!(canonical("Ann@ACME.com.").unwrap(), "Ann@acme.com");
        assert!(canonical("Ann <ann@acme.com>").is_err());
    }
}
