//! The `grep` tool, and the output cap it shares with `glob`.

use std::ops::ControlFlow;
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
use crate::pattern::{self, TooComplex};
use crate::read::{blocking, display_path, parse_input, utf8_floor};
use crate::walk;

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
/// `grep-searcher`, and `ignore`'s rule matching).
///
/// - Input: `{"pattern": "<regex>", "path"?: "<dir or file>"}`; `path` defaults to the root and
///   is resolved through [`RootDir`](toolsmith_sandbox::RootDir) (escapes are refused as
///   everywhere). A pattern that starts with `-` is just a pattern.
/// - A directory is walked with ripgrep's default rules: `.gitignore` (also outside a git
///   repository), `.ignore` and `.git/info/exclude` files at and below the searched directory,
///   hidden files and directories skipped, symlinks not followed, files with a NUL byte
///   treated as binary and skipped. Ignore files above the searched directory and the global
///   git excludes are not read. Entries are visited in name order.
/// - The walk reads nothing but through the root: directories are listed through handles
///   opened beneath it, ignore files are read only when they are regular files (not symlinks,
///   FIFOs or devices) of at most 1 MiB, and every file searched is opened through the root, so
///   a symlink swapped into the tree during the walk cannot make the search read outside it.
///   An ignore file that is skipped, or a line of one that is too complex to compile, leaves a
///   note (`[ignore file skipped: <path>: <reason>]`) at the end of the output.
/// - Files are searched in parallel on every core (no process is spawned); the output keeps the
///   walk's order.
/// - Output (text): one `relative/path:line:text` line per match, the path relative to the
///   workspace root with non-UTF-8 bytes shown as `\xNN`; `line:text` when `path` is a file;
///   `""` when nothing matches. The line terminator (`\n` or `\r\n`) is dropped and the text is
///   shown lossily as UTF-8. Past `policy.limits.output_bytes` the output stops at a line
///   boundary and ends with `[output truncated at <limit> bytes]`. A line longer than
///   8 MiB is never held: the file is searched up to it and a line
///   `[<path>: a line is longer than 8388608 bytes; the rest of the file was not searched]`
///   follows its matches.
/// - Errors: a pattern over 10 000 characters or nesting brackets more than 64 levels deep →
///   `INVALID_INPUT` (`pattern exceeds 10000 characters.`, `pattern nests brackets more than 64
///   levels deep.`), checked before the regex is compiled; an invalid regex, or one that
///   compiles past 10 MiB → `TOOL_GREP_FAILED` with the regex error as the message;
///   `TOOL_CANCELLED` `Search cancelled` as soon as the call's cancellation token fires (the
///   walk and every read check it); path errors from the root.
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
        let work = blocking(move || run(&workspace, input, &|| cancel.is_cancelled()));
        let text = until_cancelled(cx, work).await?;
        Ok(ToolOutput::text(text))
    }
}

/// Awaits `work` (a blocking search), returning [`walk::cancelled`] as soon as the call's
/// cancellation token fires: the call does not wait for the blocking thread, which sees the
/// token itself at its next entry or read and stops.
pub(crate) async fn until_cancelled<T>(
    cx: &ToolContext,
    work: impl std::future::Future<Output = Result<T, ToolError>>,
) -> Result<T, ToolError> {
    tokio::select! {
        biased;
        result = work => result,
        () = cx.cancellation().cancelled() => Err(walk::cancelled()),
    }
}

/// The longest line grep holds in memory (grep-searcher's heap limit): a file with a longer
/// line is searched up to it, and a note says the rest was not. Without it a 1 GiB file
/// without a newline was read whole into one buffer (1.2 GB resident). 8 MiB holds the
/// minified bundles found in repositories; one buffer per searching thread.
pub(crate) const MAX_LINE_BYTES: usize = 8 << 20;

/// The regex crate's limit on a compiled pattern (grep-regex defaults to 100 MiB, which a
/// pattern such as `a{1000}{1000}` fills, taking seconds and as much memory): 10 MiB, as
/// globset uses, holds any pattern written by hand.
const REGEX_SIZE_LIMIT: usize = 10 << 20;

