//! OAuth sign-in for remote MCP servers (docs/spec.md §3.9, "Signing in"), as the MCP
//! authorization spec describes it: the server's challenge (`401`, `WWW-Authenticate: Bearer
//! resource_metadata=…`) or the well-known paths lead to its protected resource metadata
//! (RFC 9728), that to its authorization server's metadata (RFC 8414, or OpenID discovery);
//! boxmaker registers itself there (RFC 7591) where it may, else uses the client the config
//! names; the person signs in through the authorization code flow with PKCE (`S256`) and a
//! loopback redirect ([`callback`]); every token request names the server (RFC 8707
//! `resource`). The tokens are sealed in the state directory ([`store`]). PKCE, the state,
//! the authorization URL and the token requests are the `oauth2` crate's (`flow`); the rest
//! is boxmaker's, for the reasons ARCHITECTURE.md gives ("Signing in to remote servers").
//!
//! Every request the sign-in makes, the library's too, goes through the remote client's own
//! connections (`remote::Client::fetch`): decided by the `[[egress]]` rules the tool may
//! use, audited, TLS verified against the public roots, plain HTTP only to loopback or an
//! address a rule names.
//! An authorization server the rules do not clear is refused before any connection, and
//! `boxmaker auth login` prints the rule that would clear it ([`Rule`]).
//!
//! The runner uses a sign-in through [`Signed`]: loaded when the server's instance starts (a
//! tool with none fails at once, naming the command that signs in), sent as `Authorization:
//! Bearer`, refreshed before it expires and once when the server refuses it; each token is
//! added to what the runner redacts (docs/spec.md §3.8). Nothing here opens a browser: only
//! `boxmaker auth login` does, for the person who ran it.

pub mod callback;
mod flow;
pub mod meta;
pub mod store;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine;
use bytes::Bytes;
use config::{RemoteUrl, Tool, ToolKind};
use http::{HeaderValue, Method, StatusCode};
use zeroize::Zeroizing;

use crate::remote::{Client, FetchError};
use flow::error_code;
pub use store::{Record, Store, StoreError};

/// What `boxmaker auth login` asks for beyond the config.
#[derive(Debug, Clone)]
pub struct LoginOptions {
    /// How long to wait for the person to finish in the browser.
    pub wait: Duration,
    /// Scopes asked for besides (or, with none in the config, instead of) those the
    /// server names.
    pub scopes: Vec<String>,
}

/// What a sign-in got.
#[derive(Debug, Clone)]
pub struct Granted {
    pub issuer: String,
    pub scopes: Vec<String>,
    pub expires_at: Option<u64>,
    pub refreshes: bool,
    /// The client was registered now (RFC 7591), not configured.
    pub registered: bool,
}

/// An `[[egress]]` rule the sign-in needs and the config lacks: printed by `boxmaker auth
/// login` for the person to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub host: String,
    pub port: u16,
}

impl Rule {
    /// The rule as a person adds it to the config.
    pub fn toml(&self) -> String {
        format!(
            "[[egress]]\nhost = \"{}\"\nports = [{}]\n",
            self.host, self.port
        )
    }
}

/// Why a sign-in (or signing out) failed: one sentence each, never a token.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("there is no [[tool]] named {0:?} in the config")]
    NoTool(String),
    #[error(
        "tool {0:?} is not a remote tool signed in to with OAuth; give its [[tool]] `url = \
         \"https://…\"` and `oauth = true`"
    )]
    NotOAuth(String),
    #[error("the sign-in cannot reach {dest} ({what}): {why}")]
    Unreachable {
        what: String,
        dest: String,
        why: String,
        /// The rules that would clear it.
        rules: Vec<Rule>,
    },
    #[error("the {what} at {url} {why}")]
    Document {
        what: &'static str,
        url: String,
        why: String,
    },
    #[error(
        "found no {what} for {url} (looked at {looked}); the server may not support OAuth \
         sign-in as the MCP authorization spec describes it"
    )]
    NotFound {
        what: &'static str,
        url: String,
        looked: String,
    },
    #[error("the {what} request to {url} failed: {why}")]
    Request {
        what: &'static str,
        url: String,
        why: String,
    },
    #[error(
        "the authorization server {issuer} offers no dynamic client registration (RFC 7591): \
         register boxmaker there as an OAuth client with the redirect URI \
         http://127.0.0.1/callback (any port, or set `redirect_port`), and give its id as \
         `oauth = {{ client_id = \"…\" }}` on tool {tool:?}"
    )]
    NoRegistration { issuer: String, tool: String },
    #[error("{0}")]
    Callback(#[from] callback::CallbackError),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Secret(String),
    #[error("cannot start the sign-in's client: {0}")]
    Runtime(String),
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The remote tool `name` of `runner`'s config that signs in with OAuth.
fn oauth_tool<'a>(
    runner: &'a dyn crate::Wiring,
    name: &str,
) -> Result<(&'a Tool, &'a config::OAuth), OAuthError> {
    let tool = runner
        .config()
        .tool(name)
        .ok_or_else(|| OAuthError::NoTool(name.to_string()))?;
    match &tool.kind {
        ToolKind::Remote { oauth: Some(o), .. } => Ok((tool, o)),
        _ => Err(OAuthError::NotOAuth(name.to_string())),
    }
}

