//! The fast path of [`ResponsesStreamDecoder`](super::ResponsesStreamDecoder): the hot event
//! shapes read by hand with the [`Cursor`], serde for everything else.
//!
//! Nearly every event of a stream is a delta (`response.output_text.delta`, the reasoning and
//! argument deltas): a handful of scalar members (`type`, `item_id`, `output_index`, `delta`,
//! `sequence_number`, `obfuscation`, `logprobs`…) and no object the decoder keeps. Parsing those
//! with serde's derived visitor (key matching, and moving the [`Event`], a kilobyte with its
//! `Value` fields, several times while building it) was most of decoding time. [`read_event`]
//! reads the event's scalar fields into the same wire type.
//!
//! It also reads the `response` object of the lifecycle events (`response.created`,
//! `in_progress`, `completed`…): a few kilobytes each, nearly all of it the request echoed back
//! and, at the end, every output item again, which the decoder skips (serde's skipping cost
//! about half as much again as the cursor's). Of that object the decoder keeps three strings
//! and three small `Value`s (usage, error, incomplete details), which serde builds from their
//! text alone.
//!
//! It declines (`None`) as soon as any other object-valued field (`item`, `annotation`,
//! `error`, `code`, `message`) is there and not `null`: output items, annotations and errors go
//! through serde, which builds the `Value`s the decoder keeps, as do malformed payloads, which
//! serde reports. It also declines on anything the cursor declines (malformed JSON, keys with
//! escapes, unpaired surrogates, deep nesting), on a repeated known key, which serde rejects,
//! and on a `Value` serde fails to build (a number out of range).
//!
//! Which event types it reads is left to the shape, not to a list: an event it reads, it reads
//! exactly as serde does whatever its `type`, so the decoder's `apply` does the same with it
//! either way (acting on it, or ignoring a type it does not handle, such as
//! `response.content_part.added` or `response.web_search_call.searching`). The property tests
//! compare the two readers, and whole decoders with and without the fast path.

use std::borrow::Cow;

use serde_json::Value;

use crate::borrowed::Str;
use crate::scan::{Cursor, Seen};

use super::wire::{Event, ResponseInfo};

