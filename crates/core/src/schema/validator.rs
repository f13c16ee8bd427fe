use std::fmt;

use serde_json::Value;

/// At most this many violations are reported for one input; the rest add nothing a model needs.
const MAX_ERRORS: usize = 5;

/// A JSON Schema validator, compiled once and reused for every call of a tool.
pub struct SchemaValidator(jsonschema::Validator);

impl SchemaValidator {
    /// Compiles `schema` (draft 2020-12 unless it says otherwise).
    ///
    /// # Errors
    ///
    /// The compiler's message when the schema is not a valid JSON Schema.
    pub fn compile(schema: &Value) -> Result<Self, String> {
        jsonschema::validator_for(schema)
            .map(SchemaValidator)
            .map_err(|e| e.to_string())
    }

    /// Checks `input`, returning up to five violations as `<pointer>: <message>` (the pointer
    /// omitted for the root).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolsmith_core::schema::SchemaValidator;
    ///
    /// let v = SchemaValidator::compile(&json!({
    ///     "type": "object",
    ///     "properties": {"n": {"type": "integer"}},
    ///     "required": ["n"]
    /// })).unwrap();
    /// assert!(v.validate(&json!({"n": 1})).is_ok());
    /// assert_eq!(v.validate(&json!({"n": "x"})).unwrap_err(), ["/n: \"x\" is not of type \"integer\""]);
    /// ```
    pub fn validate(&self, input: &Value) -> Result<(), Vec<String>> {
        if self.0.is_valid(input) {
            return Ok(());
        }
        let errors: Vec<String> = self
            .0
            .iter_errors(input)
            .take(MAX_ERRORS)
            .map(|error| {
                let path = error.instance_path().as_str();
                if path.is_empty() {
                    error.to_string()
                } else {
                    format!("{path}: {error}")
                }
            })
            .collect();
        Err(errors)
    }
}

impl fmt::Debug for SchemaValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SchemaValidator")
    }
}
