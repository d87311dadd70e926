//! [`PersistentNode`]: Curator's `PersistentNode` on the watch engine.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use zkr_connection::{path, Parents, RetryOptions, ZkClient};
use zookeeper_client::CreateMode;

use super::keeper::{Keeper, Shared, Spec};
use super::NodeError;
use crate::watch::{Sessions, Watch, WatchMode};
use zkr_connection::Classify as _;

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
    compressed: bool,
    parents: Parents,
}

impl PersistentNodeBuilder {
    /// How missing ancestors are made. Defaults to [`Parents::Containers`] (Curator's
    /// `creatingParentContainersIfNeeded`), which the server deletes once empty;
    /// [`Parents::Persistent`] for a directory that other programs expect to stay (kazoo's
    /// recipes check their path once).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::nodes::NodeError> {
    /// use zkr_connection::{CreateMode, Parents};
    /// use zkr_recipes::nodes::PersistentNode;
    ///
    /// let node = PersistentNode::builder(&zk, "/party/member-1", CreateMode::Ephemeral)
    ///     .parents(Parents::Persistent)
    ///     .start().await?;
    /// # Ok(()) }
    /// ```
    pub fn parents(mut self, parents: Parents) -> Self {
        self.parents = parents;
        self
    }

    /// Stores the data gzip-compressed, as Curator's `PersistentNode` does on a client with
    /// compression on (`GzipCompressionProvider`): [`data`](PersistentNode::data) and
    /// [`set_data`](PersistentNode::set_data) still take and give it uncompressed. Defaults
    /// to false.
    pub fn compressed(mut self, compressed: bool) -> Self {
        self.compressed = compressed;
        self
    }

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
    /// `start()`); [`wait_for_initial_create_timeout`](PersistentNode::wait_for_initial_create_timeout)
    /// waits for the first create.
    ///
    /// # Errors
    /// [`NodeError::InvalidArgument`] for an invalid or reserved path, a TTL with another mode
    /// than the persistent ones, a TTL out of range, or a call outside a tokio runtime (the
    /// node is kept by a task).
    ///
    /// # Cancel safety
    /// Cancel safe: it awaits nothing, so a future dropped before it is polled starts nothing.
    pub async fn start(self) -> Result<PersistentNode, NodeError> {
        self.launch()
    }

    /// [`start`](Self::start)'s work, for the recipes that keep a node under a lock.
    pub(crate) fn launch(self) -> Result<PersistentNode, NodeError> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(NodeError::InvalidArgument(
                "a PersistentNode is kept by a task: build it inside a tokio runtime".into(),
            ));
        }
        crate::errors::check_node_path(&self.zk, &self.path)?;
        let data = stored(self.compressed, self.data);
        path::validate_data(&self.path, &data)?;
        if let Some(ttl) = self.ttl {
            zkr_connection::validate_ttl(self.mode, ttl)?;
        }
        let spec = Spec { path: self.path, mode: self.mode, ttl: self.ttl, parents: self.parents };
        let (root, recursive) = spec.watch_root();
        let shared = Arc::new(Shared::new(self.zk.clone(), spec, data));
        let keeper = Keeper { shared: shared.clone(), session: None };
        let engine = Watch::new(&self.zk, &root, recursive, WatchMode::Auto, keeper);
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(engine.run(Sessions::Follow, None, async move {
            let _ = stopped.await;
        }));
        let paths = shared.path.subscribe();
        Ok(PersistentNode {
            shared,
            paths,
            stage: Mutex::new(Stage::Running(stop, task)),
            delete_on_close: self.delete_on_close,
            compressed: self.compressed,
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
/// use zkr_connection::CreateMode;
///
/// let node = PersistentNode::builder(&zk, "/jobs/worker-", CreateMode::EphemeralSequential).start().await?;
/// node.wait_for_initial_create_timeout(Duration::from_secs(5)).await?;
/// let mut paths = node.path_watch();
/// while paths.changed().await.is_ok() {
///     println!("now at {:?}", *paths.borrow());
/// }
/// # Ok(()) }
/// ```
pub struct PersistentNode {
    shared: Arc<Shared>,
    paths: watch::Receiver<Option<String>>,
    /// Running, closing, or given to the background by a drop.
    stage: Mutex<Stage>,
    delete_on_close: bool,
    compressed: bool,
}

/// What a log line needs (the path asked for, the node there now, how often it was made), not
/// the node's machinery.
impl std::fmt::Debug for PersistentNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PersistentNode")
            .field("path", &self.shared.spec.path)
            .field("mode", &self.shared.spec.mode)
            .field("node", &self.actual_path())
            .field("creates", &self.creates())
            .finish()
    }
}

