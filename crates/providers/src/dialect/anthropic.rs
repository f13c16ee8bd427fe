//! The Anthropic dialect (Messages API `input_schema`).

use serde_json::{Map, Value};

use super::{SchemaDialect, strip_keywords};

/// The property a non-object root schema is wrapped under (see [`Anthropic`]).
pub const WRAPPED_PROPERTY: &str = "input";

/// Keywords removed at every level: identification and comments, which tell the model nothing.
const STRIPPED: &[&str] = &["$schema", "$id", "$comment"];

/// Anthropic tool `input_schema`s.
///
/// Anthropic accepts JSON Schema draft 2020-12 broadly (`$ref`/`$defs`, `anyOf`, `const`,
/// `additionalProperties`…), so the schema is kept as is except that:
///
/// - `$schema`, `$id` and `$comment` are removed at every schema level;
/// - the root must describe an object: a root without `type` gets `"type": "object"`, an object
///   root without `properties` gets `"properties": {}`, and a root of another type (or a boolean
///   schema) is wrapped as the single required property [`WRAPPED_PROPERTY`] of an object, which
///   the caller unwraps from the model's input;
/// - with `strict`, every object schema that does not say otherwise gets
///   `additionalProperties: false`, which Anthropic's strict tool use requires (optional
///   properties stay optional).
///
/// ```
/// use serde_json::json;
/// use toolsmith_providers::dialect::{Anthropic, SchemaDialect};
///
/// let schema = json!({
///     "$schema": "https://json-schema.org/draft/2020-12/schema",
///     "properties": {"id": {"const": 3, "title": "Id"}}
/// });
/// assert_eq!(
///     Anthropic.transform(&schema, false),
///     json!({"type": "object", "properties": {"id": {"const": 3, "title": "Id"}}})
/// );
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Anthropic;

impl SchemaDialect for Anthropic {
    fn name(&self) -> &'static str {
        "anthropic"
    }

    fn transform(&self, schema: &Value, strict: bool) -> Value {
        let mut out = schema.clone();
        strip_keywords(&mut out, STRIPPED);
        let mut map = match out {
            Value::Object(map) if is_object_root(&map) => map,
            Value::Bool(true) => Map::new(),
            other => {
                let mut properties = Map::new();
                properties.insert(WRAPPED_PROPERTY.into(), other);
                let mut map = Map::new();
                map.insert("type".into(), "object".into());
                map.insert("properties".into(), Value::Object(properties));
                map.insert(
                    "required".into(),
                    vec![Value::from(WRAPPED_PROPERTY)].into(),
                );
                map
            }
        };
        if !map.contains_key("type") {
            map.shift_insert(0, "type".into(), "object".into());
        }
        if !map.contains_key("properties") {
            let at = map.keys().position(|k| k == "type").map_or(0, |i| i + 1);
            map.shift_insert(at, "properties".into(), Value::Object(Map::new()));
        }
        let mut out = Value::Object(map);
        if strict {
            close_objects(&mut out);
        }
        out
    }
}

/// Whether a root schema object already describes (only) objects, or says nothing about its
/// type: then adding `"type": "object"` keeps its meaning for tool inputs.
fn is_object_root(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        None => true,
        Some(t) => t == "object",
    }
}

fn close_objects(schema: &mut Value) {
    if let Value::Object(map) = schema
        && (map.get("type").is_some_and(|t| t == "object") || map.contains_key("properties"))
        && !map.contains_key("additionalProperties")
    {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    toolsmith_core::schema::for_each_subschema_mut(schema, &mut close_objects);
}
