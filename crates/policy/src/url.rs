//! One URL, as the `url` test reads it (docs/spec.md §3.3 "Typed conditions").
//!
//! A string is a URL when it is `http://` or `https://` (any case) followed by a host, or
//! a bare `host[:port][/path][?query][#fragment]` — what a model writes when it means a
//! web address. The host is read by [`crate::host`] (names case-insensitive without a
//! trailing dot, IPv4 in any spelling, `[IPv6]`). Refused, with the reason:
//! - another scheme (`ftp:`, `file:`, `javascript:`, `data:`), and `http:` without `//`;
//! - user info before an `@` (`https://acme.com@evil.com` goes to `evil.com`);
//! - a backslash anywhere (browsers read `https://evil.com\@acme.com` as `evil.com`);
//! - white space, a control character or an invisible one (U+200B …) anywhere;
//! - percent-encoding or anything outside ASCII in the host (an international name is
//!   written in its `xn--` form);
//! - a path-only or scheme-relative string (`/x`, `//acme.com`);
//! - a port that is not 1 to 65535.
//!
//! Text after the host may hold any other character; only the path is tested (by a glob),
//! and a path that holds a `.` or `..` segment, or an encoded `/` or `\` (`%2f`, `%5c`), never
//! matches one: servers resolve those differently.

use std::fmt;

use crate::host::{Host, HostError, parse_host};

/// Which scheme a URL named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
    /// No scheme: a bare host.
    Bare,
}

/// A checked URL: scheme, host, port and path (query and fragment are not tested).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Url<'a> {
    pub scheme: Scheme,
    pub host: Host<'a>,
    pub port: Option<u16>,
    /// From the first `/` after the host up to `?` or `#`; empty when there is none.
    pub path: &'a str,
}

/// Why a string is not a URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotUrl {
    #[error("it is empty")]
    Empty,
    #[error("it holds white space or a control character ({0:?})")]
    Space(char),
    #[error("it holds an invisible character (U+{:04X})", u32::from(*.0))]
    Invisible(char),
    #[error("it holds a backslash")]
    Backslash,
    #[error("its scheme {0:?} is not http or https")]
    Scheme(String),
    #[error("its scheme is not followed by //")]
    NoSlashes,
    #[error("it starts with / (a path or a scheme-relative URL), not a host")]
    Path,
    #[error("it has no host")]
    NoHost,
    #[error("it has user info before an @ in its host")]
    UserInfo,
    #[error("its port {0:?} is not a number from 1 to 65535")]
    Port(String),
    #[error("its host is not a host: {0}")]
    Host(HostError),
}

/// The characters a string may not hide: Unicode's default-ignorable code points (zero
/// width spaces and joiners, bidirectional controls, variation selectors, tags, the soft
/// hyphen). Text that holds one does not read as what it is.
pub fn is_invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0xAD | 0x34F
            | 0x61C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x206F
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFF8
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF
    )
}

fn is_scheme_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

impl<'a> Url<'a> {
    /// Reads `s` as one URL.
    pub fn parse(s: &'a str) -> Result<Self, NotUrl> {
        if s.is_empty() {
            return Err(NotUrl::Empty);
        }
        // Printable ASCII without a backslash needs none of the next three checks.
        if !s.bytes().all(|b| b.is_ascii_graphic() && b != b'\\') {
            Self::refuse(s)?;
        }
        Self::structure(s)
    }

