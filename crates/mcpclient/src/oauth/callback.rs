//! The loopback redirect of a sign-in (RFC 8252 §7.3): a listener on `127.0.0.1` only, at a
//! free port (or the configured one), that takes exactly one authorization response — the
//! one whose `state` is this sign-in's — and then closes. A request with another `state`
//! (a page in the person's browser guessing the port, a replayed redirect of an earlier
//! sign-in), a second `state` or `code`, or any other path is answered `400`/`404` and
//! changes nothing; the wait ends with the right one, the person's refusal, or the time limit.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The longest request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long one connection may take to send its head.
const HEAD_WITHIN: Duration = Duration::from_secs(10);

/// What ended the wait badly: one sentence each.
#[derive(Debug, thiserror::Error)]
pub enum CallbackError {
    #[error("cannot listen for the sign-in's redirect on 127.0.0.1:{port}: {source}")]
    Bind { port: u16, source: std::io::Error },
    #[error(
        "no sign-in came back within {secs} s; run the command again and open the URL it prints"
    )]
    Timeout { secs: u64 },
    #[error("the authorization server refused the sign-in: {error}{description}")]
    Denied { error: String, description: String },
    #[error(
        "the redirect names the issuer {got}, not {want}, which this sign-in asked (RFC 9207): \
         a mix-up, refused"
    )]
    Issuer { got: String, want: String },
}

/// A listener waiting for one redirect.
#[derive(Debug)]
pub struct Callback {
    listener: TcpListener,
    port: u16,
}

/// What the wait took: the authorization code.
pub struct Code(pub zeroize::Zeroizing<String>);

impl std::fmt::Debug for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Code(…)")
    }
}

impl Callback {
    /// Listens on `127.0.0.1:port` (`0`: any free port). Never on another address.
    pub async fn bind(port: u16) -> Result<Callback, CallbackError> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port))
            .await
            .map_err(|source| CallbackError::Bind { port, source })?;
        let port = listener
            .local_addr()
            .map_err(|source| CallbackError::Bind { port, source })?
            .port();
        Ok(Callback { listener, port })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn local_ip(&self) -> Option<std::net::IpAddr> {
        self.listener.local_addr().ok().map(|a| a.ip())
    }

    /// `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }

    /// Waits, until `limit`, for the redirect carrying `state`; its code. `issuer`: the
    /// issuer the redirect's `iss` must name when it has one (or must have, with
    /// `iss_required`). Consumes the listener: nothing is accepted after.
    pub async fn wait(
        self,
        state: &str,
        issuer: &str,
        iss_required: bool,
        limit: Duration,
    ) -> Result<Code, CallbackError> {
        let end = Instant::now() + limit;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let accepted = tokio::time::timeout(left, self.listener.accept()).await;
            let Ok(Ok((stream, _))) = accepted else {
                if accepted.is_err() {
                    return Err(CallbackError::Timeout {
                        secs: limit.as_secs(),
                    });
                }
                continue;
            };
            if let Some(done) = one(stream, state, issuer, iss_required).await {
                return done;
            }
        }
    }
}

/// Serves one connection: `Some` when it ended the wait.
async fn one(
    mut stream: TcpStream,
    state: &str,
    issuer: &str,
    iss_required: bool,
) -> Option<Result<Code, CallbackError>> {
    let head = match tokio::time::timeout(HEAD_WITHIN, read_head(&mut stream)).await {
        Ok(Some(h)) => h,
        _ => {
            let _ = answer(&mut stream, 400, "that was not a request boxmaker can read").await;
            return None;
        }
    };
    let line = head.lines().next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (method, target) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != "/callback" {
        let _ = answer(
            &mut stream,
            404,
            "boxmaker waits for a sign-in at /callback only",
        )
        .await;
        return None;
    }
    let mut params: Vec<(String, String)> = Vec::new();
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        if params.iter().any(|(p, _)| *p == k) {
            let _ = answer(&mut stream, 400, "a parameter is there twice; refused").await;
            return None;
        }
        params.push((k.into_owned(), v.into_owned()));
    }
    let get = |k: &str| params.iter().find(|(p, _)| p == k).map(|(_, v)| v.as_str());
    // Only the redirect of this sign-in counts (compared in constant time).
    let matches = get("state").is_some_and(|s| {
        s.len() == state.len()
            && s.bytes()
                .zip(state.bytes())
                .fold(0u8, |acc, (x, y)| acc | (x ^ y))
                == 0
    });
    if !matches {
        let _ = answer(
            &mut stream,
            400,
            "this is not the sign-in boxmaker is waiting for (its state differs); nothing changed",
        )
        .await;
        return None;
    }
    match get("iss") {
        Some(got) if got != issuer => {
            let _ = answer(
                &mut stream,
                400,
                "the redirect names another issuer; refused",
            )
            .await;
            return Some(Err(CallbackError::Issuer {
                got: super::meta::shown(got),
                want: issuer.to_string(),
            }));
        }
        None if iss_required => {
            let _ = answer(&mut stream, 400, "the redirect names no issuer; refused").await;
            return Some(Err(CallbackError::Issuer {
                got: "none".into(),
                want: issuer.to_string(),
            }));
        }
        _ => {}
    }
    if let Some(error) = get("error") {
        let description = get("error_description")
            .map(|d| format!(" ({})", super::meta::shown(d)))
            .unwrap_or_default();
        let _ = answer(
            &mut stream,
            200,
            "the sign-in was refused; boxmaker stopped waiting",
        )
        .await;
        return Some(Err(CallbackError::Denied {
            error: super::meta::shown(error),
            description,
        }));
    }
    match get("code") {
        Some(code) if !code.is_empty() => {
            let code = zeroize::Zeroizing::new(code.to_string());
            let _ = answer(
                &mut stream,
                200,
                "boxmaker is signed in; you can close this tab",
            )
            .await;
            Some(Ok(Code(code)))
        }
        _ => {
            let _ = answer(&mut stream, 400, "the redirect carries no code").await;
            None
        }
    }
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(chunk.get(..n)?);
        if buf.windows(4).any(|w| w == b"\r\n\r\n") || buf.windows(2).any(|w| w == b"\n\n") {
            return String::from_utf8(buf).ok();
        }
        if buf.len() > MAX_HEAD {
            return None;
        }
    }
}

