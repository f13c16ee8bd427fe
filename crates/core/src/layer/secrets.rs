//! [`SecretsLayer`]: secrets never leave a call.

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Call, Layer, Next};
use crate::{SECRET_MASK, ToolError, ToolOutput};

/// Masks the run's secret variables ([`Variables`](crate::Variables)) in everything a call
/// returns: the value, what the model sees, artifacts, and an error's message, details and
/// operator detail. It sits just inside the tracing layer, so logs, stream parts, the thread and
/// the model all get the masked result. A run without secrets pays nothing.
pub struct SecretsLayer;

#[async_trait]
impl Layer for SecretsLayer {
    async fn call(&self, call: Call<'_>, next: Next<'_>) -> Result<ToolOutput, ToolError> {
        let secrets = CallSecrets::starting(call.cx);
        let result = next.run(call).await;
        secrets.mask(result)
    }
}

/// The secrets a call's result is masked with: the run's secret variables as the call started
/// and as it ended (a secret it set or replaced is masked in both its forms). Also for what a
/// layer inside [`SecretsLayer`] keeps of a call (the journal's record), which must hold no
/// secret either.
///
/// ```
/// use toolsmith_core::layer::CallSecrets;
/// use toolsmith_core::{ToolContext, ToolOutput, VariableKind};
///
/// let cx = ToolContext::for_test("login");
/// let secrets = CallSecrets::starting(&cx);
/// // The call sets a secret: masked in its result all the same.
/// cx.set_variable("TOKEN", "tok-123456", Some(VariableKind::Secret));
/// let output = secrets.mask(Ok(ToolOutput::text("the token is tok-123456"))).unwrap();
/// assert_eq!(output.value, "the token is [secret]");
/// ```
pub struct CallSecrets {
    scope: std::sync::Arc<crate::RunScope>,
    before: Vec<String>,
}

impl CallSecrets {
    /// The secrets of `cx`'s run as its call starts.
    pub fn starting(cx: &crate::ToolContext) -> Self {
        CallSecrets {
            scope: cx.scope().clone(),
            before: cx
                .variables()
                .secret_values()
                .into_iter()
                .map(str::to_string)
                .collect(),
        }
    }

    /// `result` with the secrets, as the call started and as they are now, masked in
    /// everything it holds: the value, what the model sees, artifacts, an error's message,
    /// details and operator detail. Unchanged when the run has none.
    pub fn mask(&self, result: Result<ToolOutput, ToolError>) -> Result<ToolOutput, ToolError> {
        let variables = self.scope.variables.current();
        let mut secrets = variables.secret_values();
        secrets.extend(self.before.iter().map(String::as_str));
        if secrets.is_empty() {
            return result;
        }
        masking_order(&mut secrets);
        match result {
            Ok(output) => Ok(mask(output, &secrets)),
            Err(error) => Err(error.mask_with(
                |text| mask_text(text, &secrets),
                |details| {
                    mask_value(details, &secrets);
                },
            )),
        }
    }
}

/// `secrets` in the order they are masked in: the longest first, so that a secret containing
/// another is masked whole.
pub(crate) fn masking_order(secrets: &mut Vec<&str>) {
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
}

pub(crate) fn mask_text(text: &str, secrets: &[&str]) -> String {
    secrets.iter().fold(text.to_string(), |text, secret| {
        text.replace(secret, SECRET_MASK)
    })
}

/// `value` with every secret masked in every string it holds (keys included).
fn mask<T: Serialize + DeserializeOwned>(value: T, secrets: &[&str]) -> T {
    let Ok(mut json) = serde_json::to_value(&value) else {
        return value;
    };
    if !mask_value(&mut json, secrets) {
        return value;
    }
    serde_json::from_value(json).unwrap_or(value)
}

/// Masks in place; whether anything changed.
pub(crate) fn mask_value(value: &mut Value, secrets: &[&str]) -> bool {
    match value {
        Value::String(text) if secrets.iter().any(|s| text.contains(s)) => {
            *text = mask_text(text, secrets);
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| mask_value(item, secrets) | changed),
        Value::Object(map) => {
            let mut changed = false;
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                if secrets.iter().any(|s| key.contains(s)) {
                    let item = map.shift_remove(&key).unwrap_or_default();
                    map.insert(mask_text(&key, secrets), item);
                    changed = true;
                }
            }
            map.values_mut()
                .fold(changed, |changed, item| mask_value(item, secrets) | changed)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_secret_with_json_escapes_is_masked_in_an_errors_details_too() {
        let secrets = [r#"pa"ss\word"#];
        let error = ToolError::new("E", r#"bad key pa"ss\word"#)
            .with_details(json!({"key": r#"x pa"ss\word y"#, "list": [r#"pa"ss\word"#]}))
            .with_operator_detail(r#"Bearer pa"ss\word"#)
            .mask_with(
                |text| mask_text(text, &secrets),
                |details| {
                    mask_value(details, &secrets);
                },
            );
        assert_eq!(error.message(), "bad key [secret]");
        assert_eq!(error.operator_detail(), Some("Bearer [secret]"));
        assert_eq!(
            error.details(),
            Some(&json!({"key": "x [secret] y", "list": ["[secret]"]}))
        );
    }
}
