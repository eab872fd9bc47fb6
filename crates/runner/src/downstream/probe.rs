//! One look at a remote MCP server before its tools are asked for (`boxmaker add`,
//! docs/spec.md §3.9 and §7): does it answer, and does it want a sign-in?
//!
//! The look goes through the remote client's own connection ([`super::remote::Client`]):
//! decided by the `[[egress]]` rules at the public label, TLS verified against the public
//! roots, the tool's credential sent only to its own host. It asks as boxmaker's client
//! connects (docs/spec.md §3.9, "Both protocol eras"): a `server/discover` request of MCP
//! 2026-07-28 first, and, when the server is of an earlier revision (it answers with an error,
//! or an HTTP status other than 2xx and 401), the `initialize` handshake:
//!
//! - a 2xx answer that names a revision boxmaker speaks: the server takes the request (with
//!   the credential the tool gives, if any); a legacy session it opened is ended at once
//!   (`DELETE`);
//! - a JSON-RPC "unsupported protocol version" to both, naming what the server speaks: the
//!   server speaks no revision boxmaker does, and its own list says which it does;
//! - another answer than 401 to `initialize`: its status, as it is (a wrong path, a broken
//!   server);
//! - 401 with `WWW-Authenticate: Bearer resource_metadata="URL"` (the MCP authorization
//!   spec): a server signed in to with OAuth, its protected resource metadata (RFC 9728) at
//!   that URL;
//! - 401 without it: the metadata is looked for where RFC 9728 puts it on the server's own
//!   host — `/.well-known/oauth-protected-resource` followed by the server's path, then
//!   without it — with no credential (the metadata is public); a JSON object naming
//!   `authorization_servers` there is a sign-in too;
//! - else a credential boxmaker cannot get by itself (a token the person gives).
//!
//! Nothing here signs in: that is `boxmaker auth login`'s.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use config::{RemoteUrl, Tool, ToolKind};
use http::{HeaderName, HeaderValue, Method, StatusCode};
use http_body_util::BodyExt;
use proto::SessionId;

use super::remote;
use super::transport::Reason;
use crate::run::Runner;

/// The most of a metadata document read.
const MAX_METADATA: usize = 64 << 10;
/// The most of a `WWW-Authenticate` challenge read, and shown.
const MAX_CHALLENGE: usize = 8 << 10;
const SHOWN: usize = 200;
/// How long one request of the probe may take, at most.
const WITHIN: Duration = Duration::from_secs(30);

/// What a remote server said to a first request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// It answered with this status, without asking for a credential (or it took the one
    /// the tool gives), and named no revision (or one boxmaker does not read).
    Answered(u16),
    /// It speaks this revision with boxmaker (`2026-07-28` after `server/discover`, or the
    /// one its `initialize` answer named).
    Speaks(String),
    /// It refused every revision boxmaker speaks; `supported` is its own list (what it
    /// said, visible ASCII, at most 200 characters).
    NoVersion { supported: String },
    /// It wants an OAuth sign-in: its protected resource metadata is at `metadata`.
    SignIn { metadata: String },
    /// It refused (401) and names no OAuth metadata: it wants a credential given by hand.
    /// `challenge` is its `WWW-Authenticate`, visible ASCII, secrets redacted, at most 200
    /// characters.
    Credential { challenge: String },
}

impl Runner {
    /// Sends `tool`'s remote server one `initialize` request and reads what its answer says
    /// (see the module). `Err` is why it could not be asked, in the client's words.
    pub fn probe_remote(&self, tool: &Tool) -> Result<Probe, String> {
        // What the server said is shown to a person: a secret it echoes (its challenge may
        // quote the token it refused) is redacted first, as from any answer (docs/spec.md §3.8).
        let redactor = self.secrets().redactor();
        let redact = |t: String| redactor.redact(&t).into_owned();
        match self.probe(tool) {
            Ok(Probe::SignIn { metadata }) => Ok(Probe::SignIn {
                metadata: redact(metadata),
            }),
            // Redacted whole, then cut: a secret cut in two would not be found.
            Ok(Probe::Credential { challenge }) => Ok(Probe::Credential {
                challenge: redact(challenge).chars().take(SHOWN).collect(),
            }),
            Ok(Probe::NoVersion { supported }) => Ok(Probe::NoVersion {
                supported: redact(supported).chars().take(SHOWN).collect(),
            }),
            Ok(answered) => Ok(answered),
            Err(why) => Err(redact(why)),
        }
    }

