//! The gate's durable state: one SQLite database, `boxmaker.db`, in the state directory, or
//! with `[gate] store` a PostgreSQL database that a fleet of replicas shares (docs/spec.md §6,
//! "The store", "Replicas"). The rules below are written once; `db.rs` is the seam between
//! the two backends (the write lock, durability, the schema version, a lost connection).
//!
//! It holds four things:
//! - **sessions** and their taint (docs/spec.md §3.2). Taint only rises ([`Store::raise_taint`]);
//!   only an operator's [`Store::reset_session`] lowers it.
//! - **approvals** and their states (docs/spec.md §3.3 step 6): `pending` → `approved` | `refused` |
//!   `expired` | `withdrawn`, and an approved one is consumed once ([`Store::mark_used`]),
//!   like a one-shot permission in OpenSSH's monitor.
//! - **grants added at run time**, kept after revocation with the time they were revoked.
//!   A *remembered approval* (`approve_for_session`) is one of them with an argument scope
//!   (`args_sha256`, `arguments`, `approval`): written in the same transaction as the
//!   decision it comes from ([`Store::decide_as`]), and never read as a grant for its whole
//!   tool ([`GrantRow::scope`]).
//! - the **provenance index** of each session (docs/spec.md §3.7): every identifying value
//!   the session's answers showed or its calls passed in, with the kind of answer it was
//!   first seen in — untrusted sticks: no later trusted answer vouches for it — and where
//!   ([`Store::provenance`]), bounded per session
//!   (past the bound a session is marked full, and every value the index cannot place counts
//!   as untrusted). Written in the same transaction as the taint it goes with
//!   ([`Store::raise_and_record`]); a reset clears it with the taint.
//!
//! Every write to an approval takes the next **change number** (`changed`, one above every
//! approval's), so [`Store::approval_changes`] answers "what happened since N" for the
//! approvals page and `approvals --watch`; a decision keeps who made it ([`Decider`]).
//!
//! # Durability
//! The database runs in WAL mode with `synchronous=FULL`: a transaction is on disk when its
//! `COMMIT` returns. Every write method here is exactly one `BEGIN IMMEDIATE … COMMIT`
//! transaction, so when it returns `Ok` the change survives a crash or a `kill -9` at any
//! later instant, and when it returns `Err` nothing of it was written. `BEGIN IMMEDIATE`
//! takes the write lock before reading, so two handles on the same file (two threads, or a
//! restarted gate beside a dying one) never lose each other's updates; a handle that finds
//! the lock taken waits up to [`BUSY_TIMEOUT`].
//!
//! # Schema
//! The schema version is SQLite's `PRAGMA user_version`. [`MIGRATIONS`] is an ordered list;
//! migration `i` (from 0) brings the database to version `i + 1`, in one transaction with the
//! version bump. A database whose version is newer than this build knows is refused
//! ([`StoreError::TooNew`]) rather than guessed at.
//!
//! # Numbers
//! SQLite integers are `i64`. Timestamps above `i64::MAX` seconds (which
//! `Timestamp::plus` can produce by saturating) are stored as `i64::MAX`, which is still
//! "never" for any clock this program will see. Call ids keep all 64 bits (stored as the
//! `i64` with the same bits).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use proto::run::FileDigest;
use proto::{CallId, DataClass, SessionId, Timestamp};
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};

pub(crate) mod db;
mod intent;
pub use db::PgTarget;
use db::{Col, Db, DbError, DbRow, Tx, p};
pub use intent::{IntentAdded, IntentLimits, IntentPrompt, IntentVia, Sourced};

/// The database's file name inside the state directory.
pub const DB_FILE: &str = "boxmaker.db";

/// How long a write waits for another handle's transaction before it fails.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema, one migration per version. Never edit a released entry: add one.
pub const MIGRATIONS: &[&str] = &[
    // v1
    "CREATE TABLE sessions (
        id        TEXT PRIMARY KEY,
        class     TEXT NOT NULL CHECK (class IN ('public','internal','confidential','secret')),
        untrusted INTEGER NOT NULL CHECK (untrusted IN (0, 1)),
        created   INTEGER NOT NULL,
        updated   INTEGER NOT NULL,
        results   INTEGER NOT NULL DEFAULT 0,
        resets    INTEGER NOT NULL DEFAULT 0
    ) STRICT;
    CREATE TABLE approvals (
        id        TEXT PRIMARY KEY,
        session   TEXT NOT NULL,
        call      INTEGER NOT NULL,
        tool      TEXT NOT NULL,
        arguments TEXT NOT NULL,
        reason    TEXT NOT NULL CHECK (reason IN ('grant_ask','untrusted_content')),
        state     TEXT NOT NULL
                  CHECK (state IN ('pending','approved','refused','expired','withdrawn')),
        created   INTEGER NOT NULL,
        expires   INTEGER NOT NULL,
        decided   INTEGER,
        note      TEXT,
        used      INTEGER
    ) STRICT;
    CREATE INDEX approvals_by_state ON approvals (state, expires);
    CREATE TABLE grants (
        id           INTEGER PRIMARY KEY AUTOINCREMENT,
        tool         TEXT NOT NULL,
        sessions     TEXT NOT NULL,
        effect       TEXT NOT NULL CHECK (effect IN ('allow','ask','deny')),
        max_class    TEXT CHECK (max_class IN ('public','internal','confidential','secret')),
        if_untrusted TEXT CHECK (if_untrusted IN ('allow','ask','deny')),
        expires      INTEGER,
        added        INTEGER NOT NULL,
        revoked      INTEGER
    ) STRICT;",
    // v2 (issue 16): every change of an approval is numbered (`changed`, for watchers); a
    // decision keeps where it came from; a remembered approval is a run-time grant scoped
    // to exact arguments (their canonical SHA-256) and names the approval it came from.
    "ALTER TABLE approvals ADD COLUMN changed INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE approvals ADD COLUMN via TEXT
        CHECK (via IN ('cli','page','client','control'));
    ALTER TABLE approvals ADD COLUMN decided_by TEXT;
    ALTER TABLE approvals ADD COLUMN grant_id INTEGER;
    UPDATE approvals SET changed = rowid;
    CREATE INDEX approvals_by_change ON approvals (changed);
    ALTER TABLE grants ADD COLUMN args_sha256 TEXT;
    ALTER TABLE grants ADD COLUMN arguments TEXT;
    ALTER TABLE grants ADD COLUMN approval TEXT;",
    // v3 (issue 19 item 6): what an approval binds beyond its text — the digest of each file
    // the call names in a writable place (JSON, `proto::run::FileDigest`s; NULL: none) —
    // and the same for the remembered approval made from it.
    "ALTER TABLE approvals ADD COLUMN files TEXT;
    ALTER TABLE grants ADD COLUMN files TEXT;",
    // v4 (issue 20): each session's provenance index — a value, the kind of answer it was
    // seen in (`none`: only the session's own calls passed it in), where it
    // was first seen as that, and whether the session's calls passed it in (then no later
    // answer vouches for it) — its size and whether it filled; what a person was told about
    // an approval's call (JSON `[Concern]`).
    "CREATE TABLE provenance (
        session TEXT NOT NULL,
        value   TEXT NOT NULL,
        kind    TEXT NOT NULL
                CHECK (kind IN ('email','url','host','iban','account','phone','id')),
        seen    TEXT NOT NULL CHECK (seen IN ('trusted','untrusted','none')),
        tool    TEXT NOT NULL,
        call    INTEGER NOT NULL,
        argued  INTEGER NOT NULL CHECK (argued IN (0, 1)),
        PRIMARY KEY (session, value)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE provenance_sessions (
        session TEXT PRIMARY KEY,
        count   INTEGER NOT NULL,
        full    INTEGER NOT NULL CHECK (full IN (0, 1))
    ) STRICT;
    ALTER TABLE approvals ADD COLUMN concerns TEXT;",
    // v5 (issue 30): the person's own words (docs/spec.md §3.10), a kind of trusted sighting
    // of its own beside the provenance index — each prompt a conversation was handed (its
    // hash and size, never its text), the values it names, the sources it names, and the
    // values an answer of a call that read a named source showed (`store/intent.rs`).
    "CREATE TABLE intent_prompts (
        session TEXT NOT NULL,
        n       INTEGER NOT NULL,
        at      INTEGER NOT NULL,
        sha256  TEXT NOT NULL,
        bytes   INTEGER NOT NULL,
        via     TEXT NOT NULL CHECK (via IN ('hook','cli')),
        PRIMARY KEY (session, n)
    ) STRICT;
    CREATE TABLE intent_values (
        session TEXT NOT NULL,
        value   TEXT NOT NULL,
        kind    TEXT NOT NULL
                CHECK (kind IN ('email','url','host','iban','account','phone','id')),
        prompt  INTEGER NOT NULL,
        PRIMARY KEY (session, value)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE intent_sources (
        session TEXT NOT NULL,
        source  TEXT NOT NULL,
        prompt  INTEGER NOT NULL,
        PRIMARY KEY (session, source)
    ) STRICT, WITHOUT ROWID;
    CREATE TABLE intent_sourced (
        session TEXT NOT NULL,
        value   TEXT NOT NULL,
        source  TEXT NOT NULL,
        tool    TEXT NOT NULL,
        call    INTEGER NOT NULL,
        prompt  INTEGER NOT NULL,
        PRIMARY KEY (session, value)
    ) STRICT, WITHOUT ROWID;",
    // v6: each replica's latest signed audit checkpoint, which a fleet checkpoint gathers
    // (docs/spec.md §6, "The audit trail of a fleet"). Kept on SQLite too, so both lists
    // stay version for version; one gate on SQLite never writes it.
    "CREATE TABLE audit_heads (
        key_id     TEXT PRIMARY KEY,
        public_key TEXT NOT NULL,
        tree_size  INTEGER NOT NULL,
        line       TEXT NOT NULL,
        updated    INTEGER NOT NULL
    ) STRICT;",
];

