//! The helper's plan-and-error channel: one end of a Unix socket pair, the helper's stdin.
//!
//! The launcher writes the [`Plan`](super::Plan) and shuts its writing half down; the helper
//! reads to EOF, moves the socket to a close-on-exec fd above 2 and reopens stdin on
//! `/dev/null`. If it cannot apply a layer (or exec the target) it writes one JSON object
//! `{kind, message}` to the socket and exits; otherwise `execve` closes the socket. The command
//! never holds it, so nothing it prints can pass for a setup error (stderr is the command's
//! own), and EOF without data means the target was executed. With a pid namespace the middle
//! process of the double fork closes it at once; only PID 1 keeps it.
//!
//! A spare helper that prepares ahead ([`Ahead`](super::Ahead)) first exchanges two bytes on it:
//! [`GO`] from the launcher, then [`READY`] (or a report) from the helper; with a pid namespace,
//! [`PID1`] and PID 1's pid come before [`READY`].

use std::io::Read;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;

use super::ExecError;

/// The byte the launcher sends a spare helper ([`Ahead`](super::Ahead)) once the helper is in
/// its tree's control group: prepare now (what it forks is then inside the group too).
pub(crate) const GO: u8 = b'!';

/// The byte the launcher sends a spare helper in place of [`GO`] when it also builds the
/// Landlock ruleset ahead: followed by the length (`u32`, little-endian) of the JSON
/// [`LandlockPlan`](super::LandlockPlan) that comes next, with the rules' descriptors
/// ([`go_with_rules`], [`receive_go`]).
pub(crate) const GO_WITH_RULES: u8 = b'#';

/// The byte the launcher sends a spare helper before its go when it lends it a pooled network
/// namespace ([`NetPool`](super::netns::NetPool)), with two descriptors: the namespace's owning
/// user namespace and the network namespace.
pub(crate) const NET: u8 = b'N';

/// The longest Landlock plan a spare helper takes with its go (or request the resident helper
/// takes).
const RULES_MAX: usize = 16 << 20;

/// [`GO_WITH_RULES`]'s message: the byte, the length, `rules` (a JSON Landlock plan); an error
/// past [`RULES_MAX`] bytes, as for [`framed`].
pub(crate) fn go_with_rules(rules: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut message = vec![GO_WITH_RULES];
    message.extend_from_slice(&framed(rules)?);
    Ok(message)
}

/// A [`GO_WITH_RULES`]'s JSON Landlock plan (or a request to the resident helper) and the
/// descriptors that came with it.
pub(crate) type Rules = (Vec<u8>, Vec<std::os::fd::OwnedFd>);

/// A spare helper's go ([`receive_go`]).
#[derive(Debug, Default)]
pub(crate) struct Go {
    /// With [`GO_WITH_RULES`]: the JSON Landlock plan and its descriptors.
    pub(crate) rules: Option<Rules>,
    /// With [`NET`] before it: the pooled network namespace's owner and the namespace.
    pub(crate) net: Option<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>,
}

/// Helper side: waits for the launcher's go on the channel `fd`, after [`NET`] and its two
/// descriptors if they come. `None` at EOF, or for anything but [`GO`] or [`GO_WITH_RULES`]
/// (or a [`NET`] without exactly two descriptors); [`Go::rules`] for [`GO_WITH_RULES`], with
/// its JSON Landlock plan and the descriptors sent with it (all received close-on-exec). Reads
/// no byte past the go's message.
pub(crate) fn receive_go(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<Option<Go>> {
    let mut go = Go::default();
    let mut fds = Vec::new();
    let mut byte = [0u8; 1];
    if !receive_exact(fd, &mut byte, &mut fds_space(), &mut fds)? {
        return Ok(None);
    }
    if byte[0] == NET {
        let Ok([user, net]) = <[_; 2]>::try_from(std::mem::take(&mut fds)) else {
            return Ok(None);
        };
        go.net = Some((user, net));
        if !receive_exact(fd, &mut byte, &mut fds_space(), &mut fds)? {
            return Ok(None);
        }
    }
    match byte[0] {
        GO => {}
        GO_WITH_RULES => match receive_framed(fd, fds)? {
            Some(rules) => go.rules = Some(rules),
            None => return Ok(None),
        },
        _ => return Ok(None),
    }
    Ok(Some(go))
}

/// A length (`u32`, little-endian) and that many bytes, with `bytes`; an error past
/// [`RULES_MAX`] bytes, which [`receive_framed`] refuses.
pub(crate) fn framed(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let len = u32::try_from(bytes.len())
        .ok()
        .filter(|_| bytes.len() <= RULES_MAX)
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "a message of {} bytes (at most {RULES_MAX})",
                bytes.len()
            ))
        })?;
    let mut message = Vec::with_capacity(4 + bytes.len());
    message.extend_from_slice(&len.to_le_bytes());
    message.extend_from_slice(bytes);
    Ok(message)
}

