//! [`ApiError`]: every error the service answers, as `{"error": message}` (plus fields some
//! answers carry) with its status code.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// An HTTP error answer: a status and a JSON object holding at least `error`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The status code.
    pub status: StatusCode,
    /// The body: `{"error": …, …}`.
    pub body: Map<String, Value>,
}

impl ApiError {
    /// `{"error": message}` with `status`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        let mut body = Map::new();
        body.insert("error".into(), Value::String(message.into()));
        ApiError { status, body }
    }

    /// The same answer with one more field.
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.body.insert(key.into(), value);
        self
    }

    /// 400 with `message`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 401 `{"error":"Unauthorized"}`.
    pub fn unauthorized() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized")
    }

    /// 404 with `message`: the answer for a missing row and for another account's alike.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    /// 404 `{"error":"Agent not found"}`.
    pub fn agent_not_found() -> Self {
        Self::not_found("Agent not found")
    }

    /// 405 `{"error":"Method not allowed","method":…,"allowedMethods":[…]}`.
    pub fn method_not_allowed(method: &str, allowed: &[&str]) -> Self {
        Self::new(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed")
            .with("method", json!(method))
            .with("allowedMethods", json!(allowed))
    }

    /// 500 for a store or internal failure. The details go to the log, not to the caller: they
    /// may name tables, hosts or paths.
    pub fn internal(what: &str, error: impl std::fmt::Display) -> Self {
        tracing::error!(target: "toolsmith::server", %error, "{what}");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, axum::Json(Value::Object(self.body))).into_response()
    }
}

impl From<toolsmith_store::StoreError> for ApiError {
    fn from(e: toolsmith_store::StoreError) -> Self {
        ApiError::internal("store error", e)
    }
}
