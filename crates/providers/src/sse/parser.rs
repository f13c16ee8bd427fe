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
//! The values of `data` and `event` lines are validated as UTF-8 when their event is read, so
//! a character split across chunks is whole by then; invalid UTF-8 there is an error (elsewhere,
//! in comments and ignored fields, it is ignored with them; so is an invalid event name when
//! only the data is read) (where the standard would substitute U+FFFD, a provider stream with
//! bad bytes is better reported than guessed at).
//!
//! Cost: each byte is copied once into the buffer, scanned once for a line end (`memchr`) and
//! validated once. An event with one `data` line (what every provider sends) is read in place:
//! [`Parser::next_data`] lends it from the buffer, with no copy and no allocation;
//! [`Parser::next_event`] copies it once into the owned [`SseEvent`]. Consumed bytes are
//! skipped by an offset; the buffer is compacted only when the consumed part is at least half
//! of it, so compaction costs amortised O(1) per byte. The buffer is reused from one response
//! to the next on a thread (see `SPARE`).

use std::cell::Cell;

use memchr::memchr2;
use toolsmith_core::{ModelError, ModelErrorKind};

use super::SseEvent;

impl Drop for Parser {
    fn drop(&mut self) {
        if self.buf.capacity() <= SPARE_MAX {
            let mut buf = std::mem::take(&mut self.buf);
            buf.clear();
            SPARE.set(buf);
        }
    }
}

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
    /// The event type buffer (empty: `message`), validated when an event is read with its name:
    /// the decoders read only the data, and need not pay for the name.
    event: Vec<u8>,
    /// The data of an event with several `data` lines, joined by `\n`.
    data: String,
    /// What the event's data is so far.
    pending: Pending,
}

/// The data of the event being read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// No `data` line yet.
    #[default]
    None,
    /// One `data` line: its value is `buf[start..end]`, not yet validated. [`Parser::push`]
    /// keeps those bytes (and moves the range with them when it compacts).
    Line(usize, usize),
    /// Several lines, validated and joined in `Parser::data`.
    Joined,
}

/// A dispatched event, its data still in the parser.
#[derive(Debug, Clone, Copy)]
enum Dispatched {
    Line(usize, usize),
    Joined,
}

