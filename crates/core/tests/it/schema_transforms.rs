//! Property tests of the schema transforms: strict mode, strict-null stripping and slimming.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolsmith_core::schema::{SchemaValidator, slim, strict, strip_strict_nulls};

/// A property schema: a scalar type, possibly with an enum, or a nested object.
fn arb_property(depth: u32) -> BoxedStrategy<Value> {
    let scalar = prop_oneof![
        Just(json!({"type": "string", "title": "S", "default": "x"})),
        Just(json!({"type": "integer", "examples": [1]})),
        Just(json!({"type": "boolean"})),
        Just(json!({"type": "string", "enum": ["a", "b"]})),
        Just(json!({"type": ["number", "null"]})),
        Just(json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})),
    ];
    if depth == 0 {
        return scalar.boxed();
    }
    prop_oneof![
        3 => scalar,
        1 => arb_object(depth - 1),
        1 => arb_object(depth - 1).prop_map(|items| json!({"type": "array", "items": items})),
    ]
    .boxed()
}

/// An object schema with random properties, some required.
fn arb_object(depth: u32) -> BoxedStrategy<Value> {
    prop::collection::vec(
        (
            "[a-e]{1,3}|title|default",
            arb_property(depth),
            any::<bool>(),
        ),
        0..5,
    )
    .prop_map(|props| {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for (name, schema, req) in props {
            if properties.contains_key(&name) {
                continue;
            }
            if req {
                required.push(Value::String(name.clone()));
            }
            properties.insert(name, schema);
        }
        json!({"type": "object", "title": "Obj", "properties": properties, "required": required})
    })
    .boxed()
}

/// A value valid under `schema`, leaving out optional properties when `sparse`.
fn instance(schema: &Value, sparse: bool) -> Value {
    if let Some(Value::Array(branches)) = schema.get("anyOf") {
        return instance(&branches[0], sparse);
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values[0].clone();
    }
    let ty = match schema.get("type") {
        Some(Value::Array(types)) => types[0].as_str().unwrap_or("null"),
        Some(Value::String(t)) => t.as_str(),
        _ => "null",
    };
    match ty {
        "string" => json!("s"),
        "integer" => json!(1),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "array" => json!([instance(&schema["items"], sparse)]),
        "object" => {
            let required: Vec<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = Map::new();
            if let Some(Value::Object(props)) = schema.get("properties") {
                for (name, prop) in props {
                    if !sparse || required.contains(&name.as_str()) {
                        out.insert(name.clone(), instance(prop, sparse));
                    }
                }
            }
            Value::Object(out)
        }
        _ => Value::Null,
    }
}