/// The tools of the config that sign in with OAuth, in config order.
pub fn oauth_tools(config: &config::Config) -> Vec<&Tool> {
    config
        .tools
        .iter()
        .filter(|t| matches!(t.kind, ToolKind::Remote { oauth: Some(_), .. }))
        .collect()
}

/// `… --config /abs/boxmaker.toml`, for a command a sentence names.
fn config_arg(runner: &dyn crate::Wiring) -> String {
    runner
        .config()
        .file
        .as_ref()
        .map(|f| {
            let abs = std::path::absolute(f).unwrap_or_else(|_| f.clone());
            format!(" --config {}", abs.display())
        })
        .unwrap_or_default()
}

/// The command that signs in to `tool`.
pub fn login_command(runner: &dyn crate::Wiring, tool: &str) -> String {
    format!("boxmaker auth login {tool}{}", config_arg(runner))
}

fn runtime() -> Result<tokio::runtime::Runtime, OAuthError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| OAuthError::Runtime(e.to_string()))
}

/// A connection context of its own for the operator's command (no session, no call).
fn ctx(tool: &str) -> Result<egress::BoxCtx, OAuthError> {
    Ok(egress::BoxCtx {
        session: proto::SessionId::new("boxmaker-auth")
            .map_err(|e| OAuthError::Runtime(e.to_string()))?,
        tool: tool.to_string(),
        call: None,
        calls: None,
        float: Arc::new(egress::Float::new(config::Label::PUBLIC, None)),
    })
}

/// `what` a document is, for sentences.
const PRM: &str = "protected resource metadata";
const ASM: &str = "authorization server metadata";

