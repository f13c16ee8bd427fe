//! [`SandboxPolicy`]: what the user allows the built-in tools to do.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What the built-in tools may do. Set by the user (flags, config), never by the model: no tool
/// input can widen or lower it.
///
/// ```
/// use std::time::Duration;
/// use toolsmith_sandbox::{NetworkPolicy, SandboxPolicy};
///
/// let policy = SandboxPolicy::new("/work/project");
/// assert_eq!(policy.network, NetworkPolicy::Off);
/// assert_eq!(policy.limits.timeout, Duration::from_secs(60));
/// assert_eq!(policy.limits.output_bytes, 200_000);
/// assert!(policy.protect_git);
/// assert!(policy.validate().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxPolicy {
    /// The directory the tools work in; everything they write is beneath it.
    pub root: PathBuf,
    /// Other directories commands may write to (a per-session temporary directory, say).
    #[serde(default)]
    pub extra_writable: Vec<PathBuf>,
    /// Where commands may read.
    #[serde(default)]
    pub read: ReadPolicy,
    /// What network commands get.
    #[serde(default)]
    pub network: NetworkPolicy,
    /// Whether commands may connect to pathname Unix sockets (`docker.sock`, ssh-agent…).
    #[serde(default)]
    pub unix_sockets: UnixSockets,
    /// Resource limits.
    #[serde(default)]
    pub limits: Limits,
    /// The environment commands see.
    #[serde(default)]
    pub env: EnvPolicy,
    /// What to do when this machine cannot enforce a layer.
    #[serde(default)]
    pub strictness: Strictness,
    /// Whether the workspace's git metadata that decides what git *executes* for the user
    /// (`.git/config`, `.git/hooks`, submodule and worktree configuration, the `.git` entry
    /// itself) is out of reach of the tools (default `true`). Turning it off lets a model plant
    /// code that the user's next `git status` runs outside any sandbox.
    #[serde(default = "yes")]
    pub protect_git: bool,
}

fn yes() -> bool {
    true
}

impl SandboxPolicy {
    /// The default policy for `root`: read the system and toolchains, write only beneath the root,
    /// no network, no Unix sockets, the default limits and environment, fail closed.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        SandboxPolicy {
            root: root.into(),
            extra_writable: Vec::new(),
            read: ReadPolicy::default(),
            network: NetworkPolicy::default(),
            unix_sockets: UnixSockets::default(),
            limits: Limits::default(),
            env: EnvPolicy::default(),
            strictness: Strictness::default(),
            protect_git: true,
        }
    }

    /// Checks the limits against their caps.
    ///
    /// # Errors
    ///
    /// The first limit out of bounds, with Smithers' message where it has one
    /// (`timeoutMs exceeds 3600000.`, `maxOutputBytes exceeds 10485760.`…).
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.limits.validate()
    }

    /// The directories commands may read: the read allowlist (or `/`) plus the root and the
    /// extra writable directories.
    pub fn readable_paths(&self) -> Vec<PathBuf> {
        let mut paths = match &self.read {
            ReadPolicy::Everywhere => vec![PathBuf::from("/")],
            ReadPolicy::Allowlist(paths) => paths.clone(),
        };
        paths.push(self.root.clone());
        paths.extend(self.extra_writable.iter().cloned());
        paths
    }

    /// The directories commands may write: the root and the extra writable directories.
    pub fn writable_paths(&self) -> Vec<PathBuf> {
        let mut paths = vec![self.root.clone()];
        paths.extend(self.extra_writable.iter().cloned());
        paths
    }
}

/// Where commands may read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ReadPolicy {
    /// Anywhere the user can read. Protects integrity, not secrets: `~/.ssh` stays readable.
    Everywhere,
    /// Only these paths (plus the root and the extra writable directories).
    Allowlist(Vec<PathBuf>),
}

impl Default for ReadPolicy {
    /// [`ReadPolicy::system_paths`] for `$HOME`.
    fn default() -> Self {
        ReadPolicy::Allowlist(ReadPolicy::system_paths(
            std::env::var_os("HOME").as_deref().map(Path::new),
        ))
    }
}

