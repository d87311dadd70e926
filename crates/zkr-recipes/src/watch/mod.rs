//! The watch engine: one way to keep a local copy of a ZooKeeper subtree in step with the server.
//!
//! It sets a persistent (recursive) watch, then reads: whatever changes after the read is an
//! event. The events queued while the read was under way go on top of it (those delivered
//! before its reply are already in it, but the queue does not say which; applied in order they
//! are no-ops). Events are taken in bursts, so that a multi-op or a busy writer costs one round
//! of reads. After every reconnect the watch is set again and everything read again: events may
//! be lost while disconnected (ZOOKEEPER-4698), and `zookeeper-client` 0.11.2 does not
//! re-register persistent watches on a new connection (its `resend_watches` sends only the
//! one-shot kinds). A session the manager gave up is not followed any further. Where the
//! servers have no persistent watches (before 3.6: `ZkClient::has_persistent_watches`, probed
//! once on a session of its own) it uses one-shot watches set by a full read, and every event
//! reads everything again.
//!
//! The engine owns no state of its own: it feeds a [`Consumer`] (reset with a full read, apply a
//! burst of events), which is the recipe's policy. The lock's children view, the config
//! watchers, the cache, persistent nodes and shared values are consumers.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;

use futures::future::{select, select_all, Either};
use futures::FutureExt as _;
use futures::StreamExt as _;
use tracing::Instrument as _;
use zkr_connection::retry::SessionPause;
use zkr_connection::SessionClient;
use zkr_connection::{is_session_error, RetryOptions, Session, ZkClient};
use zookeeper_client::{
    AddWatchMode, EventType, OneshotWatcher, PersistentWatcher, SessionState, WatchedEvent,
};

/// A ZooKeeper answer.
pub(crate) type ZkResult<T> = Result<T, zookeeper_client::Error>;

/// What a consumer says after a step: go on, or stop following.
pub(crate) type Flow = ControlFlow<()>;

/// The policy fed by a [`Watch`]: it keeps the local copy and decides when to stop.
pub(crate) trait Consumer: Send {
    /// What a full read returns.
    type Read: Send;

    /// Reads everything the copy covers (sent after the watch is set) on `session`.
    fn read<'a>(&'a self, session: &'a Session) -> impl Future<Output = ZkResult<Self::Read>> + Send + 'a;

    /// Reads everything and sets one-shot watches on what it read, for servers without
    /// persistent watches. Defaults to `Unimplemented`: the consumer needs persistent watches.
    fn read_watched<'a>(
        &'a self,
        _session: &'a Session,
    ) -> impl Future<Output = ZkResult<(Self::Read, Vec<OneshotWatcher>)>> + Send + 'a {
        std::future::ready(Err(zookeeper_client::Error::Unimplemented))
    }

    /// Replaces the copy with a full read.
    fn reset(&mut self, read: Self::Read);

    /// Applies a burst of node events (no session events) in order.
    fn apply<'a>(
        &'a mut self,
        client: &'a SessionClient,
        burst: Vec<WatchedEvent>,
    ) -> impl Future<Output = ZkResult<Flow>> + Send + 'a;

    /// The copy is complete as of now on session `generation`: reset, with the queued events
    /// applied on top.
    fn synced(&mut self, _generation: u64) -> Flow {
        Flow::Continue(())
    }

    /// A burst was applied whole (every [`apply`](Self::apply) of it is done): a consumer
    /// that publishes per burst publishes now, so that nothing it shows ends inside a
    /// multi-op.
    fn burst_done(&mut self) {}

    /// The connection dropped: events may be missed until the engine resyncs after the
    /// reconnect.
    fn disconnected(&mut self) -> Flow {
        Flow::Continue(())
    }

    /// The session the copy followed ended (or the manager replaced it).
    fn session_ended(&mut self) {}

    /// Setting the watch, reading or applying failed on a live session. `Continue` (the
    /// default) tries again shortly on the manager's current session.
    fn failed(&mut self, _error: &zookeeper_client::Error) -> Flow {
        Flow::Continue(())
    }
}

/// How a watcher learns of changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WatchMode {
    /// Persistent watches (ZooKeeper 3.6+), falling back to one-shot watches when the server
    /// does not know them.
    #[default]
    Auto,
    /// Persistent (recursive for a tree) watches only.
    Persistent,
    /// One-shot watches, re-set on every change, as servers before 3.6 need: every change
    /// makes the watcher read everything again.
    OneShot,
}

