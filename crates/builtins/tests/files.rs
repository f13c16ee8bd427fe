//! The `read`, `write` and `edit` tools: seed 001's rules and messages.

use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith_builtins::{Workspace, edit, read, write};
use toolsmith_core::{Tool, ToolContext, ToolError};
use toolsmith_sandbox::SandboxPolicy;

fn workspace(limit: usize) -> (tempfile::TempDir, Arc<Workspace>) {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = SandboxPolicy::new(dir.path());
    policy.limits.output_bytes = limit;
    let workspace = Workspace::new(policy).unwrap();
    (dir, workspace)
}

async fn call(tool: &impl Tool, input: Value) -> Result<String, ToolError> {
    let cx = ToolContext::for_test(tool.spec().name());
    tool.call(input, &cx).await.map(|out| out.model.to_text())
}

fn assert_err(result: Result<String, ToolError>, code: &str, message: &str) -> ToolError {
    let err = result.unwrap_err();
    assert_eq!((err.code(), err.message()), (code, message));
    err
}

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

// ---- The hardening: no blind overwrite, no set-ID bit, no git metadata, a revertible record.

use std::os::unix::fs::PermissionsExt;

use toolsmith_builtins::{
    FILE_CHANGE_ARTIFACT, FileAfter, FileBefore, FileChange, Reverted, revert_file_change,
};
use toolsmith_core::ToolOutput;

/// One run's calls share a context (and its session state).
async fn run_call(
    tool: &impl Tool,
    cx: &ToolContext,
    input: Value,
) -> Result<ToolOutput, ToolError> {
    tool.call(input, cx).await
}

fn change_of(out: &ToolOutput) -> FileChange {
    assert_eq!(out.model.to_text(), "ok");
    assert_eq!(out.artifacts.len(), 1);
    assert_eq!(out.artifacts[0].kind, FILE_CHANGE_ARTIFACT);
    FileChange::from_artifact(&out.artifacts[0]).unwrap()
}

const INTRO: &str = "# Intro\n\nThis project does things.\n";

#[tokio::test]
async fn the_reported_case_write_over_an_unread_file_fails_and_the_file_is_intact() {
    // "Print the text of intro.md": the model called write {intro.md, "text"} without reading.
    let (dir, ws) = workspace(200_000);
    std::fs::write(dir.path().join("intro.md"), INTRO).unwrap();
    let cx = ToolContext::for_test("write");
    let err = run_call(
        &write(&ws),
        &cx,
        json!({"path": "intro.md", "content": "text"}),
    )
    .await
    .map(|o| o.model.to_text());
    let err = assert_err(
        err,
        "TOOL_FILE_NOT_READ",
        "Refusing to overwrite intro.md: read it first (it exists and this run has not read it)",
    );
    assert_eq!(
        err.details(),
        Some(&json!({"path": "intro.md", "reason": "not-read"}))
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("intro.md")).unwrap(),
        INTRO
    );
}

