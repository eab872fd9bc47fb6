//! The routes of the approvals page.
//!
//! | route | needs | what |
//! |---|---|---|
//! | `GET /` | `Host` | the inbox (logged in) or the login form |
//! | `GET /app.js`, `/app.css` | `Host` | the page's script and style, from the binary |
//! | `POST /login` | `Host`, own `Origin`, the token | a login: cookie and CSRF token |
//! | `POST /logout` | a login, CSRF, own `Origin` | ends the login |
//! | `GET /api/snapshot` | a login | the first calls that wait, how many in all, the latest decisions, remembered approvals |
//! | `GET /api/pending?after=N` | a login | more calls that wait, after change `N` |
//! | `GET /api/updates?after=N` | a login | changes after `N`, waiting up to 25 s for one |
//! | `POST /api/decide` | a login, CSRF, own `Origin` | a person's decision |
//! | `POST /api/revoke` | a login, CSRF, own `Origin` | revokes a remembered approval |
//!
//! Every answer carries a content security policy that lets the page load only its own
//! script and style and talk only to this server, forbids framing, and sends no referrer.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::routing::{get, post};
use proto::control::{ApprovalState, ControlAnswer, ControlOp, DecidedVia};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::auth::{self, Auth};
use crate::gatelink::{GateLink, LinkError};
use crate::view;

/// Why the page stopped.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error("cannot listen on {addr} for the approvals page: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the approvals page failed: {0}")]
    Serve(#[source] std::io::Error),
}

/// How long `/api/updates` waits for a change.
const LONG_POLL_MS: u64 = 25_000;

/// The most `/api/updates` waiting at once (each holds a gate connection).
const MAX_WAITING: usize = 16;

/// The decided approvals the page shows.
const HISTORY: u64 = 200;

/// The page's state: its logins and where its gate is.
#[derive(Debug)]
pub struct Page {
    auth: Auth,
    gate: GateLink,
    waiting: Semaphore,
}

impl Page {
    /// A page for the gate of `state`, logging in with `token`, served at `addr`.
    pub fn new(state: std::path::PathBuf, token: String, addr: SocketAddr) -> Page {
        Page {
            auth: Auth::new(token, addr),
            gate: GateLink::new(state),
            waiting: Semaphore::new(MAX_WAITING),
        }
    }
}

/// Binds `addr` (port 0: a free one; `local_addr` names it).
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, PageError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| PageError::Bind { addr, source })
}

/// Serves the page on `listener` until the process ends.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    state: std::path::PathBuf,
    token: String,
) -> Result<(), PageError> {
    let addr = listener.local_addr().map_err(PageError::Serve)?;
    let page = Arc::new(Page::new(state, token, addr));
    let app = axum::Router::new()
        .route("/", get(index))
        .route("/app.js", get(script))
        .route("/app.css", get(style))
        .route("/login", post(login))
        .route("/logout", post(logout))
        .route("/api/snapshot", get(snapshot))
        .route("/api/pending", get(pending_page))
        .route("/api/updates", get(updates))
        .route("/api/decide", post(decide))
        .route("/api/revoke", post(revoke))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&page),
            guard,
        ))
        .with_state(page);
    front::http::serve_bounded(listener, app)
        .await
        .map_err(PageError::Serve)
}

