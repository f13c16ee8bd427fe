//! The chat route against the real AI SDK client (`ai`'s `DefaultChatTransport` and
//! `readUIMessageStream`, on the Node the package pins), a tool call and an approval included.

use std::process::Command;

use serde_json::{Value, json};
use toolsmith_server::ServiceOptions;

use crate::common::{self, call, config, last, mock_model, text};

const CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ai-client");

#[tokio::test]
async fn the_ai_sdk_chat_client_runs_a_tool_and_answers_an_approval() {
    let node = format!("{CLIENT}/node_modules/.bin/node");
    assert!(
        std::path::Path::new(&node).exists(),
        "the AI SDK client is not installed: run `npm ci` in {CLIENT} (scripts/test.sh does)"
    );
    let service = common::start(ServiceOptions::default()).await;
    let secret = service.account("acme").await;
    let base = mock_model(|body| match last(body) {
        (role, result) if role == "tool" => text(&format!("The answer is {result}.")),
        _ => call("call_1", "calculator", json!({"expression": "6 * 7"})),
    });
    let tools = json!({"calculator": {"needsApproval": true}});
    service.agent("acme", "calc", config(&base, tools)).await;

    let (url, secret2) = (service.url.clone(), secret.clone());
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&node)
            .arg(format!("{CLIENT}/chat.mjs"))
            .args([url.as_str(), secret2.as_str(), "calc", "chat-1"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let turns: Vec<Vec<Value>> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(turns.len(), 2, "{stdout}");
    let asked = turns[0]
        .iter()
        .find(|p| p["type"] == "tool-calculator")
        .unwrap();
    assert_eq!(asked["state"], "approval-requested", "{asked}");
    assert_eq!(asked["input"], json!({"expression": "6 * 7"}));
    let done = turns[1]
        .iter()
        .find(|p| p["type"] == "tool-calculator")
        .unwrap();
    assert_eq!(done["state"], "output-available", "{done}");
    assert_eq!(done["output"]["result"], 42);
    let said: String = turns[1]
        .iter()
        .filter(|p| p["type"] == "text")
        .map(|p| p["text"].as_str().unwrap())
        .collect();
    assert_eq!(said, "The answer is 6 * 7 = 42.");
}
