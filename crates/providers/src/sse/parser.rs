//! The event-stream parser: bytes in, [`SseEvent`]s out, in time linear in the bytes however
//! they are chunked.
//!
//! The rules are WHATWG HTML's "Interpreting an event stream":
//! - a line ends at `\n`, `\r\n` or `\r`; a `\r` that ends one chunk and a `\n` that starts the
//!   next are one line end;
//! - one UTF-8 byte order mark at the start of the stream is skipped;
//! - a line starting with `:` is a comment; otherwise the field name runs to the first `:`
//!   (the whole line when there is none) and the value follows it, one leading space removed;
//! - `data` appends its value to the data buffer (lines joined by `\n`), `event` sets the event
//!   type, `id`, `retry` and unknown fields are ignored (nothing here reconnects);
//! - a blank line dispatches the event, named `message` when no `event` was given, unless no
//!   `data` line was seen; either way the event type and data start over;
//! - an event not ended by a blank line when the body ends is dropped.
//!
//! The values of `data` and `event` lines are validated as UTF-8 once their line is complete, so a
//! character split across chunks is whole by the time it is read; invalid UTF-8 there is an
//! error (elsewhere, in comments and ignored fields, it is ignored with them) (where the standard would
//! substitute U+FFFD, a provider stream with bad bytes is better reported than guessed at).
//!
//! Cost: each byte is copied once into the buffer, scanned once for a line end (`memchr`),
//! validated once, and copied once more into the event's `data`. Consumed bytes are skipped by
//! an offset; the buffer is compacted only when the consumed part is at least half of it, so
//! compaction costs amortised O(1) per byte.

use memchr::memchr2;
use toolsmith_core::{ModelError, ModelErrorKind};

use super::SseEvent;

/// The UTF-8 encoding of U+FEFF.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// An incremental event-stream parser: [`push`](Self::push) the body's chunks as they arrive
/// and take the completed events with [`next_event`](Self::next_event).
#[derive(Debug, Default)]
pub(crate) struct Parser {
    /// Received bytes; those before `pos` are consumed.
    buf: Vec<u8>,
    /// The start of the first unconsumed line.
    pos: usize,
    /// Where the search for the next line end resumes: the bytes from `pos` to here hold none,
    /// so a long line arriving in many chunks is scanned once, not once per chunk.
    scanned: usize,
    /// The last line ended in a `\r` that was the last byte received: a `\n` arriving next
    /// belongs to that line end.
    skip_lf: bool,
    /// The start of the stream was checked for a byte order mark.
    bom_checked: bool,
    /// The event type buffer (empty: `message`).
    event: String,
    /// The data buffer, lines joined by `\n`.
    data: String,
    /// A `data` line was seen since the last dispatch (the data may still be empty).
    has_data: bool,
}

