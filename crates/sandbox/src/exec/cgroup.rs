//! Control groups that bound a sandboxed command's whole process tree: its total memory and its
//! number of tasks, whatever uid runs it.
//!
//! Per-process rlimits do not bound a tree: `RLIMIT_DATA` caps each process separately, and the
//! kernel ignores `RLIMIT_NPROC` for root. A control group with the `memory` and `pids`
//! controllers caps the sum over every process in it, and everything a process forks stays in
//! its group.
//!
//! [`CgroupSupport::detect`] finds, without changing anything, where this process may create
//! groups:
//!
//! - **cgroup v2**: beneath its own cgroup when that cgroup already delegates `memory` and `pids`
//!   to its children (`cgroup.subtree_control`); otherwise beside it, beneath its parent, when
//!   the parent enables them and is writable (root, usually). A cgroup with processes cannot
//!   enable controllers for its children (the "no internal processes" rule), so toolsmith never
//!   writes `cgroup.subtree_control` itself.
//! - **cgroup v1**: beneath its own cgroup in the `memory` and `pids` hierarchies, when writable.
//!
//! Each controller is used from whichever hierarchy carries it (the kernel binds a controller to
//! exactly one). [`Cgroup::create`] makes a uniquely named group, `toolsmith-<pid>-<start>-<n>`
//! (the creating process's pid, its start time in clock ticks since boot, and a counter), sets
//! its limits, and first removes the groups of creators that no longer run (a toolsmith killed
//! before it could clean up). [`Cgroup::add`] moves a process in; [`Cgroup::kill_all`] kills
//! every process in it; dropping it kills what is left and removes it.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, ErrorKind};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::fs::Access;
use rustix::process::{Pid, PidfdFlags, Signal};

/// The prefix of every group toolsmith creates.
const PREFIX: &str = "toolsmith-";

/// How long [`Cgroup::kill_all`] keeps killing before it reports the processes it could not
/// kill (a process in uninterruptible sleep dies only when its I/O completes).
const KILL_DEADLINE: Duration = Duration::from_secs(2);

/// How long dropping a [`Cgroup`] retries `rmdir` while its last processes exit.
const RMDIR_DEADLINE: Duration = Duration::from_millis(500);

/// A cgroup interface version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgroupVersion {
    /// The legacy per-controller hierarchies (`/sys/fs/cgroup/memory`, `/sys/fs/cgroup/pids`).
    V1,
    /// The unified hierarchy.
    V2,
}

/// One hierarchy toolsmith can create groups in, and the controllers it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// The interface version.
    pub version: CgroupVersion,
    /// The directory new groups are created in.
    pub parent: PathBuf,
    /// Whether groups here get a memory limit (`memory.max`, `memory.limit_in_bytes`).
    pub memory: bool,
    /// Whether groups here get a task limit (`pids.max`).
    pub pids: bool,
}

/// What this machine lets this process do with control groups. Detection reads
/// `/proc/self/cgroup`, `/proc/self/mountinfo` and the cgroup files; it changes nothing.
///
/// ```
/// use toolsmith_sandbox::exec::CgroupSupport;
///
/// let support = CgroupSupport::detect();
/// // "cgroup v2 (memory, pids)", "cgroup v1 (memory, pids)", "none: …"
/// println!("tree limits: {}", support.describe());
/// assert_eq!(support.describe().starts_with("none"), !support.memory() && !support.pids());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupSupport {
    hierarchies: Vec<Hierarchy>,
    /// Why a controller is missing, when one is.
    missing: Option<String>,
}

impl CgroupSupport {
    /// Finds where this process may create groups with the `memory` and `pids` controllers.
    pub fn detect() -> CgroupSupport {
        let cgroups = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let euid = rustix::process::geteuid();
        detect_from(&cgroups, &mountinfo, euid.is_root(), euid.as_raw())
    }

    /// Whether groups can have a memory limit.
    pub fn memory(&self) -> bool {
        self.hierarchies.iter().any(|h| h.memory)
    }

    /// Whether groups can have a task limit.
    pub fn pids(&self) -> bool {
        self.hierarchies.iter().any(|h| h.pids)
    }

