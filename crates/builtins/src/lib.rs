//! Built-in tools for toolsmith agents.
//!
//! Each built-in is an ordinary [`Tool`](toolsmith_core::Tool), usable on its own or added to a
//! [`Toolset`]; [`all`] returns every built-in at once.
//!
//! | Tool         | Constructor      | What it does                                       |
//! |--------------|------------------|----------------------------------------------------|
//! | `calculator` | [`calculator()`] | Evaluates an arithmetic expression exactly ([`Calculator`]) |
//!
//! # Example
//!
//! ```
//! use toolsmith_core::Toolset;
//!
//! let tools = toolsmith_builtins::all();
//! assert_eq!(tools.names().collect::<Vec<_>>(), ["calculator"]);
//!
//! // Or pick the tools one by one.
//! let tools = Toolset::new().with(toolsmith_builtins::calculator());
//! assert!(tools.contains("calculator"));
//! ```

mod calculator;

pub use calculator::{Calculator, calculator};

use toolsmith_core::Toolset;

/// Every built-in tool, in a [`Toolset`]: today, [`calculator()`].
pub fn all() -> Toolset {
    Toolset::new().with(calculator())
}
