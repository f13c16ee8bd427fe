//! The fast path of [`ChatStreamDecoder`](super::ChatStreamDecoder): the chunk shapes servers
//! send read by hand with the [`Cursor`], serde for everything else.
//!
//! Nearly every chunk of a stream is a text or reasoning delta: the same dozen top-level keys
//! (`id`, `object`, `created`, `model`, `system_fingerprint`, `usage: null`…) around one choice
//! whose delta has `content`, `reasoning_content` or `reasoning`. Parsing those with serde's
//! derived visitors (key matching, building the wire structs, the `choices` vector) was about
//! half of decoding time. [`read_hot_chunk`] reads exactly those shapes into the same wire types,
//! and the two other chunks nearly every stream has: its tool-call deltas (arguments as a string)
//! and its closing usage. Reading those with serde too ran serde's whole derived decoder (about
//! 16 KiB of code) once or twice per response: cheap in instructions, but code a run touches once
//! per response and finds out of the caches each time, since the process sleeps between
//! responses (a run of the peers bench touched ~250 cache lines of it, ~5 % of all it touched).
//!
//! It declines (`None`) everything else: a second choice, `error` or `message`, an
//! annotation, a legacy `function_call`, arguments sent as an object, a negative tool-call
//! index, anything the cursor declines (malformed JSON, keys with escapes, unpaired surrogates,
//! deep nesting) and a repeated known key, which serde rejects. The decoder then parses the
//! payload with serde as before, which also produces the errors. What it accepts, it reads
//! exactly as serde would (the property tests compare the two), so the decoder's output does not
//! depend on which path read a chunk.

use crate::borrowed::{Str, StrOrValue};
use crate::scan::{Cursor, Seen};

use super::wire::{
    Choice, Chunk, CompletionDetails, Delta, FunctionDelta, PromptDetails, ToolCallDelta, WireUsage,
};

/// The parts of a [`Chunk`] a hot chunk can have: no error, at most one choice (so no vector
/// to allocate).
#[derive(Debug, Default)]
pub(super) struct HotChunk<'a> {
    pub id: Option<Str<'a>>,
    pub model: Option<Str<'a>>,
    pub choice: Option<Choice<'a>>,
    pub usage: Option<WireUsage>,
}

/// What the chunks of one stream repeat before their choices: the same id, object, creation
/// time, model and fingerprint, byte for byte, in front of every delta. Once one chunk's start
/// has been read, the next chunk that starts with the same bytes resumes after them: reading
/// them again would find the same thing, and it was half of a text delta's reading.
///
/// Only what the start yields is not read again: the id and the model, which the decoder
/// keeps from its first chunk only (it has them by then: the start was read from a chunk it
/// applied), and which keys were seen, which is kept here.
#[derive(Debug, Default)]
pub(super) struct Head {
    /// The start of the last chunk read, through `"choices":`; empty when there is none.
    text: String,
    /// The top-level keys seen in it (`choices` included).
    seen: Seen,
}

/// Reads a chunk of the hot shapes into `chunk` (a default one), or declines (leaving it
/// partly filled, to be dropped): see the module's documentation. `data` is the trimmed
/// payload, as serde sees it. A chunk that starts as the last one read did (`head`) is read
/// from its choices on, with no id or model; one that does not becomes the new `head` once it
/// has been read whole.
///
/// The choice and its delta are built in place: as return values they were moved several
/// times, a measurable cost at a few hundred bytes each.
pub(super) fn read_hot_chunk<'a>(
    data: &'a str,
    chunk: &mut HotChunk<'a>,
    head: &mut Head,
) -> Option<()> {
    if !head.text.is_empty() && data.as_bytes().starts_with(head.text.as_bytes()) {
        let mut cursor = Cursor::at(data, head.text.len());
        let mut seen = head.seen;
        read_choices(&mut cursor, chunk)?;
        cursor.object_rest(|cursor, key| member(cursor, key, chunk, &mut seen, &mut None))?;
        return cursor.end();
    }
    let mut cursor = Cursor::new(data);
    let mut seen = Seen::default();
    let mut choices_at = None;
    cursor.object(|cursor, key| member(cursor, key, chunk, &mut seen, &mut choices_at))?;
    cursor.end()?;
    if let Some((at, seen)) = choices_at {
        head.text.clear();
        head.text.push_str(&data[..at]);
        head.seen = seen;
    }
    Some(())
}

