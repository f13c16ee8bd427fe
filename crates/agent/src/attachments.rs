//! [`Attachments`]: the files behind `/attachments/<file>` paths, one folder per thread, and
//! their handing over between a parent run and a sub-agent's (as in the Standard Agents spec).

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::Value;
use toolsmith_core::{Message, Part, Role, ToolContext, ToolError};

/// How a thread refers to its files.
pub const ATTACHMENTS_PREFIX: &str = "/attachments/";

/// Where the files of `/attachments/<file>` paths live: a folder per thread (or per run, for
/// a run without a thread) under `root`. Put it in the run's dependencies
/// ([`RunInput::with_deps`](crate::RunInput::with_deps)) to let sub-agent and prompt tools
/// with an `initAttachmentsProperty` hand files over: the paths are checked in the parent (a
/// missing file stops the call before the child starts), the files copied into the child's
/// folder, and the child gets its own paths, the images and PDFs among them as file parts of
/// its first message. Paths to the child's files in its answer are copied back and rewritten
/// the same way.
///
/// ```
/// use toolsmith_agent::Attachments;
///
/// let dir = tempfile::tempdir().unwrap();
/// let store = Attachments::new(dir.path());
/// std::fs::create_dir_all(store.folder("thread-1")).unwrap();
/// std::fs::write(store.folder("thread-1").join("plan.txt"), "step 1").unwrap();
/// let copied = store.copy("thread-1", "/attachments/plan.txt", "child-run").unwrap();
/// assert_eq!(copied, "/attachments/plan.txt");
/// assert!(store.resolve("child-run", "/attachments/plan.txt").is_ok());
/// assert!(store.resolve("thread-1", "/attachments/../secrets").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct Attachments {
    root: PathBuf,
    /// Threads whose files live in a folder of their own choosing.
    placed: Vec<(String, PathBuf)>,
}

impl Attachments {
    /// A store under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Attachments {
            root: root.into(),
            placed: Vec::new(),
        }
    }

    /// Keeps the files of `thread` (a thread id, or a run id) in `folder` rather than under
    /// the root: `toolsmith run --attachments DIR` makes DIR the run's own folder.
    pub fn with_folder(mut self, thread: impl Into<String>, folder: impl Into<PathBuf>) -> Self {
        self.placed.push((thread.into(), folder.into()));
        self
    }

    /// The folder of a thread's files.
    pub fn folder(&self, thread: &str) -> PathBuf {
        if let Some((_, folder)) = self.placed.iter().find(|(t, _)| t == thread) {
            return folder.clone();
        }
        let name: String = thread
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.root.join(name)
    }

    /// The file a thread's `/attachments/<file>` path names.
    ///
    /// # Errors
    ///
    /// `INVALID_INPUT` for a path of another form (a folder, `..`, no prefix) or a file that
    /// does not exist.
    pub fn resolve(&self, thread: &str, path: &str) -> Result<PathBuf, ToolError> {
        let name = file_name(path)?;
        let file = self.folder(thread).join(name);
        if !file.is_file() {
            return Err(ToolError::new(
                "INVALID_INPUT",
                format!("The attachment {path} does not exist in this thread."),
            ));
        }
        Ok(file)
    }

    /// Copies a file of thread `from` into thread `to`; its path there (the same name, or
    /// one made unique when `to` has a different file of that name).
    ///
    /// # Errors
    ///
    /// As [`resolve`](Self::resolve), or `ATTACHMENT_COPY_FAILED` when the copy fails.
    pub fn copy(&self, from: &str, path: &str, to: &str) -> Result<String, ToolError> {
        let source = self.resolve(from, path)?;
        let folder = self.folder(to);
        let failed = |e: std::io::Error| {
            ToolError::new(
                "ATTACHMENT_COPY_FAILED",
                format!("The attachment {path} could not be handed over."),
            )
            .with_operator_detail(e.to_string())
        };
        std::fs::create_dir_all(&folder).map_err(failed)?;
        let name = file_name(path)?;
        let mut target = folder.join(name);
        let mut n = 1;
        while target.exists() && !same_content(&source, &target) {
            let (stem, ext) = split_ext(name);
            target = folder.join(format!("{stem}-{n}{ext}"));
            n += 1;
        }
        std::fs::copy(&source, &target).map_err(failed)?;
        let name = target.file_name().and_then(|n| n.to_str()).unwrap_or(name);
        Ok(format!("{ATTACHMENTS_PREFIX}{name}"))
    }
}

