//! Downstream MCP servers, each in its session's box (docs/spec.md §4, last paragraph).
//!
//! A `[[tool]]` with `mcp = [...]` is a server. The first call in a session to one of its
//! tools starts it in that session's box (the session's `/work`, the config's mounts, the
//! tool's network and environment) and initializes it as an MCP client (rmcp), over a
//! transport that bounds what the server may send ([`transport`]). Later calls in the same
//! session reuse it; no two sessions ever share one. A server is stopped after its idle time,
//! when a call to it times out or its connection breaks (its calls in flight then fail with
//! the reason), and with the runner; the next call starts it again.
//!
//! Results are labelled by the call's own label — `max(tool class, class of every mount the
//! tool is given)`, the server can read every mount its box shows, raised by every label
//! rule that matches the call (`Config::answer_label`, docs/spec.md §3.4) — raised to what
//! the session's workspace may hold and to what its box has reached since it started (what
//! destinations answered it: its label floats up, never down, docs/spec.md §3.6);
//! `untrusted` as the call's label says ([`content`]). Once it has reached above what a
//! failure carries, its failures withhold what it said. Its box shows
//! a writable mount read-only when the session's label is above the mount's class, and a
//! server started at a lower label is replaced when the label rises past such a mount (it
//! remembers what it was given: no write down, docs/spec.md §3.5).
//!
//! A call's log and progress notifications come back inside its result ([`heard`]); a
//! client's request for the server's resources or prompts is a call to the server's own
//! name ([`offers`]).
//!
//! Discovery ([`Runner::refresh_tools`]) runs each server once in a box with no session data
//! (an empty, throw-away workspace; the mounts read-only, and those above `public` shown
//! empty) to learn its tools, and records them in the discovery file
//! ([`catalog::ToolsFile`]). That is the only place definitions are recorded from: what a
//! running server later says of its tools is kept in memory and used only to refuse, under
//! `pin = true`, a tool whose definition differs from the accepted one.

pub mod content;
pub mod offers;
pub mod probe;
pub mod stderr;
/// The MCP client is a crate of its own; its modules keep their paths here.
pub use mcpclient::{heard, oauth, remote, transport};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use catalog::{Catalog, Entry, ToolDef, ToolsFile};
use config::{Tool, ToolKind};
use proto::{SessionId, ToolRequest, ToolResponse};
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use sandbox::{BoxProcess, Io};

use crate::run::{Runner, failed};
use crate::running::Admitted;
use transport::{Lines, Reason, get_reason, set_reason};

/// The wall-clock limit of a server's box: the server is stopped long before, when idle,
/// but a server kept busy is restarted at least this often.
const SERVER_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// The longest wait, in seconds, for a server being discovered to start and list its tools.
const DISCOVERY_TIMEOUT: u64 = 60;
/// How long a failed server's box may take to end by itself before it is killed (so its
/// exit status, not our kill, is what the reason reports).
const EXIT_GRACE: Duration = Duration::from_millis(200);
/// How a box we killed ended.
const STOPPED: &str = "it was stopped";
/// How often idle servers are looked for.
const REAP_EVERY: Duration = Duration::from_millis(500);

/// The servers of one runner: at most one per (session, `[[tool]]`).
#[derive(Default)]
pub(crate) struct Hub {
    runtime: OnceLock<Result<tokio::runtime::Runtime, String>>,
    slots: Mutex<HashMap<(SessionId, String), Slot>>,
    catalog: Mutex<Option<CachedCatalog>>,
    reaper: OnceLock<()>,
}

type Slot = Arc<tokio::sync::Mutex<Option<Arc<Instance>>>>;

struct CachedCatalog {
    stamp: Option<(SystemTime, u64)>,
    catalog: Arc<Catalog>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("Hub")
            .field("servers", &n)
            .finish_non_exhaustive()
    }
}

/// One running server.
struct Instance {
    service: RunningService<RoleClient, heard::Handler>,
    /// What the server says during each call (its log messages and progress).
    listener: heard::Listener,
    boxed: Mutex<Option<BoxProcess>>,
    /// Its tools, as it last listed them (at start; for a pinned server, before each call).
    tools: Mutex<Vec<ToolDef>>,
    reason: Reason,
    stderr: Arc<stderr::Stderr>,
    last_used: Mutex<Instant>,
    in_flight: AtomicUsize,
    idle: Duration,
    /// The label its box was built at: writable mounts within it are writable in its box.
    label: config::Label,
    /// The egress proxy serving its box's listener (a networked server), for as long as it
    /// runs.
    _egress: Option<egress::Guard>,
    /// The calls in flight on it, for its egress records (the one call, when one).
    calls: Arc<Mutex<Vec<proto::CallId>>>,
    /// Its box's floating label: what destinations answered it, and its calls' own labels,
    /// since it started (every later answer of it carries that).
    float: Arc<egress::Float>,
    /// A remote server: no box, no stderr (`remote::Client`).
    remote: bool,
    /// The kept names of its writable mounts that were not there when its box started
    /// (host path, path in the box): what it makes of them is moved aside after each call,
    /// and when it stops.
    absent_kept: Vec<(PathBuf, PathBuf)>,
    /// The watch that moves those aside the moment its box makes one (`None` when there
    /// is nothing to watch, or no watch could be set).
    _sentry: Option<crate::sentry::Sentry>,
    /// Its session and tool, and the runner's channel to the gate: for the sweep when the
    /// reaper stops it (`None` for a server with no box).
    owner: Option<(SessionId, String, Arc<egress::Egress>)>,
}

impl Instance {
    fn alive(&self) -> bool {
        !self.service.is_transport_closed() && get_reason(&self.reason).is_none()
    }

    /// Kills its box now (and with it every process the server started).
    fn kill(&self) {
        // A remote server's session ends with its service (its calls in flight fail now).
        if self.remote {
            self.service.cancellation_token().cancel();
        }
        stop_box(&self.boxed, Duration::ZERO);
    }

