//! The gate's side of provenance (docs/spec.md §3.7): what it feeds a session's index, and
//! the [`policy::Context`] through which a decision asks it.
//!
//! - **Fed from every answer the gate labels** ([`answered`]): the values the answer shows
//!   ([`policy::values::in_answer`]), marked `trusted` or `untrusted` by the untrusted bit of
//!   its label, in the same commit as the taint it raises; a trusted answer never makes an
//!   untrusted value trusted (the store's rule), and never vouches for a value the reader
//!   only made by joining or decoding. **Echo guard:** a value the call's own arguments
//!   carried is left out — an answer that repeats what it was asked vouches for nothing,
//!   and never makes it untrusted either (the session chose it, not the answer).
//! - **Passed in** ([`argued`]): before a call runs, every value its arguments carry is
//!   marked as passed in by the session, in the same commit as its decision; from then on
//!   no answer vouches for it (a value written to a file and read back, posted and listed,
//!   is the session's own choice coming back, not a trusted answer's).
//! - **Asked** ([`SessionIndex`]): the config's lists and literals first (trusted), then
//!   the store; a value a server's tool definition names is untrusted unless an untrusted
//!   answer of the session says where it came from ([`super::described`]: no trusted answer
//!   lifts it, only the config); any other value the store does not hold is
//!   unseen (which a decision in an untrusted session reads as unproven:
//!   [`policy::InSession`]), or untrusted when the session's index is full, and a store
//!   that cannot be read counts as untrusted (fail closed).

use std::sync::{Arc, Mutex};

use config::Config;
use policy::values::{Found, Ident, in_arguments};
use policy::{Arguments, Context, Explanation, Known, Label, Seen, Shown};
use proto::control::Concern;
use proto::{SessionId, ToolRequest};

use crate::audit::{ProvenanceNote, sha256_hex};
use crate::store::{SeenAs, Sighting, Sightings, Store};

use super::described::Described;
use super::lock;

/// The most concerns one approval carries (a body full of links would list them all).
pub const MAX_CONCERNS: usize = 16;

/// One session's provenance index, as a decision asks it.
pub struct SessionIndex<'a> {
    store: &'a Mutex<Store>,
    session: &'a SessionId,
    known: &'a Known,
    described: Arc<Described>,
}

impl std::fmt::Debug for SessionIndex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionIndex")
            .field("session", self.session)
            .finish_non_exhaustive()
    }
}

impl<'a> SessionIndex<'a> {
    /// The index of `session` in `store`, with the values `known` names as trusted and
    /// those the servers' tool definitions name (`described`) as untrusted.
    pub fn new(
        store: &'a Mutex<Store>,
        session: &'a SessionId,
        known: &'a Known,
        described: Arc<Described>,
    ) -> Self {
        Self {
            store,
            session,
            known,
            described,
        }
    }
}

impl Context for SessionIndex<'_> {
    /// What the index says, unless the person's words vouch for a value it does not trust
    /// (docs/spec.md §3.10, `intent.rs`): then that.
    fn seen(&self, value: &Ident) -> Seen {
        let seen = self.seen_without_intent(value);
        if seen.is_trusted() {
            return seen;
        }
        self.intent(value).unwrap_or(seen)
    }

    fn seen_without_intent(&self, value: &Ident) -> Seen {
        if self.known.contains(&value.text) {
            return Seen::Config;
        }
        let store = lock(self.store);
        let at = |tool: String, call: proto::CallId| Shown { tool, call: call.0 };
        // What a server wrote about its tools, which every session may have been shown:
        // untrusted, unless an answer of the session vouched for the value.
        let described = || {
            self.described
                .tool(&value.text)
                .map(|tool| Seen::Described(tool.to_owned()))
        };
        match store.provenance_sized(self.session, &value.text) {
            Ok((Some(row), _)) => match row.seen {
                // A server's own words named it before any answer could (its definition
                // is shown in `tools/list`): untrusted sticks over a later trusted answer
                // too — that answer may be the named value come back (docs/spec.md §3.7).
                SeenAs::Trusted => described().unwrap_or(Seen::Trusted(at(row.tool, row.call))),
                SeenAs::Untrusted => Seen::Untrusted(at(row.tool, row.call)),
                SeenAs::None => described().unwrap_or(Seen::Unseen),
            },
            Ok((None, size)) => described().unwrap_or(if size.full {
                Seen::Unplaced
            } else {
                Seen::Unseen
            }),
            // An index that cannot be read places nothing: fail closed.
            Err(_) => Seen::Unplaced,
        }
    }
}

