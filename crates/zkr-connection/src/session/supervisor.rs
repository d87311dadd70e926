//! The session supervisor: the task that owns a [`ZkClient`](crate::ZkClient)'s session,
//! builds a new one when it ends, and publishes sessions and connection states to every
//! handle through [`Shared`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use zookeeper_client::{Client, SessionState};

use crate::error::Error;
use crate::path;
use crate::session::builder::Config;
use crate::session::client::Session;
use crate::session::served::{Freeze, Served};
use crate::session::state::ConnectionState;

/// The shared state of one manager: what the supervisor publishes and every handle reads.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) config: Config,
    pub(crate) session: watch::Sender<Option<Session>>,
    pub(crate) state: watch::Sender<Option<ConnectionState>>,
    /// When the latest state was posted.
    pub(crate) state_since: Mutex<std::time::Instant>,
    pub(crate) listeners: Mutex<Vec<mpsc::UnboundedSender<ConnectionState>>>,
    pub(crate) last_error: Mutex<Option<zookeeper_client::Error>>,
    /// Why the last connection attempt failed, as a connect of our own saw it.
    pub(crate) last_cause: Mutex<Option<crate::session::reach::Cause>>,
    pub(crate) generation: AtomicU64,
    /// How many connections (`Client`s) the manager has published: a new session, or the same
    /// session moved to new hosts ([`Session::connection`](crate::Session::connection)).
    pub(crate) connections: AtomicU64,
    /// The servers to connect to, kept current by the ensemble tracker.
    pub(crate) ensemble: crate::session::ensemble::Ensemble,
    pub(crate) error_epoch: watch::Sender<u64>,
    pub(crate) cancel: CancellationToken,
    pub(crate) expire: Notify,
    /// Woken when the manager gives a session up (the session channel goes to `None`), for the
    /// operations still waiting on its handle ([`Shared::end_session`]).
    pub(crate) ended: Notify,
    /// Whether the servers have persistent watches, once probed (`ZkClient::has_persistent_watches`).
    pub(crate) persistent_watches: tokio::sync::OnceCell<bool>,
    /// How many connection attempts the servers refused for their credentials (`AuthFailed`).
    pub(crate) refusals: watch::Sender<u64>,
    /// How many connection attempts found no ZooKeeper server at any host
    /// ([`Cause::NoServer`](crate::session::reach::Cause::NoServer)).
    pub(crate) no_server: watch::Sender<u64>,
    pub(crate) supervisor: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The retry loop's attempts waiting for replies, for the stall watchdog.
    pub(crate) attempts: crate::session::stall::Attempts,
}

impl Shared {
    /// Gives the current session up: no session is published until the next one, and every
    /// operation still waiting on the old handle is told (that handle may never learn of its
    /// own expiry: a server restarted without its data is refused for its older zxid).
    pub(crate) fn end_session(&self) {
        self.session.send_replace(None);
        self.ended.notify_waiters();
    }

    /// Has the manager given up the session of `generation` (or replaced it)?
    pub(crate) fn session_given_up(&self, generation: u64) -> bool {
        crate::session::client::not_of_generation(&self.session.borrow(), generation)
    }

    pub(crate) fn post(&self, state: ConnectionState) {
        tracing::info!(%state, generation = self.generation.load(Ordering::SeqCst), "connection state");
        crate::session::telemetry::session_state(&self.config.name, state);
        self.state.send_replace(Some(state));
        *self.state_since.lock() = std::time::Instant::now();
        if self.config.error_policy.is_error_state(state) {
            self.error_epoch.send_modify(|epoch| *epoch += 1);
        }
        let mut listeners = self.listeners.lock();
        listeners.retain(|tx| tx.send(state).is_ok());
    }

    /// The error for a wait that gave up because no ZooKeeper server answers at any host, if
    /// the last attempt found that.
    pub(crate) fn no_server(&self) -> Option<Error> {
        match self.last_cause.lock().clone() {
            Some(crate::session::reach::Cause::NoServer(cause)) => {
                Some(Error::NoServer { connect_string: self.config.connect_string.clone(), cause })
            }
            _ => None,
        }
    }

