//! Properties of the per-provider schema dialects over random schemas: Gemini's output is in
//! its subset, every transform is idempotent, property names and their order survive. The exact
//! outputs per dialect are in `dialects.rs`.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolsmith_providers::dialect::{Anthropic, Gemini, OpenAi, SchemaDialect};

/// Property names, some spelled like keywords.
const NAMES: &[&str] = &[
    "q",
    "title",
    "default",
    "type",
    "properties",
    "items",
    "enum",
    "const",
    "$ref",
    "anyOf",
    "description",
    "required",
    "nullable",
    "format",
    "additionalProperties",
    "$defs",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec!["string", "integer", "number", "boolean"])
            .prop_map(|t| json!({"type": t})),
        Just(json!({"type": ["integer", "null"], "format": "int64"})),
        Just(json!({"type": ["string", "number", "null"]})),
        Just(json!({"type": "null"})),
        Just(json!({"type": "string", "format": "uuid", "title": "Id", "default": "x"})),
        Just(json!({"type": "integer", "format": "uint32", "minimum": 0})),
        Just(json!({"enum": ["a", "b", null]})),
        Just(json!({"enum": [1, 2, 3], "description": "Level."})),
        Just(json!({"const": "fixed"})),
        Just(json!({"const": 42})),
        Just(json!(true)),
        Just(json!({})),
        Just(json!({"$ref": "#/$defs/Leaf"})),
        Just(json!({"$ref": "#/$defs/Rec", "description": "Recursive."})),
        Just(json!({"$ref": "#/definitions/Old"})),
        Just(json!({"$ref": "#"})),
        Just(json!({"$ref": "#/$defs/Missing"})),
    ]
}

fn properties(inner: impl Strategy<Value = Value>) -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((prop::sample::select(NAMES), inner), 0..5).prop_map(|entries| {
        let mut map = Map::new();
        for (name, schema) in entries {
            map.entry(name).or_insert(schema);
        }
        map
    })
}

fn object(inner: impl Strategy<Value = Value> + Clone) -> impl Strategy<Value = Value> {
    (
        properties(inner.clone()),
        prop::option::of(prop_oneof![Just(json!(false)), Just(json!(true)), inner]),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(props, additional, required, titled)| {
            let mut map = Map::new();
            if titled {
                map.insert("title".into(), "Thing".into());
            }
            map.insert("type".into(), "object".into());
            if required {
                let names: Vec<Value> = props.keys().step_by(2).map(|k| json!(k)).collect();
                map.insert("required".into(), Value::Array(names));
            }
            map.insert("properties".into(), Value::Object(props));
            if let Some(additional) = additional {
                map.insert("additionalProperties".into(), additional);
            }
            Value::Object(map)
        })
}

fn schema() -> BoxedStrategy<Value> {
    leaf()
        .prop_recursive(4, 48, 4, |inner| {
            prop_oneof![
                object(inner.clone()),
                inner
                    .clone()
                    .prop_map(|items| json!({"type": "array", "items": items, "minItems": 1})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"anyOf": [a, b]})),
                inner
                    .clone()
                    .prop_map(|a| json!({"anyOf": [a, {"type": "null"}], "description": "Maybe."})),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| json!({"oneOf": [a, b]})),
                (object(inner.clone()), object(inner)).prop_map(|(a, b)| json!({"allOf": [a, b]})),
            ]
        })
        .boxed()
}

fn root() -> impl Strategy<Value = Value> {
    (
        properties(schema()),
        schema(),
        object(schema()),
        any::<bool>(),
    )
        .prop_map(|(props, leaf_def, rec_body, with_schema_uri)| {
            let mut map = Map::new();
            if with_schema_uri {
                map.insert(
                    "$schema".into(),
                    "https://json-schema.org/draft/2020-12/schema".into(),
                );
            }
            map.insert("type".into(), "object".into());
            map.insert("properties".into(), Value::Object(props));
            let mut rec = rec_body;
            rec["properties"]["self"] = json!({"$ref": "#/$defs/Rec"});
            map.insert("$defs".into(), json!({"Leaf": leaf_def, "Rec": rec}));
            map.insert(
                "definitions".into(),
                json!({"Old": {"type": "string", "title": "Old"}}),
            );
            Value::Object(map)
        })
}

/// Calls `f` on every schema object reachable through schema positions (never on the maps of
/// property names).
fn visit(schema: &Value, f: &mut dyn FnMut(&Map<String, Value>)) {
    let Value::Object(map) = schema else { return };
    f(map);
    for (key, value) in map {
        match (key.as_str(), value) {
            ("properties" | "$defs" | "definitions" | "patternProperties", Value::Object(m)) => {
                m.values().for_each(|v| visit(v, f))
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems" | "items", Value::Array(a)) => {
                a.iter().for_each(|v| visit(v, f))
            }
            ("items" | "additionalProperties" | "not", Value::Object(_)) => visit(value, f),
            _ => {}
        }
    }
}

/// The property names of `input`, checked in order against `output`, at every level where
/// both describe properties directly.
fn check_names(input: &Value, output: &Value) -> Result<(), TestCaseError> {
    let (Some(Value::Object(a)), Some(Value::Object(b))) =
        (input.get("properties"), output.get("properties"))
    else {
        return Ok(());
    };
    let a_names: Vec<&String> = a.keys().collect();
    let b_names: Vec<&String> = b.keys().collect();
    prop_assert_eq!(a_names, b_names);
    for (name, sub) in a {
        check_names(sub, &b[name])?;
    }
    Ok(())
}

const DIALECTS: [&dyn SchemaDialect; 3] = [&OpenAi, &Gemini, &Anthropic];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn gemini_output_is_in_the_subset(schema in root(), strict in any::<bool>()) {
        let out = Gemini.transform(&schema, strict);
        let mut bad = Vec::new();
        visit(&out, &mut |map| {
            for key in ["$ref", "$defs", "definitions", "additionalProperties", "$schema", "oneOf", "const", "allOf", "title"] {
                if map.contains_key(key) {
                    bad.push(key);
                }
            }
            if map.get("type").is_some_and(|t| !t.is_string()) {
                bad.push("type array");
            }
            if let Some(Value::Array(values)) = map.get("enum")
                && (!values.iter().all(Value::is_string) || map.get("type") != Some(&json!("string")))
            {
                bad.push("non-string enum");
            }
        });
        prop_assert!(bad.is_empty(), "{:?} in {}", bad, serde_json::to_string_pretty(&out).unwrap());
    }

    #[test]
    fn transforms_are_idempotent(schema in root(), strict in any::<bool>()) {
        for dialect in DIALECTS {
            let once = dialect.transform(&schema, strict);
            let twice = dialect.transform(&once, strict);
            prop_assert_eq!(
                serde_json::to_string_pretty(&once).unwrap(),
                serde_json::to_string_pretty(&twice).unwrap(),
                "{} (strict: {})", dialect.name(), strict
            );
        }
    }

    #[test]
    fn property_names_survive_in_order(schema in root(), strict in any::<bool>()) {
        for dialect in DIALECTS {
            let out = dialect.transform(&schema, strict);
            let names = |v: &Value| -> Vec<String> {
                v.get("properties").and_then(Value::as_object).map(|m| m.keys().cloned().collect()).unwrap_or_default()
            };
            prop_assert_eq!(names(&schema), names(&out), "{}", dialect.name());
            check_names(&schema, &out)?;
        }
    }
}
