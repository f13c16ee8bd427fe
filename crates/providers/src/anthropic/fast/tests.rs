//! The fast path against serde: on generated events in and around the hot shapes (compact and
//! key by key), the fast path declines or reads exactly the event serde reads, and a decoder
//! yields the same parts and errors with it as without it. On the real fixtures, it reads
//! nearly every delta.

use proptest::prelude::*;
use proptest::sample::select;

use super::*;
use crate::anthropic::stream::MessagesStreamDecoder;
use crate::fast_tests::{self, Json, damaged, each_present, number_token, object};

/// Fails when the fast path reads `data` and serde rejects it or reads something else.
/// Returns whether the fast path read it.
fn agrees_with_serde(data: &str) -> Result<bool, String> {
    fast_tests::agrees_with_serde(data, |data| {
        let mut hot = Event::default();
        read_hot_event(data, &mut hot)?;
        Some(hot)
    })
}

/// What the compact reader alone makes of `data`.
fn compact(data: &str) -> &'static str {
    match read_compact(data, &mut Event::default()) {
        Compact::Read => "read",
        Compact::Cold => "cold",
        Compact::Other => "other",
    }
}

/// Runs `payloads` through a decoder with the fast path and one without (see
/// [`fast_tests::decoders_agree`]).
fn decoders_agree(payloads: &[String]) -> Result<(), TestCaseError> {
    let new = MessagesStreamDecoder::new;
    fast_tests::decoders_agree(new(), new(), MessagesStreamDecoder::push_with, payloads)
}

#[test]
fn reads_the_hot_shapes() {
    let compact_hot = [
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#,
        r#"{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"a\nb \u00e9 \ud83d\ude00"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 1"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}"#,
        // Three digits: `small_u64` declines and `u64` reads it.
        r#"{"type":"content_block_delta","index":123,"delta":{"type":"text_delta","text":"x"}}"#,
        r#"{"type":"content_block_stop","index":0}"#,
        r#"{"type":"message_stop"}"#,
        r#"{"type":"ping"}"#,
        // Whitespace around the payload is trimmed before either path sees it.
        " {\"type\":\"ping\"}\n",
    ];
    for data in compact_hot {
        assert_eq!(compact(data.trim()), "read", "{data}");
        assert_eq!(agrees_with_serde(data), Ok(true), "{data}");
    }
    let other_hot = [
        // Keys reordered, whitespace, unknown members, nulls: read key by key.
        r#"{"type":"content_block_delta","index":0,"delta":{"text":"x","type":"text_delta"}}"#,
        r#"{"index":0,"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}"#,
        r#"{ "type" : "content_block_delta" , "index" : 0 , "delta" : { "type" : "text_delta" , "text" : "x" } }"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","extra":[1,{"a":null}]}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"},"x":1}"#,
        r#"{"type":"content_block_delta","index":null,"delta":null,"message":null,"content_block":null,"usage":null,"error":null}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":null}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","partial_json":"x"}}"#,
        // Written otherwise, a message delta without usage is read.
        r#"{"delta":{"stop_reason":"end_turn","stop_sequence":null,"stop_details":null,"container":null},"type":"message_delta"}"#,
        r#"{"type":"content_block_stop","index":0,"x":"y"}"#,
        r#"{"type":null}"#,
        r#"{"type":"some_future_event","index":3}"#,
        r#"{}"#,
    ];
    for data in other_hot {
        assert_eq!(compact(data), "other", "{data}");
        assert_eq!(agrees_with_serde(data), Ok(true), "{data}");
    }
}

