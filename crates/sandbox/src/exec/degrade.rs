//! The helper's `degrade` mode: emulate a machine without Landlock, openat2 or namespaces.
//!
//! `toolsmith-sandbox-exec degrade -- CMD ARGS…` (or `toolsmith __sandbox-exec degrade -- …`)
//! installs two seccomp filters on itself, both default-allow, then `execve`s `CMD` with the
//! current environment:
//!
//! - `ENOSYS` for `landlock_create_ruleset`, `landlock_add_rule`, `landlock_restrict_self` and
//!   `openat2` (what an old kernel, or a container profile that does not know them, answers),
//!   and for `clone3` (its flags sit behind a pointer seccomp cannot read; glibc falls back to
//!   `clone` on `ENOSYS`, as under Docker's default profile);
//! - `EPERM` for `unshare` and `setns` (any flags), and for `clone` with any `CLONE_NEW*` flag
//!   (what a host that forbids namespaces answers).
//!
//! `no_new_privs` is set first (seccomp needs it unprivileged). Filters survive `execve` and
//! are inherited by every child, so `CMD` and everything it starts (a test binary, the helper it
//! spawns, the sandboxed command) sees a kernel without those features, while seccomp itself
//! still works: the fallback paths run for real on a machine that has every feature. This is a
//! testing aid; it only ever removes abilities.
//!
//! The x32 syscall numbers (bit 30 on x86_64) are denied outright with `EPERM`, so the ENOSYS
//! and EPERM answers cannot be sidestepped through them.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The `clone` flags that create namespaces (`CLONE_NEWTIME` is `CSIGNAL` territory for `clone`
/// and only valid for `clone3`/`unshare`, which are denied whole).
const NAMESPACE_FLAGS: [libc::c_int; 7] = [
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// Runs the `degrade` mode with `args` (what follows `degrade` on the command line): installs
/// the filters and execs the command. Never returns; on failure it writes the helper's error
/// line and exits 125 (filters) or 127 (exec).
pub(crate) fn main(args: &[OsString]) -> ! {
    let argv = match args.first() {
        Some(first) if first == "--" => &args[1..],
        _ => args,
    };
    let Some(program) = argv.first() else {
        super::helper::fail("usage", "degrade needs a command: degrade -- CMD [ARGS…]");
    };
    for filter in filters().unwrap_or_else(|e| super::helper::fail("seccomp", &e)) {
        super::seccomp::install(&filter).unwrap_or_else(|e| super::helper::fail("seccomp", &e));
    }
    let error = std::process::Command::new(program).args(&argv[1..]).exec();
    super::helper::fail("exec", &format!("{}: {error}", program.to_string_lossy()))
}

/// The two filters: `ENOSYS` for Landlock, openat2 and clone3; `EPERM` for namespaces.
fn filters() -> Result<[BpfProgram; 2], String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(err)?;
    let build = |rules: BTreeMap<i64, Vec<SeccompRule>>, errno: i32| {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(err)?;
        let mut program: BpfProgram = filter.try_into().map_err(err)?;
        if cfg!(target_arch = "x86_64") {
            program.splice(0..0, super::seccomp::x32_guard());
        }
        Ok::<_, String>(program)
    };

    let missing: BTreeMap<i64, Vec<SeccompRule>> = [
        libc::SYS_landlock_create_ruleset,
        libc::SYS_landlock_add_rule,
        libc::SYS_landlock_restrict_self,
        libc::SYS_openat2,
        libc::SYS_clone3,
    ]
    .into_iter()
    .map(|nr| (nr, Vec::new()))
    .collect();

    let mut clone_rules = Vec::new();
    for flag in NAMESPACE_FLAGS {
        let flag = flag as u64;
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .map_err(err)?;
        clone_rules.push(SeccompRule::new(vec![condition]).map_err(err)?);
    }
    let mut forbidden: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    forbidden.insert(libc::SYS_unshare, Vec::new());
    forbidden.insert(libc::SYS_setns, Vec::new());
    forbidden.insert(libc::SYS_clone, clone_rules);

    Ok([
        build(missing, libc::ENOSYS)?,
        build(forbidden, libc::EPERM)?,
    ])
}

fn err(e: impl std::fmt::Display) -> String {
    format!("degrade filter: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_compile() {
        let [missing, forbidden] = filters().unwrap();
        assert!(missing.len() > 5 && forbidden.len() > 5);
    }
}
