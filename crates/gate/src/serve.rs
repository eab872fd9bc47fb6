//! The gate's connection loops and sockets: the agent side ([`serve_agent`], the front's
//! `tool_request`s) and the operator side ([`serve_control`], `proto::control`).
//!
//! Both are allowlists (the OpenSSH monitor's rule): each answers only what its peer may
//! send. On the agent socket that is a `tool_request` with `final: true` and an id not
//! already in flight on the connection; on the control socket, a `ControlRequest`. Anything
//! else — a bad frame, another version, a message the peer may not send — gets one `error`
//! (id 0 when the id is unknown), and that connection is closed; every other connection is
//! served on.
//!
//! On the agent socket each call runs on its own thread, at most [`MAX_IN_FLIGHT`] per
//! connection (past that the loop stops reading: back-pressure, not threads), until it has
//! its answer or is held for approval: a held call keeps no thread ([`Gate::submit`]), and
//! never blocks another. A call answers with its request's id: zero or more
//! `pending_approval` (`final: false`), then exactly one final answer. When the agent goes
//! away, the approvals its held calls wait on are withdrawn.
//!
//! Sockets ([`bind_agent_socket`], [`bind_control_socket`]) are created `0600` in the state
//! directory (`0700`), bound in a private directory first and moved into place, so there is
//! no instant at which they are reachable with a wider mode. Both answer only a peer of the
//! gate's uid in the gate's user and pid namespaces ([`check_peer`], `SO_PEERCRED`): a
//! refused peer is audited (`auth_failed`) and its connection closed unanswered. The gate
//! never opens the network.

use std::collections::{HashMap, HashSet};
use std::fs::{self, DirBuilder};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use proto::control::{ControlErrorCode, ControlReply, read_control_request, write_control_reply};
use proto::{Envelope, ErrorCode, FrameError, Message, ToolResponse, read_frame, write_frame};

use crate::conns::Drain;
use crate::gate::{Gate, Reply};

/// The most calls one agent connection has in flight at once (held calls count).
pub const MAX_IN_FLIGHT: usize = 256;

/// The most call threads in this process at once, over every connection: a call has a
/// thread while it is decided and (if allowed) run, not while it is held for a person. Past
/// it the connection loops stop reading (back-pressure, not threads): ten thousand calls
/// arriving at once must not become ten thousand threads, whose transient allocations
/// would leave the heap fragmented long after they end.
pub const MAX_CALL_THREADS: usize = 256;

/// The call threads running now, in every connection.
static CALL_THREADS: Slots = Slots {
    busy: Mutex::new(0),
    freed: Condvar::new(),
};

/// The threads calls run on: kept between calls, at most [`MAX_CALL_THREADS`], each ending
/// after a minute without a call.
fn call_workers() -> &'static workers::Pool {
    static POOL: std::sync::OnceLock<workers::Pool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| workers::Pool::new("gate-call", MAX_CALL_THREADS, Duration::from_secs(60)))
}

pub use statedir::{AGENT_SOCKET, CONTROL_SOCKET};

