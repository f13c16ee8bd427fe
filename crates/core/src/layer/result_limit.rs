//! [`ResultLimitLayer`]: a cap on what the model sees of a result, as RadarOS's
//! `toolResultLimit`.

use std::sync::Arc;

use futures::StreamExt;

use super::truncate::truncate;
use super::{Call, Layer, Next};
use crate::{
    CallSettings, ContentPart, LanguageModel, Message, ModelOutput, ModelPart, ModelRequest,
    ResultLimit, ResultLimitStrategy, ToolError, ToolOutput,
};

/// The instructions a summary is asked with (RadarOS's, completed).
pub const SUMMARIZE_PROMPT: &str = "Summarize the following tool output concisely, preserving all \
     key data points, totals, and important details. Do NOT omit numeric values, IDs, or dates. \
     Keep names, identifiers and figures exactly as written. Answer with the summary only.";

/// The most of a result a summary is asked of (RadarOS's cap), in characters.
pub const SUMMARIZE_INPUT_CHARS: usize = 200_000;

/// Applies each tool's [`ResultLimit`] (its own, else the agent's default) to the model-facing
/// part of its result: text within `max_chars` passes unchanged; past it, the `truncate`
/// strategy cuts it ([`truncate`](super::truncate())), `summarize` asks the summary model and
/// falls back to truncation when there is none, it fails, or it answers nothing.
///
/// What the caller gets back — the result's value, the stream's `tool-result` part, the run's
/// output — is never cut: only [`ToolOutput::model`]. Text, JSON (measured as its compact text)
/// and errors are limited; in multi-part content each text part is. Hooks (outside this layer)
/// see the limited text, as RadarOS's `afterToolExec` does.
///
/// ```
/// use toolsmith_core::layer::ResultLimitLayer;
/// use toolsmith_core::ResultLimit;
///
/// let layer = ResultLimitLayer::new(Some(ResultLimit::default())); // 20 000 characters
/// ```
#[derive(Clone, Default)]
pub struct ResultLimitLayer {
    default: Option<ResultLimit>,
    summarizer: Option<Arc<dyn LanguageModel>>,
}

impl ResultLimitLayer {
    /// A layer applying `default` to tools with no limit of their own (`None`: no limit).
    pub fn new(default: Option<ResultLimit>) -> Self {
        ResultLimitLayer {
            default,
            summarizer: None,
        }
    }

    /// The same layer with `default` for tools with no limit of their own.
    #[must_use]
    pub fn with_default(mut self, default: ResultLimit) -> Self {
        self.default = Some(default);
        self
    }

    /// The model that writes summaries for the `summarize` strategy (temperature 0, at most
    /// 4 096 tokens).
    #[must_use]
    pub fn summarize_with(mut self, model: Arc<dyn LanguageModel>) -> Self {
        self.summarizer = Some(model);
        self
    }

    async fn limit(&self, text: &str, limit: ResultLimit) -> Option<String> {
        if text.chars().count() <= limit.max_chars {
            return None;
        }
        if limit.strategy == ResultLimitStrategy::Summarize
            && let Some(model) = &self.summarizer
        {
            match summarize(model.as_ref(), text).await {
                Ok(summary) if !summary.trim().is_empty() => return Some(summary),
                Ok(_) => tracing::warn!("the summary of a tool result was empty: truncated"),
                Err(e) => tracing::warn!("summarising a tool result failed ({e}): truncated"),
            }
        }
        Some(truncate(text, limit.max_chars).into_owned())
    }
}

impl std::fmt::Debug for ResultLimitLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultLimitLayer")
            .field("default", &self.default)
            .field(
                "summarizer",
                &self.summarizer.as_ref().map(|m| m.model_id()),
            )
            .finish()
    }
}

#[async_trait::async_trait]
impl Layer for ResultLimitLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let Some(limit) = call.tool.meta().result_limit.or(self.default) else {
            return next.run(call).await;
        };
        let mut output = next.run(call).await?;
        output.model = match output.model {
            ModelOutput::Text { value } => match self.limit(&value, limit).await {
                Some(cut) => ModelOutput::Text { value: cut },
                None => ModelOutput::Text { value },
            },
            ModelOutput::ErrorText { value } => match self.limit(&value, limit).await {
                Some(cut) => ModelOutput::ErrorText { value: cut },
                None => ModelOutput::ErrorText { value },
            },
            ModelOutput::Json { value } => match self.limit(&value.to_string(), limit).await {
                Some(cut) => ModelOutput::Text { value: cut },
                None => ModelOutput::Json { value },
            },
            ModelOutput::ErrorJson { value } => match self.limit(&value.to_string(), limit).await {
                Some(cut) => ModelOutput::ErrorText { value: cut },
                None => ModelOutput::ErrorJson { value },
            },
            ModelOutput::Content { value } => {
                let mut parts = Vec::with_capacity(value.len());
                for part in value {
                    parts.push(match part {
                        ContentPart::Text { text } => ContentPart::Text {
                            text: self.limit(&text, limit).await.unwrap_or(text),
                        },
                        other => other,
                    });
                }
                ModelOutput::Content { value: parts }
            }
            denied @ ModelOutput::ExecutionDenied { .. } => denied,
        };
        Ok(output)
    }
}

