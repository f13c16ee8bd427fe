//! [`TurnParser`]: the local model's turn text, as it is generated, into stream parts.
//!
//! The grammar (see [`super::grammar`]) makes every turn either one answer object or one or
//! more call objects, one per line:
//!
//! ```text
//! {"answer": "It is 395."}
//! {"tool": "read", "arguments": {"path": "README.md"}}
//! ```
//!
//! The parser is incremental so that the run streams like any provider's: an answer's string is
//! unescaped and sent as text deltas while it grows, a call's `arguments` text is sent as
//! tool-input deltas verbatim (so the deltas concatenate to exactly the call's input). It holds
//! back only an incomplete escape sequence or key, never text already complete.

use std::sync::Arc;

use toolsmith_core::{ModelError, ModelErrorKind, ModelPart, ModelToolCall};

/// The text block id of an answer (one per turn).
const TEXT_ID: &str = "answer";

/// Where the parser is in the turn.
#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Between objects: whitespace, then `{` or the end.
    Between,
    /// After `{`: the first key decides the object's kind.
    FirstKey,
    /// Inside the answer string (the opening quote consumed).
    Answer,
    /// After the answer string: whitespace and the closing `}`.
    AnswerClose,
    /// After `"tool"`: `: "NAME", "arguments":`, all needed before the input starts.
    CallHead,
    /// Inside the arguments value: nesting depth and string state.
    Arguments {
        depth: u32,
        in_string: bool,
        escaped: bool,
    },
    /// After the arguments value: whitespace and the call's closing `}`.
    CallClose,
}

/// Turns the local model's turn text into [`ModelPart`]s as it arrives.
#[derive(Debug)]
pub struct TurnParser {
    buf: String,
    pos: usize,
    state: State,
    text_open: bool,
    calls: usize,
    objects: usize,
    call_id: Arc<str>,
    tool_name: String,
    input_start: usize,
    new_id: fn(usize) -> String,
}

impl Default for TurnParser {
    fn default() -> Self {
        Self::new()
    }
}

impl TurnParser {
    /// A parser that names calls `call_<random>_<n>`.
    pub fn new() -> Self {
        Self::with_ids(|n| format!("call_{}_{n}", fastrand::u32(..)))
    }

    /// A parser that names the `n`th call of the turn (from 0) with `new_id(n)`.
    pub fn with_ids(new_id: fn(usize) -> String) -> Self {
        TurnParser {
            buf: String::new(),
            pos: 0,
            state: State::Between,
            text_open: false,
            calls: 0,
            objects: 0,
            call_id: Arc::default(),
            tool_name: String::new(),
            input_start: 0,
            new_id,
        }
    }

    /// The number of complete tool calls so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    /// Whether the model is writing the answer's text (inside its string).
    pub fn in_answer(&self) -> bool {
        self.state == State::Answer
    }

    /// Whether the text so far is a complete turn: at least one object, and nothing after the
    /// last but whitespace.
    pub fn is_complete(&self) -> bool {
        self.objects > 0 && self.state == State::Between && self.buf[self.pos..].trim().is_empty()
    }

    /// Adds generated text; returns the parts it completes.
    ///
    /// # Errors
    ///
    /// `InvalidResponse` when the text cannot be a turn (the grammar prevents this; a model run
    /// without it, or a bug, could produce it).
    pub fn push(&mut self, text: &str) -> Result<Vec<ModelPart>, ModelError> {
        self.buf.push_str(text);
        let mut out = Vec::new();
        while self.step(&mut out)? {}
        Ok(out)
    }

    /// Ends the turn; returns the parts that close what is open.
    ///
    /// A turn cut short (by the token limit) closes an open answer with what it has and sends
    /// an open call with its partial input, which the loop then reports to the model as
    /// invalid arguments: nothing generated is lost.
    pub fn finish(&mut self) -> Vec<ModelPart> {
        let mut out = Vec::new();
        match self.state {
            State::Answer | State::AnswerClose => self.close_text(&mut out),
            // Every byte of an open input has been sent as a delta already: `pos` is its end.
            State::Arguments { .. } | State::CallClose => self.end_call(&mut out),
            _ => {}
        }
        self.state = State::Between;
        out
    }

