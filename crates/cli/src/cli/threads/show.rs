//! `toolsmith threads show ID`: one thread as a person reads it, on an 80-column terminal.
//!
//! First the thread (status in words as `threads list` gives it, run, parent, tags, when it was
//! created and last written, what a paused run waits for), then the conversation step by step:
//! each user message, and each assistant message as a numbered step with its model call (model,
//! finish reason, time, tokens: `spent.rs`), text, reasoning, and tool calls; a call shows its
//! input, its outcome (`ok`, `error`, `denied`, `waiting for approval`, `waiting for` the
//! client's result, an external result or its sub-agent, `no result`: the run stopped before it
//! ended), what it returned, its time, and what the journal recorded of it (status, attempts,
//! side effect). Totals close the output: steps and calls, then the tokens and time the steps
//! recorded. A thread stored before steps kept records shows neither model lines, times nor
//! those totals. Every line is cut to 80 columns; `--json` prints the stored records in full.

use std::collections::HashMap;

use serde_json::json;
use toolsmith_core::{Message, ModelOutput, Part, PauseKind, Role, ToolCallPart, ToolResultPart};
use toolsmith_store::{JournalEntry, Store, Thread};

use super::spent::{Spent, duration, model_lines};
use super::{list, when};

/// The widest line printed.
const WIDTH: usize = 80;

/// Prints thread `id` of `store`, times seen from `now` (ms since the epoch).
pub(super) async fn show(store: &dyn Store, id: &str, json: bool, now: u64) -> Result<(), String> {
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
    for line in render(&thread, &messages, &journal, now) {
        println!("{line}");
    }
    Ok(())
}

/// The lines `threads show` prints.
fn render(
    thread: &Thread,
    messages: &[Message],
    journal: &[JournalEntry],
    now: u64,
) -> Vec<String> {
    let mut out = Lines::default();
    header(&mut out, thread, now);
    let results: HashMap<&str, &ToolResultPart> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            Part::ToolResult(r) => Some((r.tool_call_id.as_str(), r)),
            _ => None,
        })
        .collect();
    // The journal in seq order: the last entry of a call is its latest attempt.
    let mut entries: HashMap<&str, &JournalEntry> = HashMap::new();
    for entry in journal {
        entries.insert(entry.tool_call_id.as_str(), entry);
    }
    // Each call's time, from its tool message's record.
    let times: HashMap<&str, u64> = messages
        .iter()
        .filter_map(|m| m.meta.as_ref())
        .flat_map(|meta| &meta.calls)
        .map(|(id, ms)| (id.as_str(), *ms))
        .collect();
    let found = Found {
        results,
        entries,
        times,
    };
    let mut totals = Totals::default();
    for message in messages {
        if let Some(meta) = &message.meta {
            totals.spent.add(meta, message.role == Role::Assistant);
        }
        match message.role {
            Role::System => out.cut(format!("system: {}", text_of(message))),
            Role::User => {
                out.blank();
                out.cut(format!("user: {}", text_of(message)));
            }
            Role::Assistant => {
                totals.steps += 1;
                out.blank();
                out.push(format!("step {}", totals.steps));
                step(&mut out, thread, message, &found, &mut totals);
            }
            // Results are shown with their calls; a tool message says nothing else.
            Role::Tool => {}
        }
    }
    out.blank();
    out.cut(totals.line());
    for line in totals.spent.lines() {
        out.cut(line);
    }
    out.0
}

/// What the calls' lines look up by call id: the result, the latest journal entry, the time.
struct Found<'a> {
    results: HashMap<&'a str, &'a ToolResultPart>,
    entries: HashMap<&'a str, &'a JournalEntry>,
    times: HashMap<&'a str, u64>,
}

fn header(out: &mut Lines, thread: &Thread, now: u64) {
    out.cut(format!("thread {}", thread.id));
    let status = list::status(thread, now, &toolsmith_store::Holder::current());
    out.cut(format!("  status:   {status}"));
    if let Some(run) = &thread.run_id {
        out.cut(format!("  run:      {run}"));
    }
    if let Some(parent) = &thread.parent_id {
        out.cut(format!("  parent:   {parent}"));
    }
    if !thread.tags.is_empty() {
        out.cut(format!("  tags:     {}", thread.tags.join(", ")));
    }
    out.cut(format!("  created:  {}", when::ago(thread.created_at, now)));
    out.cut(format!("  updated:  {}", when::ago(thread.updated_at, now)));
    for pause in &thread.pending {
        out.cut(format!(
            "  waits for: {} of {} (call {})",
            pause.kind.as_str(),
            pause.tool_name,
            pause.tool_call_id
        ));
    }
}

/// One assistant message's lines.
fn step(
    out: &mut Lines,
    thread: &Thread,
    message: &Message,
    found: &Found<'_>,
    totals: &mut Totals,
) {
    if let Some(meta) = &message.meta {
        for line in model_lines(meta, WIDTH) {
            out.cut(line);
        }
    }
    for part in &message.content {
        match part {
            Part::Text { text, .. } if !text.trim().is_empty() => {
                out.cut(format!("  text: {}", text.trim()));
            }
            Part::Reasoning { text, .. } if !text.trim().is_empty() => {
                out.cut(format!("  reasoning: {}", text.trim()));
            }
            Part::ToolCall(call) => {
                call_lines(out, thread, message, call, found, totals);
            }
            Part::File { media_type, .. } => out.cut(format!("  file: {media_type}")),
            Part::Source(_) => totals.sources += 1,
            Part::NestedRun(nested) => out.cut(format!(
                "  sub-agent run {} of {} waits for {} answer(s)",
                nested.run_id,
                nested.tool_name,
                nested.pending.len()
            )),
            // Results are shown with their calls, approval requests as the calls' outcome.
            _ => {}
        }
    }
}

