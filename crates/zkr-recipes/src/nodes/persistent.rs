//! [`PersistentNode`]: Curator's `PersistentNode` on the watch engine.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use zkr_connection::{path, ZkClient};
use zookeeper_client::CreateMode;

use super::keeper::{Keeper, Shared, Spec};
use super::NodeError;
use crate::watch::{Sessions, Watch, WatchMode};

/// Builds a [`PersistentNode`]: [`PersistentNode::builder`].
#[derive(Debug)]
#[must_use = "a builder does nothing until `start`"]
pub struct PersistentNodeBuilder {
    zk: ZkClient,
    path: String,
    mode: CreateMode,
    data: Vec<u8>,
    ttl: Option<Duration>,
    delete_on_close: bool,
}

impl PersistentNodeBuilder {
    /// The node's data. Defaults to none.
    pub fn data(mut self, data: impl Into<Vec<u8>>) -> Self {
        self.data = data.into();
        self
    }

    /// A time to live, for [`Persistent`](CreateMode::Persistent) and
    /// [`PersistentSequential`](CreateMode::PersistentSequential) (Curator's `*_WITH_TTL`
    /// modes): see [`ZkClient::create_with_ttl`].
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Whether [`close`](PersistentNode::close) deletes the node. Defaults to `true`.
    pub fn delete_on_close(mut self, delete: bool) -> Self {
        self.delete_on_close = delete;
        self
    }

    /// Checks the settings and starts keeping the node in the background (Curator's
    /// `start()`); [`wait_for_initial_create`](PersistentNode::wait_for_initial_create)
    /// waits for the first create.
    ///
    /// # Errors
    /// [`NodeError::InvalidArgument`] for an invalid or reserved path, a TTL with another mode
    /// than the persistent ones, or a TTL out of range.
    ///
    /// # Panics
    /// Outside a tokio runtime.
    pub fn start(self) -> Result<PersistentNode, NodeError> {
        let invalid = |e| NodeError::InvalidArgument(super::invalid_argument(e));
        path::validate_node_path(&self.path).map_err(invalid)?;
        self.zk.validate_recipe_path(&self.path).map_err(invalid)?;
        path::validate_data(&self.path, &self.data).map_err(invalid)?;
        if let Some(ttl) = self.ttl {
            zkr_connection::validate_ttl(self.mode, ttl).map_err(invalid)?;
        }
        let spec = Spec { path: self.path, mode: self.mode, ttl: self.ttl };
        let (root, recursive) = spec.watch_root();
        let shared = Arc::new(Shared::new(self.zk.clone(), spec, self.data));
        let keeper = Keeper { shared: shared.clone(), session: None };
        let engine = Watch::new(&self.zk, &root, recursive, WatchMode::Persistent, keeper);
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(engine.run(Sessions::Follow, None, async move {
            let _ = stopped.await;
        }));
        let paths = shared.path.subscribe();
        Ok(PersistentNode {
            shared,
            paths,
            stop: Some(stop),
            task: Some(task),
            delete_on_close: self.delete_on_close,
        })
    }
}

/// A node that stays there (see the [module docs](super)): created in the background, created
/// again after another client deletes it and after a session expiry, with the data last set.
///
/// Sequential modes are always created protected (`_c_<uuid>-<name><sequence>`), so a create
/// whose reply was lost is found instead of left behind; their name changes each time they are
/// created again ([`path_watch`](Self::path_watch)). An ephemeral node of another session at
/// the path is not taken over (Curator writes its data over it): this node waits until it is
/// deleted, then creates its own.
///
/// [`close`](Self::close) deletes the node; dropping the handle without closing deletes it in
/// the background.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::nodes::NodeError> {
/// use std::time::Duration;
/// use zkr_recipes::nodes::PersistentNode;
/// use zookeeper_client::CreateMode;
///
/// let node = PersistentNode::builder(&zk, "/jobs/worker-", CreateMode::EphemeralSequential).start()?;
/// node.wait_for_initial_create(Duration::from_secs(5)).await?;
/// let mut paths = node.path_watch();
/// while paths.changed().await.is_ok() {
///     println!("now at {:?}", *paths.borrow());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct PersistentNode {
    shared: Arc<Shared>,
    paths: watch::Receiver<Option<String>>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    delete_on_close: bool,
}

