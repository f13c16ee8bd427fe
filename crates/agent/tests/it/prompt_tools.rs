//! Prompt tools: the Standard Agents spec's `SubpromptConfig` include flags and init property.

use crate::common::*;
use serde_json::json;
use toolsmith_agent::{PromptTool, SubpromptConfig};
use toolsmith_core::{Message, ModelOutput, ToolError, from_fn};
use toolsmith_providers::{ScriptedCall, ScriptedError, Turn};

/// What a prompt tool returns for `config`: the prompt looks a word up (one call that works,
/// one that fails), then answers.
async fn shaped(config: serde_json::Value) -> ModelOutput {
    let lookup = from_fn("lookup", "Looks a word up.", |args: Args, _cx| async move {
        match args.get("word").and_then(|w| w.as_str()) {
            Some("cat") => Ok("a small feline".to_string()),
            _ => Err(ToolError::new("NOT_FOUND", "No such word.")),
        }
    });
    let prompt_model = recording([
        Turn::tool_calls([
            ScriptedCall::new("lookup", json!({"word": "cat"})),
            ScriptedCall::new("lookup", json!({"word": "zzz"})),
        ]),
        Turn::text("A cat is a small feline."),
    ]);
    let prompt = builder(&prompt_model)
        .instructions("Define the word.")
        .tool(lookup)
        .build();
    let config: SubpromptConfig = serde_json::from_value(config).unwrap();
    let property = config
        .init_user_message_property
        .clone()
        .unwrap_or_else(|| "prompt".into());
    let parent = builder(&recording([
        Turn::tool_calls([ScriptedCall::new("define", json!({ property: "cat" })).with_id("d1")]),
        Turn::text("done"),
    ]))
    .tool(PromptTool::new("define", "Defines a word.", prompt, config))
    .build();
    let out = parent.run("What is a cat?").await.unwrap();
    // The prompt saw its instructions and the init property's value, nothing of the parent.
    assert_eq!(
        prompt_model.requests()[0].messages,
        [Message::system("Define the word."), Message::user("cat")]
    );
    result_of(&out.messages, "d1")
}

#[tokio::test]
async fn by_default_the_result_has_the_calls_the_errors_and_the_text() {
    assert_eq!(
        shaped(json!({})).await,
        ModelOutput::text(
            "Tool call lookup({\"word\":\"cat\"}) → a small feline\nTool call \
             lookup({\"word\":\"zzz\"}) → error: No such word.\n\nA cat is a small feline."
        )
    );
}

#[tokio::test]
async fn each_include_flag_leaves_its_part_out() {
    assert_eq!(
        shaped(json!({"includeToolCalls": false, "initUserMessageProperty": "word"})).await,
        ModelOutput::text("A cat is a small feline.")
    );
    assert_eq!(
        shaped(json!({"includeErrors": false})).await,
        ModelOutput::text(
            "Tool call lookup({\"word\":\"cat\"}) → a small feline\n\nA cat is a small feline."
        )
    );
    assert_eq!(
        shaped(json!({"includeTextResponse": false, "includeErrors": false})).await,
        ModelOutput::text("Tool call lookup({\"word\":\"cat\"}) → a small feline\n")
    );
}

#[tokio::test]
async fn a_failed_prompt_hides_its_error_unless_errors_are_included() {
    for (include, expected) in [
        (
            true,
            "Prompt \"define\" failed: model call failed: overloaded",
        ),
        (false, "Prompt \"define\" failed."),
    ] {
        let prompt = builder(&recording([Turn::error(ScriptedError::new("overloaded"))])).build();
        let config = SubpromptConfig {
            include_errors: include,
            ..SubpromptConfig::default()
        };
        let parent = builder(&recording([
            Turn::tool_calls([ScriptedCall::new("define", json!({"prompt": "cat"})).with_id("d1")]),
            Turn::text("done"),
        ]))
        .tool(PromptTool::new("define", "Defines a word.", prompt, config))
        .build();
        let out = parent.run("go").await.unwrap();
        let result = result_of(&out.messages, "d1");
        assert!(result.is_error());
        assert!(
            result.to_text().starts_with(expected),
            "{}",
            result.to_text()
        );
    }
}

