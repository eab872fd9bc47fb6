//! Argument conditions (docs/spec.md §3.3 "Argument conditions"): tests on a call's
//! arguments that a grant carries, all of which must hold for the grant to match.
//!
//! A [`Condition`] is a [`Pointer`] into the arguments and a [`Test`] on what it finds:
//! - the pointer is an RFC 6901 JSON pointer (`/recipient`, `/argv/0`, `~0` for `~` and `~1`
//!   for `/` in a key), and a segment that is exactly `*` means **every element** of the
//!   array found there (`/recipients/*`): the test must hold for each, and holds for none
//!   (vacuously) when the array is empty;
//! - the tests are [`Test::Equals`] (a string, an integer or a boolean), [`Test::OneOf`] (an
//!   inline list or a named list of the config's `[lists]`), [`Test::Glob`] (one or more
//!   `*`/`?` globs over a whole string) and [`Test::Range`] (a JSON number `n` with
//!   `min <= n <= max`, integer bounds);
//! - the typed tests ([`crate::typed`]) read a string as what it names — [`Test::Email`]
//!   (exactly one e-mail address), [`Test::Url`] (one URL or bare host), [`Test::Links`]
//!   (free text and every link it carries) — and test what was read, never the raw text.
//!
//! A grant may also be **closed** ([`closed_holds`]): a key of the arguments that none of
//! its conditions' pointers names makes it fail to match.
//!
//! A pointer that finds nothing, or a value of the wrong type (a number where a string is
//! tested, an object where `*` wants an array), makes the condition **fail**, never an error:
//! a model chooses the arguments, and its mistakes must not reach further than "this grant
//! does not match". A condition marked `optional` also holds when its pointer finds nothing
//! or `null` (an argument the tool lets a caller leave out).
//!
//! [`Arguments::parse`] is the one strict parse of a call's arguments (duplicate keys are
//! refused: a person approving `{"to":"a","to":"b"}` must not see one while the tool gets
//! the other). Arguments that do not parse match no conditional grant.
//!
//! Evaluation walks the pointer without allocating; [`Condition::check`] returns, on
//! failure, where the walk stopped and what it found, for `explain`. A test that needs to
//! know more than the arguments and the config — [`Test::From`], where a value was first seen
//! (docs/spec.md §3.7, [`crate::provenance`]) — asks a [`Context`], which
//! [`Condition::check_in`] passes to every test.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::pattern::Pattern;
use crate::provenance::{FromTest, Seen};
use crate::typed::{EmailTest, LinksTest, UrlTest};
use crate::values::Ident;

/// What a test may consult beyond the call's arguments and the config: the session's
/// provenance index (docs/spec.md §3.7), for [`Test::From`]. The decision passes the
/// session's context down to every condition ([`Condition::check_in`]). [`NoContext`] knows
/// nothing.
pub trait Context: fmt::Debug {
    /// What the session's provenance index says of `value` (canonical, from
    /// [`crate::values`]). The default knows nothing ([`Seen::Unknown`]), so a `from` test
    /// fails: a decision that was not given an index never trusts a value.
    fn seen(&self, value: &Ident) -> Seen {
        let _ = value;
        Seen::Unknown
    }

    /// What the index says of `value` had the person's prompts named nothing (docs/spec.md
    /// §3.10): never [`Seen::Intent`] or [`Seen::Endorsed`]. The default is [`Context::seen`],
    /// for a context that holds no intent.
    fn seen_without_intent(&self, value: &Ident) -> Seen {
        self.seen(value)
    }
}

/// The context that knows nothing beyond the arguments (a `from` test fails in it): what
/// `decide_call` uses; the gate decides with `decide_call_in` and the session's index.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct NoContext;

impl Context for NoContext {}

/// The arguments of one call, as policy sees them.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// Parsed as strict JSON.
    Json(Value),
    /// The text did not parse as strict JSON: no conditional grant matches.
    Unparsed,
    /// No call's arguments at all: the question is whether *some* call could be let through
    /// (whether to offer a tool in `tools/list`). Every conditional `allow` and `ask` grant
    /// counts as matching and no conditional `deny` does. Never for deciding a call.
    Unknown,
}