/// Where a [`PersistentNode`] is in its life.
#[derive(Debug)]
enum Stage {
    /// The engine's stop and task.
    Running(oneshot::Sender<()>, JoinHandle<()>),
    /// Closed: the cleanup runs in a task of its own, which sets this to `true` when done;
    /// every closer waits for it.
    Closing(watch::Receiver<bool>),
    /// Dropped: the cleanup went to the background.
    Dropped,
}

/// `data` as the node stores it.
fn stored(compressed: bool, data: Vec<u8>) -> Vec<u8> {
    match compressed {
        true => zkr_connection::compression::compress(&data),
        false => data,
    }
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
            compressed: false,
            parents: Parents::Containers,
        }
    }

    /// Waits at most `timeout` until the node has been created (Curator's
    /// `waitForInitialCreate`): its path, or `Ok(None)` when `timeout` passed first; then
    /// [`creation_error`](Self::creation_error) says why.
    ///
    /// # Errors
    /// [`NodeError::Closed`] if the connection manager closed.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_initial_create_timeout(
        &self,
        timeout: Duration,
    ) -> Result<Option<String>, NodeError> {
        let mut paths = self.paths.clone();
        let created = tokio::time::timeout(timeout, paths.wait_for(Option::is_some)).await;
        match created {
            Ok(Ok(path)) => Ok(Some(path.clone().unwrap_or_default())),
            Ok(Err(_)) => Err(NodeError::Closed),
            Err(_) => Ok(None),
        }
    }

    /// Why the node does not exist now ([`NodeError::NotCreated`] with the last failure or
    /// the session holding the path); `None` while it exists.
    pub fn creation_error(&self) -> Option<NodeError> {
        self.shared.current().is_none().then(|| NodeError::NotCreated {
            path: self.shared.spec.path.clone(),
            held_by: self.shared.held_by(),
            last: self.shared.last_error.lock().clone().map(Box::new),
        })
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
        let data = self.shared.data();
        match self.compressed {
            // Compressed by this handle from what its caller handed over whole: no cap applies.
            true => {
                zkr_connection::compression::decompress_limited(&self.shared.spec.path, &data, usize::MAX)
                    .unwrap_or(data)
            }
            false => data,
        }
    }

    /// The creation zxid of the first node this handle created or adopted: when it entered a
    /// round (a barrier's member node is created again, newer, after a session expiry).
    pub(crate) fn first_czxid(&self) -> Option<i64> {
        self.shared.first_czxid()
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
        Ok(self.shared.set_data(stored(self.compressed, data.into())).await?)
    }

    /// Stops keeping the node and deletes it (unless built with `delete_on_close(false)`).
    ///
    /// The delete is awaited while connected; after a loss (or when the connection drops
    /// while deleting) this returns at once and the delete goes on in the background until
    /// it is done: a persistent node is deleted on whatever session comes next, an ephemeral
    /// one until its session ends (which takes it).
    ///
    /// # Cancel safety
    /// Cancel safe: the engine's stop and the delete run in a task of their own from the first
    /// poll, so a dropped close still deletes the node.
    pub async fn close(self) {
        self.close_shared().await;
    }

    /// [`close`](Self::close) through a shared handle (a registry's): whoever else holds the
    /// node sees it closed, and their drop does nothing more. Every caller, the first or one
    /// that comes while the delete is under way, returns when the delete is done (or, as
    /// [`close`](Self::close) says, at once when the connection is lost).
    pub(crate) async fn close_shared(&self) {
        let mut done = {
            let mut stage = self.stage.lock();
            match &*stage {
                Stage::Closing(done) => done.clone(),
                Stage::Dropped => return,
                Stage::Running(..) => {
                    let Some(cleanup) = Self::cleanup(&mut stage, &self.shared, self.delete_on_close) else {
                        return;
                    };
                    let (finished, done) = watch::channel(false);
                    // A task of its own from the first poll: a dropped close still deletes.
                    tokio::spawn(async move {
                        cleanup.await;
                        finished.send_replace(true);
                    });
                    *stage = Stage::Closing(done.clone());
                    done
                }
            }
        };
        tokio::select! {
            biased;
            // Done, or the task is gone (its runtime shut down): nothing more to wait for.
            _ = done.wait_for(|done| *done) => {}
            () = crate::fence::disconnected(&self.shared.zk) => {}
        }
    }

    /// Stops the engine (at once) and hands back the rest: await the engine, then delete our
    /// node (when `delete`). `None` unless `stage` was running; it is left `Dropped`.
    fn cleanup(
        stage: &mut Stage,
        shared: &Arc<Shared>,
        delete: bool,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        if !matches!(stage, Stage::Running(..)) {
            return None;
        }
        let Stage::Running(stop, task) = std::mem::replace(stage, Stage::Dropped) else {
            return None;
        };
        let _ = stop.send(());
        let shared = shared.clone();
        Some(async move {
            let _ = task.await;
            if delete {
                delete_ours(shared).await;
            }
        })
    }
}

