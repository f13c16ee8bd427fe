//! Streamable HTTP: a server's sessions behind one HTTP endpoint.
//!
//! [`http_service`] is a tower service to mount in an axum router at any path; [`serve_http`]
//! mounts it at [`MCP_PATH`] and serves it on a listener. Each client gets a session of its
//! own (the `Mcp-Session-Id` header, rmcp's stateful mode), ended by the client's `DELETE`, or
//! by [`HttpConfig::shutdown`]. The checks every request passes are on [`HttpConfig`].

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use toolsmith_core::CancellationToken;

use super::{McpServer, McpSession};

/// Where [`serve_http`] serves the endpoint.
pub const MCP_PATH: &str = "/mcp";

/// The browser origins a request may come from: the loopback hosts, any port.
const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// How the HTTP endpoint guards itself and when it stops.
///
/// Every request is checked, in this order:
///
/// 1. With a bearer token ([`bearer_token`](Self::bearer_token)), the request needs
///    `Authorization: Bearer <token>`, compared in constant time: else `401` with
///    `WWW-Authenticate: Bearer`.
/// 2. The `Host` header must name a loopback host (`localhost`, `127.0.0.1`, `::1`, any port)
///    unless [`any_host`](Self::any_host): else `403`. This and the next check are the MCP
///    specification's protection against DNS rebinding.
/// 3. A request with an `Origin` header must come from a loopback origin (`http` or `https`,
///    `localhost`, `127.0.0.1` or `[::1]`, any port): else `403`. Clients that are not
///    browsers send none.
///
/// ```
/// use toolsmith_mcp::server::HttpConfig;
///
/// let config = HttpConfig::new().bearer_token("s3cret-token").any_host();
/// assert!(!format!("{config:?}").contains("s3cret"));
/// ```
#[derive(Clone, Default)]
pub struct HttpConfig {
    /// The SHA-256 of the bearer token every request must carry.
    token: Option<Arc<[u8; 32]>>,
    any_host: bool,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("bearer_token", &self.token.as_ref().map(|_| "[secret]"))
            .field("any_host", &self.any_host)
            .finish_non_exhaustive()
    }
}

impl HttpConfig {
    /// Loopback hosts only, no token, never shut down.
    pub fn new() -> HttpConfig {
        HttpConfig::default()
    }

    /// Every request must carry `Authorization: Bearer <token>`.
    pub fn bearer_token(mut self, token: impl AsRef<str>) -> HttpConfig {
        self.token = Some(Arc::new(Sha256::digest(token.as_ref().as_bytes()).into()));
        self
    }

    /// Accepts any `Host` header (for an endpoint reached under a name or a public address;
    /// guard it with a bearer token). The `Origin` check stays.
    pub fn any_host(mut self) -> HttpConfig {
        self.any_host = true;
        self
    }

    /// Cancelling `token` ends every session and its streams ([`serve_http`] then returns).
    pub fn shutdown(mut self, token: CancellationToken) -> HttpConfig {
        self.shutdown = token;
        self
    }

    /// Whether the request carries the token (always, without one).
    fn authorized(&self, request: &Request) -> bool {
        let Some(expected) = &self.token else {
            return true;
        };
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let Some(given) = given else {
            return false;
        };
        let given: [u8; 32] = Sha256::digest(given.as_bytes()).into();
        given.ct_eq(&**expected).into()
    }
}

/// The endpoint as a tower service: mount it in an axum router with
/// `Router::route_service(path, service)`.
#[derive(Clone)]
pub struct McpHttpService {
    config: HttpConfig,
    inner: StreamableHttpService<McpSession, LocalSessionManager>,
}

impl std::fmt::Debug for McpHttpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpService")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// The streamable HTTP endpoint of `server`, guarded as `config` says (see [`HttpConfig`]);
/// each client gets a session of its own (the `Mcp-Session-Id` header).
///
/// ```
/// use toolsmith_core::Toolset;
/// use toolsmith_mcp::server::{HttpConfig, McpServer, http_service};
///
/// let server = McpServer::new(Toolset::new());
/// let endpoint = http_service(&server, HttpConfig::new());
/// let app: axum::Router = axum::Router::new().route_service("/tools/mcp", endpoint);
/// # drop(app);
/// ```
pub fn http_service(server: &McpServer, config: HttpConfig) -> McpHttpService {
    let mut rmcp_config = StreamableHttpServerConfig::default()
        .with_allowed_origins(LOOPBACK_ORIGINS.iter().copied())
        .enforce_origin_validation()
        .with_cancellation_token(config.shutdown.child_token());
    if config.any_host {
        rmcp_config = rmcp_config.disable_allowed_hosts();
    }
    let server = server.clone();
    let inner = StreamableHttpService::new(
        move || Ok(server.session()),
        Arc::new(LocalSessionManager::default()),
        rmcp_config,
    );
    McpHttpService { config, inner }
}

impl tower::Service<Request> for McpHttpService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        if !self.config.authorized(&request) {
            let refused = (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "Unauthorized: this MCP endpoint needs the header \
                 \"Authorization: Bearer <token>\"",
            );
            return Box::pin(std::future::ready(Ok(refused.into_response())));
        }
        let mut inner = self.inner.clone();
        Box::pin(async move {
            let Ok(response) = inner.call(request).await;
            Ok(response.into_response())
        })
    }
}

/// Serves `server`'s endpoint at [`MCP_PATH`] on `listener` until `config`'s shutdown token
/// is cancelled.
///
/// ```no_run
/// # async fn demo() -> std::io::Result<()> {
/// use toolsmith_core::{CancellationToken, Toolset};
/// use toolsmith_mcp::server::{HttpConfig, McpServer, serve_http};
///
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8931").await?;
/// let stop = CancellationToken::new();
/// serve_http(listener, &McpServer::new(Toolset::new()), HttpConfig::new().shutdown(stop)).await
/// # }
/// ```
///
/// # Errors
///
/// Accepting connections failed.
pub async fn serve_http(
    listener: tokio::net::TcpListener,
    server: &McpServer,
    config: HttpConfig,
) -> std::io::Result<()> {
    let stop = config.shutdown.clone();
    let app = axum::Router::new().route_service(MCP_PATH, http_service(server, config));
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { stop.cancelled().await })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(authorization: Option<&str>) -> Request {
        let mut request = Request::new(axum::body::Body::empty());
        if let Some(value) = authorization {
            request
                .headers_mut()
                .insert(header::AUTHORIZATION, value.parse().unwrap());
        }
        request
    }

    #[test]
    fn the_bearer_token_must_match() {
        let open = HttpConfig::new();
        assert!(open.authorized(&request(None)));
        let guarded = HttpConfig::new().bearer_token("t0ken");
        assert!(guarded.authorized(&request(Some("Bearer t0ken"))));
        assert!(guarded.authorized(&request(Some("bearer t0ken"))));
        assert!(!guarded.authorized(&request(Some("Bearer t0ke"))));
        assert!(!guarded.authorized(&request(Some("Basic t0ken"))));
        assert!(!guarded.authorized(&request(Some("t0ken"))));
        assert!(!guarded.authorized(&request(None)));
    }
}
