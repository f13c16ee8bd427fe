//! Peak memory of `grep` and a windowed `read` over a file of one giant line (the hardening's
//! line caps): run it under `/usr/bin/time -v` and read "Maximum resident set size".
//!
//! ```text
//! cargo run --release -p toolsmith-builtins --example long_line_rss -- grep [MiB]
//! cargo run --release -p toolsmith-builtins --example long_line_rss -- read [MiB]
//! ```
//!
//! It writes `MiB` (default 1024) of `a` without a newline to a temporary directory, then
//! runs the tool once: `grep` for `a` over the directory, or `read` with `{"offset": 1,
//! "limit": 1}`, and prints the output's size.

use serde_json::json;
use toolsmith_builtins::{Workspace, grep, read};
use toolsmith_core::{Tool, ToolContext};
use toolsmith_sandbox::SandboxPolicy;

fn main() {
    let mut args = std::env::args().skip(1);
    let tool = args.next().unwrap_or_else(|| "grep".to_string());
    let mib: usize = args.next().map_or(1024, |n| n.parse().expect("MiB"));
    let dir = tempfile::tempdir().expect("temporary directory");
    let chunk = vec![b'a'; 1 << 20];
    let mut file = std::fs::File::create(dir.path().join("giant.txt")).expect("create");
    for _ in 0..mib {
        std::io::Write::write_all(&mut file, &chunk).expect("write");
    }
    drop(file);
    let workspace = Workspace::new(SandboxPolicy::new(dir.path())).expect("workspace");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let out = runtime.block_on(async {
        match tool.as_str() {
            "read" => {
                let input = json!({"path": "giant.txt", "offset": 1, "limit": 1});
                read(&workspace)
                    .call(input, &ToolContext::for_test("read"))
                    .await
            }
            _ => {
                let input = json!({"pattern": "a"});
                grep(&workspace)
                    .call(input, &ToolContext::for_test("grep"))
                    .await
            }
        }
    });
    match out {
        Ok(out) => println!("{tool}: {} bytes of output", out.model.to_text().len()),
        Err(err) => println!("{tool}: {} {}", err.code(), err.message()),
    }
}