    /// The hierarchies groups are created in.
    pub fn hierarchies(&self) -> &[Hierarchy] {
        &self.hierarchies
    }

    /// One line for `toolsmith doctor`: `cgroup v2 (memory, pids)`, `cgroup v1 (memory, pids)`,
    /// `cgroup v1 (memory); pids: …`, or `none: …` with the reason.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for version in [CgroupVersion::V2, CgroupVersion::V1] {
            let controllers: Vec<&str> = self
                .hierarchies
                .iter()
                .filter(|h| h.version == version)
                .flat_map(|h| {
                    [(h.memory, "memory"), (h.pids, "pids")]
                        .into_iter()
                        .filter_map(|(on, name)| on.then_some(name))
                })
                .collect();
            if !controllers.is_empty() {
                let v = if version == CgroupVersion::V2 { 2 } else { 1 };
                parts.push(format!("cgroup v{v} ({})", controllers.join(", ")));
            }
        }
        let missing = self.missing.as_deref().unwrap_or("unavailable");
        if parts.is_empty() {
            return format!("none: {missing}");
        }
        let mut line = parts.join(", ");
        if self.missing.is_some() {
            line.push_str("; ");
            line.push_str(missing);
        }
        line
    }
}

/// A control group holding (part of) a sandboxed tree. Dropping it kills every process still in
/// it and removes it.
#[derive(Debug)]
pub struct Cgroup {
    /// One directory per hierarchy.
    dirs: Vec<PathBuf>,
    /// `cgroup.kill` (cgroup v2, Linux ≥ 5.14), when there is one.
    kill_file: Option<PathBuf>,
}

impl Cgroup {
    /// Creates a group in every hierarchy of `support`, with a memory limit of `memory_bytes`
    /// (swap included: v2 `memory.max` and `memory.swap.max = 0`, v1 `memory.limit_in_bytes` and
    /// `memory.memsw.limit_in_bytes` where swap accounting exists) and a limit of
    /// `max_tasks` processes and threads (`pids.max`). `None` leaves a limit off.
    ///
    /// Groups left behind by creators that no longer run are removed first (their processes
    /// killed).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Unsupported`] when a limit is asked for and no hierarchy carries its
    /// controller, or when there is no hierarchy at all; otherwise the failing `mkdir` or write,
    /// with the path in the message. Nothing is left behind on error.
    pub fn create(
        support: &CgroupSupport,
        memory_bytes: Option<u64>,
        max_tasks: Option<u32>,
    ) -> io::Result<Cgroup> {
        let unsupported = |what: &str| {
            io::Error::new(
                ErrorKind::Unsupported,
                format!("no cgroup {what} controller: {}", support.describe()),
            )
        };
        if support.hierarchies.is_empty() {
            return Err(unsupported("memory or pids"));
        }
        if memory_bytes.is_some() && !support.memory() {
            return Err(unsupported("memory"));
        }
        if max_tasks.is_some() && !support.pids() {
            return Err(unsupported("pids"));
        }
        let (pid, start) = own_identity()?;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("{PREFIX}{pid}-{start}-{n}");
        let mut group = Cgroup {
            dirs: Vec::new(),
            kill_file: None,
        };
        for h in &support.hierarchies {
            remove_stale(&h.parent);
            let dir = h.parent.join(&name);
            fs::create_dir(&dir).map_err(|e| with_path(e, "mkdir", &dir))?;
            // Pushed before the limits are written, so an error below removes it (Drop).
            group.dirs.push(dir.clone());
            match h.version {
                CgroupVersion::V2 => {
                    if h.memory
                        && let Some(bytes) = memory_bytes
                    {
                        write(&dir.join("memory.max"), &bytes.to_string())?;
                        let swap = dir.join("memory.swap.max");
                        if swap.exists() {
                            write(&swap, "0")?;
                        }
                    }
                    let kill = dir.join("cgroup.kill");
                    if kill.exists() {
                        group.kill_file = Some(kill);
                    }
                }
                CgroupVersion::V1 => {
                    if h.memory
                        && let Some(bytes) = memory_bytes
                    {
                        // memsw (memory + swap) must stay ≥ the memory limit: memory first.
                        write(&dir.join("memory.limit_in_bytes"), &bytes.to_string())?;
                        let memsw = dir.join("memory.memsw.limit_in_bytes");
                        if memsw.exists() {
                            write(&memsw, &bytes.to_string())?;
                        }
                    }
                }
            }
            if h.pids
                && let Some(tasks) = max_tasks
            {
                write(&dir.join("pids.max"), &tasks.to_string())?;
            }
        }
        Ok(group)
    }

