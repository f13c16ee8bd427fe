//! Helpers started ahead of their launch, and the launcher thread that starts them.
//!
//! Starting the helper (posix_spawn, exec, the dynamic loader, Rust's start-up) and moving it
//! into its tree's control group were about half of a sandboxed launch (~0.8 ms and, on cgroup
//! v1, ~0.2 ms of ~2.1 ms, measured as root on 2 cores). So each [`Launcher`](super::Launcher)
//! keeps one helper started ahead, a *spare* ([`Warm`]): spawned, in its own session, moved into
//! its control group, and blocked reading its plan. A launch takes the spare and only sends the
//! plan; the next spare is started in the background while the command runs. A launch that finds
//! no spare but one being started waits for it (it comes sooner than a fresh helper, which the
//! same thread would start after it); one that finds none (the first, or one of several at
//! once) starts its own helper, which applies the whole plan.
//!
//! The namespaces were most of what was left (~1.1 ms of the remaining ~1.9 ms), and they
//! depend on the launcher's policy only: so a spare is started *prepared* for the policy of the
//! launch before it ([`Ahead`]). It waits for the launcher's go (it is in its control group
//! then, so what it forks is too), unshares its user, network, pid and mount namespaces, forks
//! PID 1, mounts its `/proc` and git protection's binds, says it is ready, and only then is it
//! offered to a launch; then it restricts itself with the Landlock rules that came with its go
//! and installs the seccomp filter (see [`Ahead`]). The plan brings the rest: rlimits, `chdir`,
//! the environment.
//!
//! A prepared spare is not spawned but forked, by the launcher's resident helper
//! ([`resident`](super::resident)): the helper's `exec` and start-up were ~1.5 ms of the ~3.9 ms
//! a spare took to be ready (traced, loaded 2-core machine), which a launch that follows another
//! at once waits for. A launch takes a spare only if it was
//! prepared exactly as the plan would be ([`Waiting::serves`]; the helper checks again), and
//! only if it is alive; otherwise the spare is killed and a fresh helper serves the launch. A
//! spare serves one launch: its namespaces are its command's alone, its network namespace lent to
//! it alone from the launcher's pool ([`netns`](super::netns)). If a helper reports that it
//! cannot prepare, the launcher's later spares prepare nothing (the plan is applied whole, and a
//! launch reports a layer that cannot be).
//!
//! A prepared spare sends its mount and network namespaces' descriptors with its readiness,
//! and the launch holds them until it is over, then lets them go on a blocking thread
//! ([`LetGo`]): the last process of a mount namespace to exit unmounts its tree and waits for an
//! RCU grace period before its parent learns of the exit, which put that wait, long on a loaded
//! machine, between the command's end and the launch's; a network namespace's teardown took
//! both cores right after the command's exit. No process is left in the held namespaces and
//! nothing enters them again, but for a pooled network namespace, which goes back to its pool
//! once the launch's PID 1 was reaped, for a later spare to enter.
//!
//! A spare that died while waiting (killed from outside) is noticed before the plan is sent (it
//! has exited) or when it cannot be sent, and replaced by a fresh helper for that launch.
//!
//! Every helper of [`Launcher::run`](super::Launcher::run) is spawned on one process-wide thread,
//! the *launcher thread*, that never exits. `PR_SET_PDEATHSIG`, which the helper sets once it has
//! its plan (a prepared spare: once it has its go) so that the command dies with toolsmith, fires
//! when the *thread* that spawned the helper exits, not the process: a helper spawned from a
//! `spawn_blocking` thread that later idles out would have its command killed mid-run.

use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};

use super::ahead::Ahead;
use super::cgroup::Cgroup;
use super::channel::{self, GO, NET, PID1, READY};
use super::launcher::enter_group;
use super::netns::{NetNs, NetPool};
use super::process::HelperProcess;
use super::resident::Resident;
use super::rules::AheadRules;
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
    /// What the helper applied before its plan ([`Ahead`]), if anything: it takes only a plan
    /// prepared so.
    pub(crate) ahead: Option<Ahead>,
    /// The prepared helper's mount and network namespaces, held until its launch is over and
    /// let go off the launch's path ([`LetGo`]); the network namespace is not here when it is
    /// pooled.
    pub(crate) held: Vec<OwnedFd>,
    /// The prepared helper's network namespace and its owner, when it is pooled
    /// ([`Ahead::pools_network`]): back to the pool once the launch is over ([`LetGo`]).
    pub(crate) net: Option<NetNs>,
    /// The Landlock rules a prepared helper built its ruleset from, if it was given them with
    /// its go: only a plan with exactly these rules may ask it for that ruleset.
    pub(crate) rules: Option<AheadRules>,
    /// The digest ([`LandlockPlan::digest`]) of the JSON rules sent with the go, once sent.
    ///
    /// [`LandlockPlan::digest`]: super::LandlockPlan::digest
    pub(crate) digest: Option<u64>,
}

