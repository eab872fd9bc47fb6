//! Which server a client's resource or prompt request goes to (docs/spec.md §5, "Resources
//! and prompts").
//!
//! A request for a server's resources or prompts is a call through the gate to the server's
//! own `[[tool]]` name (the runner asks the server). Lists go to every server the grants
//! could let this session ask; a `resources/read` or `prompts/get` goes to the one server
//! that listed that URI (or a template it falls under) or that prompt name to this session,
//! or, with a single such server, to it. Never to more than one: a URI is an argument, and
//! what is sent to a server leaves through it.

use proto::{DataClass, ToolResponse};
use rmcp::model::MetaObject;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::json;

use crate::explain::denial;
use crate::routes::{Kind, Routes};
use crate::server::{Front, label_meta, nothing_ran, now};

impl Front {
    /// The servers this session's grants could let it ask for resources and prompts (a
    /// grant naming the server's own `[[tool]]` name), in config order.
    pub(crate) fn servers(&self) -> Vec<String> {
        self.config()
            .tools
            .iter()
            .filter(|t| t.kind.is_server())
            .filter(|t| crate::tools::granted(self.config(), self.session(), &t.name, now()))
            .map(|t| t.name.clone())
            .collect()
    }

    /// The one server a resource URI or a prompt name goes to ([`Routes`]).
    pub(crate) fn route(&self, kind: Kind, key: &str) -> Result<String, McpError> {
        let servers = self.servers();
        self.routes()
            .route(kind, key, &servers)
            .ok_or_else(|| {
                McpError::invalid_params(
                    format!(
                        "no server of this session's is known to offer {key:?} (list them first;                          a request goes only to the server that listed it)"
                    ),
                    None,
                )
            })
    }

    /// `args` (a method and its params) through the gate to `server`: the server's answer
    /// as JSON and its label as `_meta`, or the denial or failure as an error that carries
    /// the label in its data.
    pub(crate) async fn ask_server(
        &self,
        server: &str,
        args: serde_json::Value,
        context: &RequestContext<RoleServer>,
    ) -> Result<(serde_json::Value, MetaObject), McpError> {
        let (resp, _) = self.through_gate(server, args.to_string(), context).await?;
        match resp {
            ToolResponse::Result {
                content,
                class,
                untrusted,
                truncated,
            } => {
                self.saw(class, untrusted);
                let value = serde_json::from_str(&content).map_err(|e| {
                    McpError::internal_error(
                        format!("{server}: an answer that is not JSON: {e}"),
                        None,
                    )
                })?;
                Ok((value, label_meta(class, untrusted, truncated)))
            }
            ToolResponse::Failed { message } => {
                let floor = self.config().floor(server);
                self.saw(floor.class, floor.untrusted);
                Err(McpError::internal_error(
                    format!("failed: {message}"),
                    Some(serde_json::Value::Object(
                        label_meta(floor.class, floor.untrusted, false).0,
                    )),
                ))
            }
            ToolResponse::Denied { reason } => {
                let seen = self.seen();
                Err(McpError::invalid_request(
                    denial(self.config(), self.session(), server, reason, seen, now()),
                    Some(serde_json::Value::Object(nothing_ran().0)),
                ))
            }
            ToolResponse::PendingApproval { .. } => Err(McpError::internal_error(
                "the gate ended the call while it was still pending",
                None,
            )),
        }
    }

    /// `method` (a list) through the gate to every server this session may ask: the items
    /// under `key` of each answer, with the server they came from, and the highest label
    /// of the answers. A server that is denied or fails adds nothing (said on stderr).
    pub(crate) async fn ask_servers(
        &self,
        method: &str,
        key: &str,
        context: &RequestContext<RoleServer>,
    ) -> (Vec<(String, serde_json::Value)>, MetaObject) {
        let mut items = Vec::new();
        let (mut class, mut untrusted) = (DataClass::Public, false);
        for server in self.servers() {
            match self
                .ask_server(&server, json!({"method": method}), context)
                .await
            {
                Ok((value, meta)) => {
                    if let Some(label) = meta.0.get("boxmaker") {
                        class = class.max(
                            serde_json::from_value(label["class"].clone())
                                .unwrap_or(DataClass::Secret),
                        );
                        untrusted |= label["untrusted"].as_bool().unwrap_or(true);
                    }
                    if let Some(serde_json::Value::Array(list)) = value.get(key) {
                        items.extend(list.iter().map(|v| (server.clone(), v.clone())));
                    }
                }
                Err(e) => crate::note!("boxmaker mcp: {method} of {server}: {}", e.message),
            }
        }
        (items, label_meta(class, untrusted, false))
    }

    /// [`Front::ask_servers`], each item read as a `T` (one that is not is left out) and
    /// recorded by `route` as offered by its server, so a later request for it goes there
    /// and nowhere else.
    pub(crate) async fn listed<T: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
        context: &RequestContext<RoleServer>,
        route: impl Fn(&mut Routes, &T, &str),
    ) -> (Vec<T>, MetaObject) {
        let (items, meta) = self.ask_servers(method, key, context).await;
        let mut routes = self.routes();
        let listed = items
            .into_iter()
            .filter_map(|(server, v)| {
                let item: T = serde_json::from_value(v).ok()?;
                route(&mut routes, &item, &server);
                Some(item)
            })
            .collect();
        (listed, meta)
    }
}
