//! Responses request bodies: settings, tools, tool choice, options; the `input` items are built
//! in the `input` module.

use bytes::Bytes;
use serde_json::{Map, Value, json};
use toolsmith_core::{ModelRequest, ToolChoice, ToolDeclaration};

use super::input::{InputOptions, input_items};
use crate::body::{Body, tools_json};
use crate::dialect::{OpenAi, SchemaDialect};
use crate::provider_tools;
use crate::request_parts::decimal;

/// The dialect name the rendered tools are cached under.
pub const DIALECT: &str = "openai-responses";

/// A toolset rendered for the Responses API, computed once per toolset.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedTools {
    /// Function tools, then this provider's hosted tools (their wire JSON verbatim).
    pub tools: Vec<Value>,
    /// `tools` serialised, as every request body carries it.
    pub tools_json: Bytes,
    /// `(declared name, wire type)` of each hosted tool, for `tool_choice`.
    pub hosted: Vec<(String, String)>,
    /// Names of provider tools of other providers, dropped.
    pub dropped: Vec<String>,
}

/// Renders declarations as Responses tools: function tools
/// `{"type":"function","name","description"?,"parameters","strict"}` in the [`OpenAi`] dialect
/// (`strict` is always sent: the Responses API defaults it to `true`), then OpenAI's hosted tools
/// (`openai.*` provider tools, such as [`openai_web_search`](crate::provider_tools::openai_web_search))
/// with their `args` verbatim. Other providers' tools are set aside for one warning.
pub fn render_tools(declarations: &[ToolDeclaration]) -> RenderedTools {
    let split = provider_tools::split(declarations, Some("openai"));
    let mut tools: Vec<Value> = split
        .functions
        .iter()
        .map(|declaration| {
            let mut tool = Map::new();
            tool.insert("type".into(), json!("function"));
            tool.insert("name".into(), json!(&*declaration.name));
            if !declaration.description.is_empty() {
                tool.insert("description".into(), json!(declaration.description));
            }
            tool.insert(
                "parameters".into(),
                OpenAi.transform(&declaration.input_schema, declaration.strict),
            );
            tool.insert("strict".into(), json!(declaration.strict));
            Value::Object(tool)
        })
        .collect();
    let mut hosted = Vec::new();
    for declaration in declarations {
        if let toolsmith_core::ToolKind::Provider(tool) = &declaration.kind
            && tool.provider() == "openai"
        {
            let wire_type = tool
                .args
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            hosted.push((declaration.name.to_string(), wire_type));
        }
    }
    tools.extend(split.hosted.iter().map(|tool| tool.args.clone()));
    RenderedTools {
        tools_json: tools_json(&tools),
        tools,
        hosted,
        dropped: split.dropped,
    }
}

/// The provider options for this call: `provider_options["openai"]`, then
/// `provider_options[provider]` on top (when the provider is renamed).
fn options(request: &ModelRequest, provider: &str) -> Map<String, Value> {
    let mut merged = Map::new();
    for key in ["openai", provider] {
        if let Some(Value::Object(extra)) = request.provider_options.get(key) {
            for (k, v) in extra {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    merged
}

/// The JSON body for a call and the warnings to report at stream start.
///
/// - `input`: the thread as Responses items (see the [module docs](super)).
/// - `tools` / `tool_choice` (`auto`, `none`, `required`, `{"type":"function","name"}`, or
///   `{"type":<hosted type>}` when the chosen tool is a hosted one) / `parallel_tool_calls`,
///   only when there are tools.
/// - `max_output_tokens`, `temperature`, `top_p`; `top_k`, `seed` and stop sequences are not
///   part of the Responses API and are reported as warnings.
/// - `provider_options["openai"]` and `provider_options[provider]` are merged into the body
///   verbatim (for `reasoning`, `store`, `include`, `text`, `service_tier`…).
/// - With `"store": false` (nothing is persisted server-side) `include` gains
///   `"reasoning.encrypted_content"` so reasoning can be round-tripped by value, and item ids are
///   left out of the input (they could not be resolved).
/// - `stream` as given.
pub fn build_body(
    request: &ModelRequest,
    provider: &str,
    model: &str,
    stream: bool,
) -> (Value, Vec<String>) {
    let (body, warnings) = build(request, provider, model, stream);
    (body.into_value(), warnings)
}

/// [`build_body`]'s body before it is serialised, the tools spliced in as their JSON text.
pub(crate) fn build(
    request: &ModelRequest,
    provider: &str,
    model: &str,
    stream: bool,
) -> (Body, Vec<String>) {
    let mut warnings = Vec::new();
    let options = options(request, provider);
    let store = options.get("store").and_then(Value::as_bool) != Some(false);

    let mut body = Body::new();
    body.insert("model", json!(model));
    let input = input_items(&request.messages, InputOptions { store }, &mut warnings);
    body.insert("input", Value::Array(input));

    let rendered = request.tools.rendered(DIALECT, render_tools);
    if !rendered.dropped.is_empty() {
        warnings.push(provider_tools::foreign_warning(
            &rendered.dropped,
            provider,
            model,
        ));
    }
    if !rendered.tools.is_empty() {
        body.splice("tools", rendered.tools_json.clone());
        let choice = match &request.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool { tool_name } => {
                match rendered.hosted.iter().find(|(name, _)| name == tool_name) {
                    Some((_, wire_type)) if !wire_type.is_empty() => json!({"type": wire_type}),
                    _ => json!({"type": "function", "name": tool_name}),
                }
            }
        };
        body.insert("tool_choice", choice);
        if let Some(parallel) = request.parallel_tool_calls {
            body.insert("parallel_tool_calls", json!(parallel));
        }
    }

    let settings = &request.settings;
    if let Some(max) = settings.max_output_tokens {
        body.insert("max_output_tokens", json!(max));
    }
    if let Some(t) = settings.temperature {
        body.insert("temperature", decimal(t));
    }
    if let Some(p) = settings.top_p {
        body.insert("top_p", decimal(p));
    }
    if settings.top_k.is_some() {
        warnings.push(format!(
            "top_k is not supported by {provider}/{model}; ignored."
        ));
    }
    if settings.seed.is_some() {
        warnings.push(format!(
            "seed is not supported by {provider}/{model} (Responses API); ignored."
        ));
    }
    if !settings.stop_sequences.is_empty() {
        warnings.push(format!(
            "Stop sequences are not supported by {provider}/{model} (Responses API); ignored."
        ));
    }
    for (key, value) in options {
        body.insert(key, value);
    }
    if !store {
        let mut include = match body.remove("include") {
            Some(Value::Array(items)) => items,
            Some(other) if !other.is_null() => vec![other],
            _ => Vec::new(),
        };
        let encrypted = json!("reasoning.encrypted_content");
        if !include.contains(&encrypted) {
            include.push(encrypted);
        }
        body.insert("include", Value::Array(include));
    }
    body.insert("stream", json!(stream));
    (body, warnings)
}
