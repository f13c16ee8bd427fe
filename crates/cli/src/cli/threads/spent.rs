//! What `threads show` says of the steps' records ([`MessageMeta`]): each model call's line
//! (model, finish reason, time, tokens), a call's time, and what the thread spent in all.
//!
//! Tokens read `120 in (100 cache read), 14 out (5 reasoning)`: cache reads are part of the
//! input, reasoning part of the output, and either is said only when the provider counted it.
//! Times read `812 ms`, `1.2 s`, `2 min 5 s` or `1 h 3 min`.

use toolsmith_core::{MessageMeta, Usage};

/// The line of a model call, or two when one does not fit in `width` columns (the tokens on
/// their own, indented). Nothing when the step has no record.
pub(super) fn model_lines(meta: &MessageMeta, width: usize) -> Vec<String> {
    let mut said = Vec::new();
    if let Some(model) = &meta.model {
        said.push(model.clone());
    }
    if let Some(reason) = meta.finish_reason {
        said.push(reason.as_str().to_owned());
    }
    if let Some(ms) = meta.duration_ms {
        said.push(duration(ms));
    }
    let head = format!("  model: {}", said.join(", "));
    let tokens = meta.usage.as_ref().and_then(tokens);
    match tokens {
        _ if said.is_empty() && tokens.is_none() => Vec::new(),
        None => vec![head],
        Some(tokens) if said.is_empty() => vec![format!("  tokens: {tokens}")],
        Some(tokens) => {
            let one = format!("{head}; tokens: {tokens}");
            if one.chars().count() <= width {
                vec![one]
            } else {
                vec![head, format!("    tokens: {tokens}")]
            }
        }
    }
}

/// The tokens of `usage` in words, or `None` when it counted neither input nor output.
pub(super) fn tokens(usage: &Usage) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(input) = usage.input.total {
        parts.push(match usage.input.cache_read {
            Some(read) if read > 0 => format!("{input} in ({read} cache read)"),
            _ => format!("{input} in"),
        });
    }
    if let Some(output) = usage.output.total {
        parts.push(match usage.output.reasoning {
            Some(reasoning) if reasoning > 0 => format!("{output} out ({reasoning} reasoning)"),
            _ => format!("{output} out"),
        });
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// A length of time in ms, in words.
pub(super) fn duration(ms: u64) -> String {
    const SECOND: u64 = 1_000;
    const MINUTE: u64 = 60 * SECOND;
    const HOUR: u64 = 60 * MINUTE;
    match ms {
        ms if ms < SECOND => format!("{ms} ms"),
        ms if ms < MINUTE => format!("{}.{} s", ms / SECOND, ms % SECOND / 100),
        ms if ms < HOUR => format!("{} min {} s", ms / MINUTE, ms % MINUTE / SECOND),
        ms => format!("{} h {} min", ms / HOUR, ms % HOUR / MINUTE),
    }
}

/// What the thread's steps spent, from their records.
#[derive(Default)]
pub(super) struct Spent {
    usage: Usage,
    /// The model calls' time, ms.
    model_ms: Option<u64>,
    /// The tool messages' time (the steps' calls, each step's together), ms.
    tools_ms: Option<u64>,
}

impl Spent {
    /// Adds a message's record: a model call's (assistant) or its calls' (tool).
    pub(super) fn add(&mut self, meta: &MessageMeta, model_call: bool) {
        if let Some(usage) = meta.usage {
            self.usage += usage;
        }
        if let Some(ms) = meta.duration_ms {
            let sum = if model_call {
                &mut self.model_ms
            } else {
                &mut self.tools_ms
            };
            *sum = Some(sum.unwrap_or(0).saturating_add(ms));
        }
    }

    /// The totals' lines: the tokens, then the time (the model calls' and the tools' added, and
    /// each), each only when some step recorded it.
    pub(super) fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(tokens) = tokens(&self.usage) {
            lines.push(format!("  tokens: {tokens}"));
        }
        let time = match (self.model_ms, self.tools_ms) {
            (None, None) => None,
            (Some(model), None) => Some(format!("{} (model)", duration(model))),
            (None, Some(tools)) => Some(format!("{} (tools)", duration(tools))),
            (Some(model), Some(tools)) => Some(format!(
                "{} (model {}, tools {})",
                duration(model.saturating_add(tools)),
                duration(model),
                duration(tools)
            )),
        };
        if let Some(time) = time {
            lines.push(format!("  time:   {time}"));
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use toolsmith_core::{InputTokens, OutputTokens, UnifiedFinishReason};

    use super::*;

    fn rich_usage() -> Usage {
        Usage {
            input: InputTokens {
                total: Some(1_200),
                cache_read: Some(1_000),
                ..Default::default()
            },
            output: OutputTokens {
                total: Some(140),
                reasoning: Some(50),
                ..Default::default()
            },
            server_tool_uses: 0,
        }
    }

    #[test]
    fn durations_read_in_the_largest_unit_that_fits() {
        assert_eq!(duration(0), "0 ms");
        assert_eq!(duration(812), "812 ms");
        assert_eq!(duration(1_250), "1.2 s");
        assert_eq!(duration(59_999), "59.9 s");
        assert_eq!(duration(125_000), "2 min 5 s");
        assert_eq!(duration(3_780_000), "1 h 3 min");
    }

    #[test]
    fn tokens_say_cache_reads_and_reasoning_only_when_counted() {
        assert_eq!(tokens(&Usage::new(120, 14)).unwrap(), "120 in, 14 out");
        assert_eq!(
            tokens(&rich_usage()).unwrap(),
            "1200 in (1000 cache read), 140 out (50 reasoning)"
        );
        assert_eq!(tokens(&Usage::default()), None);
    }

    #[test]
    fn a_model_line_is_one_line_when_it_fits_and_two_when_not() {
        let meta = MessageMeta::new()
            .model("gpt-x")
            .finish_reason(UnifiedFinishReason::ToolCalls)
            .usage(Usage::new(120, 14))
            .timed(1, 812);
        assert_eq!(
            model_lines(&meta, 80),
            ["  model: gpt-x, tool-calls, 812 ms; tokens: 120 in, 14 out"]
        );
        let long = meta
            .clone()
            .model("claude-sonnet-4-5-20250929")
            .usage(rich_usage());
        let lines = model_lines(&long, 80);
        assert_eq!(
            lines,
            [
                "  model: claude-sonnet-4-5-20250929, tool-calls, 812 ms",
                "    tokens: 1200 in (1000 cache read), 140 out (50 reasoning)"
            ]
        );
        assert!(model_lines(&MessageMeta::new(), 80).is_empty());
    }

    #[test]
    fn the_totals_add_the_steps_tokens_and_times() {
        let mut spent = Spent::default();
        assert!(spent.lines().is_empty(), "a thread without records");
        let step = MessageMeta::new().usage(Usage::new(100, 10)).timed(1, 900);
        spent.add(&step, true);
        spent.add(&MessageMeta::new().timed(2, 350).call("c1", 340), false);
        spent.add(&MessageMeta::new().usage(rich_usage()).timed(3, 600), true);
        assert_eq!(
            spent.lines(),
            [
                "  tokens: 1300 in (1000 cache read), 150 out (50 reasoning)",
                "  time:   1.8 s (model 1.5 s, tools 350 ms)"
            ]
        );
    }
}
