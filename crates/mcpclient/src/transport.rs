//! The client side of a downstream server's stdio: newline-delimited JSON-RPC, read with the
//! limits a hostile server needs.
//!
//! rmcp's own line codec keeps reading a line that never ends (a flood without a newline
//! grows the runner's memory without bound) and drops a line that does not parse, leaving
//! the call waiting. This transport reads at most [`MAX_LINE`] bytes of one message, and ends
//! the connection, with the reason, on the first message that is too long or is not JSON-RPC:
//! every call in flight then fails at once with that reason, and the server is stopped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::NumberOrString;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest message read from a downstream server, in bytes. A result is cut to one
/// frame (1 MiB) anyway; this leaves room for base64 images and JSON escaping before the cut.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// The longest request id a server may use, in bytes (an id is echoed back in the answer:
/// a long one makes every answer long).
pub const MAX_ID: usize = 256;
/// The most requests a server may have asked the client (ping, roots, sampling…) whose
/// answers it has not yet read. A server that asks and never reads would otherwise make the
/// runner hold every answer (rmcp starts a task per request, with no limit).
pub const MAX_UNANSWERED: usize = 32;

/// Why a connection ended, when the transport knows better than "closed".
pub type Reason = Arc<Mutex<Option<String>>>;

/// Sets `reason` unless one is already set (the first reason is the cause).
pub fn set_reason(reason: &Reason, why: String) {
    let mut r = reason.lock().unwrap_or_else(PoisonError::into_inner);
    if r.is_none() {
        *r = Some(why);
    }
}

/// Reads `reason`.
pub fn get_reason(reason: &Reason) -> Option<String> {
    reason
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// The transport over a server's stdout (`R`) and stdin (`W`).
pub struct Lines<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    out: Arc<tokio::sync::Mutex<W>>,
    reason: Reason,
    ended: bool,
    /// Requests the server made, and answers to them written out whole.
    asked: usize,
    answered: Arc<AtomicUsize>,
}

impl<R, W> std::fmt::Debug for Lines<R, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines")
            .field("buffered", &self.line.len())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

impl<R, W> Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub fn new(read: R, write: W, reason: Reason) -> Self {
        Self {
            read: BufReader::with_capacity(64 * 1024, read),
            line: Vec::new(),
            out: Arc::new(tokio::sync::Mutex::new(write)),
            reason,
            ended: false,
            asked: 0,
            answered: Arc::default(),
        }
    }

    /// One whole line into `self.line` (cancel-safe: `fill_buf` consumes nothing and the
    /// copy is synchronous). `Err` with why the connection must end.
    async fn read_line(&mut self) -> Result<(), String> {
        loop {
            let (taken, done) = {
                let available = self
                    .read
                    .fill_buf()
                    .await
                    .map_err(|e| format!("cannot read the server's output: {e}"))?;
                if available.is_empty() {
                    return Err(if self.line.is_empty() {
                        "the server closed its output (it exited or crashed)".into()
                    } else {
                        "the server's output ended inside a message".into()
                    });
                }
                let newline = memchr::memchr(b'\n', available);
                let take = newline.map_or(available.len(), |i| i + 1);
                if self.line.len().saturating_add(take) > MAX_LINE {
                    return Err(format!(
                        "the server sent a message over {} MiB (a flood, or a size it does not \
                         keep to)",
                        MAX_LINE >> 20
                    ));
                }
                self.line.extend_from_slice(&available[..take]);
                (take, newline.is_some())
            };
            self.read.consume(taken);
            if done {
                return Ok(());
            }
        }
    }
}

impl<R, W> Lines<R, W> {
    /// Whether a well-formed message may pass: ids of a sane length, and no more than
    /// [`MAX_UNANSWERED`] of the server's own requests waiting for it to read their answers.
    fn admit(&mut self, msg: &RxJsonRpcMessage<RoleClient>) -> Result<(), String> {
        let id = match msg {
            RxJsonRpcMessage::<RoleClient>::Request(r) => Some(&r.id),
            RxJsonRpcMessage::<RoleClient>::Response(r) => Some(&r.id),
            _ => None,
        };
        if let Some(NumberOrString::String(s)) = id
            && s.len() > MAX_ID
        {
            return Err(format!(
                "the server sent malformed JSON-RPC: an id of {} bytes (at most {MAX_ID})",
                s.len()
            ));
        }
        if matches!(msg, RxJsonRpcMessage::<RoleClient>::Request(_)) {
            self.asked += 1;
            let waiting = self
                .asked
                .saturating_sub(self.answered.load(Ordering::SeqCst));
            if waiting > MAX_UNANSWERED {
                return Err(format!(
                    "the server made over {MAX_UNANSWERED} requests of the client without \
                     reading the answers"
                ));
            }
        }
        Ok(())
    }
}