/// The summary model's answer for `text` (its first [`SUMMARIZE_INPUT_CHARS`] characters).
async fn summarize(model: &dyn LanguageModel, text: &str) -> Result<String, crate::ModelError> {
    let input = match text.char_indices().nth(SUMMARIZE_INPUT_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    };
    let request = ModelRequest {
        messages: vec![Message::system(SUMMARIZE_PROMPT), Message::user(input)],
        settings: CallSettings {
            max_output_tokens: Some(4096),
            temperature: Some(0.0),
            ..CallSettings::default()
        },
        ..ModelRequest::default()
    };
    let mut stream = model.stream(&request).await?;
    let mut summary = String::new();
    while let Some(part) = stream.next().await {
        if let ModelPart::TextDelta { delta, .. } = part? {
            summary.push_str(&delta);
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::{Value, json};

    use super::*;
    use crate::layer::LayerStack;
    use crate::{ModelError, ModelStream, SharedTool, ToolContext, ToolMeta, from_fn};

    /// A summary model answering `answer` (an error when `None`), keeping what it was asked.
    struct Summarizer {
        answer: Option<&'static str>,
        asked: Mutex<Vec<ModelRequest>>,
    }

    #[async_trait::async_trait]
    impl LanguageModel for Summarizer {
        async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
            self.asked.lock().unwrap().push(request.clone());
            let answer = self
                .answer
                .ok_or_else(|| ModelError::new(crate::ModelErrorKind::Server, "down"))?;
            let part = ModelPart::TextDelta {
                id: "t".into(),
                delta: answer.into(),
            };
            Ok(Box::pin(futures::stream::iter([Ok(part)])))
        }
    }

    fn big(meta: ToolMeta) -> SharedTool {
        Arc::new(
            from_fn("big", "Big.", |_: Value, _cx| async {
                Ok::<_, ToolError>(json!({"rows": (0..1000).collect::<Vec<_>>()}))
            })
            .with_meta(meta),
        )
    }

    async fn through(layer: ResultLimitLayer, tool: &SharedTool) -> ToolOutput {
        let mut stack = LayerStack::new();
        stack.push(layer);
        stack
            .call(tool, json!({}), &ToolContext::for_test("big"))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn the_model_sees_the_cut_and_the_caller_the_whole() {
        let limit = ResultLimit {
            max_chars: 100,
            ..ResultLimit::default()
        };
        let out = through(ResultLimitLayer::new(Some(limit)), &big(ToolMeta::new())).await;
        assert_eq!(out.value["rows"].as_array().unwrap().len(), 1000);
        let seen = out.model.to_text();
        assert!(seen.contains("\"_rows_note\": \"Showing "), "{seen}");
        // The tool's own limit wins over the default; no limit at all: untouched.
        let own = big(ToolMeta::new().result_limit(ResultLimit {
            max_chars: 50_000,
            ..ResultLimit::default()
        }));
        let out = through(ResultLimitLayer::new(Some(limit)), &own).await;
        assert!(matches!(out.model, ModelOutput::Json { .. }));
        let out = through(ResultLimitLayer::new(None), &big(ToolMeta::new())).await;
        assert!(matches!(out.model, ModelOutput::Json { .. }));
    }

    #[tokio::test]
    async fn summaries_replace_the_text_and_truncation_stands_in_when_they_fail() {
        let limit = ResultLimit {
            max_chars: 100,
            strategy: ResultLimitStrategy::Summarize,
        };
        let model = Arc::new(Summarizer {
            answer: Some("1000 rows, 0 to 999."),
            asked: Mutex::default(),
        });
        let layer = ResultLimitLayer::new(Some(limit)).summarize_with(model.clone());
        let out = through(layer, &big(ToolMeta::new())).await;
        assert_eq!(out.model.to_text(), "1000 rows, 0 to 999.");
        let asked = model.asked.lock().unwrap()[0].clone();
        assert_eq!(asked.settings.temperature, Some(0.0));
        assert_eq!(asked.settings.max_output_tokens, Some(4096));
        assert_eq!(asked.messages[0], Message::system(SUMMARIZE_PROMPT));
        for answer in [None, Some("  ")] {
            let model = Arc::new(Summarizer {
                answer,
                asked: Mutex::default(),
            });
            let layer = ResultLimitLayer::new(Some(limit)).summarize_with(model);
            let seen = through(layer, &big(ToolMeta::new())).await.model.to_text();
            assert!(seen.contains("_rows_note"), "{seen}");
        }
        // No summary model: truncation.
        let seen = through(ResultLimitLayer::new(Some(limit)), &big(ToolMeta::new()))
            .await
            .model
            .to_text();
        assert!(seen.contains("_rows_note"), "{seen}");
    }
}
