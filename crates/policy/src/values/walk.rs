//! A JSON document as the readers see it: its keys, strings and numbers **in document
//! order** (an object's keys as written, not sorted), each string and number with the key
//! of the field it stands in. Reading in order is what lets two neighbouring strings be
//! joined ([`super::seams`]): `{"z": "DE8937040044", "a": "0532013000"}` holds the halves
//! in that order, whatever a map would sort them into.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::is_id_key;

/// One thing a document holds, in order.
#[derive(Debug)]
pub(super) enum Event<'a> {
    /// An object's key.
    Key(Cow<'a, str>),
    /// A string or a number (as JSON writes it): whether its field names an id, and the
    /// index of its field's [`Event::Key`] (an array's items stand in their array's field).
    Leaf {
        text: Cow<'a, str>,
        number: bool,
        id: bool,
        field: Option<usize>,
    },
}

impl<'a> Event<'a> {
    /// The key an event at `field` names, if it is one.
    pub(super) fn key_at<'e>(events: &'e [Event<'a>], field: Option<usize>) -> Option<&'e str> {
        match events.get(field?) {
            Some(Event::Key(k)) => Some(k),
            _ => None,
        }
    }
}

/// The events of `text` when it is one JSON document; `None` when it is not (then nothing
/// of it was taken as JSON). Nesting deeper than serde_json's limit (128) is not JSON here.
pub(super) fn parse(text: &str) -> Option<Vec<Event<'_>>> {
    let mut events = Vec::new();
    let mut de = serde_json::Deserializer::from_str(text);
    Walk {
        events: &mut events,
        id: false,
        field: None,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(events)
}

/// The events of a parsed value (a call's arguments): its maps in their own order.
pub(super) fn of_value(v: &Value) -> Vec<Event<'_>> {
    let mut events = Vec::new();
    value_into(v, false, None, &mut events);
    events
}

fn value_into<'a>(v: &'a Value, id: bool, field: Option<usize>, events: &mut Vec<Event<'a>>) {
    match v {
        Value::String(s) => events.push(Event::Leaf {
            text: Cow::Borrowed(s),
            number: false,
            id,
            field,
        }),
        Value::Number(n) => events.push(Event::Leaf {
            text: Cow::Owned(n.to_string()),
            number: true,
            id,
            field,
        }),
        Value::Array(items) => items.iter().for_each(|i| value_into(i, id, field, events)),
        Value::Object(map) => {
            for (k, item) in map {
                events.push(Event::Key(Cow::Borrowed(k)));
                let at = events.len() - 1;
                value_into(item, is_id_key(k), Some(at), events);
            }
        }
        Value::Bool(_) | Value::Null => {}
    }
}

struct Walk<'e, 'de> {
    events: &'e mut Vec<Event<'de>>,
    id: bool,
    field: Option<usize>,
}

impl Walk<'_, '_> {
    fn number(self, text: String) {
        self.events.push(Event::Leaf {
            text: Cow::Owned(text),
            number: true,
            id: self.id,
            field: self.field,
        });
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.number(v.to_string());
        Ok(())
    }

    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.number(v.to_string());
        Ok(())
    }

    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        // As serde_json writes the number it parsed (a `Value`'s display).
        if let Some(n) = serde_json::Number::from_f64(v) {
            self.number(n.to_string());
        }
        Ok(())
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<(), E> {
        self.events.push(Event::Leaf {
            text: Cow::Borrowed(v),
            number: false,
            id: self.id,
            field: self.field,
        });
        Ok(())
    }

    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.events.push(Event::Leaf {
            text: Cow::Owned(v.to_owned()),
            number: false,
            id: self.id,
            field: self.field,
        });
        Ok(())
    }

    fn visit_string<E>(self, v: String) -> Result<(), E> {
        self.events.push(Event::Leaf {
            text: Cow::Owned(v),
            number: false,
            id: self.id,
            field: self.field,
        });
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Walk { events, id, field } = self;
        while seq
            .next_element_seed(Walk {
                events: &mut *events,
                id,
                field,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let events = self.events;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let id = is_id_key(&key);
            events.push(Event::Key(key));
            let at = events.len() - 1;
            map.next_value_seed(Walk {
                events: &mut *events,
                id,
                field: Some(at),
            })?;
        }
        Ok(())
    }
}

/// An object's key, borrowed when it has no escape.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(events: &[Event<'_>]) -> Vec<(String, Option<String>)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Leaf { text, field, .. } => Some((
                    text.to_string(),
                    Event::key_at(events, *field).map(str::to_owned),
                )),
                Event::Key(_) => None,
            })
            .collect()
    }

    #[test]
    fn test_document_order_and_fields() {
        let e = parse(r#"{"z": "a", "b": [1, "c\n", {"id": 2.5}], "n": null}"#).unwrap();
        assert_eq!(
            leaves(&e),
            [
                ("a".into(), Some("z".into())),
                ("1".into(), Some("b".into())),
                ("c\n".into(), Some("b".into())),
                ("2.5".into(), Some("id".into())),
            ]
        );
        assert!(matches!(e.last(), Some(Event::Key(k)) if k == "n"));
        assert!(parse("{\"a\": 1} x").is_none());
        assert!(parse("[1, 2").is_none());
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(parse(&deep).is_none());
    }
}
