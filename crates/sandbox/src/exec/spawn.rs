//! [`Launcher::spawn`]: a long-lived sandboxed program with a duplex channel to it.
//!
//! [`Launcher::run`] suits a command that runs to its end; a server process (the `run_code`
//! worker, say) must stay up and answer requests. `spawn` starts it through the same helper and
//! [`Plan`] (every layer of the policy), optionally without any write access, and hands back a
//! [`SandboxedChild`]: the channel (the program's stdout, a Unix socket pair, since the helper
//! consumes stdin for the plan), a [`GroupKiller`] that takes the whole tree down from any
//! thread, and [`SandboxedChild::finish`], which reaps it and reports the helper's setup error.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{ChildStderr, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

use super::cgroup::Cgroup;
use super::launcher::enter_group;
use super::process::HelperProcess;
use super::{ExecError, ExecRequest, Launcher, channel};
use crate::git::GitProtection;

/// The most of the program's stderr that [`SandboxedChild::finish`] keeps.
const STDERR_KEPT: usize = 64 * 1024;

/// How long [`SandboxedChild::finish`] lets a program that is ending on its own (its channel
/// closed) exit before it kills the tree, so that its own status is reported.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(100);

/// What to spawn, and how much of the policy's write access it gets.
///
/// ```
/// use toolsmith_sandbox::exec::{ExecRequest, SpawnRequest};
///
/// let request = SpawnRequest::new(ExecRequest::new("/usr/bin/cat", vec![], "/")).read_only();
/// assert!(!request.writable);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnRequest {
    /// The program, its arguments and working directory.
    pub exec: ExecRequest,
    /// Whether the program may write where the policy allows (the root, the extra writable
    /// directories and the usual devices). `false` grants no write access at all.
    pub writable: bool,
    /// Whether the program reads the channel on its stdin too (a stdio server: an MCP server,
    /// say); otherwise its stdin is `/dev/null`.
    pub stdin: bool,
}

impl SpawnRequest {
    /// A request for `exec` with the policy's write access.
    pub fn new(exec: ExecRequest) -> Self {
        SpawnRequest {
            exec,
            writable: true,
            stdin: false,
        }
    }

    /// The same request with the channel as the program's stdin as well as its stdout.
    pub fn with_stdin(mut self) -> Self {
        self.stdin = true;
        self
    }

    /// The same request without any write access.
    pub fn read_only(mut self) -> Self {
        self.writable = false;
        self
    }
}

/// A sandboxed program started by [`Launcher::spawn`]. Dropping it kills the whole tree and
/// reaps the helper.
#[derive(Debug)]
pub struct SandboxedChild {
    child: HelperProcess,
    channel: UnixStream,
    /// The helper's plan-and-error channel, read once the helper has exited.
    helper: UnixStream,
    stderr: Option<ChildStderr>,
    killer: GroupKiller,
    warnings: Vec<String>,
    /// The git snapshot of a writable spawn, undone once the tree is gone.
    git: Option<GitProtection>,
    /// The control group of the tree, removed (what is left in it killed) on reaping.
    group: Option<Cgroup>,
}

/// How a [`SandboxedChild`] ended.
#[derive(Debug)]
pub struct Ended {
    /// The helper's exit status (with a pid namespace, the status the helper relayed from the
    /// program; a signal re-raised on itself).
    pub status: ExitStatus,
    /// The helper's own error, when it could not start the program.
    pub error: Option<ExecError>,
    /// The program's stderr, at most 64 KiB, lossily decoded.
    pub stderr: String,
}

impl Ended {
    /// The status as text: `exit status 3`, `signal 9 (SIGKILL)`.
    pub fn describe(&self) -> String {
        match (self.status.code(), self.status.signal()) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(signal)) => {
                format!("signal {signal} ({})", super::capture::signal_name(signal))
            }
            (None, None) => "unknown status".into(),
        }
    }
}

/// Kills a [`SandboxedChild`]'s process tree from any thread (see [`Launcher::spawn`]).
#[derive(Debug, Clone)]
pub struct GroupKiller {
    inner: Arc<KillerState>,
}