/// Reads what [`framed`] wrote (at most [`RULES_MAX`] bytes) from `fd`, with the descriptors
/// sent with it added to `fds`; `None` at EOF.
pub(crate) fn receive_framed(
    fd: std::os::fd::BorrowedFd<'_>,
    mut fds: Vec<std::os::fd::OwnedFd>,
) -> std::io::Result<Option<Rules>> {
    let mut len = [0u8; 4];
    let mut space = fds_space();
    if !receive_exact(fd, &mut len, &mut space, &mut fds)? {
        return Ok(None);
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > RULES_MAX {
        return Err(std::io::Error::other(format!(
            "a message of {len} bytes (at most {RULES_MAX})"
        )));
    }
    let mut bytes = vec![0u8; len];
    if !receive_exact(fd, &mut bytes, &mut space, &mut fds)? {
        return Ok(None);
    }
    Ok(Some((bytes, fds)))
}

/// Room for the control message of the most descriptors one message brings (253, the
/// kernel's `SCM_MAX_FD`).
fn fds_space() -> Vec<std::mem::MaybeUninit<u8>> {
    vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(253))]
}

/// Fills `buf` from `fd`, adding the descriptors that come with it to `fds` (`space` is
/// [`fds_space`]); `false` at EOF.
fn receive_exact(
    fd: std::os::fd::BorrowedFd<'_>,
    buf: &mut [u8],
    space: &mut [std::mem::MaybeUninit<u8>],
    fds: &mut Vec<std::os::fd::OwnedFd>,
) -> std::io::Result<bool> {
    let mut at = 0;
    while at < buf.len() {
        match receive_with_fds(fd, &mut buf[at..], space, fds)? {
            0 => return Ok(false),
            n => at += n,
        }
    }
    Ok(true)
}

/// The byte a spare helper sends once its preparation is made, with its mount namespace's
/// descriptor (see `warm.rs`). A report (`{`…) or EOF in its place means the preparation failed.
pub(crate) const READY: u8 = b'+';

/// The byte a prepared spare helper with a pid namespace sends once it has forked the
/// namespace's PID 1, followed by PID 1's pid (`i32`, little-endian): PID 1 is forked with
/// `CLONE_PARENT`, the launcher's own child, which the launcher waits for and reaps in place of
/// the spare (see `helper/setup.rs`). It comes before [`READY`] (or a report from PID 1).
pub(crate) const PID1: u8 = b'1';

/// Launcher side: reads the pid that follows [`PID1`]; `None` at EOF.
pub(crate) fn receive_pid(stream: &UnixStream) -> std::io::Result<Option<i32>> {
    let mut pid = [0u8; 4];
    let mut fds = Vec::new();
    if !receive_exact(stream.as_fd(), &mut pid, &mut fds_space(), &mut fds)? {
        return Ok(None);
    }
    Ok(Some(i32::from_le_bytes(pid)))
}

/// The most bytes of a report the launcher reads (a report is one short JSON object).
const REPORT_MAX: usize = 64 * 1024;

/// A connected pair: `(the launcher's end, the helper's stdin)`, both close-on-exec in this
/// process (the spawn makes the helper's end its fd 0).
pub(crate) fn pair() -> std::io::Result<(UnixStream, UnixStream)> {
    UnixStream::pair()
}

