//! What the toolsmith clients share: the tool's typed arguments and the toolset they declare.

use peers_common::{DESCRIPTION, RESULT, tool_name};
use schemars::JsonSchema;
use serde::Deserialize;
use toolsmith_core::{ToolError, Toolset, from_fn};

// The tool's arguments (a plain comment: a doc comment would become the schema's description,
// which the other clients' declarations do not have).
#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
pub struct NoopArgs {
    /// A number.
    x: i64,
    /// An optional label.
    label: Option<String>,
}

/// `noop_0` … `noop_{tools-1}`: typed closures that return `ok`.
pub fn toolset(tools: usize) -> Toolset {
    (0..tools)
        .map(|i| {
            from_fn(tool_name(i), DESCRIPTION, |_: NoopArgs, _cx| async {
                Ok::<_, ToolError>(RESULT)
            })
        })
        .collect()
}
