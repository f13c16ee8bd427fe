//! The integration tests of `toolsmith-sandbox`, linked as one test binary: one module per attack
//! suite or subject (the filesystem and exec attacks, the read allowlist, control groups, the
//! degraded machine, the environment, spawn overhead), with the helpers they share in
//! [`common`]. `degraded` and `exec_env` run tests of this binary again in a child process (by
//! their module path). `scripts/attack-suite.sh` runs the attack modules again as an
//! unprivileged user, each selected by its module path (`exec_attacks::`…). The spare helper's
//! tests keep a binary of their own: `tests/spare_helper/` (see its `main.rs`).

mod common;

mod cgroup;
mod degraded;
mod exec_attacks;
mod exec_env;
mod exec_overhead;
mod fs_attacks;
mod loopback_attacks;
mod read_allowlist;
