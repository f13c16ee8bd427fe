//! Output items of the Responses API: their kinds, the names and inputs of the calls they
//! hold, and usage.

use serde_json::{Map, Value, json};
use toolsmith_core::{InputTokens, ModelPart, OutputTokens, Usage};

/// What an output item is, for decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Assistant text.
    Message,
    /// Reasoning (summaries, raw text, encrypted content).
    Reasoning,
    /// A function tool call.
    Function,
    /// A custom (free-form) tool call.
    Custom,
    /// A tool OpenAI defines but the client runs (the item type).
    Client(&'static str),
    /// A tool OpenAI runs (the item type).
    Hosted(&'static str),
}

/// Client-executed item types and the tool names their calls get.
const CLIENT: &[(&str, &str)] = &[
    ("shell_call", "shell"),
    ("local_shell_call", "local_shell"),
    ("apply_patch_call", "apply_patch"),
    ("tool_search_call", "tool_search"),
    ("computer_call", "computer"),
];

/// Hosted item types and the tool names their calls get (MCP calls are named after the MCP
/// tool: `mcp.NAME`).
const HOSTED: &[(&str, &str)] = &[
    ("web_search_call", "web_search"),
    ("file_search_call", "file_search"),
    ("code_interpreter_call", "code_interpreter"),
    ("image_generation_call", "image_generation"),
    ("mcp_call", "mcp"),
    ("mcp_list_tools", "mcp.list_tools"),
    ("mcp_approval_request", "mcp"),
    ("tool_search_call", "tool_search"),
];

impl Kind {
    /// The kind of an item of type `item_type`, `None` for types this decoder ignores.
    pub(crate) fn of(item_type: &str, item: &Value) -> Option<Kind> {
        match item_type {
            "message" => return Some(Kind::Message),
            "reasoning" => return Some(Kind::Reasoning),
            "function_call" => return Some(Kind::Function),
            "custom_tool_call" => return Some(Kind::Custom),
            _ => {}
        }
        // `tool_search_call` runs on the client or the server, as the item says.
        let server_search = item_type == "tool_search_call"
            && item.get("execution").and_then(Value::as_str) == Some("server");
        if !server_search && let Some((t, _)) = CLIENT.iter().find(|(t, _)| *t == item_type) {
            return Some(Kind::Client(t));
        }
        HOSTED
            .iter()
            .find(|(t, _)| *t == item_type)
            .map(|(t, _)| Kind::Hosted(t))
    }

    /// The wire item type.
    pub(crate) fn item_type(self) -> &'static str {
        match self {
            Kind::Message => "message",
            Kind::Reasoning => "reasoning",
            Kind::Function => "function_call",
            Kind::Custom => "custom_tool_call",
            Kind::Client(t) | Kind::Hosted(t) => t,
        }
    }

    /// Whether the item is a tool call.
    pub(crate) fn is_call(self) -> bool {
        !matches!(self, Kind::Message | Kind::Reasoning)
    }
}

/// The tool name of a call item.
pub(crate) fn call_name(kind: Kind, item: &Value) -> String {
    let named = item.get("name").and_then(Value::as_str).unwrap_or_default();
    match kind {
        Kind::Function | Kind::Custom => named.to_string(),
        Kind::Hosted("mcp_call" | "mcp_approval_request") => format!("mcp.{named}"),
        Kind::Client(t) => CLIENT
            .iter()
            .find(|(ty, _)| *ty == t)
            .map_or(t, |(_, n)| n)
            .to_string(),
        Kind::Hosted(t) => HOSTED
            .iter()
            .find(|(ty, _)| *ty == t)
            .map_or(t, |(_, n)| n)
            .to_string(),
        Kind::Message | Kind::Reasoning => String::new(),
    }
}

/// The input (a JSON object) of a client or hosted call, from its done item.
pub(crate) fn call_input(kind: Kind, item: &Value) -> Value {
    let field = |key: &str| item.get(key).filter(|v| !v.is_null()).cloned();
    let object = |value: Option<Value>| match value {
        Some(value @ Value::Object(_)) => value,
        Some(Value::String(text)) => match serde_json::from_str::<Value>(&text) {
            Ok(value @ Value::Object(_)) => value,
            _ => json!({"arguments": text}),
        },
        Some(other) => json!({"value": other}),
        None => json!({}),
    };
    match kind.item_type() {
        "shell_call" | "local_shell_call" | "computer_call" => object(field("action")),
        "apply_patch_call" => object(field("operation")),
        "tool_search_call" | "mcp_call" | "mcp_approval_request" => object(field("arguments")),
        "web_search_call" => object(field("action")),
        "file_search_call" => json!({"queries": field("queries").unwrap_or(json!([]))}),
        "code_interpreter_call" => {
            let mut input = Map::new();
            for key in ["code", "container_id"] {
                if let Some(value) = field(key) {
                    input.insert(key.into(), value);
                }
            }
            Value::Object(input)
        }
        "mcp_list_tools" => json!({"server_label": field("server_label").unwrap_or(Value::Null)}),
        _ => json!({}),
    }
}

