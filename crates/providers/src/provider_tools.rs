//! Provider-executed tools, as in the Deuz SDK: web search run by the model provider, declared by
//! the exact wire JSON the provider expects.
//!
//! A provider tool is a [`Tool`] of kind [`ToolKind::Provider`]: it shares a toolset with
//! function, client and sub-agent tools, is never validated or executed locally (a model that
//! calls it as a local tool gets the error result `No server-side executor.`), and each wire
//! renders its `args` verbatim:
//!
//! | factory | id | wire entry |
//! |---|---|---|
//! | [`anthropic_web_search`] | `anthropic.web_search_20260318` | `{"type":"web_search_20260318","name":"web_search",…}` in Messages `tools` |
//! | [`openai_web_search`] | `openai.web_search` | `{"type":"web_search",…}` in Responses `tools` |
//! | [`google_search`] | `google.google_search` | `{"google_search":{}}`, its own entry in Gemini `tools` |
//!
//! A wire that cannot carry a provider tool (Chat Completions, or a tool of another provider)
//! drops it with exactly one warning per request, never silently.
//!
//! ```
//! use serde_json::json;
//! use toolsmith_core::{Tool, ToolKind};
//! use toolsmith_providers::provider_tools::anthropic_web_search;
//!
//! let search = anthropic_web_search(json!({"max_uses": 3, "allowed_callers": ["direct"]}));
//! let ToolKind::Provider(tool) = search.kind() else { unreachable!() };
//! assert_eq!(tool.id, "anthropic.web_search_20260318");
//! assert_eq!(
//!     tool.args,
//!     json!({
//!         "type": "web_search_20260318",
//!         "name": "web_search",
//!         "max_uses": 3,
//!         "allowed_callers": ["direct"]
//!     })
//! );
//! ```

use serde_json::{Map, Value, json};
use toolsmith_core::{
    ProviderTool, Tool, ToolContext, ToolDeclaration, ToolError, ToolKind, ToolOutput, ToolSpec,
    async_trait,
};

/// The default Anthropic web search version.
pub const ANTHROPIC_WEB_SEARCH_DEFAULT: &str = "web_search_20260318";

/// The Anthropic web search versions this build knows (any other `type` is passed through).
pub const ANTHROPIC_WEB_SEARCH_VERSIONS: &[&str] = &[
    "web_search_20250305",
    "web_search_20260209",
    ANTHROPIC_WEB_SEARCH_DEFAULT,
];

/// A tool the model provider executes; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct ProviderExecutedTool {
    spec: ToolSpec,
    kind: ToolKind,
}

impl ProviderExecutedTool {
    /// A provider tool named `name` (the name the model calls it by) with this id and wire JSON.
    pub fn new(name: &str, description: &str, tool: ProviderTool) -> Self {
        ProviderExecutedTool {
            spec: ToolSpec::new(name, json!({"type": "object"})).with_description(description),
            kind: ToolKind::Provider(tool),
        }
    }

    /// The id and wire JSON.
    pub fn provider_tool(&self) -> &ProviderTool {
        match &self.kind {
            ToolKind::Provider(tool) => tool,
            _ => unreachable!("a ProviderExecutedTool is always of kind Provider"),
        }
    }
}

#[async_trait]
impl Tool for ProviderExecutedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> &ToolKind {
        &self.kind
    }

    async fn call(&self, _input: Value, _cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        // The loop never calls a provider tool; this is the same answer it gives.
        Err(ToolError::new("NO_EXECUTOR", "No server-side executor."))
    }
}

/// Anthropic's server-side web search (Messages API).
///
/// Sends `{"type": cfg.type ?? "web_search_20260318", "name": "web_search", ...rest}`: every
/// other key of `cfg` verbatim (`max_uses`, `allowed_domains`, `blocked_domains`,
/// `user_location`, `allowed_callers`, `response_inclusion`, and keys this build does not know).
/// A `cfg` that is not an object is treated as `{}`.
pub fn anthropic_web_search(cfg: Value) -> ProviderExecutedTool {
    let mut cfg = into_object(cfg);
    let version = match cfg.shift_remove("type") {
        Some(Value::String(version)) => version,
        _ => ANTHROPIC_WEB_SEARCH_DEFAULT.to_string(),
    };
    cfg.shift_remove("name");
    let mut args = Map::new();
    args.insert("type".into(), json!(version));
    args.insert("name".into(), json!("web_search"));
    args.extend(cfg);
    ProviderExecutedTool::new(
        "web_search",
        "Search the web (executed by Anthropic).",
        ProviderTool {
            id: format!("anthropic.{version}"),
            args: Value::Object(args),
        },
    )
}

/// OpenAI's hosted web search (Responses API): `{"type":"web_search", ...cfg}` with
/// `search_context_size`, `filters`, `user_location`, `return_token_budget` and any other key
/// passed through verbatim.
pub fn openai_web_search(cfg: Value) -> ProviderExecutedTool {
    let mut cfg = into_object(cfg);
    cfg.shift_remove("type");
    let mut args = Map::new();
    args.insert("type".into(), json!("web_search"));
    args.extend(cfg);
    ProviderExecutedTool::new(
        "web_search",
        "Search the web (executed by OpenAI).",
        ProviderTool {
            id: "openai.web_search".into(),
            args: Value::Object(args),
        },
    )
}

/// Gemini's Google Search grounding: `{"google_search":{}}` as its own `tools` entry.
pub fn google_search() -> ProviderExecutedTool {
    google_search_with(json!({}))
}

