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

use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// The key of the advisory lock every PostgreSQL write transaction takes ("boxmakr" in
/// ASCII): one writer at a time across the fleet, as SQLite's `BEGIN IMMEDIATE` is on one
/// file.
pub const WRITE_LOCK: i64 = 0x0062_6f78_6d61_6b72;

/// How long connecting to PostgreSQL may take before the gate gives up (and fails closed).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one statement may run on PostgreSQL (a lock wait included) before it fails: a
/// replica whose store stalls decides nothing rather than holding every call.
pub const STATEMENT_TIMEOUT_MS: u64 = 10_000;

/// How long a replica waits for PostgreSQL to answer — connecting, or one statement — before
/// it gives the connection up and fails closed. The server's own `statement_timeout` (above)
/// ends a slow statement first and says why; this is for a server that answers nothing at
/// all (paused, wedged, its machine frozen) while its kernel still acknowledges every
/// packet, which neither the statement timeout nor `TCP_USER_TIMEOUT` can catch.
pub const DEADLINE: Duration = Duration::from_secs(15);

/// How long after a wait past the [`DEADLINE`] a replica refuses at once instead of trying
/// the server again: the calls queued behind the one that waited (the replica's store is
/// one connection, taken in turn) are refused together, not each after a deadline of its
/// own, and a server that stays silent is tried once every deadline and this.
pub const HOLD_OFF: Duration = Duration::from_secs(3);

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
    Pg(#[from] tokio_postgres::Error),
    #[error("column {index} holds {found}, not the type the store reads there")]
    Column { index: usize, found: String },
    #[error("the query found no row")]
    NoRow,
    #[error("the connection to PostgreSQL is closed")]
    Closed,
    #[error("could not start the PostgreSQL client's runtime: {0}")]
    Runtime(std::io::Error),
    #[error(
        "PostgreSQL did not answer within {} s, so the connection was given up (is the server paused, wedged or overloaded?)",
        .after.as_secs()
    )]
    Deadline { after: Duration },
    #[error(
        "PostgreSQL did not answer within {} s a moment ago, so the replica refuses until it tries again in {} ms (is the server paused, wedged or overloaded?)",
        .after.as_secs(),
        .retry_in.as_millis()
    )]
    HeldOff { after: Duration, retry_in: Duration },
}

/// A PostgreSQL error as one sentence: the server's own message where it sent one, else the
/// driver's with its causes (the driver's own text stops at "error connecting to server" or
/// "invalid configuration", which says nothing a person can act on).
fn pg_text(e: &tokio_postgres::Error) -> String {
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
        out: &mut tokio_postgres::types::private::BytesMut,
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
pub trait Col: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a> {}
impl<T> Col for T where T: rusqlite::types::FromSql + for<'a> tokio_postgres::types::FromSql<'a> {}

/// One row of an answer.
pub enum DbRow<'a> {
    Lite(&'a rusqlite::Row<'a>),
    Pg(&'a tokio_postgres::Row),
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
    pub config: tokio_postgres::Config,
    /// What errors name: the URL without any password.
    pub shown: String,
    /// Whether to speak TLS (`sslmode=require` or `prefer`; never on a Unix socket).
    pub tls: bool,
    /// How long connecting, or one statement, may wait for the server's answer before the
    /// connection is given up ([`DEADLINE`]; shorter in tests).
    pub deadline: Duration,
    /// How long after that it is not tried again ([`HOLD_OFF`]).
    pub hold_off: Duration,
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
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| e.to_string())?;
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
                    config.ssl_mode(tokio_postgres::config::SslMode::Disable);
                }
                Some("require" | "verify-ca" | "verify-full") => {
                    config.ssl_mode(tokio_postgres::config::SslMode::Require);
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
            .all(|h| matches!(h, tokio_postgres::config::Host::Unix(_)));
        let tls = !unix && config.get_ssl_mode() != tokio_postgres::config::SslMode::Disable;
        Ok(PgTarget {
            config,
            shown: url.to_string(),
            tls,
            deadline: DEADLINE,
            hold_off: HOLD_OFF,
        })
    }
}

