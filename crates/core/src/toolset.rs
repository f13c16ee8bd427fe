//! [`Toolset`]: an ordered, composable collection of tools.

use std::sync::{Arc, OnceLock};

use indexmap::IndexMap;
use serde_json::Value;

use crate::{
    IntoTool, PrepareTools, RunScope, SharedTool, StartCalls, Tool, ToolContext, ToolDeclaration,
    ToolDeclarations, ToolError, ToolKind, ToolMeta, ToolOutput, ToolSpec,
};

/// An ordered map from names to tools.
///
/// Cloning is O(1): the map is shared until one clone changes. Changing a toolset (add, remove,
/// replace) drops its cached [declarations](Self::declarations), which are otherwise built once
/// and reused for every request.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{from_fn, ToolError, Toolset};
///
/// let ping = from_fn("ping", "Reply pong.", |_: serde_json::Map<String, serde_json::Value>, _cx| async {
///     Ok::<_, ToolError>("pong")
/// });
/// let mut tools = Toolset::new().with(ping).prefix("net_");
/// assert_eq!(tools.names().collect::<Vec<_>>(), ["net_ping"]);
/// assert!(tools.remove("net_ping"));
/// assert!(!tools.remove("net_ping"));
/// ```
#[derive(Clone, Default)]
pub struct Toolset {
    tools: Arc<IndexMap<Arc<str>, SharedTool>>,
    declarations: Arc<OnceLock<Arc<ToolDeclarations>>>,
}

impl Toolset {
    /// An empty toolset.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool (builder style). A tool of the same name is replaced in place.
    pub fn with(mut self, tool: impl IntoTool) -> Self {
        self.add(tool);
        self
    }

    fn tools_mut(&mut self) -> &mut IndexMap<Arc<str>, SharedTool> {
        self.declarations = Arc::default();
        Arc::make_mut(&mut self.tools)
    }

    /// Adds a tool at the end, or replaces the tool of the same name in place; returns the
    /// replaced tool.
    pub fn add(&mut self, tool: impl IntoTool) -> Option<SharedTool> {
        let tool = tool.into_tool();
        let name = tool.spec().shared_name().clone();
        self.tools_mut().insert(name, tool)
    }

    /// Removes the named tool; `true` if it existed.
    pub fn remove(&mut self, name: &str) -> bool {
        if !self.tools.contains_key(name) {
            return false;
        }
        self.tools_mut().shift_remove(name).is_some()
    }

    /// Replaces the tool of the same name; `false` (and nothing added) if there is none.
    pub fn replace(&mut self, tool: impl IntoTool) -> bool {
        let tool = tool.into_tool();
        if !self.tools.contains_key(tool.spec().name()) {
            return false;
        }
        self.add(tool);
        true
    }

    /// The named tool.
    pub fn get(&self, name: &str) -> Option<&SharedTool> {
        self.tools.get(name)
    }

    /// Whether the named tool is present.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools, in order.
    pub fn iter(&self) -> impl Iterator<Item = &SharedTool> {
        self.tools.values()
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(|k| &**k)
    }

    /// The tools' specs, in order (RadarOS's `listTools`).
    pub fn list(&self) -> Vec<&ToolSpec> {
        self.tools.values().map(|t| t.spec()).collect()
    }

    /// Appends `other`'s tools. On a name clash the tool already here wins, and the clash is
    /// logged as a warning.
    pub fn merge(mut self, other: Toolset) -> Self {
        for tool in other.iter() {
            if self.contains(tool.spec().name()) {
                tracing::warn!(
                    tool = tool.spec().name(),
                    "tool name clash on merge; keeping the first"
                );
                continue;
            }
            self.add(tool.clone());
        }
        self
    }

    /// Keeps only the tools for which `keep` is true.
    pub fn filter(self, mut keep: impl FnMut(&dyn Tool) -> bool) -> Self {
        let tools = self
            .tools
            .iter()
            .filter(|(_, t)| keep(t.as_ref()))
            .map(|(k, t)| (k.clone(), t.clone()))
            .collect();
        Toolset {
            tools: Arc::new(tools),
            declarations: Arc::default(),
        }
    }

    /// Prefixes every tool's name with `prefix`.
    pub fn prefix(self, prefix: &str) -> Self {
        let tools = self
            .tools
            .values()
            .map(|t| {
                let name: Arc<str> = format!("{prefix}{}", t.spec().name()).into();
                (name.clone(), Renamed::wrap(t.clone(), name))
            })
            .collect();
        Toolset {
            tools: Arc::new(tools),
            declarations: Arc::default(),
        }
    }

    /// Renames one tool, keeping its position. Unknown names leave the toolset unchanged; a new
    /// name that is taken replaces the tool that had it.
    pub fn rename(self, from: &str, to: &str) -> Self {
        if !self.contains(from) || from == to {
            return self;
        }
        let to: Arc<str> = to.into();
        let tools = self
            .tools
            .iter()
            .filter(|(k, _)| k.as_ref() != to.as_ref())
            .map(|(k, t)| {
                if &**k == from {
                    (to.clone(), Renamed::wrap(t.clone(), to.clone()))
                } else {
                    (k.clone(), t.clone())
                }
            })
            .collect();
        Toolset {
            tools: Arc::new(tools),
            declarations: Arc::default(),
        }
    }

