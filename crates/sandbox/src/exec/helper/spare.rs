//! The helper's `spare` mode: enter the namespaces of an [`Ahead`] before the plan comes, then
//! apply the rest of the plan (see [`Ahead`] for the contract, and `warm.rs` for the launcher's
//! side).
//!
//! The order is `run`'s, with the plan's arrival moved from before the namespaces to after
//! `/proc`: `setsid`, the go ([`GO`](channel::GO), or [`GO_WITH_RULES`](channel::GO_WITH_RULES)
//! with a Landlock plan and its descriptors; the helper is in its control group then),
//! `PR_SET_PDEATHSIG`, `unshare` (identity maps, `lo` up), PID 1 (forked with `CLONE_PARENT`, the
//! launcher's child in a session of its own; the spare sends its pid and exits, see
//! `setup::fork_pid1`), private propagation, the fresh `/proc` and git protection's binds,
//! [`READY`] (with the mount and network namespaces' descriptors), Landlock enforced with the
//! rules the go brought (if any) and the seccomp filter installed; then the plan, the checks
//! that it is the preparation's own ([`Ahead::admits`]) and that it names (by their digest) the
//! rules the spare restricted itself with (a spare given none applies the plan's own), the
//! launcher's pid, rlimits, `chdir`, loopback mediation's `connect` filter and `execve`, all in
//! PID 1.

use std::os::fd::{AsFd, OwnedFd};

use super::super::channel::{self, READY};
use super::super::{Ahead, LandlockPlan};
use super::{
    CHANNEL, Received, Rules, confine_and_exec, fail, install_seccomp, mounts, receive, setup,
};

/// The `spare` mode's entry (after the mode word): `preparation` is [`Ahead::to_arg`]'s text.
pub(super) fn run(preparation: Option<&str>) -> ! {
    // Reports go back on the channel, fd 0, until the plan moves it (a report in place of READY
    // tells the launcher the preparation failed).
    CHANNEL.store(0, std::sync::atomic::Ordering::Relaxed);
    setup::close_stray_fds();
    let (ahead, go) = prepared_and_go(preparation);
    let parent = || rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    let launcher = parent();
    setup::set_pdeathsig();
    if parent() != launcher {
        fail("parent", "the launcher is gone");
    }
    // The network namespace lent, if any (see `netns.rs`).
    let mut owner = setup::enter_namespaces(&ahead.namespaces, go.net)
        .unwrap_or_else(|e| fail("namespaces", &e));
    let mut rules = landlock_of(go.rules);
    if ahead.namespaces.pid {
        setup::fork_pid1(&mut || pid1(&ahead, launcher, rules.take(), owner.take()))
    }
    match pid1(&ahead, launcher, rules, owner) {}
}

/// The `spare` mode of a spare the resident helper forked into its namespaces (see
/// `resident.rs`): PID 1 of its pid namespace from the start, in a user namespace whose maps it
/// writes first (`ids`: the uid and gid to map to themselves), in the network namespace the
/// resident entered, with the user namespace that owns it (`U0`) on fd 3. `launcher` is the
/// launcher's pid (this process' parent, which `getppid` does not show from a pid namespace).
/// Then as [`run`] from the go on; if the launcher dies before `PR_SET_PDEATHSIG` is set, its
/// end of the channel is closed and the go never comes.
#[allow(unsafe_code)]
pub(super) fn run_in_namespaces(preparation: &str, launcher: i32, (uid, gid): (u32, u32)) -> ! {
    CHANNEL.store(0, std::sync::atomic::Ordering::Relaxed);
    setup::identity_maps(uid, gid).unwrap_or_else(|e| fail("namespaces", &e));
    // SAFETY: the resident put `U0`'s descriptor on fd 3 for this process, which owns it now.
    let owner = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(3) };
    setup::close_fds_from(4);
    setup::set_pdeathsig();
    let (ahead, go) = prepared_and_go(Some(preparation));
    // The resident entered the network namespace lent; one sent again with the go is not used.
    drop(go.net);
    match pid1(&ahead, launcher, landlock_of(go.rules), Some(owner)) {}
}

/// A spare's start: its own session, its preparation (`preparation`, [`Ahead::to_arg`]'s text)
/// and the launcher's go (the spare is in its control group then). Exits quietly when the
/// launcher lets it go first.
fn prepared_and_go(preparation: Option<&str>) -> (Ahead, channel::Go) {
    rustix::process::setsid().unwrap_or_else(|e| fail("setsid", &e.to_string()));
    let ahead = preparation
        .ok_or_else(|| "no preparation".to_string())
        .and_then(Ahead::from_arg)
        .unwrap_or_else(|e| fail("usage", &e));
    match channel::receive_go(std::io::stdin().as_fd()) {
        Ok(Some(go)) => (ahead, go),
        // The launcher let the spare go before it was needed: nothing was applied.
        Ok(None) => exit_quietly(),
        Err(e) => fail("plan", &format!("cannot read the go: {e}")),
    }
}