fn call_lines(
    out: &mut Lines,
    thread: &Thread,
    message: &Message,
    call: &ToolCallPart,
    found: &Found<'_>,
    totals: &mut Totals,
) {
    totals.calls += 1;
    let id = call.tool_call_id.as_str();
    let (outcome, returned) = match found.results.get(id).map(|r| &r.output) {
        Some(ModelOutput::ErrorText { value }) => ("error".to_owned(), Some(value.clone())),
        Some(ModelOutput::ErrorJson { value }) => ("error".to_owned(), Some(value.to_string())),
        Some(ModelOutput::ExecutionDenied { reason }) => ("denied".to_owned(), reason.clone()),
        Some(output) => ("ok".to_owned(), Some(returned_text(output))),
        None => (waiting(thread, message, id), None),
    };
    match outcome.as_str() {
        "ok" => totals.ok += 1,
        "error" => totals.errors += 1,
        "denied" => totals.denied += 1,
        _ => totals.open += 1,
    }
    let server = if call.provider_executed {
        ", by the provider"
    } else {
        ""
    };
    out.cut(format!(
        "  tool {} (call {id}{server}): {outcome}",
        call.tool_name
    ));
    out.cut(format!("    input:   {}", call.input));
    if let Some(returned) = returned {
        out.cut(format!("    result:  {returned}"));
    }
    if let Some(ms) = found.times.get(id) {
        out.cut(format!("    time:    {}", duration(*ms)));
    }
    if let Some(entry) = found.entries.get(id) {
        let effect = match (entry.side_effect, entry.idempotent) {
            (false, _) => "read-only",
            (true, true) => "side effect, idempotent",
            (true, false) => "side effect, not idempotent",
        };
        let attempts = if entry.attempt == 1 {
            String::new()
        } else {
            format!(", attempt {}", entry.attempt)
        };
        out.cut(format!(
            "    journal: {}{attempts} [{effect}]",
            entry.status.as_str()
        ));
    }
}

/// Why a call has no result: what its run waits for, or `no result` (the run stopped first).
fn waiting(thread: &Thread, message: &Message, id: &str) -> String {
    if let Some(pause) = thread.pending.iter().find(|p| p.tool_call_id == id) {
        return match pause.kind {
            PauseKind::Approval => "waiting for approval".to_owned(),
            PauseKind::ClientTool => "waiting for the client's result".to_owned(),
            PauseKind::External => "waiting for an external result".to_owned(),
            PauseKind::Nested => "waiting for its sub-agent".to_owned(),
            other => format!("waiting ({})", other.as_str()),
        };
    }
    let asked = message
        .content
        .iter()
        .any(|p| matches!(p, Part::ToolApprovalRequest(r) if r.tool_call_id == id));
    if asked {
        "waiting for approval".to_owned()
    } else {
        "no result".to_owned()
    }
}

/// What a successful call returned, as text.
fn returned_text(output: &ModelOutput) -> String {
    match output {
        ModelOutput::Text { value } => value.clone(),
        ModelOutput::Json { value } => value.to_string(),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.get("value").map(ToString::to_string))
            .unwrap_or_default(),
    }
}

/// A message's text parts, or what else it holds.
fn text_of(message: &Message) -> String {
    let text = message.text();
    if !text.trim().is_empty() {
        return text.trim().to_owned();
    }
    let files = message
        .content
        .iter()
        .filter(|p| matches!(p, Part::File { .. }))
        .count();
    match files {
        0 => "(empty)".to_owned(),
        n => format!("({n} file(s))"),
    }
}

/// What the steps add up to.
#[derive(Default)]
struct Totals {
    steps: u64,
    calls: u64,
    ok: u64,
    errors: u64,
    denied: u64,
    /// Calls without a result: waiting, or stopped.
    open: u64,
    sources: u64,
    /// The tokens and time the steps recorded.
    spent: Spent,
}

impl Totals {
    fn line(&self) -> String {
        let mut line = format!("total: {} step(s), {} tool call(s)", self.steps, self.calls);
        if self.calls > 0 {
            let mut parts = vec![format!("{} ok", self.ok)];
            for (n, what) in [
                (self.errors, "error(s)"),
                (self.denied, "denied"),
                (self.open, "without result"),
            ] {
                if n > 0 {
                    parts.push(format!("{n} {what}"));
                }
            }
            line.push_str(&format!(" ({})", parts.join(", ")));
        }
        if self.sources > 0 {
            line.push_str(&format!(", {} source(s)", self.sources));
        }
        line
    }
}

/// Output lines, each on one line of at most [`WIDTH`] columns.
#[derive(Default)]
struct Lines(Vec<String>);

impl Lines {
    fn push(&mut self, line: String) {
        self.0.push(line);
    }

    /// `line` with its line breaks as spaces, cut with `…` past [`WIDTH`] characters.
    fn cut(&mut self, line: String) {
        let flat: String = line
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        let cut = match flat.char_indices().nth(WIDTH - 1) {
            Some((at, _)) if flat.chars().count() > WIDTH => format!("{}…", &flat[..at]),
            _ => flat,
        };
        self.0.push(cut);
    }

    fn blank(&mut self) {
        self.0.push(String::new());
    }
}
