//! One call, one box: [`Runner::handle`] turns a `ToolRequest` into `result` or `failed`.
//!
//! Every call gets a fresh box built from the config: the session's workspace at `/work`, the
//! config's mounts, the tool's network and environment, the `[box]` limits. File tools run
//! the boxmaker binary itself inside the box (see [`crate::inbox`]); `run` runs the command.
//! Nothing a tool prints is trusted to say what it is: the label comes from the config and
//! from the paths the kernel says were opened.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use config::{Builtin, Config, Label, Tool, ToolKind};
use proto::{DataClass, SessionId, ToolRequest, ToolResponse};
use sandbox::{HelperCommand, Io, Limits, Mount, Spec, Status};
use serde::Serialize;
use statedir::file::Dir;

use crate::builtin::{self, BuiltinCall};
use crate::fit::fit_result;
use crate::inbox::{INBOX_BINARY, INBOX_SERVE_ARG, InboxReply, InboxRequest};
use crate::label::{Hosts, label_of_reads};
use crate::running::{Admitted, REFUSED, Resetting, Running, STOPPED};
use crate::warm::WarmError;

/// How much of each output stream `run` keeps before the result is fitted to a frame.
const RUN_OUTPUT_CAP: usize = 2 * proto::MAX_FRAME;
/// The first host uid of the per-session range the box user maps to when the runner is root;
/// a session gets `BASE + hash(session) % SPAN`, so two sessions' boxes rarely share a uid.
const HOST_ID_BASE: u32 = sandbox::DEFAULT_ROOT_HOST_ID;
const HOST_ID_SPAN: u32 = 1 << 16;

