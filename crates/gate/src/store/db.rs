//! The SQL the store speaks, over either backend (docs/spec.md §6, "The store"): the embedded
//! SQLite file of one gate, or a PostgreSQL database shared by a fleet of replicas.
//!
//! [`Db`] is the one trait-like seam: every query of `store.rs` and `store/intent.rs` is
//! written once, in the SQL both dialects read (`?N` placeholders, which the PostgreSQL side
//! numbers `$N`; `INSERT … ON CONFLICT`; `RETURNING`), with [`V`] parameters and [`DbRow`]
//! columns, so the rules of the store (taint only rises, untrusted sticks, one-shot
//! approvals) exist once and the same tests run against both.
//!
//! What differs is kept here:
//! - **the write lock.** SQLite: `BEGIN IMMEDIATE` (the file's one writer). PostgreSQL:
//!   `BEGIN` then `pg_advisory_xact_lock(WRITE_LOCK)`, the fleet's one writer for the
//!   length of the transaction, so a read-then-write (a taint raise, a decision on a
//!   pending approval) is never interleaved with another replica's;
//! - **durability.** SQLite: WAL with `synchronous=FULL` (a count-only batch may relax it
//!   for one commit). PostgreSQL: the server's `synchronous_commit` (on by default): a
//!   `COMMIT` that returned is in the server's WAL on disk; the same count-only batch is
//!   relaxed the same way, `SET LOCAL synchronous_commit = off` for its one transaction
//!   (its commit is seen by every replica at once, but a crash of the server within
//!   moments of it may lose it, as a power cut may lose SQLite's `NORMAL` commit: only
//!   writes whose loss makes the gate refuse more are ever relaxed);
//! - **the schema version**: `PRAGMA user_version`, or the one row of `boxmaker_schema`;
//! - **a lost connection** (PostgreSQL restarted, the network cut): the statement fails,
//!   the caller fails closed, and the next use connects again (once; its failure is the
//!   error).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// The key of the advisory lock every PostgreSQL write transaction takes ("boxmakr" in
/// ASCII): one writer at a time across the fleet, as SQLite's `BEGIN IMMEDIATE` is on one
/// file.
pub const WRITE_LOCK: i64 = 0x0062_6f78_6d61_6b72;

/// How long connecting to PostgreSQL may take before the gate gives up (and fails closed).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one statement may run on PostgreSQL (a lock wait included) before it fails: a
/// replica whose store stalls decides nothing rather than holding every call.
pub const STATEMENT_TIMEOUT_MS: u64 = 10_000;

/// How long what a replica sent over TCP may stay unacknowledged before the connection is
/// given up (`TCP_USER_TIMEOUT`), and how soon an idle one (the approvals' `LISTEN`) is
/// probed: the statement timeout is the server's, and a server cut off by the network
/// (packets dropped, no reset) can enforce nothing — without these a call would wait on
/// the kernel's retransmissions, a quarter of an hour, instead of failing closed.
pub const TCP_USER_TIMEOUT: Duration = Duration::from_secs(15);
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_RETRIES: u32 = 3;

/// A failure of either backend.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error(transparent)]
    Lite(#[from] rusqlite::Error),
    #[error("{}", pg_text(.0))]
    Pg(#[from] postgres::Error),
    #[error("column {index} holds {found}, not the type the store reads there")]
    Column { index: usize, found: String },
    #[error("the query found no row")]
    NoRow,
    #[error("the connection to PostgreSQL is closed")]
    Closed,
}

/// A PostgreSQL error as one sentence: the server's own message where it sent one, else the
/// driver's with its causes (the driver's own text stops at "error connecting to server" or
/// "invalid configuration", which says nothing a person can act on).
fn pg_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{}: {} ({})", db.severity(), db.message(), db.code().code()),
        None if e.is_closed() => "the connection to PostgreSQL is closed".to_string(),
        None => {
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                let said = c.to_string();
                if said == "password missing" {
                    text.push_str(
                        ": the server asks for a password and none was given (set PGPASSWORD)",
                    );
                } else {
                    text.push_str(": ");
                    text.push_str(&said);
                }
                cause = c.source();
            }
            text
        }
    }
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum V {
    Null,
    I(i64),
    T(String),
}

