//! The helper: a small single-threaded process that applies the [`Plan`] to itself and execs.

mod mounts;
mod resident;
mod setup;
mod spare;

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::sync::atomic::{AtomicI32, Ordering};

use super::plan::{MountPlan, Plan, SeccompPlan};
use super::{EXEC_FAILED_STATUS, HELPER_ARG, SETUP_FAILED_STATUS, channel};
use crate::probe::NamespaceProbe;

/// The fd the helper reports its errors on (the launcher's socket), `-1` when there is none
/// (the `probe` and `degrade` modes, or a plan that did not come on a socket): then stderr.
static CHANNEL: AtomicI32 = AtomicI32::new(-1);

/// The helper's entry point: `toolsmith-sandbox-exec [__sandbox-exec] run|probe|degrade`.
///
/// - `run` (the default): closes stray fds, calls `setsid`, reads the JSON [`Plan`] from stdin
///   (a socket) to EOF, keeps that socket as its error channel (close-on-exec) and reopens stdin
///   on `/dev/null`, then applies in order: `PR_SET_PDEATHSIG`, rlimits, `unshare`
///   (user, net, pid, mount; identity uid/gid maps; `lo` up for loopback-only), the pid
///   namespace double fork (the middle process relays the status, PID 1 gets `PDEATHSIG`),
///   the mounts (private propagation, a fresh `/proc`, git protection's binds), `chdir`,
///   Landlock, seccomp (for loopback-only with mediation, first the `connect` filter whose
///   listener goes to the launcher's supervisor), and finally `execve` of the target with the
///   plan's environment.
/// - `spare PREPARATION` (a spare helper, see [`Ahead`](super::Ahead)): closes stray fds, calls
///   `setsid`, waits for the launcher's go (it is in its control group then), sets
///   `PR_SET_PDEATHSIG`, unshares the namespaces of the preparation, forks PID 1 with
///   `CLONE_PARENT` (the launcher's child, in a session of its own; the spare sends its pid
///   and exits, so no middle process relays the command's exit), which makes the mounts
///   private and mounts `/proc`, tells the launcher it is ready, then reads its plan and, once
///   it has checked the preparation is the plan's own, applies the rest as `run` does from the
///   rlimits on.
/// - `resident` (see [`resident`](super::resident)): forks spares on the launcher's requests,
///   each the launcher's child (`CLONE_PARENT`), which runs the `spare` mode without an `exec`;
///   with a pooled network namespace, forked into its user, pid and mount namespaces, in the
///   network namespace lent (the resident staying in the user namespace that owns the pool).
/// - `probe`: tries a seccomp filter with a user-notification listener in a child, then to
///   unshare user, net, pid and mount namespaces, then bind mounts and a procfs mount in a
///   child, and prints one JSON line.
/// - `degrade -- CMD [ARGS…]`: a testing aid; execs `CMD` under a seccomp filter that makes
///   Landlock and openat2 unavailable (`ENOSYS`) and namespaces forbidden (`EPERM`), so `CMD`
///   and its children exercise every fallback path (see [`degrade`](super::degrade)).
///
/// Call it first thing in `main`, before any thread is started (no tokio runtime yet):
/// `unshare(CLONE_NEWUSER)` fails in a multi-threaded process, and PID 1 of the pid namespace
/// runs in the helper's memory until it execs (`CLONE_VM | CLONE_VFORK`), which is only safe
/// when no other thread can hold a lock or touch that memory.
///
/// Never returns. On failure it writes one JSON object `{kind, message}` to the error channel
/// (see the [module docs](super)), or a line to stderr in the other modes, and exits with
/// status 125 (setup) or 127 (exec).
pub fn helper_main() -> ! {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == HELPER_ARG) {
        args.remove(0);
    }
    match args.first().and_then(|a| a.to_str()) {
        None | Some("run") => run(),
        Some("spare") => spare::run(args.get(1).and_then(|a| a.to_str())),
        Some("resident") => resident::run(),
        Some("probe") => probe(),
        Some("degrade") => super::degrade::main(&args[1..]),
        Some(other) => fail(
            "usage",
            &format!("unknown mode {other:?} (run|spare|resident|probe|degrade)"),
        ),
    }
}