#[test]
fn declines_the_rest() {
    let cold = [
        // Shapes that go through serde, the first three without being walked.
        r#"{"type":"message_start","message":{"id":"m","content":[],"usage":{"input_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}"#,
        // Declined unread even without its usage: it always has one in practice.
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}}"#,
    ];
    for data in cold {
        assert_eq!(compact(data), "cold", "{data}");
        assert_eq!(agrees_with_serde(data), Ok(false), "{data}");
    }
    let declined = [
        // Shapes that go through serde.
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"u"}}}"#,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        r#"{"index":0,"type":"content_block_start","content_block":{"type":"text"}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"refusal","stop_details":{"type":"refusal"}}}"#,
        r#"{"type":"message_delta","delta":{"container":{"id":"c"}}}"#,
        // What serde rejects.
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}},"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\ud83d"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"b"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":1}}"#,
        r#"{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"x"}}"#,
        r#"{"type":"content_block_delta","index":1.0,"delta":{"type":"text_delta","text":"x"}}"#,
        r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}"#,
        r#"{"type":"content_block_delta","index":1e0,"delta":{"type":"text_delta","text":"x"}}"#,
        r#"{"type":"content_block_delta","index":18446744073709551616,"delta":{"type":"text_delta","text":"x"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x","text":"y"}}"#,
        r#"{"type":"content_block_delta","index":0,"index":0,"delta":{"type":"text_delta","text":"x"}}"#,
        r#"{"type":"content_block_stop","index":0}}"#,
        r#"{"type":"content_block_stop","index":}"#,
        r#"{"type":"ping"} x"#,
        r#"{"type":"ping","type":"ping"}"#,
        r#"{"type":"ping",}"#,
        r#"{"type":"ping""#,
        r#"{"type":"delta"#,
        r#"{"type":"message_stop"}{"type":"message_stop"}"#,
        "[]",
        "",
        // Valid, but declined: an escaped key, a delta written as a sequence, a repeated
        // `citation` (which serde rejects as a duplicate even when null).
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","t\u0065xt":"x"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":["text_delta","x"]}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"citation":null,"citation":null}}"#,
    ];
    for data in declined {
        assert_eq!(agrees_with_serde(data), Ok(false), "{data}");
    }
}

/// Every anthropic fixture's payloads, in order, by file name.
fn fixture_payloads() -> Vec<(String, Vec<String>)> {
    let streams = fast_tests::chunks_fixtures(&["anthropic"]);
    assert!(streams.len() >= 10, "the fixtures are missing");
    streams
}

