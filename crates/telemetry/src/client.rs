//! The exporters' HTTP client: the workspace's `reqwest` (rustls), so no second HTTP or TLS
//! stack is built.
//!
//! The SDK's batch processors export from threads of their own, outside any async runtime;
//! `reqwest` needs Tokio's, so each request is spawned on the runtime handed to
//! [`Telemetry::from_config`](crate::Telemetry::from_config) and awaited from there. A failed
//! export is logged once per process as a warning naming the endpoint without its user, query
//! or headers (which may carry credentials); later failures are not logged, so a dead collector
//! never floods the log. Nothing is retried: one attempt per batch, within the timeout.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

/// Sends the exports.
#[derive(Clone)]
pub(crate) struct ExportClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    reported: Arc<AtomicBool>,
}

impl fmt::Debug for ExportClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExportClient").finish_non_exhaustive()
    }
}

impl ExportClient {
    pub(crate) fn new(
        runtime: tokio::runtime::Handle,
        timeout: Duration,
    ) -> Result<Self, reqwest::Error> {
        Ok(ExportClient {
            client: reqwest::Client::builder().timeout(timeout).build()?,
            runtime,
            reported: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Logs the first failure only.
    fn report(&self, uri: &http::Uri, reason: &str) {
        if !self.reported.swap(true, Ordering::Relaxed) {
            let endpoint = format!(
                "{}://{}{}",
                uri.scheme_str().unwrap_or("http"),
                uri.authority()
                    .map_or("", |a| a.as_str().rsplit('@').next().unwrap_or("")),
                uri.path()
            );
            tracing::warn!(
                target: "toolsmith_telemetry",
                "OpenTelemetry export to {endpoint} failed ({reason}); the run goes on without it, and later export failures are not logged"
            );
        }
    }
}

#[async_trait::async_trait]
impl HttpClient for ExportClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let uri = parts.uri.clone();
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let response = client
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send()
                .await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, headers, body))
        });
        let (status, headers, body) = match sent.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                let reason = if e.is_timeout() {
                    "timed out"
                } else if e.is_connect() {
                    "could not connect"
                } else {
                    "the request failed"
                };
                self.report(&uri, reason);
                return Err(Box::new(e.without_url()));
            }
            Err(e) => {
                self.report(&uri, "the runtime stopped");
                return Err(Box::new(e));
            }
        };
        if !status.is_success() {
            self.report(&uri, &format!("HTTP status {}", status.as_u16()));
        }
        let mut response = Response::builder().status(status).body(body)?;
        *response.headers_mut() = headers;
        Ok(response)
    }
}