/// Why the runner itself could not be set up (a call's own failures are `failed` answers).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error("cannot create the workspace directory {path}: {source}")]
    Workspace {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot find the boxmaker binary to run file tools in boxes: {0}")]
    Binary(#[source] std::io::Error),
    #[error("this machine cannot enforce every protection a box requires:\n{0}")]
    Unprotected(String),
}

/// How long an ended connection session's workspace is kept after its last call started
/// (see [`Runner::sweep_workspaces`]).
pub const WORKSPACE_KEEP: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Whether `name` is a session `boxmaker mcp` made for one connection: `mcp-` and 16
/// lower-case hex digits.
pub fn is_connection_session(name: &str) -> bool {
    name.strip_prefix("mcp-").is_some_and(|hex| {
        hex.len() == 16
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// The runner role's state: the config, where workspaces live, and how boxes are started.
#[derive(Debug, Clone)]
pub struct Runner {
    config: Arc<Config>,
    state_dir: PathBuf,
    workspaces: PathBuf,
    helper: HelperCommand,
    /// Helpers forked ahead of `run` calls (docs/spec.md §4, "Pre-forked helpers"); started
    /// by the first `run` call.
    pool: Arc<sandbox::HelperPool>,
    binary: PathBuf,
    hub: Arc<crate::downstream::Hub>,
    /// The warm boxes that serve the file tools (docs/spec.md §4, "Warm file boxes").
    warm: Arc<crate::warm::Warm>,
    /// The mounts' host paths as resolved on this machine, for labelling by host path.
    hosts: Arc<Hosts>,
    /// Per session, the label of what its workspace may hold — the highest class, and
    /// whether anything untrusted reached it: the taint the gate sent with its calls,
    /// joined with every label this runner gave its answers (the gate raises the taint by
    /// the same) and every destination's answer a box of it read. An operator's reset
    /// clears it.
    floors: Arc<Mutex<HashMap<SessionId, Label>>>,
    /// The egress proxy every networked box of this runner goes out through.
    egress: Arc<egress::Egress>,
    /// The watch on kept names a box could make while it lives (`sentry`).
    sentries: Arc<crate::sentry::Sentries>,
    /// Every call running now, by session, with its boxes: what a reset ends first.
    running: Arc<Running>,
    /// The `[[secret]]` values, read when first needed (docs/spec.md §3.8).
    secrets: Arc<secrets::Secrets>,
    /// Report each box's start to the gate (`boxed` events), for its telemetry
    /// (docs/spec.md §8); off unless the gate started this runner with telemetry on.
    timed: bool,
    /// What each writable mount's git directories name and the repositories inside it, by
    /// host path, as last looked at ([`Looked`]) and when: one call asks several times
    /// (its box's spec, its absent names, a file tool's path), and a look reads up to
    /// thousands of directories.
    nested: Arc<Mutex<HashMap<PathBuf, Searched>>>,
    /// How many calls began: a search is used again only by the call it was made in.
    calls: Arc<std::sync::atomic::AtomicU64>,
}

/// When a mount was looked at (the time, and how many calls had begun), and what was found.
type Searched = (Instant, u64, Arc<Looked>);

/// What the runner found in a writable mount that keeps `.git`: the repositories inside it,
/// and what the git directory of its top and of each of those names in their work trees.
#[derive(Debug)]
struct Looked {
    nested: crate::gitkeep::Nested,
    /// Each work tree (relative to the mount's top; empty for the top) and what its git
    /// directory names in it ([`crate::gitkeep::named_by_git`]).
    named: Vec<(PathBuf, Vec<String>)>,
    /// The same work trees and what their `.envrc` names in them
    /// ([`crate::envkeep::named_by_envrc`]).
    envrc: Vec<(PathBuf, Vec<String>)>,
}

/// How many of the kept names that are not there `box show` names.
const UNKEPT_SHOWN: usize = 40;

/// How long a search for the repositories inside a mount may be used again, within the call
/// it was made in: a call's several looks (its box's spec, its absent names, a file tool's
/// path) share one, and no call uses a search made before it began.
const NESTED_FRESH: Duration = Duration::from_millis(250);

impl Runner {
    /// A runner for `config`, keeping session workspaces under `state_dir/work/`. The
    /// running binary must call [`sandbox::enter_helper_if_requested`] and
    /// [`crate::enter_inbox_if_requested`] first thing in `main`: it is re-run as the box
    /// helper and, inside boxes, as the file tools.
    pub fn new(config: Arc<Config>, state_dir: &Path) -> Result<Self, RunnerError> {
        let binary = std::env::current_exe().map_err(RunnerError::Binary)?;
        Self::with_binary(config, state_dir, binary)
    }

    /// As [`Runner::new`], with the binary that provides the helper and the file tools named
    /// (tests use this to run a test binary's helper).
    pub fn with_binary(
        config: Arc<Config>,
        state_dir: &Path,
        binary: PathBuf,
    ) -> Result<Self, RunnerError> {
        state_sub(state_dir, WORK, true).map_err(|e| RunnerError::Workspace {
            path: state_dir.join(WORK),
            source: e.into(),
        })?;
        Ok(Self::unprepared(config, state_dir, binary))
    }

    /// A runner that only looks ([`Runner::describe_box`]): it creates nothing on disk,
    /// not even `state_dir/work/` (docs/spec.md §7: `box show` changes nothing).
    pub fn to_describe(config: Arc<Config>, state_dir: &Path) -> Result<Self, RunnerError> {
        let binary = std::env::current_exe().map_err(RunnerError::Binary)?;
        Ok(Self::unprepared(config, state_dir, binary))
    }

    fn unprepared(config: Arc<Config>, state_dir: &Path, binary: PathBuf) -> Self {
        let workspaces = state_dir.join(WORK);
        let helper = HelperCommand {
            program: binary.clone(),
            args: vec![sandbox::HELPER_ARG.into()],
        };
        let hosts = Arc::new(Hosts::resolve(config.clone()));
        let floors: Arc<Mutex<HashMap<SessionId, Label>>> = Arc::default();
        let egress = Arc::new(egress::Egress::new(config.clone(), floors.clone()));
        Self {
            state_dir: state_dir.to_path_buf(),
            workspaces,
            pool: Arc::new(sandbox::HelperPool::new(helper.clone())),
            helper,
            binary,
            hub: Arc::default(),
            warm: Arc::default(),
            hosts,
            floors,
            egress,
            sentries: Arc::default(),
            running: Arc::default(),
            secrets: Arc::new(secrets::Secrets::new(config.secrets.clone(), true)),
            config,
            timed: false,
            nested: Arc::default(),
            calls: Arc::default(),
        }
    }

    /// This runner, never reading a secret: for a process that hosts a front (`boxmaker
    /// mcp` discovers the servers that need none in its own process; those that need one are
    /// discovered by a process of their own). A server that needs a secret does not start.
    pub fn without_secrets(mut self) -> Self {
        self.secrets = Arc::new(secrets::Secrets::new(Vec::new(), false));
        self
    }

    pub(crate) fn secrets(&self) -> &Arc<secrets::Secrets> {
        &self.secrets
    }

    /// `resp` with every secret this runner has read redacted from it (docs/spec.md §3.8).
    pub fn redact(&self, resp: ToolResponse) -> ToolResponse {
        self.secrets.redactor().redact_response(resp)
    }

    /// The state directory (the discovery file lives there; the gate's files too).
    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    pub(crate) fn workspaces_dir(&self) -> PathBuf {
        self.workspaces.clone()
    }

    pub(crate) fn helper(&self) -> &HelperCommand {
        &self.helper
    }

    pub(crate) fn hub(&self) -> &crate::downstream::Hub {
        &self.hub
    }

    pub(crate) fn hub_arc(&self) -> &Arc<crate::downstream::Hub> {
        &self.hub
    }

    /// The config this runner serves.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The host directory of `session`'s workspace (`/work` in its boxes).
    pub fn workspace(&self, session: &SessionId) -> PathBuf {
        // A SessionId is checked when made: no `/`, never `.` or `..` (it starts with a letter
        // or digit), so it is always one plain directory name.
        self.workspaces.join(session.as_str())
    }

    /// Runs one call in a session whose taint the gate committed as `taint` (the call's
    /// reach already in it), and answers `result` or `failed`. Never panics on anything in
    /// `req`. ([`Runner::admit`] and [`Runner::run_admitted`] in one.)
    pub fn handle(&self, req: &ToolRequest, taint: Label) -> ToolResponse {
        self.handle_approved(req, taint, &[])
    }

    /// As [`Runner::handle`], for a call a person approved with `files` (docs/spec.md §3.3
    /// step 6): a `run` whose files no longer have those digests does not run, and its
    /// program runs from a read-only copy of what was hashed ([`crate::digest`]).
    pub fn handle_approved(
        &self,
        req: &ToolRequest,
        taint: Label,
        files: &[proto::run::FileDigest],
    ) -> ToolResponse {
        match self.admit(&req.session) {
            Ok(call) => self.run_admitted(&call, req, taint, files),
            Err(refused) => refused,
        }
    }

    /// Admits a call of `session`: from now until the returned [`Admitted`] is dropped, a
    /// reset of the session stops it and waits for it. While a reset of the session is under
    /// way nothing is admitted: the call answers `failed` at once, saying why. The
    /// connection loop admits each call in the order the gate sent it, relative to resets.
    pub fn admit(&self, session: &SessionId) -> Result<Admitted, ToolResponse> {
        self.running
            .admit(session)
            .ok_or_else(|| failed(REFUSED.into()))
    }

    /// Runs an admitted call (see [`Runner::handle`]). A call a reset stopped answers
    /// `failed` saying so, whatever its box did, and raises nothing.
    pub fn run_admitted(
        &self,
        call: &Admitted,
        req: &ToolRequest,
        taint: Label,
        files: &[proto::run::FileDigest],
    ) -> ToolResponse {
        if call.session() != &req.session {
            return failed(format!(
                "{}: the runner admitted this call for session {}, not {}; it did not run",
                req.tool,
                call.session(),
                req.session
            ));
        }
        if call.stopped() {
            return failed(STOPPED.into());
        }
        // What the searches before this call found is not this call's to use.
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.raise_floor(&req.session, taint);
        let resp = match self.config.tool(&req.tool) {
            Some(
                tool @ Tool {
                    kind: ToolKind::Builtin(b),
                    ..
                },
            ) => self.builtin(call, req, tool, *b, files),
            // A server's own `name` is not a tool (its tools are `PREFIX_TOOL`): a call to it
            // is a client's request for its resources or prompts (docs/spec.md §5).
            Some(tool) if tool.kind.is_server() => self.server_request(call, req, tool, taint),
            _ => self.downstream(call, req, taint),
        };
        if call.stopped() {
            return failed(STOPPED.into());
        }
        // The one place every answer of every tool passes: no secret reaches the model.
        let resp = self.redact(resp);
        match &resp {
            ToolResponse::Result {
                class, untrusted, ..
            } => self.raise_floor(&req.session, Label::new(*class, *untrusted)),
            // The gate raises the taint by the call's own label for a `failed` (its label
            // rules included): the floor follows, so the session's open connections are
            // decided at it before the next call brings the committed taint.
            ToolResponse::Failed { .. } => {
                let own = self.answer_label(req);
                self.raise_floor(&req.session, own);
            }
            ToolResponse::PendingApproval { .. } | ToolResponse::Denied { .. } => {}
        }
        resp
    }

    /// This runner reports how long each box took to start (`boxed` events, docs/spec.md
    /// §8): only times and kinds, never what the box was given.
    pub fn with_timed_boxes(mut self, on: bool) -> Self {
        self.timed = on;
        self
    }

    /// This runner's watch on the kept names a box could make, made now rather than at the
    /// first box that needs it, where the config has a writable mount: the runner role
    /// does this when it starts, so a box that lives long (a server's) cannot hold the
    /// user's every inotify instance before then. A command that makes a runner only to
    /// look (`box show`, `tools`) makes none.
    pub fn watching_kept_names(self) -> Self {
        if self.config.mounts.iter().any(|m| m.write) {
            self.sentries.start();
        }
        self
    }

    /// A box of `session` for `tool` started, `took` after it was asked for: a `boxed`
    /// event to the gate when this runner times its boxes.
    pub(crate) fn boxed(
        &self,
        session: &SessionId,
        tool: &str,
        call: Option<proto::CallId>,
        kind: proto::run::BoxKind,
        took: Duration,
    ) {
        if !self.timed {
            return;
        }
        self.egress.event(proto::run::RunnerAnswer::Boxed {
            session: session.clone(),
            tool: tool.to_string(),
            call,
            kind,
            micros: u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        });
    }

    /// The label of what `session`'s workspace may hold now (see [`Runner::floors`]).
    pub fn floor(&self, session: &SessionId) -> Label {
        self.floors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session)
            .copied()
            .unwrap_or(Label::PUBLIC)
    }

    /// Joins `session`'s floor with `label` (`Label::join`: it only rises).
    fn raise_floor(&self, session: &SessionId, label: Label) {
        let mut f = self.floors.lock().unwrap_or_else(PoisonError::into_inner);
        let e = f.entry(session.clone()).or_insert(Label::PUBLIC);
        let was = *e;
        *e = was.join(label);
        let now = *e;
        drop(f);
        // The connections this session's boxes hold open go by the new class at once.
        if now.class > was.class {
            self.egress.label_rose(session, now);
        }
    }

    /// The egress proxy (the connection loop gives it where to report).
    pub fn egress(&self) -> &Arc<egress::Egress> {
        &self.egress
    }

    /// An operator reset `session` ([`Runner::begin_reset`], then
    /// [`Runner::finish_reset`]).
    pub fn reset_session(&self, session: &SessionId) -> Result<(u32, bool), String> {
        self.finish_reset(self.begin_reset(session))
    }

    /// The first half of a reset, which never waits: from now on no call of the session is
    /// admitted, and every box of every call admitted so far is told to end. The connection
    /// loop does this when it reads the reset, before it reads the next request.
    pub fn begin_reset(&self, session: &SessionId) -> Resetting {
        self.running.begin_reset(session)
    }

    /// The rest of a reset (docs/spec.md §4, "A reset ends the session first"): a
    /// session's label never falls while anything of it runs. So, in this order: its
    /// servers are stopped (which ends the calls in flight on them); every call admitted
    /// before the reset has ended — answered `failed` ("the session was reset by an
    /// operator while this call ran; it was stopped"), its boxes killed and reaped, the
    /// kernel's word that no process of them is left; its servers are stopped again (one a
    /// stopped call may have just put in place); its workspace is moved aside and removed;
    /// and only then its floor — the label its boxes' connections are decided at — is
    /// forgotten. Until `reset` is dropped, at the end, nothing of the session is admitted.
    /// Returns how many servers were stopped and whether there was a workspace.
    pub fn finish_reset(&self, reset: Resetting) -> Result<(u32, bool), String> {
        let session = reset.session().clone();
        let session = &session;
        let mut servers = self.stop_servers(session);
        self.warm.stop_session(session);
        reset.wait_idle();
        servers += self.stop_servers(session);
        self.warm.stop_session(session);
        let path = self.workspace(session);
        let had = path.exists();
        if had {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            // A dot name: never a session's (a session id starts with a letter or digit).
            let aside = self
                .workspaces
                .join(format!(".reset-{}-{nanos}", session.as_str()));
            std::fs::rename(&path, &aside)
                .map_err(|e| format!("cannot move the workspace {} aside: {e}", path.display()))?;
            // Best effort: no box of the session runs any more to hold anything open.
            let _ = std::fs::remove_dir_all(&aside);
        }
        self.floors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session);
        drop(reset);
        Ok((servers, had))
    }

    /// The mounts a box of `tool` is given (every mount for none), each writable only where
    /// the config says so and the box's `label` allows (no write down; `None`: as the
    /// config says, for `box exec` and `box show`).
    pub(crate) fn box_mounts(&self, tool: Option<&Tool>, label: Option<Label>) -> Vec<Mount> {
        let chosen: Vec<&config::Mount> = match tool {
            Some(t) => self.config.mounts_of(t).collect(),
            None => self.config.mounts.iter().collect(),
        };
        chosen
            .into_iter()
            .map(|m| Mount {
                // As resolved once, when this runner started.
                host: self
                    .hosts
                    .resolved(&m.at)
                    .map_or_else(|| m.host.clone(), Path::to_path_buf),
                at: m.at.clone(),
                write: label.map_or(m.write, |l| m.writable_at(l)) && !self.unsearched(m),
            })
            .collect()
    }

    /// Whether `mount` keeps `.git` and holds more directories than the search for the
    /// repositories inside it looks at ([`crate::gitkeep::NESTED_DIRS`]): it cannot tell
    /// which `.git` there to keep — a box could make directories to spend the search
    /// before it reaches the person's repository — so no box may write the mount (fail
    /// closed; docs/spec.md §4, "What a writable mount keeps").
    fn unsearched(&self, mount: &config::Mount) -> bool {
        mount.write
            && mount.read_only.iter().any(|n| n == Path::new(".git"))
            && self
                .looked(
                    self.hosts
                        .resolved(&mount.at)
                        .unwrap_or(mount.host.as_path()),
                )
                .nested
                .cut
    }

    /// The places inside a box with `mounts` where a file of boxmaker's own would show
    /// (the state directory, a key, a secret file; a file that decides what boxmaker does,
    /// in a writable mount): each is hidden under an empty tmpfs (docs/spec.md §1, §3.5: no
    /// box ever sees the state directory). The one place a box's masks come from.
    pub(crate) fn masks(&self, mounts: &[Mount]) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = mounts
            .iter()
            .flat_map(|m| self.hosts.masks(&m.at, m.write))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The entries of the writable ones of `mounts` that no box may change (each mount's
    /// `read_only`), where they are on the host now and are not symlinks: the box binds
    /// each over itself read-only (docs/spec.md §4, "What a writable mount keeps"). The one
    /// place a box's kept entries come from. Looked at when each box is made, so a warm box
    /// made before an entry appeared is made again (its shape differs).
    pub(crate) fn keeps(&self, mounts: &[Mount]) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        for m in mounts.iter().filter(|m| m.write) {
            let Some(c) = self.config.mounts.iter().find(|c| c.at == m.at) else {
                continue;
            };
            for rel in self.kept_names(c, &m.host) {
                let there = std::fs::symlink_metadata(m.host.join(&rel))
                    .is_ok_and(|md| !md.file_type().is_symlink());
                if there {
                    out.push(m.at.join(rel));
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// The kept name (`AT/NAME`) of a writable one of `mounts` that `path` (as `write_file`
    /// takes it: absolute, or under `/work`; `.` and `..` folded as written) is, or lies
    /// under, whether or not it is there yet.
    fn kept_at(&self, mounts: &[Mount], path: &str) -> Option<PathBuf> {
        let folded = config::own::lexical(&Path::new("/work").join(path));
        mounts.iter().filter(|m| m.write).find_map(|m| {
            let c = self.config.mounts.iter().find(|c| c.at == m.at)?;
            self.kept_names(c, &m.host)
                .into_iter()
                .map(|n| m.at.join(n))
                .find(|at| folded.starts_with(at))
        })
    }

    /// The kept names of the writable ones of `mounts` that are not there now (host path,
    /// path in the box): a box can make them (a bind mount needs something to bind), so
    /// [`Runner::sweep_kept`] looks again once the box's call is over.
    pub(crate) fn absent_kept(&self, mounts: &[Mount]) -> Vec<(PathBuf, PathBuf)> {
        let mut out = Vec::new();
        for m in mounts.iter().filter(|m| m.write) {
            let Some(c) = self.config.mounts.iter().find(|c| c.at == m.at) else {
                continue;
            };
            for rel in self.kept_names(c, &m.host) {
                let host = m.host.join(&rel);
                if std::fs::symlink_metadata(&host).is_err() {
                    out.push((host, m.at.join(rel)));
                }
            }
        }
        out
    }

    /// The watch on kept names a box could make while it lives.
    pub(crate) fn sentries(&self) -> &crate::sentry::Sentries {
        &self.sentries
    }

    /// [`sweep_kept`] with this runner's channel to the gate.
    pub(crate) fn sweep_kept(
        &self,
        absent: &[(PathBuf, PathBuf)],
        session: &SessionId,
        tool: &str,
        call: Option<proto::CallId>,
    ) -> Vec<String> {
        sweep_kept(&self.egress, absent, session, tool, call)
    }

    /// The `read_only` entries of the writable ones of `mounts` that [`Runner::keeps`] does
    /// not keep (not there, or a symlink), for `box show`.
    fn unkept(&self, mounts: &[Mount]) -> Vec<PathBuf> {
        let kept = self.keeps(mounts);
        let mut out: Vec<PathBuf> = Vec::new();
        for m in mounts.iter().filter(|m| m.write) {
            if let Some(c) = self.config.mounts.iter().find(|c| c.at == m.at) {
                out.extend(
                    self.kept_names(c, &m.host)
                        .into_iter()
                        .map(|rel| m.at.join(rel))
                        .filter(|at| !kept.contains(at)),
                );
            }
        }
        out
    }

    /// The label of a box of `tool` in `session` now: what it can read — its mounts (their
    /// class, and untrusted when one says so) joined with what the session's workspace may
    /// hold (untrusted once the session read untrusted data).
    pub(crate) fn box_label(&self, session: &SessionId, tool: &Tool) -> Label {
        self.floor(session).join(self.config.reach_label(tool))
    }

    fn builtin(
        &self,
        call: &Admitted,
        req: &ToolRequest,
        tool: &Tool,
        which: Builtin,
        files: &[proto::run::FileDigest],
    ) -> ToolResponse {
        let parsed = match builtin::parse(which, &req.arguments) {
            Ok(parsed) => parsed,
            Err(e) => return failed(e.to_string()),
        };
        if let Err(e) = self.ensure_workspace(&req.session) {
            return failed(e.to_string());
        }
        match parsed {
            BuiltinCall::ReadFile(a) => self.file_tool(call, req, tool, a.into(), None),
            BuiltinCall::WriteFile(a) => {
                // The file tool writes what the model gave it: data at the session's taint.
                let label = self.floor(&req.session);
                if let Some(why) = self.write_down(&a.path, tool, label) {
                    return failed(format!("{}: {why}", tool.name));
                }
                self.file_tool(call, req, tool, a.into(), Some(label))
            }
            BuiltinCall::ListDir(a) => self.file_tool(call, req, tool, a.into(), None),
            BuiltinCall::Run(a) => self.run_tool(call, req, tool, a, files),
        }
    }

    /// Why writing `path` at `label` would write down, if it would: a writable mount whose
    /// class is below the label, or whose files are trusted while the label is untrusted
    /// (the kernel refuses it too: the mount is read-only in that box). The sentence says
    /// what the model can do about it.
    fn write_down(&self, path: &str, tool: &Tool, label: Label) -> Option<String> {
        let path = Path::new(path);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            Path::new("/work").join(path)
        };
        let m = self
            .config
            .mounts_of(tool)
            .filter(|m| path.starts_with(&m.at))
            .max_by_key(|m| m.at.components().count())?;
        if self.unsearched(m) {
            return Some(format!(
                "refused: {} holds more directories than boxmaker looks through for the \
                 repositories inside it ({} within three levels), so it cannot tell which \
                 .git to keep from boxes, and the mount is read-only until it holds fewer \
                 (the person can mount a smaller directory). Write to /work instead.",
                m.at.display(),
                crate::gitkeep::NESTED_DIRS
            ));
        }
        (m.write && !m.writable_at(label)).then(|| {
            if label.class > m.class {
                format!(
                    "refused: {} is a {} mount and this session has read {} data; writing \
                     there would move that data below its label (no write down), so it is \
                     read-only for this session until an operator resets it. Write to /work \
                     instead.",
                    m.at.display(),
                    m.class,
                    label.class
                )
            } else {
                format!(
                    "refused: {} is a mount whose files are trusted and this session has read \
                     untrusted data; what it writes there would be read back, in any session, \
                     as the person's own files (no write down), so it is read-only for this \
                     session until an operator resets it (or the mount says `untrusted = \
                     true`). Write to /work instead.",
                    m.at.display()
                )
            }
        })
    }

    /// The spec of a box for `tool` in `session`, running `argv`, at `label` (`None`: a box
    /// that writes nowhere but `/work`).
    fn spec(
        &self,
        session: &SessionId,
        tool: &Tool,
        argv: Vec<String>,
        io: Io,
        label: Option<Label>,
    ) -> Spec {
        let mut spec = self.box_spec(session, tool.network, &tool.env, argv, io);
        spec.mounts = self.box_mounts(Some(tool), label);
        spec.masks = self.masks(&spec.mounts);
        if label.is_none() {
            for m in &mut spec.mounts {
                m.write = false;
            }
        }
        spec.keeps = self.keeps(&spec.mounts);
        spec
    }

    /// The box a call in `session` gets, running `argv`: the session's workspace at `/work`,
    /// the config's mounts, the `[box]` limits, the named environment variables, and the
    /// network only with `network`. `boxmaker box exec` runs exactly this box.
    pub fn box_spec(
        &self,
        session: &SessionId,
        network: bool,
        env: &[String],
        argv: Vec<String>,
        io: Io,
    ) -> Spec {
        let mut spec = Spec::new(argv, self.workspace(session));
        spec.mounts = self.box_mounts(None, None);
        spec.masks = self.masks(&spec.mounts);
        spec.keeps = self.keeps(&spec.mounts);
        // A networked box goes out only through the egress proxy: its own network
        // namespace, the listener its init makes, and the variables that name it.
        spec.proxy = network;
        spec.env = env
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v)))
            .collect::<BTreeMap<_, _>>();
        if network {
            let proxy = format!("http://{}", sandbox::PROXY_ADDR);
            for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
                spec.env.insert(name.into(), proxy.clone());
                spec.env.insert(name.to_ascii_lowercase(), proxy.clone());
            }
            // The local hosts a rule names are the host's, through the proxy; the others
            // are the box's own `lo` (docs/spec.md §3.6).
            if let Some(direct) = self.config.no_proxy() {
                for name in ["NO_PROXY", "no_proxy"] {
                    spec.env.insert(name.into(), direct.clone());
                }
            } else {
                for name in ["NO_PROXY", "no_proxy"] {
                    spec.env.remove(name);
                }
            }
            spec.env.insert("NODE_USE_ENV_PROXY".into(), "1".into());
        }
        let l = &self.config.limits;
        spec.limits = Limits {
            memory_bytes: l.memory_bytes,
            address_space_bytes: l.address_space_bytes,
            processes: l.max_processes,
            file_size_bytes: l.file_size_bytes,
            timeout: Duration::from_secs(l.timeout_seconds),
            cpu_seconds: l.timeout_seconds,
            ..Limits::default()
        };
        spec.require = requirements(l);
        spec.host_id = Some(host_id(session));
        spec.io = io;
        spec
    }

    /// Creates `session`'s workspace if it does not exist yet (mode 0700), and marks it used
    /// now (its modification time), which is what [`Runner::sweep_workspaces`] goes by.
    ///
    /// Neither `STATE/work` nor the workspace may be a link (`statedir::file`): the
    /// repository can ship `.boxmaker/work/dev -> ~`, and a workspace is `/work`, writable,
    /// in the session's boxes.
    pub fn ensure_workspace(&self, session: &SessionId) -> Result<PathBuf, RunnerError> {
        let path = self.workspace(session);
        state_sub(&self.state_dir, WORK, true)
            .and_then(|w| w.sub_make(session.as_str(), 0o700))
            .map_err(|e| RunnerError::Workspace {
                path: path.clone(),
                source: e.into(),
            })?;
        self.touch_workspace(session);
        Ok(path)
    }

    /// Marks `session`'s workspace used now (its modification time), if it exists (and is
    /// no link).
    pub fn touch_workspace(&self, session: &SessionId) {
        if let Ok(dir) = state_sub(&self.state_dir, WORK, false)
            .and_then(|w| w.sub(session.as_str()))
            .and_then(|d| d.file())
        {
            let _ = dir.set_modified(std::time::SystemTime::now());
        }
    }

    /// Removes the workspaces of ended connection sessions: a session `boxmaker mcp` made
    /// for one connection (`mcp-` and 16 hex digits, random, never made again) whose last
    /// call started more than [`WORKSPACE_KEEP`] ago. Its taint record and audit trail stay
    /// with the gate; a named session's workspace (`--session`) stays until the session is
    /// reset. Returns how many were removed. The runner sweeps when it starts.
    pub fn sweep_workspaces(&self) -> usize {
        // Only a real `STATE/work`: through a link the sweep would remove another's files.
        if state_sub(&self.state_dir, WORK, false).is_err() {
            return 0;
        }
        let Ok(entries) = std::fs::read_dir(&self.workspaces) else {
            return 0;
        };
        let now = std::time::SystemTime::now();
        let mut removed = 0;
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if !is_connection_session(name) {
                continue;
            }
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > WORKSPACE_KEEP);
            if old && std::fs::remove_dir_all(e.path()).is_ok() {
                removed += 1;
            }
        }
        self.sweep_logs(now);
        removed
    }

    /// Removes the stderr logs of ended connection sessions (`STATE/logs/mcp-…`), by the
    /// same rule as their workspaces: nothing written there for [`WORKSPACE_KEEP`].
    fn sweep_logs(&self, now: std::time::SystemTime) {
        if state_sub(&self.state_dir, "logs", false).is_err() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(crate::downstream::stderr::logs_dir(&self.state_dir))
        else {
            return;
        };
        let recent = |t: std::io::Result<std::time::SystemTime>| {
            t.is_ok_and(|t| now.duration_since(t).unwrap_or_default() <= WORKSPACE_KEEP)
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if !name.to_str().is_some_and(is_connection_session) {
                continue;
            }
            let used = recent(e.metadata().and_then(|m| m.modified()))
                || std::fs::read_dir(e.path()).is_ok_and(|files| {
                    files
                        .flatten()
                        .any(|f| recent(f.metadata().and_then(|m| m.modified())))
                });
            if !used {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }

    /// `boxmaker box exec`: runs `argv` in `session`'s box with this process's stdin, stdout
    /// and stderr, and returns its exit status (128 + signal when killed, 124 on timeout). A
    /// single-threaded caller builds the box itself, without re-running a helper.
    pub fn exec_in_box(
        &self,
        session: &SessionId,
        network: bool,
        argv: Vec<String>,
    ) -> Result<i32, sandbox::Error> {
        self.ensure_workspace(session)
            .map_err(|e| sandbox::Error::InvalidSpec(e.to_string()))?;
        let mut spec = self.box_spec(session, network, &[], argv, Io::Inherit);
        // The operator's own command: `--network` shares the host's network (no proxy
        // serves a box run outside the runner).
        if network {
            spec.proxy = false;
            spec.network = true;
        }
        Ok(sandbox::run_in_process(&spec, &self.helper)?
            .status
            .exit_code())
    }

    /// `boxmaker box show`: the mount table, network and limits of `session`'s box, as text.
    /// A look changes nothing on disk (docs/spec.md §7): a workspace that does not exist yet
    /// is shown by the path the session's first call will make, and an existing one is not
    /// touched (its time decides when an ended session's workspace is swept).
    pub fn describe_box(
        &self,
        session: &SessionId,
        network: bool,
        tool: Option<&Tool>,
    ) -> Result<String, sandbox::Error> {
        let workspace = self.workspace(session);
        let made = workspace.is_dir();
        let network = tool.map_or(network, |t| t.network);
        let mut spec = self.box_spec(session, network, &[], vec!["/bin/true".into()], Io::Inherit);
        if !made {
            // The table is built by the same code either way; `/` stands in for the
            // directory, and the path it will be is put back below.
            spec.workspace = PathBuf::from("/");
        }
        let mut reach = String::new();
        if let Some(t) = tool {
            spec.mounts = self.box_mounts(Some(t), Some(self.box_label(session, t)));
            spec.masks = self.masks(&spec.mounts);
            spec.keeps = self.keeps(&spec.mounts);
            reach = if t.runs_foreign_code() {
                let r = self.config.reach(t);
                format!(
                    "reach: {r} (a call to {} is decided at max(taint, {r}), and its answers \
                     are labelled at least {})\n",
                    t.name,
                    self.config.floor(&t.name).class
                )
            } else {
                format!(
                    "reach: its results are labelled by the file read (at least {})\n",
                    t.class
                )
            };
            // By name and where each comes from: `box show` never reads a value.
            for (var, name) in &t.secrets {
                let from = self
                    .config
                    .secret(name)
                    .map_or_else(|| "?".to_string(), |s| s.source.describe());
                reach.push_str(&format!(
                    "secret: {var} is the secret {name:?} (from {from}), read by the runner when \
                     the box starts; redacted from every answer\n"
                ));
            }
        }
        let mut table = sandbox::mount_table(&spec)?;
        let unkept = self.unkept(&spec.mounts);
        if !unkept.is_empty() {
            // A mount of forty projects has a thousand such names: the first ones, and how
            // many more.
            let shown: Vec<String> = unkept
                .iter()
                .take(UNKEPT_SHOWN)
                .map(|p| p.display().to_string())
                .collect();
            let more = unkept.len() - shown.len();
            reach.push_str(&format!(
                "not kept (not there, or a symlink: a box could make it, and what it makes \
                 is moved aside the moment it is made): {}{}\n",
                shown.join(", "),
                if more > 0 {
                    format!(", and {more} more")
                } else {
                    String::new()
                }
            ));
        }
        for m in spec.mounts.iter().filter(|m| m.write) {
            let keeps_git = self
                .config
                .mounts
                .iter()
                .any(|c| c.at == m.at && c.read_only.iter().any(|n| n == Path::new(".git")));
            if keeps_git && self.looked(&m.host).nested.cut {
                reach.push_str(&format!(
                    "read-only: {} holds more than the {} directories boxmaker looks through \
                     for the repositories inside it, so no box may write it\n",
                    m.at.display(),
                    crate::gitkeep::NESTED_DIRS
                ));
            }
        }
        let mut work = String::new();
        if !made {
            for e in &mut table {
                if let (true, sandbox::MountKind::Bind { host, .. }) =
                    (e.at == Path::new("/work"), &mut e.kind)
                {
                    host.clone_from(&workspace);
                }
            }
            work = format!(
                "work: {} does not exist yet; the session's first call makes it\n",
                workspace.display()
            );
        }
        let l = &spec.limits;
        let network = if !network {
            "none (only lo)".to_string()
        } else {
            self.describe_egress(tool)
        };
        Ok(format!(
            "{}{work}{reach}network: {}\nlimits: {}, {} processes, files up to {} bytes, {} s wall clock\n",
            sandbox::describe_mounts(&table),
            network,
            describe_memory(l, sandbox::memory_cgroup()),
            l.processes,
            l.file_size_bytes,
            l.timeout.as_secs()
        ))
    }

    /// What a networked box of `tool` may reach: the proxy, the label its connections are
    /// decided at, and each egress rule it may use with its clearance.
    fn describe_egress(&self, tool: Option<&Tool>) -> String {
        let mut out = format!(
            "only through boxmaker's egress proxy ({} in the box; own network namespace, only lo)",
            sandbox::PROXY_ADDR
        );
        let Some(t) = tool else {
            out.push_str(" (`box exec --network` shares the host's network instead)");
            return out;
        };
        let rules: Vec<&config::EgressRule> = self.config.egress_rules_of(t).collect();
        if rules.is_empty() {
            out.push_str("\negress: no [[egress]] rule it may use: it reaches nothing");
            return out;
        }
        out.push_str(&format!(
            "\negress: a connection is decided at the call's label, max(session taint, reach \
             {}, class {}, what the box has read), and refused where that is above the rule's \
             clearance; once bytes of a destination's answer reach the box, the box is at least \
             at that rule's `returns`, and untrusted unless the rule says `trusted = true` (a \
             run for the rest of its call, a server for as long as it runs), and its answers \
             carry it",
            self.config.reach(t),
            t.class
        ));
        for r in rules {
            out.push_str(&format!("\n  {}", r.describe()));
        }
        out
    }

    /// Refuses to serve where a protection the config requires is missing (docs/spec.md §4: the
    /// runner refuses to start, with the report, rather than run tools unconfined).
    pub fn check_machine(config: &Config) -> Result<(), RunnerError> {
        let report = sandbox::doctor(&requirements(&config.limits));
        if report.missing().is_empty() {
            Ok(())
        } else {
            Err(RunnerError::Unprotected(report.to_string()))
        }
    }

    /// The label of every answer of `req`, before what its box read: the tool's own floor
    /// raised by every label rule that matches the call (`Config::answer_label`, docs/spec.md
    /// §3.4 — the function the gate labels a `failed` by).
    pub(crate) fn answer_label(&self, req: &ToolRequest) -> Label {
        self.config
            .answer_label_for(&req.tool, &req.arguments)
            .label
    }

    /// The label of an answer of code boxmaker does not control: [`Runner::answer_label`]
    /// (its reach in it, docs/spec.md §3.4) joined with the session's floor — what the
    /// session's workspace may hold, which the box could read, and what its arguments, the
    /// session's values, carry. In a session that has read untrusted data it is untrusted,
    /// whatever the tool's own `untrusted` says: an answer made there is made in an untrusted
    /// context (docs/spec.md §3.4).
    pub(crate) fn foreign_label(&self, req: &ToolRequest) -> Label {
        self.answer_label(req).join(self.floor(&req.session))
    }

    fn file_tool(
        &self,
        call: &Admitted,
        req: &ToolRequest,
        tool: &Tool,
        inbox: InboxRequest,
        label: Option<Label>,
    ) -> ToolResponse {
        // The box this call's fresh box would be; the warm box serving it is built the same.
        let mut spec = self.spec(
            &req.session,
            tool,
            vec![INBOX_BINARY.into(), INBOX_SERVE_ARG.into()],
            Io::Inherit,
            label,
        );
        // A kept name is refused to `write_file` whether or not it is there yet: the box
        // cannot keep what does not exist, but this write is boxmaker's own code.
        if let InboxRequest::WriteFile { path, .. } = &inbox
            && let Some(kept) = self.kept_at(&spec.mounts, path)
        {
            return failed(format!(
                "{}: cannot write {path}: {} is kept read-only in every box (a program on the \
                 host runs from it; docs/spec.md §4, \"What a writable mount keeps\"); nothing \
                 was written",
                tool.name,
                kept.display()
            ));
        }
        spec.mounts.push(Mount {
            host: self.binary.clone(),
            at: INBOX_BINARY.into(),
            write: false,
        });
        // A file tool needs no network, whatever the tool's config says, and no variable.
        spec.network = false;
        spec.proxy = false;
        spec.env.clear();
        let timeout = spec.limits.timeout;
        let reply = match self.warm.call(
            &req.session,
            &tool.name,
            &spec,
            &self.helper,
            call,
            &inbox,
            &mut |took| {
                self.boxed(
                    &req.session,
                    &tool.name,
                    Some(req.call),
                    proto::run::BoxKind::File,
                    took,
                )
            },
        ) {
            Ok(reply) => reply,
            Err(WarmError::Start(why)) => {
                return failed(format!("{}: the box could not start: {why}", tool.name));
            }
            Err(WarmError::TimedOut) => {
                return failed(format!(
                    "{}: timed out after {} s; its box was killed",
                    tool.name,
                    timeout.as_secs()
                ));
            }
            Err(WarmError::Broke(why)) => {
                return failed(format!("{}: the tool failed in its box: {why}", tool.name));
            }
        };
        match reply {
            InboxReply::Done {
                content,
                read,
                truncated,
            } => {
                // The call's own label (its tool's class and its label rules), raised by
                // every file the kernel opened: a file of the workspace by the session's
                // floor, untrusted bit and all (a box may have written it).
                let own = self.answer_label(req);
                let label = label_of_reads(own, &read, &self.hosts, self.floor(&req.session));
                let mut resp = fit_result(content, label.class, label.untrusted);
                if let ToolResponse::Result { truncated: t, .. } = &mut resp {
                    *t |= truncated;
                }
                resp
            }
            InboxReply::Failed { message } => failed(format!("{}: {message}", tool.name)),
        }
    }

    fn run_tool(
        &self,
        call: &Admitted,
        req: &ToolRequest,
        tool: &Tool,
        args: builtin::Run,
        approved: &[proto::run::FileDigest],
    ) -> ToolResponse {
        let mut timeout = Duration::from_secs(self.config.limits.timeout_seconds);
        if let Some(t) = args.timeout {
            timeout = timeout.min(Duration::from_secs(t));
        }
        let built_at = self.box_label(&req.session, tool);
        // A call a person approved runs only what they approved (docs/spec.md §3.3 step 6):
        // look again now, and run the program from a copy of the bytes just hashed.
        let pin = if approved.is_empty() {
            None
        } else {
            let looked = self.view(&req.session, tool).digests(&args.argv, true);
            if let Some(why) = crate::digest::changed(approved, &looked.files) {
                return failed(format!(
                    "{}: nothing ran, because what the call runs changed since a person                      approved it: {why}. Call again and a person is asked about it as it is now.",
                    tool.name
                ));
            }
            match self.pin(&looked) {
                Ok(pin) => pin,
                Err(e) => {
                    return failed(format!(
                        "{}: nothing ran: cannot make the read-only copy of the approved                          program: {e}",
                        tool.name
                    ));
                }
            }
        };
        let mut argv = args.argv;
        if let Some((_, arg, at)) = &pin
            && let Some(a) = argv.get_mut(*arg)
        {
            *a = at.clone();
        }
        let mut spec = self.spec(
            &req.session,
            tool,
            argv,
            Io::Capture {
                stdin: args.stdin.map(String::into_bytes).unwrap_or_default(),
                output_cap: RUN_OUTPUT_CAP,
            },
            Some(built_at),
        );
        if let Some((dir, _, _)) = &pin {
            spec.mounts.push(Mount {
                host: dir.path().to_path_buf(),
                at: crate::digest::PIN_AT.into(),
                write: false,
            });
        }
        spec.limits.timeout = timeout;
        if let Err(e) = self.hand_secrets(tool, &mut spec) {
            return failed(format!("{}: {e}; nothing ran", tool.name));
        }
        let absent = self.absent_kept(&spec.mounts);
        // Watched while the box runs: what it makes of them is moved aside at once.
        let sentry = self.sentries.watch(
            self.egress.clone(),
            &absent,
            &req.session,
            &tool.name,
            Some(req.call),
        );
        let mut proxy = None;
        // The call's label, which its box's floats up from (docs/spec.md §3.6).
        let label = self.config.call_label(
            &req.tool,
            &req.arguments,
            self.floor(&req.session),
            self.config.reach(tool),
        );
        let float = Arc::new(egress::Float::new(
            label.call,
            self.config.writable_mounts(tool, built_at),
        ));
        let ctx = egress::BoxCtx {
            session: req.session.clone(),
            tool: tool.name.clone(),
            call: Some(req.call),
            calls: None,
            float: float.clone(),
        };
        // A pre-forked helper: it holds nothing of any session until this call, decided
        // already, hands it this spec; it runs this one box and exits.
        let asked = Instant::now();
        let outcome = self.pool.run_stoppable(
            &spec,
            &mut |s| {
                // The box runs: its helper has the spec and a way to stop it.
                self.boxed(
                    &req.session,
                    &tool.name,
                    Some(req.call),
                    proto::run::BoxKind::Run,
                    asked.elapsed(),
                );
                call.guard_box(s)
            },
            &mut |l| {
                proxy = self.egress.serve(l, ctx.clone());
            },
        );
        drop(proxy);
        // Its box is gone: what it made of the kept names is moved aside before it answers
        // (what the sentry did not move already), and its answer says so (at the end of its
        // stderr).
        let mut moved = sentry
            .map(crate::sentry::Sentry::finish)
            .unwrap_or_default();
        moved.extend(self.sweep_kept(&absent, &req.session, &tool.name, Some(req.call)));
        crate::run::scrub(tool, &mut spec);
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => return failed(format!("{}: the box could not start: {e}", tool.name)),
        };
        let exit = match outcome.status {
            Status::TimedOut => {
                return failed(format!(
                    "{}: timed out after {} s; the command and everything it started were killed",
                    tool.name,
                    timeout.as_secs()
                ));
            }
            s => s.exit_code(),
        };
        // `run` can read anything its box shows — its mounts, and the workspace — and what
        // destinations answered it in this call.
        let label = crate::label::call_label(self.foreign_label(req), float.reached());
        let cut = outcome.stdout_truncated || outcome.stderr_truncated;
        let mut stderr = String::from_utf8_lossy(&outcome.stderr).into_owned();
        for line in moved {
            if !stderr.is_empty() && !stderr.ends_with('\n') {
                stderr.push('\n');
            }
            stderr.push_str(&line);
            stderr.push('\n');
        }
        fit_run(
            exit,
            String::from_utf8_lossy(&outcome.stdout).into_owned(),
            stderr,
            label.class,
            label.untrusted,
            cut,
        )
    }
}