impl PersistentNode {
    /// A builder for a node at `path` (for sequential modes: the path its name starts with)
    /// in `mode`.
    pub fn builder(zk: &ZkClient, path: &str, mode: CreateMode) -> PersistentNodeBuilder {
        PersistentNodeBuilder {
            zk: zk.clone(),
            path: path.to_owned(),
            mode,
            data: Vec::new(),
            ttl: None,
            delete_on_close: true,
        }
    }

    /// Waits until the node has been created (Curator's `waitForInitialCreate`); its path.
    ///
    /// # Errors
    /// [`NodeError::NotCreated`] with the last failure (or the session holding the path)
    /// when `timeout` passes first; [`NodeError::Closed`] if the connection manager closed.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_initial_create(&self, timeout: Duration) -> Result<String, NodeError> {
        let mut paths = self.paths.clone();
        let created = tokio::time::timeout(timeout, paths.wait_for(Option::is_some)).await;
        match created {
            Ok(Ok(path)) => Ok(path.clone().unwrap_or_default()),
            Ok(Err(_)) => Err(NodeError::Closed),
            Err(_) => Err(NodeError::NotCreated {
                path: self.shared.spec.path.clone(),
                timeout,
                held_by: self.shared.held_by(),
                last: self.shared.last_error.lock().clone().map(Box::new),
            }),
        }
    }

    /// The node's current path (Curator's `getActualPath`); `None` while it does not exist.
    pub fn actual_path(&self) -> Option<String> {
        self.shared.current()
    }

    /// The current path as a `tokio::sync::watch` receiver: it changes when the node is
    /// deleted (`None`) and created again.
    pub fn path_watch(&self) -> watch::Receiver<Option<String>> {
        self.paths.clone()
    }

    /// The data the node is created with.
    pub fn data(&self) -> Vec<u8> {
        self.shared.data()
    }

    /// How many times the node has been created so far (a test or a metric sees the
    /// re-creations).
    pub fn creates(&self) -> u64 {
        self.shared.creates()
    }

    /// Sets the node's data: on the node now if it exists, and for every later create.
    ///
    /// # Errors
    /// As [`ZkClient::retry`]: the data is stored all the same, and a node created again gets it.
    ///
    /// # Cancel safety
    /// Cancel safe: the data is stored before anything is sent.
    pub async fn set_data(&self, data: impl Into<Vec<u8>>) -> Result<(), NodeError> {
        Ok(self.shared.set_data(data.into()).await?)
    }

    /// Stops keeping the node and deletes it (unless built with `delete_on_close(false)`):
    /// awaited while connected, in the background otherwise, so it returns at once after a loss.
    ///
    /// # Cancel safety
    /// Cancel safe: the delete goes on in the background.
    pub async fn close(mut self) {
        if let Some(delete) = self.shutdown().await {
            let zk = self.shared.zk.clone();
            if zk.is_connected() {
                let _ = tokio::time::timeout(zk.connection_timeout(), delete).await;
            } else {
                zkr_connection::spawn_cleanup("a closed persistent node", delete);
            }
        }
    }

    /// Stops the engine; the delete still to do.
    async fn shutdown(&mut self) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        let _ = self.stop.take()?.send(());
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
        self.delete_on_close.then(|| delete_ours(self.shared.clone()))
    }
}

impl Drop for PersistentNode {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
            if self.delete_on_close {
                let (shared, task) = (self.shared.clone(), self.task.take());
                zkr_connection::spawn_cleanup("a dropped persistent node", async move {
                    if let Some(task) = task {
                        let _ = task.await;
                    }
                    delete_ours(shared).await;
                });
            }
        }
    }
}

/// Deletes our node: the current one, or, for a fixed path, whatever create may still have
/// been under way (requests on a session run in order, so this delete comes after it). An
/// ephemeral node of another session is left alone.
async fn delete_ours(shared: Arc<Shared>) {
    let spec = &shared.spec;
    let Some(path) = shared.current().or_else(|| (!spec.is_sequential()).then(|| spec.path.clone())) else {
        return;
    };
    let ephemeral = spec.is_ephemeral();
    let deleted = shared.zk.retry(|s| {
        let path = path.clone();
        async move {
            let Some(stat) = s.client().check_stat(&path).await? else { return Ok(()) };
            if ephemeral && stat.ephemeral_owner != s.id() {
                return Ok(());
            }
            match s.client().delete(&path, None).await {
                Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
                Err(e) => Err(e),
            }
        }
    });
    if let Err(error) = deleted.await {
        tracing::warn!(path = %path, %error, "could not delete a closed persistent node");
    }
}