    fn probe(&self, tool: &Tool) -> Result<Probe, String> {
        let ToolKind::Remote { url, .. } = &tool.kind else {
            return Err(format!("{} is not a remote MCP server", tool.name));
        };
        let rt = self.hub().runtime()?;
        rt.block_on(async {
            let client = self.probe_client(tool)?;
            let info =
                serde_json::json!({"name": "boxmaker", "version": env!("CARGO_PKG_VERSION")});
            // MCP 2026-07-28 first: one self-contained request, its revision in `_meta` and
            // in the routing headers.
            let modern = super::heard::modern_versions();
            let newest = modern.first().map(|v| v.to_string()).unwrap_or_default();
            let discover = serde_json::json!({
                "jsonrpc": "2.0",
                "id": 0,
                "method": "server/discover",
                "params": {"_meta": {
                    "io.modelcontextprotocol/protocolVersion": newest,
                    "io.modelcontextprotocol/clientInfo": info,
                    "io.modelcontextprotocol/clientCapabilities": {},
                }}
            });
            let mut extra = HashMap::new();
            for (k, v) in [
                ("mcp-protocol-version", newest.as_str()),
                ("mcp-method", "server/discover"),
            ] {
                if let (Ok(k), Ok(v)) = (HeaderName::try_from(k), HeaderValue::try_from(v)) {
                    extra.insert(k, v);
                }
            }
            let resp = within(client.send(
                Method::POST,
                None,
                &extra,
                "application/json, text/event-stream",
                None,
                Some(Bytes::from(discover.to_string())),
            ))
            .await?;
            let mut refused: Vec<String> = Vec::new();
            let resp = if resp.status().is_success() {
                match answer_of(resp).await {
                    Answer::Result(r) => {
                        let speaks = r
                            .get("supportedVersions")
                            .and_then(|v| v.as_array())
                            .into_iter()
                            .flatten()
                            .filter_map(|v| v.as_str())
                            .find(|v| modern.iter().any(|m| m.as_str() == *v))
                            .map(str::to_string);
                        if let Some(v) = speaks {
                            return Ok(Probe::Speaks(v));
                        }
                        refused.extend(versions_in(r.get("supportedVersions")));
                    }
                    Answer::Error(e) => {
                        refused.extend(versions_in(e.get("data").and_then(|d| d.get("supported"))))
                    }
                    Answer::None => {}
                }
                None
            } else if resp.status() == StatusCode::UNAUTHORIZED {
                Some(resp)
            } else {
                None
            };
            // A server of an earlier revision: its handshake.
            let resp = match resp {
                Some(r) => r,
                None => {
                    let body = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": super::heard::LEGACY_VERSION.to_string(),
                            "capabilities": {},
                            "clientInfo": info
                        }
                    });
                    within(client.send(
                        Method::POST,
                        None,
                        &HashMap::new(),
                        "application/json, text/event-stream",
                        None,
                        Some(Bytes::from(body.to_string())),
                    ))
                    .await?
                }
            };
            let status = resp.status();
            if status != StatusCode::UNAUTHORIZED {
                let session = resp
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string);
                let answer = if status.is_success() {
                    answer_of(resp).await
                } else {
                    drop(resp);
                    Answer::None
                };
                if let Some(s) = session {
                    // Best effort: the server ends the session it opened for the look.
                    let _ = within(client.send(
                        Method::DELETE,
                        Some(&s),
                        &HashMap::new(),
                        "application/json, text/event-stream",
                        None,
                        None,
                    ))
                    .await;
                }
                match answer {
                    Answer::Result(r) => {
                        if let Some(v) = r.get("protocolVersion").and_then(|v| v.as_str()) {
                            return Ok(Probe::Speaks(v.to_string()));
                        }
                    }
                    Answer::Error(e) => {
                        let named = versions_in(e.get("data").and_then(|d| d.get("supported")));
                        if !named.is_empty() || !refused.is_empty() {
                            for v in named {
                                if !refused.contains(&v) {
                                    refused.push(v);
                                }
                            }
                            return Ok(Probe::NoVersion {
                                supported: shown_versions(&refused),
                            });
                        }
                    }
                    Answer::None => {}
                }
                if !refused.is_empty() && !status.is_success() {
                    return Ok(Probe::NoVersion {
                        supported: shown_versions(&refused),
                    });
                }
                return Ok(Probe::Answered(status.as_u16()));
            }
            let challenge = super::remote::shown_challenge(resp.headers(), MAX_CHALLENGE);
            drop(resp);
            if let Some(metadata) = resource_metadata(&challenge) {
                return Ok(Probe::SignIn { metadata });
            }
            for path in well_known(&url.path) {
                let mut at = url.clone();
                at.path = path;
                at.text = at.absolute();
                if self.holds_metadata(tool, &at).await {
                    return Ok(Probe::SignIn { metadata: at.text });
                }
            }
            Ok(Probe::Credential { challenge })
        })
    }

    /// The remote client of `tool` for the probe: the discovery session's (public) label.
    fn probe_client(&self, tool: &Tool) -> Result<remote::Client, String> {
        let session = SessionId::new("discovery").map_err(|e| format!("bad session: {e}"))?;
        remote::Client::new(
            self,
            tool,
            egress::BoxCtx {
                session,
                tool: tool.name.clone(),
                call: None,
                calls: None,
                float: Arc::new(egress::Float::new(tool.label(), None)),
            },
            Reason::default(),
        )
    }

    /// Whether `at` (on `tool`'s own host) answers a GET with protected resource metadata:
    /// a JSON object with a non-empty `authorization_servers` list. Asked with no
    /// credential: the tool is cloned without one.
    async fn holds_metadata(&self, tool: &Tool, at: &RemoteUrl) -> bool {
        let mut bare = tool.clone();
        if let ToolKind::Remote {
            url,
            bearer,
            headers,
            ..
        } = &mut bare.kind
        {
            *url = at.clone();
            *bearer = None;
            headers.clear();
        }
        let Ok(client) = self.probe_client(&bare) else {
            return false;
        };
        let Ok(resp) = within(client.send(
            Method::GET,
            None,
            &HashMap::new(),
            "application/json",
            None,
            None,
        ))
        .await
        else {
            return false;
        };
        if resp.status() != StatusCode::OK {
            return false;
        }
        let body = http_body_util::Limited::new(resp.into_body(), MAX_METADATA);
        let Ok(Ok(bytes)) = tokio::time::timeout(WITHIN, body.collect()).await else {
            return false;
        };
        serde_json::from_slice::<serde_json::Value>(&bytes.to_bytes())
            .ok()
            .and_then(|v| {
                v.get("authorization_servers")
                    .and_then(|a| a.as_array())
                    .map(|a| !a.is_empty())
            })
            .unwrap_or(false)
    }
}