    /// The error for a wait of `timeout` for a session that did not come: what the last
    /// attempt's own diagnosis found (TLS, Kerberos), or the timeout with the network's cause.
    pub(crate) fn connect_timeout(&self, timeout: Duration) -> Error {
        use crate::session::reach::Cause;
        let connect_string = self.config.connect_string.clone();
        let cause = match self.last_cause.lock().clone() {
            Some(Cause::Tls(reason)) => return Error::Tls { connect_string, reason },
            Some(Cause::Sasl(reason)) => return Error::Sasl { connect_string, reason },
            Some(Cause::Network(reason) | Cause::NoServer(reason)) => Some(reason),
            None => None,
        };
        Error::ConnectTimeout { connect_string, timeout, last_error: self.last_error.lock().clone(), cause }
    }

    pub(crate) fn current(&self) -> Option<ConnectionState> {
        *self.state.borrow()
    }

    pub(crate) fn connector(&self) -> zookeeper_client::Connector {
        let config = &self.config;
        let mut connector = Client::connector()
            .with_session_timeout(config.session_timeout)
            .with_readonly(config.can_be_read_only)
            .with_fail_eagerly();
        for (scheme, auth) in &config.auth {
            connector = connector.with_auth(scheme, auth);
        }
        #[cfg(feature = "tls")]
        if let Some(tls) = &config.tls {
            connector = connector.with_tls(tls.clone());
        }
        #[cfg(any(feature = "sasl-digest-md5", feature = "sasl-gssapi"))]
        if let Some(sasl) = &config.sasl {
            connector = connector.with_sasl(sasl.clone());
        }
        connector
    }

    /// Connects `connector` to the ensemble's current servers (over TLS when configured),
    /// within the connection timeout.
    pub(crate) async fn dial(
        &self,
        connector: zookeeper_client::Connector,
    ) -> std::result::Result<Served, zookeeper_client::Error> {
        let cs = self.ensemble.connect_string(&self.ensemble.hosts());
        self.dial_at(connector, &cs).await
    }

    /// Connects `connector` to `cs`, within the connection timeout; the task serving the
    /// connection comes with it ([`Served`]).
    pub(crate) async fn dial_at(
        &self,
        connector: zookeeper_client::Connector,
        cs: &str,
    ) -> std::result::Result<Served, zookeeper_client::Error> {
        #[cfg(feature = "tls")]
        let connecting = async {
            if self.config.tls.is_some() {
                connector.secure_connect(cs).await
            } else {
                connector.connect(cs).await
            }
        };
        #[cfg(not(feature = "tls"))]
        let connecting = connector.connect(cs);
        match tokio::time::timeout(self.config.connection_timeout, crate::session::served::served(connecting))
            .await
        {
            Ok(result) => result,
            Err(_) => Err(zookeeper_client::Error::Timeout),
        }
    }

    /// A new session on `hosts`, rooted at the namespace (created when missing).
    pub(crate) async fn connect_once(
        &self,
        hosts: &[String],
    ) -> std::result::Result<Served, zookeeper_client::Error> {
        let Served { client, task } =
            self.dial_at(self.connector(), &self.ensemble.connect_string(hosts)).await?;
        if let Some(ns) = &self.config.namespace {
            ensure_namespace(&client, ns, &*self.config.acl_provider).await?;
        }
        Ok(Served { client: self.under_namespace(client)?, task })
    }

    /// `client` rooted at the namespace, if there is one.
    fn under_namespace(&self, client: Client) -> std::result::Result<Client, zookeeper_client::Error> {
        match &self.config.namespace {
            None => Ok(client),
            Some(ns) => {
                let root = path::join(client.path(), ns);
                client.chroot(root).map_err(|_| zookeeper_client::Error::BadArguments(&"invalid namespace"))
            }
        }
    }

    /// Attaches `session` to a new connection on the ensemble's current servers, trying until
    /// it works (the caller bounds the wait); the hosts it dialed come with it.
    async fn reattach(&self, session: zookeeper_client::SessionInfo) -> (Served, Vec<String>) {
        let mut delay = Duration::from_millis(50);
        loop {
            let hosts = self.ensemble.hosts();
            let cs = self.ensemble.connect_string(&hosts);
            match self.dial_at(self.connector().with_session(session.clone()), &cs).await {
                Ok(Served { client, task }) => match self.under_namespace(client) {
                    Ok(client) => return (Served { client, task }, hosts),
                    Err(e) => tracing::debug!(error = %e, "re-attaching the session failed"),
                },
                Err(e) => tracing::debug!(error = %e, connect = %cs, "re-attaching the session failed"),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(1));
        }
    }

