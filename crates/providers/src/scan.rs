//! A zero-copy JSON cursor for the stream decoders' hand-written fast paths.
//!
//! Stream chunks come in a few fixed shapes (a text delta is the same dozen keys every time),
//! and for them serde's generated visitors, which are general, cost more than the reading
//! itself. A decoder's fast path walks such a payload with a [`Cursor`], matching keys as bytes
//! and borrowing strings from the payload, and hands anything else to serde.
//!
//! The contract that makes that hand-off safe: every read returns `None` ("declined") unless the
//! input is what it expects **and** is JSON that serde_json accepts, read the way serde_json
//! reads it. The cursor never reports an error: on `None` the caller drops what it read and lets
//! serde parse the payload from the start, and serde produces the error for malformed input. So
//! the cursor is strict (JSON as serde_json implements it: no trailing commas, no leading zeros,
//! no raw control characters in strings, only ` \t\n\r` as whitespace) and conservative: it also
//! declines some valid JSON it has no need to read, namely
//! - keys with escapes (serde would match `"\u0069d"` as `id`; declining is simpler),
//! - `\u` escapes of unpaired surrogates (serde_json rejects them in strings it decodes and
//!   accepts them in strings it skips; declining is right in both cases),
//! - anything but a plain non-negative integer that fits a `u64` where one is expected (serde
//!   rejects `1.0`, `-0`, `1e2` or an overflowing integer for a `u64` field),
//! - values nested deeper than [`MAX_SKIP_DEPTH`] in [`Cursor::skip_value`].
//!
//! Repeated keys are the caller's business: serde's derived visitors reject a repeated field
//! they know and ignore repeated unknown ones, so a fast path declines on a repeated key it
//! reads (see [`Seen`]) and skips the others.

use std::borrow::Cow;

/// How deep [`Cursor::skip_value`] follows nested arrays and objects before declining. Far
/// below serde_json's recursion limit (128), so the cursor never accepts what serde would reject
/// as too deep, and deeper than any unknown member seen in practice (`logprobs`, vendor usage
/// extensions nest three or four levels).
pub(crate) const MAX_SKIP_DEPTH: usize = 32;