/// One top-level member of a chunk. At `choices`, `choices_at` gets where its value starts
/// and the keys seen so far (for [`Head`]).
#[inline(always)]
fn member<'a>(
    cursor: &mut Cursor<'a>,
    key: &'a [u8],
    chunk: &mut HotChunk<'a>,
    seen: &mut Seen,
    choices_at: &mut Option<(usize, Seen)>,
) -> Option<()> {
    match key {
        b"id" => {
            seen.first(0)?;
            chunk.id = cursor.optional_string()?.map(Str);
        }
        b"model" => {
            seen.first(1)?;
            chunk.model = cursor.optional_string()?.map(Str);
        }
        b"choices" => {
            seen.first(2)?;
            *choices_at = Some((cursor.pos(), *seen));
            read_choices(cursor, chunk)?;
        }
        b"usage" => {
            seen.first(3)?;
            chunk.usage = cursor.nullable(read_usage)?;
        }
        // Only its absence is hot: errors are rare.
        b"error" => {
            seen.first(4)?;
            cursor.null()?;
        }
        _ => cursor.skip_value()?,
    }
    Some(())
}

/// The `choices` array: one choice at most (n > 1 goes through serde, which keeps a vector).
#[inline(always)]
fn read_choices<'a>(cursor: &mut Cursor<'a>, chunk: &mut HotChunk<'a>) -> Option<()> {
    cursor.array(|cursor| {
        if chunk.choice.is_some() {
            return None;
        }
        read_choice(cursor, chunk.choice.insert(Choice::default()))
    })
}

fn read_choice<'a>(cursor: &mut Cursor<'a>, choice: &mut Choice<'a>) -> Option<()> {
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"index" => {
                seen.first(0)?;
                choice.index = cursor.nullable(Cursor::u64)?;
            }
            b"delta" => {
                seen.first(1)?;
                if !cursor.take_null()? {
                    read_delta(cursor, choice.delta.insert(Delta::default()))?;
                }
            }
            b"message" => {
                seen.first(2)?;
                cursor.null()?;
            }
            b"finish_reason" => {
                seen.first(3)?;
                choice.finish_reason = cursor.optional_string()?.map(Str);
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })
}

fn read_delta<'a>(cursor: &mut Cursor<'a>, delta: &mut Delta<'a>) -> Option<()> {
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"content" => {
                seen.first(0)?;
                delta.content = cursor.optional_string()?.map(Str);
            }
            b"reasoning_content" => {
                seen.first(1)?;
                delta.reasoning_content = cursor.optional_string()?.map(Str);
            }
            b"reasoning" => {
                seen.first(2)?;
                delta.reasoning = cursor.optional_string()?.map(Str);
            }
            b"tool_calls" => {
                seen.first(3)?;
                delta.tool_calls = cursor.nullable(read_tool_calls)?;
            }
            // Annotations go through serde; an empty list is read as serde reads it (an empty,
            // unallocated vector).
            b"annotations" => {
                seen.first(4)?;
                delta.annotations = cursor.nullable(empty_list)?;
            }
            // A legacy `function_call` is a call: serde reads it.
            b"function_call" => return None,
            _ => cursor.skip_value()?,
        }
        Some(())
    })
}

/// A delta's `tool_calls`: each call's index, id, and function name and arguments, the
/// arguments as a string (serde's [`StrOrValue::Str`]); arguments of any other type decline.
fn read_tool_calls<'a>(cursor: &mut Cursor<'a>) -> Option<Vec<ToolCallDelta<'a>>> {
    let mut calls = Vec::new();
    cursor.array(|cursor| {
        let mut call = ToolCallDelta::default();
        let mut seen = Seen::default();
        cursor.object(|cursor, key| {
            match key {
                b"index" => {
                    seen.first(0)?;
                    // An `i64` field: a negative index (which serde reads) declines.
                    call.index = cursor.nullable(|c| i64::try_from(c.u64()?).ok())?;
                }
                b"id" => {
                    seen.first(1)?;
                    call.id = cursor.optional_string()?.map(Str);
                }
                b"function" => {
                    seen.first(2)?;
                    call.function = cursor.nullable(read_function)?;
                }
                _ => cursor.skip_value()?,
            }
            Some(())
        })?;
        calls.push(call);
        Some(())
    })?;
    Some(calls)
}

