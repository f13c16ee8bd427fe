//! [`ToolRouter`]: a cheap model picks the tools a run declares, as RadarOS's `toolRouter`.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use toolsmith_core::{
    CallSettings, LanguageModel, Message, ModelPart, ModelRequest, Toolset, Usage,
};

/// How many characters of a tool's description the index shows.
const DESCRIPTION_CHARS: usize = 100;

/// Picks, once per run, the tools the model is offered: for agents with many tools, a cheap
/// model reads a one-line index (`name — first 100 characters of the description`) and the
/// run's query and answers a JSON array of names.
///
/// RadarOS's rules, with its one trap closed:
/// - skipped when the agent has no more tools than `max_tools`;
/// - the first `[...]` of the answer is read, names that are no tool dropped;
/// - at least `min_tools` names picked (default 0): those tools are declared (`max_tools` is
///   the router's instruction, not re-checked);
/// - an error, an answer without an array, too few names — **or no name at all**, which in
///   RadarOS (with `minTools` 0) leaves the model with no tool — declares every tool.
///
/// Never left out, whatever the answer: the tools of calls the run resumes (waiting for an
/// approval or a result, or interrupted), the sub-agent control tools and the artifact tools.
/// Only the declarations change: a call to a tool left out still runs. The router's tokens
/// count in the run's usage.
///
/// ```
/// # fn demo(cheap: std::sync::Arc<dyn toolsmith_core::LanguageModel>) {
/// use toolsmith_agent::ToolRouter;
///
/// let router = ToolRouter::new(cheap).max_tools(5);
/// # }
/// ```
#[derive(Clone)]
pub struct ToolRouter {
    model: Arc<dyn LanguageModel>,
    max_tools: usize,
    min_tools: usize,
    temperature: f32,
}

impl ToolRouter {
    /// A router on `model`: at most 8 tools, at least 0, temperature 0 (RadarOS's defaults).
    pub fn new(model: Arc<dyn LanguageModel>) -> Self {
        ToolRouter {
            model,
            max_tools: 8,
            min_tools: 0,
            temperature: 0.0,
        }
    }

    /// The most tools the router is asked to pick (at least 1).
    #[must_use]
    pub fn max_tools(mut self, n: usize) -> Self {
        self.max_tools = n.max(1);
        self
    }

    /// The fewest picked names the run accepts; fewer declares every tool.
    #[must_use]
    pub fn min_tools(mut self, n: usize) -> Self {
        self.min_tools = n;
        self
    }

    /// The router model's temperature.
    #[must_use]
    pub fn temperature(mut self, t: f32) -> Self {
        self.temperature = t;
        self
    }

    /// The instructions the router model gets.
    pub fn prompt(&self) -> String {
        format!(
            "You are a tool selector. Given a user query and a list of available tools, choose \
             the tools needed to answer the query. Return ONLY a JSON array of tool name \
             strings, for example [\"tool_a\", \"tool_b\"]. Pick at most {} tools.",
            self.max_tools
        )
    }

    /// The tools a run with `query` declares, from `tools`, keeping `keep`; the tokens spent.
    pub(crate) async fn route(
        &self,
        tools: &Toolset,
        query: &str,
        keep: &HashSet<String>,
    ) -> (Toolset, Usage) {
        if tools.len() <= self.max_tools {
            return (tools.clone(), Usage::default());
        }
        let index: Vec<String> = tools
            .iter()
            .map(|t| {
                let spec = t.spec();
                let description: String =
                    spec.description().chars().take(DESCRIPTION_CHARS).collect();
                format!("{} — {description}", spec.name())
            })
            .collect();
        let request = ModelRequest {
            messages: vec![
                Message::system(self.prompt()),
                Message::user(format!(
                    "Tools:\n{}\n\nQuery: \"{query}\"",
                    index.join("\n")
                )),
            ],
            settings: CallSettings {
                max_output_tokens: Some(400),
                temperature: Some(self.temperature),
                ..CallSettings::default()
            },
            ..ModelRequest::default()
        };
        let (answer, usage) = match self.ask(&request).await {
            Ok(answered) => answered,
            Err(e) => {
                tracing::warn!("the tool router failed ({e}): every tool declared");
                return (tools.clone(), Usage::default());
            }
        };
        let picked = picked(&answer, tools);
        if picked.is_empty() || picked.len() < self.min_tools {
            tracing::debug!(
                answer,
                "the tool router picked too few tools: every tool declared"
            );
            return (tools.clone(), usage);
        }
        let routed = tools
            .clone()
            .filter(|t| picked.contains(t.spec().name()) || keep.contains(t.spec().name()));
        (routed, usage)
    }

    async fn ask(
        &self,
        request: &ModelRequest,
    ) -> Result<(String, Usage), toolsmith_core::ModelError> {
        let mut stream = self.model.stream(request).await?;
        let (mut text, mut usage) = (String::new(), Usage::default());
        while let Some(part) = stream.next().await {
            match part? {
                ModelPart::TextDelta { delta, .. } => text.push_str(&delta),
                ModelPart::Finish { usage: spent, .. } => usage = spent,
                _ => {}
            }
        }
        Ok((text, usage))
    }
}

impl std::fmt::Debug for ToolRouter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRouter")
            .field("model", &self.model.model_id())
            .field("max_tools", &self.max_tools)
            .field("min_tools", &self.min_tools)
            .field("temperature", &self.temperature)
            .finish()
    }
}

/// The names of `tools` in the first `[...]` of `answer`.
fn picked(answer: &str, tools: &Toolset) -> HashSet<String> {
    let Some(start) = answer.find('[') else {
        return HashSet::new();
    };
    let Some(len) = answer[start..].find(']') else {
        return HashSet::new();
    };
    let Ok(names) = serde_json::from_str::<Vec<serde_json::Value>>(&answer[start..=start + len])
    else {
        return HashSet::new();
    };
    names
        .iter()
        .filter_map(serde_json::Value::as_str)
        .filter(|name| tools.contains(name))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::Value;
    use toolsmith_core::{ToolError, from_fn};

    use super::*;

    fn tools(n: usize) -> Toolset {
        (0..n)
            .map(|i| {
                from_fn(
                    format!("t{i}"),
                    format!("Tool {i}."),
                    |_: Value, _cx| async { Ok::<_, ToolError>("x") },
                )
            })
            .collect()
    }

    #[test]
    fn the_first_array_names_the_tools_and_strangers_are_dropped() {
        let set = tools(3);
        let picked = picked("Sure: [\"t0\", \"t2\", \"nope\", 3] and [\"t1\"]", &set);
        assert_eq!(picked, HashSet::from(["t0".into(), "t2".into()]));
        assert!(super::picked("none", &set).is_empty());
        assert!(super::picked("[\"t0\"", &set).is_empty());
        assert!(super::picked("[t0]", &set).is_empty());
    }
}
