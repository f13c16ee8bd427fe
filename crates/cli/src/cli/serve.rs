//! `toolsmith serve`, `toolsmith accounts` and `toolsmith agents`: the harness service and
//! its accounts and agents, managed on the database the service uses.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};
use toolsmith_config::WebhookPolicy;
use toolsmith_server::{Service, ServiceOptions, admin, auth::ADMIN_SECRET_VAR};
use toolsmith_store::{SecretKey, ServiceStore};

use super::{EXIT_FAILURE, usage_error};

/// Where the service keeps its state, shared by the three commands.
#[derive(Args, Clone)]
pub(crate) struct ServiceDb {
    /// The service's database: sqlite:PATH or postgres://USER@HOST/DB (replicas share one
    /// PostgreSQL database) [default: sqlite: service.db in toolsmith's data folder].
    #[arg(long, value_name = "URL", env = "TOOLSMITH_DB", hide_env_values = true)]
    db: Option<String>,
}

#[derive(Args)]
pub(crate) struct ServeArgs {
    #[command(flatten)]
    db: ServiceDb,
    /// The address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// The service's URL as workers reach it, for the completion URLs handed to
    /// external-dispatch tools [default: http://<listen address>].
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// The folder of the agents' workspaces (<folder>/<account>/<agent>), to which their
    /// built-in tools are confined [default: workspaces/ in toolsmith's data folder].
    #[arg(long, value_name = "DIR")]
    workspaces: Option<PathBuf>,
    /// How long a run waits for its same-invocation async tools, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 480)]
    async_wait: u64,
    /// The largest request body accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1024 * 1024)]
    max_body_bytes: usize,
    /// How long a client has to send a request's head (request line and headers), in seconds;
    /// the connection is closed after it.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    head_timeout: u64,
    /// How long from a request's head to the answer's head (the body sent, the service
    /// answering), in seconds: 408 after it. A streamed run is not bounded by it.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    request_timeout: u64,
    /// On SIGTERM or Ctrl-C, how long to wait for the runs to reach a safe point and hand
    /// themselves back (and for same-invocation async calls to return) before exiting anyway.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    shutdown_grace: u64,
    /// An origin browsers may call the service from, for CORS (repeatable), such as
    /// https://app.example.com [default: none: no CORS headers].
    #[arg(long = "cors-origin", value_name = "ORIGIN")]
    cors_origins: Vec<String>,
    /// Let the agents' webhook tools reach loopback, private and link-local addresses (off:
    /// a webhook's URL comes from an account's config).
    #[arg(long)]
    allow_private_webhooks: bool,
    /// Let agent configs name models read from this machine's files (scripted:PATH,
    /// local:PATH). Off: configs come from accounts.
    #[arg(long)]
    allow_file_models: bool,
}

#[derive(Subcommand)]
pub(crate) enum AccountsCommand {
    /// Create an account and print its bearer secret (shown this once).
    Create {
        /// The account's name: 1 to 64 of a-z, 0-9 and '-'.
        name: String,
        #[command(flatten)]
        db: ServiceDb,
    },
    /// List the accounts.
    List {
        #[command(flatten)]
        db: ServiceDb,
    },
}

#[derive(Subcommand)]
pub(crate) enum AgentsCommand {
    /// Store an agent config (checked, then sealed) under an account.
    Put {
        /// The agent's id.
        id: String,
        /// The agent config (JSON: the same as `toolsmith run --config`, with a model).
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// The owning account.
        #[arg(long, value_name = "NAME")]
        account: String,
        #[command(flatten)]
        db: ServiceDb,
    },
}

/// toolsmith's data folder: `$XDG_DATA_HOME/toolsmith`, else `~/.local/share/toolsmith`.
fn data_dir() -> PathBuf {
    std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."))
        .join("toolsmith")
}

