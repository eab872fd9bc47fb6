//! Host names and addresses as destinations (docs/spec.md §3.3 "Typed conditions"), for the
//! `email`, `url` and `links` tests.
//!
//! A host is read as what it is, never compared as raw text:
//! - a **name** is ASCII letters, digits, `-` and `_` between dots (1 to 63 each, not
//!   starting or ending with `-`), at most 253 characters, one trailing dot ignored,
//!   compared case-insensitively. Anything else is refused: a name outside ASCII (write an
//!   international name in its `xn--` form; a look-alike such as Cyrillic `а` in `аcme.com`
//!   is then never the same name), percent-encoding, white space, an empty label;
//! - an **IPv4 address** in any spelling a browser accepts (`127.0.0.1`, `0x7f.1`,
//!   `2130706433`, `0177.0.0.1`): a host whose last label is a number is read as an address
//!   or refused, never taken as a name;
//! - an **IPv6 address** in brackets (`[::1]`); an IPv4-mapped one (`[::ffff:10.0.0.1]`) is
//!   its IPv4 address.
//!
//! [`HostSet`] holds the hosts a condition allows: exact names, every name below a name
//! (`*.acme.com`, which is not `acme.com` itself), and addresses. Matching never allocates.

use std::cmp::Ordering;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Longest host name (RFC 1035, without the trailing dot).
const MAX_NAME: usize = 253;

/// A host read from a value: a checked name (as written, any case, without its trailing
/// dot) or an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host<'a> {
    Name(&'a str),
    Ip(IpAddr),
}

impl fmt::Display for Host<'_> {
    /// The canonical form: a name in lower case, an IPv6 address in brackets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => {
                for c in n.chars() {
                    write!(f, "{}", c.to_ascii_lowercase())?;
                }
                Ok(())
            }
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Host::Ip(a) => write!(f, "{a}"),
        }
    }
}

/// Why a string is not a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    #[error("it is empty")]
    Empty,
    #[error("it holds {0:?} (U+{code:04X}), which is not ASCII (write an international name in its xn-- form)", code = u32::from(*.0))]
    NotAscii(char),
    #[error("it holds percent-encoding")]
    Percent,
    #[error("it holds {0:?}, which no host name holds")]
    BadChar(char),
    #[error("it has an empty part between dots")]
    EmptyLabel,
    #[error("a part between dots is longer than 63 characters")]
    LongLabel,
    #[error("a part between dots starts or ends with `-`")]
    Hyphen,
    #[error("it is longer than 253 characters")]
    TooLong,
    #[error("its last part is a number, but it is not an IPv4 address")]
    BadIpv4,
    #[error("it is in brackets but not an IPv6 address")]
    BadIpv6,
}

/// Reads `s` as a host: a name, an IPv4 address in any spelling, or a bracketed IPv6
/// address.
pub fn parse_host(s: &str) -> Result<Host<'_>, HostError> {
    if let Some(inner) = s.strip_prefix('[') {
        let inner = inner.strip_suffix(']').ok_or(HostError::BadIpv6)?;
        let a: Ipv6Addr = inner.parse().map_err(|_| HostError::BadIpv6)?;
        return Ok(Host::Ip(match a.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(a),
        }));
    }
    let name = s.strip_suffix('.').unwrap_or(s);
    if name.is_empty() {
        return Err(HostError::Empty);
    }
    if let Some(c) = name.chars().find(|c| !c.is_ascii()) {
        return Err(HostError::NotAscii(c));
    }
    if name.contains('%') {
        return Err(HostError::Percent);
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(HostError::BadChar(c));
    }
    let last = name.rsplit('.').next().unwrap_or(name);
    if ends_in_number(last) {
        return parse_ipv4(name).map(|a| Host::Ip(IpAddr::V4(a)));
    }
    if name.len() > MAX_NAME {
        return Err(HostError::TooLong);
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Err(HostError::EmptyLabel);
        }
        if label.len() > 63 {
            return Err(HostError::LongLabel);
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(HostError::Hyphen);
        }
    }
    Ok(Host::Name(name))
}

/// A last label that makes a host an IPv4 address (the URL Standard's "ends in a number"):
/// decimal digits, or `0x` and hex digits.
fn ends_in_number(label: &str) -> bool {
    if !label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()) {
        return true;
    }
    label
        .strip_prefix("0x")
        .or_else(|| label.strip_prefix("0X"))
        .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// An IPv4 address as the URL Standard reads it: 1 to 4 parts, each decimal, octal (a
/// leading `0`) or hex (`0x`); the last fills the bytes that are left.
fn parse_ipv4(s: &str) -> Result<Ipv4Addr, HostError> {
    let mut parts = [0u64; 4];
    let mut n = 0usize;
    for part in s.split('.') {
        let slot = parts.get_mut(n).ok_or(HostError::BadIpv4)?;
        *slot = ipv4_number(part).ok_or(HostError::BadIpv4)?;
        n += 1;
    }
    let (head, last) = match n {
        1..=4 => (parts.get(..n - 1).unwrap_or(&[]), parts[n - 1]),
        _ => return Err(HostError::BadIpv4),
    };
    if head.iter().any(|&p| p > 255) || last >= 1u64 << (8 * (5 - n)) {
        return Err(HostError::BadIpv4);
    }
    let mut value = last;
    for (i, &p) in head.iter().enumerate() {
        value += p << (8 * (3 - i));
    }
    u32::try_from(value)
        .map(Ipv4Addr::from)
        .map_err(|_| HostError::BadIpv4)
}

