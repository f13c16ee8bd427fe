//! The config keys of composite tools and variables: `subagents`, `prompts`, `variables`.

use std::path::Path;

use serde_json::{Map, Value};
use toolsmith_agent::{SubagentConfig, SubpromptConfig};
use toolsmith_core::{VariableDecl, VariableKind};

use super::{AgentConfig, ConfigError, error};

/// How deep sub-agent configs may nest (a config file that names itself would otherwise
/// recurse forever).
pub const MAX_NESTING: usize = 8;

/// One `subagents` entry: an agent exposed as a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentEntry {
    /// The tool's name.
    pub name: String,
    /// What the model is told it does.
    pub description: String,
    /// The sub-agent's own config (a file's, or inline). Without a model it uses its parent's;
    /// without an `approval` block, its parent's.
    pub agent: Box<AgentConfig>,
    /// The Standard Agents spec's `SubagentToolConfig` fields.
    pub tool: SubagentConfig,
    /// Whether every call needs a human's approval.
    pub needs_approval: bool,
    /// Prompt-level variable values for its runs (`env`).
    pub env: Vec<(String, String)>,
}

/// One `prompts` entry: a prompt exposed as a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptEntry {
    /// The tool's name.
    pub name: String,
    /// What the model is told it does.
    pub description: String,
    /// The prompt: its `instructions`, and optionally `model`, `tools`, `maxSteps`.
    pub agent: Box<AgentConfig>,
    /// The Standard Agents spec's `SubpromptConfig` fields.
    pub tool: SubpromptConfig,
    /// Whether every call needs a human's approval.
    pub needs_approval: bool,
    /// Prompt-level variable values for its runs (`env`).
    pub env: Vec<(String, String)>,
}

/// One `variables` entry: the Standard Agents spec's `VariableDefinition`, and a value for a text
/// variable.
#[derive(Debug, Clone, PartialEq)]
pub struct VariableEntry {
    /// The declaration.
    pub decl: VariableDecl,
    /// A text variable's value in the config (secrets never have one there).
    pub value: Option<String>,
}

/// The `SubagentToolConfig` keys, as the JSON spells them.
const SUBAGENT_KEYS: &[&str] = &[
    "blocking",
    "initUserMessageProperty",
    "initAttachmentsProperty",
    "initAgentNameProperty",
    "inputSchema",
    "immediate",
    "optional",
    "resumable",
];

/// The `SubpromptConfig` keys.
const SUBPROMPT_KEYS: &[&str] = &[
    "includeTextResponse",
    "includeToolCalls",
    "includeErrors",
    "initUserMessageProperty",
    "initAttachmentsProperty",
    "inputSchema",
];

/// Parses `subagents`: `[{name, description, config: PATH | {…}, needsApproval?,
/// …SubagentToolConfig}]`, with the Standard Agents spec's `SubagentToolConfig` keys.
pub(super) fn subagents(
    entries: Vec<Value>,
    base: Option<&Path>,
    depth: usize,
) -> Result<Vec<SubagentEntry>, ConfigError> {
    let mut parsed: Vec<SubagentEntry> = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let at = format!("config.subagents[{i}]");
        let (head, mut entry) = head(entry, &at)?;
        check_unique(parsed.iter().map(|e| e.name.as_str()), &head.name, &at)?;
        let agent = match entry.remove("config") {
            Some(Value::String(path)) => {
                let Some(base) = base else {
                    return Err(error(format!(
                        "{at}.config: a config file's path is not accepted in a config given as \
                         a value (such as one stored in the service): give the config inline"
                    )));
                };
                let path = base.join(path);
                AgentConfig::from_file_at(&path, depth + 1)
                    .map_err(|e| error(format!("{at}.config ({}): {e}", path.display())))?
            }
            Some(Value::Object(inline)) => {
                AgentConfig::parse(Value::Object(inline), base, depth + 1)
                    .map_err(|e| error(format!("{at}.config: {e}")))?
            }
            None | Some(Value::Null) => {
                return Err(error(format!(
                    "{at}.config is required: a config file's path or an inline config"
                )));
            }
            Some(_) => {
                return Err(error(format!(
                    "{at}.config must be a config file's path or an inline config object"
                )));
            }
        };
        let tool: SubagentConfig = fields(entry, SUBAGENT_KEYS, &at)?;
        check_arguments(&tool, &at)?;
        parsed.push(SubagentEntry {
            name: head.name,
            description: head.description,
            agent: Box::new(agent),
            tool,
            needs_approval: head.needs_approval,
            env: head.env,
        });
    }
    Ok(parsed)
}