impl Arguments {
    /// Parses a call's arguments as strict JSON: one JSON value, a duplicated key anywhere
    /// refused (then [`Arguments::Unparsed`]).
    pub fn parse(text: &str) -> Self {
        match parse_strict(text) {
            Ok(v) => Arguments::Json(v),
            Err(_) => Arguments::Unparsed,
        }
    }

    /// The parsed value, if there is one.
    pub fn json(&self) -> Option<&Value> {
        match self {
            Arguments::Json(v) => Some(v),
            Arguments::Unparsed | Arguments::Unknown => None,
        }
    }
}

/// Why a call's arguments are not strict JSON.
#[derive(Debug, thiserror::Error)]
#[error("the arguments are not strict JSON: {0}")]
pub struct ArgumentsError(#[from] serde_json::Error);

/// Parses `text` as one JSON value, refusing a duplicated key in any object.
pub fn parse_strict(text: &str) -> Result<Value, ArgumentsError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let StrictValue(v) = StrictValue::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// A `serde_json::Value` whose objects refuse duplicated keys.
struct StrictValue(Value);

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(StrictValue)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(StrictValue(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "the key {key:?} appears twice"
                )));
            }
            let StrictValue(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Why a pointer's text is not a [`Pointer`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PointerError {
    #[error("a JSON pointer is empty or starts with `/` (like \"/recipient\"), not {0:?}")]
    NoSlash(String),
    #[error("a JSON pointer escapes only `~0` (for ~) and `~1` (for /); {0:?} has another `~`")]
    BadEscape(String),
}

/// One step of a pointer.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Segment {
    /// An object key, or, on an array, an index (decimal, no leading zero).
    Key { key: String, index: Option<usize> },
    /// `*`: every element of an array.
    Every,
}

/// An RFC 6901 JSON pointer into the arguments, where a segment `*` means every element of
/// an array. `""` is the whole arguments value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pointer {
    text: String,
    segments: Vec<Segment>,
}

impl Pointer {
    /// Checks `text` and makes it a pointer.
    pub fn new(text: impl Into<String>) -> Result<Self, PointerError> {
        let text = text.into();
        if text.is_empty() {
            return Ok(Self {
                text,
                segments: Vec::new(),
            });
        }
        let Some(rest) = text.strip_prefix('/') else {
            return Err(PointerError::NoSlash(text));
        };
        let mut segments = Vec::new();
        for raw in rest.split('/') {
            if raw == "*" {
                segments.push(Segment::Every);
                continue;
            }
            let key = unescape(raw).ok_or_else(|| PointerError::BadEscape(text.clone()))?;
            let index = array_index(&key);
            segments.push(Segment::Key { key, index });
        }
        Ok(Self { text, segments })
    }

    /// The pointer as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it has a `*` segment.
    pub fn has_every(&self) -> bool {
        self.segments.contains(&Segment::Every)
    }

    /// The pointer as written, up to `depth` segments (where a walk stopped).
    fn prefix(&self, depth: usize) -> String {
        let mut out = String::new();
        for s in self.segments.iter().take(depth) {
            out.push('/');
            match s {
                Segment::Every => out.push('*'),
                Segment::Key { key, .. } => {
                    out.push_str(&key.replace('~', "~0").replace('/', "~1"))
                }
            }
        }
        if out.is_empty() {
            out.push_str("(the arguments)");
        }
        out
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.text.is_empty() {
            "\"\""
        } else {
            &self.text
        })
    }
}

