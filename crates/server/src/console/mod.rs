//! The web console: a page served at `/console` from assets embedded in the binary, and the
//! JSON API it reads, for an operator to see an account's runs as they happen, answer their
//! approvals, look at its agents and start a run. The user's guide is `docs/console.md`.
//!
//! The page (`crates/server/console/`) is plain HTML, CSS and ES modules: nothing to build.
//! It is served with a Content-Security-Policy that allows only its own script and styles and
//! requests to this origin, no framing, and `nosniff`. It holds no secret of its own: it asks
//! for the account's secret, keeps it in the tab's `sessionStorage`, and sends it as the bearer
//! of every API call — the same auth as every other route of the account (401
//! `{"error":"Unauthorized"}` without it).
//!
//! | route | answer |
//! |---|---|
//! | `GET /console` | the page (no secret needed: it holds no data) |
//! | `GET /console/assets/{name}` | its script modules (`console.js` and what it imports) and styles |
//! | `GET /console/api/session` | `{"account"}`: whose the secret is |
//! | `GET /console/api/agents` | `{"agents": [{"agentId", "active", "updatedAt", "model", "tools": [{"name", "description", "inputSchema"}], "config"}]}`, credentials in the config hidden ([`toolsmith_config::redacted`]); an agent that does not build has an `error` |
//! | `GET /console/api/runs?status=&agentId=&limit=` | `{"runs": [{"threadId", "agentId", "conversationKey", "status", "pending", "messageCount", "createdAt", "updatedAt", "live"}]}`, most recently updated first; `status` is `running`, `paused`, `idle` (finished) or `failed`; `limit` 1 to 500, 100 by default |
//! | `GET /console/api/runs/{threadId}` | `{"run", "messages", "journal", "pending", "asyncTools", "usage"}` |
//! | `GET /console/api/runs/{threadId}/live` | the run's parts as they happen, as server-sent events ([`live`]) |
//! | `POST /console/api/runs` `{"agentId", "message", "conversationKey"?}` | 202 `{"threadId", "eventId", "conversationKey"}`: the run goes on in the background |
//! | `POST /console/api/runs/{threadId}/approvals` `{"approvals": [{"approvalId", "approved", "reason"?, "input"?}]}` | 202, as above: the paused run goes on |
//!
//! Runs started or resumed here are runs like `POST /async`'s (their events' ids are
//! `console-<uuid>`): stored, journaled, taken over by another replica if this one stops.

mod api;
mod assets;
mod live;

use axum::Router;
use axum::routing::{get, post};

use crate::Service;

pub(crate) use live::{LiveRun, LiveRuns};

/// The console's routes.
pub(crate) fn routes() -> Router<Service> {
    Router::new()
        .route("/console", get(assets::page))
        .route("/console/", get(assets::page))
        .route("/console/assets/{name}", get(assets::asset))
        .route("/console/api/session", get(api::session))
        .route("/console/api/agents", get(api::agents))
        .route("/console/api/runs", get(api::runs).post(api::start))
        .route("/console/api/runs/{thread_id}", get(api::run))
        .route("/console/api/runs/{thread_id}/live", get(api::live))
        .route(
            "/console/api/runs/{thread_id}/approvals",
            post(api::approvals),
        )
}