impl ReadPolicy {
    /// The system part of the default read allowlist: what programs and the usual toolchains
    /// need to start and run, and nothing that holds a secret.
    ///
    /// A directory grants everything beneath it; a file grants that file alone (Landlock rules
    /// name single files too). A symbolic link grants its target at launch time, and opening a
    /// path through a link is checked on the file it resolves to (so `/dev/stdin`, `/dev/fd` and
    /// `/etc/mtab` work through `/proc`, and `/etc/localtime` through `/usr/share/zoneinfo`). An
    /// entry ending in `*` names every entry of its directory whose name starts with what comes
    /// before the `*` (`/etc/python3*`: `python3`, `python3.11`…). Paths that do not exist grant
    /// nothing.
    ///
    /// Left out on purpose: the rest of `/etc` (`shadow`, `gshadow`, `sudoers`, `ssh` host keys,
    /// `ssl/private`, and configuration that may carry credentials: `npmrc`, `pip.conf`,
    /// `wgetrc`, `maven`, `environment`), every other device (`/dev/mem`, `/dev/kmsg`, consoles
    /// and ttys, disks, `/dev/pts` and `/dev/shm`, which other sessions use), and the rest of
    /// `/sys` and `/run`.
    pub const SYSTEM_PATHS: &'static [&'static str] = &[
        // Programs and libraries.
        "/usr",
        "/lib",
        "/lib64",
        "/lib32",
        "/libx32",
        "/bin",
        "/sbin",
        "/opt",
        // Processes (a private /proc where the launcher gives one), CPU topology for
        // `nproc`-style queries, the systemd-resolved stub `/etc/resolv.conf` may link to.
        "/proc",
        "/sys/devices/system/cpu",
        "/run/systemd/resolve",
        // Devices, by name.
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/random",
        "/dev/urandom",
        "/dev/tty",
        // The dynamic loader.
        "/etc/ld.so.cache",
        "/etc/ld.so.conf",
        "/etc/ld.so.conf.d",
        "/etc/ld.so.preload",
        // Users, groups and name resolution (no password hashes: those are in shadow).
        "/etc/passwd",
        "/etc/group",
        "/etc/nsswitch.conf",
        "/etc/hosts",
        "/etc/host.conf",
        "/etc/hostname",
        "/etc/resolv.conf",
        "/etc/gai.conf",
        "/etc/networks",
        "/etc/protocols",
        "/etc/services",
        // Time and locale.
        "/etc/localtime",
        "/etc/timezone",
        "/etc/locale.alias",
        "/etc/locale.conf",
        // TLS trust: the public CA certificates and OpenSSL's configuration (Debian, Fedora).
        "/etc/ssl/certs",
        "/etc/ssl/cert.pem",
        "/etc/ssl/openssl.cnf",
        "/etc/ca-certificates",
        "/etc/ca-certificates.conf",
        "/etc/pki/tls/certs",
        "/etc/pki/tls/cert.pem",
        "/etc/pki/tls/openssl.cnf",
        "/etc/pki/ca-trust/extracted",
        "/etc/crypto-policies/back-ends",
        // What system this is.
        "/etc/os-release",
        "/etc/lsb-release",
        "/etc/debian_version",
        // Shells and terminals.
        "/etc/shells",
        "/etc/profile",
        "/etc/profile.d",
        "/etc/bash.bashrc",
        "/etc/inputrc",
        "/etc/terminfo",
        // Data files and toolchain configuration (Debian's Python `sitecustomize` lives in
        // /etc/python3.N; Java's `conf` links into /etc/java-N-openjdk).
        "/etc/mime.types",
        "/etc/magic",
        "/etc/magic.mime",
        "/etc/fonts",
        "/etc/python3*",
        "/etc/perl",
        "/etc/gitconfig",
        "/etc/java-*",
    ];

    /// The home part of the default read allowlist, relative to the user's home directory:
    /// toolchain binaries and package caches, without the files that hold credentials
    /// (`~/.cargo/credentials.toml`, `~/.cargo/config.toml`, which may hold registry tokens, and
    /// everything else in the home directory: `~/.ssh`, `~/.aws`, `~/.npmrc`, `~/.netrc`…).
    pub const HOME_PATHS: &'static [&'static str] = &[
        ".cargo/bin",
        ".cargo/registry",
        ".cargo/git",
        ".rustup",
        // pyenv's shims run `libexec/pyenv`, which reads `version`, `versions` and its plugins.
        ".pyenv/bin",
        ".pyenv/libexec",
        ".pyenv/plugins",
        ".pyenv/pyenv.d",
        ".pyenv/shims",
        ".pyenv/versions",
        ".pyenv/version",
        ".nvm/versions",
        ".local/bin",
        ".local/lib",
    ];

    /// The default allowlist: [`SYSTEM_PATHS`](Self::SYSTEM_PATHS), then
    /// [`HOME_PATHS`](Self::HOME_PATHS) under `home`, with the `*` entries expanded (by listing
    /// their directory now). Paths that do not exist are kept: a missing path grants nothing.
    ///
    /// ```
    /// use std::path::{Path, PathBuf};
    /// use toolsmith_sandbox::ReadPolicy;
    ///
    /// let paths = ReadPolicy::system_paths(Some(Path::new("/home/me")));
    /// assert!(paths.contains(&PathBuf::from("/etc/passwd")));
    /// assert!(paths.contains(&PathBuf::from("/home/me/.cargo/registry")));
    /// assert!(!paths.contains(&PathBuf::from("/etc")));
    /// assert!(!paths.contains(&PathBuf::from("/home/me/.cargo")));
    /// ```
    pub fn system_paths(home: Option<&Path>) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        for entry in Self::SYSTEM_PATHS {
            expand(Path::new(entry), &mut paths);
        }
        if let Some(home) = home {
            for entry in Self::HOME_PATHS {
                expand(&home.join(entry), &mut paths);
            }
        }
        paths
    }
}