impl Waiting {
    /// Starts a helper from the calling thread (the launcher thread: see the
    /// [module docs](self)) and moves it into a group of `tree`; with `ahead`, then lets it
    /// prepare that much and waits until it has ([`PREPARE_TIMEOUT`] at most), lending it a
    /// network namespace from `pool` when it pools one and one is idle.
    ///
    /// # Errors
    ///
    /// [`ExecError::Helper`] when it cannot be started or did not get ready (killed, or too
    /// slow), [`ExecError::Setup`] when it cannot be moved into its group or reported that it
    /// could not prepare (it is killed then).
    pub(crate) fn start(
        helper: &HelperCommand,
        tree: &TreeLimits,
        ahead: Option<Ahead>,
        rules: Option<AheadRules>,
        resident: Option<&Residents>,
        pool: Option<&NetPool>,
    ) -> Result<Waiting, ExecError> {
        let (group, warning) = match tree.take() {
            Ok(group) => (group, None),
            Err(warning) => (None, Some(warning)),
        };
        // With a pooled network namespace: whether its `lo` is up (the kind lent and kept).
        let pooled = (ahead.as_ref())
            .filter(|a| a.pools_network())
            .map(|a| a.namespaces.loopback_up);
        let mut lent = pooled.zip(pool).and_then(|(up, pool)| pool.take(up));
        let forked = match (ahead.as_ref(), resident) {
            (Some(ahead), Some(resident)) => resident.fork(helper, ahead, &mut lent),
            _ => None,
        };
        let (process, channel) = match forked {
            Some(forked) => forked,
            None => {
                let (child, channel) =
                    helper.start_run(ahead.as_ref(), Stdio::piped(), Stdio::piped())?;
                (HelperProcess::new(child), channel)
            }
        };
        // On error `process` is dropped, which kills the helper.
        enter_group(group.as_ref(), Some(process.id()))?;
        let mut waiting = Waiting {
            process,
            channel,
            group,
            warning,
            rules: rules.filter(|_| ahead.is_some()),
            ahead,
            held: Vec::new(),
            net: None,
            digest: None,
        };
        if waiting.ahead.is_some() {
            // On error `waiting` is dropped: the helper is killed, its group removed (and the
            // namespace lent, not come back, let go).
            let mut held = waiting.prepare(lent)?;
            // READY's descriptors: the mount namespace's, the network namespace's, its owner's.
            if let Some(loopback_up) = pooled {
                let (Some(user), Some(net)) = (held.pop(), held.pop()) else {
                    return Err(ExecError::Helper(
                        "the spare helper did not send its network namespace".into(),
                    ));
                };
                waiting.net = Some(NetNs {
                    user,
                    net,
                    loopback_up,
                });
            }
            waiting.held = held;
        }
        Ok(waiting)
    }

    /// [`start`](Self::start) on the launcher thread, with nothing prepared ahead.
    pub(crate) fn start_on_launcher_thread(
        helper: &HelperCommand,
        tree: &TreeLimits,
    ) -> Result<Waiting, ExecError> {
        let (helper, tree) = (helper.clone(), tree.clone());
        on_launcher_thread(move || Waiting::start(&helper, &tree, None, None, None, None))
    }

    /// Whether the helper may take a plan whose preparation is `ahead`: it prepared nothing (it
    /// applies the whole plan), or exactly that.
    pub(crate) fn serves(&self, ahead: Option<&Ahead>) -> bool {
        self.ahead.is_none() || self.ahead.as_ref() == ahead
    }

    /// When the helper built its Landlock ruleset ahead from exactly `rules`: the digest of the
    /// rules it was given, for the plan to name them by ([`Plan::landlock_digest`]).
    ///
    /// [`Plan::landlock_digest`]: super::Plan::landlock_digest
    pub(crate) fn built(&self, rules: Option<&AheadRules>) -> Option<u64> {
        match (&self.rules, rules) {
            (Some(built), Some(rules)) if built.same(rules) => self.digest,
            _ => None,
        }
    }

