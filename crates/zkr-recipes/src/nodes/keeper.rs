//! The policy that keeps a [`PersistentNode`](super::PersistentNode) there: a consumer of the
//! watch engine whose full read makes sure the node exists on the session, and whose bursts
//! create it again when it is deleted.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use zkr_connection::protected::ProtectedCreate;
use zkr_connection::SessionClient;
use zkr_connection::{path, Error, Session, ZkClient};
use zookeeper_client::{CreateMode, EventType, OneshotWatcher, Stat, WatchedEvent};

use crate::watch::{Consumer, Flow, ZkResult};

/// What is kept: fixed when the node is built.
#[derive(Debug, Clone)]
pub(crate) struct Spec {
    /// The node's path; for sequential modes, the path it is created under.
    pub(crate) path: String,
    pub(crate) mode: CreateMode,
    pub(crate) ttl: Option<Duration>,
    /// How missing ancestors are made.
    pub(crate) parents: zkr_connection::Parents,
}

impl Spec {
    pub(crate) fn is_sequential(&self) -> bool {
        matches!(self.mode, CreateMode::EphemeralSequential | CreateMode::PersistentSequential)
    }

    pub(crate) fn is_ephemeral(&self) -> bool {
        matches!(self.mode, CreateMode::Ephemeral | CreateMode::EphemeralSequential)
    }

    /// Where the watch goes: the node itself, or for sequential names the parent, recursively
    /// (the name is not known before the create).
    pub(crate) fn watch_root(&self) -> (String, bool) {
        if self.is_sequential() {
            (path::parent(&self.path).unwrap_or("/").to_owned(), true)
        } else {
            (self.path.clone(), false)
        }
    }

    /// Is a node with `stat` ours on `session`? Any node at our path for the persistent
    /// modes; for the ephemeral ones, only the session's own.
    fn owns(&self, stat: &Stat, session: &Session) -> bool {
        !self.is_ephemeral() || stat.ephemeral_owner == session.id()
    }
}

/// The state a node's handle and its engine share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) zk: ZkClient,
    pub(crate) spec: Spec,
    data: Mutex<(u64, Vec<u8>)>,
    /// Serializes writes of the data, so the last write is of the latest data.
    writes: tokio::sync::Mutex<()>,
    pub(crate) path: watch::Sender<Option<String>>,
    pub(crate) last_error: Mutex<Option<Error>>,
    /// Another session's ephemeral node at our path (0: none).
    held_by: AtomicI64,
    /// The creation zxid of the node we created or adopted last (0: none yet): a close
    /// deletes that node only, never one another handle created at the same path since.
    czxid: AtomicI64,
    /// The creation zxid of the first node we created or adopted (0: none yet).
    first_czxid: AtomicI64,
    creates: AtomicU64,
}

impl Shared {
    pub(crate) fn new(zk: ZkClient, spec: Spec, data: Vec<u8>) -> Self {
        Shared {
            zk,
            spec,
            data: Mutex::new((0, data)),
            writes: tokio::sync::Mutex::new(()),
            path: watch::channel(None).0,
            last_error: Mutex::new(None),
            held_by: AtomicI64::new(0),
            czxid: AtomicI64::new(0),
            first_czxid: AtomicI64::new(0),
            creates: AtomicU64::new(0),
        }
    }

    pub(crate) fn data(&self) -> Vec<u8> {
        self.data.lock().1.clone()
    }

    pub(crate) fn current(&self) -> Option<String> {
        self.path.borrow().clone()
    }

    pub(crate) fn held_by(&self) -> Option<i64> {
        Some(self.held_by.load(Ordering::SeqCst)).filter(|s| *s != 0)
    }

    /// The creation zxid of our node, when one was created or adopted.
    pub(crate) fn czxid(&self) -> Option<i64> {
        Some(self.czxid.load(Ordering::SeqCst)).filter(|z| *z != 0)
    }

    /// The creation zxid of the first node we created or adopted.
    pub(crate) fn first_czxid(&self) -> Option<i64> {
        Some(self.first_czxid.load(Ordering::SeqCst)).filter(|z| *z != 0)
    }

