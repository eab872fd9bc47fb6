//! The proxy's side of HTTP/1.1 (RFC 9112): one request head, read from a box, checked and
//! turned into where it wants to go. Pure functions over bytes; no I/O.
//!
//! Accepted: `CONNECT host:port` (a tunnel, for TLS) and absolute-form `http://` requests
//! (plain HTTP, forwarded in origin-form with `Connection: close`). Refused as bad
//! requests: origin-form (the proxy is not a server), `https://` absolute-form, obsolete
//! line folding, both `Content-Length` and `Transfer-Encoding`, a transfer coding other than
//! `chunked`, and a `Host` header that names another host than the request line (forbidden:
//! the origin would serve the other host).

use std::net::IpAddr;

/// The longest request head the proxy reads.
pub const MAX_HEAD: usize = 16 * 1024;

/// A request head, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// Where it goes: a host name or an address as written (lower case, no brackets).
    pub host: String,
    pub port: u16,
    pub kind: Kind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// `CONNECT`: a tunnel.
    Connect,
    /// Plain HTTP: the head to send the origin, and how long the body is.
    Forward { head: Vec<u8>, body: Body },
}

/// How a forwarded request's body ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    None,
    Length(u64),
    Chunked,
}

/// Why a head is refused: the status and a one-line reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {reason}")]
pub struct Reject {
    pub status: u16,
    pub reason: String,
}

fn bad(reason: impl Into<String>) -> Reject {
    Reject {
        status: 400,
        reason: reason.into(),
    }
}

/// The end of the head in `buf` (the index just past `\r\n\r\n`), if it is there.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a request head (through its blank line).
pub fn parse(head: &[u8]) -> Result<Head, Reject> {
    let text = std::str::from_utf8(head)
        .map_err(|_| bad("boxmaker's proxy takes request heads in ASCII only"))?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("the request line is not METHOD TARGET HTTP/1.1"));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0") || !is_token(method) {
        return Err(bad("the request line is not METHOD TARGET HTTP/1.1"));
    }
    let mut headers: Vec<(&str, &str)> = Vec::new();
    for l in lines {
        if l.is_empty() {
            break;
        }
        if l.starts_with([' ', '\t']) {
            return Err(bad(
                "a folded header line (obsolete in HTTP/1.1) is refused",
            ));
        }
        let Some((name, value)) = l.split_once(':') else {
            return Err(bad("a header line has no colon"));
        };
        if !is_token(name) || value.contains(['\r', '\n', '\0']) {
            return Err(bad("a header name is not a token"));
        }
        headers.push((name, value.trim_matches([' ', '\t'])));
    }
    if method == "CONNECT" {
        let (host, port) = authority(target, None)?;
        return Ok(Head {
            method: method.into(),
            host,
            port,
            kind: Kind::Connect,
        });
    }
    let lower = target.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return Err(bad(
            "an https:// URL goes through the proxy as a CONNECT tunnel, not as a request",
        ));
    }
    if !lower.starts_with("http://") {
        return Err(bad(
            "this is boxmaker's egress proxy: ask for http://host/path or CONNECT host:port",
        ));
    }
    let rest = &target["http://".len()..];
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (auth, path) = rest.split_at(split);
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('?') => format!("/{p}"),
        p if p.starts_with('#') => "/".to_string(),
        p => p.split('#').next().unwrap_or("/").to_string(),
    };
    let (host, port) = authority(auth, Some(80))?;
    let hosts: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map(|(_, v)| *v)
        .collect();
    if hosts.len() > 1 {
        return Err(bad("the request has more than one Host header"));
    }
    if let Some(h) = hosts.first() {
        let same = authority(h, Some(80)).is_ok_and(|(hh, hp)| hh == host && hp == port);
        if !same {
            return Err(Reject {
                status: 403,
                reason: format!(
                    "boxmaker refused the request: its Host header ({h}) names another host \
                     than its URL ({auth})"
                ),
            });
        }
    }
    let length: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| *v)
        .collect();
    let coding: Vec<&str> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("transfer-encoding"))
        .map(|(_, v)| *v)
        .collect();
    let body = match (length.as_slice(), coding.as_slice()) {
        ([], []) => Body::None,
        ([n], []) => match n.parse::<u64>() {
            Ok(v) if n.bytes().all(|b| b.is_ascii_digit()) => Body::Length(v),
            _ => return Err(bad("Content-Length is not a number")),
        },
        ([], [c]) if c.eq_ignore_ascii_case("chunked") => Body::Chunked,
        ([], _) => {
            return Err(bad(
                "the only transfer coding the proxy forwards is chunked",
            ));
        }
        _ => {
            return Err(bad(
                "a request with both Content-Length and Transfer-Encoding (or two lengths) is refused",
            ));
        }
    };
    let mut out = format!("{method} {path} HTTP/1.1\r\n");
    if hosts.is_empty() {
        out.push_str(&format!("Host: {auth}\r\n"));
    }
    for (n, v) in &headers {
        let hop = [
            "connection",
            "proxy-connection",
            "proxy-authorization",
            "keep-alive",
            "te",
            "upgrade",
        ]
        .iter()
        .any(|h| n.eq_ignore_ascii_case(h));
        if !hop {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Head {
        method: method.into(),
        host,
        port,
        kind: Kind::Forward {
            head: out.into_bytes(),
            body,
        },
    })
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `host:port`, `[v6]:port`, or (with a default port) either without the port. The host
/// is returned lower case, without brackets.
fn authority(s: &str, default: Option<u16>) -> Result<(String, u16), Reject> {
    if s.is_empty() || s.contains(['@', ' ', '/', '\\']) {
        return Err(bad(format!("{s:?} is not host:port")));
    }
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let Some((h, after)) = rest.split_once(']') else {
            return Err(bad(format!("{s:?} is not host:port")));
        };
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(bad(format!("{s:?} is not an IPv6 address")));
        }
        match after.strip_prefix(':') {
            Some(p) => (h, Some(p)),
            None if after.is_empty() => (h, None),
            None => return Err(bad(format!("{s:?} is not host:port"))),
        }
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    let port = match (port, default) {
        (Some(p), _) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => return Err(bad(format!("{s:?} has no port from 1 to 65535"))),
        },
        (None, Some(d)) => d,
        (None, None) => return Err(bad(format!("{s:?} has no port (CONNECT host:port)"))),
    };
    if host.is_empty() {
        return Err(bad(format!("{s:?} has no host")));
    }
    Ok((host.to_ascii_lowercase(), port))
}

