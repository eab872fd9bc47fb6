//! The MCP server: `tools/list` from the config, `tools/call` through the gate.
//!
//! One [`Front`] serves one MCP session (a stdio connection, or one HTTP MCP session), which
//! is one boxmaker session. It holds no state of its own beyond the session id, a call
//! counter, and the highest label it has relayed (used only to word a denial).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use catalog::Catalog;
use config::Config;
use proto::{CallId, DataClass, SessionId, Timestamp, ToolRequest, ToolResponse};
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomRequest,
    CustomResult, ElicitRequest, ElicitRequestParams, ElicitResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, InitializeResult, InputRequest,
    InputRequests, InputRequiredResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, LoggingLevel, LoggingMessageNotificationParam,
    MetaObject, PaginatedRequestParams, ProgressNotificationParam, Prompt, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceTemplate, ServerCapabilities, SetLevelRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;

use crate::explain::denial;
use crate::gatecall;
use crate::tools::{Listed, listed};

/// The largest arguments object the front forwards, once re-serialized (bytes). Anything
/// larger could not fit in a frame with its envelope anyway.
pub const MAX_ARGUMENTS: usize = proto::MAX_FRAME - 4096;

/// The front for one MCP session.
#[derive(Debug, Clone)]
pub struct Front {
    inner: Arc<Inner>,
}