/// Reports the error on the error channel (stderr when there is none) and exits with `_exit`
/// (no exit handlers: PID 1 runs in the middle process' memory until it execs).
#[allow(unsafe_code)]
pub(crate) fn fail(kind: &str, message: &str) -> ! {
    let status = if kind == "exec" {
        EXEC_FAILED_STATUS
    } else {
        SETUP_FAILED_STATUS
    };
    let report = serde_json::json!({"kind": kind, "message": message}).to_string();
    let fd = CHANNEL.load(Ordering::Relaxed);
    if fd < 0 || !channel::report(fd, report.as_bytes()) {
        eprintln!("toolsmith-sandbox-exec: {kind}: {message}");
    }
    // SAFETY: ends the process; stderr is unbuffered and the channel was written directly.
    unsafe { libc::_exit(status) }
}

#[allow(unsafe_code)]
fn probe() -> ! {
    // First: after `unshare(CLONE_NEWPID)` below, a fork past the mount probe's (PID 1 of the
    // new namespace, which exits) would fail.
    let mut result = NamespaceProbe {
        seccomp_listener: super::loopback::probe(),
        ..NamespaceProbe::default()
    };
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    if setup::unshare(libc::CLONE_NEWUSER).is_ok() {
        result.user = true;
        // As `run` does, so that the mounts below are tried as they will be made.
        let _ = std::fs::write("/proc/self/setgroups", "deny");
        let _ = std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"));
        let _ = std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"));
    }
    result.net = setup::unshare(libc::CLONE_NEWNET).is_ok();
    result.pid = setup::unshare(libc::CLONE_NEWPID).is_ok();
    if setup::unshare(libc::CLONE_NEWNS).is_ok() {
        // SAFETY: the helper is single-threaded; the child only mounts and exits.
        let child = unsafe { libc::fork() };
        if child == 0 {
            let (bind, proc) = mounts::probe(result.pid, !result.user);
            // SAFETY: leaving the child without running the parent's exit handlers.
            unsafe { libc::_exit(i32::from(bind) | i32::from(proc) << 1) };
        }
        let mut status = 0;
        // SAFETY: waiting for our own child with a valid status pointer.
        if child > 0 && unsafe { libc::waitpid(child, &mut status, 0) } == child {
            let bits = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                0
            };
            result.mount = bits & 1 != 0;
            result.private_proc = result.mount && bits & 2 != 0;
        }
    }
    let line = serde_json::to_string(&result).unwrap_or_default();
    println!("{line}");
    std::process::exit(0)
}

fn run() -> ! {
    // Until it moves, the channel is fd 0 itself (the socket is bidirectional).
    CHANNEL.store(0, Ordering::Relaxed);
    setup::close_stray_fds();
    // A session of its own before the wait for the plan, which may be long (a spare helper, see
    // `warm`): a Ctrl-C on toolsmith's terminal must not kill it, and the launcher's group kill
    // must reach it.
    rustix::process::setsid().unwrap_or_else(|e| fail("setsid", &e.to_string()));
    let Received {
        plan,
        rule_fds,
        mediation,
    } = receive(false);
    let parent = || rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get());
    if parent() != plan.parent_pid {
        fail("parent", "the launcher is gone");
    }
    setup::set_pdeathsig();
    if parent() != plan.parent_pid {
        fail("parent", "the launcher is gone");
    }
    setup::set_rlimits(&plan.rlimits).unwrap_or_else(|e| fail("rlimits", &e));
    // A fresh helper's network namespace is never pooled: its owner's descriptor goes.
    setup::enter_namespaces(&plan.namespaces, None).unwrap_or_else(|e| fail("namespaces", &e));
    setup::set_namespace_process_limit(&plan.rlimits).unwrap_or_else(|e| fail("rlimits", &e));
    let mediation = mediation.as_ref();
    let rules = Rules::Plan(&rule_fds);
    let (mounts, seccomp) = (Some(&plan.mounts), plan.seccomp.as_ref());
    if plan.namespaces.pid {
        setup::double_fork(&mut || confine_and_exec(&plan, mounts, seccomp, &rules, mediation))
    }
    match confine_and_exec(&plan, mounts, seccomp, &rules, mediation) {}
}

