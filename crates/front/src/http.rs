//! Streamable HTTP (docs/spec.md §5, `boxmaker mcp --http ADDR`): every request requires
//! `Authorization: Bearer CREDENTIAL`, and the credential names the request's conversation
//! ([`crate::conversation`]): a legacy MCP session's requests and a 2026-07-28 client's
//! stateless requests alike are served by that conversation's front, never a new one.
//!
//! A request without a credential made under the front's key is answered 401 before any MCP
//! code sees it, and reported on stderr; the check takes the same time whatever the
//! credential holds. A legacy session's request carrying another conversation's credential
//! is answered 404, as an unknown session is. Before all that, a request whose `Origin` is
//! not listed with `--allow-origin` is answered 403 (a browser page of another site;
//! requests with no `Origin` are not a browser's). rmcp's own checks stay on: the `Host`
//! header must name this machine (DNS-rebinding defence) and bodies are size-capped.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, Response, StatusCode, header};
use axum::middleware::Next;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use crate::conversation::{Conversations, MAX_CONVERSATIONS, Refused};
use crate::server::Front;

/// Why the HTTP front stopped.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the HTTP server failed: {0}")]
    Serve(#[source] std::io::Error),
}

tokio::task_local! {
    /// The conversation of the request being served: set by [`require_credential`] around
    /// everything rmcp does for the request, read by the factory rmcp calls for a handler.
    static CONVERSATION: Front;
}

fn unauthorized() -> Response<Body> {
    let mut resp = Response::new(Body::from(
        "a valid `Authorization: Bearer` token is required\n",
    ));
    *resp.status_mut() = StatusCode::UNAUTHORIZED;
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    resp
}