struct Inner {
    config: Arc<Config>,
    /// Downstream servers' tools, as discovered (empty without any).
    catalog: Arc<Catalog>,
    session: SessionId,
    /// Connections to the gate, kept between calls.
    pool: Arc<gatecall::Pool>,
    /// The decision socket, when the config lets a person approve in the agent's client.
    decide: std::sync::OnceLock<crate::approve::DecideConnector>,
    /// What the launcher found wrong with the config at start (a mount that is not there…),
    /// said to the client's log once it has initialized.
    notes: std::sync::OnceLock<Arc<Vec<String>>>,
    /// What keeps a connection session live (`statedir::live`): closed when the last clone
    /// of this front goes, which is when the MCP session ends.
    live: std::sync::OnceLock<std::os::fd::OwnedFd>,
    next_call: AtomicU64,
    seen: Mutex<(DataClass, bool)>,
    /// The lowest log level the client asked for (`logging/setLevel`): a downstream server's
    /// replayed log messages below it are not sent.
    #[allow(deprecated)]
    level: Mutex<Option<LoggingLevel>>,
    /// Which server listed which resource or prompt to this session.
    routes: Mutex<crate::routes::Routes>,
    /// Calls answered `input_required` that the gate still holds, for their retry
    /// ([`crate::held`]).
    held: Arc<crate::held::Table>,
    /// The key that seals their `requestState` (made at the first such call; `None` when
    /// the OS gave no randomness: calls then wait on their request).
    sealer: std::sync::OnceLock<Option<crate::held::Sealer>>,
    /// Whether the config's warnings were told to a 2026-07-28 client (which has no
    /// `initialized` to tell them at).
    told: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

pub(crate) fn now() -> Timestamp {
    Timestamp::from_system_time(std::time::SystemTime::now())
}

impl Front {
    /// A front for `session`, offering `config`'s builtin tools and the downstream tools of
    /// `catalog` (built by the caller from the discovery file: the front opens no file), and
    /// sending each call to the gate on a connection `connector` opens.
    pub fn new(
        config: Arc<Config>,
        catalog: Arc<Catalog>,
        session: SessionId,
        connector: gatecall::Connector,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                config,
                catalog,
                session,
                pool: Arc::new(gatecall::Pool::new(connector)),
                decide: std::sync::OnceLock::new(),
                live: std::sync::OnceLock::new(),
                notes: std::sync::OnceLock::new(),
                next_call: AtomicU64::new(1),
                seen: Mutex::new((DataClass::Public, false)),
                level: Mutex::new(None),
                routes: Mutex::new(crate::routes::Routes::default()),
                held: Arc::new(crate::held::Table::default()),
                sealer: std::sync::OnceLock::new(),
                told: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// The same front, also asking a person in the agent's client (an elicitation) when a
    /// call waits for approval and the client can show one; their answer goes to the gate
    /// over `decide` (docs/spec.md §2.5). Give it only when the config says
    /// `[gate] approve_in_client = true`: the gate refuses otherwise.
    #[must_use]
    pub fn with_client_approvals(self, decide: crate::approve::DecideConnector) -> Self {
        let _ = self.inner.decide.set(decide);
        self
    }

    /// The same front, keeping `live` open for as long as it serves: the descriptor that
    /// holds its connection session live (`front::channel::Channel::hold_live`), so the
    /// gate ends the session's remembered approvals once it is gone (docs/spec.md §6).
    #[must_use]
    pub fn holding_live(self, live: std::os::fd::OwnedFd) -> Self {
        let _ = self.inner.live.set(live);
        self
    }

    /// The same front, telling the client's log each of `notes` (`warning`, logger
    /// `boxmaker`) once the client has initialized: what will not work with this config,
    /// said before the first call fails of it (docs/spec.md §5).
    #[must_use]
    pub fn with_notes(self, notes: Arc<Vec<String>>) -> Self {
        let _ = self.inner.notes.set(notes);
        self
    }

    /// The boxmaker session this MCP session is.
    pub fn session(&self) -> &SessionId {
        &self.inner.session
    }

    fn tools(&self) -> Vec<Listed> {
        listed(
            &self.inner.config,
            &self.inner.catalog,
            &self.inner.session,
            now(),
        )
    }

    /// The config this front serves.
    pub(crate) fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Which server listed which resource or prompt to this session.
    pub(crate) fn routes(&self) -> std::sync::MutexGuard<'_, crate::routes::Routes> {
        self.inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The highest label relayed to the client so far (for wording a denial).
    pub(crate) fn seen(&self) -> (DataClass, bool) {
        *self
            .inner
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Remembers a label relayed to the client (for wording a later denial).
    pub(crate) fn saw(&self, class: DataClass, untrusted: bool) {
        let mut seen = self
            .inner
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        seen.0 = seen.0.max(class);
        seen.1 |= untrusted;
    }

    /// Turns the gate's final answer into the MCP result, and the downstream server's
    /// notifications it carries (to replay before it, [`crate::replay`]).
    fn answer(&self, tool: &str, resp: ToolResponse) -> (CallToolResult, Vec<serde_json::Value>) {
        let result = match resp {
            ToolResponse::Result {
                content,
                class,
                untrusted,
                truncated,
            } => {
                self.saw(class, untrusted);
                let meta = label_meta(class, untrusted, truncated);
                if self.inner.catalog.get(tool).is_none() {
                    return (
                        CallToolResult::success(vec![ContentBlock::text(content)])
                            .with_meta(Some(meta)),
                        Vec::new(),
                    );
                }
                // A downstream server's blocks pass through in MCP form (docs/spec.md §5, issue 7).
                let (blocks, structured, notes) = downstream_blocks(&content);
                let mut result = CallToolResult::success(blocks).with_meta(Some(meta));
                result.structured_content = structured;
                return (result, notes);
            }
            ToolResponse::Failed { message } => {
                let answer = failed(&self.inner.config, tool, &message);
                let floor = self.inner.config.floor(tool);
                self.saw(floor.class, floor.untrusted);
                answer
            }
            ToolResponse::Denied { reason } => {
                let seen = *self
                    .inner
                    .seen
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                CallToolResult::error(vec![ContentBlock::text(denial(
                    &self.inner.config,
                    &self.inner.session,
                    tool,
                    reason,
                    seen,
                    now(),
                ))])
                .with_meta(Some(nothing_ran()))
            }
            // The gate never ends a call with a pending answer; say so rather than guess.
            ToolResponse::PendingApproval { .. } => failed(
                &self.inner.config,
                tool,
                "the gate ended the call while it was still pending",
            ),
        };
        (result, Vec::new())
    }
}

/// The label every answer carries in `_meta.boxmaker` (docs/spec.md §5), as for a result.
pub(crate) fn label_meta(class: DataClass, untrusted: bool, truncated: bool) -> MetaObject {
    let mut meta = serde_json::Map::new();
    meta.insert(
        "boxmaker".into(),
        json!({"class": class, "untrusted": untrusted, "truncated": truncated}),
    );
    MetaObject(meta)
}

/// The label of an answer in which nothing of a tool's came back: a denial, or a call the
/// front refused before any gate saw it. Its text is boxmaker's own.
pub(crate) fn nothing_ran() -> MetaObject {
    label_meta(DataClass::Public, false, false)
}

/// A `failed` answer, labelled by the tool's floor ([`Config::floor`]): the label the gate
/// raises the session's taint by for a failure (a message may quote what the tool read), so
/// a client that follows the labels sees what the gate recorded — or more, for a failure
/// that ran nothing, never less.
fn failed(config: &Config, tool: &str, message: &str) -> CallToolResult {
    let floor = config.floor(tool);
    CallToolResult::error(vec![ContentBlock::text(format!("failed: {message}"))])
        .with_meta(Some(label_meta(floor.class, floor.untrusted, false)))
}

/// A downstream result's content (a [`catalog::Content`] as JSON) as MCP blocks, structured
/// content and the notifications the server sent while it ran. A block rmcp cannot read, or
/// content that is not that JSON (the runner never sends such), is passed on as text rather
/// than lost.
fn downstream_blocks(
    content: &str,
) -> (
    Vec<ContentBlock>,
    Option<serde_json::Value>,
    Vec<serde_json::Value>,
) {
    let Ok(c) = serde_json::from_str::<catalog::Content>(content) else {
        return (
            vec![ContentBlock::text(content.to_string())],
            None,
            Vec::new(),
        );
    };
    let blocks = c
        .content
        .into_iter()
        .map(|b| {
            serde_json::from_value::<ContentBlock>(b.clone())
                .unwrap_or_else(|_| ContentBlock::text(b.to_string()))
        })
        .collect();
    (blocks, c.structured_content, c.notifications)
}

impl ServerHandler for Front {
    // MCP logging is what the clients people use today show (as for a pending call).
    #[allow(deprecated)]
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        let Some(notes) = self.inner.notes.get() else {
            return;
        };
        for note in notes.iter() {
            let _ = context
                .peer
                .notify_logging_message(
                    LoggingMessageNotificationParam::new(
                        LoggingLevel::Warning,
                        json!({"message": note}),
                    )
                    .with_logger("boxmaker"),
                )
                .await;
        }
    }

    #[allow(deprecated)]
    fn get_info(&self) -> InitializeResult {
        // Resources and prompts are the servers' (docs/spec.md §5): offered when there is one.
        let caps = if self.inner.config.tools.iter().any(|t| t.kind.is_server()) {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .enable_resources()
                .enable_prompts()
                .build()
        } else {
            ServerCapabilities::builder()
                .enable_tools()
                .enable_logging()
                .build()
        };
        let mut info = InitializeResult::new(caps);
        info.server_info = Implementation::new("boxmaker", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(format!(
            "boxmaker runs these tools in a sandbox on the user's machine, under grants the \
             user wrote. Every result is labelled with a data class; once this session has read \
             private data, tools that could send it out are refused. A denial says why: do not \
             retry a denied call. Some calls wait for a person's approval. Session: {}",
            self.inner.session
        ));
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.tell_notes(&context).await;
        Ok(ListToolsResult::with_all_items(
            self.tools().into_iter().map(|l| l.tool).collect(),
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let (resources, meta) = self
            .listed(
                "resources/list",
                "resources",
                &context,
                |routes, r: &Resource, server| {
                    routes.resource(&r.uri, server);
                },
            )
            .await;
        let mut result = ListResourcesResult::with_all_items(resources);
        result.meta = Some(meta);
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let (templates, meta) = self
            .listed(
                "resources/templates/list",
                "resourceTemplates",
                &context,
                |routes, t: &ResourceTemplate, server| routes.template(&t.uri_template, server),
            )
            .await;
        let mut result = ListResourceTemplatesResult::with_all_items(templates);
        result.meta = Some(meta);
        Ok(result)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let (prompts, meta) = self
            .listed(
                "prompts/list",
                "prompts",
                &context,
                |routes, p: &Prompt, server| {
                    routes.prompt(&p.name, server);
                },
            )
            .await;
        let mut result = ListPromptsResult::with_all_items(prompts);
        result.meta = Some(meta);
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        let server = self.route(crate::routes::Kind::Resource, &uri)?;
        let args = json!({"method": "resources/read", "uri": uri});
        let (value, meta) = self.ask_server(&server, args, &context).await?;
        let mut result: ReadResourceResult = serde_json::from_value(value).map_err(|e| {
            McpError::internal_error(
                format!("{server}: the server's answer is not a resource: {e}"),
                None,
            )
        })?;
        result.meta = Some(meta);
        Ok(result.into())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let server = self.route(crate::routes::Kind::Prompt, &request.name)?;
        let mut args = json!({"method": "prompts/get", "name": request.name});
        if let Some(a) = request.arguments {
            args["arguments"] = serde_json::Value::Object(a);
        }
        let (value, meta) = self.ask_server(&server, args, &context).await?;
        let mut result: GetPromptResult = serde_json::from_value(value).map_err(|e| {
            McpError::internal_error(
                format!("{server}: the server's answer is not a prompt: {e}"),
                None,
            )
        })?;
        result.meta = Some(meta);
        Ok(result.into())
    }

    // `get_info` declares the logging capability, so `logging/setLevel` must be answered
    // (rmcp's default is -32601, which makes the MCP inspector's CLI give up). The front
    // sends only approval notices, at `warning`, whatever level is asked for.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        *self
            .inner
            .level
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(request.level);
        Ok(())
    }

    // rmcp reads a request for a standard method whose params do not fit that method's type
    // (e.g. `tools/call` with `"arguments": [1]`) as a custom request, and its default answer
    // is -32601 "method not found". The method exists; its params are wrong: -32602, as
    // JSON-RPC and MCP's tools page name it. Nothing reaches the gate either way.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let method = request.method;
        if crate::stdio::is_standard_method(&method) {
            Err(McpError::invalid_params(
                format!("Invalid params for {method}"),
                None,
            ))
        } else {
            Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
                None,
            ))
        }
    }

