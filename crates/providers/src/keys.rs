//! API keys and base URLs (internal): an explicit option, else the provider's environment
//! variable; values are trimmed, empty ones count as unset, and base URLs lose their trailing
//! slash.

use toolsmith_core::{ModelError, ModelErrorKind};

/// The API key: `explicit` when given (and not empty), else the environment variable `var`.
///
/// # Errors
///
/// A `Config` error naming the variable exactly when neither is set, for example
/// `OPENAI_API_KEY is not set: pass --api-key or set OPENAI_API_KEY`.
pub fn require_key(explicit: Option<&str>, var: &str) -> Result<String, ModelError> {
    optional_key(explicit, var).ok_or_else(|| {
        ModelError::new(
            ModelErrorKind::Config,
            format!("{var} is not set: pass --api-key or set {var}"),
        )
    })
}

/// The API key if there is one: `explicit`, else the environment variable `var`.
pub fn optional_key(explicit: Option<&str>, var: &str) -> Option<String> {
    non_empty(explicit.map(str::to_string)).or_else(|| non_empty(std::env::var(var).ok()))
}

/// The base URL: `explicit`, else the environment variable `var`, else `default`; without a
/// trailing slash.
pub fn base_url(explicit: Option<&str>, var: &str, default: &str) -> String {
    let url = env_or(explicit, var).unwrap_or_else(|| default.to_string());
    url.trim_end_matches('/').to_string()
}

/// `explicit`, else the environment variable `var`, ignoring empty values.
pub fn env_or(explicit: Option<&str>, var: &str) -> Option<String> {
    non_empty(explicit.map(str::to_string)).or_else(|| non_empty(std::env::var(var).ok()))
}

fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_key_names_its_variable() {
        assert_eq!(
            require_key(Some("sk-1"), "TOOLSMITH_DOC_UNSET_KEY").unwrap(),
            "sk-1"
        );
        let err = require_key(None, "TOOLSMITH_DOC_UNSET_KEY").unwrap_err();
        assert_eq!(
            err.to_string(),
            "TOOLSMITH_DOC_UNSET_KEY is not set: pass --api-key or set TOOLSMITH_DOC_UNSET_KEY"
        );
    }
}
