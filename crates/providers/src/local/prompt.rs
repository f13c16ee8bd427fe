//! The local model's prompt: instructions, the tools, worked examples and the conversation,
//! in the format a small model follows best.
//!
//! Gemma 3 270M's GGUF carries no chat template. Two formats are offered: [`PromptFormat::Plain`]
//! (`User:` / `Assistant:` lines, the default: it chose the right tool most often in our
//! measurements, see `docs/benchmarks.md`) and [`PromptFormat::Gemma`] (Gemma's
//! `<start_of_turn>` turns). Either way the model's turns are JSON objects (see
//! [`super::turn`]), and the worked examples show only calls for the tools actually on offer:
//! the grammar already forbids anything else, the examples teach *which* call.
//!
//! The prompt is a pure function of the request, and earlier turns render identically in later
//! steps, so the engine's KV cache reuses everything up to the newest message. (The answer to a
//! tool result has a prompt of its own: [`super::answer`].)

use serde_json::{Value, json};
use toolsmith_core::{Message, ModelOutput, Part, Role, ToolDeclaration};

use super::grammar::{non_null_types, required_names};

/// How turns are marked in the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PromptFormat {
    /// `User: …` / `Assistant: …` / `Result: …` lines.
    #[default]
    Plain,
    /// Gemma's `<start_of_turn>user` / `<start_of_turn>model` turns.
    Gemma,
}

/// Tool results longer than this many characters are cut in the prompt (the context is small).
pub const MAX_RESULT_CHARS: usize = 1500;