async fn answer(stream: &mut TcpStream, status: u16, text: &str) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!("<!doctype html><meta charset=utf-8><title>boxmaker</title><p>{text}</p>\n");
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n\
         Content-Length: {}\r\nCache-Control: no-store\r\nReferrer-Policy: no-referrer\r\n\
         Content-Security-Policy: default-src 'none'\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn get(port: u16, target: &str) -> Result<String, std::io::Error> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await?;
        s.write_all(format!("GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await?;
        let mut out = String::new();
        s.read_to_string(&mut out).await?;
        Ok(out)
    }

    /// Attack: redirects with a wrong state, a second state, a replayed one after the sign-in
    /// ended, or a second code are refused; only this sign-in's redirect is taken, once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_this_sign_ins_redirect_is_taken_once() {
        let cb = Callback::bind(0).await.unwrap();
        assert!(cb.local_ip().unwrap().is_loopback());
        let port = cb.port();
        let wait = tokio::spawn(cb.wait("the-state", "https://as", false, Duration::from_secs(20)));
        let r = get(port, "/callback?code=evil&state=guess").await.unwrap();
        assert!(
            r.starts_with("HTTP/1.1 400") && r.contains("state differs"),
            "{r}"
        );
        let r = get(port, "/callback?code=evil").await.unwrap();
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        let r = get(port, "/callback?code=a&state=the-state&state=the-state")
            .await
            .unwrap();
        assert!(r.contains("twice"), "{r}");
        let r = get(port, "/callback?code=a&code=b&state=the-state")
            .await
            .unwrap();
        assert!(r.contains("twice"), "{r}");
        let r = get(port, "/elsewhere?code=a&state=the-state")
            .await
            .unwrap();
        assert!(r.starts_with("HTTP/1.1 404"), "{r}");
        let r = get(port, "/callback?code=the-code&state=the-state")
            .await
            .unwrap();
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
        let code = wait.await.unwrap().unwrap();
        assert_eq!(code.0.as_str(), "the-code");
        // Replayed after the sign-in took its code: nobody listens any more.
        assert!(
            get(port, "/callback?code=again&state=the-state")
                .await
                .is_err()
        );
    }

    /// Attack: a redirect naming another issuer than the one asked (RFC 9207) ends the sign-in.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_redirect_from_another_issuer_is_refused() {
        let cb = Callback::bind(0).await.unwrap();
        let port = cb.port();
        let wait = tokio::spawn(cb.wait("s", "https://as", true, Duration::from_secs(20)));
        let r = get(port, "/callback?code=c&state=s&iss=https%3A%2F%2Fevil")
            .await
            .unwrap();
        assert!(r.starts_with("HTTP/1.1 400"), "{r}");
        let e = wait.await.unwrap().unwrap_err().to_string();
        assert!(e.contains("mix-up"), "{e}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_listener_is_on_loopback_only() {
        let cb = Callback::bind(0).await.unwrap();
        // Every address of this machine but loopback refuses the port.
        for a in local_addrs() {
            if a.is_loopback() {
                continue;
            }
            assert!(
                TcpStream::connect((a, cb.port())).await.is_err(),
                "{a} accepts the callback port"
            );
        }
        let e = Callback::bind(0)
            .await
            .unwrap()
            .wait("s", "i", false, Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(matches!(e, CallbackError::Timeout { .. }));
    }

    fn local_addrs() -> Vec<std::net::IpAddr> {
        // The addresses `hostname -I` would list, read from the kernel's tables.
        let mut out = Vec::new();
        // An address of this host is a `|-- A` line followed by `/32 host LOCAL`.
        if let Ok(t) = std::fs::read_to_string("/proc/net/fib_trie") {
            let lines: Vec<&str> = t.lines().map(str::trim).collect();
            for w in lines.windows(2) {
                if let Some(a) = w[0].strip_prefix("|-- ")
                    && w[1].contains("host LOCAL")
                    && let Ok(ip) = a.parse::<std::net::Ipv4Addr>()
                {
                    out.push(std::net::IpAddr::V4(ip));
                }
            }
        }
        assert!(!out.is_empty(), "no local address read");
        out
    }
}
