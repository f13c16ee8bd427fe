//! The worker protocol: length-prefixed JSON frames over the worker's channel.
//!
//! A frame is a 4-byte big-endian length followed by that many bytes of JSON. The worker speaks
//! first, with [`Response::Ready`] once it is confined and warm; then each [`Request`] gets
//! exactly one [`Response`], in order. The worker exits at EOF. Both sides bound the frames
//! they accept, and the host treats whatever the worker sends as untrusted data.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::RunCodeLimits;
use super::engine::{Failed, Outcome};

/// The largest request the worker reads: the code is at most `output_bytes` (at most 10 MiB),
/// and JSON escapes a byte into at most 6.
pub(super) const MAX_REQUEST: usize = 64 << 20;

/// The largest response the host reads for `limits`: the logs, the result and an error text are
/// each capped at `output_bytes` by the worker, and JSON escaping can grow them sixfold.
pub(super) fn max_response(limits: &RunCodeLimits) -> usize {
    limits
        .output_bytes
        .saturating_mul(24)
        .saturating_add(1 << 20)
}

/// What the host asks.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(super) enum Request {
    /// Run `code` in a fresh runtime under `limits`.
    Run {
        /// The source.
        code: String,
        /// The limits of this call.
        limits: RunCodeLimits,
    },
    /// Report what the worker's sandbox lets it do (see [`WorkerProbe`](super::WorkerProbe)).
    Probe {
        /// A file to try to open for reading.
        path: PathBuf,
    },
}

/// What the worker answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(super) enum Response {
    /// The first frame: the worker is confined and ready.
    Ready,
    /// The outcome of a [`Request::Run`], with results and error texts already capped.
    Run {
        /// What the engine produced.
        result: Result<Outcome, Failed>,
    },
    /// The answer to a [`Request::Probe`].
    Probe {
        /// `None` when the file opened; the error otherwise.
        open_error: Option<String>,
        /// `None` when a TCP socket could be created; the error otherwise.
        socket_error: Option<String>,
    },
}

/// Why a frame could not be read.
#[derive(Debug)]
pub(super) enum FrameError {
    /// The peer closed the channel (at a frame boundary or not).
    Closed,
    /// The deadline passed first.
    Deadline,
    /// The announced length is over the limit.
    TooLarge(usize),
    /// Any other I/O error.
    Io(io::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Closed => f.write_str("the channel closed"),
            FrameError::Deadline => f.write_str("the deadline passed"),
            FrameError::TooLarge(len) => write!(f, "a frame of {len} bytes is over the limit"),
            FrameError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// One frame: the length, then the JSON of `message`.
pub(super) fn encode(message: &impl Serialize) -> io::Result<Vec<u8>> {
    let mut frame = vec![0u8; 4];
    serde_json::to_writer(&mut frame, message).map_err(io::Error::other)?;
    let len = u32::try_from(frame.len() - 4).map_err(io::Error::other)?;
    frame[..4].copy_from_slice(&len.to_be_bytes());
    Ok(frame)
}

/// Writes one frame.
pub(super) fn write_frame(mut out: impl Write, message: &impl Serialize) -> io::Result<()> {
    out.write_all(&encode(message)?)?;
    out.flush()
}

/// Reads one frame of at most `max` bytes. With a `deadline`, `wait` is called before each read:
/// it waits until `input` is readable (or at EOF) and returns `false` if the deadline came
/// first (a `poll`: socket timeouts count in jiffies and overshoot by milliseconds).
pub(super) fn read_frame(
    input: &mut impl Read,
    max: usize,
    mut wait: impl FnMut(Instant) -> io::Result<bool>,
    deadline: Option<Instant>,
) -> Result<Vec<u8>, FrameError> {
    let mut len = [0u8; 4];
    read_exact(input, &mut len, &mut wait, deadline)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > max {
        return Err(FrameError::TooLarge(len));
    }
    let mut body = vec![0u8; len];
    read_exact(input, &mut body, &mut wait, deadline)?;
    Ok(body)
}

fn read_exact(
    input: &mut impl Read,
    mut buf: &mut [u8],
    wait: &mut impl FnMut(Instant) -> io::Result<bool>,
    deadline: Option<Instant>,
) -> Result<(), FrameError> {
    while !buf.is_empty() {
        if let Some(deadline) = deadline
            && !wait(deadline).map_err(FrameError::Io)?
        {
            return Err(FrameError::Deadline);
        }
        match input.read(buf) {
            Ok(0) => return Err(FrameError::Closed),
            Ok(n) => buf = &mut buf[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                return Err(FrameError::Closed);
            }
            Err(e) => return Err(FrameError::Io(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_are_bounded() {
        let mut wire = Vec::new();
        write_frame(&mut wire, &Response::Ready).unwrap();
        assert_eq!(&wire[..4], &(wire.len() as u32 - 4).to_be_bytes());
        let body = read_frame(&mut wire.as_slice(), 1 << 10, |_| Ok(true), None).unwrap();
        assert!(matches!(
            serde_json::from_slice::<Response>(&body).unwrap(),
            Response::Ready
        ));
        assert!(matches!(
            read_frame(&mut wire.as_slice(), 4, |_| Ok(true), None),
            Err(FrameError::TooLarge(_))
        ));
        assert!(matches!(
            read_frame(&mut &wire[..6], 1 << 10, |_| Ok(true), None),
            Err(FrameError::Closed)
        ));
    }
}
