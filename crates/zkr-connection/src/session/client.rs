//! [`ZkClient`]: the handle every recipe takes; the task that owns the session is in
//! `supervisor.rs`.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;
use tokio_util::sync::{CancellationToken, DropGuard};
use zookeeper_client::Acl;

use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::path;
use crate::retry::RetryPolicy;
use crate::session::builder::{Config, ZkClientBuilder};
use crate::session::session_client::SessionClient;
use crate::session::state::{ConnectionState, ConnectionStateErrorPolicy};
pub(crate) use crate::session::supervisor::Shared;

/// One ZooKeeper session of a [`ZkClient`]: the `zookeeper-client` handle (already rooted at the
/// namespace) and the session's generation, which grows by one with every session the manager
/// builds.
///
/// Recipes take a `Session` for a sequence of operations that belong together (an ephemeral
/// node and the watches on it) and compare generations to learn that the session changed. Hold
/// it only as long as that sequence: a held `Session` keeps its `Client` alive.
#[derive(Clone)]
pub struct Session {
    pub(crate) client: SessionClient,
    pub(crate) generation: u64,
    pub(crate) connection: u64,
}

impl Session {
    /// The `zookeeper-client` handle for this session, its requests counted (with the
    /// `metrics` feature): every method of `zookeeper_client::Client` is there.
    pub fn client(&self) -> &SessionClient {
        &self.client
    }

    /// The generation: 1 for the first session of a manager, then one more per rebuild.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The connection: one more for every `zookeeper-client` handle the manager publishes, a new
    /// session's or the same session's re-attached on new hosts after a reconfiguration (the
    /// ensemble tracker). Watches set through an earlier connection's handle no longer fire:
    /// whatever follows a watch compares connections, whatever a session owns (ephemeral
    /// nodes, locks) compares generations.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let session = zk.session().await?;
    /// zk.connection_replaced(session.connection()).await;
    /// # Ok(()) }
    /// ```
    pub fn connection(&self) -> u64 {
        self.connection
    }

    /// ZooKeeper's session id.
    pub fn id(&self) -> i64 {
        self.client.session_id().0
    }

    /// Has this session ended, as its own handle has seen it (expired, closed or failed
    /// authentication)? The manager learns it at the same moment and builds the next session
    /// shortly after; this answers before that.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let session = zk.session().await?;
    /// assert!(!session.is_ended());
    /// # Ok(()) }
    /// ```
    pub fn is_ended(&self) -> bool {
        self.client.state_watcher().peek_state().is_terminated()
    }
}

/// A cheap `Clone` handle to ZooKeeper that survives session expiry: Curator's
/// `CuratorFramework`.
///
/// It owns the session. When the session expires (on the server, or on the client after the
/// connection has been gone for longer than the session could survive) it builds a new one with
/// the same settings and auth, bumps the [`Session::generation`], and announces
/// [`ConnectionState::Lost`] followed by [`ConnectionState::Reconnected`]. States follow
/// Curator's rules exactly; see [`ConnectionState`].
///
/// Operations go through [`retry`](Self::retry) (Curator's `RetryLoop`) or the helpers built on
/// it: [`create`](Self::create), [`create_protected`](Self::create_protected),
/// [`guaranteed_delete`](Self::guaranteed_delete) and more.
///
/// Dropping the last handle stops the manager and closes the session; [`close`](Self::close)
/// does it explicitly.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_connection::Result<()> {
/// use futures::StreamExt;
/// use zkr_connection::ZkClient;
///
/// let zk = ZkClient::connect("127.0.0.1:2181").await?;
/// let mut states = zk.state_changes();
/// tokio::spawn(async move {
///     while let Some(state) = states.next().await {
///         println!("connection state: {state}");
///     }
/// });
/// let data = zk.retry(|session| async move { session.client().get_data("/config").await }).await?;
/// # Ok(()) }
/// ```
#[doc(alias = "CuratorFramework")]
#[derive(Clone)]
pub struct ZkClient {
    pub(crate) shared: Arc<Shared>,
    /// Set on a [`using_namespace`](Self::using_namespace) view.
    pub(crate) view: Option<Arc<crate::session::namespace::View>>,
    /// Set on a [`with_timeout`](Self::with_timeout) handle: what bounds each framework call.
    pub(crate) call_timeout: Option<std::time::Duration>,
    _stop_on_last_drop: Arc<DropGuard>,
}

