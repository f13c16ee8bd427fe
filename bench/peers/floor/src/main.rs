//! The floor: the agent loop written by hand on reqwest and serde_json, as a careful engineer
//! would write it for one provider and one tool shape, with nothing toolsmith adds (no schema
//! validation, no layers, no run record, no events).
//!
//! The tool declarations are built once as `serde_json::Value`s and serialised into every
//! request (a typed request struct borrows them: no copy); the messages are `json!` values; the
//! stream is split into events by hand and each chunk parsed into borrowed typed structs; the
//! call's arguments are deserialised into the tool's argument type and the tool called.

use futures::StreamExt;
use peers_common::{Args, DESCRIPTION, PROMPT, RESULT, SCHEMA, measure, tool_name};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: &'a [Value],
    tools: &'a [Value],
    stream: bool,
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow, default)]
    delta: Option<Delta<'a>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(borrow, default)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(Deserialize)]
struct CallDelta<'a> {
    #[serde(borrow, default)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow, default)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<std::borrow::Cow<'a, str>>,
}

/// The tool's arguments.
#[derive(Deserialize)]
#[allow(dead_code)]
struct NoopArgs {
    x: i64,
    label: Option<String>,
}

/// What one streamed answer held.
#[derive(Default)]
struct Turn {
    text: String,
    call: Option<(String, String, String)>,
}

struct Floor {
    client: reqwest::Client,
    url: String,
    tools: Vec<Value>,
}

impl Floor {
    async fn complete(&self, messages: &[Value]) -> Turn {
        let body = Request {
            model: "mock-1",
            messages,
            tools: &self.tools,
            stream: true,
        };
        let response = self
            .client
            .post(&self.url)
            .json(&body)
            .send()
            .await
            .expect("sent")
            .error_for_status()
            .expect("a 200");
        let mut turn = Turn::default();
        let mut buffer: Vec<u8> = Vec::new();
        let mut bytes = response.bytes_stream();
        while let Some(chunk) = bytes.next().await {
            buffer.extend_from_slice(&chunk.expect("a chunk"));
            let mut start = 0;
            while let Some(end) = find(&buffer[start..], b"\n\n") {
                let event = &buffer[start..start + end];
                start += end + 2;
                let Some(data) = event.strip_prefix(b"data: ") else {
                    continue;
                };
                if data == b"[DONE]" {
                    return turn;
                }
                let chunk: Chunk<'_> = serde_json::from_slice(data).expect("a chunk");
                for choice in chunk.choices {
                    let Some(delta) = choice.delta else { continue };
                    if let Some(text) = delta.content {
                        turn.text.push_str(&text);
                    }
                    for call in delta.tool_calls.into_iter().flatten() {
                        let (id, name, arguments) = turn.call.get_or_insert_default();
                        if let Some(new) = call.id {
                            *id = new.into_owned();
                        }
                        if let Some(function) = call.function {
                            if let Some(new) = function.name {
                                *name = new.into_owned();
                            }
                            if let Some(more) = function.arguments {
                                arguments.push_str(&more);
                            }
                        }
                    }
                }
            }
            buffer.drain(..start);
        }
        turn
    }

    async fn run(&self) -> String {
        let mut messages = vec![json!({"role": "user", "content": PROMPT})];
        loop {
            let turn = self.complete(&messages).await;
            let Some((id, name, arguments)) = turn.call else {
                return turn.text;
            };
            let output = match name.as_str() {
                name if name.starts_with("noop_") => {
                    let _args: NoopArgs = serde_json::from_str(&arguments).expect("arguments");
                    RESULT
                }
                other => panic!("unknown tool {other}"),
            };
            messages.push(json!({
                "role": "assistant",
                "content": turn.text,
                "tool_calls": [{"id": id, "type": "function",
                    "function": {"name": name, "arguments": arguments}}],
            }));
            messages.push(json!({"role": "tool", "tool_call_id": id, "content": output}));
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let schema: Value = serde_json::from_str(SCHEMA).expect("the schema");
    let tools = (0..args.tools)
        .map(|i| {
            json!({"type": "function", "function": {
                "name": tool_name(i), "description": DESCRIPTION, "parameters": schema,
            }})
        })
        .collect();
    let floor = Floor {
        client: reqwest::Client::new(),
        url: format!("{}/chat/completions", args.url),
        tools,
    };
    measure("floor", &args, || floor.run()).await;
}
