//! Helpers started ahead of their launch, and the launcher thread that starts them.
//!
//! Starting the helper (posix_spawn, exec, the dynamic loader, Rust's start-up) and moving it
//! into its tree's control group were about half of a sandboxed launch (~0.8 ms and, on cgroup
//! v1, ~0.2 ms of ~2.1 ms, measured as root on 2 cores). So each [`Launcher`](super::Launcher)
//! keeps one helper started ahead, a *spare* ([`Warm`]): spawned, in its own session, moved into
//! its control group, and blocked reading its plan. It applies nothing before the plan comes —
//! a spare is a process that waits, not a sandbox — so the plan it later receives is applied
//! whole, exactly as on a fresh helper. A launch takes the spare and only sends the plan; the
//! next spare is started in the background while the command runs. A launch that finds no
//! spare (the first, or one of several at once) starts its own helper. A spare that died while
//! waiting (killed from outside) is noticed when the plan cannot be sent, and replaced by a
//! fresh helper for that launch.
//!
//! Every helper of [`Launcher::run`](super::Launcher::run) is spawned on one process-wide thread,
//! the *launcher thread*, that never exits. `PR_SET_PDEATHSIG`, which the helper sets once it has
//! its plan so that the command dies with toolsmith, fires when the *thread* that spawned the
//! helper exits, not the process: a helper spawned from a `spawn_blocking` thread that later
//! idles out would have its command killed mid-run.

use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use super::cgroup::Cgroup;
use super::launcher::enter_group;
use super::process::HelperProcess;
use super::tree::TreeLimits;
use super::{ExecError, HelperCommand};

/// A job for the launcher thread.
type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` on the launcher thread and returns what it returns (on the calling thread when the
/// launcher thread cannot be started).
pub(crate) fn on_launcher_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = tx.send(f());
    });
    match submit(job) {
        // The thread runs every job it takes, and never exits: an answer always comes.
        Ok(()) => rx.recv().expect("the launcher thread answers every job"),
        Err(job) => {
            job();
            rx.recv().expect("the job just ran")
        }
    }
}

/// Queues `job` for the launcher thread; gives it back when the thread cannot be started.
fn submit(job: Job) -> Result<(), Job> {
    static THREAD: OnceLock<Option<Mutex<Sender<Job>>>> = OnceLock::new();
    let sender = THREAD.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("toolsmith-launcher".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    match sender {
        Some(sender) => sender
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .send(job)
            .map_err(|e| e.0),
        None => Err(job),
    }
}

/// A helper started with piped stdout and stderr, in its tree's control group, blocked reading
/// its plan from [`Waiting::channel`].
#[derive(Debug)]
pub(crate) struct Waiting {
    /// The helper (killed and reaped when dropped).
    pub(crate) process: HelperProcess,
    /// The launcher's end of the plan-and-error channel.
    pub(crate) channel: UnixStream,
    /// The control group the helper is in, when tree limits are enforced.
    pub(crate) group: Option<Cgroup>,
    /// Why tree limits are not enforced although they could have been (a group could not be
    /// made), for the launch's warnings.
    pub(crate) warning: Option<String>,
}

impl Waiting {
    /// Starts a helper from the calling thread (the launcher thread: see the
    /// [module docs](self)) and moves it into a group of `tree`.
    ///
    /// # Errors
    ///
    /// [`ExecError::Helper`] when it cannot be started, [`ExecError::Setup`] when it cannot be
    /// moved into its group (it is killed then).
    pub(crate) fn start(helper: &HelperCommand, tree: &TreeLimits) -> Result<Waiting, ExecError> {
        let (group, warning) = match tree.take() {
            Ok(group) => (group, None),
            Err(warning) => (None, Some(warning)),
        };
        let (child, channel) = helper.start_run(Stdio::piped(), Stdio::piped())?;
        let process = HelperProcess::new(child);
        // On error `process` is dropped, which kills the helper.
        enter_group(group.as_ref(), Some(process.id()))?;
        Ok(Waiting {
            process,
            channel,
            group,
            warning,
        })
    }

    /// [`start`](Self::start) on the launcher thread.
    pub(crate) fn start_on_launcher_thread(
        helper: &HelperCommand,
        tree: &TreeLimits,
    ) -> Result<Waiting, ExecError> {
        let (helper, tree) = (helper.clone(), tree.clone());
        on_launcher_thread(move || Waiting::start(&helper, &tree))
    }
}

/// A launcher's spare helper (see the [module docs](self)). Dropping it kills the spare.
#[derive(Debug, Default)]
pub(crate) struct Warm {
    spare: Mutex<Option<Waiting>>,
    /// Whether a spare is being started.
    refilling: AtomicBool,
}

impl Warm {
    /// The spare, if one is ready.
    pub(crate) fn take(&self) -> Option<Waiting> {
        self.spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Starts the next spare on the launcher thread, unless one is ready or being started. A
    /// spare that cannot be started is not reported: the launch that finds none starts its own
    /// helper and reports why that failed.
    pub(crate) fn refill(self: &Arc<Self>, helper: &HelperCommand, tree: &TreeLimits) {
        if self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        if self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
        {
            self.refilling.store(false, Ordering::Release);
            return;
        }
        let warm = Arc::downgrade(self);
        let (helper, tree) = (helper.clone(), tree.clone());
        let job: Job = Box::new(move || {
            // Not for a launcher that is gone (its spare would only be killed).
            let Some(warm) = warm.upgrade() else {
                return;
            };
            let started = Waiting::start(&helper, &tree).ok();
            *warm.spare.lock().unwrap_or_else(PoisonError::into_inner) = started;
            warm.refilling.store(false, Ordering::Release);
        });
        if submit(job).is_err() {
            self.refilling.store(false, Ordering::Release);
        }
    }
}
