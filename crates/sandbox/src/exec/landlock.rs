//! Landlock, applied by the helper to itself: filesystem read/write rules, TCP deny, scopes.

use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::plan::LandlockPlan;

/// Restricts the calling process (and everything it execs) as `plan` says.
///
/// Paths that do not exist are skipped (they grant nothing). Returns an error when the kernel
/// did not enforce the ruleset at all.
pub(crate) fn apply(plan: &LandlockPlan) -> Result<(), String> {
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
    for path in &plan.read {
        if let Some(rule) = rule(path, read, abi) {
            created = created.add_rule(rule).map_err(err)?;
        }
    }
    for path in &plan.write {
        if let Some(rule) = rule(path, all, abi) {
            created = created.add_rule(rule).map_err(err)?;
        }
    }
    let status = created.restrict_self().map_err(err)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("landlock: the ruleset was not enforced".into());
    }
    Ok(())
}

/// A rule granting `access` beneath `path` (only the file rights when it is not a directory).
///
/// The type comes from `fstat` on the `O_PATH` descriptor rather than a `stat` of the path: one
/// path walk per rule instead of two (the default allowlist has ~70 rules; this saved ~100 µs
/// of ~390 µs per launch, measured building the ruleset 500 times).
fn rule(path: &Path, access: BitFlags<AccessFs>, abi: ABI) -> Option<PathBeneath<PathFd>> {
    let fd = PathFd::new(path).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    let is_dir =
        rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Directory;
    let access = if is_dir {
        access
    } else {
        access & AccessFs::from_file(abi)
    };
    Some(PathBeneath::new(fd, access))
}
