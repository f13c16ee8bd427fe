//! The turn grammar: what the local model may write, derived from the tools' JSON Schemas.
//!
//! A turn is `{"answer": string}`, or one or more calls `{"tool": NAME, "arguments": ARGS}`
//! one per line, where each call's `ARGS` matches that tool's input schema. The schema of one
//! turn object is built here ([`turn_schema`]) and turned into GBNF by llama.cpp's own
//! `json_schema_to_grammar` (the full schema vocabulary: `$ref`, `oneOf`, `enum`, formats,
//! lengths…); only the root rule, which JSON Schema cannot express (one or more objects, one
//! per line), is written here.

use serde_json::{Map, Value, json};
use toolsmith_core::{ModelError, ModelErrorKind, ToolDeclaration};

/// Which kinds of turn the grammar allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnShape {
    /// An answer or calls: the model decides.
    Either,
    /// Only an answer (tool choice `none`, or the tool-round policy says it is time to answer).
    Answer,
    /// Only calls (tool choice `required` or a named tool).
    Calls,
}

/// The GBNF rule names `json_schema_to_grammar` gives `#/$defs/answer` and `#/$defs/call`.
const ANSWER_RULE: &str = "ref-defs-answer";
const CALL_RULE: &str = "ref-defs-call";

/// The JSON Schema of one turn object, with the answer and call shapes as `$defs` (`answer`,
/// `call`), and each tool's own `$defs` hoisted under a prefix so that its `$ref`s still
/// resolve.
///
/// ```
/// # use std::sync::Arc;
/// # use serde_json::json;
/// # use toolsmith_core::{ToolDeclaration, ToolKind};
/// use toolsmith_providers::local::grammar::turn_schema;
///
/// let read = ToolDeclaration {
///     name: "read".into(),
///     description: "Read a file.".into(),
///     input_schema: Arc::new(json!({"type": "object", "properties": {"path": {"type": "string"}}})),
///     strict: false,
///     kind: ToolKind::Function,
/// };
/// let schema = turn_schema(&[&read]);
/// assert_eq!(schema["$defs"]["call"]["oneOf"][0]["properties"]["tool"], json!({"const": "read"}));
/// ```
pub fn turn_schema(tools: &[&ToolDeclaration]) -> Value {
    let mut defs = Map::new();
    let answer_only = tools.is_empty();
    defs.insert(
        "answer".into(),
        json!({
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        }),
    );
    let calls: Vec<Value> = tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let prefix = format!("t{i}-");
            let arguments = hoist_defs(&tool.input_schema, &prefix, &mut defs);
            json!({
                "type": "object",
                "properties": {
                    "tool": {"const": &*tool.name},
                    "arguments": arguments,
                },
                "required": ["tool", "arguments"],
            })
        })
        .collect();
    if answer_only {
        // An empty `oneOf` matches nothing, which json_schema_to_grammar rejects.
        return json!({"$defs": defs, "$ref": "#/$defs/answer"});
    }
    defs.insert("call".into(), json!({ "oneOf": calls }));
    json!({
        "$defs": defs,
        "oneOf": [{"$ref": "#/$defs/answer"}, {"$ref": "#/$defs/call"}],
    })
}

