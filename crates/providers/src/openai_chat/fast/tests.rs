//! The fast path against serde: on generated chunks in and around the hot shapes, the fast path
//! declines or reads exactly the chunk serde reads, and a decoder yields the same parts and
//! errors with it as without it. On the real fixtures, it reads nearly every chunk.

use std::path::PathBuf;

use proptest::prelude::*;
use proptest::sample::select;

use super::*;
use crate::fast_tests::{self, Json, damaged, each_present, number_token, object};
use crate::openai_chat::stream::ChatStreamDecoder;
use crate::openai_chat::wire::Chunk;

/// The hot chunk as the [`Chunk`] serde would build.
fn as_chunk(hot: HotChunk<'_>) -> Chunk<'_> {
    Chunk {
        id: hot.id,
        model: hot.model,
        choices: hot.choice.into_iter().collect(),
        usage: hot.usage,
        error: None,
    }
}

/// Fails when the fast path reads `data` and serde rejects it or reads something else.
/// Returns whether the fast path read it.
fn agrees_with_serde(data: &str) -> Result<bool, String> {
    fast_tests::agrees_with_serde(data, |data| {
        let mut hot = HotChunk::default();
        read_hot_chunk(data, &mut hot, &mut Head::default())?;
        Some(as_chunk(hot))
    })
}

/// Runs `payloads` through a decoder with the fast path and one without (see
/// [`fast_tests::decoders_agree`]).
fn decoders_agree(payloads: &[String]) -> Result<(), TestCaseError> {
    let new = || ChatStreamDecoder::with_id_prefix("p");
    fast_tests::decoders_agree(new(), new(), ChatStreamDecoder::push_with, payloads)
}

#[test]
fn reads_the_hot_shapes() {
    let hot = [
        r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","service_tier":"default","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"Qu"}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"The"},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"id":"c","choices":[{"index":0,"delta":{"reasoning":"a\nb \u00e9"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":null}"#,
        r#"{"choices":[{"delta":{"content":"x","tool_calls":[],"annotations":null}}]}"#,
        r#" { "choices" : [ { "index" : 0 , "delta" : { "content" : "x" } } ] } "#,
        // Tool-call deltas, OpenAI's way (the call's start, then its arguments in pieces) and
        // whole in one chunk.
        r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\": 1}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}},{"index":1,"id":null,"function":null},{}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":null,"function":{"name":null,"arguments":null}}]}}]}"#,
        // The closing usage chunk, with and without its details.
        r#"{"id":"c","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":15,"total_tokens":135,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"accepted_prediction_tokens":0}}}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1}}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":null,"prompt_tokens_details":null,"completion_tokens_details":{}}}"#,
        r#"{"choices":[],"usage":{}}"#,
        // Unknown members of any shape are skipped.
        r#"{"x":{"a":[1,{"b":null}]},"choices":[{"logprobs":{"content":[{"token":"x","logprob":-0.1,"bytes":[120]}]},"delta":{"content":"x"}}]}"#,
    ];
    for data in hot {
        assert_eq!(agrees_with_serde(data), Ok(true), "{data}");
    }
}