    /// Puts its box under `call`'s session's resets (a box already stopped needs none).
    fn guard(&self, call: &Admitted) {
        let stopper = self
            .boxed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(BoxProcess::stopper);
        if let Some(Ok(s)) = stopper {
            call.guard_box(s);
        }
    }

    /// Why it failed: the transport's reason (else `fallback`), then how it ended.
    fn why(&self, fallback: &str) -> String {
        let why = get_reason(&self.reason).unwrap_or_else(|| fallback.to_string());
        if self.remote {
            return why;
        }
        why + &ended(&self.boxed, &self.stderr)
    }
}

/// Stops the box in `boxed` (if still there) after `grace` for it to end by itself, and says
/// how it ended.
fn stop_box(boxed: &Mutex<Option<BoxProcess>>, grace: Duration) -> Option<String> {
    let b = boxed.lock().unwrap_or_else(PoisonError::into_inner).take();
    b.map(|b| match b.stop_after(grace) {
        Ok(status) => describe_status(status),
        Err(e) => format!("its box could not start: {e}"),
    })
}

/// How a failed server ended, to follow its reason: its exit (given [`EXIT_GRACE`] to end by
/// itself, so an exit is reported as one; our own kill needs no mention), its last lines on
/// stderr, and where the whole of its stderr is.
fn ended(boxed: &Mutex<Option<BoxProcess>>, stderr: &stderr::Stderr) -> String {
    let exit = stop_box(boxed, EXIT_GRACE)
        .filter(|e| e != STOPPED)
        .map(|e| format!("; {e}"))
        .unwrap_or_default();
    // Its box is gone: its stderr ends in a moment.
    stderr.settle(EXIT_GRACE);
    let last = stderr
        .last_lines()
        .map(|l| format!("; its stderr ends with: \"{l}\""))
        .unwrap_or_default();
    format!("{exit}{last}; all of its stderr: {}", stderr.whereabouts())
}

/// The failure of a call whose server's box has reached `reached`, above what the failure
/// carries: nothing the server said (its answer, its stderr) is in it, only where its stderr
/// is kept for the operator.
fn withheld(what: &str, reached: config::Label, stderr: &stderr::Stderr) -> String {
    format!(
        "{what}, and what the server said is withheld: its box has read {reached} data \
         (a destination's answer, or what a call of the session handed it), and a failure \
         carries no label; its stderr is kept for the operator: {}",
        stderr.whereabouts()
    )
}

/// `fut`, a step of talking to a server, done by `by`: the steps of one start (or of one
/// call) share one deadline, `budget` after the first began, so a server slow at each step
/// cannot stretch the whole to a multiple of it. Its error, or the deadline, as "the server
/// did not WHAT …".
async fn within<T, E: std::fmt::Display>(
    (by, budget): (tokio::time::Instant, Duration),
    what: &str,
    fut: impl Future<Output = Result<T, E>>,
) -> Result<T, String> {
    match tokio::time::timeout_at(by, fut).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("the server did not {what} ({e})")),
        Err(_) => Err(format!(
            "the server did not {what} within {} s",
            budget.as_secs()
        )),
    }
}

/// A deadline `budget` from now, with the budget its failure names.
fn deadline(budget: Duration) -> (tokio::time::Instant, Duration) {
    (tokio::time::Instant::now() + budget, budget)
}

fn describe_status(s: sandbox::Status) -> String {
    match s {
        sandbox::Status::Exited(c) => format!("it exited with status {c}"),
        sandbox::Status::Signaled(9) => STOPPED.into(),
        sandbox::Status::Signaled(n) => format!("it was killed by signal {n}"),
        sandbox::Status::TimedOut => "its box reached its wall-clock limit".into(),
    }
}

/// The definition rmcp parsed, in the catalog's form.
fn tool_def(t: &rmcp::model::Tool) -> ToolDef {
    ToolDef {
        name: t.name.to_string(),
        title: t.title.clone(),
        description: t.description.as_ref().map(|d| d.to_string()),
        input_schema: serde_json::Value::Object((*t.input_schema).clone()),
        output_schema: t
            .output_schema
            .as_ref()
            .map(|s| serde_json::Value::Object((**s).clone())),
        annotations: t
            .annotations
            .as_ref()
            .and_then(|a| serde_json::to_value(a).ok()),
    }
}

/// `d` with every secret `redactor` knows replaced in its text and schemas.
fn redacted_def(mut d: ToolDef, redactor: &secrets::Redactor) -> ToolDef {
    if redactor.is_empty() {
        return d;
    }
    d.name = redactor.redact(&d.name).into_owned();
    d.title = d.title.map(|t| redactor.redact(&t).into_owned());
    d.description = d.description.map(|t| redactor.redact(&t).into_owned());
    redactor.redact_value(&mut d.input_schema);
    for v in [d.output_schema.as_mut(), d.annotations.as_mut()]
        .into_iter()
        .flatten()
    {
        redactor.redact_value(v);
    }
    d
}

/// The most tools taken from one server, and the most pages asked for them: a server that
/// pages forever, or offers a million tools, is cut off rather than held in memory.
const MAX_TOOLS: usize = 1024;
const MAX_PAGES: usize = 32;

/// The deepest JSON a kept definition may nest (serde_json reads at most 128 levels, and the
/// discovery file wraps a definition in a few more).
const MAX_SCHEMA_DEPTH: usize = 64;

/// How deep `v` nests.
fn depth(v: &serde_json::Value) -> usize {
    // Iterative: the value came from a server, and rmcp already read it, but a recursive
    // walk is still one stack frame per level.
    let mut deepest = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            serde_json::Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            serde_json::Value::Object(o) => stack.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    deepest
}

