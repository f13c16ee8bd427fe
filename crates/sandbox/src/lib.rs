//! Kernel-enforced confinement for toolsmith's built-in tools.
//!
//! - [`SandboxPolicy`]: what the user allows (data only; the model can never change it).
//! - [`RootDir`]: the confined filesystem the in-process file tools use. Every path is opened
//!   beneath the root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (through cap-std,
//!   which falls back to a race-safe component walk where openat2 is missing), so no `..`,
//!   absolute path or symlink, not even one swapped in mid-call, reaches outside.
//!
//! # Testing the fallbacks
//!
//! The helper's [`degrade`](exec::degrade) mode (`toolsmith-sandbox-exec degrade -- CMD…`, or
//! `toolsmith __sandbox-exec degrade -- …`) runs `CMD` under a seccomp filter that makes Landlock
//! and openat2 unavailable (`ENOSYS`) and namespaces forbidden (`EPERM`), inherited by everything
//! it starts, so a machine with every feature exercises the paths of one without them.
//! `tests/it/degraded.rs` uses it: the probe sees nothing, every `fs_attacks` test passes
//! on cap-std's walk, fail-closed launches (and `bash`) refuse with `SANDBOX_UNAVAILABLE`, and
//! best-effort runs warn while seccomp still keeps the network off.
//!
//! `scripts/attack-suite.sh` (the last step of `scripts/test.sh`) runs the `fs_attacks`,
//! `exec_attacks`, `degraded` (and other) test suites again as uid 65534 when it runs as root,
//! from a copy of the test binary with `TOOLSMITH_SANDBOX_HELPER` pointing at a copied helper.
//!
//! The errors keep Smithers' codes and messages: `TOOL_PATH_INVALID` (`Path must be a
//! string`) and `TOOL_PATH_ESCAPE` (`Path escapes sandbox root`, or `Path escapes sandbox root
//! (via symlink)`).

pub mod exec;
pub mod git;
mod policy;
mod probe;
mod root_dir;

pub use policy::{
    EnvPolicy, Limits, MAX_OUTPUT_BYTES, MAX_TIMEOUT, NetworkPolicy, PolicyError, ReadPolicy,
    SandboxPolicy, Strictness, UnixSockets,
};
pub use probe::{Capabilities, Layer};
pub use root_dir::{RootDir, path_escape, path_escape_via_symlink, path_invalid};
