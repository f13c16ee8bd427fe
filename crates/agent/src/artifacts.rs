//! Results too large for the model's context, kept as artifacts (RadarOS's
//! `maxToolOutputBytes`), and the tools that read them back: [`get_artifact`] and
//! [`list_artifacts`].
//!
//! With [`AgentBuilder::spill_artifacts`](crate::AgentBuilder::spill_artifacts), a result whose
//! model-facing text is longer than the limit (RadarOS's default: 50 KiB) is stored, and the
//! model sees in its place RadarOS's pointer object:
//!
//! ```json
//! {"pointer": "/attachments/artifact-call_1.txt", "preview": "<its first 200 characters>",
//!  "sizeBytes": 81234,
//!  "note": "Output too large; full value stored as artifact. Call getArtifact(pointer) to read it."}
//! ```
//!
//! The artifact is a file of the thread's attachments when the run has an
//! [`Attachments`] store in its dependencies (so it outlives the run, and a sub-agent can be
//! handed it), else it is kept in the run's session state for the run's length. The caller's
//! value is never touched; nor are the results of `getArtifact` and `listArtifacts`
//! themselves. Errors and denials are never spilled.

use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::layer::{Call, Layer, Next};
use toolsmith_core::{ModelOutput, Tool, ToolContext, ToolError, ToolOutput, async_trait, from_fn};

use crate::attachments::{ATTACHMENTS_PREFIX, Attachments, thread_key};

/// RadarOS's default limit: 50 KiB.
pub const DEFAULT_MAX_TOOL_OUTPUT_BYTES: usize = 50 * 1024;
/// The characters of a spilled result the pointer shows.
pub const PREVIEW_CHARS: usize = 200;
/// The tool that reads an artifact.
pub const GET_ARTIFACT: &str = "getArtifact";
/// The tool that lists a thread's artifacts.
pub const LIST_ARTIFACTS: &str = "listArtifacts";
/// The most characters `getArtifact` returns at once, and its default.
pub const MAX_WINDOW: usize = 20_000;

const NOTE: &str =
    "Output too large; full value stored as artifact. Call getArtifact(pointer) to read it.";
/// Where artifacts kept in a run's session state live, by pointer.
const STATE_KEY: &str = "toolsmith.artifacts";

/// The layer that spills results over `max_bytes`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArtifactLayer {
    pub(crate) max_bytes: usize,
}

#[async_trait]
impl Layer for ArtifactLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let name = call.cx.tool_name().to_string();
        let cx = call.cx;
        let mut output = next.run(call).await?;
        if name == GET_ARTIFACT || name == LIST_ARTIFACTS {
            return Ok(output);
        }
        let text = match &output.model {
            ModelOutput::Text { value } => value.clone(),
            ModelOutput::Json { value } => value.to_string(),
            _ => return Ok(output),
        };
        if text.len() <= self.max_bytes {
            return Ok(output);
        }
        let pointer = store(cx, &text).await?;
        let preview: String = text.chars().take(PREVIEW_CHARS).collect();
        output.model = ModelOutput::json(json!({
            "pointer": pointer,
            "preview": preview,
            "sizeBytes": text.len(),
            "note": NOTE,
        }));
        Ok(output)
    }
}

/// Keeps `text` as the call's artifact; its pointer.
async fn store(cx: &ToolContext, text: &str) -> Result<String, ToolError> {
    let id: String = cx
        .tool_call_id()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = format!("artifact-{id}.txt");
    let pointer = format!("{ATTACHMENTS_PREFIX}{name}");
    match cx.dep::<Attachments>() {
        Some(attachments) => {
            let folder = attachments.folder(thread_key(cx));
            let written = async {
                tokio::fs::create_dir_all(&folder).await?;
                tokio::fs::write(folder.join(&name), text).await
            };
            written.await.map_err(|e| {
                ToolError::new(
                    "ARTIFACT_FAILED",
                    "The result was too large to show and could not be stored as an artifact.",
                )
                .with_operator_detail(format!("writing {}: {e}", folder.join(&name).display()))
            })?;
        }
        None => {
            cx.state().update(|state| {
                let entry = state
                    .entry(STATE_KEY)
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(artifacts) = entry {
                    artifacts.insert(pointer.clone(), Value::from(text));
                }
            });
        }
    }
    Ok(pointer)
}

