//! Gemini request bodies: contents, system instruction, tools, tool config, generation config.

use std::collections::HashMap;

use bytes::Bytes;
use serde_json::{Map, Value, json};
use toolsmith_core::{
    ContentPart, Message, ModelOutput, ModelRequest, Part, ProviderMetadata, Role, ToolChoice,
    ToolDeclaration, ToolResultPart,
};

use super::stream::{CODE_EXECUTION, PROVIDER};
use crate::body::{Body, tools_json};
use crate::dialect::gemini::is_empty_object;
use crate::dialect::{self, SchemaDialect};
use crate::provider_tools;
use crate::request_parts::decimal;

/// The dialect name the rendered tools are cached under.
pub const DIALECT: &str = "google-gemini";

/// `generationConfig` fields: `provider_options["google"]` entries with these names go into
/// `generationConfig`, every other entry at the top of the body.
pub const GENERATION_CONFIG_KEYS: &[&str] = &[
    "candidateCount",
    "enableEnhancedCivicAnswers",
    "frequencyPenalty",
    "imageConfig",
    "logprobs",
    "maxOutputTokens",
    "mediaResolution",
    "presencePenalty",
    "responseJsonSchema",
    "responseLogprobs",
    "responseMimeType",
    "responseModalities",
    "responseSchema",
    "seed",
    "speechConfig",
    "stopSequences",
    "temperature",
    "thinkingConfig",
    "topK",
    "topP",
];

/// The signature Google documents for function calls whose real signature is unknown (a
/// history written by another model): Gemini 3 rejects an unsigned call with HTTP 400.
pub const SKIP_SIGNATURE_VALIDATOR: &str = "skip_thought_signature_validator";

/// The major version of a Gemini model name (`gemini-3-pro-preview`, `models/gemini-2.5-flash`);
/// `None` for other models (Gemma, tuned models…).
fn gemini_major(model: &str) -> Option<u32> {
    let name = model.rsplit('/').next().unwrap_or(model);
    let version = name.strip_prefix("gemini-")?;
    let major: String = version.chars().take_while(char::is_ascii_digit).collect();
    major.parse().ok()
}

/// Whether `model` rejects function calls replayed without a thought signature (Gemini 3 and
/// later).
fn requires_signatures(model: &str) -> bool {
    gemini_major(model).is_some_and(|major| major >= 3)
}

