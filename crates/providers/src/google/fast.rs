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
//! whole `args`, `numberValue` / `structValue` / `listValue` arguments, inline data, code
//! execution, grounding or citation metadata, `promptFeedback`, `error`, anything the cursor
//! declines (malformed JSON, keys with escapes, unpaired surrogates, deep nesting) and a
//! repeated known key, which serde rejects. The decoder then parses the payload with serde as
//! before, which also produces the errors. What it accepts, it reads exactly as serde would (the
//! property tests compare the two), so the decoder's output does not depend on which path read
//! a chunk.

use crate::borrowed::Str;
use crate::scan::{Cursor, Seen};

use super::wire::{Candidate, Chunk, Content, FunctionCall, PartialArg, UsageMetadata, WirePart};

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
    pub content: Option<Option<WirePart<'a>>>,
    pub finish_reason: Option<Str<'a>>,
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
    cursor.object(|cursor, key| {
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
    })?;
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
    cursor.object(|cursor, key| {
        match key {
            b"index" => {
                seen.first(0)?;
                candidate.index = cursor.nullable(Cursor::u64)?;
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
    })
}

/// A `Content` of at most one part (`role` and the like skipped).
fn read_content<'a>(cursor: &mut Cursor<'a>, part: &mut Option<WirePart<'a>>) -> Option<()> {
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"parts" => {
                seen.first(0)?;
                cursor.array(|cursor| {
                    // Several parts go through serde, which keeps a vector.
                    if part.is_some() {
                        return None;
                    }
                    read_part(cursor, part.insert(WirePart::default()))
                })?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })
}

fn read_part<'a>(cursor: &mut Cursor<'a>, part: &mut WirePart<'a>) -> Option<()> {
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"text" => {
                seen.first(0)?;
                part.text = cursor.optional_string()?.map(Str);
            }
            b"thought" => {
                seen.first(1)?;
                part.thought = cursor.nullable(Cursor::bool)?;
            }
            b"thoughtSignature" => {
                seen.first(2)?;
                part.thought_signature = cursor.optional_string()?.map(Str);
            }
            b"functionCall" => {
                seen.first(3)?;
                if !cursor.take_null()? {
                    read_function_call(cursor, part.function_call.insert(Box::default()))?;
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
    })
}

fn read_function_call<'a>(cursor: &mut Cursor<'a>, call: &mut FunctionCall<'a>) -> Option<()> {
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"id" => {
                seen.first(0)?;
                call.id = cursor.optional_string()?.map(Str);
            }
            b"name" => {
                seen.first(1)?;
                call.name = cursor.optional_string()?.map(Str);
            }
            // Whole arguments are a JSON value, built by serde (one chunk per call).
            b"args" => {
                seen.first(2)?;
                cursor.null()?;
            }
            b"partialArgs" => {
                seen.first(3)?;
                if !cursor.take_null()? {
                    let args = call.partial_args.insert(Vec::new());
                    cursor.array(|cursor| {
                        args.push(PartialArg::default());
                        read_partial_arg(cursor, args.last_mut()?)
                    })?;
                }
            }
            b"willContinue" => {
                seen.first(4)?;
                call.will_continue = cursor.nullable(Cursor::bool)?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })
}

/// A streamed argument holding a string, a boolean, a null or no value (a continuation marker).
fn read_partial_arg<'a>(cursor: &mut Cursor<'a>, arg: &mut PartialArg<'a>) -> Option<()> {
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
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
                arg.bool_value = cursor.nullable(Cursor::bool)?;
            }
            // Its presence is the value, whatever it holds (serde ignores it): any valid JSON.
            b"nullValue" => {
                seen.first(3)?;
                cursor.skip_value()?;
                arg.null_value = true;
            }
            b"willContinue" => {
                seen.first(4)?;
                arg.will_continue = cursor.nullable(Cursor::bool)?;
            }
            // JSON values (numbers kept as serde_json parses them): serde reads them.
            b"numberValue" => {
                seen.first(5)?;
                cursor.null()?;
            }
            b"structValue" => {
                seen.first(6)?;
                cursor.null()?;
            }
            b"listValue" => {
                seen.first(7)?;
                cursor.null()?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })
}

/// The token counts (`totalTokenCount`, the per-modality details and `trafficType` skipped).
fn read_usage(cursor: &mut Cursor<'_>, usage: &mut UsageMetadata) -> Option<()> {
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"promptTokenCount" => {
                seen.first(0)?;
                usage.prompt_token_count = cursor.nullable(Cursor::u64)?;
            }
            b"cachedContentTokenCount" => {
                seen.first(1)?;
                usage.cached_content_token_count = cursor.nullable(Cursor::u64)?;
            }
            b"candidatesTokenCount" => {
                seen.first(2)?;
                usage.candidates_token_count = cursor.nullable(Cursor::u64)?;
            }
            b"thoughtsTokenCount" => {
                seen.first(3)?;
                usage.thoughts_token_count = cursor.nullable(Cursor::u64)?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })
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
