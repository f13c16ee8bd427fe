//! The config's smaller blocks: `clientTools`, `approval`, `execution` and the `model` object.

use std::time::Duration;

use serde_json::{Map, Value};
use toolsmith_agent::{ApprovalPolicy, ExecutionPolicy, TimeoutAction};

use crate::{ApprovalConfig, ClientToolConfig, ConfigError, ModelConfig, error};

/// Parses `clientTools`: `[{name, description?, inputSchema?}]`, names unique.
pub(crate) fn client_tools(entries: Vec<Value>) -> Result<Vec<ClientToolConfig>, ConfigError> {
    let mut tools: Vec<ClientToolConfig> = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let at = format!("config.clientTools[{i}]");
        let Value::Object(mut entry) = entry else {
            return Err(error(format!("{at} must be an object")));
        };
        let name = match entry.remove("name") {
            Some(Value::String(name)) if !name.trim().is_empty() => name,
            _ => return Err(error(format!("{at}.name must be a non-empty string"))),
        };
        if tools.iter().any(|t| t.name == name) {
            return Err(error(format!(
                "{at}: the client tool \"{name}\" is declared twice"
            )));
        }
        let input_schema = match entry.remove("inputSchema") {
            None | Some(Value::Null) => serde_json::json!({"type": "object"}),
            Some(schema @ Value::Object(_)) => schema,
            Some(_) => {
                return Err(error(format!(
                    "{at}.inputSchema must be a JSON Schema object"
                )));
            }
        };
        let description = match entry.remove("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text),
            Some(_) => return Err(error(format!("{at}.description must be a string"))),
        };
        if let Some(key) = entry.keys().next() {
            return Err(error(format!("{at}.{key} is not a supported setting")));
        }
        tools.push(ClientToolConfig {
            name,
            description,
            input_schema,
        });
    }
    Ok(tools)
}

/// Parses the `approval` block.
pub(crate) fn approval_block(mut block: Map<String, Value>) -> Result<ApprovalConfig, ConfigError> {
    let mut config = ApprovalConfig::default();
    match block.remove("policy") {
        None | Some(Value::Null) => {}
        Some(Value::String(p)) if p == "none" => config.policy = ApprovalPolicy::None,
        Some(Value::String(p)) if p == "all" => config.policy = ApprovalPolicy::All,
        Some(Value::Array(names)) => {
            let names: Option<Vec<String>> = names
                .iter()
                .map(|n| n.as_str().map(str::to_string))
                .collect();
            let names = names
                .ok_or_else(|| error("config.approval.policy must list tool names as strings"))?;
            config.policy = ApprovalPolicy::Tools(names);
        }
        Some(_) => {
            return Err(error(
                "config.approval.policy must be \"none\", \"all\" or a list of tool names",
            ));
        }
    }
    match block.remove("timeout") {
        None | Some(Value::Null) => {}
        Some(value) => match value.as_u64() {
            Some(ms) => config.timeout = Duration::from_millis(ms),
            None => {
                return Err(error(
                    "config.approval.timeout must be a number of milliseconds",
                ));
            }
        },
    }
    match block.remove("timeoutAction") {
        None | Some(Value::Null) => {}
        Some(Value::String(action)) => {
            config.timeout_action = match action.as_str() {
                "deny" => TimeoutAction::Deny,
                "approve" => TimeoutAction::Approve,
                "error" | "throw" => TimeoutAction::Error,
                other => {
                    return Err(error(format!(
                        "config.approval.timeoutAction must be \"deny\", \"approve\" or \"error\", got \"{other}\""
                    )));
                }
            }
        }
        Some(_) => return Err(error("config.approval.timeoutAction must be a string")),
    }
    if let Some(key) = block.keys().next() {
        return Err(error(format!(
            "config.approval.{key} is not a supported setting"
        )));
    }
    Ok(config)
}

/// Parses `execution`: `"sequential"`, `"parallel"` (at most 5 at once), or
/// `{"mode": "sequential" | "parallel", "max"?: N}`.
pub(crate) fn execution(value: Value) -> Result<ExecutionPolicy, ConfigError> {
    let wrong = || {
        error(
            "config.execution must be \"sequential\", \"parallel\" or {\"mode\": \"parallel\", \"max\": N}",
        )
    };
    let (mode, max) = match &value {
        Value::String(mode) => (mode.as_str(), None),
        Value::Object(block) => {
            if let Some(key) = block.keys().find(|k| *k != "mode" && *k != "max") {
                return Err(error(format!(
                    "config.execution.{key} is not a supported setting"
                )));
            }
            let mode = block
                .get("mode")
                .and_then(Value::as_str)
                .ok_or_else(wrong)?;
            let max = match block.get("max") {
                None | Some(Value::Null) => None,
                Some(n) => match n.as_u64() {
                    Some(n) if n > 0 => Some(n as usize),
                    _ => return Err(error("config.execution.max must be a positive integer")),
                },
            };
            (mode, max)
        }
        _ => return Err(wrong()),
    };
    match mode {
        "sequential" if max.is_none() => Ok(ExecutionPolicy::Sequential),
        "parallel" => Ok(ExecutionPolicy::Parallel {
            max: max.unwrap_or(5),
        }),
        _ => Err(wrong()),
    }
}

pub(crate) fn model_object(model: &Map<String, Value>) -> Result<ModelConfig, ConfigError> {
    let text = |key: &str| match model.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(error(format!(
            "config.model.{key} must be a non-empty string"
        ))),
    };
    let provider = text("provider")?.ok_or_else(|| error("config.model.provider is required"))?;
    let name = text("name")?
        .or(text("id")?)
        .ok_or_else(|| error("config.model.name is required"))?;
    let stream = match model.get("stream") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(stream)) => Some(*stream),
        Some(_) => return Err(error("config.model.stream must be a boolean")),
    };
    Ok(ModelConfig {
        provider,
        name,
        base_url: text("baseUrl")?,
        stream,
    })
}
