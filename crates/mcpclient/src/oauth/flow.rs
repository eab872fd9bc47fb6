//! The OAuth flow's standard parts, by the `oauth2` crate (docs/spec.md §3.9, "Signing in"):
//! the PKCE verifier and its `S256` challenge, the `state`, the authorization URL, the token
//! requests (the code's exchange and a refresh, each naming the server by RFC 8707's
//! `resource`) and reading their answers.
//!
//! What stays boxmaker's: every request the library makes goes through [`Via`], the remote
//! client's `fetch` — the egress decision, the audit, TLS against the public roots, an answer
//! bounded to [`meta::MAX_DOCUMENT`] before the library reads a byte of it. And the library's
//! answer is checked again here ([`read`]): a token of another type than `Bearer`, or one
//! that cannot go in a header (empty, over 16 KiB, a byte not visible ASCII), is refused; a
//! refusal of the grant (`400`, `401`) is told apart from any other failure, which the
//! library's errors do not say.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use bytes::Bytes;
use config::RemoteUrl;
use http::StatusCode;
use oauth2::basic::{BasicClient, BasicErrorResponse, BasicTokenResponse, BasicTokenType};
use oauth2::{
    AuthType, ClientId, ClientSecret, CsrfToken, EndpointNotSet, EndpointSet, PkceCodeChallenge,
    PkceCodeVerifier, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use zeroize::Zeroizing;

use super::meta;
use crate::remote::{Client, FetchError};

/// A request of the library's that `fetch` did not complete (refused by the egress rules, or
/// failed on the way).
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.why)]
pub struct Failed(pub FetchError);

/// The library's HTTP client: the remote client's `fetch`, and the status of the last answer
/// (the library's errors do not carry it, and a refused grant is told by it).
#[derive(Debug)]
pub struct Via<'a> {
    client: &'a Client,
    status: Mutex<Option<StatusCode>>,
}

impl<'a> Via<'a> {
    pub fn new(client: &'a Client) -> Via<'a> {
        Via {
            client,
            status: Mutex::new(None),
        }
    }

    fn last_status(&self) -> Option<StatusCode> {
        self.status.lock().ok().and_then(|s| *s)
    }
}

impl<'c> oauth2::AsyncHttpClient<'c> for Via<'_> {
    type Error = Failed;
    type Future = Pin<Box<dyn Future<Output = Result<oauth2::HttpResponse, Failed>> + Send + 'c>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(async move {
            if let Ok(mut s) = self.status.lock() {
                *s = None;
            }
            let fail = |why: String| {
                Failed(FetchError {
                    why,
                    refused: false,
                })
            };
            let (parts, body) = request.into_parts();
            let url = RemoteUrl::parse(&parts.uri.to_string())
                .map_err(|why| fail(format!("its endpoint {why}")))?;
            let headers = parts
                .headers
                .iter()
                .map(|(k, v)| {
                    let mut v = v.clone();
                    if k == http::header::AUTHORIZATION {
                        v.set_sensitive(true);
                    }
                    (k.clone(), v)
                })
                .collect();
            let got = self
                .client
                .fetch(
                    &url,
                    parts.method,
                    headers,
                    Some(Bytes::from(body)),
                    meta::MAX_DOCUMENT,
                )
                .await
                .map_err(Failed)?;
            if let Ok(mut s) = self.status.lock() {
                *s = Some(got.status);
            }
            let mut resp = http::Response::new(got.body);
            *resp.status_mut() = got.status;
            *resp.headers_mut() = got.headers;
            Ok(resp)
        })
    }
}

/// The library's client with the token endpoint set: boxmaker as the client `id` (its
/// `secret` sent as `method` says: `client_secret_basic`, `client_secret_post`, or `none`).
pub type TokenClient =
    BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

pub fn client(
    token_endpoint: &str,
    id: &str,
    secret: Option<&str>,
    method: &str,
) -> Result<TokenClient, String> {
    let token = TokenUrl::new(token_endpoint.to_string())
        .map_err(|e| format!("its token endpoint is not a URL ({e})"))?;
    let mut c = BasicClient::new(ClientId::new(id.to_string())).set_token_uri(token);
    match (method, secret) {
        ("client_secret_basic", Some(s)) => {
            c = c
                .set_client_secret(ClientSecret::new(s.to_string()))
                .set_auth_type(AuthType::BasicAuth);
        }
        ("client_secret_post", Some(s)) => {
            c = c
                .set_client_secret(ClientSecret::new(s.to_string()))
                .set_auth_type(AuthType::RequestBody);
        }
        // `none`: the client id in the body, no secret.
        _ => c = c.set_auth_type(AuthType::RequestBody),
    }
    Ok(c)
}

