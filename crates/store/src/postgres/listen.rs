//! The store's listening connection: `LISTEN toolsmith_wake` on a connection of its own (a
//! pooled one would be handed to other work), each notification sent to the store's
//! subscribers ([`ServiceStore::wakes`](crate::ServiceStore::wakes)).

use std::time::Duration;

use tokio_postgres::{AsyncMessage, NoTls};

use super::PostgresStore;
use crate::wake::Wakes;

/// The notification channel of wake-ups.
pub(super) const CHANNEL: &str = "toolsmith_wake";

/// How long to wait before connecting again after the connection failed or was lost.
const RECONNECT: Duration = Duration::from_secs(1);

impl PostgresStore {
    /// A subscription to the wake-ups, the listening connection started at the first made on
    /// a Tokio runtime. Made outside a runtime before any was, it hears nothing: there is no
    /// runtime to run the listening connection on.
    pub(super) fn listen(&self) -> tokio::sync::broadcast::Receiver<()> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return self
                .listener
                .get()
                .map_or_else(|| Wakes::default().subscribe(), Wakes::subscribe);
        };
        let wakes = self.listener.get_or_init(|| {
            let wakes = Wakes::default();
            runtime.spawn(listen(self.config.clone(), wakes.clone()));
            wakes
        });
        wakes.subscribe()
    }
}

/// Listens until no subscriber is left, connecting again after a loss; each time it starts
/// listening it wakes the subscribers once, for what they may have missed meanwhile.
async fn listen(config: tokio_postgres::Config, wakes: Wakes) {
    loop {
        if let Ok((client, mut connection)) = config.connect(NoTls).await {
            let (heard, mut hear) = tokio::sync::mpsc::unbounded_channel();
            // The connection's messages, notifications among them, come only from polling it.
            let driver = tokio::spawn(async move {
                while let Some(message) =
                    std::future::poll_fn(|cx| connection.poll_message(cx)).await
                {
                    match message {
                        Ok(AsyncMessage::Notification(_)) => {
                            let _ = heard.send(());
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
            });
            if client
                .batch_execute(&format!("LISTEN {CHANNEL}"))
                .await
                .is_ok()
            {
                wakes.send();
                while hear.recv().await.is_some() && wakes.is_heard() {
                    wakes.send();
                }
            }
            driver.abort();
        }
        if !wakes.is_heard() {
            return;
        }
        tokio::time::sleep(RECONNECT).await;
    }
}
