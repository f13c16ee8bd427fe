//! `toolsmith run --config` with sub-agents, prompts and variables, against a loopback Chat
//! Completions server: the parent delegates to a sub-agent whose tool needs approval, the
//! approval surfaces on the parent, `--approve auto` answers it and the child resumes.

use std::process::Output;

use crate::common::{Received, run_config, serve, sse};
use serde_json::{Value, json};

/// A Chat Completions stream that calls `name` with `args`.
fn call(id: &str, name: &str, args: Value) -> String {
    sse(
        &[
            json!({"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant",
                "tool_calls": [{"index": 0, "id": id, "type": "function",
                "function": {"name": name, "arguments": args.to_string()}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 3}}),
        ],
        false,
        true,
    )
}

/// A Chat Completions stream that answers `text`.
fn text(text: &str) -> String {
    sse(
        &[
            json!({"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"content": text}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                   "usage": {"prompt_tokens": 10, "completion_tokens": 2}}),
        ],
        false,
        true,
    )
}

/// Runs `toolsmith run --json --config <config>` with `args` against `replies`, without a
/// terminal; the output and the requests the server saw. `files` are written next to the
/// config.
fn run(
    config: Value,
    files: &[(&str, Value)],
    args: &[&str],
    replies: Vec<String>,
) -> (Output, Vec<Received>) {
    let (base, received) = serve(replies);
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content.to_string()).unwrap();
    }
    let path = dir.path().join("agent.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let out = run_config(&base, &path, args);
    let requests = received.lock().unwrap().clone();
    (out, requests)
}

fn parts(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_sub_agent_s_approval_surfaces_on_the_parent_and_approve_auto_resumes_it() {
    // The sub-agent's config is a file next to the parent's; it has no model: it uses the
    // parent's.
    let helper = json!({
        "instructions": "Compute what you are asked.",
        "tools": {"calculator": {"needsApproval": true}}
    });
    let config = json!({
        "tools": {},
        "subagents": [{
            "name": "helper",
            "description": "Computes things.",
            "config": "helper.json",
            "initUserMessageProperty": "task"
        }]
    });
    let replies = vec![
        call("p1", "helper", json!({"task": "compute 6 * 7"})),
        call("h1", "calculator", json!({"expression": "6 * 7"})),
        text("42"),
        text("The helper says 42."),
    ];
    let (out, requests) = run(
        config,
        &[("helper.json", helper)],
        &["--approve", "auto"],
        replies,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parts = parts(&out);

    // The parent declares the sub-agent with its task property.
    let tools = &requests[0].body["tools"];
    assert_eq!(tools[0]["function"]["name"], "helper");
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["task"])
    );
    // The child saw its instructions and task, and declared its own tool.
    assert_eq!(
        requests[1].body["messages"][0]["content"],
        "Compute what you are asked."
    );
    assert_eq!(requests[1].body["messages"][1]["content"], "compute 6 * 7");
    // The approval surfaced nested under the sub-agent call, and the resumed child ran it.
    let nested = |kind: &str| {
        parts
            .iter()
            .filter(|p| p["type"] == "nested" && p["part"]["type"] == kind)
            .count()
    };
    assert_eq!(nested("tool-approval-request"), 1);
    assert_eq!(nested("tool-result"), 1);
    let approval = parts
        .iter()
        .find(|p| p["type"] == "nested" && p["part"]["type"] == "tool-approval-request")
        .unwrap();
    assert_eq!(
        approval["path"],
        json!([{"toolCallId": "p1", "toolName": "helper"}])
    );
    assert!(requests[2].body["messages"].to_string().contains("42"));
    // The parent's last request has the sub-agent's answer as the call's result.
    let last = &requests[3].body["messages"];
    assert!(last.to_string().contains("\"content\":\"42\""), "{last}");
    // The child's saved run, recorded in the parent's thread while it waited, never reaches
    // the parent's model.
    assert!(
        !last.to_string().contains("Compute what you are asked."),
        "{last}"
    );
}

#[test]
fn a_prompt_tool_and_declared_variables_from_var() {
    let config = json!({
        "tools": {},
        "variables": [{"name": "REGION", "type": "text", "required": true, "description": "Where."}],
        "prompts": [{
            "name": "summarise",
            "description": "Summarises a text.",
            "instructions": "Summarise in one word.",
            "tools": {},
            "includeToolCalls": false
        }]
    });
    // Without the required variable, the run does not start.
    let (out, requests) = run(config.clone(), &[], &[], vec![text("never")]);
    assert!(!out.status.success());
    // With --json the error is the last part.
    let error = parts(&out).pop().unwrap();
    assert_eq!(error["type"], "error");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("VARIABLES_REQUIRED") && message.contains("REGION"),
        "{message}"
    );
    assert!(requests.is_empty());

    let replies = vec![
        call("p1", "summarise", json!({"prompt": "a very long text"})),
        text("Long."),
        text("It is long."),
    ];
    let (out, requests) = run(config, &[], &["--var", "REGION=eu"], replies);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        requests[1].body["messages"][0]["content"],
        "Summarise in one word."
    );
    assert!(requests[2].body["messages"].to_string().contains("Long."));
}

