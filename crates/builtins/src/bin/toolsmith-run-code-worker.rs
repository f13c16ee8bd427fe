//! The `run_code` worker: evaluates JavaScript for the `run_code` tool in a sandboxed process
//! (and, as `toolsmith-run-code-worker __sandbox-exec …`, serves as the sandbox helper that
//! confines it). See `toolsmith_builtins::run_code_worker_main`.

fn main() {
    toolsmith_builtins::run_code_worker_main()
}