thread_local! {
    /// The buffer of the last parser dropped on this thread, emptied, for the next one to take
    /// ([`Parser::new`]): each response's parser used to allocate its buffer and grow it to the
    /// size of the body's chunks, and an agent run reads one response per step.
    static SPARE: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

/// The largest buffer kept for the next parser: a rare huge chunk is not held on to.
const SPARE_MAX: usize = 64 * 1024;

impl Parser {
    /// A parser, its buffer the one the last parser dropped on this thread left.
    pub(crate) fn new() -> Self {
        let mut parser = Parser::default();
        parser.buf = SPARE.take();
        parser
    }

    /// Appends a chunk of the body.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        // Bytes before `keep` are done with: those before `pos`, except a lone `data` line
        // of the event being read, which is still lent from here.
        let keep = match self.pending {
            Pending::Line(start, _) => start,
            _ => self.pos,
        };
        if keep > 0 && keep >= self.buf.len() - keep {
            // The part done with is at least as large as the rest (all of it, often: then
            // nothing moves): moving the rest costs no more than the bytes consumed since the
            // last compaction, so it is amortised linear.
            self.buf.copy_within(keep.., 0);
            self.buf.truncate(self.buf.len() - keep);
            self.pos -= keep;
            self.scanned -= keep;
            if let Pending::Line(start, end) = &mut self.pending {
                *start -= keep;
                *end -= keep;
            }
        }
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event in what was pushed, `None` when more bytes are needed.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` when a line is not valid UTF-8.
    pub(crate) fn next_event(&mut self) -> Option<Result<SseEvent, ModelError>> {
        let dispatched = match self.next_dispatch()? {
            Ok(dispatched) => dispatched,
            Err(error) => return Some(Err(error)),
        };
        let event = if self.event.is_empty() {
            Ok("message".to_owned())
        } else {
            // The name is short: copy it, keeping the buffer's capacity for the next one.
            utf8(&self.event).map(str::to_owned)
        };
        self.event.clear();
        Some(event.and_then(|event| {
            self.data_of(dispatched).map(|data| SseEvent {
                event,
                data: data.to_owned(),
            })
        }))
    }

    /// The next complete event's data, lent from the parser (the event's name is not read: no
    /// decoder needs it); `None` when more bytes are needed.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` when a line is not valid UTF-8.
    pub(crate) fn next_data(&mut self) -> Option<Result<&str, ModelError>> {
        let dispatched = match self.next_dispatch()? {
            Ok(dispatched) => dispatched,
            Err(error) => return Some(Err(error)),
        };
        self.event.clear();
        Some(self.data_of(dispatched))
    }

    /// The data of the event just dispatched.
    fn data_of(&self, dispatched: Dispatched) -> Result<&str, ModelError> {
        match dispatched {
            Dispatched::Line(start, end) => utf8(&self.buf[start..end]),
            Dispatched::Joined => Ok(&self.data),
        }
    }

    /// Reads lines up to the next dispatched event.
    fn next_dispatch(&mut self) -> Option<Result<Dispatched, ModelError>> {
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
    /// Only two field names matter, so the line is matched against them rather than split at
    /// its first colon: every other line (a comment, `id`, `retry`, an unknown field) is
    /// ignored whatever its name, and an SSE line is short enough that the search for the colon
    /// cost more than the rest of reading it. Only the value of a `data` or `event` line is
    /// validated as UTF-8: those are the only text kept.
    fn line(&mut self, start: usize, end: usize) -> Result<bool, ModelError> {
        let line = &self.buf[start..end];
        if line.is_empty() {
            return Ok(true);
        }
        if let Some(value) = field_value(line, b"data") {
            let value_start = end - value.len();
            match self.pending {
                Pending::None => self.pending = Pending::Line(value_start, end),
                Pending::Line(first_start, first_end) => {
                    self.data.clear();
                    self.data.push_str(utf8(&self.buf[first_start..first_end])?);
                    self.data.push('\n');
                    self.data.push_str(utf8(&self.buf[value_start..end])?);
                    self.pending = Pending::Joined;
                }
                Pending::Joined => {
                    self.data.push('\n');
                    self.data.push_str(utf8(&self.buf[value_start..end])?);
                }
            }
        } else if let Some(value) = field_value(line, b"event") {
            self.event.clear();
            self.event.extend_from_slice(value);
        }
        // `id` and `retry` serve reconnection, which a model response never does.
        Ok(false)
    }

    /// Ends the event at a blank line: where its data is, or `None` (the event type reset)
    /// when it had none.
    fn dispatch(&mut self) -> Option<Dispatched> {
        match std::mem::take(&mut self.pending) {
            Pending::None => {
                self.event.clear();
                None
            }
            Pending::Line(start, end) => Some(Dispatched::Line(start, end)),
            Pending::Joined => Some(Dispatched::Joined),
        }
    }
}

/// The value of `line` when its field name is `name`: the rest after the colon, one leading
/// space removed, or empty when the line is the name alone (no colon).
fn field_value<'a>(line: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    match line.strip_prefix(name)? {
        [] => Some(&[]),
        [b':', b' ', value @ ..] | [b':', value @ ..] => Some(value),
        // A longer name that starts with this one (`database: …`).
        _ => None,
    }
}

