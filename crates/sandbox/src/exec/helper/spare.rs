//! The helper's `spare` mode: enter the namespaces of an [`Ahead`] before the plan comes, then
//! apply the rest of the plan (see [`Ahead`] for the contract, and `warm.rs` for the launcher's
//! side).
//!
//! The order is `run`'s, with the plan's arrival moved from before the namespaces to after
//! `/proc`: `setsid`, [`GO`] (the helper is in its control group), `PR_SET_PDEATHSIG`, `unshare`
//! (identity maps, `lo` up), PID 1, private propagation and the fresh `/proc`, [`READY`]; then
//! the plan, the check that it is the preparation's own ([`Ahead::admits`]), the launcher's pid,
//! rlimits, git protection's binds, `chdir`, Landlock, seccomp and `execve`, all in PID 1.

use std::os::fd::AsFd;

use super::super::Ahead;
use super::super::channel::{self, GO, READY};
use super::super::plan::MountPlan;
use super::{CHANNEL, Received, confine_and_exec, fail, mounts, receive, setup};

/// The `spare` mode's entry (after the mode word): `preparation` is [`Ahead::to_arg`]'s text.
pub(super) fn run(preparation: Option<&str>) -> ! {
    // Reports go back on the channel, fd 0, until the plan moves it (a report in place of READY
    // tells the launcher the preparation failed).
    CHANNEL.store(0, std::sync::atomic::Ordering::Relaxed);
    setup::close_stray_fds();
    rustix::process::setsid().unwrap_or_else(|e| fail("setsid", &e.to_string()));
    let ahead = preparation
        .ok_or_else(|| "no preparation".to_string())
        .and_then(Ahead::from_arg)
        .unwrap_or_else(|e| fail("usage", &e));
    if !wait_for_go() {
        // The launcher let the spare go before it was needed: nothing was applied.
        exit_quietly();
    }
    let parent = || rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    let launcher = parent();
    setup::set_pdeathsig();
    if parent() != launcher {
        fail("parent", "the launcher is gone");
    }
    setup::enter_namespaces(&ahead.namespaces).unwrap_or_else(|e| fail("namespaces", &e));
    if ahead.namespaces.pid {
        setup::fork_pid1(&mut || pid1(&ahead, launcher))
    }
    match pid1(&ahead, launcher) {}
}

/// The rest, in PID 1 when there is a pid namespace: the mounts made ahead, [`READY`], the plan
/// and everything after it. Execs or [`fail`]s.
fn pid1(ahead: &Ahead, launcher: i32) -> std::convert::Infallible {
    if ahead.namespaces.mount {
        let made_ahead = MountPlan {
            make_private: ahead.make_private,
            proc: ahead.proc,
            binds: Vec::new(),
        };
        mounts::apply(&made_ahead).unwrap_or_else(|e| fail("mounts", &e));
    }
    // The mount namespace's descriptor goes with READY: the launcher holds the namespace until
    // the command is over and lets it go off the launch's path (see `warm.rs`).
    let held = if ahead.namespaces.mount {
        let ns = std::fs::File::open("/proc/self/ns/mnt")
            .unwrap_or_else(|e| fail("mounts", &format!("/proc/self/ns/mnt: {e}")));
        Some(std::os::fd::OwnedFd::from(ns))
    } else {
        None
    };
    let fds: Vec<_> = held.iter().map(AsFd::as_fd).collect();
    if channel::send_with_fds(std::io::stdin().as_fd(), &[READY], &fds).is_err() {
        exit_quietly();
    }
    drop(held);
    let Received {
        plan,
        rule_fds,
        mediation,
    } = receive();
    if !ahead.admits(&plan) {
        fail(
            "plan",
            "this helper was prepared for other namespaces than the plan's",
        );
    }
    if plan.parent_pid != launcher {
        fail("parent", "the launcher is gone");
    }
    setup::set_rlimits(&plan.rlimits).unwrap_or_else(|e| fail("rlimits", &e));
    setup::set_namespace_process_limit(&plan.rlimits).unwrap_or_else(|e| fail("rlimits", &e));
    // Private propagation and `/proc` were made ahead; the binds are the command's own.
    let rest = MountPlan {
        make_private: false,
        proc: false,
        binds: plan.mounts.binds.clone(),
    };
    confine_and_exec(&plan, &rest, &rule_fds, mediation.as_ref())
}

/// Reads the launcher's [`GO`]; `false` on EOF (or anything else).
fn wait_for_go() -> bool {
    let mut byte = [0u8; 1];
    loop {
        match rustix::io::read(std::io::stdin().as_fd(), &mut byte) {
            Ok(1) => return byte[0] == GO,
            Err(rustix::io::Errno::INTR) => {}
            _ => return false,
        }
    }
}

/// Exits without a report: the launcher has closed its end, nobody reads one.
#[allow(unsafe_code)]
fn exit_quietly() -> ! {
    // SAFETY: ends the process; nothing is buffered.
    unsafe { libc::_exit(0) }
}