/// Writes the plan, with `fds` as `SCM_RIGHTS` on its first bytes, and shuts the writing half
/// down (the helper reads to EOF). A helper that died before reading makes this fail with
/// `EPIPE` (never `SIGPIPE`).
pub(crate) fn send_plan(
    stream: &UnixStream,
    plan: &[u8],
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> std::io::Result<()> {
    send_with_fds(stream.as_fd(), plan, fds)?;
    stream.shutdown(std::net::Shutdown::Write)
}

/// Writes `bytes` to the socket `fd`, with `fds` as `SCM_RIGHTS` on the first of them.
pub(crate) fn send_with_fds(
    fd: std::os::fd::BorrowedFd<'_>,
    bytes: &[u8],
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> std::io::Result<()> {
    let mut rest = bytes;
    if !fds.is_empty() && !rest.is_empty() {
        use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
        let mut space =
            vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(fds.len()))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(fds));
        let sent = loop {
            match sendmsg(
                fd,
                &[std::io::IoSlice::new(rest)],
                &mut control,
                SendFlags::NOSIGNAL,
            ) {
                Ok(n) => break n,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        };
        rest = &rest[sent..];
    }
    while !rest.is_empty() {
        match send(&fd, rest) {
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One `recvmsg` on `fd` into `buf` (tried again on `EINTR`), the descriptors sent with it
/// (received close-on-exec) appended to `fds`, `space` holding their control message: the
/// bytes read, 0 at EOF.
fn receive_with_fds(
    fd: impl std::os::fd::AsFd,
    buf: &mut [u8],
    space: &mut [std::mem::MaybeUninit<u8>],
    fds: &mut Vec<std::os::fd::OwnedFd>,
) -> std::io::Result<usize> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, recvmsg};
    loop {
        let mut control = RecvAncillaryBuffer::new(space);
        let received = recvmsg(
            &fd,
            &mut [std::io::IoSliceMut::new(buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        let n = match received {
            Ok(msg) => msg.bytes,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(received) = message {
                fds.extend(received);
            }
        }
        return Ok(n);
    }
}

/// Launcher side: reads one byte from `stream` and the descriptors sent with it
/// (close-on-exec); `None` for the byte at EOF.
pub(crate) fn receive_byte(
    stream: &UnixStream,
) -> std::io::Result<(Option<u8>, Vec<std::os::fd::OwnedFd>)> {
    let mut byte = [0u8; 1];
    let mut space = vec![std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut fds = Vec::new();
    let n = receive_with_fds(stream, &mut byte, &mut space, &mut fds)?;
    Ok(((n == 1).then_some(byte[0]), fds))
}

/// Helper side: reads the plan from the channel `fd` to EOF, with the descriptors sent on its
/// first bytes (received close-on-exec, so the target never holds them).
pub(crate) fn receive_plan(
    fd: std::os::fd::BorrowedFd<'_>,
) -> std::io::Result<(Vec<u8>, Vec<std::os::fd::OwnedFd>)> {
    let mut plan = Vec::new();
    let mut fds = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut space = fds_space();
    loop {
        let n = receive_with_fds(fd, &mut buf, &mut space, &mut fds)?;
        if n == 0 {
            return Ok((plan, fds));
        }
        plan.extend_from_slice(&buf[..n]);
    }
}

/// What the helper reported, once it has exited: the report's bytes (empty when the target was
/// executed, or the helper was killed before it could say anything). Reads without blocking:
/// every writer has exited or exec'd by then, so what was written is queued.
pub(crate) fn collect(stream: &mut UnixStream) -> Vec<u8> {
    let mut report = Vec::new();
    if stream.set_nonblocking(true).is_ok() {
        let _ = stream.take(REPORT_MAX as u64).read_to_end(&mut report);
    }
    report
}

/// The error a non-empty report describes: [`ExecError::Spawn`] for `kind: "exec"`, else
/// [`ExecError::Setup`] (`"<kind>: <message>"`).
pub(crate) fn error_of(report: &[u8]) -> Option<ExecError> {
    if report.is_empty() {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(report).unwrap_or_default();
    let kind = value["kind"].as_str().unwrap_or("setup").to_string();
    let message = value["message"].as_str().map_or_else(
        || String::from_utf8_lossy(report).into_owned(),
        String::from,
    );
    Some(if kind == "exec" {
        ExecError::Spawn(message)
    } else {
        ExecError::Setup(format!("{kind}: {message}"))
    })
}

/// Helper side: writes `report` to the channel `fd`. `false` when it could not (not a socket,
/// or the launcher is gone).
#[allow(unsafe_code)]
pub(crate) fn report(fd: i32, report: &[u8]) -> bool {
    // SAFETY: `fd` is the helper's open channel for the duration of this call.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let mut rest = report;
    while !rest.is_empty() {
        match send(&borrowed, rest) {
            Ok(n) => rest = &rest[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// `send(fd, buf, MSG_NOSIGNAL)`.
#[allow(unsafe_code)]
fn send(fd: &impl std::os::fd::AsRawFd, buf: &[u8]) -> std::io::Result<usize> {
    // SAFETY: a valid fd and a buffer of `buf.len()` readable bytes.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            buf.as_ptr().cast(),
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_become_errors_and_silence_is_success() {
        assert_eq!(error_of(b""), None);
        assert_eq!(
            error_of(br#"{"kind":"exec","message":"nope: No such file"}"#),
            Some(ExecError::Spawn("nope: No such file".into()))
        );
        assert_eq!(
            error_of(br#"{"kind":"landlock","message":"x"}"#),
            Some(ExecError::Setup("landlock: x".into()))
        );
        assert_eq!(
            error_of(b"garbled"),
            Some(ExecError::Setup("setup: garbled".into()))
        );
    }

    #[test]
    fn a_go_with_rules_arrives_whole_and_an_oversized_one_is_never_sent() {
        let (ours, theirs) = pair().unwrap();
        let file = std::fs::File::open("/dev/null").unwrap();
        let go = go_with_rules(b"{\"abi\":6}").unwrap();
        send_with_fds(
            std::os::fd::AsFd::as_fd(&ours),
            &go,
            &[std::os::fd::AsFd::as_fd(&file)],
        )
        .unwrap();
        let go = receive_go(std::os::fd::AsFd::as_fd(&theirs))
            .unwrap()
            .expect("a go");
        let (rules, fds) = go.rules.expect("with rules");
        assert_eq!(rules, b"{\"abi\":6}");
        assert_eq!(fds.len(), 1);
        assert!(go.net.is_none());
        // Past the receiver's limit the sender refuses rather than send a length it would
        // refuse (or, past 4 GiB, one that does not fit).
        let error = framed(&vec![b' '; RULES_MAX + 1]).unwrap_err();
        assert!(error.to_string().contains("at most"), "{error}");
        assert!(framed(&vec![b' '; RULES_MAX]).is_ok());
    }

    #[test]
    fn a_lent_network_namespace_comes_before_the_go_with_exactly_two_descriptors() {
        use std::os::fd::AsFd;
        let (ours, theirs) = pair().unwrap();
        let (user, net) = (pair().unwrap().0, pair().unwrap().0);
        send_with_fds(ours.as_fd(), &[NET], &[user.as_fd(), net.as_fd()]).unwrap();
        send_with_fds(ours.as_fd(), &[GO], &[]).unwrap();
        let go = receive_go(theirs.as_fd()).unwrap().expect("a go");
        assert!(go.rules.is_none());
        let (user, net) = go.net.expect("the namespace lent");
        for fd in [user, net] {
            let link = std::fs::read_link(format!(
                "/proc/self/fd/{}",
                std::os::fd::AsRawFd::as_raw_fd(&fd)
            ));
            assert!(link.unwrap().to_string_lossy().starts_with("socket:"));
        }
        // One descriptor is not a namespace and its owner: no go.
        let (ours, theirs) = pair().unwrap();
        send_with_fds(ours.as_fd(), &[NET], &[ours.as_fd()]).unwrap();
        send_with_fds(ours.as_fd(), &[GO], &[]).unwrap();
        assert!(receive_go(theirs.as_fd()).unwrap().is_none());
    }

    #[test]
    fn the_plan_goes_one_way_and_the_report_the_other() {
        let (mut ours, theirs) = pair().unwrap();
        let file = std::fs::File::open("/dev/null").unwrap();
        send_plan(&ours, b"{plan}", &[std::os::fd::AsFd::as_fd(&file)]).unwrap();
        let (plan, fds) = receive_plan(std::os::fd::AsFd::as_fd(&theirs)).unwrap();
        assert_eq!(plan, b"{plan}");
        assert_eq!(fds.len(), 1);
        assert_eq!(
            std::fs::read_link(format!(
                "/proc/self/fd/{}",
                std::os::fd::AsRawFd::as_raw_fd(&fds[0])
            ))
            .unwrap(),
            std::path::Path::new("/dev/null")
        );
        assert!(report(
            std::os::fd::AsRawFd::as_raw_fd(&theirs),
            b"{report}"
        ));
        drop(theirs);
        assert_eq!(collect(&mut ours), b"{report}");
    }
}
