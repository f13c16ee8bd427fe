//! The helper's process setup: rlimits, namespaces, file descriptors, the pid-namespace double
//! fork.

use std::os::fd::OwnedFd;

use rustix::process::{Resource, Rlimit};

use super::super::SETUP_FAILED_STATUS;
use super::super::plan::{NamespacePlan, RlimitPlan};
use super::fail;

pub(super) fn set_pdeathsig() {
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

pub(super) fn set_rlimits(plan: &RlimitPlan) -> Result<(), String> {
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
    if let Some(allowance) = plan.processes
        && !plan.processes_in_user_namespace
    {
        // RLIMIT_NPROC counts every task of the real uid, so allow what already runs plus the
        // allowance.
        let nproc = allowance + processes_of(rustix::process::getuid().as_raw());
        limit(Resource::Nproc, nproc, nproc)?;
    }
    Ok(())
}

/// `RLIMIT_NPROC` = the allowance, inside the new user namespace (where the kernel counts only
/// its processes); see [`RlimitPlan::processes_in_user_namespace`].
pub(super) fn set_namespace_process_limit(plan: &RlimitPlan) -> Result<(), String> {
    match plan.processes {
        Some(allowance) if plan.processes_in_user_namespace => {
            limit(Resource::Nproc, allowance, allowance)
        }
        _ => Ok(()),
    }
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

/// Enters `plan`'s namespaces. With a user, a network and a pid namespace
/// ([`NamespacePlan::network_apart`]), the network namespace first, `lent` or a new one, in a
/// user namespace of its own ([`enter_lent_network`]), then the others inside that one, so
/// that the command holds no capability over its network; returns that user namespace's
/// descriptor then (close-on-exec).
pub(super) fn enter_namespaces(
    plan: &NamespacePlan,
    lent: Option<(OwnedFd, OwnedFd)>,
) -> Result<Option<OwnedFd>, String> {
    if !plan.network_apart() {
        enter_together(plan)?;
        return Ok(None);
    }
    let owner = enter_lent_network(plan, lent)?;
    enter_together(&NamespacePlan {
        net: false,
        loopback_up: false,
        ..*plan
    })?;
    Ok(Some(owner))
}

/// Unshares `plan`'s namespaces with one `unshare`.
fn enter_together(plan: &NamespacePlan) -> Result<(), String> {
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
    if plan.mount {
        flags |= libc::CLONE_NEWNS;
    }
    if flags == 0 {
        return Ok(());
    }
    unshare(flags).map_err(|e| format!("unshare: {e}"))?;
    if plan.user {
        identity_maps(uid, gid)?;
    }
    if plan.loopback_up {
        loopback_up().map_err(|e| format!("bringing lo up: {e}"))?;
    }
    Ok(())
}

/// Maps `uid` and `gid` to themselves in the user namespace just unshared (`setgroups` denied,
/// as an unprivileged map needs).
pub(super) fn identity_maps(uid: u32, gid: u32) -> Result<(), String> {
    let write =
        |file: &str, text: String| std::fs::write(file, text).map_err(|e| format!("{file}: {e}"));
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// Enters the network namespace the command runs in, in the user namespace that owns it (`U0`;
/// see `netns.rs` for the contract): `lent`'s (that user namespace and the network namespace,
/// from the launcher's pool), or, when none was lent or it cannot be entered, a new one made
/// here (identity maps, `lo` up if `plan.loopback_up`). The command's own user namespace is
/// unshared after this, inside `U0`. Returns `U0`'s descriptor, which a spare sends to the
/// launcher with the network namespace's.
fn enter_lent_network(
    plan: &NamespacePlan,
    lent: Option<(OwnedFd, OwnedFd)>,
) -> Result<OwnedFd, String> {
    let (user, net) = lent.unzip();
    // In the lent owner, or a new one: either way one this process has every capability in.
    let entered = user.is_some_and(|user| setns(&user, libc::CLONE_NEWUSER).is_ok());
    let owner = if entered {
        open_own_user_namespace()?
    } else {
        enter_new_user_namespace()?
    };
    enter_network(net.as_ref().filter(|_| entered), plan.loopback_up)?;
    Ok(owner)
}

/// Unshares a user namespace with identity maps for this process' uid and gid; returns its
/// descriptor (close-on-exec).
pub(super) fn enter_new_user_namespace() -> Result<OwnedFd, String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    unshare(libc::CLONE_NEWUSER).map_err(|e| format!("unshare: {e}"))?;
    identity_maps(uid, gid)?;
    open_own_user_namespace()
}

/// This process' user namespace's descriptor (close-on-exec).
fn open_own_user_namespace() -> Result<OwnedFd, String> {
    std::fs::File::open("/proc/self/ns/user")
        .map(OwnedFd::from)
        .map_err(|e| format!("/proc/self/ns/user: {e}"))
}

/// Enters the network namespace `lent`, or, when none was lent or it cannot be entered, a new
/// one (`lo` up if `lo_up`). Call it in the user namespace that owns (or is to own) it,
/// where this process has every capability.
pub(super) fn enter_network(lent: Option<&OwnedFd>, lo_up: bool) -> Result<(), String> {
    if lent.is_some_and(|net| setns(net, libc::CLONE_NEWNET).is_ok()) {
        return Ok(());
    }
    unshare(libc::CLONE_NEWNET).map_err(|e| format!("unshare: {e}"))?;
    if lo_up {
        loopback_up().map_err(|e| format!("bringing lo up: {e}"))?;
    }
    Ok(())
}

#[allow(unsafe_code)]
fn setns(ns: &OwnedFd, kind: libc::c_int) -> std::io::Result<()> {
    // SAFETY: setns with a descriptor this process owns; the helper is single-threaded, as
    // entering a user namespace needs.
    let rc = unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(ns), kind) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[allow(unsafe_code)]
pub(super) fn unshare(flags: libc::c_int) -> std::io::Result<()> {
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

/// Turns the plan socket on fd 0 into the error channel ([`close_stray_fds`] ran before the plan
/// came): moves the socket to the lowest free fd above 2 with `FD_CLOEXEC` (so `execve` closes it: EOF without data tells the launcher the
/// target runs), and reopens fd 0 on `/dev/null` — or, with `from_stdout`, on fd 1 (a spawned
/// program's socket to the launcher, which a stdio server reads its requests from). Returns
/// the channel's fd.
#[allow(unsafe_code)]
pub(super) fn stdin_to_channel(from_stdout: bool) -> Result<i32, String> {
    // SAFETY: fcntl on fd 0, which this process owns; the new fd is ours.
    let channel = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if channel < 0 {
        return Err(format!("dup: {}", std::io::Error::last_os_error()));
    }
    if from_stdout {
        // SAFETY: dup2 of fd 1 onto fd 0, both this process's own.
        if unsafe { libc::dup2(1, 0) } < 0 {
            return Err(format!("dup2: {}", std::io::Error::last_os_error()));
        }
        return Ok(channel);
    }
    let null = std::fs::File::open("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    // SAFETY: dup2 onto fd 0, which this process owns; `null` stays valid for the call.
    let rc = unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), 0) };
    if rc < 0 {
        return Err(format!("dup2: {}", std::io::Error::last_os_error()));
    }
    Ok(channel)
}

/// Closes every fd above 2 (another thread of the runtime may have leaked one into the spawn):
/// first thing, before the plan brings the launcher's rule descriptors.
pub(super) fn close_stray_fds() {
    close_fds_from(3);
}

/// Closes every fd from `first` up.
#[allow(unsafe_code)]
pub(super) fn close_fds_from(first: u32) {
    // SAFETY: closes fds this process does not use (the callers hold none from `first` up).
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, u32::MAX, 0u32) };
    if rc != 0 {
        for fd in first..1024 {
            // SAFETY: as above, closing unused fds.
            unsafe { libc::close(fd as i32) };
        }
    }
}

