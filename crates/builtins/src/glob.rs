//! The `glob` tool.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolsmith_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, async_trait};

use crate::Workspace;
use crate::grep::{CappedOutput, until_cancelled};
use crate::pattern::{self, TooComplex};
use crate::read::{blocking, display_path, parse_input};
use crate::walk;

const NAME: &str = "glob";

const DESCRIPTION: &str = "Find files in the workspace whose path matches a glob pattern such \
    as `**/*.rs` or `src/*.{js,ts}` (matched against the path relative to the searched \
    directory; `*` does not cross `/`, `**` does). Skips .gitignore'd and hidden files. Lists \
    paths relative to the workspace root, newest first.";

/// At most this many paths are listed.
pub const MAX_GLOB_ENTRIES: usize = 1000;

// No doc comment on the struct: it would become the schema's top-level description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The glob pattern, for example `**/*.rs`, matched against paths relative to `path`.
    pattern: String,
    /// The directory to search, relative to the workspace root (default: the root).
    #[serde(default)]
    path: Option<String>,
}

/// The `glob` tool: lists files matching a glob pattern (globset over the same confined,
/// ignore-aware walk as [`Grep`](crate::Grep)).
///
/// - Input: `{"pattern": "<glob>", "path"?: "<dir>"}`. The pattern is matched against each
///   entry's path relative to `path` (default the root), `*`/`?` not crossing `/` and `**`
///   matching any number of directories; `{a,b}` and `[ab]` work; a leading `./` is ignored.
/// - Entries: every non-directory entry of the walk (regular files and symlinks, which are
///   listed but not followed) under ripgrep's default filters (`.gitignore`, hidden, …).
/// - Output (text): one path per line, relative to the workspace root (non-UTF-8 bytes shown
///   as `\xNN`), newest first (modification time descending, then path ascending); `""` when
///   nothing matches. At most [`MAX_GLOB_ENTRIES`] paths and `policy.limits.output_bytes`
///   bytes are listed; past that a last line says `[truncated: showing <k> of <n> paths]`.
///   Notes about ignore files the walk skipped follow, as for [`Grep`](crate::Grep).
/// - Errors: a pattern over 10 000 characters or nesting brackets more than 64 levels deep →
///   `INVALID_INPUT` (`pattern exceeds 10000 characters.`, `pattern nests brackets more than 64
///   levels deep.`), checked before globset sees it (its parser recursed until the stack
///   overflowed on 10 000 nested `{`); an invalid pattern → `TOOL_GLOB_FAILED` with globset's
///   message; `TOOL_CANCELLED` `Search cancelled` when the call is cancelled; path errors from
///   the root (a file as `path` → `TOOL_NOT_A_DIRECTORY`).
///
/// No side effect.
#[derive(Debug, Clone)]
pub struct Glob {
    spec: ToolSpec,
    workspace: Arc<Workspace>,
}

/// The `glob` tool over `workspace` (see [`Glob`]).
pub fn glob(workspace: &Arc<Workspace>) -> Glob {
    Glob {
        spec: ToolSpec::for_type::<Input>(NAME).with_description(DESCRIPTION),
        workspace: Arc::clone(workspace),
    }
}

#[async_trait]
impl Tool for Glob {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let workspace = Arc::clone(&self.workspace);
        let cancel = cx.cancellation().clone();
        let work = blocking(move || run(&workspace, input, &|| cancel.is_cancelled()));
        let text = until_cancelled(cx, work).await?;
        Ok(ToolOutput::text(text))
    }
}

/// A path the pattern matched, with its modification time.
struct Found {
    path: PathBuf,
    modified: Option<SystemTime>,
}

/// The model's pattern, checked against the bounds and compiled as the walk matches it.
pub(crate) fn matcher(pattern: &str) -> Result<GlobMatcher, ToolError> {
    pattern::check(pattern).map_err(TooComplex::into_error)?;
    // `./src/*.rs` means `src/*.rs`: paths are matched without a leading `./`.
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    Ok(GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError::new("TOOL_GLOB_FAILED", e.to_string()))?
        .compile_matcher())
}

fn run(
    workspace: &Workspace,
    input: Input,
    cancelled: &dyn Fn() -> bool,
) -> Result<String, ToolError> {
    let matcher = matcher(&input.pattern)?;
    let target = input.path.unwrap_or_else(|| ".".to_string());
    let base = workspace.root().relative(&target)?;
    let mut found = Vec::new();
    let notes = walk::walk(workspace.root(), &target, cancelled, &mut |entry| {
        if entry
            .path()
            .strip_prefix(&base)
            .is_ok_and(|inside| matcher.is_match(inside))
        {
            found.push(Found {
                path: entry.path().to_path_buf(),
                modified: entry.modified(),
            });
        }
        ControlFlow::Continue(())
    })?;
    found.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| a.path.cmp(&b.path))
    });

    let total = found.len();
    let mut out = CappedOutput::new(workspace.policy().limits.output_bytes);
    let mut shown = 0;
    for entry in found.iter().take(MAX_GLOB_ENTRIES) {
        if !out.push_line(&display_path(&entry.path)) {
            break;
        }
        shown += 1;
    }
    let mut text = if shown == total {
        out.finish()
    } else {
        let mut text = out.into_text();
        text.push_str(&format!("[truncated: showing {shown} of {total} paths]"));
        text
    };
    notes.append_to(&mut text);
    Ok(text)
}