/// The lazy DFA's cache per searching thread (grep-regex defaults to 1 000 MiB, which a
/// pathological pattern can fill on every thread): past it the regex engine falls back to a
/// slower search, never to more memory.
const REGEX_DFA_CACHE: usize = 64 << 20;

/// The model's pattern, checked against the bounds and compiled as every search uses it.
pub(crate) fn matcher(pattern: &str) -> Result<RegexMatcher, ToolError> {
    pattern::check(pattern).map_err(TooComplex::into_error)?;
    RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_CACHE)
        .build(pattern)
        .map_err(|e| ToolError::new("TOOL_GREP_FAILED", e.to_string()))
}

fn run(
    workspace: &Workspace,
    input: Input,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<String, ToolError> {
    let matcher = matcher(&input.pattern)?;
    let root = workspace.root();
    let target = input.path.unwrap_or_else(|| ".".to_string());
    let limit = workspace.policy().limits.output_bytes;

    if !root.metadata(&target)?.is_dir() {
        let file = root.open_file(&target)?;
        let mut out = CappedOutput::new(limit);
        let mut searcher = searcher();
        let found = search_file(
            &mut searcher,
            &matcher,
            file.into_std(),
            &target,
            None,
            limit,
            cancelled,
        );
        if cancelled() {
            return Err(walk::cancelled());
        }
        for line in found {
            if !out.push_line(&line) {
                break;
            }
        }
        return Ok(out.finish());
    }

    let mut files = Vec::new();
    let notes = walk::walk(root, &target, cancelled, &mut |entry| {
        if entry.is_file() {
            files.push(entry.path().to_path_buf());
        }
        ControlFlow::Continue(())
    })?;
    let results = search_files(workspace, &matcher, &files, limit, cancelled);
    if cancelled() {
        return Err(walk::cancelled());
    }
    let mut out = CappedOutput::new(limit);
    'files: for lines in results {
        for line in lines {
            if !out.push_line(&line) {
                break 'files;
            }
        }
    }
    let mut text = out.finish();
    notes.append_to(&mut text);
    Ok(text)
}

/// A searcher with ripgrep's defaults: line numbers, files with a NUL byte treated as binary
/// and skipped; lines held up to [`MAX_LINE_BYTES`]. Built once per thread: it owns a large
/// buffer.
pub(crate) fn searcher() -> Searcher {
    SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(true)
        .heap_limit(Some(MAX_LINE_BYTES))
        .build()
}

/// A file read for the searcher, giving up (with an error) once the call is cancelled, so a
/// search through a huge file stops at its next read.
struct CancellableFile<'a> {
    file: std::fs::File,
    cancelled: &'a (dyn Fn() -> bool + Sync),
}

impl std::io::Read for CancellableFile<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if (self.cancelled)() {
            return Err(std::io::Error::other("cancelled"));
        }
        self.file.read(buf)
    }
}

/// The matching lines of one file, formatted, at most about `limit` bytes of them, and a note
/// last when a line over [`MAX_LINE_BYTES`] cut the search short (`shown` names the file in
/// it). An unreadable file gives none, as ripgrep skips it (reporting it on stderr).
fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: std::fs::File,
    shown: &str,
    prefix: Option<&str>,
    limit: usize,
    cancelled: &(dyn Fn() -> bool + Sync),
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
    let reader = CancellableFile { file, cancelled };
    if let Err(e) = searcher.search_reader(matcher, reader, sink)
        && !cancelled()
        && e.to_string().starts_with("configured allocation limit")
    {
        lines.push(long_line_note(shown));
    }
    lines
}

/// `[<path>: a line is longer than 8388608 bytes; the rest of the file was not searched]`.
fn long_line_note(shown: &str) -> String {
    format!(
        "[{shown}: a line is longer than {MAX_LINE_BYTES} bytes; the rest of the file was not \
         searched]"
    )
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
            let shown = display_path(relative);
            let lines = search_file(
                &mut searcher,
                matcher,
                file.into_std(),
                &shown,
                Some(&shown),
                limit,
                cancelled,
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
