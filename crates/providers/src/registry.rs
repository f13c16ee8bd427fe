//! `PROVIDER:MODEL` strings.

use std::sync::Arc;

use toolsmith_core::{LanguageModel, ModelError, ModelErrorKind};

use crate::anthropic::AnthropicMessages;
use crate::google::GoogleGemini;
use crate::openai_chat::OpenAiChat;
use crate::openai_responses::OpenAiResponses;
use crate::settings::ModelBuilder;
use crate::{ScriptedModel, keys};

/// The providers this build knows, in the order error messages list them.
pub const PROVIDERS: &[&str] = &[
    "anthropic",
    "google",
    "local",
    "openai",
    "openai-compatible",
    "openai-responses",
    "scripted",
];

/// Settings that come from flags rather than the model string.
#[derive(Debug, Clone, Default)]
pub struct ProviderOptions {
    /// Overrides the provider's base URL.
    pub base_url: Option<String>,
    /// Overrides the provider's API key.
    pub api_key: Option<String>,
    /// `Some(false)` asks an HTTP wire for one JSON body instead of a stream
    /// ([`ModelBuilder::with_streaming`]): `toolsmith run --no-stream`, or a config model's
    /// `"stream": false`. `None` keeps the wire's default (streamed). The `local` and
    /// `scripted` models ignore it.
    pub streaming: Option<bool>,
}

