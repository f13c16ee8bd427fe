//! `write` and `edit` hardened: no blind overwrite (the reported case: "Print the text of
//! intro.md" made a model write over it), no set-ID or sticky bit, no git metadata, and a
//! record of what they replaced that `revert_file_change` puts back.

use std::os::unix::fs::PermissionsExt;

use crate::common::{assert_err, workspace};
use serde_json::{Value, json};
use toolsmith_builtins::{
    FILE_CHANGE_ARTIFACT, FileAfter, FileBefore, FileChange, Reverted, Workspace, edit, read,
    revert_file_change, write,
};
use toolsmith_core::{Tool, ToolContext, ToolError, ToolOutput};
use toolsmith_sandbox::SandboxPolicy;

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
