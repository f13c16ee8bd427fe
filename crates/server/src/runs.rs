//! Running an agent for an event: the conversation's stored thread claimed (started, or
//! resumed with the caller's answers), the run streamed, its event's status kept, and what
//! its async tools need done after it (the dispatch group sealed, a continuation tried).
//!
//! A conversation is one stored thread per `(account, agent, conversationKey)`. Every run is
//! a [`StoredRun`]: its journal makes it survive a crash of the replica, and its claim makes
//! two requests on one conversation exclusive (the second answers 409).

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolsmith_agent::{RunErrorKind, RunInput};
use toolsmith_core::{Dependencies, Message, RunPart, ToolApprovalResponse, ToolResultPart};
use toolsmith_store::{
    DurableError, EventEnd, EventRecord, EventStatus, Holder, NewThread, StoreError, StoredRun,
    Thread, ThreadStatus, keep_variables, thread_variables,
};

use crate::async_tools::continuation;
use crate::outcome::{event_ending, outcome};
use crate::service::{BuiltAgent, lock};
use crate::{ApiError, Service};

/// What a run of the service knows about itself, in its [`Dependencies`]: async tools read it.
#[derive(Clone)]
pub(crate) struct RunContext {
    pub(crate) account: String,
    pub(crate) agent_id: String,
    /// The caller's event id (for a continuation, `<parentEventId>:async-tools`).
    pub(crate) event_id: String,
    /// `<account>/<agent>/<event id>`: the event's key in async rows and dispatch groups.
    pub(crate) event_key: String,
    pub(crate) conversation_key: String,
    /// Whether this request path takes external-dispatch calls (not a streamed request: its
    /// connection cannot be held until an external worker answers).
    pub(crate) external_dispatch: bool,
    /// Set when the run hands a call out (external-dispatch): only then is there a dispatch
    /// group to seal when it ends.
    pub(crate) dispatched: Arc<std::sync::atomic::AtomicBool>,
    /// The event's end as the run's last save wrote it ([`StoredRun::with_event_end`]), if it
    /// did: `drive` writes it again only if the run's outcome turns out otherwise.
    pub(crate) event_end: Arc<std::sync::Mutex<Option<EventEnd>>>,
    pub(crate) public_url: String,
    /// Signs completion tokens.
    token_key: [u8; 32],
}

impl RunContext {
    /// A token that authorises exactly the completion of `result_id`: `tsc_` and the hex of
    /// HMAC-SHA256 over the result id, with a key derived from the service's secret key.
    pub(crate) fn completion_token(&self, result_id: &str) -> String {
        completion_token(&self.token_key, result_id)
    }
}

/// See [`RunContext::completion_token`].
pub(crate) fn completion_token(key: &[u8; 32], result_id: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(result_id.as_bytes());
    let bytes = mac.finalize().into_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("tsc_{hex}")
}

/// `<account>/<agent>/<event id>`: account names and agent ids hold no `/`, so the key is
/// unambiguous.
pub(crate) fn event_key(account: &str, agent_id: &str, event_id: &str) -> String {
    format!("{account}/{agent_id}/{event_id}")
}

/// The stored thread of a conversation: `conv_` and 32 hex digits of SHA-256 over the account,
/// the agent and the key.
pub(crate) fn thread_id(account: &str, agent_id: &str, conversation_key: &str) -> String {
    let mut hash = Sha256::new();
    for part in [account, agent_id, conversation_key] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    let mut id = String::with_capacity(37);
    id.push_str("conv_");
    for b in &hash.finalize()[..16] {
        let _ = write!(id, "{b:02x}");
    }
    id
}

impl RunRequest {
    /// The request's event, new: `processing`, no detail yet, kept as long as async results
    /// are (7 days).
    pub(crate) fn new_event(&self) -> EventRecord {
        let now = crate::service::toolsmith_store_now();
        EventRecord {
            account: self.account.clone(),
            agent_id: self.agent_id.clone(),
            event_id: self.event_id.clone(),
            conversation_key: self.conversation_key.clone(),
            thread_id: self.thread.clone(),
            status: EventStatus::Processing,
            detail: json!({}),
            created_at: now,
            updated_at: now,
            expires_at: now + crate::async_tools::ASYNC_RESULT_TTL.as_millis() as u64,
        }
    }
}

