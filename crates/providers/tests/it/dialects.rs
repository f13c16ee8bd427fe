//! The per-provider schema dialects: exact outputs per dialect. Their properties over random
//! schemas (Gemini's output in its subset, idempotence, property names and order) are in
//! `dialect_properties.rs`.

use schemars::JsonSchema;
use serde_json::{Value, json};
use toolsmith_providers::dialect::{Anthropic, Gemini, OpenAi, SchemaDialect, gemini};

/// Order-sensitive equality (`Value`'s `==` ignores key order).
#[track_caller]
fn assert_json(actual: &Value, expected: &Value) {
    let actual = serde_json::to_string_pretty(actual).unwrap();
    let expected = serde_json::to_string_pretty(expected).unwrap();
    assert_eq!(
        actual, expected,
        "\nactual:\n{actual}\nexpected:\n{expected}"
    );
}

#[allow(dead_code)]
#[derive(JsonSchema)]
/// A search request.
struct Search {
    /// What to look for.
    query: String,
    /// How many results.
    limit: Option<u32>,
    /// Where to look.
    scope: Scope,
    filters: Vec<Filter>,
    mode: Mode,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Scope {
    path: String,
    depth: Option<i64>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Filter {
    field: String,
    value: String,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
enum Mode {
    Fast,
    Thorough,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
/// A directory tree.
struct Tree {
    name: String,
    root: Node,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
struct Node {
    label: String,
    children: Vec<Node>,
}

#[allow(dead_code)]
#[derive(JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
/// A shape.
enum Shape {
    Circle { r: f64 },
    Square { side: f64, label: Option<String> },
}

fn search_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Search)).unwrap()
}

fn tree_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Tree)).unwrap()
}

// ---------------------------------------------------------------- OpenAI

#[test]
fn openai_inlines_definitions_and_slims() {
    let out = OpenAi.transform(&search_schema(), false);
    assert_json(
        &out,
        &json!({
            "description": "A search request.",
            "type": "object",
            "properties": {
                "query": {"description": "What to look for.", "type": "string"},
                "limit": {
                    "description": "How many results.",
                    "type": ["integer", "null"],
                    "format": "uint32",
                    "minimum": 0
                },
                "scope": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "depth": {"type": ["integer", "null"], "format": "int64"}
                    },
                    "required": ["path"],
                    "description": "Where to look."
                },
                "filters": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "field": {"type": "string"},
                            "value": {"type": "string"}
                        },
                        "required": ["field", "value"]
                    }
                },
                "mode": {"type": "string", "enum": ["Fast", "Thorough"]}
            },
            "required": ["query", "scope", "filters", "mode"]
        }),
    );
}

#[test]
fn openai_strict_closes_objects_and_requires_everything() {
    let out = OpenAi.transform(&search_schema(), true);
    assert_json(
        &out["required"],
        &json!(["query", "limit", "scope", "filters", "mode"]),
    );
    assert_json(&out["additionalProperties"], &json!(false));
    assert_json(
        &out["properties"]["scope"],
        &json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "depth": {"type": ["integer", "null"], "format": "int64"}
            },
            "required": ["path", "depth"],
            "description": "Where to look.",
            "additionalProperties": false
        }),
    );
    assert_json(
        &out["properties"]["filters"]["items"]["additionalProperties"],
        &json!(false),
    );
}

#[test]
fn openai_keeps_recursive_definitions_only() {
    let out = OpenAi.transform(&tree_schema(), true);
    assert_json(
        &out,
        &json!({
            "description": "A directory tree.",
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "root": {"$ref": "#/$defs/Node"}
            },
            "required": ["name", "root"],
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "label": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                    },
                    "required": ["label", "children"],
                    "additionalProperties": false
                }
            },
            "additionalProperties": false
        }),
    );
}

#[test]
fn openai_keeps_root_recursion_and_reference_siblings() {
    let schema = json!({
        "type": "object",
        "properties": {
            "next": {"$ref": "#", "description": "The rest."},
            "unit": {"$ref": "#/definitions/Unit", "description": "Overrides."},
            "title": {"type": "string", "title": "Title", "default": "x"}
        },
        "definitions": {"Unit": {"type": "string", "description": "A unit.", "examples": ["m"]}}
    });
    assert_json(
        &OpenAi.transform(&schema, false),
        &json!({
            "type": "object",
            "properties": {
                "next": {"$ref": "#", "description": "The rest."},
                "unit": {"type": "string", "description": "Overrides."},
                "title": {"type": "string"}
            }
        }),
    );
}

