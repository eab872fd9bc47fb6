//! The OTLP exporter's HTTP client: one HTTP/1.1 request a connection, over TCP or TLS
//! (rustls with ring and the Mozilla roots, as the rest of boxmaker), on the exporter's own
//! small runtime. The SDK's batch threads call it from outside that runtime; the request
//! runs on it and they wait for its answer.
//!
//! It goes only where the exporter's endpoint variables say, follows no redirect, and reads
//! at most [`MAX_ANSWER`] bytes of an answer within [`TIMEOUT`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use http::{Request, Response, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use opentelemetry_http::{HttpClient, HttpError};

/// The longest one export may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a collector's answer read.
pub const MAX_ANSWER: usize = 1 << 20;

/// The client the SDK's exporters share.
#[derive(Clone)]
pub struct Client {
    runtime: tokio::runtime::Handle,
    tls: Option<tokio_rustls::TlsConnector>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

/// TLS 1.2 and 1.3, ring, the Mozilla roots, HTTP/1.1 by ALPN (`None`: TLS cannot be set up,
/// and an `https` endpoint fails to export, saying so).
fn tls() -> Option<tokio_rustls::TlsConnector> {
    let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .ok()?
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Some(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

impl Client {
    /// A client whose requests run on `runtime`.
    pub fn new(runtime: tokio::runtime::Handle) -> Client {
        Client {
            runtime,
            tls: tls(),
        }
    }
}

#[async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let tls = self.tls.clone();
        let task = self
            .runtime
            .spawn(async move { tokio::time::timeout(TIMEOUT, send(request, tls)).await });
        match task.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(format!("no answer within {} s", TIMEOUT.as_secs()).into()),
            Err(e) => Err(format!("the export did not run: {e}").into()),
        }
    }
}

async fn send(
    request: Request<Bytes>,
    tls: Option<tokio_rustls::TlsConnector>,
) -> Result<Response<Bytes>, HttpError> {
    let (mut parts, body) = request.into_parts();
    let uri = parts.uri.clone();
    let https = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        other => {
            return Err(format!("an OTLP endpoint must be http or https, not {other:?}").into());
        }
    };
    let host = uri
        .host()
        .ok_or("the OTLP endpoint names no host")?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_string())
        .unwrap_or_else(|| host.clone());
    // Origin form on the wire, with the Host header HTTP/1.1 needs.
    parts.uri = uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .parse()?;
    parts
        .headers
        .insert(header::HOST, header::HeaderValue::from_str(&authority)?);
    let request = Request::from_parts(parts, Full::new(body));
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
    let _ = tcp.set_nodelay(true);
    let answer = if https {
        let tls = tls.ok_or("TLS could not be set up, so an https endpoint cannot be reached")?;
        let name = rustls::pki_types::ServerName::try_from(host.clone())?;
        let stream = tls.connect(name, tcp).await?;
        exchange(TokioIo::new(stream), request).await?
    } else {
        exchange(TokioIo::new(tcp), request).await?
    };
    Ok(answer)
}

async fn exchange<T>(io: T, request: Request<Full<Bytes>>) -> Result<Response<Bytes>, HttpError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io).await?;
    let conn = tokio::spawn(conn);
    let answer = sender.send_request(request).await?;
    let (parts, body) = answer.into_parts();
    let body = Limited::new(body, MAX_ANSWER)
        .collect()
        .await
        .map_err(|e| format!("reading the collector's answer: {e}"))?
        .to_bytes();
    conn.abort();
    Ok(Response::from_parts(parts, body))
}