const INDEX: &str = include_str!("assets/index.html");
const LOGIN: &str = include_str!("assets/login.html");
const SCRIPT: &str = include_str!("assets/app.js");
const STYLE: &str = include_str!("assets/app.css");

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The headers every answer carries.
fn harden(resp: &mut Response<Body>) {
    let h = resp.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        // `no-referrer` would make a browser send `Origin: null` with the login form.
        (header::REFERRER_POLICY, "same-origin"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Body>) -> Response<Body> {
    let mut resp = Response::new(body.into());
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

fn json_reply(status: StatusCode, v: &Value) -> Response<Body> {
    reply(status, "application/json", v.to_string())
}

fn refused(status: StatusCode, why: &str) -> Response<Body> {
    json_reply(status, &json!({ "error": why }))
}

/// Every request: the `Host` must be this server's, a request that carries an `Origin` must
/// carry this page's own, and a `POST` must carry one. Then the security headers.
async fn guard(State(page): State<Arc<Page>>, req: Request<Body>, next: Next) -> Response<Body> {
    let host = header_str(req.headers(), header::HOST).map(str::to_string);
    let origin = header_str(req.headers(), header::ORIGIN).map(str::to_string);
    let mut resp = if !page.auth.host_ok(host.as_deref()) {
        eprintln!(
            "boxmaker: the approvals page refused a request for host {:?} (not this server)",
            host.as_deref().unwrap_or("")
        );
        refused(
            StatusCode::MISDIRECTED_REQUEST,
            "this server answers only to its own address",
        )
    } else if (origin.is_some() || req.method() == Method::POST)
        && !page.auth.origin_ok(origin.as_deref(), host.as_deref())
    {
        eprintln!(
            "boxmaker: the approvals page refused a {} {} from origin {:?}",
            req.method(),
            req.uri().path(),
            origin.as_deref().unwrap_or("(none)")
        );
        refused(
            StatusCode::FORBIDDEN,
            "requests from another origin are refused",
        )
    } else {
        next.run(req).await
    };
    harden(&mut resp);
    resp
}

/// The login's CSRF token, if the request carries a login.
fn logged_in(page: &Page, headers: &HeaderMap) -> Option<String> {
    page.auth.csrf_of(header_str(headers, header::COOKIE))
}

/// A state change: a login, and its CSRF token in `X-CSRF-Token`. `Some` is the refusal.
fn refuse_change(page: &Page, headers: &HeaderMap) -> Option<Response<Body>> {
    let Some(csrf) = logged_in(page, headers) else {
        return Some(refused(StatusCode::UNAUTHORIZED, "log in first"));
    };
    let given = header_str(headers, header::HeaderName::from_static("x-csrf-token"));
    if !given.is_some_and(|g| auth::same(g.as_bytes(), csrf.as_bytes())) {
        eprintln!("boxmaker: the approvals page refused a request without the right CSRF token");
        return Some(refused(
            StatusCode::FORBIDDEN,
            "the request's CSRF token is missing or wrong; reload the page",
        ));
    }
    None
}

async fn index(State(page): State<Arc<Page>>, headers: HeaderMap) -> Response<Body> {
    match logged_in(&page, &headers) {
        Some(csrf) => reply(
            StatusCode::OK,
            "text/html; charset=utf-8",
            INDEX.replace("{{CSRF}}", &csrf),
        ),
        None => reply(
            StatusCode::OK,
            "text/html; charset=utf-8",
            LOGIN.replace("{{MESSAGE}}", ""),
        ),
    }
}

async fn script() -> Response<Body> {
    reply(StatusCode::OK, "text/javascript; charset=utf-8", SCRIPT)
}

async fn style() -> Response<Body> {
    reply(StatusCode::OK, "text/css; charset=utf-8", STYLE)
}

async fn not_found() -> Response<Body> {
    refused(StatusCode::NOT_FOUND, "no such page")
}

/// `token=…` from a form body.
fn form_token(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    text.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        // The token is hex: no percent-encoding to undo.
        (k == "token").then(|| v.to_string())
    })
}

async fn login(State(page): State<Arc<Page>>, body: Bytes) -> Response<Body> {
    let given = form_token(&body).unwrap_or_default();
    let Some((cookie, _csrf)) = page.auth.login(&given) else {
        eprintln!("boxmaker: the approvals page refused a login with a wrong token");
        // A wrong guess costs time.
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        return reply(
            StatusCode::UNAUTHORIZED,
            "text/html; charset=utf-8",
            LOGIN.replace(
                "{{MESSAGE}}",
                "<p class=\"error\" role=\"alert\">That is not the token. It is printed by \
                 <code>boxmaker serve</code> and kept in <code>approvals.token</code> in the \
                 state directory.</p>",
            ),
        );
    };
    let mut resp = reply(StatusCode::SEE_OTHER, "text/plain", "");
    if let Ok(v) = HeaderValue::from_str(&auth::set_cookie(&cookie)) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp.headers_mut()
        .insert(header::LOCATION, HeaderValue::from_static("/"));
    resp
}

