//! The helper's `resident` mode: a helper started once per launcher that forks its spares
//! (see [`resident`](super::super::resident) for the launcher's side and the contract).
//!
//! It reads requests on its stdin (a socket): each is a length-prefixed preparation
//! ([`Ahead::to_arg`](super::super::Ahead)'s text) with three descriptors, the spare's channel
//! and the write ends of its stdout and stderr pipes. For each it forks a child with
//! `CLONE_PARENT`, so that the spare is the launcher's child as a spawned one is (the launcher
//! reaps it, `PR_SET_PDEATHSIG` follows the launcher's thread), answers with the child's pid,
//! and closes its copies of the descriptors. The child makes them its stdin, stdout and stderr
//! and runs the `spare` mode from there, as a spawned spare does after its `exec`: nothing of
//! the resident's is left to it (its request socket is replaced on fd 0, every other fd is
//! closed, and it holds no state a command could use).
//!
//! A preparation whose network namespace is made apart
//! ([`NamespacePlan::network_apart`](super::super::NamespacePlan::network_apart)) may bring a
//! fourth descriptor: a network namespace lent by the launcher's pool. For the first such
//! request the resident unshares a user namespace of its own (`U0`, identity maps), which it
//! stays in, and where it has every capability: for each request it then enters the lent network
//! namespace (one `U0` owns), or makes one (`lo` up for loopback-only), and forks the spare
//! *into* its user, pid and mount namespaces (`clone` with `CLONE_NEWUSER | CLONE_NEWPID |
//! CLONE_NEWNS`): the spare is its pid namespace's PID 1 from the start, and no second process
//! forks PID 1 and exits (one process fewer per launch: ~0.19 ms of CPU, measured in a loop of
//! such forks on the 2-core test machine). The spare writes its identity maps, takes `U0`'s
//! descriptor on fd 3 (it sends it with its readiness) and runs the `spare` mode from its go
//! on ([`spare::run_in_namespaces`]). A resident in `U0` takes no other preparation: it answers
//! `EINVAL`, and the launcher spawns that spare.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use super::super::{Ahead, channel};
use super::{fail, setup, spare};

/// The `resident` mode's entry. Exits when the launcher closes its end (or dies: it has
/// `PR_SET_PDEATHSIG`).
#[allow(unsafe_code)]
pub(super) fn run() -> ! {
    setup::close_stray_fds();
    // Its own name, so that it is not taken for a spare (its children take the name back).
    let mut name = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes into the buffer given.
    unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) };
    // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes.
    unsafe { libc::prctl(libc::PR_SET_NAME, c"toolsmith-resid".as_ptr()) };
    // A session of its own, as every helper: a Ctrl-C on toolsmith's terminal must not kill it.
    rustix::process::setsid().unwrap_or_else(|e| fail("setsid", &e.to_string()));
    let parent = rustix::process::getppid();
    setup::set_pdeathsig();
    if rustix::process::getppid() != parent {
        exit(0);
    }
    let launcher = parent.map_or(0, |p| p.as_raw_nonzero().get());
    let ids = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    // `U0`'s descriptor, once this process is in it.
    let mut apart: Option<OwnedFd> = None;
    let requests = std::io::stdin();
    loop {
        let (arg, fds) = match channel::receive_framed(requests.as_fd(), Vec::new()) {
            Ok(Some(request)) => request,
            // The launcher let go (or is gone).
            Ok(None) | Err(_) => exit(0),
        };
        let answer = match (std::str::from_utf8(&arg), fds.as_slice()) {
            (Ok(arg), [channel, stdout, stderr, lent @ ..]) if lent.len() <= 1 => {
                let ahead = Ahead::from_arg(arg).ok().filter(Ahead::pools_network);
                let pid = match (&ahead, &apart) {
                    (Some(ahead), _) => in_namespaces(&mut apart, ahead, lent.first()),
                    (None, None) => setup::fork_beside_parent(0),
                    (None, Some(_)) => Err(std::io::Error::from_raw_os_error(libc::EINVAL)),
                };
                if let Ok(0) = pid {
                    // The child: its parent is ours (the launcher). It only runs `spare`, which
                    // execs or exits.
                    // SAFETY: as above, the name read at start (NUL-terminated, 16 bytes).
                    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
                    let owner = apart.as_ref().filter(|_| ahead.is_some());
                    let stdio = [(channel, 0), (stdout, 1), (stderr, 2)];
                    for (fd, target) in stdio.into_iter().chain(owner.map(|u0| (u0, 3))) {
                        // SAFETY: dup2 of descriptors this process owns onto its stdio (and fd
                        // 3).
                        if unsafe { libc::dup2(fd.as_raw_fd(), target) } < 0 {
                            fail("resident", &std::io::Error::last_os_error().to_string());
                        }
                    }
                    match ahead {
                        Some(_) => spare::run_in_namespaces(arg, launcher, ids),
                        None => spare::run(Some(arg)),
                    }
                }
                match pid {
                    Ok(pid) => i32::try_from(pid).unwrap_or(-1),
                    Err(e) => -e.raw_os_error().unwrap_or(1),
                }
            }
            _ => -libc::EINVAL,
        };
        drop(fds);
        if rustix::io::write(requests.as_fd(), &answer.to_le_bytes()) != Ok(4) {
            exit(0);
        }
    }
}

/// Forks a spare prepared as `ahead` into its namespaces (see the [module docs](self)): first
/// enters `U0` (unshared now if this process is not in it yet: `apart` is its descriptor), then
/// the network namespace `lent`, or a new one. `0` in the child, its pid here.
fn in_namespaces(
    apart: &mut Option<OwnedFd>,
    ahead: &Ahead,
    lent: Option<&OwnedFd>,
) -> std::io::Result<i64> {
    let refused = |e: String| std::io::Error::other(e);
    if apart.is_none() {
        *apart = Some(setup::enter_new_user_namespace().map_err(refused)?);
    }
    setup::enter_network(lent, ahead.namespaces.loopback_up).map_err(refused)?;
    let mut namespaces = libc::CLONE_NEWUSER | libc::CLONE_NEWPID;
    if ahead.namespaces.mount {
        namespaces |= libc::CLONE_NEWNS;
    }
    setup::fork_beside_parent(namespaces)
}

#[allow(unsafe_code)]
fn exit(status: i32) -> ! {
    // SAFETY: ends the process; nothing is buffered.
    unsafe { libc::_exit(status) }
}
