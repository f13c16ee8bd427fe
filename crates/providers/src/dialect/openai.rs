//! The OpenAI dialect (Chat Completions and Responses function tools).

use serde_json::Value;

use super::{Recursion, SchemaDialect, inline_refs, strip_keywords};

/// Keywords that describe a schema without constraining it (as in
/// [`slim`](toolsmith_core::schema::slim); `description` is kept).
const METADATA: &[&str] = &["$schema", "$id", "$comment", "title", "default", "examples"];

/// OpenAI function-tool schemas.
///
/// 1. **References.** Local `$ref`s to non-recursive definitions are inlined and the unused
///    `$defs`/`definitions` dropped. OpenAI accepts `$defs`, but inlined schemas read better to
///    the model and stay clear of strict mode's nesting-depth and definition limits. References
///    to *recursive* types (which cannot be inlined) are kept, with just the definitions they
///    need, which strict mode supports (`"$ref": "#"` for root recursion included).
/// 2. **Metadata.** `$schema`, `$id`, `$comment`, `title`, `default` and `examples` are removed
///    at every schema level (like [`slim`](toolsmith_core::schema::slim), but keeping the order
///    of the remaining keywords); `description` stays.
/// 3. **Strict.** With `strict`, [`toolsmith_core::schema::strict`] closes every object
///    (`additionalProperties: false`) and makes every property required, optional ones
///    nullable. Free-form maps are left as they are (OpenAI rejects them in strict mode; the
///    caller should not request strict for such tools).
///
/// Nothing is rejected.
///
/// ```
/// use serde_json::json;
/// use toolsmith_providers::dialect::{OpenAi, SchemaDialect};
///
/// let schema = json!({
///     "type": "object",
///     "title": "Search",
///     "properties": {
///         "q": {"type": "string", "description": "What to look for."},
///         "page": {"$ref": "#/$defs/Page"}
///     },
///     "required": ["q"],
///     "$defs": {"Page": {"type": "integer", "default": 1}}
/// });
/// assert_eq!(
///     OpenAi.transform(&schema, true),
///     json!({
///         "type": "object",
///         "properties": {
///             "q": {"type": "string", "description": "What to look for."},
///             "page": {"type": ["integer", "null"]}
///         },
///         "required": ["q", "page"],
///         "additionalProperties": false
///     })
/// );
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenAi;

impl SchemaDialect for OpenAi {
    fn name(&self) -> &'static str {
        "openai"
    }

    fn transform(&self, schema: &Value, strict: bool) -> Value {
        let mut out = inline_refs(schema, Recursion::Keep);
        strip_keywords(&mut out, METADATA);
        if strict {
            toolsmith_core::schema::strict(&mut out);
        }
        out
    }
}