/// The same schema in PostgreSQL's dialect, version for version: `BIGINT` for SQLite's
/// `INTEGER` (and 0/1 flags, so both backends read the same values), an identity column for
/// `AUTOINCREMENT`. The version is the one row of `boxmaker_schema` (made on first connect).
/// Never edit a released entry: add one, to both lists.
pub const PG_MIGRATIONS: &[&str] = &[
    // v1
    "CREATE TABLE sessions (
        id        TEXT PRIMARY KEY,
        class     TEXT NOT NULL CHECK (class IN ('public','internal','confidential','secret')),
        untrusted BIGINT NOT NULL CHECK (untrusted IN (0, 1)),
        created   BIGINT NOT NULL,
        updated   BIGINT NOT NULL,
        results   BIGINT NOT NULL DEFAULT 0,
        resets    BIGINT NOT NULL DEFAULT 0
    );
    CREATE TABLE approvals (
        id        TEXT PRIMARY KEY,
        session   TEXT NOT NULL,
        call      BIGINT NOT NULL,
        tool      TEXT NOT NULL,
        arguments TEXT NOT NULL,
        reason    TEXT NOT NULL CHECK (reason IN ('grant_ask','untrusted_content')),
        state     TEXT NOT NULL
                  CHECK (state IN ('pending','approved','refused','expired','withdrawn')),
        created   BIGINT NOT NULL,
        expires   BIGINT NOT NULL,
        decided   BIGINT,
        note      TEXT,
        used      BIGINT
    );
    CREATE INDEX approvals_by_state ON approvals (state, expires);
    CREATE TABLE grants (
        id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        tool         TEXT NOT NULL,
        sessions     TEXT NOT NULL,
        effect       TEXT NOT NULL CHECK (effect IN ('allow','ask','deny')),
        max_class    TEXT CHECK (max_class IN ('public','internal','confidential','secret')),
        if_untrusted TEXT CHECK (if_untrusted IN ('allow','ask','deny')),
        expires      BIGINT,
        added        BIGINT NOT NULL,
        revoked      BIGINT
    );",
    // v2
    "ALTER TABLE approvals ADD COLUMN changed BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE approvals ADD COLUMN via TEXT
        CHECK (via IN ('cli','page','client','control'));
    ALTER TABLE approvals ADD COLUMN decided_by TEXT;
    ALTER TABLE approvals ADD COLUMN grant_id BIGINT;
    CREATE INDEX approvals_by_change ON approvals (changed);
    ALTER TABLE grants ADD COLUMN args_sha256 TEXT;
    ALTER TABLE grants ADD COLUMN arguments TEXT;
    ALTER TABLE grants ADD COLUMN approval TEXT;",
    // v3
    "ALTER TABLE approvals ADD COLUMN files TEXT;
    ALTER TABLE grants ADD COLUMN files TEXT;",
    // v4
    "CREATE TABLE provenance (
        session TEXT NOT NULL,
        value   TEXT NOT NULL,
        kind    TEXT NOT NULL
                CHECK (kind IN ('email','url','host','iban','account','phone','id')),
        seen    TEXT NOT NULL CHECK (seen IN ('trusted','untrusted','none')),
        tool    TEXT NOT NULL,
        call    BIGINT NOT NULL,
        argued  BIGINT NOT NULL CHECK (argued IN (0, 1)),
        PRIMARY KEY (session, value)
    );
    CREATE TABLE provenance_sessions (
        session TEXT PRIMARY KEY,
        count   BIGINT NOT NULL,
        \"full\"  BIGINT NOT NULL CHECK (\"full\" IN (0, 1))
    );
    ALTER TABLE approvals ADD COLUMN concerns TEXT;",
    // v5
    "CREATE TABLE intent_prompts (
        session TEXT NOT NULL,
        n       BIGINT NOT NULL,
        at      BIGINT NOT NULL,
        sha256  TEXT NOT NULL,
        bytes   BIGINT NOT NULL,
        via     TEXT NOT NULL CHECK (via IN ('hook','cli')),
        PRIMARY KEY (session, n)
    );
    CREATE TABLE intent_values (
        session TEXT NOT NULL,
        value   TEXT NOT NULL,
        kind    TEXT NOT NULL
                CHECK (kind IN ('email','url','host','iban','account','phone','id')),
        prompt  BIGINT NOT NULL,
        PRIMARY KEY (session, value)
    );
    CREATE TABLE intent_sources (
        session TEXT NOT NULL,
        source  TEXT NOT NULL,
        prompt  BIGINT NOT NULL,
        PRIMARY KEY (session, source)
    );
    CREATE TABLE intent_sourced (
        session TEXT NOT NULL,
        value   TEXT NOT NULL,
        source  TEXT NOT NULL,
        tool    TEXT NOT NULL,
        call    BIGINT NOT NULL,
        prompt  BIGINT NOT NULL,
        PRIMARY KEY (session, value)
    );",
    // v6
    "CREATE TABLE audit_heads (
        key_id     TEXT PRIMARY KEY,
        public_key TEXT NOT NULL,
        tree_size  BIGINT NOT NULL,
        line       TEXT NOT NULL,
        updated    BIGINT NOT NULL
    );",
];

/// The PostgreSQL channel every approval write notifies on commit.
pub const APPROVALS_CHANNEL: &str = "boxmaker_approvals";

/// A connection that hears the fleet's approval writes (`LISTEN`), for one replica.
pub struct ApprovalListener {
    conn: db::PgConn,
}

impl fmt::Debug for ApprovalListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApprovalListener")
    }
}

impl ApprovalListener {
    /// Connects and listens.
    pub fn connect(target: &PgTarget) -> Result<ApprovalListener, StoreError> {
        let mut conn =
            db::PgConn::connect(target.clone()).map_err(|source| StoreError::Unreachable {
                target: target.shown.clone(),
                source,
            })?;
        conn.listen(APPROVALS_CHANNEL)
            .map_err(sql("listen for the fleet's approval changes"))?;
        Ok(ApprovalListener { conn })
    }

    /// Waits up to `wait` for approval writes; how many arrived (0: none in time). An
    /// error means the connection is gone: connect again.
    pub fn wait(&mut self, wait: Duration) -> Result<usize, StoreError> {
        self.conn
            .wait_notifications(wait)
            .map_err(sql("hear the fleet's approval changes"))
    }
}

/// Where the schema version is read.
fn version_sql(db: &Db) -> &'static str {
    if db.is_shared() {
        "SELECT version FROM boxmaker_schema"
    } else {
        "PRAGMA user_version"
    }
}

/// What can go wrong in the state store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The state directory or the database's name refused: a link there (a repository can
    /// ship `.boxmaker/`), or something that is not a directory or a file.
    #[error(transparent)]
    File(#[from] statedir::file::Error),
    #[error("could not open the state database {path}: {source}")]
    Open {
        path: PathBuf,
        source: rusqlite::Error,
    },
    #[error("could not set `PRAGMA {pragma}` on the state database: {source}")]
    Pragma {
        pragma: &'static str,
        source: rusqlite::Error,
    },
    #[error(
        "the state database could not be put in WAL mode (it reports journal mode {mode:?}); \
         is the state directory on a file system that supports shared memory?"
    )]
    NotWal { mode: String },
    #[error(
        "the state database {path} has schema version {found}, newer than the {supported} \
         this boxmaker knows: it was written by a newer boxmaker; run that version, or point \
         `gate.state` at another directory"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        supported: usize,
    },
    #[error("could not migrate the state database to schema version {version}: {source}")]
    Migrate { version: usize, source: DbError },
    #[error("could not {op} in the state database: {source}")]
    Sql { op: &'static str, source: DbError },
    #[error(
        "could not reach the shared state database {target}: {source}; this replica decides \
         nothing until it can (every call fails closed)"
    )]
    Unreachable { target: String, source: DbError },
    #[error("the shared state database URL {shown:?} does not parse: {detail}")]
    BadUrl { shown: String, detail: String },
    #[error(
        "the state database holds a value this boxmaker cannot read ({what}); \
         was it edited by hand?"
    )]
    Corrupt { what: String },
    #[error("could not read the operating system's random number generator: {0}")]
    Random(String),
    #[error("there is no approval {id}")]
    ApprovalNotFound { id: String },
    #[error("approval {id} was already {state}; only a pending approval can change")]
    ApprovalAlreadyDecided { id: String, state: ApprovalState },
    #[error(
        "approval {id} expired at {expires} (now {now}); the call will be denied approval_expired"
    )]
    ApprovalExpired {
        id: String,
        expires: Timestamp,
        now: Timestamp,
    },
    #[error("approval {id} is {state}, not approved: it cannot be used")]
    ApprovalNotApproved { id: String, state: ApprovalState },
    #[error("approval {id} was already used at {used}: an approval lets one call run, once")]
    ApprovalAlreadyUsed { id: String, used: Timestamp },
    #[error("there is no run-time grant {id}")]
    GrantNotFound { id: i64 },
    #[error("run-time grant {id} was already revoked at {revoked}")]
    GrantAlreadyRevoked { id: i64, revoked: Timestamp },
    #[error("approval {id} was refused; only an approval can be remembered")]
    RememberRefusal { id: String },
    #[error(
        "session {session} holds {what} already, the most one conversation keeps: nothing of \
         this prompt was added (its values stay as untrusted as before; `boxmaker sessions \
         reset` starts the session over)"
    )]
    IntentFull { session: String, what: String },
}

fn sql<E: Into<DbError>>(op: &'static str) -> impl FnOnce(E) -> StoreError {
    move |source| StoreError::Sql {
        op,
        source: source.into(),
    }
}

// ---------------------------------------------------------------------------------------------
// Row types

/// A session's taint as stored: the highest class it has been shown, and whether it has seen
/// untrusted content (docs/spec.md §3.2). The lead converts it to and from `policy::Taint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct StoredTaint {
    pub class: DataClass,
    pub untrusted: bool,
}

impl StoredTaint {
    /// The taint every session starts with: `(public, false)`.
    pub const START: StoredTaint = StoredTaint {
        class: DataClass::Public,
        untrusted: false,
    };

    /// This taint raised by a label: the higher class, and untrusted if either is.
    pub fn raised(self, class: DataClass, untrusted: bool) -> StoredTaint {
        StoredTaint {
            class: self.class.max(class),
            untrusted: self.untrusted || untrusted,
        }
    }
}

/// What one answer, or one call's arguments, showed a session's provenance index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sighting {
    /// A trusted answer showed the values: it vouches for each the session's calls did not
    /// pass in.
    Trusted,
    /// An untrusted answer showed them.
    Untrusted,
    /// A call of the session passes them in (before it runs): no later answer vouches for
    /// them.
    Argued,
}

/// One write to a session's provenance index: what one answer or call showed, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sightings {
    pub session: SessionId,
    pub tool: String,
    pub call: CallId,
    pub sighting: Sighting,
    pub values: Vec<policy::values::Ident>,
    /// The reading left values out (too many): the session's index fails closed from now.
    pub overflow: bool,
}

/// What a decision reads ([`Store::decision_read`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecisionRead {
    pub taint: StoredTaint,
    /// The run-time grants' stamp (highest id, number revoked).
    pub grants_stamp: (i64, i64),
    /// Whether the call's arguments' sightings would write anything to the index.
    pub argued_writes: bool,
}

/// How a value stands in a session's provenance index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SeenAs {
    Trusted,
    Untrusted,
    /// Seen in no answer: only the session's own calls passed it in.
    None,
}

impl SeenAs {
    fn as_str(self) -> &'static str {
        match self {
            SeenAs::Trusted => "trusted",
            SeenAs::Untrusted => "untrusted",
            SeenAs::None => "none",
        }
    }
}

/// One value of a session's provenance index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenanceRow {
    pub kind: policy::values::Kind,
    pub seen: SeenAs,
    /// Where it was first seen as `seen` (for `none`: the call that first passed it in).
    pub tool: String,
    pub call: CallId,
    /// The session's calls passed it in before any trusted answer showed it.
    pub argued: bool,
}

/// What a session's provenance index holds: how many values, and whether it filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IndexSize {
    pub count: u64,
    pub full: bool,
}

/// One raise of [`Store::raise_taints`]: a session and the label of what it was shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaintRaise {
    pub session: SessionId,
    pub class: DataClass,
    pub untrusted: bool,
}

/// One session as `boxmaker sessions` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub session: SessionId,
    pub taint: StoredTaint,
    /// When the gate first recorded the session.
    pub created: Timestamp,
    /// When its taint was last raised or reset.
    pub updated: Timestamp,
    /// How many results (and failures) raised its taint since it was created.
    pub results: u64,
    /// How many times an operator reset it.
    pub resets: u64,
}

/// Where an approval is in its life. `Pending` is the only state that changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalState {
    Pending,
    Approved,
    Refused,
    Expired,
    /// The client that made the call went away before anyone decided.
    Withdrawn,
}

/// Which approvals [`Store::approvals`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalFilter {
    Pending,
    All,
}

/// A person's answer to an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Approve,
    /// Refuse, with an optional sentence for the audit log and the operator's listing.
    Refuse {
        reason: Option<String>,
    },
}

/// Why a call needs approval, a grant's effect, and where a decision came from: the wire's
/// own types (`proto::control`), stored under the same snake_case names.
pub use proto::control::{ApprovalReason, DecidedVia, Effect};

impl From<proto::UnknownName> for StoreError {
    fn from(e: proto::UnknownName) -> Self {
        StoreError::Corrupt {
            what: format!("{} {:?}", e.kind, e.found),
        }
    }
}

macro_rules! names {
    ($ty:ident, $what:literal, { $($var:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// The snake_case name, as stored and as audited.
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$var => $name),+ }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = StoreError;
            fn from_str(s: &str) -> Result<Self, StoreError> {
                match s {
                    $($name => Ok($ty::$var),)+
                    other => Err(StoreError::Corrupt { what: format!(concat!($what, " {:?}"), other) }),
                }
            }
        }
    };
}

names!(ApprovalState, "approval state", {
    Pending => "pending",
    Approved => "approved",
    Refused => "refused",
    Expired => "expired",
    Withdrawn => "withdrawn",
});

/// What the gate records when a call needs approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApproval {
    pub session: SessionId,
    pub call: CallId,
    pub tool: String,
    /// The arguments exactly as the request carried them: the person sees this text.
    pub arguments: String,
    pub reason: ApprovalReason,
    pub created: Timestamp,
    pub expires: Timestamp,
    /// The files the call names, as the runner found them when it asked: what the person
    /// is shown and what an approval binds (docs/spec.md §3.3 step 6).
    pub files: Vec<FileDigest>,
}

