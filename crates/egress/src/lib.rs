//! `egress` — the egress proxy (docs/spec.md §3.5, "Destinations"): a networked box's only
//! way out, and the one decision every request boxmaker's own MCP client sends goes through.
//!
//! **Owns:** the proxy's listener loop (one per networked box), the reading of a hostile
//! client's HTTP request head and TLS client hello, the decision of each destination at the
//! call's label (`config::Config::clearance`, `clear_address`), the float of a box's label by
//! what destinations answer ([`Float`]), the cutting of connections a rising label no longer
//! clears, and the `egress` records reported to the gate.
//!
//! **Must never:** let a byte reach a destination before it is decided, connect to an address
//! it did not check, write an answer's first byte to a box before the box's label has risen
//! to it, decide policy beyond the config's egress rules, write the gate's state, or run a
//! tool. It trusts the config and the runner that wires it in; nothing a box sends.
//!
//! ```text
//!  box netns                         runner (host side)
//!   command ──▶ 127.0.0.1:3128 ════════▶ accept (the listener init made, handed out)
//!                                        │ request head (≤ 16 KiB, ≤ 10 s)
//!                                        │ decide: config::Config::clearance at the
//!                                        │   call's label: max(session floor, reach,
//!                                        │   the call's own, what the box has read)
//!                                        │ resolve once, check every address
//!                                        │   (config::Config::clear_address)
//!                                        └──▶ connect to the address checked ──▶ origin
//! ```
//!
//! A `CONNECT` tunnel is for TLS ([`Egress::tunnel_or_request`]): it goes only to a port
//! its rule names in `tunnel_ports`, and its first bytes are checked before any reaches the
//! destination — a TLS client hello whose server name (SNI) is the tunnel's host (none for
//! an address; an Encrypted Client Hello, which hides the name, is refused), or one plain
//! HTTP request whose `Host` names it (parsed as any other). Anything else is refused.
//!
//! The box's init makes the listener inside the box's own network namespace (which has
//! only `lo`) and the helper hands it to the runner (`sandbox::run_with_listener`,
//! `BoxProcess::listener`); accepting works across namespaces, so the runner serves it from
//! its own. A program that ignores the proxy variables has nothing to connect to.
//!
//! Every attempt is reported to the gate ([`EgressRecord`]: refused, failed, opened, and
//! closed with the bytes each way); the gate audits them. A session's label only rises: when
//! it rises past a destination's clearance, its open connections there are cut at once
//! ([`Egress::label_rose`]).
//!
//! **A box's label floats up** ([`Float`], docs/spec.md §3.6): what a destination answers is
//! labelled by its rule's `returns`, and untrusted unless its rule says `trusted = true`;
//! before the first byte of an answer is written to the box, the box's label — and the
//! session's floor, since the box can leave what it read in the session's workspace —
//! rises to that label (class and untrusted bit, one join), and every other open connection of the
//! session that is not cleared for it is cut ([`Egress::answered`]). Cutting before the byte
//! is written is what makes it sound: whatever the box sent out before cannot hold the
//! answer. A connection is not cut by its own answer (sending it back where it came from
//! tells that destination nothing new). A box never floats above the lowest class of a mount
//! it may write: a destination whose answers would take it there is refused.

#![forbid(unsafe_code)]

pub mod http;
pub mod tls;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use config::Label;
use config::{CallLabel, Config, Destination, Host, Way};
use proto::run::{EgressOutcome, EgressRecord, RunnerAnswer};
use proto::{CallId, DataClass, SessionId};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use http::{Body, Head, Kind};

/// The longest the proxy waits for a request head.
const HEAD_SECONDS: u64 = 10;
/// The longest it waits for a name to resolve, and for a connection to open.
const CONNECT_SECONDS: u64 = 10;
/// Connections accepted past a session's cap that may wait for their head at once, to be
/// told why (more are closed at once).
const OVER_CAP_WAITING: u64 = 64;
/// Bytes read at once each way.
const CHUNK: usize = 256 * 1024;

/// Where the runner's events go (the gate, through the runner's connection, id 0): the
/// proxy's records, and the rises of a session's floor by what a destination answered.
pub type EventSink = Arc<dyn Fn(RunnerAnswer) + Send + Sync>;

/// The part of a box's label that floats up (docs/spec.md §3.6), shared by every
/// connection of the box: the call's own label (for a server, of every call it served) and
/// what destinations have answered it — each a whole label, class and untrusted bit. It
/// only rises; it ends with the box.
#[derive(Debug)]
pub struct Float {
    /// `(call, read)`.
    state: Mutex<(Label, Label)>,
    /// The mounts the box may write (each one's label and where it shows): the box may not
    /// float above any of them.
    ceiling: Vec<(Label, std::path::PathBuf)>,
}

impl Float {
    /// A box whose call's own label is `call`, which may write `writable` (its writable
    /// mounts: `config::Config::writable_mounts`).
    pub fn new<'a>(call: Label, writable: impl IntoIterator<Item = &'a config::Mount>) -> Self {
        Self {
            state: Mutex::new((call, Label::PUBLIC)),
            ceiling: writable
                .into_iter()
                .map(|m| (m.label(), m.at.clone()))
                .collect(),
        }
    }

    /// A call starts on the box (a server's): its own label, and the session's floor its
    /// arguments carry values of, join the box's. Whether the class rose (its connections
    /// are then judged again).
    pub fn called(&self, label: &CallLabel) -> bool {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let was = s.0;
        s.0 = was.join(label.call).join(label.session);
        s.0.class > was.class
    }

    /// The join of what destinations have answered the box.
    pub fn read(&self) -> Label {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).1
    }

    /// What the box has reached, beside its reach: the join of its calls' own labels (and
    /// the session's floor at each), and what it read. Its answers carry at least this.
    pub fn reached(&self) -> Label {
        let s = *self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.0.join(s.1)
    }

    /// The label a connection of the box is decided at now.
    pub fn label(&self, session: Label, reach: DataClass) -> CallLabel {
        let (call, read) = *self.state.lock().unwrap_or_else(PoisonError::into_inner);
        CallLabel {
            session,
            reach,
            call,
            read,
        }
    }

    /// Raises what the box has read by `label`.
    fn raise_read(&self, label: Label) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.1 = s.1.join(label);
    }
}

/// Who is connecting: the box a listener belongs to.
#[derive(Debug, Clone)]
pub struct BoxCtx {
    pub session: SessionId,
    /// The `[[tool]]` whose box it is.
    pub tool: String,
    /// The call it runs (a `run`), or `None` (a long-running server).
    pub call: Option<CallId>,
    /// A long-running server's calls in flight: a record names the call when there is
    /// exactly one.
    pub calls: Option<Arc<Mutex<Vec<CallId>>>>,
    /// The box's floating label.
    pub float: Arc<Float>,
}

