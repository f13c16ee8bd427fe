//! [`Service`]: the state every route shares — the store, the secret key, the options — and
//! the agents it builds from their stored configs.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolsmith_agent::{Agent, ApprovalKey};
use toolsmith_builtins::Workspace;
use toolsmith_config::{AgentConfig, BuildContext, ModelConfig, ParentAgent, WebhookPolicy};
use toolsmith_core::layer::CacheScope;
use toolsmith_core::{AsyncMode, LanguageModel, Toolset};
use toolsmith_providers::ProviderOptions;
use toolsmith_sandbox::SandboxPolicy;
use toolsmith_store::{Account, AgentRecord, SecretKey, ServiceStore, StoreCache, Vault};

use crate::ApiError;
use crate::async_tools::{self, Coordinator};
use crate::auth::hash_secret;

/// How the service runs. [`Default`] is what `toolsmith serve` starts with.
#[derive(Debug, Clone)]
pub struct ServiceOptions {
    /// The service's absolute URL as workers reach it (`completeUrl`s are built on it).
    /// Default: `http://<listen address>`.
    pub public_url: Option<String>,
    /// The admin secret (`TOOLSMITH_ADMIN_SECRET`); the admin routes answer 401 without one.
    pub admin_secret: Option<String>,
    /// The folder holding each agent's workspace, `<folder>/<account>/<agent id>`, to which
    /// its built-in tools are confined.
    pub workspaces: PathBuf,
    /// How long a run waits for its same-invocation async tools before they are drained as
    /// failed (the agent harness: 8 minutes).
    pub async_wait: Duration,
    /// How often a streamed run that waits for async work says so (`: waiting for async work
    /// pending=<n>`; the agent harness: 15 s).
    pub heartbeat: Duration,
    /// How long a running thread stays held by its replica without a sign of life.
    pub lease: Duration,
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// How long a client has to send a request's head (request line and headers) once it
    /// starts one: the connection is closed after it. 30 s.
    pub head_timeout: Duration,
    /// How long from a request's head to the answer's head — the client sending its body, the
    /// service answering — before a 408. A streamed response's body is not bounded (a run
    /// streams for as long as it runs). 30 s.
    pub request_timeout: Duration,
    /// Whether agent configs may name models read from the server's files (`scripted:PATH`,
    /// `local:PATH`): off, since a config comes from an account, not from the operator.
    pub allow_file_models: bool,
    /// Origins a browser may call the service from (CORS), such as `https://app.example.com`;
    /// none by default (no CORS headers: only same-origin pages and non-browser clients).
    pub cors_origins: Vec<String>,
    /// Which addresses the agents' webhook tools may reach: public ones only by default,
    /// since a config comes from an account ([`WebhookPolicy`]).
    pub webhooks: WebhookPolicy,
    /// How long a shutdown waits for the runs to reach a safe point and hand themselves back
    /// (and for same-invocation async calls to return) before it stops anyway: 30 s. Whatever
    /// is still running then is left as a crash leaves it, for the journal to sort out.
    pub shutdown_grace: Duration,
}