/// In each model content with function calls but no signature at all, gives the first call
/// [`SKIP_SIGNATURE_VALIDATOR`] (Gemini signs only the first call of a step); returns the names
/// of the calls signed so.
fn sign_unsigned_calls(contents: &mut [Value]) -> Vec<String> {
    let mut signed = Vec::new();
    for content in contents.iter_mut().filter(|c| c["role"] == "model") {
        let Some(parts) = content.get_mut("parts").and_then(Value::as_array_mut) else {
            continue;
        };
        if parts.iter().any(|p| p.get("thoughtSignature").is_some()) {
            continue;
        }
        if let Some(Value::Object(part)) =
            parts.iter_mut().find(|p| p.get("functionCall").is_some())
        {
            signed.push(
                part["functionCall"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            part.insert("thoughtSignature".into(), json!(SKIP_SIGNATURE_VALIDATOR));
        }
    }
    signed
}

/// A toolset rendered for Gemini, computed once per toolset.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedTools {
    /// The `tools` array: one `{"functionDeclarations": […]}` entry when there are function
    /// tools, then one entry per Google tool (`{"google_search": {…}}`).
    pub tools: Vec<Value>,
    /// `tools` serialised, as every request body carries it.
    pub tools_json: Bytes,
    /// Whether function tools are declared (`toolConfig` is sent only then).
    pub has_functions: bool,
    /// Names of other providers' tools, which this wire cannot carry.
    pub dropped: Vec<String>,
}

/// Renders declarations for Gemini: function tools as `functionDeclarations` with their input
/// schemas in the [`Gemini`](dialect::Gemini) dialect (a tool without parameters is declared
/// without `parameters`, which Gemini requires), Google's own provider tools (`google.NAME`) as
/// separate `{"NAME": args}` entries with their wire JSON verbatim, other providers' tools set
/// aside.
pub fn render_tools(declarations: &[ToolDeclaration]) -> RenderedTools {
    let split = provider_tools::split(declarations, Some(PROVIDER));
    let functions: Vec<Value> = split
        .functions
        .iter()
        .map(|declaration| {
            let mut function = Map::new();
            function.insert("name".into(), json!(&*declaration.name));
            if !declaration.description.is_empty() {
                function.insert("description".into(), json!(declaration.description));
            }
            let parameters = dialect::Gemini.transform(&declaration.input_schema, false);
            if !is_empty_object(&parameters) {
                function.insert("parameters".into(), parameters);
            }
            Value::Object(function)
        })
        .collect();
    let has_functions = !functions.is_empty();
    let mut tools = Vec::with_capacity(1 + split.hosted.len());
    if has_functions {
        tools.push(json!({"functionDeclarations": functions}));
    }
    for tool in split.hosted {
        let name = tool.id.split_once('.').map_or(tool.id.as_str(), |(_, n)| n);
        let args = match &tool.args {
            Value::Null => json!({}),
            other => other.clone(),
        };
        let mut entry = Map::new();
        entry.insert(name.to_string(), args);
        tools.push(Value::Object(entry));
    }
    RenderedTools {
        tools_json: tools_json(&tools),
        tools,
        has_functions,
        dropped: split.dropped,
    }
}

/// The JSON body for `model` and the warnings to report at stream start (the same body serves
/// `generateContent` and `streamGenerateContent`).
///
/// - System messages become `systemInstruction`; user and tool messages `user` contents,
///   assistant messages `model` contents; consecutive contents of one role are merged.
/// - Assistant text and reasoning (`thought: true`) parts and function calls carry the
///   `thoughtSignature` they came with (`provider_metadata["google"]`), verbatim, on the same
///   part. A call's `functionCall.id` is sent when Gemini gave the call one.
/// - Tool results become `functionResponse` parts, all the results of a step in one `user`
///   content in call order: a success is `{"output": <text or JSON value>}`, an error (or a
///   denial) `{"error": <text or JSON value>}`, the keys Gemini's `FunctionResponse.response`
///   documents. Images and files of a multi-part result follow as `inlineData` parts.
/// - `toolConfig.functionCallingConfig.mode` (only with function tools): `AUTO`, `NONE`, `ANY`,
///   or `ANY` with `allowedFunctionNames` for a specific tool. Gemini cannot disable parallel
///   calls: `parallel_tool_calls: Some(false)` is a warning, unless it is only a default
///   (`parallel_tool_calls_defaulted`, an agent whose calls run one at a time).
/// - `generationConfig` from the settings; `provider_options["google"]` merged in last (objects
///   merged key by key), [`GENERATION_CONFIG_KEYS`] (such as `thinkingConfig`) into
///   `generationConfig`, anything else (`safetySettings`, `cachedContent`…) at the top.
/// - Gemini's code execution (provider-executed `code_execution` calls and results in the
///   history) is replayed as `executableCode` / `codeExecutionResult` model parts; other
///   provider-executed calls and results (Google Search has none) are not sent.
/// - Other providers' tools are dropped with one warning; so is `google_search` for a Gemini 1.x
///   model, which has no such tool.
/// - For Gemini 3 and later, a step of the history whose calls carry no signature at all (a
///   history from another model) has its first call signed [`SKIP_SIGNATURE_VALIDATOR`], with
///   one warning naming the calls: otherwise Gemini rejects the request.
pub fn build_body(request: &ModelRequest, model: &str) -> (Value, Vec<String>) {
    let (body, warnings) = build(request, model);
    (body.into_value(), warnings)
}

/// [`build_body`]'s body before it is serialised, the tools spliced in as their JSON text
/// (unless a Gemini 1.x model leaves some out).
pub(crate) fn build(request: &ModelRequest, model: &str) -> (Body, Vec<String>) {
    let mut warnings = Vec::new();
    let mut body = Body::new();
    let (mut contents, system) = contents(&request.messages);
    if requires_signatures(model) {
        let unsigned = sign_unsigned_calls(&mut contents);
        if !unsigned.is_empty() {
            warnings.push(format!(
                "{} tool call(s) in the history ({}) have no Gemini thought signature (history \
                 from another model, or metadata lost): sent with {SKIP_SIGNATURE_VALIDATOR} so \
                 {PROVIDER}/{model} accepts them.",
                unsigned.len(),
                unsigned.join(", ")
            ));
        }
    }
    body.insert("contents", Value::Array(contents));
    if !system.is_empty() {
        body.insert("systemInstruction", json!({"parts": system}));
    }

    let rendered = request.tools.rendered(DIALECT, render_tools);
    if !rendered.dropped.is_empty() {
        warnings.push(provider_tools::foreign_warning(
            &rendered.dropped,
            PROVIDER,
            model,
        ));
    }
    let searches = |t: &Value| t.get("google_search").is_some();
    if gemini_major(model).is_some_and(|major| major < 2) && rendered.tools.iter().any(searches) {
        // Gemini 1.x has no `google_search` tool (an "unsupported" warning, as in the agent
        // harness).
        let tools: Vec<Value> = rendered
            .tools
            .iter()
            .filter(|t| !searches(t))
            .cloned()
            .collect();
        warnings.push(format!(
            "google_search is not supported by {PROVIDER}/{model} (it needs Gemini 2.0 or \
             later); the model will answer without it."
        ));
        if !tools.is_empty() {
            body.insert("tools", Value::Array(tools));
        }
    } else if !rendered.tools.is_empty() {
        body.splice("tools", rendered.tools_json.clone());
    }
    if rendered.has_functions {
        let mut config = Map::new();
        let mode = match &request.tool_choice {
            ToolChoice::Auto => "AUTO",
            ToolChoice::None => "NONE",
            ToolChoice::Required | ToolChoice::Tool { .. } => "ANY",
        };
        config.insert("mode".into(), json!(mode));
        if let ToolChoice::Tool { tool_name } = &request.tool_choice {
            config.insert("allowedFunctionNames".into(), json!([tool_name]));
        }
        body.insert(
            "toolConfig",
            json!({"functionCallingConfig": Value::Object(config)}),
        );
        if request.parallel_tool_calls == Some(false) && !request.parallel_tool_calls_defaulted {
            warnings.push(format!(
                "parallel_tool_calls=false is not supported by {PROVIDER}/{model}; ignored."
            ));
        }
    }

    let settings = &request.settings;
    let mut generation = Map::new();
    if let Some(max) = settings.max_output_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(t) = settings.temperature {
        generation.insert("temperature".into(), decimal(t));
    }
    if let Some(p) = settings.top_p {
        generation.insert("topP".into(), decimal(p));
    }
    if let Some(k) = settings.top_k {
        generation.insert("topK".into(), json!(k));
    }
    if let Some(seed) = settings.seed {
        generation.insert("seed".into(), json!(seed));
    }
    if !settings.stop_sequences.is_empty() {
        generation.insert("stopSequences".into(), json!(settings.stop_sequences));
    }
    if let Some(Value::Object(extra)) = request.provider_options.get(PROVIDER) {
        for (key, value) in extra {
            if GENERATION_CONFIG_KEYS.contains(&key.as_str()) {
                merge(&mut generation, key, value);
            } else if key == "generationConfig"
                && let Value::Object(fields) = value
            {
                for (key, value) in fields {
                    merge(&mut generation, key, value);
                }
            } else {
                // `merge` on the body's members (the spliced tools read as a value).
                match (body.get_mut(key), value) {
                    (Some(Value::Object(existing)), Value::Object(fields)) => {
                        for (key, value) in fields {
                            merge(existing, key, value);
                        }
                    }
                    _ => body.insert(key.clone(), value.clone()),
                }
            }
        }
    }
    if !generation.is_empty() {
        body.insert("generationConfig", Value::Object(generation));
    }
    (body, warnings)
}

/// Sets `key` to `value`, merging objects key by key.
fn merge(target: &mut Map<String, Value>, key: &str, value: &Value) {
    match (target.get_mut(key), value) {
        (Some(Value::Object(existing)), Value::Object(fields)) => {
            for (k, v) in fields {
                merge(existing, k, v);
            }
        }
        _ => {
            target.insert(key.to_string(), value.clone());
        }
    }
}

/// Contents, merging consecutive parts of one role into one content.
#[derive(Default)]
struct Contents(Vec<(&'static str, Vec<Value>)>);

impl Contents {
    fn push(&mut self, role: &'static str, part: Value) {
        match self.0.last_mut() {
            Some((last, parts)) if *last == role => parts.push(part),
            _ => self.0.push((role, vec![part])),
        }
    }

    fn into_values(self) -> Vec<Value> {
        self.0
            .into_iter()
            .map(|(role, parts)| json!({"role": role, "parts": parts}))
            .collect()
    }
}

/// What the request needs to know of an earlier call when answering it.
struct CallInfo {
    /// Its place in its assistant message.
    position: usize,
    /// Gemini's id for it, to send back.
    wire_id: Option<String>,
}

/// The `contents` and the `systemInstruction` parts.
fn contents(thread: &[Message]) -> (Vec<Value>, Vec<Value>) {
    let mut out = Contents::default();
    let mut system = Vec::new();
    let mut calls: HashMap<&str, CallInfo> = HashMap::new();
    for message in thread {
        match message.role {
            Role::System => {
                let text = message.text();
                if !text.is_empty() {
                    system.push(json!({"text": text}));
                }
            }
            Role::User | Role::Tool => {
                tool_results(&message.content, &calls, &mut out);
                for part in &message.content {
                    match part {
                        Part::Text { text, .. } if !text.is_empty() => {
                            out.push("user", json!({"text": text}));
                        }
                        Part::File {
                            media_type, data, ..
                        } => out.push("user", file_part(media_type, data)),
                        _ => {}
                    }
                }
            }
            Role::Assistant => {
                let mut position = 0;
                for part in &message.content {
                    match part {
                        Part::Text {
                            text,
                            provider_metadata,
                        } => {
                            if let Some(part) = text_part(text, provider_metadata, false) {
                                out.push("model", part);
                            }
                        }
                        Part::Reasoning {
                            text,
                            provider_metadata,
                        } => {
                            if let Some(part) = text_part(text, provider_metadata, true) {
                                out.push("model", part);
                            }
                        }
                        Part::File {
                            media_type, data, ..
                        } => out.push("model", file_part(media_type, data)),
                        Part::ToolCall(call) if !call.provider_executed => {
                            let google = call.provider_metadata.get(PROVIDER);
                            let wire_id = google
                                .and_then(|g| g.get("id"))
                                .and_then(Value::as_str)
                                .map(str::to_string);
                            let mut function = Map::new();
                            function.insert("name".into(), json!(call.tool_name));
                            function.insert(
                                "args".into(),
                                match &call.input {
                                    Value::Object(_) => call.input.clone(),
                                    _ => json!({}),
                                },
                            );
                            if let Some(id) = &wire_id {
                                function.insert("id".into(), json!(id));
                            }
                            let mut part = Map::new();
                            part.insert("functionCall".into(), Value::Object(function));
                            if let Some(signature) = signature(&call.provider_metadata) {
                                part.insert("thoughtSignature".into(), signature.clone());
                            }
                            out.push("model", Value::Object(part));
                            calls.insert(&call.tool_call_id, CallInfo { position, wire_id });
                            position += 1;
                        }
                        // Gemini's own code execution, replayed as it came.
                        Part::ToolCall(call) if call.tool_name == CODE_EXECUTION => {
                            let mut part = Map::new();
                            part.insert("executableCode".into(), call.input.clone());
                            if let Some(signature) = signature(&call.provider_metadata) {
                                part.insert("thoughtSignature".into(), signature.clone());
                            }
                            out.push("model", Value::Object(part));
                        }
                        Part::ToolResult(result)
                            if result.provider_executed && result.tool_name == CODE_EXECUTION =>
                        {
                            let value = match &result.output {
                                ModelOutput::Json { value } | ModelOutput::ErrorJson { value } => {
                                    value.clone()
                                }
                                other => json!({"output": other.to_text()}),
                            };
                            let mut part = Map::new();
                            part.insert("codeExecutionResult".into(), value);
                            if let Some(signature) = signature(&result.provider_metadata) {
                                part.insert("thoughtSignature".into(), signature.clone());
                            }
                            out.push("model", Value::Object(part));
                        }
                        _ => {}
                    }
                }
                tool_results(&message.content, &calls, &mut out);
            }
        }
    }
    (out.into_values(), system)
}

fn signature(metadata: &ProviderMetadata) -> Option<&Value> {
    metadata
        .get(PROVIDER)
        .and_then(|g| g.get("thoughtSignature"))
        .filter(|s| s.is_string())
}

/// A model text or thought part, with its signature; `None` for an empty unsigned part.
fn text_part(text: &str, metadata: &ProviderMetadata, thought: bool) -> Option<Value> {
    let signature = signature(metadata);
    if text.is_empty() && signature.is_none() {
        return None;
    }
    let mut part = Map::new();
    part.insert("text".into(), json!(text));
    if thought {
        part.insert("thought".into(), json!(true));
    }
    if let Some(signature) = signature {
        part.insert("thoughtSignature".into(), signature.clone());
    }
    Some(Value::Object(part))
}

/// A file: `fileData` for a URL, else `inlineData` (a `data:` URL unpacked).
fn file_part(media_type: &str, data: &str) -> Value {
    if let Some((meta, payload)) = data.strip_prefix("data:").and_then(|r| r.split_once(',')) {
        let mime = meta.split(';').next().filter(|m| !m.is_empty());
        if meta.ends_with(";base64") {
            return json!({"inlineData": {"mimeType": mime.unwrap_or(media_type), "data": payload}});
        }
    }
    if ["http://", "https://", "gs://"]
        .iter()
        .any(|scheme| data.starts_with(scheme))
    {
        return json!({"fileData": {"mimeType": media_type, "fileUri": data}});
    }
    json!({"inlineData": {"mimeType": media_type, "data": data}})
}

/// The `functionResponse` parts for the (client-side) results among `parts`, in call order,
/// followed by the images and files of multi-part results.
fn tool_results(parts: &[Part], calls: &HashMap<&str, CallInfo>, out: &mut Contents) {
    let mut results: Vec<&ToolResultPart> = parts
        .iter()
        .filter_map(|p| match p {
            Part::ToolResult(result) if !result.provider_executed => Some(result),
            _ => None,
        })
        .collect();
    if results.is_empty() {
        return;
    }
    results.sort_by_key(|r| {
        calls
            .get(r.tool_call_id.as_str())
            .map_or(usize::MAX, |c| c.position)
    });
    let mut attachments = Vec::new();
    for result in results {
        let response = match &result.output {
            ModelOutput::Text { value } => json!({"output": value}),
            ModelOutput::Json { value } => json!({"output": value}),
            ModelOutput::Content { value } => {
                for part in value {
                    match part {
                        ContentPart::Image { data, media_type }
                        | ContentPart::File {
                            data, media_type, ..
                        } => attachments.push(file_part(media_type, data)),
                        ContentPart::Text { .. } => {}
                    }
                }
                json!({"output": result.output.to_text()})
            }
            ModelOutput::ErrorText { value } => json!({"error": value}),
            ModelOutput::ErrorJson { value } => json!({"error": value}),
            other => json!({"error": other.to_text()}),
        };
        let mut function = Map::new();
        function.insert("name".into(), json!(result.tool_name));
        function.insert("response".into(), response);
        let wire_id = calls
            .get(result.tool_call_id.as_str())
            .and_then(|c| c.wire_id.as_deref());
        if let Some(id) = wire_id {
            function.insert("id".into(), json!(id));
        }
        out.push("user", json!({"functionResponse": Value::Object(function)}));
    }
    for attachment in attachments {
        out.push("user", attachment);
    }
}