    /// Connects a new session, retrying with a capped backoff until it works or we are closed;
    /// the hosts it dialed come with it.
    pub(crate) async fn connect_until_done(&self) -> (Served, Vec<String>) {
        let mut delay = Duration::from_millis(50);
        loop {
            let hosts = self.ensemble.hosts();
            match self.connect_once(&hosts).await {
                Ok(client) => {
                    *self.last_error.lock() = None;
                    *self.last_cause.lock() = None;
                    return (client, hosts);
                }
                Err(e) => {
                    tracing::debug!(error = %e, "connection attempt failed");
                    let cause = match e {
                        zookeeper_client::Error::NoHosts
                        | zookeeper_client::Error::ConnectionLoss
                        | zookeeper_client::Error::Timeout => {
                            let probe = self.config.connection_timeout.min(Duration::from_secs(1));
                            crate::session::reach::explain(
                                &self.config,
                                &self.ensemble.connect_string(&hosts),
                                probe,
                            )
                            .await
                        }
                        _ => None,
                    };
                    let no_server = matches!(cause, Some(crate::session::reach::Cause::NoServer(_)));
                    *self.last_cause.lock() = cause;
                    if no_server {
                        self.no_server.send_modify(|n| *n += 1);
                    }
                    if e == zookeeper_client::Error::AuthFailed {
                        self.refusals.send_modify(|n| *n += 1);
                    }
                    *self.last_error.lock() = Some(e);
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(2));
                }
            }
        }
    }
}

/// How long after `Suspended` to announce `Lost`.
///
/// `zookeeper-client` declares a connection lost once nothing has arrived for 2/5 of the
/// negotiated session timeout `T`, checked every `T/20`: `Disconnected` comes at most `9T/20`
/// after the last reply. The server expires a session no earlier than `T` after it last heard
/// from the client, so the session may be gone `11T/20` after `Disconnected`. Announcing `Lost`
/// `T/2` after `Suspended` leaves `T/20` to spare, so a lock holder stops before the server can
/// give its lock to anyone else. (Curator waits a whole `T` after SUSPENDED, by which time the
/// server has long expired the session.)
fn lost_after(client: &Client) -> Duration {
    client.session_timeout() / 2
}

enum SessionEnd {
    Lost,
    Closed,
    /// The session was re-attached on new hosts: the new connection, and the hosts it dialed.
    Moved(Served, Vec<String>),
}

#[tracing::instrument(name = "zk.supervisor", skip_all, fields(connect = %shared.config.connect_string))]
pub(crate) async fn supervise(shared: Arc<Shared>) {
    loop {
        let (Served { mut client, task }, mut dialed) = tokio::select! {
            biased;
            _ = shared.cancel.cancelled() => break,
            connected = shared.connect_until_done() => connected,
        };
        // Every connection this session had: all of them go silent when it is given up.
        let mut tasks = vec![task];
        let generation = shared.generation.fetch_add(1, Ordering::SeqCst) + 1;
        tracing::info!(session = %client.session_id(), generation, timeout = ?client.session_timeout(), "session established");
        crate::session::telemetry::session_established(&shared.config.name, client.session_timeout());
        let mut watcher = client.state_watcher();
        let initial = watcher.state();
        let mut tracker = publish(&shared, &client, generation);
        let first = shared.current().is_none();
        shared.post(match (first, initial) {
            (_, SessionState::ConnectedReadOnly) => ConnectionState::ReadOnly,
            (true, _) => ConnectionState::Connected,
            (false, _) => ConnectionState::Reconnected,
        });
        let end = loop {
            match monitor(&shared, &client, &mut watcher, &dialed).await {
                SessionEnd::Moved(moved, hosts) => {
                    tracing::info!(session = %moved.client.session_id(), generation, ?hosts, "session moved to new hosts");
                    tracker.abort();
                    // The old connection would take the session back when it reconnects.
                    tasks.last().map(Freeze::freeze);
                    tasks.push(moved.task);
                    (client, dialed) = (moved.client, hosts);
                    watcher = client.state_watcher();
                    tracker = publish(&shared, &client, generation);
                    shared.post(ConnectionState::Reconnected);
                }
                end => break end,
            }
        };
        tracker.abort();
        if let SessionEnd::Closed = end {
            shared.end_session();
            close_on_server(&shared, client, watcher, tasks).await;
            break;
        }
        // Silent before anyone hears that it was given up: what its handles queued is never
        // sent, whatever the server does later.
        tasks.iter().for_each(Freeze::freeze);
        shared.end_session();
        let ended = client.state().is_terminated();
        tokio::spawn(crate::session::served::bury(
            shared.clone(),
            client.into_session(),
            ended,
            tasks,
            linger(&shared),
        ));
        tracing::info!(generation, "rebuilding the session");
        crate::session::telemetry::session_rebuilt(&shared.config.name);
    }
    shared.end_session();
}

