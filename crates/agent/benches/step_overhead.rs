//! Loop overhead per agent step, with 1, 8 and 64 tools.
//!
//! The model answers instantly: every turn calls one no-op tool with a small argument object. A
//! step therefore measures exactly the loop's own work: consuming the model's parts, preparing
//! the call (lookup, JSON parsing, schema validation), dispatching it through the layer stack,
//! recording the result, and building the next request. The bench model renders each request
//! into a JSON body the way a provider wire does (the tool declarations rendered once per
//! toolset and spliced in), so the cost of building requests is counted too.
//!
//! `toolsmith-loop-only` is the same with a model that renders nothing: the loop's own cost.
//! `naive` is the baseline a hand-written loop achieves: the same model and tools, but the tool
//! declarations serialised into every request and no validation, layers or bookkeeping.
//!
//! Run: `cargo bench -p toolsmith-agent --bench step_overhead`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_agent::Agent;
use toolsmith_core::{
    FinishReason, LanguageModel, ModelError, ModelPart, ModelRequest, ModelStream, ModelToolCall,
    ToolDeclaration, ToolError, Toolset, UnifiedFinishReason, Usage, async_trait, from_fn,
};

/// Steps per measured run; the run's fixed costs are spread over them.
const STEPS: u32 = 20;

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct NoopArgs {
    /// A number.
    x: i64,
    /// An optional label.
    label: Option<String>,
}

fn toolset(n: usize) -> Toolset {
    (0..n)
        .map(|i| {
            from_fn(
                format!("noop_{i}"),
                "Does nothing, quickly.",
                |_: NoopArgs, _cx| async { Ok::<_, ToolError>("ok") },
            )
        })
        .collect()
}

/// Renders one tool declaration as an OpenAI-style function entry.
fn render_tool(decl: &ToolDeclaration) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": &*decl.name,
            "description": decl.description,
            "parameters": &*decl.input_schema,
        }
    })
}

/// Answers every request with one call to `noop_0`, after rendering the request body (unless
/// `bare`, which isolates the loop's own cost).
struct BenchModel {
    bare: bool,
}

impl BenchModel {
    fn parts() -> ModelStream {
        Box::pin(futures::stream::iter([
            Ok(ModelPart::ToolCall(ModelToolCall::new(
                "call",
                "noop_0",
                r#"{"x": 1}"#,
            ))),
            Ok(ModelPart::Finish {
                usage: Usage::new(10, 5),
                finish_reason: FinishReason::new(UnifiedFinishReason::ToolCalls),
                provider_metadata: Default::default(),
            }),
        ]))
    }
}

/// A message as a wire sends it.
#[derive(serde::Serialize)]
struct Rendered<'a> {
    role: toolsmith_core::Role,
    content: &'a [toolsmith_core::Part],
}

#[async_trait]
impl LanguageModel for BenchModel {
    async fn stream(&self, request: &ModelRequest) -> Result<ModelStream, ModelError> {
        if self.bare {
            return Ok(Self::parts());
        }
        let tools = request.tools.rendered("bench-openai", |decls| {
            serde_json::to_string(&decls.iter().map(render_tool).collect::<Vec<_>>()).unwrap()
        });
        // As a wire renders them: role and content (a message's step record stays home).
        let messages: Vec<Rendered<'_>> = request
            .messages
            .iter()
            .map(|m| Rendered {
                role: m.role,
                content: &m.content,
            })
            .collect();
        let messages = serde_json::to_string(&messages).unwrap();
        let body = format!(r#"{{"model":"bench","messages":{messages},"tools":{tools}}}"#);
        black_box(body.len());
        Ok(Self::parts())
    }
}

/// The naive loop: declarations serialised per request, arguments deserialised without schema
/// validation, the tool called directly.
async fn naive_run(tools: &Toolset, steps: u32) {
    let mut messages: Vec<Value> = vec![json!({"role": "user", "content": "go"})];
    for _ in 0..steps {
        let decls = tools.declarations();
        let rendered =
            serde_json::to_string(&decls.entries().iter().map(render_tool).collect::<Vec<_>>())
                .unwrap();
        let body = format!(
            r#"{{"model":"bench","messages":{},"tools":{rendered}}}"#,
            serde_json::to_string(&messages).unwrap()
        );
        black_box(body.len());
        let input: Value = serde_json::from_str(r#"{"x": 1}"#).unwrap();
        let tool = tools.get("noop_0").unwrap();
        let cx = toolsmith_core::ToolContext::for_test("noop_0");
        let out = tool.call(input.clone(), &cx).await.unwrap();
        messages.push(json!({"role": "assistant", "tool_calls": [{"id": "call", "name": "noop_0", "arguments": input}]}));
        messages.push(json!({"role": "tool", "tool_call_id": "call", "content": out.model}));
    }
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("step");
    group.measurement_time(Duration::from_secs(4));
    for n in [1usize, 8, 64] {
        let tools = toolset(n);
        for (name, bare) in [("toolsmith", false), ("toolsmith-loop-only", true)] {
            let agent = Agent::builder(BenchModel { bare })
                .tools(tools.clone())
                .max_steps(STEPS)
                .build();
            let agent = Arc::new(agent);
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter_custom(|iters| {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let out = runtime.block_on(agent.run("go")).unwrap();
                        black_box(out.steps.len());
                    }
                    start.elapsed() / STEPS
                })
            });
        }
        group.bench_with_input(BenchmarkId::new("naive", n), &n, |b, _| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    runtime.block_on(naive_run(&tools, STEPS));
                }
                start.elapsed() / STEPS
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
