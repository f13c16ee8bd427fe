//! Sandbox settings: parsing, bounds, RadarOS's resolution, building the built-ins again.

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_core::{Approval, ToolError, from_fn};

use super::*;
use crate::BUILTIN_TOOLS;

fn config(value: Value) -> AgentConfig {
    AgentConfig::from_value(value).unwrap()
}

fn err(value: Value) -> String {
    AgentConfig::from_value(value).unwrap_err().to_string()
}

fn settings(value: Value) -> SandboxSettings {
    match parse(value, "config.sandbox", None).unwrap() {
        SandboxSetting::Settings(settings) => settings,
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_object_takes_radaros_defaults_and_names() {
    assert_eq!(settings(json!({})), SandboxSettings::default());
    assert_eq!(
        SandboxSettings::default().timeout,
        Duration::from_millis(30_000)
    );
    assert_eq!(SandboxSettings::default().max_memory_mb, 256);
    let full = settings(
        json!({"enabled": true, "network": "loopback", "timeoutMs": 1500,
        "maxOutputBytes": 4096, "maxMemoryMB": 64, "env": {"MODE": "test"}}),
    );
    assert_eq!(
        full,
        SandboxSettings {
            enabled: true,
            network: SandboxNetwork::Loopback,
            timeout: Duration::from_millis(1500),
            max_output_bytes: Some(4096),
            max_memory_mb: 64,
            env: vec![("MODE".into(), "test".into())],
        }
    );
    // RadarOS's own names.
    let radaros = settings(json!({"timeout": 2000, "allowNetwork": true}));
    assert_eq!(radaros.timeout, Duration::from_millis(2000));
    assert_eq!(radaros.network, SandboxNetwork::Full);
    assert_eq!(parse(json!(false), "x", None).unwrap(), SandboxSetting::Off);
    assert_eq!(parse(json!(true), "x", None).unwrap(), SandboxSetting::On);
}

#[test]
fn bounds_use_smithers_texts_and_unknown_keys_their_path() {
    let at = "config.tools.bash.sandbox";
    let cases = [
        (
            json!({"timeoutMs": 0}),
            format!("{at}: timeoutMs must be positive."),
        ),
        (
            json!({"timeoutMs": "5s"}),
            format!("{at}: timeoutMs must be positive."),
        ),
        (
            json!({"timeoutMs": 3_600_001}),
            format!("{at}: timeoutMs exceeds 3600000."),
        ),
        (
            json!({"maxOutputBytes": -1}),
            format!("{at}: maxOutputBytes must be positive."),
        ),
        (
            json!({"maxOutputBytes": 10_485_761}),
            format!("{at}: maxOutputBytes exceeds 10485760."),
        ),
        (
            json!({"maxMemoryMB": 16}),
            format!("{at}: maxMemoryMB must be at least 32."),
        ),
        (
            json!({"maxMemoryMB": 2_000_000}),
            format!("{at}: maxMemoryMB exceeds 1048576."),
        ),
        (
            json!({"maxMemoryMB": 1.5}),
            format!("{at}: maxMemoryMB must be a positive integer."),
        ),
        (
            json!({"network": "lan"}),
            format!("{at}.network must be \"off\", \"loopback\" or \"full\""),
        ),
        (
            json!({"network": "off", "allowNetwork": false}),
            format!("{at}: give network or allowNetwork, not both"),
        ),
        (
            json!({"timeoutMs": 1, "timeout": 1}),
            format!("{at}: give timeoutMs or timeout, not both"),
        ),
        (
            json!({"enabled": "yes"}),
            format!("{at}.enabled must be a boolean"),
        ),
        (
            json!({"env": {"A": 1}}),
            format!("{at}.env.A must be a string"),
        ),
        (
            json!({"allowFS": true}),
            format!(
                "{at}.allowFS is not supported: the workspace decides what commands may read and write"
            ),
        ),
        (
            json!({"cpus": 2}),
            format!("{at}.cpus is not a supported setting"),
        ),
        (json!("on"), format!("{at} must be a boolean or an object")),
    ];
    for (value, message) in cases {
        let value = json!({"tools": {"bash": {"sandbox": value}}});
        assert_eq!(err(value), message);
    }
    // Exactly at the caps is fine.
    config(
        json!({"sandbox": {"timeoutMs": 3_600_000, "maxOutputBytes": 10_485_760, "maxMemoryMB": 32}}),
    );
    assert_eq!(
        err(json!({"sandbox": {"timeoutMs": -5}})),
        "config.sandbox: timeoutMs must be positive."
    );
}

#[test]
fn only_process_built_ins_take_settings_and_run_code_has_no_network_or_environment() {
    assert_eq!(
        err(json!({"tools": {"read": {"sandbox": true}}})),
        "config.tools.read.sandbox is not a supported option (only bash and run_code, which run processes, take one)"
    );
    assert_eq!(
        err(json!({"tools": {"run_code": {"sandbox": {"network": "full"}}}})),
        "config.tools.run_code.sandbox.network: run_code never has a network (only \"off\")"
    );
    assert_eq!(
        err(json!({"tools": {"run_code": {"sandbox": {"env": {"A": "b"}}}}})),
        "config.tools.run_code.sandbox.env: run_code has no environment"
    );
    assert_eq!(
        err(json!({"tools": {"bash": {"timeoutMs": 5}}})),
        "config.tools.bash.timeoutMs is not a supported option (built-in tools take sandbox)"
    );
    // The agent level applies to bash's network and environment alone.
    config(json!({"sandbox": {"network": "full", "env": {"A": "b"}}, "tools": {"run_code": {}}}));
    assert_eq!(
        config(json!({"sandbox": true})).sandbox_for("calculator"),
        None
    );
}

#[test]
fn resolution_follows_radaros() {
    let agent = json!({"timeoutMs": 5000, "maxMemoryMB": 64, "network": "full"});
    // Nothing anywhere: the workspace's policy.
    assert_eq!(
        config(json!({"tools": {"bash": {}}})).sandbox_for("bash"),
        None
    );
    // The agent level for a tool without its own.
    let resolved = config(json!({"sandbox": agent, "tools": {"bash": {}}}))
        .sandbox_for("bash")
        .unwrap();
    assert_eq!(resolved.timeout, Duration::from_millis(5000));
    // The tool level replaces the agent level: no merge (the memory and network are the
    // defaults again, not the agent's).
    let resolved = config(json!({"sandbox": agent,
                                 "tools": {"bash": {"sandbox": {"maxOutputBytes": 100}}}}))
    .sandbox_for("bash")
    .unwrap();
    assert_eq!(
        resolved,
        SandboxSettings {
            max_output_bytes: Some(100),
            ..SandboxSettings::default()
        }
    );
    // `true` is `{enabled: true}`, replacing the agent level too.
    let resolved = config(json!({"sandbox": agent, "tools": {"bash": {"sandbox": true}}}))
        .sandbox_for("bash")
        .unwrap();
    assert_eq!(resolved, SandboxSettings::default());
    assert_eq!(
        config(json!({"sandbox": true})).sandbox_for("bash"),
        Some(SandboxSettings::default())
    );
    // `false` at the tool level: none, whatever the agent level says.
    let off = config(json!({"sandbox": agent, "tools": {"bash": {"sandbox": false}}}));
    assert_eq!(off.sandbox_for("bash"), None);
    // `enabled: false`: none, at either level.
    let disabled = json!({"enabled": false, "timeoutMs": 10});
    assert_eq!(
        config(json!({"sandbox": disabled})).sandbox_for("bash"),
        None
    );
    let tool_disabled = config(json!({"sandbox": agent, "tools": {"bash": {"sandbox": disabled}}}));
    assert_eq!(tool_disabled.sandbox_for("bash"), None);
}

/// Stand-ins for every built-in, `bash` asking.
fn builtins() -> Toolset {
    let mut tools = Toolset::new();
    for name in BUILTIN_TOOLS {
        tools.add(from_fn(*name, "A built-in.", |_: Value, _cx| async move {
            Ok::<_, ToolError>("workspace's")
        }));
    }
    tools.map_meta("bash", |meta| meta.approval(Approval::Always))
}

#[test]
fn the_caller_builds_each_sandboxed_built_in_and_its_metadata_is_kept() {
    let seen = Mutex::new(Vec::new());
    let build = |name: &str, settings: &SandboxSettings| -> Result<SharedTool, String> {
        seen.lock()
            .unwrap()
            .push((name.to_string(), settings.timeout));
        let tool = from_fn(name, "Rebuilt.", |_: Value, _cx| async move {
            Ok::<_, ToolError>("sandboxed")
        });
        Ok(std::sync::Arc::new(tool))
    };
    let resolve = |_: &crate::ModelConfig| -> Result<_, String> { unreachable!() };
    let lookup = |_: &str| None;
    let all = builtins();
    let cx = crate::BuildContext {
        builtins: &all,
        resolve: &resolve,
        lookup: &lookup,
        webhooks: crate::WebhookPolicy::any(),
        wrap: None,
        mcp: None,
        sandboxed: Some(&build),
    };
    let config = config(json!({"sandbox": {"timeoutMs": 700},
        "tools": {"bash": {}, "run_code": {"sandbox": false}, "read": {}}}));
    let tools = config.toolset_in(&cx, "openai").unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [("bash".to_string(), Duration::from_millis(700))]
    );
    let bash = tools.get("bash").unwrap();
    assert_eq!(bash.spec().description(), "Rebuilt.");
    assert!(matches!(bash.meta().approval, Approval::Always));
    assert_eq!(
        tools.get("run_code").unwrap().spec().description(),
        "A built-in."
    );
    // `--tools` picks from the same.
    let picked = config.builtins_in(&cx).unwrap();
    assert_eq!(picked.get("bash").unwrap().spec().description(), "Rebuilt.");

    // Settings the caller cannot apply fail the build, naming where they come from.
    let refuse = |_: &str, _: &SandboxSettings| -> Result<SharedTool, String> {
        Err("network \"full\" is more than the workspace gives".into())
    };
    let cx = crate::BuildContext {
        sandboxed: Some(&refuse),
        ..cx
    };
    assert_eq!(
        config.toolset_in(&cx, "openai").unwrap_err().to_string(),
        "config.sandbox (for bash): network \"full\" is more than the workspace gives"
    );
}

#[test]
fn without_a_builder_sandbox_settings_are_refused_not_ignored() {
    let all = builtins();
    let tool_level = config(json!({"tools": {"bash": {"sandbox": true}}}));
    assert_eq!(
        tool_level.toolset(&all, "openai").unwrap_err().to_string(),
        "config.tools.bash.sandbox: sandbox settings are not supported here (`toolsmith run` applies them)"
    );
    // The default tools take the agent level.
    let agent_level = config(json!({"sandbox": {"maxMemoryMB": 64}}));
    assert_eq!(
        agent_level.toolset(&all, "openai").unwrap_err().to_string(),
        "config.sandbox (for bash): sandbox settings are not supported here (`toolsmith run` applies them)"
    );
    // Disabled settings need nothing.
    let disabled = config(json!({"sandbox": {"enabled": false}}));
    assert!(disabled.toolset(&all, "openai").is_ok());
}
