//! The `read`, `write` and `edit` tools: Smithers' rules and messages.

use crate::common::{assert_err, call, workspace};
use serde_json::{Value, json};
use toolsmith_builtins::{edit, read, write};
use toolsmith_core::{Tool, ToolContext, ToolError};

#[tokio::test]
async fn metadata_and_names() {
    let (_dir, ws) = workspace(200_000);
    let all = toolsmith_builtins::all(&ws);
    for name in ["read", "write", "edit", "grep", "glob"] {
        assert!(all.contains(name), "{name}");
    }
    assert_eq!(read(&ws).spec().name(), "read");
    assert!(!read(&ws).meta().side_effect);
    for tool in [write(&ws).meta().clone(), edit(&ws).meta().clone()] {
        assert!(tool.side_effect);
        assert!(!tool.is_idempotent());
    }
    assert_eq!(write(&ws).spec().name(), "write");
    assert_eq!(edit(&ws).spec().name(), "edit");
    let schema = edit(&ws).spec().input_schema().clone();
    assert_eq!(schema["required"], json!(["path"]));
    assert!(schema["properties"]["old_string"]["description"].is_string());
}

#[tokio::test]
async fn read_whole_files_and_refuses_large_ones() {
    let (dir, ws) = workspace(10);
    std::fs::write(dir.path().join("a.txt"), "héllo\n").unwrap();
    std::fs::write(dir.path().join("big.txt"), "0123456789X").unwrap();
    std::fs::write(dir.path().join("bin"), b"\xff\xfe").unwrap();
    let tool = read(&ws);
    let cx = ToolContext::for_test("read");
    let out = tool.call(json!({"path": "a.txt"}), &cx).await.unwrap();
    assert_eq!(out.value, json!("héllo\n"));
    let err = assert_err(
        call(&tool, json!({"path": "big.txt"})).await,
        "TOOL_FILE_TOO_LARGE",
        "File too large (11 bytes)",
    );
    assert_eq!(err.details(), Some(&json!({"bytes": 11, "limit": 10})));
    assert_err(
        call(&tool, json!({"path": "bin"})).await,
        "TOOL_FILE_NOT_UTF8",
        "File is not UTF-8 text: bin",
    );
    assert_err(
        call(&tool, json!({"path": "missing"})).await,
        "TOOL_FILE_NOT_FOUND",
        "File not found: missing",
    );
    assert_err(
        call(&tool, json!({"path": ""})).await,
        "TOOL_PATH_INVALID",
        "Path must be a string",
    );
    assert_err(
        call(&tool, json!({"path": "../x"})).await,
        "TOOL_PATH_ESCAPE",
        "Path escapes sandbox root",
    );
    assert_eq!(
        call(&tool, json!({"path": "."})).await.unwrap_err().code(),
        "TOOL_IS_A_DIRECTORY"
    );
}

#[tokio::test]
async fn read_windows_of_lines() {
    let (dir, ws) = workspace(12);
    let lines: String = (1..=20).map(|n| format!("l{n}\n")).collect();
    std::fs::write(dir.path().join("f"), &lines).unwrap();
    let tool = read(&ws);
    let cx = ToolContext::for_test("read");
    let out = tool
        .call(json!({"path": "f", "offset": 3, "limit": 2}), &cx)
        .await
        .unwrap();
    assert_eq!(out.model.to_text(), "l3\nl4\n");
    assert_eq!(
        out.value,
        json!({"path": "f", "content": "l3\nl4\n", "offset": 3, "lines": 2,
               "hasMore": true, "truncated": false})
    );
    let out = tool
        .call(json!({"path": "f", "offset": 19}), &cx)
        .await
        .unwrap();
    assert_eq!(out.value["content"], "l19\nl20\n");
    assert_eq!(out.value["hasMore"], false);
    // Past the end: empty.
    let out = tool
        .call(json!({"path": "f", "offset": 50}), &cx)
        .await
        .unwrap();
    assert_eq!(out.value["content"], "");
    // Over the byte limit: cut and said so.
    let out = tool
        .call(json!({"path": "f", "limit": 10}), &cx)
        .await
        .unwrap();
    assert_eq!(out.value["content"], "l1\nl2\nl3\nl4\n");
    assert_eq!(out.value["truncated"], true);
    assert_eq!(
        out.model.to_text(),
        "l1\nl2\nl3\nl4\n\n[output truncated at 12 bytes]"
    );
    for (input, message) in [
        (
            json!({"path": "f", "offset": 0}),
            "offset must be at least 1",
        ),
        (json!({"path": "f", "limit": 0}), "limit must be at least 1"),
    ] {
        assert_err(call(&tool, input).await, "INVALID_INPUT", message);
    }
}