impl BoxCtx {
    /// The call the box is running now, for a record: a `run`'s own; a server's one call in
    /// flight, `None` between calls or with several.
    fn current_call(&self) -> Option<CallId> {
        self.call.or_else(|| {
            let calls = self.calls.as_ref()?;
            let calls = calls.lock().unwrap_or_else(PoisonError::into_inner);
            match calls.as_slice() {
                [one] => Some(*one),
                _ => None,
            }
        })
    }
}

/// A connection the proxy holds open, to cut when the session's label rises past its
/// destination's clearance.
struct Live {
    /// `None` while its head is read and decided.
    clearance: Option<DataClass>,
    reach: DataClass,
    /// Its box's floating label.
    float: Arc<Float>,
    /// Copies of both sockets' descriptors, to shut down from outside its task.
    sockets: Vec<std::net::TcpStream>,
    /// Why it was cut, for its `closed` record.
    cut: Arc<Mutex<Option<String>>>,
}

/// The proxy: one per runner, serving every proxy box's listener.
pub struct Egress {
    config: Arc<Config>,
    floors: Arc<Mutex<HashMap<SessionId, Label>>>,
    runtime: OnceLock<Result<tokio::runtime::Runtime, String>>,
    next_conn: AtomicU64,
    live: Mutex<HashMap<SessionId, HashMap<u64, Live>>>,
    over_cap: AtomicU64,
    sink: Mutex<Option<EventSink>>,
    own: Mutex<Option<(Instant, Arc<Vec<IpAddr>>)>>,
    base: Instant,
}

impl std::fmt::Debug for Egress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Egress").finish_non_exhaustive()
    }
}

/// Stops serving a box's listener when dropped (the box has ended).
#[derive(Debug)]
pub struct Guard {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }
}

/// Why the proxy answered a box's request with an error rather than a connection: one
/// sentence, sent as the reason phrase and body of the answer and kept in the audit record.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// The config's rules refuse it (`403`).
    #[error(transparent)]
    Refused(#[from] config::Refusal),
    /// Not a request the proxy takes (`400`, or `403` for a Host header naming another host).
    #[error("{}", .0.reason)]
    BadRequest(#[from] http::Reject),
    #[error("boxmaker refused {dest}:{port}: that is not a host name ({why})")]
    NotAName {
        dest: String,
        port: u16,
        why: String,
    },
    #[error("boxmaker refused {dest}:{port}: the box belongs to no tool the config has")]
    NoTool { dest: String, port: u16 },
    #[error("{}", writes_down(dest, *port, *returns, mount, *class))]
    WritesDown {
        dest: String,
        port: u16,
        returns: Label,
        mount: String,
        class: Label,
    },
    #[error(
        "boxmaker refused {dest}:{port}: this session already has {cap} connections open \
         through the proxy (max_connections_per_session in [box])"
    )]
    Capped { dest: String, port: u16, cap: u64 },
    #[error("boxmaker could not resolve {name}: {detail}")]
    Resolve { name: String, detail: String },
    #[error("boxmaker could not connect to {dest}:{port} ({detail})")]
    Connect {
        dest: String,
        port: u16,
        detail: String,
    },
    #[error(
        "boxmaker's proxy waited {HEAD_SECONDS} s for the request head and closed the connection"
    )]
    HeadTimeout,
    #[error("the request head is over {} bytes", http::MAX_HEAD)]
    HeadTooLarge,
    /// What a tunnel carried first is not what it may carry (the status answers plain HTTP).
    #[error("boxmaker refused {dest}:{port}: {why}")]
    InTunnel {
        dest: String,
        port: u16,
        status: u16,
        why: String,
    },
}

/// The sentence of [`EgressError::WritesDown`]: what a destination answers (`returns`) would
/// go below the label of a mount the box can write (`class`, shown at `mount`) — a higher
/// class, or untrusted where the mount's files are trusted.
fn writes_down(dest: &str, port: u16, returns: Label, mount: &str, class: Label) -> String {
    if returns.class > class.class {
        format!(
            "boxmaker refused {dest}:{port}: its answers are {} and this box can write {mount}, \
             a {} mount, where what it read would go below its label (no write down); a tool \
             that reads there needs mounts = [...] without it, or read-only",
            returns.class, class.class
        )
    } else {
        format!(
            "boxmaker refused {dest}:{port}: its answers are untrusted and this box can write \
             {mount}, a mount whose files are trusted, where what it read would come back as \
             the person's own files (no write down); a tool that reads there needs mounts = \
             [...] without it, or read-only, or the destination's rule trusted = true, or the \
             mount untrusted = true"
        )
    }
}

impl EgressError {
    /// The HTTP status the box is answered with.
    pub fn status(&self) -> u16 {
        match self {
            EgressError::Refused(_)
            | EgressError::NoTool { .. }
            | EgressError::WritesDown { .. } => 403,
            EgressError::BadRequest(r) => r.status,
            EgressError::NotAName { .. } => 400,
            EgressError::Capped { .. } => 429,
            EgressError::Resolve { .. } | EgressError::Connect { .. } => 502,
            EgressError::HeadTimeout => 408,
            EgressError::HeadTooLarge => 431,
            EgressError::InTunnel { status, .. } => *status,
        }
    }

    /// Refused (the rules, a bound) or failed (allowed, but not reachable).
    fn outcome(&self) -> EgressOutcome {
        match self {
            EgressError::Resolve { .. } | EgressError::Connect { .. } => EgressOutcome::Failed,
            _ => EgressOutcome::Refused,
        }
    }
}

/// What reading a head came to.
enum HeadRead {
    /// It ends there.
    End(usize),
    /// The box closed the connection first (or it broke).
    Closed,
    TooLarge,
    /// A byte no head may hold.
    Bad(http::Reject),
}

/// How a connection ended, for its `closed` record.
enum End {
    Done,
    Idle,
    Cap,
    Broken,
    /// What the tunnel carried first was refused (the sentence).
    Refused(String),
}

/// What a tunnel carried first.
enum First {
    /// The box closed it before sending anything.
    Closed,
    /// A TLS client hello, and every byte read (to go on as they came).
    Tls(tls::Hello, Vec<u8>),
    /// One plain HTTP request: the head to send, its body, and what came behind its head.
    Http {
        head: Vec<u8>,
        body: Body,
        rest: Vec<u8>,
    },
    /// Refused: the status (for plain HTTP) and why.
    Bad { status: u16, why: String, tls: bool },
}

impl Egress {
    /// The proxy for `config`; the session floors are the runner's.
    pub fn new(config: Arc<Config>, floors: Arc<Mutex<HashMap<SessionId, Label>>>) -> Self {
        Self {
            config,
            floors,
            runtime: OnceLock::new(),
            next_conn: AtomicU64::new(1),
            live: Mutex::default(),
            over_cap: AtomicU64::new(0),
            sink: Mutex::default(),
            own: Mutex::default(),
            base: Instant::now(),
        }
    }

    /// Where records go from now on.
    pub fn set_sink(&self, sink: EventSink) {
        *self.sink.lock().unwrap_or_else(PoisonError::into_inner) = Some(sink);
    }

    pub fn emit(&self, record: EgressRecord) {
        self.event(RunnerAnswer::Egress { record });
    }

