//! `GET`/`POST /threads/{thread}/variables/{request}`: a deferred sub-agent's variables given by
//! an operator, and the sub-agent booted at once with them.

use std::time::Duration;

use serde_json::{Value, json};
use toolsmith_config::WebhookPolicy;
use toolsmith_server::ServiceOptions;

use crate::common::{self, call, endpoint, last, mock_model, parse_sse, run_body, text};

#[tokio::test]
async fn provided_variables_boot_the_deferred_sub_agent() {
    let options = ServiceOptions {
        webhooks: WebhookPolicy::any(),
        ..ServiceOptions::default()
    };
    let service = common::start(options).await;
    let secret = service.account("acme").await;
    let rival = service.account("rival").await;
    let (hook, hits) = endpoint(|_| (200, r#"{"area":"clear"}"#.into(), Duration::ZERO));
    // The child calls `probe` (a webhook authorised by its own token), then reports; the
    // parent says what its child said.
    let base = mock_model(|body| {
        let (role, said) = last(body);
        if common::declared(body).contains(&"probe".to_string()) {
            return match role.as_str() {
                "tool" => text(&format!("probed: {said}")),
                _ => call("call_p", "probe", json!({})),
            };
        }
        match role.as_str() {
            "tool" if said.contains("probed") => text(&format!("Child said: {said}")),
            _ => text("Waiting for the child's token."),
        }
    });
    let probe = json!({
        "type": "webhook", "url": hook, "description": "Probes the area.",
        "inputSchema": {"type": "object"},
        "headers": {"authorization": "Bearer ${CHILD_TOKEN}"},
        "variables": [{"name": "CHILD_TOKEN", "type": "secret", "required": true, "scoped": true,
                       "description": "The child's own token."}],
    });
    let config = json!({
        "model": {"provider": "openai-compatible", "name": "mock", "baseUrl": base},
        "tools": {},
        "subagents": [{
            "name": "helper", "description": "Scouts.", "resumable": {"receives_messages": "side_a"},
            "immediate": {"scopedEnv": ["CHILD_TOKEN"]},
            "config": {"tools": {"probe": probe}},
        }],
    });
    service.agent("acme", "boss", config).await;

    let (status, body) = service
        .post("/", &secret, &run_body("boss", "e1", "c", "Scout the area"))
        .await;
    assert_eq!(status, 200, "{body}");
    let (events, _) = parse_sse(&body);
    let error = events
        .iter()
        .find(|e| e["type"] == "tool-error")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(error["error"]["code"], "subagent_env_required", "{error}");
    let path = error["error"]["details"]["endpoints"]["post"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(path.starts_with("/threads/conv_"), "{path}");

    let (status, pending) = service.get(&path, &secret).await;
    assert_eq!(status, 200, "{pending}");
    assert_eq!(pending["status"], "pending");
    assert_eq!(
        pending["variables"][0],
        json!({"name": "CHILD_TOKEN", "type": "secret", "description": "The child's own token.",
               "provided": false})
    );
    // Another account's request answers as a missing one.
    let (status, _) = service.get(&path, &rival).await;
    assert_eq!(status, 404);
    let (status, refused) = service
        .post(&path, &secret, &json!({"values": {"OTHER": "x"}}))
        .await;
    assert_eq!(status, 400, "{refused}");

    let token = "tok-secret-9876";
    let (status, accepted) = service
        .post(&path, &secret, &json!({"values": {"CHILD_TOKEN": token}}))
        .await;
    assert_eq!(status, 202, "{accepted}");
    let accepted: Value = serde_json::from_str(&accepted).unwrap();
    let booted = accepted["eventId"].as_str().unwrap();
    let done = service.settled(&secret, "boss", booted).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["text"], r#"Child said: probed: {"area":"clear"}"#);
    let hit = hits.lock().unwrap()[0].clone();
    assert!(
        hit.headers
            .contains(&("authorization".into(), format!("Bearer {token}"))),
        "{:?}",
        hit.headers
    );
    // The token is sealed at rest and shown nowhere.
    let (_, answered) = service.get(&path, &secret).await;
    assert_eq!(answered["status"], "provided");
    assert!(!answered.to_string().contains(token));
    assert!(!done.to_string().contains(token));
}