/// The host of a head as an address, when it is one.
pub fn literal(host: &str) -> Option<IpAddr> {
    host.parse().ok()
}

/// A complete response with `status`, `reason` as its reason phrase and its body.
pub fn response(status: u16, reason: &str) -> Vec<u8> {
    let one_line: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!(
        "HTTP/1.1 {status} {one_line}\r\nContent-Type: text/plain; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{one_line}\n",
        one_line.len() + 1
    )
    .into_bytes()
}

/// Follows a chunked body as it passes, to know where it ends (so a second request behind
/// it is never forwarded).
#[derive(Debug, Default)]
pub struct Chunked {
    state: ChunkState,
    line: Vec<u8>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    #[default]
    Size,
    Data(u64),
    DataEnd,
    Trailer,
    Done,
}

impl Chunked {
    /// How many of `buf`'s bytes belong to the body; `Ok(Some(n))` when it ends after `n`,
    /// `Ok(None)` when all of it belongs and more follows.
    pub fn feed(&mut self, buf: &[u8]) -> Result<Option<usize>, Reject> {
        let mut i = 0;
        while i < buf.len() {
            match self.state {
                ChunkState::Done => return Ok(Some(i)),
                ChunkState::Data(left) => {
                    let take = (buf.len() - i).min(usize::try_from(left).unwrap_or(usize::MAX));
                    i += take;
                    let left = left - take as u64;
                    self.state = if left == 0 {
                        ChunkState::DataEnd
                    } else {
                        ChunkState::Data(left)
                    };
                }
                ChunkState::Size | ChunkState::DataEnd | ChunkState::Trailer => {
                    let b = buf[i];
                    i += 1;
                    if self.line.len() > 4096 {
                        return Err(bad("a chunk line is too long"));
                    }
                    if b != b'\n' {
                        self.line.push(b);
                        continue;
                    }
                    let line = std::mem::take(&mut self.line);
                    let line = line.strip_suffix(b"\r").unwrap_or(&line);
                    self.state = match self.state {
                        ChunkState::Size => {
                            let size = line.split(|c| *c == b';').next().unwrap_or_default();
                            let size = std::str::from_utf8(size)
                                .ok()
                                .and_then(|s| u64::from_str_radix(s.trim(), 16).ok())
                                .ok_or_else(|| bad("a chunk size is not hexadecimal"))?;
                            if size == 0 {
                                ChunkState::Trailer
                            } else {
                                ChunkState::Data(size)
                            }
                        }
                        ChunkState::DataEnd if line.is_empty() => ChunkState::Size,
                        ChunkState::DataEnd => return Err(bad("a chunk does not end in CRLF")),
                        _ if line.is_empty() => ChunkState::Done,
                        _ => ChunkState::Trailer,
                    };
                }
            }
        }
        Ok((self.state == ChunkState::Done).then_some(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Head, Reject> {
        parse(s.as_bytes())
    }

    #[test]
    fn connect_and_absolute_form_are_understood() {
        let h = p("CONNECT Api.Example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            (h.host.as_str(), h.port, h.kind),
            ("api.example.com", 443, Kind::Connect)
        );
        let h = p("CONNECT [::1]:80 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!((h.host.as_str(), h.port), ("::1", 80));
        let h = p("GET http://a.test/x?y HTTP/1.1\r\nHost: a.test\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n").unwrap();
        let Kind::Forward { head, body } = h.kind else {
            panic!()
        };
        assert_eq!(body, Body::None);
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "GET /x?y HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn a_host_header_naming_another_host_is_forbidden_and_smuggling_shapes_are_bad() {
        let e = p("GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n").unwrap_err();
        assert_eq!(e.status, 403);
        assert!(e.reason.contains("Host header"), "{e}");
        assert!(p("GET http://a.test:80/ HTTP/1.1\r\nHost: a.test\r\n\r\n").is_ok());
        for bad in [
            "GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n",
            "GET https://a.test/ HTTP/1.1\r\n\r\n",
            "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
            "POST http://a.test/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST http://a.test/ HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
            "POST http://a.test/ HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "GET http://a.test/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
            "GET http://u@a.test/ HTTP/1.1\r\n\r\n",
            "CONNECT a.test HTTP/1.1\r\n\r\n",
            "CONNECT a.test:0 HTTP/1.1\r\n\r\n",
            "CONNECT a.test:+80 HTTP/1.1\r\n\r\n",
            "GET  http://a.test/ HTTP/1.1\r\n\r\n",
        ] {
            assert!(p(bad).is_err_and(|e| e.status >= 400), "{bad:?}");
        }
    }

    #[test]
    fn a_chunked_body_ends_where_it_says() {
        let mut c = Chunked::default();
        assert_eq!(c.feed(b"3\r\nabc\r\n").unwrap(), None);
        let rest = b"0\r\n\r\nGET http://other/ HTTP/1.1\r\n\r\n";
        assert_eq!(c.feed(rest).unwrap(), Some(5));
        assert!(Chunked::default().feed(b"zz\r\n").is_err());
    }

    /// Hostile heads: bytes from a box never panic the parser or the chunk follower
    /// (mutations of valid heads, and noise; a fixed xorshift, so a failure repeats).
    #[test]
    fn any_bytes_from_a_box_are_parsed_or_refused_never_a_panic() {
        let seeds: [&[u8]; 4] = [
            b"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n",
            b"GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
            b"POST http://[::1]:8080/ HTTP/1.1\r\nContent-Length: 4\r\n\r\n",
            b"5\r\nhello\r\n0\r\nX: y\r\n\r\n",
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let mut b = seeds[round % seeds.len()].to_vec();
            for _ in 0..(next() % 6) {
                let at = usize::try_from(next()).unwrap_or(0) % (b.len() + 1);
                match next() % 4 {
                    0 => b.insert(at, (next() & 0xff) as u8),
                    1 if at < b.len() => {
                        b.remove(at);
                    }
                    2 if at < b.len() => {
                        let table = b"\r\n:[]@/ %0-9aZ\xff";
                        b[at] = table[usize::try_from(next()).unwrap_or(0) % table.len()];
                    }
                    _ => b.truncate(at),
                }
            }
            let _ = parse(&b);
            let _ = Chunked::default().feed(&b);
            let _ = head_end(&b);
        }
    }

    #[test]
    fn a_response_is_one_line_whatever_the_reason() {
        let r = String::from_utf8(response(403, "a\r\nb")).unwrap();
        assert!(r.starts_with("HTTP/1.1 403 a  b\r\n"), "{r}");
    }
}