/// `run`'s content is the JSON text `{"exit":N,"stdout":"...","stderr":"..."}`. Cutting that
/// text would leave JSON a model cannot parse, so the streams are cut instead, keeping the
/// same share of each, until the whole result fits in a frame.
pub fn fit_run(
    exit: i32,
    stdout: String,
    stderr: String,
    class: DataClass,
    untrusted: bool,
    already_cut: bool,
) -> ToolResponse {
    #[derive(Serialize)]
    struct RunContent<'a> {
        exit: i32,
        stdout: &'a str,
        stderr: &'a str,
    }
    let compose = |out: &str, err: &str| {
        serde_json::to_string(&RunContent {
            exit,
            stdout: out,
            stderr: err,
        })
        .unwrap_or_default()
    };
    let fits = |content: String| match fit_result(content, class, untrusted) {
        r @ ToolResponse::Result {
            truncated: false, ..
        } => Some(r),
        _ => None,
    };
    if let Some(mut r) = fits(compose(&stdout, &stderr)) {
        if let ToolResponse::Result { truncated, .. } = &mut r {
            *truncated = already_cut;
        }
        return r;
    }
    // Binary search the largest share (in thousandths) of each stream that fits.
    let (mut lo, mut hi) = (0usize, 1000usize);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        let ok = fits(compose(
            prefix(&stdout, stdout.len() * mid / 1000),
            prefix(&stderr, stderr.len() * mid / 1000),
        ))
        .is_some();
        if ok { lo = mid } else { hi = mid - 1 }
    }
    let content = compose(
        prefix(&stdout, stdout.len() * lo / 1000),
        prefix(&stderr, stderr.len() * lo / 1000),
    );
    let mut r = fit_result(content, class, untrusted);
    if let ToolResponse::Result { truncated, .. } = &mut r {
        *truncated = true;
    }
    r
}