/// The rules that would clear `url` for the sign-in: its host at its port, and for a name
/// that resolves to addresses only an address rule may reach (loopback, private), those.
async fn rules_for(url: &RemoteUrl) -> Vec<Rule> {
    let mut out = vec![Rule {
        host: match &url.host {
            config::Host::Name(n) => n.clone(),
            config::Host::Address(a) => a.to_string(),
        },
        port: url.port,
    }];
    if let config::Host::Name(n) = &url.host
        && let Ok(addrs) = tokio::net::lookup_host((n.as_str(), url.port)).await
    {
        for a in addrs {
            if config::egress::forbidden(a.ip(), &[]).is_some() {
                let r = Rule {
                    host: a.ip().to_string(),
                    port: url.port,
                };
                if !out.contains(&r) {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// A sign-in request's failure as an [`OAuthError`].
async fn failed(what: &'static str, url: &RemoteUrl, e: FetchError) -> OAuthError {
    if e.refused {
        OAuthError::Unreachable {
            what: what.to_string(),
            dest: format!("{}:{}", url.host_text(), url.port),
            why: e.why,
            rules: rules_for(url).await,
        }
    } else {
        OAuthError::Request {
            what,
            url: url.text.clone(),
            why: e.why,
        }
    }
}

fn parse_url(what: &'static str, text: &str) -> Result<RemoteUrl, OAuthError> {
    RemoteUrl::parse(text).map_err(|why| OAuthError::Document {
        what,
        url: meta::shown(text),
        why: format!("is not a URL the sign-in may use: it {why}"),
    })
}

/// GETs a metadata document: `Some(body)` on 200, `None` on any other answer.
async fn get_document(
    client: &Client,
    what: &'static str,
    url: &RemoteUrl,
) -> Result<Option<Vec<u8>>, OAuthError> {
    let got = client
        .fetch(
            url,
            Method::GET,
            vec![(
                http::header::ACCEPT,
                HeaderValue::from_static("application/json"),
            )],
            None,
            meta::MAX_DOCUMENT,
        )
        .await;
    match got {
        Ok(f) if f.status == StatusCode::OK => Ok(Some(f.body)),
        Ok(_) => Ok(None),
        Err(e) => Err(failed(what, url, e).await),
    }
}

/// The server's challenge to a request without a token (`None`: it asked for none, or said
/// no `Bearer` challenge).
async fn probe(client: &Client) -> Result<Option<meta::Challenge>, OAuthError> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "boxmaker", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let url = client.url().clone();
    let got = client
        .fetch(
            &url,
            Method::POST,
            vec![
                (
                    http::header::ACCEPT,
                    HeaderValue::from_static("application/json, text/event-stream"),
                ),
                (
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                ),
            ],
            Some(Bytes::from(body.to_string())),
            meta::MAX_DOCUMENT,
        )
        .await
        .map_err(|e| (e, url.clone()));
    match got {
        Ok(f) => Ok(f
            .headers
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(meta::challenge)),
        // A stream that does not end is an answer too: the server took the request.
        Err((e, _)) if e.why.contains("did not answer in full") => Ok(None),
        Err((e, url)) => Err(failed("the server itself", &url, e).await),
    }
}

/// The server's protected resource metadata: from the challenge's URL, else the
/// well-known ones.
async fn resource_metadata(
    client: &Client,
    challenge: Option<&meta::Challenge>,
) -> Result<meta::Resource, OAuthError> {
    let server = client.url().clone();
    if let Some(at) = challenge.and_then(|c| c.resource_metadata.as_deref()) {
        let url = parse_url(PRM, at)?;
        let doc = get_document(client, PRM, &url)
            .await?
            .ok_or_else(|| OAuthError::Document {
                what: PRM,
                url: url.text.clone(),
                why: "was not there (the server's challenge named it)".into(),
            })?;
        return meta::resource(&doc, &server).map_err(|why| OAuthError::Document {
            what: PRM,
            url: url.text.clone(),
            why,
        });
    }
    let urls = meta::resource_metadata_urls(&server);
    for u in &urls {
        let url = parse_url(PRM, u)?;
        if let Some(doc) = get_document(client, PRM, &url).await? {
            return meta::resource(&doc, &server).map_err(|why| OAuthError::Document {
                what: PRM,
                url: url.text.clone(),
                why,
            });
        }
    }
    Err(OAuthError::NotFound {
        what: PRM,
        url: server.text.clone(),
        looked: urls.join(", "),
    })
}

/// The authorization server's metadata, which must be `issuer`'s.
async fn server_metadata(client: &Client, issuer: &str) -> Result<meta::Server, OAuthError> {
    let issuer_url = parse_url(ASM, issuer)?;
    let urls = meta::server_metadata_urls(&issuer_url);
    for u in &urls {
        let url = parse_url(ASM, u)?;
        if let Some(doc) = get_document(client, ASM, &url).await? {
            return meta::server(&doc, issuer).map_err(|why| OAuthError::Document {
                what: ASM,
                url: url.text.clone(),
                why,
            });
        }
    }
    Err(OAuthError::NotFound {
        what: ASM,
        url: issuer.to_string(),
        looked: urls.join(", "),
    })
}

/// The client boxmaker is at the authorization server.
struct ClientId {
    id: String,
    secret: Option<Zeroizing<String>>,
    /// Whether the secret came from registration (so it is kept in the sealed record).
    registered_secret: bool,
    method: String,
    registered: bool,
}

/// The configured client, or one registered now (RFC 7591).
async fn client_id(
    runner: &dyn crate::Wiring,
    client: &Client,
    cfg: &config::OAuth,
    server: &meta::Server,
    redirect: &str,
    scopes: &[String],
) -> Result<ClientId, OAuthError> {
    if let Some(id) = &cfg.client_id {
        let secret = match &cfg.client_secret {
            Some(name) => Some(Zeroizing::new(
                runner
                    .secrets()
                    .get(name)
                    .map_err(OAuthError::Secret)?
                    .expose()
                    .to_string(),
            )),
            None => None,
        };
        let method = meta::auth_method(None, secret.is_some(), server.auth_methods.as_deref());
        return Ok(ClientId {
            id: id.clone(),
            secret,
            registered_secret: false,
            method,
            registered: false,
        });
    }
    let Some(reg) = &server.registration_endpoint else {
        return Err(OAuthError::NoRegistration {
            issuer: server.issuer.clone(),
            tool: client.tool().name.clone(),
        });
    };
    let url = parse_url(ASM, reg)?;
    let mut body = serde_json::json!({
        "client_name": "boxmaker",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    if !scopes.is_empty() {
        body["scope"] = scopes.join(" ").into();
    }
    let got = client
        .fetch(
            &url,
            Method::POST,
            vec![
                (
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                ),
                (
                    http::header::ACCEPT,
                    HeaderValue::from_static("application/json"),
                ),
            ],
            Some(Bytes::from(body.to_string())),
            meta::MAX_DOCUMENT,
        )
        .await;
    let f = match got {
        Ok(f) => f,
        Err(e) => return Err(failed("client registration", &url, e).await),
    };
    let bad = |why: String| OAuthError::Request {
        what: "client registration",
        url: url.text.clone(),
        why,
    };
    if !f.status.is_success() {
        return Err(bad(format!(
            "the authorization server answered HTTP {}{}",
            f.status,
            error_code(&f.body)
        )));
    }
    let v: serde_json::Value =
        serde_json::from_slice(&f.body).map_err(|_| bad("its answer is not JSON".into()))?;
    let id = v
        .get("client_id")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| bad("its answer carries no usable `client_id`".into()))?
        .to_string();
    let secret = v
        .get("client_secret")
        .and_then(serde_json::Value::as_str)
        .map(|s| Zeroizing::new(s.to_string()));
    let method = meta::auth_method(
        v.get("token_endpoint_auth_method")
            .and_then(serde_json::Value::as_str),
        secret.is_some(),
        server.auth_methods.as_deref(),
    );
    Ok(ClientId {
        id,
        secret,
        registered_secret: true,
        method,
        registered: true,
    })
}

/// A request to the revocation endpoint (RFC 7009), the client authenticated as `method`
/// says. By hand: `oauth2` refuses a revocation endpoint that is not `https://`, where the
/// remote client's rules (plain HTTP to loopback or an address a rule names) decide.
async fn revoke_request(
    client: &Client,
    endpoint: &str,
    id: &str,
    secret: Option<&str>,
    method: &str,
    mut params: Vec<(&str, String)>,
) -> Result<crate::remote::Fetched, String> {
    let url = RemoteUrl::parse(endpoint).map_err(|why| format!("its endpoint {why}"))?;
    let mut headers = vec![
        (
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        ),
        (
            http::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        ),
    ];
    match (method, secret) {
        ("client_secret_basic", Some(s)) => {
            // RFC 6749 §2.3.1: each part form-encoded, then base64.
            let enc =
                |v: &str| url::form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>();
            let pair = Zeroizing::new(format!("{}:{}", enc(id), enc(s)));
            let mut h = HeaderValue::from_str(&format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair.as_bytes())
            ))
            .map_err(|_| "the client's secret cannot go in a header".to_string())?;
            h.set_sensitive(true);
            headers.push((http::header::AUTHORIZATION, h));
        }
        ("client_secret_post", Some(s)) => {
            params.push(("client_id", id.to_string()));
            params.push(("client_secret", s.to_string()));
        }
        _ => params.push(("client_id", id.to_string())),
    }
    let body = Zeroizing::new(
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())))
            .finish(),
    );
    for (_, v) in params.iter_mut() {
        zeroize::Zeroize::zeroize(v);
    }
    client
        .fetch(
            &url,
            Method::POST,
            headers,
            Some(Bytes::from(body.as_bytes().to_vec())),
            meta::MAX_DOCUMENT,
        )
        .await
        .map_err(|e| e.why)
}

