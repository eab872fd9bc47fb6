//! The client side of a downstream server's stdio: newline-delimited JSON-RPC, read with the
//! limits a hostile server needs.
//!
//! rmcp's own line codec keeps reading a line that never ends (a flood without a newline
//! grows the runner's memory without bound) and drops a line that does not parse, leaving
//! the call waiting. This transport reads at most [`MAX_LINE`] bytes of one message, and ends
//! the connection, with the reason, on the first message that is too long or is not JSON-RPC:
//! every call in flight then fails at once with that reason, and the server is stopped.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest message read from a downstream server, in bytes. A result is cut to one
/// frame (1 MiB) anyway; this leaves room for base64 images and JSON escaping before the cut.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

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
                let newline = available.iter().position(|b| *b == b'\n');
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
        async move {
            let mut line = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            line.push(b'\n');
            let mut out = out.lock().await;
            out.write_all(&line).await?;
            out.flush().await
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
                Ok(msg) => return Some(msg),
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
    fn end_of_output_is_named_as_an_exit() {
        let (got, why) = run(receive_from(Vec::new()));
        assert!(got.is_none());
        assert!(why.unwrap().contains("exited"));
        let (_, why) = run(receive_from(b"{\"jsonrpc\"".to_vec()));
        assert!(why.unwrap().contains("inside a message"));
    }
}
