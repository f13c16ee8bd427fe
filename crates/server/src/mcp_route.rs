//! `/agents/{agentId}/mcp`: an account's agent's tools served over MCP (streamable HTTP,
//! protocol 2025-11-25; `toolsmith_mcp::server` speaks it).
//!
//! # Every request, in this order
//!
//! 1. A method other than `GET`, `POST` and `DELETE` (the three streamable HTTP uses) is
//!    `405 {"error":"Method not allowed","method":…,"allowedMethods":["GET","POST","DELETE"]}`.
//! 2. The account's bearer secret, as on every account route: without a valid one,
//!    `401 {"error":"Unauthorized"}` (with `WWW-Authenticate: Bearer`).
//! 3. The agent, looked up within the caller's account: a missing, inactive or another
//!    account's agent is `404 {"error":"Agent not found"}`.
//! 4. A `POST` body is read whole: past the service's limit it is `413`, whether it said its
//!    length or came in chunks.
//! 5. Then the request goes to the agent's MCP endpoint ([`http_service`] with
//!    [`HttpConfig::any_host`]): any `Host` (the service listens where the operator says), but
//!    a request with an `Origin` header must come from a loopback origin (`http`/`https` on
//!    `localhost`, `127.0.0.1` or `[::1]`, any port), else `403`; clients that are not browsers
//!    send none. The rest is the endpoint's: `406` without the `Accept` the method needs, `415`
//!    for a body that is no JSON-RPC message in `application/json`, `404` (`Not Found: Session
//!    not found`) for a session it does not hold, `400` for an unsupported
//!    `MCP-Protocol-Version`.
//!
//! A session's requests are checked like its first: the key and the agent, every time.
//!
//! # What is served
//!
//! The toolset the service built for the agent — the built-ins confined to its workspace under
//! the service's sandbox policy, its config's webhook and Tavily tools, its MCP servers' tools,
//! its sub-agents and prompts — as [`McpServer`] serves a toolset: the tools' prepare hooks
//! applied, provider-executed and client tools left out. On top of the tools' own approvals
//! (the built-ins that change things ask, `needsApproval`), the config's `approval.policy` names
//! the tools that need approval and its `approval.timeout` bounds the wait for the client's
//! answer (a call not answered in time is denied, whatever `timeoutAction` says). A call that
//! needs approval asks the client (`elicitation/create`) and runs only on an explicit approval;
//! a client without the elicitation capability gets `APPROVAL_REQUIRED`. The config's declared
//! variables that have a value in the config are the server's variables (they decide which
//! `optional` sub-agents are served, and secret ones are masked); there is no thread to take
//! other values from. The config's `instructions` are what `initialize` answers with.
//!
//! **Left out: the config's async tools** (`async: true`), and the `async_status` tool the
//! service adds beside them. An async call belongs to a run — its row names the run's event
//! and conversation, its result is delivered to the run's inbox or continues its conversation —
//! and an MCP session is no run. The service's wrapper cannot run the tool as a plain call
//! either: without a run it refuses the call (`ASYNC_UNAVAILABLE`), and an external-dispatch
//! call's result comes back through the completion endpoint, not as the call's answer. A
//! sub-agent's or prompt's own async tools stay in its config: called over MCP they answer that
//! error to its model.
//!
//! # Sessions
//!
//! A session is one client (the `Mcp-Session-Id` header), held in this process by the endpoint
//! of the build that answered its `initialize`: [`McpEndpoint`], part of the service's cached
//! [`BuiltAgent`](crate::service::BuiltAgent). Once the service's agent cache has moved on — a
//! config stored through this replica at once; a deletion, or a change made through another
//! replica, at the next request for the agent after the cache's recheck (a second) — a
//! session's requests reach the new build, whose endpoint does not hold the session (`404 Not
//! Found: Session not found`: the client starts a new session, on the new config), or get
//! `404 Agent not found`: no call starts on the old config any more. The old build's sessions
//! end when the build is dropped — as soon as nothing uses it (a run of it may) — or the
//! service shuts down: calls still running are cancelled as a client's cancellation cancels
//! them, and the streams close. An idle session ends after five minutes (rmcp's default).

use std::collections::HashMap;
use std::sync::OnceLock;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use toolsmith_agent::Agent;
use toolsmith_config::{AgentConfig, ApprovalConfig};
use toolsmith_core::{CancellationToken, Toolset, Variables};
use toolsmith_mcp::server::{HttpConfig, McpHttpService, McpServer, http_service};

use crate::async_tools::ASYNC_STATUS_TOOL;
use crate::{ApiError, Service, auth};

/// The methods streamable HTTP uses.
const METHODS: &[&str] = &["GET", "POST", "DELETE"];

