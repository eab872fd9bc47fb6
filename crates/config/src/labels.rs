//! Label rules (docs/spec.md §3.4 "Label rules"): what the answers of a call are, by the
//! tool it calls and its arguments, so that a server's tools need not be one kind of data.
//!
//! ```toml
//! [[label]]
//! tool = "slack_read_inbox"              # a builtin or an exposed name, or a glob
//! class = "confidential"
//! reason = "direct messages are private"  # shown by `check --explain` and in the audit
//!
//! [[label]]
//! tool = "slack_read_channel_messages"
//! when = [{ pointer = "/channel", in = ["general"] }]   # a grant's conditions
//! class = "internal"
//! untrusted = true
//! ```
//!
//! [`Config::answer_label`] is the one place the label of a call's answers comes from: the
//! tool's own floor ([`Config::floor`]: its class, raised to its reach when it runs code
//! boxmaker does not control, and its `untrusted`) raised by **every** rule that matches the
//! call — the highest class, `untrusted` if any says so. A rule only ever raises, so rules
//! do not depend on their order and no rule can make an answer lower than the tool's own
//! label. The runner labels its results from it (the file tools raise it further by the
//! files read), the gate its `failed` answers and a remembered approval's own class, and
//! `check --explain` prints it.
//!
//! A rule's conditions are a grant's `when` (docs/spec.md §3.3), tested on the arguments
//! the gate parsed as strict JSON. Where those are not strict JSON (a duplicated key, which
//! a server may read as its last value), no condition can be tested, and a rule that cannot
//! be tested **applies**: what a call cannot show is safe is labelled as if it were not.
//! `closed` is refused: it narrows what a grant lets through, and a label rule lets nothing
//! through.

use policy::{Arguments, Condition, Label, Pattern};
use proto::DataClass;

use crate::error::ConfigError;
use crate::model::{Config, Ctx};
use crate::raw;
use crate::typed::Lists;

/// One `[[label]]` rule, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelRule {
    /// The tools it labels: a builtin's `[[tool]]` name or a downstream tool's exposed
    /// name, or a glob over them.
    pub tool: Pattern,
    /// Argument conditions, all of which must hold (none: every call of the tool).
    pub when: Vec<Condition>,
    /// The class its calls' answers are at least.
    pub class: Option<DataClass>,
    /// Its calls' answers come from outside.
    pub untrusted: bool,
    /// Why, in the person's words.
    pub reason: Option<String>,
    /// The line of its `tool` in the file (1-based).
    pub line: usize,
}

/// The label of a call's answers, and which rules raised it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnswerLabel {
    /// The tool's own floor joined with every matching rule.
    pub label: Label,
    /// The rules that matched the call: indexes into [`Config::labels`], in file order.
    pub rules: Vec<usize>,
}

impl LabelRule {
    /// What it raises an answer to (`public` where it names no class).
    pub fn raises(&self) -> Label {
        Label::new(self.class.unwrap_or(DataClass::Public), self.untrusted)
    }

    /// Whether it labels a call to `tool` with `args`: its pattern matches the name, and
    /// every condition holds — or the arguments are not strict JSON, so no condition can be
    /// tested and the rule applies.
    pub fn matches(&self, tool: &str, args: &Arguments) -> bool {
        self.tool.matches(tool)
            && match args.json() {
                Some(v) => self.when.iter().all(|c| c.holds(v)),
                None => true,
            }
    }

    /// `label rule N (line L, tool "P", confidential, untrusted)`, for rule `index`.
    pub fn describe(&self, index: usize) -> String {
        let raises = match (self.class, self.untrusted) {
            (Some(c), true) => format!("{c}, untrusted"),
            (Some(c), false) => c.to_string(),
            (None, _) => "untrusted".to_owned(),
        };
        format!(
            "label rule {} (line {}, tool {:?}, {raises})",
            index + 1,
            self.line,
            self.tool.as_str()
        )
    }
}

impl Config {
    /// The label of every answer of a call to `tool` with `args` — a result, a `failed`, a
    /// timeout, a box that did not start (docs/spec.md §3.4): the tool's own floor
    /// ([`Config::floor`]) raised by every label rule that matches the call. The one place a
    /// call's label comes from; the file tools raise it further by the files they read.
    pub fn answer_label(&self, tool: &str, args: &Arguments) -> AnswerLabel {
        let mut label = self.floor(tool);
        let mut rules = Vec::new();
        for (i, r) in self.labels.iter().enumerate() {
            if r.matches(tool, args) {
                label.class = label.class.max(r.raises().class);
                label.untrusted |= r.untrusted;
                rules.push(i);
            }
        }
        AnswerLabel { label, rules }
    }

