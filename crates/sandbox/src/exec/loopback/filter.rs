//! The helper's side of loopback mediation: the `connect` filter with a user-notification
//! listener, and the hand-over of that listener to the launcher.
//!
//! The filter is a separate, six-instruction program installed just before the main filter
//! ([`seccomp`](super::super::seccomp)): `connect` on the native architecture returns
//! `SECCOMP_RET_USER_NOTIF`, everything else `ALLOW`. Stacked filters take the most restrictive
//! answer, so the main filter's `EPERM`/`KILL` (foreign architectures, x32) still win.

use std::os::fd::{AsFd, FromRawFd, OwnedFd};

use seccompiler::sock_filter;

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JEQ_K: u16 = 0x15;
const BPF_RET_K: u16 = 0x06;
const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
const SECCOMP_SET_MODE_FILTER: libc::c_uint = 1;

/// `if (arch == native && nr == connect) return USER_NOTIF; return ALLOW;`
fn program() -> [sock_filter; 6] {
    let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    [
        op(BPF_LD_W_ABS, 0, 0, 4),
        op(BPF_JEQ_K, 0, 3, super::super::seccomp::AUDIT_ARCH),
        op(BPF_LD_W_ABS, 0, 0, 0),
        op(BPF_JEQ_K, 0, 1, libc::SYS_connect as u32),
        op(BPF_RET_K, 0, 0, libc::SECCOMP_RET_USER_NOTIF),
        op(BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
}

/// Installs the `connect` filter on the calling thread (setting `no_new_privs`) and returns its
/// listener (close-on-exec, as the kernel makes it).
///
/// # Errors
///
/// The failing call and its error (`EBUSY`: a filter of this process already has a listener).
#[allow(unsafe_code)]
pub(crate) fn install() -> Result<OwnedFd, String> {
    let filter = program();
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut().cast(),
    };
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!("no_new_privs: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: `prog` points at `filter`, alive for the call; the kernel copies the program.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_SET_MODE_FILTER,
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER,
            &raw const prog,
        )
    };
    if fd < 0 {
        return Err(format!(
            "connect filter with a listener: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: the syscall returned a new descriptor this process owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Sends `listener` to the launcher on `socket` (one byte with `SCM_RIGHTS`).
///
/// # Errors
///
/// The `sendmsg` error (`EPIPE`: the launcher's supervisor is gone).
pub(crate) fn send(socket: &OwnedFd, listener: &OwnedFd) -> Result<(), String> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    let fds = [listener.as_fd()];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    loop {
        match sendmsg(
            socket,
            &[std::io::IoSlice::new(b"L")],
            &mut control,
            SendFlags::NOSIGNAL,
        ) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(format!("sending the connect listener: {e}")),
        }
    }
}

/// Whether this kernel lets a process install a filter with a listener: tried in a forked
/// child of the (single-threaded) helper's `probe` mode, which exits at once.
#[allow(unsafe_code)]
pub(crate) fn probe() -> bool {
    // SAFETY: the probe mode is single-threaded; the child only installs a filter and exits.
    let child = unsafe { libc::fork() };
    if child == 0 {
        let status = i32::from(install().is_err());
        // SAFETY: leaving the child without the parent's exit handlers.
        unsafe { libc::_exit(status) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child with a valid status pointer.
    child > 0
        && unsafe { libc::waitpid(child, &mut status, 0) } == child
        && libc::WIFEXITED(status)
        && libc::WEXITSTATUS(status) == 0
}
