//! `toolsmith threads list|show` on SQLite stores written by real `toolsmith run --db` runs:
//! what a person reads (times as "3 min ago" or a local date, statuses in words, aligned
//! columns, steps with their model calls' tokens and times and their tool calls, totals, 80
//! columns) and what programs read (`--json`: the stored messages with each step's record).
//! Times are seen from a fixed `--now`, in the UTC time zone, so that no assertion depends on
//! the clock; the steps' own durations are checked for their form, never their length.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use toolsmith::store::{Batch, NewThread, SqliteStore, Store, ThreadStatus, ThreadWrite};

use crate::common::{serve, sse};

const MINUTE: u64 = 60_000;
const DAY: u64 = 24 * 60 * MINUTE;

/// The usage the mock reports with the calls: 120 tokens in (100 of them cache reads), 14 out
/// (5 of them reasoning).
fn calls_usage() -> Value {
    json!({"prompt_tokens": 120, "completion_tokens": 14,
           "prompt_tokens_details": {"cached_tokens": 100},
           "completion_tokens_details": {"reasoning_tokens": 5}})
}

/// A Chat Completions turn (response `c`, model `m`) calling `calls` (`(id, tool, input)`) in
/// one step, with [`calls_usage`].
fn calls(calls: &[(&str, &str, Value)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, (id, name, input))| {
            json!({"index": i, "id": id, "type": "function",
                   "function": {"name": name, "arguments": input.to_string()}})
        })
        .collect();
    sse(
        &[
            json!({"id": "c", "model": "m", "choices": [{"index": 0,
                "delta": {"role": "assistant", "tool_calls": calls}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": calls_usage()}),
        ],
        false,
        true,
    )
}

/// A Chat Completions turn (response `d`, model `m`) answering `Done.`, 130 tokens in and 6
/// out.
fn chat_done() -> String {
    sse(
        &[
            json!({"id": "d", "model": "m", "choices": [{"index": 0,
                "delta": {"role": "assistant", "content": "Done."}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 130, "completion_tokens": 6}}),
        ],
        false,
        true,
    )
}

/// Whether `text` is a duration as `threads show` writes it (`812 ms`, `1.2 s`…).
fn is_duration(text: &str) -> bool {
    let ms = text
        .strip_suffix(" ms")
        .is_some_and(|n| n.parse::<u64>().is_ok());
    let s = text.strip_suffix(" s").is_some_and(|n| {
        n.split_once('.')
            .is_some_and(|(a, b)| a.parse::<u64>().is_ok() && b.len() == 1)
    });
    ms || s || text.ends_with(" min") || text.contains(" min ")
}

/// `toolsmith run --db` of `thread` in `root` on a model replying `turns`; no terminal.
fn run(root: &Path, thread: &str, turns: Vec<String>) {
    let (base, _) = serve(turns);
    let out = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["run", "--model", "openai:gpt-x", "--base-url", &base])
        .args(["--db", &db(root), "--thread", thread, "--root"])
        .arg(root)
        .arg("What do the notes say?")
        .env("OPENAI_API_KEY", "sk-test-key")
        .env("TOOLSMITH_SECRET_KEY", "5a".repeat(32))
        .env_remove("TOOLSMITH_MODEL")
        .env_remove("TOOLSMITH_DB")
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn db(root: &Path) -> String {
    format!("sqlite:{}", root.join("runs.db").display())
}

/// `toolsmith threads <args> --db …` in the UTC time zone: its standard output.
fn threads(root: &Path, args: &[&str]) -> String {
    let out: Output = Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .arg("threads")
        .args(args)
        .args(["--db", &db(root)])
        .env("TZ", "UTC")
        .env_remove("TOOLSMITH_DB")
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Two stored threads: `t1` read a file and failed to read another in its first step, then
/// answered (finished); `t2` asked to overwrite a file and waits for the approval (paused).
fn two_threads() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("notes.txt"), "buy milk\n").unwrap();
    run(
        root,
        "t1",
        vec![
            calls(&[
                ("call_ok", "read", json!({"path": "notes.txt"})),
                ("call_bad", "read", json!({"path": "missing.txt"})),
            ]),
            chat_done(),
        ],
    );
    run(
        root,
        "t2",
        vec![calls(&[(
            "call_w",
            "write",
            json!({"path": "notes.txt", "content": "nothing\n"}),
        )])],
    );
    dir
}

/// The stored threads as `--json` gives them, by id.
fn stored(root: &Path) -> Vec<Value> {
    let json: Value = serde_json::from_str(&threads(root, &["list", "--json"])).unwrap();
    json.as_array().expect("an array of threads").clone()
}

/// `YYYY-MM-DD HH:MM` of `ms` since the epoch, in UTC (the civil calendar, days from 1970).
fn utc_date(ms: u64) -> String {
    let days = (ms / DAY) as i64;
    let minutes = ms % DAY / MINUTE;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        minutes / 60,
        minutes % 60
    )
}

#[test]
fn list_reads_times_and_statuses_in_words_in_aligned_columns() {
    let dir = two_threads();
    let root = dir.path();
    let records = stored(root);
    // --json stays the store's records: times in milliseconds, statuses as stored.
    assert_eq!(records.len(), 2);
    let t1 = records.iter().find(|t| t["id"] == "t1").unwrap();
    let t2 = records.iter().find(|t| t["id"] == "t2").unwrap();
    assert_eq!(t1["status"], "idle");
    assert_eq!(t2["status"], "paused");
    let updated = t2["updatedAt"].as_u64().expect("milliseconds");
    let created = t1["createdAt"].as_u64().expect("milliseconds");

    let now = (updated + 3 * MINUTE + 5_000).to_string();
    let out = threads(root, &["list", "--now", &now]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    let header = lines[0];
    assert!(header.starts_with("THREAD  "), "{out}");
    // Every cell starts where its header does; the message count ends where its header does.
    for name in ["STATUS", "UPDATED", "CREATED"] {
        let at = header.find(name).unwrap();
        for row in &lines[1..] {
            let row = row.as_bytes();
            assert!(
                row[at - 1] == b' ' && row[at] != b' ',
                "{name} misaligned:\n{out}"
            );
        }
    }
    let end = header.find("MESSAGES").unwrap() + "MESSAGES".len();
    for row in &lines[1..] {
        let row = row.as_bytes();
        assert!(
            row[end - 1] != b' ' && row[end] == b' ',
            "MESSAGES misaligned:\n{out}"
        );
    }
    let cells = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned)
            .collect()
    };
    // The most recently written first: t2, paused, then t1, finished.
    assert_eq!(
        cells(lines[1]),
        ["t2", "paused (1 waiting)", "2", "3 min ago", "3 min ago"],
        "{out}"
    );
    let t1_row = cells(lines[2]);
    assert_eq!(t1_row[..3], ["t1", "finished", "4"], "{out}");
    assert!(t1_row[3].ends_with("min ago"), "{out}");

    // Two hours on: hours; days on: the local (here UTC) date.
    let later = (updated + 2 * 60 * MINUTE).to_string();
    let out = threads(root, &["list", "--now", &later]);
    assert!(
        cells(out.lines().nth(1).unwrap()).contains(&"2 h ago".to_owned()),
        "{out}"
    );
    let much_later = (created + 3 * DAY).to_string();
    let out = threads(root, &["list", "--now", &much_later]);
    assert_eq!(
        cells(out.lines().nth(2).unwrap())[4],
        utc_date(created),
        "{out}"
    );
    assert!(
        !out.contains(&created.to_string()),
        "no milliseconds: {out}"
    );
}

#[test]
fn show_gives_each_step_with_its_calls_outcomes_and_totals_within_80_columns() {
    let dir = two_threads();
    let root = dir.path();
    let t1 = stored(root).into_iter().find(|t| t["id"] == "t1").unwrap();
    let now = (t1["updatedAt"].as_u64().unwrap() + 90 * MINUTE).to_string();

    let out = threads(root, &["show", "t1", "--now", &now]);
    for line in out.lines() {
        assert!(line.chars().count() <= 80, "longer than 80 columns: {line}");
    }
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "thread t1", "{out}");
    assert!(lines.contains(&"  status:   finished"), "{out}");
    assert!(lines.contains(&"  updated:  1 h ago"), "{out}");
    let at = |wanted: &str| {
        lines
            .iter()
            .position(|l| *l == wanted)
            .unwrap_or_else(|| panic!("no line {wanted:?} in\n{out}"))
    };
    let user = at("user: What do the notes say?");
    let step1 = at("step 1");
    let ok = at("  tool read (call call_ok): ok");
    let bad = at("  tool read (call call_bad): error");
    let step2 = at("step 2");
    let done = at("  text: Done.");
    assert!(user < step1 && step1 < ok && ok < bad && bad < step2 && step2 < done);
    // Each step's model call: model, finish reason and time, then the tokens (on a line of
    // their own when one would not fit).
    let model_line = |line: &str, finish: &str| {
        let rest = line
            .strip_prefix(&format!("  model: m, {finish}, "))
            .unwrap_or_else(|| panic!("a model line: {line:?} in\n{out}"));
        let time = rest.split(';').next().unwrap();
        assert!(is_duration(time), "{time:?} in\n{out}");
    };
    model_line(lines[step1 + 1], "tool-calls");
    assert_eq!(
        lines[step1 + 2],
        "    tokens: 120 in (100 cache read), 14 out (5 reasoning)",
        "{out}"
    );
    model_line(lines[step2 + 1], "stop");
    assert!(
        lines[step2 + 1].ends_with("; tokens: 130 in, 6 out"),
        "{out}"
    );
    assert_eq!(
        lines[ok + 1],
        r#"    input:   {"path":"notes.txt"}"#,
        "{out}"
    );
    assert!(lines[ok + 2].starts_with("    result:  ") && lines[ok + 2].contains("buy milk"));
    // Each call's own time.
    for call in [ok, bad] {
        let time = lines[call + 3]
            .strip_prefix("    time:    ")
            .unwrap_or_default();
        assert!(is_duration(time), "{out}");
    }
    assert_eq!(lines[ok + 4], "    journal: succeeded [read-only]", "{out}");
    assert!(lines[bad + 2].starts_with("    result:  "), "{out}");
    // The totals: steps and calls, the tokens summed, the time (the model's and the tools').
    let n = lines.len();
    assert_eq!(
        lines[n - 3],
        "total: 2 step(s), 2 tool call(s) (1 ok, 1 error(s))",
        "{out}"
    );
    assert_eq!(
        lines[n - 2],
        "  tokens: 250 in (100 cache read), 20 out (5 reasoning)",
        "{out}"
    );
    let time = lines[n - 1].strip_prefix("  time:   ").unwrap();
    let (sum, parts) = time.split_once(" (model ").unwrap();
    let (model, tools) = parts
        .strip_suffix(')')
        .unwrap()
        .split_once(", tools ")
        .unwrap();
    assert!([sum, model, tools].into_iter().all(is_duration), "{out}");

    let out = threads(root, &["show", "t2", "--now", &now]);
    assert!(out.contains("  status:   paused (1 waiting)"), "{out}");
    assert!(
        out.contains("  waits for: approval of write (call call_w)"),
        "{out}"
    );
    assert!(
        out.contains("  tool write (call call_w): waiting for approval"),
        "{out}"
    );
    // The call waits: it has no time, and the step's time is the model's alone.
    assert!(!out.contains("    time:"), "{out}");
    assert!(
        out.contains("\ntotal: 1 step(s), 1 tool call(s) (0 ok, 1 without result)\n"),
        "{out}"
    );
    assert!(
        out.contains("\n  tokens: 120 in (100 cache read), 14 out (5 reasoning)\n"),
        "{out}"
    );
    let time = out
        .lines()
        .last()
        .unwrap()
        .strip_prefix("  time:   ")
        .unwrap();
    assert!(is_duration(time.strip_suffix(" (model)").unwrap()), "{out}");

    // --json: the stored records in full, for programs, each step's record with its message.
    let json: Value = serde_json::from_str(&threads(root, &["show", "t1", "--json"])).unwrap();
    assert_eq!(json["thread"]["id"], "t1");
    let messages = json["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(json["journal"].as_array().unwrap().len(), 2);
    assert!(messages[0].get("meta").is_none(), "the prompt has none");
    let step = &messages[1]["meta"];
    assert_eq!(step["model"], "m");
    assert_eq!(step["provider"], "openai");
    assert_eq!(step["responseId"], "c");
    assert_eq!(step["finishReason"], "tool-calls");
    assert_eq!(
        step["usage"],
        json!({"input": {"total": 120, "no_cache": 20, "cache_read": 100},
               "output": {"total": 14, "text": 9, "reasoning": 5}})
    );
    assert!(step["startedAt"].as_u64().unwrap() > 0);
    assert!(step["durationMs"].is_u64());
    let results = &messages[2]["meta"];
    assert!(results["startedAt"].as_u64().unwrap() >= step["startedAt"].as_u64().unwrap());
    assert!(results["durationMs"].is_u64());
    let calls = results["calls"].as_object().unwrap();
    assert_eq!(calls.keys().collect::<Vec<_>>(), ["call_bad", "call_ok"]);
    assert!(calls.values().all(Value::is_u64));
    assert_eq!(messages[3]["meta"]["responseId"], "d");
    assert_eq!(messages[3]["meta"]["finishReason"], "stop");
}

#[tokio::test]
async fn show_reads_a_thread_stored_before_steps_kept_records() {
    let dir = two_threads();
    let root = dir.path();
    // t1 as an older toolsmith stored it: no record on any message.
    let store = SqliteStore::open(root.join("runs.db")).await.unwrap();
    let mut messages = store.messages("t1").await.unwrap();
    assert!(messages.iter().any(|m| m.meta.is_some()));
    for message in &mut messages {
        message.meta = None;
    }
    store.create_thread(NewThread::new("old")).await.unwrap();
    let write = ThreadWrite::new("old", 0, 0, &messages, ThreadStatus::Idle);
    store.commit(Batch::new().write(write)).await.unwrap();
    drop(store);

    let out = threads(root, &["show", "old", "--now", "0"]);
    assert!(out.contains("\nstep 2\n  text: Done.\n"), "{out}");
    for absent in ["model:", "time:", "tokens:"] {
        assert!(!out.contains(absent), "{absent} in\n{out}");
    }
    assert!(
        out.ends_with("total: 2 step(s), 2 tool call(s) (1 ok, 1 error(s))\n"),
        "{out}"
    );
}