/// A read position in one JSON text. Cheap to copy: a fast path that wants to try a read and
/// back out can keep a clone.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `src`.
    pub(crate) fn new(src: &'a str) -> Self {
        Cursor { src, pos: 0 }
    }

    /// A cursor at byte `pos` of `src`: for resuming a read whose start another text shares,
    /// byte for byte, with one read before (read the same way, it needs no second reading).
    pub(crate) fn at(src: &'a str, pos: usize) -> Self {
        Cursor { src, pos }
    }

    /// Where the cursor is, as a byte offset in its text.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Reads an object, calling `member` with each key (its raw bytes: a key with an escape
    /// declines) after the `:`. `member` must read or skip the value, or decline.
    #[inline(always)]
    pub(crate) fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        self.expect(b'{')?;
        if self.eat(b'}') {
            return Some(());
        }
        self.members(&mut member)
    }

    /// The rest of an object whose member's value was just read: its further members, as
    /// [`Cursor::object`] reads them, and its end. For a reader that resumes an object in its
    /// middle (see [`Cursor::at`]).
    #[inline(always)]
    pub(crate) fn object_rest(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        if !self.eat(b',') {
            return self.expect(b'}');
        }
        self.members(&mut member)
    }

    /// An object as [`Cursor::object`] reads it, faster when its members come in the order its
    /// writer always uses: its first member is one of `first`, then each group of `then` gives
    /// at most one next member. Each `(run, key)` is matched as one run of bytes (`{"key":` for
    /// the first member, `,"key":` after) and its value read by `member` under `key`, with no
    /// key dispatch; from the first byte off that order on, members are read key by key.
    #[inline(always)]
    pub(crate) fn object_in_order(
        &mut self,
        first: &[(&[u8], &'a [u8])],
        then: &[&[(&[u8], &'a [u8])]],
        mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        let Some(&(_, key)) = first.iter().find(|(run, _)| self.literal(run).is_some()) else {
            return self.object(member);
        };
        member(self, key)?;
        for group in then {
            if let Some(&(_, key)) = group.iter().find(|(run, _)| self.literal(run).is_some()) {
                member(self, key)?;
            }
        }
        self.object_rest(member)
    }

    /// Members from a key on, and the object's end.
    #[inline(always)]
    fn members(
        &mut self,
        member: &mut impl FnMut(&mut Self, &'a [u8]) -> Option<()>,
    ) -> Option<()> {
        loop {
            self.expect(b'"')?;
            let key = self.plain_key_rest()?;
            self.expect(b':')?;
            member(self, key)?;
            if !self.eat(b',') {
                return self.expect(b'}');
            }
        }
    }

    /// Reads an array, calling `element` for each element, which must read or skip it, or
    /// decline.
    #[inline(always)]
    pub(crate) fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.expect(b'[')?;
        if self.eat(b']') {
            return Some(());
        }
        loop {
            element(self)?;
            if !self.eat(b',') {
                return self.expect(b']');
            }
        }
    }

    /// `null` as `None`, anything else as `read` reads it: an `Option<T>` field, which serde
    /// reads the same way.
    #[inline(always)]
    pub(crate) fn nullable<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Option<T>> {
        if self.take_null()? {
            Some(None)
        } else {
            read(self).map(Some)
        }
    }

    /// A string or `null`: an `Option<Cow<str>>` field. [`Cursor::nullable`] with
    /// [`Cursor::string`], spelled out because the commonest read of all is this one and the
    /// compiler did not inline `string` through the closure.
    #[inline(always)]
    pub(crate) fn optional_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.take_null()? {
            Some(None)
        } else {
            self.string().map(Some)
        }
    }

    /// Consumes a `null` if one comes next (`Some(true)`); `Some(false)` when another value
    /// does, for the caller to read (in place, where [`Cursor::nullable`] would move it).
    #[inline(always)]
    pub(crate) fn take_null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            Some(true)
        } else {
            Some(false)
        }
    }

    /// Reads `null`.
    pub(crate) fn null(&mut self) -> Option<()> {
        self.peek()?;
        self.literal(b"null")
    }

    /// Reads `true` or `false`.
    pub(crate) fn bool(&mut self) -> Option<bool> {
        match self.peek()? {
            b't' => self.literal(b"true").map(|()| true),
            b'f' => self.literal(b"false").map(|()| false),
            _ => None,
        }
    }

    /// Reads a string: borrowed from the text when it has no escapes (as serde borrows it),
    /// decoded otherwise. Declines on an unpaired surrogate escape.
    #[inline(always)]
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.expect(b'"')?;
        let start = self.pos;
        let end = plain_end(self.src.as_bytes(), start);
        match self.src.as_bytes().get(end)? {
            b'"' => {
                self.pos = end + 1;
                Some(Cow::Borrowed(&self.src[start..end]))
            }
            b'\\' => {
                let mut decoded = String::with_capacity(end - start + 8);
                self.string_with_escapes(start, Some(&mut decoded))?;
                Some(Cow::Owned(decoded))
            }
            _ => None,
        }
    }

    /// Reads a non-negative integer that fits a `u64`, written as an integer: what serde reads
    /// into a `u64` field (it rejects `1.0`, `1e0`, `-0` and overflow there, so they decline).
    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.peek()?;
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let end = digits_end(bytes, start);
        let digits = &bytes[start..end];
        // No digits, a leading zero (`01`, invalid JSON) or a fraction or exponent.
        if digits.is_empty()
            || (digits[0] == b'0' && digits.len() > 1)
            || matches!(bytes.get(end), Some(b'.' | b'e' | b'E'))
        {
            return None;
        }
        let mut value: u64 = 0;
        for &digit in digits {
            value = value
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
        }
        self.pos = end;
        Some(value)
    }

    /// Skips any one value, checking it is JSON serde would skip (an unknown field's value).
    /// Declines on nesting deeper than [`MAX_SKIP_DEPTH`] and on what [`Cursor::string`] and
    /// [`Cursor::object`] decline.
    #[inline(always)]
    pub(crate) fn skip_value(&mut self) -> Option<()> {
        // Most unknown members are strings (`object`, `system_fingerprint`…): skipped inline.
        if self.peek()? == b'"' {
            return self.skip_string();
        }
        self.skip_nested(MAX_SKIP_DEPTH)
    }

    /// Skips a string, checking it as [`Cursor::string`] would read it.
    #[inline(always)]
    fn skip_string(&mut self) -> Option<()> {
        self.pos += 1;
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let end = plain_end(bytes, start);
        match bytes.get(end)? {
            b'"' => {
                self.pos = end + 1;
                Some(())
            }
            // Checked like a decoded string, without building it.
            b'\\' => self.string_with_escapes(start, None),
            _ => None,
        }
    }

    /// The end of the text: only whitespace is left, as serde requires after the value.
    pub(crate) fn end(&mut self) -> Option<()> {
        self.peek().is_none().then_some(())
    }

    fn skip_nested(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => {
                let depth = depth.checked_sub(1)?;
                self.object(|cursor, _| cursor.skip_nested(depth))
            }
            b'[' => {
                let depth = depth.checked_sub(1)?;
                self.array(|cursor| cursor.skip_nested(depth))
            }
            b't' | b'f' => self.bool().map(drop),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    /// Skips a number in JSON's grammar, `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`,
    /// without reading its value: serde skips `1e999` or a hundred digits too. A digit after
    /// a leading `0` is left for the enclosing reader, which declines on it.
    fn skip_number(&mut self) -> Option<()> {
        let bytes = self.src.as_bytes();
        let mut at = self.pos;
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        match bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => at = digits_end(bytes, at),
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            at = some_digits(bytes, at + 1)?;
        }
        if matches!(bytes.get(at), Some(b'e' | b'E')) {
            at += 1;
            if matches!(bytes.get(at), Some(b'+' | b'-')) {
                at += 1;
            }
            at = some_digits(bytes, at)?;
        }
        self.pos = at;
        Some(())
    }

    /// The rest of a key whose opening quote was read, when it has no escapes, as bytes (what
    /// keys are compared as).
    #[inline(always)]
    fn plain_key_rest(&mut self) -> Option<&'a [u8]> {
        let bytes = self.src.as_bytes();
        let start = self.pos;
        let end = plain_end(bytes, start);
        if *bytes.get(end)? != b'"' {
            return None;
        }
        self.pos = end + 1;
        Some(&bytes[start..end])
    }

    /// The rest of a string from `start` (after its opening quote), which has an escape:
    /// decoded into `out` when there is one, else only checked. The slow part of strings,
    /// out of line.
    #[inline(never)]
    fn string_with_escapes(&mut self, start: usize, mut out: Option<&mut String>) -> Option<()> {
        let bytes = self.src.as_bytes();
        let mut run = start;
        loop {
            let end = plain_end(bytes, run);
            if let Some(out) = out.as_deref_mut() {
                out.push_str(&self.src[run..end]);
            }
            match bytes.get(end)? {
                b'"' => {
                    self.pos = end + 1;
                    return Some(());
                }
                b'\\' => {
                    let (ch, next) = escape(bytes, end + 1)?;
                    if let Some(out) = out.as_deref_mut() {
                        out.push(ch);
                    }
                    run = next;
                }
                _ => return None,
            }
        }
    }

    /// The next byte after whitespace, not consumed.
    #[inline(always)]
    fn peek(&mut self) -> Option<u8> {
        let byte = *self.src.as_bytes().get(self.pos)?;
        // Payloads are compact: the next byte is rarely whitespace (all of which is ≤ b' ').
        if byte > b' ' {
            return Some(byte);
        }
        self.peek_after_whitespace()
    }

    #[inline(never)]
    fn peek_after_whitespace(&mut self) -> Option<u8> {
        let bytes = self.src.as_bytes();
        while let Some(&byte) = bytes.get(self.pos) {
            if !matches!(byte, b' ' | b'\n' | b'\r' | b'\t') {
                return Some(byte);
            }
            self.pos += 1;
        }
        None
    }

    /// Consumes `byte` if it comes next (after whitespace).
    #[inline(always)]
    fn eat(&mut self, byte: u8) -> bool {
        let next = self.peek() == Some(byte);
        self.pos += usize::from(next);
        next
    }

    #[inline(always)]
    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// Consumes `word` if the text continues with it (whitespace already skipped).
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if !self.src.as_bytes()[self.pos..].starts_with(word) {
            return None;
        }
        self.pos += word.len();
        Some(())
    }
}