#[test]
fn unknown_keys_are_rejected() {
    let error =
        serde_json::from_value::<SubpromptConfig>(json!({"includeText": true})).unwrap_err();
    assert!(
        error.to_string().contains("unknown field `includeText`"),
        "{error}"
    );
}

/// `initAttachmentsProperty` on a prompt tool: the files are checked in the parent, copied into
/// the prompt's folder and listed in its first message; a missing one stops the call first.
#[tokio::test]
async fn a_prompt_tool_takes_attachments_like_a_sub_agent() {
    use toolsmith_agent::Attachments;

    let dir = tempfile::tempdir().unwrap();
    let store = Attachments::new(dir.path());
    let parent_folder = store.folder("thread-3");
    std::fs::create_dir_all(&parent_folder).unwrap();
    std::fs::write(parent_folder.join("words.txt"), "cat, dog").unwrap();

    let prompt_model = recording([Turn::text("Two animals.")]);
    let prompt = builder(&prompt_model).build();
    let config: SubpromptConfig =
        serde_json::from_value(json!({"initAttachmentsProperty": "files"})).unwrap();
    let parent_model = recording([
        Turn::tool_calls([ScriptedCall::new(
            "summarise",
            json!({"prompt": "summarise", "files": ["/attachments/words.txt"]}),
        )
        .with_id("s1")]),
        Turn::tool_calls([ScriptedCall::new(
            "summarise",
            json!({"prompt": "again", "files": ["/attachments/gone.txt"]}),
        )
        .with_id("s2")]),
        Turn::text("done"),
    ]);
    let parent = builder(&parent_model)
        .tool(PromptTool::new("summarise", "Summarises.", prompt, config))
        .build();
    let out = run_with_attachments(&parent, &store, "thread-3", "run-3").await;

    let first = &prompt_model.requests()[0].messages[0];
    assert!(
        first.text().contains("Attachments: /attachments/words.txt"),
        "{first:?}"
    );
    assert_eq!(
        std::fs::read_to_string(store.folder("run-3/s1").join("words.txt")).unwrap(),
        "cat, dog"
    );
    assert_eq!(result_of(&out.messages, "s1").to_text(), "Two animals.");
    let missing = result_of(&out.messages, "s2");
    assert!(missing.is_error());
    assert!(
        missing
            .to_text()
            .contains("/attachments/gone.txt does not exist"),
        "{}",
        missing.to_text()
    );
    assert_eq!(
        prompt_model.call_count(),
        1,
        "the prompt never ran for the missing file"
    );
}

#[tokio::test]
async fn a_prompt_tool_declares_its_own_arguments() {
    let prompt_model = recording([Turn::text("Short.")]);
    let config: SubpromptConfig = serde_json::from_value(json!({
        "inputSchema": {"properties": {"words": {"type": "integer"}}}
    }))
    .unwrap();
    let tool = PromptTool::new(
        "summarise",
        "Summarises.",
        builder(&prompt_model).build(),
        config,
    );
    let parent = builder(&recording([
        call(
            "p1",
            "summarise",
            json!({"prompt": "A long text.", "words": 5}),
        ),
        call(
            "p2",
            "summarise",
            json!({"prompt": "A long text.", "tone": "dry"}),
        ),
        Turn::text("done"),
    ]))
    .tool(tool)
    .build();
    let out = parent.run("go").await.unwrap();
    assert_eq!(
        prompt_model.requests()[0].messages,
        [Message::user("A long text.\n\nArguments: {\"words\":5}")]
    );
    assert!(result_of(&out.messages, "p2").is_error());
    assert_eq!(prompt_model.call_count(), 1);
}
