//! Argument text no model input can use to abort the process: nesting deeper than serde_json's
//! recursion limit (128) is an `INVALID_INPUT` result for that call, and the run goes on.

use crate::common::*;
use schemars::JsonSchema;
use serde::Deserialize;
use toolsmith_core::{ToolError, from_fn};
use toolsmith_providers::{ScriptedCall, Turn};

#[derive(Deserialize, JsonSchema)]
struct Get {
    #[allow(dead_code)]
    id: serde_json::Value,
}

#[tokio::test]
async fn arguments_nested_past_the_recursion_limit_are_invalid_input() {
    let runs = Counter::default();
    let counter = runs.clone();
    let tool = from_fn("get", "Get a record.", move |_args: Get, _cx| {
        let counter = counter.clone();
        async move {
            counter.hit();
            Ok::<_, ToolError>("record")
        }
    });
    // 100 000 nested arrays: a recursive reader without a limit overflows the stack here.
    let deep = format!(
        "{{\"id\": {}1{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    // 126 arrays inside the object: at the limit, parsed (and valid for the schema).
    let deepest = format!("{{\"id\": {}1{}}}", "[".repeat(126), "]".repeat(126));
    let model = recording([
        Turn::tool_calls([
            ScriptedCall::raw("get", &deep).with_id("deep"),
            ScriptedCall::raw("get", &deepest).with_id("deepest"),
        ]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(tool).build();

    let out = agent.run("hi").await.unwrap();

    let results = &out.steps[0].tool_results;
    let err = results[0].error().unwrap();
    assert_eq!(
        (err.code(), err.message()),
        (
            "INVALID_INPUT",
            "Invalid arguments: the input is not valid JSON (recursion limit exceeded at line 1 \
             column 134)"
        )
    );
    assert!(results[1].error().is_none(), "{:?}", results[1]);
    assert_eq!(runs.get(), 1);
    assert_eq!(out.text, "done");
}
