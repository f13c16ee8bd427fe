//! The Standard Agents spec's reserved callables in a `tools` object: `provider:<id>` names a
//! provider-executed tool, an alias of its plain entry (`provider:googleSearch` is
//! `googleSearch`, with the same options and the same checks). `mcp:<server>` and
//! `mcp:<server>/<tool>` are the MCP entries (`mcp/`).

use serde_json::{Map, Value};

use super::{ConfigError, PROVIDER_TOOLS, error};

/// The prefix of a reserved provider callable.
const PROVIDER_PREFIX: &str = "provider:";

/// The plain name of a `provider:<id>` entry; `None` for a name without the prefix.
///
/// # Errors
///
/// An unknown id: `config.tools.provider:bing is not a supported provider tool (known:
/// provider:anthropicWebSearch, provider:openaiWebSearch, provider:googleSearch)`.
pub(crate) fn provider_alias(name: &str) -> Result<Option<&'static str>, ConfigError> {
    let Some(id) = name.strip_prefix(PROVIDER_PREFIX) else {
        return Ok(None);
    };
    match PROVIDER_TOOLS.iter().find(|(tool, _)| *tool == id) {
        Some((tool, _)) => Ok(Some(tool)),
        None => {
            let known: Vec<String> = PROVIDER_TOOLS
                .iter()
                .map(|(tool, _)| format!("{PROVIDER_PREFIX}{tool}"))
                .collect();
            Err(error(format!(
                "config.tools.{name} is not a supported provider tool (known: {})",
                known.join(", ")
            )))
        }
    }
}

/// Renames every `provider:<id>` entry of `tools` to its plain name, in place.
///
/// # Errors
///
/// An unknown id (as [`provider_alias`]), or an alias whose plain name is in `tools` too:
/// `config.tools.provider:googleSearch and config.tools.googleSearch name the same tool`.
pub(crate) fn resolve_aliases(
    tools: Map<String, Value>,
) -> Result<Map<String, Value>, ConfigError> {
    let mut resolved = Map::new();
    for (name, entry) in &tools {
        let plain = provider_alias(name)?.unwrap_or(name);
        if plain != name && tools.contains_key(plain) {
            return Err(error(format!(
                "config.tools.{name} and config.tools.{plain} name the same tool"
            )));
        }
        resolved.insert(plain.to_string(), entry.clone());
    }
    Ok(resolved)
}
