//! [`Variables`]: the values a run's tools may read, and which of them are secret.

use std::collections::{HashMap, HashSet};
use std::fmt;

use crate::{VariableDecl, VariableKind};

/// What is shown instead of a secret's value in anything a model, a log or a stream part sees.
pub const SECRET_MASK: &str = "[secret]";

/// Secret values shorter than this are not masked in results: masking every `1` or `yes` would
/// garble them, and a value that short protects nothing.
pub const MIN_MASKED_LEN: usize = 4;

/// The variables of a run, resolved from its sources (in the Standard Agents spec's precedence,
/// lowest first: prompt, tool, agent, thread), and which of them are secret.
///
/// A variable is secret when a tool declares it so ([`VariableKind::Secret`], the default
/// kind). Secrets reach only the tools' code ([`ToolContext::variable`]): every value a secret
/// holds is replaced by `[secret]` in what a call returns, before the model, the logs or the
/// stream see it, and `Debug` never prints them.
///
/// ```
/// use std::collections::HashMap;
/// use toolsmith_core::{VariableDecl, VariableKind, Variables};
///
/// let agent = HashMap::from([("REGION".to_string(), "eu".to_string())]);
/// let thread = HashMap::from([
///     ("REGION".to_string(), "us".to_string()),
///     ("API_KEY".to_string(), "sk-123456".to_string()),
/// ]);
/// let key = VariableDecl {
///     name: "API_KEY".into(),
///     kind: VariableKind::Secret,
///     required: true,
///     scoped: false,
///     description: "The service's key.".into(),
/// };
/// let vars = Variables::resolve([&agent, &thread], [&key]);
/// assert_eq!(vars.get("REGION"), Some("us"), "the thread wins over the agent");
/// assert!(vars.is_secret("API_KEY") && !vars.is_secret("REGION"));
/// assert!(!format!("{vars:?}").contains("sk-123456"));
/// ```
///
/// [`ToolContext::variable`]: crate::ToolContext::variable
#[derive(Clone, Default)]
pub struct Variables {
    values: HashMap<String, String>,
    secret: HashSet<String>,
    /// Names whose value is the prompt's (the lowest level): a tool's own value wins.
    prompt_level: HashSet<String>,
}

impl Variables {
    /// Resolves `sources`, lowest precedence first (a later source's value wins), with the
    /// kinds `declared` by the run's tools.
    pub fn resolve<'a>(
        sources: impl IntoIterator<Item = &'a HashMap<String, String>>,
        declared: impl IntoIterator<Item = &'a VariableDecl>,
    ) -> Self {
        let mut values = HashMap::new();
        for source in sources {
            values.extend(source.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let secret = declared
            .into_iter()
            .filter(|d| d.kind == VariableKind::Secret)
            .map(|d| d.name.clone())
            .collect();
        Variables {
            values,
            secret,
            prompt_level: HashSet::new(),
        }
    }

    /// Marks the names whose value came from the prompt level only (the lowest
    /// precedence), so that a tool's own value replaces it for that tool's calls.
    pub fn mark_prompt_level<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) {
        self.prompt_level
            .extend(names.into_iter().map(str::to_string));
    }

    /// Whether `name` has no value, or only the prompt's: where a tool's own value applies.
    pub fn open_to_tool_value(&self, name: &str) -> bool {
        !self.values.contains_key(name) || self.prompt_level.contains(name)
    }

    /// A variable's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Whether the variable is declared secret.
    pub fn is_secret(&self, name: &str) -> bool {
        self.secret.contains(name)
    }

    /// Every variable with its value, secrets included (for handing them to a sub-agent).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Sets a value, secret or not.
    pub fn insert(&mut self, name: &str, value: &str, secret: bool) {
        self.values.insert(name.to_string(), value.to_string());
        self.prompt_level.remove(name);
        if secret {
            self.secret.insert(name.to_string());
        } else {
            self.secret.remove(name);
        }
    }

    /// Marks `names` secret too (the kinds a parent run knew, for a sub-agent's variables).
    pub fn mark_secret<'a>(&mut self, names: impl IntoIterator<Item = &'a str>) {
        self.secret.extend(names.into_iter().map(str::to_string));
    }

    /// The names of the secret variables.
    pub fn secret_names(&self) -> impl Iterator<Item = &str> {
        self.secret.iter().map(String::as_str)
    }

    /// The declarations among `declared` that are required and have no value.
    pub fn missing<'a>(&self, declared: &'a [VariableDecl]) -> Vec<&'a str> {
        declared
            .iter()
            .filter(|d| d.required && self.get(&d.name).is_none_or(str::is_empty))
            .map(|d| d.name.as_str())
            .collect()
    }

    /// The values to mask: those of secret variables, at least [`MIN_MASKED_LEN`] bytes long,
    /// longest first (so a secret containing another is masked whole).
    pub fn secret_values(&self) -> Vec<&str> {
        let mut values: Vec<&str> = self
            .secret
            .iter()
            .filter_map(|name| self.get(name))
            .filter(|v| v.len() >= MIN_MASKED_LEN)
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        values
    }
}

impl fmt::Debug for Variables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        let mut names: Vec<&String> = self.values.keys().collect();
        names.sort();
        for name in names {
            if self.is_secret(name) {
                map.entry(name, &SECRET_MASK);
            } else {
                map.entry(name, &self.values[name]);
            }
        }
        map.finish()
    }
}
