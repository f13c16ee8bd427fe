//! The client against the official reference server and an awkward server written with the
//! official TypeScript SDK.

use std::time::{Duration, Instant};

use serde_json::json;
use toolsmith_config::{McpSelection, ToolNames};
use toolsmith_core::{Approval, ContentPart, ModelOutput};
use toolsmith_mcp::client::{McpClient, McpClients};

use crate::common::*;

async fn connect(entry: toolsmith_config::McpServerEntry) -> McpClients {
    McpClients::connect(&servers(entry)).await.unwrap()
}

#[tokio::test]
async fn the_reference_servers_tools_are_called_with_their_results_mapped() {
    let everything = entry(
        "everything",
        json!({"command": program("mcp-server-everything"), "env": {"PATH": node_path()}}),
    );
    let client = McpClient::connect(&everything).await.unwrap();
    assert!(client.tool_names().contains(&"echo".to_string()));
    let tools = client_tools(&client);
    // Named for every provider, under the server's prefix.
    assert!(tools.contains("everything__echo") && tools.contains("everything__get-sum"));

    let echo = call(&tools, "everything__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(echo.value, json!("Echo: hi"));
    assert_eq!(echo.model, ModelOutput::text("Echo: hi"));

    let sum = call(&tools, "everything__get-sum", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(sum.model.to_text().contains("42"), "{:?}", sum.model);

    let image = call(&tools, "everything__get-tiny-image", json!({}))
        .await
        .unwrap();
    let ModelOutput::Content { value } = &image.model else {
        panic!("{:?}", image.model)
    };
    assert!(
        value.iter().any(
            |p| matches!(p, ContentPart::Image { media_type, .. } if media_type == "image/png")
        )
    );

    let structured = call(
        &tools,
        "everything__get-structured-content",
        json!({"location": "New York"}),
    )
    .await
    .unwrap();
    assert!(structured.value.is_object(), "{:?}", structured.value);

    // The schema as declared is enforced before the call.
    let invalid = call(&tools, "everything__get-sum", json!({"a": "two"}))
        .await
        .unwrap_err();
    assert_eq!(invalid.code(), "INVALID_INPUT");
}

fn client_tools(client: &McpClient) -> toolsmith_core::Toolset {
    let entry = client.tools(&whole(client.name()));
    let tools = toolsmith_core::Toolset::new().with(entry.clone());
    entry.prepare_tools().unwrap().prepare(&entry, tools)
}

#[tokio::test]
async fn every_page_is_listed_and_names_and_schemas_are_made_safe() {
    let client = McpClient::connect(&awkward(json!({}))).await.unwrap();
    let names = client.tool_names();
    // Two tools per page: all pages were read; the schema that does not compile is left out.
    for tool in [
        "sleep",
        "die",
        "fail",
        "refuse",
        "grow",
        "odd.name/x",
        "structured",
    ] {
        assert!(
            names.contains(&tool.to_string()),
            "{tool} missing from {names:?}"
        );
    }
    assert!(!names.contains(&"bad_schema".to_string()));
    let tools = client_tools(&client);
    let odd = call(&tools, "awkward__odd_name_x", json!({}))
        .await
        .unwrap();
    assert_eq!(odd.value, json!("odd"));
    let structured = call(&tools, "awkward__structured", json!({"n": 21}))
        .await
        .unwrap();
    assert_eq!(structured.value, json!({"double": 42}));
}

#[tokio::test]
async fn errors_in_band_and_out_of_band_are_precise_tool_errors() {
    let client = McpClient::connect(&awkward(json!({}))).await.unwrap();
    let tools = client_tools(&client);
    let failed = call(&tools, "awkward__fail", json!({})).await.unwrap_err();
    assert_eq!(
        (failed.code(), failed.message()),
        ("MCP_TOOL_ERROR", "it failed")
    );
    let refused = call(&tools, "awkward__refuse", json!({}))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), "MCP_PROTOCOL_ERROR");
    assert!(
        refused.message().contains("refused on purpose") && refused.message().contains("-32602"),
        "{}",
        refused.message()
    );
}

