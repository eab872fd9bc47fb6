//! What a downstream server says to its client while a call runs, and what it may not ask
//! of it (docs/spec.md §5, "A server's notifications").
//!
//! A server's `notifications/message` (logging) and `notifications/progress` during a call
//! are content the server wrote, as its result is: they are collected here per call and
//! carried inside that call's `result` (`catalog::Content::notifications`), so the gate
//! labels, redacts and indexes them with it, and the front replays them to the client just
//! before the result. The wire keeps its three answers (docs/spec.md §2.2).
//!
//! - [`Tap`] wraps the client's transport and reads each message as it arrives, in the order
//!   the server sent it: a notification sent before the result is always collected before
//!   the call sees its result (rmcp hands notifications to its handler on a task of their
//!   own, which may run after the result has been taken). The log messages and progress it
//!   collects stop there: rmcp would start a task for each (a flood of 50,000 cost the runner
//!   as many wake-ups of another thread), to hand it to a handler that ignores it.
//! - [`Listener`] keeps each call's notifications: a progress notification belongs to the
//!   call whose progress token it carries (each call sends one of its own); a log message,
//!   which names no call, to the oldest call in flight on that server (what the server logs
//!   between calls is dropped). At most [`MAX_NOTES`] a call, each at most [`MAX_NOTE`]
//!   bytes, [`MAX_NOTES_BYTES`] in all; past that they are counted, not kept.
//! - [`Handler`] is the client's side of the conversation: it says boxmaker can take a
//!   server's sampling and elicitation requests, and refuses each with one sentence
//!   ([`SAMPLING_REFUSED`], [`ELICITATION_REFUSED`]) — a tool's server may not prompt the
//!   agent's model or question its user through boxmaker. Saying so (rather than declaring
//!   neither) lets the server's own error carry the reason to the person.

// Logging and sampling are deprecated by the 2026 revision (SEP-2577); the servers people run
// today still send and ask for them, and rmcp marks every part of them so.
#![allow(deprecated)]