/// Worked examples for the built-in tools: (tool, request, arguments). Only those whose tool
/// is on offer are shown. Two per tool, interleaved (a small model leans towards the last
/// examples it saw), worded unlike the benchmark's prompts so that its accuracy is not a
/// measure of copying.
const EXAMPLES: &[(&str, &str, &str)] = &[
    (
        "read",
        "Show me the contents of plan.md",
        r#"{"path": "plan.md"}"#,
    ),
    ("glob", "List every .txt file", r#"{"pattern": "**/*.txt"}"#),
    (
        "write",
        "Create todo.txt saying buy milk",
        r#"{"path": "todo.txt", "content": "buy milk"}"#,
    ),
    (
        "grep",
        "Search for the word error in the code",
        r#"{"pattern": "error"}"#,
    ),
    (
        "calculator",
        "What is 12 * 7?",
        r#"{"expression": "12 * 7"}"#,
    ),
    (
        "edit",
        "In app.py, replace port 80 with port 8080",
        r#"{"path": "app.py", "old_string": "port 80", "new_string": "port 8080"}"#,
    ),
    (
        "bash",
        "List the files here",
        r#"{"cmd": "ls", "args": ["-la"]}"#,
    ),
    (
        "run_code",
        "Run JavaScript that adds 2 and 3",
        r#"{"code": "console.log(2 + 3)"}"#,
    ),
    (
        "read",
        "What does config.toml say?",
        r#"{"path": "config.toml"}"#,
    ),
    (
        "edit",
        "Change red to blue in colors.css",
        r#"{"path": "colors.css", "old_string": "red", "new_string": "blue"}"#,
    ),
    (
        "grep",
        "Which files contain the text main?",
        r#"{"pattern": "main"}"#,
    ),
    (
        "write",
        "Write done into status.txt",
        r#"{"path": "status.txt", "content": "done"}"#,
    ),
    (
        "glob",
        "Which JSON files are there?",
        r#"{"pattern": "**/*.json"}"#,
    ),
    ("bash", "Print the current date", r#"{"cmd": "date"}"#),
    (
        "calculator",
        "How much is 250 divided by 5?",
        r#"{"expression": "250 / 5"}"#,
    ),
];

/// Builds the prompt for a request: everything up to the point where the model's next turn
/// begins.
pub fn build(messages: &[Message], tools: &[&ToolDeclaration], format: PromptFormat) -> String {
    build_split(messages, tools, format).0
}

/// [`build`], and the length in bytes of the prompt's start that depends only on the system
/// text, the tools and the format: every request with those has the same first bytes (the
/// instructions, the tool list and the worked examples), which the engine's prompt cache
/// keeps on disk across processes.
pub(crate) fn build_split(
    messages: &[Message],
    tools: &[&ToolDeclaration],
    format: PromptFormat,
) -> (String, usize) {
    let mut out = String::new();
    let mut preamble = system_text(messages);
    preamble.push_str(&tool_section(tools));
    let mut first_user = true;
    let mut turn = |out: &mut String, role: Role, text: &str| match format {
        PromptFormat::Plain => {
            let label = match role {
                Role::User => "User",
                Role::Tool => "Result",
                _ => "Assistant",
            };
            out.push_str(label);
            out.push_str(": ");
            out.push_str(text);
            out.push('\n');
        }
        PromptFormat::Gemma => {
            let who = if role == Role::Assistant {
                "model"
            } else {
                "user"
            };
            out.push_str("<start_of_turn>");
            out.push_str(who);
            out.push('\n');
            if role == Role::User && first_user {
                first_user = false;
                out.push_str(&preamble);
            }
            out.push_str(text);
            out.push_str("<end_of_turn>\n");
        }
    };
    if format == PromptFormat::Plain {
        out.push_str(&preamble);
    }
    for (tool, request, arguments) in examples(tools) {
        turn(&mut out, Role::User, request);
        turn(&mut out, Role::Assistant, &call_line(tool, arguments));
    }
    let shared = out.len();
    for message in messages {
        match message.role {
            Role::System => {}
            Role::User => turn(&mut out, Role::User, message.text().trim()),
            Role::Assistant => turn(&mut out, Role::Assistant, &assistant_turn(message)),
            Role::Tool => {
                for part in &message.content {
                    if let Part::ToolResult(result) = part {
                        turn(&mut out, Role::Tool, &result_text(&result.output));
                    }
                }
            }
        }
    }
    match format {
        PromptFormat::Plain => out.push_str("Assistant:"),
        PromptFormat::Gemma => out.push_str("<start_of_turn>model\n"),
    }
    (out, shared)
}

/// The system messages' text, each followed by a blank line.
pub(super) fn system_text(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages.iter().filter(|m| m.role == Role::System) {
        out.push_str(message.text().trim());
        out.push_str("\n\n");
    }
    out
}

/// What the model sees about the tools: how to call, and one line per tool.
fn tool_section(tools: &[&ToolDeclaration]) -> String {
    if tools.is_empty() {
        return "Reply with {\"answer\": TEXT}.\n\n".to_string();
    }
    let mut out = String::from(
        "You can use tools. To use one, reply with {\"tool\": NAME, \"arguments\": {...}}. \
         To reply to the user, reply with {\"answer\": TEXT}.\n\nTools:\n",
    );
    for tool in tools {
        out.push_str(&format!(
            "- {}: {} Arguments: {}\n",
            tool.name,
            first_sentence(&tool.description),
            signature(&tool.input_schema)
        ));
    }
    out.push('\n');
    out
}

/// The examples whose tool is on offer, in table order.
fn examples<'a>(tools: &[&ToolDeclaration]) -> impl Iterator<Item = (&'a str, &'a str, &'a str)> {
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    EXAMPLES
        .iter()
        .copied()
        .filter(move |(tool, _, _)| names.iter().any(|n| n == tool))
}

fn call_line(tool: &str, arguments: &str) -> String {
    format!("{{\"tool\": {}, \"arguments\": {arguments}}}", json!(tool))
}

/// An assistant message as the model would have written it: its calls, or its text as an
/// answer.
fn assistant_turn(message: &Message) -> String {
    let calls: Vec<String> = message
        .tool_calls()
        .map(|call| call_line(&call.tool_name, &spaced_json(&call.input)))
        .collect();
    if calls.is_empty() {
        format!("{{\"answer\": {}}}", json!(message.text()))
    } else {
        calls.join("\n")
    }
}

/// JSON with a space after `:` and `,`, as in the examples.
pub(super) fn spaced_json(value: &Value) -> String {
    let compact = value.to_string();
    let mut out = String::with_capacity(compact.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    for c in compact.chars() {
        out.push(c);
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if c == ':' || c == ',' {
            out.push(' ');
        }
    }
    out
}

/// A tool result as the prompt shows it: its text, marked if it is an error, cut to
/// [`MAX_RESULT_CHARS`].
pub(super) fn result_text(output: &ModelOutput) -> String {
    let text = output.to_text();
    let text = text.trim();
    let prefix = if output.is_error() { "Error: " } else { "" };
    match text.char_indices().nth(MAX_RESULT_CHARS) {
        Some((cut, _)) => format!("{prefix}{} [cut]", &text[..cut]),
        None => format!("{prefix}{text}"),
    }
}

/// The first clause of a description's first sentence: what the tool does, without the
/// details and examples that a small model copies into unrelated calls.
fn first_sentence(description: &str) -> String {
    let description = description.trim();
    let sentence = description
        .find(". ")
        .map_or(description, |end| &description[..end]);
    let clause = [": ", " (", " such as "]
        .iter()
        .filter_map(|cut| sentence.find(cut))
        .min()
        .map_or(sentence, |end| &sentence[..end]);
    format!("{}.", clause.trim_end_matches('.'))
}

/// A compact argument list: `{"path": string, "limit"?: integer}`.
fn signature(schema: &Value) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "{}".to_string();
    };
    let required = required_names(schema);
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, property)| {
            let optional = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            format!("{}{optional}: {}", json!(name), type_name(property))
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

fn type_name(property: &Value) -> String {
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        let shown: Vec<String> = values.iter().map(Value::to_string).collect();
        return shown.join(" | ");
    }
    match property.get("type") {
        Some(Value::String(t)) if t == "array" => {
            let item = property.get("items").map_or("any".into(), type_name);
            format!("{item}[]")
        }
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(_)) => non_null_types(property).join(" | "),
        _ => "any".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use toolsmith_core::{ToolCallPart, ToolKind, ToolResultPart};

    use super::*;

    fn read_tool() -> ToolDeclaration {
        ToolDeclaration {
            name: "read".into(),
            description: "Read a text file. Lines are numbered.".into(),
            input_schema: Arc::new(json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": ["integer", "null"]}},
                "required": ["path"]
            })),
            strict: false,
            kind: ToolKind::Function,
        }
    }

    fn history() -> Vec<Message> {
        vec![
            Message::system("Be brief."),
            Message::user("Show me README.md"),
            Message::new(
                Role::Assistant,
                vec![Part::ToolCall(ToolCallPart {
                    tool_call_id: "c1".into(),
                    tool_name: "read".into(),
                    input: json!({"path": "README.md"}),
                    provider_executed: false,
                    provider_metadata: Default::default(),
                })],
            ),
            Message::tool_results(vec![ToolResultPart {
                tool_call_id: "c1".into(),
                tool_name: "read".into(),
                output: ModelOutput::text("1\t# Hello"),
                provider_executed: false,
                provider_metadata: Default::default(),
            }]),
        ]
    }

    #[test]
    fn the_plain_prompt_has_tools_examples_and_history() {
        let tool = read_tool();
        let prompt = build(&history(), &[&tool], PromptFormat::Plain);
        insta::assert_snapshot!(prompt, @r#"
        Be brief.

        You can use tools. To use one, reply with {"tool": NAME, "arguments": {...}}. To reply to the user, reply with {"answer": TEXT}.

        Tools:
        - read: Read a text file. Arguments: {"path": string, "limit"?: integer}

        User: Show me the contents of plan.md
        Assistant: {"tool": "read", "arguments": {"path": "plan.md"}}
        User: What does config.toml say?
        Assistant: {"tool": "read", "arguments": {"path": "config.toml"}}
        User: Show me README.md
        Assistant: {"tool": "read", "arguments": {"path": "README.md"}}
        Result: 1	# Hello
        Assistant:
        "#);
    }

    #[test]
    fn earlier_steps_are_a_prefix_of_later_ones() {
        let tool = read_tool();
        for format in [PromptFormat::Plain, PromptFormat::Gemma] {
            let all = history();
            let before = build(&all[..2], &[&tool], format);
            let after = build(&all, &[&tool], format);
            let stem = before
                .strip_suffix("Assistant:")
                .or_else(|| before.strip_suffix("<start_of_turn>model\n"))
                .unwrap();
            assert!(after.starts_with(stem), "{format:?}");
        }
    }

    #[test]
    fn the_shared_start_is_the_same_for_every_conversation_and_ends_before_it() {
        let tool = read_tool();
        for format in [PromptFormat::Plain, PromptFormat::Gemma] {
            let all = history();
            let (one, one_shared) = build_split(&all, &[&tool], format);
            let elsewhere = [all[0].clone(), Message::user("Open Cargo.toml")];
            let (other, other_shared) = build_split(&elsewhere, &[&tool], format);
            assert_eq!(one_shared, other_shared, "{format:?}");
            assert_eq!(one[..one_shared], other[..other_shared], "{format:?}");
            // Everything from the first message of the conversation on comes after it.
            let first_request = all[1].text();
            assert!(one_shared > 100, "{format:?}: {one_shared}");
            assert!(
                !one[..one_shared].contains(first_request.trim()),
                "{format:?}"
            );
            assert!(
                one[one_shared..].contains(first_request.trim()),
                "{format:?}"
            );
        }
    }

    #[test]
    fn gemma_turns_carry_the_preamble_in_the_first_user_turn() {
        let tool = read_tool();
        let prompt = build(&history()[1..2], &[&tool], PromptFormat::Gemma);
        assert!(prompt.starts_with("<start_of_turn>user\nYou can use tools."));
        assert!(prompt.ends_with("Show me README.md<end_of_turn>\n<start_of_turn>model\n"));
    }

    #[test]
    fn long_results_are_cut_and_errors_marked() {
        let long = "x".repeat(MAX_RESULT_CHARS + 10);
        let text = result_text(&ModelOutput::text(long));
        assert!(text.ends_with("x [cut]"));
        assert_eq!(text.chars().count(), MAX_RESULT_CHARS + 6);
        assert_eq!(
            result_text(&ModelOutput::error_text("no such file")),
            "Error: no such file"
        );
    }
}