#[tokio::test]
async fn read_window_cuts_at_a_utf8_boundary() {
    let (dir, ws) = workspace(6);
    std::fs::write(dir.path().join("f"), "ab😀cd\n").unwrap();
    let out = read(&ws)
        .call(
            json!({"path": "f", "offset": 1}),
            &ToolContext::for_test("read"),
        )
        .await
        .unwrap();
    assert_eq!(out.value["content"], "ab😀");
    std::fs::write(dir.path().join("g"), "你好你好\n").unwrap();
    let out = read(&ws)
        .call(
            json!({"path": "g", "limit": 1}),
            &ToolContext::for_test("read"),
        )
        .await
        .unwrap();
    assert_eq!(out.value["content"], "你好");
}

/// A window over a line of 64 MiB (sparse: NUL bytes, which are UTF-8) holds at most the byte
/// limit of it, cut and marked truncated; a window after it skips it without holding it.
#[tokio::test]
async fn read_windows_never_hold_a_giant_line() {
    use std::io::{Seek, SeekFrom, Write as _};
    let (dir, ws) = workspace(1000);
    let mut file = std::fs::File::create(dir.path().join("giant")).unwrap();
    file.write_all(b"first\n").unwrap();
    file.seek(SeekFrom::Start(6 + (64 << 20))).unwrap();
    file.write_all(b"\nlast\n").unwrap();
    drop(file);
    let cx = ToolContext::for_test("read");
    let out = read(&ws)
        .call(json!({"path": "giant", "limit": 3}), &cx)
        .await
        .unwrap();
    let content = format!("first\n{}", "\0".repeat(994));
    assert_eq!(
        out.value,
        json!({"path": "giant", "content": content, "offset": 1, "lines": 2,
            "hasMore": true, "truncated": true})
    );
    assert_eq!(
        out.model.to_text(),
        format!("{content}\n[output truncated at 1000 bytes]")
    );
    let out = read(&ws)
        .call(json!({"path": "giant", "offset": 3}), &cx)
        .await
        .unwrap();
    assert_eq!(
        out.value,
        json!({"path": "giant", "content": "last\n", "offset": 3, "lines": 1,
            "hasMore": false, "truncated": false})
    );
}

#[tokio::test]
async fn write_checks_size_first_and_writes_atomically() {
    let (dir, ws) = workspace(5);
    let tool = write(&ws);
    assert_eq!(
        call(&tool, json!({"path": "a/b/c.txt", "content": "hi"}))
            .await
            .unwrap(),
        "ok"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "hi"
    );
    // The size is checked before the path: an escaping path still reports the size.
    let err = assert_err(
        call(&tool, json!({"path": "../../etc/x", "content": "abcdef"})).await,
        "TOOL_CONTENT_TOO_LARGE",
        "Content too large (6 bytes)",
    );
    assert_eq!(
        err.details(),
        Some(&json!({
            "contentBytes": 6,
            "contentHash": "bef57ec7f53a6d40beb640a780a639c83bc29ac8a9816f1fc6c5c6dcd93c4721"
        }))
    );
    assert!(!format!("{err:?}").contains("abcdef"));
    assert_err(
        call(&tool, json!({"path": "../x", "content": "a"})).await,
        "TOOL_PATH_ESCAPE",
        "Path escapes sandbox root",
    );
    assert_err(
        call(&tool, json!({"path": "", "content": "a"})).await,
        "TOOL_PATH_INVALID",
        "Path must be a string",
    );
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(dir.path().join("a/b")).unwrap().collect();
    assert_eq!(names.len(), 1);
}

async fn edited(before: &str, input: Value) -> Result<String, ToolError> {
    let (dir, ws) = workspace(200_000);
    std::fs::write(dir.path().join("f.txt"), before).unwrap();
    let mut input = input;
    input["path"] = json!("f.txt");
    call(&edit(&ws), input).await?;
    Ok(std::fs::read_to_string(dir.path().join("f.txt")).unwrap())
}

