//! The `grep` tool, and the confined directory walk it shares with `glob`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, sinks};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use toolsmith_core::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, async_trait};

use crate::Workspace;
use crate::read::{blocking, display_path, parse_input, utf8_floor};

const NAME: &str = "grep";

const DESCRIPTION: &str = "Search file contents in the workspace with a regular expression \
    (Rust regex syntax, like ripgrep). Searches a directory recursively (default: the workspace \
    root), skipping .gitignore'd, hidden and binary files, or a single file. Prints \
    `path:line:text` per matching line (`line:text` for a single file), nothing when no line \
    matches.";

// No doc comment on the struct: it would become the schema's top-level description.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Input {
    /// The regular expression to search for (Rust regex syntax).
    pattern: String,
    /// The directory or file to search, relative to the workspace root (default: the root).
    #[serde(default)]
    path: Option<String>,
}

/// The `grep` tool: searches file contents in-process with ripgrep's crates (`grep-regex`,
/// `grep-searcher`, `ignore`).
///
/// - Input: `{"pattern": "<regex>", "path"?: "<dir or file>"}`; `path` defaults to the root and
///   is resolved through [`RootDir`](toolsmith_sandbox::RootDir) (escapes are refused as
///   everywhere). A pattern that starts with `-` is just a pattern.
/// - A directory is walked with ripgrep's default rules: `.gitignore` (also outside a git
///   repository), `.ignore` and `.git/info/exclude` files at and below the searched directory,
///   hidden files and directories skipped, symlinks not followed, files with a NUL byte
///   treated as binary and skipped. Ignore files above the searched directory and the global
///   git excludes are not read. Entries are visited in name order.
/// - Every file is opened through the root, so a symlink swapped into the tree during the walk
///   cannot make the search read outside it.
/// - Files are searched in parallel on every core (no process is spawned); the output keeps the
///   walk's order.
/// - Output (text): one `relative/path:line:text` line per match, the path relative to the
///   workspace root with non-UTF-8 bytes shown as `\xNN`; `line:text` when `path` is a file;
///   `""` when nothing matches. The line terminator (`\n` or `\r\n`) is dropped and the text is
///   shown lossily as UTF-8. Past `policy.limits.output_bytes` the output stops at a line
///   boundary and ends with `[output truncated at <limit> bytes]`.
/// - Errors: an invalid regex → `TOOL_GREP_FAILED` with the regex error as the message; path
///   errors from the root.
///
/// No side effect.
///
/// ```
/// use serde_json::json;
/// use toolsmith_core::{ModelOutput, Tool, ToolContext};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::create_dir(dir.path().join("src")).unwrap();
/// std::fs::write(dir.path().join("src/main.rs"), "fn main() {\n    todo!()\n}\n").unwrap();
/// let workspace = toolsmith_builtins::Workspace::new(
///     toolsmith_sandbox::SandboxPolicy::new(dir.path()),
/// ).unwrap();
/// let grep = toolsmith_builtins::grep(&workspace);
/// let out = grep.call(json!({"pattern": "todo!"}), &ToolContext::for_test("grep")).await.unwrap();
/// assert_eq!(out.model, ModelOutput::text("src/main.rs:2:    todo!()\n"));
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct Grep {
    spec: ToolSpec,
    workspace: Arc<Workspace>,
}

/// The `grep` tool over `workspace` (see [`Grep`]).
pub fn grep(workspace: &Arc<Workspace>) -> Grep {
    Grep {
        spec: ToolSpec::for_type::<Input>(NAME).with_description(DESCRIPTION),
        workspace: Arc::clone(workspace),
    }
}

#[async_trait]
impl Tool for Grep {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, input: Value, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let input: Input = parse_input(input)?;
        let workspace = Arc::clone(&self.workspace);
        let cancel = cx.cancellation().clone();
        let text = blocking(move || run(&workspace, input, &|| cancel.is_cancelled())).await?;
        Ok(ToolOutput::text(text))
    }
}

fn run(
    workspace: &Workspace,
    input: Input,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<String, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .build(&input.pattern)
        .map_err(|e| ToolError::new("TOOL_GREP_FAILED", e.to_string()))?;
    let root = workspace.root();
    let target = input.path.unwrap_or_else(|| ".".to_string());
    let limit = workspace.policy().limits.output_bytes;

    if !root.metadata(&target)?.is_dir() {
        let file = root.open_file(&target)?;
        let mut out = CappedOutput::new(limit);
        for line in search_file(&mut searcher(), &matcher, file.into_std(), None, limit) {
            if !out.push_line(&line) {
                break;
            }
        }
        return Ok(out.finish());
    }

    let files = walk(workspace, &target)?;
    let results = search_files(workspace, &matcher, &files, limit, cancelled);
    let mut out = CappedOutput::new(limit);
    'files: for lines in results {
        for line in lines {
            if !out.push_line(&line) {
                break 'files;
            }
        }
    }
    Ok(out.finish())
}

/// A searcher with ripgrep's defaults: line numbers, files with a NUL byte treated as binary
/// and skipped. Built once per thread: it owns a large buffer.
fn searcher() -> Searcher {
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .build()
}

/// The matching lines of one file, formatted, at most about `limit` bytes of them. An
/// unreadable file gives none, as ripgrep skips it (reporting it on stderr).
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: std::fs::File,
    prefix: Option<&str>,
    limit: usize,
) -> Vec<String> {
    let mut lines = Vec::new();
    let mut bytes = 0;
    let sink = sinks::Bytes(|number, line| {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let text = String::from_utf8_lossy(line);
        let entry = match prefix {
            Some(prefix) => format!("{prefix}:{number}:{text}"),
            None => format!("{number}:{text}"),
        };
        bytes += entry.len() + 1;
        lines.push(entry);
        Ok(bytes <= limit)
    });
    let _ = searcher.search_file(matcher, &file, sink);
    lines
}

