//! OpenAI Responses API (`/v1/responses`): `openai-responses:`, and local servers speaking it
//! (LM Studio).
//!
//! - Requests ([`build_body`], [`render_tools`]): the thread as `input` items (reasoning items
//!   with their encrypted content, function calls and outputs, item references for hosted tool
//!   calls; see the table below), function and hosted tools, tool choice, settings, provider
//!   options.
//! - Streams ([`ResponsesStreamDecoder`], [`decode_events`]) and non-streamed bodies
//!   ([`decode_response`]): the same parts either way.
//!
//! Design decisions, in short:
//! - System messages are `role: "system"` input items (not `instructions`).
//! - Item ids (messages, reasoning, function calls) ride in `providerMetadata.openai.itemId` and
//!   are echoed back; reasoning keeps `reasoningEncryptedContent`. With `store: false` in the
//!   provider options, `include: ["reasoning.encrypted_content"]` is added and ids of
//!   non-persisted items are left out.
//! - Hosted tool calls (web search, file search, code interpreter, MCP…) are provider-executed
//!   calls with their results; the next request references them by `item_reference`.
//!   `web_search_call`s are counted in `usage.server_tool_uses`.
//! - Shell, local shell, apply-patch, client tool search and computer calls are tools the
//!   *client* runs: they are local calls named `shell`, `local_shell`, `apply_patch`,
//!   `tool_search`, `computer`, answered with the matching native output item.
//! - Custom (free-form) tool calls are local calls with input `{"input":"<text>"}`.
//! - A leaked `parallel` wrapper call is expanded into the calls it holds.
//! - A body holding several responses is read up to the first finished one.
//!
//! # The thread as `input` items
//!
//! | thread | item |
//! |---|---|
//! | system message | `{"role":"system","content":"…"}` (the system role, which OpenAI treats as the developer role for reasoning models, and which compatible servers such as LM Studio accept; `instructions` is not used, so several system messages keep their place) |
//! | user text / files | `{"role":"user","content":"…"}`, or `input_text` / `input_image` / `input_file` parts |
//! | assistant text | `{"role":"assistant","content":[{"type":"output_text","text"}],"id"?}`: consecutive text parts of one message item are merged; the item id (from `providerMetadata.openai.itemId`) is sent when `store` is not false, and the message's `phase` (`commentary` / `final_answer`) when it had one |
//! | reasoning | `{"type":"reasoning","id","summary":[{"type":"summary_text","text"}…],"content"?:[{"type":"reasoning_text","text"}],"encrypted_content"?}`: the parts of one item (same `itemId`) merged; parts without an OpenAI item id (another provider's) are left out, and so are those without encrypted content when `store` is false |
//! | function call | `{"type":"function_call","call_id","name","arguments","id"?}` |
//! | custom / shell / local shell / apply-patch / tool-search call | the native item (`custom_tool_call` with `input` text, `shell_call` with `action`, `local_shell_call`, `apply_patch_call` with `operation`, `tool_search_call` with `arguments`) |
//! | tool result | `function_call_output` (text, or `input_text` / `input_image` / `input_file` parts), or the native output of the call's kind (`custom_tool_call_output`, `shell_call_output` with stdout or stderr and an exit code of 0 or 1, `local_shell_call_output` (which names the call by `id`), `apply_patch_call_output` with `completed` / `failed`, `tool_search_output`); errors and denials are sent as their text |
//! | provider-executed call (web search, file search, MCP…) | `{"type":"item_reference","id"}` when `store` is not false (the API resolves the stored item, call and result together); left out when `store` is false. An `mcp_approval_request` is followed by `{"type":"mcp_approval_response","approve":false}`: the loop has no approval flow for hosted MCP tools, so a pending request is denied explicitly (configure `require_approval: "never"` to let them run) |
//! | provider-executed result | left out (the reference covers it) |
//!
//! With `"store": false` in the provider options nothing is persisted server-side:
//! `include: ["reasoning.encrypted_content"]` is added (merged with any `include` given), item
//! ids and references are left out, and reasoning is sent by value (with its id, which the API
//! accepts alongside the encrypted content).
//!
//! Settings: `max_output_tokens`, `temperature`, `top_p`; `top_k`, `seed` and stop sequences
//! do not exist in the Responses API and are reported as warnings. `tool_choice` naming a hosted
//! tool becomes `{"type":<its wire type>}` (for example `{"type":"web_search"}`).
//!
//! # Output items → parts
//!
//! See [`ResponsesStreamDecoder`]: text blocks per message item, reasoning blocks per summary
//! part, local calls (`function_call`, `custom_tool_call`, and the client-run OpenAI tools),
//! provider-executed calls with their results for hosted tools, `Source`s for citations, and
//! usage with cached and reasoning tokens and `server_tool_uses` (one per `web_search_call`,
//! as in the Deuz SDK).
//!
//! # Limitations
//!
//! - OpenAI's client-run tools (`{"type":"shell"}`, `apply_patch`, `local_shell`, custom tools
//!   with a grammar…) can be *declared* only as provider tools (`openai.*`), which the agent loop
//!   never runs locally: their calls decode and round-trip correctly, but are answered with the
//!   loop's `No server-side executor.` error until the loop lets a local tool serve them.
//! - Hosted MCP approval requests are always denied on the next turn (see above).
//! - Expanded `parallel` calls have no item id; with `store` on, a reasoning item that preceded
//!   the wrapper is still echoed by id, which the API may reject as missing its following item.

