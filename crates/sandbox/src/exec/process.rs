//! [`HelperProcess`]: a started helper, waited for from whichever tokio runtime runs the launch.
//!
//! Helpers are spawned on the launcher thread ([`warm`](super::warm)), often before the launch
//! that uses them and outside any runtime, so a helper cannot be a `tokio::process::Child`
//! (whose reaping belongs to the runtime that spawned it). It is a `std::process::Child`, and a
//! launch waits for its exit on a pidfd registered with the waiting runtime (Linux ≥ 5.3); where
//! pidfds are missing, a blocking thread only *peeks* at the exit (`waitid(WNOWAIT)`), so the
//! child is still reaped here and its pid, the process group's id, stays taken until then.
//! Dropped before it was reaped, the helper is killed and reaped on a thread of its own.
//!
//! A spare forked by the resident helper ([`resident`](super::resident)) is this process' child
//! too (`CLONE_PARENT`), but not a `std::process::Child`: it is held by its pid and pipes, and
//! reaped with `waitpid` ([`HelperProcess::forked`]). So is a prepared spare's PID 1, which the
//! spare forks with `CLONE_PARENT` and the launch waits for in place of the spare.
//! [`SandboxedChild`](super::SandboxedChild) holds one too, and reaps it synchronously.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStderr, ChildStdout, ExitStatus};

use rustix::process::{Pid, PidfdFlags, WaitId, WaitIdOptions, pidfd_open, waitid};
use tokio::io::unix::AsyncFd;

/// A helper process with piped stdout and stderr (see the [module docs](self)).
#[derive(Debug)]
pub(crate) struct HelperProcess {
    /// `None` only once dropped.
    child: Option<Inner>,
    /// Whether `child` has been reaped (its status is cached in it).
    reaped: bool,
}

/// A spawned helper, or one the resident helper forked.
#[derive(Debug)]
enum Inner {
    Spawned(Child),
    Forked(Forked),
}

/// A child of this process known by its pid (see [`HelperProcess::forked`]).
#[derive(Debug)]
struct Forked {
    pid: u32,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    status: Option<ExitStatus>,
}

impl Inner {
    fn id(&self) -> u32 {
        match self {
            Inner::Spawned(child) => child.id(),
            Inner::Forked(forked) => forked.pid,
        }
    }

    fn kill(&mut self) {
        match self {
            Inner::Spawned(child) => drop(child.kill()),
            Inner::Forked(forked) => forked.kill(),
        }
    }

    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self {
            Inner::Spawned(child) => child.try_wait(),
            Inner::Forked(forked) => forked.reap(libc::WNOHANG),
        }
    }

    fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Inner::Spawned(child) => child.wait(),
            Inner::Forked(forked) => forked
                .reap(0)?
                .ok_or_else(|| io::Error::other("waitpid returned no status")),
        }
    }
}

impl Forked {
    /// `SIGKILL`, unless reaped (the pid may be another process' then).
    #[allow(unsafe_code)]
    fn kill(&self) {
        if self.status.is_none() {
            // SAFETY: kill(2) with our own unreaped child's pid: it names no other process.
            unsafe { libc::kill(self.pid as libc::pid_t, libc::SIGKILL) };
        }
    }

    /// `waitpid` with `options` (`WNOHANG`, or 0 to block), tried again on `EINTR`; the status
    /// is kept once reaped.
    #[allow(unsafe_code)]
    fn reap(&mut self, options: libc::c_int) -> io::Result<Option<ExitStatus>> {
        if let Some(status) = self.status {
            return Ok(Some(status));
        }
        let mut raw = 0;
        loop {
            // SAFETY: waiting for our own child, with a valid status pointer.
            let rc = unsafe { libc::waitpid(self.pid as libc::pid_t, &mut raw, options) };
            if rc == self.pid as libc::pid_t {
                self.status = Some(ExitStatus::from_raw(raw));
                return Ok(self.status);
            }
            if rc == 0 {
                return Ok(None);
            }
            let error = io::Error::last_os_error();
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(error);
            }
        }
    }
}

impl HelperProcess {
    /// Takes charge of `child`.
    pub(crate) fn new(child: Child) -> HelperProcess {
        HelperProcess {
            child: Some(Inner::Spawned(child)),
            reaped: false,
        }
    }

