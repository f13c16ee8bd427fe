//! JSON Schema: derivation, strict mode, slimming, canonical JSON, validation.
//!
//! Tool input schemas are derived from Rust types with schemars 1 ([`schema_for`]), validated
//! with a [`SchemaValidator`] compiled once per tool, and transformed per provider: [`strict`]
//! for OpenAI structured outputs, [`slim`] where a provider wants no metadata keywords. Every
//! transform walks only schema positions ([`for_each_subschema_mut`]), so a property *named*
//! `title` or `default` is never mistaken for a keyword.

mod canonical;
mod derive;
mod examples;
mod slim;
mod strict;
mod validator;
mod walk;

pub use canonical::{canonical_json, canonical_key};
pub use derive::schema_for;
pub use examples::describe_with_examples;
pub use slim::slim;
pub use strict::{strict, strip_strict_nulls};
pub use validator::SchemaValidator;
pub use walk::{
    ARRAY_SUBSCHEMAS, DEFINITIONS, MAP_SUBSCHEMAS, SINGLE_SUBSCHEMA, for_each_subschema_mut,
};

use serde_json::Value;

/// A JSON value's type as an error message names it: `null`, `a boolean`, `a number`,
/// `a string`, `an array`, `an object`.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::schema::json_type;
///
/// assert_eq!(json_type(&json!([1])), "an array");
/// assert_eq!(json_type(&json!(null)), "null");
/// ```
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