/// Pushes `entry`, or, when its last component ends in `*`, the entries of its directory that
/// start with the rest (sorted; none when the directory cannot be read).
fn expand(entry: &Path, out: &mut Vec<PathBuf>) {
    let prefix = entry
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix('*'));
    let (Some(prefix), Some(dir)) = (prefix, entry.parent()) else {
        out.push(entry.to_path_buf());
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut found: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(prefix))
        })
        .map(|e| dir.join(e.file_name()))
        .collect();
    found.sort();
    out.extend(found);
}

/// What network commands get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkPolicy {
    /// None at all: a private network namespace, TCP denied by Landlock, non-Unix sockets denied
    /// by seccomp.
    #[default]
    Off,
    /// The host's loopback services (a dev server on `127.0.0.1:3000`), as in Smithers, where
    /// loopback URLs are exempt when the network is off; nothing else.
    ///
    /// - **Reachable**: TCP `connect` to `127.0.0.0/8`, `::1`, `::ffff:127.0.0.0/104`, and
    ///   `0.0.0.0`/`::` (which Linux connects to as the local host) on the host — `localhost`
    ///   resolves there through `/etc/hosts`; and the command's own servers on its own `lo`
    ///   (a port it listens on itself stays its own).
    /// - **Blocked by the kernel**: the command runs in a private network namespace, so every
    ///   socket it makes is there: any other address (the host's public ones included), UDP
    ///   and DNS, raw and packet sockets, listeners (`bind` on `0.0.0.0`, `listen` without
    ///   `bind`: nothing on the host can reach them), `sendto`/`MSG_FASTOPEN`, and the host's
    ///   abstract Unix sockets (per namespace; Landlock ABI ≥ 6 scopes them too).
    ///   `io_uring` stays denied.
    /// - **How**: a seccomp filter sends each `connect` to a supervisor thread in toolsmith
    ///   (user notification). For a loopback TCP address nothing in the sandbox listens on, it
    ///   connects a socket of its own in the host's namespace to the address it read and
    ///   checked, and puts that socket in place of the command's; it never lets the kernel
    ///   re-read an address it approved. Every other `connect` runs in the private namespace.
    ///   Not carried over to the host socket: options set before `connect` other than
    ///   `TCP_NODELAY`, `SO_KEEPALIVE` and `O_NONBLOCK`, and a `bind` before `connect` (that
    ///   socket stays in the sandbox).
    /// - **Fallback**: without seccomp user notification (Linux < 5.9, or the helper's probe
    ///   failed: [`Capabilities::seccomp_listener`](crate::Capabilities::seccomp_listener)),
    ///   or if the supervisor cannot start, the command gets its namespace's own `lo` only, and
    ///   the result's warnings start with `loopback-only network reaches the sandbox's own
    ///   loopback only, not the host's loopback services`; `Capabilities::report` (what
    ///   `toolsmith doctor` prints) says which. Without a network namespace, network is off
    ///   instead (a missing layer: fail-closed policies refuse to run).
    /// - **Cost**: a mediated connect took a median ~115 µs against ~12 µs direct (debug
    ///   build, 2 shared cores; `loopback_attacks::a_mediated_connect_costs_tens_of_microseconds`);
    ///   other `connect` calls (Unix sockets) pay one round trip to the supervisor. `Off` and
    ///   `Full` pay nothing.
    LoopbackOnly,
    /// The host's network.
    Full,
}