/// Whose a conversation's thread is: written as its tags when [`claim`] creates it, read by
/// whoever finds the thread without a request (the variables routes, the takeover sweep).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub(crate) account: String,
    pub(crate) agent_id: String,
    pub(crate) conversation_key: String,
}

impl Owner {
    pub(crate) const ACCOUNT: &'static str = "account:";
    pub(crate) const AGENT: &'static str = "agent:";
    const CONVERSATION: &'static str = "conversation:";

    /// The thread's owner, if it is a conversation of the service.
    pub(crate) fn of(thread: &Thread) -> Option<Owner> {
        let tag = |prefix: &str| {
            thread
                .tags
                .iter()
                .find_map(|t| t.strip_prefix(prefix))
                .map(str::to_string)
        };
        Some(Owner {
            account: tag(Self::ACCOUNT)?,
            agent_id: tag(Self::AGENT)?,
            conversation_key: tag(Self::CONVERSATION)?,
        })
    }

    /// `new` tagged with this owner.
    fn tag(&self, new: NewThread) -> NewThread {
        new.with_tag(format!("{}{}", Self::ACCOUNT, self.account))
            .with_tag(format!("{}{}", Self::AGENT, self.agent_id))
            .with_tag(format!("{}{}", Self::CONVERSATION, self.conversation_key))
    }
}

/// How a run was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestPath {
    /// `POST /`: streamed back.
    Stream,
    /// `POST /async`, or a continuation: in the background.
    Background,
}

/// One run to make.
pub(crate) struct RunRequest {
    pub(crate) account: String,
    pub(crate) agent_id: String,
    pub(crate) event_id: String,
    pub(crate) conversation_key: String,
    /// The conversation's thread ([`thread_id`]).
    pub(crate) thread: String,
    /// New messages for the thread (user messages, injected results).
    pub(crate) messages: Vec<Message>,
    /// Answers to approvals the thread waits for.
    pub(crate) approvals: Vec<ToolApprovalResponse>,
    /// Results of client tools the thread waits for.
    pub(crate) tool_results: Vec<ToolResultPart>,
    pub(crate) path: RequestPath,
    /// The event whose status the run's end settles (a continuation settles its root's).
    pub(crate) status_event: String,
}

/// What a run sends to its stream.
#[derive(Debug)]
pub(crate) enum Outgoing {
    /// A run part (boxed: a part is ~240 bytes, and most items pass through a channel).
    Part(Box<RunPart>),
    /// Waiting for async work: how many calls.
    Waiting(usize),
}

/// Records the request's event ([`RunRequest::new_event`]) and claims the conversation's thread
/// for it: the run's input, or `None` for a duplicate event (nothing is claimed then). A new
/// conversation's thread is started in the event's transaction
/// ([`ServiceStore::start_event`](toolsmith_store::ServiceStore::start_event)).
///
/// # Errors
///
/// 409 when another run holds the conversation or it waits for answers the request does not
/// give; 400 for a request with nothing to run.
pub(crate) async fn claim(
    service: &Service,
    request: &RunRequest,
) -> Result<Option<RunInput>, ApiError> {
    claim_with(service, request, Claim::Request).await
}

/// [`claim`] for a request that looks like its conversation's first (a chat whose history is
/// one message): the thread is created without being looked up first — one read of the store
/// less for every new conversation — and read only if it exists after all.
///
/// # Errors
///
/// As [`claim`].
pub(crate) async fn claim_first_turn(
    service: &Service,
    request: &RunRequest,
) -> Result<Option<RunInput>, ApiError> {
    claim_with(service, request, Claim::FirstTurn).await
}

/// [`claim`] for a request whose event is recorded already (a continuation records its own
/// first: that insert is what makes it happen once).
///
/// # Errors
///
/// As [`claim`].
pub(crate) async fn claim_recorded(
    service: &Service,
    request: &RunRequest,
) -> Result<RunInput, ApiError> {
    claim_without_event(service, request, Claim::Recorded).await
}