    // Logging notifications are deprecated by the newest MCP revision (SEP-2577), but docs/spec.md §5
    // names them and the clients people use today show them; progress alone reaches only
    // clients that sent a progress token.
    #[allow(deprecated)]
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.tell_notes(&context).await;
        let name = request.name.to_string();
        // One vocabulary (docs/spec.md, "Unknown and denied tools"): a name boxmaker has no
        // tool for is unknown; a tool it has goes to the gate, which decides — a tool the
        // grants deny is not listed, and calling it anyway is `denied`, as `boxmaker call`
        // says too. Only the name is checked here; schemas are built for tools/list alone.
        if !crate::tools::is_known_name(&self.inner.config, &self.inner.catalog, &name) {
            return Err(McpError::invalid_params(
                format!("unknown tool: {name} (see tools/list)"),
                None,
            ));
        }
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        // A downstream call that its own schema refuses can never run: say so now, before
        // any person is asked to approve it (the gate does the same for builtin tools).
        if let Some(def) = self.inner.catalog.get(&name).and_then(|e| e.shown.as_ref())
            && let Err(why) = catalog::schema::check(&def.input_schema, &arguments)
        {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "failed: {name}: bad arguments: {why} (nothing ran; see the tool's input schema)"
            ))])
            .with_meta(Some(nothing_ran()))
            .into());
        }
        let arguments = serde_json::to_string(&arguments)
            .map_err(|e| McpError::invalid_params(format!("arguments: {e}"), None))?;
        if arguments.len() > MAX_ARGUMENTS {
            return Err(McpError::invalid_params(
                format!(
                    "the arguments are {} bytes; boxmaker takes at most {MAX_ARGUMENTS}",
                    arguments.len()
                ),
                None,
            ));
        }
        // A 2026-07-28 retry of a call that waited for a person (docs/spec.md §5,
        // "Approving in a 2026-07-28 client"): the state names the held call; nothing new
        // goes to the gate.
        if let Some(state) = request.request_state.as_deref() {
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|r| r.get(crate::held::INPUT_KEY))
                .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
            return Ok(self
                .retry(&name, &arguments, state, answer.as_ref(), &context)
                .await?
                .into());
        }
        let asks =
            modern(&context) && self.inner.decide.get().is_some() && answers_in_request(&context);
        let (resp, step) = match self
            .through_gate_asking(&name, arguments, &context, asks)
            .await?
        {
            Through::Final(resp, step) => (resp, step),
            Through::Asked(result) => return Ok(CallToolResponse::InputRequired(result)),
        };
        Ok(self.finish_call(&name, resp, step, &context).await.into())
    }
}

