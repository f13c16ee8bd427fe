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

/// A chat's first message is stored without looking the conversation up first; a history of
/// one message sent again (a client that retries, or regenerates the first answer) finds the
/// stored conversation all the same and goes on with it, on SQLite as in memory.
#[tokio::test]
async fn a_first_message_sent_again_goes_on_with_the_stored_chat() {
    let dir = tempfile::tempdir().unwrap();
    for store in common::stores(dir.path()).await {
        let service = common::start_on(store, ServiceOptions::default()).await;
        let secret = service.account("acme").await;
        let base = mock_model(|body| {
            let seen = common::messages(body).len();
            text(&format!("I have seen {seen} messages."))
        });
        service.agent("acme", "a", config(&base, json!({}))).await;
        let body = json!({"id": "chat-1", "messages": [
            {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Hello"}]}
        ]});
        let mut said = Vec::new();
        for _ in 0..2 {
            let (status, stream) = service.post("/agents/a/chat", &secret, &body).await;
            assert_eq!(status, 200, "{stream}");
            let (chunks, _) = common::parse_sse(stream.trim_end_matches("data: [DONE]\n\n"));
            said.push(
                chunks
                    .iter()
                    .filter(|c| c["type"] == "text-delta")
                    .map(|c| c["delta"].as_str().unwrap().to_string())
                    .collect::<String>(),
            );
        }
        // The second request's model call holds the first turn, its answer and the new message.
        assert_eq!(said, ["I have seen 1 messages.", "I have seen 3 messages."]);
    }
}
