use serde_json::{Map, Value};

use super::for_each_subschema_mut;

/// Rewrites a schema into the form OpenAI's structured outputs (`strict: true`) require, at every
/// level: each object schema gets `additionalProperties: false`, every property becomes
/// required, and properties that were optional become nullable (`"type": ["string", "null"]`, or
/// an `anyOf` with `{"type": "null"}`).
///
/// A strict model sends `null` for an optional property it leaves out; [`strip_strict_nulls`]
/// turns those back into absent properties before the input is validated against the original
/// schema. An object whose `additionalProperties` is itself a schema (a free-form map) cannot be
/// expressed strictly and is left as is.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::schema::strict;
///
/// let mut schema = json!({
///     "type": "object",
///     "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
///     "required": ["q"]
/// });
/// strict(&mut schema);
/// assert_eq!(schema, json!({
///     "type": "object",
///     "properties": {"q": {"type": "string"}, "limit": {"type": ["integer", "null"]}},
///     "required": ["q", "limit"],
///     "additionalProperties": false
/// }));
/// ```
pub fn strict(schema: &mut Value) {
    if let Value::Object(map) = schema
        && is_object_schema(map)
    {
        strict_object(map);
    }
    for_each_subschema_mut(schema, &mut strict);
}

fn is_object_schema(map: &Map<String, Value>) -> bool {
    map.get("type").is_some_and(|t| t == "object") || map.contains_key("properties")
}

fn strict_object(map: &mut Map<String, Value>) {
    if !map
        .get("additionalProperties")
        .is_some_and(Value::is_object)
    {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    let required = required_names(map);
    let Some(Value::Object(properties)) = map.get_mut("properties") else {
        map.insert("properties".into(), Value::Object(Map::new()));
        map.insert("required".into(), Value::Array(Vec::new()));
        return;
    };
    let mut all = Vec::with_capacity(properties.len());
    for (name, property) in properties.iter_mut() {
        if !required.iter().any(|r| r == name) {
            make_nullable(property);
        }
        all.push(Value::String(name.clone()));
    }
    map.insert("required".into(), Value::Array(all));
}

fn required_names(map: &Map<String, Value>) -> Vec<String> {
    map.get("required")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a schema already accepts `null` by its `type`, `enum`, `const` or an `anyOf`/`oneOf`
/// branch.
fn accepts_null(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return schema == &Value::Bool(true);
    };
    if map.is_empty() {
        return true;
    }
    let null_type = |t: &Value| match t {
        Value::String(s) => s == "null",
        Value::Array(types) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    if let Some(t) = map.get("type")
        && !null_type(t)
    {
        return false;
    }
    if let Some(Value::Array(values)) = map.get("enum") {
        return values.contains(&Value::Null);
    }
    if let Some(value) = map.get("const") {
        return value.is_null();
    }
    if map.contains_key("type") {
        return true;
    }
    ["anyOf", "oneOf"].iter().any(|k| {
        map.get(*k)
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(accepts_null))
    })
}

fn make_nullable(schema: &mut Value) {
    if accepts_null(schema) {
        return;
    }
    if let Value::Object(map) = schema {
        let simple = !map.contains_key("const")
            && !map.contains_key("anyOf")
            && !map.contains_key("oneOf")
            && !map.contains_key("allOf");
        match map.get_mut("type") {
            Some(Value::String(t)) if simple => {
                let t = std::mem::take(t);
                map.insert("type".into(), Value::Array(vec![t.into(), "null".into()]));
                add_null_to_enum(map);
                return;
            }
            Some(Value::Array(types)) if simple => {
                types.push("null".into());
                add_null_to_enum(map);
                return;
            }
            _ => {}
        }
        if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
            branches.push(null_schema());
            return;
        }
    }
    let inner = std::mem::take(schema);
    *schema = Value::Object(Map::from_iter([(
        "anyOf".to_string(),
        Value::Array(vec![inner, null_schema()]),
    )]));
}

fn add_null_to_enum(map: &mut Map<String, Value>) {
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
}

fn null_schema() -> Value {
    Value::Object(Map::from_iter([("type".to_string(), "null".into())]))
}

/// Removes `null` values that a strict model sent for optional properties whose original schema
/// does not accept `null`, at every object level the schema describes. The result is what a
/// non-strict model would have sent: the property left out.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::schema::strip_strict_nulls;
///
/// let original = json!({
///     "type": "object",
///     "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
///     "required": ["q"]
/// });
/// let mut input = json!({"q": "rust", "limit": null});
/// strip_strict_nulls(&original, &mut input);
/// assert_eq!(input, json!({"q": "rust"}));
/// ```
pub fn strip_strict_nulls(schema: &Value, input: &mut Value) {
    match input {
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items").filter(|s| s.is_object()) {
                items
                    .iter_mut()
                    .for_each(|item| strip_strict_nulls(item_schema, item));
            }
        }
        Value::Object(input) => {
            let Some(Value::Object(properties)) = schema.get("properties") else {
                return;
            };
            let required = schema.as_object().map(required_names).unwrap_or_default();
            input.retain(|name, value| {
                let optional = !required.iter().any(|r| r == name);
                match properties.get(name) {
                    Some(property) if value.is_null() => !optional || accepts_null(property),
                    _ => true,
                }
            });
            for (name, value) in input.iter_mut() {
                if let Some(property) = properties.get(name) {
                    strip_strict_nulls(property, value);
                }
            }
        }
        _ => {}
    }
}
