//! What the sign-in reads from servers, checked (docs/spec.md §3.9, "Signing in"): the
//! `WWW-Authenticate` challenge (RFC 6750 §3), protected resource metadata (RFC 9728) and
//! authorization server metadata (RFC 8414, or OpenID discovery). Pure: no I/O, so every
//! hostile document is a unit test.
//!
//! The checks that stop a mix-up: the resource metadata must name the server boxmaker was
//! configured with (its `resource` is the server's URL, or a parent of it on the same
//! origin), and the authorization server's metadata must carry exactly the issuer it was
//! asked for (RFC 8414 §3.3). Every endpoint must be a URL the remote client may reach
//! (`https://`, or plain `http://` to an address or `localhost`), and PKCE with `S256` must
//! be offered.

use config::RemoteUrl;
use serde_json::Value;

/// The largest metadata document read, in bytes.
pub const MAX_DOCUMENT: usize = 256 * 1024;

/// A `Bearer` challenge's parameters that matter here.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// `scope`: what the server wants.
    pub scope: Option<String>,
    /// `error` (`invalid_token`, `insufficient_scope`).
    pub error: Option<String>,
}

/// Reads the `Bearer` challenge of a `WWW-Authenticate` value (`None`: none there). Only
/// `Bearer`'s own parameters are read; another scheme's are skipped.
pub fn challenge(header: &str) -> Option<Challenge> {
    let mut out: Option<Challenge> = None;
    let mut rest = header.trim();
    let mut in_bearer = false;
    while !rest.is_empty() {
        // A token: a scheme (followed by a space or the end), or a parameter name (`=`).
        let end = rest
            .find(|c: char| c == '=' || c == ',' || c.is_ascii_whitespace())
            .unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        let after = after.trim_start();
        if let Some(value_part) = after.strip_prefix('=') {
            let value_part = value_part.trim_start();
            let (value, left) = if let Some(q) = value_part.strip_prefix('"') {
                // A quoted string: `\` escapes the next character.
                let mut v = String::new();
                let mut chars = q.char_indices();
                let mut close = None;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                v.push(n);
                            }
                        }
                        '"' => {
                            close = Some(i + 1);
                            break;
                        }
                        c => v.push(c),
                    }
                }
                let left = close.map_or("", |c| q.get(c..).unwrap_or_default());
                (v, left)
            } else {
                let e = value_part.find(',').unwrap_or(value_part.len());
                let (v, l) = value_part.split_at(e);
                (v.trim().to_string(), l)
            };
            if in_bearer && let Some(c) = out.as_mut() {
                let slot = match word.to_ascii_lowercase().as_str() {
                    "resource_metadata" => Some(&mut c.resource_metadata),
                    "scope" => Some(&mut c.scope),
                    "error" => Some(&mut c.error),
                    _ => None,
                };
                if let Some(slot) = slot
                    && slot.is_none()
                {
                    *slot = Some(value);
                }
            }
            rest = left.trim_start().trim_start_matches(',').trim_start();
        } else if word.is_empty() {
            rest = after.trim_start_matches(',').trim_start();
        } else {
            // A scheme.
            in_bearer = word.eq_ignore_ascii_case("bearer");
            if in_bearer && out.is_none() {
                out = Some(Challenge::default());
            }
            rest = after.trim_start_matches(',').trim_start();
        }
    }
    out
}

/// Protected resource metadata, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// Its `resource`: what tokens are asked for (RFC 8707's `resource` parameter).
    pub resource: String,
    /// Its first authorization server (an issuer URL).
    pub issuer: String,
    pub scopes_supported: Option<Vec<String>>,
}

/// Why a document was refused: the end of a sentence.
pub type Why = String;

