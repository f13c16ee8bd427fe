//! What the tool router saves: input tokens of a request on the embedded local model with 60
//! tools declared, without a router, with a scripted router (a fixed pick of three), and with
//! the embedded model itself as the router.
//!
//! ```sh
//! source scripts/llama-cpu.sh
//! cargo run --profile "$llama_cpu_profile" -p toolsmith-cli --example router_tokens
//! ```
//!
//! The 60 tools are those of twelve business domains (CRM, billing, shipping…), five each, with
//! a two- or three-property schema; they are client tools, declared and never run (a call ends
//! the run), so each run is one request. The count is the local model's prompt tokens for that
//! request (chat template, instructions, declarations, the query), each configuration run once
//! after a warm-up; the router's own tokens are counted apart.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::json;
use toolsmith::providers::local::LocalModel;
use toolsmith::providers::{ScriptedModel, Turn};
use toolsmith::{
    Agent, AgentBuilder, ClientTool, LanguageModel, ModelError, ModelPart, ModelRequest,
    ModelStream, RunOutput, ToolSpec, agent::ToolRouter, async_trait,
};

/// The embedded model as a router, keeping what it answered.
struct Told {
    model: Arc<dyn LanguageModel>,
    answer: Arc<Mutex<String>>,
}

#[async_trait]
impl LanguageModel for Told {
    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        let answer = self.answer.clone();
        let stream = self.model.stream(request).await?;
        Ok(Box::pin(stream.inspect(move |part| {
            if let Ok(ModelPart::TextDelta { delta, .. }) = part {
                answer.lock().unwrap().push_str(delta);
            }
        })))
    }
}

const DOMAINS: [(&str, &str); 12] = [
    ("crm", "customer records"),
    ("billing", "invoices and payments"),
    ("shipping", "parcels and carriers"),
    ("inventory", "stock levels in warehouses"),
    ("support", "support tickets"),
    ("hr", "employee records"),
    ("calendar", "meetings and rooms"),
    ("docs", "shared documents"),
    ("analytics", "sales dashboards"),
    ("marketing", "email campaigns"),
    ("legal", "contracts"),
    ("it", "laptops and accounts"),
];
const ACTIONS: [(&str, &str); 5] = [
    ("find", "Searches"),
    ("get", "Reads one of the"),
    ("create", "Creates one of the"),
    ("update", "Changes one of the"),
    ("delete", "Deletes one of the"),
];
const QUERY: &str = "Refund invoice INV-2041 for the customer Ada Lovelace.";

fn add_tools(mut builder: AgentBuilder) -> AgentBuilder {
    for (domain, what) in DOMAINS {
        for (action, verb) in ACTIONS {
            let schema = json!({
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": format!("The id in {what}.")},
                    "query": {"type": "string", "description": "Free text to match."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100}
                },
                "required": if action == "find" { json!(["query"]) } else { json!(["id"]) },
            });
            let spec = ToolSpec::new(format!("{domain}_{action}"), schema)
                .with_description(format!("{verb} {what}, by id or by a search."));
            builder = builder.tool(ClientTool::new(spec));
        }
    }
    builder
}

async fn run(agent: &Agent) -> RunOutput {
    agent.run(QUERY).await.unwrap_or_else(|e| *e.output)
}

fn input_tokens(out: &RunOutput) -> u64 {
    out.steps
        .first()
        .and_then(|s| s.usage.input.total)
        .unwrap_or(0)
}

#[tokio::main]
async fn main() {
    let local: Arc<dyn LanguageModel> =
        Arc::new(LocalModel::from_name("").unwrap_or_else(|e| panic!("{e}")));
    let instructions = "You are a back-office assistant. Use the tools.";
    let plain = add_tools(
        Agent::builder_shared(local.clone())
            .instructions(instructions)
            .max_steps(1),
    )
    .build();
    run(&plain).await; // warm-up: loads the model
    let all = run(&plain).await;

    let scripted = Arc::new(ScriptedModel::new([Turn::text(
        r#"["billing_find", "billing_update", "crm_find"]"#,
    )]));
    let routed = add_tools(
        Agent::builder_shared(local.clone())
            .instructions(instructions)
            .max_steps(1)
            .router(ToolRouter::new(scripted).max_tools(3)),
    )
    .build();
    let picked = run(&routed).await;

    let answer = Arc::new(Mutex::new(String::new()));
    let told: Arc<dyn LanguageModel> = Arc::new(Told {
        model: local.clone(),
        answer: answer.clone(),
    });
    let self_routed = add_tools(
        Agent::builder_shared(local.clone())
            .instructions(instructions)
            .max_steps(1)
            .router(ToolRouter::new(told.clone()).max_tools(3)),
    )
    .build();
    let by_local = run(&self_routed).await;
    let router_tokens = by_local.usage.input.total.unwrap_or(0) - input_tokens(&by_local);

    let (a, b, c) = (
        input_tokens(&all),
        input_tokens(&picked),
        input_tokens(&by_local),
    );
    println!("input tokens of the request, 60 tools, query {QUERY:?}:");
    println!("| router | tokens sent | ÷ no router |");
    println!("|---|---:|---:|");
    println!("| none (60 tools declared) | {a} | 1.00 |");
    println!("| scripted (3 tools) | {b} | {:.2} |", b as f64 / a as f64);
    println!(
        "| the embedded model (its pick) | {c} (+ {router_tokens} for the router) | {:.2} ({:.2} with the router's) |",
        c as f64 / a as f64,
        (c + router_tokens) as f64 / a as f64
    );
    let called: Vec<String> = by_local
        .steps
        .first()
        .map(|s| s.tool_calls.iter().map(|c| c.tool_name.clone()).collect())
        .unwrap_or_default();
    println!(
        "the embedded model as the router answered {:?}; the main model then called {called:?}",
        answer.lock().unwrap()
    );
}