/// Signs in to `tool` (blocking): `on_url` is handed the URL the person opens. The tokens are
/// sealed in the state directory; what was granted is returned.
pub fn login(
    runner: &dyn crate::Wiring,
    tool: &str,
    opts: &LoginOptions,
    on_url: &mut dyn FnMut(&str),
) -> Result<Granted, OAuthError> {
    runtime()?.block_on(login_async(runner, tool, opts, on_url))
}

async fn login_async(
    runner: &dyn crate::Wiring,
    name: &str,
    opts: &LoginOptions,
    on_url: &mut dyn FnMut(&str),
) -> Result<Granted, OAuthError> {
    let (tool, cfg) = oauth_tool(runner, name)?;
    let client = Client::bare(runner, tool, ctx(name)?).map_err(OAuthError::Secret)?;
    let store = Store::of(runner.state_dir());
    let server_url = client.url().clone();
    // What the server asks for, and where it says its metadata is.
    let challenge = probe(&client).await?;
    let resource = resource_metadata(&client, challenge.as_ref()).await?;
    let server = server_metadata(&client, &resource.issuer).await?;
    // The scopes: the config's, else the server's challenge, else what its metadata lists;
    // with what `--scope` and a server's later step-up asked for.
    let earlier = {
        let _l = store.lock(name)?;
        match store.load(name, &server_url.text) {
            Ok(Some(r)) => r.step_up.clone(),
            _ => Vec::new(),
        }
    };
    let mut scopes: Vec<String> = match (
        &cfg.scopes,
        challenge.as_ref().and_then(|c| c.scope.as_ref()),
    ) {
        (Some(s), _) => s.clone(),
        (None, Some(s)) => s
            .split(' ')
            .filter(|s| config::remote::is_scope_token(s))
            .map(str::to_string)
            .collect(),
        (None, None) => resource.scopes_supported.clone().unwrap_or_default(),
    };
    for s in opts.scopes.iter().chain(&earlier) {
        if !scopes.contains(s) {
            scopes.push(s.clone());
        }
    }
    let cb = callback::Callback::bind(cfg.redirect_port.unwrap_or(0)).await?;
    let redirect = cb.redirect_uri();
    let id = client_id(runner, &client, cfg, &server, &redirect, &scopes).await?;
    // PKCE (`S256`), the state and the authorization URL by the library; the URL names the
    // server (RFC 8707 `resource`).
    let bad_endpoint = |what: &str, e: String| OAuthError::Document {
        what: ASM,
        url: server.issuer.clone(),
        why: format!("has {what} that is not a URL ({e})"),
    };
    let oauth = flow::client(
        &server.token_endpoint,
        &id.id,
        id.secret.as_deref().map(String::as_str),
        &id.method,
    )
    .map_err(|e| bad_endpoint("a token endpoint", e))?
    .set_auth_uri(
        oauth2::AuthUrl::new(server.authorization_endpoint.clone())
            .map_err(|e| bad_endpoint("an authorization endpoint", e.to_string()))?,
    )
    .set_redirect_uri(
        oauth2::RedirectUrl::new(redirect.clone())
            .map_err(|e| OAuthError::Runtime(e.to_string()))?,
    );
    let (authorize, state, verifier) = flow::authorize(&oauth, &scopes, &resource.resource);
    on_url(authorize.as_str());
    let code = cb
        .wait(
            state.secret(),
            &server.issuer,
            server.iss_in_response,
            opts.wait,
        )
        .await?;
    let via = flow::Via::new(&client);
    let got = flow::send(
        &via,
        oauth
            .exchange_code(oauth2::AuthorizationCode::new(code.0.to_string()))
            .set_pkce_verifier(verifier)
            .add_extra_param("resource", resource.resource.clone())
            .request_async(&via),
    )
    .await;
    let fail = |why: String| OAuthError::Request {
        what: "token",
        url: server.token_endpoint.clone(),
        why,
    };
    let t = match got {
        Ok(t) => t,
        Err(flow::TokenError::Unreachable(e)) => {
            if e.refused
                && let Ok(url) = RemoteUrl::parse(&server.token_endpoint)
            {
                return Err(failed("its token endpoint", &url, e).await);
            }
            return Err(fail(e.why));
        }
        Err(flow::TokenError::Refused(why) | flow::TokenError::Other(why)) => {
            return Err(fail(why));
        }
    };
    let at = now();
    let granted_scopes: Vec<String> = match &t.scope {
        Some(s) => s.iter().filter(|s| !s.is_empty()).cloned().collect(),
        None => scopes.clone(),
    };
    let mut rec = Record::default();
    rec.tool = name.to_string();
    rec.server = server_url.text.clone();
    rec.resource = resource.resource.clone();
    rec.issuer = server.issuer.clone();
    rec.token_endpoint = server.token_endpoint.clone();
    rec.revocation_endpoint = server.revocation_endpoint.clone();
    rec.client_id = id.id.clone();
    rec.client_secret = id
        .secret
        .as_ref()
        .filter(|_| id.registered_secret)
        .map(|s| s.to_string());
    rec.auth_method = id.method.clone();
    rec.access_token = t.access.to_string();
    rec.refresh_token = t.refresh.as_ref().map(|r| r.to_string());
    rec.expires_at = t.expires_at(at);
    rec.obtained_at = at;
    rec.scopes = granted_scopes.clone();
    {
        let _l = store.lock(name)?;
        store.save(&rec)?;
    }
    Ok(Granted {
        issuer: server.issuer.clone(),
        scopes: granted_scopes,
        expires_at: rec.expires_at,
        refreshes: rec.refresh_token.is_some(),
        registered: id.registered,
    })
}