/// An approval as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRow {
    /// `ap-` and 16 lower-case hex digits from the OS's random number generator.
    pub id: String,
    pub session: SessionId,
    pub call: CallId,
    pub tool: String,
    pub arguments: String,
    pub reason: ApprovalReason,
    pub state: ApprovalState,
    pub created: Timestamp,
    pub expires: Timestamp,
    /// When it left `pending` (decided, expired or withdrawn).
    pub decided: Option<Timestamp>,
    /// The refuser's reason, if one was given.
    pub note: Option<String>,
    /// When the gate consumed it to run the call ([`Store::mark_used`]).
    pub used: Option<Timestamp>,
    /// The number of its latest change: every write to an approval takes the next number
    /// above every approval's, so `changed > N` is "what happened since N".
    pub change: u64,
    /// Who decided it, and through what (`None` for an expiry, a withdrawal, or a decision
    /// older than schema version 2).
    pub decider: Option<Decider>,
    /// The remembered approval (run-time grant) an `approve_for_session` made.
    pub grant: Option<i64>,
    /// The files the call names, with their digests when it asked (none before schema
    /// version 3).
    pub files: Vec<FileDigest>,
    /// What the person is told about the call beyond the call itself (docs/spec.md §3.7).
    pub concerns: Vec<proto::control::Concern>,
}

/// Who decided an approval: through what, and in the decider's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decider {
    pub via: DecidedVia,
    pub by: String,
}

/// An approval remembered for its session (`approve_for_session`): written as a run-time
/// grant for the approval's session and tool, scoped to arguments with this canonical
/// SHA-256, in the same transaction as the decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remember {
    pub expires: Timestamp,
    /// The highest taint class it admits (the one the person saw).
    pub max_class: DataClass,
    /// `allow` when the person saw an untrusted session, else `ask`: once the session has
    /// seen untrusted content the remembered approval no longer answers.
    pub if_untrusted: Effect,
    pub args_sha256: String,
    /// The files the approval bound: a call matches only while they bind the same.
    pub files: Vec<FileDigest>,
}

/// A run-time grant's scope, for a remembered approval: only calls whose arguments have
/// this canonical SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantScope {
    pub args_sha256: String,
    /// The arguments as the person saw them.
    pub arguments: String,
    /// The approval it was remembered from.
    pub approval: String,
    /// The files it binds (none for one remembered before schema version 3, which then
    /// covers only calls that name no file).
    pub files: Vec<FileDigest>,
}

/// A grant added at run time, before it has an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewGrant {
    /// Exact tool name or glob, as in the config.
    pub tool: String,
    /// Glob over session ids.
    pub sessions: String,
    pub effect: Effect,
    /// `None` is the config's default (`secret`).
    pub max_class: Option<DataClass>,
    /// `None` is the config's default.
    pub if_untrusted: Option<Effect>,
    pub expires: Option<Timestamp>,
    pub added: Timestamp,
}

/// A run-time grant as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRow {
    pub id: i64,
    pub tool: String,
    pub sessions: String,
    pub effect: Effect,
    pub max_class: Option<DataClass>,
    pub if_untrusted: Option<Effect>,
    pub expires: Option<Timestamp>,
    pub added: Timestamp,
    pub revoked: Option<Timestamp>,
    /// Set for a remembered approval: it covers only these arguments.
    pub scope: Option<GrantScope>,
}

// ---------------------------------------------------------------------------------------------
// Conversions between our types and SQLite's

fn ts_to_sql(t: Timestamp) -> i64 {
    i64::try_from(t.0).unwrap_or(i64::MAX)
}

fn ts_from_sql(v: i64) -> Result<Timestamp, StoreError> {
    u64::try_from(v)
        .map(Timestamp)
        .map_err(|_| StoreError::Corrupt {
            what: format!("negative time {v}"),
        })
}

fn opt_ts_from_sql(v: Option<i64>) -> Result<Option<Timestamp>, StoreError> {
    v.map(ts_from_sql).transpose()
}

fn call_to_sql(c: CallId) -> i64 {
    i64::from_ne_bytes(c.0.to_ne_bytes())
}

fn call_from_sql(v: i64) -> CallId {
    CallId(u64::from_ne_bytes(v.to_ne_bytes()))
}

fn count_from_sql(v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| StoreError::Corrupt {
        what: format!("negative count {v}"),
    })
}

fn session_from_sql(s: String) -> Result<SessionId, StoreError> {
    SessionId::new(s).map_err(|e| StoreError::Corrupt {
        what: format!("session id: {e}"),
    })
}

fn class_from_sql(s: &str) -> Result<DataClass, StoreError> {
    s.parse().map_err(|e| StoreError::Corrupt {
        what: format!("data class: {e}"),
    })
}

/// A fresh approval id: `ap-` and 16 hex digits (64 bits) from the OS's generator.
fn new_approval_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Random(e.to_string()))?;
    let mut id = String::with_capacity(19);
    id.push_str("ap-");
    for b in bytes {
        id.push_str(&format!("{b:02x}"));
    }
    Ok(id)
}