/// `GET`, `POST` and `DELETE /agents/{agentId}/mcp` (see the [module docs](self)).
pub(crate) async fn mcp(
    State(service): State<Service>,
    Path(agent_id): Path<String>,
    request: Request,
) -> Response {
    if !matches!(
        *request.method(),
        Method::GET | Method::POST | Method::DELETE
    ) {
        return ApiError::method_not_allowed(request.method().as_str(), METHODS).into_response();
    }
    let account = match auth::caller(&service, request.headers()).await {
        Ok(account) => account,
        Err(e) if e.status == StatusCode::UNAUTHORIZED => {
            let mut refused = e.into_response();
            refused
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return refused;
        }
        Err(e) => return e.into_response(),
    };
    let built = match service.agent(&account.name, &agent_id).await {
        Ok(built) => built,
        Err(e) => return e.into_response(),
    };
    // Read here, so that a body past the service's limit is 413 however it is sent (the
    // endpoint answers 500 to one that exceeds it while it is read in chunks).
    let request = if request.method() == Method::POST {
        let (parts, body) = request.into_parts();
        match Bytes::from_request(Request::new(body), &()).await {
            Ok(bytes) => Request::from_parts(parts, Body::from(bytes)),
            Err(rejection) => return rejection.into_response(),
        }
    } else {
        request
    };
    let mut endpoint = built.mcp_endpoint.http(&built.agent);
    let Ok(response) = tower::Service::call(&mut endpoint, request).await;
    // Held until the answer's head: a build dropped meanwhile would end the session at once.
    drop(built);
    response
}

/// A built agent's MCP endpoint: what the config says about serving it, and the endpoint,
/// made from the agent's toolset on the first MCP request for this build. Dropped with the
/// build, it ends every session it holds (see the [module docs](self#sessions)).
pub(crate) struct McpEndpoint {
    approval: Option<ApprovalConfig>,
    variables: Variables,
    instructions: Option<String>,
    /// Ends the endpoint's sessions and streams: cancelled when this is dropped, and with its
    /// parent when the service shuts down.
    stop: CancellationToken,
    http: OnceLock<McpHttpService>,
}

impl McpEndpoint {
    /// The endpoint of the agent built from `config`; `stop` ends its sessions.
    pub(crate) fn new(config: &AgentConfig, stop: CancellationToken) -> McpEndpoint {
        let values: HashMap<String, String> = config
            .variables
            .iter()
            .filter_map(|entry| Some((entry.decl.name.clone(), entry.value.clone()?)))
            .collect();
        McpEndpoint {
            approval: config.approval.clone(),
            variables: Variables::resolve([&values], config.variables.iter().map(|e| &e.decl)),
            instructions: config.instructions.clone(),
            stop,
            http: OnceLock::new(),
        }
    }

    /// The endpoint serving `agent`'s tools (the agent this was built with), made on the
    /// first call.
    fn http(&self, agent: &Agent) -> McpHttpService {
        self.http
            .get_or_init(|| {
                let mut server =
                    McpServer::builder(served(agent.tools())).variables(self.variables.clone());
                if let Some(approval) = &self.approval {
                    server = server
                        .approval_policy(approval.policy.clone())
                        .approval_timeout(approval.timeout);
                }
                if let Some(instructions) = &self.instructions {
                    server = server.instructions(instructions.clone());
                }
                let config = HttpConfig::new().any_host().shutdown(self.stop.clone());
                http_service(&server.build(), config)
            })
            .clone()
    }
}

impl Drop for McpEndpoint {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The agent's tools that MCP serves: all but its async tools, and the `async_status` the
/// service added beside them (see the [module docs](self#what-is-served)). A tool of the
/// config's own named `async_status` goes with them: beside one, the service adds none.
fn served(tools: Toolset) -> Toolset {
    let has_async = tools.iter().any(|tool| tool.meta().async_mode.is_some());
    let mut tools = tools.filter(|tool| tool.meta().async_mode.is_none());
    if has_async {
        tools.remove(ASYNC_STATUS_TOOL);
    }
    tools
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Map, Value};
    use toolsmith_core::{AsyncMode, SharedTool, ToolError, ToolMeta, from_fn};

    use super::*;

    fn noop(name: &str) -> SharedTool {
        Arc::new(from_fn(
            name.to_string(),
            "Nothing.",
            |_: Map<String, Value>, _cx| async { Ok::<_, ToolError>("ok") },
        ))
    }

    #[test]
    fn async_tools_and_their_status_tool_are_left_out() {
        let tools = Toolset::new()
            .with(noop("read"))
            .with(noop("lookup"))
            .with(noop(ASYNC_STATUS_TOOL))
            .map_meta("lookup", |meta: ToolMeta| {
                meta.async_mode(AsyncMode::SameInvocation)
            });
        assert_eq!(served(tools).names().collect::<Vec<_>>(), ["read"]);
        // Without async tools, a tool of that name is the config's own.
        let own = Toolset::new()
            .with(noop("read"))
            .with(noop(ASYNC_STATUS_TOOL));
        assert_eq!(
            served(own).names().collect::<Vec<_>>(),
            ["read", ASYNC_STATUS_TOOL]
        );
    }

    #[test]
    fn dropping_the_endpoint_ends_its_sessions() {
        let config = AgentConfig::from_value(serde_json::json!({})).unwrap();
        let parent = CancellationToken::new();
        let endpoint = McpEndpoint::new(&config, parent.child_token());
        let stop = endpoint.stop.clone();
        assert!(!stop.is_cancelled());
        drop(endpoint);
        assert!(stop.is_cancelled() && !parent.is_cancelled());
    }

    #[test]
    fn the_configs_own_values_are_the_variables() {
        let config = AgentConfig::from_value(serde_json::json!({"variables": [
            {"name": "REGION", "type": "text", "value": "eu"},
            {"name": "TOKEN", "type": "secret"},
        ]}))
        .unwrap();
        let endpoint = McpEndpoint::new(&config, CancellationToken::new());
        assert_eq!(endpoint.variables.get("REGION"), Some("eu"));
        assert_eq!(endpoint.variables.get("TOKEN"), None);
    }
}