/// Is the published session `current` no longer the one of `generation` (replaced, or given
/// up: none)? What [`ZkClient::session_replaced`] waits for and the retry loop checks.
pub(crate) fn not_of_generation(current: &Option<Session>, generation: u64) -> bool {
    current.as_ref().is_none_or(|s| s.generation() != generation)
}

impl ZkClient {
    /// A builder with Curator's defaults for `connect_string` (`host:port[,host:port...][/chroot]`).
    pub fn builder(connect_string: impl Into<String>) -> ZkClientBuilder {
        ZkClientBuilder::new(connect_string)
    }

    /// Connects with every default and waits for the first session (at most 15 s).
    ///
    /// # Errors
    /// As [`ZkClientBuilder::connect`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn connect(connect_string: impl Into<String>) -> Result<Self> {
        Self::builder(connect_string).connect().await
    }

    pub(crate) fn start(config: Config, runtime: &tokio::runtime::Handle) -> Self {
        let cancel = CancellationToken::new();
        let ensemble = crate::session::ensemble::Ensemble::new(&config.connect_string);
        let shared = Arc::new(Shared {
            config,
            session: watch::channel(None).0,
            state: watch::channel(None).0,
            state_since: Mutex::new(std::time::Instant::now()),
            listeners: Mutex::new(Vec::new()),
            last_error: Mutex::new(None),
            last_cause: Mutex::new(None),
            generation: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            ensemble,
            error_epoch: watch::channel(0).0,
            cancel: cancel.clone(),
            expire: Notify::new(),
            ended: Notify::new(),
            persistent_watches: tokio::sync::OnceCell::new(),
            refusals: watch::channel(0).0,
            no_server: watch::channel(0).0,
            supervisor: Mutex::new(None),
            attempts: crate::session::stall::Attempts::default(),
        });
        let task = runtime.spawn(crate::session::supervisor::supervise(shared.clone()));
        *shared.supervisor.lock() = Some(task);
        ZkClient { shared, view: None, call_timeout: None, _stop_on_last_drop: Arc::new(cancel.drop_guard()) }
    }

    /// The current session, waiting up to the connection timeout while there is none (before
    /// the first connection and while a lost session is rebuilt).
    ///
    /// # Errors
    /// [`Error::Closed`], or [`Error::ConnectTimeout`] with the last connection error.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn session(&self) -> Result<Session> {
        self.session_for(None).await
    }

    /// The current session if there is one, without waiting.
    pub fn try_session(&self) -> Option<Session> {
        // Borrowed in place: a subscription per call cost more than the clone.
        match &self.view {
            Some(view) => view.sessions.borrow().clone(),
            None => self.shared.session.borrow().clone(),
        }
    }

    /// The sessions this handle works on: the manager's, re-rooted on a namespace view.
    fn sessions(&self) -> watch::Receiver<Option<Session>> {
        match &self.view {
            Some(view) => view.sessions.clone(),
            None => self.shared.session.subscribe(),
        }
    }

    /// The session for an operation with an optional overall deadline (when it falls, and the
    /// duration the caller gave): waits at most the connection timeout, or to the deadline if
    /// that comes first, and the error names whichever bound it hit.
    pub(crate) async fn session_for(&self, deadline: Option<Deadline>) -> Result<Session> {
        let timeout = self.shared.config.connection_timeout;
        match deadline {
            Some(d) if d.instant() < Instant::now() + timeout => {
                self.session_until(d.instant(), d.timeout()).await
            }
            _ => self.session_until(Instant::now() + timeout, timeout).await,
        }
    }

    async fn session_until(&self, deadline: Instant, bound: Duration) -> Result<Session> {
        let mut rx = self.sessions();
        let wait = async {
            loop {
                if let Some(session) = rx.borrow_and_update().clone() {
                    return Ok(session);
                }
                if rx.changed().await.is_err() {
                    return Err(Error::Closed);
                }
            }
        };
        tokio::select! {
            biased;
            r = wait => r,
            _ = self.shared.cancel.cancelled() => Err(Error::Closed),
            _ = tokio::time::sleep_until(deadline) => Err(self.shared.connect_timeout(bound)),
        }
    }

    /// The current session's `zookeeper-client` handle; see [`session`](Self::session).
    ///
    /// # Errors
    /// As [`session`](Self::session).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn client(&self) -> Result<SessionClient> {
        Ok(self.session().await?.client)
    }

    /// Waits until the manager is connected (Curator's `blockUntilConnected`), or the servers
    /// refuse its credentials: those will not change, so there is no use waiting longer.
    ///
    /// # Errors
    /// [`Error::ConnectTimeout`] (with the last connection error, and the network's cause when
    /// a connect of our own found one), [`Error::Tls`] or [`Error::Sasl`] (when a TLS handshake
    /// or a Kerberos login step of our own names the cause), [`Error::AuthFailed`] (the latest
    /// attempt was refused for its SASL credentials) or [`Error::Closed`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_connected(&self, timeout: Duration) -> Result<()> {
        self.wait_connected_unless(timeout, false).await
    }

    /// As [`wait_connected`](Self::wait_connected), but gives up at once when a connection
    /// attempt finds no ZooKeeper server at any host: each refused the connection (nothing
    /// listens on its port) or answered as something other than ZooKeeper, so there is nothing
    /// to wait for unless a server is started. For one-shot tools (the `zkr` command); a
    /// service started beside its ZooKeeper should wait with `wait_connected`. The manager
    /// itself goes on trying either way.
    ///
    /// # Errors
    /// As [`wait_connected`](Self::wait_connected), and [`Error::NoServer`] with each host's
    /// reason (`127.0.0.1:2181: connection refused (nothing listens there)`).
    ///
    /// # Cancel safety
    /// Cancel safe.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> zkr_connection::Result<()> {
    /// let zk = zkr_connection::ZkClient::builder("zk1,zk2:2182").start().await?;
    /// zk.wait_connected_or_refused(std::time::Duration::from_secs(15)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn wait_connected_or_refused(&self, timeout: Duration) -> Result<()> {
        self.wait_connected_unless(timeout, true).await
    }

    /// [`wait_connected`](Self::wait_connected), giving up when no server answers if `quick`.
    async fn wait_connected_unless(&self, timeout: Duration, quick: bool) -> Result<()> {
        let mut nobody = self.shared.no_server.subscribe();
        let found = *nobody.borrow_and_update();
        let no_server = async move {
            if !quick {
                return std::future::pending().await;
            }
            if let Some(error) = self.shared.no_server() {
                return error;
            }
            loop {
                if nobody.wait_for(|n| *n > found).await.is_err() {
                    return std::future::pending().await;
                }
                if let Some(error) = self.shared.no_server() {
                    return error;
                }
            }
        };
        let mut rx = self.shared.state.subscribe();
        let wait = rx.wait_for(|s| s.is_some_and(ConnectionState::is_connected));
        let mut refusals = self.shared.refusals.subscribe();
        let seen = *refusals.borrow_and_update();
        let refused_already = *self.shared.last_error.lock() == Some(zookeeper_client::Error::AuthFailed);
        let refused = async move {
            if !refused_already {
                let _ = refusals.wait_for(|n| *n > seen).await;
            }
        };
        tokio::select! {
            biased;
            r = wait => r.map(|_| ()).map_err(|_| Error::Closed),
            _ = self.shared.cancel.cancelled() => Err(Error::Closed),
            () = refused => Err(Error::AuthFailed { connect_string: self.shared.config.connect_string.clone() }),
            error = no_server => Err(error),
            _ = tokio::time::sleep(timeout) => Err(self.shared.connect_timeout(timeout)),
        }
    }

    /// The latest connection state (`None` before the first connection).
    pub fn state(&self) -> Option<ConnectionState> {
        *self.shared.state.borrow()
    }

    /// Is the manager connected now?
    pub fn is_connected(&self) -> bool {
        self.state().is_some_and(ConnectionState::is_connected)
    }

    /// Every connection state transition from now on, in order. Each subscriber has its own
    /// queue, so a slow one never blocks the others or the session (and should not be left
    /// unpolled forever: its queue grows).
    pub fn state_changes(&self) -> ConnectionStateStream {
        let (tx, rx) = mpsc::unbounded_channel();
        self.shared.listeners.lock().push(tx);
        ConnectionStateStream { rx }
    }

    /// A `watch` receiver of the latest state, for tasks that only need the current value.
    pub fn state_watch(&self) -> watch::Receiver<Option<ConnectionState>> {
        self.shared.state.subscribe()
    }

    /// A `watch` receiver of the current session (`None` while there is none).
    pub fn session_watch(&self) -> watch::Receiver<Option<Session>> {
        self.sessions()
    }

    /// Completes once the manager's session is no longer the one of `generation`: replaced
    /// after an expiry, given up after a suspension longer than it can live, or the manager
    /// closed. A session the manager gives up sends its own handle no end event, so whatever
    /// waits on that handle's watches should also wait on this.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let session = zk.session().await?;
    /// zk.session_replaced(session.generation()).await;
    /// println!("now on generation {}", zk.generation());
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn session_replaced(&self, generation: u64) {
        let mut sessions = self.sessions();
        let _ = sessions.wait_for(|s| not_of_generation(s, generation)).await;
    }

    /// Completes once the manager's connection is no longer `connection`
    /// ([`Session::connection`]): a new session, the same session re-attached on new hosts,
    /// the session given up, or the manager closed. Whatever waits on a watch set through a
    /// session's handle should also wait on this.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let session = zk.session().await?;
    /// zk.connection_replaced(session.connection()).await;
    /// # Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn connection_replaced(&self, connection: u64) {
        let mut sessions = self.sessions();
        let _ = sessions.wait_for(|s| s.as_ref().is_none_or(|s| s.connection() != connection)).await;
    }

    /// How many times the manager has entered an error state under its error policy (for the
    /// standard policy: every `Suspended` and `Lost`). A lock holder records it when it acquires;
    /// any change since means the lock may have been lost.
    pub fn error_epoch(&self) -> u64 {
        *self.shared.error_epoch.borrow()
    }

    /// A `watch` receiver of [`error_epoch`](Self::error_epoch).
    pub fn error_epoch_watch(&self) -> watch::Receiver<u64> {
        self.shared.error_epoch.subscribe()
    }

    /// The generation of the latest session (0 before the first).
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::SeqCst)
    }

    /// The connect string.
    pub fn connect_string(&self) -> &str {
        &self.shared.config.connect_string
    }

    /// The namespace, if any.
    pub fn namespace(&self) -> Option<&str> {
        match &self.view {
            Some(view) => view.namespace.as_deref(),
            None => self.shared.config.namespace.as_deref(),
        }
    }

    /// The session timeout asked for.
    pub fn session_timeout(&self) -> Duration {
        self.shared.config.session_timeout
    }

    /// After how long an operation of the retry loop nudges a stalled server
    /// ([`ZkClientBuilder::stall_nudge`](crate::ZkClientBuilder::stall_nudge)).
    pub fn stall_nudge(&self) -> Option<Duration> {
        self.shared.config.stall_nudge
    }

    /// The connection timeout.
    pub fn connection_timeout(&self) -> Duration {
        self.shared.config.connection_timeout
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> &Arc<dyn RetryPolicy> {
        &self.shared.config.retry_policy
    }

    /// The connection-state error policy recipes follow.
    pub fn error_policy(&self) -> &Arc<dyn ConnectionStateErrorPolicy> {
        &self.shared.config.error_policy
    }

    /// Is `state` an error state under this manager's error policy?
    pub fn is_error_state(&self, state: ConnectionState) -> bool {
        self.shared.config.error_policy.is_error_state(state)
    }

    /// Checks a path a recipe is given: ZooKeeper's rules, and not in the server's reserved
    /// `/zookeeper` tree (which a namespace or a chroot moves away from it).
    ///
    /// # Errors
    /// [`Error::InvalidPath`], with [`PathError::Reserved`](crate::path::PathError::Reserved)
    /// for the reserved tree.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> zkr_connection::Result<()> {
    /// let zk = zkr_connection::ZkClient::connect("127.0.0.1:2181").await?;
    /// assert!(zk.validate_recipe_path("/locks/orders").is_ok());
    /// assert!(zk.validate_recipe_path("/zookeeper/quota").is_err());
    /// # Ok(()) }
    /// ```
    pub fn validate_recipe_path(&self, path: &str) -> Result<()> {
        path::validate_path(path)?;
        let chroot = crate::session::connect_string::split_chroot(self.connect_string().trim()).1;
        let rooted = self.namespace().is_some() || !matches!(chroot, "" | "/");
        if !rooted && path::is_reserved(path) {
            return Err(Error::InvalidPath { path: path.to_owned(), source: path::PathError::Reserved });
        }
        Ok(())
    }

    /// Whether the framework calls compress and decompress data
    /// ([`ZkClientBuilder::compression`](crate::ZkClientBuilder::compression)).
    pub fn compression_enabled(&self) -> bool {
        self.shared.config.compression
    }

    /// Whether recipes label their size figures with their path
    /// ([`ZkClientBuilder::metrics_path_labels`](crate::ZkClientBuilder::metrics_path_labels)).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # fn f(zk: zkr_connection::ZkClient) {
    /// assert!(!zk.metrics_path_labels());
    /// # }
    /// ```
    pub fn metrics_path_labels(&self) -> bool {
        self.shared.config.metrics_path_labels
    }

    /// The manager's name in its metrics, the `client` label
    /// ([`ZkClientBuilder::name`](crate::ZkClientBuilder::name); numbered `"1"`, `"2"`, ... in
    /// the order managers were built when not given).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> zkr_connection::Result<()> {
    /// let zk = zkr_connection::ZkClient::builder("127.0.0.1:2181").name("orders").start().await?;
    /// assert_eq!(zk.name(), "orders");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    /// The ACL for a node created at `path`.
    pub fn acl_for_path(&self, path: &str) -> Vec<Acl> {
        self.shared.config.acl_provider.acl_for_path(path)
    }

    /// Ends the current session as if it had expired: announces
    /// [`Lost`](ConnectionState::Lost) at once and builds a new session (Curator's
    /// `injectSessionExpiration`, for tests). The old session closes on the server when the
    /// last handle to it is dropped, or at its timeout.
    pub fn inject_session_expiration(&self) {
        self.shared.expire.notify_one();
    }

    /// Stops the manager and closes the session. Every handle sees [`Error::Closed`] afterwards.
    /// It waits (at most 2 s) until the session is closed on the server, so ephemeral nodes are
    /// gone when it returns, even while lock guards, leases, latches or watchers still hold
    /// `Session` handles (those report the loss). When the server cannot be reached it
    /// returns at once: the session ends there at its timeout.
    ///
    /// # Cancel safety
    /// Cancel safe: the manager is stopped at the first poll; only the wait for the supervisor
    /// task is lost.
    pub async fn close(&self) {
        self.shared.cancel.cancel();
        let task = self.shared.supervisor.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    /// Has the manager been closed (or all handles dropped)?
    pub fn is_closed(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }
}

/// The stream of [`ZkClient::state_changes`].
#[derive(Debug)]
pub struct ConnectionStateStream {
    rx: mpsc::UnboundedReceiver<ConnectionState>,
}

impl Stream for ConnectionStateStream {
    type Item = ConnectionState;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

impl ZkClient {
    /// The most one node's gzip data may inflate to when this client decompresses it
    /// ([`ZkClientBuilder::max_decompressed_len`](crate::ZkClientBuilder::max_decompressed_len)):
    /// what recipes that decompress pass to [`decompress_limited`](crate::compression::decompress_limited).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient, path: &str, data: &[u8]) -> zkr_connection::Result<()> {
    /// let plain = zkr_connection::compression::decompress_limited(path, data, zk.max_decompressed_len())?;
    /// # Ok(()) }
    /// ```
    pub fn max_decompressed_len(&self) -> usize {
        self.shared.config.max_decompressed_len
    }
}
