//! The warm pool of sandboxed worker processes.
//!
//! Each worker has a host thread, its *driver*, that spawns it through the sandbox launcher
//! (`PR_SET_PDEATHSIG` ties the worker to that thread, which lives exactly as long as the
//! worker), waits for its `Ready`, then reads the answer of each job, one at a time, with
//! blocking I/O until the job's hard deadline. A job that overruns it, a worker that dies or
//! talks nonsense, ends the worker: the driver kills the tree, reaps it and answers the job.
//!
//! The caller writes the request itself (a non-blocking `send`; the driver writes whatever did
//! not fit in the socket's buffer) before it hands the job to the driver, so the worker starts
//! at once and the driver wakes while it runs: three thread wake-ups a call rather than four.
//! The caller never waits on a socket or a timer, so any tokio runtime (even one without I/O or
//! time drivers) can call the tool.
//!
//! The pool keeps one spare: taking the last idle worker starts another in the background,
//! and so does discarding a dead one. A call that finds none waits for a start of its own.
//! Healthy workers go back to the pool (at most [`MAX_IDLE`] are kept).

use std::collections::VecDeque;
use std::io;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use rustix::net::SendFlags;
use tokio::sync::oneshot;
use toolsmith_sandbox::exec::{
    ExecError, ExecRequest, GroupKiller, HelperCommand, Launcher, SandboxedChild, SpawnRequest,
};
use toolsmith_sandbox::{
    Capabilities, EnvPolicy, Limits, NetworkPolicy, ReadPolicy, SandboxPolicy, Strictness,
    UnixSockets,
};

use super::protocol::{FrameError, Request, Response, encode, max_response, read_frame};
use super::worker::RunCodeWorker;
use super::{RunCodeLimits, WORKER_STACK_MARGIN};

/// Idle workers kept for concurrent calls; more are killed when they come back.
const MAX_IDLE: usize = 4;

/// How long a worker may take to start (spawn, confine, warm up, say `Ready`). Measured:
/// ~3 ms on an idle machine; the margin is for a loaded one.
const STARTUP: Duration = Duration::from_secs(10);

/// The driver threads' stack: blocking I/O and JSON of at most a few MiB.
const DRIVER_STACK: usize = 256 << 10;

/// What the worker may read while it starts: the dynamic loader, the shared libraries and their
/// cache (the worker binary itself is the policy's root). It drops even these before it runs
/// anything (see the worker module).
const LOADER_PATHS: [&str; 7] = [
    "/lib",
    "/lib64",
    "/lib32",
    "/usr/lib",
    "/usr/lib64",
    "/usr/lib32",
    "/etc/ld.so.cache",
];

/// The kernel's cap on the worker's data segment when the QuickJS heap is unlimited.
const UNLIMITED_HEAP_DATA: u64 = 1 << 30;

/// Headroom of the kernel cap over the QuickJS heap: the worker's own allocations (the result's
/// JSON copy, the console buffer, the request and response frames), the allocator's slack.
const DATA_HEADROOM: u64 = 64 << 20;

/// `RLIMIT_DATA` of a worker: twice the QuickJS heap (the result is copied out of it once),
/// plus the thread's stack and [`DATA_HEADROOM`]; [`UNLIMITED_HEAP_DATA`] when the heap limit
/// is off.
pub(super) fn kernel_memory_cap(limits: &RunCodeLimits) -> u64 {
    if limits.memory_bytes == 0 {
        return UNLIMITED_HEAP_DATA;
    }
    (limits.memory_bytes as u64)
        .saturating_mul(2)
        .saturating_add(limits.stack_bytes as u64)
        .saturating_add(WORKER_STACK_MARGIN as u64)
        .saturating_add(DATA_HEADROOM)
}

/// The sandbox policy of a worker: read only the worker and the loader's files, write nothing
/// (the spawn is read-only), no network, no Unix sockets, an empty environment, the kernel
/// memory cap, no file writes, few threads.
fn worker_policy(
    worker: &RunCodeWorker,
    limits: &RunCodeLimits,
    strictness: Strictness,
) -> SandboxPolicy {
    let mut policy = SandboxPolicy::new(worker.program());
    policy.read = ReadPolicy::Allowlist(LOADER_PATHS.iter().map(PathBuf::from).collect());
    policy.network = NetworkPolicy::Off;
    policy.unix_sockets = UnixSockets::Deny;
    policy.env = EnvPolicy {
        allow: Vec::new(),
        set: Vec::new(),
    };
    policy.limits = Limits {
        data_bytes: Some(kernel_memory_cap(limits)),
        file_size_bytes: Some(0),
        processes: Some(4),
        cpu: None,
        ..Limits::default()
    };
    policy.strictness = strictness;
    // It can write nothing, so there is no git state for it to change (and its "root" is its
    // own binary, not a workspace).
    policy.protect_git = false;
    policy
}

