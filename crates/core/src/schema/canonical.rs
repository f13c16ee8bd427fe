use serde_json::Value;

/// JSON text with object keys sorted at every level and no whitespace: equal values give equal
/// text whatever order their keys arrived in.
///
/// RadarOS sorted only the top-level keys and, through a quirk of `JSON.stringify`, dropped
/// nested keys that were not also top-level names, so calls that differed in nested fields could
/// collide; this sorts every level and drops nothing.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::schema::canonical_json;
///
/// assert_eq!(
///     canonical_json(&json!({"b": 1, "a": {"d": [2, {"f": 1, "e": 0}], "c": null}})),
///     r#"{"a":{"c":null,"d":[2,{"e":0,"f":1}]},"b":1}"#
/// );
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The key identifying a call by tool name and canonical arguments: `<name>\u{0}<canonical json>`.
/// The NUL separator cannot occur in a tool name, so no two distinct calls share a key.
pub fn canonical_key(tool_name: &str, input: &Value) -> String {
    format!("{tool_name}\u{0}{}", canonical_json(input))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            "[a-z\"\\\\]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec(("[a-d]{1,2}", inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn reversed_keys(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .rev()
                    .map(|(k, v)| (k.clone(), reversed_keys(v)))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(reversed_keys).collect()),
            other => other.clone(),
        }
    }

    proptest! {
        #[test]
        fn key_order_never_matters(value in arb_json()) {
            prop_assert_eq!(canonical_json(&value), canonical_json(&reversed_keys(&value)));
        }

        #[test]
        fn canonical_text_parses_back_to_the_same_value(value in arb_json()) {
            let text = canonical_json(&value);
            let parsed: Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(parsed, value);
        }

        #[test]
        fn distinct_values_get_distinct_keys(a in arb_json(), b in arb_json()) {
            prop_assume!(a != b);
            prop_assert_ne!(canonical_key("t", &a), canonical_key("t", &b));
        }
    }
}
