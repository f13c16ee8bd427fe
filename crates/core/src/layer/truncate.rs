//! RadarOS's smart truncation of a tool result's text, the `truncate` strategy of a
//! [`ResultLimit`](crate::ResultLimit).
//!
//! Text within the limit is returned unchanged. Past it, by the shape of the text:
//!
//! - **a JSON array**: the first items while `2 + Σ(len(item) + 2) ≤ max_chars` (each item's
//!   compact JSON; at least one item), printed as pretty JSON (two-space indent) and, when items
//!   were left out, `\n\n[Showing K of N items — M more omitted]`. The pretty print may itself
//!   exceed the limit: it is kept whole, as in RadarOS, so that it stays valid JSON.
//! - **a JSON object with at least one non-empty array value**: each array cut the same way to
//!   a budget of `max_chars / number of keys`, a key `_<key>_note: "Showing K of N items"`
//!   after each array that was cut, every other value kept; pretty JSON.
//! - **anything else** (a JSON object without arrays, printed pretty first; plain text): cut to
//!   `max_chars` and `\n\n... [truncated — X more chars]` appended, X with en-US thousands
//!   separators (`1,234`).
//!
//! Lengths count characters (Unicode scalar values), where RadarOS counts UTF-16 units; a cut
//! never splits a character.

use std::borrow::Cow;

use serde_json::{Map, Value};

/// `text` as the model may see it under a limit of `max_chars` characters.
///
/// ```
/// use toolsmith_core::layer::truncate;
///
/// assert_eq!(truncate("short", 10), "short");
/// assert_eq!(
///     truncate("[1,2,3,4,5,6,7,8,9,10]", 10),
///     "[\n  1,\n  2\n]\n\n[Showing 2 of 10 items — 8 more omitted]"
/// );
/// assert_eq!(truncate(&"x".repeat(1500), 100), format!("{}\n\n... [truncated — 1,400 more chars]", "x".repeat(100)));
/// ```
pub fn truncate(text: &str, max_chars: usize) -> Cow<'_, str> {
    if chars(text) <= max_chars {
        return Cow::Borrowed(text);
    }
    let parsed = match text.trim_start().as_bytes().first() {
        Some(b'[' | b'{') => serde_json::from_str::<Value>(text).ok(),
        _ => None,
    };
    Cow::Owned(match parsed {
        Some(Value::Array(items)) => {
            let total = items.len();
            let kept = fit(items, max_chars);
            let omitted = total - kept.len();
            let mut out = pretty(&Value::Array(kept));
            if omitted > 0 {
                out.push_str(&format!(
                    "\n\n[Showing {} of {total} items — {omitted} more omitted]",
                    total - omitted
                ));
            }
            out
        }
        Some(Value::Object(object))
            if object
                .values()
                .any(|v| v.as_array().is_some_and(|a| !a.is_empty())) =>
        {
            let budget = max_chars / object.len();
            let mut out = Map::new();
            for (key, value) in object {
                match value {
                    Value::Array(items) if !items.is_empty() => {
                        let total = items.len();
                        let kept = fit(items, budget);
                        let shown = kept.len();
                        out.insert(key.clone(), Value::Array(kept));
                        if shown < total {
                            out.insert(
                                format!("_{key}_note"),
                                Value::from(format!("Showing {shown} of {total} items")),
                            );
                        }
                    }
                    other => {
                        out.insert(key, other);
                    }
                }
            }
            pretty(&Value::Object(out))
        }
        Some(object @ Value::Object(_)) => cut(&pretty(&object), max_chars),
        _ => cut(text, max_chars),
    })
}

/// The first items whose compact JSON fits `budget` as RadarOS counts it (brackets 2, each
/// item its length + 2), at least one.
fn fit(items: Vec<Value>, budget: usize) -> Vec<Value> {
    let mut used = 2;
    let mut kept = Vec::new();
    for item in items {
        let len = chars(&item.to_string()) + 2;
        if !kept.is_empty() && used + len > budget {
            break;
        }
        used += len;
        kept.push(item);
    }
    kept
}

/// Cut to `max_chars` characters, with the count of those left out.
fn cut(text: &str, max_chars: usize) -> String {
    let total = chars(text);
    if total <= max_chars {
        return text.to_string();
    }
    let end = text
        .char_indices()
        .nth(max_chars)
        .map_or(text.len(), |(i, _)| i);
    format!(
        "{}\n\n... [truncated — {} more chars]",
        &text[..end],
        thousands(total - max_chars)
    )
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// `1234567` → `1,234,567`, as `toLocaleString("en-US")` prints it.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn within_the_limit_nothing_changes_not_even_the_spacing() {
        assert_eq!(truncate("{\"a\":[1,2]}", 11), "{\"a\":[1,2]}");
        assert_eq!(truncate("", 0), "");
    }

    #[test]
    fn arrays_keep_the_items_that_fit_and_say_how_many_were_left_out() {
        let items: Vec<Value> = (0..892).map(|i| json!({"id": i})).collect();
        let text = Value::Array(items).to_string();
        let out = truncate(&text, 200);
        // {"id":N} is 8 chars for N < 10, 9 for N < 100: 2 + 10·10 + 11·8 = 190 ≤ 200 < 201.
        assert!(
            out.ends_with("\n\n[Showing 18 of 892 items — 874 more omitted]"),
            "{out}"
        );
        let json: Value = serde_json::from_str(out.split("\n\n[").next().unwrap()).unwrap();
        assert_eq!(json.as_array().unwrap().len(), 18);
        assert!(out.starts_with("[\n  {\n    \"id\": 0\n  },"));
        // One item always stays, however long.
        let long = json!([vec!["x"; 50], 1]).to_string();
        let one = truncate(&long, 10);
        assert!(one.contains("[Showing 1 of 2 items — 1 more omitted]"));
    }

    #[test]
    fn objects_cut_each_array_to_its_share_and_note_it() {
        let text = json!({
            "rows": (0..100).collect::<Vec<_>>(),
            "total": 100,
            "tags": ["a", "b"],
        })
        .to_string();
        let out = truncate(&text, 60);
        let value: Value = serde_json::from_str(&out).unwrap();
        // 60 / 3 keys = 20: 2 + (1+2)·6 = 20 for 0..=5.
        assert_eq!(value["rows"], json!([0, 1, 2, 3, 4, 5]));
        assert_eq!(value["_rows_note"], "Showing 6 of 100 items");
        assert_eq!(value["total"], 100);
        assert_eq!(value["tags"], json!(["a", "b"]));
        assert!(value.get("_tags_note").is_none());
        let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["rows", "_rows_note", "total", "tags"]);
    }

    #[test]
    fn objects_without_arrays_and_text_are_cut_with_the_count_left_out() {
        let text = json!({"a": "x".repeat(3000)}).to_string();
        let out = truncate(&text, 1000);
        let pretty_len = chars(&pretty(&serde_json::from_str(&text).unwrap()));
        assert!(out.starts_with("{\n  \"a\": \"xxx"));
        assert!(out.ends_with(&format!(
            "\n\n... [truncated — {} more chars]",
            thousands(pretty_len - 1000)
        )));
        assert_eq!(
            truncate("héllo wörld", 5),
            "héllo\n\n... [truncated — 6 more chars]"
        );
        // Not JSON after all: plain text.
        assert_eq!(truncate("[oops", 2), "[o\n\n... [truncated — 3 more chars]");
    }

    #[test]
    fn thousands_separators_as_en_us() {
        for (n, s) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (123_456, "123,456"),
            (1_234_567, "1,234,567"),
        ] {
            assert_eq!(thousands(n), s);
        }
    }
}
