//! How a mutex and its guard print: what a log line needs (the path, the node, the session),
//! not the lock's machinery, so `tracing::debug!(?guard)` is one short line.

use std::fmt;

use super::{InterProcessMutex, InterProcessMutexGuard, LockInternalsDriver};

impl<D: LockInternalsDriver> fmt::Debug for InterProcessMutex<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let internals = &self.inner.internals;
        f.debug_struct("InterProcessMutex")
            .field("path", &internals.base_path())
            .field("lock_name", &internals.lock_name())
            .field("driver", internals.driver())
            .field("holders", &self.inner.holders.len())
            .finish()
    }
}

impl<D: LockInternalsDriver> fmt::Debug for InterProcessMutexGuard<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterProcessMutexGuard")
            .field("node", &self.node.path())
            .field("session", &format_args!("{:#x}", self.node.session().id()))
            .field("owner", &self.owner)
            .field("released", &self.released)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    /// The guard of a real lock prints its node and session in one short line.
    #[tokio::test]
    async fn a_mutex_prints_its_path_not_its_machinery() {
        let zk = zkr_connection::ZkClient::builder("127.0.0.1:1").start().await.unwrap();
        let mutex = crate::locks::InterProcessMutex::new(&zk, "/jobs/nightly").unwrap();
        let printed = format!("{mutex:?}");
        assert_eq!(
            printed,
            "InterProcessMutex { path: \"/jobs/nightly\", lock_name: \"lock-\", driver: StandardLockInternalsDriver, holders: 0 }"
        );
    }
}
