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
//! The four HTTP wires' models hold one [`ModelSettings`] each (provider, model, base URL, key,
//! streaming, [`HttpSettings`] with their [`RetryPolicy`]) and share its builder methods through
//! [`ModelBuilder`] (`with_streaming`, `with_http_settings`, `base_url`): bring the trait into
//! scope to call them.
//!
//! [`provider_tools`] builds the provider-executed tools (web search for each provider); each
//! wire renders them, or drops them with one warning per request. [`dialect`] rewrites tool
//! schemas for each provider. [`decode::StreamDecoder`] is the one shape of every stream decoder;
//! [`decode::decode_sse`] drives one over a response body's bytes, [`decode::decode_events`]
//! over an [`SseStream`] of [`SseEvent`]s from any source. [`errors`] maps a status and body to
//! a [`ModelError`](toolsmith_core::ModelError), the key redacted.
//!
//! The foundation under the wires is internal to this crate: `http` (the one process-wide
//! client and the retrying POST), `retry` (bounded backoff honouring `retry-after`), `sse` (an
//! incremental server-sent-events parser, linear in the body however it is chunked), `keys` (API
//! keys and base URLs from options or the environment), `call` (one model call: POST, then the
//! stream or the whole body decoded) and `scan` (a zero-copy JSON cursor for the decoders'
//! hand-written fast paths over the hot event shapes of every wire, serde behind them). Only
//! the types their public signatures need are exported, here at the root: [`HttpSettings`],
//! [`RetryPolicy`], [`SseEvent`] and [`SseStream`].

pub mod anthropic;
mod body;
mod borrowed;
mod call;
pub mod decode;
pub mod dialect;
pub mod errors;
/// Property-test strategies and checks shared by the decoders' fast-path tests.
#[cfg(test)]
mod fast_tests;
pub mod google;
mod http;
mod keys;
#[cfg(feature = "local")]
pub mod local;
pub mod openai_chat;
pub mod openai_responses;
pub mod provider_tools;
mod registry;
pub mod request_parts;
mod retry;
mod scan;
pub mod scripted;
mod settings;
mod sse;

pub use anthropic::AnthropicMessages;
pub use google::GoogleGemini;
pub use http::HttpSettings;
pub use openai_chat::OpenAiChat;
pub use openai_responses::OpenAiResponses;
pub use registry::{PROVIDERS, ProviderOptions, resolve};
pub use retry::RetryPolicy;
/// How an error response's `retry-after-ms` / `retry-after` headers are read, for the fuzz
/// targets (`fuzz/` at the repository's root): not part of the API.
#[doc(hidden)]
pub use retry::retry_after_header;
pub use scripted::{ScriptedCall, ScriptedError, ScriptedModel, Turn};
pub use settings::{ModelBuilder, ModelSettings};
pub use sse::{SseEvent, SseStream};
