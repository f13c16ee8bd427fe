//! Context economy in a run: results served from the cache (never over the outcome the run's
//! journal recorded), and limits on what the model sees of a result.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;
use serde_json::{Value, json};
use toolsmith_agent::{
    CallOutcome, Committed, DurabilitySnapshot, Intent, LogBatch, RunInput, RunLog, RunLogError,
    Settled,
};
use toolsmith_core::layer::{CacheScope, MemoryCache, ResultCache};
use toolsmith_core::{
    Message, ModelOutput, Part, ResultLimit, RunPart, ToolError, ToolMeta, ToolOutput, async_trait,
    from_fn,
};
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

/// A [`MemoryCache`] that remembers the keys put and counts the reads.
struct Watched {
    cache: MemoryCache,
    keys: Mutex<Vec<String>>,
    reads: AtomicUsize,
}

#[async_trait]
impl ResultCache for Watched {
    async fn get(&self, key: &str) -> Option<ToolOutput> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.cache.get(key).await
    }

    async fn put(&self, key: String, output: &ToolOutput, ttl: Duration) {
        self.keys.lock().unwrap().push(key.clone());
        self.cache.put(key, output, ttl).await;
    }
}

/// A run's log in memory: the thread as last saved, and each call's recorded output (by call
/// id), handed back as the call's fate when it is intended again. Once `crash` is set, the
/// first commit that settles a call is the process's last: every commit after it fails.
#[derive(Default)]
struct MemoryLog {
    thread: Mutex<Vec<Message>>,
    outputs: Mutex<HashMap<String, ToolOutput>>,
    crash: AtomicBool,
    dead: AtomicBool,
    /// How many intents it answered with a recorded output.
    reused: AtomicUsize,
}

#[async_trait]
impl RunLog for MemoryLog {
    async fn commit(&self, batch: LogBatch<'_>) -> Result<Committed, RunLogError> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(RunLogError::new("the process is gone"));
        }
        let mut outputs = self.outputs.lock().unwrap();
        for settled in batch.settled {
            if let Settled::Succeeded(output) = &settled.settled {
                outputs.insert(settled.call.tool_call_id.clone(), output.clone());
            }
        }
        if let Some(save) = batch.save {
            let mut thread = self.thread.lock().unwrap();
            thread.truncate(save.unchanged);
            thread.extend_from_slice(save.tail);
        }
        let recorded = batch
            .intend
            .and_then(|call| outputs.get(&call.tool_call_id).cloned());
        if recorded.is_some() {
            self.reused.fetch_add(1, Ordering::SeqCst);
        }
        if self.crash.load(Ordering::SeqCst) && !batch.settled.is_empty() {
            self.dead.store(true, Ordering::SeqCst);
        }
        Ok(Committed {
            intent: recorded.map(|output| Intent::Recorded(Box::new(CallOutcome::Output(output)))),
        })
    }
}

/// A snapshot hook that does nothing: with one, a side-effecting call's outcome is committed
/// on its own, before the save of its result.
struct NoSnapshot;

#[async_trait]
impl DurabilitySnapshot for NoSnapshot {
    async fn snapshot(&self, _: &str, _: &str) -> Result<(), String> {
        Ok(())
    }
}

#[tokio::test]
async fn a_resumed_call_gets_the_journals_outcome_never_the_cached_one() {
    let runs = Counter::default();
    let counted = runs.clone();
    // Idempotent, so cacheable; a side effect, so its outcome is committed before its result
    // is saved (with a snapshot hook): a crash can fall between the two.
    let fetch = from_fn("fetch", "Fetches a page.", move |input: Value, _cx| {
        let runs = counted.clone();
        async move {
            runs.hit();
            Ok::<_, ToolError>(format!("{} (run {})", input["url"], runs.get()))
        }
    })
    .with_meta(
        ToolMeta::new()
            .side_effect(true)
            .idempotent(true)
            .cache_ttl(Duration::from_secs(60)),
    );
    let cache = Arc::new(Watched {
        cache: MemoryCache::new(100),
        keys: Mutex::default(),
        reads: AtomicUsize::new(0),
    });
    let model = recording([Turn::call("fetch", json!({"url": "u"})), Turn::text("done")]);
    let agent = builder(&model)
        .tool(fetch)
        .durability_snapshot(NoSnapshot)
        .result_cache(cache.clone(), CacheScope::Thread)
        .build();
    let log = Arc::new(MemoryLog::default());
    log.crash.store(true, Ordering::SeqCst);
    let input = |messages: Vec<Message>| {
        RunInput::new(messages)
            .with_log(log.clone())
            .with_run_id("run-1")
            .with_thread_id("t1")
    };

    // The call runs and its outcome is journaled; the process dies before its result is saved.
    let crashed = agent.run(input(vec![Message::user("fetch u")])).await;
    assert!(crashed.is_err(), "the save after the outcome failed");
    assert_eq!(runs.get(), 1);
    let thread = log.thread.lock().unwrap().clone();
    assert!(
        !thread
            .iter()
            .flat_map(|m| &m.content)
            .any(|p| matches!(p, Part::ToolResult(_))),
        "the result was not saved: {thread:?}"
    );
    // Meanwhile the cache comes to hold something else for the same call.
    let keys = cache.keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 1, "the call's result was cached");
    let stale = ToolOutput::text("from the cache");
    cache
        .cache
        .put(keys[0].clone(), &stale, Duration::from_secs(60))
        .await;
    let reads = cache.reads.load(Ordering::SeqCst);

    log.crash.store(false, Ordering::SeqCst);
    log.dead.store(false, Ordering::SeqCst);
    let out = agent.run(input(thread)).await.unwrap();
    assert_eq!(out.text, "done");
    assert_eq!(log.reused.load(Ordering::SeqCst), 1, "the journal answered");
    assert_eq!(runs.get(), 1, "the tool did not run again");
    assert_eq!(
        cache.reads.load(Ordering::SeqCst),
        reads,
        "the cache was not asked"
    );
    assert_eq!(
        results(&out.messages),
        [("call_0_0".to_string(), text("\"u\" (run 1)"))]
    );
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

