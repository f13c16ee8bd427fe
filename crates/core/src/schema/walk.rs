use serde_json::Value;

/// Keywords whose value is one subschema.
const SINGLE: &[&str] = &[
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
const ARRAYS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems", "items"];

/// Keywords whose value is a map from names to subschemas.
const MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Calls `f` on every direct subschema of `schema` (property schemas, items, `anyOf` branches,
/// definitions…), but never on the maps that hold them, so property names are never visited as
/// keywords. Recurse from `f` to reach deeper levels.
pub fn for_each_subschema_mut(schema: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    let Value::Object(map) = schema else { return };
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if MAPS.contains(&key) {
            if let Value::Object(children) = value {
                children.values_mut().for_each(&mut *f);
            }
        } else if ARRAYS.contains(&key) && value.is_array() {
            if let Value::Array(children) = value {
                children.iter_mut().for_each(&mut *f);
            }
        } else if SINGLE.contains(&key) && value.is_object() {
            f(value);
        }
    }
}