/// A PostgreSQL connection with its prepared statements.
///
/// Driven by a runtime of its own (tokio, one thread: the caller's, only while it waits), so
/// every wait — connecting, a statement, the notifications — has a deadline the server's
/// silence cannot stretch: past it the connection is dropped and the caller gets
/// [`DbError::Deadline`].
pub struct PgConn {
    target: PgTarget,
    rt: tokio::runtime::Runtime,
    conn: Option<Live>,
    stmts: HashMap<String, tokio_postgres::Statement>,
    /// Inside a transaction: a lost connection is then the transaction's failure, never a
    /// silent reconnect half-way through it.
    in_tx: bool,
    /// When a wait on the server last passed the deadline ([`HOLD_OFF`]).
    late_at: Option<std::time::Instant>,
    /// The next write transactions commit without waiting for the WAL's flush
    /// ([`Db::set_sync`]).
    relaxed: bool,
}

/// A connection the runtime drives: the client, the task reading the server (ended when
/// the connection is given up), and the notifications that task heard.
struct Live {
    client: tokio_postgres::Client,
    driver: tokio::task::JoinHandle<()>,
    notes: tokio::sync::mpsc::UnboundedReceiver<()>,
}

impl Drop for Live {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// A wait cut short, or the driver's failure.
enum Waited {
    Late,
    Pg(tokio_postgres::Error),
}

impl PgConn {
    pub fn connect(target: PgTarget) -> Result<PgConn, DbError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(DbError::Runtime)?;
        let conn = connect(&rt, &target)?;
        Ok(PgConn {
            target,
            rt,
            conn: Some(conn),
            stmts: HashMap::new(),
            in_tx: false,
            relaxed: false,
            late_at: None,
        })
    }

    /// `LISTEN channel` on this connection.
    pub fn listen(&mut self, channel: &str) -> Result<(), DbError> {
        self.batch(&format!("LISTEN {channel}"))
    }

    /// Waits up to `wait` for notifications; how many arrived (without reconnecting: a lost
    /// connection is an error, and the listener connects anew).
    pub fn wait_notifications(&mut self, wait: Duration) -> Result<usize, DbError> {
        let live = self.conn.as_mut().ok_or(DbError::Closed)?;
        if live.client.is_closed() {
            return Err(DbError::Closed);
        }
        let first = self
            .rt
            .block_on(async { tokio::time::timeout(wait, live.notes.recv()).await });
        match first {
            Err(_) => Ok(0),
            // The driver ended: the connection is gone.
            Ok(None) => Err(DbError::Closed),
            Ok(Some(())) => {
                let mut n = 1;
                // What else is queued, without waiting again.
                while live.notes.try_recv().is_ok() {
                    n += 1;
                }
                Ok(n)
            }
        }
    }

    /// The live connection, connecting anew (outside a transaction) when it was lost —
    /// unless the server left a wait unanswered less than the hold-off ago: then refused at
    /// once, saying so.
    fn live(&mut self) -> Result<&tokio_postgres::Client, DbError> {
        let closed = self.conn.as_ref().is_none_or(|c| c.client.is_closed());
        if closed && !self.in_tx {
            self.stmts.clear();
            self.conn = None;
            if let Some(at) = self.late_at {
                let since = at.elapsed();
                if since < self.target.hold_off {
                    return Err(DbError::HeldOff {
                        after: self.target.deadline,
                        retry_in: self.target.hold_off - since,
                    });
                }
            }
            match connect(&self.rt, &self.target) {
                Ok(live) => {
                    self.late_at = None;
                    self.conn = Some(live);
                }
                Err(e) => {
                    if matches!(e, DbError::Deadline { .. }) {
                        self.late_at = Some(std::time::Instant::now());
                    }
                    return Err(e);
                }
            }
        }
        self.conn.as_ref().map(|c| &c.client).ok_or(DbError::Closed)
    }

    /// What a wait on the live connection came to: a server that did not answer within the
    /// deadline loses its connection (so nothing it sends later is taken for the answer to
    /// another statement); a statement that failed because the connection is gone leaves
    /// no prepared statement worth keeping.
    fn settle<T>(&mut self, r: Result<T, Waited>) -> Result<T, DbError> {
        match r {
            Ok(t) => Ok(t),
            Err(Waited::Late) => {
                self.conn = None;
                self.stmts.clear();
                self.late_at = Some(std::time::Instant::now());
                Err(DbError::Deadline {
                    after: self.target.deadline,
                })
            }
            Err(Waited::Pg(e)) => {
                if self.conn.as_ref().is_none_or(|c| c.client.is_closed()) {
                    self.stmts.clear();
                }
                Err(e.into())
            }
        }
    }

