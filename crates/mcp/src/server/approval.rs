//! Approval over MCP: asking the client with `elicitation/create` whether a call may run.
//!
//! The request is a form: a message naming the tool and showing its arguments, and the schema
//! `{approve: boolean (required), reason?: string}`. The call runs only on `action: "accept"`
//! with `approve: true`. Everything else denies it ([`DENIED`]): `decline`, `cancel`, an
//! accepted form with `approve: false` or without it, no answer within the approval timeout,
//! an error answer. A client that did not declare the `elicitation` capability (form mode)
//! cannot be asked, and the call is refused with [`APPROVAL_REQUIRED`].
//!
//! The request is sent from the task that handles the `tools/call` request, so that on
//! streamable HTTP it travels on that request's own stream.

use std::time::Duration;

use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use rmcp::service::{ElicitationMode, ServiceError};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use toolsmith_core::ToolError;

use super::{APPROVAL_REQUIRED, DENIED};

/// The reason of a denial that gave none.
pub(crate) const DENIED_BY_CLIENT: &str = "denied by the MCP client";

/// Asks the client whether the call of `tool` with `input` may run; `Ok` only when approved.
///
/// # Errors
///
/// [`APPROVAL_REQUIRED`] when the client cannot be asked, [`DENIED`] otherwise (see the
/// [module docs](self)).
pub(crate) async fn ask(
    peer: &Peer<RoleServer>,
    tool: &str,
    input: &Value,
    timeout: Duration,
) -> Result<(), ToolError> {
    if !peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return Err(ToolError::new(
            APPROVAL_REQUIRED,
            format!(
                "the tool \"{tool}\" needs approval and this MCP client cannot be asked (no \
                 elicitation capability); toolsmith never runs it unapproved"
            ),
        ));
    }
    let arguments = serde_json::to_string_pretty(input).unwrap_or_else(|_| input.to_string());
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "toolsmith asks for approval to run the tool \"{tool}\" with these arguments:\n\
             {arguments}\n\nApprove this call?"
        ),
        requested_schema: schema(),
    };
    match peer
        .create_elicitation_with_timeout(params, Some(timeout))
        .await
    {
        Ok(answer) => verdict(&answer),
        Err(ServiceError::Timeout { .. }) => Err(denied(format!(
            "no answer to the approval request within {} s",
            timeout.as_secs()
        ))),
        Err(e) => Err(denied(format!("the approval request failed: {e}"))),
    }
}

/// `{approve: boolean (required), reason?: string}`.
fn schema() -> ElicitationSchema {
    ElicitationSchema::builder()
        .required_bool_with("approve", |b| {
            b.title("Approve").description("Whether the call may run.")
        })
        .optional_string_with("reason", |s| {
            s.title("Reason")
                .description("Why (shown to the caller when the call is denied).")
        })
        .build()
        .expect("a valid elicitation schema")
}

/// What the client's answer decides.
fn verdict(answer: &ElicitResult) -> Result<(), ToolError> {
    let field = |name: &str| answer.content.as_ref().and_then(|c| c.get(name));
    let reason = field("reason")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|r| !r.is_empty());
    match answer.action {
        ElicitationAction::Accept if field("approve") == Some(&Value::Bool(true)) => Ok(()),
        _ => Err(denied(reason.unwrap_or(DENIED_BY_CLIENT).to_string())),
    }
}

fn denied(reason: String) -> ToolError {
    ToolError::new(DENIED, reason)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_an_explicit_approval_lets_the_call_run() {
        let accept =
            |content: Value| ElicitResult::new(ElicitationAction::Accept).with_content(content);
        assert!(verdict(&accept(json!({"approve": true}))).is_ok());
        let no = verdict(&accept(json!({"approve": false, "reason": "not today"}))).unwrap_err();
        assert_eq!((no.code(), no.message()), (DENIED, "not today"));
        let empty = verdict(&accept(json!({}))).unwrap_err();
        assert_eq!(empty.message(), DENIED_BY_CLIENT);
        let truthy = verdict(&accept(json!({"approve": "true"}))).unwrap_err();
        assert_eq!(truthy.code(), DENIED);
        for action in [ElicitationAction::Decline, ElicitationAction::Cancel] {
            let e = verdict(&ElicitResult::new(action)).unwrap_err();
            assert_eq!((e.code(), e.message()), (DENIED, DENIED_BY_CLIENT));
        }
    }

    #[test]
    fn the_form_asks_for_a_boolean_and_an_optional_reason() {
        let schema = serde_json::to_value(schema()).unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["approve"]["type"], "boolean");
        assert_eq!(schema["properties"]["reason"]["type"], "string");
        assert_eq!(schema["required"], json!(["approve"]));
    }
}
