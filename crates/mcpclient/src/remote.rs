//! A remote MCP server's client (docs/spec.md §3.9): boxmaker's runner speaks streamable
//! HTTP to it itself, with rmcp's client transport over an HTTP/1.1 client of its own, so no
//! foreign code runs and no box is needed. The connection is still a destination:
//!
//! - every connection is decided by the egress proxy's own decision (`Egress::decide`: the
//!   `[[egress]]` rules the tool may use, at the label its calls are at — the session's
//!   floor, the calls' own labels and what the server has answered — the name resolved once
//!   and every address checked, the connection made to an address checked), audited as the
//!   proxy's are (`egress` records: opened, closed with the bytes each way, refused,
//!   failed), and its answer floats the label as a destination's answer does;
//! - TLS is verified against the Mozilla roots (`webpki-roots`), with the URL's host as the
//!   server name; there is no way to turn that off. Plain `http://` goes only to an address
//!   (the config refuses a name), which a rule must name by address;
//! - a connection is decided when it opens, at the label of that moment, and the one to the
//!   URL itself is kept for the next `POST` (no new TCP and TLS handshake per call) only
//!   while that label's decision still stands: at most [`KEEP_IDLE`] idle, and only while
//!   the label now is within the clearance it was opened under (the rules do not change
//!   while a runner runs, and its address was checked when it opened); a request the server
//!   closed the connection under before it was sent goes on a new connection, one that was
//!   sent is never sent twice. A redirect (307, 308) is followed only within the URL's host,
//!   or to a host the rules clear too (then without the credential), on a connection of its
//!   own that is not kept;
//! - bounded: a JSON answer or one SSE event over [`MAX_MESSAGE`] ends the call; a stream
//!   that never ends is cut by the call's timeout (the caller's);
//! - the credential (`bearer`, `headers` naming a secret) is read by the runner
//!   (`secrets`) and held here as sensitive header values; a 401 is a `failed` that
//!   says the server refused it.
//!
//! **Not yet:** the older HTTP+SSE transport (`transport = "sse"`): rmcp 3.11 has no client
//! for it, and a call to such a tool fails saying so.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use config::{HeaderValue as ConfigHeader, RemoteUrl, Tool, ToolKind, Way};
use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use proto::DataClass;
use proto::run::{EgressOutcome, EgressRecord};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::transport::{Reason, set_reason};
use egress::{BoxCtx, Egress};

/// The largest message taken from a remote server, as from a stdio one.
pub const MAX_MESSAGE: usize = crate::transport::MAX_LINE;
/// How long a name may take to resolve and a connection to open (as the proxy's).
const CONNECT: Duration = Duration::from_secs(10);
/// Redirects followed for one request, at most.
const MAX_REDIRECTS: usize = 3;
/// How long a connection to the server's URL is kept idle for the next request. Below the
/// 5 s most servers close an idle connection at (Node's, uvicorn's), so that one rarely
/// closes it under a request already sent.
pub const KEEP_IDLE: Duration = Duration::from_secs(4);
/// How long a request waits for the kept connection to finish its last answer before it
/// opens another.
const READY_WITHIN: Duration = Duration::from_millis(10);

/// Never opens a broken event stream again (rmcp would, with a backoff).
#[derive(Debug)]
pub struct NoRetry;

impl rmcp::transport::common::client_side_sse::SseRetryPolicy for NoRetry {
    fn retry(&self, _current_times: usize) -> Option<Duration> {
        None
    }
}

/// Why a request to a remote server failed: one sentence, never a credential.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct RemoteError(String);

type HttpError = StreamableHttpError<RemoteError>;

fn err(s: impl Into<String>) -> HttpError {
    StreamableHttpError::Client(RemoteError(s.into()))
}

/// Where one request goes.
#[derive(Clone)]
struct Target {
    url: RemoteUrl,
}

/// The client of one remote server instance (one MCP session of one boxmaker session).
#[derive(Clone)]
pub struct Client(Arc<Inner>);

/// Shows which server and host, never a header (they hold credentials).
impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("tool", &self.0.tool.name)
            .field("host", &self.0.url.host_text())
            .finish_non_exhaustive()
    }
}

