//! The fast path against serde: on generated events in and around the hot shapes, the fast path
//! declines or reads exactly the event serde reads, and a decoder yields the same parts and
//! errors with it as without it. On the real fixtures, it reads nearly every delta.

use proptest::prelude::*;
use proptest::sample::select;

use super::*;
use crate::fast_tests::{self, Json, Known, damaged, number_token, object};
use crate::openai_responses::stream::ResponsesStreamDecoder;

/// Fails when the fast path reads `data` and serde rejects it or reads something else.
/// Returns whether the fast path read it.
fn agrees_with_serde(data: &str) -> Result<bool, String> {
    fast_tests::agrees_with_serde(data, |data| {
        let mut fast = Event::default();
        read_event(data, &mut fast)?;
        Some(fast)
    })
}

/// Runs `payloads` through a decoder with the fast path and one without (see
/// [`fast_tests::decoders_agree`]).
fn decoders_agree(payloads: &[String]) -> Result<(), TestCaseError> {
    let new = || ResponsesStreamDecoder::with_id_prefix("p");
    fast_tests::decoders_agree(new(), new(), ResponsesStreamDecoder::push_with, payloads)
}

#[test]
fn reads_the_hot_shapes() {
    let hot = [
        r#"{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"The","logprobs":[],"obfuscation":"o6siFnnjPfOpq"}"#,
        r#"{"type":"response.reasoning_text.delta","item_id":"rs_1","output_index":0,"content_index":0,"delta":"a\nb \u00e9","sequence_number":4}"#,
        r#"{"type":"response.reasoning_summary_text.delta","sequence_number":4,"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"**Calcul","obfuscation":"2ajSAGID"}"#,
        r#"{"type":"response.function_call_arguments.delta","sequence_number":40,"item_id":"fc_1","output_index":1,"delta":"{\"","obfuscation":"hKtg6o5cWUSdCa"}"#,
        r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":1,"arguments":"{\"a\":1}"}"#,
        r#"{"type":"response.custom_tool_call_input.done","output_index":1,"input":"x","item":null}"#,
        // Types the decoder ignores are read too: it does nothing with them either way.
        r#"{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}"#,
        r#"{"type":"response.web_search_call.searching","output_index":1,"item_id":"ws_1","sequence_number":9}"#,
        r#"{"output_index":null,"item_id":null,"delta":null,"response":null,"error":null,"code":null,"message":null,"annotation":null}"#,
        r#"{}"#,
        r#" { "type" : "response.output_text.delta" , "delta" : "x" } "#,
        // The response object of the lifecycle events: what the decoder uses read, the rest
        // (the request echoed, the output again) skipped.
        r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1765552659,"status":"in_progress","error":null,"incomplete_details":null,"model":"gpt-5","output":[],"reasoning":{"effort":"high"},"temperature":1,"top_p":0.985,"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"usage":null,"metadata":{}}}"#,
        r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"Hi \"there\""}]}],"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":1,"x":-1.5e3}}}"#,
        r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":1,"input_tokens":2}}}"#,
        r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#,
        r#"{"type":"response.created","response":{"id":"r\u0031","model":null}}"#,
        // Unknown members of any shape are skipped.
        r#"{"x":{"a":[1,{"b":null}]},"type":"response.output_text.delta","logprobs":[{"token":"x","logprob":-0.1,"bytes":[120]}],"delta":"x"}"#,
    ];
    for data in hot {
        assert_eq!(agrees_with_serde(data), Ok(true), "{data}");
    }
}

#[test]
fn declines_the_rest() {
    let cold = [
        // Shapes that go through serde: an object-valued field that is not null.
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1"}}"#,
        r#"{"type":"response.output_text.annotation.added","annotation":{"type":"url_citation","url":"u"}}"#,
        r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down"}"#,
        r#"{"type":"error","error":{"message":"boom"}}"#,
        r#"{"type":"error","code":null,"message":"boom"}"#,
        // What serde rejects.
        r#"{"type":null}"#,
        r#"{"type":1,"delta":"x"}"#,
        r#"{"type":"response.output_text.delta","delta":"a","delta":"b"}"#,
        r#"{"item":null,"item":null}"#,
        r#"{"response":null,"response":{}}"#,
        r#"{"response":{"id":"a","id":"b"}}"#,
        r#"{"response":{"id":5}}"#,
        r#"{"response":{"usage":{"input_tokens":1e999}}}"#,
        r#"{"response":{"usage":{"input_tokens":1}},"#,
        r#"{"output_index":-1}"#,
        r#"{"output_index":1.0}"#,
        r#"{"output_index":"1"}"#,
        r#"{"delta":1}"#,
        r#"{"delta":"\ud83d"}"#,
        r#"{"type":"response.output_text.delta","delta":"x""#,
        r#"{"delta":"x"},"#,
        r#"{"delta":"x",}"#,
        r#"[]"#,
        r#"["response.output_text.delta"]"#,
        // Valid, but declined: an escaped key, a response written as a sequence.
        r#"{"d\u0065lta":"x"}"#,
        r#"{"response":["resp_1","gpt-5"]}"#,
    ];
    for data in cold {
        assert_eq!(agrees_with_serde(data), Ok(false), "{data}");
    }
}

