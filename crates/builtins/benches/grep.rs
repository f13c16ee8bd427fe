//! The `grep` tool against the `rg` binary over a generated 200 MB tree.
//!
//! The tree (2 000 files of 100 KB of pseudo-random words in 40 directories, with a rare marker
//! word planted 200 times) is generated once under `$TOOLSMITH_BENCH_TREE` (default
//! `/tmp/toolsmith-grep-bench`) and reused. Both searches look for the marker, so both read the
//! whole tree: `grep` in-process (no process spawn), `rg -n` as a child process, as Smithers runs
//! it. Skipped, with a message, when `rg` is not installed (`apt-get install ripgrep`).
//!
//! Run: `cargo bench -p toolsmith-builtins --bench grep`.

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolsmith_builtins::{Workspace, grep};
use toolsmith_core::{Tool, ToolContext};
use toolsmith_sandbox::SandboxPolicy;

const FILES: usize = 2_000;
const FILE_BYTES: usize = 100 * 1024;
const MARKER: &str = "zebracorn";

fn tree() -> PathBuf {
    let root = std::env::var_os("TOOLSMITH_BENCH_TREE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/toolsmith-grep-bench"));
    let done = root.join(".complete");
    if done.exists() {
        return root;
    }
    let words = [
        "alpha", "beta", "gamma", "delta", "epsilon", "kernel", "socket", "buffer", "thread",
        "vector", "string", "parser", "tokio", "future", "stream", "schema", "layer", "agent",
    ];
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..FILES {
        let dir = root.join(format!("dir{:02}", i % 40));
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::with_capacity(FILE_BYTES + 100);
        let mut line = 0;
        while text.len() < FILE_BYTES {
            for _ in 0..10 {
                text.push_str(words[(next() % words.len() as u64) as usize]);
                text.push(' ');
            }
            if i % 10 == 0 && line == 500 {
                text.push_str(MARKER);
            }
            text.push('\n');
            line += 1;
        }
        let mut file = std::fs::File::create(dir.join(format!("file{i:04}.txt"))).unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }
    std::fs::write(&done, b"").unwrap();
    root
}

fn rg_available() -> bool {
    Command::new("rg")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn count_lines(text: &str) -> usize {
    text.lines().filter(|l| !l.is_empty()).count()
}

fn bench(c: &mut Criterion) {
    let root = tree();
    let mut policy = SandboxPolicy::new(&root);
    policy.limits.output_bytes = 10 * 1024 * 1024;
    let workspace = Workspace::new(policy).unwrap();
    let tool = grep(&workspace);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let cx = ToolContext::for_test("grep");
    let search = || {
        runtime
            .block_on(tool.call(json!({"pattern": MARKER}), &cx))
            .unwrap()
    };
    let matches = count_lines(search().value.as_str().unwrap());
    assert_eq!(matches, FILES / 10, "the tool finds every planted marker");

    let mut group = c.benchmark_group("grep_200mb");
    group.sample_size(20);
    group.bench_function("toolsmith_grep", |b| b.iter(|| black_box(search())));
    if rg_available() {
        let rg = || {
            let out = Command::new("rg")
                .args(["-n", "--", MARKER])
                .arg(&root)
                .output()
                .unwrap();
            assert!(out.status.success());
            out.stdout
        };
        assert_eq!(count_lines(&String::from_utf8(rg()).unwrap()), FILES / 10);
        group.bench_function("rg_process", |b| b.iter(|| black_box(rg())));
    } else {
        eprintln!("rg is not installed: skipping the comparison (apt-get install ripgrep)");
    }
    group.finish();
    let _ = Arc::clone(&workspace);
    let _: &Path = &root;
}

criterion_group!(benches, bench);
criterion_main!(benches);
