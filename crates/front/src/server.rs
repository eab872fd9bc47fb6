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
    CustomResult, GetPromptRequestParams, GetPromptResponse, GetPromptResult, Implementation,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, LoggingLevel, LoggingMessageNotificationParam, MetaObject,
    PaginatedRequestParams, ProgressNotificationParam, Prompt, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceTemplate, ServerCapabilities,
    SetLevelRequestParams,
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
    routes: Mutex<crate::offers::Routes>,
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
                routes: Mutex::new(crate::offers::Routes::default()),
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
    pub(crate) fn routes(&self) -> std::sync::MutexGuard<'_, crate::offers::Routes> {
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
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
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
        let server = self.route(crate::offers::Kind::Resource, &uri)?;
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
        let server = self.route(crate::offers::Kind::Prompt, &request.name)?;
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
        let progress = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let (resp, step) = self.through_gate(&name, arguments, &context).await?;
        let label = match &resp {
            ToolResponse::Result {
                class, untrusted, ..
            } => Some((*class, *untrusted)),
            _ => None,
        };
        let (result, notes) = self.answer(&name, resp);
        // What the server said while the call ran, now labelled with its result, just
        // before it (docs/spec.md §5, "A server's notifications").
        if let (Some((class, untrusted)), Some(entry), false) =
            (label, self.inner.catalog.get(&name), notes.is_empty())
        {
            let replay = crate::replay::Replay {
                server: entry.server.clone(),
                class,
                untrusted,
                progress: progress.clone(),
                sent: step,
                level: *self
                    .inner
                    .level
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            };
            for notice in replay.notices(&notes) {
                let _ = match notice {
                    crate::replay::Notice::Log(p) => peer.notify_logging_message(p).await,
                    crate::replay::Notice::Progress(p) => peer.notify_progress(p).await,
                };
            }
        }
        Ok(result.into())
    }
}

impl Front {
    /// One call through the gate: `name` with `arguments` (JSON text), as this session; the
    /// approval notices sent while it waits (progress under the client's token, and a log
    /// message), and the elicitation when the client may approve. Returns the final answer
    /// and how many progress notifications were sent.
    #[allow(deprecated)]
    pub(crate) async fn through_gate(
        &self,
        name: &str,
        arguments: String,
        context: &RequestContext<RoleServer>,
    ) -> Result<(ToolResponse, f64), McpError> {
        let name = name.to_string();
        let req = ToolRequest {
            session: self.inner.session.clone(),
            call: CallId(self.inner.next_call.fetch_add(1, Ordering::Relaxed)),
            tool: name.clone(),
            arguments,
        };
        // Sending may find (or start) a gate, which blocks: not on the runtime's threads.
        // The connection is one the front kept from an earlier call where it can
        // (`gatecall::Pool`), and is kept again once this call has its final answer.
        let pool = self.inner.pool.clone();
        let stream = tokio::task::spawn_blocking(move || pool.send(&req))
            .await
            .map_err(|e| McpError::internal_error(format!("the call did not start: {e}"), None))?
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
        let mut step = 0.0;
        // Dropped when the call has its final answer: an elicitation still open is withdrawn.
        let mut ended: Option<tokio::sync::oneshot::Sender<()>> = None;
        let resp = loop {
            tokio::select! {
                done = &mut call => break done,
                Some(p) = rx.recv() => {
                    if let ToolResponse::PendingApproval { approval, expires } = p {
                        if ended.is_none() {
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
                }
                () = context.ct.cancelled() => {
                    // Closing the connection makes the gate withdraw the approval.
                    let _ = cancel.shutdown(std::net::Shutdown::Both);
                    return Err(McpError::internal_error("the client cancelled the call", None));
                }
            }
        };
        drop(ended);
        let resp = resp
            .map_err(|e| McpError::internal_error(format!("the call did not finish: {e}"), None))?
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok((resp, step))
    }
}

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