    /// One step of the state machine; `Ok(false)` when it needs more text.
    fn step(&mut self, out: &mut Vec<ModelPart>) -> Result<bool, ModelError> {
        let rest = &self.buf[self.pos..];
        match self.state.clone() {
            State::Between => {
                let trimmed = rest.trim_start();
                self.pos += rest.len() - trimmed.len();
                match trimmed.chars().next() {
                    None => Ok(false),
                    Some('{') => {
                        self.pos += 1;
                        self.state = State::FirstKey;
                        Ok(true)
                    }
                    Some(_) => Err(unexpected(trimmed, "an answer or a tool call object")),
                }
            }
            State::FirstKey => {
                let Some((key, used)) = leading_string(rest)? else {
                    return Ok(false);
                };
                let Some(after_colon) = expect_char(&rest[used..], ':')? else {
                    return Ok(false);
                };
                match key.as_str() {
                    "answer" => {
                        let Some(after_quote) = expect_char(&rest[used + after_colon..], '"')?
                        else {
                            return Ok(false);
                        };
                        self.pos += used + after_colon + after_quote;
                        if !self.text_open {
                            self.text_open = true;
                            out.push(ModelPart::TextStart { id: TEXT_ID.into() });
                        }
                        self.state = State::Answer;
                    }
                    "tool" => {
                        self.pos += used + after_colon;
                        self.state = State::CallHead;
                    }
                    other => {
                        return Err(ModelError::new(
                            ModelErrorKind::InvalidResponse,
                            format!(
                                "The local model's turn has an object with key {other:?}; \
                                 expected \"answer\" or \"tool\"."
                            ),
                        ));
                    }
                }
                Ok(true)
            }
            State::Answer => {
                let (text, used, closed) = unescape_prefix(rest)?;
                self.pos += used;
                if !text.is_empty() {
                    out.push(ModelPart::TextDelta {
                        id: TEXT_ID.into(),
                        delta: text,
                    });
                }
                if closed {
                    self.state = State::AnswerClose;
                }
                Ok(closed)
            }
            State::AnswerClose => {
                let Some(used) = expect_char(rest, '}')? else {
                    return Ok(false);
                };
                self.pos += used;
                self.close_text(out);
                self.objects += 1;
                self.state = State::Between;
                Ok(true)
            }
            State::CallHead => {
                let Some((name, a)) = leading_string(rest)? else {
                    return Ok(false);
                };
                let Some(b) = expect_char(&rest[a..], ',')? else {
                    return Ok(false);
                };
                let Some((key, c)) = leading_string(&rest[a + b..])? else {
                    return Ok(false);
                };
                if key != "arguments" {
                    return Err(unexpected(&rest[a + b..], "\"arguments\""));
                }
                let Some(d) = expect_char(&rest[a + b + c..], ':')? else {
                    return Ok(false);
                };
                let head = a + b + c + d;
                let value = &rest[head..];
                let trimmed = value.trim_start();
                match trimmed.chars().next() {
                    None => return Ok(false),
                    Some('{') => {}
                    Some(_) => return Err(unexpected(trimmed, "the arguments object")),
                }
                self.pos += head + (value.len() - trimmed.len());
                self.input_start = self.pos;
                self.call_id = (self.new_id)(self.calls).into();
                self.tool_name = name;
                out.push(ModelPart::ToolInputStart {
                    id: self.call_id.clone(),
                    tool_name: self.tool_name.clone(),
                    provider_executed: false,
                });
                self.state = State::Arguments {
                    depth: 0,
                    in_string: false,
                    escaped: false,
                };
                Ok(true)
            }
            State::Arguments {
                mut depth,
                mut in_string,
                mut escaped,
            } => {
                let mut end = None;
                for (i, b) in rest.bytes().enumerate() {
                    if in_string {
                        match (escaped, b) {
                            (true, _) => escaped = false,
                            (false, b'\\') => escaped = true,
                            (false, b'"') => in_string = false,
                            _ => {}
                        }
                        continue;
                    }
                    match b {
                        b'"' => in_string = true,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                end = Some(i + 1);
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let used = end.unwrap_or(rest.len());
                if used > 0 {
                    out.push(ModelPart::ToolInputDelta {
                        id: self.call_id.clone(),
                        delta: rest[..used].to_string(),
                    });
                }
                self.pos += used;
                if end.is_some() {
                    self.state = State::CallClose;
                } else {
                    self.state = State::Arguments {
                        depth,
                        in_string,
                        escaped,
                    };
                }
                Ok(end.is_some())
            }
            State::CallClose => {
                let Some(used) = expect_char(rest, '}')? else {
                    return Ok(false);
                };
                self.end_call(out);
                self.pos += used;
                self.objects += 1;
                self.state = State::Between;
                Ok(true)
            }
        }
    }

    fn close_text(&mut self, out: &mut Vec<ModelPart>) {
        if self.text_open {
            self.text_open = false;
            out.push(ModelPart::TextEnd {
                id: TEXT_ID.into(),
                provider_metadata: Default::default(),
            });
        }
    }

    /// Sends the end of the open call's input and the call, its input being everything from
    /// the arguments' first byte to `self.pos`.
    fn end_call(&mut self, out: &mut Vec<ModelPart>) {
        let input = self.buf[self.input_start..self.pos].to_string();
        out.push(ModelPart::ToolInputEnd {
            id: self.call_id.clone(),
        });
        out.push(ModelPart::ToolCall(ModelToolCall::new(
            &*std::mem::take(&mut self.call_id),
            std::mem::take(&mut self.tool_name),
            input,
        )));
        self.calls += 1;
    }
}

/// Skips whitespace and one `c`: the bytes used, `None` if the text ends first.
fn expect_char(text: &str, c: char) -> Result<Option<usize>, ModelError> {
    let trimmed = text.trim_start();
    match trimmed.chars().next() {
        None => Ok(None),
        Some(found) if found == c => Ok(Some(text.len() - trimmed.len() + c.len_utf8())),
        Some(_) => Err(unexpected(trimmed, &format!("{c:?}"))),
    }
}

/// Skips whitespace and reads one whole JSON string: its value and the bytes used, `None` if
/// the string is not complete yet.
fn leading_string(text: &str) -> Result<Option<(String, usize)>, ModelError> {
    let Some(open) = expect_char(text, '"')? else {
        return Ok(None);
    };
    let (value, used, closed) = unescape_prefix(&text[open..])?;
    Ok(closed.then_some((value, open + used)))
}

/// Unescapes the longest complete prefix of a JSON string's body: the text, the bytes used
/// (the closing quote included), and whether the closing quote was reached.
fn unescape_prefix(body: &str) -> Result<(String, usize, bool), ModelError> {
    let mut out = String::new();
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return Ok((out, i + 1, true)),
            b'\\' => {
                let Some(&kind) = bytes.get(i + 1) else { break };
                let simple = match kind {
                    b'"' => Some('"'),
                    b'\\' => Some('\\'),
                    b'/' => Some('/'),
                    b'b' => Some('\u{8}'),
                    b'f' => Some('\u{c}'),
                    b'n' => Some('\n'),
                    b'r' => Some('\r'),
                    b't' => Some('\t'),
                    b'u' => None,
                    _ => return Err(unexpected(&body[i..], "a JSON escape")),
                };
                if let Some(c) = simple {
                    out.push(c);
                    i += 2;
                    continue;
                }
                // \uXXXX, possibly a surrogate pair: let serde_json decode the whole escape.
                let Some(unit) = hex4(bytes, i + 2) else {
                    break;
                };
                let len = if (0xD800..0xDC00).contains(&unit) {
                    if bytes.len() < i + 12 {
                        break;
                    }
                    12
                } else {
                    6
                };
                let quoted = format!("\"{}\"", &body[i..i + len]);
                let c: String = serde_json::from_str(&quoted)
                    .map_err(|_| unexpected(&body[i..], "a valid \\u escape"))?;
                out.push_str(&c);
                i += len;
            }
            _ => {
                let run_end = body[i..]
                    .find(['"', '\\'])
                    .map_or(body.len(), |offset| i + offset);
                out.push_str(&body[i..run_end]);
                i = run_end;
            }
        }
    }
    Ok((out, i, false))
}