#[tokio::test]
async fn a_slow_call_times_out_and_the_server_is_told_to_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancelled");
    let entry = awkward(json!({"timeoutMs": 300, "env": {"CANCEL_LOG": log.to_str().unwrap()}}));
    let client = McpClient::connect(&entry).await.unwrap();
    let tools = client_tools(&client);
    let started = Instant::now();
    let err = call(&tools, "awkward__sleep", json!({"ms": 30_000}))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "MCP_TIMEOUT");
    assert!(err.message().contains("300 ms"), "{}", err.message());
    assert!(started.elapsed() < Duration::from_secs(5));
    // `notifications/cancelled` reached the server, which aborted the call.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !log.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = std::fs::read_to_string(&log).expect("the server saw the cancellation");
    assert!(text.starts_with("cancelled "), "{text}");
    // The connection is still good.
    let odd = call(&tools, "awkward__odd_name_x", json!({}))
        .await
        .unwrap();
    assert_eq!(odd.value, json!("odd"));
}

#[tokio::test]
async fn an_abandoned_call_is_cancelled_too() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cancelled");
    let entry = awkward(json!({"env": {"CANCEL_LOG": log.to_str().unwrap()}}));
    let client = McpClient::connect(&entry).await.unwrap();
    let tools = client_tools(&client);
    // The run gives up on the call (a cancelled run drops its calls' futures).
    let abandoned = tokio::time::timeout(
        Duration::from_millis(300),
        call(&tools, "awkward__sleep", json!({"ms": 30_000})),
    )
    .await;
    assert!(abandoned.is_err());
    let deadline = Instant::now() + Duration::from_secs(5);
    while !log.exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(log.exists(), "the server never saw notifications/cancelled");
}

