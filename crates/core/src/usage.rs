//! [`Usage`]: token accounting, summed across steps and sub-agents.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

/// Tokens used by one model call, a step, or a whole run.
///
/// Counts a provider does not report are `None`; adding keeps a count known as soon as one side
/// knows it. Serialises as
/// `{"input":{"total":…,"no_cache":…,"cache_read":…,"cache_write":…},"output":{"total":…,"text":…,"reasoning":…},"server_tool_uses":…}`
/// with unknown counts and a zero `server_tool_uses` left out.
///
/// ```
/// use toolsmith_core::Usage;
///
/// let mut total = Usage::default();
/// total += Usage::new(100, 20);
/// total += Usage::new(50, 5);
/// assert_eq!(total.input.total, Some(150));
/// assert_eq!(total.output.total, Some(25));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt-side tokens.
    #[serde(default)]
    pub input: InputTokens,
    /// Generated tokens.
    #[serde(default)]
    pub output: OutputTokens,
    /// Billed provider-executed tool invocations (web searches…).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub server_tool_uses: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Usage with only the input and output totals known.
    pub fn new(input: u64, output: u64) -> Self {
        Usage {
            input: InputTokens {
                total: Some(input),
                ..Default::default()
            },
            output: OutputTokens {
                total: Some(output),
                ..Default::default()
            },
            server_tool_uses: 0,
        }
    }

    /// Whether nothing at all is known.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

/// Prompt-side tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct InputTokens {
    /// All input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Input tokens neither read from nor written to a cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_cache: Option<u64>,
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Input tokens written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
}

/// Generated tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct OutputTokens {
    /// All output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Output tokens of visible text (and tool calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<u64>,
    /// Output tokens spent reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
}

fn add_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
    }
}

impl Add for InputTokens {
    type Output = InputTokens;
    fn add(self, o: InputTokens) -> InputTokens {
        InputTokens {
            total: add_opt(self.total, o.total),
            no_cache: add_opt(self.no_cache, o.no_cache),
            cache_read: add_opt(self.cache_read, o.cache_read),
            cache_write: add_opt(self.cache_write, o.cache_write),
        }
    }
}

impl Add for OutputTokens {
    type Output = OutputTokens;
    fn add(self, o: OutputTokens) -> OutputTokens {
        OutputTokens {
            total: add_opt(self.total, o.total),
            text: add_opt(self.text, o.text),
            reasoning: add_opt(self.reasoning, o.reasoning),
        }
    }
}

impl Add for Usage {
    type Output = Usage;
    fn add(self, o: Usage) -> Usage {
        Usage {
            input: self.input + o.input,
            output: self.output + o.output,
            server_tool_uses: self.server_tool_uses.saturating_add(o.server_tool_uses),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        *self = *self + o;
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), Add::add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_counts_stay_unknown_and_known_ones_add() {
        let a = Usage {
            input: InputTokens {
                total: Some(10),
                cache_read: Some(4),
                ..Default::default()
            },
            ..Default::default()
        };
        let b = Usage {
            input: InputTokens {
                total: Some(5),
                ..Default::default()
            },
            server_tool_uses: 2,
            ..Default::default()
        };
        let sum = a + b;
        assert_eq!(sum.input.total, Some(15));
        assert_eq!(sum.input.cache_read, Some(4));
        assert_eq!(sum.input.cache_write, None);
        assert_eq!(sum.output.total, None);
        assert_eq!(sum.server_tool_uses, 2);
    }

    #[test]
    fn serialises_without_unknowns_or_zero_server_tool_uses() {
        let json = serde_json::to_value(Usage::new(3, 4)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"input": {"total": 3}, "output": {"total": 4}})
        );
        let with_tools = Usage {
            server_tool_uses: 1,
            ..Usage::new(3, 4)
        };
        assert_eq!(
            serde_json::to_value(with_tools).unwrap()["server_tool_uses"],
            1
        );
    }
}
