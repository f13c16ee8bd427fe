//! Text a turn cannot avoid, so the engine can evaluate it in one batch instead of generating
//! it a token at a time ("jump-forward" decoding).
//!
//! Generating a token costs one pass over the model's weights, and on a CPU that pass is bound
//! by memory bandwidth: evaluating ten known tokens in one batch costs little more than
//! generating one. Much of a call is boilerplate once its first characters are out:
//! `{"tool": "read` can only go on as `", "arguments": {"path":` (the tool's first required
//! property comes first in the grammar). [`Skeleton`] knows, for the turn's alternatives, the
//! canonical text each begins with, in the prompt's own spacing; once the line being written is
//! a prefix of only one of them, the rest of that one is forced.
//!
//! The skeleton never widens the grammar: the engine still checks each forced token against it
//! and stops forcing at the first token it refuses, so a skeleton that guessed the spacing wrong
//! only forces less. Forced text stops just after a `:`, so the model still writes the space
//! and the value itself, as it saw in the examples (a forced trailing space would split the
//! ` "` token it would have chosen).

use serde_json::Value;
use toolsmith_core::ToolDeclaration;

use super::grammar::{TurnShape, required_names};

/// The canonical beginnings of a turn's alternatives.
#[derive(Debug, Clone, Default)]
pub(crate) struct Skeleton {
    starts: Vec<String>,
}

impl Skeleton {
    /// The beginnings of the lines a turn of `shape` may write with `tools` on offer: an answer
    /// (`{"answer":`) when the shape allows one, and a call to each tool.
    pub(crate) fn new(tools: &[&ToolDeclaration], shape: TurnShape) -> Self {
        let answer = shape != TurnShape::Calls || tools.is_empty();
        let calls = shape != TurnShape::Answer;
        let mut starts = Vec::new();
        if answer {
            starts.push(r#"{"answer":"#.to_string());
        }
        if calls {
            starts.extend(tools.iter().map(|tool| call_start(tool)));
        }
        Skeleton { starts }
    }

    /// The text that must follow `line` (the current line of the turn so far), if any: the
    /// rest of the one beginning that `line` is a proper prefix of. While `line` could still
    /// become two of them (`{"tool": "w` with `write` and `web_fetch` on offer) nothing is
    /// forced, not even their common part: the choice between them is the model's, and text it
    /// did not write itself, tokenised our way, would sway it. Nor on an empty line: the model
    /// chooses whether to write another one.
    pub(crate) fn forced(&self, line: &str) -> Option<&str> {
        if line.is_empty() {
            return None;
        }
        let mut rests = self
            .starts
            .iter()
            .filter_map(|start| start.strip_prefix(line));
        let rest = rests.next()?;
        (rests.next().is_none() && !rest.is_empty()).then_some(rest)
    }
}

/// `{"tool": "NAME", "arguments":`, and ` {"FIRST":` after it when the arguments are an object
/// whose grammar begins with a required property (required properties come first, in schema
/// order).
fn call_start(tool: &ToolDeclaration) -> String {
    let mut start = format!(
        r#"{{"tool": {}, "arguments":"#,
        Value::String(tool.name.to_string())
    );
    if let Some(first) = first_property(&tool.input_schema) {
        start.push_str(&format!(" {{{}:", Value::String(first.to_string())));
    }
    start
}

/// The property an object schema's grammar must begin with: its first required property, in
/// the order of `properties`.
fn first_property(schema: &Value) -> Option<&str> {
    if schema.get("$ref").is_some() || schema.get("type") != Some(&Value::from("object")) {
        return None;
    }
    let required = required_names(schema);
    schema
        .get("properties")?
        .as_object()?
        .keys()
        .map(String::as_str)
        .find(|name| required.contains(name))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::tests::tool;
    use super::*;

    fn skeleton(shape: TurnShape) -> Skeleton {
        let read = tool(
            "read",
            json!({"type": "object", "properties": {"offset": {"type": "integer"}, "path": {"type": "string"}}, "required": ["path"]}),
        );
        let write = tool(
            "write",
            json!({"type": "object", "properties": {"path": {}, "content": {}}, "required": ["path", "content"]}),
        );
        let wild = tool("wild", json!({}));
        Skeleton::new(&[&read, &write, &wild], shape)
    }

    #[test]
    fn a_tool_name_forces_the_rest_of_the_call_up_to_its_first_required_property() {
        let s = skeleton(TurnShape::Either);
        assert_eq!(
            s.forced(r#"{"tool": "read"#),
            Some(r#"", "arguments": {"path":"#)
        );
        assert_eq!(
            s.forced(r#"{"tool": "r"#),
            Some(r#"ead", "arguments": {"path":"#)
        );
        assert_eq!(s.forced(r#"{"tool": "wi"#), Some(r#"ld", "arguments":"#));
        assert_eq!(s.forced(r#"{"a"#), Some(r#"nswer":"#));
        assert_eq!(
            skeleton(TurnShape::Answer).forced("{"),
            Some(r#""answer":"#)
        );
    }

    #[test]
    fn nothing_is_forced_while_the_model_still_has_a_choice() {
        let s = skeleton(TurnShape::Either);
        // Two tools begin with `w`; an answer or a call may follow `{"`.
        assert_eq!(s.forced(r#"{"tool": "w"#), None);
        assert_eq!(s.forced(r#"{"tool": ""#), None);
        assert_eq!(s.forced("{"), None);
        assert_eq!(s.forced(r#"{"t"#), None);
        assert_eq!(skeleton(TurnShape::Calls).forced(r#"{""#), None);
    }

    #[test]
    fn nothing_is_forced_on_an_empty_line_past_the_skeleton_or_off_it() {
        let s = skeleton(TurnShape::Either);
        assert_eq!(s.forced(""), None);
        assert_eq!(s.forced(r#"{"tool": "read", "arguments": {"path":"#), None);
        assert_eq!(s.forced(r#"{"tool":"read"#), None);
        assert_eq!(s.forced(r#"{"answer": "Hi"#), None);
    }
}