fn ipv4_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (digits, radix) = if let Some(h) = part.strip_prefix("0x").or(part.strip_prefix("0X")) {
        (h, 16)
    } else if part.len() > 1 && part.starts_with('0') {
        (&part[1..], 8)
    } else {
        (part, 10)
    };
    if digits.is_empty() {
        return Some(0);
    }
    // Longer than any 32-bit value in any base: refuse rather than overflow.
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Compares an ASCII name with a lower-case one, ignoring the first one's case.
fn cmp_ci(lower: &str, name: &str) -> Ordering {
    lower
        .bytes()
        .cmp(name.bytes().map(|b| b.to_ascii_lowercase()))
}

/// Why a host pattern in the config is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostPatternError {
    #[error(
        "{0:?} is not a host pattern: write a name (`acme.com`), every name below one (`*.acme.com`) or an address; for any host, leave the hosts out"
    )]
    Wildcard(String),
    #[error("{text:?} is not a host: {why}")]
    Host { text: String, why: HostError },
    #[error("{0:?} is an address; e-mail domains are names")]
    Address(String),
}

/// The hosts a condition allows: exact names, every name below a name, and addresses,
/// with the `[lists]` name they came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostSet {
    name: Option<String>,
    /// Lower case, sorted.
    exact: Vec<String>,
    /// `.suffix`, lower case, sorted: `*.acme.com` is `.acme.com`.
    below: Vec<String>,
    ips: Vec<IpAddr>,
    /// The patterns as the config wrote them (for `explain`).
    written: Vec<String>,
}

impl HostSet {
    /// A set of `patterns` (`acme.com`, `*.acme.com`, `10.0.0.1`, `[::1]`); `name` is the
    /// `[lists]` key they came from, `None` when inline. `names_only` refuses addresses
    /// (an e-mail domain).
    pub fn new<'a>(
        name: Option<String>,
        patterns: impl IntoIterator<Item = &'a str>,
        names_only: bool,
    ) -> Result<Self, HostPatternError> {
        let mut set = Self {
            name,
            exact: Vec::new(),
            below: Vec::new(),
            ips: Vec::new(),
            written: Vec::new(),
        };
        for p in patterns {
            set.written.push(p.to_owned());
            let (rest, below) = match p.strip_prefix("*.") {
                Some(rest) => (rest, true),
                None => (p, false),
            };
            if rest.contains('*') {
                return Err(HostPatternError::Wildcard(p.to_owned()));
            }
            let bracketed;
            let text = if !below && rest.contains(':') && !rest.starts_with('[') {
                bracketed = format!("[{rest}]");
                bracketed.as_str()
            } else {
                rest
            };
            match parse_host(text) {
                Ok(Host::Name(n)) => {
                    let lower = n.to_ascii_lowercase();
                    if below {
                        set.below.push(format!(".{lower}"));
                    } else {
                        set.exact.push(lower);
                    }
                }
                Ok(Host::Ip(a)) if !below && !names_only => set.ips.push(a),
                Ok(Host::Ip(_)) if below => return Err(HostPatternError::Wildcard(p.to_owned())),
                Ok(Host::Ip(_)) => return Err(HostPatternError::Address(p.to_owned())),
                Err(why) => {
                    return Err(HostPatternError::Host {
                        text: p.to_owned(),
                        why,
                    });
                }
            }
        }
        set.exact.sort_unstable();
        set.exact.dedup();
        set.below.sort_unstable();
        set.below.dedup();
        set.ips.sort_unstable();
        set.ips.dedup();
        Ok(set)
    }

    /// The `[lists]` name, if it has one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Whether `host` is one of the set's hosts. Never allocates.
    pub fn contains(&self, host: &Host<'_>) -> bool {
        match host {
            Host::Ip(a) => self.ips.binary_search(a).is_ok(),
            Host::Name(n) => {
                if self.exact.binary_search_by(|x| cmp_ci(x, n)).is_ok() {
                    return true;
                }
                if self.below.is_empty() {
                    return false;
                }
                // Every proper suffix that starts at a dot: `a.b.acme.com` tries
                // `.b.acme.com`, `.acme.com`, `.com`.
                n.match_indices('.').any(|(at, _)| {
                    n.get(at..).is_some_and(|suffix| {
                        self.below.binary_search_by(|x| cmp_ci(x, suffix)).is_ok()
                    })
                })
            }
        }
    }
}