#[test]
fn bad_composite_entries_are_rejected_naming_them() {
    for (config, message) in [
        (
            json!({"subagents": [{"name": "h", "description": "d", "config": {}, "blockign": true}]}),
            "config.subagents[0].blockign is not a supported setting",
        ),
        (
            json!({"subagents": [{"name": "h", "description": "d", "config": {"tools": {"nope": {}}}}]}),
            "config.subagents[0].config: config.tools.nope is not a supported tool",
        ),
        (
            json!({"prompts": [{"name": "p", "description": "d"}]}),
            "config.prompts[0].instructions must be a non-empty string",
        ),
        (
            json!({"variables": [{"name": "K", "type": "secret", "value": "sk-1"}]}),
            "a secret's value does not belong in a config file",
        ),
    ] {
        let (out, _) = run(config, &[], &[], Vec::new());
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(message), "{stderr}");
    }
}

#[test]
fn attachments_are_handed_to_a_sub_agent_from_the_attachments_folder() {
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("notes.txt"), "q3 numbers").unwrap();
    let config = json!({
        "tools": {},
        "subagents": [{
            "name": "reader",
            "description": "Reads files.",
            "config": {"tools": {}},
            "initAttachmentsProperty": "files"
        }]
    });
    let replies = vec![
        call(
            "p1",
            "reader",
            json!({"prompt": "read it", "files": ["/attachments/notes.txt"]}),
        ),
        text("It has numbers."),
        call(
            "p2",
            "reader",
            json!({"prompt": "and this", "files": ["/attachments/gone.txt"]}),
        ),
        text("done"),
    ];
    let dir = files.path().to_str().unwrap();
    let (out, requests) = run(config, &[], &["--attachments", dir], replies);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The child's first message names its copy, which sits in its own folder.
    let first = requests[1].body["messages"][0].to_string();
    assert!(
        first.contains("Attachments: /attachments/notes.txt"),
        "{first}"
    );
    let copies: Vec<_> = std::fs::read_dir(files.path().join(".subagents"))
        .unwrap()
        .map(|e| e.unwrap().path().join("notes.txt"))
        .collect();
    assert_eq!(copies.len(), 1);
    assert_eq!(std::fs::read_to_string(&copies[0]).unwrap(), "q3 numbers");
    // A missing file is an error result, and no child starts for it.
    assert_eq!(requests.len(), 4);
    let last = requests[3].body["messages"].to_string();
    assert!(
        last.contains("/attachments/gone.txt does not exist"),
        "{last}"
    );
}