/// The tool without its optional numeric arguments: what the local model is offered by
/// default. A small model fills optional numbers with noise (`"offset": 1000000000000000` for
/// a plain read); the optional strings, arrays and flags it is offered are the ones requests
/// actually name (`bash`'s `args`, `edit`'s `old_string` / `new_string`).
///
/// ```
/// # use std::sync::Arc;
/// # use serde_json::json;
/// # use toolsmith_core::{ToolDeclaration, ToolKind};
/// use toolsmith_providers::local::grammar::without_optional_numbers;
///
/// let read = ToolDeclaration {
///     name: "read".into(),
///     description: "Read a file.".into(),
///     input_schema: Arc::new(json!({
///         "type": "object",
///         "properties": {
///             "path": {"type": "string"},
///             "encoding": {"type": ["string", "null"]},
///             "offset": {"type": ["integer", "null"]}
///         },
///         "required": ["path"]
///     })),
///     strict: false,
///     kind: ToolKind::Function,
/// };
/// let slim = without_optional_numbers(&read);
/// let kept: Vec<&String> = slim.input_schema["properties"].as_object().unwrap().keys().collect();
/// assert_eq!(kept, ["path", "encoding"]);
/// ```
pub fn without_optional_numbers(tool: &ToolDeclaration) -> ToolDeclaration {
    let schema = &*tool.input_schema;
    let required = required_names(schema);
    let is_number = |property: &Value| {
        let types = non_null_types(property);
        !types.is_empty() && types.iter().all(|t| *t == "integer" || *t == "number")
    };
    let mut slim = tool.clone();
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        let kept: Map<String, Value> = properties
            .iter()
            .filter(|(name, value)| required.contains(&name.as_str()) || !is_number(value))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        if kept.len() < properties.len() {
            let mut schema = schema.clone();
            schema["properties"] = Value::Object(kept);
            slim.input_schema = std::sync::Arc::new(schema);
        }
    }
    slim
}

/// The names an object schema lists as `required`.
pub(super) fn required_names(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A property's `type`, one name or a list, without `null`.
pub(super) fn non_null_types(property: &Value) -> Vec<&str> {
    match property.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|t| *t != "null")
    .collect()
}

/// Moves a tool schema's `$defs` / `definitions` into `defs` under `prefix`, rewriting its
/// `$ref`s (a `#` root reference becomes a reference to the schema itself, also hoisted).
fn hoist_defs(schema: &Value, prefix: &str, defs: &mut Map<String, Value>) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(object) = &mut schema {
        for key in ["$defs", "definitions"] {
            if let Some(Value::Object(own)) = object.remove(key) {
                for (name, def) in own {
                    let mut def = def;
                    rewrite_refs(&mut def, prefix);
                    defs.insert(format!("{prefix}{name}"), def);
                }
            }
        }
    }
    rewrite_refs(&mut schema, prefix);
    if references_root(&schema, prefix) {
        defs.insert(format!("{prefix}root"), schema.clone());
    }
    schema
}

fn rewrite_refs(value: &mut Value, prefix: &str) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get_mut("$ref") {
                let name = reference
                    .strip_prefix("#/$defs/")
                    .or_else(|| reference.strip_prefix("#/definitions/"));
                if let Some(name) = name {
                    *reference = format!("#/$defs/{prefix}{name}");
                } else if reference == "#" {
                    *reference = format!("#/$defs/{prefix}root");
                }
            }
            object.values_mut().for_each(|v| rewrite_refs(v, prefix));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| rewrite_refs(v, prefix)),
        _ => {}
    }
}

fn references_root(value: &Value, prefix: &str) -> bool {
    let root = format!("#/$defs/{prefix}root");
    fn walk(value: &Value, root: &str) -> bool {
        match value {
            Value::Object(object) => {
                object.get("$ref").and_then(Value::as_str) == Some(root)
                    || object.values().any(|v| walk(v, root))
            }
            Value::Array(items) => items.iter().any(|v| walk(v, root)),
            _ => false,
        }
    }
    walk(value, &root)
}

