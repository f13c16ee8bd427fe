//! Context economy in a run: results served from the cache, and limits on what the model sees
//! of a result.

use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_core::{ModelOutput, ResultLimit, RunPart, ToolError, ToolMeta, from_fn};
use toolsmith_providers::{ScriptedCall, Turn};

/// `lookup`: a read-only tool whose results may be cached for a minute.
fn lookup(runs: Counter) -> impl toolsmith_core::Tool {
    from_fn("lookup", "Looks a word up.", move |input: Value, _cx| {
        let runs = runs.clone();
        async move {
            runs.hit();
            Ok::<_, ToolError>(format!("{} (run {})", input["word"], runs.get()))
        }
    })
    .with_meta(ToolMeta::new().cache_ttl(Duration::from_secs(60)))
}

#[tokio::test]
async fn a_repeated_call_is_served_from_the_cache_and_marked_in_the_stream() {
    let runs = Counter::default();
    let model = recording([
        Turn::tool_calls([ScriptedCall::raw(
            "lookup",
            r#"{"word":"a","opts":{"x":1,"y":2}}"#,
        )]),
        Turn::tool_calls([ScriptedCall::raw(
            "lookup",
            r#"{"opts":{"y":2,"x":1},"word":"a"}"#,
        )]),
        Turn::tool_calls([ScriptedCall::raw(
            "lookup",
            r#"{"word":"a","opts":{"x":1,"y":3}}"#,
        )]),
        Turn::text("done"),
    ]);
    let agent = builder(&model).tool(lookup(runs.clone())).build();
    let (parts, out) = stream_run(&agent, "hi").await;
    let out = out.unwrap();
    assert_eq!(
        runs.get(),
        2,
        "the second call was a hit, the third another call"
    );
    assert_eq!(
        results(&out.messages),
        [
            ("call_0_0".to_string(), text("\"a\" (run 1)")),
            ("call_1_0".to_string(), text("\"a\" (run 1)")),
            ("call_2_0".to_string(), text("\"a\" (run 2)")),
        ]
    );
    let cached: Vec<&str> = parts
        .iter()
        .filter_map(|p| match p {
            RunPart::Data {
                tool_call_id, name, ..
            } if name == "cached" => tool_call_id.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(cached, ["call_1_0"]);
}

#[tokio::test]
async fn the_model_sees_a_limited_result_and_the_run_keeps_the_whole() {
    let rows = from_fn("rows", "All the rows.", |_: Value, _cx| async {
        Ok::<_, ToolError>(json!((0..500).collect::<Vec<_>>()))
    });
    let model = recording([Turn::call("rows", json!({})), Turn::text("done")]);
    let agent = builder(&model)
        .tool(rows)
        .result_limit(ResultLimit {
            max_chars: 40,
            ..ResultLimit::default()
        })
        .build();
    let out = agent.run("hi").await.unwrap();
    let seen = request_results(&model.requests()[1]);
    let ModelOutput::Text { value } = &seen[0].1 else {
        panic!("{seen:?}")
    };
    assert!(
        value.ends_with("\n\n[Showing 12 of 500 items — 488 more omitted]"),
        "{value}"
    );
    let whole = out.steps[0].tool_results[0].output_value().unwrap();
    assert_eq!(whole.as_array().unwrap().len(), 500);
}