#[tokio::test]
async fn edit_applies_unified_diffs() {
    let base = "one\ntwo\nthree\nfour\nfive\n";
    // Headers ignored, wrong line numbers tolerated.
    let patch = "--- a/other.txt\n+++ b/other.txt\n@@ -10,3 +10,3 @@\n two\n-three\n+3\n four\n";
    assert_eq!(
        edited(base, json!({"patch": patch})).await.unwrap(),
        "one\ntwo\n3\nfour\nfive\n"
    );
    // Multi-hunk.
    let patch = "@@ -1,2 +1,2 @@\n-one\n+1\n two\n@@ -4,2 +4,2 @@\n four\n-five\n+5\n";
    assert_eq!(
        edited(base, json!({"patch": patch})).await.unwrap(),
        "1\ntwo\nthree\nfour\n5\n"
    );
    // CRLF file, LF patch: the file keeps CRLF.
    let patch = "@@ -1,2 +1,2 @@\n a\n-b\n+c\n";
    assert_eq!(
        edited("a\r\nb\r\n", json!({"patch": patch})).await.unwrap(),
        "a\r\nc\r\n"
    );
    // LF file, CRLF patch.
    let patch = "@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+c\r\n";
    assert_eq!(
        edited("a\nb\n", json!({"patch": patch})).await.unwrap(),
        "a\nc\n"
    );
    // No newline at end of file.
    let patch = "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n";
    assert_eq!(
        edited("a\nb", json!({"patch": patch})).await.unwrap(),
        "a\nb\n"
    );
}

#[tokio::test]
async fn edit_patch_failures() {
    let base = "one\ntwo\nthree\n";
    let err = assert_err(
        edited(base, json!({"patch": "@@ -1,2 +1,2 @@\n one\n-TWO\n+2\n"})).await,
        "TOOL_PATCH_FAILED",
        "Failed to apply patch",
    );
    assert_eq!(err.details().unwrap()["hunk"], 1);
    let multi = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-one\n+1\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n";
    assert_err(
        edited(base, json!({"patch": multi})).await,
        "TOOL_PATCH_FAILED",
        "Failed to apply patch: only single-file patches are supported",
    );
    assert_err(
        edited(base, json!({"patch": "not a diff"})).await,
        "TOOL_PATCH_FAILED",
        "Failed to apply patch",
    );

    let (dir, ws) = workspace(8);
    let tool = edit(&ws);
    let err = assert_err(
        call(
            &tool,
            json!({"path": "../nope", "patch": "@@ -1 +1 @@\n-a\n+b\n"}),
        )
        .await,
        "TOOL_PATCH_TOO_LARGE",
        "Patch too large (18 bytes)",
    );
    assert_eq!(err.details().unwrap()["patchBytes"], 18);
    assert_eq!(
        err.details().unwrap()["patchHash"].as_str().unwrap().len(),
        64
    );
    assert_err(
        call(&tool, json!({"path": "missing", "patch": "@@"})).await,
        "TOOL_FILE_NOT_FOUND",
        "File not found: missing",
    );
    std::fs::write(dir.path().join("big"), "123456789").unwrap();
    assert_err(
        call(
            &tool,
            json!({"path": "big", "old_string": "1", "new_string": "2"}),
        )
        .await,
        "TOOL_FILE_TOO_LARGE",
        "File too large (9 bytes)",
    );
}

#[tokio::test]
async fn edit_replaces_strings() {
    let base = "let a = 1;\nlet b = 1;\n";
    assert_eq!(
        edited(base, json!({"old_string": "a = 1", "new_string": "a = 2"}))
            .await
            .unwrap(),
        "let a = 2;\nlet b = 1;\n"
    );
    assert_err(
        edited(base, json!({"old_string": "= 1", "new_string": "= 2"})).await,
        "TOOL_EDIT_NOT_UNIQUE",
        "old_string occurs 2 times in f.txt; add context or set replace_all",
    );
    assert_eq!(
        edited(
            base,
            json!({"old_string": "= 1", "new_string": "= 2", "replace_all": true})
        )
        .await
        .unwrap(),
        "let a = 2;\nlet b = 2;\n"
    );
    assert_err(
        edited(base, json!({"old_string": "c = 1", "new_string": "x"})).await,
        "TOOL_EDIT_NOT_FOUND",
        "old_string not found in f.txt",
    );
    // A CRLF file, strings with LF.
    assert_eq!(
        edited(
            "a\r\nb\r\n",
            json!({"old_string": "a\nb", "new_string": "a\nc"})
        )
        .await
        .unwrap(),
        "a\r\nc\r\n"
    );
}

#[tokio::test]
async fn edit_input_forms() {
    let cases = [
        (
            json!({"patch": "x", "old_string": "a", "new_string": "b"}),
            "Give either patch or old_string/new_string, not both",
        ),
        (json!({}), "Give either patch or old_string and new_string"),
        (
            json!({"old_string": "a"}),
            "old_string and new_string must be given together",
        ),
        (
            json!({"old_string": "", "new_string": "b"}),
            "old_string must not be empty",
        ),
        (
            json!({"old_string": "a", "new_string": "a"}),
            "old_string and new_string are identical",
        ),
        (
            json!({"patch": "x", "replace_all": true}),
            "replace_all only applies to old_string/new_string",
        ),
    ];
    for (input, message) in cases {
        assert_err(edited("a\n", input).await, "INVALID_INPUT", message);
    }
}
