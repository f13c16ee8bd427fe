//! The thread: supplied histories repaired before the first request, `repair_orphans` itself,
//! and what the loop records of the model's calls.

use crate::common::*;
use proptest::prelude::*;
use serde_json::json;
use toolsmith_agent::repair_orphans;
use toolsmith_core::{
    Message, ModelOutput, Part, ProviderMetadata, Role, ToolCallPart, ToolResultPart,
    UnifiedFinishReason,
};
use toolsmith_providers::{ScriptedCall, Turn};

const INTERRUPTED: &str =
    "Tool call was interrupted before it produced a result; it may not have run.";

fn call(id: &str) -> Part {
    Part::ToolCall(ToolCallPart {
        tool_call_id: id.into(),
        tool_name: "lookup".into(),
        input: json!({}),
        provider_executed: false,
        provider_metadata: Default::default(),
    })
}

fn server_call(id: &str) -> Part {
    Part::ToolCall(ToolCallPart {
        provider_executed: true,
        ..match call(id) {
            Part::ToolCall(c) => c,
            _ => unreachable!(),
        }
    })
}

fn answer(id: &str, value: &str) -> ToolResultPart {
    ToolResultPart {
        tool_call_id: id.into(),
        tool_name: "lookup".into(),
        output: ModelOutput::text(value),
        provider_executed: false,
        provider_metadata: Default::default(),
    }
}

fn assistant(parts: Vec<Part>) -> Message {
    Message::new(Role::Assistant, parts)
}

fn tool(results: &[(&str, &str)]) -> Message {
    Message::tool_results(results.iter().map(|(id, v)| answer(id, v)).collect())
}

#[tokio::test]
async fn an_orphan_call_in_a_supplied_history_is_answered_before_the_first_request() {
    let model = recording([Turn::text("sorry about that")]);
    let agent = builder(&model).instructions("Be kind.").build();
    let history = vec![
        Message::user("look it up"),
        assistant(vec![Part::text("Looking."), call("c1")]),
        Message::user("are you there?"),
    ];

    let out = agent.run(history).await.unwrap();

    let first = &model.requests()[0];
    assert_eq!(first.messages[0], Message::system("Be kind."));
    assert_eq!(
        first.messages[1..],
        [
            Message::user("look it up"),
            assistant(vec![Part::text("Looking."), call("c1")]),
            Message::tool_results(vec![ToolResultPart {
                output: ModelOutput::error_text(INTERRUPTED),
                ..answer("c1", "")
            }]),
            Message::user("are you there?"),
        ]
    );
    assert_eq!(out.input_len, 4);
    assert_eq!(
        plain(out.response_messages()),
        [Message::assistant("sorry about that")]
    );
    assert_thread_valid(&out.messages, &[]);
}

#[tokio::test]
async fn duplicated_and_unknown_results_in_a_supplied_history_are_dropped() {
    let model = recording([Turn::text("ok")]);
    let agent = builder(&model).build();
    let history = vec![
        Message::user("go"),
        assistant(vec![call("c1"), call("c2")]),
        tool(&[("c2", "two"), ("ghost", "boo"), ("c1", "one")]),
        tool(&[("c1", "one again")]),
        Message::user("and?"),
    ];

    agent.run(history).await.unwrap();

    let first = &model.requests()[0];
    assert_eq!(
        first.messages,
        [
            Message::user("go"),
            assistant(vec![call("c1"), call("c2")]),
            tool(&[("c1", "one"), ("c2", "two")]),
            Message::user("and?"),
        ]
    );
}

#[test]
fn repair_answers_orphans_in_call_order_and_counts_them() {
    let mut thread = vec![
        Message::user("q"),
        assistant(vec![call("a"), call("b"), call("c")]),
        tool(&[("b", "B")]),
    ];

    assert_eq!(repair_orphans(&mut thread, &[]), 2);

    assert_eq!(thread.len(), 3);
    assert_eq!(
        results(&thread),
        [
            ("a".to_string(), error_text(INTERRUPTED)),
            ("b".to_string(), text("B")),
            ("c".to_string(), error_text(INTERRUPTED)),
        ]
    );
}