fn unescape(raw: &str) -> Option<String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.next() {
                Some('0') => out.push('~'),
                Some('1') => out.push('/'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// RFC 6901 array index: `0`, or digits without a leading zero.
fn array_index(key: &str) -> Option<usize> {
    let ok = !key.is_empty()
        && key.bytes().all(|b| b.is_ascii_digit())
        && (key == "0" || !key.starts_with('0'));
    if ok { key.parse().ok() } else { None }
}

/// A value a condition compares with.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Str(String),
}

impl Scalar {
    /// Whether JSON value `v` is this scalar: same type, same value. An integer matches
    /// only a JSON integer (`5`, not `5.0`).
    fn is(&self, v: &Value) -> bool {
        match (self, v) {
            (Scalar::Str(s), Value::String(x)) => s == x,
            (Scalar::Bool(b), Value::Bool(x)) => b == x,
            (Scalar::Int(n), Value::Number(x)) => x.as_i64() == Some(*n),
            _ => false,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Int(n) => write!(f, "{n}"),
            Scalar::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// A set of scalars for [`Test::OneOf`], sorted for binary search, with the name of the
/// config's `[lists]` entry it came from (shared, not copied, by every grant naming it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct List {
    name: Option<String>,
    strs: Vec<String>,
    ints: Vec<i64>,
    bools: [bool; 2],
}

impl List {
    /// A list of `values`; `name` is the `[lists]` key it was given, `None` when inline.
    pub fn new(name: Option<String>, values: impl IntoIterator<Item = Scalar>) -> Self {
        let mut list = Self {
            name,
            strs: Vec::new(),
            ints: Vec::new(),
            bools: [false; 2],
        };
        for v in values {
            match v {
                Scalar::Str(s) => list.strs.push(s),
                Scalar::Int(n) => list.ints.push(n),
                Scalar::Bool(b) => list.bools[usize::from(b)] = true,
            }
        }
        list.strs.sort_unstable();
        list.strs.dedup();
        list.ints.sort_unstable();
        list.ints.dedup();
        list
    }

    /// The `[lists]` name, if it has one.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// How many distinct values it holds.
    pub fn len(&self) -> usize {
        self.strs.len() + self.ints.len() + self.bools.iter().filter(|b| **b).count()
    }

    /// Whether it holds no value (then nothing is one of it).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a string the list holds compares equal under `cmp` (which orders the value
    /// looked for against an element, consistently with the elements' byte order).
    pub(crate) fn contains_canonical(&self, cmp: impl Fn(&str) -> Ordering) -> bool {
        self.strs.binary_search_by(|x| cmp(x).reverse()).is_ok()
    }

    fn contains(&self, v: &Value) -> bool {
        match v {
            Value::String(s) => self
                .strs
                .binary_search_by(|x| x.as_str().cmp(s.as_str()))
                .is_ok(),
            Value::Number(n) => n
                .as_i64()
                .is_some_and(|n| self.ints.binary_search(&n).is_ok()),
            Value::Bool(b) => self.bools[usize::from(*b)],
            _ => false,
        }
    }
}

impl fmt::Display for List {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(name) = &self.name {
            return write!(f, "list {name}");
        }
        f.write_str("[")?;
        let mut first = true;
        let mut sep = |f: &mut fmt::Formatter<'_>| {
            let s = if first { "" } else { ", " };
            first = false;
            f.write_str(s)
        };
        for s in &self.strs {
            sep(f)?;
            write!(f, "{s:?}")?;
        }
        for n in &self.ints {
            sep(f)?;
            write!(f, "{n}")?;
        }
        for (b, on) in [false, true].iter().zip(self.bools) {
            if on {
                sep(f)?;
                write!(f, "{b}")?;
            }
        }
        f.write_str("]")
    }
}

/// What a condition asks of the value its pointer finds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Test {
    /// The same string, integer or boolean.
    Equals(Scalar),
    /// One of the list's values.
    OneOf(Arc<List>),
    /// A string that one of the globs matches as a whole (`*`, `?`; no escape).
    Glob(Vec<Pattern>),
    /// A JSON number `n` with `min <= n <= max`.
    Range { min: i64, max: i64 },
    /// A string that is exactly one e-mail address, allowed by the test.
    Email(EmailTest),
    /// A string that is one URL (or bare host), allowed by the test.
    Url(UrlTest),
    /// A string of free text whose links the test allows.
    Links(LinksTest),
    /// Every identifying value there came from where the test says (docs/spec.md §3.7).
    From(FromTest),
}

impl Test {
    /// Whether the test reads the string as a type (and `explain` says what it read).
    pub fn is_typed(&self) -> bool {
        matches!(
            self,
            Test::Email(_) | Test::Url(_) | Test::Links(_) | Test::From(_)
        )
    }

    /// Whether it asks the session's provenance index.
    pub fn is_from(&self) -> bool {
        matches!(self, Test::From(_))
    }

