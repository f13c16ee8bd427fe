//! The toolsmith harness service: agents configured per account, runs started over HTTP and
//! streamed back, tools that run outside the model's turn and report back through a
//! completion endpoint, approvals answered in a later request (`toolsmith serve`).
//!
//! Routes (the agent harness's, with its bodies, status codes and texts):
//!
//! | route | what |
//! |---|---|
//! | `POST /` | a run, streamed as SSE (`data: <run part>`; heartbeats while async work is pending) |
//! | `POST /async` | a run in the background: 202 with a `statusUrl` |
//! | `GET /status/{eventId}?agentId=` | `processing` \| `awaiting_approval` \| `completed` \| `failed` |
//! | `POST /async-tools/{resultId}/complete` | an external worker settles an async call |
//! | `GET`/`POST /threads/{threadId}/variables/{requestId}` | provide a deferred sub-agent's variables; it boots at once |
//! | `POST /agents/{agentId}/chat` | the AI SDK's chat protocol (`useChat`), a UI message stream |
//! | `GET`/`POST`/`DELETE /agents/{agentId}/mcp` | the agent's tools over MCP (streamable HTTP), behind the account's bearer secret |
//! | `PUT /agents/{agentId}`, `GET /agents`, `DELETE /agents/{agentId}` | the caller's agents |
//! | `/admin/…` | accounts, agents and credentials, with `TOOLSMITH_ADMIN_SECRET` |
//! | `/console`, `/console/api/…` | the web console and its API, behind the account's bearer secret |
//! | any other `GET` | health |
//!
//! State lives in a [`ServiceStore`](toolsmith_store::ServiceStore): SQLite for one machine,
//! PostgreSQL for replicas. The user's guide is `docs/service.md`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use toolsmith_server::{Service, ServiceOptions};
//! use toolsmith_store::{MemoryStore, SecretKey};
//!
//! # async fn demo() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! let service = Service::new(
//!     Arc::new(MemoryStore::new()),
//!     SecretKey::generate(),
//!     ServiceOptions::default(),
//!     "http://127.0.0.1:8080",
//! );
//! toolsmith_server::serve(listener, service, std::future::pending()).await;
//! # Ok(())
//! # }
//! ```

pub mod admin;
pub mod async_tools;
pub mod auth;
pub mod chat;
mod console;
mod error;
mod events;
#[doc(hidden)]
pub mod fuzzing;
mod listen;
mod mcp;
mod mcp_route;
mod outcome;
mod routes;
mod runs;
mod service;
mod sse;
pub mod takeover;
mod variables;

use std::future::Future;

use axum::Router;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::{any, get, post, put};
use tower_http::cors::CorsLayer;
use tower_http::limit::RequestBodyLimitLayer;

pub use error::ApiError;
pub use service::{Service, ServiceOptions};

/// The service's routes (see the [crate docs](crate)), with the request body limit applied
/// (413 above [`ServiceOptions::max_body_bytes`]) and CORS for
/// [`ServiceOptions::cors_origins`].
pub fn router(service: Service) -> Router {
    let limit = service.options().max_body_bytes;
    let timeout = service.options().request_timeout;
    let cors = cors(&service.options().cors_origins);
    let router = Router::new()
        .route("/", post(routes::run_streamed))
        .route("/async", post(routes::run_async))
        .route("/status/{event_id}", get(routes::status))
        .route(
            "/async-tools/{result_id}/complete",
            post(async_tools::completion::complete),
        )
        .route(
            "/threads/{thread_id}/variables/{request_id}",
            get(variables::get).post(variables::post),
        )
        .route("/agents", get(admin::own_agents))
        .route("/agents/{agent_id}/chat", post(chat::chat))
        .route("/agents/{agent_id}/mcp", any(mcp_route::mcp))
        .route(
            "/agents/{agent_id}",
            put(admin::own_put_agent).delete(admin::own_delete_agent),
        )
        .route(
            "/admin/accounts",
            post(admin::post_account).get(admin::get_accounts),
        )
        .route(
            "/admin/accounts/{account}/agents/{agent_id}",
            put(admin::admin_put_agent),
        )
        .route(
            "/admin/accounts/{account}/credentials/{name}",
            put(admin::admin_put_credential),
        )
        .merge(console::routes())
        .fallback(routes::fallback)
        .method_not_allowed_fallback(routes::fallback)
        .layer(RequestBodyLimitLayer::new(limit))
        // From the head received to the answer's head: reading the body included.
        .layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| async move {
                match tokio::time::timeout(timeout, next.run(request)).await {
                    Ok(response) => response,
                    Err(_) => ApiError::new(
                        StatusCode::REQUEST_TIMEOUT,
                        format!(
                            "Request timed out: no answer within {} ms",
                            timeout.as_millis()
                        ),
                    )
                    .into_response(),
                }
            },
        ))
        .with_state(service);
    match cors {
        Some(cors) => router.layer(cors),
        None => router,
    }
}

