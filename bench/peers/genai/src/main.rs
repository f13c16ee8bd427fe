//! genai: `Client::exec_chat_stream` against the mock (an OpenAI adapter whose endpoint is the
//! mock, through a service-target resolver), tool calls captured from the stream
//! (`capture_tool_calls`), the tool run, its response appended, the stream asked again: the loop
//! of genai's streaming tool-use example. genai has no agent loop of its own.

use futures::StreamExt;
use genai::adapter::AdapterKind;
use genai::chat::{
    ChatMessage, ChatOptions, ChatRequest, ChatStreamEvent, ContentPart, Tool, ToolCall,
    ToolResponse,
};
use genai::resolver::{AuthData, Endpoint, ServiceTargetResolver};
use genai::{Client, ModelIden, ServiceTarget};
use peers_common::{Args, DESCRIPTION, PROMPT, RESULT, SCHEMA, measure, tool_name};
use serde::Deserialize;

/// The tool's arguments.
#[derive(Deserialize)]
#[allow(dead_code)]
struct NoopArgs {
    x: i64,
    label: Option<String>,
}

async fn run(client: &Client, tools: &[Tool], options: &ChatOptions) -> String {
    let mut request = ChatRequest::new(vec![ChatMessage::user(PROMPT)]).with_tools(tools.to_vec());
    loop {
        let mut stream = client
            .exec_chat_stream("mock-1", request.clone(), Some(options))
            .await
            .expect("a stream");
        let mut text = String::new();
        let mut calls: Vec<ToolCall> = Vec::new();
        while let Some(event) = stream.stream.next().await {
            match event.expect("an event") {
                ChatStreamEvent::Chunk(chunk) => text.push_str(&chunk.content),
                ChatStreamEvent::End(end) => {
                    if let Some(content) = end.captured_content {
                        for part in content.into_parts() {
                            if let ContentPart::ToolCall(call) = part {
                                calls.push(call);
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        if calls.is_empty() {
            return text;
        }
        let mut responses = Vec::new();
        for call in &calls {
            assert!(call.fn_name.starts_with("noop_"), "unknown tool");
            let _args: NoopArgs =
                serde_json::from_value(call.fn_arguments.clone()).expect("arguments");
            responses.push(ToolResponse::new(call.call_id.clone(), RESULT));
        }
        request = request.append_message(ChatMessage::from(calls));
        for response in responses {
            request = request.append_message(response);
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let endpoint = format!("{}/", args.url);
    let resolver = ServiceTargetResolver::from_resolver_fn(
        move |target: ServiceTarget| -> Result<ServiceTarget, genai::resolver::Error> {
            Ok(ServiceTarget {
                endpoint: Endpoint::from_owned(endpoint.clone()),
                auth: AuthData::from_single("unused"),
                model: ModelIden::new(AdapterKind::OpenAI, target.model.model_name),
            })
        },
    );
    let client = Client::builder()
        .with_service_target_resolver(resolver)
        .build()
        .expect("a client");
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).expect("the schema");
    let tools: Vec<Tool> = (0..args.tools)
        .map(|i| {
            Tool::new(tool_name(i))
                .with_description(DESCRIPTION)
                .with_schema(schema.clone())
        })
        .collect();
    let options = ChatOptions::default()
        .with_capture_tool_calls(true)
        .with_capture_content(true);
    measure("genai", &args, || run(&client, &tools, &options)).await;
}
