//! Model providers for toolsmith.
//!
//! Each provider speaks one wire and implements [`LanguageModel`](toolsmith_core::LanguageModel).
//! [`ScriptedModel`] plays back scripted turns (text, tool calls, errors, delays) for
//! deterministic tests and demos. [`resolve`] turns a `PROVIDER:MODEL` string into a model.

mod registry;
pub mod scripted;

pub use registry::{ProviderOptions, resolve};
pub use scripted::{ScriptedCall, ScriptedError, ScriptedModel, Turn};
