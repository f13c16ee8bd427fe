//! The helper a launcher starts ahead of its next launch (the *spare*): it serves that launch,
//! waits in a session of its own, is replaced when it died, and dies with its launcher. Prepared
//! ahead (its namespaces entered before its plan), it serves only the plans of the policy it was
//! prepared for, and no two commands share a namespace at once (only a network namespace,
//! which no command owns, serves one command after another).
//!
//! The tests look at this process' children in `/proc`, so they take turns. Alone in its
//! binary, not a module of `tests/it`: every launcher keeps a spare helper, and these tests
//! take every helper child of the process for theirs (they count them, and kill them), so the
//! other sandbox tests' launchers in the same process would break them and be broken. It shares
//! `tests/it/common` with them.
//!
//! - `lifecycle`: a spare serves the next launch, waits in its own session, is replaced when it
//!   or its PID 1 died, dies with its launcher; spares are forked by a resident helper; PID 1
//!   reports exits exactly.
//! - `namespaces`: fresh namespaces for every command but its network one, lent one command at
//!   a time; let go (or lent again) once its launch is over, with its control group.
//! - `plans`: spares started by hand, given the plans of other policies and rules.

#[path = "../it/common/mod.rs"]
mod common;
mod lifecycle;
mod namespaces;
mod plans;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use toolsmith_sandbox::SandboxPolicy;
use toolsmith_sandbox::exec::{ExecRequest, Launcher};

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The start of a test: the serial lock (the tests count this process' helpers) and a
/// temporary root, canonical; `None`, the test skipped, when it `needs_namespaces` and this
/// machine has none.
async fn begin(
    needs_namespaces: bool,
) -> Option<(
    tokio::sync::MutexGuard<'static, ()>,
    tempfile::TempDir,
    std::path::PathBuf,
)> {
    let serial = SERIAL.lock().await;
    if needs_namespaces && !namespaces() {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    Some((serial, dir, root))
}

fn launcher(root: &std::path::Path) -> Launcher {
    Launcher::new(common::helper(), SandboxPolicy::new(root))
}

fn echo(root: &std::path::Path, text: &str) -> ExecRequest {
    ExecRequest::new("echo", vec![text.into()], root)
}

/// This process' children that are sandbox helpers (`comm` is cut to 15 bytes), with their
/// `/proc/<pid>/stat` fields after the command name: state, ppid, pgrp, session, ….
fn helpers() -> Vec<(u32, Vec<String>)> {
    children_named("toolsmith-sandb")
}

/// This process' resident helpers that have not exited.
fn residents() -> Vec<u32> {
    children_named("toolsmith-resid")
        .into_iter()
        .filter(|(_, fields)| fields[0] != "Z")
        .map(|(pid, _)| pid)
        .collect()
}

/// This process' children whose `comm` starts with `name`, with their `/proc/<pid>/stat`
/// fields after the command name.
fn children_named(name: &str) -> Vec<(u32, Vec<String>)> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        let fields: Vec<String> = stat[close + 1..]
            .split_whitespace()
            .map(String::from)
            .collect();
        if comm.starts_with(name) && fields.get(1) == Some(&me) {
            found.push((pid, fields));
        }
    }
    found
}

/// The helpers waiting (sleeping, not yet in a pid namespace of their own) once one exists.
fn wait_for_spares() -> BTreeSet<u32> {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let spares: BTreeSet<u32> = helpers()
            .into_iter()
            .filter(|(_, fields)| fields[0] == "S")
            .map(|(pid, _)| pid)
            .collect();
        if !spares.is_empty() || Instant::now() > until {
            return spares;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether `pid` has exited and waits to be reaped.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rfind(')')
                .map(|i| stat[i + 1..].trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn kill(pid: u32) {
    let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
}

/// Waits (5 s at most) until every one of `pids` has exited: gone, or a zombie.
fn wait_exited(pids: &[u32]) {
    wait_until(|| !pids.iter().any(|p| alive(*p) && !zombie(*p)));
}

/// Waits (5 s at most) until every one of `pids` is gone from `/proc`: exited and reaped.
fn wait_gone(pids: &[u32]) {
    wait_until(|| !pids.iter().any(|p| alive(*p)));
}

/// Polls `done` every millisecond, 5 s at most.
fn wait_until(done: impl Fn() -> bool) {
    let until = Instant::now() + Duration::from_secs(5);
    while !done() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(1));
    }
}
/// The children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Whether this machine gives a launch user, network, pid and mount namespaces (a spare is then
/// prepared in them); prints the skip line otherwise.
fn namespaces() -> bool {
    let caps = common::caps();
    common::require(
        "namespaces",
        (caps.user_namespaces || caps.running_as_root)
            && caps.net_namespaces
            && caps.pid_namespaces
            && caps.mount_namespaces,
    )
}

/// A spare that has entered its namespaces: its PID 1, this process' own child (forked with
/// `CLONE_PARENT`; the spare that forked it has exited), in a network namespace other than this
/// process'. Waits for one (5 s at most).
fn wait_for_prepared_spare() -> Option<u32> {
    let ours = std::fs::read_link("/proc/self/ns/net").unwrap();
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        for pid1 in wait_for_spares() {
            if std::fs::read_link(format!("/proc/{pid1}/ns/net")).is_ok_and(|ns| ns != ours) {
                return Some(pid1);
            }
        }
        if Instant::now() > until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `ioctl(2)` requests on a namespace's descriptor (`linux/nsfs.h`): its owning user namespace,
/// a user namespace's parent.
pub(crate) const NS_GET_USERNS: u64 = 0xb701;
pub(crate) const NS_GET_PARENT: u64 = 0xb702;

/// What `request` on the namespace `ns` returns, as its `/proc` link reads (`user:[…]`).
#[allow(unsafe_code)]
pub(crate) fn namespace_link(ns: &std::fs::File, request: u64) -> String {
    use std::os::fd::{AsRawFd, FromRawFd};
    // SAFETY: an nsfs ioctl without an argument on an open namespace descriptor; the
    // descriptor it returns is new and ours.
    let fd = unsafe { libc::ioctl(ns.as_raw_fd(), request as _) };
    assert!(fd >= 0, "{}", std::io::Error::last_os_error());
    // SAFETY: `fd` was just returned to this process, which owns it.
    let found = unsafe { std::fs::File::from_raw_fd(fd) };
    link(&format!("/proc/self/fd/{}", found.as_raw_fd()))
}

/// Where the link at `path` points (a namespace's: `net:[…]`).
pub(crate) fn link(path: &str) -> String {
    std::fs::read_link(path)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}
