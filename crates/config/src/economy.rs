//! The context-economy keys (RadarOS's): a tool's `cache: {"ttl"}` and `resultLimit:
//! {"maxChars", "strategy"}`; the agent's `resultLimit` (for every tool without its own) and
//! `summarizeModel`.

use std::time::Duration;

use serde_json::{Map, Value};
use toolsmith_core::{ResultLimit, ResultLimitStrategy, ToolMeta};

use crate::{ConfigError, error};

/// The longest a result may be cached: a day.
const MAX_TTL_MS: u64 = 86_400_000;

/// `cache: {"ttl": MS}` at `at`: how long a tool's results are served again.
pub(crate) fn cache(value: Option<Value>, at: &str) -> Result<Option<Duration>, ConfigError> {
    let mut block = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(block)) => block,
        Some(_) => return Err(error(format!("{at}.cache must be an object {{\"ttl\"}}"))),
    };
    let ttl = match block.remove("ttl") {
        Some(ttl) => match ttl.as_u64() {
            Some(ms) if (1..=MAX_TTL_MS).contains(&ms) => Duration::from_millis(ms),
            _ => {
                return Err(error(format!(
                    "{at}.cache.ttl must be an integer from 1 to {MAX_TTL_MS} (milliseconds)"
                )));
            }
        },
        None => return Err(error(format!("{at}.cache.ttl is required (milliseconds)"))),
    };
    no_more(&block, &format!("{at}.cache"))?;
    Ok(Some(ttl))
}

/// `resultLimit: {"maxChars"?, "strategy"?}` at `at` (`{}` is RadarOS's default: 20 000
/// characters, truncated).
pub(crate) fn result_limit(
    value: Option<Value>,
    at: &str,
) -> Result<Option<ResultLimit>, ConfigError> {
    let mut block = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(block)) => block,
        Some(_) => {
            return Err(error(format!(
                "{at}.resultLimit must be an object {{\"maxChars\"?, \"strategy\"?}}"
            )));
        }
    };
    let mut limit = ResultLimit::default();
    if let Some(max) = block.remove("maxChars") {
        limit.max_chars = match max.as_u64().and_then(|n| usize::try_from(n).ok()) {
            Some(n) if n > 0 => n,
            _ => {
                return Err(error(format!(
                    "{at}.resultLimit.maxChars must be a positive integer"
                )));
            }
        };
    }
    if let Some(strategy) = block.remove("strategy") {
        limit.strategy = match strategy.as_str() {
            Some("truncate") => ResultLimitStrategy::Truncate,
            Some("summarize") => ResultLimitStrategy::Summarize,
            _ => {
                return Err(error(format!(
                    "{at}.resultLimit.strategy must be \"truncate\" or \"summarize\""
                )));
            }
        };
    }
    no_more(&block, &format!("{at}.resultLimit"))?;
    Ok(Some(limit))
}

/// `router: {"model", "maxTools"?, "minTools"?, "temperature"?}` (RadarOS's `toolRouter`).
#[derive(Debug, Clone, PartialEq)]
pub struct RouterConfig {
    /// The router model, `PROVIDER:MODEL`.
    pub model: crate::ModelConfig,
    /// The most tools it is asked to pick (default 8).
    pub max_tools: usize,
    /// The fewest picked names accepted (default 0; an empty pick declares every tool).
    pub min_tools: usize,
    /// Its temperature (default 0).
    pub temperature: f32,
}

pub(crate) fn router(value: Option<Value>) -> Result<Option<RouterConfig>, ConfigError> {
    let mut block = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(block)) => block,
        Some(_) => {
            return Err(error(
                "config.router must be an object {\"model\", \"maxTools\"?, \"minTools\"?}",
            ));
        }
    };
    let model = match block.remove("model") {
        Some(spec) => model(&spec, "config.router.model")?,
        None => return Err(error("config.router.model is required")),
    };
    let count = |block: &mut Map<String, Value>, key: &str, default: usize, least: u64| match block
        .remove(key)
    {
        None | Some(Value::Null) => Ok(default),
        Some(value) => match value.as_u64() {
            Some(n) if n >= least && n <= 1000 => Ok(n as usize),
            _ => Err(error(format!(
                "config.router.{key} must be an integer from {least} to 1000"
            ))),
        },
    };
    let max_tools = count(&mut block, "maxTools", 8, 1)?;
    let min_tools = count(&mut block, "minTools", 0, 0)?;
    let temperature = match block.remove("temperature") {
        None | Some(Value::Null) => 0.0,
        Some(value) => match value.as_f64() {
            Some(t) if (0.0..=2.0).contains(&t) => t as f32,
            _ => {
                return Err(error(
                    "config.router.temperature must be a number from 0 to 2",
                ));
            }
        },
    };
    no_more(&block, "config.router")?;
    Ok(Some(RouterConfig {
        model,
        max_tools,
        min_tools,
        temperature,
    }))
}

/// The model a `"PROVIDER:MODEL"` string at `at` names (parsed once).
pub(crate) fn model(spec: &Value, at: &str) -> Result<crate::ModelConfig, ConfigError> {
    spec.as_str()
        .and_then(|spec| crate::ModelConfig::parse(spec).ok())
        .ok_or_else(|| error(format!("{at} must be a string PROVIDER:MODEL")))
}

