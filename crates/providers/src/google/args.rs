//! Streamed function-call arguments (`partialArgs`: a value at a JSON path, strings possibly in
//! several pieces) turned into the argument JSON text incrementally, so every piece can go out
//! as a tool-input delta the moment it arrives and the deltas concatenate to the final input.

use serde_json::Value;
use toolsmith_core::{ModelError, ModelErrorKind};

use super::wire::PartialArg;
use crate::errors::excerpt;
use crate::scan::plain_end;

/// One step of a JSON path: an object member or an array element. Its key is owned (`String`,
/// the default) where the writer keeps it, borrowed from the path (`&str`) where it is only
/// compared: every partial argument's path is parsed, and allocating its keys was a large share
/// of the time spent on a streamed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Segment<K = String> {
    Key(K),
    Index(usize),
}

impl<K: AsRef<str>> Segment<K> {
    /// The segment with an owned key.
    fn owned(&self) -> Segment {
        match self {
            Segment::Key(key) => Segment::Key(key.as_ref().to_owned()),
            Segment::Index(index) => Segment::Index(*index),
        }
    }

    /// Whether `other` is the same step, whoever owns the keys.
    fn same<L: AsRef<str>>(&self, other: &Segment<L>) -> bool {
        match (self, other) {
            (Segment::Key(a), Segment::Key(b)) => a.as_ref() == b.as_ref(),
            (Segment::Index(a), Segment::Index(b)) => a == b,
            _ => false,
        }
    }
}

/// [`parse_path_borrowed`] with owned keys.
#[cfg(test)]
pub(crate) fn parse_path(path: &str) -> Option<Vec<Segment>> {
    parse_path_borrowed(path).map(|segments| segments.iter().map(Segment::owned).collect())
}

/// How many steps of a path [`Path`] holds without allocating: more than the paths Gemini
/// sends for tool arguments (`$.recipe.ingredients[0].amount` has four).
const INLINE_STEPS: usize = 8;

/// A parsed path: its steps inline up to [`INLINE_STEPS`], in a vector beyond. Every partial
/// argument's path is parsed, and a vector for each was an allocation and a free per chunk.
pub(crate) struct Path<'a> {
    inline: [Segment<&'a str>; INLINE_STEPS],
    len: usize,
    spilled: Vec<Segment<&'a str>>,
}

impl<'a> Path<'a> {
    fn new() -> Self {
        Path {
            inline: [Segment::Index(0); INLINE_STEPS],
            len: 0,
            spilled: Vec::new(),
        }
    }

    fn push(&mut self, segment: Segment<&'a str>) {
        if self.len < INLINE_STEPS {
            self.inline[self.len] = segment;
            self.len += 1;
        } else {
            if self.spilled.is_empty() {
                self.spilled.extend_from_slice(&self.inline);
            }
            self.spilled.push(segment);
        }
    }
}

impl<'a> std::ops::Deref for Path<'a> {
    type Target = [Segment<&'a str>];

    fn deref(&self) -> &Self::Target {
        if self.spilled.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.spilled
        }
    }
}

/// Parses the JSON paths Gemini sends: `$`, `$.a.b`, `$.items[2].price`, `$['odd key']`,
/// `$["x"][0]`, the keys borrowed from `path`. `None` for anything else.
pub(crate) fn parse_path_borrowed(path: &str) -> Option<Path<'_>> {
    // `trim` (Unicode whitespace) cost more than the rest of a short path's parsing; a path that
    // starts with `$` and ends in a printable ASCII byte has nothing to trim.
    let untrimmed =
        path.starts_with('$') && path.as_bytes().last().is_some_and(u8::is_ascii_graphic);
    let rest = if untrimmed { path } else { path.trim() }.strip_prefix('$')?;
    let bytes = rest.as_bytes();
    let mut segments = Path::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'.' => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && bytes[end] != b'.' && bytes[end] != b'[' {
                    end += 1;
                }
                if end == start {
                    return None;
                }
                segments.push(Segment::Key(&rest[start..end]));
                i = end;
            }
            // An index written plainly (`[2]`), as Gemini writes them: what the general case
            // below reads it as, without its searches and trimming.
            b'[' if bytes.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let end = i
                    + 1
                    + bytes[i + 1..]
                        .iter()
                        .take_while(|b| b.is_ascii_digit())
                        .count();
                if bytes.get(end) == Some(&b']') {
                    segments.push(Segment::Index(rest[i + 1..end].parse().ok()?));
                    i = end + 1;
                } else {
                    i = index_or_key(rest, i, &mut segments)?;
                }
            }
            b'[' => i = index_or_key(rest, i, &mut segments)?,
            _ => return None,
        }
    }
    Some(segments)
}

