//! The thread as Chat Completions messages, written straight into the body's JSON text.
//!
//! Built as `serde_json::Value`s, a message cost an allocation for every key and string and a
//! hash table for every object (`preserve_order`), all serialised once and freed: about a
//! quarter of the allocations of an agent run against a mock model (`bench/peers`, measured
//! with DHAT). Written here, a message costs only its bytes. The JSON is the one the values
//! serialised to, key for key: the request tests read the body back as a value and compare it
//! with their snapshots.

use std::borrow::Cow;
use std::fmt;

use serde::Serializer;
use serde_json::Value;
use toolsmith_core::{ContentPart, Message, ModelOutput, Part, Role};

use super::request::file_part;
use crate::request_parts::user_content;

/// The `messages` array of `thread`, as JSON text; `warnings` gets the files left out.
pub(super) fn messages_json(thread: &[Message], warnings: &mut Vec<String>) -> Vec<u8> {
    let mut out = Writer(Vec::with_capacity(256 * thread.len().max(1)));
    out.0.push(b'[');
    for message in thread {
        match message.role {
            Role::System => {
                out.open(br#"{"role":"system","content":"#);
                out.text(message.content.iter().filter_map(text));
                out.0.push(b'}');
            }
            Role::User => {
                user_message(&mut out, &message.content, warnings);
                tool_messages(&mut out, &message.content);
            }
            Role::Assistant => {
                assistant_message(&mut out, message);
                tool_messages(&mut out, &message.content);
            }
            Role::Tool => tool_messages(&mut out, &message.content),
        }
    }
    out.0.push(b']');
    out.0
}

/// The text of a text part.
fn text(part: &Part) -> Option<&str> {
    match part {
        Part::Text { text, .. } => Some(text),
        _ => None,
    }
}

/// `{"role":"user","content":…}`: the texts as one string, or content parts when there are
/// files (see [`user_content`]); nothing when there is neither.
fn user_message(out: &mut Writer, parts: &[Part], warnings: &mut Vec<String>) {
    let mut relevant = parts
        .iter()
        .filter(|p| matches!(p, Part::Text { .. } | Part::File { .. }));
    let Some(_) = relevant.clone().next() else {
        return;
    };
    if relevant.all(|p| matches!(p, Part::Text { .. })) {
        out.open(br#"{"role":"user","content":"#);
        out.text(parts.iter().filter_map(text));
        out.0.push(b'}');
    } else if let Some(content) =
        user_content(parts, "text", "Chat Completions", file_part, warnings)
    {
        out.open(br#"{"role":"user","content":"#);
        out.value(&content);
        out.0.push(b'}');
    }
}

/// The assistant's text and its calls (provider-executed ones left out), or nothing when it has
/// neither. The content is an empty string, not `null`, beside tool calls: OpenAI takes either,
/// but compatible servers validating `content` as a string (llama-cpp-python answers HTTP 500)
/// reject `null`; the AI SDK sends `""` too.
fn assistant_message(out: &mut Writer, message: &Message) {
    let mut calls = message
        .tool_calls()
        .filter(|call| !call.provider_executed)
        .peekable();
    let has_text = message
        .content
        .iter()
        .filter_map(text)
        .any(|t| !t.is_empty());
    if !has_text && calls.peek().is_none() {
        return;
    }
    out.open(br#"{"role":"assistant","content":"#);
    out.text(message.content.iter().filter_map(text));
    if calls.peek().is_some() {
        out.0.extend_from_slice(br#","tool_calls":["#);
        for (i, call) in calls.enumerate() {
            if i > 0 {
                out.0.push(b',');
            }
            out.0.extend_from_slice(br#"{"id":"#);
            out.str(&call.tool_call_id);
            out.0
                .extend_from_slice(br#","type":"function","function":{"name":"#);
            out.str(&call.tool_name);
            out.0.extend_from_slice(br#","arguments":"#);
            // The arguments' JSON text as a string, escaped as it is written.
            out.display(&call.input);
            out.0.extend_from_slice(b"}}");
        }
        out.0.push(b']');
    }
    out.0.push(b'}');
}

/// A `tool` message for each client tool result in `parts`.
fn tool_messages(out: &mut Writer, parts: &[Part]) {
    for part in parts {
        let Part::ToolResult(result) = part else {
            continue;
        };
        if result.provider_executed {
            continue;
        }
        out.open(br#"{"role":"tool","tool_call_id":"#);
        out.str(&result.tool_call_id);
        out.0.extend_from_slice(br#","content":"#);
        out.str(&output_text(&result.output));
        out.0.push(b'}');
    }
}

/// A tool result as the text a tool message carries.
fn output_text(output: &ModelOutput) -> Cow<'_, str> {
    match output {
        ModelOutput::Text { value } | ModelOutput::ErrorText { value } => Cow::Borrowed(value),
        ModelOutput::Content { value }
            if value.iter().any(|p| !matches!(p, ContentPart::Text { .. })) =>
        {
            // Chat Completions tool messages carry text only.
            let mut text = output.to_text();
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str("[non-text content omitted]");
            Cow::Owned(text)
        }
        other => Cow::Owned(other.to_text()),
    }
}

/// The array being written. Every string goes through `serde_json`'s serialiser, so it is
/// escaped exactly as a `Value` holding it would be.
struct Writer(Vec<u8>);

impl Writer {
    /// Starts a message: a comma after the previous one, then `start`.
    fn open(&mut self, start: &[u8]) {
        if self.0.len() > 1 {
            self.0.push(b',');
        }
        self.0.extend_from_slice(start);
    }

    fn str(&mut self, text: &str) {
        let _ = serde_json::Serializer::new(&mut self.0).serialize_str(text);
    }

    /// The concatenation of `texts` as one JSON string.
    fn text<'a>(&mut self, texts: impl Iterator<Item = &'a str> + Clone) {
        self.display(&Concat(texts));
    }

    /// `value`'s `Display` text as one JSON string.
    fn display(&mut self, value: &dyn fmt::Display) {
        let _ = serde_json::Serializer::new(&mut self.0).collect_str(value);
    }

    fn value(&mut self, value: &Value) {
        let _ = serde_json::to_writer(&mut self.0, value);
    }
}

/// Texts displayed one after the other.
struct Concat<I>(I);

impl<'a, I: Iterator<Item = &'a str> + Clone> fmt::Display for Concat<I> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.clone().try_for_each(|text| f.write_str(text))
    }
}
