//! [`Holder`]: the process that holds a running thread, and whether it is gone.

use serde::{Deserialize, Serialize};

/// The process that claimed a thread ([`Store::claim`](crate::Store::claim)): its host, its
/// pid and the time it started. A holder on this host whose process has exited (or whose pid
/// names another process now) will never write again, so its thread can be taken over at once
/// instead of once its lease has lapsed; a holder on another host is not known to be gone.
///
/// ```
/// use toolsmith_store::Holder;
///
/// let me = Holder::current();
/// assert_eq!(me.pid, std::process::id());
/// assert!(!me.is_gone());
/// let before = Holder { started: me.started.wrapping_sub(1), ..me.clone() };
/// assert!(before.is_gone(), "this pid had another process before");
/// let elsewhere = Holder { host: "another host".into(), pid: u32::MAX, ..me };
/// assert!(!elsewhere.is_gone(), "a process on another host may still be running");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    /// The host, as one identity: its name, its boot (`/proc/sys/kernel/random/boot_id`, so
    /// that a host rebooted is another host) and its process-id namespace (so that two
    /// containers sharing a kernel and a name are two hosts, their pids being their own).
    /// Empty when they could not be read: such a holder is never known to be gone.
    pub host: String,
    /// The process id.
    pub pid: u32,
    /// When the process started, in clock ticks since the boot (field 22 of
    /// `/proc/<pid>/stat`): a pid used again by a later process has a later start.
    pub started: u64,
}

/// Where a process stands, as `/proc` tells.
#[derive(Debug, PartialEq, Eq)]
enum Process {
    /// Running (or stopped), started at this time.
    Alive(u64),
    /// Exited (a zombie waiting for its parent included), or no such process.
    Gone,
    /// Cannot be told (`/proc` unreadable).
    Unknown,
}

impl Holder {
    /// This process, on this host.
    pub fn current() -> Holder {
        // Read once per process (four files of /proc: 2 % of a service's CPU when read at every
        // claim); a forked child has another pid and reads its own.
        static CURRENT: std::sync::OnceLock<Holder> = std::sync::OnceLock::new();
        let pid = std::process::id();
        let cached = CURRENT.get_or_init(|| Holder::read(pid));
        if cached.pid == pid {
            cached.clone()
        } else {
            Holder::read(pid)
        }
    }

    /// The holder of process `pid` of this host, read from `/proc`.
    fn read(pid: u32) -> Holder {
        let started = match process(pid) {
            Process::Alive(started) => started,
            Process::Gone | Process::Unknown => 0,
        };
        Holder {
            host: host().unwrap_or_default(),
            pid,
            started,
        }
    }

    /// Whether the process is known to be gone: it ran on this host, and its pid names no
    /// process now, an exited one, or one that started at another time. A holder on another
    /// host (or one whose host could not be told) is not known to be gone.
    pub fn is_gone(&self) -> bool {
        if self.host.is_empty() || host().as_deref() != Some(self.host.as_str()) {
            return false;
        }
        match process(self.pid) {
            Process::Alive(started) => started != self.started,
            Process::Gone => true,
            Process::Unknown => false,
        }
    }
}

/// This host's identity: name, boot id and process-id namespace. `None` when any of them
/// cannot be read (no `/proc`).
fn host() -> Option<String> {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let name = read("/proc/sys/kernel/hostname")?;
    let boot = read("/proc/sys/kernel/random/boot_id")?;
    let pids = std::fs::read_link("/proc/self/ns/pid").ok()?;
    Some(format!(
        "{}/{}/{}",
        name.trim(),
        boot.trim(),
        pids.to_string_lossy()
    ))
}

/// Where process `pid` stands.
fn process(pid: u32) -> Process {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => parse_stat(&stat).map_or(Process::Unknown, |(state, started)| {
            // Zombie, or dead: it will never write again.
            if matches!(state, 'Z' | 'X' | 'x') {
                Process::Gone
            } else {
                Process::Alive(started)
            }
        }),
        // No entry: no such process, unless `/proc` hides other users' processes
        // (`hidepid`); a signal 0 tells those apart.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => match signal_zero(pid) {
            Some(false) => Process::Gone,
            Some(true) | None => Process::Unknown,
        },
        Err(_) => Process::Unknown,
    }
}

/// Whether a process `pid` exists, by sending it no signal (`kill(pid, 0)`): `None` when that
/// cannot tell.
fn signal_zero(pid: u32) -> Option<bool> {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)?;
    match rustix::process::test_kill_process(pid) {
        Ok(()) | Err(rustix::io::Errno::PERM) => Some(true),
        Err(rustix::io::Errno::SRCH) => Some(false),
        Err(_) => None,
    }
}

/// The state (field 3) and start time (field 22) of a `/proc/<pid>/stat` line. The command
/// name (field 2) is in parentheses and may hold spaces and parentheses itself: the fields
/// after it are counted from its last `)`.
fn parse_stat(stat: &str) -> Option<(char, u64)> {
    let (_, after) = stat.rsplit_once(')')?;
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    // Fields 4 to 21, then 22.
    let started = fields.nth(22 - 4)?.parse().ok()?;
    Some((state, started))
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000 10 18446744073709551615";
        assert_eq!(parse_stat(stat), Some(('S', 987654)));
        assert_eq!(parse_stat("4242 (x) Z 1"), None, "too short");
    }

    /// A child that sleeps, as a holder.
    fn sleeper() -> (std::process::Child, Holder) {
        let child = Command::new("sleep")
            .arg("30")
            .stdin(Stdio::null())
            .spawn()
            .expect("sleep runs");
        let Process::Alive(started) = process(child.id()) else {
            panic!("the child is alive")
        };
        let holder = Holder {
            pid: child.id(),
            started,
            ..Holder::current()
        };
        (child, holder)
    }

    #[test]
    fn a_holder_is_gone_once_its_process_exits_even_before_it_is_reaped() {
        let me = Holder::current();
        assert!(!me.host.is_empty(), "this host can be told: {me:?}");
        assert!(!me.is_gone(), "this process is alive");

        let (mut child, holder) = sleeper();
        assert!(!holder.is_gone(), "a live child is not gone");
        child.kill().unwrap();
        // Killed, not yet waited for: a zombie once the kernel has finished with it.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !holder.is_gone() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(holder.is_gone(), "a killed child is gone while a zombie");
        child.wait().unwrap();
        assert!(holder.is_gone(), "and once reaped");

        let (mut child, holder) = sleeper();
        let reused = Holder {
            started: holder.started + 1,
            ..holder.clone()
        };
        assert!(
            reused.is_gone(),
            "its pid names another process than it did"
        );
        let elsewhere = Holder {
            host: format!("{}-other", holder.host),
            ..holder
        };
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!elsewhere.is_gone(), "on another host nothing is known");
        let unknown = Holder {
            host: String::new(),
            ..elsewhere
        };
        assert!(!unknown.is_gone(), "nor on a host that could not be told");
    }
}