    /// Sends [`GO`] (or, with [`Waiting::rules`], [`GO_WITH_RULES`](channel::GO_WITH_RULES), the
    /// Landlock plan and its descriptors), after [`NET`] and `lent`'s descriptors when a
    /// network namespace is lent, and waits for [`READY`]; returns the descriptors that came
    /// with it. With a pid namespace, [`PID1`] and PID 1's pid come first: PID 1 is this
    /// process' child ([`adopt`](Self::adopt)), and the spare that forked it exits.
    fn prepare(&mut self, lent: Option<NetNs>) -> Result<Vec<OwnedFd>, ExecError> {
        let lost =
            |why: String| ExecError::Helper(format!("the spare helper did not prepare: {why}"));
        if let Some(lent) = lent {
            // The spare sends them back with READY: the ones here go now.
            let fds = [lent.user.as_fd(), lent.net.as_fd()];
            channel::send_with_fds(self.channel.as_fd(), &[NET], &fds)
                .map_err(|e| lost(e.to_string()))?;
        }
        match &self.rules {
            Some(rules) => {
                let json = serde_json::to_vec(&rules.landlock)
                    .map_err(|e| ExecError::Setup(e.to_string()))?;
                self.digest = Some(super::LandlockPlan::digest(&json));
                channel::go_with_rules(&json).and_then(|go| {
                    channel::send_with_fds(self.channel.as_fd(), &go, &rules.opened.fds())
                })
            }
            None => (&self.channel).write_all(&[GO]),
        }
        .map_err(|e| lost(e.to_string()))?;
        self.channel
            .set_read_timeout(Some(PREPARE_TIMEOUT))
            .map_err(|e| lost(e.to_string()))?;
        let mut answer = channel::receive_byte(&self.channel);
        // The spare, once PID 1 is adopted: reaped (it exits as soon as it has sent the pid)
        // once READY came, or when this returns.
        let mut spare = None;
        if matches!(answer, Ok((Some(PID1), _))) {
            let pid = match channel::receive_pid(&self.channel) {
                Ok(Some(pid)) => pid,
                Ok(None) => return Err(lost("it exited".into())),
                Err(e) => return Err(lost(e.to_string())),
            };
            spare = Some(self.adopt(pid).map_err(|e| lost(e.to_string()))?);
            answer = channel::receive_byte(&self.channel);
        }
        self.channel
            .set_read_timeout(None)
            .map_err(|e| lost(e.to_string()))?;
        drop(spare);
        match answer {
            Ok((Some(READY), held)) => Ok(held),
            Ok((Some(first), _)) => {
                // A report: the rest of it says why.
                let mut report = vec![first];
                let _ = (&self.channel).take(64 * 1024).read_to_end(&mut report);
                Err(channel::error_of(&report)
                    .unwrap_or_else(|| ExecError::Setup("preparing the spare helper".into())))
            }
            Ok((None, _)) => Err(lost("it exited".into())),
            Err(e) => Err(lost(e.to_string())),
        }
    }

    /// Takes PID 1 of the spare's pid namespace, `pid`, in place of the spare: this process'
    /// child (forked with `CLONE_PARENT`), in a session of its own, holding the spare's pipes.
    /// Returns the spare, to be reaped (it has exited or is exiting).
    ///
    /// # Errors
    ///
    /// When `pid` is not an unreaped child of this process (nothing is adopted then).
    fn adopt(&mut self, pid: i32) -> std::io::Result<HelperProcess> {
        let id = Pid::from_raw(pid).ok_or_else(|| std::io::Error::other("no pid"))?;
        // Only a child of this process answers (an exited one too, still to be reaped).
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        waitid(WaitId::Pid(id), options)?;
        let (Some(stdout), Some(stderr)) = self.process.take_pipes() else {
            return Err(std::io::Error::other("the spare's pipes are gone"));
        };
        let pid1 = HelperProcess::forked(pid.unsigned_abs(), stdout.into(), stderr.into());
        Ok(std::mem::replace(&mut self.process, pid1))
    }
}

