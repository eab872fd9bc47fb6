//! `page` — the approvals page (`boxmaker serve --approvals ADDR`, docs/spec.md §5): a live
//! inbox of the calls that wait for a person, in the browser.
//!
//! **Owns:** an HTTP server on loopback (unless the caller allows another address) that
//! serves one page and its script and style from the binary (no third-party asset, nothing
//! fetched), a login with a token, and a small JSON API the page uses: what waits now and
//! what was decided lately, every change as it happens (long polling), and a person's
//! decision. It is a client of the gate's **control socket**, like the CLI: every answer
//! comes from, and every decision goes to, the gate.
//!
//! **Must never:** reach the agent socket or the decision socket; decide anything itself;
//! show a call other than as the gate holds it (every text a person decides on goes through
//! [`front::explain::for_person`], and the page inserts it as text, never as markup); take a
//! state change without the login cookie, the login's CSRF token and this page's own
//! `Origin`; answer a `Host` that is not this server's (DNS rebinding).
//!
//! Modules, in reading order:
//! - [`auth`] — the login token, logins and their CSRF tokens, and the `Host`/`Origin` rules.
//! - [`gatelink`] — one control request to the gate, off the async threads.
//! - [`view`] — approvals as the page shows them (escaped), and the decision it sends.
//! - [`server`] — the routes.
#![forbid(unsafe_code)]

pub mod auth;
pub mod gatelink;
pub mod server;
pub mod view;

pub use server::{Page, PageError, bind, serve_on};