#[tokio::test]
async fn write_replaces_only_what_the_run_has_read_as_it_is() {
    let (dir, ws) = workspace(200_000);
    let file = dir.path().join("intro.md");
    std::fs::write(&file, INTRO).unwrap();
    let (read, write, edit) = (read(&ws), write(&ws), edit(&ws));
    let cx = ToolContext::for_test("write");
    let replace = |content: &str| json!({"path": "intro.md", "content": content});

    // Read, then replace: allowed, and the run has seen what it wrote.
    run_call(&read, &cx, json!({"path": "intro.md"}))
        .await
        .unwrap();
    run_call(&write, &cx, replace("one")).await.unwrap();
    run_call(&write, &cx, replace("two")).await.unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two");

    // Another run has read nothing.
    let other = ToolContext::for_test("write");
    let refused = run_call(&write, &other, replace("three")).await;
    assert_eq!(refused.unwrap_err().code(), "TOOL_FILE_NOT_READ");

    // Changed outside since this run wrote it.
    std::fs::write(&file, "changed by someone else").unwrap();
    let refused = run_call(&write, &cx, replace("four"))
        .await
        .map(|_| String::new());
    assert_err(
        refused,
        "TOOL_FILE_NOT_READ",
        "Refusing to overwrite intro.md: read it first (it changed since it was read)",
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "changed by someone else"
    );

    // A window read counts as a read.
    run_call(&read, &cx, json!({"path": "intro.md", "limit": 1}))
        .await
        .unwrap();
    run_call(&write, &cx, replace("five")).await.unwrap();

    // A new file needs no read; an edit needs none either, and counts as seen.
    run_call(&write, &cx, json!({"path": "new/notes.md", "content": "a"}))
        .await
        .unwrap();
    std::fs::write(dir.path().join("e.md"), "x = 1\n").unwrap();
    run_call(
        &edit,
        &other,
        json!({"path": "e.md", "old_string": "1", "new_string": "2"}),
    )
    .await
    .unwrap();
    run_call(
        &write,
        &other,
        json!({"path": "e.md", "content": "x = 3\n"}),
    )
    .await
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("e.md")).unwrap(),
        "x = 3\n"
    );
}

#[tokio::test]
async fn write_refuses_targets_it_cannot_keep_or_that_are_not_files() {
    let (dir, ws) = workspace(10);
    std::fs::write(dir.path().join("big.txt"), "0123456789X").unwrap();
    std::fs::write(dir.path().join("bin"), b"\xff\xfe").unwrap();
    std::fs::write(dir.path().join("a.txt"), "a").unwrap();
    std::os::unix::fs::symlink("a.txt", dir.path().join("link")).unwrap();
    let (write, edit) = (write(&ws), edit(&ws));
    let cx = ToolContext::for_test("write");
    let w = |path: &str| json!({"path": path, "content": "x"});
    let text = |r: Result<ToolOutput, ToolError>| r.map(|o| o.model.to_text());
    assert_err(
        text(run_call(&write, &cx, w("big.txt")).await),
        "TOOL_FILE_TOO_LARGE",
        "File too large (11 bytes)",
    );
    assert_err(
        text(run_call(&write, &cx, w("bin")).await),
        "TOOL_FILE_NOT_UTF8",
        "File is not UTF-8 text: bin",
    );
    let symlink = "Not a regular file: link (a symbolic link; use the path it points to)";
    assert_err(
        text(run_call(&write, &cx, w("link")).await),
        "TOOL_NOT_A_FILE",
        symlink,
    );
    let through = json!({"path": "link", "old_string": "a", "new_string": "b"});
    assert_err(
        text(run_call(&edit, &cx, through).await),
        "TOOL_NOT_A_FILE",
        symlink,
    );
    assert!(dir.path().join("link").is_symlink());
    assert_err(
        text(run_call(&write, &cx, w(".")).await),
        "TOOL_IS_A_DIRECTORY",
        "Is a directory: .",
    );
}

/// The mode bits of `path`, set-ID and sticky included.
fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[tokio::test]
async fn write_and_edit_never_leave_a_set_id_or_sticky_bit() {
    let (dir, ws) = workspace(200_000);
    let (read, write, edit) = (read(&ws), write(&ws), edit(&ws));
    let cx = ToolContext::for_test("write");
    for (name, planted) in [
        ("suid", 0o4755),
        ("sgid", 0o2755),
        ("sticky", 0o1755),
        ("all", 0o7777),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(planted)).unwrap();
        assert_eq!(
            mode(&file),
            planted,
            "{name}: the test could not plant the bits"
        );
        run_call(&read, &cx, json!({"path": name})).await.unwrap();
        let out = run_call(
            &write,
            &cx,
            json!({"path": name, "content": "#!/bin/sh\nid\n"}),
        )
        .await
        .unwrap();
        assert_eq!(mode(&file), planted & 0o777, "{name} after write");
        let change = change_of(&out);
        assert_eq!(change.before.unwrap().mode, planted & 0o777);
        assert_eq!(change.after.mode, planted & 0o777);

        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(planted)).unwrap();
        let input = json!({"path": name, "old_string": "id", "new_string": "whoami"});
        run_call(&edit, &cx, input).await.unwrap();
        assert_eq!(mode(&file), planted & 0o777, "{name} after edit");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "#!/bin/sh\nwhoami\n"
        );
    }
}

