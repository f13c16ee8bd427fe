//! [`ClientTool`]: a tool the caller answers, declared by its spec alone.

use async_trait::async_trait;
use serde_json::Value;

use crate::{ToolContext, ToolError, ToolKind, ToolOutput, ToolSpec};

/// A tool with no executor in this process: the model sees its declaration, and a call to it
/// pauses the run (`PauseKind::ClientTool`) until the caller appends the result and resumes.
/// Config files declare these as `clientTools`.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{ClientTool, Tool, ToolKind, ToolSpec};
///
/// let ask = ClientTool::new(
///     ToolSpec::new("ask_user", json!({"type": "object", "properties": {"question": {"type": "string"}}}))
///         .with_description("Ask the user a question."),
/// );
/// assert!(matches!(ask.kind(), ToolKind::Client));
/// assert_eq!(ask.spec().description(), "Ask the user a question.");
/// ```
#[derive(Debug, Clone)]
pub struct ClientTool {
    spec: ToolSpec,
}

impl ClientTool {
    /// A client tool with this declaration.
    pub fn new(spec: ToolSpec) -> Self {
        ClientTool { spec }
    }
}

#[async_trait]
impl crate::Tool for ClientTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> &ToolKind {
        &ToolKind::Client
    }

    /// Never called by the loop (a client call pauses instead); a direct call is an error.
    async fn call(&self, _input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Err(ToolError::new(
            "NO_EXECUTOR",
            format!(
                "Tool \"{}\" is answered by the client; it has no executor here.",
                self.spec.name()
            ),
        ))
    }
}
