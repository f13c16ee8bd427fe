//! The fast path against serde: on generated events in and around the hot shapes (compact and
//! key by key), the fast path declines or reads exactly the event serde reads, and a decoder
//! yields the same parts and errors with it as without it. On the real fixtures, it reads
//! nearly every delta.

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::sample::{Index, select};

use super::*;
use crate::anthropic::stream::MessagesStreamDecoder;

/// Fails when the fast path reads `data` and serde rejects it or reads something else.
/// Returns whether the fast path read it.
fn agrees_with_serde(data: &str) -> Result<bool, String> {
    let data = data.trim();
    let mut hot = Event::default();
    if read_hot_event(data, &mut hot).is_none() {
        return Ok(false);
    }
    let serde: Event<'_> = serde_json::from_str(data)
        .map_err(|e| format!("the fast path read what serde rejects ({e}): {data}"))?;
    if hot != serde {
        return Err(format!("fast {hot:?}\n!= serde {serde:?}\nfor {data}"));
    }
    Ok(true)
}

/// What the compact reader alone makes of `data`.
fn compact(data: &str) -> &'static str {
    match read_compact(data, &mut Event::default()) {
        Compact::Read => "read",
        Compact::Cold => "cold",
        Compact::Other => "other",
    }
}

/// Runs `payloads` through a decoder reading with the fast path and one reading with serde
/// only, comparing every push's parts and result, then `finish`.
fn decoders_agree(payloads: &[String]) -> Result<(), TestCaseError> {
    let mut fast = MessagesStreamDecoder::new();
    let mut slow = MessagesStreamDecoder::new();
    let (mut fast_out, mut slow_out) = (Vec::new(), Vec::new());
    for payload in payloads {
        let fast_result = fast.push_with(payload, &mut fast_out, true);
        let slow_result = slow.push_with(payload, &mut slow_out, false);
        prop_assert_eq!(&fast_result, &slow_result, "result of {}", payload);
        prop_assert_eq!(&fast_out, &slow_out, "parts after {}", payload);
    }
    prop_assert_eq!(fast.finish(&mut fast_out), slow.finish(&mut slow_out));
    prop_assert_eq!(fast_out, slow_out);
    Ok(())
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
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/anthropic");
    let mut streams = Vec::new();
    for entry in std::fs::read_dir(dir).expect("the fixtures") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".chunks.txt") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let payloads = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_owned)
            .collect();
        streams.push((name, payloads));
    }
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

/// A JSON string token: plain text, unicode, escapes, and sometimes what is not allowed in one.
fn string_token() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        8 => "[a-zA-Z0-9 ,.!?{}:]{0,6}",
        2 => select(vec!["é", "日本", "😀", "\u{7f}", "\u{a0}"]).prop_map(str::to_owned),
        3 => select(vec![
            "\\n", "\\\"", "\\\\", "\\/", "\\t", "\\b", "\\f", "\\r", "\\u00e9", "\\u0000", "\\ud83d\\ude00",
            "\\uD83D\\uDE00",
        ])
        .prop_map(str::to_owned),
        1 => select(vec!["\\ud83d", "\\ude00", "\\x", "\\u12", "\u{1}", "\n", "\"", "\\"])
            .prop_map(str::to_owned),
    ];
    prop::collection::vec(piece, 0..4).prop_map(|pieces| format!("\"{}\"", pieces.concat()))
}

fn number_token() -> impl Strategy<Value = String> {
    select(vec![
        "0",
        "1",
        "2",
        "-0",
        "-1",
        "00",
        "01",
        "1.0",
        "1.5",
        "1e2",
        "1E+2",
        "-2.5e-3",
        "1e999",
        "1.",
        "-",
        "99",
        "100",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999999999999",
    ])
    .prop_map(str::to_owned)
}

fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => string_token(),
        2 => number_token(),
        1 => select(vec!["null", "true", "false", "nul", "True"]).prop_map(str::to_owned),
    ]
}

/// Any value, nested a few levels, with keys that are sometimes the hot ones.
fn any_value() -> impl Strategy<Value = String> {
    scalar().prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((key(), inner), 0..3).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\":{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z_]{1,8}",
        1 => select(vec![
            "type", "index", "delta", "text", "partial_json", "citation", "usage", "t\\u0079pe",
        ])
        .prop_map(str::to_owned),
    ]
}

/// A value for an `Option<Str>` field: mostly a string or null, sometimes the wrong type.
fn optional_string() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => string_token(),
        3 => Just("null".to_owned()),
        1 => any_value(),
    ]
}