/// Tracks which of up to eight fields an object has had, for declining on a repeated one
/// (serde's derived visitors reject a repeated field: the fallback then reports it).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen(u8);

impl Seen {
    /// Marks field number `field` (below 8) seen; `None` when it already was.
    #[inline]
    pub(crate) fn first(&mut self, field: u8) -> Option<()> {
        let bit = 1 << field;
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }

    /// Whether field number `field` (below 8) was seen.
    pub(crate) fn has(self, field: u8) -> bool {
        self.0 & (1 << field) != 0
    }
}

/// Where the run of string bytes that need no attention ends: at a quote, a backslash, a raw
/// control character (invalid in a JSON string), or the end of the text.
///
/// Eight bytes at a time (as serde_json does): strings are most of a payload's bytes, and a
/// byte-at-a-time loop was the cursor's largest cost. A word's flags may be wrong above its
/// first match (borrows run upwards), never below it, so the lowest flag is exact.
#[inline]
pub(crate) fn plain_end(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
    while let Some(word) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        let quote = word ^ (ONES * u64::from(b'"'));
        let backslash = word ^ (ONES * u64::from(b'\\'));
        // A zero byte of `quote` or `backslash`, or a byte of `word` below 0x20.
        let flags = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (word.wrapping_sub(ONES * 0x20) & !word);
        let flags = flags & HIGH_BITS;
        if flags != 0 {
            return at + (flags.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    let rest = &bytes[at..];
    at + rest
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .unwrap_or(rest.len())
}

fn digits_end(bytes: &[u8], from: usize) -> usize {
    let rest = &bytes[from..];
    from + rest
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len())
}

/// [`digits_end`] of at least one digit.
fn some_digits(bytes: &[u8], from: usize) -> Option<usize> {
    let end = digits_end(bytes, from);
    (end > from).then_some(end)
}

/// The character of the escape whose letter is at `at` (after the backslash), and where the
/// text continues. Declines on an unknown escape and on an unpaired surrogate.
fn escape(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let ch = match bytes.get(at)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let unit = hex4(bytes, at + 1)?;
            return match unit {
                0xD800..=0xDBFF => {
                    // A leading surrogate: the trailing one must follow as `\uXXXX`.
                    if bytes.get(at + 5..at + 7)? != b"\\u" {
                        return None;
                    }
                    let low = hex4(bytes, at + 7)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return None;
                    }
                    let code = 0x1_0000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    Some((char::from_u32(code)?, at + 11))
                }
                0xDC00..=0xDFFF => None,
                _ => Some((char::from_u32(unit)?, at + 5)),
            };
        }
        _ => return None,
    };
    Some((ch, at + 1))
}