/// Where the Landlock ruleset comes from.
pub(super) enum Rules<'a> {
    /// Built at launch from the plan's [`LandlockPlan`](super::LandlockPlan), if any, and these
    /// descriptors (sent with it).
    Plan(&'a [OwnedFd]),
    /// Built and enforced ahead by a spare helper, from exactly the plan's
    /// [`LandlockPlan`](super::LandlockPlan) ([`Plan::landlock_ahead`]).
    Enforced,
}

/// A plan read from the channel, with what came with it.
pub(super) struct Received {
    pub(super) plan: Plan,
    /// The Landlock rules' descriptors.
    pub(super) rule_fds: Vec<OwnedFd>,
    /// The loopback supervisor's channel, when `connect` is mediated.
    pub(super) mediation: Option<OwnedFd>,
}

/// Reads the plan from the channel (fd 0) to EOF, checks it (only a `spare` helper may be asked
/// for a Landlock ruleset built ahead), moves the channel off fd 0 (see
/// [`setup::stdin_to_channel`]) and reports there from then on.
fn receive(spare: bool) -> Received {
    let (input, mut rule_fds) = match channel::receive_plan(std::io::stdin().as_fd()) {
        Ok(received) => received,
        Err(e) => fail("plan", &format!("cannot read the plan: {e}")),
    };
    let plan: Plan = match serde_json::from_slice(&input) {
        Ok(plan) => plan,
        Err(e) => fail("plan", &format!("invalid plan: {e}")),
    };
    drop(input);
    if plan.argv.is_empty() {
        fail("plan", "empty argv");
    }
    if plan.landlock_ahead && !spare {
        fail(
            "plan",
            "the plan asks for a Landlock ruleset built ahead, and this helper built none",
        );
    }
    // Loopback mediation's channel comes last, after the rules' descriptors.
    let mediation = if plan.seccomp.is_some_and(|s| s.mediate_loopback) {
        match rule_fds.pop() {
            Some(fd) => Some(fd),
            None => fail("plan", "the loopback supervisor's channel did not arrive"),
        }
    } else {
        None
    };
    let channel =
        setup::stdin_to_channel(plan.stdin_from_stdout).unwrap_or_else(|e| fail("stdio", &e));
    CHANNEL.store(channel, Ordering::Relaxed);
    Received {
        plan,
        rule_fds,
        mediation,
    }
}

/// The rest, in PID 1 when there is a pid namespace: `mounts` (the plan's; `None` for a spare,
/// which made them ahead), working directory, Landlock, seccomp (with `mediation`, the loopback
/// supervisor's channel: the `connect` filter first, its listener sent there; then `seccomp`,
/// `None` for a spare, which installed it ahead), `execve`. Never returns (`Infallible`): it
/// execs or [`fail`]s.
fn confine_and_exec(
    plan: &Plan,
    mounts: Option<&MountPlan>,
    seccomp: Option<&SeccompPlan>,
    rules: &Rules<'_>,
    mediation: Option<&OwnedFd>,
) -> std::convert::Infallible {
    if let Some(mounts) = mounts.filter(|_| plan.namespaces.mount) {
        mounts::apply(mounts).unwrap_or_else(|e| fail("mounts", &e));
    }
    // After the mounts: a working directory inside a protected path must be the new mount.
    if let Err(e) = std::env::set_current_dir(&plan.cwd) {
        fail("exec", &format!("cannot enter {}: {e}", plan.cwd.display()));
    }
    if let (Rules::Plan(fds), Some(landlock)) = (rules, &plan.landlock) {
        super::landlock::apply(landlock, fds).unwrap_or_else(|e| fail("landlock", &e));
    }
    if let Some(channel) = mediation {
        super::loopback::mediate(channel).unwrap_or_else(|e| fail("seccomp", &e));
    }
    if let Some(seccomp) = seccomp {
        install_seccomp(seccomp);
    }
    let error = std::process::Command::new(&plan.argv[0])
        .args(&plan.argv[1..])
        .env_clear()
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .exec();
    fail("exec", &format!("{}: {error}", plan.argv[0]))
}

/// Installs the filter `seccomp` says, or [`fail`]s.
fn install_seccomp(seccomp: &SeccompPlan) {
    let program = super::seccomp::program(seccomp).unwrap_or_else(|e| fail("seccomp", &e));
    super::seccomp::install(&program).unwrap_or_else(|e| fail("seccomp", &e));
}
