//! The fast path of [`GeminiStreamDecoder`](super::GeminiStreamDecoder): the hot chunk shapes
//! read by hand with the [`Cursor`], serde for everything else.
//!
//! Nearly every chunk of a stream is one candidate with one part, wrapped in the same members
//! every Gemini chunk repeats (`usageMetadata`, `modelVersion`, `responseId`, Vertex's
//! `createTime`): a `text` part, a `thought: true` text part, a `thoughtSignature`, or a piece
//! of a streamed function call (`functionCall {name, willContinue}`, then `partialArgs` with
//! `stringValue`s, then `functionCall: {}`), which is most chunks of a tool-calling stream.
//! Parsing those with serde's derived visitors (key matching, building the wire structs, the
//! `candidates` vector) was most of decoding time. [`read_hot_chunk`] reads exactly those shapes
//! into the same wire types and declines (`None`) everything else: several candidates or parts,
//! inline data, code execution, grounding or citation metadata, `promptFeedback`, `error`,
//! anything the cursor declines (malformed JSON, keys with escapes, unpaired surrogates, deep
//! nesting) and a repeated known key, which serde rejects. The JSON values a call can hold
//! (whole `args`, a `numberValue`, `structValue` or `listValue`) are handed to serde alone, by
//! their text. The decoder then parses a declined payload with serde as before, which also
//! produces the errors. What it accepts, it reads exactly as serde would (the property tests
//! compare the two), so the decoder's output does not depend on which path read a chunk.
//!
//! Each object is read key by key, except that the members the API writes
//! first (and some it writes next) are matched as one run of bytes with their key:
//! `{"candidates":`, `{"content":`, `{"parts":` or Vertex's `{"role":"model","parts":`, then
//! `{"text":` or `{"functionCall":`, `{"partialArgs":`, `{"jsonPath":`, `,"stringValue":`,
//! `,"willContinue":`… Such a run is exactly what the key-by-key reader would consume for that
//! member before reading its value, which the same code then reads; whatever follows it (other
//! members, another order, whitespace) is read key by key as before. Dispatching on every key
//! was most of the reading: a streamed call's chunk has nine of them before its tail.

use crate::borrowed::Str;
use crate::scan::{Cursor, Seen};

use super::wire::{
    Candidate, Chunk, Content, FunctionCall, InlineData, PartialArg, UsageMetadata, WirePart,
};

/// The parts of a [`Chunk`] a hot chunk can have: no error, no prompt feedback, at most one
/// candidate (so no vector to allocate).
#[derive(Debug, Default)]
pub(super) struct HotChunk<'a> {
    pub candidate: Option<HotCandidate<'a>>,
    pub usage_metadata: Option<UsageMetadata>,
    pub model_version: Option<Str<'a>>,
    pub response_id: Option<Str<'a>>,
}

/// The parts of a [`Candidate`] a hot one can have: no grounding or citations, at most one part.
#[derive(Debug, Default)]
pub(super) struct HotCandidate<'a> {
    pub index: Option<u64>,
    /// `None` without content (or `content: null`), `Some(None)` for content without parts.
    pub content: Option<Option<Part<'a>>>,
    pub finish_reason: Option<Str<'a>>,
}

/// A [`WirePart`] as the decoder takes it from either path: the function call inline and its
/// first argument too, so that the fast path allocates nothing for a streamed call's chunk
/// (a `Box` for the call and a vector for its one argument were two allocations and two frees
/// on most chunks of a tool-calling stream). The fast path leaves the cold fields `None`.
#[derive(Debug, Default)]
pub(super) struct Part<'a> {
    pub text: Option<Str<'a>>,
    pub thought: Option<bool>,
    pub thought_signature: Option<Str<'a>>,
    pub function_call: Option<Call<'a>>,
    pub inline_data: Option<Box<InlineData<'a>>>,
    pub executable_code: Option<Box<serde_json::Value>>,
    pub code_execution_result: Option<Box<serde_json::Value>>,
}

/// A [`FunctionCall`] as the decoder takes it from either path (see [`Part`]).
#[derive(Debug, Default)]
pub(super) struct Call<'a> {
    pub id: Option<Str<'a>>,
    pub name: Option<Str<'a>>,
    pub args: Option<Box<serde_json::Value>>,
    pub partial_args: Option<Args<'a>>,
    pub will_continue: Option<bool>,
}

