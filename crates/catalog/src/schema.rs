//! A downstream tool's arguments checked against the input schema it declared, before the
//! call is sent on — so a call that the server would refuse is refused at once, in the
//! schema's own words, and no person is asked to approve a call that can never run.
//!
//! The schema comes from a server boxmaker does not trust, so this is deliberately a small
//! subset of JSON Schema: `type`, `properties`, `required`, `additionalProperties`, `items`,
//! `enum`, `const`, `minLength`/`maxLength`, `minimum`/`maximum` (and the exclusive forms),
//! `minItems`/`maxItems`, `allOf`/`anyOf`/`oneOf`. A keyword it does not know (`$ref`,
//! `pattern`, `format`, …) is passed over: the server remains the judge of what this does not
//! check, and a check may only refuse what the schema really refuses. Its work is bounded
//! ([`MAX_STEPS`], [`MAX_DEPTH`]): past the bound the arguments are passed on unchecked
//! rather than spend the front's time on a hostile schema.

use serde_json::{Map, Value};

/// The most schema nodes one check visits.
pub const MAX_STEPS: usize = 100_000;

/// The deepest nesting of schemas one check follows.
pub const MAX_DEPTH: usize = 64;

/// Checks `args` against `schema`. `Err` is one sentence: where (a JSON pointer into the
/// arguments) and what the schema wants there.
pub fn check(schema: &Value, args: &Value) -> Result<(), String> {
    let mut budget = Budget { steps: 0 };
    match visit(schema, args, "", 0, &mut budget) {
        Err(Why::Refused(why)) => Err(why),
        Ok(()) | Err(Why::OverBudget) => Ok(()),
    }
}

struct Budget {
    steps: usize,
}

enum Why {
    Refused(String),
    OverBudget,
}

