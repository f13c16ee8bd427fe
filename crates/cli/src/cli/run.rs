//! `toolsmith run`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use futures::StreamExt;
use toolsmith_agent::{
    Agent, ApprovalKey, Attachments, ExecutionPolicy, RunError, RunInput, RunOutput,
};
use toolsmith_builtins::{Bash, RunCode, RunCodeLimits, Workspace};
use toolsmith_core::layer::CacheScope;
use toolsmith_core::{
    CancellationToken, Dependencies, Message, ModelOutput, Pause, PauseKind, RunPart, SessionState,
    SharedTool, ToolResultPart, Toolset,
};
use toolsmith_providers::ProviderOptions;
use toolsmith_sandbox::{NetworkPolicy, SandboxPolicy};
use toolsmith_store::{SecretKey, StoreCache};

use toolsmith_config::{
    AgentConfig, BuildContext, ModelConfig, ParentAgent, SandboxNetwork, SandboxSettings,
    WebhookPolicy,
};
use toolsmith_store::{DurableError, StoredRun, keep_variables, thread_variables};

use super::approve::{ApproveMode, answer, ask_by_default};
use super::mcp;
use super::print::{Human, JsonLines, Printer};
use super::secrets;
use super::spinner::Spinner;
use super::{EXIT_FAILURE, usage_error};

#[derive(Args)]
pub(crate) struct RunArgs {
    /// An agent config (JSON): model, instructions, maxSteps, execution, tools, approval,
    /// clientTools, subagents, prompts and variables (every key: docs/config.md).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// MCP servers whose tools the agent gets, in the `{"mcpServers": {…}}` file editors and
    /// desktop apps keep (repeatable; every key: docs/mcp.md). A config with a `tools` key
    /// picks from a file's servers with `mcp:` entries; otherwise all their tools are offered.
    #[arg(long = "mcp-config", value_name = "FILE")]
    mcp_configs: Vec<PathBuf>,
    /// A value for a variable the config declares (repeatable). Without one (nor a --var-file),
    /// the environment variable of the same name is used. Visible to other processes: give a
    /// secret's value with --var-file or the environment instead (a warning says so).
    #[arg(long = "var", value_name = "NAME=VALUE", value_parser = parse_var)]
    vars: Vec<(String, String)>,
    /// A variable's value read from a file: the whole file less one trailing line end
    /// (repeatable). Keeps a secret off the command line.
    #[arg(long = "var-file", value_name = "NAME=FILE", value_parser = secrets::parse_var_file)]
    var_files: Vec<(String, PathBuf)>,
    /// The model, as PROVIDER:MODEL (for example openai:gpt-4.1-mini) [default: the config's
    /// model, else the provider whose API key is set, else the embedded local model].
    #[arg(long, env = "TOOLSMITH_MODEL")]
    model: Option<String>,
    /// Override the provider's base URL.
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// Ask the provider for one JSON body per model call instead of a stream (as the config
    /// model's `"stream": false`): for OpenAI-compatible servers that cannot stream tool calls,
    /// such as llama-cpp-python's.
    #[arg(long)]
    no_stream: bool,
    /// The provider's API key [default: its environment variable, such as OPENAI_API_KEY].
    /// `-` reads one line from standard input. A key given here is visible to other processes
    /// (a warning says so): prefer the variable, --api-key-file or `-`.
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
    /// Read the provider's API key from a file: the whole file less one trailing line end.
    #[arg(long, value_name = "FILE", conflicts_with = "api_key")]
    api_key_file: Option<PathBuf>,
    /// The folder of the files `/attachments/<file>` paths name, which sub-agents and prompt
    /// tools with an `initAttachmentsProperty` hand over; sub-agents get folders of their own
    /// beneath it, in `.subagents/`.
    #[arg(long, value_name = "DIR")]
    attachments: Option<PathBuf>,
    /// The workspace the built-in tools are confined to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,
    /// Give commands run by the bash tool the host's network (default: none).
    #[arg(long)]
    allow_network: bool,
    /// Offer only these built-in tools (comma-separated names).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    tools: Option<Vec<String>>,
    /// The most steps (model calls) the run takes [default: the config's maxSteps, else 10].
    #[arg(long, value_name = "N")]
    max_steps: Option<u32>,
    /// System instructions for the agent.
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// Run the tool calls of a step in parallel, at most N at once (default: one at a time).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    parallel: Option<u16>,
    /// Print one JSON run part per line instead of text.
    #[arg(long)]
    json: bool,
    /// What to do when a tool call needs approval (write, edit and bash need it unless
    /// `auto`): ask on the terminal (y / n / always; denied when standard input is not a
    /// terminal), approve every call, or deny every call.
    #[arg(long, value_enum, default_value_t = ApproveMode::Ask)]
    approve: ApproveMode,
    /// Store the run in this database, as it goes: sqlite:PATH or postgres://USER@HOST/DB
    /// [default: no store]. A stored run survives a crash: continue it with --resume.
    #[arg(long, value_name = "URL", env = "TOOLSMITH_DB", hide_env_values = true)]
    db: Option<String>,
    /// The stored thread the run continues or starts [default: a new one, whose id is printed].
    #[arg(long, value_name = "ID", requires = "db")]
    thread: Option<String>,
    /// Continue the thread's run that did not end (a crash, a pause, a failure) instead of
    /// starting one; takes no prompt.
    #[arg(long, requires = "thread", conflicts_with = "prompt")]
    resume: bool,
    /// How long a running stored thread stays held by its process without a sign of life
    /// (the process writes a heartbeat every third of it): --resume takes over an interrupted
    /// run only after this, or at once when its process is gone from this host.
    #[arg(long, value_name = "SECONDS", default_value_t = 15.0)]
    lease: f64,
    /// The prompt.
    #[arg(required_unless_present = "resume", num_args = 1..)]
    prompt: Vec<String>,
}