/// Whether `context` is a request of MCP 2026-07-28 or later: its `_meta` names the
/// revision (a legacy session's request falls back to its handshake's).
pub(crate) fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// Whether the client of `context` said, in this request, that it shows form elicitations
/// (a 2026-07-28 request carries its capabilities in `_meta`).
fn answers_in_request(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// Which log messages a request may be sent (docs/spec.md §5, "Logging"): on a legacy
/// session, boxmaker's own notices always and a server's from the level `logging/setLevel`
/// asked; on a 2026-07-28 request, only what the request opted in to with
/// `_meta["io.modelcontextprotocol/logLevel"]`, at or above that level, and none without it.
#[allow(deprecated)]
#[derive(Debug, Clone, Copy)]
pub(crate) enum Logs {
    Legacy(Option<LoggingLevel>),
    Modern(Option<LoggingLevel>),
}

#[allow(deprecated)]
impl Logs {
    /// Whether a message at `level` may be sent.
    pub(crate) fn allows(self, level: LoggingLevel) -> bool {
        match self {
            Logs::Legacy(_) => true,
            Logs::Modern(None) => false,
            Logs::Modern(Some(min)) => crate::replay::rank(level) >= crate::replay::rank(min),
        }
    }

    /// What a replay of a server's log messages is given: whether any may go, and from
    /// which level.
    fn replay(self) -> (bool, Option<LoggingLevel>) {
        match self {
            Logs::Legacy(level) => (true, level),
            Logs::Modern(level) => (level.is_some(), level),
        }
    }
}

/// How a call through the gate ended on its request.
pub(crate) enum Through {
    /// The gate's final answer, and how many progress notifications were sent.
    Final(ToolResponse, f64),
    /// It waits for a person, who is asked by the client: the request is answered
    /// `input_required`, and the gate keeps the call for the retry ([`crate::held`]).
    Asked(InputRequiredResult),
}

impl Front {
    /// Which log messages `context`'s request may be sent.
    #[allow(deprecated)]
    pub(crate) fn logs(&self, context: &RequestContext<RoleServer>) -> Logs {
        if modern(context) {
            Logs::Modern(context.meta.log_level())
        } else {
            Logs::Legacy(
                *self
                    .inner
                    .level
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            )
        }
    }

    /// The config's warnings, to a 2026-07-28 client: it has no `initialized` to hear them
    /// at, so the first of its requests that opts in to `warning` hears them, once.
    #[allow(deprecated)]
    pub(crate) async fn tell_notes(&self, context: &RequestContext<RoleServer>) {
        if !modern(context) || !self.logs(context).allows(LoggingLevel::Warning) {
            return;
        }
        let Some(notes) = self.inner.notes.get() else {
            return;
        };
        if self.inner.told.swap(true, Ordering::Relaxed) {
            return;
        }
        for note in notes.iter() {
            let _ = context
                .peer
                .notify_logging_message(
                    LoggingMessageNotificationParam::new(
                        LoggingLevel::Warning,
                        json!({"message": note}),
                    )
                    .with_logger("boxmaker"),
                )
                .await;
        }
    }

    /// The MCP result of a call's final answer, with the downstream server's notifications
    /// it carries sent just before it (docs/spec.md §5, "A server's notifications").
    #[allow(deprecated)]
    async fn finish_call(
        &self,
        name: &str,
        resp: ToolResponse,
        step: f64,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let label = match &resp {
            ToolResponse::Result {
                class, untrusted, ..
            } => Some((*class, *untrusted)),
            _ => None,
        };
        let (result, notes) = self.answer(name, resp);
        if let (Some((class, untrusted)), Some(entry), false) =
            (label, self.inner.catalog.get(name), notes.is_empty())
        {
            let (logs, level) = self.logs(context).replay();
            let replay = crate::replay::Replay {
                server: entry.server.clone(),
                class,
                untrusted,
                progress: context.meta.get_progress_token(),
                sent: step,
                logs,
                level,
            };
            for notice in replay.notices(&notes) {
                let _ = match notice {
                    crate::replay::Notice::Log(p) => context.peer.notify_logging_message(p).await,
                    crate::replay::Notice::Progress(p) => context.peer.notify_progress(p).await,
                };
            }
        }
        result
    }
}

impl Front {
    /// One call through the gate: `name` with `arguments` (JSON text), as this session; the
    /// approval notices sent while it waits (progress under the client's token, and a log
    /// message), and the elicitation when the client may approve. Returns the final answer
    /// and how many progress notifications were sent.
    pub(crate) async fn through_gate(
        &self,
        name: &str,
        arguments: String,
        context: &RequestContext<RoleServer>,
    ) -> Result<(ToolResponse, f64), McpError> {
        match self
            .through_gate_asking(name, arguments, context, false)
            .await?
        {
            Through::Final(resp, step) => Ok((resp, step)),
            // Not asked for: never made.
            Through::Asked(_) => Err(McpError::internal_error(
                "the call was answered input_required where it may not be",
                None,
            )),
        }
    }

    /// [`Self::through_gate`]; with `asks` (a 2026-07-28 request of a client that shows
    /// forms, and a config that lets a person approve there), a call that waits for a
    /// person ends its request `input_required` instead, and the gate keeps the call for
    /// the retry ([`crate::held`]). Where that cannot be done (no state key, the front
    /// holds [`crate::held::MAX_PARKED`] calls, the gate would not show it) the call waits
    /// on its request as for any client that cannot be asked.
    #[allow(deprecated)]
    pub(crate) async fn through_gate_asking(
        &self,
        name: &str,
        arguments: String,
        context: &RequestContext<RoleServer>,
        asks: bool,
    ) -> Result<Through, McpError> {
        let name = name.to_string();
        let req = ToolRequest {
            session: self.inner.session.clone(),
            call: CallId(self.inner.next_call.fetch_add(1, Ordering::Relaxed)),
            tool: name.clone(),
            arguments: arguments.clone(),
        };
        // Sending may find (or start) a gate, which blocks: not on the runtime's threads.
        // The connection is one the front kept from an earlier call where it can
        // (`gatecall::Pool`), and is kept again once this call has its final answer.
        // The client's trace context, where its request's `_meta` has a valid one, goes to
        // the gate with the call (docs/spec.md §8); anything else there is not passed on.
        let traceparent = context
            .meta
            .get("traceparent")
            .and_then(|v| v.as_str())
            .and_then(proto::telemetry::TraceParent::parse);
        let pool = self.inner.pool.clone();
        let stream =
            tokio::task::spawn_blocking(move || pool.send_traced(&req, traceparent.as_ref()))
                .await
                .map_err(|e| {
                    McpError::internal_error(format!("the call did not start: {e}"), None)
                })?
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let cancel = stream
            .try_clone()
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ToolResponse>();
        let pool = self.inner.pool.clone();
        let mut call = tokio::task::spawn_blocking(move || {
            let answer = gatecall::answer(&stream, &mut |p| {
                let _ = tx.send(p.clone());
            });
            if answer.is_ok() {
                pool.keep(stream);
            }
            answer
        });
        let progress = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let logs = self.logs(context);
        // A server-to-client request is forbidden on 2026-07-28: no elicitation there.
        let legacy = !modern(context);
        let mut asks = asks;
        let mut step = 0.0;
        // Dropped when the call has its final answer: an elicitation still open is withdrawn.
        let mut ended: Option<tokio::sync::oneshot::Sender<()>> = None;
        let resp = loop {
            let waiting = loop {
                tokio::select! {
                    done = &mut call => break Ok(done),
                    Some(p) = rx.recv() => {
                        if let ToolResponse::PendingApproval { approval, expires } = p {
                            if legacy && ended.is_none() {
                                ended = self.ask_in_client(&peer, &approval);
                            }
                            let (approve, refuse) =
                                crate::explain::approval_commands(&self.inner.config, &approval);
                            let text = format!(
                                "waiting for a person to approve {name} (approval {approval}, {}); \
                                 a person runs `{approve}` or `{refuse}`",
                                crate::when::expires(expires)
                            );
                            if let Some(token) = progress.clone() {
                                step += 1.0;
                                let mut param = ProgressNotificationParam::new(token, step);
                                param.message = Some(text.clone());
                                let _ = peer.notify_progress(param).await;
                            }
                            if logs.allows(LoggingLevel::Warning) {
                                let _ = peer
                                    .notify_logging_message(
                                        LoggingMessageNotificationParam::new(
                                            LoggingLevel::Warning,
                                            json!({"approval": approval, "expires": expires, "tool": name, "message": text}),
                                        )
                                        .with_logger("boxmaker"),
                                    )
                                    .await;
                            }
                            if asks {
                                break Err(approval);
                            }
                        }
                    }
                    () = context.ct.cancelled() => {
                        // Closing the connection makes the gate withdraw the approval.
                        let _ = cancel.shutdown(std::net::Shutdown::Both);
                        return Err(McpError::internal_error("the client cancelled the call", None));
                    }
                }
            };
            match waiting {
                Ok(done) => break done,
                Err(approval) => {
                    let parked = self
                        .park(&name, &arguments, &approval, call, &cancel, step)
                        .await;
                    match parked {
                        Ok(result) => return Ok(Through::Asked(result)),
                        // Not parked: it waits on this request, as for a client that
                        // cannot be asked.
                        Err(back) => {
                            call = back;
                            asks = false;
                        }
                    }
                }
            }
        };
        drop(ended);
        let resp = resp
            .map_err(|e| McpError::internal_error(format!("the call did not finish: {e}"), None))?
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(Through::Final(resp, step))
    }

    /// The key that seals this front's `requestState`s, made at first use.
    fn sealer(&self) -> Option<&crate::held::Sealer> {
        self.inner
            .sealer
            .get_or_init(|| crate::held::Sealer::new().ok())
            .as_ref()
    }

    /// Files a call that waits on `approval` for its retry, and makes the `input_required`
    /// result that asks the person in the client: the approval form (the same words as the
    /// elicitation, [`crate::approve::message`]) and the sealed state. Gives `call` back
    /// when it cannot be filed.
    async fn park(
        &self,
        name: &str,
        arguments: &str,
        approval: &str,
        call: CallTask,
        cancel: &std::os::unix::net::UnixStream,
        step: f64,
    ) -> Result<InputRequiredResult, CallTask> {
        let (Some(sealer), Some(decide), Ok(cancel)) = (
            self.sealer(),
            self.inner.decide.get().cloned(),
            cancel.try_clone(),
        ) else {
            return Err(call);
        };
        let shown = {
            let (session, id) = (self.inner.session.clone(), approval.to_string());
            tokio::task::spawn_blocking(move || crate::approve::show(&decide, &session, &id)).await
        };
        let shown = match shown {
            Ok(Ok(shown)) => shown,
            Ok(Err(e)) => {
                crate::note!("boxmaker mcp: {approval}: could not ask in the client: {e}");
                return Err(call);
            }
            Err(_) => return Err(call),
        };
        let Ok(schema) = crate::approve::schema() else {
            return Err(call);
        };
        let message = crate::approve::message(&shown.0, now());
        let expires = shown.0.expires;
        let state = sealer.seal(&crate::held::Bound {
            session: &self.inner.session,
            approval,
            tool: name,
            arguments,
            expires,
        });
        let (tx, rx) = tokio::sync::watch::channel(None);
        let parked = crate::held::Parked {
            tool: name.to_string(),
            arguments: arguments.to_string(),
            shown,
            answer: rx.clone(),
            cancel,
            step,
        };
        if self.inner.held.park(approval, parked).is_err() {
            return Err(call);
        }
        // The gate's final answer goes to the cell the retry waits on, whenever it comes.
        tokio::spawn(async move {
            let done = match call.await {
                Ok(Ok(resp)) => Ok(resp),
                Ok(Err(e)) => Err(format!("the call did not finish: {e}")),
                Err(e) => Err(format!("the call did not finish: {e}")),
            };
            let _ = tx.send(Some(done));
        });
        tokio::spawn(crate::held::Table::forget_when_done(
            crate::held::weak(&self.inner.held),
            approval.to_string(),
            rx,
        ));
        let mut requests = InputRequests::new();
        requests.insert(
            crate::held::INPUT_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(
                ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message,
                    requested_schema: schema,
                },
            )),
        );
        let mut meta = nothing_ran();
        if let Some(b) = meta.0.get_mut("boxmaker").and_then(|b| b.as_object_mut()) {
            b.insert("approval".into(), json!(approval));
            b.insert("expires".into(), json!(expires));
        }
        crate::note!("boxmaker mcp: {approval}: asked in the client (input_required)");
        Ok(InputRequiredResult::new(Some(requests), Some(state)).with_meta(meta))
    }

    /// A 2026-07-28 client's retry of a call answered `input_required`: `state` must be
    /// one this front sealed for this call in this conversation, and names the held call,
    /// which is taken once. The person's `answer` (if they chose) is passed to the gate;
    /// then the retry waits for the call's final answer, as any call does.
    async fn retry(
        &self,
        name: &str,
        arguments: &str,
        state: &str,
        answer: Option<&ElicitResult>,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let refused = |e: crate::held::StateError| McpError::invalid_params(e.to_string(), None);
        let sealer = self
            .sealer()
            .ok_or_else(|| refused(crate::held::StateError::Foreign))?;
        let (approval, expires) = sealer
            .open(state, &self.inner.session, name, arguments)
            .map_err(refused)?;
        let Some(mut parked) = self.inner.held.take(&approval) else {
            let when = crate::when::expires(expires);
            crate::note!("boxmaker mcp: {approval}: a retry found no held call");
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "failed: approval {approval} ({when}) was already answered by an earlier \
                 retry, or its call ended more than {} minutes ago: a requestState is used \
                 once, and nothing runs twice; call the tool again to ask anew",
                crate::held::GRACE.as_secs() / 60
            ))])
            .with_meta(Some(nothing_ran())));
        };
        if parked.tool != name || parked.arguments != arguments {
            // The state binds the call; this cannot differ. Refuse rather than guess.
            let _ = self.inner.held.park(&approval, parked);
            return Err(refused(crate::held::StateError::Foreign));
        }
        match answer.and_then(crate::approve::answer_of) {
            Some(choice) => {
                let (decide, session) =
                    (self.inner.decide.get().cloned(), self.inner.session.clone());
                let shown = parked.shown.clone();
                let decided = tokio::task::spawn_blocking(move || {
                    decide.map(|d| crate::approve::decide(&d, &session, &shown, choice))
                })
                .await;
                match decided {
                    Ok(Some(Ok(_))) => crate::note!(
                        "boxmaker mcp: {approval}: the person answered {choice:?} in the client"
                    ),
                    // Decided on the page or with `boxmaker approve` first, or expired: the
                    // call's answer says which.
                    Ok(Some(Err(e))) => {
                        crate::note!(
                            "boxmaker mcp: {approval}: the client's answer was not taken: {e}"
                        )
                    }
                    _ => {}
                }
            }
            None => crate::note!(
                "boxmaker mcp: {approval}: no answer in the client; the call waits for \
                 `boxmaker approve` or the page"
            ),
        }
        let resp = tokio::select! {
            done = crate::held::final_answer(&mut parked.answer) => {
                done.map_err(|e| McpError::internal_error(e, None))?
            }
            () = context.ct.cancelled() => {
                // As for any call: a client that cancels withdraws what still waits.
                let _ = parked.cancel.shutdown(std::net::Shutdown::Both);
                return Err(McpError::internal_error("the client cancelled the call", None));
            }
        };
        Ok(self.finish_call(name, resp, parked.step, context).await)
    }
}