/// Damaged and malformed payloads end a stream with the same error (and the same closing
/// parts) whichever path saw them first.
#[test]
fn malformed_payloads_fail_the_same_way() {
    let start = [
        r#"{"type":"response.created","response":{"id":"resp_1","model":"m"}}"#,
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1"}}"#,
        r#"{"type":"response.output_text.delta","output_index":0,"item_id":"msg_1","delta":"Hi"}"#,
    ];
    let bad = [
        r#"{"type":"response.output_text.delta","output_index":0,"delta":"x""#,
        r#"{"type":"response.output_text.delta","output_index":0,"delta":"x"}}"#,
        r#"{"type":"response.output_text.delta","output_index":0,"delta":1}"#,
        r#"{"type":"response.output_text.delta","delta":"a","delta":"b"}"#,
        r#"{"type":"response.output_text.delta","delta":"\ud800"}"#,
        r#"{"type":"response.future.delta","delta":"a","delta":"b"}"#,
        r#"{"type":"response.future.delta","output_index":"x"}"#,
        r#"{"type":"response.future.delta","output_index":1e999}"#,
        r#"{"type":"response.completed","response":{"usage":{"input_tokens":1e999}}}"#,
        r#"{"type":"response.completed","response":{"status":1}}"#,
        r#"["response.output_text.delta"]"#,
        "not json",
    ];
    for data in bad {
        let payloads: Vec<String> = start
            .iter()
            .copied()
            .chain([data])
            .map(Into::into)
            .collect();
        decoders_agree(&payloads).unwrap_or_else(|e| panic!("{data}: {e}"));
    }
}

/// Every payload of the recorded Responses streams (OpenAI's, and LM Studio's).
fn fixture_payloads() -> Vec<(String, Vec<String>)> {
    let streams = fast_tests::chunks_fixtures(&["openai-responses", "openai-compatible-local"]);
    assert!(streams.len() >= 10, "the fixtures are missing");
    streams
}