    fn holds(&self, v: &Value, cx: &dyn Context) -> bool {
        match self {
            Test::From(t) => t.holds(v, cx),
            Test::Email(t) => t.holds(v),
            Test::Url(t) => t.holds(v),
            Test::Links(t) => t.holds(v),
            Test::Equals(s) => s.is(v),
            Test::OneOf(list) => list.contains(v),
            Test::Glob(globs) => v
                .as_str()
                .is_some_and(|s| globs.iter().any(|g| g.matches(s))),
            Test::Range { min, max } => match v {
                Value::Number(n) => in_range(n, *min, *max),
                _ => false,
            },
        }
    }
}

fn in_range(n: &Number, min: i64, max: i64) -> bool {
    if let Some(i) = n.as_i64() {
        return min <= i && i <= max;
    }
    if n.as_u64().is_some() {
        // Above i64::MAX, so above any bound.
        return false;
    }
    // i64 bounds as f64 are exact enough: an f64 either side of a bound by less than its
    // rounding is not a value a person writes.
    n.as_f64()
        .is_some_and(|f| f.is_finite() && (min as f64) <= f && f <= (max as f64))
}

impl fmt::Display for Test {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Test::Equals(s) => write!(f, "equals {s}"),
            Test::OneOf(list) => write!(f, "in {list}"),
            Test::Glob(globs) => {
                f.write_str("matches ")?;
                for (i, g) in globs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(" or ")?;
                    }
                    write!(f, "{:?}", g.as_str())?;
                }
                Ok(())
            }
            Test::Range { min, max } => write!(f, "in range {min}..={max}"),
            Test::Email(t) => t.fmt(f),
            Test::Url(t) => t.fmt(f),
            Test::Links(t) => t.fmt(f),
            Test::From(t) => write!(f, "{t} (from = {:?})", t.as_str()),
        }
    }
}

/// One condition of a grant: the test holds on what the pointer finds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Condition {
    pub pointer: Pointer,
    pub test: Test,
    /// A pointer that finds nothing, or `null`, makes the condition hold.
    pub optional: bool,
}