/// The task that waits for one call's final answer from the gate.
type CallTask = tokio::task::JoinHandle<Result<ToolResponse, gatecall::GateCallError>>;

impl Front {
    /// Starts asking the person in the client about `approval`, when this front may and the
    /// client can; returns what ends the question early (drop it when the call ends).
    fn ask_in_client(
        &self,
        peer: &rmcp::Peer<RoleServer>,
        approval: &str,
    ) -> Option<tokio::sync::oneshot::Sender<()>> {
        let decide = self.inner.decide.get()?.clone();
        if !crate::approve::client_can_ask(peer) {
            return None;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (peer, session, approval) = (
            peer.clone(),
            self.inner.session.clone(),
            approval.to_string(),
        );
        tokio::spawn(async move {
            let asked =
                crate::approve::ask_in_client(peer, decide, session, approval.clone(), rx).await;
            match asked {
                Ok(crate::approve::Asked::Decided(answer)) => {
                    eprintln!(
                        "boxmaker mcp: {approval}: the person answered {answer:?} in the client"
                    );
                }
                Ok(crate::approve::Asked::NoAnswer(why)) => {
                    eprintln!("boxmaker mcp: {approval}: no answer in the client ({why})");
                }
                Err(e) => eprintln!("boxmaker mcp: {approval}: could not ask in the client: {e}"),
            }
        });
        Some(tx)
    }
}

#[cfg(test)]
mod downstream_tests {
    use super::*;

    #[test]
    fn downstream_blocks_pass_through_and_odd_ones_become_text() {
        let content = r#"{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"weird","x":1}],"structuredContent":{"a":1}}"#;
        let (blocks, structured, _) = downstream_blocks(content);
        assert_eq!(blocks.len(), 3);
        let v: Vec<serde_json::Value> = blocks
            .iter()
            .map(|b| serde_json::to_value(b).unwrap())
            .collect();
        assert_eq!(v[0]["text"], "hi");
        assert_eq!(v[1]["type"], "image");
        assert_eq!(v[1]["mimeType"], "image/png");
        assert_eq!(v[2]["type"], "text");
        assert!(v[2]["text"].as_str().unwrap().contains("weird"));
        assert_eq!(structured, Some(json!({"a": 1})));
    }

    #[test]
    fn content_that_is_not_the_runner_form_is_kept_as_text() {
        let (blocks, structured, _) = downstream_blocks("plain words");
        assert_eq!(structured, None);
        assert_eq!(
            serde_json::to_value(&blocks[0]).unwrap()["text"],
            "plain words"
        );
    }
}