/// `--var NAME=VALUE`.
fn parse_var(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_string(), value.to_string())),
        _ => Err("expected NAME=VALUE".to_string()),
    }
}

/// The values of `--var` and `--var-file`, warning about each secret given literally.
fn variables(args: &RunArgs, config: &AgentConfig) -> Result<Vec<(String, String)>, String> {
    if let Some((name, _)) = args
        .var_files
        .iter()
        .find(|(name, _)| args.vars.iter().any(|(n, _)| n == name))
    {
        return Err(format!("--var and --var-file both give {name}: give one"));
    }
    for (name, _) in &args.vars {
        if config.declares_secret(name) {
            eprintln!("{}", secrets::var_warning(name));
        }
    }
    let mut vars = args.vars.clone();
    vars.extend(secrets::var_files(&args.var_files)?);
    Ok(vars)
}

/// The workspace `--root` names, its commands given the host's network with
/// `--allow-network` (`run` and `mcp serve`).
pub(crate) fn workspace(root: &Path, allow_network: bool) -> Result<Arc<Workspace>, String> {
    let mut policy = SandboxPolicy::new(root);
    if allow_network {
        policy.network = NetworkPolicy::Full;
    }
    Workspace::new(policy).map_err(|e| format!("--root {}: {e}", root.display()))
}