/// Ties the request to its credential's conversation (docs/spec.md §5, "A conversation over
/// HTTP"; [`crate::conversation`]), or refuses it: no valid credential 401; a legacy
/// session's request with another conversation's credential 404, as an unknown session is.
/// rmcp's handler for the request (a legacy session's, made at its `initialize`, or a
/// 2026-07-28 request's own) is that conversation's [`Front`], and no other.
async fn require_credential(
    conversations: Arc<Conversations>,
    req: Request<Body>,
    next: Next,
) -> Response<Body> {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let mcp_session = req
        .headers()
        .get(MCP_SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let front = match conversations.front_for(given, mcp_session.as_deref()) {
        Ok(f) => f,
        Err(Refused::Credential) => {
            crate::note!(
                "boxmaker: refused an HTTP request to {} without the right bearer token",
                req.uri().path()
            );
            return unauthorized();
        }
        Err(Refused::Session) => {
            let mut resp = Response::new(Body::from("Not Found: Session not found"));
            *resp.status_mut() = StatusCode::NOT_FOUND;
            return resp;
        }
        Err(Refused::Full) => {
            return unavailable(format!(
                "this front serves {MAX_CONVERSATIONS} conversations already; start another \
                 `boxmaker mcp --http` for more"
            ));
        }
        Err(Refused::Unavailable(why)) => {
            return unavailable(format!("the conversation cannot be served: {why}"));
        }
    };
    let session = front.session().clone();
    let delete = req.method() == Method::DELETE;
    let resp = CONVERSATION.scope(front, next.run(req)).await;
    // A legacy `initialize` answered with a new MCP session: that session is this
    // conversation's, and only its credential may use it.
    if mcp_session.is_none()
        && let Some(issued) = resp
            .headers()
            .get(MCP_SESSION_ID)
            .and_then(|v| v.to_str().ok())
    {
        conversations.bind_legacy(issued, &session);
    }
    if delete
        && resp.status().is_success()
        && let Some(ended) = &mcp_session
    {
        conversations.end_legacy(ended);
    }
    resp
}

fn unavailable(why: String) -> Response<Body> {
    crate::note!("boxmaker: {why}");
    let mut resp = Response::new(Body::from(format!("{why}\n")));
    *resp.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    resp
}

/// The MCP session header of the legacy protocol era.
const MCP_SESSION_ID: &str = "mcp-session-id";

/// Refuses a request whose `Origin` header is not one of `allowed` with 403 (docs/spec.md
/// §5: a browser page of another site must not reach the local MCP server, DNS rebinding or
/// not). A request with no `Origin` is not a browser's: it passes on to the token check.
async fn check_origin(allowed: Arc<Vec<String>>, req: Request<Body>, next: Next) -> Response<Body> {
    let Some(origin) = req.headers().get(header::ORIGIN) else {
        return next.run(req).await;
    };
    let origin = origin.to_str().unwrap_or("");
    if allowed.iter().any(|a| a == origin) {
        return next.run(req).await;
    }
    crate::note!(
        "boxmaker: refused an HTTP request from origin {:?} (not in --allow-origin)",
        origin.chars().take(200).collect::<String>()
    );
    let mut resp = Response::new(Body::from(
        "this origin may not use this MCP server (start it with --allow-origin ORIGIN)\n",
    ));
    *resp.status_mut() = StatusCode::FORBIDDEN;
    resp
}

/// Whether `origin` is written as a browser sends it: `scheme://host[:port]`, nothing after.
pub fn is_origin(origin: &str) -> bool {
    let Some((scheme, rest)) = origin.split_once("://") else {
        return false;
    };
    !scheme.is_empty()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        && !rest.is_empty()
        && !rest.contains(['/', '?', '#', ' '])
}

/// rmcp's cap on a request body (its `StreamableHttpServerConfig` default), kept here so the
/// check below buffers no more than rmcp would.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// A JSON-RPC error answer, as JSON.
fn rpc_error(status: StatusCode, refusal: &crate::stdio::Refusal) -> Response<Body> {
    let mut resp = Response::new(Body::from(refusal.to_json().to_string()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp
}

/// Checks a POSTed message the way the stdio transport does ([`crate::stdio::check`]) before
/// rmcp sees it. rmcp answers a body that is not JSON with a bare 415 and reads
/// `"arguments": null` as "no arguments"; here the first is a 400 carrying the JSON-RPC parse
/// error, and a request with bad params gets its -32602 as a JSON response (streamable HTTP
/// allows `application/json` for any request's answer). A body over the cap is a 413, as
/// rmcp would answer it — at once when `Content-Length` announces it. This runs after the
/// token check but before rmcp's `Host` check, so a malformed body with a foreign `Host` is a
/// 400 rather than a 403; either way nothing reaches rmcp's session or the gate.
async fn check_message(req: Request<Body>, next: Next) -> Response<Body> {
    if req.method() != Method::POST {
        return next.run(req).await;
    }
    let too_large = || {
        let mut resp = Response::new(Body::from(format!(
            "Payload Too Large: request body exceeds {MAX_BODY} bytes\n"
        )));
        *resp.status_mut() = StatusCode::PAYLOAD_TOO_LARGE;
        resp
    };
    // A body announced larger than the cap is refused before any of it is read.
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY as u64) {
        return too_large();
    }
    let (parts, body) = req.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return too_large();
    };
    let value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            let refusal = crate::stdio::Refusal {
                id: None,
                error: rmcp::model::ErrorData::parse_error(format!("Parse error: {e}"), None),
            };
            return rpc_error(StatusCode::BAD_REQUEST, &refusal);
        }
    };
    if let Err(refusal) = crate::stdio::check(&value) {
        let status = if refusal.id.is_some()
            && refusal.error.code == rmcp::model::ErrorCode::INVALID_PARAMS
        {
            StatusCode::OK
        } else {
            StatusCode::BAD_REQUEST
        };
        return rpc_error(status, &refusal);
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

/// A session's `DELETE` (the client ends it) answered `200 OK`, which the clients expect
/// (the Python SDK logs `Session termination failed: 202` for rmcp's `202 Accepted`): the
/// session is over when the answer is sent, so nothing is merely accepted. Other answers
/// (401, 404 for an unknown session, 405) pass as they are.
async fn answer_delete(req: Request<Body>, next: Next) -> Response<Body> {
    let delete = req.method() == Method::DELETE;
    let mut resp = next.run(req).await;
    if delete && resp.status() == StatusCode::ACCEPTED {
        *resp.status_mut() = StatusCode::OK;
    }
    resp
}

/// Serves MCP at `http://ADDR/mcp` until the process ends, each request in the conversation
/// its credential names ([`Conversations`]).
pub async fn serve(
    addr: SocketAddr,
    conversations: Arc<Conversations>,
    allowed_origins: Vec<String>,
) -> Result<(), HttpError> {
    let listener = bind(addr).await?;
    serve_on(listener, conversations, allowed_origins).await
}

/// Binds `addr` (port 0: a free port; `local_addr` names it). Binding before announcing the
/// address means a client that reads the announcement can connect at once.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, HttpError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| HttpError::Bind { addr, source })
}

