//! A remote MCP server as a tool: `[[tool]] url = "https://…/mcp"` (docs/spec.md §3.9).
//!
//! boxmaker's runner is the client (no box runs anything: the server is elsewhere), and its
//! connection is a destination like any other: decided by the `[[egress]]` rules at the
//! call's label. What is read here is only the URL, the transport, and the credentials by
//! name (`bearer`, `headers`); never a value.

use crate::egress::{Host, classify_host};

/// Which MCP transport the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP (MCP 2025-03-26 and later): the default.
    StreamableHttp,
    /// The older HTTP+SSE transport (MCP 2024-11-05): a GET event stream and a POST
    /// endpoint it names.
    Sse,
}

impl Transport {
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::StreamableHttp => "streamable-http",
            Transport::Sse => "sse",
        }
    }
}

/// A header a remote tool sends with every request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    /// As written in the config (visible ASCII and spaces).
    Literal(String),
    /// The value of the `[[secret]]` of that name (`"secret:NAME"`).
    Secret(String),
}

/// A remote server's URL, checked: `https://HOST[:PORT]/PATH` or, only to an address,
/// `http://ADDRESS[:PORT]/PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUrl {
    /// As written (the discovery file keys the server by it).
    pub text: String,
    /// `https` (TLS, verified against the system's roots) or plain `http`.
    pub tls: bool,
    /// Its host, read as the egress proxy reads a host.
    pub host: Host,
    pub port: u16,
    /// The path and query, from its `/`.
    pub path: String,
}

impl RemoteUrl {
    /// The host as a URL writes it (`[::1]` for an IPv6 address).
    pub fn host_text(&self) -> String {
        match &self.host {
            Host::Name(n) => n.clone(),
            Host::Address(std::net::IpAddr::V6(a)) => format!("[{a}]"),
            Host::Address(a) => a.to_string(),
        }
    }

    /// `scheme://host:port/path`, as requests are sent.
    pub fn absolute(&self) -> String {
        format!(
            "{}://{}:{}{}",
            if self.tls { "https" } else { "http" },
            self.host_text(),
            self.port,
            self.path
        )
    }

    /// Reads `text`; `Err` says why not, as the end of a sentence.
    pub fn parse(text: &str) -> Result<RemoteUrl, String> {
        if text
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || !c.is_ascii())
        {
            return Err(
                "holds white space, a control character or non-ASCII (write an \
                        international name in its xn-- form, and percent-encode the path)"
                    .into(),
            );
        }
        let lower = text.to_ascii_lowercase();
        let (tls, rest) = if lower.starts_with("https://") {
            (true, text.get(8..).unwrap_or_default())
        } else if lower.starts_with("http://") {
            (false, text.get(7..).unwrap_or_default())
        } else {
            return Err("is not an https:// (or http://) URL".into());
        };
        if text.contains('#') {
            return Err("has a fragment (#…), which is never sent".into());
        }
        if text.contains('\\') {
            return Err("holds a backslash".into());
        }
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(end);
        if authority.contains('@') {
            return Err(
                "carries user info (user@host); give a credential with `bearer` or \
                        `headers`"
                    .into(),
            );
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let Some((addr, after)) = v6.split_once(']') else {
                return Err("has an unclosed [ in its host".into());
            };
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| "has text after its ] that is not a port".to_string())?,
                ),
            };
            (addr, port)
        } else {
            match authority.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err("has no host".into());
        }
        let host = classify_host(host).map_err(|why| format!("has a host that {why}"))?;
        let port = match port {
            None => {
                if tls {
                    443
                } else {
                    80
                }
            }
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => n,
                _ => return Err(format!("has a port {p:?} that is not from 1 to 65535")),
            },
        };
        if !tls && !matches!(host, Host::Address(_)) {
            return Err(
                "is plain http:// to a name: plain HTTP goes only to an address an [[egress]] \
                 rule names (a service on loopback, say), like http://127.0.0.1:8080/mcp; \
                 anything else is https://"
                    .into(),
            );
        }
        let path = if path.is_empty() {
            "/".to_string()
        } else if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        Ok(RemoteUrl {
            text: text.to_string(),
            tls,
            host,
            port,
            path,
        })
    }
}

/// The headers a remote tool may not set itself: the client sets them, or they would change
/// what a request means.
pub const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
];

/// Whether `name` is an HTTP header name (RFC 9110 token characters).
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_as_a_request_goes() {
        let u = RemoteUrl::parse("https://api.githubcopilot.com/mcp/").unwrap();
        assert!(u.tls);
        assert_eq!(u.host, Host::Name("api.githubcopilot.com".into()));
        assert_eq!((u.port, u.path.as_str()), (443, "/mcp/"));
        let u = RemoteUrl::parse("http://127.0.0.1:8931/mcp").unwrap();
        assert_eq!(u.absolute(), "http://127.0.0.1:8931/mcp");
        let u = RemoteUrl::parse("https://[::1]:9000").unwrap();
        assert_eq!(
            (u.host_text().as_str(), u.port, u.path.as_str()),
            ("[::1]", 9000, "/")
        );
        for bad in [
            "http://localhost:8080/mcp",
            "ftp://x.com/",
            "https://user@x.com/",
            "https://x.com:0/",
            "https://x.com:99999/",
            "https://0x7f.1/",
            "https://x.com/a#b",
            "https://x .com/",
            "https:///mcp",
        ] {
            assert!(RemoteUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