fn git_refusal(path: &str) -> String {
    format!(
        "Refusing to change {path}: it is git metadata, and git protection is on (the sandbox \
         policy's protect_git; the user can turn it off)"
    )
}

#[tokio::test]
async fn git_metadata_is_out_of_reach_of_write_and_edit() {
    let (dir, ws) = workspace(200_000);
    std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
    std::fs::create_dir_all(dir.path().join("sub/.git")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    std::os::unix::fs::symlink(".git", dir.path().join("g")).unwrap();
    let (read, write, edit) = (read(&ws), write(&ws), edit(&ws));
    let cx = ToolContext::for_test("write");
    run_call(&read, &cx, json!({"path": ".git/config"}))
        .await
        .unwrap();
    let text = |r: Result<ToolOutput, ToolError>| r.map(|o| o.model.to_text());
    for path in [
        ".git/config",
        ".git/hooks/pre-commit",
        "./x/../.git/config",
        "sub/.git/config",
        "sub/.GIT/hooks/post-checkout",
        ".git",
        "g/hooks/pre-commit",
    ] {
        let input = json!({"path": path, "content": "[core]\n\tfsmonitor = evil\n"});
        let err = assert_err(
            text(run_call(&write, &cx, input).await),
            "TOOL_PATH_PROTECTED",
            &git_refusal(path),
        );
        assert_eq!(err.details(), Some(&json!({"path": path})));
    }
    let absolute = dir.path().canonicalize().unwrap().join(".git/config");
    let absolute = absolute.to_str().unwrap();
    let input = json!({"path": absolute, "content": "x"});
    assert_err(
        text(run_call(&write, &cx, input).await),
        "TOOL_PATH_PROTECTED",
        &git_refusal(absolute),
    );
    let input = json!({"path": ".git/config", "old_string": "[core]", "new_string": "[alias]"});
    assert_err(
        text(run_call(&edit, &cx, input).await),
        "TOOL_PATH_PROTECTED",
        &git_refusal(".git/config"),
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!dir.path().join(".git/hooks/pre-commit").exists());
    assert!(!dir.path().join("sub/.GIT").exists());
    // Names that merely look like it are ordinary files.
    for path in [
        ".gitignore",
        ".github/workflows/ci.yml",
        "x.git",
        ".git2/config",
    ] {
        run_call(&write, &cx, json!({"path": path, "content": "x"}))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn git_protection_off_lets_the_file_tools_through() {
    let dir = tempfile::tempdir().unwrap();
    let mut policy = SandboxPolicy::new(dir.path());
    policy.protect_git = false;
    let ws = Workspace::new(policy).unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/config"), "[core]\n").unwrap();
    let cx = ToolContext::for_test("write");
    run_call(
        &write(&ws),
        &cx,
        json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
    )
    .await
    .unwrap();
    let input = json!({"path": ".git/config", "old_string": "[core]", "new_string": "[alias]"});
    run_call(&edit(&ws), &cx, input).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".git/config")).unwrap(),
        "[alias]\n"
    );
}

