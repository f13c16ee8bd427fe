//! The `edit` tool: a unified diff, or an exact string replacement.

mod unified;

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsmith_core::{Tool, ToolContext, ToolError, ToolMeta, ToolOutput, ToolSpec, async_trait};

use crate::Workspace;
use crate::file_change::Target;
use crate::read::{blocking, parse_input, sha256_hex};
use unified::PatchError;

const NAME: &str = "edit";

const DESCRIPTION: &str = "Edit an existing file in the workspace. Either give `patch`, a \
    unified diff for this one file (context lines must match exactly; line numbers may be off), \
    or give `old_string` and `new_string` to replace an exact piece of text (it must occur once \
    unless `replace_all` is true). Returns \"ok\".";

// No doc comment on the struct: it would become the schema's top-level description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The file to edit, relative to the workspace root (or absolute inside it). It must exist.
    path: String,
    /// A unified diff of this file (`@@ -a,b +c,d @@` hunks; `---`/`+++` headers are ignored).
    /// Use either `patch` or `old_string`/`new_string`.
    #[serde(default)]
    patch: Option<String>,
    /// The exact text to replace (not empty). Use with `new_string`.
    #[serde(default)]
    old_string: Option<String>,
    /// The text to put in its place (must differ from `old_string`).
    #[serde(default)]
    new_string: Option<String>,
    /// Replace every occurrence of `old_string` instead of requiring exactly one.
    #[serde(default)]
    replace_all: Option<bool>,
}

/// The `edit` tool: changes an existing file beneath the workspace root, either by a unified
/// diff or by replacing an exact string.
///
/// - Input: `{"path", "patch"}` or `{"path", "old_string", "new_string", "replace_all"?}`.
///   Both forms, neither, `old_string` without `new_string` (or the reverse), `replace_all` with
///   a patch, an empty `old_string`, or identical strings → `INVALID_INPUT`.
/// - Checks, in order: a patch over `policy.limits.output_bytes` → `TOOL_PATCH_TOO_LARGE`
///   `Patch too large (<n> bytes)` `{patchBytes, patchHash}`; the path (`TOOL_PATH_*`; git
///   metadata while the policy protects it → [`PATH_PROTECTED`](crate::PATH_PROTECTED); a
///   symlink or special file → `TOOL_NOT_A_FILE`; a missing file → `TOOL_FILE_NOT_FOUND` `File
///   not found: <path>`); a file over the limit → `TOOL_FILE_TOO_LARGE`; non-UTF-8 content →
///   `TOOL_FILE_NOT_UTF8`.
/// - No earlier `read` is required, unlike `write`: the old string or the patch's context must
///   match the file as it is now, a stricter check than a read's stamp, and a stamp check would
///   refuse correct edits after the run's own commands touched the file. A successful edit
///   counts as having seen the result, so a `write` may follow.
/// - Patch: applied like jsdiff's `applyPatch` with default options: exact context (no fuzz),
///   hunks in order, each tried at its header line and then one line further away at a time
///   (forward first) until context and deleted lines match, later hunks only after earlier
///   ones; CRLF files take LF patches and the reverse (the file's line endings are kept);
///   `\ No newline at end of file` is honoured; `---`/`+++`/`Index:`/`diff --git` headers are
///   ignored (the target is always `path`). A patch for more than one file →
///   `TOOL_PATCH_FAILED` `Failed to apply patch: only single-file patches are supported`; a
///   malformed patch or a hunk that matches nowhere → `TOOL_PATCH_FAILED` `Failed to apply patch`
///   with details `{hunk?, reason}`.
/// - Strings: no occurrence → `TOOL_EDIT_NOT_FOUND` `old_string not found in <path>`; several
///   without `replace_all` → `TOOL_EDIT_NOT_UNIQUE` `old_string occurs <n> times in <path>; add
///   context or set replace_all`. When the file uses CRLF and the strings use LF, they are
///   matched (and inserted) with CRLF.
/// - The file is written back atomically, its permission bits kept without set-ID or sticky
///   bits; the output is the text `ok`, with a [`FileChange`](crate::FileChange) artifact (the
///   previous content) that a stored run keeps in its journal for `toolsmith threads revert`.
///
/// Side effect, not idempotent.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{Tool, ToolContext};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("f.txt"), "one\ntwo\nthree\n").unwrap();
/// let workspace = toolsmith_builtins::Workspace::new(
///     toolsmith_sandbox::SandboxPolicy::new(dir.path()),
/// ).unwrap();
/// let edit = toolsmith_builtins::edit(&workspace);
/// let cx = ToolContext::for_test("edit");
///
/// // The header says line 7, but the context is found at line 1.
/// let patch = "--- a/f.txt\n+++ b/f.txt\n@@ -7,2 +7,2 @@\n one\n-two\n+2\n";
/// edit.call(json!({"path": "f.txt", "patch": patch}), &cx).await.unwrap();
/// edit.call(json!({"path": "f.txt", "old_string": "three", "new_string": "3"}), &cx)
///     .await
///     .unwrap();
/// assert_eq!(std::fs::read_to_string(dir.path().join("f.txt")).unwrap(), "one\n2\n3\n");
///
/// let err = edit
///     .call(json!({"path": "f.txt", "old_string": "four", "new_string": "4"}), &cx)
///     .await
///     .unwrap_err();
/// assert_eq!(err.message(), "old_string not found in f.txt");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Edit {
    spec: ToolSpec,
    meta: ToolMeta,
    workspace: Arc<Workspace>,
}

