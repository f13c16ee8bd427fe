//! The launcher's side of loopback mediation: one thread per command answers the `connect`
//! calls its filter reports, until every process of the command has exited.
//!
//! For each `connect(fd, addr, len)`:
//!
//! 1. It copies `len` bytes (at most a `sockaddr_storage`) of `addr` out of the caller with
//!    `process_vm_readv`, then checks the notification is still valid
//!    (`SECCOMP_IOCTL_NOTIF_ID_VALID`): the pid named a live caller while it was read. From here
//!    on only that copy is used; a second thread rewriting `addr` changes nothing.
//! 2. Not a loopback address ([`loopback_target`]), not a TCP socket of the address' family, or
//!    already connected or bound: the call continues in the kernel
//!    (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`), inside the command's private network namespace,
//!    where only its own `lo` exists. Continuing is safe whatever the caller does meanwhile
//!    (rewrite `addr`, swap the descriptor): no socket of that namespace can reach anything
//!    outside it. Not deciding is the same answer.
//! 3. It connects the caller's socket (taken with `pidfd_getfd`) to the checked address inside
//!    the private namespace first: a server the command runs itself on that port answers
//!    (`0`). Only when that is refused does it go on. (Reading `/proc/<pid>/net/tcp` instead
//!    cost ~3 ms per connect: the kernel walks its whole connection table.)
//! 4. It makes a TCP socket of its own, in the host's namespace, copies `TCP_NODELAY`,
//!    `SO_KEEPALIVE` and `O_NONBLOCK` from the caller's, connects it
//!    to the address *it checked*, and on success puts it in place of the caller's descriptor
//!    (`SECCOMP_IOCTL_NOTIF_ADDFD` with `SECCOMP_ADDFD_FLAG_SETFD`, close-on-exec as it was). The
//!    syscall then returns `0`, or `EINPROGRESS` for a non-blocking socket; a failed connect
//!    returns its error (`ECONNREFUSED`…) and leaves the caller's socket alone.
//!
//! A blocking caller waits while the supervisor waits for the handshake (checked every 100 ms
//! against the notification's validity, so a killed command frees it). The thread serves one
//! notification at a time: the connects of one command are serialised, those of different
//! commands are not. If the thread is gone, the kernel answers every `connect` of the command
//! with `ENOSYS`: nothing is reached.

use std::io::Read;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::address::loopback_target;

/// How long one wait for a handshake lasts before the notification's validity is checked again.
const HANDSHAKE_SLICE: Duration = Duration::from_millis(100);

/// Starts the supervisor of one command on its own thread: it waits on `channel` for the
/// listener the helper sends ([`super::filter::send`]), then serves it. It ends when the channel
/// closes without a listener (the helper failed, or exec'd without mediation) or when the last
/// process of the command is gone.
///
/// # Errors
///
/// The thread cannot be started.
pub(crate) fn start(channel: UnixStream) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("toolsmith-loopback".into())
        .spawn(move || {
            if let Some(listener) = receive_listener(&channel) {
                drop(channel);
                serve(&listener);
            }
        })
        .map(drop)
}

/// The listener from the channel, or `None` at EOF.
fn receive_listener(channel: &UnixStream) -> Option<OwnedFd> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    let mut byte = [0u8; 1];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    loop {
        let mut control = RecvAncillaryBuffer::new(&mut space);
        match recvmsg(
            channel,
            &mut [std::io::IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(msg) if msg.bytes == 0 => return None,
            Ok(_) => {
                return control.drain().find_map(|message| match message {
                    RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
                    _ => None,
                });
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
}

/// Serves `listener` until it hangs up (no process holds the filter any more).
fn serve(listener: &OwnedFd) {
    use rustix::event::{PollFd, PollFlags, poll};
    loop {
        let mut fds = [PollFd::new(listener, PollFlags::IN)];
        match poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let revents = fds[0].revents();
        if revents.contains(PollFlags::IN) {
            match receive(listener) {
                Ok(notif) => {
                    let answer = answer(listener, &notif);
                    respond(listener, notif.id, answer);
                }
                // The caller was killed between the poll and the receive.
                Err(rustix::io::Errno::NOENT | rustix::io::Errno::INTR) => {}
                Err(_) => return,
            }
        } else if revents.intersects(PollFlags::HUP | PollFlags::ERR) {
            return;
        }
    }
}

/// What the caller's `connect` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// Let the kernel run it (inside the private network namespace).
    Continue,
    /// `0`, or this errno.
    Result(Option<i32>),
    /// The caller is gone: nothing to answer.
    Gone,
}

#[allow(unsafe_code)]
fn receive(listener: &OwnedFd) -> Result<libc::seccomp_notif, rustix::io::Errno> {
    // SAFETY: seccomp_notif is plain data; the kernel wants it zeroed.
    let mut notif: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: a valid listener and a seccomp_notif the kernel fills.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_RECV,
            &raw mut notif,
        )
    };
    if rc < 0 {
        return Err(
            rustix::io::Errno::from_io_error(&std::io::Error::last_os_error())
                .unwrap_or(rustix::io::Errno::IO),
        );
    }
    Ok(notif)
}