/// Replaces the generated grammar's root rule with the turn's: an answer, or calls one per
/// line, or either.
///
/// `generated` is what `json_schema_to_grammar` made of [`turn_schema`]; `has_tools` is false
/// when no tool is on offer (the call rule then does not exist).
///
/// # Errors
///
/// `Other` if the generated grammar lacks the rules this relies on (a llama.cpp upgrade that
/// renamed them): loud, since a guessed grammar could allow invalid calls.
pub fn with_turn_root(
    generated: &str,
    shape: TurnShape,
    has_tools: bool,
) -> Result<String, ModelError> {
    let calls = format!("{CALL_RULE} (\"\\n\" {CALL_RULE})*");
    let root = match (shape, has_tools) {
        (TurnShape::Answer, _) | (_, false) => ANSWER_RULE.to_string(),
        (TurnShape::Calls, true) => calls,
        (TurnShape::Either, true) => format!("{ANSWER_RULE} | {calls}"),
    };
    let mut out = String::with_capacity(generated.len() + 64);
    let mut replaced = false;
    for line in generated.lines() {
        if line.starts_with("root ::=") {
            out.push_str(&format!("root ::= {root}\n"));
            replaced = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    let defines = |rule: &str| out.lines().any(|l| l.starts_with(&format!("{rule} ::=")));
    if !replaced || !defines(ANSWER_RULE) || (has_tools && !defines(CALL_RULE)) {
        return Err(ModelError::new(
            ModelErrorKind::Other,
            format!(
                "The local model's turn grammar could not be built: llama.cpp's \
                 json_schema_to_grammar no longer names the rules `root`, `{ANSWER_RULE}` and \
                 `{CALL_RULE}`."
            ),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::tests::tool;
    use super::*;

    #[test]
    fn tool_defs_are_hoisted_under_a_prefix_and_refs_follow() {
        let a = tool(
            "a",
            json!({
                "type": "object",
                "properties": {"p": {"$ref": "#/$defs/Point"}, "me": {"$ref": "#"}},
                "$defs": {"Point": {"type": "object", "properties": {"x": {"$ref": "#/definitions/N"}}}},
                "definitions": {"N": {"type": "number"}}
            }),
        );
        let b = tool(
            "b",
            json!({"type": "object", "properties": {"q": {"$ref": "#/$defs/Point"}}, "$defs": {"Point": {"type": "string"}}}),
        );
        let schema = turn_schema(&[&a, &b]);
        let defs = &schema["$defs"];
        assert_eq!(defs["t0-Point"]["properties"]["x"]["$ref"], "#/$defs/t0-N");
        assert_eq!(defs["t0-N"], json!({"type": "number"}));
        assert_eq!(defs["t1-Point"], json!({"type": "string"}));
        let a_args = &defs["call"]["oneOf"][0]["properties"]["arguments"];
        assert_eq!(a_args["properties"]["p"]["$ref"], "#/$defs/t0-Point");
        assert_eq!(a_args["properties"]["me"]["$ref"], "#/$defs/t0-root");
        assert!(a_args.get("$defs").is_none());
        assert_eq!(
            defs["t0-root"]["properties"]["p"]["$ref"],
            "#/$defs/t0-Point"
        );
        assert_eq!(
            defs["call"]["oneOf"][1]["properties"]["arguments"]["properties"]["q"]["$ref"],
            "#/$defs/t1-Point"
        );
    }

    #[test]
    fn the_root_rule_is_the_turn_shape() {
        let generated = "root ::= ref-defs-answer | ref-defs-call\nref-defs-answer ::= x\nref-defs-call ::= y\n";
        let either = with_turn_root(generated, TurnShape::Either, true).unwrap();
        assert!(
            either
                .starts_with("root ::= ref-defs-answer | ref-defs-call (\"\\n\" ref-defs-call)*\n")
        );
        let answer = with_turn_root(generated, TurnShape::Answer, true).unwrap();
        assert!(answer.starts_with("root ::= ref-defs-answer\n"));
        let calls = with_turn_root(generated, TurnShape::Calls, true).unwrap();
        assert!(calls.starts_with("root ::= ref-defs-call (\"\\n\" ref-defs-call)*\n"));
        let no_tools = with_turn_root(generated, TurnShape::Calls, false).unwrap();
        assert!(no_tools.starts_with("root ::= ref-defs-answer\n"));
        let err = with_turn_root("root ::= x\n", TurnShape::Either, true).unwrap_err();
        assert!(
            err.message.contains("json_schema_to_grammar"),
            "{}",
            err.message
        );
    }
}