    /// Moves process `pid` (all its threads) into the group, in every hierarchy. Add a process
    /// before it forks: children forked earlier stay where they are.
    ///
    /// # Errors
    ///
    /// The failing write to `cgroup.procs` (`ESRCH` when the process is gone).
    pub fn add(&self, pid: u32) -> io::Result<()> {
        for dir in &self.dirs {
            write(&dir.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// The group's directories, one per hierarchy.
    pub fn paths(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The processes in the group (in any of its hierarchies), without duplicates.
    ///
    /// # Errors
    ///
    /// A `cgroup.procs` that cannot be read.
    pub fn pids(&self) -> io::Result<BTreeSet<u32>> {
        let mut pids = BTreeSet::new();
        for dir in &self.dirs {
            pids.extend(read_pids(dir)?);
        }
        Ok(pids)
    }

    /// Kills every process in the group with `SIGKILL`, including those forked while it runs,
    /// and returns once the group is empty (a process that exited but was not yet reaped by its
    /// parent is no longer in it). Uses `cgroup.kill` where the kernel has it; otherwise signals
    /// every listed pid through a pidfd (checked to still be in the group, so a reused pid is
    /// never hit) and waits on the pidfds, until the group is empty.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TimedOut`] naming the survivors when processes are still there after 2 s;
    /// or a `cgroup.procs`/`cgroup.kill` that cannot be read or written.
    pub fn kill_all(&self) -> io::Result<()> {
        if let Some(kill) = &self.kill_file {
            write(kill, "1")?;
        }
        let deadline = Instant::now() + KILL_DEADLINE;
        loop {
            let listed = self.pids()?;
            if listed.is_empty() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    format!(
                        "processes {listed:?} survived SIGKILL in {}",
                        self.describe()
                    ),
                ));
            }
            // Open a pidfd for each, then check it is still in the group: a pid that exited
            // and was reused by an unrelated process in between is not listed any more.
            let fds: Vec<(u32, OwnedFd)> = listed
                .iter()
                .filter_map(|&p| Some((p, pidfd(p)?)))
                .collect();
            let still = self.pids()?;
            for (p, fd) in &fds {
                if still.contains(p) {
                    let _ = rustix::process::pidfd_send_signal(fd, Signal::KILL);
                }
            }
            wait_for_an_exit(&fds);
        }
    }

    fn describe(&self) -> String {
        self.dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = self.kill_all();
        for dir in &self.dirs {
            remove_dir(dir);
        }
    }
}

/// `rmdir`, retried while the group's last processes finish exiting.
fn remove_dir(dir: &Path) {
    let deadline = Instant::now() + RMDIR_DEADLINE;
    loop {
        match fs::remove_dir(dir) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(1));
            }
            _ => return,
        }
    }
}

/// Removes the groups in `parent` whose creator no longer runs, killing their processes.
fn remove_stale(parent: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(parse_name) else {
            continue;
        };
        let stale = match start_time(pid) {
            Ok(now) => now != start,
            Err(e) => e.kind() == ErrorKind::NotFound,
        };
        if stale {
            drop(Cgroup {
                dirs: vec![entry.path()],
                kill_file: Some(entry.path().join("cgroup.kill")).filter(|k| k.exists()),
            });
        }
    }
}

