//! [`Plan`]: exactly what the helper applies, decided by the launcher from the policy and the
//! machine's [`Capabilities`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ExecError, ExecRequest};
use crate::git::{Bind, GitProtection};
use crate::{Capabilities, NetworkPolicy, ReadPolicy, SandboxPolicy, Strictness, UnixSockets};

/// What the helper applies before it execs the target. Serialised as JSON on the helper's stdin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The program and its arguments (`argv[0]` is looked up in the plan's `PATH`).
    pub argv: Vec<String>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The complete environment of the target.
    pub env: Vec<(String, String)>,
    /// The launcher's pid: the helper exits if its parent is already another process.
    pub parent_pid: i32,
    /// Resource limits.
    pub rlimits: RlimitPlan,
    /// Namespaces to create.
    pub namespaces: NamespacePlan,
    /// Mounts made in the new mount namespace (when [`NamespacePlan::mount`]).
    pub mounts: MountPlan,
    /// Landlock rules, when Landlock is used.
    pub landlock: Option<LandlockPlan>,
    /// The seccomp filter, when seccomp is used.
    pub seccomp: Option<SeccompPlan>,
    /// Whether the target's stdin is its stdout's socket (a [`Launcher::spawn`]ed stdio
    /// server reads its requests there) rather than `/dev/null`.
    ///
    /// [`Launcher::spawn`]: super::Launcher::spawn
    #[serde(default)]
    pub stdin_from_stdout: bool,
    /// Whether the helper restricted itself before this plan came (a spare helper given its
    /// rules with its go, see [`Ahead`](super::Ahead)), rather than with a ruleset built now
    /// from [`landlock`](Self::landlock) and the descriptors sent with the plan. The launcher
    /// sends a plan only to a spare restricted with exactly its rules, on the same inodes; the
    /// plan then goes without its rules (most of its size: ~70 paths, twice), carrying their
    /// [`landlock_digest`](Self::landlock_digest) instead, and the helper refuses it (fail
    /// closed, nothing run) unless that is the digest of the rules it was given.
    #[serde(default)]
    pub landlock_ahead: bool,
    /// With [`landlock_ahead`](Self::landlock_ahead), as sent: the digest
    /// ([`LandlockPlan::digest`]) of the JSON Landlock plan the spare was given with its go, in
    /// place of [`landlock`](Self::landlock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landlock_digest: Option<u64>,
}

/// Resource limits (`None`: unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RlimitPlan {
    /// `RLIMIT_CPU` soft limit in seconds (hard = soft + 1, so SIGXCPU comes first).
    pub cpu_secs: Option<u64>,
    /// `RLIMIT_DATA`.
    pub data_bytes: Option<u64>,
    /// `RLIMIT_FSIZE`.
    pub file_size_bytes: Option<u64>,
    /// The `RLIMIT_NPROC` allowance (only for non-root users; the kernel ignores it for root):
    /// the limit is the uid's current process count plus this, or this alone inside a new user
    /// namespace ([`processes_in_user_namespace`](Self::processes_in_user_namespace)).
    pub processes: Option<u64>,
    /// Set `RLIMIT_NPROC` to the allowance itself once inside the new user namespace: since
    /// Linux 5.14 the kernel counts a uid's processes per user namespace, so only the command's
    /// own count, and the helper need not read every process' `/proc/<pid>/status` to learn the
    /// uid's current count (hundreds of files on a busy machine).
    #[serde(default)]
    pub processes_in_user_namespace: bool,
}

/// Namespaces the helper unshares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NamespacePlan {
    /// `CLONE_NEWUSER` with identity uid/gid maps.
    pub user: bool,
    /// `CLONE_NEWNET`.
    pub net: bool,
    /// Bring `lo` up in the new network namespace.
    pub loopback_up: bool,
    /// `CLONE_NEWPID` and the double fork.
    pub pid: bool,
    /// `CLONE_NEWNS`: a private mount namespace for the private `/proc` and git protection.
    pub mount: bool,
}

