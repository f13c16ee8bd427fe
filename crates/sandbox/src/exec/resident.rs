//! [`Resident`]: a helper started once per launcher that forks the launcher's spares.
//!
//! A spare started by `posix_spawn` pays for the helper's `exec`, its dynamic loading and
//! Rust's start-up before it can prepare: ~1.0 ms of CPU (`perf stat` of the helper exiting at
//! once: 1.04 ms against 0.53 ms for `/usr/bin/true`), and ~1.5 ms of the ~3.9 ms a spare took
//! to be ready on the loaded 2-core machine, traced, which a launch that follows another at
//! once waits for. The resident helper (the helper's `resident` mode, started on the launcher
//! thread like every helper) has done that once; for each spare it forks a child that runs the
//! `spare` mode directly.
//!
//! The contract:
//!
//! - **A spare is a child of the launcher, as a spawned one is.** The resident forks with
//!   `CLONE_PARENT`: the launcher reaps the spare ([`HelperProcess::forked`]), its
//!   `PR_SET_PDEATHSIG` follows the launcher thread, it calls `setsid` and is moved into its
//!   control group by the launcher before its go, exactly as a spawned spare.
//! - **Nothing carries over.** The resident holds no command's state: it never receives a plan,
//!   only a preparation ([`Ahead`]) and three descriptors (the spare's channel, its stdout and
//!   stderr), which it closes once it has forked. Each spare forks from the resident as it was
//!   when started, never from another spare, and serves one launch.
//! - **Fail closed.** A resident that died, or answers anything but a pid, is dropped (killed
//!   and reaped); the spare is then spawned as before, and the next refill starts a new
//!   resident.
//! - **One process a spare, with a pooled network.** When the spare's network namespace is
//!   pooled ([`Ahead::pools_network`]), the resident enters a user namespace of its own once
//!   (which owns the pooled network namespaces, see [`netns`](super::netns)), then for each
//!   spare the network namespace lent (or a new one), and forks the spare into its user, pid and
//!   mount namespaces: the spare is PID 1 from the start, where it would otherwise unshare them
//!   and fork PID 1.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Stdio};

use super::ahead::Ahead;
use super::launcher::HelperCommand;
use super::netns::NetNs;
use super::process::HelperProcess;
use super::{ExecError, channel};

/// The resident helper (see the [module docs](self)). Dropping it closes its requests, kills
/// and reaps it; the spares it forked are not its children and live on.
#[derive(Debug)]
pub(crate) struct Resident {
    process: Child,
    requests: UnixStream,
}

impl Resident {
    /// Starts the resident helper. Call it on the launcher thread (its `PR_SET_PDEATHSIG`).
    pub(crate) fn start(helper: &HelperCommand) -> std::io::Result<Resident> {
        let (requests, theirs) = channel::pair()?;
        let process = helper
            .command("resident")
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        Ok(Resident { process, requests })
    }

    /// Has the resident fork a spare helper prepared as `ahead`: returns it (its stdout and
    /// stderr piped) and the launcher's end of its channel, as
    /// [`HelperCommand::start_run`] does for a spawned one. When `ahead`'s network namespace is
    /// pooled ([`Ahead::pools_network`]), the resident forks the spare into its namespaces, in
    /// the network namespace `lent` (taken) or a new one, the spare PID 1 of its pid namespace
    /// (see the helper's `resident.rs`).
    ///
    /// # Errors
    ///
    /// [`ExecError::Helper`] when the resident cannot be reached or could not fork: drop it
    /// (it may be dead) and spawn the spare instead.
    pub(crate) fn fork(
        &mut self,
        ahead: &Ahead,
        lent: &mut Option<NetNs>,
    ) -> Result<(HelperProcess, UnixStream), ExecError> {
        let lost = |e: std::io::Error| ExecError::Helper(format!("the resident helper: {e}"));
        let (ours, theirs) = channel::pair().map_err(lost)?;
        let (out, out_w) = pipe().map_err(lost)?;
        let (err, err_w) = pipe().map_err(lost)?;
        let request = channel::framed(ahead.to_arg().as_bytes()).map_err(lost)?;
        // The resident enters the namespace (the spare sends it back with its readiness).
        let lent = lent.take().filter(|_| ahead.pools_network());
        let mut fds = vec![theirs.as_fd(), out_w.as_fd(), err_w.as_fd()];
        fds.extend(lent.as_ref().map(|ns| ns.net.as_fd()));
        channel::send_with_fds(self.requests.as_fd(), &request, &fds).map_err(lost)?;
        // The spare holds them once forked; ours must go, so that EOF comes when it is gone.
        drop(fds);
        drop((theirs, out_w, err_w, lent));
        let mut answer = [0u8; 4];
        (&self.requests).read_exact(&mut answer).map_err(lost)?;
        let pid = i32::from_le_bytes(answer);
        let pid = u32::try_from(pid).ok().filter(|&p| p > 0).ok_or_else(|| {
            lost(std::io::Error::from_raw_os_error(
                pid.checked_neg().unwrap_or(0),
            ))
        })?;
        Ok((HelperProcess::forked(pid, out, err), ours))
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        let _ = self.requests.shutdown(std::net::Shutdown::Both);
        let _ = self.process.kill();
        let _ = self.process.wait();
    }
}

/// A pipe, both ends close-on-exec (std's): `(read, write)`.
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = std::io::pipe()?;
    Ok((read.into(), write.into()))
}
