//! Strict decoding: a struct is a JSON object, never an array.
//!
//! serde's derived `Deserialize` for a struct accepts a JSON array of its fields in order
//! (`visit_seq`), and an internally tagged enum accepts an array whose first element is the
//! tag. The wire allows neither. Each wire type derives its (de)serializer with
//! `#[serde(remote = "Self")]`, which turns the derived code into inherent functions, and
//! implements the traits by calling them through [`MapOnly`]: a deserializer adapter that
//! asks the underlying format for a map whatever the derived code asked for. Nested types do
//! the same in their own impls, so the rule holds at every depth.

use serde::Deserializer;
use serde::de::Visitor;

/// Wraps a deserializer so that every request is answered from a map (a JSON object).
pub(crate) struct MapOnly<D>(pub(crate) D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for MapOnly<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.0.deserialize_map(visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map struct enum
        identifier ignored_any
    }
}

/// Implements `Serialize` and `Deserialize` for a type that derives them with
/// `#[serde(remote = "Self")]`, routing deserialization through [`MapOnly`].
macro_rules! strict_object {
    ($($ty:ident),+ $(,)?) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $ty::serialize(self, s)
            }
        }
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $ty::deserialize($crate::strict::MapOnly(d))
            }
        }
    )+};
}
pub(crate) use strict_object;

/// A string that names no variant of a wire enum.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {found:?}: expected {expected}")]
pub struct UnknownName {
    /// What was being named ("data class", "deny reason", …).
    pub kind: &'static str,
    /// The string that was given.
    pub found: String,
    /// The names that are allowed, for the message.
    pub expected: &'static str,
}

/// For a unit-only enum that derives `Serialize` with `rename_all = "snake_case"` and
/// `Deserialize` with `try_from = "String"`: the wire names, `as_str`, `ALL`, `FromStr`,
/// `TryFrom<String>` and `Display`. Decoding therefore accepts only one of the strings, never
/// the `{"variant": null}` object form serde would otherwise allow.
macro_rules! wire_names {
    ($ty:ident, $kind:literal, $expected:literal, { $($var:ident => $name:literal),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$var),+];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$var => $name),+ }
            }
        }
        impl std::str::FromStr for $ty {
            type Err = $crate::strict::UnknownName;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($name => Ok($ty::$var),)+
                    _ => Err($crate::strict::UnknownName {
                        kind: $kind,
                        found: s.to_owned(),
                        expected: $expected,
                    }),
                }
            }
        }
        impl TryFrom<String> for $ty {
            type Error = $crate::strict::UnknownName;
            fn try_from(s: String) -> Result<Self, Self::Error> {
                s.parse()
            }
        }
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use wire_names;
