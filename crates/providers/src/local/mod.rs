//! The embedded local model (`local:`): a GGUF model run in-process by llama.cpp, no network,
//! no key. The default is Gemma 3 270M (Q4_K_M), installed by
//! `scripts/setup-local-model.sh` (see [`lookup`]).
//!
//! Every turn is generated under a grammar derived from the tools' JSON Schemas
//! ([`grammar`]): the model writes `{"answer": …}` or calls
//! `{"tool": NAME, "arguments": …}` whose arguments match that tool's schema, so a call is
//! never malformed, whatever the model's size. Decoding takes the model's own next token when
//! the grammar allows it and checks the whole vocabulary only when it does not (a few tokens
//! per call). The prompt ([`prompt`]) lists the tools and shows worked calls; the turn text is
//! parsed as it is generated ([`turn`]) into the same stream parts every provider yields.
//!
//! **Tool rounds.** A small model tends to call tools forever once it has seen a result. So,
//! with tool choice `auto`, after [`LocalModel::with_tool_rounds`] rounds of tool results in
//! the current request (default 1) the grammar allows only an answer. Raise it for tasks that
//! need several steps; the request's provider options can set it per call:
//! `{"local": {"toolRounds": 3}}`.
//!
//! **The answer after a tool result** has a prompt of its own, a length bound and a stop rule
//! ([`answer`]): short answers that restate the result, instead of an echo or a ramble.
//!
//! ```no_run
//! # async fn demo() -> Result<(), toolsmith_core::ModelError> {
//! use toolsmith_providers::local::LocalModel;
//!
//! let model = LocalModel::from_name("")?          // the default model, wherever it is installed
//!     .with_tool_rounds(2);
//! # Ok(()) }
//! ```

pub mod answer;
mod engine;
mod forced;
pub mod grammar;
pub mod lookup;
pub mod prompt;
mod prompt_cache;
pub mod turn;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

use async_trait::async_trait;
use futures::StreamExt;
use toolsmith_core::{
    LanguageModel, Message, ModelError, ModelErrorKind, ModelPart, ModelRequest, ModelStream, Role,
    ToolChoice, ToolDeclaration,
};

use self::engine::{EngineConfig, Job, Sampling};
use self::forced::Skeleton;
use self::grammar::TurnShape;
pub use self::prompt::PromptFormat;
use crate::provider_tools;

/// The most tokens a turn may take when the request does not say (an answer to a tool result:
/// [`answer::MAX_TOKENS`]).
pub const DEFAULT_MAX_TOKENS: u32 = 512;

/// The embedded model: llama.cpp in this process, grammar-constrained tool calls.
///
/// Cheap to clone; clones share one worker thread, one context and its KV cache.
#[derive(Clone)]
pub struct LocalModel {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    /// The worker thread's inbox, started by the first call.
    worker: Mutex<Option<mpsc::Sender<Job>>>,
}

/// What the `with_*` methods set; a changed copy gets a worker (and a context) of its own.
#[derive(Clone)]
struct Settings {
    path: PathBuf,
    model_id: String,
    format: PromptFormat,
    tool_rounds: u32,
    optional_arguments: bool,
    threads: i32,
    context_tokens: u32,
    prompt_cache: Option<PathBuf>,
}

impl LocalModel {
    /// A model for `local:NAME`: a GGUF path, or empty / `default` for the default model
    /// ([`lookup::find_model`]). Nothing is loaded until the first call.
    ///
    /// # Errors
    ///
    /// `Config` when the file does not exist, with the command that installs the default.
    pub fn from_name(name: &str) -> Result<Self, ModelError> {
        Ok(Self::new(lookup::find_model(name)?))
    }