#[test]
fn fixtures_decode_the_same_and_mostly_fast() {
    let (mut deltas, mut fast_deltas, mut total, mut fast) = (0, 0, 0, 0);
    for (name, payloads) in fixture_payloads() {
        for payload in &payloads {
            let read = agrees_with_serde(payload).unwrap_or_else(|e| panic!("{name}: {e}"));
            total += 1;
            fast += usize::from(read);
            if payload.contains(r#""type":"content_block_delta""#) {
                deltas += 1;
                fast_deltas += usize::from(read);
            }
        }
        decoders_agree(&payloads).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Only citations go through serde among the deltas (14 of 652 in the fixtures); among all
    // events, the starts of messages and blocks and the message deltas too.
    assert!(
        fast_deltas * 100 >= deltas * 95,
        "{fast_deltas} of {deltas} deltas read fast"
    );
    assert!(
        fast * 100 >= total * 80,
        "{fast} of {total} events read fast"
    );
}

// --- Generated events: the hot shapes, varied, and their near misses. ---

/// The generators' JSON: noisy, with the keys of an event.
const JSON: Json = Json {
    noisy: true,
    keys: &[
        "type",
        "index",
        "delta",
        "text",
        "partial_json",
        "citation",
        "usage",
        "t\\u0079pe",
    ],
};

/// Members from the known ones (each there or not) and up to `unknown` unknown ones.
fn members(
    known: Vec<(&'static str, BoxedStrategy<String>)>,
    unknown: usize,
) -> impl Strategy<Value = Vec<(String, String)>> {
    JSON.members(each_present(0.6, known), unknown)
}

/// A block index: mostly a small one (so that generated deltas reach the blocks a decoder
/// opened), sometimes any number or value.
fn index() -> BoxedStrategy<String> {
    prop_oneof![
        8 => select(vec!["0", "1", "2"]).prop_map(str::to_owned),
        2 => number_token(),
        1 => Just("null".to_owned()),
        1 => JSON.any_value(),
    ]
    .boxed()
}

/// The delta kinds and the field each carries.
const DELTA_KINDS: [(&str, &str); 4] = [
    ("text_delta", "text"),
    ("input_json_delta", "partial_json"),
    ("thinking_delta", "thinking"),
    ("signature_delta", "signature"),
];

fn delta_kind() -> BoxedStrategy<String> {
    prop_oneof![
        6 => select(DELTA_KINDS.map(|(kind, _)| kind).to_vec()).prop_map(|k| format!("\"{k}\"")),
        1 => select(vec!["\"citations_delta\"", "\"\"", "\"text\""]).prop_map(str::to_owned),
        1 => JSON.optional_string(),
    ]
    .boxed()
}

fn delta() -> BoxedStrategy<String> {
    object(members(
        vec![
            ("type", delta_kind()),
            ("text", JSON.optional_string()),
            ("partial_json", JSON.optional_string()),
            ("thinking", JSON.optional_string()),
            ("signature", JSON.optional_string()),
            (
                "citation",
                JSON.rare(r#"{"type":"web_search_result_location","url":"u"}"#),
            ),
            ("stop_reason", JSON.optional_string()),
            ("stop_sequence", JSON.optional_string()),
            ("stop_details", JSON.rare(r#"{"type":"refusal"}"#)),
            ("container", JSON.rare(r#"{"id":"c"}"#)),
        ],
        1,
    ))
}

fn event_kind() -> BoxedStrategy<String> {
    prop_oneof![
        6 => select(vec![
            "content_block_delta",
            "content_block_stop",
            "message_stop",
            "ping",
            "message_delta",
            "error",
            "unknown_event",
        ])
        .prop_map(|k| format!("\"{k}\"")),
        1 => JSON.optional_string(),
    ]
    .boxed()
}

/// An event written key by key, in any order and layout.
fn event() -> BoxedStrategy<String> {
    let delta_value = prop_oneof![
        8 => delta(),
        1 => Just("null".to_owned()),
        1 => JSON.any_value(),
    ];
    object(members(
        vec![
            ("type", event_kind()),
            ("index", index()),
            ("delta", delta_value.boxed()),
            ("message", JSON.rare(r#"{"id":"m2","content":[]}"#)),
            ("content_block", JSON.rare(r#"{"type":"text","text":"t"}"#)),
            ("usage", JSON.rare(r#"{"output_tokens":2}"#)),
            (
                "error",
                JSON.rare(r#"{"type":"api_error","message":"boom"}"#),
            ),
        ],
        2,
    ))
}

/// An event in the compact layout the API sends, its values varied: mostly what the compact
/// reader reads, sometimes a mismatched delta kind and field or an odd index.
fn compact_event() -> BoxedStrategy<String> {
    let field = prop_oneof![
        6 => select(DELTA_KINDS.map(|(_, field)| field).to_vec()),
        1 => select(vec!["citation", "stop_reason", "x"]),
    ];
    let delta = (index(), delta_kind(), field, JSON.optional_string()).prop_map(
        |(index, kind, field, value)| {
            format!(
                r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":{kind},"{field}":{value}}}}}"#
            )
        },
    );
    // The kind and its own field, as the API pairs them.
    let paired = (index(), select(DELTA_KINDS.to_vec()), JSON.string_token()).prop_map(
        |(index, (kind, field), value)| {
            format!(
                r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":"{kind}","{field}":{value}}}}}"#
            )
        },
    );
    let stop =
        index().prop_map(|index| format!(r#"{{"type":"content_block_stop","index":{index}}}"#));
    prop_oneof![
        4 => paired,
        2 => delta,
        2 => stop,
        1 => Just(r#"{"type":"message_stop"}"#.to_owned()),
        1 => Just(r#"{"type":"ping"}"#.to_owned()),
    ]
    .boxed()
}

/// An event, sometimes damaged: cut short, a character dropped, or one inserted.
fn payload() -> impl Strategy<Value = String> {
    damaged(prop_oneof![event(), compact_event()], 0.2)
}

/// The events around the deltas, so that the generated ones reach open blocks of each kind.
fn frame_event() -> BoxedStrategy<String> {
    select(vec![
        r#"{"type":"message_start","message":{"id":"m1","model":"claude","content":[],"usage":{"input_tokens":3,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}"#,
        "[DONE]",
    ])
    .prop_map(str::to_owned)
    .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// What the fast path reads, serde reads the same.
    #[test]
    fn fast_path_reads_what_serde_reads(data in payload()) {
        agrees_with_serde(&data).map_err(TestCaseError::fail)?;
    }

    /// A decoder yields the same parts and errors with the fast path as without it.
    #[test]
    fn decoder_output_does_not_depend_on_the_path(
        payloads in prop::collection::vec(
            prop_oneof![3 => frame_event(), 8 => payload()],
            1..12,
        )
    ) {
        decoders_agree(&payloads)?;
    }
}
