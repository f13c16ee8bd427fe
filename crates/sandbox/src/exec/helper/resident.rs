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

use std::os::fd::{AsFd, AsRawFd};

use super::super::channel;
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
    let requests = std::io::stdin();
    loop {
        let (arg, fds) = match channel::receive_framed(requests.as_fd(), Vec::new()) {
            Ok(Some(request)) => request,
            // The launcher let go (or is gone).
            Ok(None) | Err(_) => exit(0),
        };
        let answer = match (std::str::from_utf8(&arg), fds.as_slice()) {
            (Ok(arg), [channel, stdout, stderr]) => {
                // The child's parent is ours (the launcher). It only runs `spare`, which execs
                // or exits.
                let pid = setup::fork_beside_parent();
                if let Ok(0) = pid {
                    // SAFETY: as above, the name read at start (NUL-terminated, 16 bytes).
                    unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
                    for (fd, target) in [(channel, 0), (stdout, 1), (stderr, 2)] {
                        // SAFETY: dup2 of descriptors this process owns onto its stdio.
                        if unsafe { libc::dup2(fd.as_raw_fd(), target) } < 0 {
                            fail("resident", &std::io::Error::last_os_error().to_string());
                        }
                    }
                    spare::run(Some(arg))
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

#[allow(unsafe_code)]
fn exit(status: i32) -> ! {
    // SAFETY: ends the process; nothing is buffered.
    unsafe { libc::_exit(status) }
}