/// A tool's meta with the entry's cache and limit applied.
///
/// # Errors
///
/// A cache on a tool with a side effect that is not idempotent: its calls must run each time.
pub(crate) fn apply(
    mut meta: ToolMeta,
    name: &str,
    cache_ttl: Option<Duration>,
    limit: Option<ResultLimit>,
) -> Result<ToolMeta, ConfigError> {
    if let Some(ttl) = cache_ttl {
        if meta.side_effect && !meta.is_idempotent() {
            return Err(error(format!(
                "config.tools.{name}.cache: {name} has a side effect and is not idempotent, so \
                 its calls are never served from a cache"
            )));
        }
        meta = meta.cache_ttl(ttl);
    }
    if let Some(limit) = limit {
        meta = meta.result_limit(limit);
    }
    Ok(meta)
}

fn no_more(block: &Map<String, Value>, at: &str) -> Result<(), ConfigError> {
    match block.keys().next() {
        Some(key) => Err(error(format!("{at}.{key} is not a supported setting"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_bad_value_names_its_path() {
        let at = "config.tools.lookup";
        for (value, message) in [
            (
                json!(5),
                "config.tools.lookup.cache must be an object {\"ttl\"}",
            ),
            (
                json!({}),
                "config.tools.lookup.cache.ttl is required (milliseconds)",
            ),
            (
                json!({"ttl": 0}),
                "config.tools.lookup.cache.ttl must be an integer from 1 to 86400000 (milliseconds)",
            ),
            (
                json!({"ttl": 1.5}),
                "config.tools.lookup.cache.ttl must be an integer from 1 to 86400000 (milliseconds)",
            ),
            (
                json!({"ttl": 10, "scope": "x"}),
                "config.tools.lookup.cache.scope is not a supported setting",
            ),
        ] {
            assert_eq!(cache(Some(value), at).unwrap_err().to_string(), message);
        }
        for (value, message) in [
            (
                json!([]),
                "config.tools.lookup.resultLimit must be an object {\"maxChars\"?, \"strategy\"?}",
            ),
            (
                json!({"maxChars": 0}),
                "config.tools.lookup.resultLimit.maxChars must be a positive integer",
            ),
            (
                json!({"strategy": "drop"}),
                "config.tools.lookup.resultLimit.strategy must be \"truncate\" or \"summarize\"",
            ),
            (
                json!({"model": "x"}),
                "config.tools.lookup.resultLimit.model is not a supported setting",
            ),
        ] {
            assert_eq!(
                result_limit(Some(value), at).unwrap_err().to_string(),
                message
            );
        }
    }

    #[test]
    fn good_values_and_defaults() {
        assert_eq!(
            cache(Some(json!({"ttl": 60000})), "a").unwrap(),
            Some(Duration::from_secs(60))
        );
        assert_eq!(cache(None, "a").unwrap(), None);
        assert_eq!(
            result_limit(Some(json!({})), "a").unwrap(),
            Some(ResultLimit::default())
        );
        assert_eq!(
            result_limit(Some(json!({"maxChars": 500, "strategy": "summarize"})), "a").unwrap(),
            Some(ResultLimit {
                max_chars: 500,
                strategy: ResultLimitStrategy::Summarize
            })
        );
        let payment = ToolMeta::new().side_effect(true);
        let err = apply(payment, "pay", Some(Duration::from_secs(1)), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "config.tools.pay.cache: pay has a side effect and is not idempotent, so its calls \
             are never served from a cache"
        );
    }

    #[test]
    fn a_config_sets_them_on_its_tools_and_its_agent() {
        use toolsmith_core::{ToolError, Toolset, from_fn};

        let read = from_fn("read", "Read.", |_: Value, _cx| async move {
            Ok::<_, ToolError>("x")
        });
        let write = from_fn("write", "Write.", |_: Value, _cx| async move {
            Ok::<_, ToolError>("x")
        })
        .with_meta(ToolMeta::new().side_effect(true));
        let builtins = Toolset::new().with(read).with(write);
        let config = crate::AgentConfig::from_value(json!({
            "resultLimit": {"maxChars": 1000},
            "summarizeModel": "openai:gpt-4o-mini",
            "maxToolOutputBytes": 51200,
            "router": {"model": "openai:gpt-4o-mini", "maxTools": 5, "minTools": 2},
            "tools": {"read": {"cache": {"ttl": 5000}, "resultLimit": {"strategy": "summarize"}}},
        }))
        .unwrap();
        assert_eq!(config.result_limit.unwrap().max_chars, 1000);
        assert_eq!(config.max_tool_output_bytes, Some(51200));
        let router = config.router.as_ref().unwrap();
        assert_eq!(
            (router.max_tools, router.min_tools, router.temperature),
            (5, 2, 0.0)
        );
        assert_eq!(
            config.summarize_model.as_ref().unwrap().spec(),
            "openai:gpt-4o-mini"
        );
        let tools = config.toolset(&builtins, "openai").unwrap();
        let meta = tools.get("read").unwrap().meta().clone();
        assert_eq!(meta.cache_ttl, Some(Duration::from_secs(5)));
        assert_eq!(
            meta.result_limit.unwrap().strategy,
            ResultLimitStrategy::Summarize
        );
        let config = crate::AgentConfig::from_value(json!({
            "tools": {"write": {"cache": {"ttl": 5000}}},
        }))
        .unwrap();
        let err = config.toolset(&builtins, "openai").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("config.tools.write.cache: write has a side effect")
        );
        for (value, message) in [
            (
                json!({"summarizeModel": "gpt"}),
                "config.summarizeModel must be a string PROVIDER:MODEL",
            ),
            (
                json!({"summarizeModel": 1}),
                "config.summarizeModel must be a string PROVIDER:MODEL",
            ),
            (
                json!({"resultLimit": {"maxChars": -1}}),
                "config.resultLimit.maxChars must be a positive integer",
            ),
        ] {
            let err = crate::AgentConfig::from_value(value).unwrap_err();
            assert_eq!(err.to_string(), message);
        }
    }
}
