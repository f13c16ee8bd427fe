//! Strings deserialised without copying, for the stream decoders' wire types.
//!
//! A stream chunk is parsed once and dropped, and most of its strings are never kept (ids and
//! model names repeated on every chunk, finish reasons that are `null`), so copying each into a
//! new `String` is wasted work: with owned fields, allocation and copying were a large share of
//! decoding time. A wire type holds [`Str`] instead, which borrows from the payload when the
//! JSON string has no escapes and owns a decoded copy only when it has (a plain `&str` field
//! would fail on `"a\"b"`). The few strings that outlive the chunk become owned where they are
//! kept.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A JSON string borrowed from the payload when it can be (no escapes), else decoded.
///
/// A newtype rather than `Option<Cow<'a, str>>` because serde only borrows into a `Cow` that is
/// the field's whole type: inside an `Option` it always allocates.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub(crate) struct Str<'a>(#[serde(borrow)] pub Cow<'a, str>);

impl Str<'_> {
    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The text as an owned `String` (a copy only when it was borrowed).
    pub(crate) fn into_owned(self) -> String {
        self.0.into_owned()
    }
}

impl std::ops::Deref for Str<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Str<'_> {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Str<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

/// A value that is usually a string (borrowed like [`Str`]) but may be any JSON: tool-call
/// arguments, which a few servers send as an object instead of its JSON text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StrOrValue<'a> {
    /// A JSON string.
    Str(Cow<'a, str>),
    /// Anything else, `null` included.
    Value(Value),
}

impl<'de: 'a, 'a> Deserialize<'de> for StrOrValue<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;

        impl<'de> Visitor<'de> for V {
            type Value = StrOrValue<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Owned(v.to_owned())))
            }

            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(StrOrValue::Str(Cow::Owned(v)))
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(Value::Null))
            }

            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(Value::Null))
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(self)
            }

            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(Value::Bool(v)))
            }

            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(v.into()))
            }

            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(v.into()))
            }

            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                Ok(StrOrValue::Value(v.into()))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(StrOrValue::Value)
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(StrOrValue::Value)
            }
        }

        deserializer.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrows_unless_escaped() {
        let plain: Str<'_> = serde_json::from_str(r#""abc""#).unwrap();
        assert!(matches!(plain.0, Cow::Borrowed("abc")));
        let escaped: Str<'_> = serde_json::from_str(r#""a\"b""#).unwrap();
        assert!(matches!(escaped.0, Cow::Owned(ref s) if s == "a\"b"));
        let some: Option<Str<'_>> = serde_json::from_str(r#""abc""#).unwrap();
        assert!(matches!(some, Some(Str(Cow::Borrowed("abc")))));
    }

    #[test]
    fn str_or_value_keeps_non_strings() {
        let from = |s| serde_json::from_str::<StrOrValue<'_>>(s).unwrap();
        assert!(matches!(
            from(r#""{}""#),
            StrOrValue::Str(Cow::Borrowed("{}"))
        ));
        assert_eq!(
            from(r#"{"a":[1,true]}"#),
            StrOrValue::Value(serde_json::json!({"a": [1, true]}))
        );
        assert_eq!(from("null"), StrOrValue::Value(Value::Null));
        assert_eq!(from("1.5"), StrOrValue::Value(serde_json::json!(1.5)));
    }
}