#[tokio::test]
async fn a_server_that_dies_gives_a_precise_error_and_never_hangs() {
    let client = McpClient::connect(&awkward(json!({}))).await.unwrap();
    let tools = client_tools(&client);
    let started = Instant::now();
    let died = call(&tools, "awkward__die", json!({})).await.unwrap_err();
    assert_eq!(died.code(), "MCP_SERVER_GONE");
    assert!(
        died.message().contains("exit status: 3"),
        "{}",
        died.message()
    );
    assert!(
        died.message().contains("dying on purpose"),
        "{}",
        died.message()
    );
    // Later calls fail at once, the same way.
    let again = call(&tools, "awkward__odd_name_x", json!({}))
        .await
        .unwrap_err();
    assert_eq!(again.code(), "MCP_SERVER_GONE");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_changed_list_is_listed_again_for_the_next_run() {
    let client = McpClient::connect(&awkward(json!({}))).await.unwrap();
    let before = client_tools(&client);
    assert!(!before.contains("awkward__grown"));
    call(&before, "awkward__grow", json!({})).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !client.tool_names().contains(&"grown".to_string()) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The run in progress keeps its tools; the next one gets the new list.
    assert!(!before.contains("awkward__grown"));
    let after = client_tools(&client);
    let grown = call(&after, "awkward__grown", json!({})).await.unwrap();
    assert_eq!(grown.value, json!("I am new"));
}

#[tokio::test]
async fn config_filters_side_effects_and_approvals_apply() {
    let entry = awkward(json!({
        "deny": ["die"],
        "readOnly": ["odd.name/x"],
        "needsApproval": ["fail"],
        "prefix": "",
    }));
    let clients = connect(entry).await;
    let tools = run_tools(&clients, whole("awkward"));
    assert!(!tools.contains("die") && tools.contains("sleep"));
    // Annotations are never trusted: side-effecting unless the config says otherwise.
    assert!(tools.get("sleep").unwrap().meta().side_effect);
    assert!(!tools.get("odd_name_x").unwrap().meta().side_effect);
    assert!(matches!(
        tools.get("fail").unwrap().meta().approval,
        Approval::Always
    ));
    assert!(matches!(
        tools.get("sleep").unwrap().meta().approval,
        Approval::Policy
    ));
    // An `mcp:awkward/sleep` entry with needsApproval picks one tool and asks for it.
    let one = run_tools(
        &clients,
        McpSelection {
            server: "awkward".into(),
            only: Some(vec!["sleep".into()]),
            needs_approval: ToolNames::Some(vec!["sleep".into()]),
        },
    );
    assert_eq!(one.names().collect::<Vec<_>>(), ["sleep"]);
    assert!(matches!(
        one.get("sleep").unwrap().meta().approval,
        Approval::Always
    ));
    // `toolsmith run` asks before every side effect.
    let asking = connect(awkward(json!({"readOnly": ["fail"]})))
        .await
        .ask_before_side_effects();
    let tools = run_tools(&asking, whole("awkward"));
    assert!(matches!(
        tools.get("awkward__sleep").unwrap().meta().approval,
        Approval::Always
    ));
    assert!(matches!(
        tools.get("awkward__fail").unwrap().meta().approval,
        Approval::Policy
    ));
}

#[tokio::test]
async fn a_server_that_cannot_start_or_speak_says_so() {
    let missing = entry("nothing", json!({"command": "/nonexistent/mcp-server"}));
    let err = McpClient::connect(&missing).await.unwrap_err();
    assert_eq!(err.server, "nothing");
    assert!(
        err.message
            .starts_with("cannot start /nonexistent/mcp-server"),
        "{err}"
    );
    // A program that exits at once.
    let quits = entry(
        "quits",
        json!({"command": "sh", "args": ["-c", "echo bye >&2; exit 7"]}),
    );
    let err = McpClient::connect(&quits).await.unwrap_err();
    assert_eq!(
        err.message,
        "before the handshake, the server ended with exit status: 7; its stderr ends: bye"
    );
    // A program that never answers: bounded by timeoutMs.
    let silent = entry(
        "silent",
        json!({"command": "sleep", "args": ["30"], "startupTimeoutMs": 300}),
    );
    let started = Instant::now();
    let err = McpClient::connect(&silent).await.unwrap_err();
    assert_eq!(
        err.message,
        "the handshake took longer than 300 ms (startupTimeoutMs)"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // Nothing listening at a URL.
    let nowhere = entry(
        "nowhere",
        json!({"url": "http://127.0.0.1:9/mcp", "startupTimeoutMs": 5000}),
    );
    let err = McpClient::connect(&nowhere).await.unwrap_err();
    assert!(err.message.contains("handshake"), "{err}");
}

#[tokio::test]
async fn a_sandboxed_server_writes_only_beneath_its_root() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let inside_file = root.path().join("in.txt");
    let outside_file = outside.path().join("out.txt");
    // Unconfined, the server writes where it likes.
    let free = McpClient::connect(&awkward(json!({}))).await.unwrap();
    let tools = client_tools(&free);
    call(
        &tools,
        "awkward__write",
        json!({"path": outside_file, "text": "x"}),
    )
    .await
    .unwrap();
    std::fs::remove_file(&outside_file).unwrap();
    // In the sandbox, only beneath its root.
    let confined = awkward(json!({"sandbox": {"root": root.path(), "read": [peers()]}}));
    let client = McpClient::connect(&confined).await.unwrap();
    let tools = client_tools(&client);
    call(
        &tools,
        "awkward__write",
        json!({"path": inside_file, "text": "in"}),
    )
    .await
    .unwrap();
    assert_eq!(std::fs::read_to_string(&inside_file).unwrap(), "in");
    let refused = call(
        &tools,
        "awkward__write",
        json!({"path": outside_file, "text": "x"}),
    )
    .await
    .unwrap_err();
    assert_eq!(refused.code(), "MCP_TOOL_ERROR");
    assert!(
        ["EACCES", "EROFS", "EPERM", "ENOENT"]
            .iter()
            .any(|e| refused.message().contains(e)),
        "{}",
        refused.message()
    );
    assert!(!outside_file.exists());
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn a_streamable_http_server_is_called_over_http() {
    let port = free_port();
    let mut server = tokio::process::Command::new(program("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PATH", node_path())
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Ready when it says it listens.
    let mut stderr = tokio::io::BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("listening") {
        line.clear();
        use tokio::io::AsyncBufReadExt;
        assert!(
            stderr.read_line(&mut line).await.unwrap() > 0,
            "the server ended"
        );
    }
    let remote = entry(
        "remote",
        json!({"url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"X-Trace": "t1"}}),
    );
    let client = McpClient::connect(&remote).await.unwrap();
    let tools = client_tools(&client);
    let echo = call(&tools, "remote__echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert_eq!(echo.value, json!("Echo: over http"));
}

#[tokio::test]
async fn headers_are_sent_and_a_refusal_is_reported() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = vec![0u8; 8192];
        let n = socket.read(&mut request).await.unwrap();
        socket
            .write_all(
                b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            )
            .await
            .unwrap();
        String::from_utf8_lossy(&request[..n]).to_lowercase()
    });
    let remote = entry(
        "remote",
        json!({"url": format!("http://127.0.0.1:{port}/mcp"),
               "headers": {"Authorization": "Bearer secret-token", "X-Team": "tools"},
               "startupTimeoutMs": 5000}),
    );
    let err = McpClient::connect(&remote).await.unwrap_err();
    let request = seen.await.unwrap();
    assert!(
        request.contains("authorization: bearer secret-token"),
        "{request}"
    );
    assert!(request.contains("x-team: tools"), "{request}");
    assert!(err.message.contains("HTTP 401 Unauthorized"), "{err}");
    // The token is the server's business: it never appears in the error.
    assert!(!err.to_string().contains("secret-token"), "{err}");
}

#[tokio::test]
async fn an_agent_built_from_a_config_runs_mcp_tools_and_its_policy_names_them() {
    use std::sync::Arc;
    use toolsmith_config::{AgentConfig, BuildContext, ParentAgent, WebhookPolicy};
    use toolsmith_providers::scripted::{ScriptedCall, ScriptedModel, Turn};

    let mut config = AgentConfig::from_value(json!({
        "tools": {"mcp:awkward": {}},
        "approval": {"policy": ["awkward__write"]},
    }))
    .unwrap();
    config.mcp_servers = servers(awkward(json!({"readOnly": ["structured"]})));
    let clients = McpClients::connect(&config.mcp_servers_used().unwrap())
        .await
        .unwrap();
    let model = Arc::new(ScriptedModel::new([
        Turn::tool_calls([
            ScriptedCall::new("awkward__structured", json!({"n": 4})),
            ScriptedCall::new("awkward__structured", json!({"n": "four"})),
            ScriptedCall::new("awkward__write", json!({"path": "/tmp/never", "text": "x"})),
        ]),
        Turn::text("done"),
    ]));
    let tools = config
        .toolset_with(
            &toolsmith_core::Toolset::new(),
            "scripted",
            WebhookPolicy::any(),
            Some(&clients),
        )
        .unwrap();
    let lookup = |_: &str| None;
    let resolve = |_: &toolsmith_config::ModelConfig| -> Result<_, String> { unreachable!() };
    let cx = BuildContext {
        builtins: &toolsmith_core::Toolset::new(),
        resolve: &resolve,
        lookup: &lookup,
        webhooks: WebhookPolicy::any(),
        wrap: None,
        mcp: Some(&clients),
        sandboxed: None,
    };
    let parent = ParentAgent {
        model: model.clone(),
        provider: "scripted".into(),
        approval: config.approval.clone(),
    };
    // The policy names a tool the server's entry becomes as the run starts: accepted.
    let agent = config.agent_builder(tools, &cx, &parent).unwrap().build();
    let out = agent.run("go").await.unwrap();
    // The valid call ran, the invalid one never reached the server, the write waits.
    let results: Vec<String> = out.steps[0]
        .tool_results
        .iter()
        .map(|r| format!("{:?}", r.outcome))
        .collect();
    assert!(results[0].contains("8"), "{results:?}");
    assert!(results[1].contains("Invalid arguments"), "{results:?}");
    assert_eq!(out.pending.len(), 1);
    assert_eq!(out.pending[0].tool_name, "awkward__write");
    assert!(!std::path::Path::new("/tmp/never").exists());
}

#[tokio::test]
async fn the_tools_keep_the_session_after_the_client_is_dropped() {
    let client = McpClient::connect(&awkward(json!({}))).await.unwrap();
    let tools = client_tools(&client);
    drop(client);
    let odd = call(&tools, "awkward__odd_name_x", json!({}))
        .await
        .unwrap();
    assert_eq!(odd.value, json!("odd"));
}
