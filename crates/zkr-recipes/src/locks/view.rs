//! [`ChildrenView`]: a live copy of a lock directory's children, so that an uncontended acquire
//! costs one create and no listing at all.
//!
//! A persistent recursive watch on the lock directory delivers every child create and delete.
//! ZooKeeper sends a session's notifications and replies in the order it applies the changes,
//! and `zookeeper-client` hands them on in that order, so by the time our create's reply
//! arrives the watch has already delivered every change before it, our own node's creation
//! included. Once the view has applied our node's creation it holds every contender older than
//! ours that still exists: the same proof a listing gives, without its request.
//!
//! The watch costs every other change of the directory a notification to us, which is the herd
//! a lock queue exists to avoid. So the view is only kept while this process is the lock's only
//! recent user: it is set up after a few acquires found nobody else, and dropped as soon as an
//! acquire meets another contender or other processes create a handful of nodes between two of
//! ours. A disconnection or a new session ends it too (events may have been missed); the next
//! quiet acquires set it up again.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::watch;
use zkr_connection::{is_retryable, is_session_error, Session, ZkClient};
use zookeeper_client::{AddWatchMode, EventType, WatchedEvent};

/// Uncontended acquires (seen by their listings) before the view is set up.
const QUIET_ACQUIRES: u32 = 3;

/// Nodes other processes may create between two of our acquires before the view is dropped.
const FOREIGN_CREATES: u32 = 4;

/// How long an acquire waits for the view to apply its own node's creation before it lists
/// instead. The event is already on its way when the create's reply arrives, so this bound is
/// only met when the consumer task is starved.
const APPLY_WAIT: Duration = Duration::from_millis(200);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Off,
    /// A consumer task (`epoch`) is setting the watch and listing.
    Building {
        epoch: u64,
    },
    /// Consumer `epoch` keeps the view on session `generation`.
    Live {
        epoch: u64,
        generation: u64,
    },
}

#[derive(Debug)]
struct State {
    phase: Phase,
    /// The last consumer started; a consumer whose epoch is no longer current ends.
    epoch: u64,
    children: HashSet<String>,
    /// Uncontended acquires in a row seen while the view was off.
    quiet: u32,
    /// Child creates since our last acquire through the view.
    creates: u32,
    /// The server refused the watch for good (a server before 3.6, no permission): never again.
    refused: bool,
}

impl State {
    fn is_current(&self, epoch: u64) -> bool {
        matches!(self.phase, Phase::Building { epoch: e } | Phase::Live { epoch: e, .. } if e == epoch)
    }
}

