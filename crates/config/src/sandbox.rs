//! Per-tool sandbox settings (RadarOS's `sandbox`): the agent-level `sandbox` and each process
//! built-in's `tools.<name>.sandbox`, parsed, checked and resolved.
//!
//! Contract:
//!
//! - A value is `false`, `true` or an object of settings ([`SandboxSetting`]). Only the
//!   built-ins that run processes take one: [`SANDBOXED_TOOLS`] (`bash`, `run_code`).
//! - Resolution ([`resolve`]), as RadarOS's `resolveSandboxConfig`: a tool-level `false` →
//!   none; otherwise the tool-level value, else the agent-level one; `true` → `{enabled: true}`;
//!   `enabled: false` → none; a tool-level object **replaces** the agent-level one (no merge).
//! - "None" means the workspace's own policy, never "unconfined" (a deliberate difference from
//!   RadarOS, whose `false` runs the tool in-process without any limit): every command toolsmith
//!   runs stays in the workspace's sandbox.
//! - Settings omitted from an enabled object take RadarOS's defaults (`timeoutMs` 30 000,
//!   `maxMemoryMB` 256, network off), except `maxOutputBytes`, which defaults to the workspace's.
//! - Bounds use Smithers' texts after the setting's path:
//!   `config.tools.bash.sandbox: timeoutMs exceeds 3600000.`

use std::time::Duration;

use serde_json::{Map, Value};
use toolsmith_core::{SharedTool, Toolset};

use super::{AgentConfig, ConfigError, SandboxedBuiltin, error};

/// The built-ins that take sandbox settings: those that run a process.
pub const SANDBOXED_TOOLS: &[&str] = &["bash", "run_code"];

/// RadarOS's default timeout of an enabled sandbox.
pub const DEFAULT_SANDBOX_TIMEOUT: Duration = Duration::from_millis(30_000);

/// RadarOS's default memory of an enabled sandbox, in MiB.
pub const DEFAULT_SANDBOX_MEMORY_MB: u64 = 256;

/// The smallest `maxMemoryMB`: below it the launch itself (the sandbox's helper and a shell)
/// risks the out-of-memory killer.
pub const MIN_SANDBOX_MEMORY_MB: u64 = 32;

/// The largest `maxMemoryMB` (1 TiB).
pub const MAX_SANDBOX_MEMORY_MB: u64 = 1 << 20;

/// The hard cap on `timeoutMs` (one hour, Smithers').
const MAX_TIMEOUT_MS: f64 = 3_600_000.0;

/// The hard cap on `maxOutputBytes` (10 MiB, Smithers').
const MAX_OUTPUT_BYTES: f64 = 10_485_760.0;

/// A `sandbox` value as the config writes it.
#[derive(Debug, Clone, PartialEq)]
pub enum SandboxSetting {
    /// `false`: no settings of its own (at the tool level, not the agent-level ones either).
    Off,
    /// `true`: `{"enabled": true}`, RadarOS's defaults.
    On,
    /// An object; `enabled: false` in it means none.
    Settings(SandboxSettings),
}

/// What network an enabled sandbox gives commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SandboxNetwork {
    /// None (`"off"`, RadarOS's `allowNetwork: false`, the default).
    Off,
    /// The host's loopback services only (`"loopback"`): every other address stays blocked.
    Loopback,
    /// The host's network (`"full"`, RadarOS's `allowNetwork: true`).
    Full,
}

/// Resolved sandbox settings for one built-in.
///
/// ```
/// use std::time::Duration;
/// use toolsmith_config::{AgentConfig, SandboxNetwork};
///
/// let config = AgentConfig::from_json(
///     r#"{"sandbox": {"timeoutMs": 5000}, "tools": {"bash": {}, "run_code": {"sandbox": true}}}"#,
/// ).unwrap();
/// let bash = config.sandbox_for("bash").unwrap();
/// assert_eq!(bash.timeout, Duration::from_millis(5000));
/// assert_eq!(bash.network, SandboxNetwork::Off);
/// // `true` replaces the agent-level object: RadarOS's defaults, not a merge.
/// let run_code = config.sandbox_for("run_code").unwrap();
/// assert_eq!(run_code.timeout, Duration::from_millis(30_000));
/// assert_eq!(run_code.max_memory_mb, 256);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxSettings {
    /// `enabled` (default `true`): `false` leaves the tool to the workspace's policy.
    pub enabled: bool,
    /// `network` (or RadarOS's `allowNetwork`), default off.
    pub network: SandboxNetwork,
    /// `timeoutMs` (or RadarOS's `timeout`): a command's wall clock, default 30 s.
    pub timeout: Duration,
    /// `maxOutputBytes`: output kept; `None`: the workspace's.
    pub max_output_bytes: Option<usize>,
    /// `maxMemoryMB`: the memory of a command's whole process tree (`bash`) or the script's
    /// heap (`run_code`), default 256.
    pub max_memory_mb: u64,
    /// `env`: variables set for commands, on top of the workspace's environment (`bash`;
    /// `run_code` has no environment).
    pub env: Vec<(String, String)>,
}