mod error;
mod fast;
mod input;
mod items;
mod request;
mod response;
mod stream;
mod wire;

use async_trait::async_trait;
use toolsmith_core::{LanguageModel, ModelError, ModelRequest, ModelStream};

use crate::keys;
use crate::settings::{Auth, ModelBuilder, ModelSettings};

pub use request::{DIALECT, RenderedTools, build_body, render_tools};
pub use response::decode_response;
pub use stream::{ResponsesStreamDecoder, TRUNCATED, decode_events};

/// OpenAI's API, the default base URL of `openai-responses:`.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// A model behind the Responses wire. Its builder methods (streaming, timeouts and retries)
/// are [`ModelBuilder`]'s.
///
/// ```no_run
/// use toolsmith_providers::ModelBuilder;
/// use toolsmith_providers::openai_responses::OpenAiResponses;
///
/// // Key from OPENAI_API_KEY, base URL from OPENAI_BASE_URL or api.openai.com.
/// let gpt = OpenAiResponses::openai("gpt-5-mini", None, None)?;
/// // LM Studio's Responses endpoint: any base URL, no key.
/// let local = OpenAiResponses::compatible("qwen3-8b", "http://localhost:1234/v1", None)
///     .with_streaming(false);
/// assert_eq!(local.endpoint(), "http://localhost:1234/v1/responses");
/// # Ok::<(), toolsmith_core::ModelError>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiResponses {
    settings: ModelSettings,
}

impl OpenAiResponses {
    /// `openai-responses:MODEL`: the key is `api_key`, else `OPENAI_API_KEY`; the base URL is
    /// `base_url`, else `OPENAI_BASE_URL`, else [`OPENAI_BASE_URL`].
    ///
    /// # Errors
    ///
    /// A `Config` error when there is no key:
    /// `OPENAI_API_KEY is not set: pass --api-key or set OPENAI_API_KEY`.
    pub fn openai(
        model: impl Into<String>,
        api_key: Option<&str>,
        base_url: Option<&str>,
    ) -> Result<Self, ModelError> {
        let key = keys::require_key(api_key, "OPENAI_API_KEY")?;
        let base_url = keys::base_url(base_url, "OPENAI_BASE_URL", OPENAI_BASE_URL);
        Ok(Self::with_parts(model, base_url, Some(key)))
    }

    /// A server speaking the Responses API at `base_url` (for example LM Studio at
    /// `http://localhost:1234/v1`), with an optional key.
    pub fn compatible(
        model: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<&str>,
    ) -> Self {
        Self::with_parts(model, base_url, api_key.map(str::to_string))
    }

    fn with_parts(
        model: impl Into<String>,
        base_url: impl Into<String>,
        api_key: Option<String>,
    ) -> Self {
        OpenAiResponses {
            settings: ModelSettings::new(
                "openai-responses",
                model,
                base_url,
                api_key,
                Auth::Bearer,
            ),
        }
    }

    /// Renames the provider (in warnings, errors and [`LanguageModel::provider`]); its
    /// `provider_options` are then read under this name too, on top of those under `openai`.
    pub fn with_provider_name(mut self, provider: impl Into<String>) -> Self {
        self.settings.provider = provider.into();
        self
    }

    /// The endpoint: `{base_url}/responses`.
    pub fn endpoint(&self) -> String {
        format!("{}/responses", self.settings.base_url)
    }

    /// The JSON body this model would send for `request`, and the warnings it would report.
    pub fn request_body(&self, request: &ModelRequest) -> (serde_json::Value, Vec<String>) {
        let (body, warnings) = self.body(request);
        (body.into_value(), warnings)
    }

    /// [`request_body`](Self::request_body) before it is serialised.
    pub(crate) fn body(&self, request: &ModelRequest) -> (crate::body::Body, Vec<String>) {
        let settings = &self.settings;
        request::build(
            request,
            &settings.provider,
            &settings.model,
            settings.streaming,
        )
    }
}

impl ModelBuilder for OpenAiResponses {
    fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ModelSettings {
        &mut self.settings
    }
}

#[async_trait]
impl LanguageModel for OpenAiResponses {
    fn provider(&self) -> &str {
        &self.settings.provider
    }

    fn model_id(&self) -> &str {
        &self.settings.model
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let (body, warnings) = self.body(request);
        let post = self.settings.post(self.endpoint(), body.to_bytes())?;
        let decoder = ResponsesStreamDecoder::new();
        self.settings
            .send(post, warnings, decoder, decode_response)
            .await
    }
}