/// Where and why a condition failed (for `explain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure<'v> {
    /// The pointer found nothing after this many segments.
    Missing { depth: usize },
    /// After this many segments it found a value it cannot step into (`*` on a non-array,
    /// a key on a string or number).
    CannotEnter { depth: usize, found: &'v Value },
    /// The test failed on this value (found at the end of the pointer).
    Test { found: &'v Value },
}

impl Condition {
    /// A condition that `test` holds on what `pointer` finds (not optional).
    pub fn new(pointer: Pointer, test: Test) -> Self {
        Self {
            pointer,
            test,
            optional: false,
        }
    }

    /// The same condition, holding also when the pointer finds nothing or `null`.
    #[must_use]
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    /// Does the condition hold on `args`?
    pub fn holds(&self, args: &Value) -> bool {
        self.check(args).is_ok()
    }

    /// Does the condition hold on `args`? On failure: where and why.
    pub fn check<'v>(&self, args: &'v Value) -> Result<(), Failure<'v>> {
        self.check_in(args, &NoContext)
    }

    /// Does the condition hold on `args`, for a session that `cx` knows about?
    pub fn check_in<'v>(&self, args: &'v Value, cx: &dyn Context) -> Result<(), Failure<'v>> {
        self.walk(args, 0, cx)
    }

    fn walk<'v>(&self, v: &'v Value, depth: usize, cx: &dyn Context) -> Result<(), Failure<'v>> {
        let Some(seg) = self.pointer.segments.get(depth) else {
            if self.optional && v.is_null() {
                return Ok(());
            }
            return if self.test.holds(v, cx) {
                Ok(())
            } else {
                Err(Failure::Test { found: v })
            };
        };
        match (seg, v) {
            (Segment::Every, Value::Array(items)) => {
                for item in items {
                    self.walk(item, depth + 1, cx)?;
                }
                Ok(())
            }
            (Segment::Key { key, .. }, Value::Object(map)) => match map.get(key) {
                Some(next) => self.walk(next, depth + 1, cx),
                None => self.missing(depth),
            },
            (Segment::Key { index, .. }, Value::Array(items)) => {
                match index.and_then(|i| items.get(i)) {
                    Some(next) => self.walk(next, depth + 1, cx),
                    None => self.missing(depth),
                }
            }
            (_, Value::Null) => self.missing(depth),
            (_, found) => Err(Failure::CannotEnter { depth, found }),
        }
    }

    fn missing<'v>(&self, depth: usize) -> Result<(), Failure<'v>> {
        if self.optional {
            Ok(())
        } else {
            Err(Failure::Missing { depth })
        }
    }

    /// A few words on what a holding condition found, for `explain`. A typed test says
    /// what it read at each value (`/to/0 is the address bob@acme.com (domain acme.com)`).
    pub fn describe_hold(&self, args: &Value) -> String {
        self.describe_hold_in(args, &NoContext)
    }

    /// [`Condition::describe_hold`] for a session that `cx` knows about.
    pub fn describe_hold_in(&self, args: &Value, cx: &dyn Context) -> String {
        if let Some(text) = self.describe_typed(args, None, cx) {
            return text;
        }
        if self.pointer.has_every() {
            return format!("every element at {} does", self.pointer);
        }
        let mut v = args;
        for seg in &self.pointer.segments {
            let next = match (seg, v) {
                (Segment::Key { key, .. }, Value::Object(map)) => map.get(key),
                (Segment::Key { index, .. }, Value::Array(items)) => {
                    index.and_then(|i| items.get(i))
                }
                _ => None,
            };
            match next {
                Some(n) => v = n,
                None => return format!("{} finds nothing, and it is optional", self.pointer),
            }
        }
        format!("{} is {} {}", self.pointer, kind_of(v), shown(v))
            .trim_end()
            .to_owned()
    }

    /// A sentence on `failure` (of this condition on `args`), naming where the walk stopped
    /// and (cut) what it found; a typed test says what it read there and why it failed
    /// (`/to/0 is not one e-mail address: it holds a list (a ',') ("evil@x.com, …")`).
    pub fn describe(&self, args: &Value, failure: &Failure<'_>) -> String {
        self.describe_in(args, failure, &NoContext)
    }

    /// [`Condition::describe`] for a session that `cx` knows about: a `from` test names
    /// where each value it refused first appeared.
    pub fn describe_in(&self, args: &Value, failure: &Failure<'_>, cx: &dyn Context) -> String {
        if let Failure::Test { found } = failure
            && let Some(text) = self.describe_typed(args, Some(found), cx)
        {
            return text;
        }
        match failure {
            Failure::Missing { depth } => format!(
                "{} finds nothing (at {})",
                self.pointer,
                self.pointer.prefix(depth + 1)
            ),
            Failure::CannotEnter { depth, found } => format!(
                "{} holds {} {}, which {} cannot step into",
                self.pointer.prefix(*depth),
                kind_of(found),
                shown(found),
                self.pointer.prefix(depth + 1)
            ),
            Failure::Test { found } => {
                format!("{} is {} {}", self.pointer, kind_of(found), shown(found))
            }
        }
    }
}

impl Condition {
    /// For a typed test: what it read at each value the pointer finds (at most three, and
    /// how many more), or, with `failed`, at the value it failed on.
    fn describe_typed(
        &self,
        args: &Value,
        failed: Option<&&Value>,
        cx: &dyn Context,
    ) -> Option<String> {
        let explain = |v: &Value| match &self.test {
            Test::Email(t) => Some(t.explain(v)),
            Test::Url(t) => Some(t.explain(v)),
            Test::Links(t) => Some(t.explain(v)),
            Test::From(t) => Some(t.explain(v, cx)),
            _ => None,
        };
        if !self.test.is_typed() {
            return None;
        }
        let mut found = Vec::new();
        let mut path = String::new();
        self.leaves(args, 0, &mut path, &mut |p, v| {
            found.push((p.to_owned(), v))
        });
        if let Some(bad) = failed {
            let (p, v) = found.iter().find(|(_, v)| std::ptr::eq(*v, *bad))?;
            let (_, words) = explain(v)?;
            return Some(joined(shown_path(p), &words));
        }
        if found.is_empty() {
            let required = Condition {
                optional: false,
                ..self.clone()
            };
            return Some(match required.check(args) {
                Err(Failure::Missing { depth }) => format!(
                    "{} finds nothing (at {}), and it is optional",
                    self.pointer,
                    self.pointer.prefix(depth + 1)
                ),
                _ => format!(
                    "{} finds no element, so it holds for every one",
                    self.pointer
                ),
            });
        }
        let mut parts: Vec<String> = Vec::new();
        for (p, v) in found.iter().take(3) {
            if v.is_null() {
                parts.push(format!("{} is null, and it is optional", shown_path(p)));
            } else if let Some((_, words)) = explain(v) {
                parts.push(joined(shown_path(p), &words));
            }
        }
        if found.len() > 3 {
            parts.push(format!("and {} more", found.len() - 3));
        }
        Some(parts.join("; "))
    }