/// The most of a probe's answer read.
const MAX_ANSWER: usize = 64 << 10;

/// What a JSON-RPC answer to the probe held.
enum Answer {
    Result(serde_json::Value),
    Error(serde_json::Value),
    None,
}

/// The JSON-RPC answer in `resp`'s body (at most [`MAX_ANSWER`] read): a JSON body, or the
/// first `data:` line of an event stream that holds a response.
async fn answer_of(resp: http::Response<hyper::body::Incoming>) -> Answer {
    let body = http_body_util::Limited::new(resp.into_body(), MAX_ANSWER);
    let Ok(Ok(bytes)) = tokio::time::timeout(WITHIN, body.collect()).await else {
        return Answer::None;
    };
    let bytes = bytes.to_bytes();
    let text = String::from_utf8_lossy(&bytes);
    let one = |v: serde_json::Value| match (v.get("result"), v.get("error")) {
        (Some(r), _) => Some(Answer::Result(r.clone())),
        (None, Some(e)) => Some(Answer::Error(e.clone())),
        _ => None,
    };
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
        return one(v).unwrap_or(Answer::None);
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
        .find_map(one)
        .unwrap_or(Answer::None)
}

/// The revisions a list (`supported`, `supportedVersions`) names, as strings.
fn versions_in(list: Option<&serde_json::Value>) -> Vec<String> {
    list.and_then(|l| l.as_array())
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str())
        .take(32)
        .map(|v| {
            v.chars()
                .filter(|c| c.is_ascii_graphic())
                .take(32)
                .collect()
        })
        .collect()
}

