//! The private temporary directory a [`Workspace`](crate::Workspace) gives its commands, and
//! the sweep that removes those of processes that died without removing theirs.
//!
//! Contract:
//!
//! - A directory is created as `<system temp>/toolsmith-<pid>-<start>-<pidns>-<n>` with mode
//!   0700 (set explicitly, whatever the umask): `<pid>` is this process's id, `<start>` its
//!   start time (field 22 of `/proc/self/stat`, clock ticks since boot), `<pidns>` the inode
//!   of its pid namespace (`/proc/self/ns/pid`) and `<n>` a counter. The workspace removes it
//!   when dropped; a process killed with SIGKILL cannot, so the next creation sweeps.
//! - The sweep removes an entry of the system temp directory only when all of these hold: its
//!   name has exactly that form (decimal numbers, none with a leading zero, nothing more), it
//!   is a directory and not a symbolic link (checked with `lstat`, never followed), it belongs
//!   to this process's user and has mode 0700, it was made in this pid namespace (a pid means
//!   nothing in another one: two containers may share `/tmp`), and its process is gone: no
//!   `/proc/<pid>`, or one with another start time (the pid was reused). Anything else —
//!   another user's directory, a link, a file, a name of another form, a live process's — is
//!   never touched. Names whose start time or namespace is 0 (unknown when they were made)
//!   are never removed.
//! - Without a readable `/proc` the directory is still made (start time and namespace 0) and
//!   nothing is swept: liveness cannot be judged.
//! - The sweep runs at most once per [`SWEEP_INTERVAL`] per process (it reads the whole temp
//!   directory; a server opening a workspace per request should not do that each time).
//!   Removal is `std::fs::remove_dir_all`, which does not follow symbolic links inside. The
//!   system temp directory is sticky (`/tmp`, mode 1777), so another user cannot rename a
//!   directory of ours between the check and the removal.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The prefix of every directory this module makes.
const PREFIX: &str = "toolsmith-";

/// The shortest time between two sweeps in one process.
pub(crate) const SWEEP_INTERVAL: Duration = Duration::from_secs(60);

/// Who made a directory: the fields of its name but the counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    /// The process id.
    pub(crate) pid: u32,
    /// The process's start time, in clock ticks since boot; 0 when unknown.
    pub(crate) start: u64,
    /// The inode of the process's pid namespace; 0 when unknown.
    pub(crate) pidns: u64,
}

impl Owner {
    /// This process.
    pub(crate) fn current() -> Owner {
        let pid = std::process::id();
        Owner {
            pid,
            start: start_time(pid).ok().flatten().unwrap_or(0),
            pidns: pid_namespace().unwrap_or(0),
        }
    }

    /// Whether liveness can be judged for directories of this owner's namespace.
    fn known(&self) -> bool {
        self.start != 0 && self.pidns != 0
    }
}

/// Creates this process's next private temporary directory (mode 0700) under the system's
/// temporary directory, after sweeping the stale ones of dead processes (at most once per
/// [`SWEEP_INTERVAL`]); its canonical path.
pub(crate) fn private_temp_dir() -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    static LAST_SWEEP: Mutex<Option<Instant>> = Mutex::new(None);
    let base = std::env::temp_dir();
    let me = Owner::current();
    let dir = loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(name(&me, n));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => break dir,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    // The umask may have taken bits away; the sweep recognises exactly 0700.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    let due = {
        let mut last = LAST_SWEEP.lock().unwrap_or_else(|e| e.into_inner());
        let due = last.is_none_or(|at| at.elapsed() >= SWEEP_INTERVAL);
        if due {
            *last = Some(Instant::now());
        }
        due
    };
    if due && me.known() {
        // The new directory tells the uid this process creates files as (no libc needed).
        let uid = std::fs::symlink_metadata(&dir)?.uid();
        sweep(&base, uid, &me);
    }
    std::fs::canonicalize(dir)
}

/// The name of `owner`'s `n`th directory.
pub(crate) fn name(owner: &Owner, n: u64) -> String {
    format!("{PREFIX}{}-{}-{}-{n}", owner.pid, owner.start, owner.pidns)
}