/// [`serve`] on a listener already bound by [`bind`].
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    conversations: Arc<Conversations>,
    allowed_origins: Vec<String>,
) -> Result<(), HttpError> {
    let addr = listener.local_addr().map_err(HttpError::Serve)?;
    let mut config = StreamableHttpServerConfig::default();
    if !addr.ip().is_loopback() {
        let host = addr.ip().to_string();
        config = config.with_allowed_hosts([
            "localhost".to_string(),
            "127.0.0.1".into(),
            "::1".into(),
            host,
        ]);
    }
    // rmcp asks for a handler for each legacy `initialize` and each 2026-07-28 request; it
    // is always the request's conversation's front, never a new session. A request that
    // reached rmcp without one (it cannot: `require_credential` is outside) is refused.
    let handler = || {
        CONVERSATION.try_with(Front::clone).map_err(|_| {
            std::io::Error::other("a request reached MCP without its credential's conversation")
        })
    };
    let service =
        StreamableHttpService::new(handler, Arc::new(LocalSessionManager::default()), config);
    let allowed = Arc::new(allowed_origins);
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(answer_delete))
        .layer(axum::middleware::from_fn(check_message))
        .layer(axum::middleware::from_fn(move |req, next| {
            require_credential(conversations.clone(), req, next)
        }))
        // Outermost: a foreign page is refused whatever else it sends.
        .layer(axum::middleware::from_fn(move |req, next| {
            check_origin(allowed.clone(), req, next)
        }));
    serve_bounded(listener, app).await.map_err(HttpError::Serve)
}

/// How long a client may take to send a request's head (its request line and headers):
/// past it the connection is closed. Without it a client that opens connections and
/// sends a byte now and then (slowloris) holds them, and their memory, for as long as it
/// likes.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Serves `app` on `listener` over HTTP/1.1, each request's head read within
/// [`HEADER_READ_TIMEOUT`], each request carrying its peer's address
/// (`axum::extract::ConnectInfo<SocketAddr>`). The front's MCP endpoint and the approvals
/// page both serve through it. (`axum::serve` sets hyper no timer, so no timeout.)
pub async fn serve_bounded(
    listener: tokio::net::TcpListener,
    app: axum::Router,
) -> std::io::Result<()> {
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            // Out of descriptors, or a connection reset before it was accepted: the
            // listener is fine; wait a moment (as `axum::serve` does) and go on.
            Err(e) if accept_error_is_transient(&e) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
            Err(e) => return Err(e),
        };
        let _ = stream.set_nodelay(true);
        let app = app
            .clone()
            .layer(axum::Extension(axum::extract::ConnectInfo(peer)));
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let service = hyper_util::service::TowerToHyperService::new(app);
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(io, service)
                .await;
        });
    }
}

fn accept_error_is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) || matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn origins_are_written_as_browsers_send_them() {
        assert!(super::is_origin("http://localhost:6274"));
        assert!(super::is_origin("https://app.example"));
        for bad in [
            "localhost:6274",
            "http://",
            "http://a/b",
            "*",
            "",
            "http://a b",
        ] {
            assert!(!super::is_origin(bad), "{bad}");
        }
    }
}