/// `bash` or `run_code` built for a config's sandbox settings, on the workspace's policy: the
/// settings replace its limits and add to its environment; a network beyond the workspace's
/// (`--allow-network`) is refused.
pub(crate) fn sandboxed_builtin(
    workspace: &Arc<Workspace>,
    name: &str,
    settings: &SandboxSettings,
) -> Result<SharedTool, String> {
    let own = workspace.policy();
    match name {
        "bash" => {
            let network = match settings.network {
                SandboxNetwork::Off => NetworkPolicy::Off,
                SandboxNetwork::Loopback => NetworkPolicy::LoopbackOnly,
                SandboxNetwork::Full => NetworkPolicy::Full,
            };
            let rank = |n: NetworkPolicy| match n {
                NetworkPolicy::Off => 0,
                NetworkPolicy::LoopbackOnly => 1,
                NetworkPolicy::Full => 2,
            };
            if rank(network) > rank(own.network) {
                let name = ["off", "loopback", "full"][rank(network)];
                return Err(format!(
                    "network \"{name}\" is more than the workspace gives: run with \
                     --allow-network to allow it"
                ));
            }
            let mut policy = own.clone();
            policy.network = network;
            policy.limits.timeout = settings.timeout;
            if let Some(bytes) = settings.max_output_bytes {
                policy.limits.output_bytes = bytes;
            }
            policy.limits.tree_memory_bytes = Some(settings.max_memory_mb << 20);
            policy.env.set.extend(settings.env.iter().cloned());
            let bash =
                Bash::with_policy(Arc::clone(workspace), policy).map_err(|e| e.to_string())?;
            Ok(Arc::new(bash))
        }
        "run_code" => {
            let limits = RunCodeLimits {
                memory_bytes: usize::try_from(settings.max_memory_mb << 20)
                    .map_err(|_| "maxMemoryMB is too large for this machine".to_string())?,
                deadline: settings.timeout,
                output_bytes: settings.max_output_bytes.unwrap_or(own.limits.output_bytes),
                ..RunCodeLimits::default()
            };
            Ok(Arc::new(
                RunCode::new(limits).with_strictness(own.strictness),
            ))
        }
        other => Err(format!("{other} takes no sandbox settings")),
    }
}

/// The tools named by `--tools`, or all built-ins (`run` and `mcp serve`).
pub(crate) fn select_tools(all: Toolset, names: Option<&[String]>) -> Result<Toolset, String> {
    let Some(names) = names else { return Ok(all) };
    let mut selected = Toolset::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        match all.get(name) {
            Some(tool) => {
                selected.add(tool.clone());
            }
            None => {
                let known: Vec<&str> = all.names().collect();
                return Err(format!(
                    "unknown tool \"{name}\" in --tools; available: {}",
                    known.join(", ")
                ));
            }
        }
    }
    Ok(selected)
}

