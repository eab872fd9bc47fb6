//! The person's own words at the gate (docs/spec.md §3.10 "Intent").
//!
//! - **Taken** ([`Gate::intent`]) only from the operator's channel (`ControlOp::Intent`):
//!   the client's prompt hook or `boxmaker intent`, peers of the operator's uid in the
//!   gate's own namespaces (`serve::check_peer`). The agent socket carries tool requests
//!   alone, and no box reaches either socket, so neither a box, a downstream server nor a
//!   call through boxmaker can add a word. A prompt is read by [`policy::intent::read_prompt`]
//!   and kept per conversation (`store/intent.rs`), bounded, audited by its hash.
//! - **Asked** through the session's index ([`super::SessionIndex`]): a value a prompt
//!   names is [`policy::Seen::Intent`]; one an answer of a call that read a source a prompt
//!   names showed is [`policy::Seen::Endorsed`]. Both only ever add trust to a `from` test:
//!   no grant is widened, no taint lowered.
//! - **Endorsed** ([`Gate::endorse`]): after an answer is committed, when the call read a
//!   source ([`sources_of`]) that the session's prompts named, the values it showed — less
//!   those the call's own arguments carried and those the session passed in before (the
//!   echo guard of §3.7: a value written somewhere and read back is the session's choice,
//!   not the source's) — are recorded as that source's.

use policy::intent::{
    MAX_PROMPT_SOURCES, MAX_PROMPT_VALUES, Source, one_of_each, read_prompt, sources_in_argument,
};
use policy::values::{Ident, in_answer, in_arguments};
use proto::control::IntentVia;

use super::*;
use crate::audit::sha256_hex;
use crate::store::{IntentLimits, IntentPrompt};

/// The most prompts one conversation keeps.
pub const MAX_PROMPTS: u64 = 1_000;

/// The most sources one conversation's prompts name.
pub const MAX_SOURCES: u64 = 256;

impl Gate {
    /// One prompt of the person for `session` (`ControlOp::Intent`): read, kept, audited.
    /// A prompt too long, naming too much, or past the conversation's bounds adds nothing.
    pub(super) fn intent(
        &self,
        session: &SessionId,
        text: &str,
        via: IntentVia,
    ) -> Result<ControlAnswer, (ControlErrorCode, String)> {
        let now = self.now();
        let via_s = match via {
            IntentVia::Hook => "hook",
            IntentVia::Cli => "cli",
        };
        let record = |prompt: Option<u64>, values: u64, sources: u64, refused: Option<String>| {
            Event::Intent {
                session: session.clone(),
                via: via_s.to_owned(),
                text_sha256: sha256_hex(text.as_bytes()),
                bytes: text.len() as u64,
                prompt,
                values,
                sources,
                refused,
            }
        };
        let refuse = |why: String| {
            let _ = self.audit(now, record(None, 0, 0, Some(why.clone())));
            Err((ControlErrorCode::Conflict, why))
        };
        if text.len() > policy::intent::MAX_PROMPT_BYTES {
            return refuse(format!(
                "the prompt is {} bytes, over the {} one prompt may have: nothing of it was added",
                text.len(),
                policy::intent::MAX_PROMPT_BYTES
            ));
        }
        let read = read_prompt(text);
        if read.values.overflowed() || read.values.len() > MAX_PROMPT_VALUES {
            return refuse(format!(
                "the prompt names more than {MAX_PROMPT_VALUES} values: nothing of it was added"
            ));
        }
        if read.sources.len() > MAX_PROMPT_SOURCES {
            return refuse(format!(
                "the prompt names more than {MAX_PROMPT_SOURCES} sources: nothing of it was added"
            ));
        }
        let sources: Vec<String> = read.sources.iter().map(Source::key).collect();
        let limits = IntentLimits {
            prompts: MAX_PROMPTS,
            values: self.config.gate.max_provenance_values,
            sources: MAX_SOURCES,
        };
        let prompt = IntentPrompt {
            at: now,
            sha256: sha256_hex(text.as_bytes()),
            bytes: text.len() as u64,
            via: match via {
                IntentVia::Hook => store::IntentVia::Hook,
                IntentVia::Cli => store::IntentVia::Cli,
            },
        };
        let values = read.values.into_values();
        let added = lock(&self.store).add_intent(session, &prompt, &values, &sources, limits);
        match added {
            Ok(a) => {
                self.audit(now, record(Some(a.prompt), a.values, a.sources, None))
                    .map_err(|e| (ControlErrorCode::Internal, e.to_string()))?;
                Ok(ControlAnswer::Intent {
                    prompt: a.prompt,
                    values: a.values,
                    sources,
                })
            }
            Err(e @ StoreError::IntentFull { .. }) => refuse(e.to_string()),
            Err(e) => Err((ControlErrorCode::Internal, e.to_string())),
        }
    }

