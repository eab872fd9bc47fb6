//! Who may use the page, and from where.
//!
//! - **The login token**: 32 random bytes in hex, made by the caller, printed once and kept
//!   `0600` in the state directory (`approvals.token`). `POST /login` with it gives a login:
//!   an `HttpOnly`, `SameSite=Strict` cookie naming it, and a CSRF token the page carries in
//!   its markup. Tokens are compared in constant time.
//! - **State changes** (`POST`) need the cookie, the login's CSRF token in `X-CSRF-Token`,
//!   and an `Origin` that is this page's own (`http://` and the `Host` it was reached by);
//!   a browser always sends `Origin` on a `POST`, so another site — another port of
//!   `localhost` included — cannot act through a person's login.
//! - **`Host`** must name this server (the address it listens on, or `localhost`, `127.0.0.1`
//!   or `[::1]` with its port): a page of another name that resolves to this machine (DNS
//!   rebinding) gets nothing. Reads (`GET`) need the cookie; one that carries an `Origin`
//!   must carry this page's own.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The cookie that names a login.
pub const COOKIE: &str = "boxmaker_approvals";

/// How long a login lasts.
pub const LOGIN_TTL: Duration = Duration::from_secs(12 * 3600);

/// The most logins kept at once (the oldest goes first).
pub const MAX_LOGINS: usize = 32;

/// 32 random bytes as 64 hex digits.
pub fn random_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// `a == b` in time that depends only on the lengths.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A login: its CSRF token and when it began.
#[derive(Debug, Clone)]
struct Login {
    csrf: String,
    since: Instant,
}

/// The login token and the logins it gave.
#[derive(Debug)]
pub struct Auth {
    token: String,
    logins: Mutex<HashMap<String, Login>>,
    hosts: Vec<String>,
}

impl Auth {
    /// Logins for `token`, on a server listening at `addr`.
    pub fn new(token: String, addr: SocketAddr) -> Auth {
        let port = addr.port();
        let mut hosts = vec![
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ];
        let own = match addr {
            SocketAddr::V4(a) => format!("{}:{port}", a.ip()),
            SocketAddr::V6(a) => format!("[{}]:{port}", a.ip()),
        };
        if !hosts.contains(&own) {
            hosts.push(own);
        }
        Auth {
            token,
            logins: Mutex::new(HashMap::new()),
            hosts,
        }
    }

    /// Whether `host` (a `Host` header) names this server.
    pub fn host_ok(&self, host: Option<&str>) -> bool {
        host.is_some_and(|h| self.hosts.iter().any(|ok| ok.eq_ignore_ascii_case(h)))
    }

    /// Whether `origin` is this page's own, reached at `host`.
    pub fn origin_ok(&self, origin: Option<&str>, host: Option<&str>) -> bool {
        match (origin, host) {
            (Some(o), Some(h)) if self.host_ok(Some(h)) => {
                o.eq_ignore_ascii_case(&format!("http://{h}"))
            }
            _ => false,
        }
    }

    /// A new login for the right token: its cookie value and its CSRF token.
    pub fn login(&self, given: &str) -> Option<(String, String)> {
        if !same(given.trim().as_bytes(), self.token.as_bytes()) {
            return None;
        }
        let cookie = random_token().ok()?;
        let csrf = random_token().ok()?;
        let mut logins = self
            .logins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        logins.retain(|_, l| l.since.elapsed() < LOGIN_TTL);
        while logins.len() >= MAX_LOGINS {
            let oldest = logins
                .iter()
                .min_by_key(|(_, l)| l.since)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => logins.remove(&k),
                None => break,
            };
        }
        logins.insert(
            cookie.clone(),
            Login {
                csrf: csrf.clone(),
                since: Instant::now(),
            },
        );
        Some((cookie, csrf))
    }

    /// The CSRF token of the login a `Cookie` header names, if it names a live one.
    pub fn csrf_of(&self, cookie_header: Option<&str>) -> Option<String> {
        let value = cookie_value(cookie_header?)?;
        let logins = self
            .logins
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        logins
            .iter()
            .find(|(k, l)| same(k.as_bytes(), value.as_bytes()) && l.since.elapsed() < LOGIN_TTL)
            .map(|(_, l)| l.csrf.clone())
    }

    /// Ends the login a `Cookie` header names.
    pub fn logout(&self, cookie_header: Option<&str>) {
        if let Some(value) = cookie_header.and_then(cookie_value) {
            self.logins
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .remove(value);
        }
    }
}

/// The value of our cookie in a `Cookie` header.
fn cookie_value(header: &str) -> Option<&str> {
    header.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        (name == COOKIE).then_some(value)
    })
}

/// The `Set-Cookie` value for a login.
pub fn set_cookie(value: &str) -> String {
    format!(
        "{COOKIE}={value}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        LOGIN_TTL.as_secs()
    )
}

/// The `Set-Cookie` value that ends a login in the browser.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth() -> Auth {
        Auth::new("t0k3n".into(), "127.0.0.1:8700".parse().unwrap())
    }

    #[test]
    fn only_this_servers_names_are_hosts_and_origins() {
        let a = auth();
        for ok in [
            "127.0.0.1:8700",
            "localhost:8700",
            "LOCALHOST:8700",
            "[::1]:8700",
        ] {
            assert!(a.host_ok(Some(ok)), "{ok}");
        }
        for bad in [
            None,
            Some("evil.example:8700"),
            Some("127.0.0.1:8701"),
            Some("127.0.0.1"),
            Some("localhost.evil.example:8700"),
        ] {
            assert!(!a.host_ok(bad), "{bad:?}");
        }
        let h = Some("127.0.0.1:8700");
        assert!(a.origin_ok(Some("http://127.0.0.1:8700"), h));
        for bad in [
            None,
            Some("http://localhost:8700"),
            Some("http://127.0.0.1:9999"),
            Some("https://127.0.0.1:8700"),
            Some("null"),
            Some("http://evil.example"),
        ] {
            assert!(!a.origin_ok(bad, h), "{bad:?}");
        }
        assert!(!a.origin_ok(Some("http://evil.example:8700"), Some("evil.example:8700")));
    }

    #[test]
    fn a_login_needs_the_token_and_its_cookie_names_its_csrf_token() {
        let a = auth();
        assert!(a.login("wrong").is_none());
        assert!(a.login("").is_none());
        let (cookie, csrf) = a.login("t0k3n").unwrap();
        assert_eq!(cookie.len(), 64);
        let header = format!("other=1; {COOKIE}={cookie}");
        assert_eq!(a.csrf_of(Some(&header)), Some(csrf));
        assert_eq!(a.csrf_of(Some(&format!("{COOKIE}=x{cookie}"))), None);
        assert_eq!(a.csrf_of(None), None);
        a.logout(Some(&header));
        assert_eq!(a.csrf_of(Some(&header)), None);
        assert!(set_cookie(&cookie).contains("HttpOnly; SameSite=Strict"));
    }

    #[test]
    fn logins_are_bounded() {
        let a = auth();
        let first = a.login("t0k3n").unwrap();
        for _ in 0..MAX_LOGINS {
            a.login("t0k3n").unwrap();
        }
        assert_eq!(a.csrf_of(Some(&format!("{COOKIE}={}", first.0))), None);
    }
}