/// The CORS layer for `origins` (none: no CORS headers at all). Browsers may send the bearer
/// header, JSON bodies and the MCP route's headers, and read the UI message stream's header and
/// the MCP session's id.
fn cors(origins: &[String]) -> Option<CorsLayer> {
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o.trim_end_matches('/')).ok())
        .collect();
    if origins.is_empty() {
        return None;
    }
    Some(
        CorsLayer::new()
            .allow_origin(origins)
            .allow_methods([Method::GET, Method::POST, Method::PUT, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("mcp-session-id"),
                HeaderName::from_static("mcp-protocol-version"),
                HeaderName::from_static("last-event-id"),
            ])
            .expose_headers([
                HeaderName::from_static("x-vercel-ai-ui-message-stream"),
                HeaderName::from_static("mcp-session-id"),
            ])
            .max_age(std::time::Duration::from_secs(3600)),
    )
}

/// Serves the service on `listener` until `shutdown` completes. Interrupted runs of replicas
/// that are gone are taken over meanwhile ([`takeover`]).
///
/// Then it shuts down gracefully: it stops accepting connections and taking runs over, and
/// every run hands itself back ([`RunInput::handback`](toolsmith_agent::RunInput::handback)):
/// the calls running finish and reach the journal, no model call is made after them, and the
/// thread is left running with no holder. Streams end with an `abort` part saying so; events
/// stay `processing`. Once every run has stopped and every same-invocation async call has
/// returned (or [`ServiceOptions::shutdown_grace`] has passed: what still runs is left as a
/// crash leaves it), the other replicas are woken ([`ServiceStore::wake_replicas`]) and take the
/// runs over at once, where their journals say; a replica started again on the same database
/// does the same.
///
/// [`ServiceStore::wake_replicas`]: toolsmith_store::ServiceStore::wake_replicas
///
/// Each client has [`ServiceOptions::head_timeout`] to send a request's head, and
/// [`ServiceOptions::request_timeout`] from there to the answer's head, its body read in
/// between (a stream's body is not bounded: a run streams for as long as it runs).
/// An accept that fails is logged and tried again (a second later, when it is the listener's
/// fault, such as running out of file descriptors). First it raises the process's soft
/// open-files limit to its hard limit: a streamed run holds two descriptors, its client's
/// connection and its model's.
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: Service,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    match listen::raise_open_files_limit() {
        Ok((before, after)) if before != after => tracing::debug!(
            target: "toolsmith::server", ?before, ?after, "open-files limit raised"
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!(
            target: "toolsmith::server", %e, "the open-files limit could not be raised"
        ),
    }
    let sweeper = takeover::start_sweeper(service.clone());
    let grace = service.options().shutdown_grace;
    let handback = service.inner.handback.clone();
    let mut ends = tokio::time::Instant::now() + grace;
    let stop = async {
        shutdown.await;
        tracing::info!(target: "toolsmith::server", "shutting down: the runs hand themselves back");
        ends = tokio::time::Instant::now() + grace;
        handback.cancel();
    };
    let app = router(service.clone());
    let head_timeout = service.options().head_timeout;
    let connections = listen::accept(listener, app, head_timeout, stop).await;
    // The streams end with their runs, and then their connections; past the grace they are
    // dropped.
    if tokio::time::timeout_at(ends, connections.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(target: "toolsmith::server", "shutdown grace over: connections dropped");
    }
    service.inner.tasks.close();
    if tokio::time::timeout_at(ends, service.inner.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            target: "toolsmith::server",
            "shutdown grace over: runs still running are left to be taken over as after a crash"
        );
    }
    sweeper.abort();
    if let Err(e) = service.store().wake_replicas().await {
        tracing::warn!(target: "toolsmith::server", %e, "telling the other replicas");
    }
}

/// JavaScript's `encodeURIComponent`: every byte but `A-Z a-z 0-9 - _ . ! ~ * ' ( )`
/// percent-encoded.
pub(crate) fn encode_component(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z'
            | b'a'..=b'z'
            | b'0'..=b'9'
            | b'-'
            | b'_'
            | b'.'
            | b'!'
            | b'~'
            | b'*'
            | b'\''
            | b'('
            | b')' => (b as char).to_string(),
            other => format!("%{other:02X}"),
        })
        .collect()
}
