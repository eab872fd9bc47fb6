//! Streamable HTTP (SPEC §5, `boxmaker mcp --http ADDR`): one boxmaker session per MCP
//! session, every request requiring `Authorization: Bearer TOKEN`.
//!
//! The token is made by the caller (random, written `0600` to the state directory, printed
//! once); a request without it, or with another, is answered 401 before any MCP code sees
//! it, and reported on stderr. The comparison takes the same time whatever the token's
//! contents, so timing tells an attacker nothing about it. rmcp's own checks stay on: the
//! `Host` header must name this machine (DNS-rebinding defence) and bodies are size-capped.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode, header};
use axum::middleware::Next;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

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

/// `a == b` in time that depends only on the lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn require_token(token: Arc<String>, req: Request<Body>, next: Next) -> Response<Body> {
    let given = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
        return next.run(req).await;
    }
    eprintln!(
        "boxmaker: refused an HTTP request to {} without the right bearer token",
        req.uri().path()
    );
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

/// Serves MCP at `http://ADDR/mcp` until the process ends. `new_front` makes the front of a
/// new MCP session (with a new boxmaker session id); its error refuses that session.
pub async fn serve(
    addr: SocketAddr,
    token: String,
    new_front: impl Fn() -> Result<Front, std::io::Error> + Send + Sync + 'static,
) -> Result<(), HttpError> {
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
    let service =
        StreamableHttpService::new(new_front, Arc::new(LocalSessionManager::default()), config);
    let token = Arc::new(token);
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(move |req, next| {
            require_token(token.clone(), req, next)
        }));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| HttpError::Bind { addr, source })?;
    axum::serve(listener, app).await.map_err(HttpError::Serve)
}

#[cfg(test)]
mod tests {
    use super::same;

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
        assert!(!same(b"", b"a"));
    }
}
