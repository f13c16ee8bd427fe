//! Repairing a thread before it is sent: every tool call answered exactly once, right after it.

use toolsmith_core::{Message, ModelOutput, Part, Role, ToolResultPart};

/// The result given to a call that has none.
pub(crate) const INTERRUPTED: &str =
    "Tool call was interrupted before it produced a result; it may not have run.";

/// Makes a thread valid for every provider, in place:
///
/// - every local tool call of an assistant message gets exactly one result, in the tool message
///   that directly follows it, in call order;
/// - a call without a result gets the error result `Tool call was interrupted before it produced
///   a result; it may not have run.` (an aborted run, a trimmed history, a crash);
/// - duplicate results and results for calls that do not exist are dropped.
///
/// Tool calls listed in `pending` (awaiting a client's answer) are left unanswered. The
/// record of the tool messages ([`Message::meta`]) is kept: the first one's, with the calls'
/// times of the others.
///
/// Returns how many results were synthesised.
///
/// ```
/// use serde_json::json;
/// use toolsmith_agent::repair_orphans;
/// use toolsmith_core::{Message, Part, Role, ToolCallPart};
///
/// let call = ToolCallPart {
///     tool_call_id: "c1".into(),
///     tool_name: "search".into(),
///     input: json!({}),
///     provider_executed: false,
///     provider_metadata: Default::default(),
/// };
/// let mut thread = vec![
///     Message::user("hi"),
///     Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
///     Message::user("are you there?"),
/// ];
/// assert_eq!(repair_orphans(&mut thread, &[]), 1);
/// assert_eq!(thread[2].role, Role::Tool);
/// assert_eq!(thread.len(), 4);
/// ```
pub fn repair_orphans(messages: &mut Vec<Message>, pending: &[&str]) -> usize {
    let mut repaired = 0;
    let mut i = 0;
    while i < messages.len() {
        if messages[i].role != Role::Assistant {
            // Tool messages that follow no assistant message answer nothing.
            if messages[i].role == Role::Tool {
                messages.remove(i);
                continue;
            }
            i += 1;
            continue;
        }
        let calls: Vec<(String, String)> = messages[i]
            .tool_calls()
            .filter(|c| !c.provider_executed)
            .map(|c| (c.tool_call_id.clone(), c.tool_name.clone()))
            .collect();
        // Gather the results from the tool messages that follow.
        let mut results: Vec<ToolResultPart> = Vec::new();
        let mut other_parts: Vec<Part> = Vec::new();
        let mut metas = Vec::new();
        let mut j = i + 1;
        while j < messages.len() && messages[j].role == Role::Tool {
            metas.push(messages[j].meta.take());
            for part in std::mem::take(&mut messages[j].content) {
                match part {
                    Part::ToolResult(r) => results.push(r),
                    other => other_parts.push(other),
                }
            }
            j += 1;
        }
        let had_tool_messages = j > i + 1;
        messages.drain(i + 1..j);
        if calls.is_empty() && !had_tool_messages {
            i += 1;
            continue;
        }
        let mut ordered = Vec::with_capacity(calls.len());
        for (id, name) in &calls {
            if let Some(pos) = results.iter().position(|r| &r.tool_call_id == id) {
                // `remove` keeps the rest in order, so the first of duplicate results wins.
                ordered.push(results.remove(pos));
            } else if !pending.contains(&id.as_str()) {
                repaired += 1;
                ordered.push(ToolResultPart {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    output: ModelOutput::error_text(INTERRUPTED),
                    provider_executed: false,
                    provider_metadata: Default::default(),
                });
            }
        }
        let mut content: Vec<Part> = ordered.into_iter().map(Part::ToolResult).collect();
        content.extend(other_parts);
        if !content.is_empty() {
            let mut message = Message::new(Role::Tool, content);
            for meta in metas {
                message.merge_meta(meta);
            }
            messages.insert(i + 1, message);
            i += 1;
        }
        i += 1;
    }
    repaired
}