fn read_function<'a>(cursor: &mut Cursor<'a>) -> Option<FunctionDelta<'a>> {
    let mut function = FunctionDelta::default();
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"name" => {
                seen.first(0)?;
                function.name = cursor.optional_string()?.map(Str);
            }
            b"arguments" => {
                seen.first(1)?;
                function.arguments = cursor.optional_string()?.map(StrOrValue::Str);
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })?;
    Some(function)
}

/// A chunk's `usage` object.
fn read_usage(cursor: &mut Cursor<'_>) -> Option<WireUsage> {
    let mut usage = WireUsage::default();
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"prompt_tokens" => {
                seen.first(0)?;
                usage.prompt_tokens = cursor.nullable(Cursor::u64)?;
            }
            b"completion_tokens" => {
                seen.first(1)?;
                usage.completion_tokens = cursor.nullable(Cursor::u64)?;
            }
            b"prompt_tokens_details" => {
                seen.first(2)?;
                usage.prompt_tokens_details = cursor.nullable(|cursor| {
                    let cached_tokens = details(cursor, b"cached_tokens")?;
                    Some(PromptDetails { cached_tokens })
                })?;
            }
            b"completion_tokens_details" => {
                seen.first(3)?;
                usage.completion_tokens_details = cursor.nullable(|cursor| {
                    let reasoning_tokens = details(cursor, b"reasoning_tokens")?;
                    Some(CompletionDetails { reasoning_tokens })
                })?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })?;
    Some(usage)
}

/// A usage details object, of which only the count under `wanted` is read.
fn details(cursor: &mut Cursor<'_>, wanted: &[u8]) -> Option<Option<u64>> {
    let (mut count, mut seen) = (None, false);
    cursor.object(|cursor, key| {
        if key == wanted {
            if std::mem::replace(&mut seen, true) {
                return None;
            }
            count = cursor.nullable(Cursor::u64)?;
            Some(())
        } else {
            cursor.skip_value()
        }
    })?;
    Some(count)
}

// Names every field of the wire types the fast path builds, so that adding one fails to compile
// here: `read_hot_chunk` must then read the new field or decline on it, since skipping it as an
// unknown key would read a chunk differently from serde.
const _: fn(Chunk<'_>, Choice<'_>, Delta<'_>) = |chunk, choice, delta| {
    let Chunk {
        id: _,
        model: _,
        choices: _,
        usage: _,
        error: _,
    } = chunk;
    let Choice {
        index: _,
        delta: _,
        message: _,
        finish_reason: _,
    } = choice;
    let Delta {
        content: _,
        reasoning_content: _,
        reasoning: _,
        tool_calls: _,
        function_call: _,
        annotations: _,
    } = delta;
};
const _: fn(ToolCallDelta<'_>, FunctionDelta<'_>, WireUsage) = |call, function, usage| {
    let ToolCallDelta {
        index: _,
        id: _,
        function: _,
    } = call;
    let FunctionDelta {
        name: _,
        arguments: _,
    } = function;
    let WireUsage {
        prompt_tokens: _,
        completion_tokens: _,
        prompt_tokens_details: _,
        completion_tokens_details: _,
    } = usage;
    let PromptDetails { cached_tokens: _ } = PromptDetails::default();
    let CompletionDetails {
        reasoning_tokens: _,
    } = CompletionDetails::default();
};

/// `[]`, declining on any element.
fn empty_list<T>(cursor: &mut Cursor<'_>) -> Option<Vec<T>> {
    cursor.array(|_| None)?;
    Some(Vec::new())
}

#[cfg(test)]
mod tests;