/// The well-known URLs of `server`'s protected resource metadata, in the order RFC 9728 §3.1
/// and the MCP authorization spec give: the path-based one, then the root one.
pub fn resource_metadata_urls(server: &RemoteUrl) -> Vec<String> {
    let origin = origin(server);
    let path = server.path.split('?').next().unwrap_or_default();
    let path = path.trim_end_matches('/');
    let mut out = Vec::new();
    if !path.is_empty() {
        out.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    out.push(format!("{origin}/.well-known/oauth-protected-resource"));
    out
}

/// `scheme://host[:port]` of `u`, as a URL writes it (the port only when not the default).
pub fn origin(u: &RemoteUrl) -> String {
    let scheme = if u.tls { "https" } else { "http" };
    let default = if u.tls { 443 } else { 80 };
    if u.port == default {
        format!("{scheme}://{}", u.host_text())
    } else {
        format!("{scheme}://{}:{}", u.host_text(), u.port)
    }
}

/// Reads protected resource metadata that must be about `server`.
pub fn resource(doc: &[u8], server: &RemoteUrl) -> Result<Resource, Why> {
    let v: Value = serde_json::from_slice(doc)
        .map_err(|_| "is not JSON (RFC 9728 metadata is a JSON object)".to_string())?;
    let Some(o) = v.as_object() else {
        return Err("is not a JSON object".into());
    };
    let resource = o
        .get("resource")
        .and_then(Value::as_str)
        .ok_or("has no `resource`")?;
    if !names_server(resource, server) {
        return Err(format!(
            "is about the resource {}, not the server boxmaker was given ({}): a document \
             that points the sign-in at another resource is refused",
            shown(resource),
            server.text
        ));
    }
    let issuer = o
        .get("authorization_servers")
        .and_then(Value::as_array)
        .and_then(|a| a.iter().find_map(Value::as_str))
        .ok_or("names no authorization server (`authorization_servers`)")?;
    RemoteUrl::parse(issuer)
        .map_err(|why| format!("names an authorization server {} that {why}", shown(issuer)))?;
    Ok(Resource {
        resource: resource.to_string(),
        issuer: issuer.to_string(),
        scopes_supported: scopes(o.get("scopes_supported")),
    })
}

/// Whether the resource identifier `resource` names `server`: the same scheme, host and
/// port, and a path that is the server's or a parent of it (at a `/`).
fn names_server(resource: &str, server: &RemoteUrl) -> bool {
    let Ok(r) = RemoteUrl::parse(resource) else {
        return false;
    };
    if r.tls != server.tls || r.host != server.host || r.port != server.port {
        return false;
    }
    if r.path.contains('?') {
        return false;
    }
    let rp = r.path.trim_end_matches('/');
    let sp = server.path.split('?').next().unwrap_or_default();
    sp == rp || sp.trim_end_matches('/') == rp || sp.starts_with(&format!("{rp}/"))
}

/// Authorization server metadata, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub revocation_endpoint: Option<String>,
    pub auth_methods: Option<Vec<String>>,
    pub scopes_supported: Option<Vec<String>>,
    /// RFC 9207: the redirect carries `iss`.
    pub iss_in_response: bool,
    /// Client ID metadata documents (a URL as the client id) are accepted.
    pub client_id_documents: bool,
}

