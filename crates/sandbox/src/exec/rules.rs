//! [`RuleFds`]: the Landlock rules' paths, opened once by the launcher and sent to every helper
//! with its plan.
//!
//! The default read allowlist names ~70 paths (a strict `/etc` subset, single devices, the
//! toolchains); opening each in the helper — a path walk, then `fstat` — cost more than the
//! whole ruleset did with the old, wider list, and made the sandboxed spawn slower. The
//! launcher opens them (`O_PATH`) once, keeps them for [`MAX_AGE`], and sends the descriptors
//! over the helper's channel (`SCM_RIGHTS`, received close-on-exec), so the helper only adds
//! the rules. `/proc` is never among them: the helper opens it after mounting its own procfs.
//!
//! A rule attaches to the inode the descriptor names. A directory replaced on the host (a
//! package upgrade renaming a new `/etc/ssl/certs` into place) is seen within [`MAX_AGE`];
//! until then the old inode's rule applies, which can only deny, never widen.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::plan::{InheritedRule, LandlockPlan, Plan};

/// How long opened paths are reused before they are opened again.
pub(crate) const MAX_AGE: Duration = Duration::from_secs(10);

/// The most descriptors one `SCM_RIGHTS` message carries (the kernel's `SCM_MAX_FD`).
const MAX_FDS: usize = 253;

/// Opened rule paths, shared by a launcher's clones.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleFds {
    cache: Arc<Mutex<Option<Arc<Opened>>>>,
}

/// One opening of a plan's paths.
#[derive(Debug)]
pub(crate) struct Opened {
    /// The plan's read and write lists they were opened for.
    key: (Vec<PathBuf>, Vec<PathBuf>),
    at: Instant,
    rules: Vec<InheritedRule>,
    fds: Vec<OwnedFd>,
    /// What each descriptor names (device, inode): a Landlock rule attaches to the inode.
    inodes: Vec<(u64, u64)>,
}

impl Opened {
    /// The descriptors, in the order of [`LandlockPlan::inherited`].
    pub(crate) fn fds(&self) -> Vec<BorrowedFd<'_>> {
        self.fds.iter().map(AsFd::as_fd).collect()
    }
}

/// The Landlock rules a spare helper builds ahead of its plan (see [`Ahead`](super::Ahead)): a
/// plan's Landlock part, with its inherited rules, and the opening their descriptors come from.
#[derive(Debug, Clone)]
pub(crate) struct AheadRules {
    pub(crate) landlock: LandlockPlan,
    pub(crate) opened: Arc<Opened>,
}

impl AheadRules {
    /// The rules of `plan`, whose descriptors are `opened` ([`RuleFds::attach`]'s).
    pub(crate) fn of(plan: &Plan, opened: Option<&Arc<Opened>>) -> Option<AheadRules> {
        Some(AheadRules {
            landlock: plan.landlock.clone()?,
            opened: Arc::clone(opened?),
        })
    }

    /// Whether a ruleset built from `self` is the one `other` would build: the same rules, on
    /// the same inodes (a path opened again after [`MAX_AGE`] may name another inode; when
    /// none does, a spare restricted with the older opening is as good as a fresh helper, and
    /// stays usable however long it waited).
    pub(crate) fn same(&self, other: &AheadRules) -> bool {
        self.opened.inodes == other.opened.inodes && self.landlock == other.landlock
    }
}

impl RuleFds {
    /// Fills `plan.inherited` and returns the descriptors to send with it: reused when the same
    /// paths were opened less than [`MAX_AGE`] ago, opened now otherwise. Paths that cannot be
    /// opened (missing ones grant nothing) are left out.
    pub(crate) fn attach(&self, plan: &mut LandlockPlan) -> Arc<Opened> {
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let opened = match cache.as_ref() {
            Some(o)
                if o.key.0 == plan.read && o.key.1 == plan.write && o.at.elapsed() < MAX_AGE =>
            {
                Arc::clone(o)
            }
            _ => {
                let o = Arc::new(open((plan.read.clone(), plan.write.clone())));
                *cache = Some(Arc::clone(&o));
                o
            }
        };
        drop(cache);
        // A launch keeps its opening alive (its `Arc`) while a later one refreshes the cache.
        plan.inherited = opened.rules.clone();
        opened
    }
}

/// Opens the read paths (but `/proc`) and the write paths, `O_PATH`, noting which are
/// directories.
fn open(key: (Vec<PathBuf>, Vec<PathBuf>)) -> Opened {
    let mut rules = Vec::new();
    let mut fds = Vec::new();
    let mut inodes = Vec::new();
    let paths = key
        .0
        .iter()
        .filter(|p| *p != Path::new("/proc"))
        .map(|p| (p, false))
        .chain(key.1.iter().map(|p| (p, true)));
    for (path, write) in paths {
        if fds.len() == MAX_FDS {
            break;
        }
        let Ok(fd) = rustix::fs::open(
            path,
            rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ) else {
            continue;
        };
        let Ok(stat) = rustix::fs::fstat(&fd) else {
            continue;
        };
        rules.push(InheritedRule {
            path: path.clone(),
            write,
            dir: rustix::fs::FileType::from_raw_mode(stat.st_mode).is_dir(),
        });
        fds.push(fd);
        inodes.push((stat.st_dev, stat.st_ino));
    }
    Opened {
        key,
        at: Instant::now(),
        rules,
        fds,
        inodes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn landlock(write: &str) -> LandlockPlan {
        LandlockPlan {
            abi: 6,
            read: vec![PathBuf::from("/usr")],
            write: vec![PathBuf::from(write)],
            deny_tcp: true,
            scope: true,
            proc_self_only: false,
            inherited: Vec::new(),
        }
    }

    #[test]
    fn a_ruleset_built_ahead_is_the_plans_only_with_its_rules_on_the_same_inodes() {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("w");
        std::fs::create_dir(&w).unwrap();
        let fds = RuleFds::default();
        let mut first = landlock(w.to_str().unwrap());
        let opened = fds.attach(&mut first);
        let built = AheadRules {
            landlock: first.clone(),
            opened: Arc::clone(&opened),
        };
        assert!(built.same(&built.clone()));
        let reopen = || AheadRules {
            landlock: first.clone(),
            opened: Arc::new(open((first.read.clone(), first.write.clone()))),
        };
        // The same rules, their paths opened again (after `MAX_AGE`), naming the same inodes.
        let again = reopen();
        assert!(!Arc::ptr_eq(&built.opened, &again.opened));
        assert!(built.same(&again) && again.same(&built));
        // The writable directory replaced on the host: another inode, another ruleset.
        std::fs::rename(&w, dir.path().join("old")).unwrap();
        std::fs::create_dir(&w).unwrap();
        let replaced = reopen();
        assert_eq!(replaced.landlock, built.landlock);
        assert!(!built.same(&replaced) && !replaced.same(&built));
        // Other rules, whatever the opening.
        let other = AheadRules {
            landlock: landlock("/elsewhere"),
            opened,
        };
        assert!(!built.same(&other));
    }
}