    /// Refuses white space, control and invisible characters and backslashes.
    fn refuse(s: &str) -> Result<(), NotUrl> {
        if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
            return Err(NotUrl::Space(c));
        }
        if let Some(c) = s.chars().find(|&c| is_invisible(c)) {
            return Err(NotUrl::Invisible(c));
        }
        if s.contains('\\') {
            return Err(NotUrl::Backslash);
        }
        Ok(())
    }

    /// The parts of `s`, which holds no white space, control character or backslash.
    fn structure(s: &'a str) -> Result<Self, NotUrl> {
        let (scheme, rest) = split_scheme(s)?;
        if rest.starts_with('/') {
            return Err(NotUrl::Path);
        }
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.is_empty() {
            return Err(NotUrl::NoHost);
        }
        if authority.contains('@') {
            return Err(NotUrl::UserInfo);
        }
        let (host, port) = split_port(authority)?;
        let host = parse_host(host).map_err(NotUrl::Host)?;
        let path_end = tail.find(['?', '#']).unwrap_or(tail.len());
        Ok(Self {
            scheme,
            host,
            port,
            path: tail.get(..path_end).unwrap_or(""),
        })
    }

    /// Whether the port is the scheme's own (none written, or 80 for http, 443 for https,
    /// either for a bare host).
    pub fn default_port(&self) -> bool {
        match (self.scheme, self.port) {
            (_, None) => true,
            (Scheme::Http, Some(p)) => p == 80,
            (Scheme::Https, Some(p)) => p == 443,
            (Scheme::Bare, Some(p)) => p == 80 || p == 443,
        }
    }

    /// Why the path cannot be matched by a glob, if it cannot: a `.` or `..` segment
    /// (also percent-encoded), or an encoded `/` or `\`.
    pub fn path_problem(&self) -> Option<&'static str> {
        let lower_has = |needle: &str| {
            self.path
                .as_bytes()
                .windows(needle.len())
                .any(|w| w.eq_ignore_ascii_case(needle.as_bytes()))
        };
        if lower_has("%2f") || lower_has("%5c") {
            return Some("its path holds an encoded / or \\");
        }
        let dot_segment = self.path.split('/').any(|seg| {
            let mut rest = seg;
            let mut dots = 0;
            while !rest.is_empty() {
                if let Some(r) = rest.strip_prefix('.') {
                    rest = r;
                } else if rest.len() >= 3 && rest.as_bytes()[..3].eq_ignore_ascii_case(b"%2e") {
                    rest = &rest[3..];
                } else {
                    return false;
                }
                dots += 1;
            }
            dots == 1 || dots == 2
        });
        dot_segment.then_some("its path has a . or .. segment")
    }
}

impl fmt::Display for Url<'_> {
    /// The parts that are tested, canonical: `https://host:port/path`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scheme {
            Scheme::Http => f.write_str("http://")?,
            Scheme::Https => f.write_str("https://")?,
            Scheme::Bare => {}
        }
        write!(f, "{}", self.host)?;
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        f.write_str(self.path)
    }
}

/// The scheme and what follows `scheme://`, or the whole string for a bare host.
fn split_scheme(s: &str) -> Result<(Scheme, &str), NotUrl> {
    let run = s.bytes().take_while(|&b| is_scheme_char(b)).count();
    let starts_alpha = s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic());
    let Some(after) = s.get(run..).and_then(|r| r.strip_prefix(':')) else {
        return Ok((Scheme::Bare, s));
    };
    let name = s.get(..run).unwrap_or("");
    if let Some(rest) = after.strip_prefix("//") {
        if name.eq_ignore_ascii_case("http") {
            return Ok((Scheme::Http, rest));
        }
        if name.eq_ignore_ascii_case("https") {
            return Ok((Scheme::Https, rest));
        }
        return Err(NotUrl::Scheme(name.to_owned()));
    }
    // `host:port…` is bare; `name:` followed by anything else is a scheme.
    let digits = after.bytes().take_while(u8::is_ascii_digit).count();
    let port_like = digits > 0
        && after
            .as_bytes()
            .get(digits)
            .is_none_or(|b| matches!(b, b'/' | b'?' | b'#'));
    if port_like || !starts_alpha {
        return Ok((Scheme::Bare, s));
    }
    if name.eq_ignore_ascii_case("http") || name.eq_ignore_ascii_case("https") {
        return Err(NotUrl::NoSlashes);
    }
    Err(NotUrl::Scheme(name.to_owned()))
}

