//! The supervisor: wall-clock timeout, process-group kill, capped concurrent capture.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::sync::watch;

use super::ExecError;
use super::process::HelperProcess;

/// How long to keep reading after the child exits (a background grandchild may hold the pipes).
pub(crate) const GRACE: Duration = Duration::from_millis(500);

/// Bytes kept beyond the cap, so the cut can back up to a UTF-8 boundary.
const SLACK: usize = 4;

/// What the supervisor saw.
#[derive(Debug)]
pub(crate) struct Captured {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub cap: usize,
    pub total_bytes: u64,
    pub timed_out: bool,
}

/// Waits for `child` (the helper, a session leader, with piped stdout and stderr) with
/// `timeout`, capturing both pipes with `cap` bytes each; kills the process group on timeout,
/// and after exit + [`GRACE`] if the pipes are still open.
pub(crate) async fn supervise(
    child: &mut HelperProcess,
    timeout: Duration,
    cap: usize,
) -> Result<Captured, ExecError> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let pipes = match child.take_pipes() {
        (Some(stdout), Some(stderr)) => tokio::process::ChildStdout::from_std(stdout)
            .and_then(|out| Ok((out, tokio::process::ChildStderr::from_std(stderr)?))),
        _ => Err(std::io::Error::other("the helper's output is not piped")),
    };
    let (stdout, stderr) =
        pipes.map_err(|e| ExecError::Setup(format!("capturing the helper's output: {e}")))?;
    // Both pipes are read in this future, beside the wait, rather than in tasks of their own:
    // the wake-ups at the command's exit (each pipe's end, then the pidfd) all come to the
    // thread running the launch, with no task to spawn and none to join.
    let readers = async {
        tokio::join!(
            read_capped(stdout, cap, stop_rx.clone()),
            read_capped(stderr, cap, stop_rx)
        )
    };
    tokio::pin!(readers);
    let pid = Some(child.id());
    // If this future is dropped (the call was cancelled), the whole group dies with it.
    let guard = GroupGuard(pid);

    let mut read = None;
    let waited = {
        let wait = tokio::time::timeout(timeout, child.wait());
        tokio::pin!(wait);
        loop {
            tokio::select! {
                biased;
                waited = &mut wait => break waited,
                done = &mut readers, if read.is_none() => read = Some(done),
            }
        }
    };
    let mut timed_out = false;
    let status = match waited {
        Ok(status) => status,
        Err(_) => {
            timed_out = true;
            kill_group(pid);
            child.kill();
            child.wait().await
        }
    }
    .map_err(|e| ExecError::Setup(format!("waiting for the helper: {e}")))?;

    // Both readers finish at EOF; past the grace period, kill what holds the pipes and stop.
    let ((stdout, out_total), (stderr, err_total)) = match read {
        Some(done) => done,
        None => match tokio::time::timeout(GRACE, &mut readers).await {
            Ok(done) => done,
            Err(_) => {
                kill_group(pid);
                let _ = stop_tx.send(true);
                readers.await
            }
        },
    };
    std::mem::forget(guard);

    use std::os::unix::process::ExitStatusExt;
    Ok(Captured {
        code: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        cap,
        total_bytes: out_total + err_total,
        timed_out,
    })
}

/// Reads `reader` to EOF (or until told to stop), keeping the first `cap + SLACK` bytes and
/// counting all of them.
async fn read_capped(
    mut reader: impl AsyncRead + Unpin,
    cap: usize,
    mut stop: watch::Receiver<bool>,
) -> (Vec<u8>, u64) {
    let keep = cap.saturating_add(SLACK);
    let mut kept = Vec::new();
    let mut total = 0u64;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        tokio::select! {
            biased;
            read = reader.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total += n as u64;
                    let room = keep.saturating_sub(kept.len()).min(n);
                    kept.extend_from_slice(&buf[..room]);
                }
            },
            _ = stop.changed() => break,
        }
    }
    (kept, total)
}

/// Kills the process group when dropped before the supervisor is done.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        kill_group(self.0);
    }
}

/// `kill(-pgid, SIGKILL)`; the helper's pid is its process group after `setsid` (and before
/// that, it is killed through the child handle).
pub(crate) fn kill_group(pid: Option<u32>) {
    let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) else {
        return;
    };
    if let Some(pid) = rustix::process::Pid::from_raw(pid) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// The first `cap` bytes of `bytes` as text, cut back to a UTF-8 boundary (Smithers'
/// `truncateToBytes`: `"ab😀cd"` at 4 or 5 bytes is `"ab"`), invalid sequences replaced; and
/// whether anything was cut.
pub(crate) fn utf8_prefix(bytes: &[u8], cap: usize) -> (String, bool) {
    if bytes.len() <= cap {
        return (String::from_utf8_lossy(bytes).into_owned(), false);
    }
    let mut end = cap;
    while end > 0 && (bytes[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    (String::from_utf8_lossy(&bytes[..end]).into_owned(), true)
}

/// `SIGKILL` and friends, as Node names them.
pub(crate) fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => return format!("SIG{signal}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_utf8_boundaries() {
        let s = "ab😀cd".as_bytes();
        assert_eq!(utf8_prefix(s, 4), ("ab".to_string(), true));
        assert_eq!(utf8_prefix(s, 5), ("ab".to_string(), true));
        assert_eq!(utf8_prefix(s, 6), ("ab😀".to_string(), true));
        assert_eq!(utf8_prefix("你好".as_bytes(), 4), ("你".to_string(), true));
        assert_eq!(utf8_prefix(s, 8), ("ab😀cd".to_string(), false));
    }
}