/// Which sessions the engine follows.
#[derive(Debug, Clone)]
pub(crate) enum Sessions {
    /// This one: the engine ends with it.
    Only(Session),
    /// The manager's, one after the other, until it closes.
    Follow,
}

/// A watch set and the read sent behind it.
pub(crate) struct Subscription<R> {
    watchers: Watchers,
    read: R,
}

/// A subscription already applied to the consumer, for [`Watch::run`] to go on with.
pub(crate) struct Established {
    session: Session,
    watchers: Watchers,
}

enum Watchers {
    /// The watch, and a session event that came while it was read, left for the loop that
    /// follows the watch.
    Persistent(PersistentWatcher, Option<WatchedEvent>),
    OneShot(Vec<OneshotWatcher>),
}

/// Why following one session ended.
enum End {
    /// The session ended or was replaced.
    Session,
    /// The consumer stopped.
    Stopped,
}

/// The engine: a persistent watch on `root` feeding `consumer` (see the module docs).
pub(crate) struct Watch<C> {
    zk: ZkClient,
    root: String,
    recursive: bool,
    watching: WatchMode,
    consumer: C,
    /// Whether the next subscription sends a `sync` first: from a switch to another session
    /// until a subscription on it succeeded (see [`Watch::subscribe`]).
    sync_before_read: bool,
}

impl<C: Consumer> Watch<C> {
    /// An engine for `root` (and, when `recursive`, everything below it).
    pub(crate) fn new(zk: &ZkClient, root: &str, recursive: bool, watching: WatchMode, consumer: C) -> Self {
        Watch {
            zk: zk.clone(),
            root: root.to_owned(),
            recursive,
            watching,
            consumer,
            sync_before_read: false,
        }
    }

    /// The consumer.
    pub(crate) fn consumer_mut(&mut self) -> &mut C {
        &mut self.consumer
    }

    /// Sets the watch on `session`, then reads; one-shot watches where the server has no
    /// persistent ones and the engine may fall back.
    pub(crate) async fn subscribe(&self, session: &Session) -> ZkResult<Subscription<C::Read>> {
        let client = session.client();
        // A session after another starts from zxid 0, so its server may be a follower behind
        // the state the copy already holds: a sync, sent first, makes the read that follows
        // it on the session no older than the leader's state then.
        let mut sync = self.sync_before_read.then(|| client.sync(&self.root));
        // Never an `addWatch` to a server without it: a 3.5 server closes the connection.
        // (Boxed: the probe's future would make every recipe future that starts a watch deeper
        // than the compiler's layout limit.)
        if self.watching != WatchMode::OneShot && !persistent_watches(self.zk.clone()).boxed().await? {
            if self.watching == WatchMode::Persistent {
                return Err(zookeeper_client::Error::Unimplemented);
            }
            tracing::info!(root = %self.root, "server has no persistent watches; using one-shot watches");
        } else if self.watching != WatchMode::OneShot {
            let mode =
                if self.recursive { AddWatchMode::PersistentRecursive } else { AddWatchMode::Persistent };
            // Sent before the read: every change after the read is an event.
            let watch = client.watch(&self.root, mode);
            let read = self.consumer.read(session);
            let ((), watch, read) = futures::join!(settle(sync.take()), watch, read);
            return Ok(Subscription { watchers: Watchers::Persistent(watch?, None), read: read? });
        }
        settle(sync.take()).await;
        let (read, watchers) = self.consumer.read_watched(session).await?;
        Ok(Subscription { watchers: Watchers::OneShot(watchers), read })
    }

    /// The first sync, within `timeout` for a connection, then as the manager's retry policy
    /// allows: for a recipe whose start must fail when ZooKeeper cannot be reached. A session
    /// that ends meanwhile is no failure (a read holds nothing): the sync starts again on the
    /// next one, as [`run`](Self::run) does after the first.
    ///
    /// In a `cache.load` span: every cache, configuration and shared value loads here.
    pub(crate) async fn first_sync(
        &mut self,
        timeout: Duration,
    ) -> Result<Established, zkr_connection::Error> {
        let span = crate::telemetry::operation_span!("cache.load", self.root.as_str());
        let started = tokio::time::Instant::now();
        let established = self.load(timeout).instrument(span.clone()).await;
        let outcome = established.as_ref().map(|_| "loaded").map_err(zkr_connection::Classify::kind);
        crate::telemetry::ended(&span, started, outcome);
        established
    }

