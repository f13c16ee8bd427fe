//! Model providers for toolsmith.
//!
//! Each provider speaks one wire and implements [`LanguageModel`](toolsmith_core::LanguageModel).
//! [`ScriptedModel`] plays back scripted turns (text, tool calls, errors, delays) for
//! deterministic tests and demos. [`resolve`] turns a `PROVIDER:MODEL` string into a model.
//!
//! Wires, one module each, all streamed over SSE (or one JSON body with `with_streaming(false)`):
//! - [`anthropic`]: the Anthropic Messages API (`anthropic:`).
//! - [`openai_chat`]: OpenAI Chat Completions (`openai:`, `openai-compatible:`).
//! - [`openai_responses`]: the OpenAI Responses API (`openai-responses:`).
//! - [`google`]: Gemini's native `generateContent` (`google:`).
//! - `local` (with the `local` feature): the embedded model, llama.cpp in-process (`local:`).
//!
//! [`provider_tools`] builds the provider-executed tools (web search for each provider); each
//! wire renders them, or drops them with one warning per request. [`dialect`] rewrites tool
//! schemas for each provider. [`decode::StreamDecoder`] is the one shape of every stream decoder.
//!
//! Shared foundation for every wire: [`http`] (one client, retrying POST), [`sse`] (events over
//! any byte stream), [`retry`] (bounded backoff honouring `retry-after`), [`errors`] (status and
//! body → [`ModelError`](toolsmith_core::ModelError), key redaction), [`keys`] (API keys and
//! base URLs from options or the environment). `scan` (internal) is a zero-copy JSON cursor for
//! the decoders' hand-written fast paths (the hot event shapes of every wire: text, reasoning
//! and tool-argument deltas), serde behind them.

pub mod anthropic;
mod borrowed;
pub mod call;
pub mod decode;
pub mod dialect;
pub mod errors;
/// Property-test strategies and checks shared by the decoders' fast-path tests.
#[cfg(test)]
mod fast_tests;
pub mod google;
pub mod http;
pub mod keys;
#[cfg(feature = "local")]
pub mod local;
pub mod openai_chat;
pub mod openai_responses;
pub mod provider_tools;
mod registry;
pub mod request_parts;
pub mod retry;
mod scan;
pub mod scripted;
mod settings;
pub mod sse;

pub use anthropic::AnthropicMessages;
pub use google::GoogleGemini;
pub use openai_chat::OpenAiChat;
pub use openai_responses::OpenAiResponses;
pub use registry::{PROVIDERS, ProviderOptions, resolve};
pub use scripted::{ScriptedCall, ScriptedError, ScriptedModel, Turn};
pub use settings::{ModelBuilder, ModelSettings};
