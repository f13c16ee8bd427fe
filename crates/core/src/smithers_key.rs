//! Seed 001's idempotency key, `smithers:<runId>:<nodeId>:<iteration>`, for tools ported from
//! Smithers.
//!
//! toolsmith's own key ([`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key))
//! is per call, `<run id>:<tool call id>`. Smithers' key is coarser: one per task iteration,
//! the same for every tool and call in it and across retry attempts. It is offered for
//! compatibility: a tool that deduplicates with it must not make two different calls in one
//! iteration.

use serde_json::Value;

/// The Smithers key with seed 001's rules: `None` when `run_id` is empty or `node_id` is
/// falsy (missing, `null`, `false`, `0` or `""`); otherwise
/// `smithers:<run_id>:<node_id>:<iteration>`, where a missing or `null` iteration is `0` and any
/// other value is written as JavaScript would (`false` stays `false`).
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::smithers_idempotency_key;
///
/// let key = smithers_idempotency_key("run-1", Some(&json!("review")), Some(&json!(2)));
/// assert_eq!(key.as_deref(), Some("smithers:run-1:review:2"));
/// assert_eq!(
///     smithers_idempotency_key("run-1", Some(&json!("review")), Some(&json!(null))).as_deref(),
///     Some("smithers:run-1:review:0")
/// );
/// assert_eq!(
///     smithers_idempotency_key("run-1", Some(&json!("review")), Some(&json!(false))).as_deref(),
///     Some("smithers:run-1:review:false")
/// );
/// assert_eq!(smithers_idempotency_key("", Some(&json!("review")), None), None);
/// assert_eq!(smithers_idempotency_key("run-1", Some(&json!(0)), None), None);
/// ```
pub fn smithers_idempotency_key(
    run_id: &str,
    node_id: Option<&Value>,
    iteration: Option<&Value>,
) -> Option<String> {
    if run_id.is_empty() || node_id.is_none_or(is_falsy) {
        return None;
    }
    let node = node_id.map(js_string)?;
    let iteration = match iteration {
        None | Some(Value::Null) => "0".to_string(),
        Some(value) => js_string(value),
    };
    Some(format!("smithers:{run_id}:{node}:{iteration}"))
}

/// JavaScript's falsy values, as JSON can hold them (`NaN` cannot).
fn is_falsy(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(_) | Value::Object(_) => false,
    }
}

/// How a template literal writes `value`.
fn js_string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(js_string).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".to_string(),
        other => other.to_string(),
    }
}
