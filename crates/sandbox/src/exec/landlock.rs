//! Landlock, applied by the helper to itself: filesystem read/write rules, TCP deny, scopes.
//!
//! Rules are created here, after the helper's mounts, so `/proc` names the new procfs (a spare
//! helper applies them before its plan comes, see [`Ahead`](super::Ahead)).

use std::collections::HashSet;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::plan::LandlockPlan;

/// Restricts the calling process (and everything it execs) as `plan` says: [`build`], then
/// [`restrict`].
pub(crate) fn apply(plan: &LandlockPlan, fds: &[OwnedFd]) -> Result<(), String> {
    restrict(build(plan, fds)?)
}

/// Restricts the calling process (and everything it execs) with a ruleset [`build`] made.
/// Returns an error when the kernel did not enforce the ruleset at all.
fn restrict(ruleset: RulesetCreated) -> Result<(), String> {
    let status = ruleset
        .restrict_self()
        .map_err(|e| format!("landlock: {e}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("landlock: the ruleset was not enforced".into());
    }
    Ok(())
}

/// The ruleset `plan` says, not yet enforced.
///
/// Paths that do not exist are skipped (they grant nothing). The rules in
/// [`LandlockPlan::inherited`] use the descriptors the launcher sent (`fds`, in order); their
/// paths are not opened again. The descriptors are not needed once this returns.
fn build(plan: &LandlockPlan, fds: &[OwnedFd]) -> Result<RulesetCreated, String> {
    let abi = ABI::from(i32::from(plan.abi));
    let err = |e: landlock::RulesetError| format!("landlock: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?;
    if plan.deny_tcp {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .map_err(err)?;
    }
    if plan.scope {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(err)?;
    }
    let mut created = ruleset.create().map_err(err)?;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    // Rules whose descriptor arrived, each only if the plan itself grants its path that access
    // (the plan is the authority; a descriptor cannot widen it). A missing one (fewer
    // descriptors than rules) is opened by path below like any other.
    let granted: HashSet<(&Path, bool)> = plan
        .read
        .iter()
        .map(|p| (p.as_path(), false))
        .chain(plan.write.iter().map(|p| (p.as_path(), true)))
        .collect();
    let mut sent: HashSet<(&Path, bool)> = HashSet::new();
    for (rule, fd) in plan.inherited.iter().zip(fds) {
        let key = (rule.path.as_path(), rule.write);
        if !granted.contains(&key) {
            continue;
        }
        let wanted = if rule.write { all } else { read };
        let access = if rule.dir {
            wanted
        } else {
            wanted & AccessFs::from_file(abi)
        };
        created = created
            .add_rule(PathBeneath::new(fd.as_fd(), access))
            .map_err(err)?;
        sent.insert(key);
    }
    let sent = |path: &Path, write: bool| sent.contains(&(path, write));
    for path in &plan.read {
        if sent(path, false) {
            continue;
        }
        let paths = if plan.proc_self_only && path == Path::new("/proc") {
            proc_self_paths()
        } else {
            vec![path.clone()]
        };
        for path in &paths {
            if let Some(rule) = rule(path, read, abi) {
                created = created.add_rule(rule).map_err(err)?;
            }
        }
    }
    for path in &plan.write {
        if sent(path, true) {
            continue;
        }
        if let Some(rule) = rule(path, all, abi) {
            created = created.add_rule(rule).map_err(err)?;
        }
    }
    Ok(created)
}

/// Files of `/proc` about the whole system that programs read (CPU count, memory, load,
/// filesystems, sysctls); none says anything about another process.
const PROC_SYSTEM: [&str; 8] = [
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/filesystems",
    "/proc/sys",
];

/// What replaces the `/proc` read rule without a private `/proc`: the command's own
/// `/proc/<pid>` (the target keeps this process' pid across `execve`; `/proc/self` and
/// `/proc/thread-self` resolve into it) and [`PROC_SYSTEM`]. The pid is the one `/proc` shows
/// (`/proc/self`), which in a pid namespace without its own procfs is not `getpid()`.
fn proc_self_paths() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = PROC_SYSTEM.iter().map(PathBuf::from).collect();
    if let Ok(own) = std::fs::read_link("/proc/self") {
        paths.push(Path::new("/proc").join(own));
    }
    paths
}

/// A rule granting `access` beneath `path` (only the file rights when it is not a directory).
///
/// One `open(O_PATH)` and one `fstat` on the descriptor, not a second path walk (the default
/// allowlist has ~70 rules; this saved ~100 µs of ~390 µs per launch, measured building the
/// ruleset 500 times).
fn rule(path: &Path, access: BitFlags<AccessFs>, abi: ABI) -> Option<PathBeneath<PathFd>> {
    let fd = PathFd::new(path).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    let access = if rustix::fs::FileType::from_raw_mode(stat.st_mode).is_dir() {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    Some(PathBeneath::new(fd, access))
}