/// What can be a parameter.
pub trait ToV {
    fn v(&self) -> V;
}

impl ToV for i64 {
    fn v(&self) -> V {
        V::I(*self)
    }
}
impl ToV for bool {
    fn v(&self) -> V {
        V::I(i64::from(*self))
    }
}
impl ToV for str {
    fn v(&self) -> V {
        V::T(self.to_string())
    }
}
impl ToV for String {
    fn v(&self) -> V {
        V::T(self.clone())
    }
}
impl<T: ToV + ?Sized> ToV for &T {
    fn v(&self) -> V {
        (**self).v()
    }
}
impl<T: ToV> ToV for Option<T> {
    fn v(&self) -> V {
        match self {
            None => V::Null,
            Some(t) => t.v(),
        }
    }
}

/// Parameters: `p![a, b, c]`.
macro_rules! p {
    ($($e:expr),* $(,)?) => {
        &[$($crate::store::db::ToV::v(&$e)),*][..]
    };
}
pub(crate) use p;

impl rusqlite::ToSql for V {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(match self {
            V::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            V::I(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            V::T(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
        })
    }
}

impl ToSql for V {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            V::Null => Ok(IsNull::Yes),
            V::I(i) if *ty == Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
            V::I(i) if *ty == Type::BOOL => (*i != 0).to_sql(ty, out),
            V::I(i) => i.to_sql(ty, out),
            V::T(s) => s.as_str().to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        [
            Type::INT8,
            Type::INT4,
            Type::BOOL,
            Type::TEXT,
            Type::VARCHAR,
        ]
        .contains(ty)
    }

    to_sql_checked!();
}

/// What a column can be read as: both backends' conversions.
pub trait Col: rusqlite::types::FromSql + for<'a> postgres::types::FromSql<'a> {}
impl<T> Col for T where T: rusqlite::types::FromSql + for<'a> postgres::types::FromSql<'a> {}

/// One row of an answer.
pub enum DbRow<'a> {
    Lite(&'a rusqlite::Row<'a>),
    Pg(&'a postgres::Row),
}

impl DbRow<'_> {
    pub fn get<T: Col>(&self, index: usize) -> Result<T, DbError> {
        match self {
            DbRow::Lite(r) => Ok(r.get(index)?),
            DbRow::Pg(r) => r.try_get(index).map_err(|_| DbError::Column {
                index,
                found: r
                    .columns()
                    .get(index)
                    .map_or_else(|| "nothing".to_string(), |c| c.type_().to_string()),
            }),
        }
    }
}

/// Where a PostgreSQL store connects, and how (never a password: that comes from
/// `PGPASSWORD`, at connect time).
#[derive(Clone)]
pub struct PgTarget {
    pub config: postgres::Config,
    /// What errors name: the URL without any password.
    pub shown: String,
    /// Whether to speak TLS (`sslmode=require` or `prefer`; never on a Unix socket).
    pub tls: bool,
}

impl fmt::Debug for PgTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.shown)
    }
}