#[test]
fn fixtures_decode_the_same_and_mostly_fast() {
    let (mut total, mut fast, mut deltas, mut fast_deltas) = (0, 0, 0, 0);
    for (name, payloads) in fixture_payloads() {
        for payload in &payloads {
            let read = agrees_with_serde(payload).unwrap_or_else(|e| panic!("{name}: {e}"));
            total += 1;
            fast += usize::from(read);
            if payload.contains(r#".delta""#) {
                deltas += 1;
                fast_deltas += usize::from(read);
            }
        }
        // The synthetic wrapper fixture has malformed lines: its error must be the same too.
        decoders_agree(&payloads).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Every delta is read fast; of the rest, only events with an item, an annotation or an
    // error go through serde.
    assert_eq!(
        fast_deltas, deltas,
        "{fast_deltas} of {deltas} deltas read fast"
    );
    assert!(
        fast * 100 >= total * 90,
        "{fast} of {total} events read fast"
    );
}

// --- Generated events: the hot shapes, varied, and their near misses. ---

/// The generators' JSON: noisy, with the keys of an event.
const JSON: Json = Json {
    noisy: true,
    keys: &[
        "type",
        "delta",
        "item_id",
        "output_index",
        "item",
        "error",
        "d\\u0065lta",
    ],
};

/// Members from the known ones (each there with its probability) and up to `unknown` unknown
/// ones.
fn members(known: Vec<Known>, unknown: usize) -> impl Strategy<Value = Vec<(String, String)>> {
    JSON.members(known, unknown)
}

/// An unknown member's number: usually a plain one, sometimes any.
fn sequence_number() -> BoxedStrategy<String> {
    prop_oneof![4 => (0..1000u32).prop_map(|n| n.to_string()), 1 => number_token()].boxed()
}

/// A value for an `Option<u64>` field: mostly a small index, sometimes any number or value.
fn index() -> BoxedStrategy<String> {
    prop_oneof![
        10 => select(vec!["0", "1", "2", "null"]).prop_map(str::to_owned),
        1 => number_token(),
        1 => JSON.any_value(),
    ]
    .boxed()
}

/// The event types of the fixtures and the decoder, and a few that are not.
fn event_type() -> BoxedStrategy<String> {
    let known = select(vec![
        "response.output_text.delta",
        "response.refusal.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
        "response.reasoning_summary_part.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.output_item.added",
        "response.output_item.done",
        "response.created",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "response.content_part.added",
        "response.future.delta",
        "error",
    ])
    .prop_map(|t| format!("\"{t}\""));
    prop_oneof![
        12 => known,
        1 => Just(r#""response.output_text\u002edelta""#.to_owned()),
        1 => JSON.optional_string(),
    ]
    .boxed()
}

fn event() -> BoxedStrategy<String> {
    // Item ids of the items `stream_start` opens, mostly, so deltas land on them.
    let item_id = prop_oneof![
        6 => select(vec!["\"msg_1\"", "\"rs_1\"", "\"fc_1\"", "\"ct_1\""]).prop_map(str::to_owned),
        1 => JSON.optional_string(),
    ];
    // The members of a delta are usually there; the others, rarely.
    let (usual, rare) = (0.7, 0.2);
    object(members(
        vec![
            ("type", 0.9, event_type()),
            ("sequence_number", usual, sequence_number()),
            ("item_id", usual, item_id.boxed()),
            ("output_index", usual, index()),
            ("content_index", rare, index()),
            ("summary_index", rare, index()),
            ("delta", usual, JSON.optional_string()),
            ("arguments", rare, JSON.optional_string()),
            ("input", rare, JSON.optional_string()),
            (
                "logprobs",
                rare,
                prop_oneof![3 => Just("[]".to_owned()), 1 => JSON.any_value()].boxed(),
            ),
            ("obfuscation", usual, JSON.string_token()),
            (
                "item",
                rare,
                JSON.rare(r#"{"type":"message","id":"msg_2","content":[]}"#),
            ),
            (
                "annotation",
                rare,
                JSON.rare(r#"{"type":"url_citation","url":"https://a.example","title":"A"}"#),
            ),
            (
                "response",
                rare,
                prop_oneof![4 => Just("null".to_owned()), 4 => response(), 1 => JSON.any_value()]
                    .boxed(),
            ),
            (
                "error",
                rare,
                JSON.rare(r#"{"code":"server_error","message":"boom"}"#),
            ),
            ("code", rare, JSON.rare(r#""rate_limit_exceeded""#)),
            ("message", rare, JSON.rare(r#""slow down""#)),
        ],
        2,
    ))
}

/// A `response` object: the members the decoder reads (sometimes of another type, sometimes a
/// `Value` serde cannot build), and some of what else the server sends back.
fn response() -> BoxedStrategy<String> {
    let value = || {
        prop_oneof![
            3 => Just("null".to_owned()),
            3 => select(vec![
                r#"{"input_tokens":31073,"input_tokens_details":{"cached_tokens":3712},"output_tokens":4416,"output_tokens_details":{"reasoning_tokens":3712},"total_tokens":35489}"#,
                r#"{"code":"server_error","message":"boom \"quoted\""}"#,
                r#"{"reason":"max_output_tokens"}"#,
                r#"{"a":-0.5,"b":[1.5e300,true,null],"a":2,"c":18446744073709551616}"#,
                r#"{"input_tokens":1e999}"#,
            ])
            .prop_map(str::to_owned),
            1 => JSON.any_value(),
        ]
        .boxed()
    };
    let status = prop_oneof![
        3 => select(vec!["\"in_progress\"", "\"completed\"", "\"incomplete\"", "\"failed\""])
            .prop_map(str::to_owned),
        1 => JSON.optional_string(),
    ];
    let (usual, rare) = (0.7, 0.3);
    object(members(
        vec![
            ("id", usual, JSON.optional_string()),
            ("object", rare, Just("\"response\"".to_owned()).boxed()),
            ("model", usual, JSON.optional_string()),
            ("status", usual, status.boxed()),
            ("usage", usual, value()),
            ("error", rare, value()),
            ("incomplete_details", rare, value()),
            ("output", rare, JSON.any_value()),
            ("top_p", rare, number_token()),
        ],
        2,
    ))
}

/// An event, sometimes damaged: cut short, a character dropped, or one inserted.
fn payload() -> impl Strategy<Value = String> {
    damaged(event(), 0.15)
}

/// The start of a response with one item of each kind the deltas go to, as serde reads it.
fn stream_start() -> Vec<String> {
    [
        r#"{"type":"response.created","response":{"id":"resp_1","model":"m"}}"#,
        r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1"}}"#,
        r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"reasoning","id":"rs_1"}}"#,
        r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"f"}}"#,
        r#"{"type":"response.output_item.added","output_index":3,"item":{"type":"custom_tool_call","id":"ct_1","call_id":"call_2","name":"g"}}"#,
    ]
    .map(str::to_owned)
    .to_vec()
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
        started in any::<bool>(),
        events in prop::collection::vec(payload(), 1..8),
        completed in any::<bool>(),
    ) {
        let mut payloads = if started { stream_start() } else { Vec::new() };
        payloads.extend(events);
        if completed {
            payloads.push(r#"{"type":"response.completed","response":{"status":"completed"}}"#.into());
        }
        decoders_agree(&payloads)?;
    }
}