/// `getArtifact`'s input.
#[derive(Deserialize, schemars::JsonSchema)]
struct GetArtifact {
    /// The artifact's pointer, as a result's `pointer` gave it.
    pointer: String,
    /// The first character to return (default 0).
    #[serde(default)]
    offset: Option<u64>,
    /// How many characters to return (default and most 20000).
    #[serde(default)]
    limit: Option<u64>,
}

/// `getArtifact {pointer, offset?, limit?}`: a window of an artifact's text, with where the
/// next one starts (`nextOffset`, absent at the end).
pub fn get_artifact() -> impl Tool {
    from_fn(
        GET_ARTIFACT,
        "Reads a stored artifact: a result too large to show, by the pointer it gave. Returns \
         up to `limit` characters from `offset`, and `nextOffset` when there is more.",
        |input: GetArtifact, cx: ToolContext| async move {
            let text = load(&cx, &input.pointer).await?;
            let offset = input.offset.unwrap_or(0) as usize;
            let limit = input.limit.unwrap_or(MAX_WINDOW as u64) as usize;
            if limit == 0 || limit > MAX_WINDOW {
                return Err(ToolError::new(
                    "INVALID_INPUT",
                    format!("limit must be from 1 to {MAX_WINDOW}"),
                ));
            }
            let total = text.chars().count();
            let content: String = text.chars().skip(offset).take(limit).collect();
            let end = offset.saturating_add(content.chars().count());
            let mut out = json!({
                "pointer": input.pointer,
                "offset": offset,
                "content": content,
                "sizeChars": total,
            });
            if end < total {
                out["nextOffset"] = json!(end);
            }
            Ok::<_, ToolError>(out)
        },
    )
}

/// `listArtifacts {}`: the pointers and sizes of the thread's artifacts.
pub fn list_artifacts() -> impl Tool {
    from_fn(
        LIST_ARTIFACTS,
        "Lists the stored artifacts of this conversation: their pointers and sizes.",
        |_: serde_json::Map<String, Value>, cx: ToolContext| async move {
            let mut listed = Vec::new();
            if let Some(attachments) = cx.dep::<Attachments>() {
                let folder = attachments.folder(thread_key(&cx));
                if let Ok(mut entries) = tokio::fs::read_dir(&folder).await {
                    while let Ok(Some(entry)) = entries.next_entry().await {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        if name.starts_with("artifact-") {
                            let size = entry.metadata().await.map(|m| m.len()).unwrap_or(0);
                            listed.push(json!({"pointer": format!("{ATTACHMENTS_PREFIX}{name}"),
                                               "sizeBytes": size}));
                        }
                    }
                }
            } else if let Some(Value::Object(artifacts)) = cx.state().get(STATE_KEY) {
                for (pointer, text) in artifacts {
                    let size = text.as_str().map_or(0, str::len);
                    listed.push(json!({"pointer": pointer, "sizeBytes": size}));
                }
            }
            listed.sort_by(|a, b| a["pointer"].as_str().cmp(&b["pointer"].as_str()));
            Ok::<_, ToolError>(json!({ "artifacts": listed }))
        },
    )
}

/// The text of the artifact at `pointer`.
async fn load(cx: &ToolContext, pointer: &str) -> Result<String, ToolError> {
    let missing = || {
        ToolError::new(
            "INVALID_INPUT",
            format!("No artifact {pointer} in this conversation (listArtifacts lists them)."),
        )
    };
    let is_artifact = pointer
        .strip_prefix(ATTACHMENTS_PREFIX)
        .is_some_and(|name| name.starts_with("artifact-"));
    if !is_artifact {
        return Err(missing());
    }
    match cx.dep::<Attachments>() {
        Some(attachments) => {
            // `resolve` refuses anything but a file of the thread's own folder.
            let file = attachments
                .resolve(thread_key(cx), pointer)
                .map_err(|_| missing())?;
            tokio::fs::read_to_string(file).await.map_err(|_| missing())
        }
        None => cx
            .state()
            .get(STATE_KEY)
            .and_then(|artifacts| artifacts.get(pointer)?.as_str().map(str::to_string))
            .ok_or_else(missing),
    }
}