/// The library's client of a sign-in: [`client`] with the authorization endpoint and the
/// redirect set.
pub type LoginClient =
    BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// The URL the person opens: the authorization code flow with PKCE (`S256`, a 256-bit
/// verifier), a 256-bit `state`, the scopes (none: no `scope`), and the server named by RFC
/// 8707's `resource`. With the state the redirect must carry and the verifier the code's
/// exchange sends.
pub fn authorize(
    c: &LoginClient,
    scopes: &[String],
    resource: &str,
) -> (url::Url, CsrfToken, PkceCodeVerifier) {
    let (pkce, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = c
        .authorize_url(|| CsrfToken::new_random_len(32))
        .set_pkce_challenge(pkce)
        .add_scopes(scopes.iter().map(|s| Scope::new(s.clone())))
        .add_extra_param("resource", resource.to_string())
        .url();
    (url, state, verifier)
}

/// A token endpoint's answer, checked.
pub struct Tokens {
    pub access: Zeroizing<String>,
    pub refresh: Option<Zeroizing<String>>,
    pub expires_in: Option<u64>,
    pub scope: Option<Vec<String>>,
}

impl Tokens {
    /// When the access token expires, `now` the time it was given (a server's `expires_in`
    /// near `u64::MAX` saturates: never a wrap to the past, nor a panic).
    pub fn expires_at(&self, now: u64) -> Option<u64> {
        self.expires_in.map(|e| now.saturating_add(e))
    }
}

/// Why a token request failed: the server refused the grant (it is over), the egress rules
/// refused the request, or something else.
pub enum TokenError {
    Refused(String),
    Unreachable(FetchError),
    Other(String),
}

/// ` (its error: invalid_grant)` from an OAuth error answer, or nothing.
pub fn error_code(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("error")?.as_str().map(meta::shown))
        .map(|e| format!(" (its error: {e})"))
        .unwrap_or_default()
}

/// A token that can go in a header: visible ASCII, 1 byte to 16 KiB.
fn usable(s: &str) -> Option<Zeroizing<String>> {
    (!s.is_empty() && s.len() <= 16 * 1024 && s.bytes().all(|b| b.is_ascii_graphic()))
        .then(|| Zeroizing::new(s.to_string()))
}

/// Reads what the library made of a token request (`status`: the answer's, when there was
/// one).
pub fn read(
    got: Result<BasicTokenResponse, RequestTokenError<Failed, BasicErrorResponse>>,
    status: Option<StatusCode>,
) -> Result<Tokens, TokenError> {
    let t = match got {
        Ok(t) => t,
        Err(RequestTokenError::Request(Failed(e))) => return Err(TokenError::Unreachable(e)),
        Err(e) => {
            let code = match &e {
                RequestTokenError::ServerResponse(r) => {
                    format!(" (its error: {})", meta::shown(r.error().as_ref()))
                }
                RequestTokenError::Parse(_, body) => error_code(body),
                _ => String::new(),
            };
            return Err(match status {
                Some(s @ (StatusCode::BAD_REQUEST | StatusCode::UNAUTHORIZED)) => {
                    TokenError::Refused(format!("HTTP {s}{code}"))
                }
                Some(s) if s != StatusCode::OK => {
                    TokenError::Other(format!("the token endpoint answered HTTP {s}{code}"))
                }
                _ => TokenError::Other(match e {
                    RequestTokenError::Parse(p, _) => format!(
                        "the token endpoint's answer is not a token response (RFC 6749 §5.1): \
                         its {} is missing or not what it should be",
                        meta::shown(&p.path().to_string())
                    ),
                    RequestTokenError::Other(why) => {
                        format!("the token endpoint's answer {}", meta::shown(&why))
                    }
                    _ => "the token endpoint's answer cannot be read".into(),
                }),
            });
        }
    };
    if *t.token_type() != BasicTokenType::Bearer {
        let kind = match t.token_type() {
            BasicTokenType::Extension(k) => k.as_str(),
            _ => "mac",
        };
        return Err(TokenError::Other(format!(
            "the token endpoint gave a token of type {}, not Bearer",
            meta::shown(kind)
        )));
    }
    let access = usable(t.access_token().secret()).ok_or_else(|| {
        TokenError::Other("the token endpoint's answer has no usable `access_token`".into())
    })?;
    Ok(Tokens {
        access,
        refresh: t.refresh_token().and_then(|r| usable(r.secret())),
        expires_in: t.expires_in().map(|d| d.as_secs()),
        scope: t
            .scopes()
            .map(|s| s.iter().map(|s| s.to_string()).collect()),
    })
}

