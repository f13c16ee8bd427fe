//! [`Ahead`]: the part of a [`Plan`] a spare helper applies before its plan comes.
//!
//! A sandboxed launch of `true` cost ~1.9 ms over a plain spawn with a spare that applied
//! nothing ahead (measured as root on 2 cores, cgroup v1): the network namespace alone ~0.65 ms,
//! the user, pid and mount namespaces, the pid namespace's init and its `/proc` much of the rest.
//! None of these depend on the command: they follow from the launcher's policy and the machine's
//! [`Capabilities`](crate::Capabilities) only. So a spare helper (`warm.rs`) started with an
//! `Ahead` unshares its user, network, pid and mount namespaces (identity maps, `lo` up for
//! loopback-only), forks the pid namespace's PID 1, and there makes the mounts private and mounts
//! the fresh `/proc`, then waits for its plan; the plan brings the rest (rlimits, git
//! protection's binds, `chdir`, Landlock, seccomp, `execve`), applied in the same order as on a
//! fresh helper.
//!
//! The Landlock rules depend on the policy only too, and adding them (~70 paths, those the
//! launcher could not open tried again by path) was ~0.3 ms of what was left on a launch. So the
//! launcher's go brings them with their descriptors ([`AheadRules`](super::rules::AheadRules)),
//! and once it has said it is ready the spare builds the ruleset (after its `/proc`, whose rule
//! must name the new procfs).
//!
//! Then the spare *confines itself ahead*: restricting itself with that ruleset
//! (`landlock_restrict_self`, ~90 µs) and installing the seccomp filter (~87 µs: the kernel
//! emulates the filter for every syscall number to build its action cache, and JIT-compiles it)
//! were the two largest pieces of what a launch with its spare ready still did before `execve`
//! (traced on the 2-core test machine). Neither depends on the command, but both forbid mounts,
//! so git protection's binds ([`MountPlan::binds`](super::MountPlan::binds)) are made ahead
//! too, before [`READY`](super::channel::READY), from the snapshot of the launch before. What
//! the plan brings and the spare applies after it: rlimits, `chdir`, loopback mediation's
//! `connect` filter, the environment and `execve`.
//!
//! The contract:
//!
//! - **Fresh per command, but for the network.** Every spare creates its own user, pid and mount
//!   namespaces and serves one launch: none of them (and so no mount or process) is ever reused
//!   from one command to the next. Its network namespace is lent by the launcher's pool
//!   ([`NetPool`](super::netns::NetPool)) when the plan has a user and a pid namespace: made in
//!   a user namespace of its own, which the command's is a child of, so that no command holds a
//!   capability over it, and lent to one launch at a time, back only once that launch's PID 1
//!   was reaped (no process, and so no socket, of the command is left in it). Otherwise it is
//!   made for the command and torn down by the kernel once the launch lets it go.
//! - **Keyed by what it applied.** A spare records its `Ahead`; a launch takes it only when the
//!   plan's own `Ahead` is equal ([`Ahead::of`]), and the helper checks it again when the plan
//!   comes ([`Ahead::admits`]), failing the launch (never running the command) on a mismatch.
//!   A spare prepared for one policy never serves another. Its ruleset is used only by a plan
//!   that asks for it ([`Plan::landlock_ahead`]), which the launcher does only when the plan's
//!   rules are exactly those the spare was given, from the same opening of their paths (a path
//!   opened again after [`MAX_AGE`](super::rules::MAX_AGE) may name another inode; then the plan
//!   brings its descriptors and the ruleset is built from them, as on a fresh helper). Such a
//!   plan goes without its rules, naming them by the digest of those the spare was given
//!   ([`Plan::landlock_digest`]), and the helper checks it: a plan that asks for a ruleset built
//!   ahead from other rules is refused, and the command never runs. A spare given rules has
//!   restricted itself with them: a plan with other rules (or none) is never sent to it.
//! - **Binds that still hold.** A bind made ahead pins the inode its path named then: a file
//!   the host replaces by a rename afterwards (as `git config` does) takes the bind away in the
//!   spare's namespace (the kernel detaches a mount whose mount point is renamed over), and
//!   the command would see the new file writable. So before it sends the plan, the launcher
//!   checks that each bind's path is still a mount's root in the spare's namespace
//!   ([`Ahead::binds_hold`], through `/proc/<pid>/root`); a spare whose binds do not hold is
//!   discarded, and a fresh helper binds at launch. Plans with binds are prepared ahead only
//!   where the kernel says what is a mount's root (`STATX_ATTR_MOUNT_ROOT`, Linux 5.8).
//! - **Fail closed.** A spare whose preparation fails is not used: the launch starts a fresh
//!   helper, which applies the whole plan as before (and reports a layer it cannot apply).
//! - **Not for plans that read the machine at launch time.** A plan whose process limit is the
//!   user's current process count plus the allowance (a non-root user without per-user-namespace
//!   counting, Linux < 5.14) has no `Ahead`: that count must be taken when the command starts,
//!   outside the namespaces.
//!
//! A mount namespace copies the mount table when it is created: a spare's command sees the host's
//! mounts as they were when the spare was prepared, plus, inside a user namespace, what
//! propagates from shared mounts since. Spares are replaced after every launch, so this is the
//! table of moments before.