/// What a launch lets go of once it is over, whichever way it ends (when this is dropped), on
/// a blocking thread when a tokio runtime is at hand: the namespaces a prepared helper's launch
/// holds ([`Waiting::held`]), and the command's control group when nothing can be left in it.
///
/// The last process of a mount namespace to exit unmounts its tree and waits for an RCU grace
/// period before its parent learns of the exit; the last reference to a network namespace
/// queues its teardown, whose expedited grace periods took both cores for ~0.5 ms right after
/// the command's exit (traced on the 2-core test machine), while the launch was collecting
/// the output and checking git. Held, the command's exit is reported at once and both happen
/// once the launch is over. So does the group's look at whether it emptied (its
/// `cgroup.procs` read, ~40 µs of the launch's ~50 µs after the command as root on cgroup v1)
/// when the command had a pid namespace: PID 1's exit took every process of it, so nothing can
/// be left to kill before git's state is checked.
///
/// A pooled network namespace ([`Waiting::net`]) goes back to its pool instead, but only once
/// [`reusable`](Self::reusable) said its launch's PID 1 was reaped (see `netns.rs`).
#[derive(Debug)]
pub(crate) struct LetGo {
    /// The namespaces' descriptors.
    pub(crate) held: Vec<OwnedFd>,
    /// The group and where to take it back ([`TreeLimits::recycle`]).
    pub(crate) group: Option<(TreeLimits, Cgroup)>,
    /// The pooled network namespace and the pool it goes back to, once reusable.
    net: Option<(NetNs, std::sync::Weak<NetPool>)>,
    /// Whether `net` may go back to its pool.
    reusable: bool,
}

impl LetGo {
    /// What a launch lets go of: `held`, and `net`, back to `pool` if it may be reused.
    pub(crate) fn new(held: Vec<OwnedFd>, net: Option<NetNs>, pool: &Arc<NetPool>) -> LetGo {
        LetGo {
            held,
            group: None,
            net: net.map(|net| (net, Arc::downgrade(pool))),
            reusable: false,
        }
    }

    /// Lets the network namespace go back to its pool when the launch is over: call it once
    /// `pid1`, the launch's PID 1 (with a pid namespace), has been reaped. Nothing otherwise.
    pub(crate) fn reusable(&mut self, pid1: &HelperProcess) {
        self.reusable = pid1.reaped();
    }
}

impl Drop for LetGo {
    fn drop(&mut self) {
        let mut held = std::mem::take(&mut self.held);
        if let Some((net, pool)) = self.net.take() {
            let back = match pool.upgrade() {
                Some(pool) if self.reusable => pool.give_back(net),
                _ => Err(net),
            };
            if let Err(net) = back {
                held.extend([net.net, net.user]);
            }
        }
        let group = self.group.take();
        if held.is_empty() && group.is_none() {
            return;
        }
        super::off_path(move || {
            drop(held);
            if let Some((tree, group)) = group {
                tree.recycle(Some(group));
            }
        });
    }
}

/// How long the launcher thread waits for a spare to prepare (it takes ~1 ms; the launches
/// that find no spare meanwhile wait behind it).
const PREPARE_TIMEOUT: Duration = Duration::from_secs(10);

/// A launcher's spare helper (see the [module docs](self)). Dropping it kills the spare.
#[derive(Debug, Default)]
pub(crate) struct Warm {
    spare: Mutex<Option<Waiting>>,
    /// Whether a spare is being started.
    refilling: AtomicBool,
    /// Set when a helper reported it could not prepare ahead: the spares after it prepare
    /// nothing (the launches apply their whole plan, as without spares prepared ahead).
    unprepared: AtomicBool,
    /// The resident helper that forks the prepared spares ([`resident`](super::resident)).
    resident: Residents,
    /// The network namespaces lent to the prepared spares ([`netns`](super::netns)).
    pub(crate) nets: Arc<NetPool>,
}

/// A launcher's resident helper, started when a prepared spare is first needed (on the
/// launcher thread, where every refill runs).
#[derive(Debug, Default)]
pub(crate) struct Residents {
    resident: Mutex<Option<Resident>>,
    /// Set when a resident failed before it forked any spare (a helper without the mode, or a
    /// machine that refuses `CLONE_PARENT`): spares are spawned from then on.
    off: AtomicBool,
}