    /// A model for the GGUF file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let model_id = path
            .file_stem()
            .map_or_else(|| "local".to_string(), |s| s.to_string_lossy().into_owned());
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(16)) as i32;
        Self::with_settings(Settings {
            path,
            model_id,
            format: PromptFormat::default(),
            tool_rounds: 1,
            optional_arguments: false,
            threads,
            context_tokens: 4096,
            prompt_cache: lookup::prompt_cache_dir(),
        })
    }

    fn with_settings(settings: Settings) -> Self {
        LocalModel {
            inner: Arc::new(Inner {
                settings,
                worker: Mutex::new(None),
            }),
        }
    }

    fn with(self, change: impl FnOnce(&mut Settings)) -> Self {
        let mut settings = self.inner.settings.clone();
        change(&mut settings);
        Self::with_settings(settings)
    }

    /// Tool-result rounds after which only an answer is allowed (with tool choice `auto`).
    pub fn with_tool_rounds(self, rounds: u32) -> Self {
        self.with(|i| i.tool_rounds = rounds)
    }

    /// Whether the model is offered tools' optional numeric arguments (default `false`; see
    /// [`grammar::without_optional_numbers`]).
    pub fn with_optional_arguments(self, offered: bool) -> Self {
        self.with(|i| i.optional_arguments = offered)
    }

    /// How turns are marked in the prompt (default [`PromptFormat::Plain`]).
    pub fn with_prompt_format(self, format: PromptFormat) -> Self {
        self.with(|i| i.format = format)
    }

    /// CPU threads for llama.cpp (default: all cores, at most 16).
    pub fn with_threads(self, threads: u16) -> Self {
        self.with(|i| i.threads = i32::from(threads.max(1)))
    }

    /// The context size in tokens (default 4096).
    pub fn with_context_tokens(self, tokens: u32) -> Self {
        self.with(|i| i.context_tokens = tokens.max(256))
    }

    /// Where the evaluated start of prompts (instructions, tools, worked examples) is kept
    /// across processes, or `None` to keep it only in memory. The default is
    /// [`lookup::prompt_cache_dir`]: `$XDG_CACHE_HOME/toolsmith/prompt-cache`, moved or turned
    /// off (`off`) by the `TOOLSMITH_PROMPT_CACHE` variable.
    ///
    /// With it, a new process's first turn restores those several hundred tokens' state from a
    /// file in milliseconds instead of evaluating them (about 2 s on two cores). A damaged or
    /// foreign file is deleted, never loaded; failures to read or write only cost speed
    /// (docs/providers.md, "Prompt cache").
    pub fn with_prompt_cache(self, dir: Option<PathBuf>) -> Self {
        self.with(|i| i.prompt_cache = dir)
    }

    /// The GGUF file.
    pub fn path(&self) -> &Path {
        &self.inner.settings.path
    }

    /// Sends a job to the worker, starting one if there is none yet or it has ended (a panic).
    fn submit(&self, job: Job) -> Result<(), ModelError> {
        let mut worker = self.inner.worker.lock().unwrap_or_else(|p| p.into_inner());
        let job = match worker.as_ref() {
            Some(sender) => match sender.send(job) {
                Ok(()) => return Ok(()),
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        let sender = engine::spawn(EngineConfig {
            path: self.inner.settings.path.clone(),
            threads: self.inner.settings.threads,
            context_tokens: self.inner.settings.context_tokens,
            prompt_cache: self.inner.settings.prompt_cache.clone(),
        });
        sender.send(job).map_err(|_| {
            ModelError::new(
                ModelErrorKind::Other,
                "The local model's thread could not be started.",
            )
        })?;
        *worker = Some(sender);
        Ok(())
    }

    /// How many sentences an answer to a tool result may have: the request's provider option
    /// `answerSentences` (0: no limit), else [`answer::SENTENCES`].
    fn answer_sentences(request: &ModelRequest) -> Option<u32> {
        let limit = local_option(request, "answerSentences")
            .map_or(answer::SENTENCES, |n| n.min(u64::from(u32::MAX)) as u32);
        (limit > 0).then_some(limit)
    }

    /// What the grammar allows this turn: the request's tool choice, then the tool-round
    /// policy.
    fn shape(&self, request: &ModelRequest) -> TurnShape {
        match request.tool_choice {
            ToolChoice::None => TurnShape::Answer,
            ToolChoice::Required | ToolChoice::Tool { .. } => TurnShape::Calls,
            ToolChoice::Auto => {
                let rounds = local_option(request, "toolRounds")
                    .map_or(self.inner.settings.tool_rounds, |n| {
                        n.min(u64::from(u32::MAX)) as u32
                    });
                if tool_rounds(&request.messages) >= rounds {
                    TurnShape::Answer
                } else {
                    TurnShape::Either
                }
            }
        }
    }
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("path", &self.inner.settings.path)
            .field("format", &self.inner.settings.format)
            .field("tool_rounds", &self.inner.settings.tool_rounds)
            .finish_non_exhaustive()
    }
}

/// A number among the request's provider options for `local`.
fn local_option(request: &ModelRequest, name: &str) -> Option<u64> {
    request
        .provider_options
        .get("local")
        .and_then(|o| o.get(name))
        .and_then(serde_json::Value::as_u64)
}

/// Tool-result messages since the last user message.
fn tool_rounds(messages: &[Message]) -> u32 {
    messages
        .iter()
        .rev()
        .take_while(|m| m.role != Role::User)
        .filter(|m| m.role == Role::Tool)
        .count() as u32
}

/// The tools as the model is offered them: whole, or without their optional numbers.
fn offer(tools: &[&ToolDeclaration], optional_arguments: bool) -> Vec<ToolDeclaration> {
    tools
        .iter()
        .map(|t| {
            if optional_arguments {
                (*t).clone()
            } else {
                grammar::without_optional_numbers(t)
            }
        })
        .collect()
}

