//! The file tools under the loop and the store: `write` refuses to replace a file the run has
//! not read (the reported case, with a scripted model standing in for the local one), the
//! journal keeps what `write` and `edit` replaced, and `toolsmith threads revert` puts it back.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::{Value, json};
use toolsmith::agent::{CallOutcome, EFFECT_REVERTED};
use toolsmith::builtins::Workspace;
use toolsmith::durable::StoredRun;
use toolsmith::prelude::*;
use toolsmith::providers::{ScriptedCall, ScriptedModel, Turn};
use toolsmith::store::{EffectStatus, JournalEntry, SqliteStore, Store};
use toolsmith_sandbox::SandboxPolicy;

const INTRO: &str = "# Intro\n\nThis project does things.\n";

fn agent(root: &Path, turns: Vec<Turn>) -> Agent {
    let workspace = Workspace::new(SandboxPolicy::new(root)).unwrap();
    Agent::builder(ScriptedModel::new(turns))
        .tools(toolsmith::builtins::all(&workspace))
        .max_steps(10)
        .build()
}

#[tokio::test]
async fn print_the_text_of_intro_md_cannot_overwrite_it() {
    // What the local model did for "Print the text of intro.md": write, not read.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("intro.md"), INTRO).unwrap();
    let agent = agent(
        dir.path(),
        vec![
            Turn::call("write", json!({"path": "intro.md", "content": "text"})),
            Turn::text("Done."),
        ],
    );
    let out = agent.run("Print the text of intro.md").await.unwrap();
    let result = &out.steps[0].tool_results[0];
    let error = result.error().unwrap_or_else(|| panic!("{result:?}"));
    assert_eq!(
        (error.code(), error.message()),
        (
            "TOOL_FILE_NOT_READ",
            "Refusing to overwrite intro.md: read it first (it exists and this run has not read it)"
        )
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("intro.md")).unwrap(),
        INTRO
    );
}