/// The well-known URLs of issuer `issuer`'s metadata, in the order the MCP authorization
/// spec gives: RFC 8414's (the well-known part before the path), then OpenID discovery's
/// two forms.
pub fn server_metadata_urls(issuer: &RemoteUrl) -> Vec<String> {
    let origin = origin(issuer);
    let path = issuer.path.trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Reads authorization server metadata that must be `issuer`'s.
pub fn server(doc: &[u8], issuer: &str) -> Result<Server, Why> {
    let v: Value = serde_json::from_slice(doc)
        .map_err(|_| "is not JSON (RFC 8414 metadata is a JSON object)".to_string())?;
    let Some(o) = v.as_object() else {
        return Err("is not a JSON object".into());
    };
    let said = o
        .get("issuer")
        .and_then(Value::as_str)
        .ok_or("has no `issuer`")?;
    if said != issuer {
        return Err(format!(
            "says its issuer is {}, not {issuer}, the one it was asked for (RFC 8414 §3.3): \
             metadata of another issuer is refused (a mix-up)",
            shown(said)
        ));
    }
    let endpoint = |key: &str| -> Result<Option<String>, Why> {
        match o.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => RemoteUrl::parse(s)
                .map(|_| Some(s.clone()))
                .map_err(|why| format!("has a `{key}` {} that {why}", shown(s))),
            Some(_) => Err(format!("has a `{key}` that is not a string")),
        }
    };
    let authorization_endpoint =
        endpoint("authorization_endpoint")?.ok_or("has no `authorization_endpoint`")?;
    let token_endpoint = endpoint("token_endpoint")?.ok_or("has no `token_endpoint`")?;
    let pkce = scopes(o.get("code_challenge_methods_supported")).unwrap_or_default();
    if !pkce.iter().any(|m| m == "S256") {
        return Err(
            "does not offer PKCE with S256 (`code_challenge_methods_supported`), which \
             boxmaker will not sign in without"
                .into(),
        );
    }
    Ok(Server {
        issuer: said.to_string(),
        authorization_endpoint,
        token_endpoint,
        registration_endpoint: endpoint("registration_endpoint")?,
        revocation_endpoint: endpoint("revocation_endpoint")?,
        auth_methods: scopes(o.get("token_endpoint_auth_methods_supported")),
        scopes_supported: scopes(o.get("scopes_supported")),
        iss_in_response: o
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        client_id_documents: o
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

/// A list of strings (`None` when absent or not one).
fn scopes(v: Option<&Value>) -> Option<Vec<String>> {
    let a = v?.as_array()?;
    Some(
        a.iter()
            .filter_map(Value::as_str)
            .filter(|s| config::remote::is_scope_token(s))
            .map(str::to_string)
            .collect(),
    )
}

/// Text from a server, as a sentence may quote it: visible ASCII, at most 120 characters,
/// anything else `?`.
pub fn shown(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(120)
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .collect();
    if s.chars().count() > 120 {
        out.push('…');
    }
    format!("\"{out}\"")
}

/// How the client authenticates at the token endpoint: what registration said, else the
/// first of `client_secret_basic`, `client_secret_post` the server offers (RFC 8414's
/// default is basic) when there is a secret, else `none`.
pub fn auth_method(
    registered: Option<&str>,
    has_secret: bool,
    offered: Option<&[String]>,
) -> String {
    if let Some(m) = registered
        && matches!(m, "client_secret_basic" | "client_secret_post" | "none")
    {
        return m.to_string();
    }
    if !has_secret {
        return "none".into();
    }
    let offered: Vec<&str> = match offered {
        Some(o) => o.iter().map(String::as_str).collect(),
        None => vec!["client_secret_basic"],
    };
    for m in ["client_secret_basic", "client_secret_post"] {
        if offered.contains(&m) {
            return m.into();
        }
    }
    if offered.contains(&"none") {
        return "none".into();
    }
    "client_secret_basic".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> RemoteUrl {
        RemoteUrl::parse(s).unwrap()
    }

    #[test]
    fn a_bearer_challenge_is_read() {
        let c = challenge(
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://localhost:9/.well-known/oauth-protected-resource/mcp""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("mcp:basic mcp:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://localhost:9/.well-known/oauth-protected-resource/mcp")
        );
        // Another scheme's parameters are not Bearer's.
        let c = challenge(r#"Basic realm="x", scope="no", Bearer realm="y""#).unwrap();
        assert_eq!(c.scope, None);
        assert_eq!(challenge(r#"Basic realm="x""#), None);
        assert_eq!(challenge("Bearer").unwrap(), Challenge::default());
        // Hostile: unterminated quotes and stray commas end quietly.
        let c = challenge(r#"Bearer scope="a\"b, resource_metadata=""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("a\"b, resource_metadata="));
        assert!(challenge(",,, =, Bearer ,scope=x").is_some());
    }

    #[test]
    fn resource_metadata_urls_go_path_first() {
        assert_eq!(
            resource_metadata_urls(&url("http://localhost:8/mcp")),
            [
                "http://localhost:8/.well-known/oauth-protected-resource/mcp",
                "http://localhost:8/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            server_metadata_urls(&url("https://as.example/tenant1")),
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant1",
                "https://as.example/.well-known/openid-configuration/tenant1",
                "https://as.example/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            server_metadata_urls(&url("https://as.example")),
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
    }

    /// Attack: resource metadata that points the token at another resource (a mix-up, or a
    /// server that wants a token for somewhere else) is refused.
    #[test]
    fn metadata_about_another_resource_is_refused() {
        let server = url("https://mcp.example.com/mcp");
        let doc = |r: &str| {
            serde_json::json!({"resource": r, "authorization_servers": ["https://as.example"]})
                .to_string()
        };
        for ok in [
            "https://mcp.example.com/mcp",
            "https://mcp.example.com",
            "https://mcp.example.com/",
        ] {
            assert!(resource(doc(ok).as_bytes(), &server).is_ok(), "{ok}");
        }
        for bad in [
            "https://evil.example.com/mcp",
            "https://mcp.example.com/other",
            "https://mcp.example.com/mc",
            "http://mcp.example.com/mcp",
            "https://mcp.example.com:8443/mcp",
            "https://mcp.example.com.evil.example/mcp",
        ] {
            let e = resource(doc(bad).as_bytes(), &server).unwrap_err();
            assert!(e.contains("another resource"), "{bad}: {e}");
        }
        let e = resource(
            br#"{"resource":"https://mcp.example.com/mcp","authorization_servers":["http://as.example"]}"#,
            &server,
        )
        .unwrap_err();
        assert!(e.contains("plain http"), "{e}");
    }

    /// Attack: authorization server metadata of another issuer than the one named (the
    /// mix-up of RFC 8414 §3.3 and RFC 9207) is refused, and so is one without PKCE.
    #[test]
    fn metadata_of_another_issuer_is_refused() {
        let good = serde_json::json!({
            "issuer": "https://as.example/t1",
            "authorization_endpoint": "https://as.example/t1/authorize",
            "token_endpoint": "https://as.example/t1/token",
            "code_challenge_methods_supported": ["S256"],
        });
        assert!(server(good.to_string().as_bytes(), "https://as.example/t1").is_ok());
        let e = server(good.to_string().as_bytes(), "https://as.example/t2").unwrap_err();
        assert!(e.contains("mix-up"), "{e}");
        let mut other = good.clone();
        other["issuer"] = "https://evil.example/t1".into();
        assert!(server(other.to_string().as_bytes(), "https://as.example/t1").is_err());
        let mut no_pkce = good.clone();
        no_pkce["code_challenge_methods_supported"] = serde_json::json!(["plain"]);
        let e = server(no_pkce.to_string().as_bytes(), "https://as.example/t1").unwrap_err();
        assert!(e.contains("PKCE"), "{e}");
        let mut plain = good;
        plain["token_endpoint"] = "http://as.example/token".into();
        let e = server(plain.to_string().as_bytes(), "https://as.example/t1").unwrap_err();
        assert!(e.contains("token_endpoint"), "{e}");
        assert!(server(b"[1]", "x").is_err());
        assert!(server(b"\xff", "x").is_err());
    }

    #[test]
    fn the_token_endpoint_auth_method_follows_what_is_offered() {
        let o = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            auth_method(Some("client_secret_post"), true, None),
            "client_secret_post"
        );
        assert_eq!(
            auth_method(None, false, Some(&o(&["client_secret_basic"]))),
            "none"
        );
        assert_eq!(auth_method(None, true, None), "client_secret_basic");
        assert_eq!(
            auth_method(None, true, Some(&o(&["client_secret_post", "none"]))),
            "client_secret_post"
        );
        assert_eq!(auth_method(None, true, Some(&o(&["none"]))), "none");
    }
}