/// The host and the port of an authority.
fn split_port(authority: &str) -> Result<(&str, Option<u16>), NotUrl> {
    let (host, port) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => {
                let (h, rest) = authority.split_at(end + 1);
                match rest.strip_prefix(':') {
                    Some(p) => (h, Some(p)),
                    None if rest.is_empty() => (h, None),
                    None => return Err(NotUrl::Host(HostError::BadIpv6)),
                }
            }
            None => return Err(NotUrl::Host(HostError::BadIpv6)),
        }
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) => {
            let n = if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) {
                p.parse::<u16>().ok().filter(|n| *n > 0)
            } else {
                None
            };
            Some(n.ok_or_else(|| NotUrl::Port(p.to_owned()))?)
        }
    };
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url<'_> {
        match Url::parse(s) {
            Ok(u) => u,
            Err(e) => panic!("{s:?} is not a URL: {e}"),
        }
    }
    fn not(s: &str) -> NotUrl {
        match Url::parse(s) {
            Ok(u) => panic!("{s:?} read as the URL {u}"),
            Err(e) => e,
        }
    }

    #[test]
    fn test_urls_with_and_without_a_scheme() {
        let u = url("HTTPS://WWW.Acme.com./docs/a?b=c#d");
        assert_eq!(u.scheme, Scheme::Https);
        assert_eq!(u.host.to_string(), "www.acme.com");
        assert_eq!(u.path, "/docs/a");
        assert_eq!(u.to_string(), "https://www.acme.com/docs/a");
        let u = url("acme.com/x");
        assert_eq!((u.scheme, u.path), (Scheme::Bare, "/x"));
        let u = url("acme.com:8443/x");
        assert_eq!(u.port, Some(8443));
        assert!(!u.default_port());
        assert!(url("http://acme.com:80").default_port());
        assert!(!url("http://acme.com:443").default_port());
        assert_eq!(url("http://0x7f.1/").host.to_string(), "127.0.0.1");
        assert_eq!(url("http://[::1]:8080/").host.to_string(), "[::1]");
        assert_eq!(url("acme.com?q=1").path, "");
        assert_eq!(url("https://acme.com/Straße").path, "/Straße");
    }

    #[test]
    fn test_what_is_not_one_url_is_refused_with_its_reason() {
        assert_eq!(not("https://acme.com@evil.com/"), NotUrl::UserInfo);
        assert_eq!(not("https://a:b@acme.com/"), NotUrl::UserInfo);
        assert_eq!(not("acme.com@evil.com"), NotUrl::UserInfo);
        assert_eq!(not("https://evil.com\\@acme.com"), NotUrl::Backslash);
        assert_eq!(not("https://acme.com /x"), NotUrl::Space(' '));
        assert_eq!(not("https://acme.com\r\n"), NotUrl::Space('\r'));
        assert_eq!(
            not("https://ev\u{200b}il.com"),
            NotUrl::Invisible('\u{200b}')
        );
        assert_eq!(not("ftp://acme.com"), NotUrl::Scheme("ftp".into()));
        assert_eq!(
            not("javascript:alert(1)"),
            NotUrl::Scheme("javascript".into())
        );
        assert_eq!(not("file:///etc/passwd"), NotUrl::Scheme("file".into()));
        assert_eq!(not("data:text/html,x"), NotUrl::Scheme("data".into()));
        assert_eq!(not("https:acme.com"), NotUrl::NoSlashes);
        assert_eq!(not("//acme.com/x"), NotUrl::Path);
        assert_eq!(not("/x"), NotUrl::Path);
        assert_eq!(not("https:///x"), NotUrl::Path);
        assert_eq!(not("https://"), NotUrl::NoHost);
        assert_eq!(not("https://?x"), NotUrl::NoHost);
        assert_eq!(not("https://acme.com:0/"), NotUrl::Port("0".into()));
        assert_eq!(not("https://acme.com:99999/"), NotUrl::Port("99999".into()));
        assert_eq!(not("https://acme.com:/"), NotUrl::Port(String::new()));
        assert_eq!(not("https://acme.com:+1/"), NotUrl::Port("+1".into()));
        assert_eq!(not("https://evil%2ecom/"), NotUrl::Host(HostError::Percent));
        assert_eq!(
            not("https://\u{430}cme.com/"),
            NotUrl::Host(HostError::NotAscii('\u{430}'))
        );
        assert_eq!(
            not("https://acme\u{3002}com/"),
            NotUrl::Host(HostError::NotAscii('\u{3002}'))
        );
        assert_eq!(not("https://[::1/"), NotUrl::Host(HostError::BadIpv6));
        assert_eq!(not(""), NotUrl::Empty);
    }

    #[test]
    fn test_path_problems() {
        assert_eq!(url("acme.com/docs/a").path_problem(), None);
        assert_eq!(url("acme.com/docs/a.b/...x").path_problem(), None);
        for p in [
            "acme.com/docs/../admin",
            "acme.com/docs/./x",
            "acme.com/docs/%2e%2E/admin",
            "acme.com/docs/.%2e/admin",
            "acme.com/docs/..",
            "acme.com/docs%2f..%2fadmin",
            "acme.com/docs%5cx",
        ] {
            assert!(url(p).path_problem().is_some(), "{p}");
        }
    }
}