    fn stmt(&mut self, sql: &str) -> Result<tokio_postgres::Statement, DbError> {
        if let Some(s) = self.stmts.get(sql) {
            return Ok(s.clone());
        }
        let text = numbered(sql);
        let deadline = self.target.deadline;
        self.live()?;
        let client = &self.conn.as_ref().ok_or(DbError::Closed)?.client;
        let r = within(&self.rt, deadline, client.prepare(&text));
        let s = self.settle(r)?;
        self.stmts.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    fn params(params: &[V]) -> Vec<&(dyn ToSql + Sync)> {
        params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
    }

    fn query(&mut self, sql: &str, params: &[V]) -> Result<Vec<tokio_postgres::Row>, DbError> {
        let stmt = self.stmt(sql)?;
        let ps = Self::params(params);
        let deadline = self.target.deadline;
        self.live()?;
        let client = &self.conn.as_ref().ok_or(DbError::Closed)?.client;
        let r = within(&self.rt, deadline, client.query(&stmt, &ps));
        self.settle(r)
    }

    fn execute(&mut self, sql: &str, params: &[V]) -> Result<u64, DbError> {
        let stmt = self.stmt(sql)?;
        let ps = Self::params(params);
        let deadline = self.target.deadline;
        self.live()?;
        let client = &self.conn.as_ref().ok_or(DbError::Closed)?.client;
        let r = within(&self.rt, deadline, client.execute(&stmt, &ps));
        self.settle(r)
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        let deadline = self.target.deadline;
        self.live()?;
        let client = &self.conn.as_ref().ok_or(DbError::Closed)?.client;
        let r = within(&self.rt, deadline, client.batch_execute(sql));
        self.settle(r)
    }

    /// Whether the connection is there and not known to be lost.
    fn is_open(&self) -> bool {
        self.conn.as_ref().is_some_and(|c| !c.client.is_closed())
    }
}

/// `fut`, waited for on `rt` for at most `deadline`.
fn within<T>(
    rt: &tokio::runtime::Runtime,
    deadline: Duration,
    fut: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
) -> Result<T, Waited> {
    match rt.block_on(async { tokio::time::timeout(deadline, fut).await }) {
        Ok(r) => r.map_err(Waited::Pg),
        Err(_) => Err(Waited::Late),
    }
}

/// A new connection on `rt`: the socket, TLS, authentication and the session's setting, all
/// within the target's deadline.
fn connect(rt: &tokio::runtime::Runtime, target: &PgTarget) -> Result<Live, DbError> {
    let mut config = target.config.clone();
    config.connect_timeout(CONNECT_TIMEOUT);
    config.tcp_user_timeout(TCP_USER_TIMEOUT);
    config.keepalives(true);
    config.keepalives_idle(KEEPALIVE_IDLE);
    config.keepalives_interval(KEEPALIVE_INTERVAL);
    config.keepalives_retries(KEEPALIVE_RETRIES);
    config.options(format!("-c statement_timeout={STATEMENT_TIMEOUT_MS}"));
    let handshake = async {
        let (client, driver, notes) = if target.tls {
            let (client, conn) = config.connect(tls()).await?;
            let (driver, notes) = drive(conn);
            (client, driver, notes)
        } else {
            let (client, conn) = config.connect(tokio_postgres::NoTls).await?;
            let (driver, notes) = drive(conn);
            (client, driver, notes)
        };
        let live = Live {
            client,
            driver,
            notes,
        };
        live.client
            .batch_execute("SET default_transaction_isolation = 'read committed'")
            .await?;
        Ok(live)
    };
    match within(rt, target.deadline, handshake) {
        Ok(live) => Ok(live),
        Err(Waited::Late) => Err(DbError::Deadline {
            after: target.deadline,
        }),
        Err(Waited::Pg(e)) => Err(e.into()),
    }
}

/// Spawns the task that reads what the server sends on `conn` (answers to the client's
/// statements, and notifications, which it counts into the channel it returns), on the
/// runtime the caller is inside. It runs only while a caller waits on that runtime.
fn drive<S, T>(
    mut conn: tokio_postgres::Connection<S, T>,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let driver = tokio::spawn(async move {
        while let Some(m) = std::future::poll_fn(|cx| conn.poll_message(cx)).await {
            match m {
                Ok(tokio_postgres::AsyncMessage::Notification(_)) => {
                    let _ = tx.send(());
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    });
    (driver, rx)
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
                if r.is_err() && c.is_open() {
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

    /// A server that holds the connection open and answers nothing (paused, wedged: its
    /// kernel still acknowledges every packet, so neither the server's statement timeout
    /// nor TCP's can fire) is given up within the deadline, saying so; a new connection to
    /// it too; and once it answers again the store goes on, connecting anew.
    #[test]
    #[allow(clippy::unwrap_used)]
    fn a_paused_server_is_given_up_within_the_deadline_and_used_again_after() {
        let pg = testkit::pg::Pg::start();
        let mut target = PgTarget::from_url(&pg.database("paused")).unwrap();
        target.deadline = Duration::from_secs(1);
        // Tried again at once (the hold-off has a test of its own).
        target.hold_off = Duration::ZERO;
        let db = Db::Pg(Box::new(RefCell::new(
            PgConn::connect(target.clone()).unwrap(),
        )));
        let one = |db: &Db| db.value::<i32>("SELECT 1", &[]);
        assert_eq!(one(&db).unwrap(), 1);
        pg.pause();
        // On a thread, so a statement that never returns fails this test, not hangs it.
        let (tx, rx) = std::sync::mpsc::channel();
        let t = target.clone();
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let e = one(&db).map(drop).map_err(|e| e.to_string());
            let connect = PgConn::connect(t).map(drop).map_err(|e| e.to_string());
            let _ = tx.send((e, connect, started.elapsed(), db));
        });
        let got = rx.recv_timeout(Duration::from_secs(20));
        pg.resume();
        let (e, connect, took, db) = got.expect("a statement on a paused server never returned");
        let e = e.unwrap_err();
        assert!(e.contains("PostgreSQL did not answer within 1 s"), "{e}");
        let connect = connect.unwrap_err();
        assert!(
            connect.contains("PostgreSQL did not answer within 1 s"),
            "{connect}"
        );
        assert!(took < Duration::from_secs(6), "took {took:?}");
        assert_eq!(one(&db).unwrap(), 1, "the store did not come back");
    }

    /// The calls queued behind one that waited past the deadline are refused at once, not
    /// each after a deadline of its own; past the hold-off the server is tried again.
    #[test]
    fn after_a_deadline_the_next_statements_are_refused_at_once_then_retried() {
        let pg = testkit::pg::Pg::start();
        let mut target = PgTarget::from_url(&pg.database("held")).unwrap();
        target.deadline = Duration::from_secs(1);
        target.hold_off = Duration::from_secs(2);
        let db = Db::Pg(Box::new(RefCell::new(PgConn::connect(target).unwrap())));
        let one = |db: &Db| db.value::<i32>("SELECT 1", &[]);
        assert_eq!(one(&db).unwrap(), 1);
        pg.pause();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let first = one(&db).map(drop).map_err(|e| e.to_string());
            let started = std::time::Instant::now();
            let queued: Vec<_> = (0..5)
                .map(|_| one(&db).map(drop).map_err(|e| e.to_string()))
                .collect();
            let _ = tx.send((first, queued, started.elapsed(), db));
        });
        let got = rx.recv_timeout(Duration::from_secs(20));
        pg.resume();
        let (first, queued, took, db) = got.expect("a statement on a paused server never returned");
        assert!(
            first
                .unwrap_err()
                .contains("PostgreSQL did not answer within 1 s"),
        );
        for e in queued {
            let e = e.unwrap_err();
            assert!(
                e.contains("PostgreSQL did not answer within 1 s a moment ago")
                    && e.contains("tries again in"),
                "{e}"
            );
        }
        // Five statements after the deadline: without the hold-off, five more deadlines.
        assert!(took < Duration::from_millis(500), "took {took:?}");
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(one(&db).unwrap(), 1, "the server was not tried again");
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
