//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout, with the checks a hostile
//! client needs (docs/spec.md §5 and issue 6, "Bad input").
//!
//! rmcp's own stdio transport silently drops a line that is not JSON (no `-32700`), silently
//! drops a line over its length cap (the caller's request then waits forever), answers every
//! malformed message with a bare `-32600` even when its `id` is readable, reads
//! `"arguments": null` as "no arguments", and ends the whole session when a notification
//! arrives before `initialize`. This transport sits in front of rmcp's service loop instead:
//! it reads bounded lines, answers what is wrong itself with the JSON-RPC error that names
//! it, and hands rmcp only messages that parse.

use std::collections::VecDeque;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ErrorCode, ErrorData, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, Semaphore};

/// The longest line (one JSON-RPC message) read from the client, in bytes: the same as
/// rmcp's cap on an HTTP request body. The gate takes arguments of at most
/// [`crate::server::MAX_ARGUMENTS`], so nothing longer could be forwarded anyway.
pub const MAX_LINE: usize = 4 * 1024 * 1024;

/// How many error answers may wait for stdout at once; past that the transport stops reading
/// until the client reads, so a client that floods bad lines and never reads stays bounded.
const MAX_PENDING_REPLIES: usize = 64;

/// The MCP request methods rmcp knows: a request naming one of these that rmcp could not
/// parse has bad params (`-32602`), not an unknown method.
pub fn is_standard_method(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "ping"
            | "server/discover"
            | "prompts/get"
            | "prompts/list"
            | "resources/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe"
            | "resources/templates/list"
            | "resources/directory/read"
            | "subscriptions/listen"
            | "tools/call"
            | "tools/list"
            | "completion/complete"
            | "logging/setLevel"
            | "tasks/get"
            | "tasks/update"
            | "tasks/cancel"
            | "skills/list"
            | "skills/get"
    )
}

/// An error answer to one incoming message.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The request's id, when it could be read (omitted from the answer otherwise, as MCP's
    /// error responses allow).
    pub id: Option<RequestId>,
    pub error: ErrorData,
}

impl Refusal {
    fn new(id: Option<RequestId>, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            id,
            error: ErrorData::new(code, message.into(), None),
        }
    }

    /// The JSON-RPC error response.
    pub fn to_json(&self) -> Value {
        let mut v = json!({"jsonrpc": "2.0", "error": self.error});
        if let (Some(id), Some(map)) = (&self.id, v.as_object_mut()) {
            map.insert("id".into(), json!(id));
        }
        v
    }
}

/// A usable JSON-RPC id: a string or an integer (MCP: never null).
fn read_id(v: &Value) -> Option<RequestId> {
    match v {
        Value::String(s) => Some(RequestId::String(s.as_str().into())),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}

/// Checks one parsed message before rmcp sees it. `Ok(())` means "hand it to rmcp"; a
/// refusal is the error to answer instead. Checks only what rmcp gets wrong or lets through:
/// the envelope (`jsonrpc`, `id`, `method`), and `tools/call` arguments that are not an object
/// (including `null`, which rmcp would read as "no arguments").
pub fn check(msg: &Value) -> Result<(), Box<Refusal>> {
    let invalid = |id, why: &str| {
        Box::new(Refusal::new(
            id,
            ErrorCode::INVALID_REQUEST,
            format!("Invalid request: {why}"),
        ))
    };
    let Some(obj) = msg.as_object() else {
        return Err(invalid(
            None,
            "a message is one JSON object (batches are not supported)",
        ));
    };
    let id = match obj.get("id") {
        None => None,
        Some(raw) => match read_id(raw) {
            Some(id) => Some(id),
            None => return Err(invalid(None, "`id` must be a string or an integer")),
        },
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "`jsonrpc` must be \"2.0\""));
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) => m.as_str(),
        Some(_) => return Err(invalid(id, "`method` must be a string")),
        None if obj.contains_key("result") || obj.contains_key("error") => return Ok(()),
        None => return Err(invalid(id, "`method` is missing")),
    };
    if method == "tools/call" && id.is_some() {
        let params = obj.get("params");
        let arguments = params.and_then(|p| p.get("arguments"));
        if !params.is_some_and(Value::is_object) {
            return Err(Box::new(Refusal::new(
                id,
                ErrorCode::INVALID_PARAMS,
                "tools/call needs params: {\"name\": ..., \"arguments\": {...}}",
            )));
        }
        if arguments.is_some_and(|a| !a.is_object()) {
            return Err(Box::new(Refusal::new(
                id,
                ErrorCode::INVALID_PARAMS,
                "tools/call arguments must be a JSON object",
            )));
        }
    }
    Ok(())
}

/// What to do with one line.
#[derive(Debug)]
enum Verdict {
    Pass(Box<RxJsonRpcMessage<RoleServer>>),
    Refuse(Refusal),
    Ignore,
}

fn judge(line: &[u8]) -> Verdict {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return Verdict::Refuse(Refusal::new(
                None,
                ErrorCode::PARSE_ERROR,
                format!("Parse error: {e}"),
            ));
        }
    };
    if let Err(r) = check(&value) {
        return Verdict::Refuse(*r);
    }
    let id = value.get("id").and_then(read_id);
    let method = value.get("method").and_then(Value::as_str);
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone()) {
        Ok(msg) => Verdict::Pass(Box::new(msg)),
        // A notification is never answered (JSON-RPC); one rmcp cannot read is dropped.
        Err(_) if id.is_none() => Verdict::Ignore,
        Err(e) => match method {
            Some(m) if is_standard_method(m) => Verdict::Refuse(Refusal::new(
                id,
                ErrorCode::INVALID_PARAMS,
                format!("Invalid params for {m}: {e}"),
            )),
            Some(_) | None => Verdict::Refuse(Refusal::new(
                id,
                ErrorCode::INVALID_REQUEST,
                format!("Invalid request: {e}"),
            )),
        },
    }
}