/// The grammar for a turn over `tools`, the schema part cached per toolset.
fn turn_grammar(
    request: &ModelRequest,
    tools: &[&ToolDeclaration],
    shape: TurnShape,
    optional_arguments: bool,
) -> Result<String, ModelError> {
    let generate = |tools: &[&ToolDeclaration]| {
        let schema = grammar::turn_schema(tools).to_string();
        llama_cpp_2::json_schema_to_grammar(&schema).map_err(|e| {
            ModelError::new(
                ModelErrorKind::InvalidRequest,
                format!(
                    "The tools' schemas cannot be turned into a grammar for the local model: {e}"
                ),
            )
        })
    };
    let generated = match &request.tool_choice {
        // One tool: its own grammar (rare, not worth a cache entry per name).
        ToolChoice::Tool { tool_name } => {
            let only: Vec<&ToolDeclaration> = tools
                .iter()
                .copied()
                .filter(|t| &*t.name == tool_name)
                .collect();
            if only.is_empty() {
                return Err(ModelError::new(
                    ModelErrorKind::InvalidRequest,
                    format!("The tool choice names {tool_name:?}, which is not on offer."),
                ));
            }
            Arc::new(generate(&only))
        }
        _ => {
            let dialect = if optional_arguments {
                "local-gbnf-all-arguments"
            } else {
                "local-gbnf"
            };
            request.tools.rendered(dialect, |entries| {
                let offered = offer(
                    &provider_tools::split(entries, None).functions,
                    optional_arguments,
                );
                generate(&offered.iter().collect::<Vec<_>>())
            })
        }
    };
    let generated = generated.as_ref().as_ref().map_err(Clone::clone)?;
    grammar::with_turn_root(generated, shape, !tools.is_empty())
}

#[async_trait]
impl LanguageModel for LocalModel {
    fn provider(&self) -> &str {
        "local"
    }

    fn model_id(&self) -> &str {
        &self.inner.settings.model_id
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let split = provider_tools::split(request.tools.entries(), None);
        let optional = self.inner.settings.optional_arguments;
        let offered = offer(&split.functions, optional);
        let tools: Vec<&ToolDeclaration> = offered.iter().collect();
        let mut warnings = Vec::new();
        if !split.dropped.is_empty() {
            warnings.push(provider_tools::dropped_warning(
                &split.dropped,
                "local",
                "local",
                &self.inner.settings.model_id,
            ));
        }
        let shape = self.shape(request);
        let grammar = turn_grammar(request, &tools, shape, optional)?;
        let format = self.inner.settings.format;
        let answering = answer::follows_result(&request.messages, shape == TurnShape::Answer);
        let (prompt, shared_len) = if answering {
            answer::build_split(&request.messages)
        } else {
            prompt::build_split(&request.messages, &tools, format)
        };
        let settings = &request.settings;
        let default_max_tokens = if answering {
            answer::MAX_TOKENS
        } else {
            DEFAULT_MAX_TOKENS
        };
        let (out, parts) = tokio::sync::mpsc::unbounded_channel();
        let _ = out.send(Ok(ModelPart::StreamStart { warnings }));
        self.submit(Job {
            prompt,
            shared_len,
            // The answer's prompt is plain text in either format.
            parse_special: format == PromptFormat::Gemma && !answering,
            grammar,
            skeleton: Skeleton::new(&tools, shape),
            sampling: Sampling {
                temperature: settings.temperature,
                top_p: settings.top_p,
                top_k: settings.top_k,
                seed: settings.seed.unwrap_or(0) as u32,
            },
            max_tokens: settings.max_output_tokens.unwrap_or(default_max_tokens),
            sentence_limit: answering.then(|| Self::answer_sentences(request)).flatten(),
            model_id: self.inner.settings.model_id.clone(),
            out,
        })?;
        Ok(tokio_stream(parts).boxed())
    }
}

/// The worker's channel as a stream.
fn tokio_stream(
    mut parts: tokio::sync::mpsc::UnboundedReceiver<Result<ModelPart, ModelError>>,
) -> impl futures::Stream<Item = Result<ModelPart, ModelError>> + Send {
    futures::stream::poll_fn(move |cx| parts.poll_recv(cx))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A function tool declaration, for the local model's unit tests.
    pub(crate) fn tool(name: &str, schema: serde_json::Value) -> ToolDeclaration {
        ToolDeclaration {
            name: name.into(),
            description: String::new(),
            input_schema: Arc::new(schema),
            strict: false,
            kind: toolsmith_core::ToolKind::Function,
        }
    }

    #[test]
    fn tool_rounds_count_results_since_the_last_user_message() {
        let result = Message::tool_results(vec![]);
        let messages = vec![
            Message::user("a"),
            result.clone(),
            Message::user("b"),
            Message::assistant("x"),
            result.clone(),
            Message::assistant("y"),
            result,
        ];
        assert_eq!(tool_rounds(&messages), 2);
        assert_eq!(tool_rounds(&messages[..3]), 0);
    }
}
