//! The `tools` entries: each checked by the agent harness's rules (a known name, control keys
//! removed, options checked), and the provider-executed tools they name.

use serde_json::{Map, Value};
use toolsmith_core::AsyncMode;
use toolsmith_providers::provider_tools::{
    ProviderExecutedTool, anthropic_web_search, google_search_with, openai_web_search,
};

use super::tavily::TavilyEntry;
use super::webhook::WebhookEntry;
use super::{
    BUILTIN_TOOLS, ConfigError, Defined, PROVIDER_TOOLS, TAVILY_TOOLS, ToolConfig, composite,
    economy, error, mcp, reserved, sandbox,
};

/// Checks every entry (by the agent harness's rules) and keeps the enabled ones, their control keys
/// removed.
pub(crate) fn tool_entries(tools: Map<String, Value>) -> Result<Vec<ToolConfig>, ConfigError> {
    let mut enabled = Vec::new();
    for (name, entry) in reserved::resolve_aliases(tools)? {
        let Value::Object(mut options) = entry else {
            return Err(error(format!("config.tools.{name} must be an object")));
        };
        let webhook = match options.get("type") {
            Some(Value::String(kind)) if kind == "webhook" => {
                Some(WebhookEntry::parse(&name, &options)?)
            }
            Some(_) => {
                return Err(error(format!(
                    "config.tools.{name}.type must be \"webhook\" (the only kind of tool a config defines)"
                )));
            }
            None => None,
        };
        let mcp_ref = mcp::reference(&name)
            .map(|(server, tool)| (server.to_string(), tool.map(str::to_string)));
        let known = webhook.is_some()
            || mcp_ref.is_some()
            || TAVILY_TOOLS.contains(&name.as_str())
            || BUILTIN_TOOLS.contains(&name.as_str())
            || PROVIDER_TOOLS.iter().any(|(n, _)| *n == name);
        if !known {
            return Err(error(format!(
                "config.tools.{name} is not a supported tool"
            )));
        }
        let flag = |options: &mut Map<String, Value>, key: &str| match options.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(_) => Err(error(format!(
                "config.tools.{name}.{key} must be a boolean"
            ))),
        };
        let is_enabled = flag(&mut options, "enabled")?.unwrap_or(true);
        let needs_approval = flag(&mut options, "needsApproval")?;
        let at = format!("config.tools.{name}");
        let cache_ttl = economy::cache(options.remove("cache"), &at)?;
        let result_limit = economy::result_limit(options.remove("resultLimit"), &at)?;
        let env = composite::env_values(options.remove("env"), &format!("config.tools.{name}"))?;
        let variables = match options.remove("variables") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(entries)) => {
                composite::variables(entries, &format!("config.tools.{name}.variables"))?
                    .into_iter()
                    .map(|entry| entry.decl)
                    .collect()
            }
            Some(_) => {
                return Err(error(format!(
                    "config.tools.{name}.variables must be an array"
                )));
            }
        };
        let is_async = flag(&mut options, "async")?.unwrap_or(false);
        let execution = match options.remove("execution") {
            None | Some(Value::Null) => AsyncMode::SameInvocation,
            Some(Value::String(mode)) if mode == "same-invocation" => AsyncMode::SameInvocation,
            Some(Value::String(mode)) if mode == "external-dispatch" => AsyncMode::ExternalDispatch,
            Some(_) => {
                return Err(error(format!(
                    "config.tools.{name}.execution must be \"same-invocation\" or \"external-dispatch\""
                )));
            }
        };
        if let Some((server, tool)) = &mcp_ref {
            mcp::check_reference(&name, server, tool.as_deref())?;
            let economy = cache_ttl.is_some() || result_limit.is_some();
            let extra = (!env.is_empty() || !variables.is_empty() || is_async || economy)
                .then_some("env, variables, async, cache or resultLimit")
                .or(options.keys().next().map(String::as_str));
            if let Some(key) = extra {
                return Err(error(format!(
                    "config.tools.{name}: {key} is not a supported option of an MCP entry (enabled and needsApproval are)"
                )));
            }
        }
        let sandboxed = sandbox::SANDBOXED_TOOLS.contains(&name.as_str());
        let sandbox = match options.remove("sandbox") {
            Some(value) if sandboxed => Some(sandbox::parse(
                value,
                &format!("{at}.sandbox"),
                Some(&name),
            )?),
            Some(_) if BUILTIN_TOOLS.contains(&name.as_str()) => {
                return Err(error(format!(
                    "{at}.sandbox is not a supported option (only bash and run_code, which run processes, take one)"
                )));
            }
            // Not a built-in's: left for the entry's own checks, which refuse it.
            Some(value) => {
                options.insert("sandbox".into(), value);
                None
            }
            None => None,
        };
        if BUILTIN_TOOLS.contains(&name.as_str())
            && let Some(key) = options.keys().next()
        {
            let takes = if sandboxed { "sandbox" } else { "none" };
            return Err(error(format!(
                "config.tools.{name}.{key} is not a supported option (built-in tools take {takes})"
            )));
        }
        let defined = match webhook {
            Some(webhook) => Some(Defined::Webhook(webhook)),
            None if mcp_ref.is_some() => {
                let (server, tool) = mcp_ref.expect("checked");
                Some(Defined::Mcp { server, tool })
            }
            None if TAVILY_TOOLS.contains(&name.as_str()) => {
                let entry = TavilyEntry::parse(&name, std::mem::take(&mut options))?;
                Some(Defined::Tavily(entry))
            }
            None => None,
        };
        if is_enabled {
            enabled.push(ToolConfig {
                name,
                needs_approval,
                env,
                async_mode: is_async.then_some(execution),
                options,
                defined,
                variables,
                cache_ttl,
                result_limit,
                sandbox,
            });
        }
    }
    Ok(enabled)
}

/// The provider tool an entry names, checked against the model's provider; `None` for a
/// built-in.
pub(crate) fn provider_tool(
    entry: &ToolConfig,
    provider: &str,
) -> Result<Option<ProviderExecutedTool>, ConfigError> {
    let Some((name, needs)) = PROVIDER_TOOLS.iter().find(|(n, _)| *n == entry.name) else {
        return Ok(None);
    };
    if provider != *needs {
        return Err(error(format!(
            "config.tools.{name} requires config.model.provider to be {needs}"
        )));
    }
    let options = Value::Object(entry.options.clone());
    Ok(Some(match *name {
        "anthropicWebSearch" => anthropic_web_search(options),
        "openaiWebSearch" => openai_web_search(options),
        _ => google_search_with(options),
    }))
}