/// [`google_search`] with configuration (`searchTypes`, `timeRangeFilter`, as the agent
/// harness's config passes them), sent as the value of `google_search`.
pub fn google_search_with(cfg: Value) -> ProviderExecutedTool {
    ProviderExecutedTool::new(
        "google_search",
        "Search with Google (executed by Gemini).",
        ProviderTool {
            id: "google.google_search".into(),
            args: Value::Object(into_object(cfg)),
        },
    )
}

fn into_object(cfg: Value) -> Map<String, Value> {
    match cfg {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A toolset's declarations sorted for one wire.
#[derive(Debug, Default)]
pub struct SplitTools<'a> {
    /// Function, client, agent and prompt tools: declared by name and schema.
    pub functions: Vec<&'a ToolDeclaration>,
    /// Provider tools of this wire's provider, in toolset order.
    pub hosted: Vec<&'a ProviderTool>,
    /// Names of the provider tools this wire cannot carry.
    pub dropped: Vec<String>,
}

/// Sorts `declarations` for a wire whose provider tools have ids `provider.*` (`None`: the wire
/// carries no provider tools at all).
pub fn split<'a>(declarations: &'a [ToolDeclaration], provider: Option<&str>) -> SplitTools<'a> {
    let mut split = SplitTools::default();
    for declaration in declarations {
        match &declaration.kind {
            ToolKind::Provider(tool) if Some(tool.provider()) == provider => {
                split.hosted.push(tool);
            }
            ToolKind::Provider(_) => split.dropped.push(declaration.name.to_string()),
            _ => split.functions.push(declaration),
        }
    }
    split
}

/// The one warning a request carries when a wire drops provider tools (the Deuz SDK's message for
/// Chat Completions; the same shape names the other wires).
pub fn dropped_warning(dropped: &[String], wire: &str, provider: &str, model: &str) -> String {
    format!(
        "Dropped {} provider-executed tool(s) ({}): the {wire} wire has no hosted-tool support, so {provider}/{model} will answer without them.",
        dropped.len(),
        dropped.join(", ")
    )
}

/// The warning for provider tools of another provider (an OpenAI tool sent to Anthropic…).
pub fn foreign_warning(dropped: &[String], provider: &str, model: &str) -> String {
    format!(
        "Dropped {} provider-executed tool(s) ({}): they belong to another provider, so {provider}/{model} will answer without them.",
        dropped.len(),
        dropped.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(tool: &ProviderExecutedTool) -> &Value {
        &tool.provider_tool().args
    }

    #[test]
    fn anthropic_versions_and_pass_through() {
        let old = anthropic_web_search(json!({
            "type": "web_search_20250305",
            "blocked_domains": ["a.com"],
            "user_location": {"type": "approximate", "city": "Paris"},
            "future_knob": {"x": 1}
        }));
        assert_eq!(old.provider_tool().id, "anthropic.web_search_20250305");
        assert_eq!(
            serde_json::to_string(args(&old)).unwrap(),
            r#"{"type":"web_search_20250305","name":"web_search","blocked_domains":["a.com"],"user_location":{"type":"approximate","city":"Paris"},"future_knob":{"x":1}}"#
        );
        // Each version the Deuz SDK names, by name.
        for version in [
            "web_search_20250305",
            "web_search_20260209",
            "web_search_20260318",
        ] {
            let tool = anthropic_web_search(json!({ "type": version }));
            assert_eq!(tool.provider_tool().id, format!("anthropic.{version}"));
            assert_eq!(args(&tool), &json!({"type": version, "name": "web_search"}));
        }
        let default = anthropic_web_search(json!({"response_inclusion": "excluded"}));
        assert_eq!(
            args(&default),
            &json!({"type": "web_search_20260318", "name": "web_search", "response_inclusion": "excluded"})
        );
        assert_eq!(
            args(&anthropic_web_search(Value::Null)),
            &json!({"type": "web_search_20260318", "name": "web_search"})
        );
        assert_eq!(default.spec().name(), "web_search");
        assert!(!default.kind().executes_locally());
    }

    #[test]
    fn openai_and_google_shapes() {
        let search = openai_web_search(json!({
            "search_context_size": "low",
            "filters": {"allowed_domains": ["docs.rs"]},
            "return_token_budget": "unlimited",
            "x": true
        }));
        assert_eq!(
            serde_json::to_string(args(&search)).unwrap(),
            r#"{"type":"web_search","search_context_size":"low","filters":{"allowed_domains":["docs.rs"]},"return_token_budget":"unlimited","x":true}"#
        );
        assert_eq!(args(&google_search()), &json!({}));
        assert_eq!(google_search().provider_tool().provider(), "google");
    }

    #[test]
    fn split_sorts_by_provider() {
        let function = ToolDeclaration {
            name: "add".into(),
            description: String::new(),
            input_schema: json!({"type": "object"}).into(),
            strict: false,
            kind: ToolKind::Function,
        };
        let declare = |tool: &ProviderExecutedTool| ToolDeclaration {
            name: tool.spec().shared_name().clone(),
            description: String::new(),
            input_schema: json!({}).into(),
            strict: false,
            kind: tool.kind().clone(),
        };
        let declarations = vec![
            function,
            declare(&anthropic_web_search(json!({}))),
            declare(&google_search()),
        ];
        let split = split(&declarations, Some("anthropic"));
        assert_eq!(split.functions.len(), 1);
        assert_eq!(split.hosted.len(), 1);
        assert_eq!(split.dropped, ["google_search"]);
        let none = super::split(&declarations, None);
        assert_eq!(none.dropped, ["web_search", "google_search"]);
        assert_eq!(
            dropped_warning(&none.dropped, "Chat Completions", "openai", "gpt-x"),
            "Dropped 2 provider-executed tool(s) (web_search, google_search): the Chat Completions wire has no hosted-tool support, so openai/gpt-x will answer without them."
        );
    }
}
