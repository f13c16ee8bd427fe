//! [`Capabilities`]: what this machine can enforce, detected once.
//!
//! Landlock, openat2 and seccomp are probed in-process with harmless syscalls. Namespaces are
//! probed without forking the runtime: the helper is posix_spawned in its `probe` mode, tries
//! `unshare` on itself, then bind mounts and a procfs mount in a child (container runtimes and
//! LSMs often refuse mounts even where `unshare` works), and prints what worked.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::exec::HelperCommand;
use crate::{NetworkPolicy, ReadPolicy, SandboxPolicy, UnixSockets};

/// What the kernel and the process' privileges allow here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// The Landlock ABI version, `None` when Landlock is unavailable.
    pub landlock_abi: Option<u8>,
    /// Whether `openat2` exists (the in-process file tools fall back to a walk without it).
    pub openat2: bool,
    /// Whether seccomp filters can be installed.
    pub seccomp: bool,
    /// Whether the helper could create a user namespace.
    pub user_namespaces: bool,
    /// Whether the helper could create a network namespace.
    pub net_namespaces: bool,
    /// Whether the helper could create a pid namespace.
    pub pid_namespaces: bool,
    /// Whether the helper could create a mount namespace and bind-mount read-only in it (git
    /// protection).
    #[serde(default)]
    pub mount_namespaces: bool,
    /// Whether the helper could mount a fresh procfs for its pid namespace (a private `/proc`).
    #[serde(default)]
    pub private_proc: bool,
    /// Whether the helper could install a seccomp filter with a user-notification listener
    /// (`SECCOMP_FILTER_FLAG_NEW_LISTENER`): loopback-only mediation needs it, with Linux ≥ 5.9.
    #[serde(default)]
    pub seccomp_listener: bool,
    /// Whether the runtime runs as uid 0 (`RLIMIT_NPROC` is not enforced for root).
    pub running_as_root: bool,
    /// The kernel release (`uname -r`).
    pub kernel: String,
}

/// What the helper's `probe` mode prints (one JSON line).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NamespaceProbe {
    pub user: bool,
    pub net: bool,
    pub pid: bool,
    /// A mount namespace, with a read-only bind mount in it.
    #[serde(default)]
    pub mount: bool,
    /// A procfs mounted for the new pid namespace.
    #[serde(default)]
    pub private_proc: bool,
    /// A seccomp filter with a user-notification listener.
    #[serde(default)]
    pub seccomp_listener: bool,
}

/// One layer of the policy and whether it is enforced on this machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Layer {
    /// The layer (`filesystem writes`, `network`…).
    pub name: String,
    /// Whether this machine enforces it as the policy asks.
    pub enforced: bool,
    /// How it is enforced, or why it is not.
    pub detail: String,
}

impl Capabilities {
    /// The capabilities of this machine, detected on first use (the helper is located with
    /// [`HelperCommand::locate`]; without one, namespaces count as unavailable).
    pub fn detect() -> &'static Capabilities {
        static CAPS: OnceLock<Capabilities> = OnceLock::new();
        CAPS.get_or_init(|| Capabilities::detect_with(HelperCommand::locate().ok().as_ref()))
    }

    /// Detects the capabilities, probing namespaces through `helper` (uncached).
    pub fn detect_with(helper: Option<&HelperCommand>) -> Capabilities {
        let ns = helper.and_then(|h| h.probe().ok()).unwrap_or_default();
        Capabilities {
            landlock_abi: landlock_abi(),
            openat2: openat2_available(),
            seccomp: seccomp_available(),
            user_namespaces: ns.user,
            net_namespaces: ns.net,
            pid_namespaces: ns.pid,
            mount_namespaces: ns.mount,
            private_proc: ns.private_proc,
            seccomp_listener: ns.seccomp_listener,
            running_as_root: rustix::process::geteuid().is_root(),
            kernel: rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned(),
        }
    }

    /// For each layer of `policy`: whether it is enforced here, and how.
    pub fn report(&self, policy: &SandboxPolicy) -> Vec<Layer> {
        let layer = |name: &str, enforced: bool, detail: String| Layer {
            name: name.into(),
            enforced,
            detail,
        };
        let ll = self.landlock_abi;
        let netns = self.net_namespaces;
        let mut layers = vec![match ll {
            Some(abi) => layer(
                "filesystem writes",
                true,
                format!("Landlock ABI {abi}: writes only beneath the root and extra writable dirs"),
            ),
            None => layer(
                "filesystem writes",
                false,
                "Landlock unavailable: commands could write anywhere the user can".into(),
            ),
        }];
        layers.push(match (&policy.read, ll) {
            (ReadPolicy::Everywhere, _) => layer(
                "read allowlist",
                true,
                "policy reads everywhere (no allowlist requested)".into(),
            ),
            (ReadPolicy::Allowlist(_), Some(abi)) => layer(
                "read allowlist",
                true,
                format!("Landlock ABI {abi} read rules"),
            ),
            (ReadPolicy::Allowlist(_), None) => layer(
                "read allowlist",
                false,
                "Landlock unavailable: commands can read anything the user can".into(),
            ),
        });
        layers.push(match policy.network {
            NetworkPolicy::Full => layer("network", true, "policy allows the network".into()),
            NetworkPolicy::Off => {
                let mut how = Vec::new();
                if netns {
                    how.push("private network namespace");
                }
                if self.seccomp {
                    how.push("seccomp socket-family allowlist (AF_UNIX, AF_NETLINK)");
                }
                if ll.is_some_and(|abi| abi >= 4) {
                    how.push("Landlock TCP bind/connect denied");
                }
                let enforced = netns || self.seccomp;
                let detail = if enforced {
                    how.join(" + ")
                } else {
                    "no network namespace and no seccomp: network is open".into()
                };
                layer("network", enforced, detail)
            }
            NetworkPolicy::LoopbackOnly => {
                let mediated = netns && self.seccomp && self.loopback_mediation();
                layer(
                    "network",
                    netns,
                    if mediated {
                        "private network namespace; connect() to the host's loopback \
                         (127.0.0.0/8, ::1) made by the launcher's seccomp supervisor"
                            .into()
                    } else if netns {
                        "private network namespace with only `lo` up: the host's loopback \
                         services are unreachable (no seccomp user notification)"
                            .into()
                    } else if self.seccomp {
                        "no network namespace: degraded to network off (seccomp)".into()
                    } else {
                        "no network namespace and no seccomp: network is open".into()
                    },
                )
            }
        });
        layers.push(match policy.unix_sockets {
            UnixSockets::Allow => layer("unix sockets", true, "policy allows them".into()),
            UnixSockets::Deny => layer(
                "unix sockets",
                self.seccomp,
                if self.seccomp {
                    "seccomp denies socket(AF_UNIX); socketpair allowed".into()
                } else {
                    "seccomp unavailable: pathname sockets reachable".into()
                },
            ),
        });
        layers.push(if self.pid_namespaces {
            layer(
                "process tree kill",
                true,
                "setsid + pid namespace: the whole tree dies with its init".into(),
            )
        } else {
            layer(
                "process tree kill",
                false,
                "setsid + process-group kill only: `setsid` escapees survive".into(),
            )
        });
        layers.extend(self.hardening_layers(policy));
        layers.push(layer(
            "rlimits",
            true,
            if self.running_as_root {
                "CPU, DATA, FSIZE, CORE; NPROC is not enforced for root".into()
            } else {
                "CPU, DATA, FSIZE, CORE, NPROC".into()
            },
        ));
        layers.push(layer(
            "env",
            true,
            "environment cleared; only the policy's allowlist and explicit values".into(),
        ));
        layers
    }
}