use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, ElicitationCapability, ErrorCode, FormElicitationCapability,
    NumberOrString, ProgressToken, SamplingCapability, ServerJsonRpcMessage, ServerNotification,
};
use rmcp::service::{RequestContext, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use serde_json::{Value, json};

/// The most notifications kept for one call.
pub const MAX_NOTES: usize = 256;
/// The largest notification kept, as JSON (bytes); a larger one is counted as left out.
pub const MAX_NOTE: usize = 16 * 1024;
/// The most bytes of notifications kept for one call.
pub const MAX_NOTES_BYTES: usize = 1024 * 1024;

/// What a server that asks the agent's model to sample is told.
pub const SAMPLING_REFUSED: &str = "boxmaker refuses a server's sampling request by design: a \
     tool's server may not prompt the agent's model (see the guide, \
     docs/guide/src/remote-servers.md, \"What boxmaker refuses by design\")";
/// What a server that asks the user a question is told.
pub const ELICITATION_REFUSED: &str = "boxmaker refuses a server's elicitation request by \
     design: a tool's server may not question the user through boxmaker (see the guide, \
     docs/guide/src/remote-servers.md, \"What boxmaker refuses by design\")";

/// The log message that follows a call's notifications when some were left out.
pub fn left_out_note(n: usize) -> Value {
    json!({
        "method": "notifications/message",
        "params": {
            "level": "warning",
            "data": {"message": format!(
                "boxmaker: {n} more notifications of the server were left out: a call keeps at most \
                 {MAX_NOTES} ({} KiB in all, {} KiB each)",
                MAX_NOTES_BYTES / 1024,
                MAX_NOTE / 1024
            )}
        }
    })
}

/// One call's notifications so far.
#[derive(Debug)]
struct Open {
    token: i64,
    notes: Vec<Value>,
    bytes: usize,
    left_out: usize,
}

impl Open {
    /// Keeps `note()` if it fits, else counts it. Past [`MAX_NOTES`] a note is only counted,
    /// never built; below, it is measured only up to the room left, so a flood costs the
    /// reader no more than reading it (a note measured whole, every time, to be dropped held
    /// the runner's reading thread longer than the server took to write the flood).
    fn keep(&mut self, note: impl FnOnce() -> Value) {
        let room = MAX_NOTE.min(MAX_NOTES_BYTES.saturating_sub(self.bytes));
        if self.notes.len() >= MAX_NOTES || room == 0 {
            self.left_out = self.left_out.saturating_add(1);
            return;
        }
        let note = note();
        let mut size = Bounded { len: 0, room };
        if serde_json::to_writer(&mut size, &note).is_err() {
            self.left_out = self.left_out.saturating_add(1);
            return;
        }
        self.bytes += size.len;
        self.notes.push(note);
    }
}

/// A writer that only counts, and fails past `room` bytes.
struct Bounded {
    len: usize,
    room: usize,
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.len = self.len.saturating_add(buf.len());
        if self.len > self.room {
            return Err(std::io::ErrorKind::FileTooLarge.into());
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The notifications of the calls in flight on one server, oldest call first.
#[derive(Debug, Clone, Default)]
pub struct Listener {
    open: Arc<Mutex<Vec<Open>>>,
    next: Arc<AtomicI64>,
}

impl Listener {
    /// Starts collecting for a call; the token is the progress token the call sends.
    pub fn open(&self) -> Heard {
        // From 1: a token of 0 is false to a server written in Python or JavaScript, which
        // then sends no progress at all.
        let token = self.next.fetch_add(1, Ordering::Relaxed).saturating_add(1);
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Open {
                token,
                notes: Vec::new(),
                bytes: 0,
                left_out: 0,
            });
        Heard {
            listener: self.clone(),
            token,
        }
    }

    /// Reads one message from the server: keeps it if it is a call's notification. True
    /// when the message was a log message or progress, which are boxmaker's to carry (the
    /// [`Tap`] then does not hand it on).
    fn hear(&self, message: &ServerJsonRpcMessage) -> bool {
        let rmcp::model::JsonRpcMessage::Notification(n) = message else {
            return false;
        };
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        match &n.notification {
            ServerNotification::ProgressNotification(p) => {
                let ProgressToken(NumberOrString::Number(token)) = &p.params.progress_token else {
                    return true;
                };
                if let Some(call) = open.iter_mut().find(|c| c.token == *token) {
                    call.keep(|| {
                        let mut params = json!({"progress": p.params.progress});
                        if let Some(total) = p.params.total {
                            params["total"] = json!(total);
                        }
                        if let Some(message) = &p.params.message {
                            params["message"] = json!(message);
                        }
                        json!({"method": "notifications/progress", "params": params})
                    });
                }
                true
            }
            ServerNotification::LoggingMessageNotification(m) => {
                if let Some(call) = open.first_mut() {
                    call.keep(|| {
                        let mut params = json!({"level": m.params.level, "data": m.params.data});
                        if let Some(logger) = &m.params.logger {
                            params["logger"] = json!(logger);
                        }
                        json!({"method": "notifications/message", "params": params})
                    });
                }
                true
            }
            _ => false,
        }
    }
}

/// One call's collection; it stops when dropped.
#[derive(Debug)]
pub struct Heard {
    listener: Listener,
    token: i64,
}

impl Heard {
    /// The progress token the call sends the server.
    #[cfg(test)]
    pub fn token(&self) -> ProgressToken {
        ProgressToken(NumberOrString::Number(self.token))
    }

    /// Marks a request's `_meta` with this call's progress token ([`TOKEN_MARK`]).
    pub fn mark(&self, meta: &mut rmcp::model::RequestMetaObject) {
        meta.insert(TOKEN_MARK.to_string(), json!(self.token));
    }

    /// The notifications heard so far (taken), and how many were left out.
    pub fn take(&self) -> (Vec<Value>, usize) {
        let mut open = self
            .listener
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        open.iter_mut()
            .find(|c| c.token == self.token)
            .map(|c| {
                (
                    std::mem::take(&mut c.notes),
                    std::mem::take(&mut c.left_out),
                )
            })
            .unwrap_or_default()
    }
}

impl Drop for Heard {
    fn drop(&mut self) {
        self.listener
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|c| c.token != self.token);
    }
}

/// Where a call's request carries its own progress token to [`Tap`], which puts it in place of
/// rmcp's on the way out (the key never reaches the server).
pub const TOKEN_MARK: &str = "io.boxmaker/progressToken";

/// How many notifications [`Tap`] reads in a row before it lets rmcp's loop look at its
/// other work.
const YIELD_EVERY: u32 = 64;

/// The MCP revisions boxmaker's client speaks, newest first: it asks a server with
/// `server/discover` at these, and falls back to the `initialize` handshake at
/// [`LEGACY_VERSION`] when the server answers as a server of an earlier revision
/// (docs/spec.md §3.9, "Both protocol eras").
pub fn modern_versions() -> Vec<rmcp::model::ProtocolVersion> {
    vec![rmcp::model::ProtocolVersion::V_2026_07_28]
}

/// The revision boxmaker's client names in `initialize` (the newest with a handshake).
pub const LEGACY_VERSION: rmcp::model::ProtocolVersion = rmcp::model::ProtocolVersion::V_2025_11_25;

/// Starts boxmaker's client on `transport` in whichever era the server speaks: rmcp's auto
/// lifecycle, `server/discover` first, then `initialize` when the server is of an earlier
/// revision (a 2026-07-28 server has no `initialize`; a server of 2025-11-25 or before has no
/// `server/discover`).
pub async fn connect<T, E, A>(
    transport: T,
) -> Result<rmcp::service::RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    use rmcp::service::ClientServiceExt as _;
    Handler
        .serve_with_lifecycle(
            transport,
            rmcp::service::ClientLifecycleMode::Auto {
                preferred_versions: modern_versions(),
                legacy_version: Some(LEGACY_VERSION),
            },
        )
        .await
}

