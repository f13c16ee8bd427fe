//! The `read` tool, and the helpers the file tools share (byte caps, hashes, path display).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use toolsmith_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, async_trait};

use crate::Workspace;
use crate::seen::{self, Stamp};

const NAME: &str = "read";

const DESCRIPTION: &str = "Read a UTF-8 text file in the workspace and return its content. \
    Files larger than the output limit are refused unless you read a window of lines with \
    offset (1-based first line) and/or limit (number of lines, default 2000).";

/// Lines returned by a windowed read when `limit` is not given.
pub const DEFAULT_LINE_LIMIT: usize = 2000;

// No doc comment on the struct: it would become the schema's top-level description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The file to read, relative to the workspace root (or absolute inside it).
    path: String,
    /// The first line to return, 1-based. Giving offset or limit reads a window of lines.
    #[serde(default)]
    offset: Option<u64>,
    /// How many lines to return from offset (default 2000).
    #[serde(default)]
    limit: Option<u64>,
}

/// The `read` tool: reads a UTF-8 text file beneath the workspace root.
///
/// - Input: `{"path": "...", "offset"?: <line, 1-based>, "limit"?: <lines>}`.
/// - Whole file (no `offset`/`limit`): the output is the text itself (app value: the string). A
///   file over `policy.limits.output_bytes` → `TOOL_FILE_TOO_LARGE` `File too large (<n> bytes)`
///   with details `{bytes, limit}`; nothing is truncated.
/// - Window (`offset` and/or `limit`, default limit 2000 lines): the model sees the lines; when
///   the window is over the byte limit it is cut at a UTF-8 boundary and the text ends with
///   `\n[output truncated at <limit> bytes]`. The app value is
///   `{path, content, offset, lines, hasMore, truncated}` (`lines` returned, `hasMore` whether
///   lines follow the window). `offset`/`limit` of 0 → `INVALID_INPUT`.
/// - Non-UTF-8 content → `TOOL_FILE_NOT_UTF8` `File is not UTF-8 text: <path>`; path errors from
///   [`RootDir`](toolsmith_sandbox::RootDir) (`TOOL_PATH_ESCAPE`, `TOOL_FILE_NOT_FOUND`,
///   `TOOL_NOT_A_FILE`…).
///
/// A successful read records, for the run, that it has seen the file (device, inode, size and
/// modification time): `write` replaces only files the run has seen as they are.
///
/// No side effect.
#[derive(Debug, Clone)]
pub struct Read {
    spec: ToolSpec,
    workspace: Arc<Workspace>,
}

/// The `read` tool over `workspace` (see [`Read`]).
pub fn read(workspace: &Arc<Workspace>) -> Read {
    Read {
        spec: ToolSpec::for_type::<Input>(NAME).with_description(DESCRIPTION),
        workspace: Arc::clone(workspace),
    }
}

#[async_trait]
impl Tool for Read {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let workspace = Arc::clone(&self.workspace);
        let state = cx.state().clone();
        blocking(move || {
            // Stamped before reading: a change during the read leaves the stamp stale, so a
            // later `write` asks for a new read rather than replacing unseen content.
            let stamp = Stamp::of_path(workspace.root(), &input.path);
            let output = run(&workspace, input)?;
            if let Some(stamp) = stamp {
                seen::record(&state, stamp);
            }
            Ok(output)
        })
        .await
    }
}

fn run(workspace: &Workspace, input: Input) -> Result<ToolOutput, ToolError> {
    let limit_bytes = workspace.policy().limits.output_bytes;
    let path = input.path.as_str();
    if input.offset.is_none() && input.limit.is_none() {
        let bytes = read_capped(workspace, path)?;
        let text = String::from_utf8(bytes).map_err(|_| not_utf8(path))?;
        return Ok(ToolOutput::text(text));
    }
    let offset = input.offset.unwrap_or(1);
    let lines = input.limit.unwrap_or(DEFAULT_LINE_LIMIT as u64);
    if offset == 0 {
        return Err(ToolError::invalid_input("offset must be at least 1"));
    }
    if lines == 0 {
        return Err(ToolError::invalid_input("limit must be at least 1"));
    }
    let file = workspace.root().open_file(path)?;
    let mut reader = BufReader::new(file.into_std());
    let io_err = |e: std::io::Error| ToolError::new("TOOL_IO_ERROR", format!("{path}: {e}"));
    use std::io::Read as _;
    let mut number = 0u64;
    // Skip to the window without holding a line: a file without newlines is not read into
    // memory.
    while number + 1 < offset {
        if reader.skip_until(b'\n').map_err(io_err)? == 0 {
            break;
        }
        number += 1;
    }
    let mut content = Vec::new();
    let mut returned = 0u64;
    let mut truncated = false;
    while returned < lines {
        // At most one byte past the limit is read: enough to know the window is over it, so a
        // line of any length costs no more memory than the limit.
        let room = (limit_bytes + 1).saturating_sub(content.len()) as u64;
        if (&mut reader)
            .take(room)
            .read_until(b'\n', &mut content)
            .map_err(io_err)?
            == 0
        {
            break;
        }
        returned += 1;
        if content.len() > limit_bytes {
            truncated = true;
            break;
        }
    }
    let has_more = truncated || !reader.fill_buf().map_err(io_err)?.is_empty();
    if truncated {
        // Cut at the byte limit, backing up over a split code point.
        let cut = utf8_floor(&content, limit_bytes);
        content.truncate(cut);
    }
    let content = String::from_utf8(content).map_err(|_| not_utf8(path))?;
    let mut text = content.clone();
    if truncated {
        text.push_str(&truncation_note(limit_bytes));
    }
    let value = json!({
        "path": path,
        "content": content,
        "offset": offset,
        "lines": returned,
        "hasMore": has_more,
        "truncated": truncated,
    });
    Ok(ToolOutput::json(value).with_model_output(toolsmith_core::ModelOutput::text(text)))
}