/// Whether `s` has the form of an approval id (`ap-` and 16 lower-case hex digits). The CLI
/// can use it to reject a mistyped id before asking the gate.
pub fn is_approval_id(s: &str) -> bool {
    s.strip_prefix("ap-").is_some_and(|hex| {
        hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

// Raw rows: read every column as SQLite gives it, convert outside rusqlite's closure so our
// own errors keep their type.

struct RawSession(String, String, i64, i64, i64, i64, i64);

const SESSION_COLS: &str = "id, class, untrusted, created, updated, results, resets";

fn raw_session(r: &DbRow<'_>) -> Result<RawSession, DbError> {
    let (id, class, untrusted, created, updated, results, resets) = seven(r)?;
    Ok(RawSession(
        id, class, untrusted, created, updated, results, resets,
    ))
}

impl RawSession {
    fn convert(self) -> Result<SessionRow, StoreError> {
        Ok(SessionRow {
            session: session_from_sql(self.0)?,
            taint: taint_from_sql(&self.1, self.2)?,
            created: ts_from_sql(self.3)?,
            updated: ts_from_sql(self.4)?,
            results: count_from_sql(self.5)?,
            resets: count_from_sql(self.6)?,
        })
    }
}

const APPROVAL_COLS: &str = "id, session, call, tool, arguments, reason, state, created, \
     expires, decided, note, used, changed, via, decided_by, grant_id, files, concerns";

/// How many columns `APPROVAL_COLS` names (what a query selects after them starts here).
const APPROVAL_COL_COUNT: usize = 18;

struct RawApproval {
    id: String,
    session: String,
    call: i64,
    tool: String,
    arguments: String,
    reason: String,
    state: String,
    created: i64,
    expires: i64,
    decided: Option<i64>,
    note: Option<String>,
    used: Option<i64>,
    changed: i64,
    via: Option<String>,
    decided_by: Option<String>,
    grant_id: Option<i64>,
    files: Option<String>,
    concerns: Option<String>,
}

fn raw_approval(r: &DbRow<'_>) -> Result<RawApproval, DbError> {
    Ok(RawApproval {
        id: r.get(0)?,
        session: r.get(1)?,
        call: r.get(2)?,
        tool: r.get(3)?,
        arguments: r.get(4)?,
        reason: r.get(5)?,
        state: r.get(6)?,
        created: r.get(7)?,
        expires: r.get(8)?,
        decided: r.get(9)?,
        note: r.get(10)?,
        used: r.get(11)?,
        changed: r.get(12)?,
        via: r.get(13)?,
        decided_by: r.get(14)?,
        grant_id: r.get(15)?,
        files: r.get(16)?,
        concerns: r.get(17)?,
    })
}

impl RawApproval {
    fn convert(self) -> Result<ApprovalRow, StoreError> {
        let files = files_from_sql(self.files.as_deref(), || {
            format!("the files of approval {}", self.id)
        })?;
        Ok(ApprovalRow {
            id: self.id,
            session: session_from_sql(self.session)?,
            call: call_from_sql(self.call),
            tool: self.tool,
            arguments: self.arguments,
            reason: self.reason.parse()?,
            state: self.state.parse()?,
            created: ts_from_sql(self.created)?,
            expires: ts_from_sql(self.expires)?,
            decided: opt_ts_from_sql(self.decided)?,
            note: self.note,
            used: opt_ts_from_sql(self.used)?,
            change: count_from_sql(self.changed)?,
            decider: match (self.via, self.decided_by) {
                (Some(via), Some(by)) => Some(Decider {
                    via: via.parse()?,
                    by,
                }),
                _ => None,
            },
            grant: self.grant_id,
            files,
            concerns: match self.concerns {
                None => Vec::new(),
                Some(text) => serde_json::from_str(&text).map_err(|_| StoreError::Corrupt {
                    what: "an approval's concerns".into(),
                })?,
            },
        })
    }
}

/// The stored JSON of a list of file digests (`NULL`: none).
fn files_from_sql(
    text: Option<&str>,
    what: impl FnOnce() -> String,
) -> Result<Vec<FileDigest>, StoreError> {
    match text {
        None => Ok(Vec::new()),
        Some(t) => serde_json::from_str(t).map_err(|e| StoreError::Corrupt {
            what: format!("{}: {e}", what()),
        }),
    }
}

/// A list of file digests as stored: `NULL` when empty.
fn files_to_sql(files: &[FileDigest]) -> Result<Option<String>, StoreError> {
    if files.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(files)
        .map(Some)
        .map_err(|e| StoreError::Corrupt {
            what: format!("file digests that do not encode: {e}"),
        })
}

const GRANT_COLS: &str = "id, tool, sessions, effect, max_class, if_untrusted, expires, added, \
     revoked, args_sha256, arguments, approval, files";

struct RawGrant {
    id: i64,
    tool: String,
    sessions: String,
    effect: String,
    max_class: Option<String>,
    if_untrusted: Option<String>,
    expires: Option<i64>,
    added: i64,
    revoked: Option<i64>,
    args_sha256: Option<String>,
    arguments: Option<String>,
    approval: Option<String>,
    files: Option<String>,
}

fn raw_grant(r: &DbRow<'_>) -> Result<RawGrant, DbError> {
    Ok(RawGrant {
        id: r.get(0)?,
        tool: r.get(1)?,
        sessions: r.get(2)?,
        effect: r.get(3)?,
        max_class: r.get(4)?,
        if_untrusted: r.get(5)?,
        expires: r.get(6)?,
        added: r.get(7)?,
        revoked: r.get(8)?,
        args_sha256: r.get(9)?,
        arguments: r.get(10)?,
        approval: r.get(11)?,
        files: r.get(12)?,
    })
}

impl RawGrant {
    fn convert(self) -> Result<GrantRow, StoreError> {
        let id = self.id;
        let files = files_from_sql(self.files.as_deref(), || {
            format!("the files of run-time grant {id}")
        })?;
        Ok(GrantRow {
            id: self.id,
            tool: self.tool,
            sessions: self.sessions,
            effect: self.effect.parse()?,
            max_class: self.max_class.as_deref().map(class_from_sql).transpose()?,
            if_untrusted: self.if_untrusted.as_deref().map(str::parse).transpose()?,
            expires: opt_ts_from_sql(self.expires)?,
            added: ts_from_sql(self.added)?,
            revoked: opt_ts_from_sql(self.revoked)?,
            scope: match (self.args_sha256, self.arguments, self.approval) {
                (None, None, None) => None,
                (Some(args_sha256), Some(arguments), Some(approval)) => Some(GrantScope {
                    args_sha256,
                    arguments,
                    approval,
                    files,
                }),
                // Half a scope must never read as no scope (a grant for every argument).
                _ => {
                    return Err(StoreError::Corrupt {
                        what: format!("the argument scope of run-time grant {}", self.id),
                    });
                }
            },
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The store

/// A handle on the state database. Reads take `&self`; every write takes `&mut self` and is
/// one committed transaction. Several handles (threads or processes) may share one file.
pub struct Store {
    conn: Db,
    path: PathBuf,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens (creating if needed) `boxmaker.db` in `state_dir`.
    ///
    /// Creates `state_dir` with mode `0700` if it is missing (an existing directory's mode is
    /// left alone), and the database file with mode `0600` (SQLite gives its `-wal` and `-shm`
    /// files the same mode). Sets WAL, `synchronous=FULL`, `foreign_keys=ON` and a busy
    /// timeout, then brings the schema up to date or refuses a newer one.
    pub fn open(state_dir: &Path) -> Result<Store, StoreError> {
        // The state directory (refused when it is a link), and the database made `0600`
        // from its first instant, never through a link: SQLite itself opens every file
        // `O_NOFOLLOW`, but resolves a link at the database's own name first.
        let dir = statedir::file::Dir::own(state_dir)?;
        let path = state_dir.join(DB_FILE);
        dir.open_file(DB_FILE, statedir::file::Open::Lock, 0o600)?;
        for side in ["-wal", "-shm", "-journal"] {
            dir.refuse_link(&format!("{DB_FILE}{side}"))?;
        }
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|source| StoreError::Pragma {
                pragma: "busy_timeout",
                source,
            })?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(|source| StoreError::Pragma {
                pragma: "journal_mode",
                source,
            })?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::NotWal { mode });
        }
        for (pragma, value) in [("synchronous", "FULL"), ("foreign_keys", "ON")] {
            conn.pragma_update(None, pragma, value)
                .map_err(|source| StoreError::Pragma { pragma, source })?;
        }
        let mut store = Store {
            conn: Db::Lite(conn),
            path,
        };
        store.migrate()?;
        Ok(store)
    }

    /// Connects to the fleet's shared PostgreSQL store (docs/spec.md §6, "The store") and
    /// brings its schema up to date (under the fleet's write lock, so two replicas starting
    /// at once migrate once) or refuses a newer one. A store it cannot reach is
    /// [`StoreError::Unreachable`]: the gate does not start, and a running one fails every
    /// call closed until it can reach it again.
    pub fn open_shared(target: &PgTarget) -> Result<Store, StoreError> {
        let unreachable = |source| StoreError::Unreachable {
            target: target.shown.clone(),
            source,
        };
        let conn = db::PgConn::connect(target.clone()).map_err(unreachable)?;
        let db = Db::Pg(Box::new(std::cell::RefCell::new(conn)));
        // The version row, made once; `ON CONFLICT` makes two first replicas agree.
        db.batch(
            "CREATE TABLE IF NOT EXISTS boxmaker_schema (
                 one     BIGINT PRIMARY KEY DEFAULT 1 CHECK (one = 1),
                 version BIGINT NOT NULL
             );
             INSERT INTO boxmaker_schema (one, version) VALUES (1, 0) ON CONFLICT DO NOTHING;
             CREATE TABLE IF NOT EXISTS boxmaker_keys (
                 name  TEXT PRIMARY KEY,
                 value TEXT NOT NULL
             )",
        )
        .or_else(|e| match e {
            // Two replicas creating the table at the same instant: one loses the race on
            // the catalog; the table is there.
            DbError::Pg(ref pg)
                if pg.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) =>
            {
                Ok(())
            }
            e => Err(e),
        })
        .map_err(sql("make the schema version row"))?;
        let mut store = Store {
            conn: db,
            path: PathBuf::from(&target.shown),
        };
        store.migrate()?;
        Ok(store)
    }

    /// The store `gate` names: the fleet's PostgreSQL database with `[gate] store`, else
    /// `boxmaker.db` in the state directory.
    pub fn open_configured(gate: &config::Gate) -> Result<Store, StoreError> {
        match &gate.store {
            None => Store::open(&gate.state),
            Some(url) => {
                let target = PgTarget::from_url(url).map_err(|detail| StoreError::BadUrl {
                    shown: url.clone(),
                    detail,
                })?;
                Store::open_shared(&target)
            }
        }
    }

    /// The fleet's key `name` (the HTTP front's, which signs conversation credentials, so a
    /// conversation lands on any replica): the one a replica stored first, or `fresh`,
    /// stored now. `None` on the embedded store (a key lives in the state directory there).
    pub fn fleet_key(&mut self, name: &str, fresh: &str) -> Result<Option<String>, StoreError> {
        if !self.conn.is_shared() {
            return Ok(None);
        }
        let tx = self.write("read the fleet's key")?;
        tx.execute(
            "INSERT INTO boxmaker_keys (name, value) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            p![name, fresh],
        )
        .map_err(sql("make the fleet's key"))?;
        let key: String = tx
            .value("SELECT value FROM boxmaker_keys WHERE name = ?1", p![name])
            .map_err(sql("read the fleet's key"))?;
        tx.commit().map_err(sql("commit the fleet's key"))?;
        Ok(Some(key))
    }

    /// Where the shared store is, for a listener of its own (`None` on SQLite).
    pub fn shared_target(&self) -> Option<PgTarget> {
        self.conn.target()
    }

    /// Whether this store is the fleet's shared one (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        self.conn.is_shared()
    }

    /// Opens `boxmaker.db` in `state_dir` to read only (`boxmaker check` reading a session's
    /// provenance index beside a running gate): `None` when there is no database, or one
    /// too old to hold an index (nothing recorded yet). Creates and migrates nothing.
    pub fn open_read_only(state_dir: &Path) -> Result<Option<Store>, StoreError> {
        // Only the person's own state directory (docs/spec.md §6, "Whose state"): a shipped
        // database is never opened, not even to read.
        match statedir::file::Dir::own_existing(state_dir) {
            Ok(_) => {}
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let path = state_dir.join(DB_FILE);
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: path.clone(),
            source,
        })?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|source| StoreError::Pragma {
                pragma: "busy_timeout",
                source,
            })?;
        let store = Store {
            conn: Db::Lite(conn),
            path,
        };
        let version = store.schema_version()?;
        check_not_newer(&store.path, version)?;
        Ok((version >= 3).then_some(store))
    }

    /// The database file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.conn
            .value(version_sql(&self.conn), &[])
            .map_err(sql("read the schema version"))
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        // Check the version before taking the write lock, so a read-only look at a newer
        // database fails fast; then re-read it under the lock (another process may migrate).
        check_not_newer(&self.path, self.schema_version()?)?;
        let path = self.path.clone();
        let tx = self.write("migrate the schema")?;
        let found: i64 = tx
            .value(version_sql(&tx), &[])
            .map_err(sql("read the schema version"))?;
        check_not_newer(&path, found)?;
        let from = usize::try_from(found).map_err(|_| StoreError::Corrupt {
            what: format!("schema version {found}"),
        })?;
        let list = if tx.is_shared() {
            PG_MIGRATIONS
        } else {
            MIGRATIONS
        };
        for (i, migration) in list.iter().enumerate().skip(from) {
            let version = i + 1;
            let bump = if tx.is_shared() {
                format!("UPDATE boxmaker_schema SET version = {version}")
            } else {
                format!("PRAGMA user_version = {version}")
            };
            tx.batch(migration)
                .and_then(|()| tx.batch(&bump))
                .map_err(|source| StoreError::Migrate { version, source })?;
        }
        tx.commit().map_err(sql("commit the migration"))
    }

    /// Starts a write transaction that holds the write lock from its first statement.
    fn write(&mut self, op: &'static str) -> Result<Tx<'_>, StoreError> {
        self.conn.begin_write().map_err(sql(op))
    }

    // --- sessions and taint -------------------------------------------------------------

    /// The session's taint; `(public, false)` for a session the gate has never recorded.
    pub fn taint(&self, session: &SessionId) -> Result<StoredTaint, StoreError> {
        Ok(read_taint(&self.conn, session)?.unwrap_or(StoredTaint::START))
    }

    /// Raises the session's taint by a result's label (docs/spec.md §3.2) and returns the new taint.
    ///
    /// Only raises: `class := max(class, class')`, `untrusted |= untrusted'`. Creates the
    /// session if it is new, and counts the result. Durable when it returns: the gate may
    /// release the result after this and not before.
    pub fn raise_taint(
        &mut self,
        session: &SessionId,
        class: DataClass,
        untrusted: bool,
        now: Timestamp,
    ) -> Result<StoredTaint, StoreError> {
        let tx = self.write("raise a session's taint")?;
        let (new, _) = raise_in(&tx, session, class, untrusted, now)?;
        tx.commit().map_err(sql("commit a session's taint"))?;
        Ok(new)
    }

    /// Group commit: several raises (the same session may appear more than once) in one
    /// transaction, so one sync pays for all. Returns each raise's resulting taint, in
    /// order. Every taint is durable when it returns `Ok`; none is written when it returns
    /// `Err` (on PostgreSQL a raise that raises nothing may have counted its result by
    /// then: a count, never a label).
    ///
    /// A batch that raises no recorded session's taint (each label at or below the taint it
    /// already has) changes only the results count and the time of the last result: it is
    /// committed without waiting for the disk (`synchronous=NORMAL` for that one commit). A
    /// killed process loses nothing of it (the WAL is written before the commit returns);
    /// a power cut could lose those counts, never a taint, and the next full commit syncs
    /// them too.
    pub fn raise_taints(
        &mut self,
        raises: &[TaintRaise],
        now: Timestamp,
    ) -> Result<Vec<StoredTaint>, StoreError> {
        self.raise_and_record(raises, &[], u64::MAX, now)
    }

    /// [`Store::raise_taints`], and in the same transaction what answers and calls showed
    /// the sessions' provenance indexes (each bounded at `limit` values a session).
    ///
    /// A value is kept with the most trusted kind of answer it was seen in and where it was
    /// first seen as that: a trusted answer vouches for a value unless the session's own
    /// calls passed it in first; an untrusted answer marks a value no answer showed before;
    /// a call's arguments mark each value they carry as passed in. A value past the bound is
    /// not kept, and the session is marked full (fail closed: the decision then counts every
    /// value it cannot place as untrusted). The commit is a full sync when the taint rises
    /// or when losing the write could let a value pass that should not (a new untrusted or
    /// passed-in value, the full mark); a batch that only adds what is trusted (losing it
    /// only refuses more) is committed as a count-only batch.
    ///
    /// Where the choice is made: SQLite cannot change `synchronous` inside a transaction,
    /// so there it is made before the write lock, from reads another process may overtake;
    /// that stays sound, because a taint only rises and an untrusted mark only sticks:
    /// whatever another writer commits in between, a batch judged count-only still raises
    /// nothing and carries only trusted sightings. On PostgreSQL it is made under the
    /// fleet's write lock, from what the transaction itself read and wrote, and sent with
    /// the `COMMIT` (`SET LOCAL synchronous_commit = off`): no reads before the lock, so a
    /// call costs three round trips there (docs/spec.md §6).
    pub fn raise_and_record(
        &mut self,
        raises: &[TaintRaise],
        sightings: &[Sightings],
        limit: u64,
        now: Timestamp,
    ) -> Result<Vec<StoredTaint>, StoreError> {
        if self.conn.is_shared() && !raises.is_empty() {
            // A raise that raises nothing, in a batch that records nothing, is one
            // statement on its own (`count_only`); the rest one transaction under the
            // fleet's write lock.
            let mut out: Vec<Option<StoredTaint>> = vec![None; raises.len()];
            if sightings.is_empty() {
                // Once a session's raise goes through the lock, so do its later ones in the
                // batch: each answer's taint is then the one after every raise before it.
                let mut locked: Vec<&SessionId> = Vec::new();
                for (slot, r) in out.iter_mut().zip(raises) {
                    if !locked.contains(&&r.session) {
                        *slot = count_only(&self.conn, r, now)?;
                    }
                    if slot.is_none() {
                        locked.push(&r.session);
                    }
                }
            }
            if out.iter().any(Option::is_none) {
                let tx = self.write("raise sessions' taint")?;
                let mut rises = false;
                for (slot, r) in out.iter_mut().zip(raises) {
                    if slot.is_none() {
                        let (taint, rose) = raise_in(&tx, &r.session, r.class, r.untrusted, now)?;
                        rises |= rose;
                        *slot = Some(taint);
                    }
                }
                for s in sightings {
                    rises |= record_in(&tx, s, limit)?;
                }
                tx.commit_synced(rises)
                    .map_err(sql("commit sessions' taint"))?;
            }
            return Ok(out.into_iter().flatten().collect());
        }
        let mut rises = false;
        for r in raises {
            rises |= match read_taint(&self.conn, &r.session)? {
                Some(old) => old.raised(r.class, r.untrusted) != old,
                // A new session's row is written durably, whatever its label.
                None => true,
            };
        }
        let mut writes = false;
        for s in sightings {
            let (any, matters) = plan(self, s, limit)?;
            writes |= any;
            rises |= matters;
        }
        if raises.is_empty() && !writes {
            return Ok(Vec::new());
        }
        if !rises {
            self.conn
                .set_sync(false)
                .map_err(sql("relax the sync of a count-only commit"))?;
        }
        let result = self.raise_taints_in_one(raises, sightings, limit, now);
        if !rises {
            // Back to FULL before anything else commits; if that fails the store is not
            // safe to use, and the error says so.
            self.conn
                .set_sync(true)
                .map_err(sql("restore synchronous=FULL"))?;
        }
        result
    }

    fn raise_taints_in_one(
        &mut self,
        raises: &[TaintRaise],
        sightings: &[Sightings],
        limit: u64,
        now: Timestamp,
    ) -> Result<Vec<StoredTaint>, StoreError> {
        let tx = self.write("raise sessions' taint")?;
        let out = raises
            .iter()
            .map(|r| raise_in(&tx, &r.session, r.class, r.untrusted, now).map(|(t, _)| t))
            .collect::<Result<Vec<_>, _>>()?;
        for s in sightings {
            record_in(&tx, s, limit)?;
        }
        tx.commit().map_err(sql("commit sessions' taint"))?;
        Ok(out)
    }

    /// An operator's reset: the session's taint goes back to `(public, false)`.
    ///
    /// Returns the taint it had, or `None` (and changes nothing) if the gate has never
    /// recorded anything of the session. A session known only from the person's prompts
    /// (no call yet) had `(public, false)`: its prompts are cleared and it is recorded as
    /// reset. The caller audits the reset.
    pub fn reset_session(
        &mut self,
        session: &SessionId,
        now: Timestamp,
    ) -> Result<Option<StoredTaint>, StoreError> {
        let tx = self.write("reset a session")?;
        // The provenance index goes with the taint (docs/spec.md §3.7), and so does what
        // the person's prompts made trusted (§3.10).
        let mut cleared = 0;
        for table in ["provenance", "provenance_sessions"]
            .into_iter()
            .chain(intent::TABLES)
        {
            cleared += tx
                .execute(
                    &format!("DELETE FROM {table} WHERE session = ?1"),
                    p![session.as_str()],
                )
                .map_err(sql("clear a session's provenance index"))?;
        }
        let Some(before) = read_taint(&tx, session)? else {
            if cleared > 0 {
                // A session the gate knows only from what it was told (the person's
                // prompts, before any call): cleared, and from now on a session of the
                // store's, reset once, so the reset is answered and audited like any other.
                tx.execute(
                    "INSERT INTO sessions (id, class, untrusted, created, updated, results, resets)
                     VALUES (?1, 'public', 0, ?2, ?2, 0, 1)",
                    p![session.as_str(), ts_to_sql(now)],
                )
                .map_err(sql("reset a session"))?;
                tx.commit().map_err(sql("commit a session reset"))?;
                return Ok(Some(StoredTaint::START));
            }
            tx.commit().map_err(sql("commit a session reset"))?;
            return Ok(None);
        };
        tx.execute(
            "UPDATE sessions SET class = 'public', untrusted = 0, updated = ?2,
             resets = resets + 1 WHERE id = ?1",
            p![session.as_str(), ts_to_sql(now)],
        )
        .map_err(sql("reset a session"))?;
        tx.commit().map_err(sql("commit a session reset"))?;
        Ok(Some(before))
    }

    /// What the session's provenance index holds of `value` (canonical text), if anything.
    pub fn provenance(
        &self,
        session: &SessionId,
        value: &str,
    ) -> Result<Option<ProvenanceRow>, StoreError> {
        read_provenance(&self.conn, session, value)
    }

    /// [`Store::provenance`] and [`Store::provenance_size`] in one statement (a decision
    /// asks both of a value the index does not hold): one round trip on PostgreSQL.
    pub fn provenance_sized(
        &self,
        session: &SessionId,
        value: &str,
    ) -> Result<(Option<ProvenanceRow>, IndexSize), StoreError> {
        type Sized = (
            Option<String>,
            Option<String>,
            Option<String>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
        );
        let (kind, seen, tool, call, argued, count, full): Sized = self
            .conn
            .query_opt(
                "SELECT p.kind, p.seen, p.tool, p.call, p.argued, z.count, z.\"full\"
                 FROM (SELECT CAST(?1 AS TEXT) AS session, CAST(?2 AS TEXT) AS value) k
                 LEFT JOIN provenance p ON p.session = k.session AND p.value = k.value
                 LEFT JOIN provenance_sessions z ON z.session = k.session",
                p![session.as_str(), value],
                seven,
            )
            .map_err(sql("read a session's provenance index"))?
            .ok_or(StoreError::Sql {
                op: "read a session's provenance index",
                source: DbError::NoRow,
            })?;
        let row = match (kind, seen, tool, call, argued) {
            (Some(kind), Some(seen), Some(tool), Some(call), Some(argued)) => {
                Some(provenance_row(kind, seen, tool, call, argued)?)
            }
            (None, None, None, None, None) => None,
            _ => {
                return Err(StoreError::Corrupt {
                    what: "a provenance row with empty columns".into(),
                });
            }
        };
        Ok((row, size_from_sql(count.zip(full))?))
    }

    /// How many values the session's provenance index holds, and whether it filled.
    pub fn provenance_size(&self, session: &SessionId) -> Result<IndexSize, StoreError> {
        read_size(&self.conn, session)
    }

    /// One recorded session, if the gate has recorded it.
    pub fn session(&self, session: &SessionId) -> Result<Option<SessionRow>, StoreError> {
        self.conn
            .query_opt(
                &format!("SELECT {SESSION_COLS} FROM sessions WHERE id = ?1"),
                p![session.as_str()],
                raw_session,
            )
            .map_err(sql("read a session"))?
            .map(RawSession::convert)
            .transpose()
    }

    /// Every recorded session, by id.
    pub fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        let raws = self
            .conn
            .query(
                &format!("SELECT {SESSION_COLS} FROM sessions ORDER BY id"),
                &[],
                raw_session,
            )
            .map_err(sql("list sessions"))?;
        raws.into_iter().map(RawSession::convert).collect()
    }

    // --- approvals ----------------------------------------------------------------------

    /// Records a pending approval with a fresh random id.
    pub fn create_approval(&mut self, new: NewApproval) -> Result<ApprovalRow, StoreError> {
        self.create_approval_with(new, Vec::new())
    }

    /// Records a pending approval with what the person is to be told about its call
    /// (docs/spec.md §3.7: a value that first appeared in an untrusted answer, …).
    pub fn create_approval_with(
        &mut self,
        new: NewApproval,
        concerns: Vec<proto::control::Concern>,
    ) -> Result<ApprovalRow, StoreError> {
        let id = new_approval_id()?;
        let files = files_to_sql(&new.files)?;
        let concerns_json = if concerns.is_empty() {
            None
        } else {
            Some(
                serde_json::to_string(&concerns).map_err(|e| StoreError::Corrupt {
                    what: format!("an approval's concerns ({e})"),
                })?,
            )
        };
        let tx = self.write("record an approval")?;
        let change = next_change(&tx)?;
        tx.execute(
            "INSERT INTO approvals (id, session, call, tool, arguments, reason, state,
                                    created, expires, changed, files, concerns)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?8, ?9, ?10, ?11)",
            p![
                id,
                new.session.as_str(),
                call_to_sql(new.call),
                new.tool,
                new.arguments,
                new.reason.as_str(),
                ts_to_sql(new.created),
                ts_to_sql(new.expires),
                change,
                files,
                concerns_json,
            ],
        )
        .map_err(sql("record an approval"))?;
        tx.commit().map_err(sql("commit an approval"))?;
        Ok(ApprovalRow {
            id,
            session: new.session,
            call: new.call,
            tool: new.tool,
            arguments: new.arguments,
            reason: new.reason,
            state: ApprovalState::Pending,
            created: new.created,
            // Read back what a reopen would read (a saturated time is clamped).
            expires: Timestamp(new.expires.0.min(i64::MAX.unsigned_abs())),
            decided: None,
            note: None,
            used: None,
            change: count_from_sql(change)?,
            decider: None,
            grant: None,
            files: new.files,
            concerns,
        })
    }

    /// One approval, if it exists.
    pub fn approval(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        get_approval(&self.conn, id)
    }

    /// Approvals, oldest first (pending ones only, or all of them).
    pub fn approvals(&self, filter: ApprovalFilter) -> Result<Vec<ApprovalRow>, StoreError> {
        let cond = match filter {
            ApprovalFilter::Pending => "WHERE state = 'pending'",
            ApprovalFilter::All => "",
        };
        let raws = self
            .conn
            .query(
                &format!("SELECT {APPROVAL_COLS} FROM approvals {cond} ORDER BY created, id"),
                &[],
                raw_approval,
            )
            .map_err(sql("list approvals"))?;
        raws.into_iter().map(RawApproval::convert).collect()
    }

    /// Approvals whose latest change is numbered above `after`, by change number, at most
    /// `limit`, each with its session's taint now; only pending ones with `pending_only`.
    pub fn approval_changes(
        &self,
        after: u64,
        limit: u64,
        pending_only: bool,
    ) -> Result<Vec<(ApprovalRow, StoredTaint)>, StoreError> {
        let cols: String = APPROVAL_COLS
            .split(", ")
            .map(|c| format!("a.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ");
        let cond = if pending_only {
            "AND a.state = 'pending'"
        } else {
            ""
        };
        let after = i64::try_from(after).unwrap_or(i64::MAX);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let raws = self
            .conn
            .query(
                &format!(
                    "SELECT {cols}, s.class, s.untrusted FROM approvals a
                     LEFT JOIN sessions s ON s.id = a.session
                     WHERE a.changed > ?1 {cond} ORDER BY a.changed LIMIT ?2"
                ),
                p![after, limit],
                |r| {
                    Ok((
                        raw_approval(r)?,
                        r.get::<Option<String>>(APPROVAL_COL_COUNT)?,
                        r.get::<Option<i64>>(APPROVAL_COL_COUNT + 1)?,
                    ))
                },
            )
            .map_err(sql("list approval changes"))?;
        raws.into_iter()
            .map(|(raw, class, untrusted)| {
                let taint = match class {
                    None => StoredTaint::START,
                    Some(c) => taint_from_sql(&c, untrusted.unwrap_or(0))?,
                };
                Ok((raw.convert()?, taint))
            })
            .collect()
    }

    /// How many approvals are pending.
    pub fn pending_count(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .conn
            .value(
                "SELECT COUNT(*) FROM approvals WHERE state = 'pending'",
                &[],
            )
            .map_err(sql("count pending approvals"))?;
        count_from_sql(n)
    }

    /// The number of the latest change to any approval (0 when there is none).
    pub fn approvals_head(&self) -> Result<u64, StoreError> {
        let head: i64 = self
            .conn
            .value("SELECT COALESCE(MAX(changed), 0) FROM approvals", &[])
            .map_err(sql("read the latest approval change"))?;
        count_from_sql(head)
    }

    /// A person's decision: `pending` → `approved` or `refused`, atomically, only if the
    /// approval is still pending and `now < expires`.
    ///
    /// Errors: [`StoreError::ApprovalNotFound`]; [`StoreError::ApprovalAlreadyDecided`]
    /// (naming the state it is in); [`StoreError::ApprovalExpired`] — in which case the
    /// approval is left `pending` for [`Store::expire_due`], so that the gate's one expiry
    /// path denies the held call and audits it.
    pub fn decide(
        &mut self,
        id: &str,
        decision: Decision,
        now: Timestamp,
    ) -> Result<ApprovalRow, StoreError> {
        self.decide_as(id, decision, None, None, now)
    }

    /// [`Store::decide`], keeping who decided (`by`) and, for an approval remembered for
    /// its session, writing its run-time grant in the same transaction (the grant exists
    /// exactly when the decision does). Remembering a refusal is
    /// [`StoreError::RememberRefusal`].
    pub fn decide_as(
        &mut self,
        id: &str,
        decision: Decision,
        by: Option<&Decider>,
        remember: Option<&Remember>,
        now: Timestamp,
    ) -> Result<ApprovalRow, StoreError> {
        if remember.is_some() && decision != Decision::Approve {
            return Err(StoreError::RememberRefusal { id: id.to_string() });
        }
        let tx = self.write("decide an approval")?;
        let mut row = pending_approval(&tx, id)?;
        if now >= row.expires {
            return Err(StoreError::ApprovalExpired {
                id: id.to_string(),
                expires: row.expires,
                now,
            });
        }
        let (state, note) = match decision {
            Decision::Approve => (ApprovalState::Approved, None),
            Decision::Refuse { reason } => (ApprovalState::Refused, reason),
        };
        let grant = match remember {
            None => None,
            Some(r) => {
                let files = files_to_sql(&r.files)?;
                tx.value::<i64>(
                    "INSERT INTO grants (tool, sessions, effect, max_class, if_untrusted,
                                         expires, added, args_sha256, arguments, approval,
                                         files)
                     VALUES (?1, ?2, 'allow', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) RETURNING id",
                    p![
                        row.tool,
                        row.session.as_str(),
                        r.max_class.as_str(),
                        r.if_untrusted.as_str(),
                        ts_to_sql(r.expires),
                        ts_to_sql(now),
                        r.args_sha256,
                        row.arguments,
                        row.id,
                        files,
                    ],
                )
                .map(Some)
                .map_err(sql("remember an approval"))?
            }
        };
        let change = next_change(&tx)?;
        tx.execute(
            "UPDATE approvals SET state = ?2, decided = ?3, note = ?4, changed = ?5,
                                  via = ?6, decided_by = ?7, grant_id = ?8
             WHERE id = ?1 AND state = 'pending'",
            p![
                id,
                state.as_str(),
                ts_to_sql(now),
                note,
                change,
                by.map(|d| d.via.as_str()),
                by.map(|d| d.by.as_str()),
                grant,
            ],
        )
        .map_err(sql("decide an approval"))?;
        tx.commit().map_err(sql("commit a decision"))?;
        row.state = state;
        row.decided = Some(now);
        row.note = note;
        row.change = count_from_sql(change)?;
        row.decider = by.cloned();
        row.grant = grant;
        Ok(row)
    }

    /// Moves every pending approval with `expires <= now` to `expired`, in one transaction,
    /// and returns them (now `expired`), oldest first. The gate denies their held calls
    /// `approval_expired` and audits each.
    pub fn expire_due(&mut self, now: Timestamp) -> Result<Vec<ApprovalRow>, StoreError> {
        let now_sql = ts_to_sql(now);
        let tx = self.write("expire approvals")?;
        let raws = tx
            .query(
                &format!(
                    "SELECT {APPROVAL_COLS} FROM approvals
                     WHERE state = 'pending' AND expires <= ?1 ORDER BY created, id"
                ),
                p![now_sql],
                raw_approval,
            )
            .map_err(sql("find expired approvals"))?;
        let mut rows = raws
            .into_iter()
            .map(RawApproval::convert)
            .collect::<Result<Vec<_>, _>>()?;
        if rows.is_empty() {
            return Ok(rows);
        }
        // One change number each, in the order listed, so a watcher that pages through
        // them by number misses none.
        let first = next_change(&tx)?;
        {
            for (i, row) in rows.iter_mut().enumerate() {
                let change = first.saturating_add(i64::try_from(i).unwrap_or(i64::MAX));
                tx.execute(
                    "UPDATE approvals SET state = 'expired', decided = ?2, changed = ?3
                     WHERE id = ?1 AND state = 'pending'",
                    p![row.id, now_sql, change],
                )
                .map_err(sql("expire approvals"))?;
                row.state = ApprovalState::Expired;
                row.decided = Some(now);
                row.change = count_from_sql(change)?;
            }
        }
        tx.commit().map_err(sql("commit expired approvals"))?;
        Ok(rows)
    }

    /// The client that made the call went away: `pending` → `withdrawn`.
    pub fn withdraw(&mut self, id: &str, now: Timestamp) -> Result<ApprovalRow, StoreError> {
        let tx = self.write("withdraw an approval")?;
        let mut row = pending_approval(&tx, id)?;
        let change = next_change(&tx)?;
        tx.execute(
            "UPDATE approvals SET state = 'withdrawn', decided = ?2, changed = ?3
             WHERE id = ?1 AND state = 'pending'",
            p![id, ts_to_sql(now), change],
        )
        .map_err(sql("withdraw an approval"))?;
        tx.commit().map_err(sql("commit a withdrawal"))?;
        row.state = ApprovalState::Withdrawn;
        row.decided = Some(now);
        row.change = count_from_sql(change)?;
        Ok(row)
    }

    /// Consumes an approved approval: it lets one call run, once. A second use, or the use
    /// of an approval that is not `approved`, is an error.
    ///
    /// It does not look at the expiry: the person decided in time. The gate still decides
    /// steps 1–4 again at this moment (docs/spec.md §3.3 step 6) before it runs the call.
    pub fn mark_used(&mut self, id: &str, now: Timestamp) -> Result<ApprovalRow, StoreError> {
        let tx = self.write("use an approval")?;
        let mut row = get_approval(&tx, id)?
            .ok_or_else(|| StoreError::ApprovalNotFound { id: id.to_string() })?;
        if row.state != ApprovalState::Approved {
            return Err(StoreError::ApprovalNotApproved {
                id: id.to_string(),
                state: row.state,
            });
        }
        if let Some(used) = row.used {
            return Err(StoreError::ApprovalAlreadyUsed {
                id: id.to_string(),
                used,
            });
        }
        let change = next_change(&tx)?;
        tx.execute(
            "UPDATE approvals SET used = ?2, changed = ?3 WHERE id = ?1 AND used IS NULL",
            p![id, ts_to_sql(now), change],
        )
        .map_err(sql("use an approval"))?;
        tx.commit().map_err(sql("commit the use of an approval"))?;
        row.used = Some(now);
        row.change = count_from_sql(change)?;
        Ok(row)
    }

    // --- run-time grants ----------------------------------------------------------------

    /// Adds a grant and returns its id.
    pub fn add_grant(&mut self, grant: NewGrant) -> Result<i64, StoreError> {
        let tx = self.write("add a grant")?;
        let id: i64 = tx
            .value(
                "INSERT INTO grants (tool, sessions, effect, max_class, if_untrusted, expires,
                                     added)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
                p![
                    grant.tool,
                    grant.sessions,
                    grant.effect.as_str(),
                    grant.max_class.map(DataClass::as_str),
                    grant.if_untrusted.map(Effect::as_str),
                    grant.expires.map(ts_to_sql),
                    ts_to_sql(grant.added),
                ],
            )
            .map_err(sql("add a grant"))?;
        tx.commit().map_err(sql("commit a grant"))?;
        Ok(id)
    }

    /// Revokes a run-time grant; the row stays, with its revocation time.
    pub fn revoke_grant(&mut self, id: i64, now: Timestamp) -> Result<GrantRow, StoreError> {
        let tx = self.write("revoke a grant")?;
        let mut row = get_grant(&tx, id)?.ok_or(StoreError::GrantNotFound { id })?;
        if let Some(revoked) = row.revoked {
            return Err(StoreError::GrantAlreadyRevoked { id, revoked });
        }
        tx.execute(
            "UPDATE grants SET revoked = ?2 WHERE id = ?1 AND revoked IS NULL",
            p![id, ts_to_sql(now)],
        )
        .map_err(sql("revoke a grant"))?;
        tx.commit().map_err(sql("commit a revocation"))?;
        row.revoked = Some(now);
        Ok(row)
    }

    /// The run-time grants not revoked, by id. Expired ones are included: expiry is the
    /// policy's business (it gives `grant_expired`).
    pub fn grants(&self) -> Result<Vec<GrantRow>, StoreError> {
        self.list_grants("WHERE revoked IS NULL")
    }

    /// What changes with every write to the run-time grants (ids only grow; a revocation
    /// is written once): the highest id and how many are revoked. A replica compares it
    /// before it decides by its cached grants.
    pub fn grants_stamp(&self) -> Result<(i64, i64), StoreError> {
        self.conn
            .query_opt(
                "SELECT COALESCE(MAX(id), 0), COUNT(revoked) FROM grants",
                &[],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(sql("read the run-time grants' stamp"))?
            .ok_or(StoreError::Sql {
                op: "read the run-time grants' stamp",
                source: DbError::NoRow,
            })
    }

    /// What a decision reads, in one statement on PostgreSQL: the session's taint, the
    /// grants stamp ([`Store::grants_stamp`]), and whether the call's arguments' sightings
    /// (`argued`, bounded at `limit` values a session) would write anything to the index —
    /// the rule of [`Store::raise_and_record`], judged from the rows as they are now. A
    /// row and the index's size only grow (but for a reset, which waits for the session's
    /// calls), so sightings judged to write nothing still write nothing when the call is
    /// committed; anything else is judged again under the write lock.
    pub fn decision_read(
        &self,
        session: &SessionId,
        argued: Option<&Sightings>,
        limit: u64,
    ) -> Result<DecisionRead, StoreError> {
        if !self.conn.is_shared() {
            let taint = self.taint(session)?;
            let grants_stamp = self.grants_stamp()?;
            let argued_writes = match argued {
                Some(s) => plan(self, s, limit)?.0,
                None => false,
            };
            return Ok(DecisionRead {
                taint,
                grants_stamp,
                argued_writes,
            });
        }
        let values: Vec<&str> = argued
            .map(|s| s.values.iter().map(|v| v.text.as_str()).collect())
            .unwrap_or_default();
        let values = serde_json::to_string(&values).map_err(|e| StoreError::Corrupt {
            what: format!("the call's values as JSON: {e}"),
        })?;
        type Row = (
            Option<String>,
            Option<i64>,
            i64,
            i64,
            Option<i64>,
            Option<i64>,
            Option<String>,
        );
        let (class, untrusted, top, revoked, count, full, rows): Row = self
            .conn
            .query_opt(
                "SELECT (SELECT class FROM sessions WHERE id = ?1),
                        (SELECT untrusted FROM sessions WHERE id = ?1),
                        (SELECT COALESCE(MAX(id), 0) FROM grants),
                        (SELECT COUNT(revoked) FROM grants),
                        (SELECT count FROM provenance_sessions WHERE session = ?1),
                        (SELECT \"full\" FROM provenance_sessions WHERE session = ?1),
                        (SELECT CAST(json_agg(json_build_array(value, kind, seen, tool, call,
                                                               argued)) AS TEXT)
                           FROM provenance WHERE session = ?1
                            AND value IN (SELECT json_array_elements_text(CAST(CAST(?2 AS TEXT) AS json))))",
                p![session.as_str(), values],
                seven,
            )
            .map_err(sql("read a session's taint"))?
            .ok_or(StoreError::Sql {
                op: "read a session's taint",
                source: DbError::NoRow,
            })?;
        let taint = match (class, untrusted) {
            (Some(class), Some(untrusted)) => taint_from_sql(&class, untrusted)?,
            _ => StoredTaint::START,
        };
        let argued_writes = match argued {
            None => false,
            Some(s) => {
                type Found = (String, String, String, String, i64, i64);
                let found: Vec<Found> = match rows {
                    None => Vec::new(),
                    Some(text) => serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
                        what: format!("a provenance row read as JSON: {e}"),
                    })?,
                };
                let mut held = std::collections::HashMap::with_capacity(found.len());
                for (value, kind, seen, tool, call, argued) in found {
                    held.insert(value, provenance_row(kind, seen, tool, call, argued)?);
                }
                let rows: Vec<Option<ProvenanceRow>> = s
                    .values
                    .iter()
                    .map(|v| held.get(&v.text).cloned())
                    .collect();
                judge(&rows, size_from_sql(count.zip(full))?, s, limit).0
            }
        };
        Ok(DecisionRead {
            taint,
            grants_stamp: (top, revoked),
            argued_writes,
        })
    }

    /// Publishes a replica's latest signed audit checkpoint (its line, as a witness keeps
    /// it) under its key, for a fleet checkpoint to gather: the newest delivered replaces
    /// the one before. The store does not vouch for it — the signature does, and the fleet
    /// checkpoint checks it ([`Store::audit_heads`]).
    pub fn publish_audit_head(
        &mut self,
        key_id: &str,
        public_key: &str,
        tree_size: u64,
        line: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let tx = self.write("publish an audit checkpoint")?;
        tx.execute(
            "INSERT INTO audit_heads (key_id, public_key, tree_size, line, updated)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (key_id) DO UPDATE SET public_key = excluded.public_key,
               tree_size = excluded.tree_size, line = excluded.line, updated = excluded.updated",
            p![
                key_id,
                public_key,
                i64::try_from(tree_size).unwrap_or(i64::MAX),
                line,
                ts_to_sql(now)
            ],
        )
        .map_err(sql("publish an audit checkpoint"))?;
        tx.commit().map_err(sql("commit an audit checkpoint"))
    }

    /// Every replica's published audit checkpoint: `(key id, public key, line)`, by key id.
    pub fn audit_heads(&self) -> Result<Vec<(String, String, String)>, StoreError> {
        self.conn
            .query(
                "SELECT key_id, public_key, line FROM audit_heads ORDER BY key_id",
                &[],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(sql("read the replicas' audit checkpoints"))
    }

    /// Every run-time grant ever added, revoked ones too, by id.
    pub fn all_grants(&self) -> Result<Vec<GrantRow>, StoreError> {
        self.list_grants("")
    }

    fn list_grants(&self, cond: &str) -> Result<Vec<GrantRow>, StoreError> {
        let raws = self
            .conn
            .query(
                &format!("SELECT {GRANT_COLS} FROM grants {cond} ORDER BY id"),
                &[],
                raw_grant,
            )
            .map_err(sql("list grants"))?;
        raws.into_iter().map(RawGrant::convert).collect()
    }
}