fn file_name(path: &str) -> Result<&str, ToolError> {
    match path.strip_prefix(ATTACHMENTS_PREFIX) {
        Some(name)
            if !name.is_empty()
                && !name.contains(['/', '\\', '\0'])
                && name != "."
                && name != ".." =>
        {
            Ok(name)
        }
        _ => Err(ToolError::new(
            "INVALID_INPUT",
            format!(
                "\"{path}\" is not an attachment path: they have the form /attachments/<file>."
            ),
        )),
    }
}

fn split_ext(name: &str) -> (&str, &str) {
    match name.rfind('.') {
        Some(i) if i > 0 => (&name[..i], &name[i..]),
        _ => (name, ""),
    }
}

fn same_content(a: &Path, b: &Path) -> bool {
    matches!((std::fs::read(a), std::fs::read(b)), (Ok(x), Ok(y)) if x == y)
}

/// The media type of a file, by its extension.
fn media_type(name: &str) -> &'static str {
    let ext = split_ext(name).1.to_ascii_lowercase();
    match ext.as_str() {
        ".png" => "image/png",
        ".jpg" | ".jpeg" => "image/jpeg",
        ".gif" => "image/gif",
        ".webp" => "image/webp",
        ".pdf" => "application/pdf",
        ".txt" | ".md" => "text/plain",
        ".json" => "application/json",
        ".csv" => "text/csv",
        _ => "application/octet-stream",
    }
}

/// The key of a run's folder: its thread, else its run id.
pub(crate) fn thread_key(cx: &ToolContext) -> &str {
    cx.thread_id().unwrap_or(cx.run_id())
}

/// The child's first user message: the task, and the files of the attachments property handed
/// over from the parent (checked before the child starts).
pub(crate) fn first_message(
    task: Message,
    property: Option<&str>,
    input: &Value,
    cx: &ToolContext,
    child: &str,
) -> Result<Message, ToolError> {
    let paths: Vec<&str> = match property.and_then(|p| input.get(p)) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(path)) => vec![path.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        Some(_) => Vec::new(),
    };
    if paths.is_empty() {
        return Ok(task);
    }
    let Some(store) = cx.dep::<Attachments>() else {
        return Err(ToolError::new(
            "INVALID_INPUT",
            "This run has no attachment store, so no files can be handed over.",
        )
        .with_operator_detail(
            "put a toolsmith_agent::Attachments in the run's dependencies".to_string(),
        ));
    };
    let parent = thread_key(cx);
    // Every path is checked before anything is copied or run.
    for path in &paths {
        store.resolve(parent, path)?;
    }
    let mut content = task.content;
    let mut listed = Vec::new();
    for path in paths {
        let copied = store.copy(parent, path, child)?;
        let kind = media_type(&copied);
        if kind.starts_with("image/") || kind == "application/pdf" {
            let bytes = std::fs::read(store.resolve(child, &copied)?).unwrap_or_default();
            content.push(Part::File {
                media_type: kind.to_string(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
                filename: Some(copied.clone()),
            });
        }
        listed.push(copied);
    }
    content.push(Part::text(format!("Attachments: {}", listed.join(", "))));
    Ok(Message::new(Role::User, content))
}

/// The child's answer with the `/attachments/<file>` paths of its own files copied into the
/// parent's folder and rewritten to the parent's paths. Without a store, or for paths that
/// are not files of the child, the text is unchanged.
pub(crate) fn hand_back(text: String, cx: &ToolContext, child: &str) -> String {
    let Some(store) = cx.dep::<Attachments>() else {
        return text;
    };
    if !text.contains(ATTACHMENTS_PREFIX) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(ATTACHMENTS_PREFIX) {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let end = ATTACHMENTS_PREFIX.len()
            + tail[ATTACHMENTS_PREFIX.len()..]
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, ')' | ']' | '"' | '\'' | ',' | '`')
                })
                .unwrap_or(tail.len() - ATTACHMENTS_PREFIX.len());
        // A sentence's full stop is not part of the name.
        let path = tail[..end].trim_end_matches('.');
        match store.copy(child, path, thread_key(cx)) {
            Ok(copied) => out.push_str(&copied),
            Err(_) => out.push_str(path),
        }
        rest = &tail[path.len()..];
    }
    out.push_str(rest);
    out
}