/// [`claim`] for a run that brings no message, only calls to make before its first step
/// ([`RunInput::start_calls`]).
///
/// # Errors
///
/// As [`claim`].
pub(crate) async fn claim_for_start_call(
    service: &Service,
    request: &RunRequest,
) -> Result<RunInput, ApiError> {
    claim_without_event(service, request, Claim::StartCall).await
}

/// [`claim`] of a conversation whose run was interrupted (its replica gone): the run resumes
/// under its own id, where its journal says it stopped.
///
/// # Errors
///
/// 409 while a live replica holds it.
pub(crate) async fn claim_interrupted(
    service: &Service,
    request: &RunRequest,
) -> Result<RunInput, ApiError> {
    claim_without_event(service, request, Claim::Interrupted).await
}

/// [`claim_with`] for a claim that records no event, so finds no duplicate.
async fn claim_without_event(
    service: &Service,
    request: &RunRequest,
    claim: Claim,
) -> Result<RunInput, ApiError> {
    claim_with(service, request, claim).await?.ok_or_else(|| {
        ApiError::internal(
            "claiming the conversation",
            "a claim that records no event found a duplicate",
        )
    })
}

/// What a claim is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// A request: new messages, or answers to a paused run. Its event is recorded.
    Request,
    /// A request that looks like its conversation's first: as `Request`, the thread not read
    /// before it is created.
    FirstTurn,
    /// A request whose event is recorded already.
    Recorded,
    /// A run with only start calls.
    StartCall,
    /// Taking over an interrupted run.
    Interrupted,
}

async fn claim_with(
    service: &Service,
    request: &RunRequest,
    claim: Claim,
) -> Result<Option<RunInput>, ApiError> {
    let store = service.inner.store.clone();
    let thread = &request.thread;
    let lease = service.inner.options.lease;
    let answers = !request.approvals.is_empty() || !request.tool_results.is_empty();
    let dispatched = Arc::new(std::sync::atomic::AtomicBool::new(
        claim == Claim::Interrupted,
    ));
    let event_end = Arc::new(std::sync::Mutex::new(None));
    let ending = event_ending(request, dispatched.clone(), event_end.clone());
    let begin = |run: StoredRun, messages| {
        run.with_lease(lease)
            .with_event_end(ending.clone())
            .input(messages)
    };
    // The request's event, until recorded.
    let mut event = matches!(claim, Claim::Request | Claim::FirstTurn).then(|| request.new_event());
    let mut found = match claim {
        Claim::FirstTurn => None,
        _ => store.thread(thread).await?,
    };
    // A new conversation: its thread created, the prompt stored and the run claimed (with the
    // request's event), with nothing to read back.
    let mut started = None;
    let fresh = claim == Claim::StartCall || !request.messages.is_empty();
    if found.is_none() && claim != Claim::Interrupted && fresh {
        // Tagged with whose it is: the variables routes find the account from the thread.
        let owner = Owner {
            account: request.account.clone(),
            agent_id: request.agent_id.clone(),
            conversation_key: request.conversation_key.clone(),
        };
        let new = owner.tag(NewThread::new(thread.as_str()));
        let prompt = request.messages.clone();
        let (run_id, holder) = (uuid::Uuid::new_v4().to_string(), Holder::current());
        let begun = match &event {
            Some(record) => {
                store
                    .start_event(record, new, &prompt, &run_id, &holder)
                    .await
            }
            None => store
                .start_thread(new, &prompt, &run_id, &holder)
                .await
                .map(Some),
        };
        match begun {
            Ok(Some(version)) => {
                event = None;
                let (run, messages) =
                    StoredRun::started(store.clone(), thread.clone(), run_id, version, prompt);
                started = Some(begin(run, messages));
            }
            Ok(None) => return Ok(None),
            // Created by another request meanwhile: as any existing conversation (the event,
            // if any, still to record).
            Err(StoreError::Exists(_) | StoreError::Conflict { .. }) => {
                found = store.thread(thread).await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(record) = &event
        && !store.insert_event(record).await?
    {
        return Ok(None);
    }
    let status = found.as_ref().map(|t| t.status);
    let new_thread = started.is_some();
    let busy = || {
        ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "Conversation is busy: another run of it is in progress",
        )
    };
    let claimed = match status {
        _ if let Some(input) = started => input,
        Some(ThreadStatus::Paused) if answers && request.messages.is_empty() => {
            let (run, messages) = StoredRun::resume(store.clone(), thread, lease)
                .await
                .map_err(durable_error)?;
            let mut input = begin(run, messages);
            for answer in &request.approvals {
                input = input.with_approval(answer.clone());
            }
            for result in &request.tool_results {
                input = input.with_tool_result(result.clone());
            }
            input
        }
        Some(ThreadStatus::Paused) => {
            return Err(ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "Conversation is awaiting approval: answer with tool-approval-response events only",
            ));
        }
        // Interrupted (its replica gone): resumed where its journal says, unless a live
        // replica still holds it.
        Some(ThreadStatus::Running) if claim == Claim::Interrupted => {
            let (run, messages) = StoredRun::resume(store.clone(), thread, lease)
                .await
                .map_err(durable_error)?;
            begin(run, messages)
        }
        // Held by a live run, or interrupted: the replicas' takeover resumes an interrupted
        // run; a request does not race it.
        Some(ThreadStatus::Running) => return Err(busy()),
        _ if claim == Claim::Interrupted => {
            return Err(ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "Conversation has no interrupted run",
            ));
        }
        _ => {
            if request.messages.is_empty() && claim != Claim::StartCall {
                return Err(ApiError::bad_request(if answers {
                    "Conversation has no run waiting for these answers"
                } else {
                    "events must hold at least one message"
                }));
            }
            let (run, messages) = StoredRun::start(store.clone(), thread, request.messages.clone())
                .await
                .map_err(durable_error)?;
            begin(run, messages)
        }
    };
    let key = service.inner.key.clone();
    let mut input = claimed;
    // A thread created now has no variables yet.
    if !new_thread {
        match thread_variables(&*store, thread, &key).await {
            Ok(variables) => input.variables.extend(variables),
            Err(e) => return Err(ApiError::internal("the thread's variables", e)),
        }
    }
    let mut deps = Dependencies::new();
    deps.insert(RunContext {
        account: request.account.clone(),
        agent_id: request.agent_id.clone(),
        event_id: request.event_id.clone(),
        event_key: event_key(&request.account, &request.agent_id, &request.event_id),
        conversation_key: request.conversation_key.clone(),
        external_dispatch: request.path == RequestPath::Background,
        dispatched,
        event_end,
        public_url: service.inner.public_url.clone(),
        token_key: service.inner.token_key,
    });
    input.deps = Some(Arc::new(deps));
    Ok(Some(input))
}

