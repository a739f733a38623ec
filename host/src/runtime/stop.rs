//! [`StopSignal`]: the stop button of a Run.

use tokio::sync::watch;

/// A cloneable stop signal. [`StopSignal::stop`] asks every holder to stop; the session runtime
/// then cancels the compaction transaction (before its durable append) and persists nothing.
#[derive(Debug, Clone)]
pub struct StopSignal {
    sender: std::sync::Arc<watch::Sender<bool>>,
    receiver: watch::Receiver<bool>,
}

impl Default for StopSignal {
    fn default() -> Self {
        Self::new()
    }
}

impl StopSignal {
    /// A signal that has not been raised.
    pub fn new() -> Self {
        let (sender, receiver) = watch::channel(false);
        Self { sender: std::sync::Arc::new(sender), receiver }
    }

    /// Raises the signal.
    pub fn stop(&self) {
        self.sender.send_replace(true);
    }

    /// Whether the signal was raised.
    pub fn is_stopped(&self) -> bool {
        *self.receiver.borrow()
    }

    /// Resolves once the signal is raised.
    pub async fn stopped(&self) {
        let mut receiver = self.receiver.clone();
        // The sender lives as long as any clone of this signal, so `wait_for` cannot fail
        // while `self` is alive.
        let _ = receiver.wait_for(|stopped| *stopped).await;
    }
}