/// `(pid, start)` from `toolsmith-<pid>-<start>-<n>`.
fn parse_name(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix(PREFIX)?.split('-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    parts.next()?.parse::<u64>().ok()?;
    parts.next().is_none().then_some((pid, start))
}

/// This process's pid and start time (read once).
fn own_identity() -> io::Result<(u32, u64)> {
    static OWN: OnceLock<(u32, u64)> = OnceLock::new();
    if let Some(own) = OWN.get() {
        return Ok(*own);
    }
    let pid = std::process::id();
    let own = (pid, start_time(pid)?);
    Ok(*OWN.get_or_init(|| own))
}

/// The start time of `pid` in clock ticks after boot (`/proc/<pid>/stat`, field 22): with the
/// pid, it names a process for good, since pids are reused.
fn start_time(pid: u32) -> io::Result<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))?;
    parse_start_time(&stat).ok_or_else(|| {
        io::Error::new(
            ErrorKind::InvalidData,
            format!("/proc/{pid}/stat: no start time"),
        )
    })
}

/// Field 22 of a `/proc/<pid>/stat` line. The command name (field 2) is in parentheses and may
/// contain spaces and parentheses itself, so the fields are counted after the last `)`.
fn parse_start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 3 (the state) is the first after the name: field 22 is the 20th.
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// Waits until one of the processes behind `fds` has exited (a pidfd becomes readable), or
/// 10 ms: a fixed sleep instead cost ~1 ms per kill, measured on one `sleep` child.
#[allow(unsafe_code)]
fn wait_for_an_exit(fds: &[(u32, OwnedFd)]) {
    let mut polls: Vec<libc::pollfd> = fds
        .iter()
        .map(|(_, fd)| libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(fd),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    if polls.is_empty() {
        std::thread::sleep(Duration::from_millis(1));
        return;
    }
    // SAFETY: `polls` is a live array of `polls.len()` pollfd structures whose descriptors
    // stay open (owned by `fds`) for the duration of the call.
    unsafe {
        libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, 10);
    }
}

fn pidfd(pid: u32) -> Option<OwnedFd> {
    let pid = Pid::from_raw(i32::try_from(pid).ok()?)?;
    rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok()
}

/// The pids listed in `dir/cgroup.procs`.
fn read_pids(dir: &Path) -> io::Result<Vec<u32>> {
    let path = dir.join("cgroup.procs");
    let text = fs::read_to_string(&path).map_err(|e| with_path(e, "read", &path))?;
    Ok(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    fs::write(path, value).map_err(|e| with_path(e, &format!("write {value} to"), path))
}

fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// A cgroup filesystem mount, from `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    /// The cgroup path mounted there (`/` unless it is a bind mount of a subtree).
    root: String,
    /// Where it is mounted.
    point: PathBuf,
    /// `cgroup2` rather than `cgroup`.
    v2: bool,
    /// For v1, the controllers of the hierarchy (from the super options).
    controllers: Vec<String>,
}

/// The cgroup mounts in a `/proc/self/mountinfo` text.
fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let mut mounts = Vec::new();
    for line in text.lines() {
        // `id parent dev root point options [optional…] - fstype source superoptions`
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let fields: Vec<&str> = left.split(' ').collect();
        let right: Vec<&str> = right.split(' ').collect();
        let (Some(root), Some(point), Some(&fstype)) =
            (fields.get(3), fields.get(4), right.first())
        else {
            continue;
        };
        let v2 = match fstype {
            "cgroup2" => true,
            "cgroup" => false,
            _ => continue,
        };
        let controllers = right
            .get(2)
            .map(|opts| {
                opts.split(',')
                    .filter(|o| ["memory", "pids"].contains(o))
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        mounts.push(Mount {
            root: unescape(root),
            point: PathBuf::from(unescape(point)),
            v2,
            controllers,
        });
    }
    mounts
}

/// Undoes mountinfo's octal escapes (`\040` for a space…).
fn unescape(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(code) = s
                .get(i + 1..i + 4)
                .and_then(|o| u8::from_str_radix(o, 8).ok())
        {
            out.push(code);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `(controllers, path)` for each line of `/proc/self/cgroup` (`id:controllers:path`); the v2
/// line has no controllers.
fn parse_proc_cgroup(text: &str) -> Vec<(Vec<String>, String)> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            let controllers = controllers
                .split(',')
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect();
            Some((controllers, path.to_string()))
        })
        .collect()
}