/// How the worker is found and confined.
#[derive(Debug, Clone)]
pub(super) struct PoolConfig {
    pub limits: RunCodeLimits,
    pub strictness: Strictness,
    /// `None`: [`RunCodeWorker::locate`] on first use.
    pub worker: Option<RunCodeWorker>,
}

/// The pool. Dropping it (with every clone of the tool) kills the idle workers; busy ones die
/// when their call ends.
#[derive(Debug)]
pub(super) struct Pool {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    config: PoolConfig,
    launcher: OnceLock<Result<Arc<Launcher>, String>>,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    idle: Vec<Worker>,
    starting: usize,
    waiters: VecDeque<oneshot::Sender<Result<Worker, String>>>,
}

/// A worker checked out of the pool. Dropping it kills the worker (its driver then reaps it).
#[derive(Debug)]
pub(super) struct Worker {
    jobs: mpsc::Sender<Job>,
    killer: GroupKiller,
    /// The host's end of the channel, for writing requests.
    channel: UnixStream,
}

struct Job {
    /// What is left of the request's frame after the caller's non-blocking send.
    rest: Vec<u8>,
    deadline: Option<Instant>,
    reply: oneshot::Sender<Reply>,
}

/// What became of a job.
#[derive(Debug)]
pub(super) enum Reply {
    /// The worker answered; it stays usable.
    Answer(Response),
    /// The worker was dead before the request was sent (it died idle): nothing ran.
    Stale,
    /// The hard deadline passed; the worker was killed.
    Deadline,
    /// The worker died (or broke the protocol) during the job.
    Died {
        /// How it ended: `signal 9 (SIGKILL)`…
        status: String,
        /// Its stderr.
        stderr: String,
    },
}

impl Worker {
    /// Runs `request` on the worker. Cancel by dropping the worker.
    pub(super) fn send(
        &self,
        request: &Request,
        deadline: Option<Instant>,
    ) -> oneshot::Receiver<Reply> {
        let (reply, rx) = oneshot::channel();
        if peer_closed(&self.channel) {
            let _ = reply.send(Reply::Stale);
            return rx;
        }
        let mut frame = match encode(request) {
            Ok(frame) => frame,
            Err(e) => {
                let _ = reply.send(Reply::Died {
                    status: format!("no request sent: {e}"),
                    stderr: String::new(),
                });
                return rx;
            }
        };
        let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
        // Nothing sent (or an error): the driver sends it all and sees the error itself.
        let sent = rustix::net::send(&self.channel, &frame, flags).unwrap_or(0);
        let job = Job {
            rest: frame.split_off(sent),
            deadline,
            reply,
        };
        if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
            let _ = job.reply.send(Reply::Stale);
        }
        rx
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.killer.kill();
    }
}

impl Pool {
    /// A pool; nothing starts until the first call or [`Pool::warm_up`].
    pub(super) fn new(config: PoolConfig) -> Self {
        Pool {
            shared: Arc::new(Shared {
                config,
                launcher: OnceLock::new(),
                state: Mutex::new(State::default()),
            }),
        }
    }

    /// Starts a spare worker in the background if there is none.
    pub(super) fn warm_up(&self) {
        let mut state = self.shared.lock();
        Shared::ensure_spare(&self.shared, &mut state);
    }

    /// An idle worker, or one started for this call.
    ///
    /// # Errors
    ///
    /// Why a worker could not be started (the sandbox's error).
    pub(super) async fn checkout(&self) -> Result<Worker, String> {
        let rx = {
            let mut state = self.shared.lock();
            if let Some(worker) = state.idle.pop() {
                Shared::ensure_spare(&self.shared, &mut state);
                return Ok(worker);
            }
            let (tx, rx) = oneshot::channel();
            state.waiters.push_back(tx);
            if state.starting < state.waiters.len() {
                Shared::start(&self.shared, &mut state);
            }
            rx
        };
        rx.await
            .unwrap_or_else(|_| Err("the run_code worker pool shut down".into()))
    }