    /// Send one event on the runner's channel to the gate (egress records, floats, box
    /// starts), if a sink is set.
    pub fn event(&self, event: RunnerAnswer) {
        let sink = self
            .sink
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(sink) = sink {
            sink(event);
        }
    }

    fn runtime(&self) -> Result<&tokio::runtime::Runtime, String> {
        self.runtime
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("egress")
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the egress proxy: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Serves `listener` (a proxy box's) for `ctx` until the returned guard is dropped.
    /// `None` when the proxy cannot run: then the listener is closed and the box reaches
    /// nothing.
    pub fn serve(self: &Arc<Self>, listener: std::net::TcpListener, ctx: BoxCtx) -> Option<Guard> {
        let rt = match self.runtime() {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("boxmaker: {e}");
                return None;
            }
        };
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let me = self.clone();
        let ctx = Arc::new(ctx);
        rt.spawn(async move {
            if listener.set_nonblocking(true).is_err() {
                return;
            }
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            loop {
                tokio::select! {
                    _ = &mut rx => break,
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            let (me, ctx) = (me.clone(), ctx.clone());
                            tokio::spawn(async move { me.connection(&ctx, stream).await });
                        }
                        // Out of descriptors, say: wait a moment rather than spin.
                        Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    }
                }
            }
        });
        Some(Guard { stop: Some(tx) })
    }

    /// `session`'s floor rose to `floor`: every connection of it whose destination is not
    /// cleared for the new label is cut now, before the answer that raised it goes out.
    pub fn label_rose(&self, session: &SessionId, floor: Label) {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        let judge = |l: &Live| l.float.label(floor, l.reach).class();
        let class = floor.class;
        cut_below(live.get(session), None, judge, |_, clearance| {
            format!(
                "cut when the session's label rose: it holds {class} data now and the \
                 destination is cleared for {clearance}"
            )
        });
    }

    /// Bytes of what `dest` answered (labelled `returns`, its rule's: its class, untrusted
    /// unless the rule says trusted) are about to be written to the box of `ctx` through
    /// connection `conn`, for the first time: the box's label, and the session's floor (the
    /// box may leave them in the workspace), rise by `returns`, and every other connection of the session not cleared for `returns` is
    /// cut — all before the first byte reaches the box, so nothing it sent before can hold
    /// them. Each other connection is judged by this answer's label alone: it was cleared
    /// for everything before (when it was decided, or by the check of each rise since), so
    /// a connection whose own answer is above its clearance is cut only by something else
    /// above it. Under the lock of the open connections, whether or not this rose anything:
    /// a second answer that finds the label already raised waits until the rise that raised
    /// it has cut.
    pub fn answered(&self, ctx: &BoxCtx, conn: u64, returns: Label, dest: &str) {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        ctx.float.raise_read(returns);
        let rose = {
            let mut f = self.floors.lock().unwrap_or_else(PoisonError::into_inner);
            let e = f.entry(ctx.session.clone()).or_insert(Label::PUBLIC);
            let was = *e;
            *e = was.join(returns);
            *e != was
        };
        // The floor lives in this runner's memory; the session's taint, in the gate's store.
        // A `failed` answer carries no label and a runner does not outlive its gate, so the
        // gate is told now, before a byte of the answer reaches the box: it commits the rise
        // before it takes the call's answer (docs/spec.md §3.6).
        if rose {
            self.event(RunnerAnswer::Floated {
                session: ctx.session.clone(),
                tool: ctx.tool.clone(),
                call: ctx.current_call(),
                class: returns.class,
                untrusted: returns.untrusted,
            });
        }
        let judge = |_: &Live| returns.class;
        let returns = returns.class;
        cut_below(live.get(&ctx.session), Some(conn), judge, |l, clearance| {
            let whose = if Arc::ptr_eq(&l.float, &ctx.float) {
                "this box"
            } else {
                "a box of this session (whose workspace they share)"
            };
            format!(
                "cut when {whose} read {returns} data from {dest}, and this destination is \
                 cleared for {clearance}"
            )
        });
    }

    pub fn floor(&self, session: &SessionId) -> Label {
        self.floors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .copied()
            .unwrap_or(Label::PUBLIC)
    }

    /// This machine's own addresses (its network namespace's), read again every 2 s.
    fn own_addresses(&self) -> Arc<Vec<IpAddr>> {
        let mut own = self.own.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, addrs)) = own.as_ref()
            && at.elapsed() < Duration::from_secs(2)
        {
            return addrs.clone();
        }
        let addrs = Arc::new(local_addresses());
        *own = Some((Instant::now(), addrs.clone()));
        addrs
    }

    /// A connection number of this runner's, for a record.
    pub fn next_conn(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    pub fn record(&self, ctx: &BoxCtx, conn: u64, host: &str, port: u16) -> EgressRecord {
        EgressRecord {
            session: ctx.session.clone(),
            call: ctx.current_call(),
            tool: ctx.tool.clone(),
            conn,
            host: host.to_string(),
            port,
            address: None,
            outcome: EgressOutcome::Refused,
            reason: None,
            sent: 0,
            received: 0,
        }
    }

    /// One accepted connection, from its head to its end.
    async fn connection(self: Arc<Self>, ctx: &BoxCtx, mut client: TcpStream) {
        let conn = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let cap = self.config.limits.max_connections_per_session;
        let tool = self.config.tool(&ctx.tool);
        let reach = tool.map_or(DataClass::Public, |t| self.config.reach(t));
        let cut = Arc::new(Mutex::new(None));
        // A slot in the session's count, taken at accept so a flood of half-open
        // connections counts too.
        let admitted = {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            let conns = live.entry(ctx.session.clone()).or_default();
            if (conns.len() as u64) < cap {
                let sockets = std_copy(&client).into_iter().collect();
                conns.insert(
                    conn,
                    Live {
                        clearance: None,
                        reach,
                        float: ctx.float.clone(),
                        sockets,
                        cut: cut.clone(),
                    },
                );
                true
            } else {
                false
            }
        };
        if !admitted && self.over_cap.fetch_add(1, Ordering::Relaxed) >= OVER_CAP_WAITING {
            self.over_cap.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        let _slot = Slot {
            egress: &self,
            session: &ctx.session,
            conn,
            admitted,
        };

        // The head.
        let mut buf = Vec::with_capacity(4096);
        let head = tokio::time::timeout(
            Duration::from_secs(HEAD_SECONDS),
            read_head(&mut client, &mut buf),
        )
        .await;
        // A head that never makes a request is audited too, with no host (port 0).
        let unknown = self.record(ctx, conn, "", 0);
        let end = match head {
            Err(_) => {
                return self
                    .refuse(&mut client, unknown, EgressError::HeadTimeout)
                    .await;
            }
            Ok(HeadRead::TooLarge) => {
                return self
                    .refuse(&mut client, unknown, EgressError::HeadTooLarge)
                    .await;
            }
            Ok(HeadRead::Closed) => return,
            Ok(HeadRead::Bad(r)) => return self.refuse(&mut client, unknown, r.into()).await,
            Ok(HeadRead::End(end)) => end,
        };
        let head = match http::parse(&buf[..end]) {
            Ok(h) => h,
            Err(r) => return self.refuse(&mut client, unknown, r.into()).await,
        };
        let leftover = buf.split_off(end);
        let mut rec = self.record(ctx, conn, &head.host, head.port);

        if !admitted {
            let e = EgressError::Capped {
                dest: shown(&head.host),
                port: head.port,
                cap,
            };
            return self.refuse(&mut client, rec, e).await;
        }

        // Decide, resolve, check, connect.
        let label = ctx.float.label(self.floor(&ctx.session), reach);
        let way = match head.kind {
            Kind::Connect => Way::Tunnel,
            Kind::Forward { .. } => Way::Request,
        };
        let Decided {
            clearance,
            returns,
            addrs,
        } = match self
            .decide(tool, &ctx.float, &head.host, head.port, way, label)
            .await
        {
            Ok(a) => a,
            Err(e) => return self.refuse(&mut client, rec, e).await,
        };
        let (upstream, addr) =
            match connect_first(&addrs, Duration::from_secs(CONNECT_SECONDS)).await {
                Ok(c) => c,
                Err(detail) => {
                    let e = EgressError::Connect {
                        dest: shown(&head.host),
                        port: head.port,
                        detail,
                    };
                    return self.refuse(&mut client, rec, e).await;
                }
            };
        let _ = upstream.set_nodelay(true);
        let _ = client.set_nodelay(true);
        {
            let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(l) = live.get_mut(&ctx.session).and_then(|c| c.get_mut(&conn)) {
                l.clearance = Some(clearance);
                l.sockets.extend(std_copy(&upstream));
                // The label may have risen while this connection was decided. Read under
                // the same lock a rise takes to cut: either the rise sees this clearance,
                // or this sees the rise.
                let now = l.float.label(self.floor(&ctx.session), reach).class();
                if now > clearance {
                    *cut.lock().unwrap_or_else(PoisonError::into_inner) = Some(format!(
                        "cut as it opened: the box's label rose to {now} while it was decided, \
                         and the destination is cleared for {clearance}"
                    ));
                    for s in &l.sockets {
                        let _ = s.shutdown(std::net::Shutdown::Both);
                    }
                }
            }
        }
        rec.address = Some(addr.to_string());
        rec.outcome = EgressOutcome::Opened;
        rec.reason = Some(format!(
            "allowed at {} (destination cleared for {clearance}; its answers are {returns})",
            label.class()
        ));
        self.emit(rec.clone());

        let sent = AtomicU64::new(0);
        let received = AtomicU64::new(0);
        let last = AtomicU64::new(self.now_ms());
        let up_cap = self.config.limits.max_upload_bytes;
        let idle = Duration::from_secs(self.config.limits.egress_idle_seconds);
        let dest = shown(&head.host);
        let counters = Counters {
            sent: &sent,
            received: &received,
            last: &last,
            base: self.base,
            cap: up_cap,
            answers: Answers {
                egress: &self,
                ctx,
                conn,
                returns,
                dest: &dest,
                arrived: AtomicBool::new(false),
            },
        };
        let ended = match head.kind {
            Kind::Connect => {
                tunnel_or_request(client, upstream, &head, leftover, &counters, idle).await
            }
            Kind::Forward { head: out, body } => {
                forward(client, upstream, &out, &leftover, body, &counters, idle).await
            }
        };
        let reason = cut
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .unwrap_or_else(|| match ended {
                End::Done => "ended".into(),
                End::Idle => format!(
                    "closed after {} s with no byte either way (egress_idle_seconds in [box])",
                    idle.as_secs()
                ),
                End::Cap => format!("cut after {up_cap} bytes sent (max_upload_bytes in [box])"),
                End::Broken => "broken".into(),
                End::Refused(why) => why,
            });
        rec.outcome = EgressOutcome::Closed;
        rec.reason = Some(reason);
        rec.sent = sent.load(Ordering::Relaxed);
        rec.received = received.load(Ordering::Relaxed);
        self.emit(rec);
    }

    /// Answers the box with `e`, and audits it.
    async fn refuse(&self, client: &mut TcpStream, mut rec: EgressRecord, e: EgressError) {
        let why = e.to_string();
        rec.outcome = e.outcome();
        rec.reason = Some(why.clone());
        self.emit(rec);
        let _ = client.write_all(&http::response(e.status(), &why)).await;
    }

    /// Whether `head` may go out at `label` from a box whose floating label is `float`, and
    /// to which addresses: the clearance of the rule that allows it, the label of what it
    /// answers, and the addresses checked.
    /// The remote MCP client (`downstream::remote`) decides its connections here too: one
    /// rule for a box's and for the runner's own.
    pub async fn decide(
        &self,
        tool: Option<&config::Tool>,
        float: &Float,
        host: &str,
        port: u16,
        way: Way,
        label: CallLabel,
    ) -> Result<Decided, EgressError> {
        let host = config::egress::classify_host(host).map_err(|why| EgressError::NotAName {
            dest: shown(host),
            port,
            why,
        })?;
        let dest = match &host {
            Host::Address(ip) => Destination::Address(*ip),
            Host::Name(n) => Destination::Name(n),
        };
        // A box of no tool the config has (the runner starts boxes only for its tools) may
        // use no rule.
        let Some(tool) = tool else {
            return Err(EgressError::NoTool {
                dest: dest.to_string(),
                port,
            });
        };
        let cleared = self.config.clearance(Some(tool), dest, port, way, label)?;
        let decided = |returns: Label, addrs: Vec<SocketAddr>| {
            // A box never floats above a mount it may write (no write down): a higher
            // class, or untrusted over a mount whose files are trusted. The lowest such
            // mount is named.
            let below = float
                .ceiling
                .iter()
                .filter(|(mount, _)| !returns.within(*mount))
                .min_by_key(|(mount, _)| (mount.class, mount.untrusted));
            match below {
                Some((mount, at)) => Err(EgressError::WritesDown {
                    dest: dest.to_string(),
                    port,
                    returns,
                    mount: at.display().to_string(),
                    class: *mount,
                }),
                None => Ok(Decided {
                    clearance: cleared.class,
                    returns,
                    addrs,
                }),
            }
        };
        let name = match dest {
            // An IP literal a rule names by address: that address, as it is.
            Destination::Address(ip) => {
                return decided(cleared.returns, vec![SocketAddr::new(ip, port)]);
            }
            Destination::Name(n) => n,
        };
        let failed = |detail: String| EgressError::Resolve {
            name: name.to_string(),
            detail,
        };
        let addrs: Vec<SocketAddr> = tokio::time::timeout(
            Duration::from_secs(CONNECT_SECONDS),
            tokio::net::lookup_host((name, port)),
        )
        .await
        .map_err(|_| failed(format!("no answer in {CONNECT_SECONDS} s")))?
        .map_err(|e| failed(e.to_string()))?
        .collect();
        if addrs.is_empty() {
            return Err(failed("no address".into()));
        }
        let own = self.own_addresses();
        let mut returns = cleared.returns;
        let mut clearance = cleared.class;
        for a in &addrs {
            let (r, within) = self.config.clear_address_within(
                Some(tool),
                name,
                a.ip(),
                port,
                way,
                label,
                &own,
            )?;
            returns = returns.join(r);
            clearance = clearance.min(within);
        }
        decided(returns, addrs).map(|d| Decided { clearance, ..d })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Cuts every decided connection in `conns` (a session's) but `except` for which `judge`
/// gives a label above its destination's clearance; `why` says so for its `closed` record.
/// The caller holds the lock of the open connections.
fn cut_below(
    conns: Option<&HashMap<u64, Live>>,
    except: Option<u64>,
    judge: impl Fn(&Live) -> DataClass,
    why: impl Fn(&Live, DataClass) -> String,
) {
    for (id, l) in conns.into_iter().flatten() {
        let Some(clearance) = l.clearance else {
            continue;
        };
        if Some(*id) == except || judge(l) <= clearance {
            continue;
        }
        let mut cut = l.cut.lock().unwrap_or_else(PoisonError::into_inner);
        if cut.is_none() {
            *cut = Some(why(l, clearance));
        }
        for s in &l.sockets {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

/// What [`Egress::decide`] allowed: the clearance of the rule that allows it, the label of
/// what the destination answers, and the addresses checked.
#[derive(Debug)]
pub struct Decided {
    pub clearance: DataClass,
    pub returns: Label,
    pub addrs: Vec<SocketAddr>,
}

/// Where a connection's answer floats the box's label to, once its first byte is about to
/// reach the box ([`Egress::answered`]).
struct Answers<'a> {
    egress: &'a Egress,
    ctx: &'a BoxCtx,
    conn: u64,
    /// The label of what the destination answers.
    returns: Label,
    /// The destination, for the `closed` records of what it cuts.
    dest: &'a str,
    arrived: AtomicBool,
}

/// A connection's place in its session's count, given back when it ends.
struct Slot<'a> {
    egress: &'a Egress,
    session: &'a SessionId,
    conn: u64,
    admitted: bool,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.admitted {
            self.egress.over_cap.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        let mut live = self
            .egress
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(conns) = live.get_mut(self.session) {
            conns.remove(&self.conn);
            if conns.is_empty() {
                live.remove(self.session);
            }
        }
    }
}

/// A connection's byte counts and last activity, and where its answer floats the box.
struct Counters<'a> {
    sent: &'a AtomicU64,
    received: &'a AtomicU64,
    last: &'a AtomicU64,
    base: Instant,
    cap: u64,
    answers: Answers<'a>,
}

impl Counters<'_> {
    /// Bytes of the destination's answer are about to be written to the box: the first time,
    /// the box's label floats up to the answer's and what is no longer cleared is cut, before
    /// this returns (and so before the bytes are written).
    fn answer_arrives(&self) {
        let a = &self.answers;
        if !a.arrived.load(Ordering::Relaxed) {
            a.egress.answered(a.ctx, a.conn, a.returns, a.dest);
            a.arrived.store(true, Ordering::Relaxed);
        }
    }

    fn touch(&self) {
        self.last.store(
            u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
    }

    /// Sends `data` upstream, within the upload cap.
    async fn upload<W: AsyncWrite + Unpin>(&self, w: &mut W, data: &[u8]) -> Result<(), End> {
        let before = self.sent.load(Ordering::Relaxed);
        if before.saturating_add(data.len() as u64) > self.cap {
            return Err(End::Cap);
        }
        w.write_all(data).await.map_err(|_| End::Broken)?;
        self.sent.fetch_add(data.len() as u64, Ordering::Relaxed);
        self.touch();
        Ok(())
    }
}

/// A fatal TLS alert, `access_denied` (RFC 8446 §6.2): the answer to a hello refused.
const TLS_ACCESS_DENIED: &[u8] = &[21, 3, 3, 0, 2, 2, 49];

/// A CONNECT tunnel, once decided: the `200`, then its first bytes checked
/// ([`first_bytes`]) — a TLS hello naming the tunnel's host goes on as a tunnel, one plain
/// HTTP request whose `Host` names it is forwarded as any request, anything else is
/// refused (an HTTP answer, or a TLS alert) and nothing of it reaches `upstream`.
async fn tunnel_or_request(
    mut client: TcpStream,
    mut upstream: TcpStream,
    head: &Head,
    leftover: Vec<u8>,
    c: &Counters<'_>,
    idle: Duration,
) -> End {
    if client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .is_err()
    {
        return End::Broken;
    }
    let dest = shown(&head.host);
    let refused = |status: u16, why: String| EgressError::InTunnel {
        dest: dest.clone(),
        port: head.port,
        status,
        why,
    };
    // Decided, so it is a host.
    let Ok(host) = config::egress::classify_host(&head.host) else {
        return End::Broken;
    };
    let first = tokio::select! {
        f = first_bytes(&mut client, leftover, &host, head.port, &dest, c) => f,
        () = watchdog(c, idle) => return End::Idle,
    };
    let (e, tls) = match first {
        First::Closed => return End::Done,
        First::Tls(hello, bytes) => match hello_names(&hello, &host, &dest) {
            Ok(()) => return tunnel(&mut client, &mut upstream, &bytes, c, idle).await,
            Err(why) => (refused(403, why), true),
        },
        First::Http {
            head: out,
            body,
            rest,
        } => {
            return forward(client, upstream, &out, &rest, body, c, idle).await;
        }
        First::Bad { status, why, tls } => (refused(status, why), tls),
    };
    let why = e.to_string();
    let answer = if tls {
        TLS_ACCESS_DENIED.to_vec()
    } else {
        http::response(e.status(), &why)
    };
    let _ = client.write_all(&answer).await;
    End::Refused(why)
}

/// Reads what a tunnel carries first (`buf`: what came behind the CONNECT head): a whole
/// TLS client hello (it starts with a handshake record, 0x16 0x03), else a whole HTTP head,
/// parsed as one request to `host:port` ([`http::parse_in_tunnel`]). Once its first byte
/// is in, the rest must come within [`HEAD_SECONDS`]. Nothing is sent on.
async fn first_bytes(
    client: &mut TcpStream,
    mut buf: Vec<u8>,
    host: &Host,
    port: u16,
    dest: &str,
    c: &Counters<'_>,
) -> First {
    let bad = |status: u16, why: String, tls: bool| First::Bad { status, why, tls };
    let mut chunk = [0u8; 4096];
    let mut deadline = None;
    let mut scanned = 0;
    let mut line_ok = false;
    loop {
        if let Some(&b) = buf.first() {
            deadline.get_or_insert_with(|| {
                tokio::time::Instant::now() + Duration::from_secs(HEAD_SECONDS)
            });
            if b == 22 {
                match tls::client_hello(&buf) {
                    Ok(Some(hello)) => return First::Tls(hello, buf),
                    Ok(None) if buf.len() > tls::MAX_RECORDS => {
                        return bad(400, "the TLS client hello is too long".into(), true);
                    }
                    Ok(None) => {}
                    Err(why) => return bad(400, why, true),
                }
            } else {
                match http::scan(&buf, scanned) {
                    http::Scan::End(n) => {
                        let rest = buf.split_off(n);
                        return match http::parse_in_tunnel(&buf, host, port, dest) {
                            Ok((head, body)) => First::Http { head, body, rest },
                            Err(r) => bad(r.status, r.reason, false),
                        };
                    }
                    http::Scan::Bad(r) => return bad(r.status, r.reason, false),
                    http::Scan::More(_) if buf.len() > http::MAX_HEAD => {
                        return bad(431, EgressError::HeadTooLarge.to_string(), false);
                    }
                    http::Scan::More(at) => scanned = at,
                }
                if !line_ok {
                    match http::first_line(&buf, scanned) {
                        Ok(ok) => line_ok = ok,
                        Err(r) => return bad(r.status, r.reason, false),
                    }
                }
            }
        }
        let read = match deadline {
            None => client.read(&mut chunk).await,
            Some(d) => match tokio::time::timeout_at(d, client.read(&mut chunk)).await {
                Ok(r) => r,
                Err(_) => {
                    let why = format!(
                        "what the tunnel carries first did not come whole within {HEAD_SECONDS} s"
                    );
                    return bad(408, why, buf.first() == Some(&22));
                }
            },
        };
        match read {
            Ok(0) | Err(_) => return First::Closed,
            Ok(n) => {
                c.touch();
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// Whether a TLS hello goes where its tunnel does: its server name (SNI) is the tunnel's
/// host name, or it has none when the tunnel is to an address (a name is never an
/// address in SNI, RFC 6066 §3). Else another site behind the same address could be
/// reached by name (domain fronting by SNI). An Encrypted Client Hello hides the name, so
/// it is refused. Why not, as a sentence.
fn hello_names(hello: &tls::Hello, host: &Host, dest: &str) -> Result<(), String> {
    if hello.ech {
        return Err(
            "its TLS hello hides the server it goes to (Encrypted Client Hello), which the \
             proxy cannot check"
                .into(),
        );
    }
    match (&hello.server_name, host) {
        (None, Host::Address(_)) => Ok(()),
        (None, Host::Name(_)) => Err(format!(
            "its TLS hello names no server (SNI); a tunnel to {dest} carries TLS for {dest}"
        )),
        (Some(sni), _) => match config::egress::classify_host(sni) {
            Ok(named @ Host::Name(_)) if named == *host => Ok(()),
            _ => Err(format!(
                "its TLS hello names another server ({sni}, its SNI) than the tunnel's {dest}"
            )),
        },
    }
}

/// A request forwarded: its head `out`, then its body (`leftover`: what was read behind
/// the head first), exactly as long as its framing says; the answer comes back until the
/// origin ends it. When the box closes its side, the origin's side is closed for writing
/// too; whatever the box sends behind the body is never forwarded.
async fn forward(
    client: TcpStream,
    upstream: TcpStream,
    out: &[u8],
    leftover: &[u8],
    body: Body,
    c: &Counters<'_>,
    idle: Duration,
) -> End {
    let (mut cr, cw) = client.into_split();
    let (ur, mut uw) = upstream.into_split();
    if uw.write_all(out).await.is_err() {
        return End::Broken;
    }
    c.sent.fetch_add(out.len() as u64, Ordering::Relaxed);
    let up = async {
        if let Err(e) = forward_body(&mut cr, &mut uw, leftover, body, c).await {
            return e;
        }
        let mut sink = vec![0u8; 4096];
        while matches!(cr.read(&mut sink).await, Ok(n) if n > 0) {}
        let _ = uw.shutdown().await;
        std::future::pending::<End>().await
    };
    // The answer is not read, only relayed: zero-copy where the kernel splices.
    let down = async {
        let r = match sandbox::SplicePipe::new() {
            Ok(pipe) => splice_pump(ur.as_ref(), cw.as_ref(), &pipe, c, false).await,
            Err(_) => pump(ur, cw, c, false).await,
        };
        match r {
            Ok(()) => End::Done,
            Err(e) => e,
        }
    };
    tokio::select! {
        e = down => e,
        e = up => e,
        () = watchdog(c, idle) => End::Idle,
    }
}

/// A CONNECT tunnel, its first bytes checked: those (`leftover`), then both ways at once
/// until both ends are done, the upload cap, or `idle` with no byte either way.
async fn tunnel(
    client: &mut TcpStream,
    upstream: &mut TcpStream,
    leftover: &[u8],
    c: &Counters<'_>,
    idle: Duration,
) -> End {
    if !leftover.is_empty()
        && let Err(e) = c.upload(upstream, leftover).await
    {
        return e;
    }
    let relayed = async {
        // Zero-copy where the kernel splices (it always does for TCP); else through a
        // buffer of ours.
        let r = match (sandbox::SplicePipe::new(), sandbox::SplicePipe::new()) {
            (Ok(up), Ok(down)) => {
                let (client, upstream) = (&*client, &*upstream);
                tokio::try_join!(
                    splice_pump(client, upstream, &up, c, true),
                    splice_pump(upstream, client, &down, c, false)
                )
            }
            _ => {
                let (cr, cw) = client.split();
                let (ur, uw) = upstream.split();
                tokio::try_join!(pump(cr, uw, c, true), pump(ur, cw, c, false))
            }
        };
        r.map_or_else(|e| e, |_| End::Done)
    };
    tokio::select! {
        e = relayed => e,
        () = watchdog(c, idle) => End::Idle,
    }
}

/// As [`pump`], by `splice(2)` through `pipe`: from `from` until it ends (then `to` is shut
/// for writing).
async fn splice_pump(
    from: &TcpStream,
    to: &TcpStream,
    pipe: &sandbox::SplicePipe,
    c: &Counters<'_>,
    up: bool,
) -> Result<(), End> {
    use std::os::fd::AsFd;
    use tokio::io::Interest;
    loop {
        let n = loop {
            from.readable().await.map_err(|_| End::Broken)?;
            match from.try_io(Interest::READABLE, || {
                pipe.fill(from.as_fd(), sandbox::SPLICE_PIPE_BYTES)
            }) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return Err(End::Broken),
            }
        };
        if n == 0 {
            if let Some(s) = std_copy(to) {
                let _ = s.shutdown(std::net::Shutdown::Write);
            }
            return Ok(());
        }
        if up && c.sent.load(Ordering::Relaxed).saturating_add(n as u64) > c.cap {
            return Err(End::Cap);
        }
        if !up {
            c.answer_arrives();
        }
        let mut left = n;
        while left > 0 {
            to.writable().await.map_err(|_| End::Broken)?;
            match to.try_io(Interest::WRITABLE, || pipe.drain(to.as_fd(), left)) {
                Ok(m) => left -= m.min(left),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return Err(End::Broken),
            }
        }
        let counter = if up { c.sent } else { c.received };
        counter.fetch_add(n as u64, Ordering::Relaxed);
        c.touch();
    }
}

/// Copies `r` to `w` until `r` ends (then shuts `w` down); `up` counts against the upload
/// cap.
async fn pump<R, W>(mut r: R, mut w: W, c: &Counters<'_>, up: bool) -> Result<(), End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = match r.read(&mut buf).await {
            Ok(0) => {
                let _ = w.shutdown().await;
                return Ok(());
            }
            Ok(n) => n,
            Err(_) => return Err(End::Broken),
        };
        if up {
            c.upload(&mut w, &buf[..n]).await?;
        } else {
            c.answer_arrives();
            w.write_all(&buf[..n]).await.map_err(|_| End::Broken)?;
            c.received.fetch_add(n as u64, Ordering::Relaxed);
            c.touch();
        }
    }
}

/// Sends a forwarded request's body (what was read with the head first), exactly as long
/// as its framing says: nothing behind it reaches the origin.
async fn forward_body<R, W>(
    r: &mut R,
    w: &mut W,
    leftover: &[u8],
    body: Body,
    c: &Counters<'_>,
) -> Result<(), End>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    match body {
        Body::None => Ok(()),
        Body::Length(n) => {
            let first = leftover.len().min(usize::try_from(n).unwrap_or(usize::MAX));
            c.upload(w, &leftover[..first]).await?;
            let rest = n - first as u64;
            if rest == 0 {
                return Ok(());
            }
            let mut buf = vec![0u8; CHUNK];
            let mut left = rest;
            while left > 0 {
                let want = usize::try_from(left).unwrap_or(CHUNK).min(CHUNK);
                let got = r.read(&mut buf[..want]).await.map_err(|_| End::Broken)?;
                if got == 0 {
                    return Err(End::Broken);
                }
                left -= got as u64;
                c.upload(w, &buf[..got]).await?;
            }
            Ok(())
        }
        Body::Chunked => {
            let mut chunked = http::Chunked::default();
            let mut data = leftover.to_vec();
            let mut buf = vec![0u8; CHUNK];
            loop {
                let end = chunked.feed(&data).map_err(|_| End::Broken)?;
                let take = end.unwrap_or(data.len());
                c.upload(w, &data[..take]).await?;
                if end.is_some() {
                    return Ok(());
                }
                let got = r.read(&mut buf).await.map_err(|_| End::Broken)?;
                if got == 0 {
                    return Err(End::Broken);
                }
                data.clear();
                data.extend_from_slice(&buf[..got]);
            }
        }
    }
}

/// Returns once no byte went either way for `idle`.
async fn watchdog(c: &Counters<'_>, idle: Duration) {
    let idle_ms = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
    loop {
        let now = u64::try_from(c.base.elapsed().as_millis()).unwrap_or(u64::MAX);
        let quiet = now.saturating_sub(c.last.load(Ordering::Relaxed));
        if quiet >= idle_ms {
            return;
        }
        let wait = (idle_ms - quiet).clamp(50, 1000);
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
}

/// Reads until the end of the head, at most [`http::MAX_HEAD`] bytes; a byte no head may
/// hold ends it at once ([`http::scan`]).
async fn read_head(s: &mut TcpStream, buf: &mut Vec<u8>) -> HeadRead {
    let mut chunk = [0u8; 4096];
    let mut from = 0;
    let mut line_ok = false;
    loop {
        let n = match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return HeadRead::Closed,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        match http::scan(buf, from) {
            http::Scan::End(end) => return HeadRead::End(end),
            http::Scan::Bad(r) => return HeadRead::Bad(r),
            http::Scan::More(at) => from = at,
        }
        if !line_ok {
            match http::first_line(buf, from) {
                Ok(ok) => line_ok = ok,
                Err(r) => return HeadRead::Bad(r),
            }
        }
        if buf.len() > http::MAX_HEAD {
            return HeadRead::TooLarge;
        }
    }
}

/// A second handle on a tokio stream's socket (to shut it down from elsewhere).
fn std_copy(s: &TcpStream) -> Option<std::net::TcpStream> {
    use std::os::fd::AsFd;
    s.as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::net::TcpStream::from)
}

/// An address in brackets when it is IPv6, as in a URL.
fn shown(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// This network namespace's own addresses: IPv4 from `/proc/net/fib_trie` (the `LOCAL`
/// routes), IPv6 from `/proc/net/if_inet6`.
fn local_addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    if let Ok(trie) = std::fs::read_to_string("/proc/net/fib_trie") {
        let mut last: Option<&str> = None;
        for line in trie.lines() {
            let t = line.trim_start_matches([' ', '|', '-', '+']);
            if let Some(addr) = line.contains("|--").then_some(t) {
                last = Some(addr.trim());
            } else if t.trim() == "/32 host LOCAL"
                && let Some(ip) = last.and_then(|a| a.parse::<IpAddr>().ok())
                && !out.contains(&ip)
            {
                out.push(ip);
            }
        }
    }
    if let Ok(v6) = std::fs::read_to_string("/proc/net/if_inet6") {
        for line in v6.lines() {
            let Some(hex) = line.split_whitespace().next() else {
                continue;
            };
            if let Ok(bits) = u128::from_str_radix(hex, 16) {
                out.push(IpAddr::V6(std::net::Ipv6Addr::from(bits)));
            }
        }
    }
    out
}

/// A connection to the first of `addrs` that answers, all within `within`: each address is
/// given the time left shared among those not yet tried, so a name whose first addresses do
/// not answer still reaches one that does, and the whole is bounded (each address had
/// `CONNECT_SECONDS` of its own: a name of six silent addresses held a box's request a
/// minute). The error names the last address tried and why.
async fn connect_first(
    addrs: &[SocketAddr],
    within: Duration,
) -> Result<(TcpStream, SocketAddr), String> {
    let by = tokio::time::Instant::now() + within;
    let mut last_err = String::from("no address");
    for (i, a) in addrs.iter().enumerate() {
        let left = by.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            break;
        }
        let share = left / u32::try_from(addrs.len() - i).unwrap_or(u32::MAX);
        match tokio::time::timeout(share, TcpStream::connect(a)).await {
            Ok(Ok(s)) => return Ok((s, *a)),
            Ok(Err(e)) => last_err = format!("{a}: {e}"),
            Err(_) => last_err = format!("{a}: no answer in {:.1} s", share.as_secs_f64()),
        }
    }
    Err(last_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three addresses that do not answer, then one that does: the fourth is reached within
    /// the bound, each silent one given a share of it (not the whole bound each).
    #[test]
    fn a_name_whose_first_addresses_do_not_answer_reaches_the_next_within_the_bound() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let backlog0 = || {
                let s = tokio::net::TcpSocket::new_v4().unwrap();
                s.bind("127.0.0.1:0".parse().unwrap()).unwrap();
                let l = s.listen(0).unwrap();
                let a = l.local_addr().unwrap();
                (l, a)
            };
            let mut held = Vec::new();
            let mut addrs = Vec::new();
            for _ in 0..3 {
                let (l, a) = backlog0();
                // One connection fills a queue of none; the next is never answered.
                let filler = TcpStream::connect(a).await.unwrap();
                held.push((l, filler));
                addrs.push(a);
            }
            let good = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            addrs.push(good.local_addr().unwrap());
            let t = std::time::Instant::now();
            let (_, reached) = connect_first(&addrs, Duration::from_secs(2)).await.unwrap();
            assert_eq!(reached, addrs[3]);
            assert!(
                t.elapsed() < Duration::from_millis(2500),
                "{:?}",
                t.elapsed()
            );
            // None answering: the error names the last one, and the bound holds.
            let t = std::time::Instant::now();
            let e = connect_first(&addrs[..3], Duration::from_secs(1))
                .await
                .unwrap_err();
            assert!(
                e.contains(&addrs[2].to_string()) && e.contains("no answer"),
                "{e}"
            );
            assert!(
                t.elapsed() < Duration::from_millis(1500),
                "{:?}",
                t.elapsed()
            );
        });
    }

    #[test]
    fn each_refusal_has_its_status_and_one_sentence() {
        let capped = EgressError::Capped {
            dest: "a.test".into(),
            port: 443,
            cap: 4,
        };
        assert_eq!(capped.status(), 429);
        assert_eq!(
            capped.to_string(),
            "boxmaker refused a.test:443: this session already has 4 connections open through \
             the proxy (max_connections_per_session in [box])"
        );
        let e = EgressError::from(config::Refusal::NotListed {
            dest: "b.test".into(),
            port: 80,
        });
        assert_eq!((e.status(), e.outcome()), (403, EgressOutcome::Refused));
        assert!(
            e.to_string()
                .starts_with("boxmaker refused b.test:80: it is not in"),
            "{e}"
        );
        let e = EgressError::Resolve {
            name: "c.test".into(),
            detail: "no address".into(),
        };
        assert_eq!((e.status(), e.outcome()), (502, EgressOutcome::Failed));
        for e in [
            &capped,
            &e,
            &EgressError::HeadTimeout,
            &EgressError::HeadTooLarge,
        ] {
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_tls_hello_goes_only_to_the_tunnels_host() {
        let name = Host::Name("a.test".into());
        let addr = Host::Address("192.0.2.7".parse().unwrap());
        let hello = |sni: Option<&str>, ech| tls::Hello {
            server_name: sni.map(String::from),
            ech,
        };
        assert!(hello_names(&hello(Some("A.Test."), false), &name, "a.test").is_ok());
        assert!(hello_names(&hello(None, false), &addr, "192.0.2.7").is_ok());
        let e = hello_names(&hello(Some("b.test"), false), &name, "a.test").unwrap_err();
        assert_eq!(
            e,
            "its TLS hello names another server (b.test, its SNI) than the tunnel's a.test"
        );
        for (h, host) in [
            (hello(None, false), &name),
            (hello(Some("a.test"), true), &name),
            (hello(Some("192.0.2.7"), false), &addr),
            (hello(Some("x.test"), false), &addr),
        ] {
            assert!(hello_names(&h, host, "t").is_err(), "{h:?}");
        }
    }

    /// Issue 30: an untrusted answer floats the box and the session's floor by its untrusted
    /// bit even when its class raises nothing, and the gate is told (`floated`, both parts);
    /// a server's float keeps the session's floor of every call it served.
    #[test]
    fn an_untrusted_answer_floats_the_untrusted_bit_and_tells_the_gate() {
        let config = Arc::new(config::parse("", "t.toml", std::path::Path::new("/")).unwrap());
        let floors: Arc<Mutex<HashMap<SessionId, Label>>> = Arc::default();
        let egress = Egress::new(config, floors.clone());
        let events: Arc<Mutex<Vec<RunnerAnswer>>> = Arc::default();
        let seen = events.clone();
        egress.set_sink(Arc::new(move |e| seen.lock().unwrap().push(e)));
        let session = SessionId::new("s1").unwrap();
        let float = Arc::new(Float::new(Label::PUBLIC, []));
        let ctx = BoxCtx {
            session: session.clone(),
            tool: "net".into(),
            call: Some(CallId(7)),
            calls: None,
            float: float.clone(),
        };
        let untrusted = Label::new(DataClass::Public, true);
        egress.answered(&ctx, 1, untrusted, "a.test");
        assert_eq!(float.reached(), untrusted);
        assert_eq!(egress.floor(&session), untrusted);
        let floated = events.lock().unwrap().clone();
        assert_eq!(
            floated,
            vec![RunnerAnswer::Floated {
                session: session.clone(),
                tool: "net".into(),
                call: Some(CallId(7)),
                class: DataClass::Public,
                untrusted: true,
            }]
        );
        // The same again rises nothing: no second event.
        egress.answered(&ctx, 2, untrusted, "a.test");
        assert_eq!(events.lock().unwrap().len(), 1);
        // A trusted answer of a rule that says so adds nothing to the bit.
        let trusted = Float::new(Label::PUBLIC, []);
        trusted.raise_read(Label::new(DataClass::Internal, false));
        assert_eq!(trusted.reached(), Label::new(DataClass::Internal, false));
        // A server's float joins the session's floor at every call, and keeps it.
        let server = Float::new(Label::PUBLIC, []);
        let call = CallLabel {
            session: untrusted,
            reach: DataClass::Public,
            call: Label::PUBLIC,
            read: Label::PUBLIC,
        };
        assert!(!server.called(&call), "no class rose");
        assert!(server.reached().untrusted);
        assert!(!server.called(&CallLabel {
            session: Label::PUBLIC,
            ..call
        }));
        assert!(server.reached().untrusted, "a float never falls");
    }

    /// No write down for the untrusted bit: a box that can write a mount whose files are
    /// trusted is refused a destination whose answers are untrusted, in one sentence.
    #[test]
    fn a_writes_down_refusal_says_which_part_of_the_label_it_is() {
        let class = EgressError::WritesDown {
            dest: "a.test".into(),
            port: 443,
            returns: Label::new(DataClass::Confidential, true),
            mount: "/data/out".into(),
            class: Label::PUBLIC,
        };
        assert!(
            class.to_string().contains(
                "its answers are confidential and this box can write /data/out, a \
                           public mount"
            ),
            "{class}"
        );
        let bit = EgressError::WritesDown {
            dest: "a.test".into(),
            port: 443,
            returns: Label::new(DataClass::Public, true),
            mount: "/data/out".into(),
            class: Label::PUBLIC,
        };
        assert_eq!(bit.status(), 403);
        assert!(
            bit.to_string().contains(
                "its answers are untrusted and this box can write /data/out, a mount whose \
                 files are trusted"
            ),
            "{bit}"
        );
    }

    #[test]
    fn this_machine_has_its_loopback_among_its_own_addresses() {
        let own = local_addresses();
        assert!(
            own.contains(&IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
            "{own:?}"
        );
    }
}
