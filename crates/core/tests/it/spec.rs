//! Tool specs, typed tools and errors.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolsmith_core::{
    Disposition, IntoToolOutput, Json, ModelOutput, Tool, ToolContext, ToolError, ToolMeta,
    ToolSpec, from_fn,
};

#[test]
fn the_description_defaults_to_the_name() {
    let spec = ToolSpec::new("lookup", json!({"type": "object"}));
    assert_eq!(spec.description(), "lookup");
    assert_eq!(spec.clone().with_description("   ").description(), "lookup");
    assert_eq!(spec.with_description("Find it.").description(), "Find it.");
}

#[test]
fn an_invalid_schema_is_a_fatal_error_naming_the_tool() {
    let spec = ToolSpec::new("broken", json!({"type": "no-such-type"}));
    let err = spec.validate(&json!({})).unwrap_err();
    assert_eq!(err.code(), "INVALID_SCHEMA");
    assert!(err.is_fatal());
    assert!(
        err.message()
            .starts_with("The input schema of tool \"broken\" is not a valid JSON Schema")
    );
}

#[test]
fn validation_reports_at_most_five_violations_with_their_paths() {
    let spec = ToolSpec::new(
        "many",
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"},
                           "d": {"type": "integer"}, "e": {"type": "integer"}, "f": {"type": "integer"}}
        }),
    );
    let err = spec
        .validate(&json!({"a": "x", "b": "x", "c": "x", "d": "x", "e": "x", "f": "x"}))
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert_eq!(err.message().matches("is not of type").count(), 5);
    assert!(
        err.message()
            .starts_with("Invalid arguments: /a: \"x\" is not of type \"integer\"")
    );
}

#[derive(Deserialize, JsonSchema)]
struct Point {
    /// Horizontal.
    x: i32,
    y: Option<i32>,
}

#[tokio::test]
async fn typed_tools_derive_their_schema_and_deserialise_their_input() {
    let tool = from_fn("norm", "Manhattan norm.", |p: Point, _cx| async move {
        Ok::<_, ToolError>(p.x.abs() + p.y.unwrap_or(0).abs())
    });
    let schema = tool.spec().input_schema();
    assert_eq!(schema["properties"]["x"]["description"], "Horizontal.");
    assert_eq!(schema["required"], json!(["x"]));
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["x", "y"], "property order follows field order");

    let cx = ToolContext::for_test("norm");
    let out = tool.call(json!({"x": -3, "y": 4}), &cx).await.unwrap();
    assert_eq!(out.value, json!(7));
    assert_eq!(out.model, ModelOutput::json(json!(7)));

    let err = tool.call(json!({"x": "three"}), &cx).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(err.message().starts_with("Invalid arguments:"));
}

#[test]
fn outputs_convert_as_documented() {
    assert_eq!(
        ().into_tool_output().unwrap().model,
        ModelOutput::text("ok")
    );
    assert_eq!(
        "hi".into_tool_output().unwrap().model,
        ModelOutput::text("hi")
    );
    assert_eq!(
        json!("s").into_tool_output().unwrap().model,
        ModelOutput::text("s")
    );
    assert_eq!(true.into_tool_output().unwrap().value, json!(true));
    let out = Json(vec![1, 2]).into_tool_output().unwrap();
    assert_eq!(out.model, ModelOutput::json(json!([1, 2])));
}

#[test]
fn idempotent_defaults_to_not_side_effect() {
    assert!(ToolMeta::new().is_idempotent());
    assert!(!ToolMeta::new().side_effect(true).is_idempotent());
    assert!(
        ToolMeta::new()
            .side_effect(true)
            .idempotent(true)
            .is_idempotent()
    );
}

struct Undo;

#[toolsmith_core::async_trait]
impl toolsmith_core::Revert for Undo {
    async fn revert(&self, _: &serde_json::Value, _: &ToolContext) -> Result<(), ToolError> {
        Ok(())
    }
}

#[test]
fn revert_requires_a_side_effect() {
    let err = ToolMeta::new().revert(Undo).unwrap_err();
    assert_eq!(err.code(), "INVALID_TOOL");
    assert!(
        ToolMeta::new()
            .side_effect(true)
            .revert(Undo)
            .unwrap()
            .revert
            .is_some()
    );
}

#[test]
fn operator_detail_stays_out_of_display_debug_and_the_stream() {
    let err = ToolError::new("DB_DOWN", "The database is unavailable.")
        .with_operator_detail("postgres://admin:hunter2@db/prod refused");
    assert_eq!(err.to_string(), "The database is unavailable.");
    assert!(!format!("{err:?}").contains("hunter2"));
    let info = toolsmith_core::ErrorInfo::from(&err);
    assert!(!serde_json::to_string(&info).unwrap().contains("hunter2"));
    assert_eq!(
        err.operator_detail(),
        Some("postgres://admin:hunter2@db/prod refused")
    );
    assert_eq!(err.disposition(), &Disposition::RespondToModel);
    assert_eq!(
        std::mem::size_of::<ToolError>(),
        std::mem::size_of::<usize>()
    );
}

#[test]
fn approval_predicates_fail_closed() {
    let cx = ToolContext::for_test("t");
    let approval = toolsmith_core::Approval::when(|input, _| {
        input["amount"]
            .as_f64()
            .map(|a| a > 100.0)
            .ok_or_else(|| ToolError::msg("no amount"))
    });
    // The tool's predicate decides whatever the agent's policy says.
    for policy_names in [false, true] {
        assert!(!approval.required(&json!({"amount": 5}), &cx, policy_names));
        assert!(approval.required(&json!({"amount": 500}), &cx, policy_names));
        assert!(
            approval.required(&json!({}), &cx, policy_names),
            "a failing predicate requires approval"
        );
    }
    // A tool that sets nothing leaves it to the policy.
    let unset = toolsmith_core::Approval::default();
    assert_eq!(unset.decide(&json!({}), &cx), None);
    assert!(unset.required(&json!({}), &cx, true));
    assert!(!unset.required(&json!({}), &cx, false));
}