fn durable_error(e: DurableError) -> ApiError {
    match e {
        DurableError::Busy(_) | DurableError::Held { .. } => ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "Conversation is busy: another run of it is in progress",
        ),
        DurableError::Unfinished { .. } | DurableError::NothingToResume { .. } => ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "Conversation has no run waiting for these answers",
        ),
        other => ApiError::internal("claiming the conversation", other),
    }
}

/// Starts [`drive`] in the background, its parts sent to the receiver returned (which holds up
/// to `capacity` of them).
pub(crate) fn streamed(
    service: &Service,
    built: Arc<BuiltAgent>,
    request: RunRequest,
    input: RunInput,
    capacity: usize,
) -> mpsc::Receiver<Outgoing> {
    let (sender, receiver) = mpsc::channel(capacity);
    service.spawn(drive(service.clone(), built, request, input, Some(sender)));
    receiver
}

/// How often a run waiting to hand itself back looks whether its async calls have returned.
const HANDBACK_CHECK: Duration = Duration::from_millis(20);

/// Runs `input` on `built` to its end: parts (and waiting notices) to `sink` when there is
/// one, the event's status kept, the thread's variables kept, then what async tools need.
///
/// The run is registered for the console to watch ([`LiveRuns`](crate::console::LiveRuns))
/// when this is called, before the future first runs: a page told that the run started finds
/// it live at once.
pub(crate) fn drive(
    service: Service,
    built: Arc<BuiltAgent>,
    request: RunRequest,
    input: RunInput,
    sink: Option<mpsc::Sender<Outgoing>>,
) -> impl std::future::Future<Output = ()> + Send + 'static {
    // Held to the end, after the event's status is stored: watchers' streams end then.
    let live = service.inner.live.open(&request.thread);
    drive_live(service, built, request, input, sink, live)
}