    /// Records the node we created or adopted.
    fn owned(&self, czxid: i64) {
        self.czxid.store(czxid, Ordering::SeqCst);
        let _ = self.first_czxid.compare_exchange(0, czxid, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// How many times the node was created.
    pub(crate) fn creates(&self) -> u64 {
        self.creates.load(Ordering::SeqCst)
    }

    /// Stores new data and writes it to the node if there is one.
    pub(crate) async fn set_data(&self, data: Vec<u8>) -> Result<(), Error> {
        {
            let mut stored = self.data.lock();
            stored.0 += 1;
            stored.1 = data;
        }
        self.write_latest().await
    }

    /// Writes the latest data to the current node; a missing node gets it when it is created.
    async fn write_latest(&self) -> Result<(), Error> {
        let _turn = self.writes.lock().await;
        let Some(path) = self.current() else { return Ok(()) };
        let data = self.data();
        // Conditional on a version: no attempt can land after a later write (see
        // `ZkClient::overwrite`).
        match self.zk.overwrite(&path, &data, None).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_no_node() => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn publish(&self, path: Option<String>) {
        self.path.send_if_modified(|current| {
            let changed = *current != path;
            *current = path;
            changed
        });
    }

    /// Makes sure our node exists on `session`; its path, or `None` while another session's
    /// ephemeral node holds the path.
    async fn ensure(&self, session: &Session) -> Result<Option<String>, Error> {
        if let Some(path) = self.current() {
            let stat = session.client().check_stat(&path).await.map_err(Error::Zk)?;
            if let Some(stat) = stat.filter(|stat| self.spec.owns(stat, session)) {
                self.owned(stat.czxid);
                return Ok(Some(path));
            }
        }
        let (epoch, data) = self.data.lock().clone();
        let created = if self.spec.is_sequential() {
            self.create_sequential(&data).await?
        } else {
            match self.create_at_path(&data, session).await? {
                Some(path) => path,
                None => return Ok(None),
            }
        };
        self.held_by.store(0, Ordering::SeqCst);
        self.creates.fetch_add(1, Ordering::SeqCst);
        self.publish(Some(created.clone()));
        if self.data.lock().0 != epoch {
            self.write_latest().await?;
        }
        Ok(Some(created))
    }

    /// A sequential node, always protected: a create whose reply was lost is found by its
    /// prefix instead of leaving a node nobody knows.
    async fn create_sequential(&self, data: &[u8]) -> Result<String, Error> {
        let parent = path::parent(&self.spec.path).unwrap_or("/");
        let name = path::node_name(&self.spec.path);
        let mut request =
            ProtectedCreate::new(parent, name, self.spec.mode).data(data).parents(self.spec.parents);
        if let Some(ttl) = self.spec.ttl {
            request = request.ttl(ttl);
        }
        let node = self.zk.create_protected_ext(request).await?;
        self.owned(node.stat.czxid);
        Ok(node.path)
    }

    /// The node at its fixed path; `None` when another session's ephemeral node is there.
    async fn create_at_path(&self, data: &[u8], session: &Session) -> Result<Option<String>, Error> {
        let path = &self.spec.path;
        let mut create = self.zk.create_node(path).data(data).mode(self.spec.mode).parents(self.spec.parents);
        if let Some(ttl) = self.spec.ttl {
            create = create.ttl(ttl);
        }
        match create.await {
            Ok(zkr_connection::Created { stat, .. }) => {
                self.owned(stat.czxid);
                return Ok(Some(path.clone()));
            }
            Err(e) if e.is_node_exists() => {}
            Err(e) => return Err(e),
        }
        let stat = self.zk.retry(|s| async move { s.client().check_stat(path).await }).await?;
        match stat {
            // Gone again already: the next try creates it.
            None => Err(Error::Zk(zookeeper_client::Error::NoNode)),
            Some(stat) if !self.spec.owns(&stat, session) => {
                tracing::info!(path = %path, owner = stat.ephemeral_owner, "node held by another session; waiting for it to go");
                self.held_by.store(stat.ephemeral_owner, Ordering::SeqCst);
                Ok(None)
            }
            Some(stat) => {
                self.owned(stat.czxid);
                // Ours (a retried create, or a persistent node that was already there, which
                // Curator adopts too): it gets our data.
                self.publish(Some(path.clone()));
                self.write_latest().await?;
                Ok(Some(path.clone()))
            }
        }
    }

    fn record(&self, error: &Error) {
        *self.last_error.lock() = Some(error.clone());
    }
}

/// The engine's consumer: [`Shared::ensure`] on every full read and on every deletion of our
/// node.
pub(crate) struct Keeper {
    pub(crate) shared: Arc<Shared>,
    pub(crate) session: Option<Session>,
}

impl Keeper {
    async fn ensure(&self, session: &Session) -> ZkResult<Option<String>> {
        match self.shared.ensure(session).await {
            Ok(path) => {
                *self.shared.last_error.lock() = None;
                Ok(path)
            }
            Err(error) => {
                tracing::debug!(path = %self.shared.spec.path, %error, "persistent node: create failed");
                self.shared.record(&error);
                Err(zk_error(error))
            }
        }
    }

    /// Does the burst delete our node (or the node of another session we wait for)?
    fn deletes_ours(&self, burst: &[WatchedEvent]) -> bool {
        let current = self.shared.current();
        burst.iter().any(|event| {
            event.event_type == EventType::NodeDeleted
                && (current.as_deref() == Some(event.path.as_str())
                    || (!self.shared.spec.is_sequential() && event.path == self.shared.spec.path))
        })
    }
}

/// The engine speaks ZooKeeper's errors: what it needs to tell a session error from another.
fn zk_error(error: Error) -> zookeeper_client::Error {
    match error {
        Error::Zk(e) => e,
        Error::SessionExpired { .. } => zookeeper_client::Error::SessionExpired,
        Error::Closed => zookeeper_client::Error::ClientClosed,
        _ => zookeeper_client::Error::ConnectionLoss,
    }
}

/// How many times a read with a watch makes sure of a node that is gone again before the watch
/// is set on it.
const ENSURE_RACES: usize = 8;

impl Consumer for Keeper {
    type Read = (Session, Option<String>);

    async fn read(&self, session: &Session) -> ZkResult<Self::Read> {
        Ok((session.clone(), self.ensure(session).await?))
    }

    /// For servers without persistent watches (before 3.6): the node made sure of, with a
    /// watch on it (on the node in the way, when another session's ephemeral holds the path),
    /// which fires when it changes or goes.
    async fn read_watched(&self, session: &Session) -> ZkResult<(Self::Read, Vec<OneshotWatcher>)> {
        let mut tries = 0;
        loop {
            tries += 1;
            let path = self.ensure(session).await?;
            let watched = path.as_deref().unwrap_or(&self.shared.spec.path);
            let (stat, watcher) = session.client().check_and_watch_stat(watched).await?;
            if stat.is_some() {
                return Ok(((session.clone(), path), vec![watcher]));
            }
            // Gone again before the watch was set: make sure of it again; a node deleted
            // every time is a failure the engine tries again after a pause.
            if tries == ENSURE_RACES {
                return Err(zookeeper_client::Error::NoNode);
            }
        }
    }

    fn reset(&mut self, (session, path): Self::Read) {
        self.session = Some(session);
        self.shared.publish(path);
    }

    async fn apply(&mut self, _client: &SessionClient, burst: Vec<WatchedEvent>) -> ZkResult<Flow> {
        if self.deletes_ours(&burst) {
            self.shared.publish(None);
            if let Some(session) = self.session.clone() {
                let path = self.ensure(&session).await?;
                self.shared.publish(path);
            }
        }
        Ok(Flow::Continue(()))
    }

    fn session_ended(&mut self) {
        self.session = None;
        if self.shared.spec.is_ephemeral() {
            // Gone with the session: the next one creates it again.
            self.shared.publish(None);
        }
    }
}