impl NamespacePlan {
    /// Whether the network namespace is made apart, before the others, in a user namespace of
    /// its own, the command's user namespace a child of that one: then the command, root in its
    /// user namespace at most, holds no capability over its network (it cannot bring `lo` up
    /// or down, or add an interface, address or route). So it is with a user, a network and a
    /// pid namespace; a prepared spare's is then lent from its launcher's pool and goes back
    /// to it after the launch (no process of the command outlives its pid namespace).
    ///
    /// ```
    /// use toolsmith_sandbox::exec::NamespacePlan;
    ///
    /// let all = NamespacePlan {
    ///     user: true,
    ///     net: true,
    ///     loopback_up: false,
    ///     pid: true,
    ///     mount: true,
    /// };
    /// assert!(all.network_apart());
    /// assert!(!NamespacePlan { pid: false, ..all }.network_apart());
    /// ```
    pub fn network_apart(&self) -> bool {
        self.user && self.net && self.pid
    }
}

/// What the helper mounts in its mount namespace, before Landlock (whose rules must name the
/// new mounts) and seccomp (which then denies every mount call).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MountPlan {
    /// Make every mount private (`MS_REC | MS_PRIVATE` on `/`) first, so nothing propagates back
    /// to the host. Needed only without a user namespace: a mount namespace created inside a new
    /// user namespace already receives shared mounts as slaves.
    pub make_private: bool,
    /// Mount a fresh procfs on `/proc` (`nosuid`, `nodev`, `noexec`) in PID 1 of the new pid
    /// namespace: the command sees its own processes only.
    pub proc: bool,
    /// Git protection's bind mounts ([`GitProtection::binds`]), in order.
    pub binds: Vec<Bind>,
}

/// Landlock rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LandlockPlan {
    /// The ABI to target (the best the kernel has).
    pub abi: u8,
    /// Paths readable (and executable) beneath.
    pub read: Vec<PathBuf>,
    /// Paths writable beneath.
    pub write: Vec<PathBuf>,
    /// Deny TCP bind and connect (ABI ≥ 4).
    pub deny_tcp: bool,
    /// Scope abstract Unix sockets and signals to the sandbox (ABI ≥ 6).
    pub scope: bool,
    /// Without a private `/proc`: the read rule for `/proc` becomes the command's own
    /// `/proc/<pid>` plus a few whole-system files (`cpuinfo`, `meminfo`, `stat`…), so other
    /// processes' command lines and environments stay unreadable.
    pub proc_self_only: bool,
    /// The rules whose paths the launcher opened itself and sends with the plan (`SCM_RIGHTS`
    /// on the helper's channel), in the order of the descriptors: the helper walks none of
    /// these paths again (~70 rules, most of the ruleset's cost). Paths not here, or whose
    /// descriptor did not arrive, the helper opens itself; `/proc` is always among those (it
    /// must name the helper's own procfs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inherited: Vec<InheritedRule>,
}

impl LandlockPlan {
    /// The digest of a JSON Landlock plan, 64-bit FNV-1a of its bytes, by which a plan asking
    /// for the ruleset a spare enforced ahead names the rules the spare was given with its go
    /// ([`Plan::landlock_digest`]). Both sides hold those rules already: the digest is a check
    /// between the launcher and its own helper that they mean the same ones, not a defence
    /// against an adversary.
    ///
    /// ```
    /// use toolsmith_sandbox::exec::LandlockPlan;
    ///
    /// assert_eq!(LandlockPlan::digest(b""), 0xcbf2_9ce4_8422_2325);
    /// assert_ne!(LandlockPlan::digest(b"{\"abi\":5}"), LandlockPlan::digest(b"{\"abi\":6}"));
    /// ```
    pub fn digest(json: &[u8]) -> u64 {
        json.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        })
    }
}

/// A Landlock rule whose path the launcher opened (`O_PATH`) and sends with the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InheritedRule {
    /// The path, as in [`LandlockPlan::read`] or [`LandlockPlan::write`].
    pub path: PathBuf,
    /// Whether it is a write rule (else a read rule).
    pub write: bool,
    /// Whether it is a directory (else only the file rights apply).
    pub dir: bool,
}