/// The `edit` tool over `workspace` (see [`Edit`]).
pub fn edit(workspace: &Arc<Workspace>) -> Edit {
    Edit {
        spec: ToolSpec::for_type::<Input>(NAME).with_description(DESCRIPTION),
        meta: ToolMeta::new().side_effect(true),
        workspace: Arc::clone(workspace),
    }
}

/// The change to make, once the input is validated.
enum Change {
    Patch(String),
    Replace { old: String, new: String, all: bool },
}

fn change(input: &mut Input) -> Result<Change, ToolError> {
    let strings = input.old_string.is_some() || input.new_string.is_some();
    match (input.patch.take(), strings) {
        (Some(_), true) => Err(ToolError::invalid_input(
            "Give either patch or old_string/new_string, not both",
        )),
        (None, false) => Err(ToolError::invalid_input(
            "Give either patch or old_string and new_string",
        )),
        (Some(patch), false) => {
            if input.replace_all.is_some() {
                return Err(ToolError::invalid_input(
                    "replace_all only applies to old_string/new_string",
                ));
            }
            Ok(Change::Patch(patch))
        }
        (None, true) => {
            let (Some(old), Some(new)) = (input.old_string.take(), input.new_string.take()) else {
                return Err(ToolError::invalid_input(
                    "old_string and new_string must be given together",
                ));
            };
            if old.is_empty() {
                return Err(ToolError::invalid_input("old_string must not be empty"));
            }
            if old == new {
                return Err(ToolError::invalid_input(
                    "old_string and new_string are identical",
                ));
            }
            Ok(Change::Replace {
                old,
                new,
                all: input.replace_all.unwrap_or(false),
            })
        }
    }
}

#[async_trait]
impl Tool for Edit {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn meta(&self) -> &ToolMeta {
        &self.meta
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let mut input: Input = parse_input(input)?;
        let change = change(&mut input)?;
        let limit = self.workspace.policy().limits.output_bytes;
        if let Change::Patch(patch) = &change
            && patch.len() > limit
        {
            return Err(ToolError::new(
                "TOOL_PATCH_TOO_LARGE",
                format!("Patch too large ({} bytes)", patch.len()),
            )
            .with_details(json!({
                "patchBytes": patch.len(),
                "patchHash": sha256_hex(patch.as_bytes()),
            })));
        }
        let workspace = Arc::clone(&self.workspace);
        let state = cx.state().clone();
        let path = input.path;
        let change = blocking(move || {
            let target = Target::open(&workspace, &path)?;
            // No read is required, and no stamp checked: the old text (or the patch's context)
            // must match the file as it is now, which is the stricter check.
            let Some(current) = &target.current else {
                return Err(ToolError::new(
                    "TOOL_FILE_NOT_FOUND",
                    format!("File not found: {path}"),
                )
                .with_details(json!({ "path": path })));
            };
            let updated = match change {
                Change::Patch(patch) => apply_patch(&current.text, &patch)?,
                Change::Replace { old, new, all } => {
                    replace(&current.text, &path, &old, &new, all)?
                }
            };
            target.replace(&workspace, &state, updated.as_bytes())
        })
        .await?;
        Ok(ToolOutput::text("ok").with_artifact(change.to_artifact()))
    }
}

pub(crate) fn apply_patch(current: &str, patch: &str) -> Result<String, ToolError> {
    unified::apply(current, patch).map_err(|e| match e {
        PatchError::MultipleFiles => ToolError::new(
            "TOOL_PATCH_FAILED",
            "Failed to apply patch: only single-file patches are supported",
        ),
        PatchError::Malformed(reason) => ToolError::new("TOOL_PATCH_FAILED", "Failed to apply patch")
            .with_details(json!({ "reason": reason })),
        PatchError::HunkFailed(hunk) => ToolError::new("TOOL_PATCH_FAILED", "Failed to apply patch")
            .with_details(json!({
                "hunk": hunk,
                "reason": format!("hunk {hunk}'s context and deleted lines match nowhere after the previous hunk"),
            })),
    })
}

fn replace(
    current: &str,
    path: &str,
    old: &str,
    new: &str,
    all: bool,
) -> Result<String, ToolError> {
    let mut count = current.matches(old).count();
    let (mut old, mut new) = (old.to_string(), new.to_string());
    if count == 0 && current.contains("\r\n") && old.contains('\n') && !old.contains('\r') {
        // A CRLF file, and strings written with LF.
        old = old.replace('\n', "\r\n");
        new = new.replace("\r\n", "\n").replace('\n', "\r\n");
        count = current.matches(old.as_str()).count();
    }
    match count {
        0 => Err(ToolError::new(
            "TOOL_EDIT_NOT_FOUND",
            format!("old_string not found in {path}"),
        )),
        1 => Ok(current.replacen(old.as_str(), &new, 1)),
        _ if all => Ok(current.replace(old.as_str(), &new)),
        n => Err(ToolError::new(
            "TOOL_EDIT_NOT_UNIQUE",
            format!("old_string occurs {n} times in {path}; add context or set replace_all"),
        )
        .with_details(json!({ "occurrences": n }))),
    }
}
