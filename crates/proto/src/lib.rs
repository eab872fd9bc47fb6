//! `proto` — every type that crosses a process boundary in boxmaker, and the frame codec.
//!
//! **Owns:** the identifiers (`ids`), the envelope and its messages (`wire`), the
//! length-prefixed frame codec (`frame`), and the strictness rules that make decoding
//! refuse anything the specification does not spell out (`strict`).
//!
//! **Must never:** hold policy, open sockets or files, or trust a length it has not
//! checked. Roles meet only through these types, so this crate stays small: types, the
//! codec, and nothing else.
//!
//! Reading order:
//! 1. [`ids`] — `SessionId` (checked when decoded), `CallId`, `Timestamp`, `DataClass`.
//! 2. [`wire`] — `Envelope`, `Message`, `ToolRequest`, `ToolResponse`, `WireError`, …
//! 3. [`frame`] — `read_frame` / `write_frame` and `FrameError`.
//! 4. [`control`] — the operator's channel to the gate, on the same codec.
//! 5. [`run`] — the gate's channel to its runner: a call with the session's taint, or a
//!    session to clear.
//! 6. [`decide`] — the front's narrow channel to the gate: show and decide a pending
//!    approval of its own session (a person's answer in the agent's client).
//! 7. [`telemetry`] — what the gate hands its telemetry exporter: one record per finished
//!    call (labels, decisions and times; never arguments, results or secrets), and the W3C
//!    `traceparent` a client's call carries.
//! 8. `strict` — the deserializer adapter that refuses arrays in place of objects.
//!
//! The JSON shape of every type is part of the format: field order, variant order and tag
//! names are fixed by `docs/spec.md` §2 and pinned by the fixtures in `tests/fixtures/`.

#![forbid(unsafe_code)]

pub mod control;
pub mod decide;
pub mod frame;
pub mod ids;
pub mod run;
pub mod shown;
mod strict;
pub mod telemetry;
pub mod wire;

pub use frame::{FrameError, MAX_FRAME, read_frame, write_frame};
pub use ids::{CallId, DataClass, SessionId, SessionIdError, Timestamp};
pub use strict::UnknownName;
pub use wire::{
    CallContext, DenyReason, Envelope, ErrorCode, Message, PROTOCOL_VERSION, ToolRequest,
    ToolResponse, WireError,
};
