//! [`VariableCell`]: a run's variables as tools change them (`setEnv` in the Standard Agents spec).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, RwLock, Weak};

use crate::{VariableKind, Variables};

/// A run's variables, which a tool may change: [`set`](Self::set) replaces the run's value and
/// reaches every active descendant run (sub-agents started from it, at any depth) that does
/// not declare the name `scoped` (as in the Standard Agents spec: `setEnv`
/// propagates to active descendant threads; scoped variables block inheritance).
///
/// Calls read the values as they were when the call started; a value set during a call is
/// seen by the calls that start after it.
///
/// ```
/// use std::collections::{HashMap, HashSet};
/// use toolsmith_core::{VariableCell, VariableKind, Variables};
///
/// let parent = VariableCell::new(Variables::default());
/// let child = parent.child(Variables::default(), HashSet::new());
/// let sealed = parent.child(Variables::default(), HashSet::from(["TOKEN".to_string()]));
/// parent.set("TOKEN", "t-123456", None);
/// assert_eq!(child.current().get("TOKEN"), Some("t-123456"));
/// assert!(child.current().is_secret("TOKEN"), "a new name without a type is secret");
/// assert_eq!(sealed.current().get("TOKEN"), None, "scoped in that child");
/// parent.set("REGION", "eu", Some(VariableKind::Text));
/// assert!(!parent.current().is_secret("REGION"));
/// assert_eq!(parent.changes().get("REGION"), Some("eu"));
/// ```
#[derive(Clone)]
pub struct VariableCell(Arc<Cell>);

struct Cell {
    current: RwLock<Arc<Variables>>,
    /// The values set during this run, with their kinds, for the caller to keep.
    changes: Mutex<Variables>,
    /// Names this run does not take from its parent.
    blocked: HashSet<String>,
    children: Mutex<Vec<Weak<Cell>>>,
}

impl VariableCell {
    /// A cell holding `variables`.
    pub fn new(variables: Variables) -> Self {
        Self::with_blocked(variables, HashSet::new())
    }

    fn with_blocked(variables: Variables, blocked: HashSet<String>) -> Self {
        VariableCell(Arc::new(Cell {
            current: RwLock::new(Arc::new(variables)),
            changes: Mutex::default(),
            blocked,
            children: Mutex::default(),
        }))
    }

    /// The cell of a descendant run holding `variables`, which later [`set`](Self::set)s on
    /// this cell reach except for the `blocked` names.
    pub fn child(&self, variables: Variables, blocked: HashSet<String>) -> VariableCell {
        let child = Self::with_blocked(variables, blocked);
        let mut children = self.0.children.lock().unwrap_or_else(|p| p.into_inner());
        children.retain(|c| c.strong_count() > 0);
        children.push(Arc::downgrade(&child.0));
        child
    }

    /// The values now.
    pub fn current(&self) -> Arc<Variables> {
        self.0
            .current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Sets `name` for this run and its active descendants. Without a `kind`, an existing
    /// variable keeps its kind and a new one is secret (as with `setEnv` in the Standard Agents
    /// spec).
    pub fn set(&self, name: &str, value: &str, kind: Option<VariableKind>) {
        let secret = match kind {
            Some(kind) => kind == VariableKind::Secret,
            None => {
                let current = self.current();
                current.get(name).is_none() || current.is_secret(name)
            }
        };
        self.0
            .changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name, value, secret);
        self.0.apply(name, value, secret);
    }

    /// The values set during this run ([`set`](Self::set)), secret kinds included.
    pub fn changes(&self) -> Variables {
        self.0
            .changes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The values as a map, for a caller that keeps a thread's variables.
    pub fn snapshot(&self) -> HashMap<String, String> {
        self.current()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl Cell {
    fn apply(&self, name: &str, value: &str, secret: bool) {
        {
            let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
            let mut next = (**current).clone();
            next.insert(name, value, secret);
            *current = Arc::new(next);
        }
        let children: Vec<Arc<Cell>> = self
            .children
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for child in children.iter().filter(|c| !c.blocked.contains(name)) {
            child.apply(name, value, secret);
        }
    }
}

impl Default for VariableCell {
    fn default() -> Self {
        Self::new(Variables::default())
    }
}

impl fmt::Debug for VariableCell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("VariableCell")
            .field(&self.current())
            .finish()
    }
}