/// Searches `files` on every core, returning each file's lines in the order of `files`.
///
/// Workers take files in order from a shared counter, so when the output is full or the call is
/// cancelled, every file before the last one taken has been searched: cutting the ordered
/// results at the cap is then exact.
fn search_files(
    workspace: &Workspace,
    matcher: &RegexMatcher,
    files: &[PathBuf],
    limit: usize,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Vec<Vec<String>> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(files.len().max(1));
    let next = AtomicUsize::new(0);
    let produced = AtomicUsize::new(0);
    let slots: Vec<Mutex<Vec<String>>> = files.iter().map(|_| Mutex::default()).collect();
    let worker = || {
        let mut searcher = searcher();
        loop {
            if cancelled() || produced.load(Ordering::Relaxed) > limit {
                return;
            }
            let index = next.fetch_add(1, Ordering::Relaxed);
            let Some(relative) = files.get(index) else {
                return;
            };
            let Ok(file) = workspace.root().open_file_path(relative) else {
                continue;
            };
            let lines = search_file(
                &mut searcher,
                matcher,
                file.into_std(),
                Some(&display_path(relative)),
                limit,
            );
            let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
            produced.fetch_add(bytes, Ordering::Relaxed);
            *slots[index].lock().unwrap_or_else(|p| p.into_inner()) = lines;
        }
    };
    if workers <= 1 {
        worker();
    } else {
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(worker);
            }
        });
    }
    slots
        .into_iter()
        .map(|slot| slot.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

/// Walks the directory `target` (a model-given path) with ripgrep's default filters, yielding
/// the regular files found (symlinks are not followed), relative to the root, in name order.
/// The directory itself is first opened through the root, so a `target` that escapes is
/// refused.
pub(crate) fn walk(workspace: &Workspace, target: &str) -> Result<Vec<PathBuf>, ToolError> {
    let root = workspace.root();
    let mut files = Vec::new();
    // No per-entry confirmation here: every file is opened through the root before it is read,
    // which is the confinement; a stat per entry would only double the walk's cost.
    for entry in walker(workspace, target)?.flatten() {
        if entry.file_type().is_some_and(|kind| kind.is_file())
            && let Ok(inside) = entry.path().strip_prefix(root.path())
        {
            files.push(inside.to_path_buf());
        }
    }
    Ok(files)
}

/// ripgrep's default walk of the directory `target`, opened through the root first so that a
/// `target` that escapes is refused.
fn walker(workspace: &Workspace, target: &str) -> Result<ignore::Walk, ToolError> {
    let root = workspace.root();
    let relative = root.relative(target)?;
    root.open_dir(target)?;
    Ok(ignore::WalkBuilder::new(root.path().join(&relative))
        .follow_links(false)
        .hidden(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .parents(false)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build())
}

/// An entry found by [`walk_entries`].
pub(crate) struct WalkEntry {
    /// Relative to the root.
    pub(crate) path: PathBuf,
    /// Its modification time.
    pub(crate) modified: Option<std::time::SystemTime>,
}

/// Every non-directory entry of the walk (regular files, symlinks, others), relative to the
/// root, with its modification time (of the entry itself, not a symlink's target).
pub(crate) fn walk_entries(
    workspace: &Workspace,
    target: &str,
) -> Result<Vec<WalkEntry>, ToolError> {
    let root = workspace.root();
    let mut entries = Vec::new();
    for entry in walker(workspace, target)?.flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            continue;
        }
        let Ok(inside) = entry.path().strip_prefix(root.path()) else {
            continue;
        };
        // The walker lists directories by path; confirm each entry beneath the root (its
        // parents resolved by the kernel, the entry itself not followed), so a directory
        // swapped for a symlink mid-walk cannot smuggle outside names in.
        let Ok(metadata) = root.dir().symlink_metadata(inside) else {
            continue;
        };
        if metadata.is_dir() {
            continue;
        }
        entries.push(WalkEntry {
            path: inside.to_path_buf(),
            modified: metadata.modified().ok().map(|t| t.into_std()),
        });
    }
    Ok(entries)
}

/// Tool output capped at a byte limit at a line boundary, with a closing note when cut.
pub(crate) struct CappedOutput {
    text: String,
    limit: usize,
    truncated: bool,
}

impl CappedOutput {
    /// An empty output capped at `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        CappedOutput {
            text: String::new(),
            limit,
            truncated: false,
        }
    }

    /// Adds a line (a `\n` is appended). Returns false once the cap is reached; a first line
    /// longer than the cap is cut at a UTF-8 boundary.
    pub(crate) fn push_line(&mut self, line: &str) -> bool {
        if self.truncated {
            return false;
        }
        if self.text.len() + line.len() < self.limit {
            self.text.push_str(line);
            self.text.push('\n');
            return true;
        }
        if self.text.is_empty() {
            let cut = utf8_floor(line.as_bytes(), self.limit.saturating_sub(1));
            self.text.push_str(&line[..cut]);
            self.text.push('\n');
        }
        self.truncated = true;
        false
    }

    /// The text so far, without a note.
    pub(crate) fn into_text(self) -> String {
        self.text
    }

    /// The text, with `[output truncated at <limit> bytes]` last when it was cut.
    pub(crate) fn finish(mut self) -> String {
        if self.truncated {
            self.text
                .push_str(&format!("[output truncated at {} bytes]", self.limit));
        }
        self.text
    }
}
