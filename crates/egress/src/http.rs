//! The proxy's side of HTTP/1.1 (RFC 9112): one request head, read from a box, checked and
//! turned into where it wants to go. Pure functions over bytes; no I/O.
//!
//! Accepted: `CONNECT host:port` (a tunnel, for TLS) and absolute-form `http://` requests
//! (plain HTTP, forwarded in origin-form with `Connection: close`); inside a tunnel, one
//! origin-form request whose `Host` names the tunnel's destination ([`parse_in_tunnel`]).
//!
//! A head is ASCII, and its lines end only at CRLF ([`scan`]): a bare CR or LF, a NUL or
//! any other control byte but HTAB (in a header value), or a byte above 0x7f is a `400`
//! wherever it stands — so an origin that ends lines at LF reads the head the proxy read.
//! Refused as bad requests besides: origin-form (the proxy is not a server), `https://`
//! absolute-form, obsolete line folding, both `Content-Length` and `Transfer-Encoding`, a
//! transfer coding other than `chunked`, two `Host` headers, and a `Host` that is not a
//! host; a `Host` header that names another host than the request line is forbidden (`403`:
//! the origin would serve the other host). Hosts are read by one function,
//! [`config::egress::classify_host`].

use config::Host;
use config::egress::classify_host;

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

/// What [`scan`] found in the bytes read so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scan {
    /// No end yet, and nothing wrong before this index (scan again from it).
    More(usize),
    /// The head ends just before this index (past its `\r\n\r\n`).
    End(usize),
    /// A byte no head may hold.
    Bad(Reject),
}

/// Scans `buf` from `from` (0, or what a [`Scan::More`] said) for the end of a head, the
/// first empty line: lines end only at CRLF. A bare CR, a bare LF, a control byte other
/// than HTAB, or a byte above 0x7f is refused as soon as it is seen, so a box cannot make
/// the proxy wait for an end that an origin would find elsewhere.
pub fn scan(buf: &[u8], from: usize) -> Scan {
    let mut i = from;
    while i < buf.len() {
        match buf[i] {
            b'\r' => match buf.get(i + 1) {
                None => return Scan::More(i),
                Some(b'\n') => {
                    let next = &buf[i + 2..];
                    if next.starts_with(b"\r\n") {
                        return Scan::End(i + 4);
                    }
                    if next.is_empty() || next == b"\r" {
                        return Scan::More(i);
                    }
                    i += 2;
                    continue;
                }
                Some(_) => return Scan::Bad(bad("the request head has a CR not followed by LF")),
            },
            b'\n' => {
                return Scan::Bad(bad(
                    "the request head has a LF without its CR (lines end only at CRLF)",
                ));
            }
            b'\t' => {}
            0..=0x1f | 0x7f => {
                return Scan::Bad(bad("the request head holds a control character"));
            }
            0x80.. => {
                return Scan::Bad(bad(
                    "the request head holds a byte that is not ASCII (write a URL percent-encoded)",
                ));
            }
            _ => {}
        }
        i += 1;
    }
    Scan::More(i)
}

/// A head's request line and header lines.
struct Request<'a> {
    method: &'a str,
    target: &'a str,
    headers: Vec<(&'a str, &'a str)>,
}

impl<'a> Request<'a> {
    /// The values of the headers named `name` (any case).
    fn values(&self, name: &str) -> Vec<&'a str> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
            .collect()
    }
}

/// Reads a whole head (through its blank line, nothing after): request line and headers.
fn request(head: &[u8]) -> Result<Request<'_>, Reject> {
    match scan(head, 0) {
        Scan::End(n) if n == head.len() => {}
        Scan::Bad(r) => return Err(r),
        _ => return Err(bad("the request head does not end at its first empty line")),
    }
    // ASCII, as `scan` saw.
    let text = std::str::from_utf8(head)
        .map_err(|_| bad("boxmaker's proxy takes request heads in ASCII only"))?;
    let mut lines = text.split("\r\n");
    let (method, target) = request_line(lines.next().unwrap_or_default())?;
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
        if !is_token(name) {
            return Err(bad("a header name is not a token"));
        }
        headers.push((name, value.trim_matches([' ', '\t'])));
    }
    Ok(Request {
        method,
        target,
        headers,
    })
}

/// A request line's method and target: `METHOD TARGET HTTP/1.1` (or 1.0), one space
/// between, the method a token, the target visible ASCII.
fn request_line(line: &str) -> Result<(&str, &str), Reject> {
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("the request line is not METHOD TARGET HTTP/1.1"));
    };
    if !matches!(version, "HTTP/1.1" | "HTTP/1.0")
        || !is_token(method)
        || target.is_empty()
        || !target.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(bad("the request line is not METHOD TARGET HTTP/1.1"));
    }
    Ok((method, target))
}