/// The longest prefix of `s` of at most `n` bytes that ends on a character boundary.
/// A box's memory and address-space limits as `box show` says them: what they mean depends
/// on whether a memory cgroup bounds the box here (`cgroup`, docs/spec.md §4 Limits).
pub fn describe_memory(l: &Limits, cgroup: bool) -> String {
    let space = sandbox::address_space_limit(l, cgroup);
    match (cgroup, space) {
        (true, None) => format!(
            "memory {} bytes (a memory cgroup bounds it), address space unlimited \
             (`[box] address_space_bytes`)",
            l.memory_bytes
        ),
        (true, Some(a)) => format!(
            "memory {} bytes (a memory cgroup bounds it), address space {a} bytes \
             (`[box] address_space_bytes`)",
            l.memory_bytes
        ),
        (false, _) => format!(
            "memory {} bytes, which is also every process's address-space limit (RLIMIT_AS): \
             no memory cgroup bounds the box here, so a program that reserves more address \
             space than it uses (node's WebAssembly) fails at far less memory; \
             `[box] address_space_bytes` applies only where a memory cgroup exists",
            l.memory_bytes
        ),
    }
}

pub(crate) use proto::run::{failed, prefix};

impl Runner {
    /// Hands `tool`'s box its secrets: each as the variable the config names, read now if
    /// it was not yet. Its failure says which secret and why, never a value.
    pub(crate) fn hand_secrets(
        &self,
        tool: &config::Tool,
        spec: &mut sandbox::Spec,
    ) -> Result<(), String> {
        for (var, name) in &tool.secrets {
            let v = self.secrets().get(name)?;
            spec.env.insert(var.clone(), v.expose().to_string());
        }
        Ok(())
    }
}