/// The image an `image_generation_call` produced (base64 in `result`), as a file part.
pub(crate) fn generated_image(item: &Value) -> Option<ModelPart> {
    if item.get("type").and_then(Value::as_str) != Some("image_generation_call") {
        return None;
    }
    let data = item
        .get("result")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())?;
    let format = item
        .get("output_format")
        .and_then(Value::as_str)
        .unwrap_or("png");
    Some(ModelPart::File {
        media_type: format!("image/{format}"),
        data: data.to_string(),
    })
}

/// Whether a hosted item reports a failure.
pub(crate) fn is_error_item(item: &Value) -> bool {
    item.get("status").and_then(Value::as_str) == Some("failed")
        || item.get("error").is_some_and(|e| !e.is_null())
}

/// The text of a done message item (its `output_text` and `refusal` parts joined).
pub(crate) fn message_text(item: &Value) -> String {
    item.get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| match p.get("type").and_then(Value::as_str) {
                    Some("output_text") => p.get("text").and_then(Value::as_str),
                    Some("refusal") => p.get("refusal").and_then(Value::as_str),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The texts of a done reasoning item: `(raw, index, text)` for each summary and each raw
/// `reasoning_text` part that has text.
pub(crate) fn reasoning_texts(item: &Value) -> Vec<(bool, u64, String)> {
    let mut texts = Vec::new();
    for (raw, key) in [(false, "summary"), (true, "content")] {
        let parts = item.get(key).and_then(Value::as_array);
        for (i, part) in parts.into_iter().flatten().enumerate() {
            if let Some(text) = part.get("text").and_then(Value::as_str)
                && !text.is_empty()
            {
                texts.push((raw, i as u64, text.to_string()));
            }
        }
    }
    texts
}

/// Whether a function call's name is the leaked parallel wrapper.
pub(crate) fn is_parallel_wrapper(name: &str) -> bool {
    matches!(name, "parallel" | "multi_tool_use.parallel")
}

/// The calls a leaked `parallel` wrapper holds: `{"tool_uses":[{"recipient_name":
/// "functions.NAME","parameters":{…}}]}` → `[(NAME, parameters as JSON text)]`; `None` when the
/// arguments do not have exactly that shape (the call is then passed through as is).
pub(crate) fn expand_parallel(arguments: &str) -> Option<Vec<(String, String)>> {
    let value: Value = serde_json::from_str(arguments).ok()?;
    let uses = value.get("tool_uses")?.as_array()?;
    if uses.is_empty() {
        return None;
    }
    uses.iter()
        .map(|entry| {
            let recipient = entry.get("recipient_name")?.as_str()?;
            let name = recipient.strip_prefix("functions.")?;
            if name.is_empty() {
                return None;
            }
            let parameters = match entry.get("parameters") {
                Some(p @ Value::Object(_)) => p.to_string(),
                None | Some(Value::Null) => "{}".to_string(),
                Some(_) => return None,
            };
            Some((name.to_string(), parameters))
        })
        .collect()
}

/// Responses usage → [`Usage`] (`server_tool_uses` is counted by the decoder).
pub(crate) fn usage(usage: Option<&Value>) -> Usage {
    let Some(usage) = usage.filter(|u| u.is_object()) else {
        return Usage::default();
    };
    let number = |value: Option<&Value>| value.and_then(Value::as_u64);
    let input = number(usage.get("input_tokens"));
    let cached = number(
        usage
            .get("input_tokens_details")
            .and_then(|d| d.get("cached_tokens")),
    );
    let output = number(usage.get("output_tokens"));
    let reasoning = number(
        usage
            .get("output_tokens_details")
            .and_then(|d| d.get("reasoning_tokens")),
    );
    Usage {
        input: InputTokens {
            total: input,
            no_cache: input.map(|i| i.saturating_sub(cached.unwrap_or(0))),
            cache_read: cached,
            cache_write: None,
        },
        output: OutputTokens {
            total: output,
            text: output.map(|o| o.saturating_sub(reasoning.unwrap_or(0))),
            reasoning,
        },
        server_tool_uses: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parallel_wrapper_expands_only_with_its_exact_shape() {
        let args = r#"{"tool_uses":[{"recipient_name":"functions.weather","parameters":{"location":"SF"}},{"recipient_name":"functions.b"}]}"#;
        assert_eq!(
            expand_parallel(args).unwrap(),
            [
                ("weather".to_string(), r#"{"location":"SF"}"#.to_string()),
                ("b".to_string(), "{}".to_string())
            ]
        );
        assert!(expand_parallel(r#"{"tool_uses":[]}"#).is_none());
        assert!(expand_parallel(r#"{"tool_uses":[{"recipient_name":"weather"}]}"#).is_none());
        assert!(expand_parallel(r#"{"x":1}"#).is_none());
        assert!(expand_parallel("{").is_none());
    }

    #[test]
    fn kinds_and_names() {
        let client = json!({"execution": "client"});
        assert_eq!(
            Kind::of("tool_search_call", &client),
            Some(Kind::Client("tool_search_call"))
        );
        let server = json!({"execution": "server"});
        assert_eq!(
            Kind::of("tool_search_call", &server),
            Some(Kind::Hosted("tool_search_call"))
        );
        assert_eq!(Kind::of("future_item", &client), None);
        let mcp = json!({"name": "create_short_url"});
        assert_eq!(
            call_name(Kind::Hosted("mcp_approval_request"), &mcp),
            "mcp.create_short_url"
        );
        assert_eq!(call_name(Kind::Client("shell_call"), &mcp), "shell");
    }
}