impl Default for ServiceOptions {
    fn default() -> Self {
        ServiceOptions {
            public_url: None,
            admin_secret: None,
            workspaces: PathBuf::from("workspaces"),
            async_wait: Duration::from_secs(8 * 60),
            heartbeat: Duration::from_secs(15),
            lease: toolsmith_store::DEFAULT_LEASE,
            max_body_bytes: 1024 * 1024,
            head_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(30),
            allow_file_models: false,
            cors_origins: Vec::new(),
            webhooks: WebhookPolicy::public_only(),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// The service's shared state (see the [module docs](self)). Cheap to clone.
#[derive(Clone)]
pub struct Service {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) store: Arc<dyn ServiceStore>,
    pub(crate) key: SecretKey,
    /// The key of the completion tokens, derived from `key` once (a derivation is a few
    /// SHA-256 blocks, which every run would otherwise pay).
    pub(crate) token_key: [u8; 32],
    pub(crate) options: ServiceOptions,
    pub(crate) admin_hash: Option<[u8; 32]>,
    pub(crate) public_url: String,
    /// Agents built from their configs, by (account, id), with the `updated_at` they were
    /// built from.
    agents: Mutex<HashMap<AgentKey, CachedAgent>>,
    /// Accounts found by name, and when they were read: every request of an account looks it
    /// up.
    accounts: Mutex<HashMap<String, (Account, std::time::Instant)>>,
    pub(crate) coordinator: Coordinator,
    /// Fired when the service shuts down: every run hands itself back
    /// ([`RunInput::handback`](toolsmith_agent::RunInput::handback)).
    pub(crate) handback: CancellationToken,
    /// The runs and same-invocation calls in the background, waited for at shutdown.
    pub(crate) tasks: TaskTracker,
    /// The runs this process drives, for the console to watch.
    pub(crate) live: Arc<crate::console::LiveRuns>,
}

/// `(account, agent id)`.
type AgentKey = (String, String);

/// How long a built agent (or an account) is used without reading its record again: a change
/// made through another replica (or another process on the database) applies within this; one
/// made through this service at once. (Reading the record, the sealed config with it, cost
/// about a tenth of a run's store work.)
const AGENT_RECHECK: Duration = Duration::from_secs(1);

/// A built agent, the `updated_at` of the record it was built from, and when that was checked.
struct CachedAgent {
    updated_at: u64,
    checked: std::time::Instant,
    built: Arc<BuiltAgent>,
}

/// An agent ready to run, built from its stored config.
pub(crate) struct BuiltAgent {
    pub(crate) agent: Agent,
    /// The config's tools that run asynchronously, and how.
    pub(crate) async_tools: Vec<(String, AsyncMode)>,
    /// Its tools over MCP (`/agents/{agentId}/mcp`): its sessions end when this build is
    /// dropped.
    pub(crate) mcp_endpoint: crate::mcp_route::McpEndpoint,
}

impl BuiltAgent {
    /// 400 when the agent has an external-dispatch tool: a streamed request cannot be held
    /// until an external worker answers (the agent harness's error).
    pub(crate) fn refuse_external_dispatch(&self) -> Result<(), ApiError> {
        match self
            .async_tools
            .iter()
            .find(|(_, mode)| *mode == AsyncMode::ExternalDispatch)
        {
            Some((name, _)) => Err(ApiError::bad_request(format!(
                "Async tool {name} uses external-dispatch, which is not supported by this \
                 request path"
            ))),
            None => Ok(()),
        }
    }
}

impl Service {
    /// A service over `store`, sealing secrets with `key`; `listen_url` is the URL it listens
    /// on, used for `completeUrl`s unless [`ServiceOptions::public_url`] is set.
    pub fn new(
        store: Arc<dyn ServiceStore>,
        key: SecretKey,
        options: ServiceOptions,
        listen_url: &str,
    ) -> Self {
        let admin_hash = options.admin_secret.as_deref().map(hash_secret);
        let public_url = options
            .public_url
            .clone()
            .unwrap_or_else(|| listen_url.to_string())
            .trim_end_matches('/')
            .to_string();
        let tasks = TaskTracker::new();
        Service {
            inner: Arc::new(Inner {
                coordinator: Coordinator::new(store.clone(), tasks.clone()),
                handback: CancellationToken::new(),
                live: Arc::default(),
                tasks,
                store,
                token_key: key.derive("completion-tokens"),
                key,
                options,
                admin_hash,
                public_url,
                agents: Mutex::new(HashMap::new()),
                accounts: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ServiceStore> {
        &self.inner.store
    }

    /// The options.
    pub fn options(&self) -> &ServiceOptions {
        &self.inner.options
    }

    /// Runs `task` in the background as one of the service's runs (or async calls): a
    /// shutdown waits for it.
    pub(crate) fn spawn<F>(&self, task: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.inner.tasks.spawn(task);
    }

    /// Whether the service is shutting down (its runs handing themselves back).
    pub fn is_shutting_down(&self) -> bool {
        self.inner.handback.is_cancelled()
    }

    /// Stores an agent: its config checked (parsed, and its model and tools built as a run
    /// would), then sealed.
    ///
    /// # Errors
    ///
    /// 400 with the config's error; 404 `Agent not found`-style for a missing account is the
    /// caller's to say (the store answers `NotFound`).
    pub async fn put_agent(&self, account: &str, id: &str, config: &Value) -> Result<(), ApiError> {
        if !valid_agent_id(id) {
            return Err(ApiError::bad_request(
                "agent ids are 1 to 128 of A-Z, a-z, 0-9, '.', '_' and '-' (not '.' or '..')",
            ));
        }
        let text = serde_json::to_vec(config).map_err(|e| ApiError::internal("config", e))?;
        let record = AgentRecord {
            account: account.to_string(),
            id: id.to_string(),
            config: self.inner.key.seal(&text),
            active: true,
            updated_at: toolsmith_store_now(),
        };
        self.build(&record).await.map_err(ApiError::bad_request)?;
        let stored = self.inner.store.put_agent(&record).await;
        self.forget_agent(account, id);
        match stored {
            Ok(()) => Ok(()),
            Err(toolsmith_store::StoreError::NotFound(_)) => {
                Err(ApiError::not_found("Account not found"))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The account's agent, built; 404 `{"error":"Agent not found"}` when it is missing,
    /// inactive or another account's.
    pub(crate) async fn agent(&self, account: &str, id: &str) -> Result<Arc<BuiltAgent>, ApiError> {
        let key = (account.to_string(), id.to_string());
        if let Some(cached) = lock(&self.inner.agents).get(&key)
            && cached.checked.elapsed() < AGENT_RECHECK
        {
            return Ok(cached.built.clone());
        }
        let record = match self.inner.store.agent(account, id).await? {
            Some(record) if record.active => record,
            _ => {
                lock(&self.inner.agents).remove(&key);
                return Err(ApiError::agent_not_found());
            }
        };
        if let Some(cached) = lock(&self.inner.agents).get_mut(&key)
            && cached.updated_at == record.updated_at
        {
            cached.checked = std::time::Instant::now();
            return Ok(cached.built.clone());
        }
        let built = Arc::new(
            self.build(&record)
                .await
                .map_err(|e| ApiError::internal("a stored agent config no longer builds", e))?,
        );
        let cached = CachedAgent {
            updated_at: record.updated_at,
            checked: std::time::Instant::now(),
            built: built.clone(),
        };
        lock(&self.inner.agents).insert(key, cached);
        Ok(built)
    }

    /// The account `name`, read again from the store once it is [`AGENT_RECHECK`] old (a
    /// change made elsewhere applies within that; accounts not found are not kept).
    pub(crate) async fn account(&self, name: &str) -> Result<Option<Account>, ApiError> {
        if let Some((account, read)) = lock(&self.inner.accounts).get(name)
            && read.elapsed() < AGENT_RECHECK
        {
            return Ok(Some(account.clone()));
        }
        let found = self.inner.store.account(name).await?;
        let mut cached = lock(&self.inner.accounts);
        match &found {
            Some(account) => {
                cached.insert(
                    name.to_string(),
                    (account.clone(), std::time::Instant::now()),
                );
            }
            None => {
                cached.remove(name);
            }
        }
        Ok(found)
    }

    /// Drops the built agent (its record was deleted or changed here).
    pub(crate) fn forget_agent(&self, account: &str, id: &str) {
        lock(&self.inner.agents).remove(&(account.to_string(), id.to_string()));
    }

    /// The agent config of `record`, unsealed.
    pub(crate) fn config_of(&self, record: &AgentRecord) -> Result<AgentConfig, String> {
        AgentConfig::from_value(self.config_value(record)?).map_err(|e| e.to_string())
    }

    /// The agent config of `record`, unsealed, as the JSON it was stored as.
    pub(crate) fn config_value(&self, record: &AgentRecord) -> Result<Value, String> {
        let text = self
            .inner
            .key
            .open(&record.config)
            .map_err(|e| format!("the agent's config cannot be unsealed: {e}"))?;
        serde_json::from_slice(&text).map_err(|e| format!("the agent's config is not JSON: {e}"))
    }

    /// Builds the agent `record` describes: its model (the account's own API key for the
    /// provider when it stored one, else the service's environment), the built-in tools
    /// confined to its workspace and asking before changes, its config's tools, sub-agents and
    /// prompts, async tools wrapped.
    async fn build(&self, record: &AgentRecord) -> Result<BuiltAgent, String> {
        let config = self.config_of(record)?;
        let model_config = config.model.clone().ok_or_else(|| {
            "config.model is required by the service (PROVIDER:MODEL)".to_string()
        })?;
        let credentials = Vault::new(&*self.inner.store, self.inner.key.clone())
            .credentials(&record.account)
            .await
            .map_err(|e| format!("the account's credentials: {e}"))?;
        let resolve = |spec: &ModelConfig| self.resolve_model(spec, &credentials);
        let model = resolve(&model_config)?;
        let root = self
            .inner
            .options
            .workspaces
            .join(&record.account)
            .join(&record.id);
        std::fs::create_dir_all(&root)
            .map_err(|e| format!("cannot create the workspace {}: {e}", root.display()))?;
        let workspace = Workspace::new(SandboxPolicy::new(&root))
            .map_err(|e| format!("the workspace {}: {e}", root.display()))?;
        let builtins = toolsmith_builtins::ask_before_changes(toolsmith_builtins::all(&workspace));
        // Its MCP servers, connected for as long as the built agent lives (its tools hold the
        // sessions).
        let mcp = crate::mcp::connect(&config, self.inner.options.webhooks).await?;
        let tools = config
            .toolset_with(
                &builtins,
                &model_config.provider,
                self.inner.options.webhooks,
                Some(&mcp),
            )
            .map_err(|e| e.to_string())?;
        // Declared variables take their values from the config, or from the thread at run time:
        // never from the service's environment.
        let lookup = |_: &str| None;
        // Each config's async tools wrapped, the agent's own and its sub-agents' and prompts'
        // alike, for the event of the run that called them: a sub-agent's same-invocation
        // result reaches the sub-agent's run, which waits for it; its external-dispatch call
        // joins the event's group, whose continuation goes on with the top-level conversation.
        let coordinator = &self.inner.coordinator;
        let wrap = |tools: Toolset, config: &AgentConfig| {
            async_tools::wrap(tools, &async_tools::modes(config), coordinator)
        };
        let cx = BuildContext {
            wrap: Some(&wrap),
            builtins: &builtins,
            resolve: &resolve,
            lookup: &lookup,
            webhooks: self.inner.options.webhooks,
            mcp: Some(&mcp),
            sandboxed: None,
        };
        let parent = ParentAgent {
            model,
            provider: model_config.provider.clone(),
            approval: config.approval.clone(),
        };
        let tools = wrap(tools, &config);
        // Every async tool at any depth: a streamed request refuses external dispatch anywhere.
        let async_tools = async_tools::all_modes(&config);
        let agent = config
            .agent_builder(tools, &cx, &parent)
            .map_err(|e| e.to_string())?
            // Runs pause in one request and resume in another, maybe on another replica.
            .approval_key(ApprovalKey::new(self.inner.key.derive("approvals")))
            // Cached results live in the store: a conversation's later requests are served
            // them on any replica. Scoped per thread, and a thread is one account's agent's
            // conversation (`runs::thread_id`): never another account's.
            .result_cache(
                Arc::new(StoreCache::new(
                    self.inner.store.clone(),
                    self.inner.key.clone(),
                )),
                CacheScope::Thread,
            )
            .build();
        let mcp_endpoint =
            crate::mcp_route::McpEndpoint::new(&config, self.inner.handback.child_token());
        Ok(BuiltAgent {
            agent,
            async_tools,
            mcp_endpoint,
        })
    }

    /// The model a config names, under the service's rules: no model read from the server's
    /// files unless the operator allows it, and the service's own API keys never sent to a
    /// base URL a config names.
    fn resolve_model(
        &self,
        spec: &ModelConfig,
        credentials: &[(String, String)],
    ) -> Result<Arc<dyn LanguageModel>, String> {
        let file_model = spec.provider == "scripted"
            || (spec.provider == "local" && !matches!(spec.name.as_str(), "" | "default"));
        if file_model && !self.inner.options.allow_file_models {
            return Err(format!(
                "config.model: \"{}\" reads a file of the server's, which agent configs may not \
                 name",
                spec.spec()
            ));
        }
        let key_name = api_key_variable(&spec.provider);
        let own_key = key_name.and_then(|name| {
            credentials
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        });
        if spec.base_url.is_some()
            && own_key.is_none()
            && !matches!(
                spec.provider.as_str(),
                "openai-compatible" | "local" | "scripted"
            )
        {
            return Err(format!(
                "config.model.baseUrl needs the account's own API key (the credential {}): the \
                 service's keys are never sent to a base URL an agent names",
                key_name.unwrap_or("for the provider")
            ));
        }
        let options = ProviderOptions {
            base_url: spec.base_url.clone(),
            api_key: own_key,
            streaming: spec.stream,
        };
        toolsmith_providers::resolve(&spec.spec(), &options).map_err(|e| e.to_string())
    }
}

/// The credential (and environment variable) holding a provider's API key.
fn api_key_variable(provider: &str) -> Option<&'static str> {
    match provider {
        "anthropic" => Some("ANTHROPIC_API_KEY"),
        "openai" | "openai-responses" | "openai-compatible" => Some("OPENAI_API_KEY"),
        "google" => Some("GEMINI_API_KEY"),
        _ => None,
    }
}

/// Whether an agent id is acceptable: 1 to 128 of `A-Z a-z 0-9 . _ -`, not `.` or `..` (it
/// names a folder).
pub(crate) fn valid_agent_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Milliseconds since the Unix epoch.
pub(crate) fn toolsmith_store_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves the data itself intact.
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}
