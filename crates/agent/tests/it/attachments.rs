//! Handing attachments from one thread's folder to another's: names kept when they can be,
//! made unique when the target already has a different file of that name, bad paths refused.

use toolsmith_agent::Attachments;

fn store_with(dir: &std::path::Path, thread: &str, files: &[(&str, &str)]) -> Attachments {
    let store = Attachments::new(dir);
    std::fs::create_dir_all(store.folder(thread)).unwrap();
    for (name, text) in files {
        std::fs::write(store.folder(thread).join(name), text).unwrap();
    }
    store
}

#[test]
fn a_name_taken_by_another_file_is_made_unique_and_the_path_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with(
        dir.path(),
        "parent",
        &[("plan.txt", "new plan"), ("notes", "n")],
    );
    let child = store.folder("child");
    std::fs::create_dir_all(&child).unwrap();
    std::fs::write(child.join("plan.txt"), "the child's own plan").unwrap();
    std::fs::write(child.join("plan-1.txt"), "another").unwrap();
    std::fs::write(child.join("notes"), "other notes").unwrap();

    let copied = store
        .copy("parent", "/attachments/plan.txt", "child")
        .unwrap();
    assert_eq!(copied, "/attachments/plan-2.txt");
    assert_eq!(
        std::fs::read_to_string(child.join("plan-2.txt")).unwrap(),
        "new plan"
    );
    assert_eq!(
        std::fs::read_to_string(child.join("plan.txt")).unwrap(),
        "the child's own plan",
        "the child's file is left alone"
    );
    // Without an extension, the number goes at the end.
    assert_eq!(
        store.copy("parent", "/attachments/notes", "child").unwrap(),
        "/attachments/notes-1"
    );
    // The same file again is not copied twice: the path it already has is reused.
    assert_eq!(
        store
            .copy("parent", "/attachments/plan.txt", "child")
            .unwrap(),
        "/attachments/plan-2.txt"
    );
}

#[test]
fn bad_and_missing_paths_are_refused_before_anything_is_copied() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with(dir.path(), "parent", &[("plan.txt", "p")]);
    for path in [
        "/attachments/../parent/plan.txt",
        "/attachments/",
        "/attachments/a/b",
        "plan.txt",
        "/attachments/..",
    ] {
        let error = store.copy("parent", path, "child").unwrap_err();
        assert_eq!(error.code(), "INVALID_INPUT", "{path}");
    }
    let error = store
        .copy("parent", "/attachments/missing.txt", "child")
        .unwrap_err();
    assert_eq!(error.code(), "INVALID_INPUT");
    assert_eq!(
        error.message(),
        "The attachment /attachments/missing.txt does not exist in this thread."
    );
    assert!(!store.folder("child").exists(), "nothing was created");
}
