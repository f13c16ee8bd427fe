//! rig: an agent (`rig_agent::AgentBuilder`) on rig-core's Chat Completions wire pointed at the
//! mock, its tools `DynamicTool`s (their names are only known at run time), the run streamed
//! (`agent.prompt(…).stream()`) to its final response.

use futures::StreamExt;
use peers_common::{Args, DESCRIPTION, PROMPT, RESULT, SCHEMA, measure, tool_name};
use rig_agent::AgentBuilder;
use rig_agent::agent::MultiTurnStreamItem;
use rig_core::message::ToolName;
use rig_core::providers::openai::OpenAIConfig;
use rig_core::tool::{DynamicTool, ToolExecutionError, ToolOutput};
use serde::Deserialize;

/// The tool's arguments.
#[derive(Deserialize)]
#[allow(dead_code)]
struct NoopArgs {
    x: i64,
    label: Option<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let model = OpenAIConfig::new("unused")
        .with_base_url(&args.url)
        .client()
        .chat("mock-1");
    let schema: serde_json::Value = serde_json::from_str(SCHEMA).expect("the schema");
    let tools: Vec<DynamicTool> = (0..args.tools)
        .map(|i| {
            DynamicTool::new(
                ToolName::new(tool_name(i)).expect("a name"),
                DESCRIPTION,
                schema.clone(),
                |arguments| {
                    Box::pin(async move {
                        let _args: NoopArgs = serde_json::from_value(arguments)
                            .map_err(ToolExecutionError::from_error)?;
                        Ok(ToolOutput::text(RESULT))
                    })
                },
            )
        })
        .collect();
    let agent = AgentBuilder::new(model)
        .dynamic_tools(tools)
        .default_max_turns(4)
        .build();
    measure("rig", &args, || async {
        let mut stream = agent.prompt(PROMPT).stream();
        let mut answer = None;
        while let Some(item) = stream.next().await {
            if let MultiTurnStreamItem::FinalResponse(response) = item.expect("an item") {
                answer = Some(response.output());
            }
        }
        answer.expect("a final response")
    })
    .await;
}