/// The seccomp filter. Always (see [`seccomp`](super::seccomp)): no set-ID modes, device nodes,
/// extended attributes, mounts, kernel keyrings, `openat2`, `io_uring` or x32 syscalls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeccompPlan {
    /// `socket` only for AF_UNIX and AF_NETLINK; `socketpair` only for AF_UNIX.
    pub deny_inet: bool,
    /// `socket(AF_UNIX)` denied too (`socketpair` still allowed).
    pub deny_unix: bool,
    /// Loopback-only with the host's loopback: `connect` is mediated by the launcher's
    /// supervisor (see [`NetworkPolicy::LoopbackOnly`]). The helper installs the `connect`
    /// filter and sends its listener on the last descriptor received with the plan.
    #[serde(default)]
    pub mediate_loopback: bool,
}

/// The start of the warning when loopback-only cannot reach the host's loopback.
pub(crate) const LOOPBACK_DEGRADED: &str = "loopback-only network reaches the sandbox's own \
     loopback only, not the host's loopback services";

/// Device files always writable (`/dev/null`…).
const DEVICES: [&str; 4] = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"];

impl Plan {
    /// Decides the plan for `request` under `policy` on a machine with `caps`. `vars` is the
    /// environment the allowlist picks from (usually the runtime's own).
    ///
    /// Returns the plan and the warnings for the layers that could not be enforced.
    ///
    /// # Errors
    ///
    /// [`ExecError::Unavailable`] naming the first missing layer when the policy fails closed.
    pub fn build(
        policy: &SandboxPolicy,
        caps: &Capabilities,
        request: &ExecRequest,
        vars: impl Iterator<Item = (String, String)>,
    ) -> Result<(Plan, Vec<String>), ExecError> {
        let mut missing: Vec<(String, String)> = Vec::new();
        let userns = caps.user_namespaces;
        // Without a user namespace, only root may create the others.
        let can_ns = |available: bool| available && (userns || caps.running_as_root);

        let wants_net_isolation = policy.network != NetworkPolicy::Full;
        let net = wants_net_isolation && can_ns(caps.net_namespaces);
        let pid = can_ns(caps.pid_namespaces);
        // The mount namespace is made only for what needs it.
        let mount = can_ns(caps.mount_namespaces) && (pid || policy.protect_git);
        let private_proc = pid && mount && caps.private_proc;
        let mut deny_inet = policy.network == NetworkPolicy::Off;
        if policy.network == NetworkPolicy::LoopbackOnly && !net {
            deny_inet = true;
            missing.push((
                "loopback-only network (network namespace)".into(),
                "no network namespace; network is off instead".into(),
            ));
        }
        if policy.network == NetworkPolicy::Off && !caps.seccomp && !net {
            missing.push((
                "network isolation (seccomp or network namespace)".into(),
                "neither seccomp nor a network namespace is available".into(),
            ));
        }
        let deny_unix = policy.unix_sockets == UnixSockets::Deny;
        if deny_unix && !caps.seccomp {
            missing.push((
                "unix socket filter (seccomp)".into(),
                "seccomp is unavailable".into(),
            ));
        }
        let read = policy.readable_paths();
        let proc_self_only = !private_proc
            && matches!(policy.read, ReadPolicy::Allowlist(_))
            && read.iter().any(|p| p == std::path::Path::new("/proc"));
        let landlock = match caps.landlock_abi {
            Some(abi) => {
                let mut write = policy.writable_paths();
                write.extend(DEVICES.iter().map(PathBuf::from));
                Some(LandlockPlan {
                    abi,
                    read,
                    write,
                    deny_tcp: policy.network == NetworkPolicy::Off && abi >= 4,
                    scope: abi >= 6,
                    proc_self_only,
                    inherited: Vec::new(),
                })
            }
            None => {
                missing.push((
                    "filesystem (Landlock)".into(),
                    "Landlock is not available on this kernel".into(),
                ));
                None
            }
        };
        if !caps.seccomp {
            missing.push((
                "privilege filter (seccomp)".into(),
                "seccomp is unavailable: set-ID files, file capabilities and device nodes could \
                 be left behind"
                    .into(),
            ));
        }
        if policy.protect_git && !mount {
            missing.push((
                "git protection (mount namespace)".into(),
                "no mount namespace: .git/config and .git/hooks stay writable".into(),
            ));
        }
        let warnings: Vec<String> = missing
            .iter()
            .map(|(layer, reason)| format!("sandbox layer not enforced: {layer}: {reason}"))
            .collect();
        if policy.strictness == Strictness::FailClosed
            && let Some((layer, reason)) = missing.into_iter().next()
        {
            return Err(ExecError::Unavailable { layer, reason });
        }
        let mut warnings = warnings;
        // The host's loopback needs the private namespace (the boundary) and the supervisor's
        // kernel interfaces; without them loopback-only keeps its own `lo` only, which is
        // stricter, so a fail-closed policy still runs.
        let mediate_loopback = policy.network == NetworkPolicy::LoopbackOnly
            && net
            && caps.seccomp
            && caps.seccomp_listener
            && kernel_supports_mediation(&caps.kernel);
        if policy.network == NetworkPolicy::LoopbackOnly && net && !mediate_loopback {
            warnings.push(format!(
                "{LOOPBACK_DEGRADED}: seccomp user notification (Linux 5.9) is unavailable"
            ));
        }
        if !pid {
            warnings.push(
                "no pid namespace: processes that call setsid may outlive the command".into(),
            );
        }
        if !private_proc {
            let why = if !pid {
                "no pid namespace"
            } else if !mount {
                "no mount namespace"
            } else {
                "the kernel refused to mount a procfs"
            };
            warnings.push(if proc_self_only && landlock.is_some() {
                format!(
                    "no private /proc ({why}): /proc is limited to the command's own entry and \
                     a few system files; its child processes cannot read their /proc/self"
                )
            } else {
                format!("no private /proc ({why}): other processes' command lines are readable")
            });
        }

        let env = build_env(policy, vars);
        let limits = &policy.limits;
        let plan = Plan {
            argv: std::iter::once(request.program.clone())
                .chain(request.args.iter().cloned())
                .collect(),
            cwd: request.cwd.clone(),
            env,
            parent_pid: rustix::process::getpid().as_raw_nonzero().get(),
            rlimits: RlimitPlan {
                cpu_secs: limits.cpu.map(|d| d.as_secs().max(1)),
                data_bytes: limits.data_bytes,
                file_size_bytes: limits.file_size_bytes,
                processes: if caps.running_as_root {
                    None
                } else {
                    limits.processes.map(u64::from)
                },
                processes_in_user_namespace: userns && kernel_at_least(&caps.kernel, (5, 14)),
            },
            namespaces: NamespacePlan {
                user: userns,
                net,
                loopback_up: net && policy.network == NetworkPolicy::LoopbackOnly,
                pid,
                mount,
            },
            mounts: MountPlan {
                make_private: mount && !userns,
                proc: private_proc,
                binds: Vec::new(),
            },
            landlock,
            seccomp: caps.seccomp.then_some(SeccompPlan {
                deny_inet,
                deny_unix,
                mediate_loopback,
            }),
            stdin_from_stdout: false,
            landlock_ahead: false,
            landlock_digest: None,
        };
        Ok((plan, warnings))
    }