/// Zeroes the copies of `tool`'s secrets in `spec`, once its box has them.
pub(crate) fn scrub(tool: &config::Tool, spec: &mut sandbox::Spec) {
    use zeroize::Zeroize;
    for var in tool.secrets.keys() {
        if let Some(v) = spec.env.get_mut(var) {
            v.zeroize();
        }
    }
}

impl mcpclient::Wiring for Runner {
    fn config(&self) -> &Config {
        Runner::config(self)
    }
    fn state_dir(&self) -> &Path {
        Runner::state_dir(self)
    }
    fn secrets(&self) -> &Arc<secrets::Secrets> {
        Runner::secrets(self)
    }
    fn egress(&self) -> &Arc<egress::Egress> {
        Runner::egress(self)
    }
}

/// What the config requires of every box; namespaces, seccomp, `no_new_privs` and the
/// capability drop are always required (without them there is no box).
pub(crate) fn requirements(l: &config::BoxLimits) -> sandbox::Requirements {
    sandbox::Requirements {
        landlock: l.require_landlock,
        cgroups: l.require_cgroups,
    }
}

/// The host uid `session`'s box user maps to when the runner is root (FNV-1a of the id).
fn host_id(session: &SessionId) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in session.as_str().bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    HOST_ID_BASE.saturating_add(h % HOST_ID_SPAN)
}

