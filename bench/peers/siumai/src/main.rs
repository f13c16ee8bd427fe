//! siumai: `ChatCapability::chat_stream` on its OpenAI client pointed at the mock, the tool call
//! assembled from the stream's `ToolCallDelta`s, the tool run, the assistant's call and the
//! tool's message appended, the stream asked again. siumai has no agent loop of its own.

use futures::StreamExt;
use peers_common::{Args, DESCRIPTION, PROMPT, RESULT, SCHEMA, measure, tool_name};
use serde::Deserialize;
use siumai::prelude::*;
use siumai::types::{FunctionCall, Tool, ToolCall};

/// The tool's arguments.
#[derive(Deserialize)]
#[allow(dead_code)]
struct NoopArgs {
    x: i64,
    label: Option<String>,
}

async fn run(client: &impl ChatCapability, tools: &[Tool]) -> String {
    let mut messages = vec![ChatMessage::user(PROMPT).build()];
    loop {
        let mut stream = client
            .chat_stream(messages.clone(), Some(tools.to_vec()))
            .await
            .expect("a stream");
        let mut text = String::new();
        let mut call: Option<(String, String, String)> = None;
        while let Some(event) = stream.next().await {
            match event.expect("an event") {
                ChatStreamEvent::ContentDelta { delta, .. } => text.push_str(&delta),
                ChatStreamEvent::ToolCallDelta {
                    id,
                    function_name,
                    arguments_delta,
                    ..
                } => {
                    let (call_id, name, arguments) = call.get_or_insert_default();
                    if !id.is_empty() {
                        *call_id = id;
                    }
                    if let Some(function_name) = function_name {
                        *name = function_name;
                    }
                    if let Some(delta) = arguments_delta {
                        arguments.push_str(&delta);
                    }
                }
                _ => {}
            }
        }
        let Some((id, name, arguments)) = call else {
            return text;
        };
        assert!(name.starts_with("noop_"), "unknown tool {name}");
        let _args: NoopArgs = serde_json::from_str(&arguments).expect("arguments");
        messages.push(
            ChatMessage::assistant("")
                .with_tool_calls(vec![ToolCall {
                    id: id.clone(),
                    r#type: "function".into(),
                    function: Some(FunctionCall { name, arguments }),
                }])
                .build(),
        );
        messages.push(ChatMessage::tool(RESULT.to_string(), id).build());
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let client = LlmBuilder::new()
        .openai()
        .base_url(&args.url)
        .api_key("unused")
        .model("mock-1")
        .build()
        .await
        .expect("a client");
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).expect("the schema");
    let tools: Vec<Tool> = (0..args.tools)
        .map(|i| Tool::function(tool_name(i), DESCRIPTION.into(), schema.clone()))
        .collect();
    measure("siumai", &args, || run(&client, &tools)).await;
}