async fn logout(State(page): State<Arc<Page>>, headers: HeaderMap) -> Response<Body> {
    if let Some(resp) = refuse_change(&page, &headers) {
        return resp;
    }
    page.auth.logout(header_str(&headers, header::COOKIE));
    let mut resp = json_reply(StatusCode::OK, &json!({"ok": true}));
    if let Ok(v) = HeaderValue::from_str(&auth::clear_cookie()) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

fn gate_error(e: &LinkError) -> Response<Body> {
    let status = match e {
        LinkError::Refused { .. } => StatusCode::CONFLICT,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    refused(status, &e.to_string())
}

/// The start of the inbox: the first pending approvals, how many wait in all, the latest
/// decisions, the remembered approvals, and the change to watch from. The page asks for the
/// rest of the pending ones (`/api/pending`) once the first are on screen.
async fn snapshot(State(page): State<Arc<Page>>, headers: HeaderMap) -> Response<Body> {
    if logged_in(&page, &headers).is_none() {
        return refused(StatusCode::UNAUTHORIZED, "log in first");
    }
    match take_snapshot(&page).await {
        Ok(v) => json_reply(StatusCode::OK, &v),
        Err(e) => gate_error(&e),
    }
}

/// The pending approvals in the first answer: enough for a screen and more.
const FIRST_PAGE: u64 = 300;

/// The pending approvals in each later answer.
const PAGE: u64 = 2500;

fn watch_op(after: u64, limit: u64, pending_only: bool) -> ControlOp {
    ControlOp::WatchApprovals {
        after,
        limit,
        wait_ms: 0,
        pending_only,
    }
}

async fn take_snapshot(page: &Page) -> Result<Value, LinkError> {
    let ControlAnswer::ApprovalUpdates {
        items,
        head,
        pending,
        now,
    } = page.gate.ask(watch_op(0, FIRST_PAGE, true)).await?
    else {
        return Err(LinkError::Unexpected);
    };
    let ControlAnswer::ApprovalUpdates { items: recent, .. } = page
        .gate
        .ask(watch_op(
            head.saturating_sub(HISTORY * 2),
            HISTORY * 2,
            false,
        ))
        .await?
    else {
        return Err(LinkError::Unexpected);
    };
    let mut history: Vec<Value> = recent
        .iter()
        .filter(|u| u.item.state != ApprovalState::Pending)
        .map(view::approval)
        .collect();
    history.reverse();
    history.truncate(usize::try_from(HISTORY).unwrap_or(usize::MAX));
    let remembered = match page.gate.ask(ControlOp::ListGrants {}).await? {
        ControlAnswer::Grants { items } => items.iter().filter_map(view::remembered).collect(),
        _ => Vec::new(),
    };
    Ok(json!({
        "head": head,
        "now": now.0,
        "pending": items.iter().map(view::approval).collect::<Vec<_>>(),
        "pending_total": pending,
        "pending_after": items.last().map_or(0, |u| u.change),
        "more": !items.is_empty(),
        "history": history,
        "remembered": remembered,
    }))
}

/// More pending approvals, after the change `after=N` (`more` until an answer is empty).
async fn pending_page(
    State(page): State<Arc<Page>>,
    headers: HeaderMap,
    uri: Uri,
) -> Response<Body> {
    if logged_in(&page, &headers).is_none() {
        return refused(StatusCode::UNAUTHORIZED, "log in first");
    }
    let Some(after) = after_of(&uri) else {
        return refused(StatusCode::BAD_REQUEST, "say after=N");
    };
    match page.gate.ask(watch_op(after, PAGE, true)).await {
        Ok(ControlAnswer::ApprovalUpdates { items, .. }) => json_reply(
            StatusCode::OK,
            &json!({
                "items": items.iter().map(view::approval).collect::<Vec<_>>(),
                "after": items.last().map_or(after, |u| u.change),
                "more": !items.is_empty(),
            }),
        ),
        Ok(_) => gate_error(&LinkError::Unexpected),
        Err(e) => gate_error(&e),
    }
}

/// `after=N` from the query.
fn after_of(uri: &Uri) -> Option<u64> {
    uri.query()?
        .split('&')
        .find_map(|p| p.strip_prefix("after="))?
        .parse()
        .ok()
}

/// Changes after `after`, as soon as there is one (or after 25 s, none).
async fn updates(State(page): State<Arc<Page>>, headers: HeaderMap, uri: Uri) -> Response<Body> {
    if logged_in(&page, &headers).is_none() {
        return refused(StatusCode::UNAUTHORIZED, "log in first");
    }
    let Some(after) = after_of(&uri) else {
        return refused(StatusCode::BAD_REQUEST, "say after=N");
    };
    let Ok(_slot) = page.waiting.try_acquire() else {
        return refused(
            StatusCode::TOO_MANY_REQUESTS,
            "too many pages are waiting for changes; try again shortly",
        );
    };
    let asked = page
        .gate
        .ask(ControlOp::WatchApprovals {
            after,
            limit: 1000,
            wait_ms: LONG_POLL_MS,
            pending_only: false,
        })
        .await;
    match asked {
        Ok(ControlAnswer::ApprovalUpdates {
            items, head, now, ..
        }) => {
            let next = items.last().map_or(head.max(after), |u| u.change);
            let remembered = if items.iter().any(|u| u.grant.is_some()) {
                match page.gate.ask(ControlOp::ListGrants {}).await {
                    Ok(ControlAnswer::Grants { items }) => Some(
                        items
                            .iter()
                            .filter_map(view::remembered)
                            .collect::<Vec<_>>(),
                    ),
                    _ => None,
                }
            } else {
                None
            };
            json_reply(
                StatusCode::OK,
                &json!({
                    "next": next,
                    "now": now.0,
                    "items": items.iter().map(view::approval).collect::<Vec<_>>(),
                    "remembered": remembered,
                }),
            )
        }
        Ok(_) => gate_error(&LinkError::Unexpected),
        Err(e) => gate_error(&e),
    }
}

async fn decide(
    State(page): State<Arc<Page>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    if let Some(resp) = refuse_change(&page, &headers) {
        return resp;
    }
    let d = match view::decision(&body) {
        Ok(d) => d,
        Err(why) => return refused(StatusCode::BAD_REQUEST, &why),
    };
    let asked = page
        .gate
        .ask(ControlOp::DecideApproval {
            approval: d.approval,
            choice: d.choice,
            remember_seconds: d.remember_seconds,
            reason: None,
            shown: Some(d.shown),
            via: DecidedVia::Page,
            by: format!("a person on the approvals page, from {peer}"),
        })
        .await;
    match asked {
        Ok(ControlAnswer::Decided { item }) => {
            json_reply(StatusCode::OK, &json!({"item": view::approval(&item)}))
        }
        Ok(_) => gate_error(&LinkError::Unexpected),
        Err(e) => gate_error(&e),
    }
}

async fn revoke(State(page): State<Arc<Page>>, headers: HeaderMap, body: Bytes) -> Response<Body> {
    if let Some(resp) = refuse_change(&page, &headers) {
        return resp;
    }
    let grant = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("grant").and_then(Value::as_str).map(str::to_string));
    let Some(grant) = grant.filter(|g| g.starts_with("rt-")) else {
        return refused(
            StatusCode::BAD_REQUEST,
            "say which grant: {\"grant\":\"rt-N\"}",
        );
    };
    match page.gate.ask(ControlOp::RevokeGrant { grant }).await {
        Ok(ControlAnswer::Grant { item }) => {
            json_reply(StatusCode::OK, &json!({"revoked": item.id}))
        }
        Ok(_) => gate_error(&LinkError::Unexpected),
        Err(e) => gate_error(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_and_the_form_are_read_narrowly() {
        let uri: Uri = "/api/updates?x=1&after=42".parse().unwrap();
        assert_eq!(after_of(&uri), Some(42));
        let uri: Uri = "/api/updates?after=-1".parse().unwrap();
        assert_eq!(after_of(&uri), None);
        assert_eq!(form_token(b"token=abc&x=1").as_deref(), Some("abc"));
        assert_eq!(form_token(b"tokens=abc"), None);
    }

    #[test]
    fn the_assets_are_in_the_binary_and_name_nothing_outside() {
        for text in [INDEX, LOGIN, SCRIPT, STYLE] {
            assert!(!text.contains("http://") && !text.contains("https://"));
            assert!(!text.contains("//cdn") && !text.contains("@import"));
        }
        assert!(INDEX.contains("{{CSRF}}"));
        // The page inserts what it shows as text, never as markup.
        assert!(!SCRIPT.contains("innerHTML") && !SCRIPT.contains("insertAdjacentHTML"));
        assert!(!SCRIPT.contains("eval("));
    }
}
