//! A progress line on stderr while the model loads or thinks.
//!
//! Shown only when stderr is a terminal and nothing has arrived for a moment; erased before
//! anything else is printed, so piped output and `--json` never contain it.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How long a wait must be before the spinner shows.
const DELAY: Duration = Duration::from_millis(150);

const FRAMES: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The progress line.
pub(crate) struct Spinner {
    enabled: bool,
    label: String,
    since: Instant,
    frame: usize,
    shown: bool,
}

impl Spinner {
    /// A spinner that shows `label` (enabled only on a terminal, and not with `--json`).
    pub(crate) fn new(label: impl Into<String>, json: bool) -> Self {
        Spinner {
            enabled: !json && std::io::stderr().is_terminal(),
            label: label.into(),
            since: Instant::now(),
            frame: 0,
            shown: false,
        }
    }

    /// Something arrived: erase the line and start waiting again, with a new label.
    pub(crate) fn reset(&mut self, label: &str) {
        self.clear();
        label.clone_into(&mut self.label);
        self.since = Instant::now();
    }

    /// Advances the animation if the wait has been long enough.
    pub(crate) fn tick(&mut self) {
        if !self.enabled || self.since.elapsed() < DELAY {
            return;
        }
        let mut err = std::io::stderr().lock();
        let seconds = self.since.elapsed().as_secs_f32();
        let _ = write!(
            err,
            "\r\x1b[K{} {} {seconds:.1}s",
            FRAMES[self.frame % FRAMES.len()],
            self.label
        );
        let _ = err.flush();
        self.frame += 1;
        self.shown = true;
    }

    /// Erases the line if it is showing.
    pub(crate) fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.shown = false;
        }
    }
}
