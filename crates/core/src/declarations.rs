//! [`ToolDeclarations`]: a toolset as the model sees it, rendered once per provider dialect.

use std::any::Any;
use std::fmt;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::ToolKind;

/// One tool as declared to a model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDeclaration {
    /// The tool's name.
    pub name: Arc<str>,
    /// The description, input examples appended.
    pub description: String,
    /// The input JSON Schema, before any provider dialect is applied.
    pub input_schema: Arc<Value>,
    /// Whether strict mode is requested.
    pub strict: bool,
    /// Who executes it (provider tools are declared by their wire JSON, not by schema).
    pub kind: ToolKind,
}

/// The declarations of a toolset, with a cache of their rendered forms.
///
/// A provider renders the declarations into its wire format once, keyed by its dialect name, and
/// every later request of the run (and of any run sharing the toolset) reuses the rendered value:
/// the per-tool cost of a request stays near zero.
///
/// ```
/// use toolsmith_core::ToolDeclarations;
///
/// let decls = ToolDeclarations::new(Vec::new());
/// let mut renders = 0;
/// for _ in 0..3 {
///     let rendered = decls.rendered("my-dialect", |tools| {
///         renders += 1;
///         tools.len()
///     });
///     assert_eq!(*rendered, 0);
/// }
/// assert_eq!(renders, 1);
/// ```
#[derive(Default)]
pub struct ToolDeclarations {
    entries: Vec<ToolDeclaration>,
    rendered: Mutex<Vec<(&'static str, Arc<dyn Any + Send + Sync>)>>,
}

impl ToolDeclarations {
    /// Declarations for these tools, in order.
    pub fn new(entries: Vec<ToolDeclaration>) -> Self {
        ToolDeclarations {
            entries,
            rendered: Mutex::default(),
        }
    }

    /// The declarations, in toolset order.
    pub fn entries(&self) -> &[ToolDeclaration] {
        &self.entries
    }

    /// How many tools are declared.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is declared.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value `render` produces for `dialect`, computed on first use and cached.
    ///
    /// A dialect must always render to the same type `T`; a different type under the same name is
    /// a programming error and panics.
    pub fn rendered<T: Any + Send + Sync>(
        &self,
        dialect: &'static str,
        render: impl FnOnce(&[ToolDeclaration]) -> T,
    ) -> Arc<T> {
        let mut cache = self.rendered.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, value)) = cache.iter().find(|(name, _)| *name == dialect) {
            return Arc::clone(value)
                .downcast::<T>()
                .unwrap_or_else(|_| panic!("dialect {dialect:?} rendered to two different types"));
        }
        let value = Arc::new(render(&self.entries));
        cache.push((dialect, value.clone()));
        value
    }
}

impl fmt::Debug for ToolDeclarations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.name))
            .finish()
    }
}
