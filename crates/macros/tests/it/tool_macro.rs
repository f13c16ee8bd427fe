//! Tests of `#[tool]` against `toolsmith-core`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolsmith_core::{Concurrency, IntoToolOutput, Json, Tool, ToolContext, ToolError, ToolOutput};
use toolsmith_macros::tool;

/// Add two integers.
///
/// More lines of the doc comment are part of the description too.
#[tool(crate = toolsmith_core)]
async fn add(
    #[arg(description = "The first addend.")] a: i64,
    #[arg(description = "The second addend.")] b: i64,
) -> Result<i64, ToolError> {
    Ok(a + b)
}

/// Multiply two numbers (sync, plain return type).
#[tool(crate = toolsmith_core)]
fn multiply(x: f64, y: f64) -> f64 {
    x * y
}

#[tool(crate = toolsmith_core, name = "shout", description = "  Upper-case a text.  ")]
/// This doc comment is overridden.
pub fn shout_impl(text: String) -> String {
    text.to_uppercase()
}

#[tool(crate = toolsmith_core)]
fn no_docs() {}

/// Where a city is.
#[derive(Debug, Serialize)]
struct Location {
    city: String,
    lat: f64,
}

/// A nested parameter type.
#[derive(Debug, Deserialize, JsonSchema)]
struct Filter {
    /// Minimum population.
    min_population: u64,
}

/// Locate a city.
#[tool(crate = toolsmith_core)]
async fn locate(
    #[arg(description = "The city's name.")] city: String,
    filter: Option<Filter>,
    country: Option<String>,
) -> Result<Json<Location>, ToolError> {
    let min = filter.map_or(0, |f| f.min_population);
    let city = match country {
        Some(country) => format!("{city}, {country}"),
        None => city,
    };
    Ok(Json(Location {
        city,
        lat: if min > 0 { min as f64 } else { 48.85 },
    }))
}

/// Report the call's context.
#[tool(crate = toolsmith_core)]
async fn whoami(cx: &ToolContext, prefix: String, owned: ToolContext) -> String {
    format!("{prefix}{}:{}", cx.tool_name(), owned.run_id())
}

/// Always fails.
#[tool(crate = toolsmith_core)]
async fn fail(reason: String) -> Result<(), ToolError> {
    Err(ToolError::new("TOOL_BROKEN", reason))
}

/// Fails with an error that converts into `ToolError`.
#[tool(crate = toolsmith_core)]
fn read_missing() -> std::io::Result<String> {
    std::fs::read_to_string("/definitely/not/here")
}

/// Returns an opaque output type.
#[tool(crate = toolsmith_core)]
fn opaque(ok: bool) -> Result<impl IntoToolOutput, impl Into<ToolError>> {
    if ok {
        Ok("opaque")
    } else {
        Err(ToolError::msg("not ok"))
    }
}

/// Sends something.
#[tool(crate = toolsmith_core, side_effect, timeout_ms = 5000, exclusive)]
async fn send_mail(to: String) -> String {
    format!("sent to {to}")
}

/// Idempotent side effect, strict spec.
#[tool(crate = "toolsmith_core", side_effect, idempotent = true, strict)]
async fn upsert(key: String, value: Value) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::json(json!({ key: value })))
}

/// A module-level tool with a raw identifier parameter and a `mut` binding.
#[tool(crate = toolsmith_core)]
fn get_http_status(r#type: String, mut code: u16) -> String {
    code += 1;
    format!("{type}:{code}", type = r#type)
}

async fn call(tool: &dyn Tool, input: Value) -> Result<ToolOutput, ToolError> {
    let cx = ToolContext::for_test(tool.spec().name());
    tool.call(input, &cx).await
}

#[test]
fn struct_is_named_in_pascal_case() {
    let tools: [&dyn Tool; 4] = [&Add, &GetHttpStatus, &ShoutImpl, &ReadMissing];
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name()).collect();
    assert_eq!(names, ["add", "get_http_status", "shout", "read_missing"]);
}

#[test]
fn description_comes_from_the_doc_comment() {
    assert_eq!(
        Add.spec().description(),
        "Add two integers.\n\nMore lines of the doc comment are part of the description too."
    );
    assert_eq!(
        Multiply.spec().description(),
        "Multiply two numbers (sync, plain return type)."
    );
}

#[test]
fn name_and_description_overrides() {
    assert_eq!(ShoutImpl.spec().name(), "shout");
    assert_eq!(ShoutImpl.spec().description(), "Upper-case a text.");
}

#[test]
fn description_defaults_to_the_name() {
    assert_eq!(NoDocs.spec().name(), "no_docs");
    assert_eq!(NoDocs.spec().description(), "no_docs");
}

#[test]
fn schema_keeps_parameter_order_and_descriptions() {
    let schema = Add.spec().input_schema();
    assert_eq!(schema["type"], "object");
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["a", "b"]);
    assert_eq!(schema["required"], json!(["a", "b"]));
    assert_eq!(
        schema["properties"]["a"]["description"],
        "The first addend."
    );
    assert_eq!(
        schema["properties"]["b"]["description"],
        "The second addend."
    );
    assert_eq!(schema["properties"]["a"]["type"], "integer");

    let schema = Locate.spec().input_schema();
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["city", "filter", "country"]);
    assert_eq!(schema["required"], json!(["city"]));
    assert_eq!(
        schema["properties"]["city"]["description"],
        "The city's name."
    );
    let filter = schema["properties"]["filter"].to_string();
    assert!(filter.contains("min_population"), "{filter}");
    assert!(filter.contains("Minimum population."), "{filter}");
}

