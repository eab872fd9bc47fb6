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
        // `localhost` is loopback by definition (RFC 6761 §6.3), and the client connects to it
        // only at loopback addresses: as safe as plain HTTP to 127.0.0.1, and OAuth metadata
        // is compared as written, so a sign-in served as `http://localhost:…` must be read so.
        if !tls && !matches!(host, Host::Address(_)) && !is_localhost(&host) {
            return Err(
                "is plain http:// to a name: plain HTTP goes only to an address an [[egress]] \
                 rule names (a service on loopback, say), like http://127.0.0.1:8080/mcp, or to \
                 localhost; anything else is https://"
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

/// A remote tool signed in to with OAuth (`oauth = true` or `oauth = { … }`, docs/spec.md
/// §3.9): the client boxmaker is at the server's authorization server, and what it asks for.
/// Every field is optional: with none, boxmaker registers itself (RFC 7591) where the
/// authorization server offers that, and asks for the scopes the server names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuth {
    /// A client id registered by hand (an authorization server without dynamic
    /// registration, such as GitHub's), or the URL of a client metadata document.
    pub client_id: Option<String>,
    /// The `[[secret]]` holding that client's secret (a confidential client).
    pub client_secret: Option<String>,
    /// The scopes to ask for; `None`: those the server names (its challenge, else its
    /// metadata's `scopes_supported`), else none.
    pub scopes: Option<Vec<String>>,
    /// The loopback port of the redirect (`http://127.0.0.1:PORT/callback`), for a client
    /// registered with a fixed one; `None`: a free port each time.
    pub redirect_port: Option<u16>,
}

impl OAuth {
    /// Reads `oauth = true` or `oauth = { client_id, client_secret, scopes, redirect_port }`;
    /// `Err` says why not, as the end of a sentence. `client_secret` is a secret's name, checked
    /// by the caller.
    pub fn read(v: &toml::Value) -> Result<OAuth, String> {
        let t = match v {
            toml::Value::Boolean(true) => return Ok(OAuth::default()),
            toml::Value::Boolean(false) => {
                return Err("is false; leave it out for a tool that needs no sign-in".into());
            }
            toml::Value::Table(t) => t,
            _ => {
                return Err(
                    "must be `true` or a table { client_id, client_secret, scopes, redirect_port }"
                        .into(),
                );
            }
        };
        let mut out = OAuth::default();
        for (k, v) in t {
            match (k.as_str(), v) {
                ("client_id", toml::Value::String(s)) => {
                    if s.is_empty() || s.len() > 512 || !s.bytes().all(|b| b.is_ascii_graphic()) {
                        return Err(
                            "has a `client_id` that is not 1 to 512 visible ASCII characters"
                                .into(),
                        );
                    }
                    out.client_id = Some(s.clone());
                }
                ("client_secret", toml::Value::String(s)) => {
                    out.client_secret = Some(s.clone());
                }
                ("scopes", toml::Value::Array(list)) => {
                    let mut scopes = Vec::new();
                    for s in list {
                        match s {
                            toml::Value::String(s) if is_scope_token(s) => {
                                scopes.push(s.clone());
                            }
                            _ => {
                                return Err(format!(
                                    "has a scope {s} that is not a scope token (visible ASCII, \
                                     no space, quote or backslash)"
                                ));
                            }
                        }
                    }
                    out.scopes = Some(scopes);
                }
                ("redirect_port", toml::Value::Integer(p)) => match u16::try_from(*p) {
                    Ok(p) if p >= 1024 => out.redirect_port = Some(p),
                    _ => return Err("has a `redirect_port` that is not from 1024 to 65535".into()),
                },
                ("client_id" | "client_secret" | "scopes" | "redirect_port", _) => {
                    return Err(format!("has `{k}` of the wrong type"));
                }
                _ => {
                    return Err(format!(
                        "has an unknown key `{k}` (known: client_id, client_secret, scopes, \
                         redirect_port)"
                    ));
                }
            }
        }
        if out.client_secret.is_some() && out.client_id.is_none() {
            return Err(
                "has a `client_secret` but no `client_id`; a secret belongs to a client registered by hand"
                    .into(),
            );
        }
        Ok(out)
    }
}

/// Whether `s` is an OAuth scope token (RFC 6749 §3.3: `%x21 / %x23-5B / %x5D-7E`).
pub fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 256
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

/// Whether `host` is the name `localhost`, which plain HTTP may reach at its loopback
/// addresses only.
pub fn is_localhost(host: &Host) -> bool {
    matches!(host, Host::Name(n) if n == "localhost")
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
    fn an_oauth_table_is_read_and_checked() {
        let v: toml::Value = toml::from_str(
            "o = { client_id = \"abc\", client_secret = \"s\", scopes = [\"repo\", \"read:org\"] }",
        )
        .unwrap();
        let o = OAuth::read(&v["o"]).unwrap();
        assert_eq!(o.client_id.as_deref(), Some("abc"));
        assert_eq!(o.scopes.unwrap(), vec!["repo", "read:org"]);
        assert_eq!(
            OAuth::read(&toml::Value::Boolean(true)).unwrap(),
            OAuth::default()
        );
        for bad in [
            "o = false",
            "o = { scopes = [\"a b\"] }",
            "o = { client_secret = \"s\" }",
            "o = { redirect_port = 80 }",
            "o = { other = 1 }",
            "o = { client_id = \"a b\" }",
        ] {
            let v: toml::Value = toml::from_str(bad).unwrap();
            assert!(OAuth::read(&v["o"]).is_err(), "{bad}");
        }
    }

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
            "http://localhost.example:8080/mcp",
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
