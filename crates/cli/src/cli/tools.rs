//! `toolsmith tools …`.

use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;
use toolsmith_core::{Concurrency, Toolset};

#[derive(Subcommand)]
pub(crate) enum ToolsCommand {
    /// List the built-in tools.
    List {
        /// Print JSON: an array of {name, description, kind, inputSchema, sideEffect,
        /// idempotent, concurrency, strict}.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) fn tools(command: ToolsCommand) -> ExitCode {
    match command {
        ToolsCommand::List { json } => {
            let workspace = match toolsmith_builtins::Workspace::new(
                toolsmith_sandbox::SandboxPolicy::new("."),
            ) {
                Ok(workspace) => workspace,
                Err(e) => return super::usage_error(e),
            };
            let tools = toolsmith_builtins::all(&workspace);
            if json {
                println!("{}", list_json(&tools));
            } else {
                print!("{}", list_text(&tools));
            }
            ExitCode::SUCCESS
        }
    }
}

fn list_json(tools: &Toolset) -> String {
    let entries: Vec<_> = tools
        .iter()
        .map(|tool| {
            let spec = tool.spec();
            let meta = tool.meta();
            json!({
                "name": spec.name(),
                "description": spec.description(),
                "kind": tool.kind().as_str(),
                "inputSchema": &**spec.input_schema(),
                "sideEffect": meta.side_effect,
                "idempotent": meta.is_idempotent(),
                "concurrency": match meta.concurrency {
                    Concurrency::Shared => "shared",
                    Concurrency::Exclusive => "exclusive",
                },
                "strict": spec.strict(),
            })
        })
        .collect();
    serde_json::to_string_pretty(&entries).expect("JSON values always serialise")
}

fn list_text(tools: &Toolset) -> String {
    let width = tools.names().map(str::len).max().unwrap_or(0);
    let mut out = String::new();
    for tool in tools.iter() {
        let spec = tool.spec();
        let summary = spec.description().lines().next().unwrap_or_default();
        let effect = if tool.meta().side_effect {
            "side effect"
        } else {
            "read-only"
        };
        out.push_str(&format!(
            "{:width$}  {:<11}  {summary}\n",
            spec.name(),
            effect
        ));
    }
    out
}
