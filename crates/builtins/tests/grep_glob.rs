//! The `grep` and `glob` tools.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use toolsmith_builtins::{Workspace, glob, grep};
use toolsmith_core::{Tool, ToolContext, ToolError};
use toolsmith_sandbox::SandboxPolicy;

fn workspace(limit: usize) -> (tempfile::TempDir, Arc<Workspace>) {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = SandboxPolicy::new(dir.path());
    policy.limits.output_bytes = limit;
    (dir, Workspace::new(policy).unwrap())
}

async fn call(tool: &impl Tool, input: Value) -> Result<String, ToolError> {
    let cx = ToolContext::for_test(tool.spec().name());
    tool.call(input, &cx).await.map(|out| out.model.to_text())
}

fn put(root: &Path, path: &str, content: &[u8]) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn tree() -> (tempfile::TempDir, Arc<Workspace>) {
    let (dir, ws) = workspace(200_000);
    let root = dir.path();
    put(root, "a.txt", b"needle one\nhay\n");
    put(root, "src/b.rs", b"fn main() {}\n// needle two\r\n");
    put(root, ".gitignore", b"ignored/\n*.log\n");
    put(root, "ignored/c.txt", b"needle ignored\n");
    put(root, "x.log", b"needle log\n");
    put(root, ".hidden/d.txt", b"needle hidden\n");
    put(root, ".e.txt", b"needle hidden file\n");
    put(root, "bin.dat", b"needle\0binary\n");
    put(root, "dash.txt", b"a -v flag\n");
    (dir, ws)
}

#[tokio::test]
async fn grep_follows_ripgreps_default_filters() {
    let (_dir, ws) = tree();
    let tool = grep(&ws);
    assert!(!tool.meta().side_effect);
    assert_eq!(
        call(&tool, json!({"pattern": "needle"})).await.unwrap(),
        "a.txt:1:needle one\nsrc/b.rs:2:// needle two\n"
    );
    assert_eq!(
        call(&tool, json!({"pattern": "needle", "path": "src"}))
            .await
            .unwrap(),
        "src/b.rs:2:// needle two\n"
    );
}

#[tokio::test]
async fn grep_single_file_no_match_and_dash_patterns() {
    let (_dir, ws) = tree();
    let tool = grep(&ws);
    assert_eq!(
        call(&tool, json!({"pattern": "hay|needle", "path": "a.txt"}))
            .await
            .unwrap(),
        "1:needle one\n2:hay\n"
    );
    assert_eq!(
        call(&tool, json!({"pattern": "nothing-matches-this"}))
            .await
            .unwrap(),
        ""
    );
    assert_eq!(
        call(&tool, json!({"pattern": "-v"})).await.unwrap(),
        "dash.txt:1:a -v flag\n"
    );
    // An explicitly named ignored file is still searched.
    assert_eq!(
        call(&tool, json!({"pattern": "needle", "path": "x.log"}))
            .await
            .unwrap(),
        "1:needle log\n"
    );
}

#[tokio::test]
async fn grep_errors() {
    let (_dir, ws) = tree();
    let tool = grep(&ws);
    let err = call(&tool, json!({"pattern": "a("})).await.unwrap_err();
    assert_eq!(err.code(), "TOOL_GREP_FAILED");
    assert!(
        err.message().contains("unclosed group"),
        "{}",
        err.message()
    );
    let err = call(&tool, json!({"pattern": "x", "path": "../"}))
        .await
        .unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        ("TOOL_PATH_ESCAPE", "Path escapes sandbox root")
    );
    let err = call(&tool, json!({"pattern": "x", "path": "missing"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TOOL_FILE_NOT_FOUND");
}

#[tokio::test]
async fn grep_output_is_capped_at_a_line_boundary() {
    let (dir, ws) = workspace(40);
    let lines: String = (0..100).map(|n| format!("match {n:03}\n")).collect();
    put(dir.path(), "f.txt", lines.as_bytes());
    let out = call(&grep(&ws), json!({"pattern": "match"})).await.unwrap();
    // Each line is `f.txt:N:match 0NN` (17 bytes + newline): two fit in 40 bytes.
    assert_eq!(
        out,
        "f.txt:1:match 000\nf.txt:2:match 001\n[output truncated at 40 bytes]"
    );
}

#[tokio::test]
async fn grep_shows_non_utf8_names_escaped() {
    use std::os::unix::ffi::OsStrExt;
    let (dir, ws) = workspace(200_000);
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(dir.path().join(name), "needle\n").unwrap();
    assert_eq!(
        call(&grep(&ws), json!({"pattern": "needle"}))
            .await
            .unwrap(),
        "caf\\xe9.txt:1:needle\n"
    );
    assert_eq!(
        call(&glob(&ws), json!({"pattern": "*.txt"})).await.unwrap(),
        "caf\\xe9.txt\n"
    );
}

/// Sets a file's modification time to a fixed instant `age_secs` before a fixed base.
fn touch(path: &Path, age_secs: u64) {
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(base - Duration::from_secs(age_secs))
        .unwrap();
}

#[tokio::test]
async fn glob_lists_newest_first_with_the_same_filters() {
    let (dir, ws) = tree();
    let root = dir.path();
    put(root, "src/deep/z.rs", b"");
    put(root, "src/y.rs", b"");
    touch(&root.join("src/b.rs"), 300);
    touch(&root.join("src/deep/z.rs"), 100);
    touch(&root.join("src/y.rs"), 300);
    touch(&root.join("a.txt"), 500);
    touch(&root.join("dash.txt"), 500);
    let tool = glob(&ws);
    assert!(!tool.meta().side_effect);
    assert_eq!(
        call(&tool, json!({"pattern": "**/*.rs"})).await.unwrap(),
        "src/deep/z.rs\nsrc/b.rs\nsrc/y.rs\n"
    );
    // `*` does not cross `/`; the pattern is relative to `path`, the output to the root.
    assert_eq!(
        call(&tool, json!({"pattern": "*.rs", "path": "src"}))
            .await
            .unwrap(),
        "src/b.rs\nsrc/y.rs\n"
    );
    assert_eq!(call(&tool, json!({"pattern": "*.log"})).await.unwrap(), "");
    let err = call(&tool, json!({"pattern": "a[b"})).await.unwrap_err();
    assert_eq!(err.code(), "TOOL_GLOB_FAILED");
    let err = call(&tool, json!({"pattern": "*", "path": "a.txt"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TOOL_NOT_A_DIRECTORY");
}

#[tokio::test]
async fn glob_is_capped() {
    let (dir, ws) = workspace(200_000);
    for n in 0..1005 {
        put(dir.path(), &format!("f{n:04}"), b"");
        touch(&dir.path().join(format!("f{n:04}")), 10);
    }
    let out = call(&glob(&ws), json!({"pattern": "f*"})).await.unwrap();
    let lines: Vec<_> = out.lines().collect();
    assert_eq!(lines.len(), 1001);
    assert_eq!(lines[0], "f0000");
    assert_eq!(lines[1000], "[truncated: showing 1000 of 1005 paths]");

    let (dir, ws) = workspace(12);
    for name in ["aa", "bb", "cc", "dd", "ee"] {
        put(dir.path(), name, b"");
        touch(&dir.path().join(name), 10);
    }
    assert_eq!(
        call(&glob(&ws), json!({"pattern": "*"})).await.unwrap(),
        "aa\nbb\ncc\ndd\n[truncated: showing 4 of 5 paths]"
    );
}
