//! The helper's mounts, in its own mount namespace: private propagation, a fresh `/proc` for
//! the pid namespace, and git protection's bind mounts.
//!
//! Bind mounts go through `O_PATH | O_NOFOLLOW` descriptors (`/proc/self/fd/N` as source and
//! target), so a path swapped for a symbolic link is refused rather than followed, and the
//! read-only remount keeps the flags the kernel locked on the original mount (`nosuid`,
//! `nodev`, `noexec`, the atime mode), as it must inside a user namespace.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::exec::plan::MountPlan;
use crate::git::Bind;

/// Applies `plan` (the caller is in the new mount namespace, and PID 1 of the new pid
/// namespace when `plan.proc`).
pub(super) fn apply(plan: &MountPlan) -> Result<(), String> {
    if plan.make_private {
        mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE)
            .map_err(|e| format!("making mounts private: {e}"))?;
    }
    if plan.proc {
        mount_proc().map_err(|e| format!("mounting /proc: {e}"))?;
    }
    for bind in &plan.binds {
        bind_mount(bind).map_err(|e| format!("git protection: {}: {e}", bind.path.display()))?;
    }
    Ok(())
}

/// What the probe found: `(bind mounts work, a private /proc works)`. Run in a child of the
/// probe, in the new mount (and pid) namespace, which dies with it.
pub(super) fn probe(pid_namespace: bool, make_private: bool) -> (bool, bool) {
    if make_private && mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE).is_err() {
        return (false, false);
    }
    let bind = bind_mount(&Bind {
        path: "/dev/null".into(),
        read_only: true,
    })
    .is_ok();
    (bind, pid_namespace && mount_proc().is_ok())
}

/// A fresh procfs on `/proc`: it shows the processes of the caller's pid namespace only.
fn mount_proc() -> std::io::Result<()> {
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    mount(Some(c"proc"), c"/proc", Some(c"proc"), flags)
}

/// Binds `bind.path` onto itself, then remounts it read-only when asked. A path that no longer
/// exists is skipped (nothing to protect); one that became a symbolic link is an error.
fn bind_mount(bind: &Bind) -> std::io::Result<()> {
    let Some(fd) = open_path(&bind.path)? else {
        return Ok(());
    };
    let fd_path = proc_fd_path(&fd);
    mount(Some(&fd_path), &fd_path, None, libc::MS_BIND)?;
    if bind.read_only {
        // The new mount's root: looking the path up again crosses into it.
        let top = open_path(&bind.path)?.ok_or_else(|| std::io::Error::other("vanished"))?;
        let flags = libc::MS_REMOUNT
            | libc::MS_BIND
            | libc::MS_RDONLY
            | libc::MS_NOSUID
            | libc::MS_NODEV
            | locked_flags(&top)?;
        mount(None, &proc_fd_path(&top), None, flags)?;
    }
    Ok(())
}

/// `open(path, O_PATH | O_NOFOLLOW)`; `None` when it does not exist, an error for a symbolic
/// link.
#[allow(unsafe_code)]
fn open_path(path: &Path) -> std::io::Result<Option<OwnedFd>> {
    let c_path = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: a valid NUL-terminated path; the fd returned is owned below.
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        return if e.kind() == std::io::ErrorKind::NotFound {
            Ok(None)
        } else {
            Err(e)
        };
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let stat = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Symlink {
        return Err(std::io::Error::other("is a symbolic link"));
    }
    Ok(Some(fd))
}

fn proc_fd_path(fd: &OwnedFd) -> CString {
    CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).expect("no NUL in a number")
}

/// The per-mount flags of the mount holding `fd`, as `MS_*` flags: a remount inside a user
/// namespace must keep the ones the kernel locked.
#[allow(unsafe_code)]
fn locked_flags(fd: &OwnedFd) -> std::io::Result<libc::c_ulong> {
    // SAFETY: statvfs is plain old data; zeroed is a valid value, filled by fstatvfs.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid fd and a valid out pointer.
    if unsafe { libc::fstatvfs(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |flags, (_, ms)| flags | ms))
}

#[allow(unsafe_code)]
fn mount(
    source: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    fstype: Option<&std::ffi::CStr>,
    flags: libc::c_ulong,
) -> std::io::Result<()> {
    let ptr = |s: Option<&std::ffi::CStr>| s.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: NUL-terminated strings (or NULL) that outlive the call; no data argument.
    let rc = unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            std::ptr::null(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
