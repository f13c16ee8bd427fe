//! [`ToolSpec`]: the model-facing half of a tool.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde_json::Value;

use crate::ToolError;
use crate::schema::{self, SchemaValidator};

/// What the model sees of a tool: its name, description, input JSON Schema, optional output
/// schema, strict flag and input examples.
///
/// The input schema's validator is compiled the first time a call is validated and then shared by
/// every clone of the spec (renamed and prefixed copies included), so validation never recompiles.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::ToolSpec;
///
/// let spec = ToolSpec::new("lookup", json!({
///     "type": "object",
///     "properties": {"id": {"type": "integer"}},
///     "required": ["id"]
/// }))
/// .with_description("Look a record up.")
/// .with_input_examples([json!({"id": 7})]);
///
/// assert!(spec.validate(&json!({"id": 7})).is_ok());
/// assert!(spec.validate(&json!({"id": "seven"})).is_err());
/// assert_eq!(spec.model_description(), "Look a record up.\n\nExamples:\n1. {\"id\":7}");
/// ```
#[derive(Clone)]
pub struct ToolSpec {
    name: Arc<str>,
    description: Option<String>,
    input_schema: Arc<Value>,
    output_schema: Option<Arc<Value>>,
    strict: bool,
    input_examples: Vec<Value>,
    validator: Arc<OnceLock<Result<SchemaValidator, String>>>,
}

impl ToolSpec {
    /// A spec with a raw JSON Schema for its input (an MCP import, a hand-written schema).
    pub fn new(name: impl Into<Arc<str>>, input_schema: Value) -> Self {
        ToolSpec {
            name: name.into(),
            description: None,
            input_schema: Arc::new(input_schema),
            output_schema: None,
            strict: false,
            input_examples: Vec::new(),
            validator: Arc::default(),
        }
    }

    /// A spec whose input schema is derived from `T` with [`schema::schema_for`].
    pub fn for_type<T: JsonSchema>(name: impl Into<Arc<str>>) -> Self {
        Self::new(name, schema::schema_for::<T>())
    }

    /// Sets the description. Without one, the description is the tool's name, as in Smithers.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        let description = description.into();
        self.description = (!description.trim().is_empty()).then_some(description);
        self
    }

    /// Sets a JSON Schema for the tool's output.
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(Arc::new(schema));
        self
    }

    /// Marks the tool strict: providers that support it (OpenAI structured outputs) get the
    /// [strict form](schema::strict) of the schema and guarantee conforming arguments.
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Example inputs, appended to the description the model sees (RadarOS's format).
    pub fn with_input_examples(mut self, examples: impl IntoIterator<Item = Value>) -> Self {
        self.input_examples = examples.into_iter().collect();
        self
    }

    /// The same spec under another name. The compiled validator is shared.
    pub fn renamed(&self, name: impl Into<Arc<str>>) -> Self {
        ToolSpec {
            name: name.into(),
            ..self.clone()
        }
    }

    /// The exact name the model calls the tool by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name as a shared string.
    pub fn shared_name(&self) -> &Arc<str> {
        &self.name
    }

    /// The description, which defaults to the name.
    pub fn description(&self) -> &str {
        self.description.as_deref().unwrap_or(&self.name)
    }

    /// The description as the model sees it: with the input examples appended as
    /// `\n\nExamples:\n1. <json>\n2. <json>`.
    pub fn model_description(&self) -> Cow<'_, str> {
        schema::describe_with_examples(self.description(), &self.input_examples)
    }

    /// The input JSON Schema, as given or derived.
    pub fn input_schema(&self) -> &Arc<Value> {
        &self.input_schema
    }

    /// The output JSON Schema, if any.
    pub fn output_schema(&self) -> Option<&Arc<Value>> {
        self.output_schema.as_ref()
    }

    /// Whether strict mode is requested.
    pub fn strict(&self) -> bool {
        self.strict
    }

    /// The input examples.
    pub fn input_examples(&self) -> &[Value] {
        &self.input_examples
    }

    /// Validates `input` against the input schema.
    ///
    /// Fails with code `INVALID_INPUT` and the message `Invalid arguments: <errors>` when the
    /// input does not conform, and with code `INVALID_SCHEMA` (a [fatal](crate::Disposition)
    /// error, since no model can fix it) when the schema itself does not compile.
    pub fn validate(&self, input: &Value) -> Result<(), ToolError> {
        let validator = self
            .validator
            .get_or_init(|| SchemaValidator::compile(&self.input_schema));
        match validator {
            Ok(validator) => validator.validate(input).map_err(|errors| {
                ToolError::invalid_input(format!("Invalid arguments: {}", errors.join("; ")))
            }),
            Err(message) => Err(ToolError::new(
                "INVALID_SCHEMA",
                format!(
                    "The input schema of tool \"{}\" is not a valid JSON Schema: {message}",
                    self.name
                ),
            )
            .fatal()),
        }
    }
}

impl fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("description", &self.description())
            .field("input_schema", &self.input_schema)
            .field("strict", &self.strict)
            .field("input_examples", &self.input_examples)
            .finish_non_exhaustive()
    }
}