#[test]
fn declines_the_rest() {
    let cold = [
        // Shapes that go through serde.
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":{"x":1}}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":-1,"function":{"arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"function_call":{"name":"f","arguments":"{}"}}}]}"#,
        r#"{"choices":[{"delta":{"annotations":[{"type":"url_citation"}]}}]}"#,
        r#"{"error":{"message":"boom"}}"#,
        r#"{"choices":[{"message":{"content":"x"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{}},{"index":1,"delta":{}}]}"#,
        // What serde rejects.
        r#"{"choices":null}"#,
        r#"{"id":"a","id":"b","choices":[]}"#,
        r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
        r#"{"choices":[{"index":-1}]}"#,
        r#"{"choices":[{"index":1.0}]}"#,
        r#"{"choices":[{"delta":{"content":1}}]}"#,
        r#"{"choices":[{"delta":{"content":"\ud83d"}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","id":"b"}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":9223372036854775808}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":1}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":{}}}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":2}}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":-1}}"#,
        r#"{"choices":[],"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":1}}}"#,
        r#"{"choices":[],"usage":{"completion_tokens_details":{"reasoning_tokens":1.5}}}"#,
        r#"{"choices":[{"delta":{"content":"x"}}]"#,
        r#"{"choices":[{"delta":{"content":"x"}}]},"#,
        r#"{"choices":[],}"#,
        r#"[]"#,
        // Valid, but declined: an escaped key, a delta written as a sequence.
        r#"{"choices":[{"delta":{"cont\u0065nt":"x"}}]}"#,
        r#"{"choices":[{"delta":["x"]}]}"#,
    ];
    for data in cold {
        assert_eq!(agrees_with_serde(data), Ok(false), "{data}");
    }
}

/// Every payload of the recorded Chat Completions streams (`openai-compatible-local` is LM
/// Studio speaking Responses, another decoder), `[DONE]` included.
fn fixture_payloads() -> Vec<(String, Vec<String>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut streams = Vec::new();
    for entry in std::fs::read_dir(dir.join("openai-chat")).expect("the fixtures") {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut payloads: Vec<String> = if name.ends_with(".chunks.txt") {
            text.lines().map(str::to_owned).collect()
        } else if name.ends_with(".sse") {
            let data = text.lines().filter_map(|l| l.strip_prefix("data:"));
            data.map(|d| d.trim().to_owned()).collect()
        } else {
            continue;
        };
        payloads.retain(|p| !p.trim().is_empty());
        if !payloads.iter().any(|p| p == "[DONE]") {
            payloads.push("[DONE]".into());
        }
        streams.push((name, payloads));
    }
    assert!(streams.len() >= 5, "the fixtures are missing");
    streams
}

#[test]
fn fixtures_decode_the_same_and_mostly_fast() {
    let (mut total, mut fast) = (0, 0);
    for (name, payloads) in fixture_payloads() {
        for payload in &payloads {
            if payload != "[DONE]" {
                total += 1;
                fast += usize::from(
                    agrees_with_serde(payload).unwrap_or_else(|e| panic!("{name}: {e}")),
                );
            }
        }
        decoders_agree(&payloads).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Only groq's `x_groq` extension and what the cursor declines go through serde.
    assert!(
        fast * 100 >= total * 90,
        "{fast} of {total} chunks read fast"
    );
}

// --- Generated chunks: the hot shapes, varied, and their near misses. ---

/// The generators' JSON: noisy, with the keys of a chunk.
const JSON: Json = Json {
    noisy: true,
    keys: &[
        "content",
        "index",
        "delta",
        "id",
        "choices",
        "x_groq",
        "arguments",
        "prompt_tokens",
        "cached_tokens",
        "c\\u006fntent",
    ],
};

/// Members from the known ones (each there or not) and up to `unknown` unknown ones.
fn members(
    known: Vec<(&'static str, BoxedStrategy<String>)>,
    unknown: usize,
) -> impl Strategy<Value = Vec<(String, String)>> {
    JSON.members(each_present(0.6, known), unknown)
}

/// A `usage` value: `null`, the shapes servers send, and near misses.
fn usage() -> BoxedStrategy<String> {
    let count = || {
        prop_oneof![
            4 => select(vec!["0", "3", "120", "null"]).prop_map(str::to_owned),
            1 => number_token(),
            1 => JSON.any_value(),
        ]
        .boxed()
    };
    let details = |key: &'static str| {
        let details = object(members(vec![(key, count()), ("audio_tokens", count())], 1));
        prop_oneof![4 => details, 1 => Just("null".to_owned()), 1 => JSON.any_value()].boxed()
    };
    let usage = object(members(
        vec![
            ("prompt_tokens", count()),
            ("completion_tokens", count()),
            ("total_tokens", count()),
            ("prompt_tokens_details", details("cached_tokens")),
            ("completion_tokens_details", details("reasoning_tokens")),
        ],
        1,
    ));
    prop_oneof![6 => Just("null".to_owned()), 3 => usage, 1 => JSON.any_value()].boxed()
}

/// A `tool_calls` value: `null`, lists of call deltas as servers send them, and near misses.
fn tool_calls() -> BoxedStrategy<String> {
    let arguments = prop_oneof![
        6 => JSON.string_token(),
        1 => Just("null".to_owned()),
        1 => JSON.any_value(),
    ];
    let function = object(members(
        vec![
            ("name", JSON.optional_string()),
            ("arguments", arguments.boxed()),
        ],
        1,
    ));
    let function = prop_oneof![6 => function, 1 => Just("null".to_owned()), 1 => JSON.any_value()];
    let index = prop_oneof![
        6 => select(vec!["0", "1", "null"]).prop_map(str::to_owned),
        1 => number_token(),
        1 => JSON.any_value(),
    ];
    let call = object(members(
        vec![
            ("index", index.boxed()),
            ("id", JSON.optional_string()),
            ("type", Just("\"function\"".to_owned()).boxed()),
            ("function", function.boxed()),
        ],
        1,
    ));
    let list = prop::collection::vec(call, 0..3).prop_map(|calls| format!("[{}]", calls.join(",")));
    prop_oneof![
        3 => Just("null".to_owned()),
        4 => list,
        1 => JSON.any_value(),
    ]
    .boxed()
}

fn delta() -> BoxedStrategy<String> {
    let list = || {
        prop_oneof![
            3 => Just("null".to_owned()),
            2 => Just("[]".to_owned()),
            1 => Just(r#"[{"type":"url_citation"}]"#.to_owned()),
            1 => JSON.any_value(),
        ]
        .boxed()
    };
    object(members(
        vec![
            ("content", JSON.optional_string()),
            ("reasoning_content", JSON.optional_string()),
            ("reasoning", JSON.optional_string()),
            ("role", JSON.optional_string()),
            ("refusal", JSON.optional_string()),
            ("tool_calls", tool_calls()),
            ("annotations", list()),
        ],
        1,
    ))
}

fn choice() -> BoxedStrategy<String> {
    let index = prop_oneof![
        6 => select(vec!["0", "1", "null"]).prop_map(str::to_owned),
        1 => number_token(),
        1 => JSON.any_value(),
    ];
    let delta_value = prop_oneof![
        8 => delta(),
        1 => Just("null".to_owned()),
        1 => JSON.any_value(),
    ];
    let finish = prop_oneof![
        4 => Just("null".to_owned()),
        2 => select(vec!["\"stop\"", "\"length\"", "\"\"", "\"tool_calls\""]).prop_map(str::to_owned),
        1 => JSON.optional_string(),
    ];
    let message = prop_oneof![
        4 => Just("null".to_owned()),
        1 => delta(),
    ];
    object(members(
        vec![
            ("index", index.boxed()),
            ("delta", delta_value.boxed()),
            (
                "logprobs",
                prop_oneof![Just("null".to_owned()), JSON.any_value()].boxed(),
            ),
            ("finish_reason", finish.boxed()),
            ("message", message.boxed()),
        ],
        1,
    ))
}

fn chunk() -> BoxedStrategy<String> {
    let choices = prop_oneof![
        8 => prop::collection::vec(choice(), 1..=1),
        2 => prop::collection::vec(choice(), 0..=2),
    ]
    .prop_map(|choices| format!("[{}]", choices.join(",")));
    let choices = prop_oneof![8 => choices, 1 => Just("null".to_owned()), 1 => JSON.any_value()];
    object(members(
        vec![
            ("id", JSON.optional_string()),
            (
                "object",
                Just("\"chat.completion.chunk\"".to_owned()).boxed(),
            ),
            ("created", number_token()),
            ("model", JSON.optional_string()),
            ("system_fingerprint", JSON.optional_string()),
            ("choices", choices.boxed()),
            ("usage", usage()),
            (
                "error",
                JSON.rare(r#"{"message":"boom","type":"server_error"}"#),
            ),
        ],
        2,
    ))
}

/// A chunk, sometimes damaged: cut short, a character dropped, or one inserted.
fn payload() -> impl Strategy<Value = String> {
    damaged(chunk(), 0.15)
}

/// `payloads` with the start of the first (through `"choices":`) in place of every other
/// one's, where both have one.
fn with_one_start(payloads: &[String]) -> Vec<String> {
    const KEY: &str = "\"choices\":";
    let start = |p: &str| p.find(KEY).map(|at| at + KEY.len());
    let Some(first) = start(&payloads[0]) else {
        return payloads.to_vec();
    };
    let head = &payloads[0][..first];
    payloads
        .iter()
        .map(|p| match start(p) {
            Some(at) => format!("{head}{}", &p[at..]),
            None => p.clone(),
        })
        .collect()
}

#[test]
fn a_chunk_that_repeats_the_last_start_is_read_from_its_choices() {
    let start = r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":"#;
    let mut head = Head::default();
    let mut first = HotChunk::default();
    let data = format!(r#"{start}[{{"index":0,"delta":{{"content":"a"}}}}],"usage":null}}"#);
    read_hot_chunk(&data, &mut first, &mut head).expect("read");
    assert_eq!(first.id.as_ref().map(Str::as_str), Some("c"));
    assert_eq!(head.text, start);

    // Resumed after the start: the id and model are not read again (the decoder has them).
    let data = format!(r#"{start}[{{"index":0,"delta":{{"content":"b"}}}}]}}"#);
    let mut second = HotChunk::default();
    read_hot_chunk(&data, &mut second, &mut head).expect("read");
    assert_eq!((second.id, second.model), (None, None));
    let delta = second.choice.and_then(|c| c.delta).expect("a delta");
    assert_eq!(delta.content.as_ref().map(Str::as_str), Some("b"));

    // What the start saw still counts: a second `id` after it is a repeated key, declined
    // (serde rejects it), and so is a damaged rest.
    for rest in [r#"[],"id":"d"}"#, r#"[]"#, r#"[],}"#, r#"[] x"#] {
        let data = format!("{start}{rest}");
        let mut chunk = HotChunk::default();
        assert!(
            read_hot_chunk(&data, &mut chunk, &mut head).is_none(),
            "{data}"
        );
        assert!(serde_json::from_str::<Chunk<'_>>(&data).is_err(), "{data}");
    }
    assert_eq!(head.text, start);

    // Another start is read whole, and becomes the one to repeat.
    let other = r#"{"id":"c","created":2,"choices":"#;
    let data = format!("{other}[]}}");
    let mut chunk = HotChunk::default();
    read_hot_chunk(&data, &mut chunk, &mut head).expect("read");
    assert_eq!(chunk.id.as_ref().map(Str::as_str), Some("c"));
    assert_eq!(head.text, other);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// What the fast path reads, serde reads the same.
    #[test]
    fn fast_path_reads_what_serde_reads(data in payload()) {
        agrees_with_serde(&data).map_err(TestCaseError::fail)?;
    }

    /// The same when the chunks repeat one start (as a real stream's do) before tails that
    /// vary, damaged ones included: what is resumed after a known start is read as a whole
    /// chunk is.
    #[test]
    fn decoder_output_does_not_depend_on_a_repeated_start(
        payloads in prop::collection::vec(payload(), 2..8)
    ) {
        decoders_agree(&with_one_start(&payloads))?;
    }

    /// A decoder yields the same parts and errors with the fast path as without it.
    #[test]
    fn decoder_output_does_not_depend_on_the_path(
        payloads in prop::collection::vec(
            prop_oneof![12 => payload(), 1 => Just("[DONE]".to_owned())],
            1..8,
        )
    ) {
        decoders_agree(&payloads)?;
    }
}