impl Residents {
    /// A spare prepared as `ahead`, forked by the resident helper (started now if there is
    /// none), in the network namespace `lent` (taken) when it pools one; `None` when it cannot
    /// be (the resident, dropped then, may be dead: the caller spawns the spare instead).
    fn fork(
        &self,
        helper: &HelperCommand,
        ahead: &Ahead,
        lent: &mut Option<NetNs>,
    ) -> Option<(HelperProcess, UnixStream)> {
        if self.off.load(Ordering::Acquire) {
            return None;
        }
        let mut slot = self.resident.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = slot.is_none();
        if fresh {
            *slot = Resident::start(helper).ok();
        }
        match slot.as_mut()?.fork(ahead, lent) {
            Ok(forked) => Some(forked),
            Err(_) => {
                *slot = None;
                if fresh {
                    self.off.store(true, Ordering::Release);
                }
                None
            }
        }
    }
}

impl Warm {
    /// The spare, if one is ready, or being started (then it waits for it: it comes sooner than
    /// a fresh helper, which would be started on the same thread after it).
    pub(crate) fn take(self: &Arc<Self>) -> Option<Waiting> {
        if let Some(spare) = self.lock().take() {
            return Some(spare);
        }
        if !self.refilling.load(Ordering::Acquire) {
            return None;
        }
        let warm = Arc::clone(self);
        on_launcher_thread(move || warm.lock().take())
    }

    /// Starts the next spare on the launcher thread, prepared as `ahead` (unless a helper could
    /// not prepare before), unless one is ready or being started. A spare that cannot be started
    /// is not reported: the launch that finds none starts its own helper and reports why that
    /// failed.
    pub(crate) fn refill(
        self: &Arc<Self>,
        helper: &HelperCommand,
        tree: &TreeLimits,
        ahead: Option<Ahead>,
        rules: Option<AheadRules>,
    ) {
        if self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        if self.lock().is_some() {
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
            let ahead = ahead.filter(|_| !warm.unprepared.load(Ordering::Acquire));
            let prepared = ahead.is_some();
            let (resident, pool) = (Some(&warm.resident), Some(&*warm.nets));
            let started = match Waiting::start(&helper, &tree, ahead, rules, resident, pool) {
                Ok(started) => Some(started),
                Err(ExecError::Setup(_)) if prepared => {
                    // The machine refused a layer: fall back to spares that apply nothing
                    // before the plan (a launch then reports what it cannot apply).
                    warm.unprepared.store(true, Ordering::Release);
                    None
                }
                Err(_) => None,
            };
            *warm.lock() = started;
            warm.refilling.store(false, Ordering::Release);
        });
        if submit(job).is_err() {
            self.refilling.store(false, Ordering::Release);
        }
    }

    /// Waits until a spare being started is ready (or failed); whether one is ready.
    pub(crate) fn settle(&self) -> bool {
        // Jobs run in order: once this one runs, the refill queued before it is done.
        on_launcher_thread(|| ());
        self.lock().is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Waiting>> {
        self.spare.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::NamespacePlan;

    /// A stand-in for a waiting helper (`sleep`, killed when dropped).
    fn waiting(ahead: Option<Ahead>) -> Waiting {
        let child = std::process::Command::new("sleep")
            .arg("60")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Waiting {
            process: HelperProcess::new(child),
            channel: UnixStream::pair().unwrap().0,
            group: None,
            warning: None,
            ahead,
            held: Vec::new(),
            net: None,
            rules: None,
            digest: None,
        }
    }

    #[test]
    fn a_spare_serves_only_the_plans_prepared_as_it_was() {
        let off = Ahead {
            namespaces: NamespacePlan {
                user: true,
                net: true,
                loopback_up: false,
                pid: true,
                mount: true,
            },
            mounts: super::super::MountPlan {
                make_private: false,
                proc: true,
                binds: Vec::new(),
            },
            seccomp: None,
        };
        let loopback = Ahead {
            namespaces: NamespacePlan {
                loopback_up: true,
                ..off.namespaces
            },
            ..off.clone()
        };
        let full = Ahead {
            namespaces: NamespacePlan {
                net: false,
                ..off.namespaces
            },
            ..off.clone()
        };
        let prepared = waiting(Some(off.clone()));
        assert!(prepared.serves(Some(&off)));
        assert!(!prepared.serves(Some(&loopback)) && !prepared.serves(Some(&full)));
        // A plan that must be applied whole is not given to a helper that applied some of it.
        assert!(!prepared.serves(None));
        // A spare that applied nothing takes any plan: it applies all of it.
        let bare = waiting(None);
        assert!(bare.serves(Some(&off)) && bare.serves(Some(&full)) && bare.serves(None));
    }
}
