//! [`ScriptedModel`]: a deterministic model that plays back scripted turns.

mod turn;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use toolsmith_core::{LanguageModel, ModelError, ModelErrorKind, ModelRequest, ModelStream};

pub use turn::{ScriptedCall, ScriptedError, Turn};

type Responder = Box<dyn Fn(&ModelRequest) -> Turn + Send + Sync>;

enum Script {
    /// Each call takes the next turn; running out is an error.
    Once(Mutex<VecDeque<Turn>>),
    /// Each call takes the next turn, starting over after the last.
    Cycle(Vec<Turn>),
    /// Each call asks a function for its turn.
    Respond(Responder),
}

/// A model that plays back scripted turns: text, reasoning, tool calls (well-formed or not),
/// finish reasons, usage, errors, truncated streams and delays. For deterministic tests of
/// everything above the wire, and for demos with no provider at all.
///
/// ```
/// use serde_json::json;
/// use toolsmith_providers::{ScriptedModel, Turn};
///
/// let model = ScriptedModel::new([
///     Turn::call("add", json!({"a": 2, "b": 2})),
///     Turn::text("2 + 2 = 4."),
/// ]);
/// # let _ = model;
/// ```
pub struct ScriptedModel {
    script: Script,
    calls: AtomicUsize,
    record: bool,
    requests: Mutex<Vec<ModelRequest>>,
    model_id: String,
}

/// The JSON file format of `--model scripted:FILE`: either a list of turns or
/// `{"turns": [...], "repeat": false}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    Turns(Vec<Turn>),
    Object {
        turns: Vec<Turn>,
        #[serde(default)]
        repeat: bool,
    },
}

impl ScriptedModel {
    /// Plays `turns` once each, in order. A call after the last turn fails with
    /// `The scripted model has no turn left (it had N).`
    pub fn new(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self::with_script(
            Script::Once(Mutex::new(turns.into_iter().collect())),
            "scripted",
        )
    }

    /// Plays `turns` in order, starting over after the last.
    pub fn cycle(turns: impl IntoIterator<Item = Turn>) -> Self {
        Self::with_script(Script::Cycle(turns.into_iter().collect()), "scripted")
    }

    /// Asks `respond` for each turn, given the request: a model that reacts to the thread.
    pub fn respond(respond: impl Fn(&ModelRequest) -> Turn + Send + Sync + 'static) -> Self {
        Self::with_script(Script::Respond(Box::new(respond)), "scripted")
    }

    /// Loads a script from a JSON file: a list of [`Turn`]s, or `{"turns": [...], "repeat": bool}`.
    ///
    /// # Errors
    ///
    /// A `Config` error naming the file when it cannot be read or parsed.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, ModelError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            ModelError::new(
                ModelErrorKind::Config,
                format!("Cannot read the script {}: {e}", path.display()),
            )
        })?;
        Self::from_json(&text)
            .map(|m| m.with_model_id(path.display().to_string()))
            .map_err(|e| {
                ModelError::new(
                    ModelErrorKind::Config,
                    format!("Invalid script {}: {}", path.display(), e.message),
                )
            })
    }

    /// Parses a script from JSON text (the format of [`from_file`](Self::from_file)).
    ///
    /// # Errors
    ///
    /// A `Config` error with the parser's message.
    pub fn from_json(text: &str) -> Result<Self, ModelError> {
        let file: ScriptFile = serde_json::from_str(text)
            .map_err(|e| ModelError::new(ModelErrorKind::Config, e.to_string()))?;
        Ok(match file {
            ScriptFile::Turns(turns)
            | ScriptFile::Object {
                turns,
                repeat: false,
            } => Self::new(turns),
            ScriptFile::Object {
                turns,
                repeat: true,
            } => Self::cycle(turns),
        })
    }

    fn with_script(script: Script, model_id: &str) -> Self {
        ScriptedModel {
            script,
            calls: AtomicUsize::new(0),
            record: false,
            requests: Mutex::default(),
            model_id: model_id.to_string(),
        }
    }

    /// Keeps a copy of every request, for [`requests`](Self::requests).
    pub fn recording(mut self) -> Self {
        self.record = true;
        self
    }

    /// Sets the model id it reports.
    pub fn with_model_id(mut self, model_id: impl Into<String>) -> Self {
        self.model_id = model_id.into();
        self
    }

    /// The requests received so far (only when [`recording`](Self::recording)).
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How many calls it has answered.
    pub fn call_count(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    fn next_turn(&self, index: usize, request: &ModelRequest) -> Result<Turn, ModelError> {
        match &self.script {
            Script::Once(turns) => turns
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front()
                .ok_or_else(|| {
                    ModelError::new(
                        ModelErrorKind::InvalidRequest,
                        format!("The scripted model has no turn left (it had {index})."),
                    )
                }),
            Script::Cycle(turns) if turns.is_empty() => Err(ModelError::new(
                ModelErrorKind::InvalidRequest,
                "The scripted model has no turns.",
            )),
            Script::Cycle(turns) => Ok(turns[index % turns.len()].clone()),
            Script::Respond(respond) => Ok(respond(request)),
        }
    }
}

#[async_trait::async_trait]
impl LanguageModel for ScriptedModel {
    fn provider(&self) -> &str {
        "scripted"
    }

    fn model_id(&self) -> &str {
        &self.model_id
    }

    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let index = self.calls.fetch_add(1, Ordering::SeqCst);
        if self.record {
            self.requests
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(request.clone());
        }
        let turn = self.next_turn(index, request)?;
        if let Some(error) = &turn.error {
            if turn.delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(turn.delay_ms)).await;
            }
            return Err(error.to_model_error());
        }
        let parts = turn.parts(index);
        if turn.delay_ms == 0 {
            return Ok(Box::pin(futures::stream::iter(parts)));
        }
        let delay = Duration::from_millis(turn.delay_ms);
        let mut parts = Some(parts);
        Ok(Box::pin(
            futures::stream::once(tokio::time::sleep(delay))
                .map(move |()| futures::stream::iter(parts.take().unwrap_or_default()))
                .flatten(),
        ))
    }
}