/// The stored taint of a session, `None` if it was never recorded.
fn read_taint(conn: &Db, session: &SessionId) -> Result<Option<StoredTaint>, StoreError> {
    let row: Option<(String, i64)> = conn
        .query_opt(
            "SELECT class, untrusted FROM sessions WHERE id = ?1",
            p![session.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql("read a session's taint"))?;
    row.map(|(class, untrusted)| taint_from_sql(&class, untrusted))
        .transpose()
}

/// A session's taint from its two columns.
fn taint_from_sql(class: &str, untrusted: i64) -> Result<StoredTaint, StoreError> {
    Ok(StoredTaint {
        class: class_from_sql(class)?,
        untrusted: untrusted != 0,
    })
}

/// A provenance index's size from its two columns, if the session has a row (none: empty).
fn size_from_sql(row: Option<(i64, i64)>) -> Result<IndexSize, StoreError> {
    Ok(match row {
        Some((count, full)) => IndexSize {
            count: count_from_sql(count)?,
            full: full != 0,
        },
        None => IndexSize::default(),
    })
}

/// The first seven columns of a row, each read as its type.
#[allow(clippy::type_complexity)]
fn seven<A: Col, B: Col, C: Col, D: Col, E: Col, F: Col, G: Col>(
    r: &DbRow<'_>,
) -> Result<(A, B, C, D, E, F, G), DbError> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

fn read_provenance(
    conn: &Db,
    session: &SessionId,
    value: &str,
) -> Result<Option<ProvenanceRow>, StoreError> {
    let row: Option<(String, String, String, i64, i64)> = conn
        .query_opt(
            "SELECT kind, seen, tool, call, argued FROM provenance
             WHERE session = ?1 AND value = ?2",
            p![session.as_str(), value],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .map_err(sql("read a session's provenance index"))?;
    row.map(|(kind, seen, tool, call, argued)| provenance_row(kind, seen, tool, call, argued))
        .transpose()
}

fn provenance_row(
    kind: String,
    seen: String,
    tool: String,
    call: i64,
    argued: i64,
) -> Result<ProvenanceRow, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt {
        what: format!("a provenance {what}"),
    };
    Ok(ProvenanceRow {
        kind: policy::values::Kind::from_name(&kind).ok_or_else(|| corrupt("kind"))?,
        seen: match seen.as_str() {
            "trusted" => SeenAs::Trusted,
            "untrusted" => SeenAs::Untrusted,
            "none" => SeenAs::None,
            _ => return Err(corrupt("sighting")),
        },
        tool,
        call: call_from_sql(call),
        argued: argued != 0,
    })
}

fn read_size(conn: &Db, session: &SessionId) -> Result<IndexSize, StoreError> {
    let row: Option<(i64, i64)> = conn
        .query_opt(
            "SELECT count, \"full\" FROM provenance_sessions WHERE session = ?1",
            p![session.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql("read the size of a session's provenance index"))?;
    size_from_sql(row)
}

/// What one sighting does to one value already in the index (or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    Insert {
        seen: SeenAs,
        argued: bool,
    },
    /// Seen now as this, first here.
    Seen(SeenAs),
    /// Passed in by the session's calls from now on.
    Argued,
    Nothing,
}