    /// Replaces one tool's [`ToolMeta`] with `f(meta)` (requiring approval for a tool configured
    /// with `needsApproval`, say), keeping its spec, kind, executor and position. Unknown names
    /// leave the toolset unchanged.
    ///
    /// ```
    /// use toolsmith_core::{Approval, ToolError, Toolset, from_fn};
    ///
    /// let add = from_fn("add", "Add.", |(a, b): (i64, i64), _cx| async move {
    ///     Ok::<_, ToolError>(a + b)
    /// });
    /// let tools = Toolset::new()
    ///     .with(add)
    ///     .map_meta("add", |meta| meta.approval(Approval::Always));
    /// assert!(matches!(tools.get("add").unwrap().meta().approval, Approval::Always));
    /// ```
    pub fn map_meta(self, name: &str, f: impl FnOnce(ToolMeta) -> ToolMeta) -> Self {
        let Some(tool) = self.get(name).cloned() else {
            return self;
        };
        let meta = f(tool.meta().clone());
        let mut tools = (*self.tools).clone();
        if let Some(slot) = tools.get_mut(name) {
            *slot = Arc::new(WithMeta { inner: tool, meta });
        }
        Toolset {
            tools: Arc::new(tools),
            declarations: Arc::default(),
        }
    }

    /// Adds the tools a [`ToolResolver`] produced for one run. Static tools win on a name clash,
    /// as in RadarOS.
    pub fn with_resolved(mut self, resolved: Toolset) -> Self {
        for tool in resolved.iter() {
            if !self.contains(tool.spec().name()) {
                self.add(tool.clone());
            }
        }
        self
    }

    /// The declarations the model sees, built on first use and shared until the toolset changes.
    pub fn declarations(&self) -> Arc<ToolDeclarations> {
        self.declarations
            .get_or_init(|| {
                Arc::new(ToolDeclarations::new(
                    self.tools
                        .values()
                        .map(|t| {
                            let spec = t.spec();
                            ToolDeclaration {
                                name: spec.shared_name().clone(),
                                description: spec.model_description().into_owned(),
                                input_schema: spec.input_schema().clone(),
                                strict: spec.strict(),
                                kind: t.kind().clone(),
                            }
                        })
                        .collect(),
                ))
            })
            .clone()
    }
}

impl std::fmt::Debug for Toolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl<T: IntoTool> FromIterator<T> for Toolset {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut set = Toolset::new();
        for tool in iter {
            set.add(tool);
        }
        set
    }
}

/// Produces extra tools at the start of each run (RadarOS's `toolResolver`): tools that depend
/// on the caller, the tenant, the thread.
///
/// Any `Fn(&RunScope) -> Result<Toolset, ToolError>` is a resolver.
#[async_trait::async_trait]
pub trait ToolResolver: Send + Sync + 'static {
    /// The tools for this run.
    async fn resolve(&self, scope: &RunScope) -> Result<Toolset, ToolError>;
}

#[async_trait::async_trait]
impl<F> ToolResolver for F
where
    F: Fn(&RunScope) -> Result<Toolset, ToolError> + Send + Sync + 'static,
{
    async fn resolve(&self, scope: &RunScope) -> Result<Toolset, ToolError> {
        self(scope)
    }
}

/// A tool with other runtime facts.
struct WithMeta {
    inner: SharedTool,
    meta: ToolMeta,
}

#[async_trait::async_trait]
impl Tool for WithMeta {
    fn spec(&self) -> &ToolSpec {
        self.inner.spec()
    }
    fn meta(&self) -> &ToolMeta {
        &self.meta
    }
    fn kind(&self) -> &ToolKind {
        self.inner.kind()
    }
    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.inner.call(input, cx).await
    }
    fn offered(&self, scope: &RunScope) -> bool {
        self.inner.offered(scope)
    }
    fn prepare_tools(&self) -> Option<&dyn PrepareTools> {
        self.inner.prepare_tools()
    }
    fn start_calls(&self) -> Option<&dyn StartCalls> {
        self.inner.start_calls()
    }
}

/// A tool under another name.
struct Renamed {
    inner: SharedTool,
    spec: ToolSpec,
}

impl Renamed {
    fn wrap(inner: SharedTool, name: Arc<str>) -> SharedTool {
        let spec = inner.spec().renamed(name);
        Arc::new(Renamed { inner, spec })
    }
}

#[async_trait::async_trait]
impl Tool for Renamed {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }
    fn meta(&self) -> &ToolMeta {
        self.inner.meta()
    }
    fn kind(&self) -> &ToolKind {
        self.inner.kind()
    }
    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.inner.call(input, cx).await
    }
    fn offered(&self, scope: &RunScope) -> bool {
        self.inner.offered(scope)
    }
    fn prepare_tools(&self) -> Option<&dyn PrepareTools> {
        self.inner.prepare_tools()
    }
    fn start_calls(&self) -> Option<&dyn StartCalls> {
        self.inner.start_calls()
    }
}