/// Whether commands may create Unix sockets to connect to pathname sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnixSockets {
    /// `socket(AF_UNIX)` is denied; `socketpair` still works (asyncio needs it).
    #[default]
    Deny,
    /// Allowed.
    Allow,
}

/// What to do when this machine cannot enforce a layer of the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strictness {
    /// Refuse to run commands the machine cannot confine as the policy says.
    #[default]
    FailClosed,
    /// Run with what is available, and warn.
    BestEffort,
}

/// The hard cap on the wall-clock timeout (one hour, as in Smithers).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// The hard cap on captured output (10 MiB, as in Smithers).
pub const MAX_OUTPUT_BYTES: usize = 10 * 1024 * 1024;

/// Resource limits of the built-in tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Wall-clock limit of a command (default 60 s, at most 1 h).
    #[serde(with = "millis")]
    pub timeout: Duration,
    /// CPU time of a command (default: none beyond the wall clock).
    #[serde(default, with = "opt_millis", skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Duration>,
    /// Data segment size of a command, `RLIMIT_DATA` (default 1 GiB).
    pub data_bytes: Option<u64>,
    /// Largest file a command may write, `RLIMIT_FSIZE` (default 1 GiB).
    pub file_size_bytes: Option<u64>,
    /// Processes a command may add to the user's count, `RLIMIT_NPROC` (default 512). The
    /// kernel ignores it for root: [`tree_processes`](Self::tree_processes) bounds root too.
    pub processes: Option<u32>,
    /// Memory of a command's whole process tree, swap included, enforced by a control group
    /// (default 2 GiB, at least [`Limits::MIN_TREE_MEMORY_BYTES`]; `null`: none). `RLIMIT_DATA` caps
    /// each process alone, so without it a tree of processes can take all of the machine's
    /// memory. When it is exceeded the kernel's OOM killer kills a process of the tree.
    #[serde(default = "default_tree_memory_bytes")]
    pub tree_memory_bytes: Option<u64>,
    /// Processes *and threads* alive at once in a command's whole tree, enforced by a control
    /// group's `pids.max` (default 1024, at least [`Limits::MIN_TREE_PROCESSES`]; `null`: none); it
    /// holds for root, unlike `RLIMIT_NPROC`. A fork beyond it fails with `EAGAIN`.
    #[serde(default = "default_tree_processes")]
    pub tree_processes: Option<u32>,
    /// Bytes of output kept per stream, and the largest file or content the file tools handle
    /// (default 200 000, at most 10 MiB).
    pub output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(60),
            cpu: None,
            data_bytes: Some(1 << 30),
            file_size_bytes: Some(1 << 30),
            processes: Some(512),
            tree_memory_bytes: default_tree_memory_bytes(),
            tree_processes: default_tree_processes(),
            output_bytes: 200_000,
        }
    }
}