    /// Takes charge of the child `pid` of this process (forked by the resident helper with
    /// `CLONE_PARENT`), the read ends of its stdout and stderr pipes, and reaping it.
    pub(crate) fn forked(pid: u32, stdout: OwnedFd, stderr: OwnedFd) -> HelperProcess {
        HelperProcess {
            child: Some(Inner::Forked(Forked {
                pid,
                stdout: Some(ChildStdout::from(stdout)),
                stderr: Some(ChildStderr::from(stderr)),
                status: None,
            })),
            reaped: false,
        }
    }

    /// The helper's pid, which is its process group once it has called `setsid`.
    pub(crate) fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Inner::id)
    }

    /// The helper's stdout and stderr pipes (`None` once taken, or when not piped).
    pub(crate) fn take_pipes(&mut self) -> (Option<ChildStdout>, Option<ChildStderr>) {
        match self.child.as_mut() {
            Some(Inner::Spawned(child)) => (child.stdout.take(), child.stderr.take()),
            Some(Inner::Forked(forked)) => (forked.stdout.take(), forked.stderr.take()),
            None => (None, None),
        }
    }

    /// Sends `SIGKILL` to the helper itself (not its group); nothing once it has been reaped.
    pub(crate) fn kill(&mut self) {
        if let Some(child) = self.child.as_mut().filter(|_| !self.reaped) {
            child.kill();
        }
    }

    /// Waits for the helper to exit and reaps it. Cancel-safe: dropping the future leaves the
    /// helper unreaped (and [`Drop`] kills and reaps it).
    #[allow(unsafe_code)]
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.try_wait()? {
            return Ok(status);
        }
        let pid = Pid::from_raw(i32::try_from(self.id()).unwrap_or(0))
            .ok_or_else(|| io::Error::other("the helper has no pid"))?;
        match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(pidfd) => {
                // SAFETY: an `OwnedFd`, owned by the `AsyncFd` from here on, always returns the
                // same open descriptor.
                let pidfd = unsafe {
                    AsyncFd::register_with_interest(pidfd, tokio::io::Interest::READABLE)
                }
                .map_err(io::Error::from)?;
                loop {
                    let mut ready = pidfd.readable().await?;
                    // A pidfd is readable once the process has exited.
                    if let Some(status) = self.try_wait()? {
                        return Ok(status);
                    }
                    ready.clear_ready();
                }
            }
            Err(_) => {
                let options = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT;
                let peek = tokio::task::spawn_blocking(move || {
                    loop {
                        match waitid(WaitId::Pid(pid), options) {
                            Err(rustix::io::Errno::INTR) => continue,
                            other => break other.map(drop),
                        }
                    }
                });
                peek.await.map_err(io::Error::other)??;
                let status = self.child_mut()?.wait()?;
                self.reaped = true;
                Ok(status)
            }
        }
    }

    /// Whether the helper has been reaped.
    pub(crate) fn reaped(&self) -> bool {
        self.reaped
    }

    /// Whether the helper has exited, without reaping it (its pid, the group's id, stays taken).
    pub(crate) fn exited(&self) -> bool {
        let Some(pid) = Pid::from_raw(i32::try_from(self.id()).unwrap_or(0)) else {
            return true;
        };
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        self.reaped || !matches!(waitid(WaitId::Pid(pid), options), Ok(None))
    }

    /// Waits for the helper to exit and reaps it, blocking the calling thread.
    pub(crate) fn wait_blocking(&mut self) -> io::Result<ExitStatus> {
        let status = loop {
            match self.child_mut()?.wait() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        self.reaped = true;
        Ok(status)
    }

    /// The exit status if the helper has exited (reaping it), without waiting.
    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let status = self.child_mut()?.try_wait()?;
        self.reaped |= status.is_some();
        Ok(status)
    }

    fn child_mut(&mut self) -> io::Result<&mut Inner> {
        self.child
            .as_mut()
            .ok_or_else(|| io::Error::other("the helper is gone"))
    }
}

impl Drop for HelperProcess {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if self.reaped || matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        child.kill();
        // A killed helper exits at once, unless stuck in the kernel (a hung FUSE mount): reap it
        // on a thread of its own rather than block whoever dropped it.
        // (Where no thread can be made, the dead helper stays a zombie until toolsmith exits.)
        let _ = std::thread::Builder::new()
            .name("toolsmith-reaper".into())
            .spawn(move || {
                let _ = child.wait();
            });
    }
}