/// `STATE/work`: the sessions' workspaces.
pub(crate) const WORK: &str = "work";

/// `STATE/NAME`, a directory of the state directory's own: neither it nor the state
/// directory may be a link (`statedir::file`). With `make`, made `0700` (the state directory
/// too) when missing.
pub(crate) fn state_sub(
    state: &Path,
    name: &str,
    make: bool,
) -> Result<Dir, statedir::file::Error> {
    if make {
        Dir::own(state)?.sub_make(name, 0o700)
    } else {
        Dir::own_existing(state)?.sub(name)
    }
}

/// Each of `absent` that is there now was made while a box of `session` ran (by the box,
/// unless a person made it in that very moment): it is moved aside
/// ([`crate::sentry::move_aside`]).
pub(crate) fn sweep_kept(
    events: &egress::Egress,
    absent: &[(PathBuf, PathBuf)],
    session: &SessionId,
    tool: &str,
    call: Option<proto::CallId>,
) -> Vec<String> {
    absent
        .iter()
        .filter_map(|(host, at)| {
            crate::sentry::move_aside(events, host, at, session, tool, call, false)
        })
        .collect()
}

impl Runner {
    /// The entries a writable mount keeps, relative to its top: its `read_only`, and, where
    /// that keeps `.git`, what its git directory names in the work tree as a place git runs
    /// code or reads config from (`core.hooksPath`, an included file, a submodule's work
    /// tree, a program a config value runs: [`crate::gitkeep`]) — and the same for each
    /// repository inside the mount ([`crate::gitkeep::nested`]): its `.git`, the list's
    /// other names in its work tree, and what its git directory names there (a mount of a
    /// directory of projects).
    fn kept_names(&self, mount: &config::Mount, host: &Path) -> Vec<PathBuf> {
        let mut names = mount.read_only.clone();
        let listed = |n: &str| mount.read_only.iter().any(|l| l == Path::new(n));
        let (git, envrc) = (listed(".git"), listed(".envrc"));
        if git || envrc {
            let looked = self.looked(host);
            // A mount of forty projects keeps about a thousand names: each once, in the
            // order first named, without a quadratic search.
            let mut seen: std::collections::HashSet<PathBuf> = names.iter().cloned().collect();
            let mut add = |name: PathBuf| {
                if seen.insert(name.clone()) {
                    names.push(name);
                }
            };
            if git {
                for repo in &looked.nested.repos {
                    for name in &mount.read_only {
                        add(repo.join(name));
                    }
                }
                for (tree, named) in &looked.named {
                    for name in named {
                        add(tree.join(name));
                    }
                }
            }
            if envrc {
                // What the `.envrc` of the top names, and, where the repositories inside
                // are kept, what each one's does.
                let trees = if git { looked.envrc.len() } else { 1 };
                for (tree, named) in looked.envrc.iter().take(trees) {
                    for name in named {
                        add(tree.join(name));
                    }
                }
            }
        }
        names
    }

