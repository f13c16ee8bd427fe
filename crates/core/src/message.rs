//! [`Message`] and [`Part`]: the thread a run is a function of.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{MessageMeta, ModelOutput, NestedRun, ToolApprovalRequest, ToolApprovalResponse};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// Tool results.
    Tool,
}

/// One message of a thread: a role and its parts, and what the thread records of how it came
/// to be ([`MessageMeta`], never sent to a model).
///
/// Serialises as `{"role":"assistant","content":[{"type":"text","text":"…"}, …]}`, with
/// `"meta":{…}` after the content when there is any.
///
/// ```
/// use toolsmith_core::{Message, Role};
///
/// let m = Message::user("What is 2 + 2?");
/// assert_eq!(m.role, Role::User);
/// assert_eq!(m.text(), "What is 2 + 2?");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its parts, in order.
    pub content: Vec<Part>,
    /// How it came to be: the model step, the calls' times. Provider-invisible: no wire sends
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<MessageMeta>,
}

impl Message {
    /// A message with the given role and parts.
    pub fn new(role: Role, content: Vec<Part>) -> Self {
        Message {
            role,
            content,
            meta: None,
        }
    }

    /// The message with `meta` recorded (none when `meta` is empty).
    pub fn with_meta(mut self, meta: MessageMeta) -> Self {
        self.meta = (!meta.is_empty()).then_some(meta);
        self
    }

    /// Its meta, created empty when it has none.
    pub fn meta_mut(&mut self) -> &mut MessageMeta {
        self.meta.get_or_insert_default()
    }

    /// Takes in the record of a message merged into this one (tool messages folded into one):
    /// this message's own record stays, the other's call times are added; without a record of
    /// its own, this message takes the other's.
    pub fn merge_meta(&mut self, other: Option<MessageMeta>) {
        match (&mut self.meta, other) {
            (Some(own), Some(other)) => own.calls.extend(other.calls),
            (own @ None, other) => *own = other,
            (Some(_), None) => {}
        }
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, vec![Part::text(text)])
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![Part::text(text)])
    }

    /// An assistant message with only text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![Part::text(text)])
    }

    /// A tool message holding results.
    pub fn tool_results(results: Vec<ToolResultPart>) -> Self {
        Self::new(
            Role::Tool,
            results.into_iter().map(Part::ToolResult).collect(),
        )
    }

    /// The text parts joined together.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                Part::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls this message makes.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCallPart> {
        self.content.iter().filter_map(|p| match p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The tool results this message holds.
    pub fn tool_results_iter(&self) -> impl Iterator<Item = &ToolResultPart> {
        self.content.iter().filter_map(|p| match p {
            Part::ToolResult(result) => Some(result),
            _ => None,
        })
    }
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Opaque provider data to echo back.
        #[serde(
            default,
            rename = "providerMetadata",
            skip_serializing_if = "ProviderMetadata::is_empty"
        )]
        provider_metadata: ProviderMetadata,
    },
    /// The model's reasoning. Signatures and encrypted content live in the provider metadata and
    /// are echoed back verbatim.
    Reasoning {
        /// The reasoning text (may be empty when only encrypted content exists).
        text: String,
        /// Opaque provider data to echo back.
        #[serde(
            default,
            rename = "providerMetadata",
            skip_serializing_if = "ProviderMetadata::is_empty"
        )]
        provider_metadata: ProviderMetadata,
    },
    /// A file (an image, a PDF…).
    File {
        /// IANA media type.
        #[serde(rename = "mediaType")]
        media_type: String,
        /// Base64 data or a URL.
        data: String,
        /// The file's name, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
    /// A tool call made by the model.
    ToolCall(ToolCallPart),
    /// A tool result.
    ToolResult(ToolResultPart),
    /// A cited source.
    Source(Source),
    /// A call waiting for approval (in the assistant message, after the call). Never sent to a
    /// model.
    ToolApprovalRequest(ToolApprovalRequest),
    /// The answer to an approval request (in the tool message). Never sent to a model.
    ToolApprovalResponse(ToolApprovalResponse),
    /// A sub-agent call's paused run (in the assistant message, after the call). Never sent to
    /// a model.
    NestedRun(NestedRun),
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text {
            text: text.into(),
            provider_metadata: ProviderMetadata::default(),
        }
    }
}

/// A tool call, as the assistant message records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallPart {
    /// The provider's id for the call.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// The arguments. Input that did not parse or validate is recorded as `{}`, so the thread
    /// stays valid for every provider.
    pub input: Value,
    /// Whether the provider executes it server-side.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provider_executed: bool,
    /// Opaque provider data (Gemini thought signatures, OpenAI item ids) echoed back verbatim.
    #[serde(default, skip_serializing_if = "ProviderMetadata::is_empty")]
    pub provider_metadata: ProviderMetadata,
}

/// A tool result, as the tool message records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolResultPart {
    /// The call it answers.
    pub tool_call_id: String,
    /// The tool's name.
    pub tool_name: String,
    /// What the model sees.
    pub output: ModelOutput,
    /// Whether the provider executed it server-side.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provider_executed: bool,
    /// Opaque provider data echoed back verbatim.
    #[serde(default, skip_serializing_if = "ProviderMetadata::is_empty")]
    pub provider_metadata: ProviderMetadata,
}

/// Opaque provider data, keyed by provider name (`{"google": {"thoughtSignature": "…"}}`).
/// Whatever a provider puts here comes back to it verbatim.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProviderMetadata(pub Map<String, Value>);

impl ProviderMetadata {
    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The data stored under `provider`.
    pub fn get(&self, provider: &str) -> Option<&Value> {
        self.0.get(provider)
    }

    /// Stores data under `provider`.
    pub fn insert(&mut self, provider: impl Into<String>, value: Value) {
        self.0.insert(provider.into(), value);
    }
}

/// A cited source (a URL or a document), normalised from every provider's citation shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    /// `url` or `document`.
    pub source_type: String,
    /// A stable id.
    pub id: String,
    /// The URL, for URL sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The title, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_without_meta_serialises_as_before_and_old_json_reads_back() {
        let m = Message::user("hi");
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"role":"user","content":[{"type":"text","text":"hi"}]}"#
        );
        let read: Message =
            serde_json::from_str(r#"{"role":"user","content":[{"type":"text","text":"hi"}]}"#)
                .unwrap();
        assert_eq!(read, m);
        assert_eq!(read.meta, None);
    }

    #[test]
    fn meta_round_trips_after_the_content() {
        let m = Message::assistant("ok").with_meta(MessageMeta::new().model("m").timed(1, 2));
        let json = serde_json::to_string(&m).unwrap();
        assert!(
            json.ends_with(r#","meta":{"model":"m","startedAt":1,"durationMs":2}}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), m);
        assert_eq!(Message::user("x").with_meta(MessageMeta::new()).meta, None);
    }

    #[test]
    fn a_merged_record_keeps_its_own_fields_and_adds_the_call_times() {
        let mut first = Message::tool_results(vec![]);
        first.merge_meta(Some(MessageMeta::new().timed(1, 2).call("a", 1)));
        first.merge_meta(None);
        first.merge_meta(Some(MessageMeta::new().timed(5, 6).call("b", 3)));
        assert_eq!(
            first.meta,
            Some(MessageMeta::new().timed(1, 2).call("a", 1).call("b", 3))
        );
    }
}