#[derive(Debug)]
struct KillerState {
    /// The helper's pid, which is its process group after `setsid`.
    pid: i32,
    /// Whether the helper is still unreaped (its pid, and so the group id, cannot be reused).
    alive: Mutex<bool>,
    /// A clone of the host's end of the channel, shut down on kill.
    channel: Option<UnixStream>,
}

impl KillerState {
    /// Whether the helper is still unreaped, locked (a poisoned lock still holds the flag).
    fn alive(&self) -> std::sync::MutexGuard<'_, bool> {
        self.alive.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl GroupKiller {
    /// Sends `SIGKILL` to the whole tree (nothing once it has been reaped) and shuts the
    /// channel down. Idempotent.
    pub fn kill(&self) {
        let alive = self.inner.alive();
        if *alive {
            signal_tree(self.inner.pid);
        }
        if let Some(channel) = &self.inner.channel {
            let _ = channel.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Kills the tree and marks it reaped-to-be: no signal is sent after this.
    fn kill_for_reaping(&self) {
        let mut alive = self.inner.alive();
        if *alive {
            signal_tree(self.inner.pid);
            *alive = false;
        }
    }
}

/// `SIGKILL` to the group `pid`, and to `pid` itself in case it has not called `setsid` yet.
fn signal_tree(pid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
}

impl SandboxedChild {
    /// The host's end of the duplex channel (the program's stdout).
    pub fn channel(&self) -> &UnixStream {
        &self.channel
    }

    /// A handle that kills the tree from another thread.
    pub fn killer(&self) -> GroupKiller {
        self.killer.clone()
    }

    /// The helper's pid (the process group of the tree).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The layers the policy asked for that are not enforced (best-effort mode only).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Gives the program up to 100 ms to exit on its own (it reports its own status then), kills
    /// the tree, reaps the helper and reads what was written to stderr.
    pub fn finish(mut self) -> Ended {
        let until = std::time::Instant::now() + EXIT_GRACE;
        while !self.child.exited() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.reap()
    }

    /// Kills the tree (a no-op for one that has exited), then reaps the helper.
    fn reap(&mut self) -> Ended {
        self.killer.kill_for_reaping();
        // An error means already reaped (only through `finish`, which consumes): report a kill.
        let status = self
            .child
            .wait_blocking()
            .unwrap_or_else(|_| ExitStatus::from_raw(libc::SIGKILL));
        let stderr = self.stderr.take().map(read_available).unwrap_or_default();
        let error = channel::error_of(&channel::collect(&mut self.helper));
        drop(self.group.take());
        if let Some(git) = self.git.take() {
            git.undo();
        }
        Ended {
            status,
            error,
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

impl Drop for SandboxedChild {
    fn drop(&mut self) {
        if *self.killer.inner.alive() {
            self.reap();
        }
    }
}

/// Reads what the pipe holds without waiting for writers that may still hold it (a tree that
/// escaped the kill); at most [`STDERR_KEPT`] bytes.
fn read_available(stderr: ChildStderr) -> Vec<u8> {
    let fd = OwnedFd::from(stderr);
    let _ = rustix::fs::fcntl_setfl(&fd, rustix::fs::OFlags::NONBLOCK);
    let mut kept = Vec::new();
    let _ = std::fs::File::from(fd)
        .take(STDERR_KEPT as u64)
        .read_to_end(&mut kept);
    kept
}

impl Launcher {
    /// Starts `request` confined by the policy (the plan [`Launcher::run`] applies), for as long
    /// as the caller keeps it: no timeout, no output cap.
    ///
    /// - The helper reads the plan from its stdin, so the program's **stdout is one end of a
    ///   Unix socket pair**, a duplex channel ([`SandboxedChild::channel`] is the other end);
    ///   its stdin is `/dev/null`. The seccomp ban on `socket(AF_UNIX)` does not touch it.
    /// - stderr is kept in its pipe (64 KiB) and read by [`SandboxedChild::finish`].
    /// - [`GroupKiller::kill`] (any thread) sends `SIGKILL` to the helper's process group, which
    ///   holds the program and, with a pid namespace, its init: the whole tree dies. It also
    ///   shuts the channel down, so a reader blocked on it returns. Dropping the child kills and
    ///   reaps it; the group is never signalled once the helper has been reaped.
    /// - A layer that fails to apply shows up as EOF on the channel; [`SandboxedChild::finish`]
    ///   then returns the helper's error in [`Ended::error`].
    /// - `PR_SET_PDEATHSIG` ties the program's life to the *thread* that called `spawn`: call it
    ///   from a thread that lives as long as the program should.
    ///
    /// ```no_run
    /// use std::io::{BufRead, BufReader, Write};
    /// use toolsmith_sandbox::exec::{ExecRequest, HelperCommand, Launcher, SpawnRequest};
    /// use toolsmith_sandbox::SandboxPolicy;
    ///
    /// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// let launcher = Launcher::new(HelperCommand::locate()?, SandboxPolicy::new("/work/project"));
    /// // `sh -c` with fd 1 as both its input and its output: an echo server.
    /// let exec = ExecRequest::new("sh", vec!["-c".into(), "head -n 1 <&1 >&1".into()], "/");
    /// let child = launcher.spawn(&SpawnRequest::new(exec).read_only())?;
    /// child.channel().write_all(b"hello\n")?;
    /// let mut line = String::new();
    /// BufReader::new(child.channel()).read_line(&mut line)?;
    /// assert_eq!(line, "hello\n");
    /// let ended = child.finish();
    /// assert!(ended.error.is_none());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`ExecError::Unavailable`] (fail-closed and a layer missing) and [`ExecError::Helper`]
    /// (the helper cannot be started or given its plan).
    pub fn spawn(&self, request: &SpawnRequest) -> Result<SandboxedChild, ExecError> {
        let mut prepared = self.prepare(&request.exec)?;
        let group = self.tree.take().unwrap_or_else(|warning| {
            prepared.warnings.push(warning);
            None
        });
        if !request.writable {
            // Nothing to protect from a program that cannot write.
            prepared.git = None;
            if let Some(landlock) = prepared.plan.landlock.as_mut() {
                landlock.write.clear();
            }
        }
        prepared.plan.stdin_from_stdout = request.stdin;
        let rule_fds = self.attach_rules(&mut prepared.plan);
        let json =
            serde_json::to_vec(&prepared.plan).map_err(|e| ExecError::Setup(e.to_string()))?;
        let (ours, theirs) = UnixStream::pair()
            .map_err(|e| ExecError::Helper(format!("cannot create the channel: {e}")))?;
        // `start_run` drops the program's end of both channels: EOF on ours means it is gone.
        let (child, helper) =
            self.helper
                .start_run(None, Stdio::from(OwnedFd::from(theirs)), Stdio::piped())?;
        let mut child = HelperProcess::new(child);
        let (_, stderr) = child.take_pipes();
        let killer = GroupKiller {
            inner: Arc::new(KillerState {
                pid: i32::try_from(child.id()).unwrap_or(0),
                alive: Mutex::new(true),
                channel: ours.try_clone().ok(),
            }),
        };
        let spawned = SandboxedChild {
            child,
            channel: ours,
            helper,
            stderr,
            killer,
            warnings: prepared.warnings,
            git: prepared.git,
            group,
        };
        // A helper that died before reading its plan shows as EOF on the channel and its exit in
        // `finish`, which says more than the `EPIPE` here would.
        // On error `spawned` is dropped: the tree is killed and reaped.
        enter_group(spawned.group.as_ref(), Some(spawned.id()))?;
        let mut fds = rule_fds.as_ref().map(|o| o.fds()).unwrap_or_default();
        fds.extend(prepared.loopback.as_ref().map(AsFd::as_fd));
        let _ = channel::send_plan(&spawned.helper, &json, &fds);
        Ok(spawned)
    }
}