struct Inner {
    egress: Arc<Egress>,
    tool: Tool,
    url: RemoteUrl,
    ctx: BoxCtx,
    /// Sent with every request to the URL's own host: the credential and the literal headers.
    headers: Vec<(HeaderName, HeaderValue)>,
    /// Which of them carry a secret (left off a request to another host).
    secret_headers: Vec<HeaderName>,
    /// A tool signed in to with OAuth: its token, refreshed before it expires.
    oauth: Option<crate::oauth::Signed>,
    tls: tokio_rustls::TlsConnector,
    reason: Reason,
    /// The tasks driving its connections: ended with it.
    tasks: Mutex<Vec<tokio::task::AbortHandle>>,
    /// The connection to the URL kept for the next request, if any.
    kept: Mutex<Option<Kept>>,
}

/// A connection to the server's URL between requests.
struct Kept {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    /// The highest class every rule that allowed it clears (`Decided::clearance`).
    clearance: DataClass,
    /// When its last request was sent.
    since: std::time::Instant,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for t in self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            t.abort();
        }
    }
}

/// The TLS client: TLS 1.2 and 1.3, ring, the Mozilla roots, HTTP/1.1 by ALPN.
fn tls() -> Result<tokio_rustls::TlsConnector, String> {
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("cannot set up TLS: {e}"))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

impl Client {
    /// The client of `tool` (a remote one) for `ctx`'s session, with its credentials read.
    pub fn new(
        runner: &dyn crate::Wiring,
        tool: &Tool,
        ctx: BoxCtx,
        reason: Reason,
    ) -> Result<Self, String> {
        Self::make(runner, tool, ctx, reason, true)
    }

    /// The client of `tool` with no credential: for the sign-in (`boxmaker auth`), whose
    /// requests carry their own.
    pub fn bare(runner: &dyn crate::Wiring, tool: &Tool, ctx: BoxCtx) -> Result<Self, String> {
        Self::make(runner, tool, ctx, Reason::default(), false)
    }

    fn make(
        runner: &dyn crate::Wiring,
        tool: &Tool,
        ctx: BoxCtx,
        reason: Reason,
        credentials: bool,
    ) -> Result<Self, String> {
        let ToolKind::Remote {
            url,
            bearer,
            headers,
            oauth,
            ..
        } = &tool.kind
        else {
            return Err("not a remote server".into());
        };
        // A tool that needs a sign-in and has none fails here, at once, saying how to sign in.
        let oauth = match oauth {
            Some(_) if credentials => Some(crate::oauth::Signed::load(runner, tool)?),
            _ => None,
        };
        let mut out = Vec::new();
        let mut secret_headers = Vec::new();
        let sensitive = |v: &str| -> Result<HeaderValue, String> {
            let mut h = HeaderValue::from_str(v)
                .map_err(|_| "a secret holds a character a header may not".to_string())?;
            h.set_sensitive(true);
            Ok(h)
        };
        if let Some(name) = bearer.as_ref().filter(|_| credentials) {
            let v = runner.secrets().get(name)?;
            out.push((
                http::header::AUTHORIZATION,
                sensitive(&format!("Bearer {}", v.expose()))?,
            ));
            secret_headers.push(http::header::AUTHORIZATION);
        }
        for (h, v) in headers {
            let name = HeaderName::from_bytes(h.as_bytes())
                .map_err(|_| format!("{h:?} is not a header name"))?;
            let value = match v {
                ConfigHeader::Literal(l) => HeaderValue::from_str(l)
                    .map_err(|_| format!("the header {h} holds a character a header may not"))?,
                ConfigHeader::Secret(_) if !credentials => continue,
                ConfigHeader::Secret(s) => {
                    secret_headers.push(name.clone());
                    sensitive(runner.secrets().get(s)?.expose())?
                }
            };
            out.push((name, value));
        }
        Ok(Client(Arc::new(Inner {
            egress: runner.egress().clone(),
            tool: tool.clone(),
            url: url.clone(),
            ctx,
            headers: out,
            secret_headers,
            oauth,
            tls: tls()?,
            reason,
            tasks: Mutex::default(),
            kept: Mutex::default(),
        })))
    }