#[test]
fn repair_keeps_the_first_of_duplicate_results_whatever_else_is_there() {
    // The first copy wins with or without another call's result in front of it.
    for mut thread in [
        vec![
            assistant(vec![call("a"), call("b")]),
            tool(&[("a", "A"), ("b", "first"), ("b", "second")]),
        ],
        vec![
            assistant(vec![call("a"), call("b")]),
            tool(&[("b", "first"), ("b", "second"), ("a", "A")]),
        ],
    ] {
        assert_eq!(repair_orphans(&mut thread, &[]), 0);
        assert_eq!(
            results(&thread),
            [
                ("a".to_string(), text("A")),
                ("b".to_string(), text("first")),
            ]
        );
    }
}

#[test]
fn repair_leaves_pending_calls_unanswered() {
    let mut thread = vec![
        Message::user("q"),
        assistant(vec![call("client"), call("local")]),
        tool(&[("local", "L")]),
    ];

    assert_eq!(repair_orphans(&mut thread, &["client"]), 0);
    assert_eq!(results(&thread), [("local".to_string(), text("L"))]);

    let mut only_pending = vec![Message::user("q"), assistant(vec![call("client")])];
    assert_eq!(repair_orphans(&mut only_pending, &["client"]), 0);
    assert_eq!(only_pending.len(), 2);
}

#[test]
fn repair_drops_tool_messages_that_answer_nothing() {
    let mut thread = vec![
        tool(&[("x", "stray")]),
        Message::user("q"),
        tool(&[("y", "stray")]),
        assistant(vec![Part::text("no calls")]),
        tool(&[("z", "stray")]),
        Message::user("again"),
    ];

    assert_eq!(repair_orphans(&mut thread, &[]), 0);

    assert_eq!(
        thread,
        [
            Message::user("q"),
            Message::assistant("no calls"),
            Message::user("again"),
        ]
    );
}

#[test]
fn repair_ignores_provider_executed_calls_and_merges_tool_messages() {
    let mut thread = vec![
        assistant(vec![server_call("s1"), call("a"), call("b")]),
        tool(&[("b", "B")]),
        tool(&[("a", "A")]),
    ];

    assert_eq!(repair_orphans(&mut thread, &[]), 0);

    assert_eq!(thread.len(), 2);
    assert_eq!(thread[1], tool(&[("a", "A"), ("b", "B")]));
}

#[test]
fn a_result_after_a_later_message_answers_nothing() {
    let mut thread = vec![
        assistant(vec![call("a")]),
        Message::user("hello?"),
        tool(&[("a", "late")]),
    ];

    assert_eq!(repair_orphans(&mut thread, &[]), 1);

    assert_eq!(thread.len(), 3);
    assert_eq!(
        results(&thread),
        [("a".to_string(), error_text(INTERRUPTED))]
    );
    assert_eq!(thread[2], Message::user("hello?"));
}

/// One generated message: a user turn, an assistant turn with some calls (numbered in thread
/// order), or a tool message answering call numbers (some of which never exist).
#[derive(Debug, Clone)]
enum Spec {
    User,
    Assistant { calls: usize, server: bool },
    Tool(Vec<usize>),
}

fn spec() -> impl Strategy<Value = Spec> {
    prop_oneof![
        Just(Spec::User),
        (0..4usize, any::<bool>()).prop_map(|(calls, server)| Spec::Assistant { calls, server }),
        prop::collection::vec(0..6usize, 0..6).prop_map(Spec::Tool),
    ]
}

fn build(specs: &[Spec]) -> Vec<Message> {
    let mut next = 0;
    let mut thread = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        thread.push(match spec {
            Spec::User => Message::user(format!("u{i}")),
            Spec::Assistant { calls, server } => {
                let mut parts: Vec<Part> = (0..*calls)
                    .map(|_| {
                        next += 1;
                        call(&format!("c{}", next - 1))
                    })
                    .collect();
                if *server {
                    parts.push(server_call(&format!("s{i}")));
                }
                assistant(parts)
            }
            Spec::Tool(ids) => Message::tool_results(
                ids.iter()
                    .enumerate()
                    .map(|(k, id)| answer(&format!("c{id}"), &format!("m{i}.{k}")))
                    .collect(),
            ),
        });
    }
    thread
}

