//! [`CancelToken`]: a tiny, cloneable cancellation signal for provider calls.
//!
//! A client holding a token (see the clients' `with_cancel` builders) checks it before sending
//! and races every await of the call against it, so a fired token ends the call promptly with a
//! `Cancelled` failure and nothing half-read is returned. Dropping the call's future also
//! aborts the HTTP request (reqwest closes the connection); the compaction driver then calls
//! `Compaction::cancel` itself.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

/// A cancellation signal shared by clones. Once fired it stays fired.
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    fired: AtomicBool,
    notify: Notify,
}

impl CancelToken {
    /// A token that has not fired.
    pub fn new() -> Self {
        Self::default()
    }

    /// Fires the token: every current and future wait on it (and on its clones) completes.
    pub fn cancel(&self) {
        self.inner.fired.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }

    /// Whether the token has fired.
    pub fn is_cancelled(&self) -> bool {
        self.inner.fired.load(Ordering::SeqCst)
    }

    /// Completes once the token has fired (immediately if it already has).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            // Register before checking the flag, so a `cancel` in between is not missed.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken").field("cancelled", &self.is_cancelled()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_fired_clone_wakes_a_waiter() {
        let token = CancelToken::new();
        let waiter = {
            let token = token.clone();
            tokio::spawn(async move { token.cancelled().await })
        };
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!token.is_cancelled());
        token.clone().cancel();
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("the waiter wakes")
            .expect("the waiter task ends");
        assert!(token.is_cancelled());
    }

    #[tokio::test]
    async fn an_already_fired_token_completes_at_once() {
        let token = CancelToken::new();
        token.cancel();
        tokio::time::timeout(Duration::from_millis(100), token.cancelled())
            .await
            .expect("no wait after firing");
    }
}