/// Reads a whole file through the root, refusing one over the byte limit with
/// `TOOL_FILE_TOO_LARGE` (checked on the open handle, and again while reading, so a file that
/// grows in between is still capped).
pub(crate) fn read_capped(workspace: &Workspace, path: &str) -> Result<Vec<u8>, ToolError> {
    use std::io::Read as _;
    let limit = workspace.policy().limits.output_bytes;
    let file = workspace.root().open_file(path)?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    if size > limit as u64 {
        return Err(file_too_large(size, limit));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.into_std()
        .take(limit as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::new("TOOL_IO_ERROR", format!("{path}: {e}")))?;
    if bytes.len() > limit {
        return Err(file_too_large(bytes.len() as u64, limit));
    }
    Ok(bytes)
}

/// Parses a tool's input, mapping serde errors to `INVALID_INPUT`.
pub(crate) fn parse_input<T: serde::de::DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input)
        .map_err(|e| ToolError::invalid_input(format!("Invalid arguments: {e}")))
}

/// Runs blocking filesystem work on tokio's blocking pool when a runtime is present, inline
/// otherwise.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(f)
            .await
            .map_err(|e| ToolError::msg(format!("file tool task failed: {e}")))?,
        Err(_) => f(),
    }
}

/// `TOOL_FILE_TOO_LARGE` `File too large (<n> bytes)`, details `{bytes, limit}`.
pub(crate) fn file_too_large(bytes: u64, limit: usize) -> ToolError {
    ToolError::new(
        "TOOL_FILE_TOO_LARGE",
        format!("File too large ({bytes} bytes)"),
    )
    .with_details(json!({ "bytes": bytes, "limit": limit }))
}

/// `TOOL_FILE_NOT_UTF8`, as [`RootDir::read_to_string`](toolsmith_sandbox::RootDir) says it.
pub(crate) fn not_utf8(path: &str) -> ToolError {
    ToolError::new(
        "TOOL_FILE_NOT_UTF8",
        format!("File is not UTF-8 text: {path}"),
    )
}

/// The note appended to output cut at `limit` bytes.
pub(crate) fn truncation_note(limit: usize) -> String {
    format!("\n[output truncated at {limit} bytes]")
}

/// The largest index `<= max` that is a UTF-8 code point boundary of `bytes` (backing up over
/// continuation bytes, like Smithers' `truncateToBytes`).
pub(crate) fn utf8_floor(bytes: &[u8], max: usize) -> usize {
    if max >= bytes.len() {
        return bytes.len();
    }
    let mut cut = max;
    while cut > 0 && (bytes[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    cut
}

/// Lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A path for tool output: UTF-8 as is, other bytes escaped as `\xNN` (`caf\xe9.txt`).
pub(crate) fn display_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for chunk in path.as_os_str().as_bytes().utf8_chunks() {
        out.push_str(chunk.valid());
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_floor_backs_up_over_continuation_bytes() {
        let s = "ab😀cd".as_bytes();
        assert_eq!(utf8_floor(s, 4), 2);
        assert_eq!(utf8_floor(s, 5), 2);
        assert_eq!(utf8_floor(s, 6), 6);
        assert_eq!(utf8_floor("你好".as_bytes(), 4), 3);
        assert_eq!(utf8_floor(b"abc", 10), 3);
    }

    #[test]
    fn paths_display_escaped() {
        use std::os::unix::ffi::OsStrExt;
        let path = Path::new(std::ffi::OsStr::from_bytes(b"dir/caf\xe9.txt"));
        assert_eq!(display_path(path), "dir/caf\\xe9.txt");
    }

    #[test]
    fn sha256_is_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