/// Parses `prompts`: `[{name, description, instructions, model?, tools?, maxSteps?,
/// needsApproval?, …SubpromptConfig}]`, with the Standard Agents spec's `SubpromptConfig` keys.
pub(super) fn prompts(
    entries: Vec<Value>,
    base: Option<&Path>,
    depth: usize,
) -> Result<Vec<PromptEntry>, ConfigError> {
    let mut parsed: Vec<PromptEntry> = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let at = format!("config.prompts[{i}]");
        let (head, mut entry) = head(entry, &at)?;
        check_unique(parsed.iter().map(|e| e.name.as_str()), &head.name, &at)?;
        let mut shaping = Map::new();
        for key in SUBPROMPT_KEYS {
            if let Some(value) = entry.remove(*key) {
                shaping.insert((*key).to_string(), value);
            }
        }
        if !matches!(entry.get("instructions"), Some(Value::String(s)) if !s.trim().is_empty()) {
            return Err(error(format!(
                "{at}.instructions must be a non-empty string"
            )));
        }
        let agent = AgentConfig::parse(Value::Object(entry), base, depth + 1)
            .map_err(|e| error(format!("{at}: {e}")))?;
        let tool: SubpromptConfig = fields(shaping, SUBPROMPT_KEYS, &at)?;
        let shape = SubagentConfig {
            init_user_message_property: tool.init_user_message_property.clone(),
            init_attachments_property: tool.init_attachments_property.clone(),
            input_schema: tool.input_schema.clone(),
            ..SubagentConfig::default()
        };
        check_arguments(&shape, &at)?;
        parsed.push(PromptEntry {
            name: head.name,
            description: head.description,
            agent: Box::new(agent),
            tool,
            needs_approval: head.needs_approval,
            env: head.env,
        });
    }
    Ok(parsed)
}

/// Parses `variables`: `[{name, type: "text" | "secret", required?, scoped?, description?,
/// value?}]`.
pub(super) fn variables(
    entries: Vec<Value>,
    path: &str,
) -> Result<Vec<VariableEntry>, ConfigError> {
    let mut parsed: Vec<VariableEntry> = Vec::new();
    for (i, entry) in entries.into_iter().enumerate() {
        let at = format!("{path}[{i}]");
        let Value::Object(mut entry) = entry else {
            return Err(error(format!("{at} must be an object")));
        };
        let name = match entry.remove("name") {
            Some(Value::String(name)) if !name.trim().is_empty() => name,
            _ => return Err(error(format!("{at}.name must be a non-empty string"))),
        };
        check_unique(parsed.iter().map(|e| e.decl.name.as_str()), &name, &at)?;
        let kind = match entry.remove("type") {
            None | Some(Value::Null) => VariableKind::Secret,
            Some(Value::String(t)) if t == "secret" => VariableKind::Secret,
            Some(Value::String(t)) if t == "text" => VariableKind::Text,
            Some(_) => return Err(error(format!("{at}.type must be \"text\" or \"secret\""))),
        };
        let flag = |entry: &mut Map<String, Value>, key: &str| match entry.remove(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(b),
            Some(_) => Err(error(format!("{at}.{key} must be a boolean"))),
        };
        let required = flag(&mut entry, "required")?;
        let scoped = flag(&mut entry, "scoped")?;
        let description = match entry.remove("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text,
            Some(_) => return Err(error(format!("{at}.description must be a string"))),
        };
        let value = match entry.remove("value") {
            None | Some(Value::Null) => None,
            Some(Value::String(_)) if kind == VariableKind::Secret => {
                return Err(error(format!(
                    "{at}.value: a secret's value does not belong in a config file; pass it \
                     with --var {name}=… or the environment variable {name}"
                )));
            }
            Some(Value::String(value)) => Some(value),
            Some(_) => return Err(error(format!("{at}.value must be a string"))),
        };
        if let Some(key) = entry.keys().next() {
            return Err(error(format!("{at}.{key} is not a supported setting")));
        }
        parsed.push(VariableEntry {
            decl: VariableDecl {
                name,
                kind,
                required,
                scoped,
                description,
            },
            value,
        });
    }
    Ok(parsed)
}

