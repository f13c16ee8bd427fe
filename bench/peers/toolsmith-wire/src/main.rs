//! toolsmith-wire: toolsmith's Chat Completions wire (`OpenAiChat`) driven by a loop written by
//! hand, as the floor's is: no agent, so no validation, layers, run record or events. Beside
//! the floor and `toolsmith`, it splits what a run costs between the wire (the request writer,
//! the HTTP wrapper, the stream decoder) and the agent loop.
//!
//! The tools are `toolsmith`'s, declared through the same cached declarations; the call's
//! arguments are parsed once and deserialised into the tool's type.

use futures::StreamExt;
use peers_common::{Args, PROMPT, RESULT, measure};
use peers_toolsmith::{NoopArgs, toolset};
use serde::Deserialize;
use serde_json::Value;
use toolsmith_core::{
    LanguageModel, Message, ModelOutput, ModelPart, ModelRequest, Part, Role, ToolCallPart,
    ToolResultPart, Toolset,
};
use toolsmith_providers::openai_chat::OpenAiChat;

/// One prompt → tool call → answer on the wire alone.
async fn run(model: &OpenAiChat, tools: &Toolset) -> String {
    let mut request = ModelRequest {
        messages: vec![Message::user(PROMPT)],
        tools: tools.declarations(),
        ..Default::default()
    };
    loop {
        let mut stream = model.stream(&request).await.expect("a stream");
        let (mut text, mut call) = (String::new(), None);
        while let Some(part) = stream.next().await {
            match part.expect("a part") {
                ModelPart::TextDelta { delta, .. } => text.push_str(&delta),
                ModelPart::ToolCall(c) => call = Some(c),
                _ => {}
            }
        }
        let Some(call) = call else { return text };
        assert!(call.tool_name.starts_with("noop_"), "an unknown tool");
        let input: Value = serde_json::from_str(&call.input).expect("arguments");
        let _args = NoopArgs::deserialize(&input).expect("the tool's arguments");
        let answer = ToolResultPart {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            output: ModelOutput::Text {
                value: RESULT.into(),
            },
            provider_executed: false,
            provider_metadata: Default::default(),
        };
        let asked = ToolCallPart {
            tool_call_id: call.tool_call_id,
            tool_name: call.tool_name,
            input,
            provider_executed: false,
            provider_metadata: call.provider_metadata,
        };
        let messages = &mut request.messages;
        messages.push(Message::new(Role::Assistant, vec![Part::ToolCall(asked)]));
        messages.push(Message::tool_results(vec![answer]));
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let tools = toolset(args.tools);
    let model = OpenAiChat::compatible("mock-1", &args.url, None);
    measure("toolsmith-wire", &args, || run(&model, &tools)).await;
}