/// The directory of cgroup `path` under `mount`, when the mount shows it.
fn dir_in(mount: &Mount, path: &str) -> Option<PathBuf> {
    let root = mount.root.trim_end_matches('/');
    let rel = path.strip_prefix(root)?;
    if !rel.is_empty() && !rel.starts_with('/') {
        return None;
    }
    Some(mount.point.join(rel.trim_start_matches('/')))
}

/// Whether this process may create groups in `dir` and move processes into them.
fn writable(dir: &Path) -> bool {
    rustix::fs::access(dir, Access::WRITE_OK).is_ok()
        && rustix::fs::access(dir.join("cgroup.procs"), Access::WRITE_OK).is_ok()
}

/// The controllers listed in a `cgroup.controllers`/`cgroup.subtree_control` file.
fn listed(path: &Path) -> (bool, bool) {
    let text = fs::read_to_string(path).unwrap_or_default();
    let has = |c: &str| text.split_ascii_whitespace().any(|w| w == c);
    (has("memory"), has("pids"))
}

fn detect_from(cgroups: &str, mountinfo: &str, root: bool, uid: u32) -> CgroupSupport {
    let mounts = parse_mountinfo(mountinfo);
    let own = parse_proc_cgroup(cgroups);
    let mut hierarchies = Vec::new();
    let mut problems = Vec::new();

    // cgroup v2: the line with no controllers.
    let v2_path = own.iter().find(|(c, _)| c.is_empty()).map(|(_, p)| p);
    if let Some(path) = v2_path
        && let Some(own_dir) = mounts
            .iter()
            .filter(|m| m.v2)
            .find_map(|m| dir_in(m, path).filter(|d| d.is_dir()))
    {
        // Beneath our own cgroup when it delegates to its children, else beside it.
        let beneath = listed(&own_dir.join("cgroup.subtree_control"));
        let beside = listed(&own_dir.join("cgroup.controllers"));
        let candidate = if beneath.0 || beneath.1 {
            Some((own_dir.clone(), beneath))
        } else if beside.0 || beside.1 {
            own_dir
                .parent()
                .filter(|p| p.join("cgroup.procs").exists())
                .map(|p| (p.to_path_buf(), beside))
        } else {
            None
        };
        match candidate {
            Some((parent, (memory, pids))) if writable(&parent) => hierarchies.push(Hierarchy {
                version: CgroupVersion::V2,
                parent,
                memory,
                pids,
            }),
            Some((parent, _)) => problems.push(not_writable(&parent, root, uid)),
            None => {}
        }
    }

    // cgroup v1: one hierarchy per mount carrying memory or pids.
    for mount in mounts.iter().filter(|m| !m.v2 && !m.controllers.is_empty()) {
        let Some(dir) = own
            .iter()
            .find(|(c, _)| mount.controllers.iter().all(|m| c.contains(m)))
            .and_then(|(_, path)| dir_in(mount, path))
            .filter(|d| d.is_dir())
        else {
            continue;
        };
        if writable(&dir) {
            let has = |c: &str| mount.controllers.iter().any(|m| m == c);
            hierarchies.push(Hierarchy {
                version: CgroupVersion::V1,
                parent: dir,
                memory: has("memory"),
                pids: has("pids"),
            });
        } else {
            problems.push(not_writable(&dir, root, uid));
        }
    }

    let support = CgroupSupport {
        hierarchies,
        missing: None,
    };
    let missing: Vec<&str> = [("memory", support.memory()), ("pids", support.pids())]
        .into_iter()
        .filter_map(|(name, ok)| (!ok).then_some(name))
        .collect();
    let missing = if missing.is_empty() {
        None
    } else if let Some(problem) = problems.first() {
        Some(problem.clone())
    } else {
        Some(format!("no {} controller available", missing.join(" or ")))
    };
    CgroupSupport { missing, ..support }
}

