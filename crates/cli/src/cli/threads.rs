//! `toolsmith threads`: the threads a store holds (`list`), one thread step by step (`show`),
//! and the revert of what a thread's file tools changed (`revert`).
//!
//! `list` and `show` print for a person (times as `3 min ago` or a local date: `when.rs`;
//! statuses in words: `list.rs`; steps and their tool calls: `show.rs`, with what they spent:
//! `spent.rs`) and, with `--json`, the store's records unchanged for programs.

mod list;
mod revert;
mod show;
mod spent;
mod when;

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{Args, Subcommand};

use super::{EXIT_FAILURE, usage_error};

#[derive(Subcommand)]
pub(crate) enum ThreadsCommand {
    /// List the stored threads, the most recently written first: id, status, messages, and
    /// when each was last written and created.
    ///
    /// Status: new, finished, paused (N waiting), failed, running (pid P) while a live process
    /// holds the run, interrupted (no live holder: `run --resume` continues it), handed back.
    /// Times: "just now", "N min ago", "N h ago" within a day, "yesterday HH:MM" on the previous
    /// calendar day, else the local date "YYYY-MM-DD HH:MM" (time zone: TZ, else the
    /// system's). --json prints the stored records, times in milliseconds since the epoch.
    List {
        #[command(flatten)]
        db: DbArgs,
        /// At most this many.
        #[arg(long, value_name = "N", default_value_t = 50)]
        limit: usize,
        /// The time relative times are measured from, in milliseconds since the epoch, instead
        /// of the clock's: for output that does not change as time passes.
        #[arg(long, value_name = "MS", hide = true)]
        now: Option<u64>,
    },
    /// Print a thread step by step: its status and times, each user message, each assistant
    /// step with its model call (model, finish reason, time, tokens), text and tool calls
    /// (input, outcome, result, time, what the journal recorded), and totals (tokens, time).
    /// Lines are cut to 80 columns; --json prints the stored thread, messages (with each
    /// step's record) and journal in full.
    Show {
        /// The thread's id.
        id: String,
        #[command(flatten)]
        db: DbArgs,
        /// The time relative times are measured from, in milliseconds since the epoch, instead
        /// of the clock's: for output that does not change as time passes.
        #[arg(long, value_name = "MS", hide = true)]
        now: Option<u64>,
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
        ThreadsCommand::List { limit, now, .. } => {
            list::list(&*store, *limit, db.json, clock(*now)).await
        }
        ThreadsCommand::Show { id, now, .. } => show::show(&*store, id, db.json, clock(*now)).await,
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

/// The time output is seen from: `--now`, else the clock (ms since the epoch).
fn clock(now: Option<u64>) -> u64 {
    now.unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    })
}