fn default_tree_memory_bytes() -> Option<u64> {
    Some(2 << 30)
}

fn default_tree_processes() -> Option<u32> {
    Some(1024)
}

impl Limits {
    /// The smallest [`tree_memory_bytes`](Self::tree_memory_bytes): below it the launch itself
    /// (the helper and a shell) risks the OOM killer.
    pub const MIN_TREE_MEMORY_BYTES: u64 = 32 << 20;

    /// The smallest [`tree_processes`](Self::tree_processes): the helper, the init of the
    /// command's pid namespace, the command and a child of it.
    pub const MIN_TREE_PROCESSES: u32 = 4;

    /// Checks every limit against its bounds.
    ///
    /// # Errors
    ///
    /// Smithers' messages: `timeoutMs must be positive.`, `timeoutMs exceeds 3600000.`,
    /// `maxOutputBytes must be positive.`, `maxOutputBytes exceeds 10485760.`; and
    /// `treeMemoryBytes must be at least 33554432.`, `treeProcesses must be at least 4.`
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.timeout.is_zero() {
            return Err(PolicyError("timeoutMs must be positive.".into()));
        }
        if self.timeout > MAX_TIMEOUT {
            return Err(PolicyError(format!(
                "timeoutMs exceeds {}.",
                MAX_TIMEOUT.as_millis()
            )));
        }
        if self.output_bytes == 0 {
            return Err(PolicyError("maxOutputBytes must be positive.".into()));
        }
        if self.output_bytes > MAX_OUTPUT_BYTES {
            return Err(PolicyError(format!(
                "maxOutputBytes exceeds {MAX_OUTPUT_BYTES}."
            )));
        }
        if self
            .tree_memory_bytes
            .is_some_and(|b| b < Self::MIN_TREE_MEMORY_BYTES)
        {
            return Err(PolicyError(format!(
                "treeMemoryBytes must be at least {}.",
                Self::MIN_TREE_MEMORY_BYTES
            )));
        }
        if self
            .tree_processes
            .is_some_and(|p| p < Self::MIN_TREE_PROCESSES)
        {
            return Err(PolicyError(format!(
                "treeProcesses must be at least {}.",
                Self::MIN_TREE_PROCESSES
            )));
        }
        Ok(())
    }
}

/// The environment commands see: nothing of the runtime's own (API keys!) but the names
/// allowed, plus explicit values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvPolicy {
    /// Variables passed through from the runtime's environment when set.
    pub allow: Vec<String>,
    /// Variables set explicitly (they win over passed-through ones).
    #[serde(default)]
    pub set: Vec<(String, String)>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy {
            allow: ["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ"]
                .into_iter()
                .map(String::from)
                .collect(),
            set: Vec::new(),
        }
    }
}

/// A policy that cannot be used as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError(pub String);

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PolicyError {}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

