//! The answer after a tool result: a prompt of its own, a length bound and a stop rule.
//!
//! When a turn may only be an answer (the tool-round policy, or tool choice `none`) and the
//! newest message is a tool result, the model is not given the tool prompt of [`super::prompt`]
//! (instructions, tools, worked calls, the conversation) but a short one built for this step:
//! the request, its calls and their results, after worked answers that restate their result in
//! a sentence:
//!
//! ```text
//! Answer the request from the tool results, in one or two short sentences.
//!
//! Request: What is 12 * 7?
//! Call: calculator {"expression": "12 * 7"}
//! Result:
//!   12 * 7 = 84
//! Answer: {"answer": "12 * 7 is 84."}
//!
//! …
//!
//! Request: Show me the contents of README.md
//! Call: read {"path": "README.md"}
//! Result:
//!   # Sample workspace
//!   …
//! Answer:
//! ```
//!
//! Gemma 3 270M, given the tool prompt after a result, mostly echoed a word of it (`ok`, `yes`)
//! or rambled ("I'm sorry, I don't have a list of tasks to do. … I will do my very best to
//! help."); given this one, it mostly answers in kind (docs/providers.md, "The answer after a
//! tool result", has the measurements). Only the newest request is shown: earlier turns of the
//! conversation are the tool prompt's business. The instructions and the worked answers come
//! first and do not depend on the request, so the engine's prompt cache keeps them like the
//! tool prompt's start. The prompt is plain text in either [`super::PromptFormat`].
//!
//! The answer is also bounded: [`MAX_TOKENS`] unless the request sets `maxOutputTokens`, and it
//! ends after [`SENTENCES`] sentences ([`sentences`] says what one is) unless the request's
//! provider options say otherwise (`{"local": {"answerSentences": n}}`, 0 for no limit).

use std::fmt::Write;

use serde_json::Value;
use toolsmith_core::{Message, Part, Role};

use super::prompt::{result_text, spaced_json, system_text};

/// The most tokens an answer after a tool result may take when the request does not say.
pub const MAX_TOKENS: u32 = 100;

/// The sentences after which an answer to a tool result ends, unless the request says.
pub const SENTENCES: u32 = 3;

const INSTRUCTION: &str =
    "Answer the request from the tool results, in one or two short sentences.\n\n";

/// Worked answers: (request, tool, arguments, result as the prompt shows it, answer). One per
/// kind of result, in the built-in tools' formats: a number, a file, two errors, a list, a
/// command's output, a search, an empty one, a script's output and a confirmation. Each answer
/// restates its result's own words. They are worded unlike the benchmark's prompts, so that its
/// scores are not a measure of copying, and the confirmation comes last: a small model leans
/// towards the last example it saw, and with a script's output last it answered `It printed 5.`
/// to unrelated results.
const EXAMPLES: &[(&str, &str, &str, &str, &str)] = &[
    (
        "What is 12 * 7?",
        "calculator",
        r#"{"expression": "12 * 7"}"#,
        "12 * 7 = 84",
        "12 * 7 is 84.",
    ),
    (
        "What does config.toml say?",
        "read",
        r#"{"path": "config.toml"}"#,
        "name = \"shop\"\nport = 3000",
        "config.toml says: name = \"shop\", port = 3000.",
    ),
    (
        "Show me plan.md",
        "read",
        r#"{"path": "plan.md"}"#,
        "Error: File not found: plan.md",
        "Error: File not found: plan.md.",
    ),
    (
        "Work out 9 minus y",
        "calculator",
        r#"{"expression": "9 - y"}"#,
        "Error: Unexpected character 'y' at position 4",
        "I could not work it out: unexpected character 'y' at position 4.",
    ),
    (
        "Which JSON files are there?",
        "glob",
        r#"{"pattern": "**/*.json"}"#,
        "data/a.json\ndata/b.json",
        "The JSON files are data/a.json and data/b.json.",
    ),
    (
        "Print the current date",
        "bash",
        r#"{"cmd": "date"}"#,
        "Tue Mar  3 10:00:00 UTC 2026",
        "The date is Tue Mar 3 10:00:00 UTC 2026.",
    ),
    (
        "Which files contain the text main?",
        "grep",
        r#"{"pattern": "main"}"#,
        "app.py:3:def main():",
        "app.py contains main, on line 3: def main():",
    ),
    (
        "Find the word banana in the code",
        "grep",
        r#"{"pattern": "banana"}"#,
        "",
        "No file contains banana.",
    ),
    (
        "Run JavaScript that adds 2 and 3",
        "run_code",
        r#"{"code": "console.log(2 + 3)"}"#,
        "null\n\nConsole:\n5",
        "It printed 5.",
    ),
    (
        "Put the word ready in state.txt",
        "write",
        r#"{"path": "state.txt", "content": "ready"}"#,
        "ok",
        "Done: state.txt now says ready.",
    ),
];

/// Whether a turn of this kind is the answer to a tool result: only an answer is allowed, and
/// the newest message is a tool result.
pub(crate) fn follows_result(messages: &[Message], answer_only: bool) -> bool {
    answer_only && messages.last().is_some_and(|m| m.role == Role::Tool)
}