use serde::{Deserialize, Serialize};

use super::plan::{MountPlan, NamespacePlan, Plan, SeccompPlan};

/// What a spare helper applies before its plan (see the [module docs](self)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ahead {
    /// The namespaces, exactly as the plan's.
    pub namespaces: NamespacePlan,
    /// The mounts, exactly as the plan's: private propagation, `/proc` and git protection's
    /// binds.
    pub mounts: MountPlan,
    /// The seccomp filter, installed ahead, exactly as the plan's.
    pub seccomp: Option<SeccompPlan>,
}

impl Ahead {
    /// What a spare can apply ahead of `plan`: `None` when there is nothing to apply (no
    /// namespace), or when the plan must be applied whole at launch (see the
    /// [module docs](self)).
    ///
    /// ```
    /// use toolsmith_sandbox::exec::{Ahead, ExecRequest, Plan};
    /// use toolsmith_sandbox::{Capabilities, SandboxPolicy};
    ///
    /// let caps = Capabilities::detect();
    /// let request = ExecRequest::new("true", vec![], "/tmp");
    /// let policy = SandboxPolicy::new("/tmp");
    /// if let Ok((plan, _)) = Plan::build(&policy, caps, &request, std::iter::empty()) {
    ///     if let Some(ahead) = Ahead::of(&plan) {
    ///         assert!(ahead.admits(&plan));
    ///         assert_eq!(ahead.seccomp, plan.seccomp);
    ///     }
    /// }
    /// ```
    pub fn of(plan: &Plan) -> Option<Ahead> {
        let ns = plan.namespaces;
        let any = ns.user || ns.net || ns.pid || ns.mount;
        let counts_host =
            plan.rlimits.processes.is_some() && !plan.rlimits.processes_in_user_namespace;
        (any && !counts_host).then(|| Ahead {
            namespaces: ns,
            mounts: plan.mounts.clone(),
            seccomp: plan.seccomp,
        })
    }

    /// Whether every bind this preparation made is still in place in the namespace whose
    /// root is `/proc/<pid>/root` (the spare's PID 1, or the spare): each path is still the
    /// root of a mount there (see the [module docs](self)). `false` when the kernel cannot
    /// tell; `true` when there are no binds.
    pub fn binds_hold(&self, pid: u32) -> bool {
        self.mounts.binds.iter().all(|bind| {
            let mut path = std::ffi::OsString::from(format!("/proc/{pid}/root"));
            path.push(bind.path.as_os_str());
            mount_root(std::path::Path::new(&path)) == Some(true)
        })
    }

    /// Whether this machine's kernel says which paths are a mount's root, as
    /// [`binds_hold`](Self::binds_hold) needs (checked once).
    pub(crate) fn can_check_binds() -> bool {
        static KNOWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *KNOWN.get_or_init(|| mount_root(std::path::Path::new("/")).is_some())
    }

    /// Whether the spare's network namespace is pooled ([`NetPool`](super::netns::NetPool)):
    /// made apart, in a user namespace of its own ([`NamespacePlan::network_apart`]).
    pub(crate) fn pools_network(&self) -> bool {
        self.namespaces.network_apart()
    }

    /// Whether a helper that applied `self` may apply the rest of `plan`: `plan` would have been
    /// prepared exactly so.
    pub fn admits(&self, plan: &Plan) -> bool {
        Ahead::of(plan).as_ref() == Some(self)
    }

    /// The argument the helper's `spare` mode takes.
    pub(crate) fn to_arg(&self) -> String {
        serde_json::to_string(&self).expect("an Ahead serialises")
    }

    /// Parses [`to_arg`](Self::to_arg)'s output.
    pub(crate) fn from_arg(arg: &str) -> Result<Ahead, String> {
        serde_json::from_str(arg).map_err(|e| format!("invalid preparation {arg:?}: {e}"))
    }
}