impl PgTarget {
    /// The target `url` names, completed from the usual libpq variables where the URL is
    /// silent (`PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGSSLMODE`) and with the password
    /// of `PGPASSWORD` (the only place a password comes from: never the URL).
    pub fn from_url(url: &str) -> Result<PgTarget, String> {
        use std::str::FromStr;
        let mut config = postgres::Config::from_str(url).map_err(|e| e.to_string())?;
        if config.get_password().is_some() {
            return Err("the URL carries a password; give it in PGPASSWORD".into());
        }
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if config.get_hosts().is_empty() {
            config.host(env("PGHOST").as_deref().unwrap_or("/var/run/postgresql"));
        }
        if let Some(port) = env("PGPORT").and_then(|p| p.parse().ok())
            && config.get_ports().is_empty()
        {
            config.port(port);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .unwrap_or_else(|| "boxmaker".into());
            config.user(&user);
        }
        if config.get_dbname().is_none()
            && let Some(db) = env("PGDATABASE")
        {
            config.dbname(&db);
        }
        if !url.contains("sslmode=") {
            match env("PGSSLMODE").as_deref() {
                Some("disable") => {
                    config.ssl_mode(postgres::config::SslMode::Disable);
                }
                Some("require" | "verify-ca" | "verify-full") => {
                    config.ssl_mode(postgres::config::SslMode::Require);
                }
                _ => {}
            }
        }
        if let Some(pw) = env("PGPASSWORD") {
            config.password(pw);
        }
        let unix = config
            .get_hosts()
            .iter()
            .all(|h| matches!(h, postgres::config::Host::Unix(_)));
        let tls = !unix && config.get_ssl_mode() != postgres::config::SslMode::Disable;
        Ok(PgTarget {
            config,
            shown: url.to_string(),
            tls,
        })
    }
}

/// A PostgreSQL connection with its prepared statements.
pub struct PgConn {
    target: PgTarget,
    client: Option<postgres::Client>,
    stmts: HashMap<String, postgres::Statement>,
    /// Inside a transaction: a lost connection is then the transaction's failure, never a
    /// silent reconnect half-way through it.
    in_tx: bool,
    /// The next write transactions commit without waiting for the WAL's flush
    /// ([`Db::set_sync`]).
    relaxed: bool,
}

impl PgConn {
    pub fn connect(target: PgTarget) -> Result<PgConn, DbError> {
        let client = connect(&target)?;
        Ok(PgConn {
            target,
            client: Some(client),
            stmts: HashMap::new(),
            in_tx: false,
            relaxed: false,
        })
    }

    /// `LISTEN channel` on this connection.
    pub fn listen(&mut self, channel: &str) -> Result<(), DbError> {
        self.batch(&format!("LISTEN {channel}"))
    }

    /// Waits up to `wait` for notifications; how many arrived (without reconnecting: a lost
    /// connection is an error, and the listener connects anew).
    pub fn wait_notifications(&mut self, wait: Duration) -> Result<usize, DbError> {
        let client = self.client.as_mut().ok_or(DbError::Closed)?;
        if client.is_closed() {
            return Err(DbError::Closed);
        }
        use postgres::fallible_iterator::FallibleIterator;
        let mut notes = client.notifications();
        let mut n = 0;
        if notes.timeout_iter(wait).next()?.is_some() {
            n += 1;
            // What else is queued, without waiting again.
            while notes.iter().next()?.is_some() {
                n += 1;
            }
        }
        Ok(n)
    }

    fn client(&mut self) -> Result<&mut postgres::Client, DbError> {
        let closed = self.client.as_ref().is_none_or(postgres::Client::is_closed);
        if closed && !self.in_tx {
            self.stmts.clear();
            self.client = None;
            self.client = Some(connect(&self.target)?);
        }
        self.client.as_mut().ok_or(DbError::Closed)
    }

    fn stmt(&mut self, sql: &str) -> Result<postgres::Statement, DbError> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let text = numbered(sql);
        let r = self.client()?.prepare(&text);
        let s = self.forget_if_lost(r)?;
        self.stmts.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    fn params(params: &[V]) -> Vec<&(dyn ToSql + Sync)> {
        params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
    }

    fn query(&mut self, sql: &str, params: &[V]) -> Result<Vec<postgres::Row>, DbError> {
        let stmt = self.stmt(sql)?;
        let ps = Self::params(params);
        let r = self.client()?.query(&stmt, &ps);
        self.forget_if_lost(r)
    }

