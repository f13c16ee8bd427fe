//! The Gemini dialect (`functionDeclarations[].parameters`, an OpenAPI 3.0 subset).

use serde_json::{Map, Value};

use super::{Recursion, SchemaDialect, inline_refs};

/// How many times a recursive definition is expanded along any path before it is cut.
pub const RECURSION_DEPTH: usize = 2;

/// Gemini function-declaration schemas: the "select subset of an OpenAPI 3.0 schema object"
/// of Gemini's `Schema` type.
///
/// Rules, in order (sources: the `Schema` and `FunctionDeclaration` REST references of the
/// Gemini API and Vertex AI; the Gemini API's 400 errors as reported in provider issues; the
/// transformers of the Vercel AI SDK and Pydantic AI, whose users report these 400s):
///
/// 1. **References.** Local `$ref`s (`#/$defs/…`, `#/definitions/…`, `#`) are inlined, their
///    sibling keywords laid over the target; `$defs`/`definitions` are dropped. A recursive
///    definition is expanded at most [`RECURSION_DEPTH`] times along any path, then cut to a
///    permissive `{"type": <its type>}` (`{"type": "object"}` for a recursive struct): the model
///    still sees the shape two levels deep, and the validator, which keeps the original schema,
///    checks the rest. An unresolvable or remote reference is cut the same way.
/// 2. **Combinators.** `allOf` branches are merged into the schema (properties concatenated in
///    order, `required` united, the schema's own keywords winning); `oneOf` becomes `anyOf`
///    (the model cannot tell them apart; ignored when `anyOf` is also present); in an `anyOf`,
///    `null` branches become `nullable: true`, and a single remaining branch is merged into the
///    schema instead of staying a one-branch `anyOf`.
/// 3. **Types.** `"type": ["integer", "null"]` becomes `"type": "integer", "nullable": true`;
///    `"type": "null"` alone becomes `nullable: true`; several non-null types become an `anyOf`
///    of one branch per type.
/// 4. **Enums.** `const` becomes a one-value `enum`. Gemini accepts `enum` only on `STRING`
///    schemas ("enum: only allowed for STRING type"; non-string members fail the whole request
///    with "Invalid value … (TYPE_STRING)"). So `null` members become `nullable: true`; an enum
///    of strings is kept (and gets `"type": "string"` if it had no type); any other enum is
///    dropped and its values appended to the description (`allowed values: 1, 2, 3`), the
///    declared type kept (or inferred from the values), so the model still sends typed values
///    that pass validation against the original schema. Converting them to strings instead
///    would make the model send `"1"` where `1` is expected.
/// 5. **Formats.** Only the formats Gemini documents survive: `enum` and `date-time` for
///    strings, `int32` and `int64` for integers, `float` and `double` for numbers. Another
///    string format (`uuid`, `email`, `date`…) is moved into the description
///    (`format: uuid`); other numeric formats (schemars' `uint32`…) are dropped, their range
///    being carried by `minimum`/`maximum`.
/// 6. **Keywords.** Only `type`, `format`, `description`, `nullable`, `enum`, `properties`,
///    `required`, `items`, `minItems`, `maxItems`, `minProperties`, `maxProperties`, `minimum`,
///    `maximum`, `minLength`, `maxLength`, `pattern` and `anyOf` are kept. Among those dropped:
///    `$schema`, `$id`, `$comment`, `additionalProperties` (rejected), `title` (rejected by
///    some Gemini endpoints, googleapis/python-genai#1732), `default`, `examples`, `const`,
///    `exclusiveMinimum`/`exclusiveMaximum`, tuple `prefixItems` and array-form `items`.
/// 7. **Objects.** `required` keeps only names that are declared properties; an empty
///    `properties` map is dropped (Gemini rejects "properties: should be non-empty for OBJECT
///    type"). A tool without parameters should omit `parameters` altogether: see
///    [`is_empty_object`].
///
/// `strict` is ignored: Gemini has no strict mode.
///
/// ```
/// use serde_json::json;
/// use toolsmith_providers::dialect::{Gemini, SchemaDialect};
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "id": {"type": "string", "format": "uuid", "description": "The record."},
///         "level": {"enum": [1, 2, 3]},
///         "mode": {"const": "fast"},
///         "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}]}
///     },
///     "required": ["id"],
///     "additionalProperties": false
/// });
/// assert_eq!(
///     Gemini.transform(&schema, true),
///     json!({
///         "type": "object",
///         "properties": {
///             "id": {"type": "string", "description": "The record. (format: uuid)"},
///             "level": {"type": "integer", "description": "allowed values: 1, 2, 3"},
///             "mode": {"type": "string", "enum": ["fast"]},
///             "when": {"type": "string", "format": "date-time", "nullable": true}
///         },
///         "required": ["id"]
///     })
/// );
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Gemini;

