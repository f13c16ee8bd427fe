//! The integration tests of `toolsmith-builtins`, linked as one test binary: one module per tool
//! or hardening (the file tools and their guards, grep and glob, cancelling a search, the
//! calculator, `run_code` and its worker processes), with the helpers they share in [`common`].
//! `scripts/attack-suite.sh` runs the hardening modules again as an unprivileged user, each
//! selected by its module path (`run_code::`, `grep_cancel::`…).

mod common;

mod calculator;
mod file_guards;
mod files;
mod grep_cancel;
mod grep_glob;
mod run_code;
mod run_code_worker;