    /// Calls `f` with the concrete path (`/to/0`) and value of everything the pointer
    /// finds, following every element at a `*`.
    pub(crate) fn leaves<'v>(
        &self,
        v: &'v Value,
        depth: usize,
        path: &mut String,
        f: &mut impl FnMut(&str, &'v Value),
    ) {
        let Some(seg) = self.pointer.segments.get(depth) else {
            f(path, v);
            return;
        };
        let mark = path.len();
        match (seg, v) {
            (Segment::Every, Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    path.push_str(&format!("/{i}"));
                    self.leaves(item, depth + 1, path, f);
                    path.truncate(mark);
                }
            }
            (Segment::Key { key, .. }, Value::Object(map)) => {
                if let Some(next) = map.get(key) {
                    path.push('/');
                    path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                    self.leaves(next, depth + 1, path, f);
                    path.truncate(mark);
                }
            }
            (Segment::Key { key, index }, Value::Array(items)) => {
                if let Some(next) = index.and_then(|i| items.get(i)) {
                    path.push('/');
                    path.push_str(key);
                    self.leaves(next, depth + 1, path, f);
                    path.truncate(mark);
                }
            }
            _ => {}
        }
    }
}

/// A path and the words after it (`/to/0 is the address …`; `/iban: from = …`).
fn joined(path: &str, words: &str) -> String {
    if words.starts_with(':') {
        format!("{path}{words}")
    } else {
        format!("{path} {words}")
    }
}

pub(crate) fn shown_path(p: &str) -> &str {
    if p.is_empty() { "(the arguments)" } else { p }
}

/// The most conditions a closed grant may have: which of them name a key is kept in one
/// 64-bit word. A closed grant with more never matches (the config refuses one).
pub const MAX_CLOSED_CONDITIONS: usize = 64;

/// Does every key of the arguments lie on some condition's pointer (docs/spec.md §3.3,
/// `closed = true`)? At every object a pointer steps through, each key must be the next
/// segment of some pointer that got there; at every array, each element must be named by a
/// `*` or its index. Below where a pointer ends, the test judges the value. Never
/// allocates.
pub fn closed_holds(conditions: &[Condition], args: &Value) -> bool {
    closed_walk(conditions, args, 0, all_bits(conditions.len()), &mut None)
}

/// The first key (or element) of `args` that none of `conditions` names, as a path
/// (`/bcc`, `/to/3`), for `explain`; `None` when every key is named.
pub fn unnamed_key(conditions: &[Condition], args: &Value) -> Option<String> {
    if conditions.len() > MAX_CLOSED_CONDITIONS {
        return Some(format!(
            "(a closed grant has at most {MAX_CLOSED_CONDITIONS} conditions)"
        ));
    }
    let mut trail = Some(Vec::new());
    if closed_walk(conditions, args, 0, all_bits(conditions.len()), &mut trail) {
        return None;
    }
    let steps = trail.unwrap_or_default();
    let mut out = String::new();
    for s in steps.iter().rev() {
        out.push('/');
        out.push_str(&s.replace('~', "~0").replace('/', "~1"));
    }
    Some(out)
}

fn all_bits(n: usize) -> Option<u64> {
    match n {
        0 => Some(0),
        1..=MAX_CLOSED_CONDITIONS => Some(u64::MAX >> (MAX_CLOSED_CONDITIONS - n)),
        _ => None,
    }
}

