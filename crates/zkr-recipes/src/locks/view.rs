//! [`ChildrenView`]: a live copy of a lock directory's children, so that an acquire costs one
//! create and no listing at all, and a hand-over in a short queue costs no listing either. A
//! consumer of the watch engine (`crate::watch`); why its "nobody ahead" proves the lock ours,
//! and how its notifications are kept bounded: docs/architecture.md, "The children view's proof".

use std::sync::Arc;
use std::time::Duration;

use std::future::Future;

use parking_lot::{Mutex, MutexGuard};
use tokio::sync::watch;
use zkr_connection::{is_retryable, is_session_error, Session, ZkClient};
use zookeeper_client::{EventType, WatchedEvent};

use crate::watch::{Consumer, Flow, Sessions, Watch, WatchMode, ZkResult};

/// Acquires in a row whose listing showed a short queue before the view is set up.
const QUIET_ACQUIRES: u32 = 3;

/// The longest queue (contenders, holders included) the view is kept for: each change of the
/// directory notifies at most this many sessions that use the view.
pub(crate) const MAX_QUEUE: usize = 16;

/// Nodes other processes may create between two of our acquires before the view is dropped.
/// The view costs the server a notification for each of their creates and deletes; waiting on
/// a predecessor instead costs about five packets per acquire (a listing and a watch, their
/// replies, one notification). Two others at most, so a change of the directory notifies at most
/// three sessions' views.
const FOREIGN_CREATES: u32 = 2;