#[allow(unsafe_code)]
fn respond(listener: &OwnedFd, id: u64, answer: Answer) {
    let (error, flags) = match answer {
        Answer::Gone => return,
        Answer::Continue => (0, libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32),
        Answer::Result(errno) => (errno.map_or(0, |e| -e), 0),
    };
    let mut response = libc::seccomp_notif_resp {
        id,
        val: 0,
        error,
        flags,
    };
    // SAFETY: a valid listener and response; an error (ENOENT: the caller is gone) needs no
    // handling.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_SEND,
            &raw mut response,
        )
    };
}

#[allow(unsafe_code)]
fn still_valid(listener: &OwnedFd, id: u64) -> bool {
    let mut id = id;
    // SAFETY: a valid listener and a u64.
    unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
            &raw mut id,
        ) == 0
    }
}

/// Decides one notification (see the [module docs](self)).
fn answer(listener: &OwnedFd, notif: &libc::seccomp_notif) -> Answer {
    if i64::from(notif.data.nr) != libc::SYS_connect {
        // The filter reports nothing else: something is wrong, refuse.
        return Answer::Result(Some(libc::EPERM));
    }
    let [fd, addr, len, ..] = notif.data.args;
    let Some(sockaddr) = read_memory(notif.pid, addr, len) else {
        return Answer::Continue;
    };
    if !still_valid(listener, notif.id) {
        return Answer::Gone;
    }
    let Some(target) = loopback_target(&sockaddr) else {
        return Answer::Continue;
    };
    let Ok(fd) = i32::try_from(fd) else {
        return Answer::Continue;
    };
    let Some(tgid) = thread_group(notif.pid) else {
        return Answer::Continue;
    };
    let Ok(pid) = rustix::process::Pid::from_raw(tgid).ok_or(()) else {
        return Answer::Continue;
    };
    let Ok(pidfd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else {
        return Answer::Continue;
    };
    // The pid was read from the notification: it still names the caller's process.
    if !still_valid(listener, notif.id) {
        return Answer::Gone;
    }
    let Ok(theirs) =
        rustix::process::pidfd_getfd(&pidfd, fd, rustix::process::PidfdGetfdFlags::empty())
    else {
        return Answer::Continue;
    };
    if !redirectable(&theirs, &target) {
        return Answer::Continue;
    }
    if let Some(answer) = connect_inside(&theirs, &target, listener, notif.id) {
        return answer;
    }
    match connect_host(&theirs, &target, listener, notif.id) {
        Err(answer) => answer,
        Ok((ours, in_progress)) => {
            let cloexec = close_on_exec(tgid, fd);
            match substitute(listener, notif.id, &ours, fd, cloexec) {
                Ok(()) => Answer::Result(in_progress.then_some(libc::EINPROGRESS)),
                Err(rustix::io::Errno::NOENT) => Answer::Gone,
                Err(e) => Answer::Result(Some(e.raw_os_error())),
            }
        }
    }
}

/// Whether the caller's socket is one the supervisor may stand in for: a TCP socket of the
/// target's family, neither connected nor bound.
fn redirectable(socket: &OwnedFd, target: &SocketAddr) -> bool {
    let family = if target.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    let int = |level, name| int_option(socket.as_fd(), level, name);
    int(libc::SOL_SOCKET, libc::SO_DOMAIN) == Some(family)
        && int(libc::SOL_SOCKET, libc::SO_TYPE) == Some(libc::SOCK_STREAM)
        && int(libc::SOL_SOCKET, libc::SO_PROTOCOL) == Some(libc::IPPROTO_TCP)
        && rustix::net::getpeername(socket).is_err()
        && rustix::net::getsockname(socket).is_ok_and(|name| {
            std::net::SocketAddr::try_from(name).is_ok_and(|local| local.port() == 0)
        })
}

/// Connects the caller's own socket, in its private namespace, to `target` (the checked copy):
/// a server the command started itself on that port keeps being the one it reaches. `None`
/// when nothing there accepts (refused): the host's loopback is tried next, on a socket that
/// replaces this one. The socket is made non-blocking for the attempt and restored after.
fn connect_inside(
    theirs: &OwnedFd,
    target: &SocketAddr,
    listener: &OwnedFd,
    id: u64,
) -> Option<Answer> {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    let flags = fcntl_getfl(theirs).ok()?;
    fcntl_setfl(theirs, flags | OFlags::NONBLOCK).ok()?;
    let outcome = match rustix::net::connect(theirs, target) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::INPROGRESS) => wait_connected(theirs, listener, id),
        Err(e) => Err(Answer::Result(Some(e.raw_os_error()))),
    };
    let _ = fcntl_setfl(theirs, flags);
    match outcome {
        Ok(()) => Some(Answer::Result(None)),
        Err(Answer::Gone) => Some(Answer::Gone),
        Err(_) => None,
    }
}