    async fn load(&mut self, timeout: Duration) -> Result<Established, zkr_connection::Error> {
        self.zk.wait_connected(timeout).await?;
        loop {
            let (session, subscription) = self
                .zk
                .retry_with(RetryOptions::default().across_sessions(true), |s| {
                    let this = &*self;
                    async move { this.subscribe(&s).await.map(|sub| (s, sub)) }
                })
                .await?;
            match self.establish(&session, subscription).await {
                Ok((watchers, _)) => {
                    self.sync_before_read = false;
                    return Ok(Established { session, watchers });
                }
                Err(error) if is_session_error(&error) => {
                    // The copy holds this session's read: the next session's server syncs first.
                    self.consumer.session_ended();
                    self.sync_before_read = true;
                }
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Resets the consumer with a subscription's read and applies the events queued with it.
    async fn establish(
        &mut self,
        session: &Session,
        subscription: Subscription<C::Read>,
    ) -> ZkResult<(Watchers, Flow)> {
        let Subscription { watchers, read } = subscription;
        self.consumer.reset(read);
        let (watchers, queued) = match watchers {
            Watchers::Persistent(mut watcher, _) => {
                let mut queued = Vec::new();
                let mut session_event = None;
                while let Some(event) = watcher.changed().now_or_never() {
                    if event.event_type == EventType::Session {
                        // Nothing after it to apply on top; the loop that follows the watch
                        // takes it (after a disconnect, the watch is set again) and the rest.
                        session_event = Some(event);
                        break;
                    }
                    queued.push(event);
                }
                (Watchers::Persistent(watcher, session_event), queued)
            }
            Watchers::OneShot(watchers) => {
                self.watching = WatchMode::OneShot;
                (Watchers::OneShot(watchers), Vec::new())
            }
        };
        resynced(&self.root, session, queued.len());
        if !queued.is_empty() {
            let applied = self.consumer.apply(session.client(), queued).await?;
            self.consumer.burst_done();
            if applied.is_break() {
                return Ok((watchers, Flow::Break(())));
            }
        }
        Ok((watchers, self.consumer.synced(session.generation())))
    }

    /// Follows the sessions `sessions` names until the consumer stops, `stop` completes, or
    /// (for [`Sessions::Follow`]) the manager closes. `first` goes on with a first sync.
    #[tracing::instrument(level = "debug", name = "watch", skip_all, fields(root = %self.root))]
    pub(crate) async fn run(
        mut self,
        sessions: Sessions,
        first: Option<Established>,
        stop: impl Future<Output = ()>,
    ) {
        tokio::pin!(stop);
        let mut first = first;
        let mut after = None;
        // The session followed last, and whether the consumer was told it ended: a session
        // switch that comes through the error path below (the manager replaced the session
        // while the engine paused after a failure) is a session end all the same.
        let mut last: Option<(u64, bool)> = None;
        let mut pause = SessionPause::default();
        loop {
            let session = match (&sessions, &first) {
                (_, Some(established)) => established.session.clone(),
                (Sessions::Only(session), None) => session.clone(),
                (Sessions::Follow, None) => {
                    let next = tokio::select! {
                        next = next_session(&self.zk, after) => next,
                        () = &mut stop => return,
                    };
                    let Some(session) = next else { return };
                    session
                }
            };
            // A connection, not a generation: a session re-attached on new hosts (the ensemble
            // tracker) keeps its generation, but the watches of its old handle are gone.
            let connection = session.connection();
            let zk = self.zk.clone();
            let switched = last.is_some_and(|(g, _)| g != connection);
            if last.is_some_and(|(g, told)| g != connection && !told) {
                self.consumer.session_ended();
            }
            last = Some((connection, false));
            // A session after another may be served by a follower behind the copy: sync first,
            // and again before every subscription tried again on it until one succeeded (a
            // connection lost before the sync's reply leaves the session's last zxid at 0, so the
            // next server may be as far behind; found by the model, `CacheSyncOnlyOnce`).
            self.sync_before_read |= switched;
            let replaced = zk.connection_replaced(connection);
            tokio::pin!(replaced);
            // The follow is polled on each of its events; the stop and the replaced connection
            // sleep until their own wakers fire (polled with it, they cost ~1,000 instructions
            // per event).
            let mut interrupted = when_woken(select(stop.as_mut(), replaced.as_mut()));
            let followed = tokio::select! {
                biased;
                Some(interrupt) = interrupted.next() => match interrupt {
                    Either::Left(_) => return,
                    Either::Right(_) => Ok(End::Session),
                },
                end = self.follow(&session, first.take()) => end,
            };
            drop(interrupted);
            if followed.is_ok() {
                pause.reset();
            }
            match followed {
                Ok(End::Stopped) => return,
                Ok(End::Session) => {
                    self.consumer.session_ended();
                    last = Some((connection, true));
                    after = Some(connection);
                }
                Err(error) if is_session_error(&error) => {
                    self.consumer.session_ended();
                    last = Some((connection, true));
                    after = Some(connection);
                }
                Err(error) => {
                    if self.consumer.failed(&error).is_break() {
                        return;
                    }
                    tracing::debug!(root = %self.root, %error, "watch failed; trying again");
                    tokio::select! {
                        () = pause.sleep() => {}
                        () = &mut stop => return,
                    }
                    // Again on the current session: it may still be this one.
                    after = None;
                    if matches!(sessions, Sessions::Only(_))
                        && zk.try_session().is_none_or(|s| s.connection() != connection)
                    {
                        return;
                    }
                    continue;
                }
            }
            if matches!(sessions, Sessions::Only(_)) {
                return;
            }
        }
    }

    /// Follows one session: subscribes (unless `first` did), then applies bursts.
    async fn follow(&mut self, session: &Session, first: Option<Established>) -> ZkResult<End> {
        let watchers = match first {
            Some(established) => established.watchers,
            None => {
                let subscription = self.subscribe(session).await?;
                let (watchers, flow) = self.establish(session, subscription).await?;
                self.sync_before_read = false;
                if flow.is_break() {
                    return Ok(End::Stopped);
                }
                watchers
            }
        };
        match watchers {
            Watchers::Persistent(watcher, carried) => self.persistent(session, watcher, carried).await,
            Watchers::OneShot(watchers) => self.one_shot(session, watchers).await,
        }
    }

    /// Applies bursts from a persistent watch, starting with the session event `carried` over
    /// from the read; after a reconnect, subscribes again.
    async fn persistent(
        &mut self,
        session: &Session,
        mut watcher: PersistentWatcher,
        mut carried: Option<WatchedEvent>,
    ) -> ZkResult<End> {
        let client = session.client();
        let mut disconnected = false;
        loop {
            let events = match carried.take() {
                Some(event) => vec![event],
                None => burst(&mut watcher).await,
            };
            // Node events alone (the usual burst) are applied as they came.
            if events.iter().all(|e| e.event_type != EventType::Session) {
                if self.apply_burst(client, events, Some((&mut watcher, &mut carried))).await?.is_break() {
                    return Ok(End::Stopped);
                }
                continue;
            }
            let mut nodes = Vec::new();
            for event in events {
                if event.event_type != EventType::Session {
                    nodes.push(event);
                    continue;
                }
                let pending = std::mem::take(&mut nodes);
                if !pending.is_empty() && self.apply_burst(client, pending, None).await?.is_break() {
                    return Ok(End::Stopped);
                }
                if event.session_state.is_terminated() {
                    return Ok(End::Session);
                }
                match event.session_state {
                    SessionState::Disconnected => {
                        disconnected = true;
                        if self.consumer.disconnected().is_break() {
                            return Ok(End::Stopped);
                        }
                    }
                    SessionState::SyncConnected | SessionState::ConnectedReadOnly if disconnected => {
                        disconnected = false;
                        // The new watcher replaces the old one before that is dropped, so no
                        // RemoveWatches goes out. (The same session: its server is no older
                        // than what it saw, so no sync.)
                        self.sync_before_read = false;
                        let subscription = self.subscribe(session).await?;
                        let (renewed, flow) = self.establish(session, subscription).await?;
                        if flow.is_break() {
                            return Ok(End::Stopped);
                        }
                        match renewed {
                            Watchers::Persistent(renewed, session_event) => {
                                watcher = renewed;
                                carried = session_event;
                            }
                            Watchers::OneShot(watchers) => return self.one_shot(session, watchers).await,
                        }
                    }
                    _ => {}
                }
            }
            if !nodes.is_empty()
                && self.apply_burst(client, nodes, Some((&mut watcher, &mut carried))).await?.is_break()
            {
                return Ok(End::Stopped);
            }
        }
    }

    /// Applies a burst and, with the watch, what came behind it: the replies to the reads an
    /// apply sends come after every notification of the transactions those reads see, so the
    /// events taken after it complete any multi-op the burst ended inside (a large one's
    /// notifications span several socket reads). Then the consumer publishes, once. A
    /// session event met on the way is left in `carried`.
    async fn apply_burst(
        &mut self,
        client: &SessionClient,
        mut nodes: Vec<WatchedEvent>,
        mut watch: Option<(&mut PersistentWatcher, &mut Option<WatchedEvent>)>,
    ) -> ZkResult<Flow> {
        let mut rounds = 0;
        loop {
            let applied = self.consumer.apply(client, nodes).await?;
            rounds += 1;
            if applied.is_break() {
                self.consumer.burst_done();
                return Ok(Flow::Break(()));
            }
            // After the last round (a writer that never pauses), what arrives is the next burst.
            nodes = match watch.as_mut() {
                Some((watcher, carried)) if carried.is_none() && rounds <= MAX_BURST_ROUNDS => {
                    behind(watcher, carried)
                }
                _ => Vec::new(),
            };
            if nodes.is_empty() {
                break;
            }
        }
        self.consumer.burst_done();
        Ok(Flow::Continue(()))
    }

    /// Waits for any one-shot watch, then reads everything again with new ones.
    async fn one_shot(&mut self, session: &Session, mut watchers: Vec<OneshotWatcher>) -> ZkResult<End> {
        let mut pause = SessionPause::default();
        loop {
            if watchers.is_empty() {
                // Nothing to watch (the root is missing and could not be watched): look again.
                pause.sleep().await;
            } else {
                pause.reset();
                let (event, _, _) = select_all(watchers.into_iter().map(|w| w.changed().boxed())).await;
                if event.session_state.is_terminated() {
                    return Ok(End::Session);
                }
            }
            let (read, renewed) = self.consumer.read_watched(session).await?;
            self.consumer.reset(read);
            resynced(&self.root, session, 0);
            if self.consumer.synced(session.generation()).is_break() {
                return Ok(End::Stopped);
            }
            watchers = renewed;
        }
    }
}

/// Whether the servers have persistent watches ([`ZkClient::has_persistent_watches`]), in the
/// engine's error terms.
async fn persistent_watches(zk: ZkClient) -> ZkResult<bool> {
    zk.has_persistent_watches().await.map_err(|e| match e {
        zkr_connection::Error::Zk(e) => e,
        zkr_connection::Error::Closed => zookeeper_client::Error::ClientClosed,
        _ => zookeeper_client::Error::ConnectionLoss,
    })
}

/// Keeps a recipe's engine running: the engine stops once every clone of the recipe's handle,
/// each holding one of these, is dropped.
pub(crate) type Alive = std::sync::Arc<tokio::sync::watch::Sender<()>>;

impl<C: Consumer + Sync + 'static> Watch<C> {
    /// Follows the manager's sessions in a task of its own, going on from `first`, until every
    /// holder of the returned [`Alive`] is dropped (or the manager closes): the one way the
    /// recipes whose handles are cheap clones run their engine.
    pub(crate) fn spawn_following(self, first: Option<Established>) -> Alive {
        let (alive_tx, alive) = tokio::sync::watch::channel(());
        tokio::spawn(self.run(Sessions::Follow, first, handles_dropped(alive)));
        std::sync::Arc::new(alive_tx)
    }
}

/// Resolves when every clone of the handle that holds `alive`'s sender is dropped: how a
/// recipe whose handles are cheap clones stops its engine.
pub(crate) async fn handles_dropped(mut alive: tokio::sync::watch::Receiver<()>) {
    while alive.changed().await.is_ok() {}
}

/// A recipe's event channel as a `Stream`: a subscriber that fell behind gets `lagged(missed)`.
pub(crate) fn event_stream<E: Clone + Send + 'static>(
    events: tokio::sync::broadcast::Receiver<E>,
    lagged: fn(u64) -> E,
) -> impl futures::Stream<Item = E> + Send + Unpin + 'static {
    use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
    tokio_stream::wrappers::BroadcastStream::new(events).map(move |item| match item {
        Ok(event) => event,
        Err(BroadcastStreamRecvError::Lagged(missed)) => {
            tracing::info!(missed, "an event subscriber fell behind and missed events");
            crate::telemetry::watch_lagged(missed);
            lagged(missed)
        }
    })
}

mod events;
pub(crate) mod names;
mod tree;

use events::{behind, burst, next_session, resynced, settle, when_woken, MAX_BURST_ROUNDS};
pub(crate) use tree::{multi_read, read_tree};

#[cfg(test)]
mod tests;
