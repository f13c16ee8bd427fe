//! `toolsmith threads`: the threads a store holds, one thread with its journal, and the revert
//! of what a thread's file tools changed.

mod revert;

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::json;
use toolsmith_core::{Message, Part, Role};
use toolsmith_store::{JournalEntry, Store, Thread, ThreadQuery};

use super::{EXIT_FAILURE, usage_error};

#[derive(Subcommand)]
pub(crate) enum ThreadsCommand {
    /// List the stored threads, the most recently written first.
    List {
        #[command(flatten)]
        db: DbArgs,
        /// At most this many.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
    },
    /// Print a thread: its state, its messages and its tool-call journal.
    Show {
        /// The thread's id.
        id: String,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Put back the files the thread's write and edit calls replaced (and remove those they
    /// created), newest first. A file changed since the call wrote it is left alone unless
    /// --force.
    Revert(revert::RevertArgs),
}

#[derive(Args)]
pub(crate) struct DbArgs {
    /// The database: sqlite:PATH or postgres://USER@HOST/DB.
    #[arg(long, value_name = "URL", env = "TOOLSMITH_DB", hide_env_values = true)]
    db: String,
    /// Print JSON instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

pub(crate) async fn threads(command: ThreadsCommand) -> ExitCode {
    let db = match &command {
        ThreadsCommand::List { db, .. } | ThreadsCommand::Show { db, .. } => db,
        ThreadsCommand::Revert(args) => &args.db,
    };
    let store = match toolsmith_store::open(&db.db).await {
        Ok(store) => store,
        Err(e) => return usage_error(format!("--db: {e}")),
    };
    let result = match &command {
        ThreadsCommand::List { limit, .. } => list(&*store, *limit, db.json).await,
        ThreadsCommand::Show { id, .. } => show(&*store, id, db.json).await,
        ThreadsCommand::Revert(args) => return revert::revert(&*store, args).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_FAILURE)
        }
    }
}

async fn list(store: &dyn Store, limit: usize, json: bool) -> Result<(), String> {
    let query = ThreadQuery {
        limit: Some(limit),
        ..Default::default()
    };
    let threads = store.threads(&query).await.map_err(|e| e.to_string())?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&threads).unwrap_or_default()
        );
        return Ok(());
    }
    if threads.is_empty() {
        println!("no threads");
        return Ok(());
    }
    println!(
        "{:<38} {:<8} {:>8} {:<24}",
        "THREAD", "STATUS", "MESSAGES", "UPDATED (ms since epoch)"
    );
    for thread in &threads {
        println!(
            "{:<38} {:<8} {:>8} {:<24}",
            thread.id,
            thread.status.as_str(),
            thread.message_count,
            thread.updated_at
        );
    }
    Ok(())
}

async fn show(store: &dyn Store, id: &str, json: bool) -> Result<(), String> {
    let thread = store
        .thread(id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("thread {id} does not exist"))?;
    let messages = store.messages(id).await.map_err(|e| e.to_string())?;
    let journal = store.journal(id).await.map_err(|e| e.to_string())?;
    if json {
        let value = json!({"thread": thread, "messages": messages, "journal": journal});
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return Ok(());
    }
    print_thread(&thread);
    println!("\nmessages:");
    for (i, message) in messages.iter().enumerate() {
        print_message(i, message);
    }
    println!("\njournal:");
    if journal.is_empty() {
        println!("  (no tool calls)");
    }
    for entry in &journal {
        print_entry(entry);
    }
    Ok(())
}

fn print_thread(thread: &Thread) {
    println!("thread {}", thread.id);
    println!("  status:   {}", thread.status.as_str());
    if let Some(run) = &thread.run_id {
        println!("  run:      {run}");
    }
    if let Some(parent) = &thread.parent_id {
        println!("  parent:   {parent}");
    }
    if !thread.tags.is_empty() {
        println!("  tags:     {}", thread.tags.join(", "));
    }
    println!("  version:  {}", thread.version);
    for pause in &thread.pending {
        println!(
            "  waits for: {} of {} {} (call {})",
            pause.kind.as_str(),
            pause.tool_name,
            pause.input,
            pause.tool_call_id
        );
    }
}

fn print_message(index: usize, message: &Message) {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    for part in &message.content {
        let text = match part {
            Part::Text { text, .. } => text.clone(),
            Part::Reasoning { text, .. } => format!("(reasoning) {text}"),
            Part::ToolCall(call) => format!(
                "call {} {} {}",
                call.tool_call_id, call.tool_name, call.input
            ),
            Part::ToolResult(result) => format!(
                "result {} {}: {}",
                result.tool_call_id,
                result.tool_name,
                serde_json::to_string(&result.output).unwrap_or_default()
            ),
            Part::ToolApprovalRequest(r) => {
                format!("approval asked for {} ({})", r.tool_call_id, r.approval_id)
            }
            Part::ToolApprovalResponse(a) => format!(
                "approval {} {}",
                a.approval_id,
                if a.approved { "granted" } else { "denied" }
            ),
            other => serde_json::to_string(other).unwrap_or_default(),
        };
        println!("  [{index}] {role}: {}", one_line(&text));
    }
}

fn print_entry(entry: &JournalEntry) {
    println!(
        "  #{} {} (call {}, attempt {}): {} [{}]{}",
        entry.seq,
        entry.tool_name,
        entry.tool_call_id,
        entry.attempt,
        entry.status.as_str(),
        if entry.side_effect && !entry.idempotent {
            "side effect, not idempotent"
        } else if entry.side_effect {
            "side effect, idempotent"
        } else {
            "read-only"
        },
        entry
            .idempotency_key
            .as_deref()
            .map(|k| format!(" key {k}"))
            .unwrap_or_default()
    );
}

/// `text` on one line, cut at 200 characters.
fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}
