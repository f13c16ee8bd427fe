//! `toolsmith mcp serve`: toolsmith's tools served to any MCP client.
//!
//! Contract:
//!
//! - **Which tools.** The built-ins, confined to `--root` (the sandbox policy comes from the
//!   flags alone, never from the client: `--allow-network` gives `bash` the host's network),
//!   or those `--tools` names. `--config FILE` serves an agent config's tools instead: its
//!   `tools` (picking from the built-ins), webhook tools, its MCP servers' tools (connected
//!   first), its sub-agents and prompts, which run on `--model`, else the config's `model`, or
//!   their own. The server serves them as a run would see them (see
//!   `toolsmith_mcp::server`).
//! - **Approvals.** `write`, `edit` and `bash` need approval, as in `toolsmith run`, and so do
//!   the tools a config's `approval.policy` or `needsApproval` names: the MCP client is asked
//!   with an elicitation, and a client that cannot be asked gets the call refused. Nothing runs
//!   unapproved. `--no-approval` drops the built-ins' default (a config's own approvals stay).
//! - **Transport.** stdio by default: standard output carries the protocol and nothing else,
//!   every message of ours goes to standard error. `--http ADDR` serves streamable HTTP at
//!   `http://ADDR/mcp` (port 0 picks a free port; the URL is printed on standard error). A
//!   non-loopback address needs a bearer token in `TOOLSMITH_MCP_TOKEN`, which every request
//!   must then carry (`Authorization: Bearer <token>`); requests from browser origins other
//!   than loopback ones are refused either way.
//! - **Exit.** 0 when the client closes stdin or on Ctrl-C / SIGTERM; 2 on a usage error
//!   (unknown tool, bad config, address); 1 when serving fails.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};
use toolsmith_config::{AgentConfig, BuildContext, ModelConfig, ParentAgent, WebhookPolicy};
use toolsmith_core::{CancellationToken, LanguageModel, Toolset};
use toolsmith_mcp::client::McpClients;
use toolsmith_mcp::server::{HttpConfig, MCP_PATH, McpServer, serve_http, serve_stdio};
use toolsmith_providers::{ProviderOptions, ScriptedModel};

use super::run::{select_tools, workspace};
use super::{EXIT_FAILURE, usage_error};

/// The environment variable holding the bearer token of `--http`.
const TOKEN_VAR: &str = "TOOLSMITH_MCP_TOKEN";

/// `toolsmith mcp`.
#[derive(Subcommand)]
pub(crate) enum McpCommand {
    /// Serve toolsmith's tools to MCP clients: over stdio (the default: add `toolsmith mcp
    /// serve` to a client's server list) or streamable HTTP (`--http`).
    Serve(Box<ServeArgs>),
}

/// `toolsmith mcp serve`.
#[derive(Args)]
pub(crate) struct ServeArgs {
    /// The workspace the built-in tools are confined to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Serve only these built-in tools (comma-separated names).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    tools: Option<Vec<String>>,
    /// Serve an agent config's tools (JSON; every key: docs/config.md): its tools, webhook
    /// tools, MCP servers, sub-agents and prompts, with its approvals.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (ADDR as IP:PORT; port 0
    /// picks a free one). An address that is not loopback needs TOOLSMITH_MCP_TOKEN set: every
    /// request must then carry `Authorization: Bearer <token>`.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Give commands run by the bash tool the host's network (default: none).
    #[arg(long)]
    allow_network: bool,
    /// The model of the config's sub-agents and prompts that name none, as PROVIDER:MODEL
    /// [default: the config's model].
    #[arg(long, env = "TOOLSMITH_MODEL")]
    model: Option<String>,
    /// DANGEROUS: write, edit and bash run without asking the client. Any MCP client that
    /// reaches the server can then change files beneath --root and run commands in the
    /// sandbox. A config's own approvals still apply.
    #[arg(long)]
    no_approval: bool,
}

pub(crate) async fn mcp(command: McpCommand) -> ExitCode {
    match command {
        McpCommand::Serve(args) => serve(*args).await,
    }
}