    fn execute(&mut self, sql: &str, params: &[V]) -> Result<u64, DbError> {
        let stmt = self.stmt(sql)?;
        let ps = Self::params(params);
        let r = self.client()?.execute(&stmt, &ps);
        self.forget_if_lost(r)
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        let r = self.client()?.batch_execute(sql);
        self.forget_if_lost(r)
    }

    /// A statement that failed because the connection is gone leaves no prepared
    /// statement worth keeping.
    fn forget_if_lost<T>(&mut self, r: Result<T, postgres::Error>) -> Result<T, DbError> {
        if r.is_err() && self.client.as_ref().is_none_or(postgres::Client::is_closed) {
            self.stmts.clear();
        }
        Ok(r?)
    }
}

fn connect(target: &PgTarget) -> Result<postgres::Client, postgres::Error> {
    let mut config = target.config.clone();
    config.connect_timeout(CONNECT_TIMEOUT);
    config.tcp_user_timeout(TCP_USER_TIMEOUT);
    config.keepalives(true);
    config.keepalives_idle(KEEPALIVE_IDLE);
    config.keepalives_interval(KEEPALIVE_INTERVAL);
    config.keepalives_retries(KEEPALIVE_RETRIES);
    config.options(&format!("-c statement_timeout={STATEMENT_TIMEOUT_MS}"));
    let mut client = if target.tls {
        config.connect(tls())?
    } else {
        config.connect(postgres::NoTls)?
    };
    client.batch_execute("SET default_transaction_isolation = 'read committed'")?;
    Ok(client)
}

/// TLS to PostgreSQL: rustls with the Mozilla roots, and the roots in `PGSSLROOTCERT` (a PEM
/// file) when set, for a server whose certificate a private CA signed.
fn tls() -> tokio_postgres_rustls::MakeRustlsConnect {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = std::env::var_os("PGSSLROOTCERT") {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        if let Ok(certs) = CertificateDer::pem_file_iter(path) {
            for c in certs.flatten() {
                let _ = roots.add(c);
            }
        }
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
        .unwrap_or_else(|_| {
            rustls::ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        });
    tokio_postgres_rustls::MakeRustlsConnect::new(config)
}

/// `?N` placeholders numbered as PostgreSQL writes them (`$N`), outside quoted text.
pub fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quoted = false;
    for c in sql.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                out.push(c);
            }
            '?' if !quoted => out.push('$'),
            _ => out.push(c),
        }
    }
    out
}

/// A connection to the store's database, either kind.
pub enum Db {
    Lite(rusqlite::Connection),
    Pg(Box<RefCell<PgConn>>),
}

impl fmt::Debug for Db {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Db::Lite(_) => f.write_str("sqlite"),
            Db::Pg(c) => match c.try_borrow() {
                Ok(c) => write!(f, "postgres {}", c.target.shown),
                Err(_) => f.write_str("postgres"),
            },
        }
    }
}