#[test]
fn openai_is_idempotent_with_kept_definitions() {
    // Found by `transforms_are_idempotent`: a second pass must put the kept `$defs` back where
    // the first pass did, before the keywords strict mode appends.
    let schema = json!({
        "type": "object",
        "properties": {"q": {"$ref": "#/$defs/Leaf"}, "r": {"$ref": "#/$defs/Used"}},
        "required": ["q", "r"],
        "$defs": {
            "Leaf": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/Leaf"}]},
            "Used": {"type": "integer"},
            "Unused": {"type": "boolean"}
        }
    });
    let once = OpenAi.transform(&schema, true);
    assert_json(
        &once,
        &json!({
            "type": "object",
            "properties": {
                "q": {"$ref": "#/$defs/Leaf"},
                "r": {"type": "integer"}
            },
            "required": ["q", "r"],
            "$defs": {"Leaf": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/Leaf"}]}},
            "additionalProperties": false
        }),
    );
    assert_json(&OpenAi.transform(&once, true), &once);
}

// ---------------------------------------------------------------- Gemini

#[test]
fn gemini_schemars_struct() {
    let out = Gemini.transform(&search_schema(), false);
    assert_json(
        &out,
        &json!({
            "description": "A search request.",
            "type": "object",
            "properties": {
                "query": {"description": "What to look for.", "type": "string"},
                "limit": {"description": "How many results.", "type": "integer", "minimum": 0, "nullable": true},
                "scope": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string"},
                        "depth": {"type": "integer", "format": "int64", "nullable": true}
                    },
                    "required": ["path"],
                    "description": "Where to look."
                },
                "filters": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "field": {"type": "string"},
                            "value": {"type": "string"}
                        },
                        "required": ["field", "value"]
                    }
                },
                "mode": {"type": "string", "enum": ["Fast", "Thorough"]}
            },
            "required": ["query", "scope", "filters", "mode"]
        }),
    );
}

#[test]
fn gemini_unrolls_recursion_to_a_bounded_depth() {
    let out = Gemini.transform(&tree_schema(), false);
    let node = |children: Value| {
        json!({
            "type": "object",
            "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": children}
            },
            "required": ["label", "children"]
        })
    };
    assert_json(
        &out,
        &json!({
            "description": "A directory tree.",
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "root": node(node(json!({"type": "object"})))
            },
            "required": ["name", "root"]
        }),
    );
}

#[test]
fn gemini_root_recursion_and_unresolvable_references() {
    let schema = json!({
        "type": "object",
        "properties": {
            "value": {"type": "integer"},
            "next": {"$ref": "#", "description": "The rest."},
            "remote": {"$ref": "https://example.com/schema.json"}
        },
        "required": ["value"]
    });
    assert_json(
        &Gemini.transform(&schema, false),
        &json!({
            "type": "object",
            "properties": {
                "value": {"type": "integer"},
                "next": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "integer"},
                        "next": {"type": "object", "description": "The rest."},
                        "remote": {"type": "object"}
                    },
                    "required": ["value"],
                    "description": "The rest."
                },
                "remote": {"type": "object"}
            },
            "required": ["value"]
        }),
    );
}

#[test]
fn gemini_drops_unsupported_keywords() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:x",
        "$comment": "c",
        "title": "Args",
        "type": "object",
        "properties": {
            "title": {"type": "string", "title": "Title", "default": "t", "examples": ["e"]},
            "default": {"type": "number", "exclusiveMinimum": 0, "maximum": 10, "format": "double"},
            "tags": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"},
                "minItems": 1,
                "maxItems": 3,
                "uniqueItems": true
            },
            "meta": {"type": "object", "additionalProperties": {"type": "string"}},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
            "empty": {"type": "object", "properties": {}}
        },
        "required": ["title", "missing"],
        "additionalProperties": false
    });
    assert_json(
        &Gemini.transform(&schema, true),
        &json!({
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "default": {"type": "number", "maximum": 10, "format": "double"},
                "tags": {
                    "type": "array",
                    "items": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"},
                    "minItems": 1,
                    "maxItems": 3
                },
                "meta": {"type": "object"},
                "pair": {"type": "array"},
                "empty": {"type": "object"}
            },
            "required": ["title"]
        }),
    );
}

#[test]
fn gemini_types_nullables_and_enums() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"], "format": "date-time"},
            "b": {"type": ["string", "integer"], "description": "Either."},
            "c": {"type": "null"},
            "d": {"const": "only"},
            "e": {"const": 7, "description": "Lucky."},
            "f": {"enum": ["x", "y", null]},
            "g": {"type": "integer", "enum": [60, 1440]},
            "h": {"enum": [true, 1.5]},
            "i": {"type": "string", "format": "uuid"},
            "j": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
            "k": {"type": "string", "format": "enum", "enum": ["n", "s"]}
        }
    });
    assert_json(
        &Gemini.transform(&schema, false),
        &json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "format": "date-time", "nullable": true},
                "b": {"anyOf": [{"type": "string"}, {"type": "integer"}], "description": "Either."},
                "c": {"nullable": true},
                "d": {"type": "string", "enum": ["only"]},
                "e": {"type": "integer", "description": "Lucky. (allowed values: 7)"},
                "f": {"type": "string", "enum": ["x", "y"], "nullable": true},
                "g": {"type": "integer", "description": "allowed values: 60, 1440"},
                "h": {"description": "allowed values: true, 1.5"},
                "i": {"type": "string", "description": "format: uuid"},
                "j": {"type": "integer", "minimum": 0, "maximum": 255},
                "k": {"type": "string", "format": "enum", "enum": ["n", "s"]}
            }
        }),
    );
}