/// The four hex digits at `at` as a number.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |value, &digit| {
        Some(value * 16 + char::from(digit).to_digit(16)?)
    })
}

#[cfg(test)]
mod tests;

// Reads for particular fast paths: `raw_value` for the Responses decoder's, `tokens` and
// `small_u64` for the Anthropic decoder's.
impl<'a> Cursor<'a> {
    /// Skips one value as [`Cursor::skip_value`] does and returns its text, without the
    /// whitespace around it: a member a fast path does not build itself (a `serde_json::Value`
    /// it keeps) but hands to serde alone, which then parses only that text. Declines on what
    /// [`Cursor::skip_value`] declines.
    pub(crate) fn raw_value(&mut self) -> Option<&'a str> {
        self.peek()?;
        let start = self.pos;
        self.skip_value()?;
        Some(&self.src[start..self.pos])
    }

    /// Consumes `tokens` if the text continues with exactly these bytes: no whitespace is
    /// skipped before or inside them. One comparison for a run of tokens a server always sends
    /// the same way (`{"type":"content_block_delta","index":`), where reading them one by one
    /// cost more than the rest of the payload. `tokens` must be JSON that the cursor's own
    /// reads would accept (keys without escapes, no unfinished string), which keeps the
    /// contract: what it consumes is read as serde reads it.
    #[inline(always)]
    pub(crate) fn tokens(&mut self, tokens: &[u8]) -> Option<()> {
        self.literal(tokens)
    }

    /// A `u64` as [`Cursor::u64`] reads it, one or two digits (an index, most token counts)
    /// read inline by [`Cursor::small_u64`] first.
    #[inline(always)]
    pub(crate) fn u64_small_inline(&mut self) -> Option<u64> {
        self.small_u64().or_else(|| self.u64())
    }

    /// Reads a `u64` of one or two digits, inline; declines on anything else (whitespace
    /// first, a third digit, a fraction, an exponent, a leading zero), which [`Cursor::u64`]
    /// then reads or declines. For a block index, on every event: the out-of-line `u64` cost
    /// more than the rest of the index's reading.
    #[inline(always)]
    pub(crate) fn small_u64(&mut self) -> Option<u64> {
        let bytes = self.src.as_bytes();
        let digit = |at: usize| {
            let byte = *bytes.get(at)?;
            byte.is_ascii_digit().then(|| u64::from(byte - b'0'))
        };
        let first = digit(self.pos)?;
        let (value, len) = match digit(self.pos + 1) {
            None => (first, 1),
            // `0` followed by a digit is not JSON: declined.
            Some(second) if first != 0 => (first * 10 + second, 2),
            Some(_) => return None,
        };
        if matches!(
            bytes.get(self.pos + len),
            Some(b'0'..=b'9' | b'.' | b'e' | b'E')
        ) {
            return None;
        }
        self.pos += len;
        Some(value)
    }
}

#[cfg(test)]
mod responses_tests;

#[cfg(test)]
mod anthropic_tests;
