//! `toolsmith tool call`: run one built-in tool directly, as a script or a test would.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use serde_json::{Value, json};
use toolsmith_builtins::Workspace;
use toolsmith_core::{CancellationToken, RunScope, ToolContext, ToolError};
use toolsmith_sandbox::{NetworkPolicy, SandboxPolicy};

use super::{EXIT_FAILURE, usage_error};

#[derive(Subcommand)]
pub(crate) enum ToolCommand {
    /// Call one built-in tool and print `{"ok":true,"output":…}` or
    /// `{"ok":false,"error":{"code","message","details"}}`. Exits 0 on success, 1 on a tool
    /// error, 2 on a usage error.
    Call(CallArgs),
}

#[derive(Args)]
pub(crate) struct CallArgs {
    /// The tool's name (see `toolsmith tools list`).
    name: String,
    /// The workspace the tool is confined to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// The tool's arguments, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    args: String,
    /// Give commands the host's network (default: none).
    #[arg(long)]
    allow_network: bool,
    /// Wall-clock limit of a command, in milliseconds (default 60000, at most 3600000).
    #[arg(long, value_name = "N")]
    timeout_ms: Option<u64>,
    /// Bytes of output kept per stream, and the largest file the file tools handle (default
    /// 200000, at most 10485760).
    #[arg(long, value_name = "N")]
    max_output_bytes: Option<usize>,
}

pub(crate) async fn tool(command: ToolCommand) -> ExitCode {
    match command {
        ToolCommand::Call(args) => call(args).await,
    }
}

/// The policy the flags describe.
fn policy(args: &CallArgs) -> SandboxPolicy {
    let mut policy = SandboxPolicy::new(&args.root);
    if args.allow_network {
        policy.network = NetworkPolicy::Full;
    }
    if let Some(ms) = args.timeout_ms {
        policy.limits.timeout = Duration::from_millis(ms);
    }
    if let Some(bytes) = args.max_output_bytes {
        policy.limits.output_bytes = bytes;
    }
    policy
}

async fn call(args: CallArgs) -> ExitCode {
    let input: Value = match serde_json::from_str(&args.args) {
        Ok(value @ Value::Object(_)) => value,
        Ok(_) => return usage_error("--args must be a JSON object"),
        Err(e) => return usage_error(format!("--args is not valid JSON: {e}")),
    };
    let workspace = match Workspace::new(policy(&args)) {
        Ok(workspace) => workspace,
        Err(e) => return usage_error(e),
    };
    let tools = toolsmith_builtins::all(&workspace);
    let Some(tool) = tools.get(&args.name).cloned() else {
        let names: Vec<&str> = tools.names().collect();
        return usage_error(format!(
            "unknown tool \"{}\"; available: {}",
            args.name,
            names.join(", ")
        ));
    };

    let scope = Arc::new(RunScope::new(format!("cli-{}", std::process::id())));
    let cx = ToolContext::new(
        scope,
        0,
        "call-1".into(),
        tool.spec().shared_name().clone(),
        CancellationToken::new(),
    )
    .with_tool_meta(tool.meta())
    .numbered();
    let result = match tool.spec().validate(&input) {
        Ok(()) => tool.call(input, &cx).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(output) => {
            println!("{}", json!({"ok": true, "output": output.value}));
            ExitCode::SUCCESS
        }
        Err(error) => {
            println!("{}", json!({"ok": false, "error": error_json(&error)}));
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

fn error_json(error: &ToolError) -> Value {
    json!({
        "code": error.code(),
        "message": error.message(),
        "details": error.details().cloned().unwrap_or(Value::Null),
    })
}