/// One bounded line read.
enum LineRead {
    Line,
    Oversized,
    Eof,
    Io(std::io::Error),
}

/// The stdio transport (see the module docs). `R`/`W` are stdin/stdout, or pipes in tests.
pub struct Stdio<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Dropping the rest of an oversized line, until its newline.
    discarding: bool,
    out: Arc<Mutex<W>>,
    /// Error answers decided but not yet handed to a writer task. Kept here, not in a local,
    /// because `receive` is cancelled whenever rmcp's loop has something else to do.
    replies: VecDeque<Refusal>,
    writers: Arc<Semaphore>,
    /// Whether the client has sent `initialize` (before it, rmcp ends the session on any
    /// notification or response, so those are dropped here).
    initialized: bool,
}

impl<R, W> std::fmt::Debug for Stdio<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stdio")
            .field("buffered", &self.line.len())
            .field("discarding", &self.discarding)
            .field("replies", &self.replies.len())
            .field("initialized", &self.initialized)
            .finish_non_exhaustive()
    }
}

/// The transport on the process's stdin and stdout.
pub fn stdio() -> Stdio<tokio::io::Stdin, tokio::io::Stdout> {
    Stdio::new(tokio::io::stdin(), tokio::io::stdout())
}

impl<R, W> Stdio<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(read: R, write: W) -> Self {
        Self {
            read: BufReader::new(read),
            line: Vec::new(),
            discarding: false,
            out: Arc::new(Mutex::new(write)),
            replies: VecDeque::new(),
            writers: Arc::new(Semaphore::new(MAX_PENDING_REPLIES)),
            initialized: false,
        }
    }

    /// Reads one `\n`-terminated line into `self.line`, never holding more than [`MAX_LINE`]
    /// bytes of it. Cancel-safe: `fill_buf` consumes nothing, and the copy and `consume` are
    /// synchronous, so a cancelled read resumes the same line.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (taken, done) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) => a,
                    Err(e) => return LineRead::Io(e),
                };
                if available.is_empty() {
                    return LineRead::Eof;
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                if self.discarding {
                    if newline.is_some() {
                        self.discarding = false;
                    }
                    (take, None)
                } else if self.line.len().saturating_add(take) > MAX_LINE {
                    self.line = Vec::new();
                    self.discarding = newline.is_none();
                    (take, Some(LineRead::Oversized))
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    (take, newline.map(|_| LineRead::Line))
                }
            };
            self.read.consume(taken);
            if let Some(r) = done {
                return r;
            }
        }
    }

    /// Hands the queued error answers to writer tasks (whole lines under the output lock, so
    /// they never interleave with rmcp's). Waits while too many are outstanding.
    async fn flush_replies(&mut self) {
        while !self.replies.is_empty() {
            let Ok(permit) = self.writers.clone().acquire_owned().await else {
                return;
            };
            let Some(reply) = self.replies.pop_front() else {
                return;
            };
            let out = self.out.clone();
            tokio::spawn(async move {
                let mut line = reply.to_json().to_string().into_bytes();
                line.push(b'\n');
                let mut out = out.lock().await;
                let _ = out.write_all(&line).await;
                let _ = out.flush().await;
                drop(permit);
            });
        }
    }
}

impl<R, W> Transport<RoleServer> for Stdio<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut out = out.lock().await;
            out.write_all(&line).await?;
            out.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            self.flush_replies().await;
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::Oversized => {
                    crate::note!("boxmaker mcp: refused a message over {MAX_LINE} bytes");
                    self.replies.push_back(Refusal::new(
                        None,
                        ErrorCode::INVALID_REQUEST,
                        format!("Invalid request: a message may be at most {MAX_LINE} bytes"),
                    ));
                    continue;
                }
                LineRead::Eof => return None,
                LineRead::Io(e) => {
                    crate::note!("boxmaker mcp: cannot read stdin: {e}");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
            let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
            if trimmed.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match judge(trimmed) {
                Verdict::Pass(msg) => {
                    let msg = *msg;
                    if !self.initialized {
                        match &msg {
                            RxJsonRpcMessage::<RoleServer>::Request(r) => {
                                self.initialized |= matches!(
                                    r.request,
                                    rmcp::model::ClientRequest::InitializeRequest(_)
                                );
                            }
                            // rmcp would end the session on these; they need no answer.
                            _ => continue,
                        }
                    }
                    return Some(msg);
                }
                Verdict::Refuse(r) => self.replies.push_back(r),
                Verdict::Ignore => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.out.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(line: &str) -> Option<(Option<RequestId>, i32)> {
        match judge(line.as_bytes()) {
            Verdict::Refuse(r) => Some((r.id, r.error.code.0)),
            Verdict::Pass(_) | Verdict::Ignore => None,
        }
    }

    #[test]
    fn bad_lines_get_the_named_error() {
        assert_eq!(code("not json"), Some((None, -32700)));
        assert_eq!(code("[1,2]"), Some((None, -32600)));
        assert_eq!(code("3"), Some((None, -32600)));
        assert_eq!(
            code(r#"{"id":7,"method":"tools/list"}"#),
            Some((Some(RequestId::Number(7)), -32600))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#),
            Some((None, -32600))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
            Some((None, -32600))
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"x"}"#),
            Some((Some(RequestId::String("x".into())), -32600))
        );
        for args in ["[1]", "\"s\"", "5", "null"] {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"t","arguments":{args}}}}}"#
            );
            assert_eq!(code(&line), Some((Some(RequestId::Number(9)), -32602)));
        }
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":9,"method":"nope/x"}"#), None);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","method":"notifications/x"}"#),
            None
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
    }
}