    /// Gives a healthy worker back.
    pub(super) fn put_back(&self, worker: Worker) {
        let mut state = self.shared.lock();
        Shared::hand_over(&mut state, worker);
    }

    /// Drops a dead worker and makes sure a replacement is on its way.
    pub(super) fn discard(&self, worker: Worker) {
        drop(worker);
        let mut state = self.shared.lock();
        Shared::ensure_spare(&self.shared, &mut state);
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn ensure_spare(this: &Arc<Shared>, state: &mut State) {
        if state.idle.is_empty() && state.starting <= state.waiters.len() {
            Shared::start(this, state);
        }
    }

    /// Starts one worker on a new driver thread.
    fn start(this: &Arc<Shared>, state: &mut State) {
        state.starting += 1;
        let weak = Arc::downgrade(this);
        let spawned = std::thread::Builder::new()
            .name("run_code-driver".into())
            .stack_size(DRIVER_STACK)
            .spawn(move || drive(weak));
        if let Err(e) = spawned {
            Shared::start_failed(state, format!("cannot start a driver thread: {e}"));
        }
    }

    /// A worker for the first waiter still waiting, else the idle list.
    fn hand_over(state: &mut State, mut worker: Worker) {
        while let Some(waiter) = state.waiters.pop_front() {
            match waiter.send(Ok(worker)) {
                Ok(()) => return,
                Err(Ok(back)) => worker = back,
                Err(Err(_)) => return,
            }
        }
        if state.idle.len() < MAX_IDLE {
            state.idle.push(worker);
        }
    }

    fn start_failed(state: &mut State, error: String) {
        state.starting = state.starting.saturating_sub(1);
        if let Some(waiter) = state.waiters.pop_front() {
            let _ = waiter.send(Err(error));
        }
    }

    fn launcher(&self) -> Result<Arc<Launcher>, String> {
        self.launcher
            .get_or_init(|| {
                let worker = match &self.config.worker {
                    Some(worker) => worker.clone(),
                    None => {
                        RunCodeWorker::locate().map_err(|e| ExecError::Helper(e).to_string())?
                    }
                };
                let helper = HelperCommand::cli(worker.program());
                let policy = worker_policy(&worker, &self.config.limits, self.config.strictness);
                Ok(Arc::new(Launcher::with_capabilities(
                    helper.clone(),
                    policy,
                    capabilities(&helper),
                )))
            })
            .clone()
    }
}

/// The machine's capabilities, probed once per worker program through its helper mode.
fn capabilities(helper: &HelperCommand) -> Capabilities {
    static CAPS: Mutex<Vec<(PathBuf, Capabilities)>> = Mutex::new(Vec::new());
    let mut known = CAPS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, caps)) = known.iter().find(|(p, _)| p == helper.program()) {
        return caps.clone();
    }
    let caps = Capabilities::detect_with(Some(helper));
    known.push((helper.program().to_path_buf(), caps.clone()));
    caps
}

/// A driver thread: start the worker, hand it to the pool, serve its jobs, reap it.
fn drive(shared: Weak<Shared>) {
    let started = shared.upgrade().map(|pool| {
        let launcher = pool.launcher()?;
        let program = launcher.policy().root.to_string_lossy().into_owned();
        let args = RunCodeWorker::args(&pool.config.limits);
        let max = max_response(&pool.config.limits);
        drop(pool);
        let request = SpawnRequest::new(ExecRequest::new(program, args, "/")).read_only();
        start(&launcher, &request).map(|child| (child, max))
    });
    let (child, max) = match started {
        None => return,
        Some(Ok(started)) => started,
        Some(Err(error)) => {
            if let Some(pool) = shared.upgrade() {
                Shared::start_failed(&mut pool.lock(), error);
            }
            return;
        }
    };
    let Ok(channel) = child.channel().try_clone() else {
        return;
    };
    let (jobs, queue) = mpsc::channel();
    let worker = Worker {
        jobs,
        killer: child.killer(),
        channel,
    };
    match shared.upgrade() {
        Some(pool) => {
            let mut state = pool.lock();
            state.starting = state.starting.saturating_sub(1);
            Shared::hand_over(&mut state, worker);
        }
        None => return,
    }
    serve(child, &queue, max);
}

