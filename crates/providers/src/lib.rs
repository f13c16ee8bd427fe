//! Model providers for toolsmith.
//!
//! Each provider speaks one wire and implements [`LanguageModel`](toolsmith_core::LanguageModel).
//! [`ScriptedModel`] plays back scripted turns (text, tool calls, errors, delays) for
//! deterministic tests and demos. [`resolve`] turns a `PROVIDER:MODEL` string into a model.
//!
//! Wires:
//! - [`openai_chat`]: OpenAI Chat Completions (`openai:`, `openai-compatible:`).
//!
//! Shared foundation for every wire: [`http`] (one client, retrying POST), [`sse`] (events over
//! any byte stream), [`retry`] (bounded backoff honouring `retry-after`), [`errors`] (status and
//! body → [`ModelError`](toolsmith_core::ModelError), key redaction), [`keys`] (API keys and
//! base URLs from options or the environment).

pub mod anthropic;
mod borrowed;
pub mod decode;
pub mod dialect;
pub mod errors;
pub mod google;
pub mod http;
pub mod keys;
pub mod openai_chat;
pub mod openai_responses;
pub mod provider_tools;
mod registry;
pub mod retry;
pub mod scripted;
pub mod sse;

pub use openai_chat::OpenAiChat;
pub use registry::{PROVIDERS, ProviderOptions, resolve};
pub use scripted::{ScriptedCall, ScriptedError, ScriptedModel, Turn};