/// Why [`connect_or_refused`] did not connect.
#[derive(Debug)]
pub enum Refused {
    /// The server answered `server/discover` with an HTTP error rather than a JSON-RPC one
    /// (a server of an earlier revision that refuses a request before `initialize`): try
    /// its handshake on a new transport.
    Discover(String),
    /// Anything else, in the words `runner::downstream::within` uses.
    Other(String),
}

/// [`connect`] within `timeout`, telling a refused `server/discover` apart.
pub async fn connect_or_refused<T, E, A>(
    transport: T,
    timeout: std::time::Duration,
) -> Result<rmcp::service::RunningService<RoleClient, Handler>, Refused>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(timeout, connect(transport)).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(rmcp::service::ClientInitializeError::TransportError { error, context }))
            if context.contains("discover") =>
        {
            Err(Refused::Discover(format!("{error}")))
        }
        Ok(Err(e)) => Err(Refused::Other(format!(
            "the server did not initialize ({e})"
        ))),
        Err(_) => Err(Refused::Other(format!(
            "the server did not initialize within {} s",
            timeout.as_secs()
        ))),
    }
}

/// Starts boxmaker's client on `transport` with the `initialize` handshake at
/// [`LEGACY_VERSION`] alone.
pub async fn initialize<T, E, A>(
    transport: T,
) -> Result<rmcp::service::RunningService<RoleClient, Handler>, rmcp::service::ClientInitializeError>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    use rmcp::service::ClientServiceExt as _;
    Handler
        .serve_with_lifecycle(transport, rmcp::service::ClientLifecycleMode::Initialize)
        .await
}