async fn serve(args: ServeArgs) -> ExitCode {
    let address = match args.http.as_deref().map(http_address).transpose() {
        Ok(address) => address,
        Err(message) => return usage_error(message),
    };
    let token = std::env::var(TOKEN_VAR)
        .ok()
        .filter(|t| !t.trim().is_empty());
    if let Some(address) = address
        && !address.ip().is_loopback()
        && token.is_none()
    {
        return usage_error(format!(
            "--http {address} is not a loopback address: set {TOKEN_VAR} to a bearer token \
             every request must carry, or listen on 127.0.0.1"
        ));
    }
    let workspace = match workspace(&args.root, args.allow_network) {
        Ok(workspace) => workspace,
        Err(message) => return usage_error(message),
    };
    let mut builtins = toolsmith_builtins::all(&workspace);
    if !args.no_approval {
        builtins = toolsmith_builtins::ask_before_changes(builtins);
    }
    let builtins = match select_tools(builtins, args.tools.as_deref()) {
        Ok(builtins) => builtins,
        Err(message) => return usage_error(message),
    };
    let (server, _connected) = match &args.config {
        None => (McpServer::new(builtins), None),
        Some(path) => match from_config(path, &args, builtins).await {
            Ok((server, clients)) => (server, Some(clients)),
            Err(message) => return usage_error(message),
        },
    };
    report(&server);

    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            stopped().await;
            stop.cancel();
        }
    });
    let served = match address {
        None => tokio::select! {
            served = serve_stdio(&server) => served,
            () = stop.cancelled() => Ok(()),
        },
        Some(address) => {
            let listener = match tokio::net::TcpListener::bind(address).await {
                Ok(listener) => listener,
                Err(e) => return usage_error(format!("--http {address}: {e}")),
            };
            let bound = listener.local_addr().unwrap_or(address);
            let mut config = HttpConfig::new().shutdown(stop.clone());
            if let Some(token) = &token {
                config = config.bearer_token(token);
                if !bound.ip().is_loopback() {
                    config = config.any_host();
                }
            }
            eprintln!("toolsmith mcp serve: listening on http://{bound}{MCP_PATH}");
            serve_http(listener, &server, config).await
        }
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

/// `--http ADDR`: an `IP:PORT`.
fn http_address(text: &str) -> Result<SocketAddr, String> {
    text.parse().map_err(|_| {
        format!("--http {text}: expected IP:PORT, such as 127.0.0.1:8931 (port 0 picks one)")
    })
}

/// The server of the config at `path`: its tools picked from `builtins`, its MCP servers
/// connected (returned: they live as long as the server), its composite tools on their model,
/// its approval settings and its variables (values from the config, else the environment).
async fn from_config(
    path: &std::path::Path,
    args: &ServeArgs,
    builtins: Toolset,
) -> Result<(McpServer, McpClients), String> {
    let fail = |e: &dyn std::fmt::Display| format!("--config {}: {e}", path.display());
    let config = AgentConfig::from_file(path).map_err(|e| fail(&e))?;
    if args.tools.is_some() && config.tools.is_some() {
        return Err("pass either --tools or a config with \"tools\", not both".to_string());
    }
    let model_name = args
        .model
        .clone()
        .or_else(|| config.model.as_ref().map(ModelConfig::spec));
    let provider = model_name
        .as_deref()
        .and_then(|m| m.split_once(':'))
        .map_or("", |(p, _)| p)
        .to_string();
    // Resolved only when a sub-agent or prompt runs on it (a model needs its API key).
    let model: Arc<dyn LanguageModel> = match (&model_name, inherits_model(&config)) {
        (Some(name), true) => {
            let options = ProviderOptions {
                base_url: config.model.as_ref().and_then(|m| m.base_url.clone()),
                api_key: None,
                streaming: config.model.as_ref().and_then(|m| m.stream),
            };
            toolsmith_providers::resolve(name, &options).map_err(|e| e.to_string())?
        }
        (None, true) => {
            return Err(format!(
                "--config {}: its sub-agents and prompts need a model: pass --model \
                 PROVIDER:MODEL or give the config a \"model\"",
                path.display()
            ));
        }
        // Never called: no composite tool runs on it.
        (_, false) => Arc::new(ScriptedModel::new([])),
    };
    let servers = config.mcp_servers_used().map_err(|e| fail(&e))?;
    let mut clients = McpClients::connect(&servers).await.map_err(|e| fail(&e))?;
    if !args.no_approval {
        clients = clients.ask_before_side_effects();
    }
    // The config is the user's own: its webhooks may reach any address.
    let tools = config
        .toolset_with(&builtins, &provider, WebhookPolicy::any(), Some(&clients))
        .map_err(|e| fail(&e))?;
    let resolve = |spec: &ModelConfig| {
        let options = ProviderOptions {
            base_url: spec.base_url.clone(),
            api_key: None,
            streaming: spec.stream,
        };
        toolsmith_providers::resolve(&spec.spec(), &options).map_err(|e| e.to_string())
    };
    let lookup = |name: &str| std::env::var(name).ok();
    let build = BuildContext {
        builtins: &builtins,
        resolve: &resolve,
        lookup: &lookup,
        webhooks: WebhookPolicy::any(),
        wrap: None,
        mcp: Some(&clients),
        sandboxed: None,
    };
    let parent = ParentAgent {
        model,
        provider,
        approval: config.approval.clone(),
    };
    let tools = config
        .with_composite_tools(tools, &build, &parent)
        .map_err(|e| fail(&e))?;
    // The config's variables take their values from it, else from the environment.
    let server = McpServer::builder(tools)
        .config(&config, &|name| std::env::var(name).ok())
        .build();
    Ok((server, clients))
}

/// Whether one of the config's sub-agents or prompts runs on the config's own model.
fn inherits_model(config: &AgentConfig) -> bool {
    let subagents = config.subagents.iter().map(|s| &s.agent);
    let prompts = config.prompts.iter().map(|p| &p.agent);
    subagents.chain(prompts).any(|agent| agent.model.is_none())
}

/// Says on standard error which tools are served.
fn report(server: &McpServer) {
    let names: Vec<&str> = server.tools().iter().map(|t| t.spec().name()).collect();
    eprintln!(
        "toolsmith mcp serve: {} tools: {}",
        names.len(),
        names.join(", ")
    );
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stopped() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}