impl Capabilities {
    /// Whether loopback-only can reach the host's loopback: a listener and Linux ≥ 5.9.
    fn loopback_mediation(&self) -> bool {
        self.seccomp_listener && crate::exec::kernel_supports_mediation(&self.kernel)
    }

    /// Whether the helper can make a namespace the probe found (without a user namespace only
    /// root can).
    fn can_ns(&self, available: bool) -> bool {
        available && (self.user_namespaces || self.running_as_root)
    }

    /// The private `/proc`, git protection, the privilege and keyring filters.
    fn hardening_layers(&self, policy: &SandboxPolicy) -> Vec<Layer> {
        let layer = |name: &str, enforced: bool, detail: &str| Layer {
            name: name.into(),
            enforced,
            detail: detail.into(),
        };
        let pid = self.can_ns(self.pid_namespaces);
        let mount = self.can_ns(self.mount_namespaces);
        let allowlist = matches!(policy.read, ReadPolicy::Allowlist(_));
        let mut layers = vec![if pid && mount && self.private_proc {
            layer(
                "private /proc",
                true,
                "a procfs of the command's own pid namespace: other processes are invisible",
            )
        } else if self.landlock_abi.is_some() && allowlist {
            layer(
                "private /proc",
                true,
                "no procfs of its own (pid namespace or mount refused): Landlock limits /proc \
                 to the command's own entry and system files (its children cannot read their \
                 /proc/self)",
            )
        } else {
            layer(
                "private /proc",
                false,
                "no private /proc and no Landlock allowlist: other processes' command lines are \
                 readable",
            )
        }];
        layers.push(if !policy.protect_git {
            layer(
                "git protection",
                true,
                "policy lets commands change .git/config and hooks",
            )
        } else if mount {
            layer(
                "git protection",
                true,
                "mount namespace: .git bound onto itself, config/hooks/modules/worktrees \
                 read-only; a created .git, commondir or config.worktree is undone after the \
                 command",
            )
        } else {
            layer(
                "git protection",
                false,
                "no mount namespace: .git/config and hooks are writable by commands",
            )
        });
        layers.push(layer(
            "privilege filter",
            self.seccomp,
            if self.seccomp {
                "seccomp denies set-user-ID/set-group-ID modes (chmod, open, mkdir, mknod), \
                 device nodes, extended attributes (file capabilities, ACLs) and mounts"
            } else {
                "seccomp unavailable: commands could leave set-ID files, file capabilities and \
                 device nodes"
            },
        ));
        layers.push(layer(
            "kernel keyring",
            self.seccomp,
            if self.seccomp {
                "seccomp denies add_key, request_key and keyctl (ENOSYS)"
            } else {
                "seccomp unavailable: the caller's session and user keyrings are readable"
            },
        ));
        layers
    }
}

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`.
#[allow(unsafe_code)]
fn landlock_abi() -> Option<u8> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attribute pointer and size 0 this syscall only returns the ABI
    // version (or an error); it touches no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (v > 0).then(|| u8::try_from(v).unwrap_or(u8::MAX))
}

fn openat2_available() -> bool {
    use rustix::fs::{CWD, Mode, OFlags, ResolveFlags};
    match rustix::fs::openat2(
        CWD,
        ".",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH,
    ) {
        Ok(_) => true,
        Err(e) => e != rustix::io::Errno::NOSYS,
    }
}

fn seccomp_available() -> bool {
    // `Seccomp:` appears in /proc/self/status when the kernel is built with CONFIG_SECCOMP.
    std::fs::read_to_string("/proc/self/status")
        .map(|s| s.lines().any(|l| l.starts_with("Seccomp:")))
        .unwrap_or(false)
}