    /// After `req`'s answer is committed: when the call read a source the session's prompts
    /// named, the values the answer showed are that source's (see the module's
    /// documentation). Trust only: a failure here keeps nothing, and trusts less.
    pub(super) fn endorse(&self, req: &ToolRequest, args: &Arguments, content: &str) {
        let described = lock(&self.described).current(&self.config);
        let read = sources_of(&self.config, described.fetch_keys(&req.tool), req, args);
        if read.is_empty() {
            return;
        }
        let named = match lock(&self.store).intent_sources(&req.session) {
            Ok(n) if !n.is_empty() => n,
            _ => return,
        };
        let Some((source, prompt)) = named.iter().find_map(|(key, n)| {
            let s = Source::from_key(key)?;
            read.iter().any(|r| s.covers(r)).then(|| (key.clone(), *n))
        }) else {
            return;
        };
        let echoed = args.json().map(in_arguments).unwrap_or_default();
        // One of each (docs/spec.md §3.10): two accounts on the person's bill, and the
        // words do not say which. Counted before the echo guard.
        let own: Vec<String> = read
            .iter()
            .filter_map(|s| match s {
                Source::Host(h) => Some(h.clone()),
                Source::File { .. } => None,
            })
            .collect();
        let (alone, _two) = one_of_each(in_answer(content).into_values(), &own);
        let mut store = lock(&self.store);
        let values: Vec<Ident> = alone
            .into_iter()
            .filter(|v| !echoed.contains(&v.text))
            .filter(|v| {
                // Passed in by the session before this answer showed it: its own choice
                // coming back (docs/spec.md §3.7's echo guard). Unreadable: not kept.
                match store.provenance(&req.session, &v.text) {
                    Ok(row) => !row.is_some_and(|r| r.argued || r.seen == store::SeenAs::None),
                    Err(_) => false,
                }
            })
            .collect();
        if values.is_empty() {
            return;
        }
        let _ = store.record_sourced(
            &req.session,
            &values,
            &source,
            (&req.tool, req.call),
            prompt,
            self.config.gate.max_provenance_values,
        );
    }
}

/// The sources a call reads, as far as the gate can tell from the call itself:
/// - `read_file`: its file, only when the path lies under a read-only mount of the tool's
///   box that no writable mount shares (a file the session can write — `/work`, a writable
///   mount — may hold what the session wrote there, so it endorses nothing);
/// - any other builtin: nothing;
/// - a downstream tool: the host its top-level `url` or `uri` argument names, where its
///   discovered input schema declares that key (a fetch's),
///   and the page or file named by the argument a matching `[[label]]` rule's `source`
///   points at. Nothing else: a search whose query holds a link reads no page, so what it
///   answers is nobody's words but the strangers'. What a box reaches through the egress
///   proxy (`run`'s `curl`) is not a source yet.
pub fn sources_of(
    config: &Config,
    fetch_keys: &[String],
    req: &ToolRequest,
    args: &Arguments,
) -> Vec<Source> {
    let Some(v) = args.json() else {
        return Vec::new();
    };
    let tool = config.tool(&req.tool);
    match tool.map(|t| &t.kind) {
        Some(config::ToolKind::Builtin(config::Builtin::ReadFile)) => {
            let Some(path) = v.get("path").and_then(|p| p.as_str()) else {
                return Vec::new();
            };
            let Some(Source::File { path: read, .. }) = Source::of_read_path(path) else {
                return Vec::new();
            };
            let boxed = format!("/{read}");
            let mounts: Vec<&config::Mount> = config
                .mounts
                .iter()
                .filter(|m| {
                    tool.and_then(|t| t.mounts.as_ref())
                        .is_none_or(|names| m.name.as_ref().is_some_and(|n| names.contains(n)))
                })
                .collect();
            let under = |m: &config::Mount| std::path::Path::new(&boxed).starts_with(&m.at);
            let Some(m) = mounts.iter().find(|m| under(m)) else {
                return Vec::new();
            };
            let overlaps =
                |a: &std::path::Path, b: &std::path::Path| a.starts_with(b) || b.starts_with(a);
            let writable = m.write
                || config
                    .mounts
                    .iter()
                    .any(|w| w.write && overlaps(&w.host, &m.host));
            if writable {
                return Vec::new();
            }
            Source::of_read_path(&boxed).into_iter().collect()
        }
        Some(config::ToolKind::Builtin(_)) => Vec::new(),
        _ => {
            let mut out = Vec::new();
            // A fetch's own argument: a top-level `url` or `uri` its discovered schema
            // declares, by that exact key — an argument the tool does not take (a search
            // given `url` too, or `URL` beside `url`) says nothing of what it reads.
            if let Some(o) = v.as_object() {
                for (k, x) in o {
                    if fetch_keys.iter().any(|f| f == k)
                        && let Some(s) = x.as_str()
                    {
                        out.extend(
                            sources_in_argument(s)
                                .into_iter()
                                .filter(|s| matches!(s, Source::Host(_))),
                        );
                    }
                }
            }
            // What the config says names the place a call reads.
            for rule in &config.labels {
                let Some(p) = &rule.source else { continue };
                if !rule.matches(&req.tool, args) {
                    continue;
                }
                if let Some(s) = v.pointer(p).and_then(|x| x.as_str()) {
                    out.extend(sources_in_argument(s));
                }
            }
            out.truncate(MAX_READ_SOURCES);
            out
        }
    }
}

/// The most sources one call is taken to read.
const MAX_READ_SOURCES: usize = 16;