pub(crate) async fn run(args: RunArgs) -> ExitCode {
    let config = match &args.config {
        None => AgentConfig::default(),
        Some(path) => match AgentConfig::from_file(path) {
            Ok(config) => config,
            Err(e) => return usage_error(format!("--config {}: {e}", path.display())),
        },
    };
    if let Some(path) = config.async_tool() {
        return usage_error(format!(
            "{path}.async needs the harness service (`toolsmith serve`); `toolsmith run` runs \
             tools inline"
        ));
    }
    let model_name = match (&args.model, &config.model) {
        (Some(model), _) => model.clone(),
        (None, Some(model)) => model.spec(),
        (None, None) => {
            let (model, why) = default_model();
            if !args.json {
                eprintln!("model: {model} ({why}; choose another with --model PROVIDER:MODEL)");
            }
            model
        }
    };
    let provider = model_name.split_once(':').map_or("", |(p, _)| p);
    let workspace = match workspace(&args.root, args.allow_network) {
        Ok(workspace) => workspace,
        Err(message) => return usage_error(message),
    };
    let all = toolsmith_builtins::all(&workspace);
    let builtins = match config.workspace {
        // The config's permission mode decides which built-ins ask; --approve answers them.
        Some(mode) => mode.builtins(all),
        None => ask_by_default(all, args.approve),
    };
    let (mcp, file_servers) = match mcp::connect(&args.mcp_configs, &config, args.approve).await {
        Ok(connected) => connected,
        Err(message) => return usage_error(message),
    };
    if !args.json {
        mcp::report(&mcp);
    }
    // Declared variables: --var or --var-file, else the environment.
    let vars = match variables(&args, &config) {
        Ok(vars) => vars,
        Err(message) => return usage_error(message),
    };
    let lookup = move |name: &str| {
        vars.iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .or_else(|| std::env::var(name).ok())
    };
    let resolve = |spec: &ModelConfig| {
        let options = ProviderOptions {
            base_url: spec.base_url.clone(),
            api_key: None,
            streaming: spec.stream,
        };
        toolsmith_providers::resolve(&spec.spec(), &options).map_err(|e| e.to_string())
    };
    let sandboxed =
        |name: &str, settings: &SandboxSettings| sandboxed_builtin(&workspace, name, settings);
    let build = BuildContext {
        wrap: None,
        builtins: &builtins,
        resolve: &resolve,
        lookup: &lookup,
        // The config is the user's own: its webhooks may reach any address.
        webhooks: WebhookPolicy::any(),
        mcp: Some(&mcp),
        sandboxed: Some(&sandboxed),
    };
    let tools = match (&args.tools, &config.tools) {
        (Some(_), Some(_)) => {
            return usage_error("pass either --tools or a config with \"tools\", not both");
        }
        (Some(names), None) => config
            .builtins_in(&build)
            .map_err(|e| e.to_string())
            .and_then(|builtins| select_tools(builtins, Some(names))),
        // Without a config, every built-in; a config without "tools" offers the workspace's.
        (None, None) if args.config.is_none() => Ok(builtins.clone()),
        (None, _) => config
            .toolset_in(&build, provider)
            .map_err(|e| e.to_string()),
    };
    let tools =
        match tools.and_then(|tools| mcp::with_file_servers(tools, &mcp, &file_servers, &config)) {
            Ok(tools) => tools,
            Err(message) => return usage_error(message),
        };
    let api_key = match secrets::api_key(args.api_key.as_deref(), args.api_key_file.as_deref()) {
        Ok(key) => key,
        Err(message) => return usage_error(message),
    };
    let options = ProviderOptions {
        base_url: args
            .base_url
            .clone()
            .or_else(|| config.model.as_ref().and_then(|m| m.base_url.clone())),
        api_key,
        streaming: if args.no_stream {
            Some(false)
        } else {
            config.model.as_ref().and_then(|m| m.stream)
        },
    };
    let model = match toolsmith_providers::resolve(&model_name, &options) {
        Ok(model) => model,
        Err(e) => return usage_error(e),
    };
    let parent = ParentAgent {
        model: Arc::clone(&model),
        provider: provider.to_string(),
        approval: config.approval.clone(),
    };
    let mut builder = match config.agent_builder(tools, &build, &parent) {
        Ok(builder) => builder,
        Err(e) => return usage_error(e.to_string()),
    };
    if let Some(max_steps) = args.max_steps {
        builder = builder.max_steps(max_steps);
    }
    if let Some(instructions) = args.instructions.clone() {
        builder = builder.instructions(instructions);
    }
    if let Some(max) = args.parallel {
        builder = builder.execution(ExecutionPolicy::Parallel { max: max.into() });
    }
    // A stored run may pause in one process and resume in another: its approval ids are
    // signed with a key every process derives from the secret key, which also seals the
    // thread's secret variables.
    let secret = match args
        .db
        .as_ref()
        .map(|_| SecretKey::load(&SecretKey::default_file()))
    {
        None => None,
        Some(Ok(key)) => {
            builder = builder.approval_key(ApprovalKey::new(key.derive("approvals")));
            Some(key)
        }
        Some(Err(e)) => return usage_error(format!("--db: {e}")),
    };
    let stored = match &args.db {
        None => None,
        Some(url) => match toolsmith_store::open(url).await {
            Ok(store) => {
                let thread = args
                    .thread
                    .clone()
                    .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
                if args.thread.is_none() && !args.json {
                    eprintln!("thread: {thread}");
                }
                Some((store, thread))
            }
            Err(e) => return usage_error(format!("--db: {e}")),
        },
    };
    // A stored thread's cached results outlive the process: a later run of the thread (here or
    // elsewhere) is served them, sealed with the secret key like its secret variables.
    if let (Some((store, _)), Some(key)) = (&stored, &secret) {
        let cache = StoreCache::new(store.clone(), key.clone());
        builder = builder.result_cache(Arc::new(cache), CacheScope::Thread);
    }
    let agent = builder.build();

    let cancel = CancellationToken::new();
    // Ctrl-C or SIGTERM cancels the run, which then ends as usual: its thread saved and its
    // telemetry flushed on exit.
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let terminated = async {
                match term.as_mut() {
                    Some(term) => term.recv().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                result = tokio::signal::ctrl_c() => if result.is_err() { return },
                _ = terminated => {}
            }
            cancel.cancel();
        }
    });
    let lease = match std::time::Duration::try_from_secs_f64(args.lease) {
        Ok(lease) if !lease.is_zero() => lease,
        _ => return usage_error("--lease must be a positive number of seconds"),
    };
    // The first run's input: the stored thread (claimed for this run) and the prompt.
    let prompt = args.prompt.join(" ");
    let (first, run_id) = match &stored {
        None => (RunInput::from(prompt), uuid::Uuid::new_v4().to_string()),
        Some((store, thread)) => {
            let claimed = if args.resume {
                StoredRun::resume(store.clone(), thread, lease).await
            } else {
                StoredRun::start(store.clone(), thread, vec![Message::user(prompt)]).await
            };
            match claimed {
                Ok((run, messages)) => {
                    let run = run.with_lease(lease);
                    let run_id = run.run_id().to_string();
                    (run.input(messages), run_id)
                }
                Err(e @ (DurableError::Busy(_) | DurableError::Held { .. })) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(EXIT_FAILURE);
                }
                Err(e) => return usage_error(e),
            }
        }
    };
    // One run id for the first run and its resumptions: a sub-agent's folder and saved run
    // are named after it, and a stored run's idempotency keys.
    let deps = Arc::new(match &args.attachments {
        Some(dir) => {
            let store = Attachments::new(dir.join(".subagents")).with_folder(&run_id, dir);
            let mut deps = Dependencies::new();
            deps.insert(store);
            deps
        }
        None => Dependencies::new(),
    });
    // One session state too, so what the run has seen (the files `read` stamped, which `write`
    // needs before it replaces one) survives an approval answered here.
    let state = SessionState::default();
    let start = |input: RunInput| {
        let mut input = input
            .with_run_id(run_id.clone())
            .with_state(state.clone())
            .with_cancellation(cancel.clone());
        input.deps = Some(deps.clone());
        input
    };
    let mut input = start(first);
    if let (Some((store, thread)), Some(key)) = (&stored, &secret) {
        match thread_variables(&**store, thread, key).await {
            Ok(variables) => input.variables.extend(variables),
            Err(e) => return usage_error(format!("--db: the thread's variables: {e}")),
        }
    }

    let mut printer: Box<dyn Printer> = if args.json {
        Box::new(JsonLines)
    } else {
        Box::new(Human::default())
    };
    let mut waiting = if provider == "local" {
        "loading the local model"
    } else {
        "waiting for the model"
    };
    let stdout = std::io::stdout();
    loop {
        let result = show(&agent, input, &mut *printer, args.json, waiting).await;
        if let (Some((store, thread)), Some(key)) = (&stored, &secret) {
            let set = match &result {
                Ok(out) => &out.variables_set,
                Err(e) => &e.output.variables_set,
            };
            if let Err(e) = keep_variables(&**store, thread, key, set).await {
                eprintln!("error: --db: keeping the thread's variables: {e}");
                return ExitCode::from(EXIT_FAILURE);
            }
        }
        let pending: &[Pause] = match &result {
            Ok(out) => &out.pending,
            Err(_) => &[],
        };
        let clients = pending.iter().filter(|p| p.kind == PauseKind::ClientTool);
        // Client tools are answered by the person at the terminal; without one the run ends
        // paused, its pending calls in the output. So do approvals to ask when the run is
        // stored: it can be resumed later, the approvals answered then.
        let terminal = std::io::stdin().is_terminal();
        let can_answer = terminal
            || pending.iter().all(|p| {
                p.kind == PauseKind::Approval
                    && (stored.is_none() || args.approve != ApproveMode::Ask)
            });
        let out = match &result {
            Ok(out) if !pending.is_empty() && can_answer && !cancel.is_cancelled() => out,
            _ => {
                let mut out = stdout.lock();
                printer.end(&result, &mut out);
                let _ = out.flush();
                if let (Some((_, thread)), Ok(out)) = (&stored, &result)
                    && !out.pending.is_empty()
                    && !args.json
                {
                    eprintln!(
                        "paused: thread {thread} waits for {} answer(s); continue it with \
                         --thread {thread} --resume (and --approve auto|deny for approvals)",
                        out.pending.len()
                    );
                }
                return match result {
                    Ok(_) => ExitCode::SUCCESS,
                    Err(_) => ExitCode::from(EXIT_FAILURE),
                };
            }
        };
        // The run paused: answer, then resume with the thread and the answers (they reach
        // calls waiting inside sub-agents too). A stored thread is claimed again.
        input = match &stored {
            None => start(RunInput::from(out.messages.clone())),
            Some((store, thread)) => match StoredRun::resume(store.clone(), thread, lease).await {
                Ok((run, messages)) => {
                    let mut input = start(run.input(messages));
                    if let Some(key) = &secret
                        && let Ok(variables) = thread_variables(&**store, thread, key).await
                    {
                        input.variables.extend(variables);
                    }
                    input
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(EXIT_FAILURE);
                }
            },
        };
        for pause in clients {
            input = input.with_tool_result(client_result(pause).await);
        }
        for pause in pending.iter().filter(|p| p.kind == PauseKind::Approval) {
            input = input.with_approval(answer(pause, args.approve).await);
        }
        waiting = "running the tool";
    }
}