/// What a strict model sends for `value`: every optional property present, `null` when left out.
fn fill_nulls(schema: &Value, value: &mut Value) {
    if let (Some(Value::Object(props)), Value::Object(map)) =
        (schema.get("properties"), &mut *value)
    {
        for (name, prop) in props {
            match map.get_mut(name) {
                Some(inner) => fill_nulls(prop, inner),
                None => {
                    map.insert(name.clone(), Value::Null);
                }
            }
        }
    }
    if let (Some(items), Value::Array(values)) = (schema.get("items"), value) {
        values.iter_mut().for_each(|v| fill_nulls(items, v));
    }
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn every_object_schema(schema: &Value, check: &mut dyn FnMut(&Map<String, Value>)) {
    if let Value::Object(map) = schema {
        if map.contains_key("properties") {
            check(map);
        }
        for value in map.values() {
            match value {
                Value::Object(_) => every_object_schema(value, check),
                Value::Array(items) => items.iter().for_each(|i| every_object_schema(i, check)),
                _ => {}
            }
        }
    }
}

proptest! {
    #[test]
    fn strict_objects_close_and_require_every_property(schema in arb_object(2)) {
        let mut strict_schema = schema.clone();
        strict(&mut strict_schema);
        every_object_schema(&strict_schema, &mut |object| {
            assert_eq!(object.get("additionalProperties"), Some(&json!(false)));
            let names: Vec<&String> = object["properties"].as_object().unwrap().keys().collect();
            let required: Vec<&str> =
                object["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
            assert_eq!(names.len(), required.len());
            for name in names {
                assert!(required.contains(&name.as_str()));
            }
        });
    }

    #[test]
    fn a_strict_models_input_validates_and_strips_back_to_the_original(schema in arb_object(2)) {
        let original = SchemaValidator::compile(&schema).unwrap();
        let mut strict_schema = schema.clone();
        strict(&mut strict_schema);
        let strict_validator = SchemaValidator::compile(&strict_schema).unwrap();

        let sparse = instance(&schema, true);
        prop_assert!(original.validate(&sparse).is_ok());

        // What a strict model sends: every property, null for the ones it leaves out.
        let mut sent = sparse.clone();
        fill_nulls(&schema, &mut sent);
        prop_assert!(strict_validator.validate(&sent).is_ok(), "{}", sent);

        strip_strict_nulls(&schema, &mut sent);
        prop_assert!(original.validate(&sent).is_ok(), "{}", sent);
        // Only nulls the original schema accepts may remain (null is then a real value).
        prop_assert_eq!(without_nulls(&sent), without_nulls(&sparse));
    }

    #[test]
    fn strict_is_idempotent(schema in arb_object(2)) {
        let mut once = schema.clone();
        strict(&mut once);
        let mut twice = once.clone();
        strict(&mut twice);
        prop_assert_eq!(once, twice);
    }

    #[test]
    fn slim_keeps_every_property_and_constraint(schema in arb_object(2)) {
        let mut slimmed = schema.clone();
        slim(&mut slimmed);
        let text = slimmed.to_string();
        prop_assert!(!text.contains("\"examples\""));
        // Every instance the original accepts, the slimmed schema accepts, and vice versa.
        let (a, b) = (SchemaValidator::compile(&schema).unwrap(), SchemaValidator::compile(&slimmed).unwrap());
        for sparse in [true, false] {
            let value = instance(&schema, sparse);
            prop_assert_eq!(a.validate(&value).is_ok(), b.validate(&value).is_ok());
        }
        // Property names survive, even ones spelled like keywords.
        let names = |s: &Value| s["properties"].as_object().map(|p| p.keys().cloned().collect::<Vec<_>>());
        prop_assert_eq!(names(&schema), names(&slimmed));
        let mut again = slimmed.clone();
        slim(&mut again);
        prop_assert_eq!(again, slimmed);
    }
}

#[test]
fn strict_wraps_a_schema_without_a_simple_type_in_any_of() {
    let mut schema = json!({
        "type": "object",
        "properties": {"x": {"const": 3}, "y": {"anyOf": [{"type": "string"}]}, "z": {"type": "string"}},
        "required": ["z"]
    });
    strict(&mut schema);
    assert_eq!(
        schema["properties"]["x"],
        json!({"anyOf": [{"const": 3}, {"type": "null"}]})
    );
    assert_eq!(
        schema["properties"]["y"],
        json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
    );
    assert_eq!(schema["properties"]["z"], json!({"type": "string"}));
}

#[test]
fn strict_leaves_free_form_maps_alone() {
    let mut schema = json!({
        "type": "object",
        "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}},
        "required": ["tags"]
    });
    strict(&mut schema);
    assert_eq!(
        schema["properties"]["tags"]["additionalProperties"],
        json!({"type": "string"})
    );
    assert_eq!(schema["additionalProperties"], json!(false));
}

#[test]
fn strip_keeps_nulls_the_original_schema_accepts_and_required_ones() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "string"}, "c": {"type": "string"}},
        "required": ["b"]
    });
    let mut input = json!({"a": null, "b": null, "c": null});
    strip_strict_nulls(&schema, &mut input);
    assert_eq!(input, json!({"a": null, "b": null}));
}
