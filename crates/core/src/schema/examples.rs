use std::borrow::Cow;

use serde_json::Value;

/// The description with input examples appended in RadarOS's format:
/// `<description>\n\nExamples:\n1. <json>\n2. <json>`. Without examples, the description as is.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::schema::describe_with_examples;
///
/// assert_eq!(describe_with_examples("Add.", &[]), "Add.");
/// assert_eq!(
///     describe_with_examples("Add.", &[json!({"a": 1}), json!({"a": 2})]),
///     "Add.\n\nExamples:\n1. {\"a\":1}\n2. {\"a\":2}"
/// );
/// ```
pub fn describe_with_examples<'a>(description: &'a str, examples: &[Value]) -> Cow<'a, str> {
    if examples.is_empty() {
        return Cow::Borrowed(description);
    }
    let mut out = format!("{description}\n\nExamples:");
    for (i, example) in examples.iter().enumerate() {
        out.push_str(&format!("\n{}. {example}", i + 1));
    }
    Cow::Owned(out)
}