/// The key of a 2026-07-28 request's log opt-in (`_meta`): a server of that revision sends
/// `notifications/message` only for a request that carries it. Every request boxmaker sends
/// a server carries it at `debug`, so what a server logs while a call runs still comes back
/// inside the call's result (docs/spec.md §5); a server of an earlier revision ignores it.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// A client transport whose every incoming message [`Listener`] reads first, in order; the
/// log messages and progress it keeps are not handed on.
pub struct Tap<T> {
    inner: T,
    listener: Listener,
}

impl<T> std::fmt::Debug for Tap<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tap")
            .field("listener", &self.listener)
            .finish_non_exhaustive()
    }
}

impl<T> Tap<T> {
    pub fn new(inner: T, listener: Listener) -> Self {
        Self { inner, listener }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Tap<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // rmcp gives every request a progress token of its own counter, over the one the
        // call set; its counter also counts the server's other requests (a pin's tools/list,
        // a resource read), so the server's progress came back under a token no call held.
        // The call's own token rides under `TOKEN_MARK` and is put in place here, on the way
        // out, where nothing sets it again.
        // (A call's `params._meta` is the base of the `_meta` sent; what rmcp keeps in the
        // request's extensions, its own token among it, is laid over it.)
        if let rmcp::model::JsonRpcMessage::Request(r) = &mut item {
            rmcp::model::GetMeta::get_meta_mut(&mut r.request)
                .insert(LOG_LEVEL.to_string(), json!("debug"));
            let marked = match &mut r.request {
                rmcp::model::ClientRequest::CallToolRequest(call) => call
                    .params
                    .meta
                    .as_mut()
                    .and_then(|m| m.remove(TOKEN_MARK))
                    .and_then(|v| v.as_i64()),
                _ => None,
            };
            if let Some(token) = marked {
                rmcp::model::GetMeta::get_meta_mut(&mut r.request)
                    .set_progress_token(ProgressToken(NumberOrString::Number(token)));
            }
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut heard = 0u32;
        loop {
            let message = self.inner.receive().await;
            match &message {
                // Kept (or counted) here, and nothing rmcp acts on: rmcp would start a task
                // for each, to hand it to a handler that ignores it.
                Some(m) if self.listener.hear(m) => {
                    heard = heard.wrapping_add(1);
                    // rmcp's loop waits on this and on what it has to send: a flood read
                    // whole in one wait would hold the rest back.
                    if heard.is_multiple_of(YIELD_EVERY) {
                        tokio::task::yield_now().await;
                    }
                }
                _ => return message,
            }
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// boxmaker as a downstream server's client: it refuses the server's sampling and
/// elicitation requests, with the reason.
#[derive(Debug, Clone, Copy, Default)]
pub struct Handler;

impl ClientHandler for Handler {
    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        Err(McpError::new(ErrorCode(-1), SAMPLING_REFUSED, None))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        Err(McpError::new(ErrorCode(-1), ELICITATION_REFUSED, None))
    }

    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.sampling = Some(SamplingCapability::default());
        let mut elicitation = ElicitationCapability::default();
        elicitation.form = Some(FormElicitationCapability::default());
        caps.elicitation = Some(elicitation);
        let mut config = ClientConfig::default();
        config.capabilities = caps;
        // What `initialize` names: the newest revision that has a handshake (rmcp's default
        // is 2026-07-28, which has none; discovery names its own versions).
        config.protocol_version = LEGACY_VERSION;
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        JsonRpcMessage, JsonRpcNotification, JsonRpcVersion2_0, LoggingLevel,
        LoggingMessageNotificationParam, Notification, ProgressNotificationParam,
    };

    fn note(n: ServerNotification) -> ServerJsonRpcMessage {
        JsonRpcMessage::Notification(JsonRpcNotification {
            jsonrpc: JsonRpcVersion2_0,
            notification: n,
        })
    }

    fn progress(token: i64, p: f64) -> ServerJsonRpcMessage {
        note(ServerNotification::ProgressNotification(Notification::new(
            ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), p),
        )))
    }