/// What `boxmaker auth status` shows of one tool.
#[derive(Debug, Clone)]
pub enum Status {
    SignedIn {
        issuer: String,
        scopes: Vec<String>,
        expires_at: Option<u64>,
        refreshes: bool,
        step_up: Vec<String>,
    },
    NotSignedIn,
    /// Its file cannot be used (the sentence says why).
    Unusable(String),
}

/// `tool`'s sign-in as the store holds it (never a token).
pub fn status(runner: &dyn crate::Wiring, tool: &str) -> Result<Status, OAuthError> {
    let (t, _) = oauth_tool(runner, tool)?;
    let ToolKind::Remote { url, .. } = &t.kind else {
        return Err(OAuthError::NotOAuth(tool.to_string()));
    };
    let store = Store::of(runner.state_dir());
    Ok(match store.load(tool, &url.text) {
        Ok(Some(r)) => Status::SignedIn {
            issuer: r.issuer.clone(),
            scopes: r.scopes.clone(),
            expires_at: r.expires_at,
            refreshes: r.refresh_token.is_some(),
            step_up: r.step_up.clone(),
        },
        Ok(None) => Status::NotSignedIn,
        Err(e) => Status::Unusable(e.to_string()),
    })
}

/// What signing out did.
#[derive(Debug, Clone)]
pub struct LoggedOut {
    /// There was a sign-in to remove.
    pub had: bool,
    /// The authorization server revoked the tokens (RFC 7009); `None`: it offers no
    /// revocation, or the record could not be opened.
    pub revoked: Option<Result<(), String>>,
}

