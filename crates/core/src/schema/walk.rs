use serde_json::Value;

/// Keywords whose value is one subschema.
pub const SINGLE_SUBSCHEMA: &[&str] = &[
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// Keywords whose value is an array of subschemas.
pub const ARRAY_SUBSCHEMAS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems", "items"];

/// Keywords whose value is a map from names to subschemas, definition containers aside.
pub const MAP_SUBSCHEMAS: &[&str] = &["properties", "patternProperties", "dependentSchemas"];

/// The definition containers local `$ref`s point into.
pub const DEFINITIONS: &[&str] = &["$defs", "definitions"];

/// Calls `f` on every direct subschema of `schema` (property schemas, items, `anyOf` branches,
/// definitions…), but never on the maps that hold them, so property names are never visited as
/// keywords. Recurse from `f` to reach deeper levels.
pub fn for_each_subschema_mut(schema: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    let Value::Object(map) = schema else { return };
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if MAP_SUBSCHEMAS.contains(&key) || DEFINITIONS.contains(&key) {
            if let Value::Object(children) = value {
                children.values_mut().for_each(&mut *f);
            }
        } else if ARRAY_SUBSCHEMAS.contains(&key) && value.is_array() {
            if let Value::Array(children) = value {
                children.iter_mut().for_each(&mut *f);
            }
        } else if SINGLE_SUBSCHEMA.contains(&key) && value.is_object() {
            f(value);
        }
    }
}