/// `active`: the conditions whose pointers lead to `v` (bit `i` for condition `i`); `None`
/// for too many conditions. On failure `trail` (when given) gets the path, innermost first.
fn closed_walk(
    conditions: &[Condition],
    v: &Value,
    depth: usize,
    active: Option<u64>,
    trail: &mut Option<Vec<String>>,
) -> bool {
    let Some(active) = active else {
        return false;
    };
    let on = |i: usize| active & (1u64 << i) != 0;
    let ends_here = conditions
        .iter()
        .enumerate()
        .any(|(i, c)| on(i) && c.pointer.segments.len() == depth);
    if ends_here {
        return true;
    }
    let next = |named: &dyn Fn(&Segment) -> bool| -> u64 {
        let mut bits = 0u64;
        for (i, c) in conditions.iter().enumerate() {
            if on(i) && c.pointer.segments.get(depth).is_some_and(named) {
                bits |= 1u64 << i;
            }
        }
        bits
    };
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let bits = next(&|s| matches!(s, Segment::Key { key, .. } if key == k));
                if bits == 0 || !closed_walk(conditions, child, depth + 1, Some(bits), trail) {
                    if let Some(t) = trail {
                        t.push(k.clone());
                    }
                    return false;
                }
            }
            true
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                let bits = next(&|s| match s {
                    Segment::Every => true,
                    Segment::Key { index, .. } => *index == Some(i),
                });
                if bits == 0 || !closed_walk(conditions, child, depth + 1, Some(bits), trail) {
                    if let Some(t) = trail {
                        t.push(i.to_string());
                    }
                    return false;
                }
            }
            true
        }
        _ => true,
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.pointer, self.test)?;
        if self.optional {
            f.write_str(" (optional)")?;
        }
        Ok(())
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "the boolean",
        Value::Number(_) => "the number",
        Value::String(_) => "the string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// At most 80 characters of a value a model chose, escaped by JSON's rules.