/// Partial arguments in order: the first inline (a streamed call's chunk has one), the others
/// in a vector, which serde's path fills alone.
#[derive(Debug, Default)]
pub(super) struct Args<'a> {
    first: Option<PartialArg<'a>>,
    rest: Vec<PartialArg<'a>>,
}

impl<'a> Args<'a> {
    /// A new last argument, default, for the caller to fill in place.
    fn push_default(&mut self) -> &mut PartialArg<'a> {
        if self.first.is_none() {
            return self.first.insert(PartialArg::default());
        }
        self.rest.push(PartialArg::default());
        self.rest.last_mut().expect("just pushed")
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_none() && self.rest.is_empty()
    }
}

impl<'a> IntoIterator for Args<'a> {
    type Item = PartialArg<'a>;
    type IntoIter =
        std::iter::Chain<std::option::IntoIter<PartialArg<'a>>, std::vec::IntoIter<PartialArg<'a>>>;

    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

impl<'a> Call<'a> {
    /// `functionCall: {}`: the end of a streamed call.
    pub fn is_empty(&self) -> bool {
        self.id.is_none()
            && self.name.is_none()
            && self.args.is_none()
            && self.partial_args.as_ref().is_none_or(Args::is_empty)
            && self.will_continue.is_none()
    }
}

impl<'a> From<FunctionCall<'a>> for Call<'a> {
    fn from(call: FunctionCall<'a>) -> Self {
        let FunctionCall {
            id,
            name,
            args,
            partial_args,
            will_continue,
        } = call;
        Call {
            id,
            name,
            args,
            partial_args: partial_args.map(|rest| Args { first: None, rest }),
            will_continue,
        }
    }
}

impl<'a> From<WirePart<'a>> for Part<'a> {
    fn from(part: WirePart<'a>) -> Self {
        let WirePart {
            text,
            thought,
            thought_signature,
            function_call,
            inline_data,
            executable_code,
            code_execution_result,
        } = part;
        Part {
            text,
            thought,
            thought_signature,
            function_call: function_call.map(|call| Call::from(*call)),
            inline_data,
            executable_code,
            code_execution_result,
        }
    }
}

#[cfg(test)]
impl<'a> From<Part<'a>> for WirePart<'a> {
    /// Back to serde's type, for the tests that compare the two paths.
    fn from(part: Part<'a>) -> Self {
        WirePart {
            text: part.text,
            thought: part.thought,
            thought_signature: part.thought_signature,
            function_call: part.function_call.map(|call| {
                Box::new(FunctionCall {
                    id: call.id,
                    name: call.name,
                    args: call.args,
                    partial_args: call.partial_args.map(|args| args.into_iter().collect()),
                    will_continue: call.will_continue,
                })
            }),
            inline_data: part.inline_data,
            executable_code: part.executable_code,
            code_execution_result: part.code_execution_result,
        }
    }
}

/// What the chunks of one stream repeat after their candidate: the same `usageMetadata`,
/// `modelVersion`, Vertex's `createTime` and `responseId`, byte for byte, behind nearly every
/// piece of text or arguments (40 % of a streamed call's bytes). Once one chunk's rest has been
/// read, a chunk whose rest after its candidates is the same bytes, read from the same state
/// (the same keys seen before it), would read the same: it is not read again.
///
/// What the rest yields is taken from here instead: the usage, which the decoder reads on every
/// chunk; not the model version or response id, which it keeps from its first chunk only (it
/// has them by then: the rest was read from a chunk it applied).
#[derive(Debug, Default)]
pub(super) struct Tail {
    /// The rest of the last chunk read whole, after its `candidates`; empty when there is none.
    text: String,
    /// The top-level keys seen before it (`candidates` included).
    seen_before: Seen,
    /// The usage it holds (`Some(None)` for `"usageMetadata": null`), `None` when it has none.
    usage: Option<Option<UsageMetadata>>,
}

impl Tail {
    /// Whether `data` goes on from `at` with this tail, in the state it was read in.
    fn repeats(&self, data: &str, at: usize, seen: Seen) -> bool {
        !self.text.is_empty() && seen == self.seen_before && data[at..] == self.text
    }
}