/// The step of a path at its `[` (byte `i` of `rest`): a quoted key or an index, spaces
/// allowed inside the brackets. Where the path goes on, `None` for a malformed step.
fn index_or_key<'a>(rest: &'a str, i: usize, segments: &mut Path<'a>) -> Option<usize> {
    let inner = &rest[i + 1..];
    let trimmed = inner.trim_start();
    let offset = i + 1 + (inner.len() - trimmed.len());
    match trimmed.chars().next()? {
        quote @ ('\'' | '"') => {
            // A quoted key may contain `]` or `.`: it ends at its closing quote.
            let key_start = offset + 1;
            let key_end = key_start + rest[key_start..].find(quote)?;
            let after = &rest[key_end + 1..];
            let close = key_end + 1 + after.find(']')?;
            if !rest[key_end + 1..close].trim().is_empty() {
                return None;
            }
            segments.push(Segment::Key(&rest[key_start..key_end]));
            Some(close + 1)
        }
        _ => {
            let close = i + 1 + inner.find(']')?;
            let index = rest[i + 1..close].trim();
            if !index.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            segments.push(Segment::Index(index.parse().ok()?));
            Some(close + 1)
        }
    }
}

/// The value of one partial argument.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Piece<'a> {
    /// (A piece of) a string.
    Str(&'a str),
    /// A complete JSON value, already serialised.
    Literal(String),
}