/// The Landlock plan a go brought (its JSON and descriptors), parsed, with its digest.
fn landlock_of(rules: Option<channel::Rules>) -> Option<(LandlockPlan, Vec<OwnedFd>, u64)> {
    rules.map(
        |(json, fds)| match serde_json::from_slice::<LandlockPlan>(&json) {
            Ok(landlock) => (landlock, fds, LandlockPlan::digest(&json)),
            Err(e) => fail("plan", &format!("invalid Landlock plan: {e}")),
        },
    )
}

/// The rest, in PID 1 when there is a pid namespace: the mounts made ahead (binds included),
/// [`READY`] (with the mount and network namespaces' descriptors and `owner`'s, the network
/// namespace's owner when it is pooled), then the confinement ahead: the Landlock ruleset built
/// from `rules` (when the go brought them: the plan, its descriptors and the digest of its
/// JSON) and enforced, the seccomp filter installed; then the plan and everything after it.
/// Execs or [`fail`]s.
fn pid1(
    ahead: &Ahead,
    launcher: i32,
    rules: Option<(LandlockPlan, Vec<OwnedFd>, u64)>,
    owner: Option<OwnedFd>,
) -> std::convert::Infallible {
    if ahead.namespaces.mount {
        mounts::apply(&ahead.mounts).unwrap_or_else(|e| fail("mounts", &e));
    }
    // The mount and network namespaces' descriptors go with READY: the launcher holds the
    // namespaces until the launch is over and lets them go off its path (see `warm.rs`), or
    // pools the network namespace with its owner (see `netns.rs`).
    let held: Vec<OwnedFd> = [
        (ahead.namespaces.mount, "/proc/self/ns/mnt"),
        (ahead.namespaces.net, "/proc/self/ns/net"),
    ]
    .into_iter()
    .filter(|(made, _)| *made)
    .map(|(_, path)| match std::fs::File::open(path) {
        Ok(ns) => OwnedFd::from(ns),
        Err(e) => fail("namespaces", &format!("{path}: {e}")),
    })
    .chain(owner)
    .collect();
    let fds: Vec<_> = held.iter().map(AsFd::as_fd).collect();
    if channel::send_with_fds(std::io::stdin().as_fd(), &[READY], &fds).is_err() {
        exit_quietly();
    }
    drop(held);
    // After the mounts, as at launch: the `/proc` rule must name the new procfs, and neither
    // Landlock nor seccomp lets a mount be made after them. After READY: a launch that waits
    // for this spare (launches back to back) takes it as soon as its namespaces are made and
    // sends its plan while the spare confines itself (adding the rules was ~0.5 ms of a
    // ~3.9 ms preparation, traced on the loaded 2-core machine); the plan is read once it has.
    let digest = rules.map(|(landlock, fds, digest)| {
        super::super::landlock::apply(&landlock, &fds).unwrap_or_else(|e| fail("landlock", &e));
        digest
    });
    if let Some(seccomp) = &ahead.seccomp {
        install_seccomp(seccomp);
    }
    let Received {
        plan,
        rule_fds,
        mediation,
    } = receive(true);
    if !ahead.admits(&plan) {
        fail(
            "plan",
            "this helper was prepared for other namespaces, mounts or filter than the plan's",
        );
    }
    // Restricted ahead, the spare serves only the plan that names the rules it restricted
    // itself with (by their digest: the plan comes without them). One that restricted itself
    // with none applies the plan's own, if any.
    let rules = match digest {
        Some(digest) if plan.landlock_ahead && plan.landlock_digest == Some(digest) => {
            Rules::Enforced
        }
        Some(_) => fail(
            "plan",
            "this helper was restricted ahead with other Landlock rules than the plan's",
        ),
        None if plan.landlock_ahead => fail(
            "plan",
            "the plan asks for a Landlock ruleset built ahead, and this helper built none",
        ),
        None => Rules::Plan(&rule_fds),
    };
    if plan.parent_pid != launcher {
        fail("parent", "the launcher is gone");
    }
    setup::set_rlimits(&plan.rlimits).unwrap_or_else(|e| fail("rlimits", &e));
    setup::set_namespace_process_limit(&plan.rlimits).unwrap_or_else(|e| fail("rlimits", &e));
    // The mounts were made and the filter installed ahead.
    confine_and_exec(&plan, None, None, &rules, mediation.as_ref())
}

/// Exits without a report: the launcher has closed its end, nobody reads one.
#[allow(unsafe_code)]
fn exit_quietly() -> ! {
    // SAFETY: ends the process; nothing is buffered.
    unsafe { libc::_exit(0) }
}