impl Db {
    /// Every row `sql` answers, each read by `f`.
    pub fn query<T>(
        &self,
        sql: &str,
        params: &[V],
        mut f: impl FnMut(&DbRow<'_>) -> Result<T, DbError>,
    ) -> Result<Vec<T>, DbError> {
        match self {
            Db::Lite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(f(&DbRow::Lite(r))?);
                }
                Ok(out)
            }
            Db::Pg(c) => {
                let rows = c.borrow_mut().query(sql, params)?;
                rows.iter().map(|r| f(&DbRow::Pg(r))).collect()
            }
        }
    }

    /// The first row `sql` answers, if any.
    pub fn query_opt<T>(
        &self,
        sql: &str,
        params: &[V],
        mut f: impl FnMut(&DbRow<'_>) -> Result<T, DbError>,
    ) -> Result<Option<T>, DbError> {
        match self {
            Db::Lite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
                match rows.next()? {
                    Some(r) => Ok(Some(f(&DbRow::Lite(r))?)),
                    None => Ok(None),
                }
            }
            Db::Pg(c) => {
                let rows = c.borrow_mut().query(sql, params)?;
                rows.first().map(|r| f(&DbRow::Pg(r))).transpose()
            }
        }
    }

    /// The one value of the first row (a count, a maximum).
    pub fn value<T: Col>(&self, sql: &str, params: &[V]) -> Result<T, DbError> {
        self.query_opt(sql, params, |r| r.get(0))?
            .ok_or(DbError::NoRow)
    }

    /// Runs one statement; how many rows it changed.
    pub fn execute(&self, sql: &str, params: &[V]) -> Result<u64, DbError> {
        match self {
            Db::Lite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let n = stmt.execute(rusqlite::params_from_iter(params.iter()))?;
                Ok(u64::try_from(n).unwrap_or(u64::MAX))
            }
            Db::Pg(c) => Ok(c.borrow_mut().execute(sql, params)?),
        }
    }

    /// Runs statements without parameters.
    pub fn batch(&self, sql: &str) -> Result<(), DbError> {
        match self {
            Db::Lite(conn) => Ok(conn.execute_batch(sql)?),
            Db::Pg(c) => Ok(c.borrow_mut().batch(sql)?),
        }
    }

    /// Starts a write transaction holding the write lock from its first statement.
    pub fn begin_write(&self) -> Result<Tx<'_>, DbError> {
        match self {
            Db::Lite(conn) => conn.execute_batch("BEGIN IMMEDIATE")?,
            Db::Pg(c) => {
                let mut c = c.borrow_mut();
                let relax = if c.relaxed {
                    "SET LOCAL synchronous_commit = off; "
                } else {
                    ""
                };
                c.batch(&format!(
                    "BEGIN; {relax}SELECT pg_advisory_xact_lock({WRITE_LOCK})"
                ))?;
                c.in_tx = true;
            }
        }
        Ok(Tx {
            db: self,
            done: false,
        })
    }

    /// The SQLite connection, for the store's own unit tests.
    #[cfg(test)]
    #[allow(clippy::panic)]
    pub fn lite(&self) -> &rusqlite::Connection {
        match self {
            Db::Lite(c) => c,
            Db::Pg(_) => panic!("not an SQLite store"),
        }
    }

    /// Where a PostgreSQL store connects.
    pub fn target(&self) -> Option<PgTarget> {
        match self {
            Db::Lite(_) => None,
            Db::Pg(c) => c.try_borrow().ok().map(|c| c.target.clone()),
        }
    }

    /// Whether this is the shared (PostgreSQL) kind.
    pub fn is_shared(&self) -> bool {
        matches!(self, Db::Pg(_))
    }

    /// How the next commits are synced: SQLite's `synchronous` (`FULL` or `NORMAL`);
    /// PostgreSQL's `synchronous_commit` for each write transaction begun until it is set
    /// back (`on`, the server's own setting, or `off`).
    pub fn set_sync(&self, full: bool) -> Result<(), DbError> {
        match self {
            Db::Lite(conn) => {
                Ok(conn.pragma_update(None, "synchronous", if full { "FULL" } else { "NORMAL" })?)
            }
            Db::Pg(c) => {
                c.borrow_mut().relaxed = !full;
                Ok(())
            }
        }
    }

    fn end(&self, sql: &str) -> Result<(), DbError> {
        match self {
            Db::Lite(conn) => Ok(conn.execute_batch(sql)?),
            Db::Pg(c) => {
                let mut c = c.borrow_mut();
                let r = c.batch(sql);
                if r.is_err() && c.client.as_ref().is_some_and(|k| !k.is_closed()) {
                    // A batch cut short before its `COMMIT` would leave the connection in
                    // the transaction: end it (outside one, a `ROLLBACK` only warns).
                    let _ = c.batch("ROLLBACK");
                }
                c.in_tx = false;
                Ok(r?)
            }
        }
    }
}