    /// Adds git protection's bind mounts (when the plan has a mount namespace; without one the
    /// launcher's snapshot and [`GitProtection::undo`] are all there is).
    pub fn protect_git(&mut self, protection: &GitProtection) {
        if self.namespaces.mount {
            self.mounts.binds = protection.binds();
        }
    }
}

/// Whether kernel `release` has what loopback mediation needs (`SECCOMP_ADDFD_FLAG_SETFD`,
/// Linux 5.9; `pidfd_getfd`, 5.6).
pub(crate) fn kernel_supports_mediation(release: &str) -> bool {
    kernel_at_least(release, (5, 9))
}

/// Whether the kernel release `release` (`6.18.44-foo`) is at least `version`.
fn kernel_at_least(release: &str, version: (u32, u32)) -> bool {
    let mut numbers = release.split(['.', '-']).map(|part| {
        part.bytes()
            .take_while(u8::is_ascii_digit)
            .fold(0u32, |n, d| {
                n.saturating_mul(10).saturating_add(u32::from(d - b'0'))
            })
    });
    let major = numbers.next().unwrap_or(0);
    let minor = numbers.next().unwrap_or(0);
    (major, minor) >= version
}

/// The target's environment: the allowlisted variables present in `vars`, then the policy's
/// explicit values, and `HOME` = the root unless set explicitly.
fn build_env(
    policy: &SandboxPolicy,
    vars: impl Iterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = vars
        .filter(|(k, _)| policy.env.allow.iter().any(|a| a == k))
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push((
            "PATH".into(),
            "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin".into(),
        ));
    }
    env.push(("HOME".into(), policy.root.to_string_lossy().into_owned()));
    for (k, v) in &policy.env.set {
        env.retain(|(name, _)| name != k);
        env.push((k.clone(), v.clone()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> Capabilities {
        Capabilities {
            landlock_abi: None,
            openat2: true,
            seccomp: true,
            user_namespaces: false,
            net_namespaces: false,
            pid_namespaces: false,
            mount_namespaces: false,
            private_proc: false,
            seccomp_listener: false,
            running_as_root: false,
            kernel: "test".into(),
        }
    }

    #[test]
    fn fail_closed_names_the_missing_layer() {
        let policy = SandboxPolicy::new("/w");
        let request = ExecRequest::new("true", vec![], "/w");
        let err = Plan::build(&policy, &caps(), &request, std::iter::empty()).unwrap_err();
        assert_eq!(
            err,
            ExecError::Unavailable {
                layer: "filesystem (Landlock)".into(),
                reason: "Landlock is not available on this kernel".into()
            }
        );
        let mut policy = policy;
        policy.strictness = Strictness::BestEffort;
        let (plan, warnings) = Plan::build(&policy, &caps(), &request, std::iter::empty()).unwrap();
        assert!(plan.landlock.is_none());
        assert!(warnings[0].contains("filesystem (Landlock)"));
    }

    fn full() -> Capabilities {
        Capabilities {
            landlock_abi: Some(6),
            user_namespaces: true,
            net_namespaces: true,
            pid_namespaces: true,
            mount_namespaces: true,
            private_proc: true,
            ..caps()
        }
    }

    #[test]
    fn a_private_proc_needs_pid_and_mount_namespaces_else_proc_is_narrowed() {
        let policy = SandboxPolicy::new("/w");
        let request = ExecRequest::new("true", vec![], "/w");
        let build =
            |caps: &Capabilities| Plan::build(&policy, caps, &request, std::iter::empty()).unwrap();
        let (plan, warnings) = build(&full());
        assert!(plan.namespaces.mount && plan.mounts.proc && !plan.mounts.make_private);
        assert!(!plan.landlock.unwrap().proc_self_only);
        assert!(warnings.is_empty(), "{warnings:?}");

        let refused = Capabilities {
            private_proc: false,
            ..full()
        };
        let (plan, warnings) = build(&refused);
        assert!(plan.namespaces.mount && !plan.mounts.proc);
        assert!(plan.landlock.unwrap().proc_self_only);
        assert_eq!(
            warnings,
            [
                "no private /proc (the kernel refused to mount a procfs): /proc is limited to the \
              command's own entry and a few system files; its child processes cannot read their \
              /proc/self"
            ]
        );

        // Read everywhere: nothing to narrow, and the warning says so.
        let mut everywhere = SandboxPolicy::new("/w");
        everywhere.read = ReadPolicy::Everywhere;
        let (plan, warnings) =
            Plan::build(&everywhere, &refused, &request, std::iter::empty()).unwrap();
        assert!(!plan.landlock.unwrap().proc_self_only);
        assert!(warnings[0].ends_with("other processes' command lines are readable"));
    }

    #[test]
    fn git_protection_fails_closed_without_a_mount_namespace() {
        let mut policy = SandboxPolicy::new("/w");
        let request = ExecRequest::new("true", vec![], "/w");
        let no_mount = Capabilities {
            mount_namespaces: false,
            private_proc: false,
            ..full()
        };
        let err = Plan::build(&policy, &no_mount, &request, std::iter::empty()).unwrap_err();
        assert_eq!(
            err,
            ExecError::Unavailable {
                layer: "git protection (mount namespace)".into(),
                reason: "no mount namespace: .git/config and .git/hooks stay writable".into()
            }
        );
        policy.protect_git = false;
        let (plan, _) = Plan::build(&policy, &no_mount, &request, std::iter::empty()).unwrap();
        assert!(!plan.namespaces.mount);
        // Without a pid namespace the mount namespace is made for git protection alone; as
        // root without a user namespace, propagation is made private first.
        policy.protect_git = true;
        let root_only = Capabilities {
            user_namespaces: false,
            pid_namespaces: false,
            running_as_root: true,
            ..full()
        };
        let (plan, _) = Plan::build(&policy, &root_only, &request, std::iter::empty()).unwrap();
        assert!(plan.namespaces.mount && plan.mounts.make_private && !plan.mounts.proc);
    }

    #[test]
    fn the_privilege_filter_needs_seccomp() {
        let request = ExecRequest::new("true", vec![], "/w");
        let no_seccomp = Capabilities {
            seccomp: false,
            ..full()
        };
        let mut policy = SandboxPolicy::new("/w");
        policy.unix_sockets = UnixSockets::Allow;
        let err = Plan::build(&policy, &no_seccomp, &request, std::iter::empty()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "sandbox layer unavailable: privilege filter (seccomp): seccomp is unavailable: \
             set-ID files, file capabilities and device nodes could be left behind"
        );
    }

    #[test]
    fn process_limits_are_per_user_namespace_from_linux_5_14() {
        assert!(kernel_at_least("6.18.44-fc-v657", (5, 14)));
        assert!(kernel_at_least("5.14.0", (5, 14)));
        assert!(!kernel_at_least("5.10.0-28-amd64", (5, 14)));
        assert!(!kernel_at_least("test", (5, 14)));
        let policy = SandboxPolicy::new("/w");
        let request = ExecRequest::new("true", vec![], "/w");
        let caps = Capabilities {
            kernel: "6.1.0".into(),
            ..full()
        };
        let (plan, _) = Plan::build(&policy, &caps, &request, std::iter::empty()).unwrap();
        assert!(plan.rlimits.processes_in_user_namespace);
        assert_eq!(plan.rlimits.processes, Some(512));
        let old = Capabilities {
            kernel: "5.10.0".into(),
            ..full()
        };
        let (plan, _) = Plan::build(&policy, &old, &request, std::iter::empty()).unwrap();
        assert!(!plan.rlimits.processes_in_user_namespace);
    }

    #[test]
    fn loopback_only_is_mediated_when_the_kernel_can_else_it_keeps_its_own_lo() {
        let mut policy = SandboxPolicy::new("/w");
        policy.network = NetworkPolicy::LoopbackOnly;
        let request = ExecRequest::new("true", vec![], "/w");
        let able = Capabilities {
            seccomp_listener: true,
            kernel: "5.9.0".into(),
            ..full()
        };
        let (plan, warnings) = Plan::build(&policy, &able, &request, std::iter::empty()).unwrap();
        assert!(plan.namespaces.net && plan.namespaces.loopback_up);
        assert!(plan.seccomp.unwrap().mediate_loopback);
        assert!(!plan.seccomp.unwrap().deny_inet);
        assert!(warnings.is_empty(), "{warnings:?}");
        for unable in [
            Capabilities {
                kernel: "5.8.0".into(),
                ..able.clone()
            },
            Capabilities {
                seccomp_listener: false,
                ..able.clone()
            },
        ] {
            let (plan, warnings) =
                Plan::build(&policy, &unable, &request, std::iter::empty()).unwrap();
            assert!(plan.namespaces.net && !plan.seccomp.unwrap().mediate_loopback);
            assert!(warnings[0].starts_with(LOOPBACK_DEGRADED), "{warnings:?}");
        }
        // Off and Full are never mediated.
        for network in [NetworkPolicy::Off, NetworkPolicy::Full] {
            policy.network = network;
            let (plan, _) = Plan::build(&policy, &able, &request, std::iter::empty()).unwrap();
            assert!(!plan.seccomp.unwrap().mediate_loopback);
        }
    }

    #[test]
    fn env_is_the_allowlist_plus_explicit_values() {
        let mut policy = SandboxPolicy::new("/w");
        policy.env.set.push(("FOO".into(), "bar".into()));
        let vars = [
            ("PATH".to_string(), "/bin".to_string()),
            ("SECRET".to_string(), "x".to_string()),
        ];
        let env = build_env(&policy, vars.into_iter());
        assert_eq!(
            env,
            [
                ("PATH".to_string(), "/bin".to_string()),
                ("HOME".into(), "/w".into()),
                ("FOO".into(), "bar".into())
            ]
        );
    }
}
