//! The helper: a small single-threaded process that applies the [`Plan`] to itself and execs.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;

use rustix::process::{Resource, Rlimit};

use super::plan::{NamespacePlan, Plan, RlimitPlan};
use super::{EXEC_FAILED_STATUS, HELPER_ARG, SETUP_FAILED_STATUS};
use crate::probe::NamespaceProbe;

/// The prefix of the helper's error line on stderr.
pub(crate) const ERROR_MARKER: &str = "\u{1e}toolsmith-sandbox-exec:";

/// The helper's entry point: `toolsmith-sandbox-exec [__sandbox-exec] run|probe|degrade`.
///
/// - `run` (the default): reads the JSON [`Plan`] from stdin to EOF, reopens stdin on
///   `/dev/null`, then applies in order: close stray fds, `setsid`, `PR_SET_PDEATHSIG`, rlimits,
///   `unshare` (user, net, pid; identity uid/gid maps; `lo` up for loopback-only), the pid
///   namespace double fork (the middle process relays the status, PID 1 gets `PDEATHSIG`),
///   `chdir`, Landlock, seccomp, and finally `execve` of the target with the plan's environment.
/// - `probe`: tries to unshare user, net and pid namespaces and prints one JSON line.
/// - `degrade -- CMD [ARGS…]`: a testing aid; execs `CMD` under a seccomp filter that makes
///   Landlock and openat2 unavailable (`ENOSYS`) and namespaces forbidden (`EPERM`), so `CMD`
///   and its children exercise every fallback path (see [`degrade`](super::degrade)).
///
/// Call it first thing in `main`, before any thread is started (no tokio runtime yet):
/// `unshare(CLONE_NEWUSER)` fails in a multi-threaded process, and `fork` must be safe.
///
/// Never returns. On failure it writes one error line (see the [module docs](super)) and exits
/// with status 125 (setup) or 127 (exec).
pub fn helper_main() -> ! {
    let mut args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == HELPER_ARG) {
        args.remove(0);
    }
    match args.first().and_then(|a| a.to_str()) {
        None | Some("run") => run(),
        Some("probe") => probe(),
        Some("degrade") => super::degrade::main(&args[1..]),
        Some(other) => fail(
            "usage",
            &format!("unknown mode {other:?} (run|probe|degrade)"),
        ),
    }
}

/// Writes the error line and exits.
pub(crate) fn fail(kind: &str, message: &str) -> ! {
    let status = if kind == "exec" {
        EXEC_FAILED_STATUS
    } else {
        SETUP_FAILED_STATUS
    };
    let line = serde_json::json!({"kind": kind, "message": message});
    let _ = writeln!(std::io::stderr(), "{ERROR_MARKER}{line}");
    std::process::exit(status)
}

fn probe() -> ! {
    let mut result = NamespaceProbe::default();
    if unshare(libc::CLONE_NEWUSER).is_ok() {
        result.user = true;
    }
    result.net = unshare(libc::CLONE_NEWNET).is_ok();
    result.pid = unshare(libc::CLONE_NEWPID).is_ok();
    let line = serde_json::to_string(&result).unwrap_or_default();
    println!("{line}");
    std::process::exit(0)
}

fn run() -> ! {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        fail("plan", &format!("cannot read the plan: {e}"));
    }
    let plan: Plan = match serde_json::from_slice(&input) {
        Ok(plan) => plan,
        Err(e) => fail("plan", &format!("invalid plan: {e}")),
    };
    drop(input);
    if plan.argv.is_empty() {
        fail("plan", "empty argv");
    }
    stdin_to_dev_null().unwrap_or_else(|e| fail("stdio", &e));
    close_stray_fds();
    if rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get()) != plan.parent_pid {
        fail("parent", "the launcher is gone");
    }
    rustix::process::setsid().unwrap_or_else(|e| fail("setsid", &e.to_string()));
    set_pdeathsig();
    if rustix::process::getppid().map_or(0, |p| p.as_raw_nonzero().get()) != plan.parent_pid {
        fail("parent", "the launcher is gone");
    }
    set_rlimits(&plan.rlimits).unwrap_or_else(|e| fail("rlimits", &e));
    enter_namespaces(&plan.namespaces).unwrap_or_else(|e| fail("namespaces", &e));
    if plan.namespaces.pid {
        double_fork();
    }
    if let Err(e) = std::env::set_current_dir(&plan.cwd) {
        fail("exec", &format!("cannot enter {}: {e}", plan.cwd.display()));
    }
    if let Some(landlock) = &plan.landlock {
        super::landlock::apply(landlock).unwrap_or_else(|e| fail("landlock", &e));
    }
    if let Some(seccomp) = &plan.seccomp {
        let program = super::seccomp::program(seccomp).unwrap_or_else(|e| fail("seccomp", &e));
        super::seccomp::install(&program).unwrap_or_else(|e| fail("seccomp", &e));
    }
    let error = std::process::Command::new(&plan.argv[0])
        .args(&plan.argv[1..])
        .env_clear()
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .exec();
    fail("exec", &format!("{}: {error}", plan.argv[0]))
}

fn set_pdeathsig() {
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
}