/// The most the sequence may move between two acquires that count as quiet: a create and a
/// delete each move it by one (the parent's child version), so this is our own node and
/// [`FOREIGN_CREATES`] others, created and deleted.
const QUIET_ADVANCE: i64 = 2 * (FOREIGN_CREATES as i64 + 1);

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
    /// The lock directory's children, in no order: a vector, searched in place, since the view
    /// lives only while the queue is short (it ends past `MAX_QUEUE` names, or when others
    /// create), and a few comparisons cost less than hashing each name.
    children: Vec<String>,
    /// Acquires in a row that saw a short queue and few other users while the view was off.
    quiet: u32,
    /// The sequence of our last contender.
    last_sequence: Option<i64>,
    /// Whether the sequence moved by more than [`QUIET_ADVANCE`] before it: others are busy.
    busy: bool,
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
        self.state.lock()
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
            children: Vec::new(),
            quiet: 0,
            last_sequence: None,
            busy: false,
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
                    if state.children.iter().any(|c| c == our_name) {
                        state.creates = 0;
                        return Some(state.children.clone());
                    }
                }
                if applied.changed().await.is_err() {
                    return None;
                }
            }
        };
        tokio::time::timeout(APPLY_WAIT, wait).await.ok().flatten()
    }

    /// Waits until the view shows the lock is ours: `is_ours` is asked about the children (our
    /// node among them) after every change the view applies. Call it after
    /// [`children_with`](Self::children_with) found our node: from then on the view lists every
    /// older contender that still exists, or lags behind the server, so a "yes" is a proof.
    /// The view must be live on session `generation`.
    ///
    /// # Cancel safety
    /// Cancel safe (it only reads).
    pub(crate) async fn wait_turn<F>(&self, generation: u64, our_name: &str, mut is_ours: F) -> Turn
    where
        F: FnMut(Vec<String>) -> bool,
    {
        let mut applied = self.inner.applied.subscribe();
        loop {
            let children = {
                let state = self.inner.state();
                match state.phase {
                    Phase::Live { generation: live, .. } if live == generation => {}
                    _ => return Turn::Ended,
                }
                if !state.children.iter().any(|c| c == our_name) {
                    return Turn::Gone;
                }
                state.children.clone()
            };
            if is_ours(children) {
                return Turn::Ours;
            }
            if applied.changed().await.is_err() {
                return Turn::Ended;
            }
        }
    }

    /// An acquire met a long queue: drop the view (no notifications for every change of it).
    pub(crate) fn long_queue(&self) {
        let on = {
            let mut state = self.inner.state();
            state.quiet = 0;
            state.phase != Phase::Off
        };
        if on {
            tracing::debug!(path = %self.inner.base, "long lock queue: dropping the children view");
            self.inner.end(None);
        }
    }

    /// Our contender got `sequence`: others are busy with the lock when it moved by more than
    /// our own node and [`FOREIGN_CREATES`] others' since our last one.
    pub(crate) fn record(&self, sequence: Option<i64>) {
        let mut state = self.inner.state();
        let last = std::mem::replace(&mut state.last_sequence, sequence);
        state.busy = last.is_some() && sequence.is_some() && !is_quiet(last, sequence);
    }

    /// Did the last acquire find others busy with the lock? Then a listing sent with the
    /// create is seldom proved complete (their creates and deletes land in between), and costs
    /// two requests more than a listing after it.
    pub(crate) fn others_busy(&self) -> bool {
        self.inner.state().busy
    }

    /// An acquire found a short queue (by its listing): after a few in a row with few other
    /// users (by how far the sequence moved, see [`record`](Self::record)), set the view up on
    /// `session`.
    pub(crate) fn short_queue(&self, zk: &ZkClient, session: &Session) {
        let epoch = {
            let mut state = self.inner.state();
            if state.phase != Phase::Off || state.refused || session.generation() != zk.generation() {
                return;
            }
            if state.busy || state.last_sequence.is_none() {
                state.quiet = 0;
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

/// Did the sequence move from `last` to `now` by our own create and delete and at most
/// [`FOREIGN_CREATES`] others? Not when either is unknown, or the directory was made anew (the
/// sequence starts again).
fn is_quiet(last: Option<i64>, now: Option<i64>) -> bool {
    last.zip(now).is_some_and(|(last, now)| (1..=QUIET_ADVANCE).contains(&(now - last)))
}

/// How [`ChildrenView::wait_turn`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// The lock is ours.
    Ours,
    /// Our node is gone from the view (deleted, or its session ended).
    Gone,
    /// The view ended (or is on another session): list instead.
    Ended,
}

/// Consumer `epoch`: keeps the view through the watch engine on one session, until the view
/// ends or no longer is this consumer's.
async fn consume(inner: Arc<Inner>, epoch: u64, zk: ZkClient, session: Session) {
    let generation = session.generation();
    let stop = {
        let inner = inner.clone();
        let mut applied = inner.applied.subscribe();
        async move { while applied.changed().await.is_ok() && inner.state().is_current(epoch) {} }
    };
    let copy = Copy { inner: inner.clone(), epoch };
    Watch::new(&zk, &inner.base, true, WatchMode::Persistent, copy)
        .run(Sessions::Only(session), None, stop)
        .await;
    inner.end(Some(epoch));
    tracing::debug!(path = %inner.base, generation, "children view ended");
}

/// The view's policy on the watch engine: children only, and any disconnection ends it.
struct Copy {
    inner: Arc<Inner>,
    epoch: u64,
}

impl Consumer for Copy {
    type Read = Vec<String>;

    fn read<'a>(&'a self, session: &'a Session) -> impl Future<Output = ZkResult<Vec<String>>> + Send + 'a {
        crate::watch::names::list(session.client(), &self.inner.base)
    }

    fn reset(&mut self, children: Vec<String>) {
        let mut state = self.inner.state();
        // Still `Building`: nobody reads the children before the queued events are applied.
        if state.is_current(self.epoch) {
            state.children = children;
        }
    }

    fn apply<'a>(
        &'a mut self,
        _: &'a zkr_connection::SessionClient,
        burst: Vec<WatchedEvent>,
    ) -> impl Future<Output = ZkResult<Flow>> + Send + 'a {
        let keep = apply(&self.inner, self.epoch, burst);
        std::future::ready(Ok(if keep { Flow::Continue(()) } else { Flow::Break(()) }))
    }

    fn synced(&mut self, generation: u64) -> Flow {
        {
            let mut state = self.inner.state();
            if !state.is_current(self.epoch) {
                return Flow::Break(());
            }
            state.phase = Phase::Live { epoch: self.epoch, generation };
        }
        self.inner.bump();
        tracing::debug!(path = %self.inner.base, generation, "children view live");
        Flow::Continue(())
    }

    /// Events may be missed while disconnected, and a waiter takes the view as proof: end it.
    fn disconnected(&mut self) -> Flow {
        Flow::Break(())
    }

    fn failed(&mut self, error: &zookeeper_client::Error) -> Flow {
        if !is_retryable(error) && !is_session_error(error) {
            tracing::debug!(path = %self.inner.base, %error, "no children view for this lock");
            self.inner.state().refused = true;
        }
        Flow::Break(())
    }
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
            // A grandchild is not a contender.
            let Some(name) = crate::watch::names::child_name(base, &event.path) else { continue };
            match event.event_type {
                EventType::NodeCreated => {
                    if !state.children.iter().any(|c| c == name) {
                        state.children.push(name.to_string());
                    }
                    state.creates += 1;
                    if state.creates > FOREIGN_CREATES + 1 {
                        tracing::debug!(path = %base, "others are using the lock: dropping the children view");
                        keep = false;
                        break;
                    }
                    if state.children.len() > MAX_QUEUE {
                        tracing::debug!(path = %base, "long lock queue: dropping the children view");
                        keep = false;
                        break;
                    }
                }
                EventType::NodeDeleted => {
                    if let Some(at) = state.children.iter().position(|c| c == name) {
                        state.children.swap_remove(at);
                    }
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
            last_sequence: None,
            busy: false,
            creates: 0,
            refused: false,
        };
        Inner { base: "/locks/x".into(), state: Mutex::new(state), applied: watch::channel(0).0 }
    }

    fn event(kind: EventType, path: &str) -> WatchedEvent {
        WatchedEvent::new(kind, path)
    }

    fn sorted(inner: &Inner) -> Vec<String> {
        let mut children: Vec<String> = inner.state().children.clone();
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
            let node = format!("/locks/x/n{i}");
            let batch = vec![event(EventType::NodeCreated, &node), event(EventType::NodeDeleted, &node)];
            assert!(apply(&inner, 7, batch));
        }
        assert!(!apply(&inner, 7, vec![event(EventType::NodeCreated, "/locks/x/one-too-many")]));
    }

    #[test]
    fn events_queued_with_the_listing_are_applied_on_top_of_it() {
        // The listing saw 6 (and ours, 5, deleted earlier); 7 came and 6 went before the
        // consumer drained its queue, which also still held 5's deletion and 6's creation.
        let inner = live(&["6"]);
        let early = vec![
            event(EventType::NodeDeleted, "/locks/x/5"),
            event(EventType::NodeCreated, "/locks/x/6"),
            event(EventType::NodeCreated, "/locks/x/7"),
            event(EventType::NodeDeleted, "/locks/x/6"),
        ];
        assert!(apply(&inner, 7, early));
        assert_eq!(sorted(&inner), ["7"]);
    }

    #[test]
    fn a_queue_longer_than_the_bound_ends_the_view() {
        let inner = live(&[]);
        for i in 0..MAX_QUEUE {
            assert!(apply(&inner, 7, vec![event(EventType::NodeCreated, &format!("/locks/x/n{i}"))]));
            // Our own contender, seen by our acquire: not another process's.
            inner.state().creates = 0;
        }
        assert!(!apply(&inner, 7, vec![event(EventType::NodeCreated, "/locks/x/one-too-many")]));
    }

    #[test]
    fn quiet_means_our_node_and_two_other_users_at_most_since_the_last_acquire() {
        // Our create and delete (2), and two other users' (6): quiet.
        assert!(is_quiet(Some(10), Some(12)));
        assert!(is_quiet(Some(10), Some(16)));
        // Three other users, a directory made anew, or nothing to compare with: not quiet.
        assert!(!is_quiet(Some(10), Some(18)));
        assert!(!is_quiet(Some(10), Some(0)));
        assert!(!is_quiet(None, Some(12)));
        assert!(!is_quiet(Some(10), None));
    }

    fn view_of(inner: Inner) -> ChildrenView {
        ChildrenView { inner: Arc::new(inner) }
    }

    /// `wait_turn`'s answer for a view live on generation 1, our node `b`, "ours when first".
    async fn turn_after(view: &ChildrenView, change: impl FnOnce(&Inner)) -> Turn {
        let first = |children: Vec<String>| children.iter().min().is_some_and(|c| c == "b");
        let waiting = view.wait_turn(1, "b", first);
        tokio::pin!(waiting);
        assert!(futures::poll!(waiting.as_mut()).is_pending(), "a is ahead of us");
        change(&view.inner);
        waiting.await
    }

    #[tokio::test]
    async fn the_turn_comes_when_the_view_shows_nobody_ahead() {
        let view = view_of(live(&["a", "b", "c"]));
        let turn = turn_after(&view, |inner| {
            // A node behind us goes, then the one ahead.
            assert!(apply(inner, 7, vec![event(EventType::NodeDeleted, "/locks/x/c")]));
            assert!(apply(inner, 7, vec![event(EventType::NodeDeleted, "/locks/x/a")]));
        })
        .await;
        assert_eq!(turn, Turn::Ours);
    }

    #[tokio::test]
    async fn losing_our_node_or_the_view_ends_the_wait_without_the_lock() {
        let view = view_of(live(&["a", "b"]));
        let turn = turn_after(&view, |inner| {
            assert!(apply(inner, 7, vec![event(EventType::NodeDeleted, "/locks/x/b")]));
        })
        .await;
        assert_eq!(turn, Turn::Gone);

        let view = view_of(live(&["a", "b"]));
        let turn = turn_after(&view, |inner| inner.end(Some(7))).await;
        assert_eq!(turn, Turn::Ended);
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