/// Sends a token request the library built (`request_async` on `via`), and reads its answer.
pub async fn send<F>(via: &Via<'_>, request: F) -> Result<Tokens, TokenError>
where
    F: Future<Output = Result<BasicTokenResponse, RequestTokenError<Failed, BasicErrorResponse>>>,
{
    let got = request.await;
    read(got, via.last_status())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`read`] makes of a token endpoint's answer, parsed by the library as it is in a
    /// sign-in (the answer handed over as `fetch` would).
    fn answer(status: u16, ctype: Option<&str>, body: &str) -> Result<Tokens, TokenError> {
        let (ctype, body) = (ctype.map(str::to_string), body.to_string());
        let http = move |_req: oauth2::HttpRequest| {
            let mut r = http::Response::builder().status(status);
            if let Some(c) = &ctype {
                r = r.header(http::header::CONTENT_TYPE, c.as_str());
            }
            let r = r.body(body.clone().into_bytes()).unwrap();
            async move { Ok::<_, Failed>(r) }
        };
        let c = client("https://as.example/token", "boxmaker", None, "none").unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let refresh = oauth2::RefreshToken::new("r".into());
            let got = c
                .exchange_refresh_token(&refresh)
                .request_async(&http)
                .await;
            read(got, Some(StatusCode::from_u16(status).unwrap()))
        })
    }

    /// The authorization URL asks for the code with PKCE `S256` (the challenge is the
    /// verifier's SHA-256), a fresh 256-bit state and verifier each time, and names the
    /// server; the client's secret is never in it.
    #[test]
    fn the_authorization_url_carries_pkce_state_and_resource() {
        use base64::Engine;
        use sha2::Digest;
        let c = client(
            "https://as.example/token",
            "boxmaker",
            Some("s3cret"),
            "client_secret_post",
        )
        .unwrap()
        .set_auth_uri(oauth2::AuthUrl::new("https://as.example/authorize?x=1".into()).unwrap())
        .set_redirect_uri(oauth2::RedirectUrl::new("http://127.0.0.1:9/callback".into()).unwrap());
        let resource = "https://mcp.example.com/mcp";
        let (url, state, verifier) =
            authorize(&c, &["mcp".into(), "offline_access".into()], resource);
        let q: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["client_id"], "boxmaker");
        assert_eq!(q["redirect_uri"], "http://127.0.0.1:9/callback");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(
            q["code_challenge"],
            b64.encode(sha2::Sha256::digest(verifier.secret().as_bytes()))
        );
        assert_eq!(b64.decode(verifier.secret()).unwrap().len(), 32);
        assert_eq!(q["state"], *state.secret());
        assert_eq!(b64.decode(state.secret()).unwrap().len(), 32);
        assert_eq!(q["scope"], "mcp offline_access");
        assert_eq!(q["resource"], resource);
        assert_eq!(q["x"], "1");
        assert!(!url.as_str().contains("s3cret"));
        let (again, state2, verifier2) = authorize(&c, &[], resource);
        assert!(state2.secret() != state.secret() && verifier2.secret() != verifier.secret());
        assert!(!again.query_pairs().any(|(k, _)| k == "scope"));
    }

    /// Attack: a lifetime at the edge of `u64` neither panics nor wraps to an expired token.
    #[test]
    fn an_endless_token_lifetime_does_not_overflow() {
        let t = answer(
            200,
            JSON,
            r#"{"access_token":"a","token_type":"Bearer","expires_in":18446744073709551615}"#,
        )
        .ok()
        .unwrap();
        assert_eq!(t.expires_at(1_700_000_000), Some(u64::MAX));
    }

    const JSON: Option<&str> = Some("application/json; charset=utf-8");

    fn other(r: Result<Tokens, TokenError>) -> String {
        match r {
            Err(TokenError::Other(why)) => why,
            Ok(_) => panic!("accepted"),
            Err(TokenError::Refused(w)) => panic!("refused the grant: {w}"),
            Err(TokenError::Unreachable(e)) => panic!("unreachable: {}", e.why),
        }
    }

    #[test]
    fn a_bearer_token_answer_is_read() {
        let t = answer(
            200,
            JSON,
            r#"{"access_token":"at-1","token_type":"bearer","expires_in":60,"refresh_token":"rt-1","scope":"mcp offline_access"}"#,
        )
        .ok()
        .unwrap();
        assert_eq!(t.access.as_str(), "at-1");
        assert_eq!(t.refresh.as_deref().map(String::as_str), Some("rt-1"));
        assert_eq!(t.expires_in, Some(60));
        assert_eq!(t.scope.unwrap(), ["mcp", "offline_access"]);
        // No Content-Type is taken as JSON, and the type's case does not matter.
        let t = answer(200, None, r#"{"access_token":"a","token_type":"Bearer"}"#)
            .ok()
            .unwrap();
        assert!(t.refresh.is_none() && t.expires_in.is_none() && t.scope.is_none());
    }

    /// Attack: a token of another type than `Bearer` (a DPoP- or MAC-bound one boxmaker
    /// would send as a bearer token), or with no type at all, is refused.
    #[test]
    fn a_token_that_is_not_bearer_is_refused() {
        for kind in ["mac", "DPoP", "N_A", ""] {
            let body = format!(r#"{{"access_token":"a","token_type":"{kind}"}}"#);
            let why = other(answer(200, JSON, &body));
            assert!(why.contains("not Bearer"), "{kind}: {why}");
        }
        let why = other(answer(200, JSON, r#"{"access_token":"a"}"#));
        assert!(why.contains("not a token response"), "{why}");
    }

    /// Attack: a token that cannot go in a header as it is (empty, a space, a line break
    /// that would split the header, over 16 KiB) is refused; such a refresh token is dropped.
    #[test]
    fn a_token_that_cannot_go_in_a_header_is_refused() {
        let long = "a".repeat(16 * 1024 + 1);
        for bad in [
            "",
            "a b",
            "a\\r\\nX-Evil: 1",
            "\\u00e9t\\u00e9",
            long.as_str(),
        ] {
            let body = format!(r#"{{"access_token":"{bad}","token_type":"Bearer"}}"#);
            let why = other(answer(200, JSON, &body));
            assert!(why.contains("no usable `access_token`"), "{why}");
        }
        let t = answer(
            200,
            JSON,
            r#"{"access_token":"a","token_type":"Bearer","refresh_token":"r\n"}"#,
        )
        .ok()
        .unwrap();
        assert!(t.refresh.is_none());
    }

    /// A refused grant (`400`, `401`) is told apart from a server that failed; an answer that
    /// is not JSON is refused; and what a server put in an answer that does not parse is not
    /// quoted (it may be a token).
    #[test]
    fn refusals_and_failures_of_the_token_endpoint() {
        for status in [400, 401] {
            match answer(status, JSON, r#"{"error":"invalid_grant"}"#) {
                Err(TokenError::Refused(w)) => assert!(w.contains("invalid_grant"), "{w}"),
                _ => panic!("{status} is not a refusal"),
            }
            assert!(matches!(
                answer(status, Some("text/html"), "<html>no</html>"),
                Err(TokenError::Refused(_))
            ));
        }
        let why = other(answer(503, JSON, r#"{"error":"temporarily_unavailable"}"#));
        assert!(why.contains("HTTP 503") && why.contains("temporarily_unavailable"));
        let why = other(answer(
            200,
            Some("text/html"),
            r#"{"access_token":"a","token_type":"Bearer"}"#,
        ));
        assert!(why.contains("Content-Type"), "{why}");
        let why = other(answer(
            200,
            JSON,
            r#"{"access_token":"a","token_type":"Bearer","expires_in":"SECRET-abc"}"#,
        ));
        assert!(!why.contains("SECRET"), "{why}");
        let why = other(answer(200, JSON, "not json"));
        assert!(why.contains("not a token response"), "{why}");
    }
}
