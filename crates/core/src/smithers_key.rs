//! The Smithers-compatible run context: the idempotency key
//! `smithers:<runId>:<nodeId>:<iteration>` and where the call sequence (`seq`) starts.
//!
//! A run carries Smithers context when its metadata has a truthy `nodeId` or a non-empty
//! `idempotencyKey` string ([`smithers_context_key`]). Then the key a call sees
//! ([`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key)) is Smithers' key,
//! coarser than toolsmith's own per-call `<run id>:<tool call id>`: one per task iteration, the
//! same for every tool and call in it and across retry attempts. A tool that deduplicates with
//! it must not make two different effects in one iteration under it; the run's journal and
//! idempotency ledger never key on it (they keep each call apart by its run and call id).

use serde_json::{Map, Value};

/// The Smithers key, by Smithers' rules: `None` when `run_id` is empty or `node_id` is
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

/// The Smithers key of a run with id `run_id` and `metadata`, as Smithers'
/// `getToolIdempotencyKey` derives it: the metadata's `idempotencyKey` when it is a non-empty
/// string; else [`smithers_idempotency_key`] from `nodeId` and `iteration`; `None` when the run
/// carries no Smithers context (then toolsmith's per-call key applies).
pub(crate) fn smithers_context_key(run_id: &str, metadata: &Map<String, Value>) -> Option<String> {
    if let Some(Value::String(key)) = metadata.get("idempotencyKey")
        && !key.is_empty()
    {
        return Some(key.clone());
    }
    smithers_idempotency_key(run_id, metadata.get("nodeId"), metadata.get("iteration"))
}

/// The number the run's call sequence counts on from (Smithers' `seq = (seq ?? 0) + 1`): the
/// metadata's `seq` when it is a non-negative whole number, so that the first call is `seq + 1`;
/// `0` (the first call is 1) when it is missing, `null`, `false` — or any other value
/// (a string, a negative or fractional number), which toolsmith does not count from either.
pub(crate) fn smithers_seq_start(metadata: &Map<String, Value>) -> u64 {
    match metadata.get("seq") {
        Some(Value::Number(n)) => n.as_u64().unwrap_or_else(|| match n.as_f64() {
            // 2.0 is the number 2 to JavaScript.
            Some(f) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => f as u64,
            _ => 0,
        }),
        _ => 0,
    }
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
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), ..) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (.., Some(f)) => js_number(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// JavaScript's `Number.prototype.toString()` for a finite `f64`: the shortest digits that read
/// back as `f`, in plain decimal from 1e-6 up to 1e21 (`2.0` is `2`), else in exponent form
/// with a signed exponent (`1e+21`, `1.5e-7`). serde_json would write `2.0` and `1e21`.
fn js_number(f: f64) -> String {
    if f == 0.0 {
        return "0".to_string();
    }
    let magnitude = f.abs();
    if (1e-6..1e21).contains(&magnitude) {
        // Rust's Display is the shortest round-trip form, never in exponent notation.
        return f.to_string();
    }
    let exponent = format!("{f:e}");
    match exponent.split_once('e') {
        Some((digits, power)) if !power.starts_with('-') => format!("{digits}e+{power}"),
        _ => exponent,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_are_written_as_javascript_writes_them() {
        let key = |iteration: Value| {
            smithers_idempotency_key("r", Some(&json!("n")), Some(&iteration)).unwrap()
        };
        assert_eq!(key(json!(2.0)), "smithers:r:n:2");
        assert_eq!(key(json!(-3)), "smithers:r:n:-3");
        assert_eq!(key(json!(1.5)), "smithers:r:n:1.5");
        assert_eq!(key(json!(0.1)), "smithers:r:n:0.1");
        assert_eq!(key(json!(1e21)), "smithers:r:n:1e+21");
        assert_eq!(key(json!(1.5e-7)), "smithers:r:n:1.5e-7");
        assert_eq!(key(json!(123456789012.0)), "smithers:r:n:123456789012");
        assert_eq!(key(json!(u64::MAX)), format!("smithers:r:n:{}", u64::MAX));
        // A node id is written the same way.
        assert_eq!(
            smithers_idempotency_key("r", Some(&json!(7.0)), None).as_deref(),
            Some("smithers:r:7:0")
        );
    }

    fn metadata(value: Value) -> Map<String, Value> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_callers_own_key_wins_and_an_empty_one_does_not() {
        let key = |v| smithers_context_key("run-1", &metadata(v));
        assert_eq!(
            key(json!({"nodeId": "review", "iteration": 2})).as_deref(),
            Some("smithers:run-1:review:2")
        );
        assert_eq!(
            key(json!({"nodeId": "review", "idempotencyKey": "mine"})).as_deref(),
            Some("mine")
        );
        assert_eq!(
            key(json!({"nodeId": "review", "idempotencyKey": ""})).as_deref(),
            Some("smithers:run-1:review:0")
        );
        assert_eq!(
            key(json!({"idempotencyKey": "mine"})).as_deref(),
            Some("mine")
        );
        assert_eq!(key(json!({"idempotencyKey": 7})), None);
        assert_eq!(key(json!({"nodeId": ""})), None);
        assert_eq!(key(json!({})), None);
    }

    #[test]
    fn the_sequence_counts_on_from_a_whole_seq_and_restarts_otherwise() {
        let start = |v| smithers_seq_start(&metadata(v));
        assert_eq!(start(json!({"seq": 4})), 4);
        assert_eq!(start(json!({"seq": 4.0})), 4);
        for restart in [
            json!({"seq": null}),
            json!({"seq": false}),
            json!({"seq": "3"}),
            json!({"seq": -1}),
            json!({"seq": 1.5}),
            json!({}),
        ] {
            assert_eq!(start(restart.clone()), 0, "{restart}");
        }
    }

    #[test]
    fn falsy_node_ids_give_no_key() {
        for node in [json!(null), json!(false), json!(0), json!(0.0), json!("")] {
            assert_eq!(
                smithers_idempotency_key("r", Some(&node), None),
                None,
                "{node}"
            );
        }
        assert_eq!(smithers_idempotency_key("r", None, None), None);
        assert_eq!(
            smithers_idempotency_key("r", Some(&json!([1, "a"])), Some(&json!({}))).as_deref(),
            Some("smithers:r:1,a:[object Object]")
        );
    }
}