impl SessionIndex<'_> {
    /// What the person's prompts say of `value`: named by one, or shown by an answer of a
    /// source one named. A store that cannot say (an older database, an error) says nothing:
    /// intent only adds trust, so none is added.
    fn intent(&self, value: &Ident) -> Option<Seen> {
        let store = lock(self.store);
        let prompt = |n: u64, at| policy::intent::PromptRef { n, at };
        if let Ok(Some((n, at))) = store.intent_value(self.session, &value.text) {
            return Some(Seen::Intent(prompt(n, at)));
        }
        let s = store.intent_sourced(self.session, &value.text).ok()??;
        let source = policy::intent::Source::from_key(&s.source)
            .map_or_else(|| s.source.clone(), |x| x.describe());
        Some(Seen::Endorsed {
            source,
            shown: Shown {
                tool: s.tool,
                call: s.call.0,
            },
            prompt: prompt(s.prompt, s.at),
        })
    }
}

/// The values a call's arguments carry, marked as passed in by its session (before it
/// runs). `None` when they carry none.
pub fn argued(req: &ToolRequest, args: &Arguments) -> Option<Sightings> {
    let found = in_arguments(args.json()?);
    sightings(req, Sighting::Argued, found)
}

/// What an answer showed the session's index: its values (`shown`, as
/// [`policy::values::in_answer`] read its content) less those its own call's arguments carried (the echo
/// guard), trusted or untrusted by its label.
pub fn answered(
    req: &ToolRequest,
    args: &Arguments,
    shown: &Found,
    label: Label,
) -> Option<Sightings> {
    let echoed = args.json().map(in_arguments).unwrap_or_default();
    let overflow = shown.overflowed();
    // A value the reader only made — joined from neighbouring strings, decoded from a run —
    // never vouches: its pieces may be values the session passed in apart (two halves saved
    // in two calls and listed side by side), which no echo guard can see whole. In an
    // untrusted answer it counts as what it is, the answer's.
    let made = |v: &Ident| !label.untrusted && shown.made(&v.text);
    let values: Vec<Ident> = shown
        .values()
        .iter()
        .filter(|v| !echoed.contains(&v.text) && !made(v))
        .cloned()
        .collect();
    let sighting = if label.untrusted {
        Sighting::Untrusted
    } else {
        Sighting::Trusted
    };
    if values.is_empty() && !overflow {
        return None;
    }
    Some(Sightings {
        session: req.session.clone(),
        tool: req.tool.clone(),
        call: req.call,
        sighting,
        values,
        overflow,
    })
}

fn sightings(req: &ToolRequest, sighting: Sighting, found: Found) -> Option<Sightings> {
    if found.is_empty() && !found.overflowed() {
        return None;
    }
    let overflow = found.overflowed();
    Some(Sightings {
        session: req.session.clone(),
        tool: req.tool.clone(),
        call: req.call,
        sighting,
        values: found.into_values(),
        overflow,
    })
}

/// The concerns a person is shown, at most [`MAX_CONCERNS`].
pub fn concerns(e: &Explanation) -> Vec<Concern> {
    e.concerns.iter().take(MAX_CONCERNS).cloned().collect()
}

/// The audit notes of a decision provenance changed (empty when it changed nothing): each
/// refused value by its hash (and itself with `log_arguments`), and where it first
/// appeared.
///
/// A decision the person's words changed (docs/spec.md §3.10) names each value they vouched
/// for, `concern` `intent_value`, with the prompt that did.
pub fn notes(e: &Explanation, cx: &dyn Context, config: &Config) -> Vec<ProvenanceNote> {
    use proto::control::ConcernKind;
    let refused = e.concerns.iter().filter(|c| {
        e.by_provenance
            && !matches!(
                c.kind,
                ConcernKind::AboveClearance | ConcernKind::IntentValue
            )
    });
    let vouched = e.intent.iter().filter(|_| e.by_intent);
    refused
        .chain(vouched)
        .take(MAX_CONCERNS)
        .map(|c| {
            // Where it first appeared: an answer (its tool and call), or a tool's definition
            // (its tool, and no call).
            let (first_tool, first_call, prompt) = match cx.seen(&Ident {
                kind: policy::values::Kind::Id,
                text: c.value.clone(),
            }) {
                Seen::Trusted(s) | Seen::Untrusted(s) => (Some(s.tool), Some(s.call), None),
                Seen::Described(tool) => (Some(tool), None, None),
                Seen::Intent(p) => (None, None, Some(p.n)),
                Seen::Endorsed { shown, prompt, .. } => {
                    (Some(shown.tool), Some(shown.call), Some(prompt.n))
                }
                _ => (None, None, None),
            };
            ProvenanceNote {
                concern: c.kind,
                pointer: c.pointer.clone(),
                value_sha256: sha256_hex(c.value.as_bytes()),
                value: config.gate.log_arguments.then(|| c.value.clone()),
                first_tool,
                first_call,
                prompt,
            }
        })
        .collect()
}