    /// The URL rmcp is handed (it only passes it back).
    pub fn uri(&self) -> String {
        self.0.url.absolute()
    }

    /// One connection to `t`, decided, opened, audited, and (for https) TLS'd. A sign-in's
    /// connection (`signin`: metadata, registration, the token endpoint) carries nothing of
    /// any session — only the client's own credentials — so it is decided at `public`, and
    /// what it answers (tokens, never shown to the model) floats no label.
    async fn connect(&self, t: &Target, signin: bool) -> Result<Box<dyn Io>, HttpError> {
        self.connect_cleared(t, signin).await.map(|(io, _)| io)
    }

    /// [`Client::connect`], and the highest class every rule that allowed it clears.
    async fn connect_cleared(
        &self,
        t: &Target,
        signin: bool,
    ) -> Result<(Box<dyn Io>, DataClass), HttpError> {
        let me = &self.0;
        let host = match &t.url.host {
            config::Host::Name(n) => n.clone(),
            config::Host::Address(a) => a.to_string(),
        };
        let shown = t.url.host_text();
        let port = t.url.port;
        let way = if t.url.tls { Way::Tunnel } else { Way::Request };
        let reach = DataClass::Public;
        let label = if signin {
            egress::Float::new(config::Label::PUBLIC, None).label(config::Label::PUBLIC, reach)
        } else {
            me.ctx.float.label(me.egress.floor(&me.ctx.session), reach)
        };
        let conn = me.egress.next_conn();
        let mut rec = me.egress.record(&me.ctx, conn, &shown, port);
        let decided = match me
            .egress
            .decide(Some(&me.tool), &me.ctx.float, &host, port, way, label)
            .await
        {
            Ok(d) => d,
            Err(e) => {
                let why = e.to_string();
                rec.reason = Some(why.clone());
                me.egress.emit(rec);
                set_reason(&me.reason, why.clone());
                return Err(err(why));
            }
        };
        // Plain HTTP to `localhost` goes to loopback or nowhere (the config allows it as loopback).
        if !t.url.tls
            && config::remote::is_localhost(&t.url.host)
            && decided.addrs.iter().any(|a| !a.ip().is_loopback())
        {
            let why = format!(
                "boxmaker refused {shown}:{port}: localhost resolves to an address that is not \
                 loopback here, and plain http goes only to loopback or an address a rule names"
            );
            rec.reason = Some(why.clone());
            me.egress.emit(rec);
            set_reason(&me.reason, why.clone());
            return Err(err(why));
        }
        let mut tcp = None;
        let mut last = String::new();
        for a in &decided.addrs {
            match tokio::time::timeout(CONNECT, TcpStream::connect(a)).await {
                Ok(Ok(s)) => {
                    tcp = Some((s, *a));
                    break;
                }
                Ok(Err(e)) => last = format!("{a}: {e}"),
                Err(_) => last = format!("{a}: no answer in {} s", CONNECT.as_secs()),
            }
        }
        let Some((tcp, addr)) = tcp else {
            rec.outcome = EgressOutcome::Failed;
            rec.reason = Some(format!("cannot connect: {last}"));
            me.egress.emit(rec);
            return Err(err(format!("cannot connect to {shown}:{port}: {last}")));
        };
        let _ = tcp.set_nodelay(true);
        rec.address = Some(addr.to_string());
        rec.outcome = EgressOutcome::Opened;
        rec.reason = Some(format!(
            "allowed at {} for the remote MCP server {}{} (destination cleared for {}; its answers \
             are {})",
            label.class(),
            me.tool.name,
            if signin { "'s sign-in" } else { "" },
            decided.clearance,
            decided.returns
        ));
        me.egress.emit(rec.clone());
        let counted = Counted {
            inner: tcp,
            counts: Arc::new(Counts {
                egress: me.egress.clone(),
                ctx: me.ctx.clone(),
                rec,
                returns: decided.returns,
                dest: shown.clone(),
                sent: AtomicU64::new(0),
                received: AtomicU64::new(0),
                answered: AtomicBool::new(signin),
            }),
        };
        let clearance = decided.clearance;
        if !t.url.tls {
            return Ok((Box::new(counted), clearance));
        }
        let name = match &t.url.host {
            config::Host::Name(n) => rustls::pki_types::ServerName::try_from(n.clone())
                .map_err(|e| err(format!("{n} cannot be a TLS server name: {e}")))?,
            config::Host::Address(a) => rustls::pki_types::ServerName::IpAddress((*a).into()),
        };
        match tokio::time::timeout(CONNECT, me.tls.connect(name, counted)).await {
            Ok(Ok(s)) => Ok((Box::new(s), clearance)),
            Ok(Err(e)) => {
                let why = format!(
                    "the TLS handshake with {shown}:{port} failed: {e} (its certificate is \
                     checked against the public roots; there is no way to skip that)"
                );
                set_reason(&me.reason, why.clone());
                Err(err(why))
            }
            Err(_) => Err(err(format!(
                "the TLS handshake with {shown}:{port} took over {} s",
                CONNECT.as_secs()
            ))),
        }
    }

