//! The store-backed result cache across runs and processes: a second agent on the same SQLite
//! file (a new handle, as another process opens it) is served the result the first one's run
//! cached, and what the file holds of it is ciphertext under a digest.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_agent::{Agent, RunInput};
use toolsmith_core::layer::{CacheScope, ResultCache};
use toolsmith_core::{Message, ToolError, ToolMeta, ToolOutput, from_fn};
use toolsmith_providers::{ScriptedModel, Turn};
use toolsmith_store::{SecretKey, SqliteStore, StoreCache};

/// An agent whose one tool, `lookup`, counts its runs in `runs` and may be cached for a
/// minute; its results cached in `store` under `key`.
fn agent(store: SqliteStore, key: &SecretKey, runs: Arc<AtomicUsize>) -> Agent {
    let lookup = from_fn("lookup", "Looks a word up.", move |input: Value, _cx| {
        let runs = runs.clone();
        async move {
            let n = runs.fetch_add(1, Ordering::SeqCst) + 1;
            Ok::<_, ToolError>(format!("{} means b (lookup {n})", input["word"]))
        }
    })
    .with_meta(ToolMeta::new().cache_ttl(Duration::from_secs(60)));
    // Enough turns for two runs.
    let turns = [
        Turn::call("lookup", json!({"word": "a"})),
        Turn::text("done"),
    ];
    let model = ScriptedModel::new(turns.iter().chain(&turns).cloned());
    let cache = StoreCache::new(Arc::new(store), key.clone());
    Agent::builder(model)
        .tool(lookup)
        .result_cache(Arc::new(cache), CacheScope::Thread)
        .build()
}

/// The one call's result, as the run's caller has it.
async fn looked_up(agent: &Agent, thread: &str) -> Value {
    let input = RunInput::new(vec![Message::user("What does a mean?")]).with_thread_id(thread);
    let out = agent.run(input).await.unwrap();
    assert_eq!(out.text, "done");
    out.steps[0].tool_results[0].output_value().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_agent_on_the_same_sqlite_file_is_served_the_first_runs_result() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let key = SecretKey::generate();

    let first_runs = Arc::new(AtomicUsize::new(0));
    let first = agent(
        SqliteStore::open(&path).await.unwrap(),
        &key,
        first_runs.clone(),
    );
    assert_eq!(looked_up(&first, "t1").await, "\"a\" means b (lookup 1)");
    drop(first);

    // Another agent with a handle of its own on the file: the tool does not run.
    let second_runs = Arc::new(AtomicUsize::new(0));
    let second = agent(
        SqliteStore::open(&path).await.unwrap(),
        &key,
        second_runs.clone(),
    );
    assert_eq!(looked_up(&second, "t1").await, "\"a\" means b (lookup 1)");
    assert_eq!(
        second_runs.load(Ordering::SeqCst),
        0,
        "served from the file"
    );
    // Another thread has results of its own (the thread scope).
    assert_eq!(looked_up(&second, "t2").await, "\"a\" means b (lookup 1)");
    assert_eq!(second_runs.load(Ordering::SeqCst), 1, "t2 ran the tool");
    assert_eq!(first_runs.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_result_and_its_call_are_not_in_the_database_file_in_clear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = SqliteStore::open(&path).await.unwrap();
    let cache = StoreCache::new(Arc::new(store.clone()), SecretKey::generate());
    // The output as the tool returned it: a secret the run would mask in its thread is here.
    let output = ToolOutput::text("token sk-live-CACHED-1a2b3c");
    let call = "thread-PLAIN-ID\u{0}lookup{\"word\":\"input-PLAIN-WORD\"}";
    cache
        .put(call.into(), &output, Duration::from_secs(60))
        .await;
    assert_eq!(cache.get(call).await, Some(output));

    let mut bytes = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
    }
    let holds = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(holds(b"result_cache"), "the scan sees the file's plaintext");
    for clear in [
        "sk-live-CACHED-1a2b3c",
        "thread-PLAIN-ID",
        "input-PLAIN-WORD",
    ] {
        assert!(!holds(clear.as_bytes()), "{clear} is in the file in clear");
    }
}