/// The owner a directory name records, if the name has exactly the form [`name`] makes.
pub(crate) fn parse_name(name: &str) -> Option<Owner> {
    let rest = name.strip_prefix(PREFIX)?;
    let fields: Vec<&str> = rest.split('-').collect();
    let [pid, start, pidns, n] = fields.as_slice() else {
        return None;
    };
    let number = |text: &str| -> Option<u64> {
        let value: u64 = text.parse().ok()?;
        // Exactly as `name` writes it: digits only, no sign, no leading zero.
        (value.to_string() == text).then_some(value)
    };
    number(n)?;
    Some(Owner {
        pid: u32::try_from(number(pid)?).ok()?,
        start: number(start)?,
        pidns: number(pidns)?,
    })
}

/// Removes the stale directories of `base` (see the module's contract) for the user `uid`,
/// judged from this process, `me`; how many it removed.
pub(crate) fn sweep(base: &Path, uid: u32, me: &Owner) -> usize {
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(owner) = file_name.to_str().and_then(parse_name) else {
            continue;
        };
        if owner.pidns != me.pidns || !owner.known() || owner == *me {
            continue;
        }
        let path = entry.path();
        // lstat: a symbolic link is a link, never the directory it names.
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_dir() || meta.uid() != uid || meta.mode() & 0o7777 != 0o700 {
            continue;
        }
        if is_alive(&owner) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => removed += 1,
            // Another process's sweep was first.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => warn_not_removed(&path, &e),
        }
    }
    removed
}

/// Whether the process that made a directory still runs: its pid exists with the same start
/// time. When that cannot be told (a read error other than "no such process"), alive.
fn is_alive(owner: &Owner) -> bool {
    match start_time(owner.pid) {
        Ok(Some(start)) => start == owner.start,
        Ok(None) => false,
        Err(_) => true,
    }
}

/// A stale directory that could not be removed: said once on standard error, since the
/// builtins crate logs nothing else and a leftover directory is only untidy.
fn warn_not_removed(path: &Path, error: &io::Error) {
    eprintln!(
        "toolsmith: could not remove the stale temporary directory {}: {error}",
        path.display()
    );
}

/// The start time of process `pid` (field 22 of `/proc/<pid>/stat`); `Ok(None)` when there
/// is no such process.
pub(crate) fn start_time(pid: u32) -> io::Result<Option<u64>> {
    let stat = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat,
        // ESRCH: the process exited while its file was being read.
        Err(e) if e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(3) => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    // Field 2, the command name, is in parentheses and may hold spaces and parentheses: the
    // fields after the last ')' are 3, 4, …, so field 22 is the 20th of them.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_ascii_whitespace().nth(22 - 3))
        .and_then(|field| field.parse().ok())
        .map(Some)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unexpected /proc stat line"))
}