/// Builds the model named by a `PROVIDER:MODEL` string.
///
/// - `anthropic:MODEL`: the Messages API. The key is `options.api_key`, else
///   `ANTHROPIC_API_KEY`; the base URL `options.base_url`, else `ANTHROPIC_BASE_URL`, else
///   `https://api.anthropic.com/v1`.
/// - `google:MODEL`: Gemini's native `streamGenerateContent`. The key is `options.api_key`, else
///   `GEMINI_API_KEY` (or `GOOGLE_GENERATIVE_AI_API_KEY`); the base URL `options.base_url`, else
///   `GOOGLE_GENERATIVE_AI_BASE_URL`, else `https://generativelanguage.googleapis.com/v1beta`.
/// - `openai:MODEL`: Chat Completions. The key is `options.api_key`, else `OPENAI_API_KEY`; the
///   base URL `options.base_url`, else `OPENAI_BASE_URL`, else `https://api.openai.com/v1`.
/// - `openai-compatible:MODEL`: the same wire at any base URL (Ollama, llama.cpp server, vLLM,
///   LM Studio): `options.base_url`, else `OPENAI_BASE_URL`. The key is optional:
///   `options.api_key`, or `OPENAI_API_KEY` only when the base URL also came from the
///   environment (an OpenAI key is never sent to a server named only on the command line).
/// - `openai-responses:MODEL`: the Responses API, with `openai:`'s key and base URL rules, except
///   that a base URL given in `options` with no key anywhere is taken for a local Responses
///   server (LM Studio) and called without one.
/// - `local:PATH` runs the GGUF model at `PATH` in-process (llama.cpp, the `local` feature);
///   `local:` or `local:default` is the default model (Gemma 3 270M), found in
///   `TOOLSMITH_LOCAL_MODEL` or the cache directory (see `local::lookup`).
/// - `scripted:PATH` plays back the scripted conversation in the JSON file at `PATH` (see
///   [`ScriptedModel::from_file`]).
///
/// # Errors
///
/// `Config` errors naming the problem: a string without `:`, an unknown provider (listing the
/// known ones), a missing key or base URL (naming the variable), or a model that cannot be
/// loaded.
///
/// ```
/// use toolsmith_providers::{ProviderOptions, resolve};
///
/// let err = resolve("nope:x", &Default::default()).err().unwrap();
/// assert_eq!(
///     err.to_string(),
///     "Unknown provider \"nope\" in model \"nope:x\". \
///      Known providers: anthropic, google, local, openai, openai-compatible, openai-responses, scripted."
/// );
///
/// let options = ProviderOptions {
///     api_key: Some("sk-test".into()),
///     ..Default::default()
/// };
/// let model = resolve("openai:gpt-4.1-mini", &options).unwrap();
/// assert_eq!((model.provider(), model.model_id()), ("openai", "gpt-4.1-mini"));
///
/// let local = ProviderOptions {
///     base_url: Some("http://127.0.0.1:11434/v1".into()),
///     ..Default::default()
/// };
/// let model = resolve("openai-compatible:qwen3:8b", &local).unwrap();
/// assert_eq!(model.model_id(), "qwen3:8b");
/// ```
pub fn resolve(
    model: &str,
    options: &ProviderOptions,
) -> Result<Arc<dyn LanguageModel>, ModelError> {
    let Some((provider, name)) = model.split_once(':') else {
        return Err(ModelError::new(
            ModelErrorKind::Config,
            format!(
                "Model \"{model}\" must have the form PROVIDER:MODEL, for example openai:gpt-4.1-mini."
            ),
        ));
    };
    let api_key = options.api_key.as_deref();
    let base_url = options.base_url.as_deref();
    let streaming = options.streaming.unwrap_or(true);
    match provider {
        "anthropic" => Ok(Arc::new(
            AnthropicMessages::new(name, api_key, base_url)?.with_streaming(streaming),
        )),
        "google" => Ok(Arc::new(
            GoogleGemini::new(name, api_key, base_url)?.with_streaming(streaming),
        )),
        "openai" => Ok(Arc::new(
            OpenAiChat::openai(name, api_key, base_url)?.with_streaming(streaming),
        )),
        "openai-compatible" => {
            let explicit_url = base_url.map(str::trim).filter(|u| !u.is_empty());
            let (url, key) = match explicit_url {
                Some(url) => (url.to_string(), api_key.map(str::to_string)),
                None => match keys::env_or(None, "OPENAI_BASE_URL") {
                    Some(url) => (url, keys::optional_key(api_key, "OPENAI_API_KEY")),
                    None => {
                        return Err(ModelError::new(
                            ModelErrorKind::Config,
                            "openai-compatible needs a base URL: pass --base-url or set OPENAI_BASE_URL",
                        ));
                    }
                },
            };
            Ok(Arc::new(
                OpenAiChat::compatible(name, url, key.as_deref()).with_streaming(streaming),
            ))
        }
        "openai-responses" => {
            let keyless_local = base_url.is_some_and(|u| !u.trim().is_empty())
                && keys::optional_key(api_key, "OPENAI_API_KEY").is_none();
            match (keyless_local, base_url) {
                // A server named on the command line with no key anywhere: a local Responses
                // server (LM Studio), which needs none.
                (true, Some(url)) => Ok(Arc::new(
                    OpenAiResponses::compatible(name, url.trim(), None).with_streaming(streaming),
                )),
                _ => Ok(Arc::new(
                    OpenAiResponses::openai(name, api_key, base_url)?.with_streaming(streaming),
                )),
            }
        }
        "local" => local(name),
        "scripted" => Ok(Arc::new(ScriptedModel::from_file(name)?)),
        _ => Err(ModelError::new(
            ModelErrorKind::Config,
            format!(
                "Unknown provider \"{provider}\" in model \"{model}\". Known providers: {}.",
                PROVIDERS.join(", ")
            ),
        )),
    }
}

#[cfg(feature = "local")]
fn local(name: &str) -> Result<Arc<dyn LanguageModel>, ModelError> {
    Ok(Arc::new(crate::local::LocalModel::from_name(name)?))
}

#[cfg(not(feature = "local"))]
fn local(_name: &str) -> Result<Arc<dyn LanguageModel>, ModelError> {
    Err(ModelError::new(
        ModelErrorKind::Config,
        "This build of toolsmith has no local model: build it with the `local` feature \
         (on by default in the toolsmith binary).",
    ))
}