/// A host socket connected (or connecting, the `bool`) to `target`, with the caller's options.
/// `Err` is the answer when the connect fails or the caller goes away meanwhile.
fn connect_host(
    theirs: &OwnedFd,
    target: &SocketAddr,
    listener: &OwnedFd,
    id: u64,
) -> Result<(OwnedFd, bool), Answer> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType, ipproto, sockopt};
    let family = if target.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let errno = |e: rustix::io::Errno| Answer::Result(Some(e.raw_os_error()));
    let ours = rustix::net::socket_with(
        family,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        Some(ipproto::TCP),
    )
    .map_err(errno)?;
    if sockopt::tcp_nodelay(theirs).unwrap_or(false) {
        sockopt::set_tcp_nodelay(&ours, true).map_err(errno)?;
    }
    if sockopt::socket_keepalive(theirs).unwrap_or(false) {
        sockopt::set_socket_keepalive(&ours, true).map_err(errno)?;
    }
    let nonblocking = rustix::fs::fcntl_getfl(theirs)
        .map_err(errno)?
        .contains(rustix::fs::OFlags::NONBLOCK);
    let in_progress = match rustix::net::connect(&ours, target) {
        Ok(()) => false,
        Err(rustix::io::Errno::INPROGRESS) => true,
        Err(e) => return Err(errno(e)),
    };
    if in_progress && !nonblocking {
        wait_connected(&ours, listener, id)?;
    }
    if !nonblocking {
        rustix::fs::fcntl_setfl(&ours, rustix::fs::OFlags::empty()).map_err(errno)?;
    }
    Ok((ours, in_progress && nonblocking))
}

/// Waits for the handshake of `socket` for a blocking caller; `Err` is the answer when it fails
/// or the caller is gone.
fn wait_connected(socket: &OwnedFd, listener: &OwnedFd, id: u64) -> Result<(), Answer> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let slice = Timespec::try_from(HANDSHAKE_SLICE).unwrap_or(Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    });
    loop {
        let mut fds = [PollFd::new(socket, PollFlags::OUT)];
        match poll(&mut fds, Some(&slice)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => {
                if !still_valid(listener, id) {
                    return Err(Answer::Gone);
                }
            }
            Ok(_) => {
                return match rustix::net::sockopt::socket_error(socket) {
                    Ok(Ok(())) => Ok(()),
                    Ok(Err(e)) | Err(e) => Err(Answer::Result(Some(e.raw_os_error()))),
                };
            }
            Err(e) => return Err(Answer::Result(Some(e.raw_os_error()))),
        }
    }
}

/// Puts `ours` at descriptor `fd` of the caller, in place of what is there.
#[allow(unsafe_code)]
fn substitute(
    listener: &OwnedFd,
    id: u64,
    ours: &OwnedFd,
    fd: i32,
    cloexec: bool,
) -> Result<(), rustix::io::Errno> {
    let mut addfd = libc::seccomp_notif_addfd {
        id,
        flags: libc::SECCOMP_ADDFD_FLAG_SETFD as u32,
        srcfd: ours.as_raw_fd() as u32,
        newfd: fd as u32,
        newfd_flags: if cloexec { libc::O_CLOEXEC as u32 } else { 0 },
    };
    // SAFETY: a valid listener and seccomp_notif_addfd; the kernel dups `srcfd` into the caller.
    let rc = unsafe {
        libc::ioctl(
            listener.as_raw_fd(),
            libc::SECCOMP_IOCTL_NOTIF_ADDFD,
            &raw mut addfd,
        )
    };
    if rc < 0 {
        return Err(
            rustix::io::Errno::from_io_error(&std::io::Error::last_os_error())
                .unwrap_or(rustix::io::Errno::IO),
        );
    }
    Ok(())
}

/// Copies `len` bytes (at most a `sockaddr_storage`) at `addr` out of task `pid`.
#[allow(unsafe_code)]
fn read_memory(pid: u32, addr: u64, len: u64) -> Option<Vec<u8>> {
    let len = usize::try_from(len)
        .ok()?
        .min(std::mem::size_of::<libc::sockaddr_storage>());
    let mut buf = vec![0u8; len];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: `local` covers `buf`, which is `len` bytes; the remote range is only read.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    (usize::try_from(n).ok()? == len).then_some(buf)
}

/// The thread group (process) of task `tid`.
fn thread_group(tid: u32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}

/// Whether descriptor `fd` of process `pid` is close-on-exec (`flags:` in its fdinfo, octal).
fn close_on_exec(pid: i32, fd: i32) -> bool {
    let mut text = String::new();
    let _ = std::fs::File::open(format!("/proc/{pid}/fdinfo/{fd}"))
        .and_then(|mut f| f.read_to_string(&mut text));
    text.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|flags| u32::from_str_radix(flags.trim(), 8).ok())
        .is_some_and(|flags| flags & libc::O_CLOEXEC as u32 != 0)
}

/// An integer socket option.
#[allow(unsafe_code)]
fn int_option(socket: BorrowedFd<'_>, level: i32, name: i32) -> Option<i32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: a valid socket and an int-sized buffer with its length.
    let rc = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&raw mut value).cast(),
            &raw mut len,
        )
    };
    (rc == 0).then_some(value)
}