/// Stack reserved for PID 1 while it shares the middle process' memory (only the pages it
/// touches are allocated; a guard page below catches an overflow).
const PID1_STACK: usize = 8 << 20;

/// The pid-namespace double fork: runs `pid1` as PID 1 of the new pid namespace (with
/// `PR_SET_PDEATHSIG`); this process becomes the middle one, which closes every fd, waits,
/// relays the exit status (or the signal) and never returns.
///
/// PID 1 is made with `clone(CLONE_VM | CLONE_VFORK)`, as `posix_spawn` makes its children: it
/// runs on its own stack in this process' memory while this process sleeps until it execs (or
/// exits), so nothing is copied. Measured with a few MiB of heap: ~250 µs against ~385 µs for
/// `fork` (median of 400, unshare included). Safe here because the helper is single-threaded
/// (no lock can be held by another thread) and this process only waits afterwards; `pid1` must
/// end in `execve` or `_exit` (see [`super::fail`]), never return or unwind.
#[allow(unsafe_code)]
pub(super) fn double_fork(pid1: &mut dyn FnMut() -> std::convert::Infallible) -> ! {
    #[allow(unreachable_code)]
    extern "C" fn start(arg: *mut libc::c_void) -> libc::c_int {
        set_pdeathsig();
        // SAFETY: `arg` is the `&mut dyn FnMut` below, alive while the parent is suspended.
        let pid1 = unsafe { &mut *arg.cast::<&mut dyn FnMut() -> std::convert::Infallible>() };
        match pid1() {}
    }
    // SAFETY: a fresh private anonymous mapping; checked below.
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            PID1_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        fail(
            "namespaces",
            &format!("stack: {}", std::io::Error::last_os_error()),
        );
    }
    // SAFETY: the lowest page of our own mapping becomes the guard page.
    unsafe { libc::mprotect(stack, 4096, libc::PROT_NONE) };
    let mut pid1 = pid1;
    // SAFETY: the stack top is inside the mapping (stacks grow down); `start` only runs `pid1`,
    // which execs or exits; CLONE_VFORK keeps this process (and `pid1`) still until then.
    let pid = unsafe {
        libc::clone(
            start,
            stack.cast::<u8>().add(PID1_STACK).cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_mut(&mut pid1).cast(),
        )
    };
    if pid < 0 {
        fail(
            "namespaces",
            &format!("clone: {}", std::io::Error::last_os_error()),
        );
    }
    relay(pid)
}