/// A stored run on thread `thread` in the SQLite file `db`: read intro.md, write it, edit it,
/// create notes/new.md.
async fn stored_run(db: &Path, root: &Path, thread: &str) {
    let calls = |id: &str, name: &str, input: Value| {
        Turn::tool_calls([ScriptedCall::new(name, input).with_id(id)])
    };
    let agent = agent(
        root,
        vec![
            calls("call_1", "read", json!({"path": "intro.md"})),
            calls(
                "call_2",
                "write",
                json!({"path": "intro.md", "content": "text"}),
            ),
            calls(
                "call_3",
                "edit",
                json!({"path": "intro.md", "old_string": "text", "new_string": "more text"}),
            ),
            calls(
                "call_4",
                "write",
                json!({"path": "notes/new.md", "content": "new"}),
            ),
            Turn::text("Done."),
        ],
    );
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(db).await.unwrap());
    let (run, messages) = StoredRun::start(store, thread, vec![Message::user("Go")])
        .await
        .unwrap();
    let out = agent.run(run.input(messages)).await.unwrap();
    for step in &out.steps {
        for result in &step.tool_results {
            assert!(
                matches!(result.outcome, CallOutcome::Output(_)),
                "{result:?}"
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(root.join("intro.md")).unwrap(),
        "more text"
    );
}

fn workspace(dir: &Path) -> std::path::PathBuf {
    let root = dir.join("ws");
    std::fs::create_dir(&root).unwrap();
    let intro = root.join("intro.md");
    std::fs::write(&intro, INTRO).unwrap();
    std::fs::set_permissions(&intro, std::fs::Permissions::from_mode(0o640)).unwrap();
    root
}

/// `toolsmith threads revert <args> --db sqlite:<db>`.
fn revert(db: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_toolsmith"))
        .args(["threads", "revert"])
        .args(args)
        .args(["--db", &format!("sqlite:{}", db.display())])
        .env_remove("TOOLSMITH_DB")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the binary runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

async fn journal(db: &Path, thread: &str) -> Vec<JournalEntry> {
    SqliteStore::open(db)
        .await
        .unwrap()
        .journal(thread)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revert_puts_back_the_exact_bytes_and_removes_created_files() {
    let dir = tempfile::tempdir().unwrap();
    let (db, root) = (dir.path().join("runs.db"), workspace(dir.path()));
    stored_run(&db, &root, "t").await;

    // The journal keeps what each call replaced, out of the model's sight.
    let entries = journal(&db, "t").await;
    let write = entries.iter().find(|e| e.tool_call_id == "call_2").unwrap();
    let artifact = &write.output.as_ref().unwrap()["artifacts"][0];
    assert_eq!(artifact["type"], "file-change");
    assert_eq!(artifact["data"]["before"]["content"], INTRO);
    assert_eq!(artifact["data"]["before"]["mode"], 0o640);
    assert_eq!(write.output.as_ref().unwrap()["model"]["value"], "ok");

    let out = revert(&db, &["t"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: not reverting without confirmation: pass --yes (standard input is not a terminal)"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("intro.md")).unwrap(),
        "more text"
    );

    let out = revert(&db, &["t", "--yes"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        stdout(&out),
        "removed notes/new.md (#3 write, call call_4)\n\
         restored intro.md (#2 edit, call call_3)\n\
         restored intro.md (#1 write, call call_2)\n\
         reverted 3 of 3 file changes\n"
    );
    let intro = root.join("intro.md");
    assert_eq!(std::fs::read(&intro).unwrap(), INTRO.as_bytes());
    let mode = std::fs::metadata(&intro).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    assert!(!root.join("notes/new.md").exists());

    // Recorded: failed, EFFECT_REVERTED, the original output kept.
    for entry in journal(&db, "t").await {
        let output = entry.output.unwrap();
        if entry.tool_name == "read" {
            assert_eq!(entry.status, EffectStatus::Succeeded);
            continue;
        }
        assert_eq!(entry.status, EffectStatus::Failed, "{}", entry.tool_call_id);
        assert_eq!(output["code"], EFFECT_REVERTED);
        assert_eq!(output["output"]["model"]["value"], "ok");
    }
    let entries = journal(&db, "t").await;
    let write = entries.iter().find(|e| e.tool_call_id == "call_2").unwrap();
    assert_eq!(
        write.output.as_ref().unwrap()["message"],
        "This call's effect was reverted by the user (toolsmith threads revert): intro.md \
         restored."
    );

    let again = revert(&db, &["t", "--yes"]);
    assert!(again.status.success());
    assert_eq!(
        stdout(&again),
        "nothing to revert: no call of thread t changed a file\n"
    );
    let call = revert(&db, &["t", "--yes", "--call", "call_2"]);
    assert_eq!(call.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&call.stderr).trim(),
        "error: call call_2 of thread t was already reverted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_after_the_call_is_left_alone_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let (db, root) = (dir.path().join("runs.db"), workspace(dir.path()));
    stored_run(&db, &root, "t").await;
    let intro = root.join("intro.md");
    std::fs::write(&intro, "changed by the user").unwrap();

    let out = revert(&db, &["t", "--yes", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let canonical = root.canonicalize().unwrap();
    assert_eq!(
        report,
        json!({"thread": "t", "reverted": [
            {"seq": 3, "toolCallId": "call_4", "toolName": "write", "path": "notes/new.md",
             "root": canonical, "result": "removed"},
            {"seq": 2, "toolCallId": "call_3", "toolName": "edit", "path": "intro.md",
             "root": canonical, "result": "refused",
             "error": {"code": "REVERT_FILE_CHANGED",
                       "message": "intro.md changed after the call wrote it"}},
            {"seq": 1, "toolCallId": "call_2", "toolName": "write", "path": "intro.md",
             "root": canonical, "result": "refused",
             "error": {"code": "REVERT_FILE_CHANGED",
                       "message": "intro.md changed after the call wrote it"}},
        ]})
    );
    assert_eq!(
        std::fs::read_to_string(&intro).unwrap(),
        "changed by the user"
    );
    let statuses: Vec<_> = journal(&db, "t")
        .await
        .into_iter()
        .map(|e| (e.tool_call_id, e.status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("call_1".to_string(), EffectStatus::Succeeded),
            ("call_2".to_string(), EffectStatus::Succeeded),
            ("call_3".to_string(), EffectStatus::Succeeded),
            ("call_4".to_string(), EffectStatus::Failed),
        ]
    );

    let text = revert(&db, &["t", "--yes", "--call", "call_2"]);
    assert_eq!(text.status.code(), Some(1));
    assert_eq!(
        stdout(&text),
        "refused intro.md (#1 write, call call_2): intro.md changed after the call wrote it; \
         --force puts the previous version back anyway\n\
         reverted 0 of 1 file changes\n"
    );

    // Forced, the oldest call alone: the content before the run, whatever came after.
    let forced = revert(&db, &["t", "--yes", "--force", "--call", "call_2"]);
    assert!(forced.status.success(), "{forced:?}");
    assert_eq!(std::fs::read(&intro).unwrap(), INTRO.as_bytes());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_workspace_is_reverted_under_the_root_given() {
    let dir = tempfile::tempdir().unwrap();
    let (db, root) = (dir.path().join("runs.db"), workspace(dir.path()));
    stored_run(&db, &root, "t").await;
    let recorded = root.canonicalize().unwrap();
    let moved = dir.path().join("moved");
    std::fs::rename(&root, &moved).unwrap();

    let lost = revert(&db, &["t", "--yes", "--call", "call_4"]);
    assert_eq!(lost.status.code(), Some(1));
    let text = stdout(&lost);
    assert!(
        text.starts_with(&format!(
            "failed notes/new.md (#3 write, call call_4): cannot open the root {}",
            recorded.display()
        )),
        "{text}"
    );

    let moved_arg = moved.to_str().unwrap();
    let out = revert(&db, &["t", "--yes", "--root", moved_arg]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        std::fs::read(moved.join("intro.md")).unwrap(),
        INTRO.as_bytes()
    );
    assert!(!moved.join("notes/new.md").exists());

    let missing = revert(&db, &["nope", "--yes"]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr).trim(),
        "error: thread nope does not exist"
    );
}