impl<R, W> Transport<RoleClient> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let answer = matches!(
            item,
            TxJsonRpcMessage::<RoleClient>::Response(_) | TxJsonRpcMessage::<RoleClient>::Error(_)
        );
        let answered = self.answered.clone();
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut out = out.lock().await;
            out.write_all(&line).await?;
            out.flush().await?;
            if answer {
                answered.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        if self.ended {
            return None;
        }
        loop {
            if let Err(why) = self.read_line().await {
                set_reason(&self.reason, why);
                self.ended = true;
                return None;
            }
            let line = std::mem::take(&mut self.line);
            let trimmed = line.strip_suffix(b"\n").unwrap_or(&line);
            let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
            if trimmed.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(trimmed) {
                Ok(msg) => {
                    if let Err(why) = self.admit(&msg) {
                        set_reason(&self.reason, why);
                        self.ended = true;
                        return None;
                    }
                    return Some(msg);
                }
                Err(e) => {
                    let what = if serde_json::from_slice::<serde_json::Value>(trimmed).is_ok() {
                        format!("a message that is not valid JSON-RPC for MCP ({e})")
                    } else {
                        "a line that is not JSON".into()
                    };
                    set_reason(
                        &self.reason,
                        format!("the server sent malformed JSON-RPC: {what}"),
                    );
                    self.ended = true;
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.out.lock().await.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn receive_from(
        input: Vec<u8>,
    ) -> (Option<RxJsonRpcMessage<RoleClient>>, Option<String>) {
        let reason = Reason::default();
        let mut t = Lines::new(
            std::io::Cursor::new(input),
            tokio::io::sink(),
            reason.clone(),
        );
        let got = t.receive().await;
        (got, get_reason(&reason))
    }

    fn run<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(f)
    }

    #[test]
    fn a_good_response_passes_and_blank_lines_are_skipped() {
        let line = b"\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n".to_vec();
        let (got, why) = run(receive_from(line));
        assert!(got.is_some());
        assert_eq!(why, None);
    }

    #[test]
    fn a_line_that_is_not_json_ends_the_connection_with_the_reason() {
        let (got, why) = run(receive_from(b"hello there\n".to_vec()));
        assert!(got.is_none());
        assert!(why.unwrap().contains("not JSON"));
    }

    #[test]
    fn json_that_is_not_json_rpc_is_named_as_such() {
        let (got, why) = run(receive_from(b"{\"a\":1}\n".to_vec()));
        assert!(got.is_none());
        assert!(why.unwrap().contains("not valid JSON-RPC"));
    }

    #[test]
    fn a_flood_without_newline_stops_at_the_limit_without_holding_more() {
        let flood = vec![b'a'; MAX_LINE + 10];
        let (got, why) = run(receive_from(flood));
        assert!(got.is_none());
        assert!(why.unwrap().contains("over 16 MiB"));
    }

    #[test]
    fn a_long_id_ends_the_connection() {
        let id = "x".repeat(MAX_ID + 1);
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":\"{id}\",\"method\":\"ping\"}}\n");
        let (got, why) = run(receive_from(line.into_bytes()));
        assert!(got.is_none());
        assert!(why.unwrap().contains("an id of"));
    }

    #[test]
    fn requests_whose_answers_are_never_read_are_cut_off() {
        let mut input = Vec::new();
        for i in 0..=MAX_UNANSWERED {
            input.extend_from_slice(
                format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"ping\"}}\n").as_bytes(),
            );
        }
        run(async {
            let reason = Reason::default();
            let mut t = Lines::new(
                std::io::Cursor::new(input),
                tokio::io::sink(),
                reason.clone(),
            );
            // Nothing is answered: the first MAX_UNANSWERED pass, the next ends it.
            for _ in 0..MAX_UNANSWERED {
                assert!(t.receive().await.is_some());
            }
            assert!(t.receive().await.is_none());
            assert!(get_reason(&reason).unwrap().contains("without reading"));
        });
    }

    #[test]
    fn end_of_output_is_named_as_an_exit() {
        let (got, why) = run(receive_from(Vec::new()));
        assert!(got.is_none());
        assert!(why.unwrap().contains("exited"));
        let (_, why) = run(receive_from(b"{\"jsonrpc\"".to_vec()));
        assert!(why.unwrap().contains("inside a message"));
    }
}