/// Forks this process with `CLONE_PARENT`: the child's parent is this process' parent; with
/// `namespaces` (`CLONE_NEW*` flags), the child starts in new namespaces of those kinds (with
/// `CLONE_NEWPID`, as PID 1 of its own). `0` in the child, the child's pid here.
///
/// Only for the helper, which is single-threaded (a fork of a multi-threaded process may leave
/// the child with a lock held); the child must only exec or exit.
#[allow(unsafe_code)]
pub(super) fn fork_beside_parent(namespaces: libc::c_int) -> std::io::Result<i64> {
    // SAFETY: `CLONE_PARENT | SIGCHLD` (and namespace flags) without a new stack is a fork,
    // which is sound in the single-threaded helper.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::CLONE_PARENT | libc::SIGCHLD | namespaces,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(pid)
}

/// The pid-namespace fork of a spare helper ([`Ahead`](super::super::Ahead)): runs `pid1` as PID 1
/// of the new pid namespace, forked with `CLONE_PARENT` so that it is the *launcher's* child, in
/// a session of its own (its pid is the tree's process group) with `PR_SET_PDEATHSIG` (which
/// follows the launcher thread, as the spare's did). This process, the spare the launcher
/// started, sends [`PID1`](super::super::channel::PID1) and PID 1's pid on the channel and exits:
/// the launcher waits for PID 1 itself and reaps it in place of the spare.
///
/// No middle process relays the command's exit: that hop (PID 1's exit waking the middle
/// process, whose own exit then woke the launcher) was ~0.19 ms of a launch, traced on the
/// 2-core machine, and the middle's exit dropped the last reference to the network namespace on
/// the launch's path. The status is PID 1's own, as the middle relayed it (an exit code, or the
/// signal that killed it).
///
/// PID 1 waits on a pipe until the pid is sent, so the pid comes before anything PID 1 writes on
/// the channel ([`READY`](super::super::channel::READY) or a report). Not `CLONE_VFORK`: PID 1
/// waits for its plan, for as long as the spare is not used (see [`double_fork`]).
#[allow(unsafe_code)]
pub(super) fn fork_pid1(pid1: &mut dyn FnMut() -> std::convert::Infallible) -> ! {
    use std::io::{Read, Write};
    use std::os::fd::AsFd;
    let (mut gate, mut open_gate) =
        std::io::pipe().unwrap_or_else(|e| fail("namespaces", &format!("pipe: {e}")));
    // The child's parent is ours (the launcher). It only runs `pid1`, which execs or exits.
    let pid = fork_beside_parent(0).unwrap_or_else(|e| fail("namespaces", &format!("clone: {e}")));
    if pid == 0 {
        drop(open_gate);
        let mut byte = [0u8; 1];
        if gate.read_exact(&mut byte).is_err() {
            // The spare died before the launcher learnt this pid (killed from outside between
            // the fork and its message): nobody would take the plan. Nobody reaps this process
            // either; it stays a zombie until toolsmith exits.
            // SAFETY: ends the process without running the parent's exit handlers.
            unsafe { libc::_exit(SETUP_FAILED_STATUS) };
        }
        drop(gate);
        set_pdeathsig();
        rustix::process::setsid().unwrap_or_else(|e| fail("setsid", &e.to_string()));
        match pid1() {}
    }
    drop(gate);
    let pid = i32::try_from(pid).unwrap_or(-1);
    let mut message = vec![super::super::channel::PID1];
    message.extend_from_slice(&pid.to_le_bytes());
    let stdin = std::io::stdin();
    let told = rustix::io::write(stdin.as_fd(), &message) == Ok(message.len());
    if !told || open_gate.write_all(b"1").is_err() {
        // SAFETY: kill(2) of our own fresh child, which nobody else can have reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        // SAFETY: ends the process; nothing is buffered.
        unsafe { libc::_exit(SETUP_FAILED_STATUS) };
    }
    // SAFETY: ends the process; PID 1 holds everything the command needs.
    unsafe { libc::_exit(0) }
}

/// The middle process of the pid namespace: closes every fd, waits for PID 1 (`pid`) and exits
/// as it did (re-raising its signal).
#[allow(unsafe_code)]
fn relay(pid: libc::pid_t) -> ! {
    // The middle process: keep nothing open, so only the target holds the pipes (and only PID 1
    // the error channel).
    close_fds_from(0);
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child with a valid status pointer.
        let rc = unsafe { libc::waitpid(pid, &mut status, 0) };
        if rc == pid {
            break;
        }
        if rc < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // SAFETY: exiting without running exit handlers PID 1 may have disturbed.
            unsafe { libc::_exit(SETUP_FAILED_STATUS) };
        }
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: restoring the default action and re-raising the child's signal on ourselves.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
        }
        // SAFETY: as above.
        unsafe { libc::_exit(128 + signal) };
    }
    // SAFETY: as above.
    unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
}