    fn log(text: &str) -> ServerJsonRpcMessage {
        note(ServerNotification::LoggingMessageNotification(
            Notification::new(LoggingMessageNotificationParam::new(
                LoggingLevel::Info,
                json!(text),
            )),
        ))
    }

    #[test]
    fn progress_goes_to_the_call_whose_token_it_carries_and_logs_to_the_oldest() {
        let l = Listener::default();
        let a = l.open();
        let b = l.open();
        let ProgressToken(NumberOrString::Number(tb)) = b.token() else {
            panic!()
        };
        l.hear(&progress(tb, 50.0));
        l.hear(&progress(999, 1.0));
        l.hear(&log("started"));
        let (notes_a, _) = a.take();
        let (notes_b, _) = b.take();
        assert_eq!(notes_a.len(), 1);
        assert_eq!(notes_a[0]["method"], "notifications/message");
        assert_eq!(notes_a[0]["params"]["data"], "started");
        assert_eq!(notes_b.len(), 1);
        assert_eq!(notes_b[0]["params"]["progress"], 50.0);
        // The server's token is never kept: the front puts the client's own in its place.
        assert!(notes_b[0]["params"].get("progressToken").is_none());
    }

    #[test]
    fn what_a_server_logs_between_calls_is_dropped() {
        let l = Listener::default();
        l.hear(&log("nobody listens"));
        let a = l.open();
        assert!(a.take().0.is_empty());
        drop(a);
        assert!(l.open.lock().unwrap().is_empty());
    }

    #[test]
    fn a_flood_of_notifications_is_kept_within_bounds_and_counted() {
        let l = Listener::default();
        let a = l.open();
        for i in 0..10_000 {
            l.hear(&log(&format!("line {i}")));
        }
        l.hear(&log(&"x".repeat(MAX_NOTE * 2)));
        let (notes, left_out) = a.take();
        assert_eq!(notes.len(), MAX_NOTES);
        assert_eq!(left_out, 10_001 - MAX_NOTES);
        let big = Listener::default();
        let b = big.open();
        for _ in 0..200 {
            big.hear(&log(&"y".repeat(MAX_NOTE - 200)));
        }
        let (notes, left_out) = b.take();
        let bytes: usize = notes.iter().map(|n| n.to_string().len()).sum();
        assert!(bytes <= MAX_NOTES_BYTES, "{bytes}");
        assert!(left_out > 0);
    }

    #[test]
    fn a_note_past_a_cap_is_counted_without_being_built() {
        let mut by_count = Open {
            token: 1,
            notes: Vec::new(),
            bytes: 0,
            left_out: 0,
        };
        for _ in 0..MAX_NOTES {
            by_count.keep(|| json!("x"));
        }
        by_count.keep(|| panic!("a note past MAX_NOTES was built"));
        assert_eq!((by_count.notes.len(), by_count.left_out), (MAX_NOTES, 1));
        // 64 notes of exactly MAX_NOTE bytes (a string and its two quotes) fill the bytes.
        let mut by_bytes = Open {
            token: 2,
            notes: Vec::new(),
            bytes: 0,
            left_out: 0,
        };
        for _ in 0..MAX_NOTES_BYTES / MAX_NOTE {
            by_bytes.keep(|| json!("z".repeat(MAX_NOTE - 2)));
        }
        assert_eq!(by_bytes.bytes, MAX_NOTES_BYTES);
        by_bytes.keep(|| panic!("a note past MAX_NOTES_BYTES was built"));
        assert_eq!(by_bytes.left_out, 1);
        // One byte over the room is left out; what fits after it is still kept.
        let mut edge = Open {
            token: 3,
            notes: Vec::new(),
            bytes: 0,
            left_out: 0,
        };
        edge.keep(|| json!("w".repeat(MAX_NOTE - 1)));
        edge.keep(|| json!("w".repeat(MAX_NOTE - 2)));
        assert_eq!(
            (edge.notes.len(), edge.left_out, edge.bytes),
            (1, 1, MAX_NOTE)
        );
    }