fn shown(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("of {} elements", a.len()),
        Value::Object(o) => format!("of {} keys", o.len()),
        Value::Null => String::new(),
        other => {
            let text = other.to_string();
            let cut: String = text.chars().take(80).collect();
            if cut.len() < text.len() {
                format!("{cut}…")
            } else {
                cut
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn c(pointer: &str, test: Test) -> Condition {
        Condition::new(Pointer::new(pointer).unwrap(), test)
    }
    fn s(v: &str) -> Scalar {
        Scalar::Str(v.into())
    }
    fn glob(p: &str) -> Test {
        Test::Glob(vec![Pattern::new(p).unwrap()])
    }

    #[test]
    fn test_parse_strict_refuses_duplicate_keys_at_any_depth() {
        assert!(parse_strict(r#"{"a":1}"#).is_ok());
        assert!(parse_strict(r#"{"a":1,"a":2}"#).is_err());
        assert!(parse_strict(r#"{"x":[{"a":1,"a":1}]}"#).is_err());
        assert!(parse_strict(r#"{"a":1} {"b":2}"#).is_err());
        assert!(parse_strict("{").is_err());
        assert_eq!(
            Arguments::parse(r#"{"to":"a","to":"b"}"#),
            Arguments::Unparsed
        );
        assert_eq!(
            Arguments::parse(r#" {"to" : "a"} "#),
            Arguments::Json(json!({"to": "a"}))
        );
    }

    #[test]
    fn test_pointer_escapes_indexes_and_errors() {
        let v = json!({"a/b": 1, "m~n": 2, "list": [10, 20], "0": "zero"});
        assert!(c("/a~1b", Test::Equals(Scalar::Int(1))).holds(&v));
        assert!(c("/m~0n", Test::Equals(Scalar::Int(2))).holds(&v));
        assert!(c("/list/1", Test::Equals(Scalar::Int(20))).holds(&v));
        assert!(!c("/list/01", Test::Equals(Scalar::Int(20))).holds(&v));
        assert!(!c("/list/2", Test::Range { min: 0, max: 99 }).holds(&v));
        assert!(c("/0", Test::Equals(s("zero"))).holds(&v));
        assert_eq!(Pointer::new("a"), Err(PointerError::NoSlash("a".into())));
        assert_eq!(
            Pointer::new("/a~2"),
            Err(PointerError::BadEscape("/a~2".into()))
        );
        assert!(c("", Test::Equals(s("x"))).holds(&json!("x")));
    }

    #[test]
    fn test_each_operator_holds_and_fails() {
        let v = json!({"s": "bob@acme.com", "n": 7, "f": 7.5, "b": true, "big": u64::MAX});
        assert!(c("/s", Test::Equals(s("bob@acme.com"))).holds(&v));
        assert!(!c("/s", Test::Equals(s("bob@acme.co"))).holds(&v));
        assert!(c("/b", Test::Equals(Scalar::Bool(true))).holds(&v));
        let list = Arc::new(List::new(None, [s("a"), s("bob@acme.com"), Scalar::Int(7)]));
        assert!(c("/s", Test::OneOf(list.clone())).holds(&v));
        assert!(c("/n", Test::OneOf(list.clone())).holds(&v));
        assert!(!c("/b", Test::OneOf(list)).holds(&v));
        assert!(c("/s", glob("*@acme.com")).holds(&v));
        assert!(!c("/s", glob("*@acme.co")).holds(&v));
        assert!(c("/n", Test::Range { min: 7, max: 7 }).holds(&v));
        assert!(!c("/n", Test::Range { min: 8, max: 9 }).holds(&v));
        assert!(c("/f", Test::Range { min: 7, max: 8 }).holds(&v));
        assert!(!c("/f", Test::Range { min: 0, max: 7 }).holds(&v));
        assert!(
            !c(
                "/big",
                Test::Range {
                    min: 0,
                    max: i64::MAX
                }
            )
            .holds(&v)
        );
    }

    #[test]
    fn test_wrong_type_and_missing_pointer_fail_never_error() {
        let v = json!({"n": 7, "s": "7", "o": {"k": 1}, "null": null});
        assert!(!c("/n", Test::Equals(s("7"))).holds(&v));
        assert!(!c("/s", Test::Equals(Scalar::Int(7))).holds(&v));
        assert!(!c("/s", Test::Range { min: 0, max: 9 }).holds(&v));
        assert!(!c("/n", glob("*")).holds(&v));
        assert!(!c("/o", Test::Equals(s("x"))).holds(&v));
        assert!(!c("/gone", glob("*")).holds(&v));
        assert!(!c("/s/deeper", glob("*")).holds(&v));
        assert!(!c("/null", glob("*")).holds(&v));
        assert_eq!(
            c("/gone", glob("*")).check(&v),
            Err(Failure::Missing { depth: 0 })
        );
        // Optional: nothing or null holds; a wrong type still fails.
        assert!(c("/gone", glob("x")).optional().holds(&v));
        assert!(c("/null", glob("x")).optional().holds(&v));
        assert!(!c("/n", glob("x")).optional().holds(&v));
    }

    #[test]
    fn test_every_element_of_an_array() {
        let ok = json!({"to": ["a@acme.com", "b@acme.com"]});
        let bad = json!({"to": ["a@acme.com", "eve@evil.com"]});
        let every = c("/to/*", glob("*@acme.com"));
        assert!(every.holds(&ok));
        assert!(!every.holds(&bad));
        assert!(every.holds(&json!({"to": []})), "vacuously true");
        assert!(!every.holds(&json!({"to": "a@acme.com"})), "not an array");
        assert!(!every.holds(&json!({"to": [1]})));
        let nested = c("/rows/*/id", Test::Range { min: 1, max: 5 });
        assert!(nested.holds(&json!({"rows": [{"id": 1}, {"id": 5}]})));
        assert!(!nested.holds(&json!({"rows": [{"id": 1}, {"other": 5}]})));
        assert!(!nested.holds(&json!({"rows": {"id": 1}})));
    }

    #[test]
    fn test_describe_names_where_and_what_cut() {
        let v = json!({"to": ["a@acme.com", "x".repeat(500)], "n": 3});
        let cond = c("/to/*", glob("*@acme.com"));
        let f = cond.check(&v).unwrap_err();
        let text = cond.describe(&v, &f);
        assert!(text.starts_with("/to/* is the string \"xxx"), "{text}");
        assert!(text.chars().count() < 120, "{text}");
        let cond = c("/n/k", glob("*"));
        let text = cond.describe(&v, &cond.check(&v).unwrap_err());
        assert_eq!(text, "/n holds the number 3, which /n/k cannot step into");
    }
}
