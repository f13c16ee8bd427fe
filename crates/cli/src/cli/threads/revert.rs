//! `toolsmith threads revert`: puts back what a thread's `write` and `edit` calls replaced
//! (`toolsmith_builtins::revert`), after showing what it will do and asking (or
//! `--yes`).
//!
//! Exit codes: 0 when every change was put back (or there was nothing to do), 1 when one was
//! refused or failed, or the thread cannot be reverted, 2 on a usage error (no terminal to ask
//! on and no `--yes`).

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use toolsmith_builtins::REVERT_FILE_CHANGED;
use toolsmith_store::Store;

use super::DbArgs;
use crate::cli::{EXIT_FAILURE, usage_error};
use toolsmith_builtins::revert::{RevertOutcome, Revertible, revert as revert_calls, revertible};

#[derive(Args)]
pub(crate) struct RevertArgs {
    /// The thread's id.
    id: String,
    #[command(flatten)]
    pub(crate) db: DbArgs,
    /// Revert only this call (its id, as `threads show` prints it).
    #[arg(long, value_name = "CALL_ID")]
    call: Option<String>,
    /// The workspace the files are in (default: the root each call wrote beneath, as recorded).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Do not ask before reverting (needed without a terminal).
    #[arg(long)]
    yes: bool,
    /// Put files back even when they changed after the call wrote them.
    #[arg(long)]
    force: bool,
}

pub(crate) async fn revert(store: &dyn Store, args: &RevertArgs) -> ExitCode {
    let calls = match revertible(store, &args.id, args.call.as_deref()).await {
        Ok(calls) => calls,
        Err(e) => return failure(e),
    };
    if calls.is_empty() {
        if args.db.json {
            println!("{}", json!({"thread": args.id, "reverted": []}));
        } else {
            println!(
                "nothing to revert: no call of thread {} changed a file",
                args.id
            );
        }
        return ExitCode::SUCCESS;
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return usage_error(
                "not reverting without confirmation: pass --yes (standard input is not a terminal)",
            );
        }
        eprint!("{}", plan(&args.id, &calls, args));
        eprint!("Revert? [y/N] ");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            eprintln!("nothing reverted");
            return ExitCode::from(EXIT_FAILURE);
        }
    }
    let outcomes = match revert_calls(store, &calls, args.root.as_deref(), args.force).await {
        Ok(outcomes) => outcomes,
        Err(e) => return failure(e),
    };
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    if args.db.json {
        let reverted: Vec<Value> = outcomes.iter().map(outcome_json).collect();
        println!("{}", json!({"thread": args.id, "reverted": reverted}));
    } else {
        for outcome in &outcomes {
            println!("{}", outcome_line(outcome));
        }
        println!(
            "reverted {} of {} file changes",
            outcomes.len() - failed,
            outcomes.len()
        );
    }
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FAILURE)
    }
}

fn failure(e: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {e}");
    ExitCode::from(EXIT_FAILURE)
}

/// What will be reverted, newest first.
fn plan(thread: &str, calls: &[Revertible], args: &RevertArgs) -> String {
    let mut text = format!("thread {thread}: reverting, newest first:\n");
    for call in calls {
        for change in call.changes.iter().rev() {
            let what = if change.before.is_some() {
                "put back the previous content of"
            } else {
                "remove (the call created it)"
            };
            let root = args
                .root
                .as_ref()
                .or(change.root.as_ref())
                .map(|r| format!(" in {}", r.display()))
                .unwrap_or_default();
            text.push_str(&format!(
                "  #{} {} (call {}): {what} {}{root}\n",
                call.entry.seq, call.entry.tool_name, call.entry.tool_call_id, change.path
            ));
        }
    }
    text
}

fn outcome_line(outcome: &RevertOutcome) -> String {
    let call = format!(
        "#{} {}, call {}",
        outcome.seq, outcome.tool_name, outcome.tool_call_id
    );
    match &outcome.result {
        Ok(done) => format!(
            "{} {} ({call})",
            match done {
                toolsmith_builtins::Reverted::Restored => "restored",
                toolsmith_builtins::Reverted::Removed => "removed",
                toolsmith_builtins::Reverted::AlreadyReverted => "already as before:",
            },
            outcome.path
        ),
        Err(e) if e.code() == REVERT_FILE_CHANGED => format!(
            "refused {} ({call}): {}; --force puts the previous version back anyway",
            outcome.path,
            e.message()
        ),
        Err(e) => format!("failed {} ({call}): {}", outcome.path, e.message()),
    }
}

fn outcome_json(outcome: &RevertOutcome) -> Value {
    let mut value = json!({
        "seq": outcome.seq,
        "toolCallId": outcome.tool_call_id,
        "toolName": outcome.tool_name,
        "path": outcome.path,
        "root": outcome.root,
    });
    match &outcome.result {
        Ok(done) => value["result"] = json!(done.as_str()),
        Err(e) => {
            value["result"] = json!("refused");
            value["error"] = json!({"code": e.code(), "message": e.message()});
        }
    }
    value
}