#[tokio::test]
async fn write_and_edit_keep_what_they_replaced_and_revert_puts_it_back() {
    let (dir, ws) = workspace(200_000);
    let file = dir.path().join("intro.md");
    std::fs::write(&file, INTRO).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (read, write, edit) = (read(&ws), write(&ws), edit(&ws));
    let cx = ToolContext::for_test("write");
    run_call(&read, &cx, json!({"path": "intro.md"}))
        .await
        .unwrap();
    let wrote = change_of(
        &run_call(
            &write,
            &cx,
            json!({"path": "./intro.md", "content": "text"}),
        )
        .await
        .unwrap(),
    );
    assert_eq!(
        wrote,
        FileChange {
            root: Some(dir.path().canonicalize().unwrap()),
            path: "intro.md".into(),
            before: Some(FileBefore::new(INTRO, 0o640)),
            after: FileAfter::new(b"text", 0o640),
        }
    );
    let input = json!({"path": "intro.md", "old_string": "text", "new_string": "more text"});
    let edited = change_of(&run_call(&edit, &cx, input).await.unwrap());
    assert_eq!(edited.before, Some(FileBefore::new("text", 0o640)));
    let created = change_of(
        &run_call(&write, &cx, json!({"path": "d/new.md", "content": "new"}))
            .await
            .unwrap(),
    );
    assert_eq!(created.before, None);

    let root = toolsmith_sandbox::RootDir::open(dir.path()).unwrap();
    // Oldest first is refused: the file holds what the edit wrote, not what the write did.
    let err = revert_file_change(&root, &wrote, false).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            "REVERT_FILE_CHANGED",
            "intro.md changed after the call wrote it"
        )
    );
    // Newest first restores the exact bytes and the mode.
    assert_eq!(
        revert_file_change(&root, &created, false).unwrap(),
        Reverted::Removed
    );
    assert!(!dir.path().join("d/new.md").exists());
    assert_eq!(
        revert_file_change(&root, &edited, false).unwrap(),
        Reverted::Restored
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "text");
    assert_eq!(
        revert_file_change(&root, &wrote, false).unwrap(),
        Reverted::Restored
    );
    assert_eq!(std::fs::read(&file).unwrap(), INTRO.as_bytes());
    assert_eq!(mode(&file), 0o640);
    // Again: nothing to do.
    assert_eq!(
        revert_file_change(&root, &wrote, false).unwrap(),
        Reverted::AlreadyReverted
    );
    assert_eq!(
        revert_file_change(&root, &created, false).unwrap(),
        Reverted::AlreadyReverted
    );
}

#[tokio::test]
async fn revert_refuses_changed_files_and_altered_copies_unless_told() {
    let dir = tempfile::tempdir().unwrap();
    let root = toolsmith_sandbox::RootDir::open(dir.path()).unwrap();
    let file = dir.path().join("a.md");
    std::fs::write(&file, "changed outside").unwrap();
    let change = FileChange {
        root: None,
        path: "a.md".into(),
        before: Some(FileBefore::new("before", 0o4755)),
        after: FileAfter::new(b"written", 0o644),
    };
    let err = revert_file_change(&root, &change, false).unwrap_err();
    assert_eq!(err.code(), "REVERT_FILE_CHANGED");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "changed outside");
    // Forced: put back, and the set-user-ID bit a forged record asks for is not.
    assert_eq!(
        revert_file_change(&root, &change, true).unwrap(),
        Reverted::Restored
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "before");
    assert_eq!(mode(&file), 0o755);

    // A kept copy altered since (a secret masked in it) is never written.
    std::fs::write(&file, "written").unwrap();
    let mut altered = change.clone();
    altered.before.as_mut().unwrap().content = "bef***".into();
    let err = revert_file_change(&root, &altered, false).unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (
            "REVERT_COPY_ALTERED",
            "The kept copy of a.md no longer matches its SHA-256; restore it by hand"
        )
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "written");

    // Paths stay beneath the root.
    let mut escape = change.clone();
    escape.path = "../outside.md".into();
    assert_eq!(
        revert_file_change(&root, &escape, true).unwrap_err().code(),
        "TOOL_PATH_ESCAPE"
    );
}