impl Drop for PersistentNode {
    fn drop(&mut self) {
        if let Some(cleanup) = Self::cleanup(&mut self.stage.lock(), &self.shared, self.delete_on_close) {
            zkr_connection::spawn_cleanup("a dropped persistent node", cleanup);
        }
    }
}

/// Deletes our node: the current one, or, for a fixed path, whatever create may still have
/// been under way (requests on a session run in order, so this delete comes after it). An
/// ephemeral node of another session is left alone, and so is a node created at the path after
/// ours (by another handle, perhaps on the same session). Keeps trying through connection loss and
/// session changes until done (an ephemeral node is done when its session is), or the manager
/// closes.
async fn delete_ours(shared: Arc<Shared>) {
    let spec = &shared.spec;
    let current = shared.current();
    // The node we know: only it is deleted. Without one (a create was under way when the
    // engine stopped), whatever is at the fixed path on our session is ours.
    let czxid = current.as_ref().and_then(|_| shared.czxid());
    let Some(path) = current.or_else(|| (!spec.is_sequential()).then(|| spec.path.clone())) else {
        return;
    };
    let ephemeral = spec.is_ephemeral();
    let mut pause = zkr_connection::retry::SessionPause::default();
    loop {
        let deleted = shared.zk.retry_with(RetryOptions::default().across_sessions(true), |s| {
            let path = path.clone();
            async move {
                let Some(stat) = s.client().check_stat(&path).await? else { return Ok(()) };
                if ephemeral && stat.ephemeral_owner != s.id() {
                    return Ok(()); // another session's, or ours gone with our session
                }
                if czxid.is_some_and(|czxid| stat.czxid != czxid) {
                    return Ok(()); // created since by another handle (on this session, too)
                }
                match s.client().delete(&path, Some(stat.version)).await {
                    Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
                    Err(e) => Err(e),
                }
            }
        });
        match deleted.await {
            Ok(()) => return,
            Err(error) if (error.is_retryable() || error.is_ambiguous()) && !shared.zk.is_closed() => {
                tracing::debug!(path = %path, %error, "deleting a closed persistent node; will retry");
                pause.sleep().await;
            }
            Err(error) => {
                tracing::warn!(path = %path, %error, "could not delete a closed persistent node");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use zookeeper_client::CreateMode;

    /// Built on a thread without a runtime, the node is an error, not a panic.
    #[tokio::test]
    async fn outside_a_runtime_build_is_an_error() {
        let zk = zkr_connection::ZkClient::builder("127.0.0.1:1").start().await.unwrap();
        let builder = super::PersistentNode::builder(&zk, "/n", CreateMode::Ephemeral);
        let built = std::thread::spawn(move || futures::executor::block_on(builder.start()).map(drop))
            .join()
            .expect("no panic");
        let error = built.unwrap_err();
        assert!(error.to_string().contains("inside a tokio runtime"), "{error}");
    }
}
