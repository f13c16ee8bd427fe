//! [`Inbox`]: results that arrive after their call returned, queued for the run.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::Message;

/// Messages for a run that arrive while it goes on: the result of a sub-agent started with
/// `blocking: false`, queued by its task when it finishes. The loop adds what is
/// queued to the thread before each model call, and before ending it waits for every result
/// still expected.
///
/// ```
/// use toolsmith_core::{Inbox, Message};
///
/// let inbox = Inbox::default();
/// let ticket = inbox.expect();
/// assert!(!inbox.is_idle(), "a result is expected");
/// assert_eq!(inbox.expected(), 1);
/// ticket.deliver(Message::user("done"));
/// assert_eq!(inbox.take().len(), 1);
/// assert!(inbox.is_idle());
/// ```
#[derive(Clone, Default)]
pub struct Inbox(Arc<InboxInner>);

#[derive(Default)]
struct InboxInner {
    queue: Mutex<Vec<Message>>,
    outstanding: AtomicUsize,
    changed: Notify,
}

impl Inbox {
    /// Announces a result that will arrive later; deliver it through the ticket. A ticket
    /// dropped without delivering withdraws the announcement.
    pub fn expect(&self) -> InboxTicket {
        self.0.outstanding.fetch_add(1, Ordering::SeqCst);
        InboxTicket(self.clone())
    }

    /// Queues a message nobody announced (a sub-agent's `notify_parent`).
    pub fn deliver(&self, message: Message) {
        self.queue().push(message);
        self.0.changed.notify_waiters();
    }

    /// Takes every queued message, oldest first.
    pub fn take(&self) -> Vec<Message> {
        std::mem::take(&mut *self.queue())
    }

    /// Whether nothing is queued and nothing is expected.
    pub fn is_idle(&self) -> bool {
        self.0.outstanding.load(Ordering::SeqCst) == 0 && self.queue().is_empty()
    }

    /// Whether results are still expected (announced and not delivered).
    pub fn is_expecting(&self) -> bool {
        self.0.outstanding.load(Ordering::SeqCst) > 0
    }

    /// How many results are announced and not delivered yet: calls still running outside the
    /// run (non-blocking sub-agents, async tools).
    pub fn expected(&self) -> usize {
        self.0.outstanding.load(Ordering::SeqCst)
    }

    /// Waits until a message is queued or nothing more is expected.
    pub async fn changed(&self) {
        loop {
            let notified = self.0.changed.notified();
            tokio::pin!(notified);
            // Registered before the check, so a delivery between the check and the wait is
            // not missed.
            notified.as_mut().enable();
            if !self.queue().is_empty() || !self.is_expecting() {
                return;
            }
            notified.await;
        }
    }

    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<Message>> {
        // A panic while holding the lock leaves the vector itself intact.
        self.0.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Inbox")
            .field("queued", &self.queue().len())
            .field("expected", &self.0.outstanding.load(Ordering::SeqCst))
            .finish()
    }
}

/// A result announced to an [`Inbox`], delivered once.
#[derive(Debug)]
pub struct InboxTicket(Inbox);

impl InboxTicket {
    /// Queues the message for the run.
    pub fn deliver(self, message: Message) {
        self.0.queue().push(message);
        // Dropping the ticket settles the count and wakes the run.
    }
}

impl Drop for InboxTicket {
    fn drop(&mut self) {
        self.0.0.outstanding.fetch_sub(1, Ordering::SeqCst);
        self.0.0.changed.notify_waiters();
    }
}