/// Reads an event of the hot shapes into `event` (a default one), or declines (leaving it
/// partly filled, to be dropped): see the module's documentation. `data` is the trimmed
/// payload, as serde sees it.
///
/// The event is filled in place: returned by value it would be moved, a kilobyte each time.
pub(super) fn read_event<'a>(data: &'a str, event: &mut Event<'a>) -> Option<()> {
    let mut cursor = Cursor::new(data);
    // The scalar fields read, and the object-valued ones seen as `null` (serde rejects a
    // repeated field either way).
    let mut seen = Seen::default();
    let mut nulls = Seen::default();
    let member = |cursor: &mut Cursor<'a>, key: &'a [u8]| {
        match key {
            b"type" => {
                seen.first(0)?;
                // A `Cow<str>`, not an `Option`: serde rejects `null` there.
                event.kind = cursor.string()?;
            }
            b"item_id" => {
                seen.first(1)?;
                event.item_id = cursor.optional_string()?.map(Str);
            }
            b"output_index" => {
                seen.first(2)?;
                event.output_index = cursor.nullable(Cursor::u64)?;
            }
            b"delta" => {
                seen.first(3)?;
                event.delta = cursor.optional_string()?.map(Str);
            }
            b"content_index" => {
                seen.first(4)?;
                event.content_index = cursor.nullable(Cursor::u64)?;
            }
            b"summary_index" => {
                seen.first(5)?;
                event.summary_index = cursor.nullable(Cursor::u64)?;
            }
            b"arguments" => {
                seen.first(6)?;
                event.arguments = cursor.optional_string()?.map(Str);
            }
            b"input" => {
                seen.first(7)?;
                event.input = cursor.optional_string()?.map(Str);
            }
            b"response" => {
                nulls.first(2)?;
                if !cursor.take_null()? {
                    read_response(cursor, event.response.insert(ResponseInfo::default()))?;
                }
            }
            // The other object-valued fields: only their absence is hot. `null` reads as
            // `None`, as serde reads an `Option`; anything else declines (serde builds the
            // `Value`).
            b"item" => only_null(cursor, &mut nulls, 0)?,
            b"annotation" => only_null(cursor, &mut nulls, 1)?,
            b"error" => only_null(cursor, &mut nulls, 3)?,
            b"code" => only_null(cursor, &mut nulls, 4)?,
            b"message" => only_null(cursor, &mut nulls, 5)?,
            _ => cursor.skip_value()?,
        }
        Some(())
    };
    // The members in the order OpenAI writes them: `{"type":…,"sequence_number":N,` then a
    // lifecycle event's `"response":{…}` or a delta's `"item_id":…,"output_index":N,
    // "content_index":N` (or `"summary_index":N`) `,"delta":…,"logprobs":[],"obfuscation":…}`,
    // each key matched with its punctuation as one run of bytes. That is nine events in ten,
    // which key-by-key reading walked at about twice the cost; anything else (another order,
    // whitespace, more members) continues key by key.
    cursor.object_in_order(
        &[(br#"{"type":"#, b"type")],
        &[
            &[(br#","sequence_number":"#, b"sequence_number")],
            &[
                (br#","item_id":"#, b"item_id"),
                (br#","response":"#, b"response"),
            ],
            &[(br#","output_index":"#, b"output_index")],
            &[
                (br#","content_index":"#, b"content_index"),
                (br#","summary_index":"#, b"summary_index"),
            ],
            &[(br#","delta":"#, b"delta")],
            &[(br#","logprobs":"#, b"logprobs")],
            &[(br#","annotation_index":"#, b"annotation_index")],
            &[(br#","obfuscation":"#, b"obfuscation")],
        ],
        member,
    )?;
    cursor.end()
}

/// Reads a `response` object into `response` (a default one): the fields the decoder uses, the
/// rest skipped.
fn read_response(cursor: &mut Cursor<'_>, response: &mut ResponseInfo) -> Option<()> {
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"id" => {
                seen.first(0)?;
                response.id = cursor.optional_string()?.map(Cow::into_owned);
            }
            b"model" => {
                seen.first(1)?;
                response.model = cursor.optional_string()?.map(Cow::into_owned);
            }
            b"status" => {
                seen.first(2)?;
                response.status = cursor.optional_string()?.map(Cow::into_owned);
            }
            b"usage" => {
                seen.first(3)?;
                response.usage = optional_value(cursor)?;
            }
            b"error" => {
                seen.first(4)?;
                response.error = optional_value(cursor)?;
            }
            b"incomplete_details" => {
                seen.first(5)?;
                response.incomplete_details = optional_value(cursor)?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })
}

/// An `Option<Value>` field: `null` as `None`, anything else as the `Value` serde builds from
/// the member's text, which is what it builds for the field in place (declining where serde
/// fails, on a number out of range).
fn optional_value(cursor: &mut Cursor<'_>) -> Option<Option<Value>> {
    if cursor.take_null()? {
        return Some(None);
    }
    serde_json::from_str(cursor.raw_value()?).ok().map(Some)
}

/// Reads the `null` of object-valued field number `field`, declining on anything else and on a
/// repeat.
#[inline(always)]
fn only_null(cursor: &mut Cursor<'_>, nulls: &mut Seen, field: u8) -> Option<()> {
    nulls.first(field)?;
    cursor.null()
}

// Names every field of the wire types the fast path builds, so that adding one fails to compile
// here: `read_event` must then read the new field or decline on it, since skipping it as an
// unknown key would read an event differently from serde.
const _: fn(Event<'_>, ResponseInfo) = |event, response| {
    let Event {
        kind: _,
        output_index: _,
        item_id: _,
        delta: _,
        summary_index: _,
        content_index: _,
        arguments: _,
        input: _,
        item: _,
        annotation: _,
        response: _,
        error: _,
        code: _,
        message: _,
    } = event;
    let ResponseInfo {
        id: _,
        model: _,
        status: _,
        usage: _,
        error: _,
        incomplete_details: _,
    } = response;
};

#[cfg(test)]
mod tests;