/// The prompt of an answer to a tool result, and the length in bytes of its start that does
/// not depend on the request (the instructions and the worked answers).
pub(crate) fn build_split(messages: &[Message]) -> (String, usize) {
    let mut out = system_text(messages);
    out.push_str(INSTRUCTION);
    for (request, tool, arguments, result, answer) in EXAMPLES {
        let calls = format!("Call: {tool} {arguments}\n");
        block(&mut out, request, &calls, &[result.to_string()]);
        let _ = write!(out, " {{\"answer\": {}}}\n\n", Value::from(*answer));
    }
    let shared = out.len();
    let newest = messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .map_or(0, |i| i + 1);
    let request = newest
        .checked_sub(1)
        .map_or_else(String::new, |i| messages[i].text());
    let mut calls = String::new();
    let mut results = Vec::new();
    for message in &messages[newest..] {
        for part in &message.content {
            match part {
                Part::ToolCall(call) if message.role == Role::Assistant => {
                    let _ = writeln!(
                        calls,
                        "Call: {} {}",
                        call.tool_name,
                        spaced_json(&call.input)
                    );
                }
                Part::ToolResult(result) => results.push(result_text(&result.output)),
                _ => {}
            }
        }
    }
    block(&mut out, request.trim(), &calls, &results);
    (out, shared)
}

/// `Request:`, the calls, each result indented under `Result:`, and `Answer:`.
fn block(out: &mut String, request: &str, calls: &str, results: &[String]) {
    let _ = write!(out, "Request: {request}\n{calls}");
    for result in results {
        out.push_str("Result:\n");
        let result = if result.is_empty() {
            "(nothing)"
        } else {
            result
        };
        for line in result.lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out.push_str("Answer:");
}

/// How many sentences an answer whose text so far is `text` has ended, if the model's next
/// token is `next` (its text as generated, JSON-escaped): a sentence ends at `.`, `!` or `?`
/// followed by white space, or at a line break.
pub(crate) fn sentences_ended(text: &str, next: &str) -> u32 {
    count(text, next).0
}

/// The sentences of a whole answer, as the stop rule counts them: those ended, and a last one
/// without its `.`.
pub fn sentences(text: &str) -> u32 {
    let (ended, open) = count(text, " ");
    ended + u32::from(open)
}

/// The sentences `text` has ended if `next` follows it, and whether another one has begun.
fn count(text: &str, next: &str) -> (u32, bool) {
    let mut ended = 0;
    let mut open = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let space_after = match chars.peek() {
            Some(n) => n.is_whitespace(),
            None => next.starts_with([' ', '\t']) || next.starts_with("\\n"),
        };
        if c == '\n' || (".!?".contains(c) && space_after) {
            ended += u32::from(open);
            open = false;
        } else if !c.is_whitespace() {
            open = true;
        }
    }
    (ended, open)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use toolsmith_core::{ModelOutput, ToolCallPart, ToolResultPart};

    use super::*;

    fn conversation() -> Vec<Message> {
        vec![
            Message::system("Be brief."),
            Message::user("Earlier request"),
            Message::assistant("Earlier answer"),
            Message::user("Show me README.md "),
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
                output: ModelOutput::text("# Hello\n\nIt works."),
                provider_executed: false,
                provider_metadata: Default::default(),
            }]),
        ]
    }

    #[test]
    fn the_prompt_shows_the_newest_request_its_calls_and_results_after_worked_answers() {
        let messages = conversation();
        let (prompt, shared) = build_split(&messages);
        assert!(prompt.starts_with("Be brief.\n\nAnswer the request from the tool results"));
        assert!(
            prompt[..shared]
                .ends_with("Answer: {\"answer\": \"Done: state.txt now says ready.\"}\n\n")
        );
        insta::assert_snapshot!(&prompt[shared..], @r#"
        Request: Show me README.md
        Call: read {"path": "README.md"}
        Result:
          # Hello
          
          It works.
        Answer:
        "#);
        assert!(!prompt.contains("Earlier"));
        // The start is the same for every request with the same instructions.
        let (other, other_shared) = build_split(&messages[..1]);
        assert_eq!(other[..other_shared], prompt[..shared]);
    }

    #[test]
    fn it_is_the_answer_to_a_result_only_when_a_result_is_newest_and_only_an_answer_allowed() {
        let messages = conversation();
        assert!(follows_result(&messages, true));
        assert!(!follows_result(&messages, false));
        assert!(!follows_result(&messages[..4], true));
        assert!(!follows_result(&[], true));
    }

    #[test]
    fn sentences_end_before_white_space_and_at_line_breaks() {
        assert_eq!(sentences_ended("It is 3.5 degrees. Cold! Really", "?"), 2);
        assert_eq!(sentences_ended("It is 3.5 degrees. Cold! Really?", " "), 3);
        assert_eq!(
            sentences_ended("It is 3.5 degrees. Cold! Really?", "\\n"),
            3
        );
        assert_eq!(sentences_ended("It is 3.5 degrees. Cold! Really?", "\""), 2);
        assert_eq!(sentences_ended("Wrote notes.txt", "."), 0);
        assert_eq!(sentences_ended("- a\n- b\n\n", "-"), 2);
        assert_eq!(sentences_ended("", " "), 0);
        assert_eq!(sentences("It is 3.5 degrees. Cold! Really?"), 3);
        assert_eq!(sentences("Wrote notes.txt"), 1);
        assert_eq!(sentences("- a\n- b\n\nc"), 3);
        assert_eq!(sentences(" "), 0);
    }
}
