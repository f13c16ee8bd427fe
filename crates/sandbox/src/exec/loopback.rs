//! Loopback mediation: how [`NetworkPolicy::LoopbackOnly`](crate::NetworkPolicy::LoopbackOnly)
//! reaches the host's loopback services while the kernel still blocks everything else.
//!
//! The command keeps its private network namespace (only its own `lo`, up), so every socket it
//! makes lives there: UDP, raw and packet sockets, listeners (`bind` on `0.0.0.0`, `listen`
//! without `bind`), `sendto` and `MSG_FASTOPEN`, SCTP and MPTCP, netlink, and the host's
//! abstract Unix sockets (their namespace is per network namespace; Landlock ABI ≥ 6 scopes
//! them as well) reach nothing outside it, by the kernel's own rules, whatever the command does.
//!
//! One syscall is mediated: `connect`. A seccomp filter installed by the helper just before
//! `execve` ([`filter`]) sends every `connect` to the launcher as a user notification; the
//! helper hands the filter's listener to the launcher over a socket sent with the plan, and a
//! thread of the launcher ([`supervisor`]) answers: a TCP connect to a loopback address
//! (`127.0.0.0/8`, `::1`, `::ffff:127.0.0.0/104`, and `0.0.0.0`/`::`, which Linux connects to
//! as the local host) on a port the sandbox itself does not listen on is performed by the
//! supervisor, on a socket of its own in the host's namespace, to the address it checked; that
//! socket replaces the command's. Every other `connect` continues inside the private namespace.
//! The supervisor never lets the kernel re-read an address it approved (the `seccomp_unotify(2)`
//! TOCTOU): an approved connect is its own `connect` of its own copy.
//!
//! What this does not carry over: options set on the socket before `connect` other than
//! `TCP_NODELAY`, `SO_KEEPALIVE` and `O_NONBLOCK`; a `bind` before `connect` (such a socket stays
//! in the private namespace); and an `epoll` registration made before `connect` (it names the
//! replaced socket; runtimes register after `connect`).
//!
//! Needs seccomp user notification with `SECCOMP_ADDFD_FLAG_SETFD` (Linux ≥ 5.9), probed by the
//! helper ([`Capabilities::seccomp_listener`](crate::Capabilities::seccomp_listener)). Without
//! it, or when the launcher cannot start the supervisor, the command runs with the private
//! namespace's loopback only and the result says so in its warnings. If the supervisor
//! disappears mid-run, the kernel answers the command's `connect` calls with `ENOSYS`.
//!
//! Cost: a mediated `connect` to the host's loopback took a median ~115 µs against ~12 µs
//! unmediated (debug build on 2 shared cores; `tests/it/loopback_attacks.rs`'s
//! `a_mediated_connect_costs_tens_of_microseconds` measures it); other `connect` calls (Unix
//! sockets) pay one round trip to the supervisor. Only this policy pays it.

mod address;
mod filter;
mod supervisor;

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;

pub(crate) use filter::probe;

/// Launcher side: starts the supervisor of one command and returns the helper's end of its
/// channel, to send with the plan (and close once sent).
///
/// # Errors
///
/// The channel or the supervisor's thread cannot be made.
pub(crate) fn supervise() -> std::io::Result<OwnedFd> {
    let (ours, theirs) = UnixStream::pair()?;
    supervisor::start(ours)?;
    Ok(theirs.into())
}

/// Helper side, last before the main filter: installs the `connect` filter and sends its
/// listener on `channel`.
///
/// # Errors
///
/// What failed; the helper reports it and does not run the command.
pub(crate) fn mediate(channel: &OwnedFd) -> Result<(), String> {
    let listener = filter::install()?;
    filter::send(channel, &listener)
}