/// `bytes` as text, or the stream's UTF-8 error. `simdutf8`'s check (SIMD, chosen at run time)
/// in place of std's, whose byte loop was about 6 % of decoding a Gemini stream; its `compat`
/// error is std's, message included.
fn utf8(bytes: &[u8]) -> Result<&str, ModelError> {
    simdutf8::compat::from_utf8(bytes).map_err(|error| {
        ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!("The event stream is not valid UTF-8: {error}"),
        )
    })
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
        // Long enough for the SIMD check, with the bad byte after a valid multi-byte character:
        // the message names the same place std's error would.
        let mut body = b"data: ".to_vec();
        body.extend("é".repeat(40).as_bytes());
        body.extend(b"\xFF tail\n\n");
        let events = parse(&[&body]);
        let Err(message) = &events[0] else {
            panic!("{events:?}")
        };
        let std_error = std::str::from_utf8(&body[6..body.len() - 2]).unwrap_err();
        assert_eq!(
            *message,
            format!("The event stream is not valid UTF-8: {std_error}")
        );
        assert!(message.ends_with("invalid utf-8 sequence of 1 bytes from index 80"));
    }

    #[test]
    fn events_without_data_are_not_dispatched_and_reset_the_name() {
        assert_eq!(
            parse(&[b"event: a\nid: 1\nretry: 5\n\ndata\n\nevent: b\ndata:\n\n"]),
            [ok("message", ""), ok("b", "")]
        );
    }

    #[test]
    fn only_the_exact_field_names_data_and_event_count() {
        assert_eq!(
            parse(&[b"database: x\nevents: y\n:data: z\ndata:a\nevent:e\n\n"]),
            [ok("e", "a")]
        );
        // One leading space is removed, not two; a name alone has an empty value.
        assert_eq!(
            parse(&[b"event:  e\ndata:  a\ndata\n\n"]),
            [ok(" e", " a\n")]
        );
    }

    #[test]
    fn an_invalid_event_name_is_an_error_only_where_the_name_is_read() {
        let body: &[u8] = b"event: \xFF\ndata: x\n\n";
        let events = parse(&[body]);
        let Err(message) = &events[0] else {
            panic!("{events:?}")
        };
        assert!(message.starts_with("The event stream is not valid UTF-8: "));
        // The decoders read the data alone: the name is ignored like any unread field.
        assert_eq!(parse_data(&[body]), ["x"]);
    }

    /// The data of every event, read in place with `next_data`.
    fn parse_data(chunks: &[&[u8]]) -> Vec<String> {
        let mut parser = Parser::default();
        let mut data = Vec::new();
        for chunk in chunks {
            parser.push(chunk);
            while let Some(event) = parser.next_data() {
                data.push(event.expect("valid").to_owned());
            }
        }
        data
    }

    #[test]
    fn a_data_line_waiting_for_its_blank_line_survives_a_push_that_compacts() {
        // After `x` is read, the consumed part is larger than `yyyy`'s line: the next push
        // compacts the buffer, and the range of `yyyy`, still unread, must move with it.
        let data = parse_data(&[b"data: xxxxxxxxxxxxxxxx\n\ndata: yyyy\n", b"\n"]);
        assert_eq!(data, ["xxxxxxxxxxxxxxxx", "yyyy"]);
        // Everything consumed but the pending line: it is kept, and a fresh chunk appends.
        let data = parse_data(&[b"data: yyyy\n", b"\r", b"\n", b"data: z\n\n"]);
        assert_eq!(data, ["yyyy", "z"]);
        // Byte by byte, and several data lines joined, in place as owned.
        let body = b"data: a\r\ndata: b\r\n\r\nevent: e\ndata: c\n\n";
        let chunks: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(parse_data(&chunks), ["a\nb", "c"]);
        assert_eq!(parse(&chunks), [ok("message", "a\nb"), ok("e", "c")]);
    }

    #[test]
    fn invalid_utf8_in_a_lone_data_line_is_an_error_when_its_event_is_read() {
        let mut parser = Parser::default();
        parser.push(b"data: \xFF\n\n");
        let error = parser.next_data().expect("an event").unwrap_err();
        assert!(
            error
                .message
                .starts_with("The event stream is not valid UTF-8: ")
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
