//! toolsmith: an [`Agent`] on the Chat Completions wire (`openai-compatible:`), its tools
//! typed closures, run as a library user runs it (`agent.run(prompt)`), every default on.

use peers_common::{Args, PROMPT, measure};
use peers_toolsmith::toolset;
use toolsmith_agent::Agent;
use toolsmith_providers::openai_chat::OpenAiChat;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let model = OpenAiChat::compatible("mock-1", &args.url, None);
    let agent = Agent::builder(model)
        .tools(toolset(args.tools))
        .max_steps(4)
        .build();
    measure("toolsmith", &args, || async {
        agent.run(PROMPT).await.expect("a run").text
    })
    .await;
}
