use serde_json::Value;

use super::for_each_subschema_mut;

/// Keywords that describe a schema without constraining it.
const METADATA: &[&str] = &["$schema", "$id", "$comment", "title", "default", "examples"];

/// Strips metadata keywords (`$schema`, `$id`, `$comment`, `title`, `default`, `examples`) from
/// every schema level, for providers that reject or ignore them.
///
/// Unlike RadarOS, which strips these keys wherever they appear, only keyword positions are
/// touched: a property named `title` survives. And `additionalProperties: false` is kept: it is a
/// constraint the validator enforces, so hiding it from the model would only invite rejected
/// calls.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::schema::slim;
///
/// let mut schema = json!({
///     "$schema": "https://json-schema.org/draft/2020-12/schema",
///     "title": "Doc",
///     "type": "object",
///     "properties": {"title": {"type": "string", "default": "x", "examples": ["y"]}}
/// });
/// slim(&mut schema);
/// assert_eq!(schema, json!({"type": "object", "properties": {"title": {"type": "string"}}}));
/// ```
pub fn slim(schema: &mut Value) {
    if let Value::Object(map) = schema {
        for key in METADATA {
            map.shift_remove(*key);
        }
    }
    for_each_subschema_mut(schema, &mut slim);
}