#[derive(Debug)]
struct Inner {
    base: String,
    state: Mutex<State>,
    /// Bumped after every applied batch of events and when the view ends (which wakes its
    /// consumer task to stop and drop its watch).
    applied: watch::Sender<u64>,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn bump(&self) {
        self.applied.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Ends the view if consumer `epoch` keeps it (any consumer's for `None`).
    fn end(&self, epoch: Option<u64>) {
        {
            let mut state = self.state();
            if state.phase == Phase::Off || epoch.is_some_and(|e| !state.is_current(e)) {
                return;
            }
            state.phase = Phase::Off;
            state.children.clear();
            state.quiet = 0;
        }
        self.bump();
    }
}

/// The live children of one lock directory (see the module docs). Dropping it ends the view,
/// and its consumer task drops the watch.
#[derive(Debug)]
pub(crate) struct ChildrenView {
    inner: Arc<Inner>,
}

impl Drop for ChildrenView {
    fn drop(&mut self) {
        self.inner.end(None);
    }
}

impl ChildrenView {
    pub(crate) fn new(base: &str) -> Self {
        let state = State {
            phase: Phase::Off,
            epoch: 0,
            children: HashSet::new(),
            quiet: 0,
            creates: 0,
            refused: false,
        };
        ChildrenView {
            inner: Arc::new(Inner {
                base: base.to_string(),
                state: Mutex::new(state),
                applied: watch::channel(0).0,
            }),
        }
    }

    /// Is the view live on the manager's current session, so that an acquire may skip its
    /// listing?
    pub(crate) fn is_live(&self, zk: &ZkClient) -> bool {
        matches!(self.inner.state().phase, Phase::Live { generation, .. } if generation == zk.generation())
    }

    /// The children once the view has applied the creation of `our_name` on `session`: every
    /// contender older than ours that still exists is among them. `None` when the view is not
    /// live on that session or does not get there in time: list instead.
    ///
    /// # Cancel safety
    /// Cancel safe (it only reads).
    pub(crate) async fn children_with(&self, session: &Session, our_name: &str) -> Option<Vec<String>> {
        let mut applied = self.inner.applied.subscribe();
        let wait = async {
            loop {
                {
                    let mut state = self.inner.state();
                    let Phase::Live { generation, .. } = state.phase else { return None };
                    if generation != session.generation() {
                        return None;
                    }
                    if state.children.contains(our_name) {
                        state.creates = 0;
                        return Some(state.children.iter().cloned().collect());
                    }
                }
                if applied.changed().await.is_err() {
                    return None;
                }
            }
        };
        tokio::time::timeout(APPLY_WAIT, wait).await.ok().flatten()
    }

    /// An acquire met other contenders: drop the view (no notifications for their changes).
    pub(crate) fn contended(&self) {
        let on = {
            let mut state = self.inner.state();
            state.quiet = 0;
            state.phase != Phase::Off
        };
        if on {
            tracing::debug!(path = %self.inner.base, "lock contended: dropping the children view");
            self.inner.end(None);
        }
    }

    /// An acquire found nobody else (by its listing): after a few in a row, set the view up on
    /// `session`.
    pub(crate) fn uncontended(&self, zk: &ZkClient, session: &Session) {
        let epoch = {
            let mut state = self.inner.state();
            if state.phase != Phase::Off || state.refused || session.generation() != zk.generation() {
                return;
            }
            state.quiet += 1;
            if state.quiet < QUIET_ACQUIRES {
                return;
            }
            state.epoch += 1;
            state.phase = Phase::Building { epoch: state.epoch };
            state.quiet = 0;
            state.creates = 0;
            state.epoch
        };
        tokio::spawn(consume(self.inner.clone(), epoch, zk.clone(), session.clone()));
    }
}

/// Consumer `epoch`: sets the watch, lists once, then applies events until the view ends.
async fn consume(inner: Arc<Inner>, epoch: u64, zk: ZkClient, session: Session) {
    let generation = session.generation();
    let client = session.client();
    let base = inner.base.as_str();
    // The listing is sent after the watch: every change after it is an event.
    let watch = client.watch(base, AddWatchMode::PersistentRecursive);
    let listing = client.list_children(base);
    let (watcher, listing) = (watch.await, listing.await);
    let failure = match (&watcher, &listing) {
        (Err(e), _) | (_, Err(e)) if *e != zookeeper_client::Error::NoNode => Some(e.clone()),
        _ => None,
    };
    if let Some(error) = failure {
        if !is_retryable(&error) && !is_session_error(&error) {
            tracing::debug!(path = %base, %error, "no children view for this lock");
            inner.state().refused = true;
        }
        return inner.end(Some(epoch));
    }
    let (Ok(mut watcher), children) = (watcher, listing.unwrap_or_default()) else {
        return inner.end(Some(epoch));
    };
    // Events delivered before the listing's reply are already in it.
    while let Some(event) = watcher.changed().now_or_never() {
        if event.event_type == EventType::Session {
            return inner.end(Some(epoch));
        }
    }
    {
        let mut state = inner.state();
        if !state.is_current(epoch) {
            return; // dropped while building
        }
        state.children = children.into_iter().collect();
        state.phase = Phase::Live { epoch, generation };
    }
    inner.bump();
    tracing::debug!(path = %base, generation, "children view live");
    let mut applied = inner.applied.subscribe();
    let replaced = zk.session_replaced(generation);
    tokio::pin!(replaced);
    loop {
        tokio::select! {
            first = watcher.changed() => {
                let mut batch = vec![first];
                // Stop at a session event: after a terminal one the watcher must not be polled.
                while batch.last().is_some_and(|e| e.event_type != EventType::Session) {
                    match watcher.changed().now_or_never() {
                        Some(event) => batch.push(event),
                        None => break,
                    }
                }
                if !apply(&inner, epoch, batch) {
                    break;
                }
            }
            changed = applied.changed() => {
                if changed.is_err() || !inner.state().is_current(epoch) {
                    break;
                }
            }
            () = &mut replaced => break,
        }
    }
    inner.end(Some(epoch));
    tracing::debug!(path = %base, generation, "children view ended");
}

/// Applies a batch of events; `false` when the view must end.
fn apply(inner: &Inner, epoch: u64, batch: Vec<WatchedEvent>) -> bool {
    let base = inner.base.as_str();
    let mut keep = true;
    {
        let mut state = inner.state();
        if !state.is_current(epoch) {
            return false;
        }
        for event in batch {
            if event.event_type == EventType::Session {
                keep = false;
                break;
            }
            if event.path == base {
                if event.event_type == EventType::NodeDeleted {
                    state.children.clear();
                }
                continue;
            }
            let Some(name) = event.path.strip_prefix(base).and_then(|rest| rest.strip_prefix('/')) else {
                continue;
            };
            if name.contains('/') {
                continue; // a grandchild: not a contender
            }
            match event.event_type {
                EventType::NodeCreated => {
                    state.children.insert(name.to_string());
                    state.creates += 1;
                    if state.creates > FOREIGN_CREATES + 1 {
                        tracing::debug!(path = %base, "others are using the lock: dropping the children view");
                        keep = false;
                        break;
                    }
                }
                EventType::NodeDeleted => {
                    state.children.remove(name);
                }
                _ => {}
            }
        }
    }
    inner.bump();
    keep
}

#[cfg(test)]
mod tests {
    use super::*;
    use zookeeper_client::SessionState;

    fn live(children: &[&str]) -> Inner {
        let state = State {
            phase: Phase::Live { epoch: 7, generation: 1 },
            epoch: 7,
            children: children.iter().map(|c| c.to_string()).collect(),
            quiet: 0,
            creates: 0,
            refused: false,
        };
        Inner { base: "/locks/x".into(), state: Mutex::new(state), applied: watch::channel(0).0 }
    }

    fn event(kind: EventType, path: &str) -> WatchedEvent {
        WatchedEvent::new(kind, path)
    }

    fn sorted(inner: &Inner) -> Vec<String> {
        let mut children: Vec<String> = inner.state().children.iter().cloned().collect();
        children.sort();
        children
    }

    #[test]
    fn child_creates_and_deletes_are_applied_and_nothing_else() {
        let inner = live(&["a"]);
        let batch = vec![
            event(EventType::NodeCreated, "/locks/x/b"),
            event(EventType::NodeDataChanged, "/locks/x/a"),
            event(EventType::NodeCreated, "/locks/x/b/grandchild"),
            event(EventType::NodeDeleted, "/locks/x/a"),
            event(EventType::NodeCreated, "/locks/xy"),
        ];
        assert!(apply(&inner, 7, batch));
        assert_eq!(sorted(&inner), ["b"]);
        // The directory deleted (a container, emptied): nothing is left under it.
        assert!(apply(&inner, 7, vec![event(EventType::NodeDeleted, "/locks/x")]));
        assert!(sorted(&inner).is_empty());
    }

    #[test]
    fn other_processes_creating_nodes_end_the_view() {
        let inner = live(&[]);
        for i in 0..=FOREIGN_CREATES {
            assert!(apply(&inner, 7, vec![event(EventType::NodeCreated, &format!("/locks/x/n{i}"))]));
        }
        assert!(!apply(&inner, 7, vec![event(EventType::NodeCreated, "/locks/x/one-too-many")]));
    }

    #[test]
    fn a_session_event_ends_the_view_and_a_stale_consumer_applies_nothing() {
        let inner = live(&[]);
        let batch = vec![
            event(EventType::NodeCreated, "/locks/x/a"),
            WatchedEvent::new_session(SessionState::Disconnected),
        ];
        assert!(!apply(&inner, 7, batch));
        assert!(!apply(&inner, 6, vec![event(EventType::NodeCreated, "/locks/x/b")]));
        assert_eq!(sorted(&inner), ["a"]);
        inner.end(Some(6));
        assert!(inner.state().is_current(7), "a stale consumer cannot end the current view");
        inner.end(Some(7));
        assert_eq!(inner.state().phase, Phase::Off);
        assert!(sorted(&inner).is_empty());
    }
}