/// Twenty tools, `t0` … `t19`, one of them (`t7`) asking approval of every call.
fn twenty(runs: Counter) -> Vec<toolsmith_core::SharedTool> {
    (0..20)
        .map(|i| {
            let runs = runs.clone();
            let tool = from_fn(
                format!("t{i}"),
                format!("Tool number {i}, which does thing {i}."),
                move |_: Value, _cx| {
                    let runs = runs.clone();
                    async move {
                        runs.hit();
                        Ok::<_, ToolError>("ok")
                    }
                },
            );
            let meta = if i == 7 {
                ToolMeta::new().approval(toolsmith_core::Approval::Always)
            } else {
                ToolMeta::new()
            };
            std::sync::Arc::new(tool.with_meta(meta)) as toolsmith_core::SharedTool
        })
        .collect()
}

fn routed_agent(
    model: &std::sync::Arc<toolsmith_providers::ScriptedModel>,
    router: &std::sync::Arc<toolsmith_providers::ScriptedModel>,
    runs: Counter,
) -> toolsmith_agent::Agent {
    let mut agent = builder(model)
        .router(toolsmith_agent::ToolRouter::new(router.clone()).max_tools(3))
        .approval_key(key());
    for tool in twenty(runs) {
        agent = agent.tool(tool);
    }
    agent.build()
}

#[tokio::test]
async fn the_router_picks_what_a_run_declares_from_a_one_line_index() {
    let model = recording([Turn::text("done")]);
    let router = recording([Turn::text("I pick: [\"t3\", \"t12\", \"nope\"]")]);
    let agent = routed_agent(&model, &router, Counter::default());
    agent.run("do thing 3 and thing 12").await.unwrap();
    assert_eq!(declared(&model.requests()[0]), ["t3", "t12"]);
    let asked = &router.requests()[0];
    assert!(asked.messages[0].text().contains("Pick at most 3 tools."));
    let index = asked.messages[1].text();
    assert!(
        index.starts_with("Tools:\nt0 — Tool number 0, which does thing 0.\nt1 — "),
        "{index}"
    );
    assert!(
        index.ends_with("\n\nQuery: \"do thing 3 and thing 12\""),
        "{index}"
    );
    assert_eq!(asked.settings.max_output_tokens, Some(400));
    assert_eq!(asked.settings.temperature, Some(0.0));
}

#[tokio::test]
async fn no_pick_a_failed_router_or_few_tools_declare_every_tool() {
    for answer in ["[]", "no idea", "[\"ghost\"]"] {
        let model = recording([Turn::text("done")]);
        let router = recording([Turn::text(answer)]);
        let agent = routed_agent(&model, &router, Counter::default());
        agent.run("hi").await.unwrap();
        assert_eq!(declared(&model.requests()[0]).len(), 20, "{answer}");
    }
    // A router that has nothing to answer (its script is spent) fails: every tool.
    let model = recording([Turn::text("done")]);
    let router = recording([]);
    let agent = routed_agent(&model, &router, Counter::default());
    agent.run("hi").await.unwrap();
    assert_eq!(declared(&model.requests()[0]).len(), 20);
    // No more tools than maxTools: the router is not asked.
    let model = recording([Turn::text("done")]);
    let router = recording([Turn::text("[\"a\"]")]);
    let agent = builder(&model)
        .router(toolsmith_agent::ToolRouter::new(router.clone()).max_tools(3))
        .tool(ok_tool("a", Counter::default()))
        .tool(ok_tool("b", Counter::default()))
        .build();
    agent.run("hi").await.unwrap();
    assert_eq!(router.call_count(), 0);
    assert_eq!(declared(&model.requests()[0]), ["a", "b"]);
}

#[tokio::test]
async fn a_resumed_call_keeps_its_tool_whatever_the_router_picks() {
    let runs = Counter::default();
    let model = recording([
        Turn::tool_calls([ScriptedCall::new("t7", json!({})).with_id("c7")]),
        Turn::text("done"),
    ]);
    let router = recording([Turn::text("[\"t7\"]"), Turn::text("[\"t1\"]")]);
    let agent = routed_agent(&model, &router, runs.clone());
    let paused = agent.run("use tool 7").await.unwrap();
    assert_eq!(paused.pending.len(), 1);
    let id = key().approval_id("c7", "t7", &json!({}));
    let input = toolsmith_agent::RunInput::from(stored(&paused.messages))
        .with_approval(toolsmith_core::ToolApprovalResponse::approve(&id));
    let out = agent.run(input).await.unwrap();
    assert_eq!(out.text, "done");
    assert_eq!(runs.get(), 1);
    assert_eq!(declared(&model.requests()[1]), ["t1", "t7"]);
}