/// Whether `path` (not followed if it is a symbolic link) is the root of a mount; `None` when
/// the kernel cannot say (before Linux 5.8) or `path` cannot be looked at.
fn mount_root(path: &std::path::Path) -> Option<bool> {
    use rustix::fs::{AtFlags, CWD, StatxAttributes, StatxFlags, statx};
    let flags = AtFlags::NO_AUTOMOUNT | AtFlags::SYMLINK_NOFOLLOW;
    let found = statx(CWD, path, flags, StatxFlags::empty()).ok()?;
    let known = found
        .stx_attributes_mask
        .contains(StatxAttributes::MOUNT_ROOT);
    known.then(|| found.stx_attributes.contains(StatxAttributes::MOUNT_ROOT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::ExecRequest;
    use crate::{Capabilities, NetworkPolicy, SandboxPolicy};

    fn caps(running_as_root: bool, kernel: &str) -> Capabilities {
        Capabilities {
            landlock_abi: Some(6),
            openat2: true,
            seccomp: true,
            user_namespaces: true,
            net_namespaces: true,
            pid_namespaces: true,
            mount_namespaces: true,
            private_proc: true,
            seccomp_listener: true,
            running_as_root,
            kernel: kernel.into(),
        }
    }

    fn plan(policy: &SandboxPolicy, caps: &Capabilities) -> Plan {
        let request = ExecRequest::new("true", vec![], "/w");
        Plan::build(policy, caps, &request, std::iter::empty())
            .unwrap()
            .0
    }

    #[test]
    fn a_policy_gets_its_own_preparation_and_admits_no_other() {
        let caps = caps(true, "6.8.0");
        let off = plan(&SandboxPolicy::new("/w"), &caps);
        let ahead = Ahead::of(&off).unwrap();
        assert!(ahead.namespaces.net && ahead.namespaces.pid && ahead.mounts.proc);
        assert!(!ahead.namespaces.loopback_up);
        assert!(ahead.admits(&off));
        let mut policy = SandboxPolicy::new("/w");
        policy.network = NetworkPolicy::LoopbackOnly;
        let loopback = plan(&policy, &caps);
        assert!(!ahead.admits(&loopback), "lo is down in an Off spare");
        policy.network = NetworkPolicy::Full;
        let full = plan(&policy, &caps);
        assert!(!Ahead::of(&full).unwrap().namespaces.net);
        assert!(!ahead.admits(&full) && !Ahead::of(&full).unwrap().admits(&off));
        // The preparation survives its trip through the helper's argument.
        assert_eq!(Ahead::from_arg(&ahead.to_arg()), Ok(ahead));
    }

    #[test]
    fn a_preparation_admits_only_the_binds_and_filter_it_applied() {
        let caps = caps(true, "6.8.0");
        let plain = plan(&SandboxPolicy::new("/w"), &caps);
        let ahead = Ahead::of(&plain).unwrap();
        assert_eq!(ahead.mounts, plain.mounts);
        assert!(ahead.seccomp.is_some());
        // A repository appeared (or its state changed) since the spare bound what it found.
        let mut bound = plain.clone();
        bound.mounts.binds.push(crate::git::Bind {
            path: "/w/.git".into(),
            read_only: false,
        });
        assert!(!ahead.admits(&bound));
        assert!(Ahead::of(&bound).unwrap().admits(&bound));
        // A filter other than the one installed ahead.
        let mut unix = plain.clone();
        unix.seccomp.as_mut().unwrap().deny_unix = !plain.seccomp.unwrap().deny_unix;
        assert!(!ahead.admits(&unix));
        // No binds: nothing to check; `/` is the root of a mount wherever the kernel can say.
        assert!(ahead.binds_hold(std::process::id()));
        if Ahead::can_check_binds() {
            assert_eq!(mount_root(std::path::Path::new("/")), Some(true));
            assert_eq!(mount_root(std::path::Path::new("/proc/self")), Some(false));
            let not_bound = Ahead::of(&bound).unwrap();
            assert!(
                !not_bound.binds_hold(std::process::id()),
                "/w/.git is no mount"
            );
        }
    }

    #[test]
    fn plans_that_count_the_hosts_processes_or_have_no_namespace_are_not_prepared() {
        let policy = SandboxPolicy::new("/w");
        // Not root, and a kernel that counts processes per uid across namespaces.
        let old = plan(&policy, &caps(false, "5.10.0"));
        assert_eq!(Ahead::of(&old), None);
        let new = plan(&policy, &caps(false, "6.8.0"));
        assert!(Ahead::of(&new).is_some());
        let mut bare = new.clone();
        bare.namespaces = NamespacePlan::default();
        assert_eq!(Ahead::of(&bare), None);
        assert!(!Ahead::of(&new).unwrap().admits(&bare));
    }
}
