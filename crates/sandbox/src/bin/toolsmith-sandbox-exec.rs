//! The sandbox helper: applies a plan read from stdin to itself, then execs the target.
//! See `toolsmith_sandbox::exec`.

fn main() {
    toolsmith_sandbox::exec::helper_main()
}