mod opt_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&(d.as_millis() as u64)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(d).map(|ms| ms.map(Duration::from_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_checked_with_smithers_messages() {
        let mut limits = Limits::default();
        assert!(limits.validate().is_ok());
        limits.timeout = Duration::from_millis(3_600_001);
        assert_eq!(
            limits.validate().unwrap_err().0,
            "timeoutMs exceeds 3600000."
        );
        limits.timeout = Duration::ZERO;
        assert_eq!(
            limits.validate().unwrap_err().0,
            "timeoutMs must be positive."
        );
        limits.timeout = MAX_TIMEOUT;
        limits.output_bytes = MAX_OUTPUT_BYTES + 1;
        assert_eq!(
            limits.validate().unwrap_err().0,
            "maxOutputBytes exceeds 10485760."
        );
        limits.output_bytes = 0;
        assert_eq!(
            limits.validate().unwrap_err().0,
            "maxOutputBytes must be positive."
        );
    }

    #[test]
    fn tree_limits_have_floors_and_can_be_turned_off() {
        let mut limits = Limits::default();
        assert_eq!(limits.tree_memory_bytes, Some(2 << 30));
        assert_eq!(limits.tree_processes, Some(1024));
        limits.tree_memory_bytes = Some(Limits::MIN_TREE_MEMORY_BYTES - 1);
        assert_eq!(
            limits.validate().unwrap_err().0,
            "treeMemoryBytes must be at least 33554432."
        );
        limits.tree_memory_bytes = Some(Limits::MIN_TREE_MEMORY_BYTES);
        limits.tree_processes = Some(3);
        assert_eq!(
            limits.validate().unwrap_err().0,
            "treeProcesses must be at least 4."
        );
        limits.tree_processes = None;
        limits.tree_memory_bytes = None;
        assert!(limits.validate().is_ok());
    }

    #[test]
    fn tree_limits_default_when_absent_and_are_off_when_null() {
        let absent: Limits = serde_json::from_str(
            r#"{"timeout":1000,"dataBytes":null,"fileSizeBytes":null,"processes":null,"outputBytes":10}"#,
        )
        .unwrap();
        assert_eq!(absent.tree_memory_bytes, Some(2 << 30));
        assert_eq!(absent.tree_processes, Some(1024));
        let off: Limits = serde_json::from_str(
            r#"{"timeout":1000,"dataBytes":null,"fileSizeBytes":null,"processes":null,"outputBytes":10,"treeMemoryBytes":null,"treeProcesses":null}"#,
        )
        .unwrap();
        assert_eq!((off.tree_memory_bytes, off.tree_processes), (None, None));
        let json = serde_json::to_value(Limits::default()).unwrap();
        assert_eq!(json["treeMemoryBytes"], 2u64 << 30);
        assert_eq!(json["treeProcesses"], 1024);
    }

    #[test]
    fn the_default_allowlist_names_files_not_secret_holding_directories() {
        let paths = ReadPolicy::system_paths(Some(Path::new("/h")));
        for wide in ["/etc", "/dev", "/h/.cargo", "/h/.pyenv", "/h/.nvm", "/h"] {
            assert!(!paths.contains(&PathBuf::from(wide)), "{wide}");
        }
        for secret in [
            "/etc/shadow",
            "/etc/ssl/private",
            "/h/.cargo/credentials.toml",
        ] {
            assert!(
                !paths.iter().any(|p| Path::new(secret).starts_with(p)),
                "{secret}"
            );
        }
        for needed in [
            "/usr",
            "/proc",
            "/dev/null",
            "/etc/passwd",
            "/h/.cargo/registry",
        ] {
            assert!(paths.contains(&PathBuf::from(needed)), "{needed}");
        }
        // Entries ending in `*` are expanded, never kept literally.
        assert!(!paths.iter().any(|p| p.to_string_lossy().contains('*')));
    }

    #[test]
    fn star_entries_expand_to_the_matching_names() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["python3", "python3.11", "python2", "perl"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        let mut out = Vec::new();
        expand(&dir.path().join("python3*"), &mut out);
        assert_eq!(
            out,
            [dir.path().join("python3"), dir.path().join("python3.11")]
        );
        expand(&dir.path().join("missing/x*"), &mut out);
        assert_eq!(out.len(), 2);
        expand(Path::new("/no/such/file"), &mut out);
        assert_eq!(out[2], Path::new("/no/such/file"));
    }

    #[test]
    fn readable_and_writable_paths_include_the_root_and_extras() {
        let mut policy = SandboxPolicy::new("/w");
        policy.extra_writable.push("/tmp/session".into());
        policy.read = ReadPolicy::Allowlist(vec!["/usr".into()]);
        assert_eq!(
            policy.readable_paths(),
            [PathBuf::from("/usr"), "/w".into(), "/tmp/session".into()]
        );
        assert_eq!(
            policy.writable_paths(),
            [PathBuf::from("/w"), "/tmp/session".into()]
        );
    }

    #[test]
    fn the_policy_round_trips_through_json() {
        let policy = SandboxPolicy::new("/w");
        let json = serde_json::to_string(&policy).unwrap();
        let back: SandboxPolicy = serde_json::from_str(&json).unwrap();
        assert_eq!(back, policy);
    }
}
