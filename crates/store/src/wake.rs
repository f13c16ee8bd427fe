//! [`Wakes`]: the wake-ups of [`ServiceStore::wake_replicas`](crate::ServiceStore), delivered
//! to every subscriber of one store (and, on PostgreSQL, of every store on the database).

use tokio::sync::broadcast;

/// A store's wake-up channel: each [`send`](Wakes::send) reaches every receiver subscribed
/// before it. A receiver that falls behind by more than a few wake-ups gets one `Lagged`
/// (which means "look now" all the same).
#[derive(Debug, Clone)]
pub(crate) struct Wakes(broadcast::Sender<()>);

impl Default for Wakes {
    fn default() -> Self {
        // A wake-up carries nothing: a few queued are as good as many.
        Wakes(broadcast::channel(4).0)
    }
}

impl Wakes {
    /// Wakes every receiver; none is not an error.
    pub(crate) fn send(&self) {
        let _ = self.0.send(());
    }

    /// A new receiver.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<()> {
        self.0.subscribe()
    }

    /// Whether anyone still listens.
    #[cfg(feature = "postgres")]
    pub(crate) fn is_heard(&self) -> bool {
        self.0.receiver_count() > 0
    }
}