impl Default for SandboxSettings {
    /// RadarOS's `{enabled: true}`.
    fn default() -> Self {
        SandboxSettings {
            enabled: true,
            network: SandboxNetwork::Off,
            timeout: DEFAULT_SANDBOX_TIMEOUT,
            max_output_bytes: None,
            max_memory_mb: DEFAULT_SANDBOX_MEMORY_MB,
            env: Vec::new(),
        }
    }
}

/// The settings a tool runs with, by RadarOS's rules; `None`: the workspace's own policy.
///
/// ```
/// use toolsmith_config::{SandboxSetting, SandboxSettings, resolve_sandbox};
///
/// let agent = SandboxSetting::On;
/// assert!(resolve_sandbox(None, Some(&agent)).is_some());
/// assert!(resolve_sandbox(Some(&SandboxSetting::Off), Some(&agent)).is_none());
/// let disabled = SandboxSetting::Settings(SandboxSettings { enabled: false, ..Default::default() });
/// assert!(resolve_sandbox(Some(&disabled), Some(&agent)).is_none());
/// ```
pub fn resolve(
    tool: Option<&SandboxSetting>,
    agent: Option<&SandboxSetting>,
) -> Option<SandboxSettings> {
    match tool.or(agent)? {
        SandboxSetting::Off => None,
        SandboxSetting::On => Some(SandboxSettings::default()),
        SandboxSetting::Settings(settings) => settings.enabled.then(|| settings.clone()),
    }
}

/// Parses a `sandbox` value at `at` (`config.sandbox`, `config.tools.bash.sandbox`); `tool` is
/// the built-in it belongs to, `None` at the agent level.
pub(crate) fn parse(
    value: Value,
    at: &str,
    tool: Option<&str>,
) -> Result<SandboxSetting, ConfigError> {
    let mut object = match value {
        Value::Bool(false) => return Ok(SandboxSetting::Off),
        Value::Bool(true) => return Ok(SandboxSetting::On),
        Value::Object(object) => object,
        _ => return Err(error(format!("{at} must be a boolean or an object"))),
    };
    let mut settings = SandboxSettings::default();
    match object.remove("enabled") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(enabled)) => settings.enabled = enabled,
        Some(_) => return Err(error(format!("{at}.enabled must be a boolean"))),
    }
    settings.network = network(&mut object, at)?;
    if let Some(ms) = one_of(&mut object, at, "timeoutMs", "timeout")? {
        let ms = bounded(&ms, "timeoutMs", MAX_TIMEOUT_MS, at)?;
        settings.timeout = Duration::from_millis(ms);
    }
    if let Some(bytes) = object.remove("maxOutputBytes") {
        let bytes = bounded(&bytes, "maxOutputBytes", MAX_OUTPUT_BYTES, at)?;
        settings.max_output_bytes = Some(usize::try_from(bytes).expect("at most 10 MiB"));
    }
    if let Some(mb) = object.remove("maxMemoryMB") {
        settings.max_memory_mb = memory(&mb, at)?;
    }
    if let Some(env) = object.remove("env") {
        settings.env = env_values(env, at)?;
    }
    if object.remove("allowFS").is_some() {
        return Err(error(format!(
            "{at}.allowFS is not supported: the workspace decides what commands may read and write"
        )));
    }
    if let Some(key) = object.keys().next() {
        return Err(error(format!("{at}.{key} is not a supported setting")));
    }
    if tool == Some("run_code") {
        if settings.network != SandboxNetwork::Off {
            return Err(error(format!(
                "{at}.network: run_code never has a network (only \"off\")"
            )));
        }
        if !settings.env.is_empty() {
            return Err(error(format!("{at}.env: run_code has no environment")));
        }
    }
    Ok(SandboxSetting::Settings(settings))
}

/// `network` (`"off"`, `"loopback"`, `"full"`) or RadarOS's `allowNetwork` (a boolean).
fn network(object: &mut Map<String, Value>, at: &str) -> Result<SandboxNetwork, ConfigError> {
    let named = object.remove("network");
    let allow = object.remove("allowNetwork");
    match (named, allow) {
        (Some(_), Some(_)) => Err(error(format!(
            "{at}: give network or allowNetwork, not both"
        ))),
        (None, None) => Ok(SandboxNetwork::Off),
        (None, Some(Value::Bool(allowed))) => Ok(if allowed {
            SandboxNetwork::Full
        } else {
            SandboxNetwork::Off
        }),
        (None, Some(_)) => Err(error(format!("{at}.allowNetwork must be a boolean"))),
        (Some(value), None) => match value.as_str() {
            Some("off") => Ok(SandboxNetwork::Off),
            Some("loopback") => Ok(SandboxNetwork::Loopback),
            Some("full") => Ok(SandboxNetwork::Full),
            _ => Err(error(format!(
                "{at}.network must be \"off\", \"loopback\" or \"full\""
            ))),
        },
    }
}