/// How long a closed manager goes on trying to end a given-up session on the server.
fn linger(shared: &Shared) -> Duration {
    shared.config.session_timeout * 2
}

/// Publishes `client` as connection of session `generation`, and starts the ensemble tracker
/// beside it (a task that does nothing when the tracker is off).
fn publish(shared: &Arc<Shared>, client: &Client, generation: u64) -> tokio::task::JoinHandle<()> {
    let connection = shared.connections.fetch_add(1, Ordering::SeqCst) + 1;
    let session_client =
        crate::session::session_client::SessionClient::new(client.clone(), shared.config.name.clone());
    shared.session.send_replace(Some(Session { client: session_client, generation, connection }));
    let tracking = shared
        .config
        .ensemble_tracker
        .then(|| crate::session::ensemble::track(shared.clone(), client.clone()));
    let stalls = shared
        .config
        .stall_nudge
        .map(|after| crate::session::stall::watch(shared.clone(), client.clone(), after));
    tokio::spawn(async move {
        let tracking = async move {
            if let Some(tracking) = tracking {
                tracking.await;
            }
        };
        let stalls = async move {
            if let Some(stalls) = stalls {
                stalls.await;
            }
        };
        tokio::join!(tracking, stalls);
    })
}

/// Ends a closed manager's session on the server, so its ephemeral nodes are gone when
/// `close()` returns, even while recipes still hold handles to it (a guard, a lease, a
/// watcher): dropping our handle closes the session only if it was the last one, so when it
/// does not end soon, the connections are frozen and a connection of its own closes the
/// session ([`crate::session::served::bury`]). A server that cannot be reached is not waited for:
/// that goes on in the background, and the session ends there at its timeout at the latest.
async fn close_on_server(
    shared: &Arc<Shared>,
    client: Client,
    mut watcher: zookeeper_client::StateWatcher,
    tasks: Vec<Freeze>,
) {
    let reachable =
        shared.current().is_some_and(ConnectionState::is_connected) && !client.session().is_readonly();
    if reachable && !watcher.peek_state().is_terminated() {
        let session = client.session().clone();
        drop(client);
        let ended = async { while !watcher.changed().await.is_terminated() {} };
        if tokio::time::timeout(Duration::from_millis(100), ended).await.is_ok() {
            return;
        }
        // Another handle keeps the connection: silence it and close the session from ours.
        tasks.iter().for_each(Freeze::freeze);
        let bury =
            tokio::spawn(crate::session::served::bury(shared.clone(), session, false, tasks, linger(shared)));
        let _ = tokio::time::timeout(Duration::from_secs(2), bury).await;
        return;
    }
    tasks.iter().for_each(Freeze::freeze);
    let ended = watcher.peek_state().is_terminated();
    tokio::spawn(crate::session::served::bury(
        shared.clone(),
        client.into_session(),
        ended,
        tasks,
        linger(shared),
    ));
}