impl SchemaDialect for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn transform(&self, schema: &Value, _strict: bool) -> Value {
        convert(&inline_refs(schema, Recursion::Unroll(RECURSION_DEPTH)))
    }
}

/// Whether a schema describes an object without any parameter (`{}`, `{"type": "object"}`,
/// `{"type": "object", "properties": {}}`, with or without `additionalProperties`, a
/// description…). Gemini rejects an object schema without properties: a tool whose
/// (transformed) schema is empty must be declared without `parameters`.
///
/// ```
/// use serde_json::json;
/// use toolsmith_providers::dialect::gemini::is_empty_object;
///
/// assert!(is_empty_object(&json!({"type": "object", "properties": {}})));
/// assert!(is_empty_object(&json!({})));
/// assert!(!is_empty_object(&json!({"type": "object", "properties": {"q": {"type": "string"}}})));
/// assert!(!is_empty_object(&json!({"type": "string"})));
/// ```
pub fn is_empty_object(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return schema == &Value::Bool(true);
    };
    let object_type = map.get("type").is_none_or(|t| t == "object");
    let no_properties = map
        .get("properties")
        .is_none_or(|p| p.as_object().is_some_and(Map::is_empty));
    let constrained = ["anyOf", "oneOf", "allOf", "$ref", "enum", "const", "items"]
        .iter()
        .any(|k| map.contains_key(*k));
    object_type && no_properties && !constrained
}

/// Keywords kept as they are when their value has the right JSON type.
const NUMBERS: &[&str] = &[
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
];