#[test]
fn gemini_combinators() {
    let schema = json!({
        "type": "object",
        "properties": {
            "maybe": {
                "description": "Optional address.",
                "anyOf": [
                    {"type": "object", "properties": {"street": {"type": "string"}}, "additionalProperties": false},
                    {"type": "null"}
                ]
            },
            "either": {
                "oneOf": [
                    {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]},
                    {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]},
                    {"type": "null"}
                ]
            },
            "both": {
                "description": "Merged.",
                "allOf": [
                    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "integer"}}, "required": ["b"], "additionalProperties": false}
                ]
            }
        }
    });
    assert_json(
        &Gemini.transform(&schema, false),
        &json!({
            "type": "object",
            "properties": {
                "maybe": {
                    "description": "Optional address.",
                    "type": "object",
                    "properties": {"street": {"type": "string"}},
                    "nullable": true
                },
                "either": {
                    "anyOf": [
                        {"type": "object", "properties": {"kind": {"type": "string", "enum": ["circle"]}, "r": {"type": "number"}}, "required": ["kind", "r"]},
                        {"type": "object", "properties": {"kind": {"type": "string", "enum": ["square"]}, "side": {"type": "number"}}, "required": ["kind", "side"]}
                    ],
                    "nullable": true
                },
                "both": {
                    "description": "Merged.",
                    "type": "object",
                    "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                    "required": ["a", "b"]
                }
            }
        }),
    );
}

#[test]
fn gemini_schemars_tagged_enum() {
    // schemars: `oneOf` of objects whose tag is a `const`, `Option<String>` as a type array.
    let schema = serde_json::to_value(schemars::schema_for!(Shape)).unwrap();
    assert_json(
        &Gemini.transform(&schema, false),
        &json!({
            "description": "A shape.",
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": ["circle"]},
                        "r": {"type": "number", "format": "double"}
                    },
                    "required": ["kind", "r"]
                },
                {
                    "type": "object",
                    "properties": {
                        "kind": {"type": "string", "enum": ["square"]},
                        "side": {"type": "number", "format": "double"},
                        "label": {"type": "string", "nullable": true}
                    },
                    "required": ["kind", "side"]
                }
            ]
        }),
    );
}

#[test]
fn gemini_empty_object_detection() {
    assert!(gemini::is_empty_object(&Gemini.transform(
        &json!({"type": "object", "properties": {}, "additionalProperties": false}),
        false
    )));
    assert!(gemini::is_empty_object(&json!({"type": "object"})));
    assert!(gemini::is_empty_object(&json!(true)));
    assert!(!gemini::is_empty_object(
        &json!({"type": "object", "anyOf": []})
    ));
    assert!(!gemini::is_empty_object(
        &Gemini.transform(&search_schema(), false)
    ));
}

// ---------------------------------------------------------------- Anthropic

#[test]
fn anthropic_keeps_the_schema_but_identification() {
    let out = Anthropic.transform(&search_schema(), false);
    let mut expected = search_schema();
    expected.as_object_mut().unwrap().shift_remove("$schema");
    assert_json(&out, &expected);
    assert!(out.get("$defs").is_some(), "Anthropic accepts $defs");
}

#[test]
fn anthropic_root_is_an_object() {
    assert_json(
        &Anthropic.transform(&json!({"$id": "urn:x", "description": "No args."}), false),
        &json!({"type": "object", "properties": {}, "description": "No args."}),
    );
    assert_json(
        &Anthropic.transform(&json!(true), false),
        &json!({"type": "object", "properties": {}}),
    );
    assert_json(
        &Anthropic.transform(
            &json!({"type": "object", "additionalProperties": {"type": "string"}}),
            false,
        ),
        &json!({"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}),
    );
    assert_json(
        &Anthropic.transform(
            &json!({"type": "array", "items": {"type": "string"}}),
            false,
        ),
        &json!({
            "type": "object",
            "properties": {"input": {"type": "array", "items": {"type": "string"}}},
            "required": ["input"]
        }),
    );
}

#[test]
fn anthropic_strict_closes_objects() {
    let schema = json!({
        "type": "object",
        "properties": {
            "inner": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "map": {"type": "object", "additionalProperties": {"type": "integer"}},
            "opt": {"anyOf": [{"type": "string"}, {"type": "null"}], "$comment": "c"}
        },
        "required": ["inner"]
    });
    assert_json(
        &Anthropic.transform(&schema, true),
        &json!({
            "type": "object",
            "properties": {
                "inner": {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": false},
                "map": {"type": "object", "additionalProperties": {"type": "integer"}},
                "opt": {"anyOf": [{"type": "string"}, {"type": "null"}]}
            },
            "required": ["inner"],
            "additionalProperties": false
        }),
    );
}

#[test]
fn dialect_names_are_distinct() {
    let dialects: [&dyn SchemaDialect; 3] = [&OpenAi, &Gemini, &Anthropic];
    let names: Vec<_> = dialects.iter().map(|d| d.name()).collect();
    assert_eq!(names, ["openai", "gemini", "anthropic"]);
}
