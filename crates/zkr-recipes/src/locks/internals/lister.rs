//! [`Lister`]: the children listings of a lock directory, shared by the local waiters.

use std::sync::Arc;

use futures::future::{BoxFuture, FutureExt, Shared};
use parking_lot::Mutex;
use zkr_connection::Session;

type Listing = Shared<BoxFuture<'static, Result<Arc<Vec<String>>, zookeeper_client::Error>>>;

/// One sorted children listing shared by every local waiter that needs one sent after a given
/// moment: waiters that arrive together cost a handful of listings and one sort each, not one
/// listing of the whole queue (and one sort of it) per waiter.
#[derive(Default)]
pub(super) struct Lister {
    state: Mutex<ListerState>,
}

#[derive(Default)]
struct ListerState {
    issued: u64,
    latest: Option<(u64, u64, Listing)>,
}

impl std::fmt::Debug for Lister {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister").finish_non_exhaustive()
    }
}

impl Lister {
    /// A mark: listings issued from now on have an id at least this. Take it before sending the
    /// request whose effect a listing must show (requests of one session are applied in order).
    pub(super) fn mark(&self) -> u64 {
        self.state.lock().issued + 1
    }

    /// The contenders under `base`, sorted by `sort`, from a listing issued at or after
    /// `not_before` on `session`.
    pub(super) async fn list<F>(
        &self,
        session: &Session,
        base: &str,
        not_before: u64,
        sort: F,
    ) -> Result<Arc<Vec<String>>, zookeeper_client::Error>
    where
        F: FnOnce(Vec<String>) -> Vec<String> + Send + 'static,
    {
        let listing = {
            let mut state = self.state.lock();
            match &state.latest {
                // A listing that failed is never handed out again: a retry lists anew.
                Some((id, generation, listing))
                    if *id >= not_before
                        && *generation == session.generation()
                        && !matches!(listing.peek(), Some(Err(_))) =>
                {
                    listing.clone()
                }
                _ => {
                    state.issued += 1;
                    let client = session.client().clone();
                    let base = base.to_string();
                    let listing = async move {
                        client.list_children(&base).await.map(|children| Arc::new(sort(children)))
                    }
                    .boxed()
                    .shared();
                    // Poll once now, under the lock: the request is sent at its first poll, so
                    // its id orders it after every mark taken so far.
                    let _ = listing.clone().now_or_never();
                    state.latest = Some((state.issued, session.generation(), listing.clone()));
                    listing
                }
            }
        };
        listing.await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 16 item 12: a shared listing that ended in an error was handed back to every
    /// retry whose mark it covered, so a waiter kept getting the same error at once until its
    /// retry policy gave up, long after the connection was back.
    #[tokio::test]
    async fn a_failed_listing_is_not_handed_out_again() {
        let server = zkr_testing::shared_server().await.unwrap();
        let zk = zkr_connection::ZkClient::connect(server.connect_string()).await.unwrap();
        let session = zk.session().await.unwrap();
        let base = format!("/t-lister-{}", uuid::Uuid::new_v4().simple());
        let lister = Lister::default();
        let mark = lister.mark();
        let failed = lister.list(&session, &base, mark, |c| c).await;
        assert_eq!(failed.unwrap_err(), zookeeper_client::Error::NoNode);
        for node in [base.clone(), format!("{base}/a")] {
            zk.create(&node, b"", zookeeper_client::CreateMode::Persistent).await.unwrap();
        }
        // The same mark: before the fix this was the stored NoNode.
        let listed = lister.list(&session, &base, mark, |c| c).await.unwrap();
        assert_eq!(*listed, vec!["a".to_owned()]);
        // A listing that worked is shared as before.
        let shared = lister.list(&session, &base, mark, |c| c).await.unwrap();
        assert!(Arc::ptr_eq(&listed, &shared));
    }
}
