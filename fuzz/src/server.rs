//! The service's request bodies.

use serde_json::Value;
use toolsmith_server::fuzzing;

/// Every body parser of the service on the same bytes: `POST /` (and `/async`), the chat
/// route's and the async-tool completion's. Each refuses with a 400 and its `error` text, or
/// gives what the route relies on: the run's ids non-empty and at most 256 bytes, at most
/// [`fuzzing::MAX_RUN_EVENTS`] messages, user messages of text and files only; the chat id
/// likewise bounded.
pub fn server_bodies(data: &[u8]) {
    match fuzzing::run_body(data) {
        Ok(run) => {
            for key in ["agentId", "eventId", "conversationKey"] {
                let id = run[key].as_str().expect("an id");
                assert!(!id.is_empty() && id.len() <= 256, "{key}: {id:?}");
            }
            let messages = run["messages"].as_array().expect("messages");
            assert!(messages.len() <= fuzzing::MAX_RUN_EVENTS);
            for message in messages {
                assert_eq!(message["role"], "user", "{message}");
            }
            let text = serde_json::to_string(&run).expect("the body re-serialises");
            assert_eq!(
                serde_json::from_str::<Value>(&text).ok().as_ref(),
                Some(&run)
            );
        }
        Err(error) => bad_request(&error),
    }
    match fuzzing::chat_body(data) {
        Ok((id, _turn)) => assert!(!id.is_empty() && id.len() <= 256, "{id:?}"),
        Err(error) => bad_request(&error),
    }
    if let Err(error) = fuzzing::completion_body(data) {
        bad_request(&error);
    }
}

fn bad_request(error: &toolsmith_server::ApiError) {
    assert_eq!(error.status.as_u16(), 400, "{error:?}");
    assert!(error.body["error"].is_string(), "{error:?}");
}