#[test]
fn context_parameters_are_not_in_the_schema() {
    let schema = Whoami.spec().input_schema();
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["prefix"]);
    assert_eq!(schema["required"], json!(["prefix"]));
}

#[test]
fn a_function_without_parameters_takes_an_empty_object() {
    let schema = NoDocs.spec().input_schema();
    assert_eq!(schema["type"], "object");
    assert!(NoDocs.spec().validate(&json!({})).is_ok());
}

#[test]
fn schema_validates_raw_identifiers_by_their_plain_name() {
    let schema = GetHttpStatus.spec().input_schema();
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "code"]);
}

#[test]
fn the_function_stays_callable() {
    assert_eq!(multiply(2.0, 3.0), 6.0);
    assert_eq!(shout_impl("hi".into()), "HI");
    assert_eq!(get_http_status("x".into(), 1), "x:2");
}

#[tokio::test]
async fn async_function_with_result() {
    assert_eq!(add(1, 2).await.unwrap(), 3);
    let out = call(&Add, json!({"a": 2, "b": 40})).await.unwrap();
    assert_eq!(out.value, json!(42));
}

#[tokio::test]
async fn sync_function_with_plain_return() {
    let out = call(&Multiply, json!({"x": 1.5, "y": 4})).await.unwrap();
    assert_eq!(out.value, json!(6.0));
    let out = call(&ShoutImpl, json!({"text": "hey"})).await.unwrap();
    assert_eq!(out.value, json!("HEY"));
    assert_eq!(out.model.to_text(), "HEY");
}

#[tokio::test]
async fn no_return_type_is_ok() {
    let out = call(&NoDocs, json!({})).await.unwrap();
    assert_eq!(out, ToolOutput::text("ok"));
}

#[tokio::test]
async fn json_return_and_omitted_option() {
    let out = call(&Locate, json!({"city": "Paris"})).await.unwrap();
    assert_eq!(out.value, json!({"city": "Paris", "lat": 48.85}));

    let out = call(
        &Locate,
        json!({"city": "Paris", "filter": {"min_population": 1}, "country": "FR"}),
    )
    .await
    .unwrap();
    assert_eq!(out.value, json!({"city": "Paris, FR", "lat": 1.0}));
}

#[tokio::test]
async fn impl_trait_return_types() {
    let out = call(&Opaque, json!({"ok": true})).await.unwrap();
    assert_eq!(out.value, json!("opaque"));
    let err = call(&Opaque, json!({"ok": false})).await.unwrap_err();
    assert_eq!(err.code(), ToolError::GENERIC);
}

#[tokio::test]
async fn context_is_passed() {
    let out = call(&Whoami, json!({"prefix": ">"})).await.unwrap();
    assert_eq!(out.value, json!(">whoami:test-run"));
}

#[tokio::test]
async fn raw_identifier_parameter() {
    let out = call(&GetHttpStatus, json!({"type": "t", "code": 199}))
        .await
        .unwrap();
    assert_eq!(out.value, json!("t:200"));
}

#[tokio::test]
async fn value_parameter_and_tool_output_return() {
    let out = call(&Upsert, json!({"key": "k", "value": [1, 2]}))
        .await
        .unwrap();
    assert_eq!(out.value, json!({"k": [1, 2]}));
}

#[tokio::test]
async fn invalid_input_is_an_invalid_input_error() {
    let err = call(&Add, json!({"a": "one", "b": 2})).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(
        err.message().starts_with("Invalid arguments:"),
        "{}",
        err.message()
    );

    let err = call(&Add, json!({"a": 1})).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
    assert!(
        err.message().contains("missing field `b`"),
        "{}",
        err.message()
    );

    let err = call(&NoDocs, json!("not an object")).await.unwrap_err();
    assert_eq!(err.code(), "INVALID_INPUT");
}

#[tokio::test]
async fn tool_errors_propagate_with_their_code() {
    let err = call(&Fail, json!({"reason": "out of order"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TOOL_BROKEN");
    assert_eq!(err.message(), "out of order");

    let err = call(&ReadMissing, json!({})).await.unwrap_err();
    assert_eq!(err.code(), "TOOL_IO_ERROR");
}

#[test]
fn default_meta_without_options() {
    let meta = Add.meta();
    assert!(!meta.side_effect);
    assert!(meta.is_idempotent());
    assert_eq!(meta.concurrency, Concurrency::Shared);
    assert_eq!(meta.timeout, None);
    assert!(!Add.spec().strict());
}

#[test]
fn meta_options() {
    let meta = SendMail.meta();
    assert!(meta.side_effect);
    assert!(!meta.is_idempotent());
    assert_eq!(meta.concurrency, Concurrency::Exclusive);
    assert_eq!(meta.timeout, Some(Duration::from_millis(5000)));
    assert!(!SendMail.spec().strict());

    let meta = Upsert.meta();
    assert!(meta.side_effect);
    assert!(meta.is_idempotent());
    assert_eq!(meta.concurrency, Concurrency::Shared);
    assert_eq!(meta.timeout, None);
    assert!(Upsert.spec().strict());
}

#[test]
fn spec_and_meta_are_built_once() {
    assert!(std::ptr::eq(Add.spec(), Add.spec()));
    assert!(std::ptr::eq(SendMail.meta(), SendMail.meta()));
}

#[test]
fn structs_are_plain_values() {
    let tool = Add;
    let copy = tool;
    assert_eq!(format!("{copy:?}"), "Add");
    let _: Add = Default::default();
}