impl Change {
    /// The rule of [`Store::raise_and_record`] for one value (docs/spec.md §3.7):
    /// - a value the index does not hold is held as the sighting says (passed in: `none`);
    /// - **untrusted sticks**: an untrusted answer marks a value the session only passed in
    ///   as untrusted, and nothing ever makes an untrusted value trusted — a trusted answer
    ///   that shows it later may be the same value come back (through the workspace, a
    ///   store, a computation), and no answer can tell;
    /// - a trusted answer vouches only for what the index does not hold yet: never for a
    ///   value the session passed in (the echo guard), never over an untrusted one;
    /// - a value first seen trusted stays trusted when a call then passes it in.
    ///
    /// A new kind of sighting (the person's own words, say) is a new arm here, and says
    /// whether it may stand over what an answer showed.
    fn of(existing: Option<&ProvenanceRow>, sighting: Sighting) -> Change {
        match (existing, sighting) {
            (None, Sighting::Trusted) => Change::Insert {
                seen: SeenAs::Trusted,
                argued: false,
            },
            (None, Sighting::Untrusted) => Change::Insert {
                seen: SeenAs::Untrusted,
                argued: false,
            },
            (None, Sighting::Argued) => Change::Insert {
                seen: SeenAs::None,
                argued: true,
            },
            (Some(_), Sighting::Trusted) => Change::Nothing,
            (Some(r), Sighting::Untrusted) if r.seen == SeenAs::None => {
                Change::Seen(SeenAs::Untrusted)
            }
            (Some(r), Sighting::Argued) if r.seen != SeenAs::Trusted && !r.argued => Change::Argued,
            (Some(_), _) => Change::Nothing,
        }
    }

