//! A server's resources and prompts, asked for through the gate (docs/spec.md §5, "Resources
//! and prompts").
//!
//! What a client asks of a server other than a tool call is a call too: to the server's own
//! `[[tool]]` name, with the request's params and its method as arguments
//! (`{"method": "resources/read", "uri": "…"}`). So it is granted (a grant names the server),
//! labelled (the server's class and `untrusted`, its label rules, what its box or connection
//! has reached), audited, redacted and indexed as any call is; what it sends the server (a URI,
//! a prompt's arguments) leaves through the server as a call's arguments do. It runs on the
//! session's instance of the server, started as for a tool call.
//!
//! The methods: `resources/list`, `resources/templates/list`, `prompts/list` (every page, at
//! most [`MAX_ITEMS`] items), `resources/read` and `prompts/get`. The answer is the server's
//! MCP result as JSON; one that does not fit a frame fails (it cannot be cut and stay one).

use std::sync::Arc;
use std::time::Duration;

use config::Tool;
use proto::{ToolRequest, ToolResponse};
use rmcp::model::{GetPromptRequestParams, PaginatedRequestParams, ReadResourceRequestParams};
use serde_json::{Map, Value, json};

use super::{content::MAX_ERROR_TEXT, set_reason};
use crate::run::{Runner, failed};
use crate::running::Admitted;

/// The methods a client may send a server through boxmaker, besides `tools/call`.
pub const METHODS: &[&str] = &[
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
];

/// The most items a list answer takes from one server, and the most pages asked for them.
pub const MAX_ITEMS: usize = 1024;
const MAX_PAGES: usize = 32;

/// The arguments of a call to a server's own name: its method, and the rest (the params).
fn split(arguments: &str) -> Result<(String, Map<String, Value>), String> {
    let Ok(Value::Object(mut params)) = serde_json::from_str::<Value>(arguments) else {
        return Err("the arguments must be one JSON object".into());
    };
    match params.remove("method") {
        Some(Value::String(m)) if METHODS.contains(&m.as_str()) => Ok((m, params)),
        Some(Value::String(m)) => Err(format!(
            "{m:?} is not a request boxmaker passes to a server (it passes {})",
            METHODS.join(", ")
        )),
        _ => Err("the arguments name no `method`".into()),
    }
}

impl Runner {
    /// A client's request to `tool`'s server other than a tool call (`req.tool` is the
    /// server's own name), in a session whose taint the gate committed as `taint`.
    pub(crate) fn server_request(
        &self,
        call: &Admitted,
        req: &ToolRequest,
        tool: &Tool,
        taint: config::Label,
    ) -> ToolResponse {
        let (method, params) = match split(&req.arguments) {
            Ok(p) => p,
            Err(why) => return failed(format!("{}: {why}", req.tool)),
        };
        let rt = match self.hub().runtime() {
            Ok(rt) => rt,
            Err(e) => return failed(e),
        };
        rt.block_on(self.ask_server(call, req, tool, &method, params, taint))
    }

