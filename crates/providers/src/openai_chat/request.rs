//! Chat Completions request bodies: messages, tools, tool choice, settings.

use bytes::Bytes;
use serde_json::{Map, Value, json};
use toolsmith_core::{ModelRequest, ToolChoice, ToolDeclaration};

use super::messages::messages_json;
use crate::body::{Body, tools_json};
use crate::dialect::{OpenAi, SchemaDialect};
use crate::provider_tools;
use crate::request_parts::{data_url, decimal, is_url};

/// The dialect name the rendered tools are cached under.
pub const DIALECT: &str = "openai-chat";

/// A toolset rendered for Chat Completions, computed once per toolset.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedTools {
    /// `{"type":"function","function":{…}}` entries.
    pub tools: Vec<Value>,
    /// `tools` serialised, as every request body carries it.
    pub tools_json: Bytes,
    /// Names of the provider-executed tools this wire cannot carry.
    pub dropped: Vec<String>,
}

/// Renders declarations as Chat Completions function tools in the [`OpenAi`] dialect (strict
/// tools closed and all-required) and sets aside provider-executed ones, which this wire cannot
/// carry.
pub fn render_tools(declarations: &[ToolDeclaration]) -> RenderedTools {
    let split = provider_tools::split(declarations, None);
    let tools = split
        .functions
        .into_iter()
        .map(|declaration| {
            let mut function = Map::new();
            function.insert("name".into(), json!(&*declaration.name));
            if !declaration.description.is_empty() {
                function.insert("description".into(), json!(declaration.description));
            }
            function.insert(
                "parameters".into(),
                OpenAi.transform(&declaration.input_schema, declaration.strict),
            );
            if declaration.strict {
                function.insert("strict".into(), json!(true));
            }
            json!({"type": "function", "function": function})
        })
        .collect::<Vec<_>>();
    RenderedTools {
        tools_json: tools_json(&tools),
        tools,
        dropped: split.dropped,
    }
}

/// Which flavour of the wire a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// OpenAI itself: `max_completion_tokens`, no `top_k`.
    OpenAi,
    /// Another server speaking the wire: `max_tokens`, `top_k` passed through.
    Compatible,
}

/// The JSON body for a streamed call and the warnings to report at stream start.
///
/// `provider` and `model` name the model in warnings; `provider_options[provider]`, when it is an
/// object, is merged into the body verbatim (for settings such as `reasoning_effort`).
pub fn build_body(
    request: &ModelRequest,
    provider: &str,
    model: &str,
    flavor: Flavor,
) -> (Value, Vec<String>) {
    let (body, warnings) = build(request, provider, model, flavor);
    (body.into_value(), warnings)
}

/// [`build_body`]'s body before it is serialised, the tools spliced in as their JSON text.
pub(crate) fn build(
    request: &ModelRequest,
    provider: &str,
    model: &str,
    flavor: Flavor,
) -> (Body, Vec<String>) {
    let mut warnings = Vec::new();
    let mut body = Body::new();
    body.insert("model", json!(model));
    body.splice("messages", messages_json(&request.messages, &mut warnings));

    let rendered = request.tools.rendered(DIALECT, render_tools);
    if !rendered.dropped.is_empty() {
        warnings.push(provider_tools::dropped_warning(
            &rendered.dropped,
            "Chat Completions",
            provider,
            model,
        ));
    }
    if !rendered.tools.is_empty() {
        body.splice("tools", rendered.tools_json.clone());
        // The constant choices as constant text: a `Value` string is an allocation.
        match &request.tool_choice {
            ToolChoice::Auto => body.splice("tool_choice", Bytes::from_static(b"\"auto\"")),
            ToolChoice::None => body.splice("tool_choice", Bytes::from_static(b"\"none\"")),
            ToolChoice::Required => {
                body.splice("tool_choice", Bytes::from_static(b"\"required\""));
            }
            ToolChoice::Tool { tool_name } => body.insert(
                "tool_choice",
                json!({"type": "function", "function": {"name": tool_name}}),
            ),
        }
        if let Some(parallel) = request.parallel_tool_calls {
            body.insert("parallel_tool_calls", json!(parallel));
        }
    }

    let settings = &request.settings;
    if let Some(max) = settings.max_output_tokens {
        let key = match flavor {
            Flavor::OpenAi => "max_completion_tokens",
            Flavor::Compatible => "max_tokens",
        };
        body.insert(key, json!(max));
    }
    if let Some(t) = settings.temperature {
        body.insert("temperature", decimal(t));
    }
    if let Some(p) = settings.top_p {
        body.insert("top_p", decimal(p));
    }
    if let Some(k) = settings.top_k {
        match flavor {
            Flavor::OpenAi => warnings.push(format!(
                "top_k is not supported by {provider}/{model}; ignored."
            )),
            Flavor::Compatible => {
                body.insert("top_k", json!(k));
            }
        }
    }
    if let Some(seed) = settings.seed {
        body.insert("seed", json!(seed));
    }
    if !settings.stop_sequences.is_empty() {
        body.insert("stop", json!(settings.stop_sequences));
    }
    if let Some(Value::Object(extra)) = request.provider_options.get(provider) {
        for (key, value) in extra {
            body.insert(key.clone(), value.clone());
        }
    }
    body.insert("stream", Value::Bool(true));
    body.splice(
        "stream_options",
        Bytes::from_static(br#"{"include_usage":true}"#),
    );
    (body, warnings)
}

pub(super) fn file_part(media_type: &str, data: &str, filename: Option<&str>) -> Option<Value> {
    if media_type.starts_with("image/") {
        return Some(
            json!({"type": "image_url", "image_url": {"url": data_url(media_type, data)}}),
        );
    }
    let audio = match media_type {
        "audio/wav" | "audio/x-wav" => Some("wav"),
        "audio/mpeg" | "audio/mp3" => Some("mp3"),
        _ => None,
    };
    if let Some(format) = audio.filter(|_| !is_url(data)) {
        return Some(
            json!({"type": "input_audio", "input_audio": {"data": data, "format": format}}),
        );
    }
    if media_type == "application/pdf" && !data.starts_with("http") {
        return Some(json!({"type": "file", "file": {
            "filename": filename.unwrap_or("document.pdf"),
            "file_data": data_url(media_type, data),
        }}));
    }
    None
}