    /// Whether losing this write (a power cut after a relaxed commit) could let a value
    /// pass that should not: anything but adding trust.
    fn fails_open_if_lost(self) -> bool {
        match self {
            Change::Insert { seen, .. } | Change::Seen(seen) => seen != SeenAs::Trusted,
            Change::Argued => true,
            Change::Nothing => false,
        }
    }
}

/// Whether `s` writes anything, and whether losing that write could fail open.
fn plan(store: &Store, s: &Sightings, limit: u64) -> Result<(bool, bool), StoreError> {
    // Each value's row with the index's size, one statement a value; counted from the
    // first size read. Outside the write lock, like every read here: a row and the size
    // only grow (but for a reset, which waits for the session's calls), so what this
    // judges nothing to write stays so, and what is written is judged again under the
    // lock (`record_in`).
    let mut rows = Vec::with_capacity(s.values.len());
    let mut size = None;
    for v in &s.values {
        let (row, at) = store.provenance_sized(&s.session, &v.text)?;
        size.get_or_insert(at);
        rows.push(row);
    }
    let size = match size {
        Some(size) => size,
        None => read_size(&store.conn, &s.session)?,
    };
    Ok(judge(&rows, size, s, limit))
}

/// [`plan`]'s rule over rows already read (`rows[i]` what the index holds of
/// `s.values[i]`), and the index's size.
fn judge(
    rows: &[Option<ProvenanceRow>],
    size: IndexSize,
    s: &Sightings,
    limit: u64,
) -> (bool, bool) {
    let mut count = size.count;
    let (mut any, mut matters) = (false, false);
    if s.overflow && !size.full {
        any = true;
        matters = true;
    }
    for existing in rows {
        let change = Change::of(existing.as_ref(), s.sighting);
        if let Change::Insert { .. } = change {
            if count >= limit {
                if !size.full {
                    any = true;
                    matters = true;
                }
                continue;
            }
            count += 1;
        }
        any |= change != Change::Nothing;
        matters |= change.fails_open_if_lost();
    }
    (any, matters)
}

/// One session's sightings inside the caller's write transaction; whether losing what it
/// wrote could fail open (the rule of [`plan`], judged here under the write lock).
fn record_in(tx: &Db, s: &Sightings, limit: u64) -> Result<bool, StoreError> {
    let size = read_size(tx, &s.session)?;
    let (mut count, mut full) = (size.count, size.full || s.overflow);
    let call = call_to_sql(s.call);
    let mut matters = full && !size.full;
    for v in &s.values {
        let existing = read_provenance(tx, &s.session, &v.text)?;
        let change = Change::of(existing.as_ref(), s.sighting);
        matters |= change.fails_open_if_lost();
        let done = match change {
            Change::Nothing => Ok(0),
            Change::Insert { seen, argued } => {
                if count >= limit {
                    matters |= !size.full;
                    full = true;
                    continue;
                }
                count += 1;
                tx.execute(
                    "INSERT INTO provenance (session, value, kind, seen, tool, call, argued)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    p![
                        s.session.as_str(),
                        v.text,
                        v.kind.as_str(),
                        seen.as_str(),
                        s.tool,
                        call,
                        argued
                    ],
                )
            }
            Change::Seen(seen) => tx.execute(
                "UPDATE provenance SET seen = ?3, tool = ?4, call = ?5
                 WHERE session = ?1 AND value = ?2",
                p![s.session.as_str(), v.text, seen.as_str(), s.tool, call],
            ),
            Change::Argued => tx.execute(
                "UPDATE provenance SET argued = 1 WHERE session = ?1 AND value = ?2",
                p![s.session.as_str(), v.text.as_str()],
            ),
        };
        done.map_err(sql("write a session's provenance index"))?;
    }
    if count != size.count || full != size.full {
        tx.execute(
            "INSERT INTO provenance_sessions (session, count, \"full\") VALUES (?1, ?2, ?3)
             ON CONFLICT (session)
             DO UPDATE SET count = excluded.count, \"full\" = excluded.\"full\"",
            p![
                s.session.as_str(),
                i64::try_from(count).unwrap_or(i64::MAX),
                full
            ],
        )
        .map_err(sql("write the size of a session's provenance index"))?;
    }
    Ok(matters)
}

/// On PostgreSQL, a raise that raises nothing as one statement, outside any write
/// transaction: the result is counted only where the session's row already holds the
/// raise's label or above (PostgreSQL takes the row's lock and checks the condition again on
/// its newest version, so a concurrent raise or reset is before it or after it, never
/// half-seen), committed without waiting for the WAL's flush (`set_config(…, true)` is the
/// `SET LOCAL` of the statement's own transaction), and the taint it found returned. `None`
/// when it counted nothing — a new session, or a label the row does not hold: that raise
/// then goes through [`raise_in`] under the fleet's write lock. No fleet lock is needed
/// here: nothing is read and then written; a taint only rises, so a row that held the
/// label when the statement ran still did when it committed.
fn count_only(
    conn: &Db,
    r: &TaintRaise,
    now: Timestamp,
) -> Result<Option<StoredTaint>, StoreError> {
    const CLASSES: [DataClass; 4] = [
        DataClass::Public,
        DataClass::Internal,
        DataClass::Confidential,
        DataClass::Secret,
    ];
    // The classes at or above the label, as literals of the store's own names (never a
    // value from outside), so one prepared statement a label.
    let held = CLASSES
        .iter()
        .filter(|c| **c >= r.class)
        .map(|c| format!("'{}'", c.as_str()))
        .collect::<Vec<_>>()
        .join(", ");
    let untrusted = if r.untrusted {
        " AND untrusted = 1"
    } else {
        ""
    };
    let row: Option<(String, i64)> = conn
        .query_opt(
            &format!(
                "UPDATE sessions SET updated = ?2, results = results + 1
                 FROM (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed
                 WHERE id = ?1 AND class IN ({held}){untrusted}
                 RETURNING class, untrusted"
            ),
            p![r.session.as_str(), ts_to_sql(now)],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .map_err(sql("count a session's result"))?;
    row.map(|(class, untrusted)| taint_from_sql(&class, untrusted))
        .transpose()
}

/// One raise inside the caller's write transaction.
fn raise_in(
    tx: &Db,
    session: &SessionId,
    class: DataClass,
    untrusted: bool,
    now: Timestamp,
) -> Result<(StoredTaint, bool), StoreError> {
    // The result counted and the taint read under the write lock in one statement (the
    // count and time change; the label is what it was), then the label raised only if it
    // rises: a call whose answer raises nothing is one round trip on PostgreSQL.
    let row: Option<(String, i64)> = tx
        .query_opt(
            "UPDATE sessions SET updated = ?2, results = results + 1 WHERE id = ?1
             RETURNING class, untrusted",
            p![session.as_str(), ts_to_sql(now)],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql("write a session's taint"))?;
    let Some((old_class, old_untrusted)) = row else {
        // A new session's row, written durably whatever its label.
        let new = StoredTaint::START.raised(class, untrusted);
        tx.execute(
            "INSERT INTO sessions (id, class, untrusted, created, updated, results)
             VALUES (?1, ?2, ?3, ?4, ?4, 1)",
            p![
                session.as_str(),
                new.class.as_str(),
                new.untrusted,
                ts_to_sql(now)
            ],
        )
        .map_err(sql("write a session's taint"))?;
        return Ok((new, true));
    };
    let old = taint_from_sql(&old_class, old_untrusted)?;
    let new = old.raised(class, untrusted);
    if new != old {
        tx.execute(
            "UPDATE sessions SET class = ?2, untrusted = ?3 WHERE id = ?1",
            p![session.as_str(), new.class.as_str(), new.untrusted],
        )
        .map_err(sql("write a session's taint"))?;
    }
    Ok((new, new != old))
}

fn check_not_newer(path: &Path, found: i64) -> Result<(), StoreError> {
    debug_assert_eq!(MIGRATIONS.len(), PG_MIGRATIONS.len());
    if usize::try_from(found).map_or(true, |v| v > MIGRATIONS.len()) {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            supported: MIGRATIONS.len(),
        });
    }
    Ok(())
}

