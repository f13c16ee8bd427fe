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

/// `dump`: a result of 60 000 characters, `0123456789` repeated.
fn dump() -> impl toolsmith_core::Tool {
    from_fn("dump", "Dumps a log.", |_: Value, _cx| async {
        Ok::<_, ToolError>("0123456789".repeat(6_000))
    })
}

/// A run that calls `dump`, then reads its artifact back twice (a window, then a bad pointer).
fn spill_turns(pointer: &str) -> Vec<Turn> {
    vec![
        Turn::call("dump", json!({})),
        Turn::tool_calls([ScriptedCall::new(
            "getArtifact",
            json!({"pointer": pointer, "offset": 5, "limit": 12}),
        )]),
        Turn::tool_calls([ScriptedCall::new(
            "getArtifact",
            json!({"pointer": "/attachments/../../etc/passwd"}),
        )]),
        Turn::call("listArtifacts", json!({})),
        Turn::text("done"),
    ]
}

async fn spilled_run(with_store: bool) {
    let pointer = "/attachments/artifact-call_0_0.txt";
    let model = recording(spill_turns(pointer));
    let agent = builder(&model)
        .tool(dump())
        .spill_artifacts(toolsmith_agent::DEFAULT_MAX_TOOL_OUTPUT_BYTES)
        .build();
    let dir = tempfile::tempdir().unwrap();
    let store = toolsmith_agent::Attachments::new(dir.path());
    let out = if with_store {
        run_with_attachments(&agent, &store, "thread-1", "run-1").await
    } else {
        agent.run("go").await.unwrap()
    };
    // The model saw RadarOS's pointer; the caller has the whole value.
    let seen = request_results(&model.requests()[1]);
    let ModelOutput::Json { value } = &seen[0].1 else {
        panic!("{seen:?}")
    };
    assert_eq!(value["pointer"], pointer);
    assert_eq!(value["sizeBytes"], 60_000);
    assert_eq!(value["preview"].as_str().unwrap().len(), 200);
    assert_eq!(
        value["note"],
        "Output too large; full value stored as artifact. Call getArtifact(pointer) to read it."
    );
    let whole = out.steps[0].tool_results[0].output_value().unwrap();
    assert_eq!(whole.as_str().unwrap().len(), 60_000);
    if with_store {
        let file = store.folder("thread-1").join("artifact-call_0_0.txt");
        assert_eq!(std::fs::read_to_string(file).unwrap().len(), 60_000);
    }
    // A window of it, and where the next one starts.
    let window = &request_results(&model.requests()[2])[1].1;
    let ModelOutput::Json { value } = window else {
        panic!("{window:?}")
    };
    assert_eq!(value["content"], "567890123456");
    assert_eq!(value["nextOffset"], 17);
    assert_eq!(value["sizeChars"], 60_000);
    // A pointer out of the thread's artifacts is refused.
    let refused = request_results(&model.requests()[3])[2].1.to_text();
    assert!(
        refused.contains("No artifact /attachments/../../etc/passwd"),
        "{refused}"
    );
    let listed = request_results(&model.requests()[4])[3].1.to_text();
    assert!(listed.contains(pointer), "{listed}");
}

#[tokio::test]
async fn a_result_past_the_limit_becomes_an_artifact_in_the_threads_attachments() {
    spilled_run(true).await;
}

#[tokio::test]
async fn without_an_attachment_store_the_artifact_lives_as_long_as_the_run() {
    spilled_run(false).await;
}
