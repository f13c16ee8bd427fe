//! [`ToolKind`]: who executes a tool.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who executes a tool, and therefore what the loop does with a call to it.
///
/// All five kinds can share one [`Toolset`](crate::Toolset).
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub enum ToolKind {
    /// We execute it: [`Tool::call`](crate::Tool::call) runs.
    #[default]
    Function,
    /// No executor here: the loop pauses and hands the call to the caller, who answers it on
    /// resume.
    Client,
    /// The model provider executes it server-side. Never executed locally; a model that asks for
    /// it as a local call gets the error result `No server-side executor.`
    Provider(ProviderTool),
    /// A nested agent loop (a sub-agent) exposed as a tool.
    Agent,
    /// A prompt exposed as a tool, with result shaping.
    Prompt,
}

impl ToolKind {
    /// Whether the loop runs [`Tool::call`](crate::Tool::call) for this kind.
    pub fn executes_locally(&self) -> bool {
        matches!(
            self,
            ToolKind::Function | ToolKind::Agent | ToolKind::Prompt
        )
    }

    /// The stable lower-case name of the kind, as it appears in `toolsmith tools list --json`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ToolKind::Function => "function",
            ToolKind::Client => "client",
            ToolKind::Provider(_) => "provider",
            ToolKind::Agent => "agent",
            ToolKind::Prompt => "prompt",
        }
    }
}

/// A provider-executed tool: a stable id and the raw wire JSON per provider surface.
///
/// `id` names the tool in the `provider.tool` form (`anthropic.web_search_20260318`,
/// `openai.web_search`, `google.google_search`); `args` holds its configuration, passed through
/// verbatim so that unknown keys survive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderTool {
    /// `provider.tool`, for example `anthropic.web_search_20260318`.
    pub id: String,
    /// The tool's configuration, sent to the provider as is.
    #[serde(default)]
    pub args: Value,
}

impl ProviderTool {
    /// The provider half of the id (`anthropic` in `anthropic.web_search_20260318`).
    pub fn provider(&self) -> &str {
        self.id.split_once('.').map_or(self.id.as_str(), |(p, _)| p)
    }
}