/// Lowers a limit; the hard limit is never raised above the current one.
fn limit(resource: Resource, soft: u64, hard: u64) -> Result<(), String> {
    let current = rustix::process::getrlimit(resource);
    let cap = |v: u64| current.maximum.map_or(v, |m| v.min(m));
    rustix::process::setrlimit(
        resource,
        Rlimit {
            current: Some(cap(soft)),
            maximum: Some(cap(hard)),
        },
    )
    .map_err(|e| format!("{resource:?}: {e}"))
}

fn set_rlimits(plan: &RlimitPlan) -> Result<(), String> {
    if let Some(cpu) = plan.cpu_secs {
        limit(Resource::Cpu, cpu, cpu + 1)?;
    }
    if let Some(data) = plan.data_bytes {
        limit(Resource::Data, data, data)?;
    }
    if let Some(fsize) = plan.file_size_bytes {
        limit(Resource::Fsize, fsize, fsize)?;
    }
    limit(Resource::Core, 0, 0)?;
    if let Some(allowance) = plan.processes {
        // RLIMIT_NPROC counts every task of the real uid, so allow what already runs plus the
        // allowance.
        let nproc = allowance + processes_of(rustix::process::getuid().as_raw());
        limit(Resource::Nproc, nproc, nproc)?;
    }
    Ok(())
}

/// How many tasks (threads count, as `RLIMIT_NPROC` counts them) the processes `uid` owns have.
fn processes_of(uid: u32) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter(|e| e.metadata().is_ok_and(|m| m.uid() == uid))
        .map(|e| {
            std::fs::read_to_string(e.path().join("status"))
                .ok()
                .and_then(|status| {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix("Threads:"))
                        .and_then(|n| n.trim().parse::<u64>().ok())
                })
                .unwrap_or(1)
        })
        .sum()
}

fn enter_namespaces(plan: &NamespacePlan) -> Result<(), String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let mut flags = 0;
    if plan.user {
        flags |= libc::CLONE_NEWUSER;
    }
    if plan.net {
        flags |= libc::CLONE_NEWNET;
    }
    if plan.pid {
        flags |= libc::CLONE_NEWPID;
    }
    if flags == 0 {
        return Ok(());
    }
    unshare(flags).map_err(|e| format!("unshare: {e}"))?;
    if plan.user {
        let write = |file: &str, text: String| {
            std::fs::write(file, text).map_err(|e| format!("{file}: {e}"))
        };
        write("/proc/self/setgroups", "deny".into())?;
        write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    }
    if plan.loopback_up {
        loopback_up().map_err(|e| format!("bringing lo up: {e}"))?;
    }
    Ok(())
}

#[allow(unsafe_code)]
fn unshare(flags: libc::c_int) -> std::io::Result<()> {
    // SAFETY: unshare takes flags only; the helper is single-threaded, as CLONE_NEWUSER needs.
    let rc = unsafe { libc::unshare(flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// `SIOCGIFFLAGS`/`SIOCSIFFLAGS` on `lo` to set `IFF_UP`.
#[allow(unsafe_code)]
fn loopback_up() -> std::io::Result<()> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").or_else(|_| {
        // SAFETY: plain socket(2) call; the fd is owned by the UdpSocket below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh, owned socket.
        Ok(unsafe { <std::net::UdpSocket as std::os::fd::FromRawFd>::from_raw_fd(fd) })
    })?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
    // SAFETY: ifreq is plain old data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: fd is a valid socket and req a valid ifreq for these ioctls.
    unsafe {
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(fd, libc::SIOCSIFFLAGS, &req) < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Makes fd 0 `/dev/null`.
#[allow(unsafe_code)]
fn stdin_to_dev_null() -> Result<(), String> {
    let null = std::fs::File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    // SAFETY: dup2 onto fd 0, which this process owns; `null` stays valid for the call.
    let rc = unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), 0) };
    if rc < 0 {
        return Err(format!("dup2: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Closes every fd above 2 (fds another thread of the runtime leaked into the spawn).
#[allow(unsafe_code)]
fn close_stray_fds() {
    // SAFETY: closes fds this process does not use; nothing in the helper holds one above 2 here.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if rc != 0 {
        for fd in 3..1024 {
            // SAFETY: as above, closing unused fds.
            unsafe { libc::close(fd) };
        }
    }
}

/// The pid-namespace double fork: the child becomes PID 1 and returns; the middle process waits,
/// relays the exit status (or the signal) and never returns.
#[allow(unsafe_code)]
fn double_fork() {
    // SAFETY: the helper is single-threaded, so fork is safe; the child continues normally.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        fail(
            "namespaces",
            &format!("fork: {}", std::io::Error::last_os_error()),
        );
    }
    if pid == 0 {
        set_pdeathsig();
        return;
    }
    // The middle process: keep nothing open, so only the target holds the pipes.
    // SAFETY: closing every fd of this process; it only waits from now on.
    unsafe { libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) };
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child with a valid status pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            std::process::exit(SETUP_FAILED_STATUS);
        }
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: restoring the default action and re-raising the child's signal on ourselves.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
        }
        std::process::exit(128 + signal);
    }
    std::process::exit(libc::WEXITSTATUS(status))
}
