//! Pieces every request builder shares: decimal settings, data URLs, a user message's content.

use serde_json::{Value, json};
use toolsmith_core::Part;

/// An `f32` setting as the decimal it was written as: `0.9`, not the `0.8999999761581421` a
/// plain widening to `f64` would send.
///
/// ```
/// # use toolsmith_providers::request_parts::decimal;
/// assert_eq!(decimal(0.9).to_string(), "0.9");
/// ```
pub fn decimal(value: f32) -> Value {
    let wide = value.to_string().parse().unwrap_or(f64::from(value));
    serde_json::Number::from_f64(wide).map_or(Value::Null, Value::Number)
}

/// Whether a file part's data is already a URL (`http(s):` or `data:`) rather than base64.
pub fn is_url(data: &str) -> bool {
    data.starts_with("http://") || data.starts_with("https://") || data.starts_with("data:")
}

/// The file as a URL: as is when it is one, else a `data:` URL of the base64 data.
pub fn data_url(media_type: &str, data: &str) -> String {
    if is_url(data) {
        data.to_string()
    } else {
        format!("data:{media_type};base64,{data}")
    }
}

/// A user message's content for the OpenAI wires: a plain string when it is only text, else
/// content parts with text as `{"type": text_type, "text": …}` and files through `file_part`.
/// A file `file_part` cannot carry is left out with a warning naming the `wire`. `None` when the
/// message has neither text nor files.
pub fn user_content(
    parts: &[Part],
    text_type: &str,
    wire: &str,
    file_part: fn(&str, &str, Option<&str>) -> Option<Value>,
    warnings: &mut Vec<String>,
) -> Option<Value> {
    let relevant: Vec<&Part> = parts
        .iter()
        .filter(|p| matches!(p, Part::Text { .. } | Part::File { .. }))
        .collect();
    if relevant.is_empty() {
        return None;
    }
    if relevant.iter().all(|p| matches!(p, Part::Text { .. })) {
        let text: String = relevant
            .iter()
            .filter_map(|p| match p {
                Part::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        return Some(json!(text));
    }
    let mut content = Vec::new();
    for part in relevant {
        match part {
            Part::Text { text, .. } => content.push(json!({"type": text_type, "text": text})),
            Part::File {
                media_type,
                data,
                filename,
            } => match file_part(media_type, data, filename.as_deref()) {
                Some(part) => content.push(part),
                None => warnings.push(format!(
                    "A {media_type} file cannot be sent over the {wire} wire; it was left out."
                )),
            },
            _ => {}
        }
    }
    Some(Value::Array(content))
}