/// The inode of this process's pid namespace, from the link `/proc/self/ns/pid`
/// (`pid:[4026531836]`).
fn pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    let text = link.to_str()?;
    text.strip_prefix("pid:[")?.strip_suffix(']')?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::process::Command;

    fn mkdir_700(path: &Path) {
        std::fs::DirBuilder::new().mode(0o700).create(path).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    fn uid_of(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().uid()
    }

    /// The owner fields of a process that has exited (spawned, its start time read, killed
    /// and reaped).
    fn dead_process() -> Owner {
        let mut child = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let start = start_time(pid).unwrap().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        Owner {
            pid,
            start,
            pidns: Owner::current().pidns,
        }
    }

    #[test]
    fn names_round_trip_and_nothing_else_parses() {
        let me = Owner::current();
        assert!(me.known(), "/proc is readable here: {me:?}");
        assert_eq!(parse_name(&name(&me, 7)), Some(me));
        for other in [
            "toolsmith-1-2-3",             // the old form: pid and counter only (and one short)
            "toolsmith-1-2-3-4-5",         // one field too many
            "toolsmith-01-2-3-4",          // a leading zero
            "toolsmith-+1-2-3-4",          // a sign
            "toolsmith-1-2-3-x",           // not a number
            "toolsmith-1-2-3-",            // an empty field
            "toolsmith-99999999999-2-3-4", // not a pid
            "toolsmith-demo.abc123",       // the demo's workspace copy
            "xtoolsmith-1-2-3-4",
        ] {
            assert_eq!(parse_name(other), None, "{other}");
        }
    }

    #[test]
    fn start_time_reads_field_22_of_a_live_process_and_none_for_a_dead_one() {
        let me = std::process::id();
        let start = start_time(me).unwrap().unwrap();
        assert!(start > 0);
        assert_eq!(start_time(me).unwrap(), Some(start), "stable");
        let dead = dead_process();
        assert_eq!(start_time(dead.pid).unwrap(), None);
    }

    #[test]
    fn the_sweep_removes_exactly_the_dead_processes_directories() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path();
        let me = Owner::current();
        let uid = {
            let probe = base.join("probe");
            mkdir_700(&probe);
            uid_of(&probe)
        };
        let dead = dead_process();
        // A dead process's directory, with a file and a link out inside.
        let stale = base.join(name(&dead, 0));
        mkdir_700(&stale);
        std::fs::write(stale.join("leftover"), "x").unwrap();
        let outside = base.join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "keep").unwrap();
        symlink(&outside, stale.join("link-out")).unwrap();
        // The pid of a live process (this one) with another start time: the pid was reused.
        let reused = base.join(name(
            &Owner {
                start: me.start + 1,
                ..me
            },
            0,
        ));
        mkdir_700(&reused);
        // This process's own directory, and a live process's (this one's) from another
        // counter: kept.
        let mine = base.join(name(&me, 0));
        mkdir_700(&mine);
        let mine_too = base.join(name(&me, 1));
        mkdir_700(&mine_too);
        // A symbolic link named like a dead process's directory, to a directory of ours.
        let target = base.join("target");
        mkdir_700(&target);
        let link = base.join(name(&dead, 1));
        symlink(&target, &link).unwrap();
        // A dead process's directory with another mode, another namespace, or unknown fields.
        let open_mode = base.join(name(&dead, 2));
        std::fs::create_dir(&open_mode).unwrap();
        std::fs::set_permissions(&open_mode, std::fs::Permissions::from_mode(0o755)).unwrap();
        let other_ns = base.join(name(
            &Owner {
                pidns: dead.pidns + 1,
                ..dead
            },
            3,
        ));
        mkdir_700(&other_ns);
        let unknown = base.join(name(&Owner { start: 0, ..dead }, 4));
        mkdir_700(&unknown);
        // A regular file named like one.
        let file = base.join(name(&dead, 5));
        std::fs::write(&file, "not a directory").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o700)).unwrap();
        // A dead process's directory owned by another user (as root only: others cannot
        // give a directory away).
        let foreign = base.join(name(&dead, 6));
        mkdir_700(&foreign);
        let as_root = uid == 0;
        if as_root {
            std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        }

        let removed = sweep(base, uid, &me);

        assert!(!stale.exists(), "the dead process's directory is removed");
        assert!(!reused.exists(), "a reused pid's directory is removed");
        assert_eq!(removed, if as_root { 2 } else { 3 });
        assert_eq!(
            std::fs::read_to_string(outside.join("keep")).unwrap(),
            "keep",
            "the link inside was removed, not followed"
        );
        for kept in [
            &mine, &mine_too, &target, &open_mode, &other_ns, &unknown, &file,
        ] {
            assert!(kept.exists(), "{} is kept", kept.display());
        }
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink(),
            "the link is kept"
        );
        if as_root {
            assert!(foreign.exists(), "another user's directory is kept");
            assert_eq!(uid_of(&foreign), 65534);
        } else {
            assert!(
                !foreign.exists(),
                "(not root: the directory was ours, and stale)"
            );
        }
    }

    #[test]
    fn a_new_directory_is_0700_and_named_for_this_process() {
        let dir = private_temp_dir().unwrap();
        let meta = std::fs::symlink_metadata(&dir).unwrap();
        assert_eq!(meta.mode() & 0o7777, 0o700);
        let owner = parse_name(dir.file_name().unwrap().to_str().unwrap()).unwrap();
        assert_eq!(owner, Owner::current());
        std::fs::remove_dir(&dir).unwrap();
    }
}
