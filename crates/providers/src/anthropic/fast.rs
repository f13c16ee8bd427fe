//! The fast path of [`MessagesStreamDecoder`](super::MessagesStreamDecoder): the hot event
//! shapes read by hand with the [`Cursor`], serde for everything else.
//!
//! Nearly every event of a stream is a `content_block_delta` carrying a `text_delta`,
//! `thinking_delta`, `input_json_delta` or `signature_delta`: three top-level keys (`type`,
//! `index`, `delta`) around a two-key delta. Parsing those with serde's derived visitors (key
//! matching through the generated field enums, the nested `Option`s) cost about 3 600
//! instructions an event, half of the decoder's time on the fixtures. [`read_hot_event`] reads
//! any event made only of `type`, `index` and a `delta` of strings into the same [`Event`]
//! serde builds, which covers the deltas and the small events around them
//! (`content_block_stop`, `message_stop`, `ping`), and declines (`None`) everything else: a
//! non-null `message`, `content_block`, `usage` or `error` (`message_start`,
//! `content_block_start`, `message_delta`, errors), a delta with a non-null `citation`,
//! `stop_details` or `container`, anything the cursor declines (malformed JSON, keys with
//! escapes, unpaired surrogates, deep nesting) and a repeated known key, which serde rejects.
//! The decoder then parses the payload with serde as before, which also produces the errors.
//! What it accepts, it reads exactly as serde would (the property tests compare the two), so
//! the decoder's output does not depend on which path read an event.
//!
//! Two readers share the work: [`read_compact`] matches the layout the API always sends as a
//! few runs of bytes (and declines the cold event types at once), and [`read_event`] walks
//! any other layout key by key (a proxy that re-serialises events may reorder keys or add
//! whitespace). Either fills the fields serde would fill and nothing more: the meaning of
//! `type` is left to the decoder's dispatch, which both paths share.

use std::borrow::Cow;

use crate::borrowed::Str;
use crate::scan::{Cursor, Seen};

use super::wire::{Delta, Event};

/// Reads an event of the hot shapes into `event` (a default one), or declines (leaving it
/// partly filled, to be dropped): see the module's documentation. `data` is the trimmed
/// payload, as serde sees it.
///
/// The event is filled in place: returned by value, its inline delta (about 200 bytes) would
/// be moved again for every token.
pub(super) fn read_hot_event<'a>(data: &'a str, event: &mut Event<'a>) -> Option<()> {
    match read_compact(data, event) {
        Compact::Read => Some(()),
        Compact::Cold => None,
        Compact::Other => {
            // Start over: the compact reader may have filled some fields before giving up.
            *event = Event::default();
            read_event(data, event)
        }
    }
}

/// What [`read_compact`] made of a payload.
enum Compact {
    /// Read into the event.
    Read,
    /// An event type that always goes through serde: declined without walking it.
    Cold,
    /// Anything else (another layout, another type, not JSON): for [`read_event`] to try.
    Other,
}

/// The events that always have a non-null member the fast path declines (`message`,
/// `content_block`, `usage`): walking one key by key before declining cost about 700
/// instructions, a few percent of the serde parse that follows.
const COLD: [&[u8]; 3] = [
    br#"message_start""#,
    br#"content_block_start""#,
    br#"message_delta""#,
];

/// The hot events exactly as Anthropic writes them (no whitespace, `type` first, the other
/// keys in the order the API sends them), matched as a few runs of bytes: reading a token's
/// delta key by key cost about twice as much. `{"type":"content_block_delta","index":N,
/// "delta":{"type":"text_delta","text":"…"}}` (or `input_json_delta` / `partial_json`,
/// `thinking_delta` / `thinking`, `signature_delta` / `signature`),
/// `{"type":"content_block_stop","index":N}`, `{"type":"message_stop"}`, `{"type":"ping"}`.
///
/// Whatever it accepts is a JSON object with exactly these members, which serde reads into the
/// same event: the byte runs are valid JSON tokens, and the values are read by the cursor.
#[inline(always)]
fn read_compact<'a>(data: &'a str, event: &mut Event<'a>) -> Compact {
    let mut cursor = Cursor::new(data);
    if cursor.tokens(br#"{"type":""#).is_none() {
        return Compact::Other;
    }
    let kind = if cursor.tokens(br#"content_block_delta","index":"#).is_some() {
        read_compact_delta(&mut cursor, event).map(|()| "content_block_delta")
    } else if cursor.tokens(br#"content_block_stop","index":"#).is_some() {
        read_index(&mut cursor, event)
            .and_then(|()| cursor.tokens(b"}"))
            .map(|()| "content_block_stop")
    } else if cursor.tokens(br#"ping"}"#).is_some() {
        Some("ping")
    } else if cursor.tokens(br#"message_stop"}"#).is_some() {
        Some("message_stop")
    } else if COLD.iter().any(|cold| cursor.tokens(cold).is_some()) {
        return Compact::Cold;
    } else {
        None
    };
    match kind.and_then(|kind| cursor.end().map(|()| kind)) {
        Some(kind) => {
            event.kind = Some(Str(Cow::Borrowed(kind)));
            Compact::Read
        }
        None => Compact::Other,
    }
}