    /// A new connection to `t`, decided, opened and audited ([`Client::connect_cleared`]),
    /// with HTTP/1.1 on it; its task ends with the client.
    async fn open(
        &self,
        t: &Target,
    ) -> Result<
        (
            hyper::client::conn::http1::SendRequest<Full<Bytes>>,
            DataClass,
        ),
        HttpError,
    > {
        let (io, clearance) = self.connect_cleared(t, false).await?;
        let sender = self
            .http1(io)
            .await
            .map_err(|e| err(format!("HTTP with the server failed: {e}")))?;
        Ok((sender, clearance))
    }

    /// HTTP/1.1 on `io`, its connection driven by a task that ends with the client.
    async fn http1(
        &self,
        io: Box<dyn Io>,
    ) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>, hyper::Error> {
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io)).await?;
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        self.0
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(task.abort_handle());
        Ok(sender)
    }

    /// The kept connection, if it may carry a request now: idle (its last answer read
    /// whole, within [`READY_WITHIN`]), open, kept under [`KEEP_IDLE`], and the label now
    /// within its clearance — the decision it was opened under still stands. Any other is
    /// dropped (it closes, and its `closed` record follows).
    async fn take_kept(&self) -> Option<Kept> {
        let mut k = self
            .0
            .kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()?;
        // The last answer's end may be a moment behind the message rmcp took from it.
        let _ = tokio::time::timeout(READY_WITHIN, k.sender.ready()).await;
        let label = self
            .0
            .ctx
            .float
            .label(self.0.egress.floor(&self.0.ctx.session), DataClass::Public);
        (k.since.elapsed() < KEEP_IDLE
            && k.sender.is_ready()
            && !k.sender.is_closed()
            && label.class() <= k.clearance)
            .then_some(k)
    }

    /// Keeps `sender`'s connection for the next request (in place of any other).
    fn keep(
        &self,
        sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
        clearance: DataClass,
    ) {
        *self.0.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(Kept {
            sender,
            clearance,
            since: std::time::Instant::now(),
        });
    }

    /// Sends one request, following a redirect within the rules; the response and the
    /// target that answered it. (`runner::downstream::probe` sends its look through it too.)
    #[allow(clippy::too_many_arguments)]
    pub async fn send(
        &self,
        method: Method,
        session: Option<&str>,
        extra: &HashMap<HeaderName, HeaderValue>,
        accept: &str,
        last_event_id: Option<&str>,
        body: Option<Bytes>,
    ) -> Result<http::Response<hyper::body::Incoming>, HttpError> {
        let mut target = Target {
            url: self.0.url.clone(),
        };
        let mut refreshed = false;
        // A kept connection failed before the request went out: the next one is new.
        let mut fresh = false;
        let mut hops = 0;
        while hops <= MAX_REDIRECTS {
            hops += 1;
            let same_host =
                target.url.host == self.0.url.host && target.url.port == self.0.url.port;
            // The sign-in's token, refreshed first when it is about to expire; only to the
            // URL's own host.
            let bearer = match (&self.0.oauth, same_host) {
                (Some(o), true) => Some(o.header(self).await.map_err(|why| {
                    set_reason(&self.0.reason, why.clone());
                    err(why)
                })?),
                _ => None,
            };
            // Only a `POST` to the URL itself keeps its connection (a `GET` is an event
            // stream that holds it; a redirect's target is another place).
            let keeps = method == Method::POST && target.url == self.0.url;
            let kept = if keeps && !fresh {
                self.take_kept().await
            } else {
                None
            };
            let reused = kept.is_some();
            let (mut sender, clearance) = match kept {
                Some(k) => (k.sender, k.clearance),
                None => self.open(&target).await?,
            };
            let mut req = http::Request::builder()
                .method(method.clone())
                .uri(target.url.path.clone())
                .header(http::header::HOST, host_header(&target.url))
                .header(http::header::ACCEPT, accept);
            if body.is_some() {
                req = req.header(http::header::CONTENT_TYPE, "application/json");
            }
            if let Some(s) = session {
                req = req.header("mcp-session-id", s);
            }
            if let Some(id) = last_event_id {
                req = req.header("last-event-id", id);
            }
            for (k, v) in extra {
                // rmcp's own (the protocol version, the MCP method headers); never a credential.
                if *k != http::header::AUTHORIZATION {
                    req = req.header(k, v);
                }
            }
            for (k, v) in &self.0.headers {
                // A credential goes only to the URL's own host.
                if same_host || !self.0.secret_headers.contains(k) {
                    req = req.header(k, v);
                }
            }
            if let Some(b) = &bearer {
                req = req.header(http::header::AUTHORIZATION, b);
            }
            let req = req
                .body(Full::new(body.clone().unwrap_or_default()))
                .map_err(|e| err(format!("cannot make the request: {e}")))?;
            let resp = match sender.try_send_request(req).await {
                Ok(resp) => resp,
                // The server closed a kept connection before the request went out: it has
                // seen nothing of it, so it goes on a new one.
                Err(e) if reused && e.message().is_some() => {
                    fresh = true;
                    hops -= 1;
                    continue;
                }
                Err(e) => {
                    return Err(err(format!("the server did not answer: {}", e.error())));
                }
            };
            if keeps {
                self.keep(sender, clearance);
            }
            let status = resp.status();
            // A token the server no longer takes: refreshed once, and the request sent again.
            if status == StatusCode::UNAUTHORIZED
                && !refreshed
                && let (Some(o), Some(used)) = (&self.0.oauth, &bearer)
            {
                refreshed = true;
                match o.refresh_after_refusal(self, used).await {
                    Ok(()) => {
                        hops -= 1;
                        continue;
                    }
                    Err(why) => {
                        set_reason(&self.0.reason, why);
                        return Ok(resp);
                    }
                }
            }
            if status == StatusCode::TEMPORARY_REDIRECT || status == StatusCode::PERMANENT_REDIRECT
            {
                let location = resp
                    .headers()
                    .get(http::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| err(format!("the server redirected ({status}) to nowhere")))?;
                target = self.redirect(&target, location)?;
                continue;
            }
            if status.is_redirection() {
                return Err(err(format!(
                    "the server answered {status}, a redirect an MCP request cannot follow (only \
                     307 and 308 keep the request); give the tool the URL it points to"
                )));
            }
            return Ok(resp);
        }
        Err(err(format!(
            "the server redirected more than {MAX_REDIRECTS} times"
        )))
    }

    /// Where `location` points from `from`: a path on the same host, or a URL read as the
    /// config reads one (its host is then decided by the egress rules when it connects).
    fn redirect(&self, from: &Target, location: &str) -> Result<Target, HttpError> {
        if location.starts_with('/') && !location.starts_with("//") {
            let mut url = from.url.clone();
            url.path = location.to_string();
            return Ok(Target { url });
        }
        let url = RemoteUrl::parse(location)
            .map_err(|why| err(format!("the server redirected to a URL that {why}")))?;
        if from.url.tls && !url.tls {
            return Err(err(
                "the server redirected from https:// to plain http://, which is refused",
            ));
        }
        Ok(Target { url })
    }
}