/// A JSON number from Gemini's `numberValue` (a double): integral values are written without a
/// fraction (`2`, not `2.0`, so integer parameters deserialise), non-finite ones as `null`.
pub(crate) fn number_literal(value: &Value) -> String {
    let number = match value {
        Value::Number(n) if n.is_i64() || n.is_u64() => return n.to_string(),
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match number {
        Some(n) if n.is_finite() && n.fract() == 0.0 && n.abs() < 9_007_199_254_740_992.0 => {
            format!("{}", n as i64)
        }
        Some(n) if n.is_finite() => serde_json::Number::from_f64(n)
            .map(|n| n.to_string())
            .unwrap_or_else(|| "null".into()),
        _ => "null".into(),
    }
}

/// The most array elements one call's arguments may skip (each written as `null`). Gemini
/// sends elements in order and skips none; the tolerance is for a stream that does, but an
/// index is a number a few bytes long: `$.a[4000000000]` made the writer append four billion
/// `null`s (found by fuzzing: 2 GiB and 20 s from a 6 KiB stream).
pub(crate) const MAX_SKIPPED_ELEMENTS: usize = 1_000;

#[derive(Debug)]
struct Frame {
    /// How the parent reaches this container (`None` for the root).
    segment: Option<Segment>,
    array: bool,
    count: usize,
}

/// Builds one call's argument JSON text from partial arguments.
///
/// Gemini sends arguments depth-first in document order; each value goes where its path says,
/// containers are opened and closed as the path moves on, and a string sent in pieces
/// (`willContinue`) stays open until its last piece. Array elements skipped by an index are
/// `null`, [`MAX_SKIPPED_ELEMENTS`] of them in all at most. A path going back into a member already closed cannot be merged into text already
/// sent: it is written again (a repeated key, or a further array element).
#[derive(Debug, Default)]
pub(crate) struct ArgsWriter {
    text: String,
    sent: usize,
    frames: Vec<Frame>,
    /// The string still open for pieces, by the last step of its path (`None` for `$`): its
    /// parents are the open containers, `frames[1..]`, which cannot change while it is open.
    /// (Keeping the whole path allocated it, and its keys, for every string value.)
    open_string: Option<Option<Segment>>,
    closed: bool,
    /// Array elements written as `null` because an index skipped them.
    skipped: usize,
}

impl ArgsWriter {
    /// The text so far.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// The text written since the last call, if any.
    pub(crate) fn take_delta(&mut self) -> Option<String> {
        (self.sent < self.text.len()).then(|| {
            let delta = self.text[self.sent..].to_string();
            self.sent = self.text.len();
            delta
        })
    }

    /// The arguments as one whole value (a non-streamed `args`); ignored once anything was
    /// written.
    pub(crate) fn whole(&mut self, args: &Value) {
        if !self.text.is_empty() || self.closed {
            return;
        }
        match args {
            Value::Null => {}
            other => {
                self.text = other.to_string();
                self.closed = true;
            }
        }
    }

    /// Writes `piece` at `path`; `more` (the argument's `willContinue`) keeps a string open for
    /// further pieces at the same path.
    ///
    /// # Errors
    ///
    /// [`TooManySkipped`] when an index would skip more array elements than
    /// [`MAX_SKIPPED_ELEMENTS`] in all; nothing of the piece is written.
    pub(crate) fn write<K: AsRef<str>>(
        &mut self,
        path: &[Segment<K>],
        piece: Piece<'_>,
        more: bool,
    ) -> Result<(), TooManySkipped> {
        if self.open_string.is_some() {
            if let (true, Piece::Str(s)) = (self.is_open_string(path), &piece) {
                escape_into(&mut self.text, s);
                if !more {
                    self.text.push('"');
                    self.open_string = None;
                }
                return Ok(());
            }
            self.text.push('"');
            self.open_string = None;
        }
        if self.closed {
            return Ok(());
        }
        let Some((_, parents)) = path.split_last() else {
            // `$`: the whole value at once.
            if self.text.is_empty() {
                self.value(path, piece, more);
                self.closed = self.open_string.is_none();
            }
            return Ok(());
        };
        if self.frames.is_empty() {
            if !self.text.is_empty() {
                return Ok(());
            }
            let array = matches!(path[0], Segment::Index(_));
            self.text.push(if array { '[' } else { '{' });
            self.frames.push(Frame {
                segment: None,
                array,
                count: 0,
            });
        }
        // frames[d] is the container at path[..d]: keep the ones on this path.
        let mut depth = 1;
        while depth < self.frames.len()
            && depth <= parents.len()
            && self.frames[depth]
                .segment
                .as_ref()
                .is_some_and(|s| s.same(&parents[depth - 1]))
        {
            depth += 1;
        }
        while self.frames.len() > depth {
            self.pop();
        }
        for (i, segment) in path.iter().enumerate().skip(depth - 1) {
            if !self.member(segment)? {
                return Ok(());
            }
            if i + 1 == path.len() {
                self.value(path, piece, more);
                return Ok(());
            }
            let array = matches!(path[i + 1], Segment::Index(_));
            self.text.push(if array { '[' } else { '{' });
            self.frames.push(Frame {
                segment: Some(segment.owned()),
                array,
                count: 0,
            });
        }
        Ok(())
    }

    /// Ends the arguments: closes what is open; no arguments at all are `{}`.
    pub(crate) fn close(&mut self) {
        if self.open_string.take().is_some() {
            self.text.push('"');
        }
        while !self.frames.is_empty() {
            self.pop();
        }
        if self.text.is_empty() {
            self.text.push_str("{}");
        }
        self.closed = true;
    }

    /// Whether the open string is at `path`.
    fn is_open_string<K: AsRef<str>>(&self, path: &[Segment<K>]) -> bool {
        match (&self.open_string, path.split_last()) {
            (Some(None), None) => true,
            (Some(Some(open)), Some((last, parents))) => {
                open.same(last)
                    && self.frames.len() == parents.len() + 1
                    && self.frames[1..].iter().zip(parents).all(|(frame, parent)| {
                        frame.segment.as_ref().is_some_and(|s| s.same(parent))
                    })
            }
            _ => false,
        }
    }

    fn pop(&mut self) {
        if let Some(frame) = self.frames.pop() {
            self.text.push(if frame.array { ']' } else { '}' });
        }
    }

    /// Starts a member of the innermost container; `false` (nothing written) when the segment
    /// does not fit it (an index into an object, a key into an array).
    fn member<K: AsRef<str>>(&mut self, segment: &Segment<K>) -> Result<bool, TooManySkipped> {
        let Some(frame) = self.frames.last_mut() else {
            return Ok(false);
        };
        match (segment, frame.array) {
            (Segment::Key(key), false) => {
                if frame.count > 0 {
                    self.text.push(',');
                }
                frame.count += 1;
                self.text.push('"');
                escape_into(&mut self.text, key.as_ref());
                self.text.push_str("\":");
                Ok(true)
            }
            (Segment::Index(index), true) => {
                let skips = index.saturating_sub(frame.count);
                if skips > MAX_SKIPPED_ELEMENTS - self.skipped {
                    return Err(TooManySkipped {
                        index: *index,
                        len: frame.count,
                    });
                }
                self.skipped += skips;
                while frame.count < *index {
                    if frame.count > 0 {
                        self.text.push(',');
                    }
                    self.text.push_str("null");
                    frame.count += 1;
                }
                if frame.count > 0 {
                    self.text.push(',');
                }
                frame.count += 1;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn value<K: AsRef<str>>(&mut self, path: &[Segment<K>], piece: Piece<'_>, more: bool) {
        match piece {
            Piece::Str(s) => {
                self.text.push('"');
                escape_into(&mut self.text, s);
                if more {
                    self.open_string = Some(path.last().map(Segment::owned));
                } else {
                    self.text.push('"');
                }
            }
            Piece::Literal(literal) => self.text.push_str(&literal),
        }
    }
}

/// An index that would skip more array elements than [`MAX_SKIPPED_ELEMENTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooManySkipped {
    /// The index the path asked for.
    index: usize,
    /// How many elements the array had.
    len: usize,
}

/// Appends `s` escaped as the inside of a JSON string (as `serde_json` writes it).
///
/// The bytes to escape are exactly those that end a JSON string's plain run (a quote, a
/// backslash, a control character), so the runs between them are found eight bytes at a time
/// by the cursor's scanner and copied whole (a byte-at-a-time loop cost about five
/// instructions a byte); the output is reserved once for the plain case.
fn escape_into(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(s.len());
    let mut start = 0;
    loop {
        let end = plain_end(bytes, start);
        out.push_str(&s[start..end]);
        let Some(&byte) = bytes.get(end) else {
            return;
        };
        match byte {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                // The other control characters (`plain_end` stops at nothing else).
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(byte >> 4)]));
                out.push(char::from(HEX[usize::from(byte & 0xf)]));
            }
        }
        start = end + 1;
    }
}

