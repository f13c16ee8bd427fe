//! [`TreeLimits`]: the memory and process caps of a command's *whole* tree, through a control
//! group per launch.
//!
//! `RLIMIT_DATA` bounds one process and `RLIMIT_NPROC` is ignored for root, so a root toolsmith's
//! sandboxed tree could take all the memory and processes of the machine. Where this process may
//! create control groups with the `memory` and `pids` controllers ([`CgroupSupport`]: cgroup v2
//! beneath or beside our own group, or the v1 hierarchies as root), each launch gets its own
//! group with the policy's [`tree_memory_bytes`](crate::Limits::tree_memory_bytes) and
//! [`tree_processes`](crate::Limits::tree_processes); the helper is moved into it before it reads
//! its plan, so everything it starts is inside. Dropping the group kills what is left of the tree
//! (`setsid` escapees included, pid namespace or not) and removes it.
//!
//! Making and removing a group costs ~150–185 µs and ~95 µs (measured as root on cgroup v1,
//! 2 cores, loaded), and doing both per launch, even off its path, cost the launches ~0.3 ms on
//! 2 cores: so a group whose command has ended empty is kept for the next launch. The helper is
//! moved into its group (~50 µs) when it is started, which for `run` is ahead of the launch
//! (the spare helper, `warm.rs`); per launch only a look at whether the group emptied is paid.
//!
//! Where groups cannot be made, the launch goes on with the per-process rlimits and says so in
//! a warning when running as root (the only case where the process count is then unbounded):
//! failing closed would stop every root toolsmith in a container with a read-only cgroupfs.

use std::sync::{Arc, Mutex, PoisonError};

use super::cgroup::{Cgroup, CgroupSupport};
use crate::Limits;

/// The control groups of one launcher's commands (see the [module docs](self)).
#[derive(Debug, Clone)]
pub(crate) struct TreeLimits {
    support: Arc<CgroupSupport>,
    memory_bytes: Option<u64>,
    max_tasks: Option<u32>,
    /// A group made ahead of time for the next launch.
    spare: Arc<Mutex<Option<Cgroup>>>,
}

impl TreeLimits {
    /// The tree limits of `limits` on a machine offering `support`.
    pub(crate) fn new(support: CgroupSupport, limits: &Limits) -> TreeLimits {
        TreeLimits {
            support: Arc::new(support),
            memory_bytes: limits.tree_memory_bytes,
            max_tasks: limits.tree_processes,
            spare: Arc::new(Mutex::new(None)),
        }
    }

    /// Whether launches get a group: some limit is set and the machine lets us make groups.
    pub(crate) fn enforced(&self) -> bool {
        (self.memory_bytes.is_some() || self.max_tasks.is_some())
            && !self.support.hierarchies().is_empty()
    }

    /// The warning for a launch without a group, if one is due: running as root, with limits
    /// asked for, and no group to put the tree in.
    pub(crate) fn warning(&self, running_as_root: bool) -> Option<String> {
        let asked = self.memory_bytes.is_some() || self.max_tasks.is_some();
        (asked && running_as_root && !self.enforced()).then(|| {
            format!(
                "sandbox layer not enforced: tree limits (cgroup): {}; the command's processes \
                 and memory are bounded per process only",
                self.support.describe()
            )
        })
    }

    /// A group for the next launch: the spare one, or a new one. `None` when groups are not
    /// enforced, or one cannot be made (a warning then says why).
    ///
    /// # Errors
    ///
    /// The message of a failed creation, for the launch's warnings.
    pub(crate) fn take(&self) -> Result<Option<Cgroup>, String> {
        if !self.enforced() {
            return Ok(None);
        }
        if let Some(group) = self.lock().take() {
            return Ok(Some(group));
        }
        self.create()
            .map(Some)
            .map_err(|e| format!("sandbox layer not enforced: tree limits (cgroup): {e}"))
    }

    /// Takes `used` back once its command has ended: an empty group becomes the next launch's
    /// (a group's limits hold for whatever it holds next, and its memory charges are page cache
    /// the kernel reclaims under the limit); one still holding processes (`setsid` escapees
    /// without a pid namespace) is removed, which kills them, on a blocking thread when a tokio
    /// runtime is at hand.
    pub(crate) fn recycle(&self, used: Option<Cgroup>) {
        let Some(used) = used else {
            return;
        };
        if used.pids().is_ok_and(|pids| pids.is_empty()) {
            let mut spare = self.lock();
            if spare.is_none() {
                *spare = Some(used);
                return;
            }
        }
        super::off_path(move || drop(used));
    }

    fn create(&self) -> std::io::Result<Cgroup> {
        Cgroup::create(&self.support, self.memory_bytes, self.max_tasks)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Cgroup>> {
        self.spare.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