/// What one sign-in request got back.
#[derive(Debug)]
pub struct Fetched {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Vec<u8>,
}

/// Why a sign-in request failed: the sentence, and whether the egress rules refused it
/// (then the rule that would clear it can be suggested).
#[derive(Debug)]
pub struct FetchError {
    pub why: String,
    pub refused: bool,
}

/// How long one sign-in request may take, whole (connect, send, the answer to its end).
const FETCH_WITHIN: Duration = Duration::from_secs(20);

impl Client {
    /// One request of the sign-in to `url` (metadata, registration, the token or revocation
    /// endpoint, or the server itself to read its challenge): decided and audited as any
    /// connection of this tool's (at `public`: it carries nothing of a session), TLS
    /// verified, no redirect followed, the answer read to its end within [`FETCH_WITHIN`]
    /// and at most `max` bytes.
    pub async fn fetch(
        &self,
        url: &RemoteUrl,
        method: Method,
        headers: Vec<(HeaderName, HeaderValue)>,
        body: Option<Bytes>,
        max: usize,
    ) -> Result<Fetched, FetchError> {
        let shown = format!("{}:{}", url.host_text(), url.port);
        let work = async {
            let io = self
                .connect(&Target { url: url.clone() }, true)
                .await
                .map_err(|e| FetchError {
                    refused: e.to_string().contains("boxmaker refused"),
                    why: e.to_string().replace("Client error: ", ""),
                })?;
            let fail = |why: String| FetchError {
                why,
                refused: false,
            };
            let mut sender = self
                .http1(io)
                .await
                .map_err(|e| fail(format!("HTTP with {shown} failed: {e}")))?;
            let mut req = http::Request::builder()
                .method(method)
                .uri(url.path.clone())
                .header(http::header::HOST, host_header(url));
            for (k, v) in headers {
                req = req.header(k, v);
            }
            let req = req
                .body(Full::new(body.unwrap_or_default()))
                .map_err(|e| fail(format!("cannot make the request: {e}")))?;
            let resp = sender
                .send_request(req)
                .await
                .map_err(|e| fail(format!("{shown} did not answer: {e}")))?;
            let status = resp.status();
            let headers = resp.headers().clone();
            let body = read_body(resp.into_body(), max).await.map_err(|e| {
                fail(format!(
                    "{shown}: {}",
                    e.to_string().replace("Client error: ", "")
                ))
            })?;
            Ok(Fetched {
                status,
                headers,
                body,
            })
        };
        match tokio::time::timeout(FETCH_WITHIN, work).await {
            Ok(r) => r,
            Err(_) => Err(FetchError {
                why: format!(
                    "{shown} did not answer in full within {} s",
                    FETCH_WITHIN.as_secs()
                ),
                refused: false,
            }),
        }
    }