async fn drive_live(
    service: Service,
    built: Arc<BuiltAgent>,
    request: RunRequest,
    input: RunInput,
    sink: Option<mpsc::Sender<Outgoing>>,
    live: crate::console::LiveRun,
) {
    let key = event_key(&request.account, &request.agent_id, &request.event_id);
    let coordinator = service.inner.coordinator.clone();
    let options = &service.inner.options;
    let deps = input.deps.clone();
    // At shutdown the run hands itself back, for another replica (or this one, started again)
    // to go on with — once its same-invocation calls have returned, so that their results are
    // stored for that replica rather than lost with this one.
    let handback = CancellationToken::new();
    let shutdown = service.inner.handback.clone();
    let mut handing = false;
    let mut returned = tokio::time::interval(HANDBACK_CHECK);
    let mut stream = built.agent.stream(input.with_handback(handback.clone()));
    let deadline = tokio::time::Instant::now() + options.async_wait;
    let mut beat = tokio::time::interval_at(
        tokio::time::Instant::now() + options.heartbeat,
        options.heartbeat.max(Duration::from_millis(10)),
    );
    let mut drained = false;
    let send = |item: Outgoing| {
        if let Some(sink) = &sink {
            // A caller that went away does not stop the run: it is stored as it goes.
            let _ = sink.try_send(item);
        }
    };
    loop {
        tokio::select! {
            part = stream.next() => match part {
                Some(part) => {
                    crate::variables::record_request(&service, &request, &part).await;
                    live.publish(&part);
                    if let Some(sink) = &sink {
                        let _ = sink.send(Outgoing::Part(Box::new(part))).await;
                    }
                }
                None => break,
            },
            _ = beat.tick() => {
                let pending = coordinator.pending_for(&key);
                if pending > 0 {
                    send(Outgoing::Waiting(pending));
                }
            }
            () = tokio::time::sleep_until(deadline), if !drained => {
                coordinator.drain(&key).await;
                drained = true;
            }
            () = shutdown.cancelled(), if !handing => handing = true,
            _ = returned.tick(), if handing && !handback.is_cancelled() => {
                if coordinator.pending_for(&key) == 0 {
                    handback.cancel();
                }
            }
        }
    }
    let result = stream.output().await;
    let thread = &request.thread;
    let set = match &result {
        Ok(out) => &out.variables_set,
        Err(e) => &e.output.variables_set,
    };
    let store = service.inner.store.clone();
    if let Err(e) = keep_variables(&*store, thread, &service.inner.key, set).await {
        tracing::error!(target: "toolsmith::server", %e, "keeping the thread's variables");
    }
    // Handed back (the service is shutting down): the run is not over. Its event stays
    // `processing` and its dispatch group open; the replica that takes it over ends them.
    if matches!(&result, Err(e) if e.kind == RunErrorKind::HandedBack) {
        tracing::info!(
            target: "toolsmith::server",
            %thread,
            event = %request.event_id,
            "a run handed back at shutdown"
        );
        return;
    }
    // A run that handed nothing out has no group: no read of the store to find out. (A run
    // resumed after a crash cannot know what its first life handed out: it looks.)
    let context = deps.as_ref().and_then(|deps| deps.get::<RunContext>());
    let dispatched =
        context.is_none_or(|run| run.dispatched.load(std::sync::atomic::Ordering::SeqCst));
    let external_waits = dispatched && continuation::seal(&service, &key).await;
    let (status, detail) = outcome(&result, external_waits);
    // Written with the run's last save already, unless the outcome turned out otherwise (the
    // save failed, or the run did after it).
    let written = context
        .and_then(|run| lock(&run.event_end).take())
        .is_some_and(|end| end.status == status && end.detail == detail);
    if !written
        && let Err(e) = store
            .update_event(
                &request.account,
                &request.agent_id,
                &request.status_event,
                status,
                &detail,
            )
            .await
    {
        tracing::error!(target: "toolsmith::server", %e, "keeping the event's status");
    }
    // The stream ends once the event's status is what the run came to: a client that asks for
    // it next finds it.
    drop(sink);
    drop(live);
    if external_waits {
        continuation::try_continue(&service, &key).await;
    }
}