/// Spawns the worker and waits for its `Ready`.
fn start(launcher: &Launcher, request: &SpawnRequest) -> Result<SandboxedChild, String> {
    let child = launcher.spawn(request).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + STARTUP;
    let mut input = child.channel();
    let greeting = read_frame(
        &mut input,
        1 << 10,
        |until| readable(child.channel(), until),
        Some(deadline),
    );
    match greeting {
        Ok(frame) if matches!(serde_json::from_slice(&frame), Ok(Response::Ready)) => Ok(child),
        Ok(_) => Err("the run_code worker started with an unexpected message".into()),
        Err(FrameError::Deadline) => Err(format!(
            "the run_code worker did not start within {} s",
            STARTUP.as_secs()
        )),
        Err(_) => {
            let ended = child.finish();
            Err(match ended.error {
                Some(error) => error.to_string(),
                None => {
                    let how = ended.describe();
                    match ended.stderr.trim() {
                        "" => format!("the run_code worker exited while starting ({how})"),
                        said => {
                            format!("the run_code worker exited while starting ({how}): {said}")
                        }
                    }
                }
            })
        }
    }
}

/// Serves jobs until the queue closes or the worker ends; then reaps it and answers the job in
/// flight, if any.
fn serve(child: SandboxedChild, queue: &mpsc::Receiver<Job>, max: usize) {
    let channel = child.channel();
    let mut in_flight = None;
    let mut deadline_passed = false;
    // Why the worker is dropped when it is not its own doing (an answer out of protocol).
    let mut violation: Option<String> = None;
    for job in queue.iter() {
        if send_all(channel, &job.rest, job.deadline).is_err() {
            in_flight = Some(job.reply);
            break;
        }
        let mut input = channel;
        let frame = read_frame(
            &mut input,
            max,
            |until| readable(channel, until),
            job.deadline,
        );
        match frame.map(|f| serde_json::from_slice::<Response>(&f)) {
            Ok(Ok(response)) => {
                let _ = job.reply.send(Reply::Answer(response));
            }
            Err(FrameError::Deadline) => {
                deadline_passed = true;
                in_flight = Some(job.reply);
                break;
            }
            Ok(Err(e)) => {
                violation = Some(format!("invalid answer: {e}"));
                in_flight = Some(job.reply);
                break;
            }
            Err(FrameError::Closed) => {
                in_flight = Some(job.reply);
                break;
            }
            Err(e) => {
                violation = Some(e.to_string());
                in_flight = Some(job.reply);
                break;
            }
        }
    }
    // A worker that overran or broke the protocol dies now; one that closed its end gets
    // `finish`'s grace to exit with its own status. Reap before answering, so a caller that
    // gets its answer finds the tree gone.
    if deadline_passed || violation.is_some() {
        child.killer().kill();
    }
    let ended = child.finish();
    if let Some(reply) = in_flight {
        let _ = reply.send(if deadline_passed {
            Reply::Deadline
        } else {
            Reply::Died {
                status: match violation {
                    Some(violation) => format!("killed after {violation}"),
                    None => ended.describe(),
                },
                stderr: ended.stderr,
            }
        });
    }
}

/// Sends `bytes`, blocking until `deadline` at most (`EPIPE`, not `SIGPIPE`, if the worker is
/// gone).
fn send_all(channel: &UnixStream, mut bytes: &[u8], deadline: Option<Instant>) -> io::Result<()> {
    while !bytes.is_empty() {
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::ErrorKind::TimedOut.into());
            }
            channel.set_write_timeout(Some(left))?;
        }
        match rustix::net::send(channel, bytes, SendFlags::NOSIGNAL) {
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Whether the worker's end is gone (or, against the protocol, sent something unasked).
fn peer_closed(channel: &UnixStream) -> bool {
    readable(channel, Instant::now()).unwrap_or(true)
}

/// Waits until `channel` is readable or at EOF (`true`), or `until` passes (`false`).
fn readable(channel: &UnixStream, until: Instant) -> io::Result<bool> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let timeout = Timespec {
            tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        let mut fds = [PollFd::new(channel, PollFlags::IN | PollFlags::RDHUP)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) if left.is_zero() => return Ok(false),
            Ok(0) | Err(rustix::io::Errno::INTR) => {}
            Ok(_) => return Ok(true),
            Err(e) => return Err(e.into()),
        }
    }
}
