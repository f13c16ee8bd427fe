use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The JSON Schema (draft 2020-12) of `T`, with subschemas inlined where possible and without the
/// `$schema` and root `title` keywords, which tell a model nothing.
///
/// Property order follows the field order of `T`: small models pick the right tool markedly
/// more often when properties keep their declared order.
///
/// ```
/// use schemars::JsonSchema;
/// use serde_json::json;
///
/// #[derive(JsonSchema)]
/// #[allow(dead_code)]
/// struct Search {
///     /// What to look for.
///     query: String,
///     limit: Option<u32>,
/// }
///
/// let schema = toolsmith_core::schema::schema_for::<Search>();
/// assert_eq!(schema["required"], json!(["query"]));
/// assert_eq!(schema["properties"]["query"]["description"], "What to look for.");
/// assert!(schema.get("$schema").is_none());
/// ```
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        map.shift_remove("$schema");
        map.shift_remove("title");
    }
    schema
}