fn not_writable(dir: &Path, root: bool, uid: u32) -> String {
    if root {
        format!("{} is not writable", dir.display())
    } else {
        format!(
            "not root and nothing delegated to uid {uid} ({} is not writable)",
            dir.display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_time_is_field_22_even_with_parentheses_in_the_name() {
        let stat = "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    123456 1000 10 18446744073709551615";
        assert_eq!(parse_start_time(stat), Some(123456));
        assert_eq!(parse_start_time("42 (x) S 1"), None);
        let own = fs::read_to_string("/proc/self/stat").unwrap();
        assert!(parse_start_time(&own).is_some());
    }

    #[test]
    fn names_round_trip_and_others_are_ignored() {
        assert_eq!(parse_name("toolsmith-12-345-0"), Some((12, 345)));
        assert_eq!(parse_name("toolsmith-12-345"), None);
        assert_eq!(parse_name("toolsmith-12-345-0-1"), None);
        assert_eq!(parse_name("toolsmith-x-345-0"), None);
        assert_eq!(parse_name("session-1.scope"), None);
    }

    const HYBRID_MOUNTS: &str = "\
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 31 0:39 / /mnt/with\\040space rw - ext4 /dev/sda1 rw";

    #[test]
    fn mountinfo_yields_the_cgroup_mounts_and_their_controllers() {
        let mounts = parse_mountinfo(HYBRID_MOUNTS);
        assert_eq!(mounts.len(), 4);
        assert_eq!(mounts[0].point, Path::new("/sys/fs/cgroup/memory"));
        assert_eq!(mounts[0].controllers, ["memory"]);
        assert!(mounts[1].controllers.is_empty());
        assert_eq!(mounts[2].controllers, ["pids"]);
        assert!(mounts[3].v2);
        assert_eq!(unescape("/mnt/with\\040space"), "/mnt/with space");
    }

    #[test]
    fn own_cgroup_lines_are_parsed_and_located_under_their_mount() {
        let own = parse_proc_cgroup("8:pids:/a/b\n4:memory:/x\n1:cpu,cpuacct:/\n0::/u\n");
        assert_eq!(own[0], (vec!["pids".to_string()], "/a/b".to_string()));
        assert_eq!(own[3], (vec![], "/u".to_string()));
        let mount = Mount {
            root: "/".into(),
            point: "/sys/fs/cgroup/pids".into(),
            v2: false,
            controllers: vec!["pids".into()],
        };
        assert_eq!(
            dir_in(&mount, "/a/b"),
            Some(PathBuf::from("/sys/fs/cgroup/pids/a/b"))
        );
        let bind = Mount {
            root: "/a".into(),
            ..mount
        };
        assert_eq!(
            dir_in(&bind, "/a/b"),
            Some(PathBuf::from("/sys/fs/cgroup/pids/b"))
        );
        assert_eq!(dir_in(&bind, "/ab"), None);
        assert_eq!(dir_in(&bind, "/x"), None);
    }

    #[test]
    fn nothing_mounted_is_described_as_none() {
        let support = detect_from("0::/\n", "", false, 1000);
        assert!(support.hierarchies().is_empty());
        assert_eq!(
            support.describe(),
            "none: no memory or pids controller available"
        );
        let err = Cgroup::create(&support, Some(1 << 20), None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        assert_eq!(
            err.to_string(),
            "no cgroup memory or pids controller: none: no memory or pids controller available"
        );
    }

    #[test]
    fn descriptions_name_the_version_and_controllers() {
        let h = |version, memory, pids| Hierarchy {
            version,
            parent: "/p".into(),
            memory,
            pids,
        };
        let both = CgroupSupport {
            hierarchies: vec![h(CgroupVersion::V2, true, true)],
            missing: None,
        };
        assert_eq!(both.describe(), "cgroup v2 (memory, pids)");
        let v1 = CgroupSupport {
            hierarchies: vec![
                h(CgroupVersion::V1, true, false),
                h(CgroupVersion::V1, false, true),
            ],
            missing: None,
        };
        assert_eq!(v1.describe(), "cgroup v1 (memory, pids)");
        let partial = CgroupSupport {
            hierarchies: vec![h(CgroupVersion::V1, true, false)],
            missing: Some("no pids controller available".into()),
        };
        assert_eq!(
            partial.describe(),
            "cgroup v1 (memory); no pids controller available"
        );
    }
}
