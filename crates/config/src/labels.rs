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
//!
//! A rule may also say which argument names the place its calls read (`source =
//! "/file_path"`): a page's host or a file's name there is a source the person can name, so
//! their words vouch for what the answer shows (docs/spec.md §3.10). Such a rule needs no
//! `class`. Only a call the rule matches reads a source, and only by that argument: a
//! search whose query mentions a page reads no page.
//!
//! A rule with `shows = "LIST"` labels **what an answer shows**, not the call: an answer of
//! a call the rule matches that shows one of the list's values (read as the values reader
//! reads an answer: an IBAN, an address, a phone number, a link, an account number) is
//! raised to the rule's label, whichever tool showed it. A label that follows a value, where
//! a label on a tool misses every other tool that shows it (a person's IBAN is in their
//! standing orders as well as in `get_iban`). [`Config::shown_label`] is its one place; the
//! gate asks it of every answer, after the call. Every entry of the list must hold such a
//! value (a name alone is no value the reader finds, and would label nothing).

use policy::{Arguments, Condition, Label, Pattern};
use proto::DataClass;

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
    /// The argument (a JSON pointer) that names the place its calls read, if it says.
    pub source: Option<String>,
    /// The values whose showing labels an answer (`shows = "LIST"`), if it says: then it
    /// labels an answer by what it shows, after the call, not the call before it runs.
    pub shows: Option<Shows>,
    /// The line of its `tool` in the file (1-based).
    pub line: usize,
}

/// The values a `shows` rule looks for in an answer: a `[lists]` list's entries, each read
/// as the values reader reads an answer (`policy::values::in_answer`), in canonical form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shows {
    /// The list's name.
    pub list: String,
    /// Every canonical value its entries hold.
    pub values: Vec<String>,
}

impl Shows {
    /// Whether an answer whose values are `shown` shows one of these.
    pub fn in_answer(&self, shown: &policy::values::Found) -> bool {
        self.values.iter().any(|v| shown.contains(v))
    }
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
        self.shows.is_none() && self.matches_call(tool, args)
    }

    /// [`LabelRule::matches`] without regard to `shows`: the call is one it looks at.
    pub fn matches_call(&self, tool: &str, args: &Arguments) -> bool {
        self.tool.matches(tool)
            && match args.json() {
                Some(v) => self.when.iter().all(|c| c.holds(v)),
                None => true,
            }
    }

    /// `label rule N (line L, tool "P", confidential, untrusted)`, for rule `index`.
    pub fn describe(&self, index: usize) -> String {
        let mut raises = match (self.class, self.untrusted) {
            (Some(c), true) => format!("{c}, untrusted"),
            (Some(c), false) => c.to_string(),
            (None, true) => "untrusted".to_owned(),
            (None, false) => String::new(),
        };
        if let Some(p) = &self.source {
            if !raises.is_empty() {
                raises.push_str(", ");
            }
            raises.push_str(&format!("reads the place {p} names"));
        }
        if let Some(s) = &self.shows {
            raises.push_str(&format!(", where an answer shows a value of {:?}", s.list));
        }
        format!(
            "label rule {} (line {}, tool {:?}, {raises})",
            index + 1,
            self.line,
            self.tool.as_str()
        )
    }
}