/// Reads a chunk of the hot shapes into `chunk` (a default one), or declines (leaving it
/// partly filled, to be dropped): see the module's documentation. `data` is the trimmed
/// payload, as serde sees it. A chunk that goes on after its candidates as the last one read
/// did (`tail`) is not read further; one that does not becomes the new `tail` once it has been
/// read whole.
///
/// The candidate and its part are built in place: as return values they would be moved several
/// times, as serde's are.
pub(super) fn read_hot_chunk<'a>(
    data: &'a str,
    chunk: &mut HotChunk<'a>,
    tail: &mut Tail,
) -> Option<()> {
    let mut cursor = Cursor::new(data);
    let mut seen = Seen::default();
    // After the candidates: where, and the keys seen by then; whether the rest repeats `tail`.
    let mut rest = None;
    let mut repeated = false;
    let member = |cursor: &mut Cursor<'a>, key: &'a [u8]| {
        match key {
            b"candidates" => {
                seen.first(0)?;
                cursor.array(|cursor| {
                    // More than one candidate (candidateCount > 1) goes through serde.
                    if chunk.candidate.is_some() {
                        return None;
                    }
                    read_candidate(cursor, chunk.candidate.insert(HotCandidate::default()))
                })?;
                if tail.repeats(data, cursor.pos(), seen) {
                    // On to the object's closing brace, the tail's last byte.
                    repeated = true;
                    *cursor = Cursor::at(data, data.len() - 1);
                } else {
                    rest = Some((cursor.pos(), seen));
                }
            }
            b"usageMetadata" => {
                seen.first(1)?;
                if !cursor.take_null()? {
                    read_usage(
                        cursor,
                        chunk.usage_metadata.insert(UsageMetadata::default()),
                    )?;
                }
            }
            b"modelVersion" => {
                seen.first(2)?;
                chunk.model_version = cursor.optional_string()?.map(Str);
            }
            b"responseId" => {
                seen.first(3)?;
                chunk.response_id = cursor.optional_string()?.map(Str);
            }
            // Only their absence is hot: a blocked prompt or an error ends the stream.
            b"promptFeedback" => {
                seen.first(4)?;
                cursor.null()?;
            }
            b"error" => {
                seen.first(5)?;
                cursor.null()?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    };
    // Every chunk the API sends starts with its candidates (see the module's documentation).
    cursor.object_in_order(&[(br#"{"candidates":"#, b"candidates")], &[], member)?;
    cursor.end()?;
    if repeated {
        if let Some(usage) = tail.usage {
            chunk.usage_metadata = usage;
        }
    } else if let Some((at, seen_before)) = rest {
        tail.text.clear();
        tail.text.push_str(&data[at..]);
        tail.seen_before = seen_before;
        // `usageMetadata` (field 1) is in the tail when it was seen after the candidates.
        tail.usage = (seen.has(1) && !seen_before.has(1)).then_some(chunk.usage_metadata);
    }
    Some(())
}

fn read_candidate<'a>(cursor: &mut Cursor<'a>, candidate: &mut HotCandidate<'a>) -> Option<()> {
    let mut seen = Seen::default();
    let member = |cursor: &mut Cursor<'a>, key: &'a [u8]| {
        match key {
            b"index" => {
                seen.first(0)?;
                candidate.index = cursor.nullable(Cursor::u64_small_inline)?;
            }
            b"content" => {
                seen.first(1)?;
                if !cursor.take_null()? {
                    read_content(cursor, candidate.content.insert(None))?;
                }
            }
            b"finishReason" => {
                seen.first(2)?;
                candidate.finish_reason = cursor.optional_string()?.map(Str);
            }
            // Sources come a few times per grounded response: serde reads them.
            b"groundingMetadata" => {
                seen.first(3)?;
                cursor.null()?;
            }
            b"citationMetadata" => {
                seen.first(4)?;
                cursor.null()?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    };
    // `{"content":{…}}`, then `,"finishReason":"STOP"` on the last chunk and `,"index":0` from
    // the Gemini API (not Vertex).
    cursor.object_in_order(
        &[(br#"{"content":"#, b"content")],
        &[
            &[(br#","finishReason":"#, b"finishReason")],
            &[(br#","index":"#, b"index")],
        ],
        member,
    )
}

/// A `Content` of at most one part (`role` and the like skipped).
fn read_content<'a>(cursor: &mut Cursor<'a>, part: &mut Option<Part<'a>>) -> Option<()> {
    let mut seen = Seen::default();
    let mut member = |cursor: &mut Cursor<'a>, key: &'a [u8]| {
        match key {
            b"parts" => {
                seen.first(0)?;
                cursor.array(|cursor| {
                    // Several parts go through serde, which keeps a vector.
                    if part.is_some() {
                        return None;
                    }
                    read_part(cursor, part.insert(Part::default()))
                })?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    };
    // The Gemini API's `{"parts":[…],"role":"model"}`, Vertex's `{"role":"model","parts":[…]}`.
    if cursor.tokens(br#"{"parts":"#).is_some() {
        member(cursor, b"parts")?;
        if cursor.tokens(br#","role":"model"}"#).is_some() {
            return Some(());
        }
    } else if cursor.tokens(br#"{"role":"model","parts":"#).is_some() {
        member(cursor, b"parts")?;
    } else {
        return cursor.object(member);
    }
    cursor.object_rest(member)
}

fn read_part<'a>(cursor: &mut Cursor<'a>, part: &mut Part<'a>) -> Option<()> {
    let mut seen = Seen::default();
    let member = |cursor: &mut Cursor<'a>, key: &'a [u8]| {
        match key {
            b"text" => {
                seen.first(0)?;
                part.text = cursor.optional_string()?.map(Str);
            }
            b"thought" => {
                seen.first(1)?;
                part.thought = optional_bool(cursor)?;
            }
            b"thoughtSignature" => {
                seen.first(2)?;
                part.thought_signature = cursor.optional_string()?.map(Str);
            }
            b"functionCall" => {
                seen.first(3)?;
                if !cursor.take_null()? {
                    read_function_call(cursor, part.function_call.insert(Call::default()))?;
                }
            }
            // Files and code execution are rare and hold JSON values: serde reads them.
            b"inlineData" => {
                seen.first(4)?;
                cursor.null()?;
            }
            b"executableCode" => {
                seen.first(5)?;
                cursor.null()?;
            }
            b"codeExecutionResult" => {
                seen.first(6)?;
                cursor.null()?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    };
    // A text or a call, then a thought flag or a signature, or neither.
    cursor.object_in_order(
        &[
            (br#"{"text":"#, b"text"),
            (br#"{"functionCall":"#, b"functionCall"),
        ],
        &[&[
            (br#","thoughtSignature":"#, b"thoughtSignature"),
            (br#","thought":"#, b"thought"),
        ]],
        member,
    )
}

fn read_function_call<'a>(cursor: &mut Cursor<'a>, call: &mut Call<'a>) -> Option<()> {
    let mut seen = Seen::default();
    let member = |cursor: &mut Cursor<'a>, key: &'a [u8]| {
        match key {
            b"id" => {
                seen.first(0)?;
                call.id = cursor.optional_string()?.map(Str);
            }
            b"name" => {
                seen.first(1)?;
                call.name = cursor.optional_string()?.map(Str);
            }
            b"args" => {
                seen.first(2)?;
                call.args = json_value(cursor)?;
            }
            b"partialArgs" => {
                seen.first(3)?;
                if !cursor.take_null()? {
                    let args = call.partial_args.insert(Args::default());
                    cursor.array(|cursor| read_partial_arg(cursor, args.push_default()))?;
                }
            }
            b"willContinue" => {
                seen.first(4)?;
                call.will_continue = optional_bool(cursor)?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    };
    // `{}` ends a streamed call; the others start with their arguments or the name.
    if cursor.tokens(b"{}").is_some() {
        return Some(());
    }
    cursor.object_in_order(
        &[
            (br#"{"partialArgs":"#, b"partialArgs"),
            (br#"{"name":"#, b"name"),
        ],
        &[&[(br#","willContinue":"#, b"willContinue")]],
        member,
    )
}

/// A streamed argument.
fn read_partial_arg<'a>(cursor: &mut Cursor<'a>, arg: &mut PartialArg<'a>) -> Option<()> {
    let mut seen = Seen::default();
    let member = |cursor: &mut Cursor<'a>, key: &'a [u8]| {
        match key {
            b"jsonPath" => {
                seen.first(0)?;
                arg.json_path = cursor.optional_string()?.map(Str);
            }
            b"stringValue" => {
                seen.first(1)?;
                arg.string_value = cursor.optional_string()?.map(Str);
            }
            b"boolValue" => {
                seen.first(2)?;
                arg.bool_value = optional_bool(cursor)?;
            }
            // Its presence is the value, whatever it holds (serde ignores it): any valid JSON.
            b"nullValue" => {
                seen.first(3)?;
                cursor.skip_value()?;
                arg.null_value = true;
            }
            b"willContinue" => {
                seen.first(4)?;
                arg.will_continue = optional_bool(cursor)?;
            }
            b"numberValue" => {
                seen.first(5)?;
                arg.number_value = json_value(cursor)?;
            }
            b"structValue" => {
                seen.first(6)?;
                arg.struct_value = json_value(cursor)?;
            }
            b"listValue" => {
                seen.first(7)?;
                arg.list_value = json_value(cursor)?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    };
    // `{"jsonPath":…,"stringValue":…,"willContinue":true}`, the last two optional.
    cursor.object_in_order(
        &[(br#"{"jsonPath":"#, b"jsonPath")],
        &[
            &[(br#","stringValue":"#, b"stringValue")],
            &[(br#","willContinue":"#, b"willContinue")],
        ],
        member,
    )
}

/// The token counts (`totalTokenCount`, the per-modality details and `trafficType` skipped).
fn read_usage(cursor: &mut Cursor<'_>, usage: &mut UsageMetadata) -> Option<()> {
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"promptTokenCount" => {
                seen.first(0)?;
                usage.prompt_token_count = cursor.nullable(Cursor::u64_small_inline)?;
            }
            b"cachedContentTokenCount" => {
                seen.first(1)?;
                usage.cached_content_token_count = cursor.nullable(Cursor::u64_small_inline)?;
            }
            b"candidatesTokenCount" => {
                seen.first(2)?;
                usage.candidates_token_count = cursor.nullable(Cursor::u64_small_inline)?;
            }
            b"thoughtsTokenCount" => {
                seen.first(3)?;
                usage.thoughts_token_count = cursor.nullable(Cursor::u64_small_inline)?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })
}

/// An `Option<bool>` field: `true` (a streamed call's `willContinue`, nearly every time) as one
/// comparison, anything else as [`Cursor::bool`] reads it, which it would read the same way.
#[inline(always)]
fn optional_bool(cursor: &mut Cursor<'_>) -> Option<Option<bool>> {
    if cursor.tokens(b"true").is_some() {
        return Some(Some(true));
    }
    cursor.nullable(Cursor::bool)
}

/// An `Option<Box<Value>>` field (whole `args`, a `numberValue`…): `null` as `None`, any
/// other value's text parsed by serde alone, as it would parse it in place. Declining here
/// sent the whole chunk to serde, which read it a second time, thought signature included
/// (kilobytes on the chunk with a call's whole arguments).
fn json_value(cursor: &mut Cursor<'_>) -> Option<Option<Box<serde_json::Value>>> {
    if cursor.take_null()? {
        return Some(None);
    }
    let text = cursor.raw_value()?;
    // Valid JSON by now; serde may still reject it (a number out of range, `1e999`), and then
    // rejects the chunk too.
    serde_json::from_str(text)
        .ok()
        .map(|value| Some(Box::new(value)))
}

// Names every field of the wire types the fast path builds or declines on, so that adding one
// fails to compile here: `read_hot_chunk` must then read the new field or decline on it, since
// skipping it as an unknown key would read a chunk differently from serde.
const _: fn(
    Chunk<'_>,
    Candidate<'_>,
    Content<'_>,
    WirePart<'_>,
    FunctionCall<'_>,
    PartialArg<'_>,
    UsageMetadata,
) = |chunk, candidate, content, part, call, arg, usage| {
    let Chunk {
        candidates: _,
        prompt_feedback: _,
        usage_metadata: _,
        model_version: _,
        response_id: _,
        error: _,
    } = chunk;
    let Candidate {
        index: _,
        content: _,
        finish_reason: _,
        grounding_metadata: _,
        citation_metadata: _,
    } = candidate;
    let Content { parts: _ } = content;
    let WirePart {
        text: _,
        thought: _,
        thought_signature: _,
        function_call: _,
        inline_data: _,
        executable_code: _,
        code_execution_result: _,
    } = part;
    let FunctionCall {
        id: _,
        name: _,
        args: _,
        partial_args: _,
        will_continue: _,
    } = call;
    let PartialArg {
        json_path: _,
        string_value: _,
        number_value: _,
        bool_value: _,
        null_value: _,
        struct_value: _,
        list_value: _,
        will_continue: _,
    } = arg;
    let UsageMetadata {
        prompt_token_count: _,
        cached_content_token_count: _,
        candidates_token_count: _,
        thoughts_token_count: _,
    } = usage;
};

#[cfg(test)]
mod tests;