/// Converts one (reference-free) schema and, recursively, its subschemas.
fn convert(schema: &Value) -> Value {
    let Value::Object(input) = schema else {
        // Boolean schemas: `true` is "anything", and `false` cannot be expressed.
        return Value::Object(Map::new());
    };
    let input = merge_all_of(input);
    let mut out = Map::new();
    let mut nullable = false;
    let has_any_of = input.contains_key("anyOf");
    for (key, value) in &input {
        match (key.as_str(), value) {
            ("type", Value::String(t)) if t == "null" => nullable = true,
            ("type", Value::String(_)) => {
                out.insert(key.clone(), value.clone());
            }
            ("type", Value::Array(types)) => {
                let mut kinds: Vec<Value> = Vec::new();
                for t in types {
                    if t == "null" {
                        nullable = true;
                    } else if t.is_string() && !kinds.contains(t) {
                        kinds.push(t.clone());
                    }
                }
                match kinds.len() {
                    0 => {}
                    1 => {
                        out.insert(key.clone(), kinds.remove(0));
                    }
                    _ if has_any_of || input.contains_key("oneOf") => {}
                    _ => {
                        let branches = kinds
                            .into_iter()
                            .map(|t| Value::Object(Map::from_iter([("type".to_owned(), t)])))
                            .collect();
                        out.insert("anyOf".into(), Value::Array(branches));
                    }
                }
            }
            ("const", _) if !input.contains_key("enum") => {
                out.insert("enum".into(), Value::Array(vec![value.clone()]));
            }
            ("enum", Value::Array(_)) => {
                out.insert(key.clone(), value.clone());
            }
            ("anyOf", Value::Array(branches)) => {
                any_of(branches, &input, &mut out, &mut nullable);
            }
            ("oneOf", Value::Array(branches)) if !has_any_of => {
                any_of(branches, &input, &mut out, &mut nullable);
            }
            ("properties", Value::Object(properties)) if !properties.is_empty() => {
                let properties = properties
                    .iter()
                    .map(|(name, property)| (name.clone(), convert(property)))
                    .collect();
                out.insert(key.clone(), Value::Object(properties));
            }
            ("required", Value::Array(names)) => {
                let declared = input.get("properties").and_then(Value::as_object);
                let names: Vec<Value> = names
                    .iter()
                    .filter(|n| {
                        n.as_str()
                            .is_some_and(|n| declared.is_some_and(|d| d.contains_key(n)))
                    })
                    .cloned()
                    .collect();
                if !names.is_empty() {
                    out.insert(key.clone(), Value::Array(names));
                }
            }
            ("items", Value::Object(_) | Value::Bool(_)) => {
                out.insert(key.clone(), convert(value));
            }
            ("nullable", Value::Bool(true)) => nullable = true,
            ("description" | "format" | "pattern", Value::String(_)) => {
                out.insert(key.clone(), value.clone());
            }
            (k, Value::Number(_)) if NUMBERS.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    let mut notes = Vec::new();
    fix_enum(&mut out, &mut nullable, &mut notes);
    fix_format(&mut out, &mut notes);
    if !notes.is_empty() {
        let note = notes.join("; ");
        let description = match out.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{d} ({note})"),
            _ => note,
        };
        out.insert("description".into(), description.into());
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    Value::Object(out)
}

/// Merges the object branches of `allOf` into the schema: the schema's keywords first, then
/// each branch's new keywords; properties concatenated, `required` united.
fn merge_all_of(input: &Map<String, Value>) -> Map<String, Value> {
    let Some(Value::Array(branches)) = input.get("allOf") else {
        return input.clone();
    };
    let mut merged: Map<String, Value> = input
        .iter()
        .filter(|(k, _)| *k != "allOf")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for branch in branches {
        let Value::Object(branch) = branch else {
            continue;
        };
        for (key, value) in merge_all_of(branch) {
            match (merged.get_mut(&key), value) {
                (None, value) => {
                    merged.insert(key, value);
                }
                (Some(Value::Object(mine)), Value::Object(theirs)) if key == "properties" => {
                    for (name, property) in theirs {
                        mine.entry(name).or_insert(property);
                    }
                }
                (Some(Value::Array(mine)), Value::Array(theirs)) if key == "required" => {
                    for name in theirs {
                        if !mine.contains(&name) {
                            mine.push(name);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    merged
}

/// Converts `anyOf` (or `oneOf`) branches: `null` branches become `nullable`, a single
/// remaining branch is merged into the schema (the schema's own keywords winning).
fn any_of(
    branches: &[Value],
    input: &Map<String, Value>,
    out: &mut Map<String, Value>,
    nullable: &mut bool,
) {
    let mut kept = Vec::with_capacity(branches.len());
    for branch in branches.iter().map(convert) {
        if is_null_only(&branch) {
            *nullable = true;
        } else {
            kept.push(branch);
        }
    }
    match kept.len() {
        0 => {}
        1 => {
            let Some(Value::Object(branch)) = kept.pop() else {
                unreachable!("convert returns objects")
            };
            for (key, value) in branch {
                if key == "nullable" {
                    *nullable = true;
                } else if !out.contains_key(&key) && !input.contains_key(&key) {
                    out.insert(key, value);
                }
            }
        }
        _ => {
            out.insert("anyOf".into(), Value::Array(kept));
        }
    }
}

/// Whether a converted schema accepts only `null`: `{"nullable": true}`, maybe described.
fn is_null_only(schema: &Value) -> bool {
    schema.get("nullable") == Some(&Value::Bool(true))
        && schema
            .as_object()
            .is_some_and(|m| m.keys().all(|k| k == "nullable" || k == "description"))
}

fn fix_enum(out: &mut Map<String, Value>, nullable: &mut bool, notes: &mut Vec<String>) {
    let Some(index) = out.keys().position(|k| k == "enum") else {
        return;
    };
    let Some(Value::Array(values)) = out.get("enum") else {
        return;
    };
    let mut values = values.clone();
    if values.iter().any(Value::is_null) {
        *nullable = true;
        values.retain(|v| !v.is_null());
    }
    let kind = out.get("type").and_then(Value::as_str).map(str::to_owned);
    let strings = !values.is_empty() && values.iter().all(Value::is_string);
    if strings && kind.as_deref().is_none_or(|k| k == "string") {
        out.insert("enum".into(), Value::Array(values));
        if kind.is_none() {
            out.shift_insert(index, "type".into(), "string".into());
        }
        return;
    }
    out.shift_remove("enum");
    if values.is_empty() {
        return;
    }
    if kind.is_none()
        && let Some(inferred) = common_type(&values)
    {
        out.shift_insert(index, "type".into(), inferred.into());
    }
    let listed: Vec<String> = values.iter().map(Value::to_string).collect();
    notes.push(format!("allowed values: {}", listed.join(", ")));
}

/// The one JSON-Schema type all values share, if any.
fn common_type(values: &[Value]) -> Option<&'static str> {
    let type_of = |v: &Value| match v {
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    };
    let first = type_of(values.first()?);
    if values.iter().all(|v| type_of(v) == first) {
        return Some(first);
    }
    let numeric = |t: &str| t == "integer" || t == "number";
    values
        .iter()
        .all(|v| numeric(type_of(v)))
        .then_some("number")
}

fn fix_format(out: &mut Map<String, Value>, notes: &mut Vec<String>) {
    let Some(format) = out.get("format").and_then(Value::as_str).map(str::to_owned) else {
        return;
    };
    let kind = out.get("type").and_then(Value::as_str).map(str::to_owned);
    let supported = match kind.as_deref() {
        Some("string") => ["enum", "date-time"].contains(&format.as_str()),
        Some("integer") => ["int32", "int64"].contains(&format.as_str()),
        Some("number") => ["float", "double"].contains(&format.as_str()),
        _ => false,
    };
    if supported {
        return;
    }
    if kind.as_deref().is_none_or(|k| k == "string") {
        notes.push(format!("format: {format}"));
    }
    out.shift_remove("format");
}