/// Writes one partial argument into the call's arguments.
pub(crate) fn apply(args: &mut ArgsWriter, arg: &PartialArg<'_>) -> Result<(), ModelError> {
    let raw_path = arg.json_path.as_deref().unwrap_or("$");
    let Some(path) = parse_path_borrowed(raw_path) else {
        return Err(ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!(
                "The Gemini stream sent a function-call argument at an unsupported jsonPath: {}",
                excerpt(raw_path, 100)
            ),
        ));
    };
    let more = arg.will_continue == Some(true);
    let piece = if let Some(s) = &arg.string_value {
        Piece::Str(s)
    } else if let Some(n) = &arg.number_value {
        Piece::Literal(number_literal(n))
    } else if let Some(b) = arg.bool_value {
        Piece::Literal(b.to_string())
    } else if let Some(v) = arg.struct_value.as_ref().or(arg.list_value.as_ref()) {
        Piece::Literal(v.to_string())
    } else if arg.null_value {
        Piece::Literal("null".into())
    } else {
        // No value (a bare continuation marker).
        return Ok(());
    };
    args.write(&path, piece, more).map_err(|skipped| {
        ModelError::new(
            ModelErrorKind::InvalidResponse,
            format!(
                "The Gemini stream sent a function-call argument at index {} of an array of {} \
                 elements: a call's arguments may skip at most {MAX_SKIPPED_ELEMENTS} elements \
                 in all ({}).",
                skipped.index,
                skipped.len,
                excerpt(raw_path, 100)
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(p: &str) -> Vec<Segment> {
        parse_path(p).unwrap_or_else(|| panic!("{p}"))
    }

    #[test]
    fn paths() {
        use Segment::{Index, Key};
        assert_eq!(path("$"), []);
        assert_eq!(
            path("$.operations[1].price"),
            [Key("operations".into()), Index(1), Key("price".into())]
        );
        assert_eq!(
            path("$['a b'][\"c]d\"][0]"),
            [Key("a b".into()), Key("c]d".into()), Index(0)]
        );
        for bad in ["", "a.b", "$.", "$..a", "$[x]", "$[1", "$['a'x]", "$.a[-1]"] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn pieces_build_nested_json_and_deltas_add_up() {
        let mut w = ArgsWriter::default();
        let mut deltas = String::new();
        let steps: &[(&str, Piece<'_>, bool)] = &[
            ("$.recipe.ingredients[0].amount", Piece::Str("16 "), true),
            (
                "$.recipe.ingredients[0].amount",
                Piece::Str("oz \"x\"\n"),
                true,
            ),
            ("$.recipe.ingredients[0].amount", Piece::Str(""), false),
            ("$.recipe.ingredients[0].name", Piece::Str("Noodles"), false),
            (
                "$.recipe.ingredients[2].n",
                Piece::Literal("2".into()),
                false,
            ),
            ("$.recipe.name", Piece::Str("Lasagna 🍝"), true),
            ("$.recipe.steps[0]", Piece::Str("Bake."), false),
            ("$.done", Piece::Literal("true".into()), false),
        ];
        for (p, piece, more) in steps {
            w.write(&path(p), piece.clone(), *more).unwrap();
            deltas.push_str(&w.take_delta().unwrap_or_default());
        }
        w.close();
        deltas.push_str(&w.take_delta().unwrap_or_default());
        assert_eq!(deltas, w.text());
        let value: Value = serde_json::from_str(w.text()).unwrap();
        assert_eq!(
            value,
            json!({
                "recipe": {
                    "ingredients": [
                        {"amount": "16 oz \"x\"\n", "name": "Noodles"},
                        null,
                        {"n": 2}
                    ],
                    "name": "Lasagna 🍝",
                    "steps": ["Bake."]
                },
                "done": true
            })
        );
    }

    #[test]
    fn empty_whole_and_odd_inputs() {
        let mut w = ArgsWriter::default();
        w.close();
        assert_eq!(w.text(), "{}");

        let mut w = ArgsWriter::default();
        w.whole(&json!({"a": 1}));
        w.write(&path("$.b"), Piece::Str("ignored"), false).unwrap();
        w.close();
        assert_eq!(w.text(), r#"{"a":1}"#);

        // Mismatched kinds are dropped; control characters escaped; the result stays JSON.
        let mut w = ArgsWriter::default();
        w.write(&path("$.a"), Piece::Str("\u{1}"), false).unwrap();
        w.write(&path("$[0]"), Piece::Str("dropped"), false)
            .unwrap();
        w.write(&path("$.a[0]"), Piece::Literal("null".into()), false)
            .unwrap();
        w.write(&path("$.s"), Piece::Str("open"), true).unwrap();
        w.close();
        let value: Value = serde_json::from_str(w.text()).unwrap();
        assert_eq!(value, json!({"a": [null], "s": "open"}));
        assert!(w.text().starts_with(r#"{"a":"\u0001""#), "{}", w.text());

        assert_eq!(number_literal(&json!(0.5)), "0.5");
        assert_eq!(number_literal(&json!(2.0)), "2");
        assert_eq!(number_literal(&json!(-7)), "-7");
        assert_eq!(number_literal(&json!("NaN")), "null");
        assert_eq!(number_literal(&json!("1e400")), "null");
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn segment() -> impl Strategy<Value = Segment> {
            prop_oneof![
                4 => prop::sample::select(vec!["a", "b", "c d", "é\"q"])
                    .prop_map(|k| Segment::Key(k.to_string())),
                4 => (0usize..4).prop_map(Segment::Index),
                // Now and then an index far past the end: refused past the skip allowance.
                1 => (0usize..3_000).prop_map(Segment::Index),
            ]
        }

        fn op() -> impl Strategy<Value = (Vec<Segment>, Option<String>, bool)> {
            (
                prop::collection::vec(segment(), 0..4),
                prop::option::of("[a-z\"\\\n🌍]{0,4}"),
                any::<bool>(),
            )
        }

        proptest! {
            /// Whatever order and shape the pieces come in, the text is JSON and the deltas add
            /// up to it.
            #[test]
            fn always_json_and_deltas_add_up(ops in prop::collection::vec(op(), 0..24)) {
                let mut w = ArgsWriter::default();
                let mut deltas = String::new();
                for (path, text, more) in &ops {
                    let piece = match text {
                        Some(s) => Piece::Str(s),
                        None => Piece::Literal("1.5".into()),
                    };
                    // A refused piece writes nothing of itself; the text stays a JSON prefix.
                    let _ = w.write(path, piece, *more);
                    deltas.push_str(&w.take_delta().unwrap_or_default());
                }
                w.close();
                deltas.push_str(&w.take_delta().unwrap_or_default());
                prop_assert_eq!(&deltas, w.text());
                prop_assert!(
                    serde_json::from_str::<Value>(w.text()).is_ok(),
                    "not JSON: {}",
                    w.text()
                );
                prop_assert!(w.text().matches("null").count() <= MAX_SKIPPED_ELEMENTS);
            }

            #[test]
            fn paths_never_panic(path in "[$.\\[\\]'\"a-z0-9 é]{0,16}") {
                let _ = parse_path(&path);
            }
        }
    }
}