    /// What the mount at `host` holds ([`Looked`]): looked at anew unless a look was made in
    /// the same call (no other call began since) within [`NESTED_FRESH`].
    fn looked(&self, host: &Path) -> Arc<Looked> {
        let now = Instant::now();
        let calls = self.calls.load(std::sync::atomic::Ordering::SeqCst);
        let mut memo = self.nested.lock().unwrap_or_else(|p| p.into_inner());
        memo.retain(|_, (at, n, _)| *n == calls && now.duration_since(*at) < NESTED_FRESH);
        memo.entry(host.to_path_buf())
            .or_insert_with(|| {
                let nested = crate::gitkeep::nested(host);
                let trees: Vec<PathBuf> = std::iter::once(PathBuf::new())
                    .chain(nested.repos.iter().cloned())
                    .collect();
                let named = trees
                    .iter()
                    .map(|t| (t.clone(), crate::gitkeep::named_by_git(&host.join(t))))
                    .collect();
                let envrc = trees
                    .iter()
                    .map(|t| (t.clone(), crate::envkeep::named_by_envrc(&host.join(t))))
                    .collect();
                (
                    now,
                    calls,
                    Arc::new(Looked {
                        nested,
                        named,
                        envrc,
                    }),
                )
            })
            .2
            .clone()
    }
}

#[cfg(test)]
mod sweep_tests {
    use super::*;

