//! toolsmith: an [`Agent`] on the Chat Completions wire (`openai-compatible:`), its tools
//! typed closures, run as a library user runs it (`agent.run(prompt)`), every default on.

use peers_common::{Args, DESCRIPTION, PROMPT, RESULT, measure, tool_name};
use schemars::JsonSchema;
use serde::Deserialize;
use toolsmith_agent::Agent;
use toolsmith_core::{ToolError, Toolset, from_fn};
use toolsmith_providers::openai_chat::OpenAiChat;

// The tool's arguments (a plain comment: a doc comment would become the schema's description,
// which the other clients' declarations do not have).
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct NoopArgs {
    /// A number.
    x: i64,
    /// An optional label.
    label: Option<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let tools: Toolset = (0..args.tools)
        .map(|i| {
            from_fn(tool_name(i), DESCRIPTION, |_: NoopArgs, _cx| async {
                Ok::<_, ToolError>(RESULT)
            })
        })
        .collect();
    let model = OpenAiChat::compatible("mock-1", &args.url, None);
    let agent = Agent::builder(model).tools(tools).max_steps(4).build();
    measure("toolsmith", &args, || async {
        agent.run(PROMPT).await.expect("a run").text
    })
    .await;
}