/// A write transaction: [`Tx::commit`] it, or it rolls back when dropped.
pub struct Tx<'a> {
    db: &'a Db,
    done: bool,
}

impl std::ops::Deref for Tx<'_> {
    type Target = Db;
    fn deref(&self) -> &Db {
        self.db
    }
}

impl Tx<'_> {
    pub fn commit(mut self) -> Result<(), DbError> {
        self.done = true;
        self.db.end("COMMIT")
    }

    /// Commits, waiting for the WAL's flush only when `full` (PostgreSQL: `SET LOCAL
    /// synchronous_commit = off` sent with the `COMMIT`, for this transaction alone, chosen
    /// from what it wrote under the write lock). SQLite cannot change its `synchronous`
    /// inside a transaction: there the choice is [`Db::set_sync`] before it begins, and
    /// this is [`Tx::commit`].
    pub fn commit_synced(mut self, full: bool) -> Result<(), DbError> {
        self.done = true;
        match self.db {
            Db::Pg(_) if !full => self.db.end("SET LOCAL synchronous_commit = off; COMMIT"),
            _ => self.db.end("COMMIT"),
        }
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.db.end("ROLLBACK");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A count-only commit is relaxed for its own transaction only: the next write
    /// transaction, and every read outside one, waits for the WAL's flush again.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn a_relaxed_commit_is_relaxed_for_its_own_transaction_only() {
        let pg = testkit::pg::Pg::start();
        let target = PgTarget::from_url(&pg.database("relax")).unwrap();
        let db = Db::Pg(Box::new(RefCell::new(PgConn::connect(target).unwrap())));
        let setting = |db: &Db| -> String {
            db.value("SELECT current_setting('synchronous_commit')", &[])
                .unwrap()
        };
        assert_eq!(setting(&db), "on");
        db.set_sync(false).unwrap();
        let tx = db.begin_write().unwrap();
        assert_eq!(setting(&tx), "off");
        tx.commit().unwrap();
        assert_eq!(setting(&db), "on", "SET LOCAL outlived its transaction");
        db.set_sync(true).unwrap();
        let tx = db.begin_write().unwrap();
        assert_eq!(setting(&tx), "on");
        drop(tx);
    }

    /// A connection that fails says why, not only the driver's "error connecting to
    /// server".
    #[test]
    fn a_store_that_cannot_be_reached_says_why() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let url = format!("postgres://u@/b?host={}", dir.path().join("none").display());
        let target = PgTarget::from_url(&url).unwrap_or_else(|e| panic!("{url}: {e}"));
        let e = match PgConn::connect(target) {
            Ok(_) => panic!("connected to a socket that does not exist"),
            Err(e) => e.to_string(),
        };
        assert!(e.starts_with("error connecting to server: "), "{e}");
        assert!(e.contains("No such file or directory"), "{e}");
    }

    /// A password never comes from the store's URL, in any form the driver reads one:
    /// whatever the config's own check misses (a percent-encoded key) is refused here, at
    /// connect time, without the password in the error.
    #[test]
    fn a_url_carrying_a_password_in_any_form_is_refused() {
        for url in [
            "postgres://u:hunter2@db.internal/b",
            "postgres://u@db.internal/b?password=hunter2",
            "postgres://u@db.internal/b?pass%77ord=hunter2",
            "postgres://u:@db.internal/b?pass%77ord=hunter2",
        ] {
            match PgTarget::from_url(url) {
                Ok(t) => panic!("{url} was taken, as {}", t.shown),
                Err(e) => assert!(!e.contains("hunter2"), "{url}: {e}"),
            }
        }
        assert!(PgTarget::from_url("postgres://u@db.internal/b?sslmode=require").is_ok());
    }

    #[test]
    fn placeholders_are_numbered_outside_quotes() {
        assert_eq!(
            numbered("SELECT '?1' FROM t WHERE a = ?1 AND b = ?12"),
            "SELECT '?1' FROM t WHERE a = $1 AND b = $12"
        );
    }
}
