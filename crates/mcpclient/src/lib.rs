//! `mcpclient` — boxmaker as an MCP client of the servers a config names: the transports it
//! speaks to a server in a box (stdio) and to a remote one (streamable HTTP), what a server
//! says to it during a call, and the OAuth sign-in of a remote server.
//!
//! **Owns:** the bounded line transport of a stdio server ([`transport`]: no message past
//! its cap, no request id reused); the client handler and the handshake in both protocol
//! eras ([`heard`]: `server/discover`, then `initialize`; sampling and elicitation refused);
//! the remote client ([`remote`]: every request — MCP and sign-in alike — decided by the
//! egress proxy's one decision, addresses checked, TLS verified, audited); the sign-in
//! ([`oauth`]: metadata and challenge checks, registration, the loopback callback, the
//! sealed token store, revocation; PKCE, the token requests and refresh by the `oauth2`
//! crate, whose only HTTP client is the remote client's `fetch`).
//!
//! **Must never:** reach the network except through [`egress::Egress::decide`], send a
//! credential to any host but the server's own, trust what a server or its authorization
//! server says (each document and redirect is read bounded and checked), start a box, label
//! a result, or decide policy. It trusts the runner that wires it in ([`Wiring`]) and nothing
//! a server sends. Running servers in boxes, labelling what they answer and the per-session
//! hub are the runner's (`runner::downstream`).

#![forbid(unsafe_code)]

pub mod heard;
pub mod oauth;
pub mod remote;
pub mod transport;

use std::path::Path;
use std::sync::Arc;

/// What the MCP client takes from the runner that wires it in: the config, the state
/// directory (where sign-ins are kept), the secrets a remote server's headers name, and the
/// egress proxy every request goes through.
pub trait Wiring: Send + Sync {
    /// The config the runner runs.
    fn config(&self) -> &config::Config;
    /// The state directory.
    fn state_dir(&self) -> &Path;
    /// The runner's secrets (read on first use; what is read is redacted).
    fn secrets(&self) -> &Arc<secrets::Secrets>;
    /// The egress proxy whose decision every request takes.
    fn egress(&self) -> &Arc<egress::Egress>;
}
