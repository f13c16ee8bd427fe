//! The `grep` and `glob` tools.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::common::{call, workspace};
use serde_json::{Value, json};
use toolsmith_builtins::{Workspace, glob, grep};
use toolsmith_core::{Tool, ToolContext, ToolError};

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

/// The walk before it was confined: the `ignore` crate's own walker with the options the tools
/// gave it. The confined walk must keep exactly what it kept, in the same order.
fn reference_walk(root: &Path, target: &str) -> Vec<(String, bool)> {
    ignore::WalkBuilder::new(root.join(target))
        .follow_links(false)
        .hidden(true)
        .ignore(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .parents(false)
        .require_git(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
        .flatten()
        .filter(|entry| entry.file_type().is_some_and(|kind| !kind.is_dir()))
        .map(|entry| {
            let path = entry.path().strip_prefix(root).unwrap();
            let is_file = entry.file_type().is_some_and(|kind| kind.is_file());
            (path.to_string_lossy().into_owned(), is_file)
        })
        .collect()
}

/// A tree exercising every rule of the walk: nested `.gitignore`s with whitelists, `.ignore`
/// beating `.gitignore` across levels, hidden entries whitelisted, directory-only and anchored
/// patterns, `.git/info/exclude` of a nested repository, a CRLF file with a byte-order mark,
/// symlinks (listed, not followed), a FIFO.
fn rule_tree(root: &Path) {
    for (path, content) in [
        ("keep.txt", "x\n"),
        ("drop.log", "x\n"),
        ("a/keep.log", "x\n"),
        ("a/other.log", "x\n"),
        ("a/b/deep.log", "x\n"),
        ("a/b/x.tmp", "x\n"),
        ("a/b/build/out.txt", "x\n"),
        ("a/build", "x\n"),
        ("c/y.tmp", "x\n"),
        ("c/z.txt", "x\n"),
        (".env", "x\n"),
        (".other", "x\n"),
        (".hid/z.txt", "x\n"),
        ("d/inrepo.txt", "x\n"),
        ("d/excluded.txt", "x\n"),
        ("d/sub/excluded.txt", "x\n"),
        ("d/.git/info/exclude", "excluded.txt\n"),
        ("e/plain", "x\n"),
        ("e/kept", "x\n"),
        ("f/root-only.txt", "x\n"),
        ("f/g/root-only.txt", "x\n"),
        ("f/g/unignored.md", "x\n"),
        (
            ".gitignore",
            "*.log\n!.env\n*.tmp\nbuild/\n/f/root-only.txt\n*.md\n",
        ),
        ("a/.gitignore", "!keep.log\n"),
        ("a/b/.ignore", "!*.tmp\n"),
        (".ignore", "c/*.tmp\n"),
        ("e/.gitignore", "\u{feff}plain\r\n# comment\r\n"),
        ("f/g/.ignore", "!*.md\n"),
    ] {
        put(root, path, content.as_bytes());
    }
    std::os::unix::fs::symlink("keep.txt", root.join("link-to-file")).unwrap();
    std::os::unix::fs::symlink("a", root.join("link-to-dir")).unwrap();
    let fifo = root.join("c/fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
}

#[tokio::test]
async fn the_confined_walk_keeps_what_ripgreps_walker_kept() {
    let (dir, ws) = workspace(200_000);
    let root = ws.root().path().to_path_buf();
    rule_tree(dir.path());
    for target in [".", "a", "f", "d"] {
        let reference = reference_walk(&root, target);
        // grep visits the regular files in walk order (each holds one matching line).
        let expected: String = reference
            .iter()
            .filter(|(_, is_file)| *is_file)
            .map(|(path, _)| format!("{path}:1:x\n"))
            .collect();
        let got = call(&grep(&ws), json!({"pattern": "^x$", "path": target}))
            .await
            .unwrap();
        assert_eq!(got, expected, "grep in {target}");
        // glob lists every non-directory entry (newest first: compared as sets).
        let mut expected: Vec<&str> = reference.iter().map(|(path, _)| path.as_str()).collect();
        expected.sort_unstable();
        let got = call(&glob(&ws), json!({"pattern": "**", "path": target}))
            .await
            .unwrap();
        let mut got: Vec<&str> = got.lines().collect();
        got.sort_unstable();
        assert_eq!(got, expected, "glob in {target}");
    }
    // The tree does exercise the rules.
    let all = reference_walk(&root, ".");
    let names: Vec<&str> = all.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        names,
        [
            ".env",
            "a/b/x.tmp",
            "a/build",
            "a/keep.log",
            "c/fifo",
            "c/z.txt",
            "d/inrepo.txt",
            "e/kept",
            "f/g/root-only.txt",
            "f/g/unignored.md",
            "keep.txt",
            "link-to-dir",
            "link-to-file",
        ]
    );
}

#[tokio::test]
async fn a_tree_deeper_than_the_open_handles_is_walked() {
    let (dir, ws) = workspace(200_000);
    // 40 levels: past the 32 that keep their handle open, so the deepest are reopened from the
    // root; a .gitignore at level 35 still applies below it.
    let deep: String = (0..40).map(|n| format!("d{n}/")).collect();
    let level35: String = (0..35).map(|n| format!("d{n}/")).collect();
    put(dir.path(), &format!("{deep}found.txt"), b"needle\n");
    put(dir.path(), &format!("{deep}hidden.log"), b"needle\n");
    put(dir.path(), &format!("{level35}.gitignore"), b"*.log\n");
    assert_eq!(
        call(&grep(&ws), json!({"pattern": "needle"}))
            .await
            .unwrap(),
        format!("{deep}found.txt:1:needle\n")
    );
    assert_eq!(
        call(&glob(&ws), json!({"pattern": "**/found.txt"}))
            .await
            .unwrap(),
        format!("{deep}found.txt\n")
    );
}

#[tokio::test]
async fn hostile_patterns_are_refused_before_they_are_compiled() {
    // Each of these ran in the calling process: one that overflowed the stack would abort this
    // test binary, so passing proves it no longer does.
    let (_dir, ws) = tree();
    let nested = "pattern nests brackets more than 64 levels deep.";
    let long = "pattern exceeds 10000 characters.";
    let alternation = format!("{{{}}}", vec!["ab"; 4000].join(","));
    let glob_cases: [(String, &str); 5] = [
        // The exact case: 10 000 nested `{` overflowed globset's recursion.
        ("{".repeat(10_000), nested),
        (
            format!("{}a{}", "{a,".repeat(2_000), "}".repeat(2_000)),
            nested,
        ),
        ("[".repeat(10_000), nested),
        ("(".repeat(10_000), nested),
        (alternation, long),
    ];
    for (pattern, message) in &glob_cases {
        let err = call(&glob(&ws), json!({"pattern": pattern}))
            .await
            .unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            ("INVALID_INPUT", *message),
            "{}",
            &pattern[..20]
        );
    }
    let regex_cases: [(String, &str); 4] = [
        ("(".repeat(10_000), nested),
        (
            format!("{}a{}", "(?:a|".repeat(200), ")".repeat(200)),
            nested,
        ),
        ("[".repeat(10_000), nested),
        (vec!["ab"; 4000].join("|"), long),
    ];
    for (pattern, message) in &regex_cases {
        let err = call(&grep(&ws), json!({"pattern": pattern}))
            .await
            .unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            ("INVALID_INPUT", *message),
            "{}",
            &pattern[..20]
        );
    }
    // Nesting up to the bound works, in both tools.
    let deep = format!("{}needle{}", "{needle,".repeat(64), "}".repeat(64));
    assert_eq!(
        call(&glob(&ws), json!({"pattern": deep})).await.unwrap(),
        ""
    );
    let deep = format!("{}needle{}", "(?:".repeat(64), ")".repeat(64));
    assert_eq!(
        call(&grep(&ws), json!({"pattern": deep, "path": "a.txt"}))
            .await
            .unwrap(),
        "1:needle one\n"
    );
    // A huge repetition hits the regex size limit: an error, quickly, not gigabytes.
    let err = call(&grep(&ws), json!({"pattern": "a{1000}{1000}"}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "TOOL_GREP_FAILED");
    assert!(
        err.message().contains("exceeds size limit"),
        "{}",
        err.message()
    );
}

#[tokio::test]
async fn ignore_file_lines_too_complex_for_globset_are_skipped_with_a_note() {
    let (dir, ws) = workspace(200_000);
    let line = "{".repeat(10_000);
    put(
        dir.path(),
        ".gitignore",
        format!("*.log\n{line}\n*.tmp\n").as_bytes(),
    );
    put(dir.path(), "a.txt", b"needle\n");
    put(dir.path(), "b.log", b"needle\n");
    put(dir.path(), "c.tmp", b"needle\n");
    let note = "[ignore file .gitignore: line 2 skipped: pattern nests brackets more than 64 \
        levels deep.]\n";
    assert_eq!(
        call(&grep(&ws), json!({"pattern": "needle"}))
            .await
            .unwrap(),
        format!("a.txt:1:needle\n{note}")
    );
    assert_eq!(
        call(&glob(&ws), json!({"pattern": "*"})).await.unwrap(),
        format!("a.txt\n{note}")
    );
}

/// 64 MiB without a newline, fast to write.
fn giant_line(prefix: &[u8], suffix: &[u8]) -> Vec<u8> {
    let mut bytes = prefix.to_vec();
    bytes.resize(prefix.len() + (64 << 20), b'a');
    bytes.extend_from_slice(suffix);
    bytes
}

#[tokio::test]
async fn grep_never_holds_a_giant_line() {
    let (dir, ws) = workspace(200_000);
    put(
        dir.path(),
        "big.txt",
        &giant_line(b"needle one\n", b"\nneedle two\n"),
    );
    put(dir.path(), "small.txt", b"needle three\n");
    let note = "a line is longer than 8388608 bytes; the rest of the file was not searched]";
    assert_eq!(
        call(&grep(&ws), json!({"pattern": "needle"}))
            .await
            .unwrap(),
        format!("big.txt:1:needle one\n[big.txt: {note}\nsmall.txt:1:needle three\n")
    );
    assert_eq!(
        call(&grep(&ws), json!({"pattern": "needle", "path": "big.txt"}))
            .await
            .unwrap(),
        format!("1:needle one\n[big.txt: {note}\n")
    );
}

/// Runs `call` on a runtime of its own in a thread, cancelling the call's token after
/// `cancel_after` (before the call when `None`), then drops the runtime, which waits for its blocking threads: the result
/// comes back only once the blocking work itself has stopped. `None` if that takes over 10 s
/// (the search below would take minutes).
fn cancelled_call(
    tool: impl Tool + 'static,
    input: Value,
    cancel_after: Option<Duration>,
) -> Option<Result<String, ToolError>> {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let out = runtime.block_on(async {
            let cx = ToolContext::for_test(tool.spec().name());
            let token = cx.cancellation().clone();
            match cancel_after {
                Some(after) => drop(tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    token.cancel();
                })),
                None => token.cancel(),
            }
            tool.call(input, &cx).await.map(|out| out.model.to_text())
        });
        drop(runtime);
        let _ = done.send(out);
    });
    result.recv_timeout(Duration::from_secs(10)).ok()
}