/// Signs out of `tool` (blocking): revokes the tokens where the authorization server offers
/// revocation (RFC 7009), and removes the sealed record in any case.
pub fn logout(runner: &dyn crate::Wiring, tool: &str) -> Result<LoggedOut, OAuthError> {
    runtime()?.block_on(logout_async(runner, tool))
}

async fn logout_async(runner: &dyn crate::Wiring, name: &str) -> Result<LoggedOut, OAuthError> {
    let (tool, cfg) = oauth_tool(runner, name)?;
    let ToolKind::Remote { url, .. } = &tool.kind else {
        return Err(OAuthError::NotOAuth(name.to_string()));
    };
    let store = Store::of(runner.state_dir());
    let _l = store.lock(name)?;
    let rec = store.load(name, &url.text);
    let mut revoked = None;
    if let Ok(Some(r)) = &rec
        && let Some(endpoint) = &r.revocation_endpoint
    {
        let client = Client::bare(runner, tool, ctx(name)?).map_err(OAuthError::Secret)?;
        let secret = match (&r.client_secret, &cfg.client_secret) {
            (Some(s), _) => Some(Zeroizing::new(s.clone())),
            (None, Some(n)) => runner
                .secrets()
                .get(n)
                .ok()
                .map(|v| Zeroizing::new(v.expose().to_string())),
            (None, None) => None,
        };
        let mut result = Ok(());
        let tokens = [
            (r.refresh_token.as_deref(), "refresh_token"),
            (Some(r.access_token.as_str()), "access_token"),
        ];
        for (token, hint) in tokens {
            let Some(token) = token else { continue };
            let got = revoke_request(
                &client,
                endpoint,
                &r.client_id,
                secret.as_deref().map(String::as_str),
                &r.auth_method,
                vec![
                    ("token", token.to_string()),
                    ("token_type_hint", hint.into()),
                ],
            )
            .await;
            match got {
                Ok(f) if f.status.is_success() => {}
                Ok(f) => {
                    result = Err(format!(
                        "the revocation endpoint answered HTTP {}{}",
                        f.status,
                        error_code(&f.body)
                    ));
                }
                Err(w) => result = Err(w),
            }
        }
        revoked = Some(result);
    }
    let had = store.remove(name)?;
    Ok(LoggedOut { had, revoked })
}