/// A server's list of revisions, as a person reads it.
fn shown_versions(list: &[String]) -> String {
    if list.is_empty() {
        "none it names".into()
    } else {
        list.join(", ")
    }
}

/// `f` within [`WITHIN`], its error as a sentence.
async fn within<T, E: std::fmt::Display>(
    f: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout(WITHIN, f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err(format!(
            "the server did not answer within {} s",
            WITHIN.as_secs()
        )),
    }
}

/// Where RFC 9728 (§3.1) puts the protected resource metadata of a resource at `path`: the
/// well-known name with the path after it, then (as the MCP authorization spec says a client
/// tries next) without it. The query is dropped.
fn well_known(path: &str) -> Vec<String> {
    const NAME: &str = "/.well-known/oauth-protected-resource";
    let path = path.split('?').next().unwrap_or_default();
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        vec![NAME.to_string()]
    } else {
        vec![format!("{NAME}{path}"), NAME.to_string()]
    }
}

/// The `resource_metadata` parameter of a `WWW-Authenticate` challenge (RFC 9728 §5.1), if
/// it names an absolute http(s) URL: a quoted string (with `\` escapes) or a token.
fn resource_metadata(challenge: &str) -> Option<String> {
    let lower = challenge.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower.get(from..)?.find("resource_metadata") {
        let at = from + i;
        from = at + "resource_metadata".len();
        // A whole parameter name: at the start, or after a space or a comma.
        let before = lower.get(..at)?.chars().next_back();
        if before.is_some_and(|c| c != ' ' && c != ',') {
            continue;
        }
        let rest = challenge.get(from..)?.trim_start();
        let Some(rest) = rest.strip_prefix('=') else {
            continue;
        };
        let rest = rest.trim_start();
        let value = if let Some(q) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = q.chars();
            loop {
                match chars.next()? {
                    '"' => break,
                    '\\' => out.push(chars.next()?),
                    c => out.push(c),
                }
            }
            out
        } else {
            rest.split([',', ' '])
                .next()
                .unwrap_or_default()
                .to_string()
        };
        let l = value.to_ascii_lowercase();
        return (l.starts_with("https://") || l.starts_with("http://")).then_some(value);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_is_read_from_a_challenge() {
        let m = |c: &str| resource_metadata(c);
        assert_eq!(
            m(r#"Bearer error="invalid_token", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp""#)
                .as_deref(),
            Some("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            m("Bearer resource_metadata=https://a.example/x, scope=\"r\"").as_deref(),
            Some("https://a.example/x")
        );
        assert_eq!(
            m(r#"Bearer Resource_Metadata = "https://a.example/\"q""#).as_deref(),
            Some("https://a.example/\"q")
        );
        // Not the parameter, not a URL, or unterminated: nothing.
        assert_eq!(
            m(r#"Bearer x_resource_metadata="https://a.example/""#),
            None
        );
        assert_eq!(m(r#"Bearer resource_metadata="ftp://a.example/""#), None);
        assert_eq!(m(r#"Bearer resource_metadata="https://a.example/"#), None);
        assert_eq!(m(r#"Bearer error="invalid_token""#), None);
        assert_eq!(m(""), None);
    }

    #[test]
    fn the_well_known_places_follow_rfc_9728() {
        assert_eq!(
            well_known("/mcp"),
            [
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            well_known("/v1/mcp/?x=1"),
            [
                "/.well-known/oauth-protected-resource/v1/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(well_known("/"), ["/.well-known/oauth-protected-resource"]);
    }
}