/// Whether the first line of what was read (checked by [`scan`] up to `scanned`) is a
/// request line: `Ok(false)` while it has not ended, so bytes that are not HTTP at all are
/// refused as soon as their first line ends, not after [`MAX_HEAD`] or a timeout.
pub fn first_line(buf: &[u8], scanned: usize) -> Result<bool, Reject> {
    // `scan` stops before a CRLF it has not seen the end of: the line before it is checked.
    let Some(end) = buf[..(scanned + 2).min(buf.len())]
        .windows(2)
        .position(|w| w == b"\r\n")
    else {
        return Ok(false);
    };
    let line = std::str::from_utf8(&buf[..end])
        .map_err(|_| bad("boxmaker's proxy takes request heads in ASCII only"))?;
    request_line(line).map(|_| true)
}

/// Parses a request head (through its blank line) sent to the proxy.
pub fn parse(head: &[u8]) -> Result<Head, Reject> {
    let req = request(head)?;
    let (method, target) = (req.method, req.target);
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
    let hosts = req.values("host");
    if hosts.len() > 1 {
        return Err(bad("the request has more than one Host header"));
    }
    // A URL whose host is not a host is refused when it is decided (with its host in the
    // record); a Host header is compared by the same reading.
    if let (Some(h), Ok(url_host)) = (hosts.first(), classify_host(&host))
        && !host_header_names(h, &url_host, port, Some(80))?
    {
        return Err(Reject {
            status: 403,
            reason: format!(
                "boxmaker refused the request: its Host header ({h}) names another host \
                 than its URL ({auth})"
            ),
        });
    }
    let (head, body) = forwarded(&req, &path, hosts.is_empty().then_some(auth))?;
    Ok(Head {
        method: method.into(),
        host,
        port,
        kind: Kind::Forward { head, body },
    })
}

/// Parses the first request of plain HTTP sent through a tunnel to `host:port` (`shown`,
/// as the CONNECT wrote it): origin-form, and its `Host`, if it has one, names `host` (and
/// `port`, if it says one). The head to send and how long its body is.
pub fn parse_in_tunnel(
    head: &[u8],
    host: &Host,
    port: u16,
    shown: &str,
) -> Result<(Vec<u8>, Body), Reject> {
    let req = request(head)?;
    if req.method == "CONNECT" || !req.target.starts_with('/') {
        return Err(bad(
            "a request inside a tunnel is in origin-form (GET /path HTTP/1.1), one per tunnel",
        ));
    }
    let hosts = req.values("host");
    if hosts.len() > 1 {
        return Err(bad("the request has more than one Host header"));
    }
    if let Some(h) = hosts.first()
        && !host_header_names(h, host, port, None)?
    {
        return Err(Reject {
            status: 403,
            reason: format!(
                "its Host header ({h}) names another host than the tunnel ({shown}:{port})"
            ),
        });
    }
    let auth = if port == 80 {
        shown.to_string()
    } else {
        format!("{shown}:{port}")
    };
    forwarded(&req, req.target, hosts.is_empty().then_some(&auth))
}

/// Whether a `Host` header's value names `host:port` (a value without a port names the
/// `default` port, or with `None` any: inside a tunnel the port is the tunnel's). A value
/// that is not `host[:port]`, or whose host is neither a name nor an address, is a `400`.
fn host_header_names(
    value: &str,
    host: &Host,
    port: u16,
    default: Option<u16>,
) -> Result<bool, Reject> {
    let (h, p) = authority(value, Some(default.unwrap_or(port)))
        .map_err(|_| bad(format!("the Host header ({value}) is not host[:port]")))?;
    let named = classify_host(&h)
        .map_err(|why| bad(format!("the Host header ({value}) is not a host: {why}")))?;
    Ok(named == *host && p == port)
}