    #[test]
    fn only_old_connection_sessions_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Arc::new(config::parse("", "t.toml", dir.path()).unwrap());
        let r = Runner::with_binary(cfg, dir.path(), "/bin/true".into()).unwrap();
        let old_conn = SessionId::new("mcp-0123456789abcdef").unwrap();
        let new_conn = SessionId::new("mcp-fedcba9876543210").unwrap();
        let named = SessionId::new("project").unwrap();
        for s in [&old_conn, &new_conn, &named] {
            let w = r.ensure_workspace(s).unwrap();
            std::fs::write(w.join("f"), "x").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - WORKSPACE_KEEP * 2;
        for s in [&old_conn, &named] {
            std::fs::File::open(r.workspace(s))
                .unwrap()
                .set_modified(long_ago)
                .unwrap();
        }
        assert_eq!(r.sweep_workspaces(), 1);
        assert!(!r.workspace(&old_conn).exists());
        assert!(r.workspace(&new_conn).join("f").exists());
        assert!(
            r.workspace(&named).join("f").exists(),
            "a named session's stays"
        );
        assert!(is_connection_session("mcp-0123456789abcdef"));
        assert!(!is_connection_session("mcp-0123"));
        assert!(!is_connection_session("mcp-0123456789ABCDEF"));
    }

    #[test]
    fn an_old_connection_sessions_stderr_logs_go_with_its_workspace() {
        use crate::downstream::stderr::log_path;
        let dir = tempfile::tempdir().unwrap();
        let cfg = Arc::new(config::parse("", "t.toml", dir.path()).unwrap());
        let r = Runner::with_binary(cfg, dir.path(), "/bin/true".into()).unwrap();
        let old_conn = SessionId::new("mcp-0123456789abcdef").unwrap();
        let new_conn = SessionId::new("mcp-fedcba9876543210").unwrap();
        let named = SessionId::new("project").unwrap();
        let long_ago = std::time::SystemTime::now() - WORKSPACE_KEEP * 2;
        for s in [&old_conn, &new_conn, &named] {
            let log = log_path(dir.path(), Some(s), "srv");
            std::fs::create_dir_all(log.parent().unwrap()).unwrap();
            std::fs::write(&log, "said\n").unwrap();
            if s != &new_conn {
                for p in [&log, &log.parent().unwrap().to_path_buf()] {
                    std::fs::File::open(p)
                        .unwrap()
                        .set_modified(long_ago)
                        .unwrap();
                }
            }
        }
        r.sweep_workspaces();
        assert!(
            !log_path(dir.path(), Some(&old_conn), "srv")
                .parent()
                .unwrap()
                .exists()
        );
        assert!(log_path(dir.path(), Some(&new_conn), "srv").exists());
        assert!(
            log_path(dir.path(), Some(&named), "srv").exists(),
            "a named session's stays"
        );
    }
}

#[cfg(test)]
mod floor_tests {
    use super::*;

    /// A `failed` carries the call's own label at the gate (its label rules included), so
    /// the runner's floor for the session rises by it too: the session's open egress
    /// connections and its next boxes go by the label the taint records, not a lower one.
    #[test]
    fn a_failure_raises_the_floor_by_the_label_rules_of_its_call() {
        let dir = tempfile::tempdir().unwrap();
        let text = "[[tool]]\nname = \"read_file\"\nbuiltin = \"read_file\"\n\
                    [[label]]\ntool = \"read_file\"\n\
                    when = [{ pointer = \"/path\", glob = \"/data/hr/*\" }]\nclass = \"secret\"\n";
        let cfg = Arc::new(config::parse(text, "t.toml", dir.path()).unwrap());
        let r = Runner::with_binary(cfg, dir.path(), "/bin/true".into()).unwrap();
        let session = SessionId::new("s1").unwrap();
        let req = |args: &str| ToolRequest {
            session: session.clone(),
            call: proto::CallId(1),
            tool: "read_file".into(),
            arguments: args.into(),
        };
        // Arguments the decoder refuses fail before any box starts.
        let resp = r.handle(&req(r#"{"path":"/data/notes/a","x":1}"#), Label::PUBLIC);
        assert!(matches!(resp, ToolResponse::Failed { .. }), "{resp:?}");
        assert_eq!(r.floor(&session), Label::PUBLIC);
        let resp = r.handle(&req(r#"{"path":"/data/hr/pay","x":1}"#), Label::PUBLIC);
        assert!(matches!(resp, ToolResponse::Failed { .. }), "{resp:?}");
        assert_eq!(r.floor(&session), Label::new(DataClass::Secret, false));
        // The taint the gate sends carries its untrusted bit, and the floor keeps it: the
        // workspace of a session that read untrusted data is untrusted (issue 30).
        let other = SessionId::new("s2").unwrap();
        let mut req2 = req(r#"{"path":"/data/notes/a","x":1}"#);
        req2.session = other.clone();
        r.handle(&req2, Label::new(DataClass::Public, true));
        assert_eq!(r.floor(&other), Label::new(DataClass::Public, true));
        r.handle(&req2, Label::PUBLIC);
        assert_eq!(
            r.floor(&other),
            Label::new(DataClass::Public, true),
            "a floor never falls"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proto::{Envelope, MAX_FRAME};

    #[test]
    fn box_show_says_what_the_memory_limit_means_with_and_without_a_memory_cgroup() {
        let mut l = Limits {
            memory_bytes: 1 << 30,
            ..Limits::default()
        };
        let with = describe_memory(&l, true);
        assert!(
            with.contains("a memory cgroup bounds it") && with.contains("address space unlimited"),
            "{with}"
        );
        l.address_space_bytes = Some(64 << 30);
        assert!(describe_memory(&l, true).contains("address space 68719476736 bytes"));
        let without = describe_memory(&l, false);
        assert!(
            without.contains("1073741824 bytes, which is also every process's address-space limit")
                && without.contains("no memory cgroup"),
            "{without}"
        );
    }

    fn encoded(r: &ToolResponse) -> usize {
        serde_json::to_vec(&Envelope::response(u64::MAX, r.clone()))
            .unwrap()
            .len()
    }

    #[test]
    fn fit_run_keeps_small_output_whole_and_valid_json() {
        let r = fit_run(
            3,
            "out".into(),
            "err".into(),
            DataClass::Public,
            false,
            false,
        );
        let ToolResponse::Result {
            content, truncated, ..
        } = r
        else {
            panic!()
        };
        assert!(!truncated);
        let v: serde_json::Value = serde_json::from_str(&content).unwrap();
        assert_eq!(v["exit"], 3);
        assert_eq!(v["stdout"], "out");
    }

    #[test]
    fn fit_run_cuts_a_flood_to_a_frame_and_keeps_valid_json() {
        let out = "\u{1}".repeat(RUN_OUTPUT_CAP);
        let err = "e".repeat(100_000);
        let r = fit_run(0, out, err, DataClass::Internal, true, true);
        assert!(encoded(&r) <= MAX_FRAME, "{}", encoded(&r));
        let ToolResponse::Result {
            content,
            truncated,
            untrusted,
            ..
        } = r
        else {
            panic!()
        };
        assert!(truncated && untrusted);
        let v: serde_json::Value = serde_json::from_str(&content).unwrap();
        assert!(!v["stdout"].as_str().unwrap().is_empty());
        assert!(!v["stderr"].as_str().unwrap().is_empty());
    }

    #[test]
    fn an_already_cut_stream_is_marked_truncated() {
        let r = fit_run(0, "a".into(), String::new(), DataClass::Public, false, true);
        assert!(matches!(
            r,
            ToolResponse::Result {
                truncated: true,
                ..
            }
        ));
    }

    #[test]
    fn host_ids_are_never_root_and_differ_between_sessions() {
        let a = host_id(&SessionId::new("a").unwrap());
        let b = host_id(&SessionId::new("b").unwrap());
        assert_ne!(a, b);
        assert!(a >= HOST_ID_BASE && b >= HOST_ID_BASE);
    }

    #[test]
    fn a_failed_message_is_bounded_whatever_it_quotes() {
        let r = failed("\u{1}".repeat(10 << 20));
        assert!(encoded(&r) <= MAX_FRAME, "{}", encoded(&r));
        let ToolResponse::Failed { message } = r else {
            panic!()
        };
        assert!(message.ends_with(&format!("[cut: {} bytes in all]", 10 << 20)));
        assert_eq!(
            failed("short".into()),
            ToolResponse::Failed {
                message: "short".into()
            }
        );
    }

    #[test]
    fn prefix_never_splits_a_character() {
        assert_eq!(prefix("éé", 3), "é");
        assert_eq!(prefix("abc", 10), "abc");
    }
}
