//! Preparing a tool call: lookup, parsing, validation, kind. Calls that cannot run get their
//! error result here and never reach a layer or a tool.

use serde_json::{Map, Value};
use toolsmith_core::schema::{json_type, strip_strict_nulls};
use toolsmith_core::{ModelToolCall, Pause, PauseKind, SharedTool, ToolError, ToolKind, Toolset};

/// What the loop does with a prepared call.
pub(crate) enum Action {
    /// Run it through the layers.
    Run(SharedTool),
    /// It cannot run: this is its result.
    Fail(ToolError),
    /// It waits for the caller.
    Pause(Box<Pause>),
}

/// A call ready for execution.
pub(crate) struct PreparedCall {
    pub(crate) id: String,
    pub(crate) name: String,
    /// The input as recorded in the thread and passed to the tool: `{}` when it did not parse or
    /// validate, so that every provider accepts the history.
    pub(crate) input: Value,
    /// Whether the input failed to parse or validate, or the tool is unknown.
    pub(crate) invalid: bool,
    pub(crate) action: Action,
}

fn empty() -> Value {
    Value::Object(Map::new())
}

/// Parses the model's argument text: empty text is `{}`; anything but an object is an error.
fn parse_input(text: &str) -> Result<Value, ToolError> {
    if text.trim().is_empty() {
        return Ok(empty());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(ToolError::invalid_input(format!(
            "Invalid arguments: expected a JSON object, got {}",
            json_type(&other)
        ))),
        Err(e) => Err(ToolError::invalid_input(format!(
            "Invalid arguments: the input is not valid JSON ({e})"
        ))),
    }
}

/// `Tool "<name>" not found. Available tools: a, b.` or, with none, `Tool "<name>" not found. No
/// tools are available.`: RadarOS's text, then the list of tools the Deuz SDK gives the model.
pub(crate) fn unknown_tool(name: &str, tools: &Toolset) -> ToolError {
    let message = if tools.is_empty() {
        format!("Tool \"{name}\" not found. No tools are available.")
    } else {
        let names: Vec<&str> = tools.names().collect();
        format!(
            "Tool \"{name}\" not found. Available tools: {}.",
            names.join(", ")
        )
    };
    ToolError::new("UNKNOWN_TOOL", message)
}

/// Prepares one call from the model.
pub(crate) fn prepare(call: &ModelToolCall, tools: &Toolset) -> PreparedCall {
    let mut prepared = PreparedCall {
        id: call.tool_call_id.clone(),
        name: call.tool_name.clone(),
        input: empty(),
        invalid: true,
        action: Action::Fail(ToolError::msg("")),
    };
    let parsed = parse_input(&call.input);
    let Some(tool) = tools.get(&call.tool_name) else {
        prepared.input = parsed.unwrap_or_else(|_| empty());
        prepared.action = Action::Fail(unknown_tool(&call.tool_name, tools));
        return prepared;
    };
    // A provider-executed tool can never run here, whatever its arguments.
    if let ToolKind::Provider(_) = tool.kind() {
        prepared.invalid = parsed.is_err();
        prepared.input = parsed.unwrap_or_else(|_| empty());
        prepared.action = Action::Fail(ToolError::new("NO_EXECUTOR", "No server-side executor."));
        return prepared;
    }
    let mut input = match parsed {
        Ok(input) => input,
        Err(e) => {
            prepared.action = Action::Fail(e);
            return prepared;
        }
    };
    if tool.spec().strict() {
        strip_strict_nulls(tool.spec().input_schema(), &mut input);
    }
    if let Err(e) = tool.spec().validate(&input) {
        prepared.action = Action::Fail(e);
        return prepared;
    }
    prepared.invalid = false;
    prepared.action = match tool.kind() {
        ToolKind::Client => Action::Pause(Box::new(Pause::new(
            PauseKind::ClientTool,
            &call.tool_call_id,
            &call.tool_name,
            input.clone(),
        ))),
        _ => Action::Run(tool.clone()),
    };
    prepared.input = input;
    prepared
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use toolsmith_core::{ToolContext, ToolOutput, ToolSpec, async_trait};

    struct Noop(ToolSpec);

    #[async_trait]
    impl toolsmith_core::Tool for Noop {
        fn spec(&self) -> &ToolSpec {
            &self.0
        }
        async fn call(&self, _: Value, _: &ToolContext) -> Result<ToolOutput, ToolError> {
            Ok(ToolOutput::text("ok"))
        }
    }

    fn tools() -> Toolset {
        Toolset::new()
            .with(Noop(ToolSpec::new(
                "get",
                json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}),
            )))
            .with(Noop(ToolSpec::new("list", json!({"type": "object"}))))
    }

    fn error_of(p: &PreparedCall) -> &ToolError {
        match &p.action {
            Action::Fail(e) => e,
            _ => panic!("expected a failure"),
        }
    }

    #[test]
    fn empty_argument_text_is_an_empty_object() {
        let p = prepare(&ModelToolCall::new("c", "list", "  "), &tools());
        assert!(matches!(p.action, Action::Run(_)));
        assert_eq!(p.input, json!({}));
        assert!(!p.invalid);
    }

    #[test]
    fn unknown_tools_list_the_available_ones() {
        let p = prepare(&ModelToolCall::new("c", "nope", "{}"), &tools());
        assert_eq!(
            error_of(&p).message(),
            "Tool \"nope\" not found. Available tools: get, list."
        );
        assert_eq!(error_of(&p).code(), "UNKNOWN_TOOL");
        let p = prepare(&ModelToolCall::new("c", "nope", "{}"), &Toolset::new());
        assert_eq!(
            error_of(&p).message(),
            "Tool \"nope\" not found. No tools are available."
        );
    }

    #[test]
    fn malformed_json_is_recorded_as_an_empty_object() {
        let p = prepare(&ModelToolCall::new("c", "get", "{\"id\": 1"), &tools());
        assert!(p.invalid);
        assert_eq!(p.input, json!({}));
        assert_eq!(error_of(&p).code(), "INVALID_INPUT");
        assert!(
            error_of(&p)
                .message()
                .starts_with("Invalid arguments: the input is not valid JSON")
        );
    }

    #[test]
    fn non_object_json_is_invalid() {
        let p = prepare(&ModelToolCall::new("c", "list", "[1]"), &tools());
        assert_eq!(
            error_of(&p).message(),
            "Invalid arguments: expected a JSON object, got an array"
        );
    }

    #[test]
    fn schema_violations_carry_the_validator_message() {
        let p = prepare(&ModelToolCall::new("c", "get", r#"{"id": "x"}"#), &tools());
        assert!(p.invalid);
        assert_eq!(p.input, json!({}));
        assert_eq!(
            error_of(&p).message(),
            "Invalid arguments: /id: \"x\" is not of type \"integer\""
        );
        let p = prepare(&ModelToolCall::new("c", "get", "{}"), &tools());
        assert_eq!(
            error_of(&p).message(),
            "Invalid arguments: \"id\" is a required property"
        );
    }
}