/// The number the next change to an approval takes: one above every approval's (inside the
/// caller's write transaction, so two writers never take the same number).
fn next_change(tx: &Db) -> Result<i64, StoreError> {
    let head: i64 = tx
        .value("SELECT COALESCE(MAX(changed), 0) FROM approvals", &[])
        .map_err(sql("number an approval's change"))?;
    if tx.is_shared() {
        // Every replica listening hears of it when (and only if) this commits: its watchers
        // wake, and it looks at the calls it holds (docs/spec.md §6, "Replicas").
        tx.batch(&format!("NOTIFY {APPROVALS_CHANNEL}"))
            .map_err(sql("tell the fleet an approval changed"))?;
    }
    Ok(head.saturating_add(1))
}

fn get_approval(conn: &Db, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
    conn.query_opt(
        &format!("SELECT {APPROVAL_COLS} FROM approvals WHERE id = ?1"),
        p![id],
        raw_approval,
    )
    .map_err(sql("read an approval"))?
    .map(RawApproval::convert)
    .transpose()
}

/// The approval, if it exists and is pending; the matching typed error otherwise.
fn pending_approval(conn: &Db, id: &str) -> Result<ApprovalRow, StoreError> {
    let row = get_approval(conn, id)?
        .ok_or_else(|| StoreError::ApprovalNotFound { id: id.to_string() })?;
    if row.state != ApprovalState::Pending {
        return Err(StoreError::ApprovalAlreadyDecided {
            id: id.to_string(),
            state: row.state,
        });
    }
    Ok(row)
}

fn get_grant(conn: &Db, id: i64) -> Result<Option<GrantRow>, StoreError> {
    conn.query_opt(
        &format!("SELECT {GRANT_COLS} FROM grants WHERE id = ?1"),
        p![id],
        raw_grant,
    )
    .map_err(sql("read a grant"))?
    .map(RawGrant::convert)
    .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sid(s: &str) -> SessionId {
        SessionId::new(s).unwrap()
    }

    fn new_approval(expires: u64) -> NewApproval {
        NewApproval {
            session: sid("s1"),
            call: CallId(7),
            tool: "run".into(),
            arguments: r#"{"cmd": "ls -la",  "x":[1, 2]}"#.into(),
            reason: ApprovalReason::GrantAsk,
            created: Timestamp(100),
            expires: Timestamp(expires),
            files: Vec::new(),
        }
    }

    /// On PostgreSQL a raise that raises nothing is one statement committed relaxed: the
    /// count is there for another replica at once, and the connection's own setting is the
    /// server's again for whatever it runs next.
    #[test]
    fn a_count_only_raise_on_postgres_is_seen_at_once_and_relaxes_nothing_after_it() {
        let pg = testkit::pg::Pg::start();
        let target = PgTarget::from_url(&pg.database("counts")).unwrap();
        let mut store = Store::open_shared(&target).unwrap();
        let other = Store::open_shared(&target).unwrap();
        let s = SessionId::new("s").unwrap();
        let raise = |class| TaintRaise {
            session: s.clone(),
            class,
            untrusted: false,
        };
        store
            .raise_taints(&[raise(DataClass::Confidential)], Timestamp(1))
            .unwrap();
        let out = store
            .raise_taints(
                &[raise(DataClass::Public), raise(DataClass::Internal)],
                Timestamp(2),
            )
            .unwrap();
        assert_eq!(out[0].class, DataClass::Confidential);
        assert_eq!(out[1].class, DataClass::Confidential);
        let setting: String = store
            .conn
            .value("SELECT current_setting('synchronous_commit')", &[])
            .unwrap();
        assert_eq!(setting, "on", "the relaxed commit outlived its statement");
        let row = other.session(&s).unwrap().unwrap();
        assert_eq!((row.results, row.updated), (3, Timestamp(2)));
    }

    #[test]
    fn a_count_only_batch_commits_and_leaves_the_store_at_synchronous_full() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let s = SessionId::new("s").unwrap();
        let raise = |class| TaintRaise {
            session: s.clone(),
            class,
            untrusted: false,
        };
        store
            .raise_taints(&[raise(DataClass::Confidential)], Timestamp(1))
            .unwrap();
        // Does not raise: committed without a sync, and the taint is as before.
        let out = store
            .raise_taints(&[raise(DataClass::Public)], Timestamp(2))
            .unwrap();
        assert_eq!(out[0].class, DataClass::Confidential);
        let sync: i64 = store
            .conn
            .lite()
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 2, "synchronous=FULL again after a count-only commit");
        // Read back through a second handle: the count-only commit is there.
        let other = Store::open(dir.path()).unwrap();
        let row = other.session(&s).unwrap().unwrap();
        assert_eq!(row.results, 2);
        assert_eq!(other.taint(&s).unwrap().class, DataClass::Confidential);
    }

    #[test]
    fn raised_taint_takes_the_max_and_ors_untrusted() {
        let t = StoredTaint::START.raised(DataClass::Secret, false);
        assert_eq!(
            t.raised(DataClass::Internal, true),
            StoredTaint {
                class: DataClass::Secret,
                untrusted: true
            }
        );
    }

    #[test]
    fn approval_ids_are_well_formed_and_differ() {
        let a = new_approval_id().unwrap();
        let b = new_approval_id().unwrap();
        assert!(is_approval_id(&a), "{a}");
        assert_ne!(a, b);
        assert!(!is_approval_id("ap-0123"));
        assert!(!is_approval_id("ap-0123456789ABCDEF"));
        assert!(!is_approval_id("xx-0123456789abcdef"));
    }

    #[test]
    fn call_ids_keep_all_64_bits() {
        for c in [0, 1, u64::MAX, 1 << 63] {
            assert_eq!(call_from_sql(call_to_sql(CallId(c))), CallId(c));
        }
    }

    #[test]
    fn open_sets_wal_full_and_modes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let store = Store::open(&state).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&state), 0o700);
        assert_eq!(mode(store.path()), 0o600);
        let sync: i64 = store
            .conn
            .lite()
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 2, "synchronous=FULL");
        let fk: i64 = store
            .conn
            .lite()
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
        assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64);
    }

    #[test]
    fn approval_col_count_is_the_columns_named() {
        assert_eq!(APPROVAL_COLS.split(',').count(), APPROVAL_COL_COUNT);
    }

    #[test]
    fn open_refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .conn
            .lite()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        drop(store);
        match Store::open(dir.path()) {
            Err(
                e @ StoreError::TooNew {
                    found: 99,
                    supported,
                    ..
                },
            ) => {
                assert_eq!(supported, MIGRATIONS.len());
                assert!(e.to_string().contains("newer boxmaker"), "{e}");
            }
            other => panic!("expected TooNew, got {other:?}"),
        }
    }

    #[test]
    fn a_version_2_database_gains_file_digests_and_its_rows_bind_none() {
        let dir = tempfile::tempdir().unwrap();
        // The person's state directory (marked, docs/spec.md §6 "Whose state"), then an old
        // database in it.
        statedir::file::Dir::own(dir.path()).unwrap();
        {
            let conn = Connection::open(dir.path().join(DB_FILE)).unwrap();
            for m in MIGRATIONS.iter().take(2) {
                conn.execute_batch(m).unwrap();
            }
            conn.pragma_update(None, "user_version", 2).unwrap();
            conn.execute_batch(
                "INSERT INTO approvals (id, session, call, tool, arguments, reason, state,
                                        created, expires, changed)
                 VALUES ('ap-0000000000000001', 's1', 1, 'run', '{}', 'grant_ask', 'pending',
                         1, 301, 1);
                 INSERT INTO grants (tool, sessions, effect, added, args_sha256, arguments,
                                     approval)
                 VALUES ('run', 's1', 'allow', 1, 'ab', '{}', 'ap-0000000000000001');",
            )
            .unwrap();
        }
        let mut store = Store::open(dir.path()).unwrap();
        assert_eq!(store.schema_version().unwrap(), MIGRATIONS.len() as i64);
        let old = store.approval("ap-0000000000000001").unwrap().unwrap();
        assert!(old.files.is_empty());
        let scope = store.grants().unwrap().remove(0).scope.unwrap();
        assert!(scope.files.is_empty());
        // What an approval binds now survives a reopen, exactly.
        let file = FileDigest {
            path: "/work/s.sh".into(),
            arg: 1,
            kind: proto::run::FileKind::File,
            sha256: Some("cd".repeat(32)),
            size: Some(14),
            note: None,
            pinned: true,
            was: Some("absent".into()),
        };
        let mut new = new_approval(500);
        new.files = vec![file.clone()];
        let row = store.create_approval(new).unwrap();
        let remember = Remember {
            expires: Timestamp(600),
            max_class: DataClass::Public,
            if_untrusted: Effect::Ask,
            args_sha256: "ef".repeat(32),
            files: vec![file.clone()],
        };
        store
            .decide_as(
                &row.id,
                Decision::Approve,
                None,
                Some(&remember),
                Timestamp(150),
            )
            .unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.approval(&row.id).unwrap().unwrap().files,
            vec![file.clone()]
        );
        let grants = store.grants().unwrap();
        assert_eq!(
            grants.last().unwrap().scope.as_ref().unwrap().files,
            vec![file]
        );
    }

    #[test]
    fn decide_checks_state_and_expiry() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let ap = store.create_approval(new_approval(200)).unwrap();
        assert!(matches!(
            store.decide(&ap.id, Decision::Approve, Timestamp(200)),
            Err(StoreError::ApprovalExpired { .. })
        ));
        // Left pending for expire_due.
        assert_eq!(
            store.approval(&ap.id).unwrap().unwrap().state,
            ApprovalState::Pending
        );
        let done = store
            .decide(
                &ap.id,
                Decision::Refuse {
                    reason: Some("no".into()),
                },
                Timestamp(199),
            )
            .unwrap();
        assert_eq!(done.state, ApprovalState::Refused);
        assert_eq!(store.approval(&ap.id).unwrap().unwrap(), done);
        assert!(matches!(
            store.decide(&ap.id, Decision::Approve, Timestamp(150)),
            Err(StoreError::ApprovalAlreadyDecided {
                state: ApprovalState::Refused,
                ..
            })
        ));
        assert!(matches!(
            store.decide("ap-0000000000000000", Decision::Approve, Timestamp(150)),
            Err(StoreError::ApprovalNotFound { .. })
        ));
    }

    #[test]
    fn saturated_expiry_reads_back_as_stored() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let ap = store.create_approval(new_approval(u64::MAX)).unwrap();
        assert_eq!(store.approval(&ap.id).unwrap().unwrap(), ap);
    }
}
