//! The official conformance suite's server scenarios against toolsmith's server, serving the
//! suite's fixture tools (`test_simple_text`, `test_image_content`…) written as toolsmith
//! tools: what each kind of result becomes on the wire, errors in band, progress.

use std::time::Duration;

use serde_json::{Map, Value};
use toolsmith_core::{
    CancellationToken, ContentPart, ModelOutput, ToolError, ToolOutput, Toolset, from_fn,
};
use toolsmith_mcp::server::{HttpConfig, McpServer, serve_http};

use crate::common::{node_path, program};

/// A 1×1 PNG and a tiny WAV, base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

fn content(parts: Vec<ContentPart>) -> ToolOutput {
    ToolOutput::text("").with_model_output(ModelOutput::Content { value: parts })
}

fn fixtures() -> Toolset {
    let text_file = || ContentPart::File {
        data: "SGVsbG8sIHJlc291cmNlIQ==".into(),
        media_type: "text/plain".into(),
        filename: Some("hello.txt".into()),
    };
    Toolset::new()
        .with(from_fn(
            "test_simple_text",
            "Text.",
            |_: Map<String, Value>, _cx| async {
                Ok::<_, ToolError>("This is a simple text response for testing.")
            },
        ))
        .with(from_fn(
            "test_image_content",
            "An image.",
            |_: Map<String, Value>, _cx| async {
                Ok::<_, ToolError>(content(vec![ContentPart::Image {
                    data: PNG.into(),
                    media_type: "image/png".into(),
                }]))
            },
        ))
        .with(from_fn(
            "test_audio_content",
            "Audio.",
            |_: Map<String, Value>, _cx| async {
                Ok::<_, ToolError>(content(vec![ContentPart::File {
                    data: WAV.into(),
                    media_type: "audio/wav".into(),
                    filename: None,
                }]))
            },
        ))
        .with(from_fn(
            "test_embedded_resource",
            "A resource.",
            move |_: Map<String, Value>, _cx| async move {
                Ok::<_, ToolError>(content(vec![text_file()]))
            },
        ))
        .with(from_fn(
            "test_multiple_content_types",
            "All kinds.",
            move |_: Map<String, Value>, _cx| async move {
                Ok::<_, ToolError>(content(vec![
                    ContentPart::Text {
                        text: "Several kinds:".into(),
                    },
                    ContentPart::Image {
                        data: PNG.into(),
                        media_type: "image/png".into(),
                    },
                    text_file(),
                ]))
            },
        ))
        .with(from_fn(
            "test_error_handling",
            "Fails.",
            |_: Map<String, Value>, _cx| async {
                Err::<String, _>(ToolError::new(
                    "TEST_ERROR",
                    "This tool intentionally returns an error for testing",
                ))
            },
        ))
        .with(from_fn(
            "test_tool_with_progress",
            "Takes a while.",
            |_: Map<String, Value>, _cx| async {
                // The server reports progress once a second while a call runs.
                tokio::time::sleep(Duration::from_millis(3500)).await;
                Ok::<_, ToolError>("done")
            },
        ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_suite_s_tool_scenarios_pass() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let server = McpServer::new(fixtures());
    let serving = {
        let stop = stop.clone();
        tokio::spawn(async move {
            serve_http(listener, &server, HttpConfig::new().shutdown(stop)).await
        })
    };
    let dir = tempfile::tempdir().unwrap();
    for scenario in [
        "server-initialize",
        "ping",
        "tools-list",
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "tools-call-with-progress",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        let out = tokio::process::Command::new(program("conformance"))
            .args(["server", "--url", &url, "--scenario", scenario])
            .current_dir(dir.path())
            .env("PATH", node_path())
            .output()
            .await
            .unwrap();
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let passed = report
            .lines()
            .any(|l| l.starts_with("Passed: ") && l.contains(", 0 failed"));
        assert!(out.status.success() && passed, "{scenario}:\n{report}");
    }
    stop.cancel();
    serving.await.unwrap().unwrap();
}