fn refused<T>(at: &str, what: String) -> Result<T, Why> {
    let at = if at.is_empty() { "the arguments" } else { at };
    Err(Why::Refused(format!("{at}: {what}")))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn has_type(v: &Value, want: &str) -> bool {
    match want {
        "number" => v.is_number(),
        // JSON Schema: 1.0 is an integer.
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => type_name(v) == other,
    }
}

fn number(schema: &Map<String, Value>, key: &str) -> Option<f64> {
    schema.get(key).and_then(Value::as_f64)
}

fn count(schema: &Map<String, Value>, key: &str) -> Option<u64> {
    schema.get(key).and_then(Value::as_u64)
}

fn visit(schema: &Value, v: &Value, at: &str, depth: usize, b: &mut Budget) -> Result<(), Why> {
    b.steps += 1;
    if b.steps > MAX_STEPS || depth > MAX_DEPTH {
        return Err(Why::OverBudget);
    }
    let s = match schema {
        Value::Bool(false) => return refused(at, "the schema allows nothing here".into()),
        Value::Object(s) => s,
        // `true`, or not a schema at all: nothing to check.
        _ => return Ok(()),
    };
    match s.get("type") {
        Some(Value::String(t)) if !has_type(v, t) => {
            return refused(at, format!("expected {t}, got {}", type_name(v)));
        }
        Some(Value::Array(ts)) => {
            let names: Vec<&str> = ts.iter().filter_map(Value::as_str).collect();
            if !names.is_empty() && !names.iter().any(|t| has_type(v, t)) {
                return refused(
                    at,
                    format!("expected {}, got {}", names.join(" or "), type_name(v)),
                );
            }
        }
        _ => {}
    }
    if let Some(Value::Array(allowed)) = s.get("enum")
        && !allowed.contains(v)
    {
        let shown: Vec<String> = allowed.iter().take(10).map(Value::to_string).collect();
        return refused(at, format!("must be one of {}", shown.join(", ")));
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        return refused(at, format!("must be {c}"));
    }
    match v {
        Value::String(text) => {
            let len = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
            if let Some(min) = count(s, "minLength")
                && len < min
            {
                return refused(at, format!("must be at least {min} characters"));
            }
            if let Some(max) = count(s, "maxLength")
                && len > max
            {
                return refused(at, format!("must be at most {max} characters"));
            }
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(min) = number(s, "minimum")
                && x < min
            {
                return refused(at, format!("must be at least {min}"));
            }
            if let Some(max) = number(s, "maximum")
                && x > max
            {
                return refused(at, format!("must be at most {max}"));
            }
            if let Some(min) = number(s, "exclusiveMinimum")
                && x <= min
            {
                return refused(at, format!("must be more than {min}"));
            }
            if let Some(max) = number(s, "exclusiveMaximum")
                && x >= max
            {
                return refused(at, format!("must be less than {max}"));
            }
        }
        Value::Array(items) => {
            let n = u64::try_from(items.len()).unwrap_or(u64::MAX);
            if let Some(min) = count(s, "minItems")
                && n < min
            {
                return refused(at, format!("needs at least {min} items"));
            }
            if let Some(max) = count(s, "maxItems")
                && n > max
            {
                return refused(at, format!("takes at most {max} items"));
            }
            if let Some(item) = s.get("items").filter(|i| i.is_object() || i.is_boolean()) {
                for (i, x) in items.iter().enumerate() {
                    visit(item, x, &format!("{at}/{i}"), depth + 1, b)?;
                }
            }
        }
        Value::Object(fields) => object(s, fields, at, depth, b)?,
        Value::Null | Value::Bool(_) => {}
    }
    if let Some(Value::Array(all)) = s.get("allOf") {
        for sub in all {
            visit(sub, v, at, depth + 1, b)?;
        }
    }
    for (key, exactly_one) in [("anyOf", false), ("oneOf", true)] {
        let Some(Value::Array(subs)) = s.get(key) else {
            continue;
        };
        let mut held = 0;
        let mut first_why = None;
        for sub in subs {
            match visit(sub, v, at, depth + 1, b) {
                Ok(()) => held += 1,
                Err(Why::OverBudget) => return Err(Why::OverBudget),
                Err(Why::Refused(why)) => {
                    first_why.get_or_insert(why);
                }
            }
        }
        if held == 0 && !subs.is_empty() {
            let why = first_why.unwrap_or_default();
            return Err(Why::Refused(format!(
                "{why} (and no other alternative of {key} fits either)"
            )));
        }
        if exactly_one && held > 1 {
            return refused(
                at,
                format!("fits {held} alternatives of oneOf, not exactly one"),
            );
        }
    }
    Ok(())
}

fn object(
    s: &Map<String, Value>,
    fields: &Map<String, Value>,
    at: &str,
    depth: usize,
    b: &mut Budget,
) -> Result<(), Why> {
    let props = s.get("properties").and_then(Value::as_object);
    if let Some(Value::Array(required)) = s.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                return refused(at, format!("missing the required property `{name}`"));
            }
        }
    }
    for (name, value) in fields {
        let here = format!("{at}/{}", name.replace('~', "~0").replace('/', "~1"));
        match (
            props.and_then(|p| p.get(name)),
            s.get("additionalProperties"),
        ) {
            (Some(sub), _) => visit(sub, value, &here, depth + 1, b)?,
            (None, Some(Value::Bool(false))) => {
                // In name order, whatever order the schema's map keeps (serde_json's
                // `preserve_order` is a workspace-wide feature another crate may turn on).
                let mut known: Vec<&str> = props
                    .map(|p| p.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                known.sort_unstable();
                known.truncate(20);
                return refused(
                    at,
                    if known.is_empty() {
                        format!("unknown property `{name}` (the tool takes no properties)")
                    } else {
                        format!(
                            "unknown property `{name}` (the tool takes {})",
                            known.join(", ")
                        )
                    },
                );
            }
            (None, Some(extra @ Value::Object(_))) => visit(extra, value, &here, depth + 1, b)?,
            (None, _) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "argv": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "timeout": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["fast", "slow"]}
            },
            "required": ["argv"],
            "additionalProperties": false
        })
    }

    #[track_caller]
    fn refused_with(args: Value, needle: &str) {
        let e = check(&run_schema(), &args).unwrap_err();
        assert!(e.contains(needle), "{e:?} lacks {needle:?}");
    }

    #[test]
    fn arguments_that_fit_pass() {
        check(&run_schema(), &json!({"argv": ["ls"], "timeout": 3})).unwrap();
        check(&run_schema(), &json!({"argv": ["ls"], "timeout": 3.0})).unwrap();
        check(&json!({}), &json!({"anything": [1, {"x": null}]})).unwrap();
        check(&json!(true), &json!(5)).unwrap();
    }

    #[test]
    fn each_keyword_refuses_in_its_own_words() {
        refused_with(
            json!({"command": "ls"}),
            "missing the required property `argv`",
        );
        refused_with(
            json!({"argv": ["ls"], "command": "ls"}),
            "unknown property `command` (the tool takes argv, mode, timeout)",
        );
        refused_with(json!({"argv": "ls"}), "/argv: expected array, got string");
        refused_with(
            json!({"argv": [1]}),
            "/argv/0: expected string, got integer",
        );
        refused_with(json!({"argv": []}), "/argv: needs at least 1 items");
        refused_with(
            json!({"argv": ["a"], "timeout": 0}),
            "/timeout: must be at least 1",
        );
        refused_with(json!({"argv": ["a"], "timeout": 1.5}), "expected integer");
        refused_with(
            json!({"argv": ["a"], "mode": "x"}),
            "must be one of \"fast\", \"slow\"",
        );
        let alt = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        assert!(check(&alt, &json!(true)).unwrap_err().contains("anyOf"));
        check(&alt, &json!(3)).unwrap();
        let one = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        assert!(check(&one, &json!(3)).unwrap_err().contains("exactly one"));
        assert!(check(&json!(false), &json!(1)).is_err());
    }

    #[test]
    fn unknown_keywords_and_refs_are_left_to_the_server() {
        let s = json!({"$ref": "#/defs/x", "pattern": "^a$", "format": "email"});
        check(&s, &json!("zzz")).unwrap();
    }

    #[test]
    fn a_hostile_schema_costs_a_bounded_amount_and_passes() {
        // Two branches at each of 17 levels: 2^17 leaves, each refusing, past the budget.
        let mut s = json!({"type": "string"});
        for _ in 0..17 {
            s = json!({"anyOf": [s.clone(), s]});
        }
        check(&s, &json!(1)).unwrap();
        // Nested deeper than MAX_DEPTH.
        let mut deep = json!({"type": "string"});
        for _ in 0..(MAX_DEPTH + 10) {
            deep = json!({"allOf": [deep]});
        }
        check(&deep, &json!(1)).unwrap();
    }
}