#[test]
fn a_call_cancelled_before_the_walk_does_not_walk() {
    let (_dir, ws) = tree();
    let results = [
        cancelled_call(grep(&ws), json!({"pattern": "needle"}), None),
        cancelled_call(glob(&ws), json!({"pattern": "**"}), None),
    ];
    for result in results {
        let err = result.expect("returned").unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            ("TOOL_CANCELLED", "Search cancelled")
        );
    }
}

#[tokio::test]
async fn a_worktrees_exclude_file_applies_while_it_is_inside_the_root() {
    let (dir, ws) = workspace(200_000);
    let root = ws.root().path().to_path_buf();
    put(dir.path(), "main/.git/info/exclude", b"*.secret\n");
    put(dir.path(), "main/.git/worktrees/wt/commondir", b"../..\n");
    put(dir.path(), "main/a.secret", b"x\n");
    put(dir.path(), "main/a.txt", b"x\n");
    // Git writes the worktree's git directory as an absolute path.
    let gitdir = format!("gitdir: {}/main/.git/worktrees/wt\n", root.display());
    put(dir.path(), "wt/.git", gitdir.as_bytes());
    put(dir.path(), "wt/b.secret", b"x\n");
    put(dir.path(), "wt/b.txt", b"x\n");
    let reference: String = reference_walk(&root, ".")
        .iter()
        .filter(|(_, is_file)| *is_file)
        .map(|(path, _)| format!("{path}:1:x\n"))
        .collect();
    assert_eq!(reference, "main/a.txt:1:x\nwt/b.txt:1:x\n");
    assert_eq!(
        call(&grep(&ws), json!({"pattern": "^x$"})).await.unwrap(),
        reference
    );
}