impl Parser {
    /// Appends a chunk of the body.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        if self.pos == self.buf.len() {
            // Everything was consumed: start over without moving anything.
            self.buf.clear();
            self.pos = 0;
            self.scanned = 0;
        } else if self.pos >= self.buf.len() - self.pos {
            // The consumed part is at least as large as the rest: moving the rest costs no more
            // than the bytes consumed since the last compaction, so it is amortised linear.
            self.buf.copy_within(self.pos.., 0);
            self.buf.truncate(self.buf.len() - self.pos);
            self.scanned -= self.pos;
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event in what was pushed, `None` when more bytes are needed.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` when a line is not valid UTF-8.
    pub(crate) fn next_event(&mut self) -> Option<Result<SseEvent, ModelError>> {
        if !self.bom_checked {
            let rest = &self.buf[self.pos..];
            if rest.len() < BOM.len() && BOM.starts_with(rest) {
                // Possibly a BOM split across chunks: wait for the rest of it.
                return None;
            }
            self.bom_checked = true;
            if rest.starts_with(BOM) {
                self.pos += BOM.len();
                self.scanned = self.scanned.max(self.pos);
            }
        }
        loop {
            if self.skip_lf && self.pos < self.buf.len() {
                self.skip_lf = false;
                if self.buf[self.pos] == b'\n' {
                    self.pos += 1;
                    self.scanned = self.scanned.max(self.pos);
                }
            }
            let Some(at) = memchr2(b'\n', b'\r', &self.buf[self.scanned..]) else {
                self.scanned = self.buf.len();
                return None;
            };
            let end = self.scanned + at;
            let start = self.pos;
            let mut next = end + 1;
            if self.buf[end] == b'\r' {
                match self.buf.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            self.pos = next;
            self.scanned = next;
            match self.line(start, end) {
                Ok(true) => {
                    if let Some(event) = self.dispatch() {
                        return Some(Ok(event));
                    }
                }
                Ok(false) => {}
                Err(error) => return Some(Err(error)),
            }
        }
    }

    /// Interprets the line `buf[start..end]`; `true` for a blank line (dispatch).
    ///
    /// The field name is matched on bytes (the names that matter are ASCII), so only the value
    /// of a `data` or `event` line is validated as UTF-8: those are the only text kept.
    fn line(&mut self, start: usize, end: usize) -> Result<bool, ModelError> {
        let line = &self.buf[start..end];
        let (name, value) = match memchr::memchr(b':', line) {
            Some(0) => return Ok(false),
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None if line.is_empty() => return Ok(true),
            None => (line, &b""[..]),
        };
        let target = match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.has_data = true;
                &mut self.data
            }
            b"event" => {
                self.event.clear();
                &mut self.event
            }
            // `id` and `retry` serve reconnection, which a model response never does.
            _ => return Ok(false),
        };
        let value = std::str::from_utf8(value).map_err(|error| {
            ModelError::new(
                ModelErrorKind::InvalidResponse,
                format!("The event stream is not valid UTF-8: {error}"),
            )
        })?;
        target.push_str(value);
        Ok(false)
    }

    /// Ends the event at a blank line: the event, or `None` when it had no data.
    fn dispatch(&mut self) -> Option<SseEvent> {
        let has_data = std::mem::take(&mut self.has_data);
        let event = if self.event.is_empty() {
            "message".to_owned()
        } else {
            // The name is short: copy it, keeping the buffer's capacity for the next one.
            self.event.clone()
        };
        self.event.clear();
        if !has_data {
            self.data.clear();
            return None;
        }
        // The data moves out whole; the next event's starts with a fresh buffer sized for it.
        let data = std::mem::take(&mut self.data);
        Some(SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(chunks: &[&[u8]]) -> Vec<Result<SseEvent, String>> {
        let mut parser = Parser::default();
        let mut events = Vec::new();
        for chunk in chunks {
            parser.push(chunk);
            while let Some(event) = parser.next_event() {
                events.push(event.map_err(|e| e.message));
            }
        }
        events
    }

    fn ok(event: &str, data: &str) -> Result<SseEvent, String> {
        Ok(SseEvent {
            event: event.into(),
            data: data.into(),
        })
    }

    #[test]
    fn a_cr_ending_one_chunk_and_a_lf_starting_the_next_are_one_line_end() {
        // Two line ends would make a blank line and dispatch `a` early, then `b` alone.
        assert_eq!(
            parse(&[b"data: a\r", b"\ndata: b\r\n\r\n"]),
            [ok("message", "a\nb")]
        );
        assert_eq!(parse(&[b"data: a\r", b"\r"]), [ok("message", "a")]);
    }

    #[test]
    fn a_bom_split_across_chunks_is_skipped_once() {
        assert_eq!(
            parse(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]),
            [ok("message", "x")]
        );
        // A second BOM is part of the field name, which is then unknown.
        assert_eq!(parse(&[b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\n"]), []);
    }

    #[test]
    fn a_character_split_across_chunks_is_whole() {
        let body = "data: é€😀\n\n".as_bytes();
        for cut in 0..body.len() {
            assert_eq!(
                parse(&[&body[..cut], &body[cut..]]),
                [ok("message", "é€😀")]
            );
        }
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let events = parse(&[b"data: \xFF\n\n"]);
        let Err(message) = &events[0] else {
            panic!("{events:?}")
        };
        assert!(message.starts_with("The event stream is not valid UTF-8: "));
    }

    #[test]
    fn events_without_data_are_not_dispatched_and_reset_the_name() {
        assert_eq!(
            parse(&[b"event: a\nid: 1\nretry: 5\n\ndata\n\nevent: b\ndata:\n\n"]),
            [ok("message", ""), ok("b", "")]
        );
    }

    #[test]
    fn one_chunk_of_many_events_is_consumed_by_offset() {
        let body = "data: x\n\n".repeat(1000);
        let mut parser = Parser::default();
        parser.push(body.as_bytes());
        let mut n = 0;
        while let Some(event) = parser.next_event() {
            assert_eq!(event.unwrap().data, "x");
            n += 1;
        }
        assert_eq!(n, 1000);
        // The next chunk starts a fresh buffer rather than moving anything.
        parser.push(b"data: y");
        assert_eq!((parser.pos, parser.buf.len()), (0, 7));
    }
}
