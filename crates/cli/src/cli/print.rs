//! Printing a run: human-readable text, or one JSON part per line.

use std::io::Write;

use serde_json::Value;
use toolsmith_agent::{RunError, RunOutput};
use toolsmith_core::RunPart;

/// Prints the parts of a run as they arrive, then its end.
pub(crate) trait Printer: Send {
    /// Prints one part.
    fn part(&mut self, part: &RunPart, out: &mut dyn Write);

    /// Prints what the parts did not say about the run's end.
    fn end(&mut self, result: &Result<RunOutput, RunError>, out: &mut dyn Write) {
        let _ = (result, out);
    }
}

/// `--json`: every part as one line of JSON.
pub(crate) struct JsonLines;

impl Printer for JsonLines {
    fn part(&mut self, part: &RunPart, out: &mut dyn Write) {
        if let Ok(line) = serde_json::to_string(part) {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// Text as it arrives, and one line per tool call and result.
#[derive(Default)]
pub(crate) struct Human {
    /// Whether the cursor is in the middle of a line of model text.
    mid_line: bool,
}

/// The longest tool input or output shown on one line.
const SUMMARY_CHARS: usize = 160;

impl Human {
    fn line(&mut self, out: &mut dyn Write, text: &str) {
        if self.mid_line {
            let _ = writeln!(out);
            self.mid_line = false;
        }
        let _ = writeln!(out, "{text}");
    }
}

impl Printer for Human {
    fn part(&mut self, part: &RunPart, out: &mut dyn Write) {
        match part {
            RunPart::TextDelta { text, .. } => {
                let _ = write!(out, "{text}");
                if !text.is_empty() {
                    self.mid_line = !text.ends_with('\n');
                }
            }
            RunPart::TextEnd { .. } if self.mid_line => {
                let _ = writeln!(out);
                self.mid_line = false;
            }
            RunPart::Nested { path, part } => {
                // A sub-agent's tool activity, indented under the calls it came through; its
                // text is its answer, shown as the sub-agent call's result.
                if let Some(line) = tool_line(part) {
                    let names: Vec<&str> = path.iter().map(|h| h.tool_name.as_str()).collect();
                    let indent = "  ".repeat(path.len());
                    self.line(out, &format!("{indent}[{}] {line}", names.join(" › ")));
                }
            }
            part if let Some(line) = tool_line(part) => self.line(out, &line),
            RunPart::Source(source) => {
                let what = source
                    .url
                    .as_deref()
                    .or(source.title.as_deref())
                    .unwrap_or(&source.id);
                self.line(out, &format!("[source] {what}"));
            }
            RunPart::Error { error } => {
                self.line(out, "");
                eprintln!("error: {} ({})", error.message, error.code);
            }
            RunPart::Abort { .. } => {
                self.line(out, "");
                eprintln!("aborted");
            }
            RunPart::Finish { .. } if self.mid_line => {
                let _ = writeln!(out);
                self.mid_line = false;
            }
            _ => {}
        }
    }

    fn end(&mut self, result: &Result<RunOutput, RunError>, out: &mut dyn Write) {
        if let Ok(output) = result {
            for pause in &output.pending {
                self.line(
                    out,
                    &format!(
                        "… waiting for the caller: {} {} ({}, call {}{})",
                        pause.tool_name,
                        summary(&pause.input),
                        pause.kind.as_str(),
                        pause.tool_call_id,
                        if pause.path.is_empty() {
                            String::new()
                        } else {
                            format!(" inside sub-agent call {}", pause.path.join(" › "))
                        }
                    ),
                );
            }
        }
    }
}

/// The line for a tool part: a call, a result, an error, a denial, an approval request.
fn tool_line(part: &RunPart) -> Option<String> {
    match part {
        RunPart::ToolCall {
            tool_name,
            input,
            provider_executed,
            ..
        } => {
            let by = if *provider_executed {
                " (by the provider)"
            } else {
                ""
            };
            Some(format!("→ {tool_name}{by} {}", summary(input)))
        }
        RunPart::ToolResult {
            tool_name,
            output,
            is_error,
            ..
        } => {
            let mark = if *is_error { "✗" } else { "←" };
            Some(format!("{mark} {tool_name}: {}", summary(output)))
        }
        RunPart::ToolError {
            tool_name, error, ..
        } => Some(format!("✗ {tool_name}: {}", one_line(&error.message))),
        RunPart::ToolOutputDenied {
            tool_name, reason, ..
        } => {
            let reason = reason.as_deref().unwrap_or("no reason given");
            Some(format!("✗ {tool_name}: denied ({reason})"))
        }
        RunPart::ToolApprovalRequest {
            tool_name,
            input,
            approval_id,
            ..
        } => Some(format!(
            "? {tool_name} {} needs approval ({approval_id})",
            summary(input)
        )),
        _ => None,
    }
}

/// A value on one short line: strings as they are, anything else as compact JSON.
fn summary(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    one_line(&text)
}

fn one_line(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= SUMMARY_CHARS {
        return flat;
    }
    let cut: String = flat.chars().take(SUMMARY_CHARS - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(parts: &[RunPart]) -> String {
        let mut printer = Human::default();
        let mut out = Vec::new();
        for part in parts {
            printer.part(part, &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_then_tool_lines_start_on_their_own_line() {
        let text = render(&[
            RunPart::TextDelta {
                id: "t".into(),
                text: "Let me check".into(),
            },
            RunPart::ToolCall {
                tool_call_id: "c".into(),
                tool_name: "calculator".into(),
                input: json!({"expression": "1+1"}),
                provider_executed: false,
                invalid: false,
            },
            RunPart::ToolResult {
                tool_call_id: "c".into(),
                tool_name: "calculator".into(),
                input: json!({}),
                output: json!({"result": 2}),
                is_error: false,
                provider_executed: false,
            },
        ]);
        assert_eq!(
            text,
            "Let me check\n→ calculator {\"expression\":\"1+1\"}\n← calculator: {\"result\":2}\n"
        );
    }

    #[test]
    fn a_sub_agent_s_tool_lines_are_indented_under_its_path_and_its_text_is_not_echoed() {
        let hop = |id: &str, name: &str| toolsmith_core::NestedHop {
            tool_call_id: id.into(),
            tool_name: name.into(),
        };
        let call = RunPart::ToolCall {
            tool_call_id: "c3".into(),
            tool_name: "deploy".into(),
            input: json!({"service": "api"}),
            provider_executed: false,
            invalid: false,
        };
        let text = render(&[
            RunPart::TextDelta {
                id: "t".into(),
                text: "child thinking".into(),
            }
            .nested(hop("c1", "lead")),
            call.nested(hop("c2", "ops")).nested(hop("c1", "lead")),
        ]);
        assert_eq!(text, "    [lead › ops] → deploy {\"service\":\"api\"}\n");
    }

    #[test]
    fn long_values_are_cut_on_one_line() {
        let long = "x ".repeat(200);
        let s = summary(&Value::String(long));
        assert_eq!(s.chars().count(), SUMMARY_CHARS);
        assert!(s.ends_with('…'));
        assert!(!s.contains('\n'));
    }
}