/// What every composite entry has.
struct Head {
    name: String,
    description: String,
    needs_approval: bool,
    env: Vec<(String, String)>,
}

/// An entry's `name`, `description`, `needsApproval` and `env`, and the rest of it.
fn head(entry: Value, at: &str) -> Result<(Head, Map<String, Value>), ConfigError> {
    let Value::Object(mut entry) = entry else {
        return Err(error(format!("{at} must be an object")));
    };
    let name = match entry.remove("name") {
        Some(Value::String(name)) if valid_tool_name(&name) => name,
        _ => {
            return Err(error(format!(
                "{at}.name must be a tool name: letters, digits, '_' and '-', at most 64"
            )));
        }
    };
    let description = match entry.remove("description") {
        Some(Value::String(text)) if !text.trim().is_empty() => text,
        _ => {
            return Err(error(format!(
                "{at}.description must be a non-empty string (the model chooses the tool by it)"
            )));
        }
    };
    let needs_approval = match entry.remove("needsApproval") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err(error(format!("{at}.needsApproval must be a boolean"))),
    };
    let env = env_values(entry.remove("env"), at)?;
    let head = Head {
        name,
        description,
        needs_approval,
        env,
    };
    Ok((head, entry))
}

/// An `env` object (`{"NAME": "value"}`): variable values at a tool's or prompt's level. They
/// are text: a secret does not belong in a config file.
pub(super) fn env_values(
    value: Option<Value>,
    at: &str,
) -> Result<Vec<(String, String)>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(value) if !name.is_empty() => Ok((name, value)),
                _ => Err(error(format!("{at}.env.{name} must be a string"))),
            })
            .collect(),
        Some(_) => Err(error(format!(
            "{at}.env must be an object of variable values"
        ))),
    }
}

fn valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn check_unique<'a>(
    mut names: impl Iterator<Item = &'a str>,
    name: &str,
    at: &str,
) -> Result<(), ConfigError> {
    if names.any(|n| n == name) {
        return Err(error(format!("{at}: \"{name}\" is declared twice")));
    }
    Ok(())
}

/// Checks an entry's `inputSchema` (its own arguments): a JSON Schema object whose properties
/// do not clash with the init properties, and which compiles.
fn check_arguments(tool: &SubagentConfig, at: &str) -> Result<(), ConfigError> {
    tool.check_input_schema()
        .map_err(|e| error(format!("{at}.{e}")))?;
    if let Some(schema) = &tool.input_schema {
        toolsmith_core::ToolSpec::new("check", schema.clone())
            .validate(&Value::Object(Map::new()))
            .err()
            .filter(|e| e.code() == "INVALID_SCHEMA")
            .map_or(Ok(()), |e| {
                Err(error(format!("{at}.inputSchema: {}", e.message())))
            })?;
    }
    Ok(())
}

/// Deserialises the Standard Agents spec's fields of an entry, naming an unknown key.
fn fields<T: serde::de::DeserializeOwned>(
    entry: Map<String, Value>,
    known: &[&str],
    at: &str,
) -> Result<T, ConfigError> {
    if let Some(key) = entry.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(error(format!("{at}.{key} is not a supported setting")));
    }
    serde_json::from_value(Value::Object(entry)).map_err(|e| error(format!("{at}: {e}")))
}