/// The rest of a compact `content_block_delta`, after `"index":`.
#[inline(always)]
fn read_compact_delta<'a>(cursor: &mut Cursor<'a>, event: &mut Event<'a>) -> Option<()> {
    read_index(cursor, event)?;
    cursor.tokens(br#","delta":{"type":"#)?;
    let delta = event.delta.insert(Delta::default());
    let (kind, field) = if cursor.tokens(br#""text_delta","text":"#).is_some() {
        ("text_delta", &mut delta.text)
    } else if cursor
        .tokens(br#""input_json_delta","partial_json":"#)
        .is_some()
    {
        ("input_json_delta", &mut delta.partial_json)
    } else if cursor.tokens(br#""thinking_delta","thinking":"#).is_some() {
        ("thinking_delta", &mut delta.thinking)
    } else if cursor
        .tokens(br#""signature_delta","signature":"#)
        .is_some()
    {
        ("signature_delta", &mut delta.signature)
    } else {
        return None;
    };
    *field = Some(Str(cursor.string()?));
    delta.kind = Some(Str(Cow::Borrowed(kind)));
    cursor.tokens(b"}}")
}

/// A block index.
#[inline(always)]
fn read_index(cursor: &mut Cursor<'_>, event: &mut Event<'_>) -> Option<()> {
    event.index = Some(cursor.u64_small_inline()?);
    Some(())
}

/// Any event of the hot shapes, key by key: deltas written otherwise (keys reordered,
/// whitespace), `content_block_stop`, `message_stop`, `ping`.
fn read_event<'a>(data: &'a str, event: &mut Event<'a>) -> Option<()> {
    let mut cursor = Cursor::new(data);
    let mut seen = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"type" => {
                seen.first(0)?;
                event.kind = cursor.optional_string()?.map(Str);
            }
            b"index" => {
                seen.first(1)?;
                event.index = cursor.nullable(Cursor::u64)?;
            }
            b"delta" => {
                seen.first(2)?;
                if !cursor.take_null()? {
                    read_delta(cursor, event.delta.insert(Delta::default()))?;
                }
            }
            // Only their absence is hot: they come once per message or block, and are large
            // (a message, a block with a tool's whole result) or rare (usage, errors).
            b"message" => {
                seen.first(3)?;
                cursor.null()?;
            }
            b"content_block" => {
                seen.first(4)?;
                cursor.null()?;
            }
            b"usage" => {
                seen.first(5)?;
                cursor.null()?;
            }
            b"error" => {
                seen.first(6)?;
                cursor.null()?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })?;
    cursor.end()
}

fn read_delta<'a>(cursor: &mut Cursor<'a>, delta: &mut Delta<'a>) -> Option<()> {
    // Ten known keys, more than one `Seen` holds: the strings in one, the values in the other.
    let mut seen = Seen::default();
    let mut seen_values = Seen::default();
    cursor.object(|cursor, key| {
        match key {
            b"type" => {
                seen.first(0)?;
                delta.kind = cursor.optional_string()?.map(Str);
            }
            b"text" => {
                seen.first(1)?;
                delta.text = cursor.optional_string()?.map(Str);
            }
            b"partial_json" => {
                seen.first(2)?;
                delta.partial_json = cursor.optional_string()?.map(Str);
            }
            b"thinking" => {
                seen.first(3)?;
                delta.thinking = cursor.optional_string()?.map(Str);
            }
            b"signature" => {
                seen.first(4)?;
                delta.signature = cursor.optional_string()?.map(Str);
            }
            b"stop_reason" => {
                seen.first(5)?;
                delta.stop_reason = cursor.optional_string()?.map(Str);
            }
            b"stop_sequence" => {
                seen.first(6)?;
                delta.stop_sequence = cursor.optional_string()?.map(Str);
            }
            // Citations (a few per answer) and `message_delta`'s values go through serde.
            b"citation" => {
                seen_values.first(0)?;
                cursor.null()?;
            }
            b"stop_details" => {
                seen_values.first(1)?;
                cursor.null()?;
            }
            b"container" => {
                seen_values.first(2)?;
                cursor.null()?;
            }
            _ => cursor.skip_value()?,
        }
        Some(())
    })
}

// Names every field of the wire types the fast path builds, so that adding one fails to compile
// here: `read_hot_event` must then read the new field or decline on it, since skipping it as an
// unknown key would read an event differently from serde.
const _: fn(Event<'_>, Delta<'_>) = |event, delta| {
    let Event {
        kind: _,
        index: _,
        message: _,
        content_block: _,
        delta: _,
        usage: _,
        error: _,
    } = event;
    let Delta {
        kind: _,
        text: _,
        partial_json: _,
        thinking: _,
        signature: _,
        citation: _,
        stop_reason: _,
        stop_sequence: _,
        stop_details: _,
        container: _,
    } = delta;
};

#[cfg(test)]
mod tests;
