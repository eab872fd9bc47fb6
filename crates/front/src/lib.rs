//! `front` — the front role: boxmaker as an MCP server that any agent can use (docs/spec.md §5).
//!
//! **Owns:** the MCP conversation (on the official Rust SDK, `rmcp`) over stdio and
//! streamable HTTP: `tools/list` from the config, `tools/call` turned into a `ToolRequest`
//! to the gate, the gate's answer turned into an MCP result (with the downstream server's
//! notifications it carries replayed just before it), a client's resource and prompt
//! requests turned into `ToolRequest`s to the server's own name, and the sentence that
//! explains a denial.
//!
//! **Must never:** trust anything it receives, hold state beyond each conversation's session
//! id, call counter, the log level its client asked for and which server listed which
//! resource or prompt to it (and, over HTTP, the key that checks conversation credentials and
//! which legacy MCP session belongs to which conversation; and, for a 2026-07-28 client asked
//! to approve with `input_required`, the gate connections of its waiting calls by approval id
//! and the random key that seals their `requestState`), start a session for a request
//! that does not name it by its connection or credential, open files, reach the control
//! socket, or run a tool. It can only send
//! `ToolRequest`s to the agent socket and, when the config lets a person approve in the
//! agent's client, show and decide its own session's pending approvals on the decision
//! socket; the gate decides everything. Once serving it is confined (no file, no exec, no
//! socket or connect of its own: [`confine`]).
//!
//! Reading order:
//! 1. [`tools`] — what `tools/list` shows, with schemas and descriptions.
//! 2. [`explain`] — the sentence of a denial.
//! 3. [`gatecall`] — one call through the gate, with its approval updates.
//! 4. [`server`] — `Front`, the `rmcp` server handler; [`replay`] — a downstream server's
//!    notifications during a call, sent to the client just before its result; [`offers`] —
//!    resources and prompts for a client, each request sent to the one server [`routes`]
//!    says.
//! 5. [`stdio`] — the stdio transport, which answers malformed input itself.
//! 6. [`http`] — streamable HTTP with a bearer credential and an `Origin` check;
//!    [`conversation`] — which conversation a request belongs to (its credential's).
//! 7. [`confine`] — how the front confines itself before it reads the agent's first byte;
//!    [`channel`] — the one way it then has to the gate: connections the launcher hands it.
//! 8. [`approve`] — approving in the agent's own client: the elicitation a person answers,
//!    and the front's side of the decision socket (docs/spec.md §2.5); [`held`] — the same
//!    form as a 2026-07-28 `input_required` result, and the call held for its retry.
//! 9. [`when`] — times as a person reads them.

#![forbid(unsafe_code)]

pub mod approve;
pub mod channel;
pub mod confine;
pub mod conversation;
pub mod explain;
pub mod gatecall;
pub mod held;
pub mod http;
pub mod offers;
pub mod replay;
pub mod routes;
pub mod server;
pub mod stdio;
pub mod tools;
pub mod when;

pub use server::Front;

/// Writes one line to stderr, for a person reading the client's log. Never panics (unlike
/// `eprintln!`): a client that closed our stderr must not bring a connection down.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