/// `tools/list`, page by page, within [`MAX_TOOLS`] and [`MAX_PAGES`].
/// Each definition is redacted of every secret `redactor` knows (a description is read by
/// the model: docs/spec.md §3.8).
async fn list_tools(
    peer: &rmcp::Peer<RoleClient>,
    redactor: &secrets::Redactor,
) -> Result<Vec<ToolDef>, String> {
    let mut out = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor.take());
        let page = peer
            .list_tools(Some(params))
            .await
            .map_err(|e| e.to_string())?;
        // A definition no model may be shown (over the catalog's size limit, or nested
        // deeper than any real schema) is dropped here, before it reaches the discovery file.
        out.extend(
            page.tools
                .iter()
                .map(|t| redacted_def(tool_def(t), redactor))
                .filter(|d| {
                    serde_json::to_vec(d).is_ok_and(|v| v.len() <= catalog::MAX_DEFINITION)
                        && depth(&d.input_schema) <= MAX_SCHEMA_DEPTH
                        && d.output_schema
                            .as_ref()
                            .is_none_or(|s| depth(s) <= MAX_SCHEMA_DEPTH)
                        && d.annotations
                            .as_ref()
                            .is_none_or(|s| depth(s) <= MAX_SCHEMA_DEPTH)
                }),
        );
        if out.len() > MAX_TOOLS {
            return Err(format!("the server offers over {MAX_TOOLS} tools"));
        }
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => return Ok(out),
        }
    }
    Err(format!(
        "the server's tool list goes on past {MAX_PAGES} pages"
    ))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Hub {
    fn runtime(&self) -> Result<&tokio::runtime::Runtime, String> {
        self.runtime
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("downstream")
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the downstream client runtime: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    fn slot(&self, session: &SessionId, server: &str) -> Slot {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((session.clone(), server.to_string()))
            .or_default()
            .clone()
    }
}

/// Stops every server idle longer than its idle time. Runs on the hub's runtime.
async fn reap(hub: std::sync::Weak<Hub>) {
    loop {
        tokio::time::sleep(REAP_EVERY).await;
        let Some(hub) = hub.upgrade() else { return };
        let slots: Vec<Slot> = hub
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        for slot in slots {
            let Ok(mut g) = slot.try_lock() else { continue };
            let stop = g.as_ref().is_some_and(|i| {
                i.in_flight.load(Ordering::SeqCst) == 0
                    && (!i.alive()
                        || i.last_used
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .elapsed()
                            >= i.idle)
            });
            if stop && let Some(i) = g.take() {
                drop(g);
                let _ = tokio::task::spawn_blocking(move || {
                    i.kill();
                    // What it made since its last call, now that nothing of it runs.
                    if let Some((session, tool, events)) = &i.owner {
                        let _ = crate::run::sweep_kept(events, &i.absent_kept, session, tool, None);
                    }
                })
                .await;
            }
        }
    }
}

/// Decrements a server's in-flight count and marks it used when a call ends.
struct InFlight(Arc<Instance>, proto::CallId);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|c| *c != self.1);
        *self
            .0
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Runner {
    /// The catalog of downstream tools, from the config and the discovery file (re-read
    /// when the file changes).
    pub fn catalog(&self) -> Result<Arc<Catalog>, catalog::CatalogError> {
        let path = self.state_dir().join(catalog::file::FILE);
        let stamp = std::fs::metadata(&path)
            .ok()
            .map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len()));
        let mut cached = self
            .hub()
            .catalog
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = cached.as_ref()
            && c.stamp == stamp
            && stamp.is_some()
        {
            return Ok(c.catalog.clone());
        }
        let file = ToolsFile::load(self.state_dir())?;
        let catalog = Arc::new(Catalog::build(self.config(), &file));
        *cached = Some(CachedCatalog {
            stamp,
            catalog: catalog.clone(),
        });
        Ok(catalog)
    }

    /// A call to a downstream server's tool (`req.tool` is its exposed name), in a session
    /// whose taint the gate committed as `taint`.
    pub(crate) fn downstream(
        &self,
        call: &Admitted,
        req: &ToolRequest,
        taint: config::Label,
    ) -> ToolResponse {
        let catalog = match self.catalog() {
            Ok(c) => c,
            Err(e) => return failed(format!("{}: {e}", req.tool)),
        };
        let catalog = match catalog.get(&req.tool) {
            Some(_) => catalog,
            None => match self.discover_for(&req.tool, Some(call)) {
                Ok(Some(c)) => c,
                Ok(None) => return failed(format!("there is no tool named {:?} here", req.tool)),
                Err(e) => return failed(format!("{}: {e}", req.tool)),
            },
        };
        let Some(entry) = catalog.get(&req.tool) else {
            return failed(format!("there is no tool named {:?} here", req.tool));
        };
        let Some(tool) = self.config().tool(&entry.server) else {
            return failed(format!("there is no tool named {:?} here", req.tool));
        };
        if !entry.callable() {
            return refused(entry);
        }
        let args = match serde_json::from_str::<serde_json::Value>(&req.arguments) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => {
                return failed(format!(
                    "{}: the arguments must be one JSON object",
                    req.tool
                ));
            }
        };
        let rt = match self.hub().runtime() {
            Ok(rt) => rt,
            Err(e) => return failed(e),
        };
        rt.block_on(self.call(call, req, tool, entry, args, taint))
    }

    /// The running server of `tool` for `req`'s session, started if needed (and replaced if
    /// the session's label rose past a mount it may write), counted in flight for `req` (until
    /// the guard drops) with `req`'s own label joined to its box's; or the answer that says
    /// why there is none.
    async fn acquire(
        &self,
        call: &Admitted,
        req: &ToolRequest,
        tool: &Tool,
        taint: config::Label,
    ) -> Result<(Slot, Arc<Instance>, InFlight), ToolResponse> {
        let timeout = Duration::from_secs(self.config().limits.timeout_seconds);
        // Every call marks the workspace used, a running server's too (the sweep goes by it).
        self.touch_workspace(&req.session);
        let slot = self.hub().slot(&req.session, &tool.name);
        // The server is there for this call within one timeout of its arrival: waiting for
        // the slot (another call of the session may be starting it) and starting it anew
        // share that deadline, so calls queued behind a start that fails do not each wait
        // a start of their own in turn.
        let ready_by = tokio::time::Instant::now() + timeout;
        let instance = {
            let Ok(mut g) = tokio::time::timeout_at(ready_by, slot.lock()).await else {
                return Err(failed(format!(
                    "{}: its server was not free within {} s (another call of this session \
                     was starting it or using it to start)",
                    req.tool,
                    timeout.as_secs()
                )));
            };
            // A reset came while this call waited for the slot: it starts nothing.
            if call.stopped() {
                return Err(failed(crate::running::STOPPED.into()));
            }
            // A server is the session's memory: what it was given at one label must not be
            // written where a lower label reads. If the session's label rose above a mount
            // the server may write, it is stopped and a new one starts, read-only there.
            let label = self.box_label(&req.session, tool);
            let i = match g.as_ref() {
                Some(i) if i.alive() && !self.writes_down(tool, i.label, label) => i.clone(),
                _ => {
                    if let Some(old) = g.take() {
                        let _ = tokio::task::spawn_blocking(move || old.kill()).await;
                    }
                    // Fair to every session: its servers are capped, whatever others run.
                    let cap = self.config().limits.max_servers_per_session;
                    let live = self.live_servers(&req.session, &slot);
                    if u64::try_from(live).unwrap_or(u64::MAX) >= cap {
                        return Err(failed(format!(
                            "{}: refused: this session already runs {live} MCP servers, the \
                             most one session may (`[box] max_servers_per_session`); they stop \
                             when idle",
                            req.tool
                        )));
                    }
                    if let Err(e) = self.ensure_workspace(&req.session) {
                        return Err(failed(format!("{}: {e}", req.tool)));
                    }
                    let workspace = self.workspace(&req.session);
                    let asked = std::time::Instant::now();
                    match self
                        .start(
                            tool,
                            &req.session,
                            workspace,
                            Some(label),
                            ready_by.saturating_duration_since(tokio::time::Instant::now()),
                            Some(call),
                            Some(self.answer_label(req).join(taint)),
                        )
                        .await
                    {
                        Ok(i) => {
                            if !matches!(tool.kind, ToolKind::Remote { .. }) {
                                self.boxed(
                                    &req.session,
                                    &tool.name,
                                    Some(req.call),
                                    proto::run::BoxKind::Server,
                                    asked.elapsed(),
                                );
                            }
                            // What a running server says of its tools is never written
                            // where it would be shown as their definition (descriptions
                            // are content: docs/spec.md §3.5); it is kept here, for pinning.
                            let i = Arc::new(i);
                            *g = Some(i.clone());
                            i
                        }
                        Err(e) => return Err(failed(format!("{}: {e}", req.tool))),
                    }
                }
            };
            // A reset of the session ends the server this call talks to, and the call.
            i.guard(call);
            // Counted in flight from here, under the slot's lock, so the idle reaper (which
            // takes that lock) never stops a server a call has just picked.
            i.in_flight.fetch_add(1, Ordering::SeqCst);
            i.calls
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(req.call);
            i
        };
        let guard = InFlight(instance.clone(), req.call);
        // The server holds what this call gives it: the call's own label joins its box's,
        // which only rises (docs/spec.md §3.6); its connections go by it from now on.
        let label = self.config().call_label(
            &req.tool,
            &req.arguments,
            self.floor(&req.session),
            self.config().reach(tool),
        );
        if instance.float.called(&label) {
            self.egress()
                .label_rose(&req.session, self.floor(&req.session));
        }
        Ok((slot, instance, guard))
    }

    async fn call(
        &self,
        call: &Admitted,
        req: &ToolRequest,
        tool: &Tool,
        entry: &Entry,
        args: serde_json::Map<String, serde_json::Value>,
        taint: config::Label,
    ) -> ToolResponse {
        let timeout = Duration::from_secs(self.config().limits.timeout_seconds);
        let (slot, instance, guard) = match self.acquire(call, req, tool, taint).await {
            Ok(got) => got,
            Err(answer) => return answer,
        };
        // What its box may not make in a writable mount, made since it started, is moved
        // aside once this call is answered (docs/spec.md §4, "What a writable mount keeps").
        let absent = instance.absent_kept.clone();
        let answer = async {
            // From a server that is there: one timeout for its answer, the pinned re-list
            // included.
            let answer_by = deadline(timeout);
            // A failure may quote what the server's box read, and carries no label: the gate
            // raises the taint by the call's own label for it (`Config::answer_label`, its label
            // rules included) joined with the session's taint. Once the box has reached above
            // that — a higher class, or untrusted where that is trusted — what the server said
            // is withheld.
            let fail = |message: String| {
                let reached = instance.float.reached();
                if !reached.within(self.answer_label(req).join(taint)) {
                    failed(withheld(
                        &format!("{}: the call failed", req.tool),
                        reached,
                        &instance.stderr,
                    ))
                } else {
                    failed(message)
                }
            };
            // The running server's own word, checked again: a pinned tool whose definition
            // changed since it was accepted does not run, whatever discovery said. A pinned
            // server is asked again before every call (it may change its list while it runs).
            let find = |tools: &[ToolDef]| tools.iter().find(|d| d.name == entry.downstream).cloned();
            let live = if entry.pinned {
                match within(
                    answer_by,
                    "list its tools",
                    list_tools(instance.service.peer(), &self.secrets().redactor()),
                )
                .await
                {
                    Ok(now) => {
                        let mut known = instance
                            .tools
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner);
                        // Kept for the next comparison, never recorded (see above).
                        if *known != now {
                            known.clone_from(&now);
                        }
                        find(&now)
                    }
                    Err(why) => {
                        // A remote server's client knows better (a refused credential, say).
                        let why = get_reason(&instance.reason)
                            .filter(|_| instance.remote)
                            .unwrap_or(why);
                        return fail(format!("{}: {why}", req.tool));
                    }
                }
            } else {
                find(
                    &instance
                        .tools
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner),
                )
            };
            let Some(live) = live.as_ref() else {
                return failed(format!(
                    "{}: the server no longer offers a tool named {:?}",
                    req.tool, entry.downstream
                ));
            };
            if entry.pinned && entry.accepted.as_ref() != Some(live) {
                let what = entry
                    .accepted
                    .as_ref()
                    .map(|a| a.changes(live))
                    .unwrap_or_else(|| vec!["added"]);
                return failed(format!(
                    "{}: refused: the running server describes it differently from what an \
                     operator accepted (its {} changed; pin = true); `boxmaker tools refresh` \
                     asks the server again in a box with no session data, then review it with \
                     `boxmaker tools diff` and accept it with `boxmaker tools accept {}`",
                    req.tool,
                    what.join(", "),
                    req.tool
                ));
            }
            // What the server says while this call runs (its progress, under a token of this
            // call's own, and its log messages) comes back inside the result (docs/spec.md §5).
            let heard = instance.listener.open();
            let params = {
                let mut p = CallToolRequestParams::new(entry.downstream.clone());
                p.arguments = Some(args);
                let mut meta = rmcp::model::RequestMetaObject::new();
                heard.mark(&mut meta);
                p.meta = Some(meta);
                p
            };
            let outcome =
                tokio::time::timeout_at(answer_by.0, instance.service.peer().call_tool(params)).await;
            let (mut notifications, left_out) = heard.take();
            drop(heard);
            drop(guard);
            let stop = |why: String| {
                let instance = instance.clone();
                let slot = slot.clone();
                async move {
                    let mut g = slot.lock().await;
                    if g.as_ref().is_some_and(|i| Arc::ptr_eq(i, &instance)) {
                        *g = None;
                    }
                    drop(g);
                    set_reason(&instance.reason, why.clone());
                    tokio::task::spawn_blocking(move || instance.why(&why))
                        .await
                        .unwrap_or_else(|_| "the server failed".into())
                }
            };
            let result = match outcome {
                Err(_) => {
                    let why = stop(format!(
                        "timed out after {} s; the server was stopped and starts again on the next \
                         call",
                        timeout.as_secs()
                    ))
                    .await;
                    return fail(format!("{}: {why}", req.tool));
                }
                Ok(Err(rmcp::ServiceError::McpError(e))) => {
                    // A JSON-RPC error is the server's answer (unknown tool, bad arguments…): the
                    // call fails with it, the server stays.
                    return fail(format!(
                        "{}: the server refused the call: {} (JSON-RPC error {})",
                        req.tool,
                        crate::run::prefix(&e.message, content::MAX_ERROR_TEXT),
                        e.code.0
                    ));
                }
                Ok(Err(rmcp::ServiceError::UnexpectedResponse)) => {
                    // The server answered, but not with a tool result rmcp can read (an unknown
                    // content type, a field of the wrong type): the call fails, the server stays.
                    return fail(format!(
                        "{}: the server answered with something that is not a valid MCP tool result \
                         (an unknown content type or a malformed field)",
                        req.tool
                    ));
                }
                Ok(Err(e)) => {
                    let why = stop(format!("the call failed: {e}")).await;
                    return fail(format!(
                        "{}: {why}; the server starts again on the next call",
                        req.tool
                    ));
                }
                Ok(Ok(r)) => r,
            };
            // Through text, not `to_value`: an `f32` field (a priority of 0.7) keeps the digits
            // the server sent instead of gaining those of its f64 widening. One pass for all.
            let blocks: Vec<serde_json::Value> = serde_json::to_string(&result.content)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or_default();
            if result.is_error == Some(true) {
                // The server stays; where its stderr is helps whoever reads why (it may hold a
                // trace the error text leaves out).
                let logged = if instance.stderr.any() {
                    format!(" (the server's stderr: {})", instance.stderr.whereabouts())
                } else {
                    String::new()
                };
                return fail(format!(
                    "{}: {}{logged}",
                    req.tool,
                    content::error_text(&blocks)
                ));
            }
            // Its answer carries what its box reached: what destinations answered it since it
            // started, and its calls' own labels (the session's floor at each: a server that
            // was once handed an untrusted session's values answers untrusted from then on).
            let label = crate::label::call_label(self.foreign_label(req), instance.float.reached());
            content::fit_content(
                catalog::Content {
                    content: blocks,
                    structured_content: result.structured_content,
                    notifications: {
                        if left_out > 0 {
                            notifications.push(heard::left_out_note(left_out));
                        }
                        notifications
                    },
                },
            label.class,
                label.untrusted,
            )
        }
        .await;
        // Audited; a server's answer is its own, and is left as it said it.
        let _ = self.sweep_kept(&absent, &req.session, &tool.name, Some(req.call));
        answer
    }

    /// Starts `tool`'s server in a box over `workspace` at `label` (the box's mounts are
    /// writable only where no write down), initializes it, and lists its tools. With no
    /// label it is discovery: every mount read-only, a mount above `public` shown empty (a
    /// description is content the model reads at any taint, so it may be built from public
    /// data only), and the wall clock of one call. With `call`, the box is put under that
    /// call's session's resets from the moment it exists. Its failure quotes what the server
    /// said only while its box has reached no higher than `shown_up_to` (what the failure
    /// carries: see `fail` in [`Runner::call`]; `None`: discovery, whose box reaches nothing).
    #[allow(clippy::too_many_arguments)]
    async fn start(
        &self,
        tool: &Tool,
        session: &SessionId,
        workspace: PathBuf,
        label: Option<config::Label>,
        timeout: Duration,
        call: Option<&Admitted>,
        shown_up_to: Option<config::Label>,
    ) -> Result<Instance, String> {
        if matches!(tool.kind, ToolKind::Remote { .. }) {
            return self.start_remote(tool, session, label, timeout).await;
        }
        let ToolKind::Mcp {
            argv, idle_timeout, ..
        } = &tool.kind
        else {
            return Err("not an MCP server".into());
        };
        let mut spec = self.box_spec(session, tool.network, &tool.env, argv.clone(), Io::Inherit);
        spec.workspace = workspace;
        spec.mounts = self.box_mounts(Some(tool), label);
        spec.masks = self.masks(&spec.mounts);
        if label.is_none() {
            let empty = spec.workspace.join(".boxmaker-empty");
            std::fs::create_dir_all(&empty)
                .map_err(|e| format!("cannot make the discovery box's empty mounts: {e}"))?;
            for (m, c) in spec.mounts.iter_mut().zip(self.config().mounts_of(tool)) {
                m.write = false;
                if c.class > proto::DataClass::Public {
                    m.host = empty.clone();
                    spec.masks.retain(|at| !at.starts_with(&m.at));
                }
            }
            spec.limits.timeout = timeout.saturating_mul(2);
        } else {
            spec.limits.timeout = SERVER_LIFETIME;
        }
        // Of the mounts as this box has them (none writable in discovery).
        spec.keeps = self.keeps(&spec.mounts);
        let absent_kept = self.absent_kept(&spec.mounts);
        // Watched for as long as the box lives, between its calls too: what it makes of
        // them is moved aside at once.
        let sentry = self.sentries().watch(
            self.egress().clone(),
            &absent_kept,
            session,
            &tool.name,
            None,
        );
        spec.limits.cpu_seconds = spec.limits.timeout.as_secs();
        // Its secrets, as the variables the config names (read here, in the runner, the one
        // process that reads them); discovery needs them too, to start the server at all.
        self.hand_secrets(tool, &mut spec)?;
        let helper = self.helper().clone();
        let scrubbed = tool.clone();
        let mut boxed = tokio::task::spawn_blocking(move || {
            let boxed = sandbox::spawn(&spec, &helper);
            crate::run::scrub(&scrubbed, &mut spec);
            boxed
        })
        .await
        .map_err(|e| format!("cannot start its box: {e}"))?
        .map_err(|e| format!("cannot start its box: {e}"))?;
        if let Some(call) = call {
            match boxed.stopper() {
                Ok(s) => call.guard_box(s),
                Err(e) => return Err(format!("cannot keep a way to stop its box: {e}")),
            }
        }
        // Discovery gets no way out (its box's listener is closed: connections there are
        // refused); a server of a session goes out through the proxy.
        let listener = boxed.listener.take();
        let calls: Arc<Mutex<Vec<proto::CallId>>> = Arc::default();
        let float = Arc::new(egress::Float::new(
            tool.label(),
            label
                .into_iter()
                .flat_map(|l| self.config().writable_mounts(tool, l)),
        ));
        let egress = match (listener, label) {
            (Some(l), Some(_)) => self.egress().serve(
                l,
                egress::BoxCtx {
                    session: session.clone(),
                    tool: tool.name.clone(),
                    call: None,
                    calls: Some(calls.clone()),
                    float: float.clone(),
                },
            ),
            _ => None,
        };
        // Its stderr, kept for the operator (discovery's apart from every session's).
        let logged = label.map(|_| session);
        let path = stderr::log_path(self.state_dir(), logged, &tool.name);
        let command = stderr::log_command(logged, &tool.name);
        // What it writes there is redacted as its answers are: its log is read by a person,
        // and its last lines may be quoted in a failure.
        let redactor = self.secrets().redactor();
        let stderr = match boxed.stderr.take() {
            Some(err) => stderr::Stderr::drain(err, path, command, redactor),
            None => stderr::Stderr::drain(std::io::empty(), path, command, redactor),
        };
        let io = |e: std::io::Error| format!("cannot talk to the server: {e}");
        let (Some(stdin), Some(stdout)) = (boxed.stdin.take(), boxed.stdout.take()) else {
            return Err("cannot talk to the server: no pipes".into());
        };
        let stdin = tokio::process::ChildStdin::from_std(stdin).map_err(io)?;
        let stdout = tokio::process::ChildStdout::from_std(stdout).map_err(io)?;
        let reason = Reason::default();
        let listener = heard::Listener::default();
        let transport =
            heard::Tap::new(Lines::new(stdout, stdin, reason.clone()), listener.clone());
        let boxed = Mutex::new(Some(boxed));
        let by = deadline(timeout);
        let ready = async {
            let service = within(by, "initialize", heard::connect(transport)).await?;
            let tools = within(
                by,
                "list its tools",
                list_tools(service.peer(), &self.secrets().redactor()),
            )
            .await?;
            Ok::<_, String>((service, tools))
        };
        let (service, tools) = match ready.await {
            Ok(r) => r,
            Err(why) => {
                let why = get_reason(&reason).map_or(why.clone(), |r| format!("{why}: {r}"));
                let ended = tokio::task::block_in_place(|| ended(&boxed, &stderr));
                // A box that reached above what its failure may quote (a destination answered
                // it while it started) says nothing of what the server said.
                let reached = float.reached();
                if let Some(up_to) = shown_up_to
                    && !reached.within(up_to)
                {
                    return Err(withheld("the server could not start", reached, &stderr));
                }
                return Err(why + &ended + &network_hint(tool, argv));
            }
        };
        self.start_reaper();
        Ok(Instance {
            service,
            listener,
            boxed,
            tools: Mutex::new(tools),
            reason,
            stderr,
            last_used: Mutex::new(Instant::now()),
            in_flight: AtomicUsize::new(0),
            idle: Duration::from_secs(idle_timeout.unwrap_or(catalog::DEFAULT_IDLE_TIMEOUT)),
            label: label.unwrap_or(config::Label::PUBLIC),
            _egress: egress,
            calls,
            float,
            remote: false,
            absent_kept,
            _sentry: sentry,
            owner: Some((session.clone(), tool.name.clone(), self.egress().clone())),
        })
    }

    /// Connects to `tool`'s remote server for `session` (no box: the runner is the client),
    /// initializes an MCP session and lists its tools. Every connection it makes is decided
    /// by the egress rules at the label of its moment (`remote::Client`).
    async fn start_remote(
        &self,
        tool: &Tool,
        session: &SessionId,
        label: Option<config::Label>,
        timeout: Duration,
    ) -> Result<Instance, String> {
        let ToolKind::Remote {
            transport,
            idle_timeout,
            url,
            ..
        } = &tool.kind
        else {
            return Err("not a remote MCP server".into());
        };
        if *transport == config::Transport::Sse {
            return Err(format!(
                "{} speaks the older HTTP+SSE transport (`transport = \"sse\"`), which \
                 boxmaker's client does not speak yet; use the server's streamable HTTP URL",
                url.text
            ));
        }
        let calls: Arc<Mutex<Vec<proto::CallId>>> = Arc::default();
        let float = Arc::new(egress::Float::new(tool.label(), []));
        let reason = Reason::default();
        let listener = heard::Listener::default();
        let transport = || {
            let client = remote::Client::new(
                self,
                tool,
                egress::BoxCtx {
                    session: session.clone(),
                    tool: tool.name.clone(),
                    call: None,
                    calls: Some(calls.clone()),
                    float: float.clone(),
                },
                reason.clone(),
            )?;
            let mut config =
                rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    client.uri(),
                );
            // A stream that breaks is not opened again behind the call's back: the call
            // fails, and the next one starts a new session.
            config.retry_config = Arc::new(remote::NoRetry);
            config.max_json_response_size = remote::MAX_MESSAGE;
            config.max_sse_event_size = remote::MAX_MESSAGE;
            Ok::<_, String>(heard::Tap::new(
                rmcp::transport::StreamableHttpClientTransport::with_client(client, config),
                listener.clone(),
            ))
        };
        let redactor = self.secrets().redactor();
        let by = deadline(timeout);
        let ready = async {
            let service = match heard::connect_or_refused(transport()?, timeout).await {
                Ok(service) => service,
                // A server of an earlier revision that answers `server/discover` with an
                // HTTP error (400 "not initialized"), not a JSON-RPC one: its handshake, on a
                // connection of its own (docs/spec.md §3.9, "Both protocol eras").
                Err(heard::Refused::Discover(why)) => {
                    within(by, "initialize", heard::initialize(transport()?))
                        .await
                        .map_err(|e| format!("{e}; it refused `server/discover` too ({why})"))?
                }
                Err(heard::Refused::Other(why)) => return Err(why),
            };
            let tools = within(by, "list its tools", list_tools(service.peer(), &redactor)).await?;
            Ok::<_, String>((service, tools))
        };
        let (service, tools) = match ready.await {
            Ok(r) => r,
            // The client's own reason says it all (a refused connection, a sign-in to
            // renew); rmcp's wrapping of it only repeats it.
            Err(why) => {
                return Err(get_reason(&reason).map_or(why.clone(), |r| {
                    format!("{}: {r}", why.split(" (").next().unwrap_or_default())
                }));
            }
        };
        self.start_reaper();
        let logged = label.map(|_| session);
        Ok(Instance {
            service,
            listener,
            boxed: Mutex::new(None),
            tools: Mutex::new(tools),
            reason,
            stderr: stderr::Stderr::none(
                stderr::log_path(self.state_dir(), logged, &tool.name),
                stderr::log_command(logged, &tool.name),
            ),
            last_used: Mutex::new(Instant::now()),
            in_flight: AtomicUsize::new(0),
            idle: Duration::from_secs(idle_timeout.unwrap_or(catalog::DEFAULT_IDLE_TIMEOUT)),
            label: label.unwrap_or(config::Label::PUBLIC),
            _egress: None,
            calls,
            float,
            remote: true,
            absent_kept: Vec::new(),
            _sentry: None,
            owner: None,
        })
    }

    fn start_reaper(&self) {
        let hub = Arc::downgrade(self.hub_arc());
        self.hub().reaper.get_or_init(|| {
            tokio::spawn(reap(hub));
        });
    }

    /// Whether a server started at `was` would write down at `now`: a mount it may write
    /// at `was` is read-only at `now`.
    fn writes_down(&self, tool: &Tool, was: config::Label, now: config::Label) -> bool {
        self.config()
            .mounts_of(tool)
            .any(|m| m.writable_at(was) && !m.writable_at(now))
    }

    /// How many servers `session` runs now, other than the one in `except` (a slot being
    /// started by someone else counts as running).
    fn live_servers(&self, session: &SessionId, except: &Slot) -> usize {
        self.hub()
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|((s, _), slot)| s == session && !Arc::ptr_eq(slot, except))
            .filter(|(_, slot)| match slot.try_lock() {
                Ok(g) => g.as_ref().is_some_and(|i| i.alive()),
                Err(_) => true,
            })
            .count()
    }

    /// Stops every server of `session` (an operator resets it); returns how many ran. Each
    /// is killed and reaped before this returns (`BoxProcess::stop`).
    pub(crate) fn stop_servers(&self, session: &SessionId) -> u32 {
        let slots: Vec<(String, Slot)> = self
            .hub()
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|((s, _), _)| s == session)
            .map(|((_, tool), slot)| (tool.clone(), slot.clone()))
            .collect();
        let mut stopped = 0;
        for (tool, slot) in slots {
            let taken = match self.hub().runtime() {
                Ok(rt) => rt.block_on(async { slot.lock().await.take() }),
                Err(_) => None,
            };
            if let Some(i) = taken {
                i.kill();
                // What it made since its last call, now that nothing of it runs.
                let _ = self.sweep_kept(&i.absent_kept, session, &tool, None);
                stopped += 1;
            }
        }
        stopped
    }

    /// Discovery: runs every downstream server of the config that the discovery file does
    /// not know yet (every one with `all`) in a box with no session data, and records its
    /// tools. Returns, per server, how many tools it offers or why it could not be asked.
    pub fn refresh_tools(&self, all: bool) -> Vec<(String, Result<usize, String>)> {
        let known = ToolsFile::load(self.state_dir()).ok();
        let mut out = Vec::new();
        for tool in &self.config().tools {
            let Some(argv) = tool.kind.server_argv() else {
                continue;
            };
            let argv = &argv;
            let cached = known
                .as_ref()
                .is_some_and(|f| f.servers.contains_key(&catalog::server_key(argv)));
            // A server that needs a secret, or a remote one (a destination, reached with a
            // credential), is left to a process that reads secrets.
            let needs = !tool.secrets.is_empty() || matches!(tool.kind, ToolKind::Remote { .. });
            if (cached && !all) || (needs && !self.secrets().reads()) {
                continue;
            }
            let r = self.discover(tool).and_then(|tools| {
                let n = tools.len();
                ToolsFile::update(self.state_dir(), |f| f.record(argv, tools, unix_now()))
                    .map(|_| n)
                    .map_err(|e| e.to_string())
            });
            out.push((tool.name.clone(), r));
        }
        out
    }

    /// For a name no discovered tool has: discovers, now, the servers not yet discovered
    /// whose prefix fits it, and returns the new catalog (`None` if no server could offer
    /// it), or why the server that would offer it could not be asked.
    fn discover_for(
        &self,
        name: &str,
        call: Option<&Admitted>,
    ) -> Result<Option<Arc<Catalog>>, String> {
        let known = ToolsFile::load(self.state_dir()).map_err(|e| e.to_string())?;
        let mut tried = false;
        for tool in &self.config().tools {
            let Some(argv) = tool.kind.server_argv() else {
                continue;
            };
            let argv = &argv;
            if !tool.could_expose(name) || known.servers.contains_key(&catalog::server_key(argv)) {
                continue;
            }
            let tools = self.discover_guarded(tool, call).map_err(|e| {
                format!(
                    "the server {:?} could not be asked for its tools: {e}",
                    tool.name
                )
            })?;
            ToolsFile::update(self.state_dir(), |f| f.record(argv, tools, unix_now()))
                .map_err(|e| e.to_string())?;
            tried = true;
        }
        if !tried {
            return Ok(None);
        }
        self.catalog().map(Some).map_err(|e| e.to_string())
    }

    /// Runs `tool`'s server once in a throw-away box and lists its tools.
    pub fn discover(&self, tool: &Tool) -> Result<Vec<ToolDef>, String> {
        self.discover_guarded(tool, None)
    }

    /// As [`Runner::discover`], for `call` (its session's reset ends the discovery too).
    fn discover_guarded(
        &self,
        tool: &Tool,
        call: Option<&Admitted>,
    ) -> Result<Vec<ToolDef>, String> {
        let rt = self.hub().runtime()?;
        // Beside the sessions' workspaces, never one of them: a session id starts with a
        // letter or digit, this with a dot. Removed when dropped.
        let dir = tempfile::Builder::new()
            .prefix(".discovery-")
            .tempdir_in(self.workspaces_dir())
            .map_err(|e| format!("cannot make a discovery workspace: {e}"))?;
        let session =
            SessionId::new("discovery").map_err(|e| format!("bad discovery session: {e}"))?;
        // Discovery holds up whoever waits for the tool list: a server that hangs costs at
        // most a minute (npx or uvx may fetch a package first).
        let timeout =
            Duration::from_secs(self.config().limits.timeout_seconds.min(DISCOVERY_TIMEOUT));
        let result = rt.block_on(async {
            let i = self
                .start(
                    tool,
                    &session,
                    dir.path().to_path_buf(),
                    None,
                    timeout,
                    call,
                    None,
                )
                .await?;
            let tools = i
                .tools
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            let _ = tokio::task::spawn_blocking(move || i.kill()).await;
            Ok(tools)
        });
        drop(dir);
        result
    }
}

/// Launchers that fetch the server they run before starting it.
const FETCHERS: &[&str] = &["npx", "uvx", "pipx", "bunx", "pnpx", "pnpm", "yarn", "deno"];

/// A hint for a server that could not start, when its command line fetches a package first
/// and its box has no network: that, not the server, is the likely cause.
fn network_hint(tool: &Tool, argv: &[String]) -> String {
    let program = argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a))
        .unwrap_or_default();
    if tool.network || !FETCHERS.contains(&program) {
        return String::new();
    }
    format!(
        " (`{program}` usually downloads the server before it runs, and this tool's box has \
         no network: install the server once and mount it, or set `network = true` on the \
         tool — see the guide, docs/guide/src/servers.md)"
    )
}

fn refused(entry: &Entry) -> ToolResponse {
    failed(format!(
        "{}: refused: {} since an operator accepted it (pin = true); review it with \
         `boxmaker tools diff` and accept it with `boxmaker tools accept {}`",
        entry.exposed,
        entry.standing.describe(),
        entry.exposed
    ))
}
