//! The `write` tool.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::{Tool, ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec, async_trait};

use crate::Workspace;
use crate::file_change::Target;
use crate::read::{blocking, parse_input, sha256_hex};
use crate::seen;

const NAME: &str = "write";

// The embedded 270M model is steered by every word here: a description that said "replace a
// file you have read" made it answer "Read the file notes.txt" with a write. The rule that an
// existing file must be read first is taught by the error (`TOOL_FILE_NOT_READ`) instead.
const DESCRIPTION: &str = "Create or overwrite a file in the workspace with the given content. \
    Parent directories are created. Returns \"ok\".";

// No doc comment on the struct: it would become the schema's top-level description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The file to write, relative to the workspace root (or absolute inside it).
    path: String,
    /// The complete new content of the file.
    content: String,
}

/// The `write` tool: creates or replaces a file beneath the workspace root.
///
/// - Input: `{"path": "...", "content": "..."}`.
/// - First the content size: over `policy.limits.output_bytes` → `TOOL_CONTENT_TOO_LARGE`
///   `Content too large (<n> bytes)` with details `{contentBytes, contentHash}` (SHA-256 hex),
///   before the path is even looked at; the content itself never appears in the error.
/// - Then the path: path errors as the root gives them; git metadata while the policy protects
///   it → [`PATH_PROTECTED`](crate::PATH_PROTECTED); a symlink, directory or special file at
///   the target → `TOOL_NOT_A_FILE` / `TOOL_IS_A_DIRECTORY`.
/// - Replacing an existing file: it must be a UTF-8 file within the byte limit
///   (`TOOL_FILE_TOO_LARGE`, `TOOL_FILE_NOT_UTF8`), and the run must have seen it as it is now
///   (read it, or written or edited it, and nothing changed it since), or
///   [`FILE_NOT_READ`](crate::FILE_NOT_READ) `Refusing to overwrite <path>: read it first (it
///   exists and this run has not read it)` / `(… it changed since it was read)`. Creating a
///   file needs no read.
/// - [`RootDir::write_atomic`](toolsmith_sandbox::RootDir::write_atomic): parents are
///   created, the file is replaced by a rename (a hard link at the target is replaced, never
///   written through), the old file's permission bits are kept without set-ID or sticky bits.
/// - Output: the text `ok`, with a [`FileChange`](crate::FileChange) artifact (the previous
///   content, or that there was none) that a stored run keeps in its journal for `toolsmith
///   threads revert`; the model never sees it.
///
/// Side effect, not idempotent.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{Tool, ToolContext};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("intro.md"), "Hello\n").unwrap();
/// let workspace = toolsmith_builtins::Workspace::new(
///     toolsmith_sandbox::SandboxPolicy::new(dir.path()),
/// ).unwrap();
/// let (read, write) = (toolsmith_builtins::read(&workspace), toolsmith_builtins::write(&workspace));
/// let cx = ToolContext::for_test("write"); // one context: one run
///
/// let overwrite = json!({"path": "intro.md", "content": "text"});
/// let err = write.call(overwrite.clone(), &cx).await.unwrap_err();
/// assert_eq!(err.code(), "TOOL_FILE_NOT_READ");
/// read.call(json!({"path": "intro.md"}), &cx).await.unwrap();
/// write.call(overwrite, &cx).await.unwrap();
/// assert_eq!(std::fs::read_to_string(dir.path().join("intro.md")).unwrap(), "text");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Write {
    spec: ToolSpec,
    meta: ToolMeta,
    workspace: Arc<Workspace>,
}

/// The `write` tool over `workspace` (see [`Write`]).
pub fn write(workspace: &Arc<Workspace>) -> Write {
    Write {
        spec: ToolSpec::for_type::<Input>(NAME).with_description(DESCRIPTION),
        meta: ToolMeta::new().side_effect(true),
        workspace: Arc::clone(workspace),
    }
}

#[async_trait]
impl Tool for Write {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Input { path, content } = parse_input(input)?;
        let limit = self.workspace.policy().limits.output_bytes;
        if content.len() > limit {
            return Err(ToolError::new(
                "TOOL_CONTENT_TOO_LARGE",
                format!("Content too large ({} bytes)", content.len()),
            )
            .with_details(json!({
                "contentBytes": content.len(),
                "contentHash": sha256_hex(content.as_bytes()),
            })));
        }
        let workspace = Arc::clone(&self.workspace);
        let state = cx.state().clone();
        let change = blocking(move || {
            let target = Target::open(&workspace, &path)?;
            if let Some(current) = &target.current {
                seen::check_overwrite(&state, &path, current.stamp)?;
            }
            target.replace(&workspace, &state, content.as_bytes())
        })
        .await?;
        Ok(ToolOutput::text("ok").with_artifact(change.to_artifact()))
    }
}
