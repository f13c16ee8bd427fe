//! The `write` tool.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::{Tool, ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec, async_trait};

use crate::Workspace;
use crate::read::{blocking, parse_input, sha256_hex};

const NAME: &str = "write";

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
/// - Then [`RootDir::write_atomic`](toolsmith_sandbox::RootDir::write_atomic): parents are
///   created, the file is replaced by a rename (a hard link or symlink at the target is
///   replaced, never written through). Path errors as the root gives them.
/// - Output: the text `ok`.
///
/// Side effect, not idempotent.
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

    async fn call(&self, input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
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
        blocking(move || workspace.root().write_atomic(&path, content.as_bytes())).await?;
        Ok(ToolOutput::text("ok"))
    }
}