/// A sign-in in use by the runner's client of one server instance.
pub struct Signed {
    tool: String,
    server: String,
    store: Store,
    /// The command that signs in again, for the sentences that need it.
    fix: String,
    /// A configured client's secret (`[[secret]]`), read when a refresh needs it.
    client_secret: Option<Arc<secrets::SecretValue>>,
    secrets: Arc<secrets::Secrets>,
    rec: tokio::sync::Mutex<Record>,
}

impl std::fmt::Debug for Signed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signed")
            .field("tool", &self.tool)
            .finish_non_exhaustive()
    }
}

impl Signed {
    /// The name its tokens are redacted as.
    fn marker(tool: &str) -> String {
        format!("{tool} (OAuth)")
    }

    /// `tool`'s sign-in, for a server instance: fails at once, with the command that signs
    /// in, when there is none (or it cannot be opened).
    pub fn load(runner: &dyn crate::Wiring, tool: &Tool) -> Result<Signed, String> {
        let ToolKind::Remote {
            url,
            oauth: Some(cfg),
            ..
        } = &tool.kind
        else {
            return Err("not a tool signed in to with OAuth".into());
        };
        let fix = login_command(runner, &tool.name);
        let store = Store::of(runner.state_dir());
        let rec = match store.load(&tool.name, &url.text) {
            Ok(Some(r)) => r,
            Ok(None) => {
                return Err(format!(
                    "this server needs a sign-in, and there is none: run `{fix}`"
                ));
            }
            Err(e) => return Err(format!("{e} (`{fix}`)")),
        };
        let client_secret = match &cfg.client_secret {
            Some(n) => Some(runner.secrets().get(n)?),
            None => None,
        };
        let secrets = runner.secrets().clone();
        let marker = Self::marker(&tool.name);
        for v in [
            Some(&rec.access_token),
            rec.refresh_token.as_ref(),
            rec.client_secret.as_ref(),
        ]
        .into_iter()
        .flatten()
        {
            secrets.remember(&marker, v);
        }
        Ok(Signed {
            tool: tool.name.clone(),
            server: url.text.clone(),
            store,
            fix,
            client_secret,
            secrets,
            rec: tokio::sync::Mutex::new(rec),
        })
    }

    /// The sentence of a sign-in that is over.
    pub fn expired(&self) -> String {
        format!(
            "the sign-in to {} has expired or was revoked (the server refused its token, and \
             it could not be refreshed): run `{}` to sign in again",
            self.tool, self.fix
        )
    }

    /// `Authorization: Bearer …`, refreshed first when it is due.
    pub async fn header(&self, client: &Client) -> Result<HeaderValue, String> {
        let (due, refreshable, expired) = {
            let r = self.rec.lock().await;
            let now = now();
            (
                r.refresh_due(now),
                r.refresh_token.is_some(),
                r.expires_at.is_some_and(|e| now >= e),
            )
        };
        if due && refreshable {
            self.refresh(client, None).await?;
        } else if expired {
            return Err(self.expired());
        }
        let r = self.rec.lock().await;
        bearer(&r.access_token)
    }

    /// The server refused `used`: refreshes (unless another holder did already).
    pub async fn refresh_after_refusal(
        &self,
        client: &Client,
        used: &HeaderValue,
    ) -> Result<(), String> {
        self.refresh(client, Some(used)).await
    }