/// A client tool's result, typed at the terminal.
async fn client_result(pause: &Pause) -> ToolResultPart {
    let line = ask_line(format!(
        "{} {} (your answer): ",
        pause.tool_name, pause.input
    ))
    .await;
    ToolResultPart {
        tool_call_id: pause.tool_call_id.clone(),
        tool_name: pause.tool_name.clone(),
        output: match line {
            Some(text) => ModelOutput::text(text),
            None => ModelOutput::error_text("The user gave no answer."),
        },
        provider_executed: false,
        provider_metadata: Default::default(),
    }
}

/// Asks `question` on standard error and reads one line from standard input (without its line
/// end); `None` at the end of input or on a read error.
pub(super) async fn ask_line(question: String) -> Option<String> {
    tokio::task::spawn_blocking(move || {
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "{question}");
        let _ = stderr.flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end().to_string()),
        }
    })
    .await
    .ok()
    .flatten()
}

/// Streams one run, printing its parts; its output.
async fn show(
    agent: &Agent,
    input: RunInput,
    printer: &mut dyn Printer,
    json: bool,
    waiting: &'static str,
) -> Result<RunOutput, RunError> {
    let mut spinner = Spinner::new(waiting, json);
    let mut ticks = tokio::time::interval(std::time::Duration::from_millis(80));
    let mut stream = agent.stream(input);
    let stdout = std::io::stdout();
    loop {
        let part = tokio::select! {
            part = stream.next() => part,
            _ = ticks.tick() => {
                spinner.tick();
                continue;
            }
        };
        let Some(part) = part else { break };
        spinner.reset(waiting_after(&part));
        let mut out = stdout.lock();
        printer.part(&part, &mut out);
        let _ = out.flush();
    }
    spinner.clear();
    stream.output().await
}

/// The model when neither `--model` nor the config names one: the first provider whose key is
/// set, else the embedded local model; and why, for the line that says which was chosen.
fn default_model() -> (String, &'static str) {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    if set("ANTHROPIC_API_KEY") {
        (
            "anthropic:claude-sonnet-4-5".into(),
            "ANTHROPIC_API_KEY is set",
        )
    } else if set("OPENAI_API_KEY") {
        ("openai:gpt-4.1-mini".into(), "OPENAI_API_KEY is set")
    } else if set("GEMINI_API_KEY") || set("GOOGLE_GENERATIVE_AI_API_KEY") {
        ("google:gemini-2.5-flash".into(), "a Gemini API key is set")
    } else {
        (
            "local:default".into(),
            "no API key is set: the embedded local model",
        )
    }
}

/// What the run waits for after `part`, for the progress line.
fn waiting_after(part: &RunPart) -> &'static str {
    match part {
        RunPart::ToolCall { .. } => "running the tool",
        _ => "thinking",
    }
}
