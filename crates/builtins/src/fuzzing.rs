//! The parsers of model-written inputs, reachable from the fuzz targets (`fuzz/` at the
//! repository's root): not part of the API. Each runs exactly what its tool runs on the input,
//! without a workspace.

use std::path::Path;

use grep_searcher::sinks;
use toolsmith_core::ToolError;

/// `edit`'s unified diff applied to `text`, as the tool applies it to a file's contents.
///
/// # Errors
///
/// The tool's `TOOL_PATCH_FAILED`.
pub fn apply_patch(text: &str, patch: &str) -> Result<String, ToolError> {
    crate::edit::apply_patch(text, patch)
}

/// `grep`'s pattern checked, compiled and searched for in `haystack` as in a file: the numbers
/// of the matching lines.
///
/// # Errors
///
/// The tool's `INVALID_INPUT` (over the bounds) or `TOOL_GREP_FAILED` (no valid regex).
pub fn grep(pattern: &str, haystack: &[u8]) -> Result<Vec<u64>, ToolError> {
    let matcher = crate::grep::matcher(pattern)?;
    let mut lines = Vec::new();
    let sink = sinks::Bytes(|number, _| {
        lines.push(number);
        Ok(true)
    });
    // A search error (a line past the heap limit) ends the search, as in the tool.
    let _ = crate::grep::searcher().search_slice(&matcher, haystack, sink);
    Ok(lines)
}

/// `glob`'s pattern checked and compiled, then matched against `path` as against a walked
/// entry's path.
///
/// # Errors
///
/// The tool's `INVALID_INPUT` (over the bounds) or `TOOL_GLOB_FAILED` (no valid glob).
pub fn glob(pattern: &str, path: &str) -> Result<bool, ToolError> {
    Ok(crate::glob::matcher(pattern)?.is_match(path))
}

/// An ignore file's bytes compiled as the walk compiles them, then asked about `path`: whether
/// the rules ignore it, and the notes the walk would add to the output.
pub fn ignore_file(bytes: &[u8], path: &str, is_dir: bool) -> (bool, String) {
    let mut notes = crate::walk::Notes::default();
    let rules = crate::walk::compile(Path::new(""), Path::new(".gitignore"), bytes, &mut notes);
    let ignored = rules.matched(path, is_dir).is_ignore();
    let mut text = String::new();
    notes.append_to(&mut text);
    (ignored, text)
}