    async fn refresh(&self, client: &Client, refused: Option<&HeaderValue>) -> Result<(), String> {
        let mut cur = self.rec.lock().await;
        if let Some(used) = refused
            && bearer(&cur.access_token).ok().as_ref() != Some(used)
        {
            // Refreshed already, since that request went.
            return Ok(());
        }
        let store = self.store.clone();
        let tool = self.tool.clone();
        let lock = tokio::task::spawn_blocking(move || store.lock(&tool))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let disk = match self.store.load(&self.tool, &self.server) {
            Ok(Some(r)) => r,
            Ok(None) => {
                return Err(format!(
                    "the sign-in to {} was removed (`boxmaker auth logout`): run `{}`",
                    self.tool, self.fix
                ));
            }
            Err(e) => return Err(format!("{e} (`{}`)", self.fix)),
        };
        let now = now();
        // Another runner (or `auth login`) wrote a newer token: that one.
        if disk.access_token != cur.access_token && !disk.refresh_due(now) {
            self.secrets
                .remember(&Self::marker(&self.tool), &disk.access_token);
            *cur = disk;
            return Ok(());
        }
        let Some(refresh) = disk.refresh_token.clone() else {
            return Err(self.expired());
        };
        let secret = disk
            .client_secret
            .as_deref()
            .or(self.client_secret.as_ref().map(|s| s.expose()));
        let not_refreshed = |why: String| {
            format!(
                "the sign-in's token could not be refreshed: {why} (if it persists, run `{}`)",
                self.fix
            )
        };
        let oauth = flow::client(
            &disk.token_endpoint,
            &disk.client_id,
            secret,
            &disk.auth_method,
        )
        .map_err(not_refreshed)?;
        let via = flow::Via::new(client);
        let refresh = oauth2::RefreshToken::new(refresh);
        let got = flow::send(
            &via,
            oauth
                .exchange_refresh_token(&refresh)
                .add_extra_param("resource", disk.resource.clone())
                .request_async(&via),
        )
        .await;
        let t = match got {
            Ok(t) => t,
            Err(flow::TokenError::Refused(_)) => return Err(self.expired()),
            Err(flow::TokenError::Unreachable(e)) => return Err(not_refreshed(e.why)),
            Err(flow::TokenError::Other(why)) => return Err(not_refreshed(why)),
        };
        let mut next = disk.clone();
        next.access_token = t.access.to_string();
        if let Some(r) = &t.refresh {
            next.refresh_token = Some(r.to_string());
        }
        next.obtained_at = now;
        next.expires_at = t.expires_at(now);
        if let Some(s) = &t.scope {
            next.scopes = s.iter().filter(|s| !s.is_empty()).cloned().collect();
        }
        let marker = Self::marker(&self.tool);
        for v in [Some(&next.access_token), next.refresh_token.as_ref()]
            .into_iter()
            .flatten()
        {
            self.secrets.remember(&marker, v);
        }
        self.store.save(&next).map_err(|e| e.to_string())?;
        drop(lock);
        *cur = next;
        Ok(())
    }

    /// The sentence of a `403`: a wider sign-in the server asks for (recorded, so the next
    /// `auth login` asks for it too), or one that signing in again cannot change.
    pub fn forbidden(&self, c: &meta::Challenge) -> String {
        let wanted: Vec<String> = c
            .scope
            .as_deref()
            .unwrap_or_default()
            .split(' ')
            .filter(|s| config::remote::is_scope_token(s))
            .take(32)
            .map(str::to_string)
            .collect();
        if c.error.as_deref() != Some("insufficient_scope") || wanted.is_empty() {
            return "the server refused the call (HTTP 403)".into();
        }
        let shown = meta::shown(&wanted.join(" "));
        let granted = self
            .rec
            .try_lock()
            .map(|r| r.scopes.clone())
            .unwrap_or_default();
        if wanted.iter().all(|w| granted.contains(w)) {
            return format!(
                "the server refused the call for want of the scope {shown}, which the sign-in \
                 already has; signing in again would ask for the same, so boxmaker does not"
            );
        }
        let recorded = (|| -> Result<(), StoreError> {
            let _l = self.store.lock(&self.tool)?;
            if let Some(mut r) = self.store.load(&self.tool, &self.server)? {
                for w in &wanted {
                    if !r.step_up.contains(w) {
                        r.step_up.push(w.clone());
                    }
                }
                self.store.save(&r)?;
            }
            Ok(())
        })();
        let note = if recorded.is_ok() {
            ""
        } else {
            " (add them with `--scope`)"
        };
        format!(
            "the server needs a wider sign-in for this call (the scope {shown}){note}: run `{}` \
             to sign in again",
            self.fix
        )
    }
}

fn bearer(token: &str) -> Result<HeaderValue, String> {
    let mut h = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| "the sign-in's token holds a character a header may not".to_string())?;
    h.set_sensitive(true);
    Ok(h)
}