    /// [`Config::answer_label`] of a call whose arguments are the JSON text `arguments`, read
    /// as the gate reads them (strict JSON: [`Arguments::parse`]).
    pub fn answer_label_for(&self, tool: &str, arguments: &str) -> AnswerLabel {
        // Parsed only when a rule of this tool has conditions to test: with none, what the
        // arguments hold changes nothing (and `Unknown` is never tested).
        let tested = self
            .labels
            .iter()
            .any(|r| !r.when.is_empty() && r.tool.matches(tool));
        let args = if tested {
            Arguments::parse(arguments)
        } else {
            Arguments::Unknown
        };
        self.answer_label(tool, &args)
    }

    /// For `check --explain`: one line for every label rule whose tool pattern matches
    /// `tool`, saying whether it matches this call and what each condition found.
    pub fn explain_labels(&self, tool: &str, args: &Arguments) -> Vec<String> {
        self.labels
            .iter()
            .enumerate()
            .filter(|(_, r)| r.tool.matches(tool))
            .map(|(i, r)| {
                let mut line = r.describe(i);
                let (verdict, conditions) = match args.json() {
                    None => (
                        "matches: the arguments are not strict JSON, so its conditions cannot \
                         be tested and it applies"
                            .to_owned(),
                        Vec::new(),
                    ),
                    Some(v) => {
                        let lines: Vec<String> = r
                            .when
                            .iter()
                            .enumerate()
                            .map(|(n, c)| match c.check(v) {
                                Ok(()) => {
                                    format!("condition {} holds: {}", n + 1, c.describe_hold(v))
                                }
                                Err(f) => {
                                    format!("condition {} fails: {}", n + 1, c.describe(v, &f))
                                }
                            })
                            .collect();
                        let holds = r.matches(tool, args);
                        let verdict = if holds { "matches" } else { "does not match" };
                        (verdict.to_owned(), lines)
                    }
                };
                line.push_str(": ");
                line.push_str(&verdict);
                if let Some(why) = &r.reason {
                    line.push_str(&format!(" ({why:?})"));
                }
                if !conditions.is_empty() {
                    line.push_str(&format!(" [{}]", conditions.join("; ")));
                }
                line
            })
            .collect()
    }
}

impl Ctx<'_> {
    /// The `[[label]]` tables: each a tool pattern, a grant's conditions, and a `class`
    /// and/or `untrusted = true`.
    pub(crate) fn labels(
        &self,
        raw: Vec<raw::Label>,
        lists: &Lists,
    ) -> Result<Vec<LabelRule>, ConfigError> {
        let mut out = Vec::with_capacity(raw.len());
        for l in raw {
            let line = self.src.line_of(l.tool.span().start);
            if let Some(c) = &l.closed {
                return self.err(
                    c.span(),
                    format!(
                        "the label rule on line {line} has `closed`, which only a grant has: \
                         it narrows what a grant lets through, and a label rule lets nothing \
                         through (remove it; the rule's `when` says which calls it labels)"
                    ),
                );
            }
            let tool = self.tool_pattern(&l.tool, "label rule")?;
            let untrusted = l.untrusted.as_ref().is_some_and(|u| *u.get_ref());
            if l.class.is_none() && !untrusted {
                // At `untrusted = false` where the rule says it, else at its `tool`.
                let at = l
                    .untrusted
                    .as_ref()
                    .map_or(l.tool.span(), toml::Spanned::span);
                return self.err(
                    at,
                    format!(
                        "the label rule on line {line} raises nothing: give it a `class` \
                         (public, internal, confidential or secret), `untrusted = true`, or both"
                    ),
                );
            }
            let mut when = Vec::with_capacity(l.when.len());
            for w in l.when {
                when.push(self.condition(w, lists)?);
            }
            out.push(LabelRule {
                tool,
                when,
                class: l.class,
                untrusted,
                reason: l.reason.map(toml::Spanned::into_inner),
                line,
            });
        }
        Ok(out)
    }
}