/// The four hex digits at `at`, if all are there.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = std::str::from_utf8(bytes.get(at..at + 4)?).ok()?;
    u32::from_str_radix(digits, 16).ok()
}

fn unexpected(found: &str, expected: &str) -> ModelError {
    let shown: String = found.chars().take(40).collect();
    ModelError::new(
        ModelErrorKind::InvalidResponse,
        format!("The local model's turn is malformed: expected {expected}, found {shown:?}."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_in_pieces(text: &str, piece: usize) -> Vec<ModelPart> {
        let mut parser = TurnParser::with_ids(|n| format!("c{n}"));
        let mut parts = Vec::new();
        let chars: Vec<char> = text.chars().collect();
        for chunk in chars.chunks(piece) {
            parts.extend(parser.push(&chunk.iter().collect::<String>()).unwrap());
        }
        parts.extend(parser.finish());
        parts
    }

    fn text_of(parts: &[ModelPart]) -> String {
        parts
            .iter()
            .filter_map(|p| match p {
                ModelPart::TextDelta { delta, .. } => Some(delta.as_str()),
                _ => None,
            })
            .collect()
    }

    fn calls_of(parts: &[ModelPart]) -> Vec<(String, String)> {
        parts
            .iter()
            .filter_map(|p| match p {
                ModelPart::ToolCall(call) => Some((call.tool_name.clone(), call.input.clone())),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_answer_streams_unescaped_text_in_any_pieces() {
        let turn = r#"{"answer": "Line \"one\"\nsnow \u2603 and \ud83d\ude00 done"}"#;
        for piece in 1..8 {
            let parts = parse_in_pieces(turn, piece);
            assert_eq!(
                text_of(&parts),
                "Line \"one\"\nsnow ☃ and 😀 done",
                "piece {piece}"
            );
            assert!(matches!(parts.first(), Some(ModelPart::TextStart { .. })));
            assert!(matches!(parts.last(), Some(ModelPart::TextEnd { .. })));
        }
    }

    #[test]
    fn calls_stream_their_arguments_verbatim() {
        let turn = "{\"tool\": \"write\", \"arguments\": {\"path\": \"a}b.txt\", \"content\": \"x\\\"{\"}}\n\
                    {\"tool\":\"read\",\"arguments\":{\"path\":\"README.md\",\"limit\":[1,{\"a\":2}]}}";
        for piece in 1..9 {
            let parts = parse_in_pieces(turn, piece);
            let calls = calls_of(&parts);
            assert_eq!(
                calls,
                [
                    (
                        "write".to_string(),
                        r#"{"path": "a}b.txt", "content": "x\"{"}"#.to_string()
                    ),
                    (
                        "read".to_string(),
                        r#"{"path":"README.md","limit":[1,{"a":2}]}"#.to_string()
                    ),
                ]
            );
            for (n, (_, input)) in calls.iter().enumerate() {
                let id = format!("c{n}");
                let deltas: String = parts
                    .iter()
                    .filter_map(|p| match p {
                        ModelPart::ToolInputDelta { id: i, delta } if **i == *id => {
                            Some(delta.as_str())
                        }
                        _ => None,
                    })
                    .collect();
                assert_eq!(&deltas, input, "piece {piece}");
            }
        }
    }

    #[test]
    fn a_cut_turn_keeps_what_was_generated() {
        let parts = parse_in_pieces(r#"{"tool": "write", "arguments": {"path": "no"#, 3);
        assert_eq!(
            calls_of(&parts),
            [("write".to_string(), r#"{"path": "no"#.to_string())]
        );
        let parts = parse_in_pieces(r#"{"answer": "half a sen"#, 4);
        assert_eq!(text_of(&parts), "half a sen");
        assert!(matches!(parts.last(), Some(ModelPart::TextEnd { .. })));
    }

    #[test]
    fn text_that_is_no_turn_is_a_clear_error() {
        let mut parser = TurnParser::new();
        let err = parser.push("Sure! Here is").unwrap_err();
        assert_eq!(err.kind, ModelErrorKind::InvalidResponse);
        assert_eq!(
            err.message,
            "The local model's turn is malformed: expected an answer or a tool call object, \
             found \"Sure! Here is\"."
        );
        let err = TurnParser::new().push(r#"{"name": "x"}"#).unwrap_err();
        assert!(err.message.contains("key \"name\""), "{}", err.message);
    }

    #[test]
    fn completeness_is_known_between_objects() {
        let mut parser = TurnParser::new();
        parser
            .push(r#"{"tool": "read", "arguments": {"path": "a"}"#)
            .unwrap();
        assert!(!parser.is_complete());
        parser.push("}\n").unwrap();
        assert!(parser.is_complete());
        assert_eq!(parser.calls(), 1);
    }
}