/// Why a connection loop stopped other than by the peer closing cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("the peer sent a bad frame: {0}")]
    BadFrame(#[source] FrameError),
    #[error("the peer sent a message it may not send: {0}")]
    BadMessage(String),
    #[error("the connection failed: {0}")]
    Io(#[source] FrameError),
    #[error("could not write to the peer: {0}")]
    Write(#[source] FrameError),
    #[error("could not duplicate the connection's socket: {0}")]
    Clone(#[source] io::Error),
    #[error("the peer was refused: {0}")]
    Peer(String),
}

/// Whether the process at the other end of `stream` may speak to the gate (docs/spec.md §1):
/// a process of the gate's own uid, in the gate's own user and pid namespaces. A box's
/// command has the operator's uid when boxmaker runs as a normal user, but never the gate's
/// namespaces. `Err` says why not, and the peer's uid where it is known.
pub fn check_peer(stream: &UnixStream) -> Result<(), (Option<u32>, String)> {
    let cred = rustix::net::sockopt::socket_peercred(stream)
        .map_err(|e| (None, format!("its credentials cannot be read ({e})")))?;
    let uid = cred.uid.as_raw();
    let ours = rustix::process::geteuid().as_raw();
    if uid != ours {
        return Err((
            Some(uid),
            format!("its uid is {uid}, not the gate's ({ours})"),
        ));
    }
    let pid = cred.pid.as_raw_nonzero().get();
    for ns in ["user", "pid"] {
        let mine = fs::read_link(format!("/proc/self/ns/{ns}"));
        let theirs = fs::read_link(format!("/proc/{pid}/ns/{ns}"));
        match (mine, theirs) {
            (Ok(a), Ok(b)) if a == b => {}
            (Ok(_), Ok(_)) => {
                return Err((
                    Some(uid),
                    format!("process {pid} is in another {ns} namespace (a box?)"),
                ));
            }
            (_, Err(e)) | (Err(e), _) => {
                return Err((
                    Some(uid),
                    format!("the {ns} namespace of process {pid} cannot be read ({e})"),
                ));
            }
        }
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// ---------------------------------------------------------------------------------------------
// The agent side

/// Counts calls in flight; `acquire` waits while the limit is reached.
#[derive(Debug, Default)]
struct Slots {
    busy: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    fn acquire(&self, limit: usize) {
        let mut busy = lock(&self.busy);
        while *busy >= limit {
            busy = self
                .freed
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *busy += 1;
    }

    fn release(&self) {
        let mut busy = lock(&self.busy);
        *busy = busy.saturating_sub(1);
        self.freed.notify_all();
    }

    fn wait_idle(&self) {
        let mut busy = lock(&self.busy);
        while *busy > 0 {
            busy = self
                .freed
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// One of [`CALL_THREADS`], given back on drop.
struct ThreadSlot;

impl Drop for ThreadSlot {
    fn drop(&mut self) {
        CALL_THREADS.release();
    }
}

#[derive(Debug, Default)]
struct ConnState {
    /// The agent went away or misbehaved: approvals asked from now on are withdrawn at once.
    closed: bool,
    /// Envelope ids in flight.
    ids: HashSet<u64>,
    /// Held calls: envelope id → approval id.
    held: HashMap<u64, String>,
    /// The gate stopped taking connections ([`AgentConns::drain`](crate::conns::AgentConns::drain)): the connection's read
    /// side is shut once no call is in flight, and its end is not the agent going away.
    draining: bool,
}

/// One agent connection's shared half.
struct Conn<W> {
    /// `None` once the connection is closed by us.
    out: Mutex<Option<W>>,
    state: Mutex<ConnState>,
    slots: Slots,
    /// The socket, to shut its read side when the gate drains (only a Unix stream has one).
    socket: Option<UnixStream>,
}

impl<W: Send> Drain for Conn<W> {
    fn drain(&self) {
        let mut st = lock(&self.state);
        st.draining = true;
        if st.ids.is_empty() {
            self.shut_read();
        }
    }
}

impl<W> Conn<W> {
    /// Ends the connection's reading side: what the peer already sent is still read (and
    /// answered); a later write of the peer fails (`EPIPE`), so the peer knows that request
    /// never reached the gate and can send it on a new connection.
    fn shut_read(&self) {
        if let Some(s) = &self.socket {
            let _ = s.shutdown(std::net::Shutdown::Read);
        }
    }
}

impl<W: Write> Conn<W> {
    /// Writes one envelope; a write to a closed connection is dropped (the read side sees
    /// the peer go).
    fn send(&self, env: &Envelope) {
        let mut out = lock(&self.out);
        let Some(w) = out.as_mut() else {
            return;
        };
        if let Err(FrameError::TooLarge(n)) = write_frame(w, env) {
            let failed = ToolResponse::Failed {
                message: format!(
                    "the answer is {n} bytes encoded, over the frame limit of {}",
                    proto::MAX_FRAME
                ),
            };
            let _ = write_frame(w, &Envelope::response(env.id, failed));
        }
    }

    fn close(&self) {
        lock(&self.out).take();
    }
}

/// Serves one agent connection (the front's, or `boxmaker call`'s) until the peer closes it
/// or misbehaves.
///
/// On a clean close the approvals of held calls are withdrawn and the loop waits for the
/// calls still running (their answers go nowhere, but their taint is committed), then
/// returns `Ok`. On a bad frame or message it answers `error`, closes the writing side at
/// once (`writer` is dropped), withdraws held approvals, and returns the reason without
/// waiting: calls already running finish in the background.
pub fn serve_agent<R, W>(gate: Arc<Gate>, reader: R, writer: W) -> Result<(), ServeError>
where
    R: Read,
    W: Write + Send + 'static,
{
    serve_agent_conn(gate, reader, writer, None)
}

fn serve_agent_conn<R, W>(
    gate: Arc<Gate>,
    mut reader: R,
    writer: W,
    socket: Option<UnixStream>,
) -> Result<(), ServeError>
where
    R: Read,
    W: Write + Send + 'static,
{
    let conn = Arc::new(Conn {
        out: Mutex::new(Some(writer)),
        state: Mutex::new(ConnState::default()),
        slots: Slots::default(),
        socket,
    });
    let weak: Weak<dyn Drain> = Arc::downgrade(&(Arc::clone(&conn) as Arc<dyn Drain>));
    let (key, draining) = gate.agent_conns.register(weak);
    if draining {
        conn.drain();
    }
    let result = serve_agent_loop(&gate, &conn, &mut reader);
    gate.agent_conns.forget(key);
    result
}

fn serve_agent_loop<R, W>(
    gate: &Arc<Gate>,
    conn: &Arc<Conn<W>>,
    reader: &mut R,
) -> Result<(), ServeError>
where
    R: Read,
    W: Write + Send + 'static,
{
    // The trace context sent for the next request, and that request's id.
    let mut context: Option<(u64, proto::telemetry::TraceParent)> = None;
    let result = loop {
        let env = match read_frame(reader) {
            Ok(env) => env,
            Err(FrameError::Closed) => break Ok(()),
            Err(e) => match e.wire_code() {
                Some(code) => {
                    conn.send(&Envelope::error(0, code, e.to_string()));
                    break Err(ServeError::BadFrame(e));
                }
                None => break Err(ServeError::Io(e)),
            },
        };
        let refuse = |why: String| {
            conn.send(&Envelope::error(env.id, ErrorCode::BadMessage, why.clone()));
            ServeError::BadMessage(why)
        };
        let req = match env.msg {
            // The client's trace context for the request that follows with the same id
            // (docs/spec.md §2.2, §8): kept for it alone, and never answered on its own.
            Message::CallContext(ctx) if !env.r#final => {
                match proto::telemetry::TraceParent::parse(&ctx.traceparent) {
                    Some(t) => {
                        context = Some((env.id, t));
                        continue;
                    }
                    None => {
                        break Err(refuse(
                            "a call_context's traceparent must be a W3C version-00 traceparent"
                                .into(),
                        ));
                    }
                }
            }
            Message::CallContext(_) => {
                break Err(refuse(
                    "a call_context must be sent with final: false".into(),
                ));
            }
            Message::ToolRequest(req) if env.r#final => req,
            Message::ToolRequest(_) => {
                break Err(refuse(
                    "a tool_request must be sent with final: true".into(),
                ));
            }
            Message::ToolResponse(_) => {
                break Err(refuse(
                    "an agent may send only tool_request, not tool_response".into(),
                ));
            }
            Message::Error(_) => {
                break Err(refuse(
                    "an agent may send only tool_request, not error".into(),
                ));
            }
        };
        if !lock(&conn.state).ids.insert(env.id) {
            break Err(refuse(format!(
                "request id {} is already in flight on this connection",
                env.id
            )));
        }
        let traceparent = context
            .take()
            .filter(|(id, _)| *id == env.id)
            .map(|(_, t)| t);
        conn.slots.acquire(MAX_IN_FLIGHT);
        let id = env.id;
        let reply = ConnReply {
            gate: Arc::downgrade(gate),
            conn: Arc::clone(conn),
            id,
        };
        let gate2 = Arc::clone(gate);
        CALL_THREADS.acquire(MAX_CALL_THREADS);
        // On a worker kept between calls: a thread started per call waited, on a busy
        // machine, for the scheduler's first slot (the `workers` crate says why).
        let spawned = call_workers().execute(move || {
            // Released when the call is answered or held, even if it panics.
            let _thread = ThreadSlot;
            gate2.submit_traced(req, traceparent, Box::new(reply));
        });
        if let Err(e) = spawned {
            CALL_THREADS.release();
            lock(&conn.state).ids.remove(&id);
            conn.slots.release();
            conn.send(&Envelope::error(
                id,
                ErrorCode::Internal,
                format!("the gate could not start a thread for the call: {e}"),
            ));
        }
    };
    let held: Vec<String> = {
        let mut st = lock(&conn.state);
        if result.is_ok() && st.draining {
            // The gate shut the reading side, not the agent: its held calls stay held and
            // are answered on this connection when a person decides.
            Vec::new()
        } else {
            st.closed = true;
            st.held.drain().map(|(_, approval)| approval).collect()
        }
    };
    if result.is_err() {
        conn.close();
    }
    for approval in held {
        // Already decided or expired: nothing to withdraw.
        let _ = gate.withdraw(&approval);
    }
    if result.is_ok() {
        conn.slots.wait_idle();
    }
    result
}

/// Where one call's answers go: its connection, under its request's id.
struct ConnReply<W> {
    gate: Weak<Gate>,
    conn: Arc<Conn<W>>,
    id: u64,
}

impl<W: Write + Send + 'static> Reply for ConnReply<W> {
    fn progress(&mut self, resp: ToolResponse) {
        if let ToolResponse::PendingApproval { approval, .. } = &resp {
            let mut st = lock(&self.conn.state);
            if st.closed {
                drop(st);
                if let Some(gate) = self.gate.upgrade() {
                    let _ = gate.withdraw(approval);
                }
                return;
            }
            st.held.insert(self.id, approval.clone());
        }
        self.conn.send(&Envelope::response(self.id, resp));
    }

    fn finish(self: Box<Self>, resp: ToolResponse) {
        let last_of_drained = {
            let mut st = lock(&self.conn.state);
            st.held.remove(&self.id);
            st.ids.remove(&self.id);
            st.draining && st.ids.is_empty()
        };
        self.conn.send(&Envelope::response(self.id, resp));
        if last_of_drained {
            self.conn.shut_read();
        }
        self.conn.slots.release();
    }
}

/// Refuses (and audits) a peer [`check_peer`] does not accept: nothing is read from it,
/// nothing is answered, the connection is closed.
pub(crate) fn admit(gate: &Gate, socket: &str, stream: &UnixStream) -> Result<(), ServeError> {
    check_peer(stream).map_err(|(uid, why)| {
        gate.refuse_peer(socket, uid, &why);
        ServeError::Peer(why)
    })
}

/// [`serve_agent`] over a Unix stream (the connection and its `try_clone`), for a peer
/// [`check_peer`] admits.
pub fn serve_agent_stream(gate: Arc<Gate>, stream: UnixStream) -> Result<(), ServeError> {
    admit(&gate, AGENT_SOCKET, &stream)?;
    let reader = stream.try_clone().map_err(ServeError::Clone)?;
    let socket = stream.try_clone().map_err(ServeError::Clone)?;
    serve_agent_conn(gate, reader, stream, Some(socket))
}

// ---------------------------------------------------------------------------------------------
// The control side

/// The control error code for a frame that could not be read, or `None` where the
/// connection simply ended. A well-formed JSON text of the wrong shape (a reply where a
/// request belongs, an unknown op, a missing field) is `bad_message`.
fn control_code(e: &FrameError) -> Option<ControlErrorCode> {
    match e {
        FrameError::Json(j) if j.classify() == serde_json::error::Category::Data => {
            Some(ControlErrorCode::BadMessage)
        }
        FrameError::BadVersion(_) => Some(ControlErrorCode::BadVersion),
        FrameError::Empty | FrameError::TooLarge(_) | FrameError::Json(_) => {
            Some(ControlErrorCode::BadFrame)
        }
        FrameError::Closed | FrameError::Io(_) => None,
    }
}

/// Serves one operator connection: each `ControlRequest` gets one `ControlReply` with its
/// id, in order. A bad frame gets an `error` reply (id 0) and the connection is closed.
pub fn serve_control<R: Read, W: Write>(
    gate: Arc<Gate>,
    mut reader: R,
    mut writer: W,
) -> Result<(), ServeError> {
    loop {
        let req = match read_control_request(&mut reader) {
            Ok(req) => req,
            Err(FrameError::Closed) => return Ok(()),
            Err(e) => {
                return match control_code(&e) {
                    Some(code) => {
                        let _ = write_control_reply(
                            &mut writer,
                            &ControlReply::error(0, code, e.to_string()),
                        );
                        Err(ServeError::BadFrame(e))
                    }
                    None => Err(ServeError::Io(e)),
                };
            }
        };
        let reply = ControlReply::new(req.id, gate.control(req.op));
        match write_control_reply(&mut writer, &reply) {
            Ok(()) => {}
            Err(FrameError::TooLarge(n)) => {
                let too_large = ControlReply::error(
                    req.id,
                    ControlErrorCode::Internal,
                    format!("the reply is {n} bytes, over the frame limit; ask for less"),
                );
                write_control_reply(&mut writer, &too_large).map_err(ServeError::Write)?;
            }
            Err(e) => return Err(ServeError::Write(e)),
        }
    }
}

/// [`serve_control`] over a Unix stream, for a peer [`check_peer`] admits.
pub fn serve_control_stream(gate: Arc<Gate>, stream: UnixStream) -> Result<(), ServeError> {
    admit(&gate, CONTROL_SOCKET, &stream)?;
    let reader = stream.try_clone().map_err(ServeError::Clone)?;
    serve_control(gate, reader, stream)
}

// ---------------------------------------------------------------------------------------------
// Sockets

/// Why a socket could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("could not create the state directory {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("could not look at {path}: {source}")]
    Stat { path: PathBuf, source: io::Error },
    #[error(
        "{path} exists and is not a socket; the gate will not replace it (move it away if \
         it is yours)"
    )]
    NotASocket { path: PathBuf },
    #[error("another gate is already serving on {path}; stop it first")]
    InUse { path: PathBuf },
    #[error("could not remove the stale socket {path}: {source}")]
    RemoveStale { path: PathBuf, source: io::Error },
    #[error("could not bind the socket {path}: {source}")]
    Bind { path: PathBuf, source: io::Error },
    #[error("could not make the socket {path} private (mode 0600): {source}")]
    Chmod { path: PathBuf, source: io::Error },
    #[error("could not move the socket into place at {path}: {source}")]
    Rename { path: PathBuf, source: io::Error },
}

/// Binds `agent.sock` in the state directory (mode `0600`).
pub fn bind_agent_socket(state_dir: &Path) -> Result<UnixListener, SocketError> {
    bind_private(state_dir, AGENT_SOCKET)
}

/// Binds `control.sock` in the state directory (mode `0600`): only the gate's user may
/// connect. The front and the boxes never get this path.
pub fn bind_control_socket(state_dir: &Path) -> Result<UnixListener, SocketError> {
    bind_private(state_dir, CONTROL_SOCKET)
}

/// Binds `state_dir/name` with mode `0600`: refuses a path that exists and is not a socket,
/// or a socket another process still serves; removes a stale one. The socket is bound in a
/// fresh `0700` directory, made `0600`, then renamed into place; the bind goes through
/// [`statedir::bind`], so the directory's path may be of any length.
pub(crate) fn bind_private(state_dir: &Path, name: &str) -> Result<UnixListener, SocketError> {
    // The state directory, refused when it is a link (docs/spec.md §6).
    statedir::file::Dir::own(state_dir).map_err(|e| SocketError::CreateDir {
        path: state_dir.to_path_buf(),
        source: e.into(),
    })?;
    let path = state_dir.join(name);
    match fs::symlink_metadata(&path) {
        Ok(md) if md.file_type().is_socket() => {
            if statedir::connect(state_dir, name).is_ok() {
                return Err(SocketError::InUse { path });
            }
            fs::remove_file(&path).map_err(|source| SocketError::RemoveStale {
                path: path.clone(),
                source,
            })?;
        }
        Ok(_) => return Err(SocketError::NotASocket { path }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(source) => return Err(SocketError::Stat { path, source }),
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let tmp_dir = state_dir.join(format!(".{name}.{}.{nanos}", std::process::id()));
    DirBuilder::new()
        .mode(0o700)
        .create(&tmp_dir)
        .map_err(|source| SocketError::CreateDir {
            path: tmp_dir.clone(),
            source,
        })?;
    let tmp = tmp_dir.join(name);
    let bound = (|| {
        // Through the directory's descriptor: no state-directory length breaks the bind.
        let listener = statedir::bind(&tmp_dir, name).map_err(|source| SocketError::Bind {
            path: path.clone(),
            source,
        })?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600)).map_err(|source| {
            SocketError::Chmod {
                path: path.clone(),
                source,
            }
        })?;
        fs::rename(&tmp, &path).map_err(|source| SocketError::Rename {
            path: path.clone(),
            source,
        })?;
        Ok(listener)
    })();
    let _ = fs::remove_file(&tmp);
    let _ = fs::remove_dir(&tmp_dir);
    bound
}

/// Accepts connections forever, each on its own thread running `handler`. Transient
/// failures (an interrupted accept, a peer that left, no file descriptors for a moment) are
/// retried; it returns only on an error that will not pass.
pub fn accept_loop<F>(listener: UnixListener, handler: F) -> io::Error
where
    F: Fn(UnixStream) + Send + Sync + 'static,
{
    let handler = Arc::new(handler);
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                let h = Arc::clone(&handler);
                if std::thread::Builder::new()
                    .name("gate-conn".into())
                    .spawn(move || h(stream))
                    .is_err()
                {
                    // The stream was dropped (closed); slow down and keep serving.
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            Err(e) => match (e.kind(), e.raw_os_error()) {
                (io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted, _) => {}
                // EMFILE, ENFILE, ENOBUFS, ENOMEM: wait for resources.
                (_, Some(24 | 23 | 105 | 12)) => std::thread::sleep(Duration::from_millis(100)),
                _ => return e,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_code_tells_a_wrong_shape_from_bad_bytes() {
        let data =
            serde_json::from_str::<proto::control::ControlRequest>(r#"{"v":1}"#).unwrap_err();
        let syntax = serde_json::from_str::<proto::control::ControlRequest>("{").unwrap_err();
        assert_eq!(
            control_code(&FrameError::Json(data)),
            Some(ControlErrorCode::BadMessage)
        );
        assert_eq!(
            control_code(&FrameError::Json(syntax)),
            Some(ControlErrorCode::BadFrame)
        );
        assert_eq!(
            control_code(&FrameError::BadVersion(2)),
            Some(ControlErrorCode::BadVersion)
        );
        assert_eq!(control_code(&FrameError::Closed), None);
    }

    #[test]
    fn slots_block_at_the_limit_until_released() {
        let slots = Arc::new(Slots::default());
        slots.acquire(1);
        let s2 = Arc::clone(&slots);
        let waiter = std::thread::spawn(move || {
            s2.acquire(1);
            s2.release();
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "a second acquire waits at the limit");
        slots.release();
        waiter.join().unwrap();
        slots.wait_idle();
    }
}
