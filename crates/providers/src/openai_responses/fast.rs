//! The fast path of [`ResponsesStreamDecoder`](super::ResponsesStreamDecoder): the hot event
//! shapes read by hand with the [`Cursor`], serde for everything else.
//!
//! Nearly every event of a stream is a delta (`response.output_text.delta`, the reasoning and
//! argument deltas): a handful of scalar members (`type`, `item_id`, `output_index`, `delta`,
//! `sequence_number`, `obfuscation`, `logprobs`…) and no object the decoder keeps. Parsing those
//! with serde's derived visitor (key matching, and moving the [`Event`], a kilobyte with its
//! `Value` fields, several times while building it) was most of decoding time. [`read_event`]
//! reads the event's scalar fields into the same wire type and declines (`None`) as soon as one
//! of its object-valued fields (`item`, `annotation`, `response`, `error`, `code`, `message`) is
//! there and not `null`: output items, annotations, the `response.*` lifecycle events and errors
//! go through serde, which builds the `Value`s the decoder keeps and reports malformed payloads.
//! It also declines on anything the cursor declines (malformed JSON, keys with escapes, unpaired
//! surrogates, deep nesting) and on a repeated known key, which serde rejects.
//!
//! Which event types it reads is left to the shape, not to a list: an event whose known fields
//! are all scalars is read exactly as serde reads it whatever its `type`, so the decoder's
//! `apply` does the same with it either way (acting on it, or ignoring a type it does not
//! handle, such as `response.content_part.added` or `response.web_search_call.searching`). The
//! property tests compare the two readers, and whole decoders with and without the fast path.

use crate::borrowed::Str;
use crate::scan::{Cursor, Seen};

use super::wire::Event;

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
    cursor.object(|cursor, key| {
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
            // The object-valued fields: only their absence is hot. `null` reads as `None`, as
            // serde reads an `Option`; anything else declines (serde builds the `Value`).
            b"item" => only_null(cursor, &mut nulls, 0)?,
            b"annotation" => only_null(cursor, &mut nulls, 1)?,
            b"response" => only_null(cursor, &mut nulls, 2)?,
            b"error" => only_null(cursor, &mut nulls, 3)?,
            b"code" => only_null(cursor, &mut nulls, 4)?,
            b"message" => only_null(cursor, &mut nulls, 5)?,
            _ => cursor.skip_value()?,
        }
        Some(())
    })?;
    cursor.end()
}

/// Reads the `null` of object-valued field number `field`, declining on anything else and on a
/// repeat.
#[inline(always)]
fn only_null(cursor: &mut Cursor<'_>, nulls: &mut Seen, field: u8) -> Option<()> {
    nulls.first(field)?;
    cursor.null()
}

// Names every field of the wire type the fast path builds, so that adding one fails to compile
// here: `read_event` must then read the new field or decline on it, since skipping it as an
// unknown key would read an event differently from serde.
const _: fn(Event<'_>) = |event| {
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
};

#[cfg(test)]
mod tests;
