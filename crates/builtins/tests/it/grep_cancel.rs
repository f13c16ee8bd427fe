//! Cancelling a `grep` that is busy reading a huge file stops the search itself, not only the
//! call. The test watches the read counters of the search's threads to cancel only once the
//! search is reading.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolsmith_builtins::{Workspace, grep};
use toolsmith_core::{Tool, ToolContext};
use toolsmith_sandbox::SandboxPolicy;

/// The name of the test's runtime threads, the blocking-pool ones the search reads on included.
const THREADS: &str = "grep-cancel";

/// Bytes the search has read so far: `rchar` in `/proc/self/task/<tid>/io` summed over the
/// threads named [`THREADS`] but the calling one (the watcher, whose reads of `/proc` count
/// too). The process' own counter would count what other tests of this binary read.
fn bytes_read() -> u64 {
    // "<pid>/task/<tid>"
    let me = std::fs::read_link("/proc/thread-self").unwrap();
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|task| Some(task.file_name().as_os_str()) != me.file_name())
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm"))
                .is_ok_and(|comm| comm.trim_end() == THREADS)
        })
        .filter_map(|task| std::fs::read_to_string(task.path().join("io")).ok())
        .filter_map(|io| {
            io.lines()
                .find_map(|l| l.strip_prefix("rchar: "))?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

#[test]
fn cancelling_a_search_while_it_reads_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    // 32 MiB of words, and a pattern with no literal to skip ahead with, which runs the regex
    // crate's slowest engine (Unicode word boundaries over non-ASCII text): ~10 MB/s optimized,
    // ~0.2 MB/s in a debug build, so the whole search takes seconds to minutes.
    let line = "héllo wörld ünïcode façade naïve 12345 abcdef\n";
    std::fs::write(
        dir.path().join("words.txt"),
        line.repeat((32 << 20) / line.len()),
    )
    .unwrap();
    let workspace = Workspace::new(SandboxPolicy::new(dir.path())).unwrap();

    let (done, result) = mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(THREADS)
            .enable_all()
            .build()
            .unwrap();
        let out = runtime.block_on(async {
            let cx = ToolContext::for_test("grep");
            let token = cx.cancellation().clone();
            // Cancel once the search has read its first MiB: it is then inside the file.
            tokio::spawn(async move {
                let deadline = Instant::now() + Duration::from_secs(120);
                while bytes_read() < 1 << 20 && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                token.cancel();
            });
            let input = json!({"pattern": r"\b\w{30}\b"});
            grep(&workspace).call(input, &cx).await
        });
        let cancelled_at = Instant::now();
        // Dropping the runtime waits for its blocking threads: this returns only once the
        // search itself has stopped.
        drop(runtime);
        let _ = done.send((out.map(|_| ()), cancelled_at.elapsed()));
    });
    let (out, stopping) = result
        .recv_timeout(Duration::from_secs(150))
        .expect("the search neither finished nor stopped");
    let err = out.unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        ("TOOL_CANCELLED", "Search cancelled")
    );
    // One read of 64 KiB at most is searched after the token fires: well under a second even
    // in a debug build; the whole file would take minutes there.
    assert!(
        stopping < Duration::from_secs(10),
        "the search went on for {stopping:?} after the call was cancelled"
    );
}