impl fmt::Display for HostSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.name {
            return write!(f, "list {name}");
        }
        f.write_str(&self.written.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Host<'static> {
        Host::Ip(s.parse().unwrap())
    }

    #[test]
    fn test_names_are_checked_and_keep_no_trailing_dot() {
        assert_eq!(parse_host("Acme.COM."), Ok(Host::Name("Acme.COM")));
        assert_eq!(parse_host("acme.com").unwrap().to_string(), "acme.com");
        assert_eq!(parse_host("ACME.com").unwrap().to_string(), "acme.com");
        assert_eq!(parse_host(""), Err(HostError::Empty));
        assert_eq!(parse_host("."), Err(HostError::Empty));
        assert_eq!(parse_host("a..com"), Err(HostError::EmptyLabel));
        assert_eq!(parse_host("acme.com.."), Err(HostError::EmptyLabel));
        assert_eq!(parse_host("-a.com"), Err(HostError::Hyphen));
        assert_eq!(parse_host("evil%2ecom"), Err(HostError::Percent));
        assert_eq!(parse_host("a b.com"), Err(HostError::BadChar(' ')));
        assert_eq!(parse_host("a\\b.com"), Err(HostError::BadChar('\\')));
        // Cyrillic а (U+0430) is not a.
        assert_eq!(
            parse_host("\u{430}cme.com"),
            Err(HostError::NotAscii('\u{430}'))
        );
        assert_eq!(
            parse_host("acme\u{3002}com"),
            Err(HostError::NotAscii('\u{3002}'))
        );
        assert_eq!(
            parse_host("xn--80ak6aa92e.com"),
            Ok(Host::Name("xn--80ak6aa92e.com"))
        );
        assert_eq!(
            parse_host(&format!("{}.com", "a".repeat(64))),
            Err(HostError::LongLabel)
        );
        let long = ["a".repeat(63).as_str(); 5].join(".");
        assert_eq!(parse_host(&long), Err(HostError::TooLong));
    }

    #[test]
    fn test_ipv4_in_every_spelling_is_the_address() {
        for s in [
            "127.0.0.1",
            "0x7f.1",
            "0x7F.0.0.1",
            "2130706433",
            "0177.0.0.1",
            "127.1",
            "127.0.1",
            "0x7f000001",
            "127.0.0.1.",
        ] {
            assert_eq!(parse_host(s), Ok(ip("127.0.0.1")), "{s}");
        }
        assert_eq!(parse_host("0x.0.0.0"), Ok(ip("0.0.0.0")));
        for s in [
            "256.0.0.1",
            "1.2.3.4.5",
            "4294967296",
            "08.1",
            "a.0x1g1",
            "1.2.3.256",
            "0x1.0x",
        ] {
            if s == "a.0x1g1" {
                assert!(matches!(parse_host(s), Ok(Host::Name(_))), "{s}");
            } else if s == "0x1.0x" {
                assert_eq!(parse_host(s), Ok(ip("1.0.0.0")), "{s}");
            } else {
                assert_eq!(parse_host(s), Err(HostError::BadIpv4), "{s}");
            }
        }
        assert_eq!(parse_host("evil.123"), Err(HostError::BadIpv4));
    }

    #[test]
    fn test_ipv6_in_brackets_and_mapped_ipv4() {
        assert_eq!(parse_host("[::1]"), Ok(ip("::1")));
        assert_eq!(parse_host("[::ffff:10.0.0.1]"), Ok(ip("10.0.0.1")));
        assert_eq!(parse_host("[::1"), Err(HostError::BadIpv6));
        assert_eq!(parse_host("[fe80::1%eth0]"), Err(HostError::BadIpv6));
        assert_eq!(parse_host("::1"), Err(HostError::BadChar(':')));
    }

    #[test]
    fn test_host_set_exact_below_and_addresses() {
        let set = HostSet::new(
            None,
            ["www.Our-Company.com", "*.acme.com", "10.0.0.1", "::1"],
            false,
        )
        .unwrap();
        let has = |s: &str| set.contains(&parse_host(s).unwrap());
        assert!(has("www.our-company.com"));
        assert!(has("WWW.OUR-COMPANY.COM."));
        assert!(!has("our-company.com"));
        assert!(has("docs.acme.com"));
        assert!(has("a.b.ACME.com"));
        assert!(
            !has("acme.com"),
            "*.acme.com is below acme.com, not acme.com"
        );
        assert!(!has("evilacme.com"));
        assert!(!has("acme.com.evil.io"));
        assert!(has("0xa.0.0.1"));
        assert!(has("[::1]"));
        assert!(!has("10.0.0.2"));
        assert_eq!(
            set.to_string(),
            "www.Our-Company.com, *.acme.com, 10.0.0.1, ::1"
        );
    }

    #[test]
    fn test_host_set_refuses_what_is_not_a_pattern() {
        assert!(matches!(
            HostSet::new(None, ["*"], false),
            Err(HostPatternError::Wildcard(_))
        ));
        assert!(matches!(
            HostSet::new(None, ["a.*.com"], false),
            Err(HostPatternError::Wildcard(_))
        ));
        assert!(matches!(
            HostSet::new(None, ["\u{430}cme.com"], false),
            Err(HostPatternError::Host { .. })
        ));
        assert!(matches!(
            HostSet::new(None, ["10.0.0.1"], true),
            Err(HostPatternError::Address(_))
        ));
    }
}