/// The store and the service over it (the secret key loaded as `toolsmith run --db` does).
async fn service(db: &ServiceDb, options: ServiceOptions, url: &str) -> Result<Service, String> {
    let url_db = match &db.db {
        Some(url) => url.clone(),
        None => {
            let dir = data_dir();
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            format!("sqlite:{}", dir.join("service.db").display())
        }
    };
    let store: Arc<dyn ServiceStore> = toolsmith_store::open_service(&url_db)
        .await
        .map_err(|e| format!("--db: {e}"))?;
    let key = SecretKey::load(&SecretKey::default_file()).map_err(|e| format!("--db: {e}"))?;
    Ok(Service::new(store, key, options, url))
}

pub(crate) async fn serve(args: ServeArgs) -> ExitCode {
    let options = ServiceOptions {
        public_url: args.public_url.clone(),
        admin_secret: std::env::var(ADMIN_SECRET_VAR)
            .ok()
            .filter(|s| !s.is_empty()),
        workspaces: args
            .workspaces
            .clone()
            .unwrap_or_else(|| data_dir().join("workspaces")),
        async_wait: Duration::from_secs(args.async_wait),
        max_body_bytes: args.max_body_bytes,
        shutdown_grace: Duration::from_secs(args.shutdown_grace),
        head_timeout: Duration::from_secs(args.head_timeout),
        request_timeout: Duration::from_secs(args.request_timeout),
        allow_file_models: args.allow_file_models,
        cors_origins: args.cors_origins.clone(),
        webhooks: if args.allow_private_webhooks {
            WebhookPolicy::any()
        } else {
            WebhookPolicy::public_only()
        },
        ..ServiceOptions::default()
    };
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(listener) => listener,
        Err(e) => return usage_error(format!("--listen {}: {e}", args.listen)),
    };
    let address = listener.local_addr().unwrap_or(args.listen);
    let service = match service(&args.db, options, &format!("http://{address}")).await {
        Ok(service) => service,
        Err(message) => return usage_error(message),
    };
    eprintln!("toolsmith serve: listening on http://{address}");
    let shutdown = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("a SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        eprintln!("toolsmith serve: shutting down");
    };
    toolsmith_server::serve(listener, service, shutdown).await;
    ExitCode::SUCCESS
}

pub(crate) async fn accounts(command: AccountsCommand) -> ExitCode {
    match command {
        AccountsCommand::Create { name, db } => {
            let service = match service(&db, ServiceOptions::default(), "").await {
                Ok(service) => service,
                Err(message) => return usage_error(message),
            };
            match admin::create_account(&service, &name).await {
                Ok(secret) => {
                    println!("{secret}");
                    eprintln!("account {name} created; its secret is shown this once");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {}", e.body["error"].as_str().unwrap_or("failed"));
                    ExitCode::from(EXIT_FAILURE)
                }
            }
        }
        AccountsCommand::List { db } => {
            let service = match service(&db, ServiceOptions::default(), "").await {
                Ok(service) => service,
                Err(message) => return usage_error(message),
            };
            match service.store().accounts().await {
                Ok(accounts) => {
                    for account in accounts {
                        println!("{}", account.name);
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(EXIT_FAILURE)
                }
            }
        }
    }
}

pub(crate) async fn agents(command: AgentsCommand) -> ExitCode {
    let AgentsCommand::Put {
        id,
        config,
        account,
        db,
    } = command;
    let text = match std::fs::read_to_string(&config) {
        Ok(text) => text,
        Err(e) => return usage_error(format!("--config {}: {e}", config.display())),
    };
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(e) => return usage_error(format!("--config {}: not JSON: {e}", config.display())),
    };
    let service = match service(&db, ServiceOptions::default(), "").await {
        Ok(service) => service,
        Err(message) => return usage_error(message),
    };
    match service.put_agent(&account, &id, &value).await {
        Ok(()) => {
            eprintln!("agent {id} stored for account {account}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", e.body["error"].as_str().unwrap_or("failed"));
            ExitCode::from(EXIT_FAILURE)
        }
    }
}
