//! The fast path of [`ChatStreamDecoder`](super::ChatStreamDecoder): the hot chunk shapes read
//! by hand with the [`Cursor`], serde for everything else.
//!
//! Nearly every chunk of a stream is a text or reasoning delta: the same dozen top-level keys
//! (`id`, `object`, `created`, `model`, `system_fingerprint`, `usage: null`…) around one choice
//! whose delta has `content`, `reasoning_content` or `reasoning`. Parsing those with serde's
//! derived visitors (key matching, building the wire structs, the `choices` vector) was about
//! half of decoding time. [`read_hot_chunk`] reads exactly those shapes into the same wire types
//! and declines (`None`) everything else: a second choice, a non-null `usage`, `error` or
//! `message`, a tool call or an annotation, anything the cursor declines (malformed JSON, keys
//! with escapes, unpaired surrogates, deep nesting) and a repeated known key, which serde
//! rejects. The decoder then parses the payload with serde as before, which also produces the
//! errors. What it accepts, it reads exactly as serde would (the property tests compare the
//! two), so the decoder's output does not depend on which path read a chunk.

use crate::borrowed::Str;
use crate::scan::{Cursor, Seen};

use super::wire::{Choice, Chunk, Delta};

/// The parts of a [`Chunk`] a hot chunk can have: no usage, no error, at
/// most one choice (so no vector to allocate).
#[derive(Debug, Default)]
pub(super) struct HotChunk<'a> {
    pub id: Option<Str<'a>>,
    pub model: Option<Str<'a>>,
    pub choice: Option<Choice<'a>>,
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
        // Only their absence is hot: the usage chunk comes once per stream, errors never.
        b"usage" => {
            seen.first(3)?;
            cursor.null()?;
        }
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
            // Tool calls and annotations go through serde; an empty list is read as serde
            // reads it (an empty, unallocated vector).
            b"tool_calls" => {
                seen.first(3)?;
                delta.tool_calls = cursor.nullable(empty_list)?;
            }
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

/// `[]`, declining on any element.
fn empty_list<T>(cursor: &mut Cursor<'_>) -> Option<Vec<T>> {
    cursor.array(|_| None)?;
    Some(Vec::new())
}

#[cfg(test)]
mod tests;