/// `immediate`, `optional` and `resumable` sub-agents through `toolsmith run --config`: the
/// immediate one runs before the parent's first request, the optional one is offered only when
/// its flag is on, and the resumable one is reached through `subagent_create`.
#[test]
fn immediate_optional_and_resumable_sub_agents_from_a_config() {
    // The flag is a declared variable, given with --var.
    let flag = json!([{"name": "SCOUT_ON", "type": "text"}]);
    let config = json!({
        "tools": {},
        "variables": flag,
        "subagents": [
            {"name": "indexer", "description": "Indexes.", "immediate": true,
             "config": {"instructions": "Index.", "tools": {}}},
            {"name": "scout", "description": "Scouts.", "optional": "SCOUT_ON",
             "config": {"tools": {}}},
            {"name": "memo", "description": "Keeps notes.",
             "resumable": {"receives_messages": "side_a"},
             "config": {"instructions": "Keep notes.", "tools": {}}}
        ]
    });
    let replies = vec![
        text("indexed"),
        call(
            "p1",
            "subagent_create",
            json!({"name": "m1", "message": "remember blue"}),
        ),
        text("noted: blue"),
        text("done"),
    ];
    let (out, requests) = run(config, &[], &["--var", "SCOUT_ON=no"], replies);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The immediate sub-agent ran first, on the user's message.
    assert_eq!(requests[0].body["messages"][0]["content"], "Index.");
    assert_eq!(requests[0].body["messages"][1]["content"], "What is 6 * 7?");
    // The parent's first request already holds its result; the scout is not offered.
    let first = &requests[1];
    assert!(
        first.body["messages"].to_string().contains("indexed"),
        "{}",
        first.body["messages"]
    );
    let declared: Vec<&str> = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(declared.contains(&"subagent_create"), "{declared:?}");
    assert!(declared.contains(&"subagent_message"), "{declared:?}");
    assert!(!declared.contains(&"scout"), "{declared:?}");
    // The instance got its first message as the user's.
    for r in &requests {
        eprintln!("REQ {}", r.body["messages"]);
    }
    assert_eq!(requests[2].body["messages"][0]["content"], "Keep notes.");
    assert_eq!(requests[2].body["messages"][1]["content"], "remember blue");
    assert!(
        requests[3].body["messages"]
            .to_string()
            .contains("noted: blue")
    );

    // With the flag on, the scout is offered.
    let config = json!({
        "tools": {},
        "variables": flag,
        "subagents": [{"name": "scout", "description": "Scouts.", "optional": "SCOUT_ON",
                       "config": {"tools": {}}}]
    });
    let (out, requests) = run(config, &[], &["--var", "SCOUT_ON=Yes"], vec![text("ok")]);
    assert!(out.status.success());
    assert!(requests[0].body["tools"].to_string().contains("\"scout\""));
}

/// `blocking: false` through `toolsmith run --config`: the call is acknowledged at once, and
/// the sub-agent's answer reaches the parent's model later as an injected message.
#[test]
fn a_non_blocking_sub_agent_from_a_config_answers_later() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
    let log = seen.clone();
    // Who asks is told by the messages: the sub-agent's start with its instructions; the
    // parent's first request has no tool result, its second the acknowledgement, its third
    // the injected answer.
    let base = crate::common::serve_with(move |request| {
        let messages = request.body["messages"].to_string();
        log.lock().unwrap().push(request.body.clone());
        if messages.contains("Audit quietly.") {
            std::thread::sleep(std::time::Duration::from_millis(200));
            text("report: all green")
        } else if messages.contains("Async tool result injected") {
            text("The audit says all green.")
        } else if messages.contains("\"tool_call_id\":\"p1\"") {
            text("Started the audit.")
        } else {
            call("p1", "auditor", json!({"prompt": "audit"}))
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.json");
    let config = json!({
        "tools": {},
        "subagents": [{"name": "auditor", "description": "Audits.", "blocking": false,
                       "config": {"instructions": "Audit quietly.", "tools": {}}}]
    });
    std::fs::write(&path, config.to_string()).unwrap();
    let out = run_config(&base, &path, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let parts = parts(&out);
    let results: Vec<&Value> = parts
        .iter()
        .filter(|p| p["type"] == "tool-result")
        .collect();
    assert!(
        results[0]["output"]
            .to_string()
            .contains("started in the background"),
        "{}",
        results[0]
    );
    let last_text = parts
        .iter()
        .rev()
        .find(|p| p["type"] == "text-delta")
        .unwrap();
    assert_eq!(last_text["text"], "The audit says all green.");
    let injected = seen
        .lock()
        .unwrap()
        .iter()
        .any(|body| body["messages"].to_string().contains("report: all green"));
    assert!(injected, "the parent's model got the sub-agent's answer");
}