/// The value of `key` or of its RadarOS name `alias`, refusing both.
fn one_of(
    object: &mut Map<String, Value>,
    at: &str,
    key: &str,
    alias: &str,
) -> Result<Option<Value>, ConfigError> {
    match (object.remove(key), object.remove(alias)) {
        (Some(_), Some(_)) => Err(error(format!("{at}: give {key} or {alias}, not both"))),
        (value, other) => Ok(value.or(other)),
    }
}

/// A positive number at most `max`, rounded up to a whole unit, with Smithers' texts.
fn bounded(value: &Value, name: &str, max: f64, at: &str) -> Result<u64, ConfigError> {
    let n = value.as_f64().filter(|n| n.is_finite() && *n > 0.0);
    let Some(n) = n else {
        return Err(error(format!("{at}: {name} must be positive.")));
    };
    if n > max {
        return Err(error(format!("{at}: {name} exceeds {max}.")));
    }
    Ok(n.ceil() as u64)
}

/// `maxMemoryMB`: a whole number from [`MIN_SANDBOX_MEMORY_MB`] to [`MAX_SANDBOX_MEMORY_MB`].
fn memory(value: &Value, at: &str) -> Result<u64, ConfigError> {
    match value.as_u64() {
        Some(mb) if mb < MIN_SANDBOX_MEMORY_MB => Err(error(format!(
            "{at}: maxMemoryMB must be at least {MIN_SANDBOX_MEMORY_MB}."
        ))),
        Some(mb) if mb > MAX_SANDBOX_MEMORY_MB => Err(error(format!(
            "{at}: maxMemoryMB exceeds {MAX_SANDBOX_MEMORY_MB}."
        ))),
        Some(mb) => Ok(mb),
        None => Err(error(format!(
            "{at}: maxMemoryMB must be a positive integer."
        ))),
    }
}

/// `env`: an object of string values, in config order.
fn env_values(value: Value, at: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let Value::Object(env) = value else {
        return Err(error(format!("{at}.env must be an object")));
    };
    env.into_iter()
        .map(|(name, value)| match value {
            Value::String(value) if !name.is_empty() && !name.contains('=') => Ok((name, value)),
            Value::String(_) => Err(error(format!(
                "{at}.env: \"{name}\" is not a variable name"
            ))),
            _ => Err(error(format!("{at}.env.{name} must be a string"))),
        })
        .collect()
}

impl AgentConfig {
    /// The settings the built-in `name` runs with ([`resolve`]: its enabled `tools` entry's
    /// `sandbox`, else the agent-level `sandbox`); `None`: the workspace's own policy, and
    /// always for a built-in outside [`SANDBOXED_TOOLS`].
    pub fn sandbox_for(&self, name: &str) -> Option<SandboxSettings> {
        if !SANDBOXED_TOOLS.contains(&name) {
            return None;
        }
        resolve(self.own_sandbox(name), self.sandbox.as_ref())
    }

    /// The tool-level `sandbox` of the enabled `tools` entry `name`.
    fn own_sandbox(&self, name: &str) -> Option<&SandboxSetting> {
        let entry = self.tools.iter().flatten().find(|t| t.name == name);
        entry.and_then(|t| t.sandbox.as_ref())
    }

    /// The built-in `name` of `builtins`, built again by `sandboxed` when it has sandbox
    /// settings ([`sandbox_for`](Self::sandbox_for)), keeping the metadata the caller gave it
    /// (its approval in the first place).
    pub(crate) fn builtin(
        &self,
        name: &str,
        builtins: &Toolset,
        sandboxed: Option<SandboxedBuiltin<'_>>,
    ) -> Result<SharedTool, ConfigError> {
        let tool = builtins.get(name).ok_or_else(|| {
            error(format!(
                "config.tools.{name} is not available in this workspace"
            ))
        })?;
        let Some(settings) = self.sandbox_for(name) else {
            return Ok(tool.clone());
        };
        let at = match self.own_sandbox(name) {
            Some(_) => format!("config.tools.{name}.sandbox"),
            None => format!("config.sandbox (for {name})"),
        };
        // Fail closed: settings nobody applies would leave the tool looser than written.
        let Some(build) = sandboxed else {
            return Err(error(format!(
                "{at}: sandbox settings are not supported here (`toolsmith run` applies them)"
            )));
        };
        let built = build(name, &settings).map_err(|e| error(format!("{at}: {e}")))?;
        if built.spec().name() != name {
            return Err(error(format!(
                "{at}: the tool built for it is named \"{}\"",
                built.spec().name()
            )));
        }
        let meta = tool.meta().clone();
        Ok(Toolset::new()
            .with(built)
            .map_meta(name, |_| meta)
            .get(name)
            .cloned()
            .expect("the tool was just added"))
    }
}

#[cfg(test)]
#[path = "sandbox_tests.rs"]
mod tests;