    /// The tool this client is for.
    pub fn tool(&self) -> &Tool {
        &self.0.tool
    }

    /// The server's URL.
    pub fn url(&self) -> &RemoteUrl {
        &self.0.url
    }
}

fn host_header(u: &RemoteUrl) -> String {
    let default = if u.tls { 443 } else { 80 };
    if u.port == default {
        u.host_text()
    } else {
        format!("{}:{}", u.host_text(), u.port)
    }
}

const ACCEPT_POST: &str = "application/json, text/event-stream";

fn session_of(resp: &http::Response<hyper::body::Incoming>) -> Option<String> {
    resp.headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn content_type(resp: &http::Response<hyper::body::Incoming>) -> String {
    resp.headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// A response's `WWW-Authenticate` challenge as it may be shown: visible ASCII and spaces
/// only, at most `max` characters (empty when there is none).
pub fn shown_challenge(headers: &http::HeaderMap, max: usize) -> String {
    headers
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(max)
        .collect()
}

impl Client {
    /// A 401: the credential was refused (or none was given). The reason names what to do.
    fn unauthorized(&self, resp: &http::Response<hyper::body::Incoming>) -> HttpError {
        let challenge = shown_challenge(resp.headers(), 200);
        let name = &self.0.tool.name;
        if let Some(o) = &self.0.oauth {
            set_reason(&self.0.reason, o.expired());
            return StreamableHttpError::AuthRequired(AuthRequiredError::new(challenge));
        }
        let given = match &self.0.tool.kind {
            ToolKind::Remote {
                bearer: Some(b), ..
            } => format!("the secret {b:?} it was given (`bearer`) is wrong, expired or revoked"),
            _ if !self.0.secret_headers.is_empty() => {
                "the secret its `headers` carry is wrong, expired or revoked".to_string()
            }
            _ => "it was given no credential (`bearer = \"SECRET\"` gives one)".to_string(),
        };
        set_reason(
            &self.0.reason,
            format!(
                "the server refused the credential (HTTP 401{}): {given}; renew it, or for a \
                 server you sign in to run `boxmaker auth login {name}`",
                if challenge.is_empty() {
                    String::new()
                } else {
                    format!(", {challenge}")
                }
            ),
        );
        StreamableHttpError::AuthRequired(AuthRequiredError::new(challenge))
    }
}

/// The body read whole, at most `max` bytes.
async fn read_body(body: hyper::body::Incoming, max: usize) -> Result<Vec<u8>, HttpError> {
    let mut body = body;
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| err(format!("the server's answer broke off: {e}")))?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > max {
                let size = if max >= 1 << 20 {
                    format!("{} MiB", max >> 20)
                } else {
                    format!("{} KiB", max >> 10)
                };
                return Err(err(format!(
                    "the server sent a message over {size} (a flood, or a size it does not keep \
                     to)"
                )));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

/// What is read of a body dropped before its end, in the background, at most.
const DRAIN_BYTES: usize = 64 << 10;
/// How long a body dropped before its end is read on, at most.
const DRAIN_WITHIN: Duration = Duration::from_secs(2);

/// A response body as a stream of its data. Dropped before its end — rmcp drops a `POST`'s
/// event stream once it has the answer, a moment before the server ends it — it is read to
/// its end in the background (at most [`DRAIN_BYTES`], [`DRAIN_WITHIN`]; nothing of it goes
/// anywhere), so that its connection can carry the next request rather than close.
struct Draining(Option<hyper::body::Incoming>);

impl futures::Stream for Draining {
    type Item = Result<Bytes, hyper::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        use hyper::body::Body;
        loop {
            let Some(body) = self.0.as_mut() else {
                return Poll::Ready(None);
            };
            match Pin::new(body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        return Poll::Ready(Some(Ok(data)));
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    self.0 = None;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    self.0 = None;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl Drop for Draining {
    fn drop(&mut self) {
        let Some(mut body) = self.0.take() else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        rt.spawn(async move {
            let drain = async {
                let mut read = 0usize;
                while let Some(Ok(frame)) = body.frame().await {
                    read += frame.data_ref().map_or(0, Bytes::len);
                    if read > DRAIN_BYTES {
                        return;
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN_WITHIN, drain).await;
        });
    }
}

/// The body as SSE events, none larger than `max` bytes.
fn sse(body: hyper::body::Incoming, max: usize) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut pending = 0usize;
    let bytes = Draining(Some(body)).map(move |chunk| {
        let chunk = chunk.map_err(|e| std::io::Error::other(e.to_string()))?;
        // Bytes since the last blank line (an event's end).
        match memrchr_blank(&chunk) {
            Some(end) => pending = chunk.len() - end,
            None => pending = pending.saturating_add(chunk.len()),
        }
        if pending > max {
            return Err(std::io::Error::other(format!(
                "the server sent an event over {} MiB (a flood, or a size it does not keep to)",
                max >> 20
            )));
        }
        Ok::<Bytes, std::io::Error>(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

/// Where the last blank line (`\n\n`, or `\n\r\n`) in `b` ends.
fn memrchr_blank(b: &[u8]) -> Option<usize> {
    (1..b.len()).rev().find_map(|i| {
        let here = b.get(i) == Some(&b'\n');
        let prev = b.get(i - 1) == Some(&b'\n')
            || (b.get(i - 1) == Some(&b'\r') && i >= 2 && b.get(i - 2) == Some(&b'\n'));
        (here && prev).then_some(i + 1)
    })
}

impl StreamableHttpClient for Client {
    type Error = RemoteError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        _uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let body = serde_json::to_vec(&message)?;
        let resp = self
            .send(
                Method::POST,
                session_id.as_deref(),
                &custom_headers,
                ACCEPT_POST,
                None,
                Some(Bytes::from(body)),
            )
            .await?;
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED {
            return Err(self.unauthorized(&resp));
        }
        if status == StatusCode::FORBIDDEN
            && let Some(o) = &self.0.oauth
        {
            let challenge = resp
                .headers()
                .get(http::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .and_then(crate::oauth::meta::challenge)
                .unwrap_or_default();
            let why = o.forbidden(&challenge);
            set_reason(&self.0.reason, why.clone());
            return Err(err(why));
        }
        if status == StatusCode::ACCEPTED || status == StatusCode::NO_CONTENT {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        if !status.is_success() {
            return Err(err(format!("the server answered HTTP {status}")));
        }
        let session = session_of(&resp);
        let max = limits.max_json_response_size.min(MAX_MESSAGE);
        match content_type(&resp).as_str() {
            "application/json" => {
                let body = read_body(resp.into_body(), max).await.inspect_err(|e| {
                    set_reason(&self.0.reason, e.to_string().replace("Client error: ", ""));
                })?;
                if body.is_empty() {
                    return Ok(StreamableHttpPostResponse::Accepted);
                }
                let msg: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
                Ok(StreamableHttpPostResponse::Json(msg, session))
            }
            "text/event-stream" => Ok(StreamableHttpPostResponse::Sse(
                sse(resp.into_body(), limits.max_sse_event_size.min(MAX_MESSAGE)),
                session,
            )),
            _ if status == StatusCode::OK
                && resp
                    .headers()
                    .get(http::header::CONTENT_LENGTH)
                    .is_some_and(|v| v == "0") =>
            {
                Ok(StreamableHttpPostResponse::Accepted)
            }
            other => Err(StreamableHttpError::UnexpectedContentType(Some(
                other.to_string(),
            ))),
        }
    }

    async fn delete_session(
        &self,
        _uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let _ = self
            .send(
                Method::DELETE,
                Some(&session_id),
                &custom_headers,
                ACCEPT_POST,
                None,
                None,
            )
            .await?;
        Ok(())
    }

    async fn get_stream(
        &self,
        _uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let resp = self
            .send(
                Method::GET,
                session_id.as_deref(),
                &custom_headers,
                "text/event-stream",
                last_event_id.as_deref(),
                None,
            )
            .await?;
        let status = resp.status();
        if status == StatusCode::METHOD_NOT_ALLOWED || status == StatusCode::NOT_FOUND {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if status == StatusCode::UNAUTHORIZED {
            return Err(self.unauthorized(&resp));
        }
        if !status.is_success() {
            return Err(err(format!("the server answered HTTP {status}")));
        }
        if content_type(&resp) != "text/event-stream" {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        Ok(sse(resp.into_body(), MAX_MESSAGE))
    }
}

/// A stream the client's connections go through.
trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// What one connection carried, for its `closed` record; its first answer floats the label.
struct Counts {
    egress: Arc<Egress>,
    ctx: BoxCtx,
    rec: EgressRecord,
    returns: config::Label,
    dest: String,
    sent: AtomicU64,
    received: AtomicU64,
    answered: AtomicBool,
}

impl Drop for Counts {
    fn drop(&mut self) {
        let mut rec = self.rec.clone();
        rec.outcome = EgressOutcome::Closed;
        rec.reason = Some("ended".into());
        rec.sent = self.sent.load(Ordering::Relaxed);
        rec.received = self.received.load(Ordering::Relaxed);
        self.egress.emit(rec);
    }
}

struct Counted {
    inner: TcpStream,
    counts: Arc<Counts>,
}

impl AsyncRead for Counted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = buf.filled().len() - before;
        if n > 0 {
            let c = &self.counts;
            // What the destination answers raises the label before the client reads it.
            if !c.answered.swap(true, Ordering::SeqCst) {
                c.egress.answered(&c.ctx, c.rec.conn, c.returns, &c.dest);
            }
            c.received.fetch_add(n as u64, Ordering::Relaxed);
        }
        r
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if let Poll::Ready(Ok(n)) = &r {
            self.counts.sent.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blank_line_ends_an_event() {
        assert_eq!(memrchr_blank(b"data: a\n\ndata: b"), Some(9));
        assert_eq!(memrchr_blank(b"data: a\r\n\r\nx"), Some(11));
        assert_eq!(memrchr_blank(b"data: a\n"), None);
    }
}