async fn monitor(
    shared: &Arc<Shared>,
    client: &Client,
    watcher: &mut zookeeper_client::StateWatcher,
    dialed: &[String],
) -> SessionEnd {
    let mut lost_at: Option<Instant> = None;
    // While disconnected from hosts that all left the ensemble: the session on new hosts.
    let mut moving: Option<std::pin::Pin<Box<dyn std::future::Future<Output = SessionEnd> + Send>>> = None;
    // After a disconnect, a reconnect counts once the server answered on it ([`answered`]).
    let mut confirming: Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>> = None;
    loop {
        let lost_timer = async {
            match lost_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let (moved, confirmed) = (when_some(&mut moving), when_some(&mut confirming));
        tokio::select! {
            biased;
            _ = shared.cancel.cancelled() => return SessionEnd::Closed,
            _ = shared.expire.notified() => {
                tracing::info!(session = %client.session_id(), "session expiration injected");
                crate::session::telemetry::session_ended(&shared.config.name, "injected");
                shared.post(ConnectionState::Lost);
                return SessionEnd::Lost;
            }
            _ = lost_timer => {
                tracing::warn!(session = %client.session_id(), "suspended for longer than the session can live");
                crate::session::telemetry::session_ended(&shared.config.name, "timed_out");
                shared.post(ConnectionState::Lost);
                return SessionEnd::Lost;
            }
            end = moved => return end,
            () = confirmed => {
                (lost_at, moving, confirming) = (None, None, None);
                if matches!(shared.current(), Some(ConnectionState::Suspended | ConnectionState::ReadOnly)) {
                    shared.post(ConnectionState::Reconnected);
                }
            }
            state = watcher.changed() => match state {
                SessionState::Disconnected => {
                    confirming = None;
                    if !matches!(shared.current(), Some(ConnectionState::Suspended | ConnectionState::Lost)) {
                        shared.post(ConnectionState::Suspended);
                    }
                    lost_at.get_or_insert_with(|| Instant::now() + lost_after(client));
                    if shared.config.ensemble_tracker && moving.is_none() {
                        moving = Some(Box::pin(move_when_gone(shared.clone(), client.session().clone(), dialed.to_vec())));
                    }
                }
                SessionState::SyncConnected => confirming = Some(Box::pin(answered(client.clone()))),
                SessionState::ConnectedReadOnly => {
                    lost_at = None;
                    moving = None;
                    shared.post(ConnectionState::ReadOnly);
                }
                SessionState::Expired | SessionState::AuthFailed | SessionState::Closed => {
                    tracing::warn!(session = %client.session_id(), %state, "session ended");
                    crate::session::telemetry::session_ended(&shared.config.name, match state {
                        SessionState::Expired => "expired",
                        SessionState::AuthFailed => "auth_failed",
                        _ => "closed",
                    });
                    shared.post(ConnectionState::Lost);
                    return SessionEnd::Lost;
                }
            },
        }
    }
}

/// Returns once the server answers a request on `client`'s connection.
///
/// `zookeeper-client` 0.11 reports `SyncConnected` when the connect reply arrives; when the
/// connection then drops before the session is set up, and the next hosts refuse connections
/// (servers that were just stopped), it reports nothing more until it gives the session up at
/// `1.4 T`: a handle that says it is connected while the server expires the session at `T`, and
/// a lock holder that would go on after its lock was given to another. So after a disconnect the
/// lost timer and a move go on until a request has gone round. A read needs no permission
/// (`exists`); a lost connection is asked again, and an ended session never answers (the
/// state watcher reports the end).
async fn answered(client: Client) {
    loop {
        match client.check_stat("/").await {
            Ok(_) => return,
            Err(zookeeper_client::Error::ConnectionLoss) => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(_) => std::future::pending().await,
        }
    }
}

/// For a disconnected handle that knows only `dialed`: when every one of them has left the
/// ensemble (as the tracker learned it, or as the servers the tracker added say when asked
/// through a session of their own), re-attaches `session` on the ensemble's hosts. Never while
/// one of `dialed` remains: the handle reconnects there itself.
async fn move_when_gone(
    shared: Arc<Shared>,
    session: zookeeper_client::SessionInfo,
    dialed: Vec<String>,
) -> SessionEnd {
    let mut delay = Duration::from_millis(100);
    while !shared.ensemble.left_all(&dialed).await {
        let others = shared.ensemble.others(&dialed).await;
        if others.is_empty() {
            // Nothing new is known: the handle's own hosts are the ensemble.
            return std::future::pending().await;
        }
        if !crate::session::ensemble::probe(&shared, &others).await {
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }
    let (served, hosts) = shared.reattach(session).await;
    SessionEnd::Moved(served, hosts)
}

/// Creates the namespace node `/<ns>` and its ancestors (persistent, with the provider's ACL)
/// on `client`, rooted at the connect string's chroot, where they are missing: one round trip.
pub(crate) async fn ensure_namespace(
    client: &Client,
    ns: &str,
    acl_provider: &dyn crate::acl::AclProvider,
) -> std::result::Result<(), zookeeper_client::Error> {
    let relative = format!("/{ns}");
    let acls = acl_provider.acl_for_path(&relative);
    let options = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::new(&acls));
    let mut creates = Vec::new();
    for p in path::ancestors(&relative).into_iter().chain(std::iter::once(relative.as_str())) {
        creates.push(client.create(p, &[], &options));
    }
    for create in creates {
        match create.await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Waits for `future` when there is one and forever when there is none: a `select!` arm that
/// is off until it is set.
async fn when_some<T>(
    future: &mut Option<std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>>,
) -> T {
    match future {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}