/// What a call's result must be after repair: the first result for it in the tool messages
/// directly after its assistant message, else the interrupted error.
fn expected_results(thread: &[Message]) -> Vec<(String, ModelOutput)> {
    let mut expected = Vec::new();
    for (i, message) in thread.iter().enumerate() {
        if message.role != Role::Assistant {
            continue;
        }
        let block: Vec<&ToolResultPart> = thread[i + 1..]
            .iter()
            .take_while(|m| m.role == Role::Tool)
            .flat_map(|m| m.tool_results_iter())
            .collect();
        for c in message.tool_calls().filter(|c| !c.provider_executed) {
            let output = block
                .iter()
                .find(|r| r.tool_call_id == c.tool_call_id)
                .map_or_else(|| error_text(INTERRUPTED), |r| r.output.clone());
            expected.push((c.tool_call_id.clone(), output));
        }
    }
    expected
}

proptest! {
    #[test]
    fn repaired_threads_are_valid_keep_first_results_and_are_stable(
        specs in prop::collection::vec(spec(), 0..10)
    ) {
        let original = build(&specs);
        let mut thread = original.clone();

        let repaired = repair_orphans(&mut thread, &[]);

        assert_thread_valid(&thread, &[]);
        prop_assert_eq!(results(&thread), expected_results(&original));
        let synthesised = results(&thread)
            .iter()
            .filter(|(_, o)| *o == error_text(INTERRUPTED))
            .count();
        prop_assert_eq!(repaired, synthesised);
        // Every non-tool message survives, in order.
        let others = |t: &[Message]| -> Vec<Message> {
            t.iter().filter(|m| m.role != Role::Tool).cloned().collect()
        };
        prop_assert_eq!(others(&thread), others(&original));
        // A repaired thread needs no more repair.
        let mut again = thread.clone();
        prop_assert_eq!(repair_orphans(&mut again, &[]), 0);
        prop_assert_eq!(again, thread);
    }
}

#[tokio::test]
async fn provider_metadata_of_a_call_is_echoed_back_verbatim() {
    let mut metadata = ProviderMetadata::default();
    metadata.insert("google", json!({"thoughtSignature": "sig-1", "n": [1, 2]}));
    let call = ScriptedCall {
        provider_metadata: metadata.clone(),
        ..ScriptedCall::new("lookup", json!({})).with_id("c1")
    };
    let model = recording([Turn::tool_calls([call]), Turn::text("done")]);
    let agent = builder(&model)
        .tool(ok_tool("lookup", Counter::default()))
        .build();

    agent.run("hi").await.unwrap();

    let requests = model.requests();
    let assistant = &requests[1].messages[1];
    assert_eq!(assistant.role, Role::Assistant);
    let echoed: Vec<&ProviderMetadata> = assistant
        .content
        .iter()
        .filter_map(|p| match p {
            Part::ToolCall(c) => Some(&c.provider_metadata),
            _ => None,
        })
        .collect();
    assert_eq!(echoed, [&metadata]);
}

#[tokio::test]
async fn provider_executed_calls_are_recorded_but_never_run_locally() {
    let runs = Counter::default();
    let server_call = ScriptedCall {
        provider_executed: true,
        ..ScriptedCall::new("web_search", json!({"q": "rust"})).with_id("s1")
    };
    let model = recording([
        Turn {
            tool_calls: vec![server_call],
            ..Turn::text("Searched.")
        }
        .with_finish(UnifiedFinishReason::Stop),
        Turn::text("never"),
    ]);
    let agent = builder(&model)
        .tool(ok_tool("web_search", runs.clone()))
        .build();

    let out = agent.run("hi").await.unwrap();

    // No local call: the step ends the run.
    assert_eq!((runs.get(), model.call_count()), (0, 1));
    assert_eq!(out.steps[0].tool_calls.len(), 1);
    assert!(out.steps[0].tool_calls[0].provider_executed);
    assert!(out.steps[0].tool_results.is_empty());
    assert_eq!(out.text, "Searched.");
    assert_thread_valid(&out.messages, &[]);
}