    async fn ask_server(
        &self,
        call: &Admitted,
        req: &ToolRequest,
        tool: &Tool,
        method: &str,
        params: Map<String, Value>,
        taint: config::Label,
    ) -> ToolResponse {
        let timeout = Duration::from_secs(self.config().limits.timeout_seconds);
        // As for a tool call: counted in flight, and the request's label joins the box's.
        let (slot, instance, guard) = match self.acquire(call, req, tool, taint).await {
            Ok(got) => got,
            Err(answer) => return answer,
        };
        let peer = instance.service.peer().clone();
        let asked = async {
            let params = Value::Object(params);
            let bad = |e: serde_json::Error| {
                rmcp::ServiceError::McpError(rmcp::ErrorData::invalid_params(
                    format!("bad params for {method}: {e}"),
                    None,
                ))
            };
            let value = match method {
                "resources/read" => {
                    let p: ReadResourceRequestParams =
                        serde_json::from_value(params).map_err(bad)?;
                    serde_json::to_value(instance.service.read_resource(p).await?)
                }
                "prompts/get" => {
                    let p: GetPromptRequestParams = serde_json::from_value(params).map_err(bad)?;
                    serde_json::to_value(instance.service.get_prompt(p).await?)
                }
                list => {
                    let mut items = Vec::new();
                    let mut cursor = None;
                    let key = match list {
                        "resources/list" => "resources",
                        "resources/templates/list" => "resourceTemplates",
                        _ => "prompts",
                    };
                    for _ in 0..MAX_PAGES {
                        let page = Some(PaginatedRequestParams::default().with_cursor(cursor));
                        let (more, next) = match list {
                            "resources/list" => {
                                let r = peer.list_resources(page).await?;
                                (serde_json::to_value(r.resources), r.next_cursor)
                            }
                            "resources/templates/list" => {
                                let r = peer.list_resource_templates(page).await?;
                                (serde_json::to_value(r.resource_templates), r.next_cursor)
                            }
                            _ => {
                                let r = peer.list_prompts(page).await?;
                                (serde_json::to_value(r.prompts), r.next_cursor)
                            }
                        };
                        if let Ok(Value::Array(more)) = more {
                            items.extend(more);
                        }
                        if items.len() > MAX_ITEMS || next.is_none() {
                            break;
                        }
                        cursor = next;
                    }
                    items.truncate(MAX_ITEMS);
                    Ok(json!({ key: items }))
                }
            };
            Ok::<_, rmcp::ServiceError>(value.unwrap_or_default())
        };
        let outcome = tokio::time::timeout(timeout, asked).await;
        drop(guard);
        let value = match outcome {
            Ok(Ok(v)) => v,
            Ok(Err(rmcp::ServiceError::McpError(e))) => {
                return failed(format!(
                    "{}: the server refused {method}: {} (JSON-RPC error {})",
                    req.tool,
                    crate::run::prefix(&e.message, MAX_ERROR_TEXT),
                    e.code.0
                ));
            }
            Ok(Err(e)) => {
                return self
                    .stopped(&slot, &instance, req, format!("{method} failed: {e}"))
                    .await;
            }
            Err(_) => {
                return self
                    .stopped(
                        &slot,
                        &instance,
                        req,
                        format!("{method} timed out after {} s", timeout.as_secs()),
                    )
                    .await;
            }
        };
        let label = crate::label::call_label(self.foreign_label(req), instance.float.reached());
        let answer = ToolResponse::Result {
            content: value.to_string(),
            class: label.class,
            untrusted: label.untrusted,
            truncated: false,
        };
        let fits = serde_json::to_vec(&proto::Envelope::response(u64::MAX, answer.clone()))
            .is_ok_and(|v| v.len() <= proto::MAX_FRAME);
        if fits {
            answer
        } else {
            failed(format!(
                "{}: the server's answer to {method} is over the size limit of one frame",
                req.tool
            ))
        }
    }

    /// Stops `instance` (a broken connection, a request that timed out) and fails with why.
    async fn stopped(
        &self,
        slot: &super::Slot,
        instance: &Arc<super::Instance>,
        req: &ToolRequest,
        why: String,
    ) -> ToolResponse {
        let mut g = slot.lock().await;
        if g.as_ref().is_some_and(|i| Arc::ptr_eq(i, instance)) {
            *g = None;
        }
        drop(g);
        set_reason(&instance.reason, why.clone());
        let i = instance.clone();
        let why = tokio::task::spawn_blocking(move || {
            let why = i.why(&why);
            i.kill();
            why
        })
        .await
        .unwrap_or_else(|_| "the server failed".into());
        failed(format!(
            "{}: {why}; the server starts again on the next call",
            req.tool
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listed_methods_pass_and_the_params_are_the_rest() {
        let (m, p) = split(r#"{"method":"resources/read","uri":"test://x"}"#).unwrap();
        assert_eq!(m, "resources/read");
        assert_eq!(p.get("uri"), Some(&json!("test://x")));
        for bad in [
            r#"{"method":"tools/call","name":"x"}"#,
            r#"{"method":"sampling/createMessage"}"#,
            r#"{"uri":"test://x"}"#,
            r#"["resources/read"]"#,
            "not json",
        ] {
            assert!(split(bad).is_err(), "{bad}");
        }
    }
}
