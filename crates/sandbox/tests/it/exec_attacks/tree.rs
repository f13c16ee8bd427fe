//! The whole tree's processes and memory are bounded by its control group, as root too (where
//! `RLIMIT_NPROC` is ignored): a fork bomb stops at the tree's process cap, a memory hog spread
//! over many processes is killed at the tree's memory cap, and nothing of either outlives the
//! command.

use toolsmith_sandbox::SandboxPolicy;
use toolsmith_sandbox::exec::{CgroupSupport, Launcher};

use crate::common::{PYTHON, helper, python, require, run, survivors};

/// Whether this process can give commands a control group with both controllers.
fn groups() -> bool {
    let support = CgroupSupport::detect();
    require(
        &format!("tree limits (cgroup): {}", support.describe()),
        support.memory() && support.pids(),
    )
}

fn launcher(root: &std::path::Path, processes: u32, memory: u64) -> Launcher {
    let mut policy = SandboxPolicy::new(root);
    policy.limits.tree_processes = Some(processes);
    policy.limits.tree_memory_bytes = Some(memory);
    // The per-process cap would stop the hog first: take it out of the way.
    policy.limits.data_bytes = None;
    Launcher::new(helper(), policy)
}

/// A Python program that forks up to `n` sleepers (marked with `tag` in their command line),
/// stops at the first refused fork and prints how many it started.
fn forker(n: u32, tag: &str) -> String {
    format!(
        "import os, time, sys  # {tag}\n\
         n = 0\n\
         for _ in range({n}):\n    \
         try:\n        pid = os.fork()\n    \
         except OSError:\n        break\n    \
         if pid == 0:\n        time.sleep(30)\n        os._exit(0)\n    \
         n += 1\n\
         print('started', n)\n"
    )
}

fn launcher_without_tree_memory(root: &std::path::Path) -> Launcher {
    let mut policy = SandboxPolicy::new(root);
    policy.limits.tree_memory_bytes = None;
    policy.limits.data_bytes = None;
    Launcher::new(helper(), policy)
}

#[tokio::test]
async fn a_fork_bomb_stops_at_the_trees_process_cap() {
    if !groups() || !require("python3", python()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let launcher = launcher(dir.path(), 32, 512 << 20);
    // At most 200 sleepers however the cap fails: the test stays small on any machine.
    let out = run(
        &launcher,
        PYTHON,
        &["-c", &forker(200, "toolsmith-tree-bomb")],
    )
    .await;
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let started: usize = out
        .stdout
        .trim()
        .strip_prefix("started ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out:?}"));
    // The helper, python and its sleepers share 32 tasks: far fewer than 200 started.
    assert!((16..32).contains(&started), "{started}: {out:?}");
    // And none outlives the command.
    assert_eq!(survivors("toolsmith-tree-bomb"), 0);
}

#[tokio::test]
async fn memory_spread_over_processes_is_capped_for_the_whole_tree() {
    if !groups() || !require("python3", python()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let launcher = launcher(dir.path(), 64, 96 << 20);
    // Four processes of 40 MiB each: every one is within any per-process cap, the tree is not.
    // The parent waits for its children: they must not die with it (PID 1 of the namespace)
    // before they print, on a loaded machine.
    let script = "import os, time\n\
                  kids = 0\n\
                  for _ in range(3):\n    if os.fork() == 0:\n        kids = -1\n        break\n    kids += 1\n\
                  b = bytearray(40 << 20)\n\
                  for i in range(0, len(b), 4096): b[i] = 1\n\
                  time.sleep(1)\nprint('survived', flush=True)\n\
                  for _ in range(max(kids, 0)):\n    os.wait()\n";
    let out = run(&launcher, PYTHON, &["-c", script]).await;
    let survived = out.stdout.matches("survived").count();
    assert!(survived < 4, "every process kept its memory: {out:?}");
    // The same tree without the tree's cap keeps its 160 MiB.
    let launcher = launcher_without_tree_memory(dir.path());
    let out = run(&launcher, PYTHON, &["-c", script]).await;
    assert_eq!(out.stdout.matches("survived").count(), 4, "{out:?}");
}

#[tokio::test]
async fn without_tree_limits_the_same_tree_runs_whole() {
    if !groups() || !require("python3", python()) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut policy = SandboxPolicy::new(dir.path());
    policy.limits.tree_processes = None;
    policy.limits.tree_memory_bytes = None;
    let launcher = Launcher::new(helper(), policy);
    let out = run(
        &launcher,
        PYTHON,
        &["-c", &forker(40, "toolsmith-tree-free")],
    )
    .await;
    assert_eq!(out.stdout.trim(), "started 40", "{out:?}");
    assert_eq!(survivors("toolsmith-tree-free"), 0);
}