/// A value for a field the fast path reads only as `null`: mostly null, sometimes not.
fn rare(other: &'static str) -> BoxedStrategy<String> {
    prop_oneof![6 => Just("null".to_owned()), 1 => Just(other.to_owned()), 1 => any_value()].boxed()
}

/// Members `(key, value)` from the optional known ones (each present or not) and a few unknown
/// ones, shuffled, sometimes with one repeated.
fn members(
    known: Vec<(&'static str, BoxedStrategy<String>)>,
    unknown: usize,
) -> impl Strategy<Value = Vec<(String, String)>> {
    let known: Vec<_> = known
        .into_iter()
        .map(|(k, v)| prop::option::weighted(0.6, v.prop_map(move |v| (k.to_owned(), v))))
        .collect();
    (
        known,
        prop::collection::vec((key(), any_value()), 0..=unknown),
        prop::option::weighted(0.08, any::<Index>()),
    )
        .prop_flat_map(|(known, unknown, repeat)| {
            let mut all: Vec<_> = known.into_iter().flatten().chain(unknown).collect();
            if let Some(at) = repeat
                && !all.is_empty()
            {
                all.push(all[at.index(all.len())].clone());
            }
            Just(all).prop_shuffle()
        })
}

/// An object of `members`, with one of JSON's whitespaces around its tokens.
fn object(
    members: impl Strategy<Value = Vec<(String, String)>> + 'static,
) -> BoxedStrategy<String> {
    (members, select(vec!["", "", " ", "\n ", "\t", "\r\n"]))
        .prop_map(|(members, ws)| {
            let members: Vec<String> = members
                .into_iter()
                .map(|(k, v)| format!("{ws}\"{k}\"{ws}:{ws}{v}{ws}"))
                .collect();
            format!("{{{}}}", members.join(","))
        })
        .boxed()
}

/// A block index: mostly a small one (so that generated deltas reach the blocks a decoder
/// opened), sometimes any number or value.
fn index() -> BoxedStrategy<String> {
    prop_oneof![
        8 => select(vec!["0", "1", "2"]).prop_map(str::to_owned),
        2 => number_token(),
        1 => Just("null".to_owned()),
        1 => any_value(),
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
        1 => optional_string(),
    ]
    .boxed()
}

fn delta() -> BoxedStrategy<String> {
    object(members(
        vec![
            ("type", delta_kind()),
            ("text", optional_string().boxed()),
            ("partial_json", optional_string().boxed()),
            ("thinking", optional_string().boxed()),
            ("signature", optional_string().boxed()),
            (
                "citation",
                rare(r#"{"type":"web_search_result_location","url":"u"}"#),
            ),
            ("stop_reason", optional_string().boxed()),
            ("stop_sequence", optional_string().boxed()),
            ("stop_details", rare(r#"{"type":"refusal"}"#)),
            ("container", rare(r#"{"id":"c"}"#)),
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
        1 => optional_string(),
    ]
    .boxed()
}

/// An event written key by key, in any order and layout.
fn event() -> BoxedStrategy<String> {
    let delta_value = prop_oneof![
        8 => delta(),
        1 => Just("null".to_owned()),
        1 => any_value(),
    ];
    object(members(
        vec![
            ("type", event_kind()),
            ("index", index()),
            ("delta", delta_value.boxed()),
            ("message", rare(r#"{"id":"m2","content":[]}"#)),
            ("content_block", rare(r#"{"type":"text","text":"t"}"#)),
            ("usage", rare(r#"{"output_tokens":2}"#)),
            ("error", rare(r#"{"type":"api_error","message":"boom"}"#)),
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
    let delta = (index(), delta_kind(), field, optional_string()).prop_map(
        |(index, kind, field, value)| {
            format!(
                r#"{{"type":"content_block_delta","index":{index},"delta":{{"type":{kind},"{field}":{value}}}}}"#
            )
        },
    );
    // The kind and its own field, as the API pairs them.
    let paired = (index(), select(DELTA_KINDS.to_vec()), string_token()).prop_map(
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
    let damage = prop::option::weighted(
        0.2,
        (
            0..3u8,
            any::<Index>(),
            select(vec![
                '{', '}', '[', ']', ',', ':', '"', '\\', ' ', '0', '1', '.',
            ]),
        ),
    );
    let event = prop_oneof![event(), compact_event()];
    (event, damage).prop_map(|(mut text, damage)| {
        if let Some((how, at, ch)) = damage {
            let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
            let at = boundaries[at.index(boundaries.len())];
            match how {
                0 => text.truncate(at),
                1 => {
                    text.remove(at);
                }
                _ => text.insert(at, ch),
            }
        }
        text
    })
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
