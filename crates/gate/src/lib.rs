//! The gate role (docs/spec.md §1, §3.2, §3.3, §6): it decides every call, holds the calls that
//! need a person, raises taint before it releases a result, and owns all state.
//!
//! **Owns**: the gate's durable state — sessions and their taint, approvals and their states,
//! grants added at run time — in one SQLite database (`boxmaker.db`; or, with `[gate] store`,
//! a PostgreSQL database a fleet of replicas shares: `store/db.rs`), and the tamper-evident
//! audit log (`audit.log`), both in the state directory, and the key that signs the log's
//! checkpoints, beside it. The gate is the only process that opens any of them. It also owns the decision on the call path and the operator's control
//! socket. It reads, never writes, the discovery file `tools.json` (`crates/catalog`): what
//! the servers wrote about their tools is untrusted in every session's provenance
//! ([`gate::described`]).
//!
//! **Must never**: lower a session's taint except through an operator's reset; return from a
//! write before it is durable on disk (the gate releases nothing it has not committed);
//! store the content of a tool result (only its size, hash and label); rewrite or reorder a
//! record of the audit log once written; sign a checkpoint over records that are not yet
//! durable, or keep its key inside the state directory; trust the audit log when reading it
//! back; add to a log that does not extend the checkpoints it knows, or write a checkpoint
//! over or after one its log does not extend (only a person's `new-chain` starts a log
//! anew, and records why); run a
//! tool or open the network (it asks the runner, over [`link`]); depend on `runner`,
//! `sandbox` or `front` (roles meet only through `proto` messages); answer a message its
//! peer may not send (an allowlist monitor, in the OpenSSH sense).
//!
//! Modules, in reading order:
//! - [`store`] — [`store::Store`]: the state, on SQLite or a fleet's PostgreSQL (one set of
//!   rules over `store/db.rs`). Every write is one committed
//!   transaction (`raise_taint`, `raise_taints`, `raise_and_record` — with the provenance
//!   index —, `reset_session`, `create_approval`, `decide`, `expire_due`, `withdraw`,
//!   `mark_used`, `add_grant`, `revoke_grant`).
//! - [`audit`] — [`audit::AuditLog`]: the hash-chained JSON-lines log (`append`,
//!   `append_batch`), the typed [`audit::Event`]s, and the readers [`audit::verify`] and
//!   [`audit::tail`]. The module docs define the canonical form the hash covers.
//! - [`anchor`] — what the chain cannot see: the RFC 6962 tree over the records, the
//!   Ed25519-signed checkpoints of its head, the witnesses outside the state directory that
//!   are handed each one, and [`anchor::verify`], which proves a log extends them (the
//!   gate's start check runs the same [`anchor::Checker`] in the pass that rebuilds the
//!   tree); [`anchor::chain::new_chain`], a person's way on from a log that does not.
//! - [`link`] — [`link::ToolRunner`], what the gate asks of a runner;
//!   [`link::RunnerLink`], which asks it over a frame stream and fails every call (never
//!   hangs) when the runner dies or misbehaves; and [`link::RunnerHandle`], whose link the
//!   supervisor replaces when it restarts the runner.
//! - [`gate`] — [`gate::Gate`]: the request loop of docs/spec.md §3.3 (decide, run, commit
//!   the taint, audit, answer) in `gate/mod.rs`; calls held for a person (hold, re-check on
//!   approval, expiry, withdrawal) in `gate/approvals.rs`; when to sign a checkpoint, in
//!   `gate/anchoring.rs`; the handler of the operator's
//!   control requests in `gate/operator.rs`.
//! - [`serve`] — the connection loops over any stream ([`serve::serve_agent`],
//!   [`serve::serve_control`]), and the `0600` sockets in the state directory.
//! - [`telemetry`] — what the gate reports of each call for OpenTelemetry (docs/spec.md §8):
//!   labels and times taken where the call path audits, handed to an exporter process over
//!   a pipe (the gate opens no network).
//! - [`serve_decide`] — the decision socket's loop: a front shows and decides a pending
//!   approval of its own session (a person's answer in the agent's client), nothing else.
//!
//! A gate opens both stores at start: `Gate::open(config, runner)` (or `Store::open(dir)`
//! and `Gate::open_audit(config)` then `Gate::new`, which refuses a log not opened so; log
//! the returned `Repaired` notice if there is one).
#![forbid(unsafe_code)]

pub mod anchor;
pub mod audit;
mod commit;
mod conns;
pub mod gate;
pub mod link;
pub mod serve;
pub mod serve_decide;
pub mod store;
pub mod telemetry;

pub use gate::{Gate, GateError, Reply};
pub use link::{EventSink, RunnerEvents, RunnerHandle, RunnerLink, ToolRunner};