/// The head sent to the origin for `req` (`path` in origin-form; `add_host`: the `Host` to
/// add when it had none), hop-by-hop headers dropped, `Connection: close`; and how its body
/// ends.
fn forwarded(
    req: &Request<'_>,
    path: &str,
    add_host: Option<&str>,
) -> Result<(Vec<u8>, Body), Reject> {
    let length = req.values("content-length");
    let coding = req.values("transfer-encoding");
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
    let mut out = format!("{} {path} HTTP/1.1\r\n", req.method);
    if let Some(auth) = add_host {
        out.push_str(&format!("Host: {auth}\r\n"));
    }
    for (n, v) in &req.headers {
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
    Ok((out.into_bytes(), body))
}

fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `host:port`, `[v6]:port`, or (with a default port) either without the port. The host
/// is returned lower case, without brackets (what it is, [`classify_host`] says).
fn authority(s: &str, default: Option<u16>) -> Result<(String, u16), Reject> {
    if s.is_empty() || s.contains(['@', ' ', '\t', '/', '\\']) {
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

/// The header that carries the proxy's sentence in every answer it makes itself, for a
/// client that shows neither the reason phrase nor the body.
pub const REFUSAL_HEADER: &str = "X-Boxmaker-Refusal";

/// A complete response with `status` and `reason`, one sentence, in the three places a
/// client may show (docs/spec.md §3.6): the reason phrase, the [`REFUSAL_HEADER`] and a
/// `text/plain` body. The status line and the header hold it as visible ASCII (a control
/// character is a space, anything above ASCII its `\u{…}` escape), since clients read bytes
/// above 0x7f there each their own way; the body holds it as it is, in UTF-8.
pub fn response(status: u16, reason: &str) -> Vec<u8> {
    let one_line: String = reason
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let ascii: String = one_line
        .chars()
        .map(|c| {
            if c.is_ascii() {
                c.to_string()
            } else {
                c.escape_unicode().to_string()
            }
        })
        .collect();
    let body = format!("{one_line}\n");
    format!(
        "HTTP/1.1 {status} {ascii}\r\n{REFUSAL_HEADER}: {ascii}\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
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
    fn a_head_ends_only_at_crlf_crlf_and_a_bare_cr_or_lf_is_refused_at_once() {
        assert_eq!(scan(b"GET / HTTP/1.1\r\n\r\nrest", 0), Scan::End(18));
        // Every prefix of a good head asks for more, and resuming where a scan stopped
        // finds the same end.
        let head = b"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nX:\ty\r\n\r\n";
        let mut from = 0;
        for n in 0..head.len() {
            match scan(&head[..n], from) {
                Scan::More(at) => from = at,
                other => panic!("{n}: {other:?}"),
            }
        }
        assert_eq!(scan(head, from), Scan::End(head.len()));
        for bad in [
            &b"GET http://a.test/x\nHost:b.test HTTP/1.1\r\n\r\n"[..],
            b"GET http://a.test/x\rHost:b.test HTTP/1.1\r\n\r\n",
            b"GET http://a.test/ HTTP/1.1\nHost: a.test\n\n",
            b"GET http://a.test/ HTTP/1.1\r\nX: a\r\r\n\r\n",
            b"GET http://a.test/\0 HTTP/1.1\r\n\r\n",
            b"GET http://a.test/\x7f HTTP/1.1\r\n\r\n",
            b"GET http://a.test/\xc3\xa9 HTTP/1.1\r\n\r\n",
            b"GET http://a.test/ HTTP/1.1\r\nX: \x1b[0m\r\n\r\n",
        ] {
            // Refused as soon as the byte is in, before any end: no waiting for a CRLF CRLF
            // that an origin reading LF would never need.
            let cut = bad.len() - 3;
            assert!(
                matches!(scan(&bad[..cut], 0), Scan::Bad(_)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
            assert!(parse(bad).is_err_and(|e| e.status == 400));
        }
        // A tab is not a target byte, though a header value may hold one.
        assert!(p("GET http://a.test/\tx HTTP/1.1\r\n\r\n").is_err());
        assert!(p("GET http://a.test/ HTTP/1.1\r\nX: a\tb\r\n\r\n").is_ok());
        // Only the head: nothing behind the blank line.
        assert!(p("GET http://a.test/ HTTP/1.1\r\n\r\nGET").is_err());
    }

    #[test]
    fn bytes_that_are_not_http_are_refused_when_their_first_line_ends() {
        let line = |b: &[u8]| match scan(b, 0) {
            Scan::More(at) => first_line(b, at),
            other => panic!("{other:?}"),
        };
        assert_eq!(line(b"GET http://a.test/ HTT"), Ok(false));
        assert_eq!(line(b"GET http://a.test/ HTTP/1.1\r\nHost"), Ok(true));
        assert!(line(b"SSH-2.0-OpenSSH_9.6\r\n").is_err());
        assert!(line(b"GET / HTTP/2\r\nX").is_err());
    }

    #[test]
    fn a_host_header_is_read_as_a_host_like_the_url() {
        assert!(p("GET http://A.test./ HTTP/1.1\r\nHost: a.TEST:80\r\n\r\n").is_ok());
        assert!(p("GET http://[::1]/ HTTP/1.1\r\nHost: [0::1]\r\n\r\n").is_ok());
        let e = p("GET http://a.test/ HTTP/1.1\r\nHost: 0x7f000001\r\n\r\n").unwrap_err();
        assert_eq!(e.status, 400, "{e}");
        let e = p("GET http://a.test/ HTTP/1.1\r\nHost: a.test:81\r\n\r\n").unwrap_err();
        assert_eq!(e.status, 403, "{e}");
        // A URL host that is not a host is left to be refused when decided, with its host.
        let h = p("GET http://0xc0000202/ HTTP/1.1\r\nHost: 0xc0000202\r\n\r\n").unwrap();
        assert_eq!(h.host, "0xc0000202");
    }

    #[test]
    fn plain_http_in_a_tunnel_is_one_origin_form_request_for_the_tunnels_host() {
        let host = Host::Name("a.test".into());
        let t = |s: &str| parse_in_tunnel(s.as_bytes(), &host, 80, "a.test");
        let (head, body) =
            t("POST /x HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\n\r\n").unwrap();
        assert_eq!(body, Body::Length(2));
        assert_eq!(
            String::from_utf8(head).unwrap(),
            "POST /x HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\nConnection: close\r\n\r\n"
        );
        let (head, _) = t("GET / HTTP/1.0\r\n\r\n").unwrap();
        assert!(
            String::from_utf8(head)
                .unwrap()
                .contains("Host: a.test\r\n")
        );
        assert!(t("GET / HTTP/1.1\r\nHost: a.test:80\r\n\r\n").is_ok());
        let e = t("GET / HTTP/1.1\r\nHost: b.test\r\n\r\n").unwrap_err();
        assert_eq!(e.status, 403);
        assert_eq!(
            e.reason,
            "its Host header (b.test) names another host than the tunnel (a.test:80)"
        );
        for bad in [
            "GET / HTTP/1.1\r\nHost: a.test:8080\r\n\r\n",
            "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n",
            "CONNECT b.test:443 HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: 127.1\r\n\r\n",
            "SSH-2.0-OpenSSH_9.6\r\n\r\n",
        ] {
            assert!(t(bad).is_err(), "{bad:?}");
        }
        let six = Host::Address("2001:db8::1".parse().unwrap());
        let (head, _) =
            parse_in_tunnel(b"GET / HTTP/1.1\r\n\r\n", &six, 8080, "[2001:db8::1]").unwrap();
        assert!(
            String::from_utf8(head)
                .unwrap()
                .contains("Host: [2001:db8::1]:8080\r\n")
        );
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
            // As the fuzz target (fuzz/fuzz_targets/proxy_head.rs) checks: what is forwarded
            // is one clean head that reads the same inside a tunnel to its host.
            if let Ok(h) = parse(&b)
                && let Kind::Forward { head: out, body } = &h.kind
            {
                assert_eq!(scan(out, 0), Scan::End(out.len()), "{b:?}");
                if let Ok(host) = classify_host(&h.host) {
                    let again = parse_in_tunnel(out, &host, h.port, &h.host);
                    assert_eq!(again.map(|a| a.1), Ok(*body), "{b:?}");
                }
            }
            let _ = Chunked::default().feed(&b);
            let _ = scan(&b, 0);
            let _ = parse_in_tunnel(&b, &Host::Name("a.test".into()), 80, "a.test");
        }
    }

    #[test]
    fn a_response_is_one_line_whatever_the_reason() {
        let r = String::from_utf8(response(403, "a\r\nb")).unwrap();
        assert!(r.starts_with("HTTP/1.1 403 a  b\r\n"), "{r}");
    }

    #[test]
    fn a_refusal_is_in_the_status_line_a_header_and_a_text_body() {
        let why = "boxmaker refused other.test:443: it is not in the config's egress rules";
        let r = String::from_utf8(response(403, why)).unwrap();
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        let lines: Vec<&str> = head.split("\r\n").collect();
        assert_eq!(lines[0], format!("HTTP/1.1 403 {why}"));
        assert!(
            lines.contains(&format!("X-Boxmaker-Refusal: {why}").as_str()),
            "{r}"
        );
        assert!(
            lines.contains(&"Content-Type: text/plain; charset=utf-8"),
            "{r}"
        );
        assert!(
            lines.contains(&format!("Content-Length: {}", why.len() + 1).as_str()),
            "{r}"
        );
        assert_eq!(body, format!("{why}\n"));
        // Above ASCII: escaped where clients read bytes their own way, as it is in the body.
        let r = String::from_utf8(response(502, "could not reach bücher.test\n")).unwrap();
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        assert!(head.is_ascii(), "{head}");
        assert!(
            head.starts_with("HTTP/1.1 502 could not reach b\\u{fc}cher.test \r\n"),
            "{head}"
        );
        assert!(
            head.contains("\r\nX-Boxmaker-Refusal: could not reach b\\u{fc}cher.test \r\n"),
            "{head}"
        );
        assert_eq!(body, "could not reach bücher.test \n");
        assert!(
            head.contains(&format!("Content-Length: {}\r\n", body.len())),
            "{head}"
        );
    }
}