    #[test]
    fn the_tap_keeps_log_and_progress_and_hands_on_only_the_rest() {
        let mut input = String::new();
        input.push_str(
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\
             \"params\":{\"level\":\"info\",\"data\":\"one\"}}\n",
        );
        input.push_str(
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\
             \"params\":{\"progressToken\":1,\"progress\":5}}\n",
        );
        input.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n");
        input.push_str("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n");
        let listener = Listener::default();
        let call = listener.open();
        let lines = crate::transport::Lines::new(
            std::io::Cursor::new(input.into_bytes()),
            tokio::io::sink(),
            crate::transport::Reason::default(),
        );
        let mut tap = Tap::new(lines, listener.clone());
        let (first, second, end) = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(async {
                (
                    tap.receive().await,
                    tap.receive().await,
                    tap.receive().await,
                )
            });
        assert!(
            matches!(
                first,
                Some(JsonRpcMessage::Notification(JsonRpcNotification {
                    notification: ServerNotification::ToolListChangedNotification(_),
                    ..
                }))
            ),
            "{first:?}"
        );
        assert!(
            matches!(second, Some(JsonRpcMessage::Response(_))),
            "{second:?}"
        );
        assert!(end.is_none());
        let (notes, left_out) = call.take();
        assert_eq!(left_out, 0);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(notes[0]["params"]["data"], "one");
        assert_eq!(notes[1]["params"]["progress"], 5.0);
    }

    /// A transport that keeps what it is sent.
    struct Sent(Arc<Mutex<Vec<TxJsonRpcMessage<RoleClient>>>>);

    impl Transport<RoleClient> for Sent {
        type Error = std::io::Error;
        fn send(
            &mut self,
            item: TxJsonRpcMessage<RoleClient>,
        ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
            self.0.lock().unwrap().push(item);
            std::future::ready(Ok(()))
        }
        async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
            None
        }
        async fn close(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }

    #[test]
    fn a_call_goes_out_under_its_own_progress_token_not_rmcps() {
        // rmcp stamps every request with its own counter, which also counts a pin's
        // tools/list or a resource read: the server's progress then named a token no call
        // held, and was dropped (the conformance run lost it after a few offers).
        let listener = Listener::default();
        let call = listener.open();
        let mut params = rmcp::model::CallToolRequestParams::new("t");
        let mut meta = rmcp::model::RequestMetaObject::new();
        call.mark(&mut meta);
        params.meta = Some(meta);
        let mut request =
            rmcp::model::ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(params));
        rmcp::model::GetMeta::get_meta_mut(&mut request)
            .set_progress_token(ProgressToken(NumberOrString::Number(41)));
        let message = JsonRpcMessage::request(request, rmcp::model::RequestId::Number(41));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let mut tap = Tap::new(Sent(sent.clone()), listener.clone());
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(tap.send(message))
            .unwrap();
        let wire = serde_json::to_value(&sent.lock().unwrap()[0]).unwrap();
        let meta = &wire["params"]["_meta"];
        let ProgressToken(NumberOrString::Number(own)) = call.token() else {
            panic!("a number token")
        };
        assert_eq!(meta["progressToken"], json!(own), "{wire}");
        assert!(meta.get(TOKEN_MARK).is_none(), "{wire}");
    }

    #[test]
    fn sampling_and_elicitation_are_declared_so_that_a_server_hears_the_reason() {
        let info = Handler.get_info();
        assert!(info.capabilities.sampling.is_some());
        assert!(
            info.capabilities
                .elicitation
                .as_ref()
                .is_some_and(|e| e.form.is_some())
        );
    }
}
