//! Follows the cache: each round of its changes becomes one patch, sent to every page; a page
//! that joins gets the whole view first, then the patches after it, none missed (the view and
//! the subscription are taken under the lock the patches are made under).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::{FutureExt as _, Stream, StreamExt as _};
use tokio::sync::broadcast;
use zkr_recipes::cache::{CacheEvent, CuratorCache};

use super::model::{Change, Model};
use super::tree::Tree;
use super::view::Whole;

/// The most changes made into one patch; more wait for the next.
const MAX_BATCH: usize = 100_000;

/// What a page is sent: `view` (the whole, replacing what it has) or `patch`.
#[derive(Debug)]
pub(crate) struct Message {
    pub event: &'static str,
    pub data: String,
}

/// The model and the channel its patches go out on (`None` once `zkr ui` stops: every page's
/// stream then ends).
#[derive(Debug)]
struct State {
    model: Model,
    patches: Option<broadcast::Sender<Arc<Message>>>,
}

/// The page's model, shared by the task that follows the cache and the web handlers.
#[derive(Debug)]
pub(crate) struct Live {
    state: Mutex<State>,
}

impl Live {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The whole view now, as JSON.
    pub(crate) fn view_json(&self) -> String {
        to_json(&self.lock().model.view())
    }

    /// The whole view now, and every message after it.
    pub(crate) fn subscribe(&self) -> (String, broadcast::Receiver<Arc<Message>>) {
        let state = self.lock();
        let receiver = match &state.patches {
            Some(patches) => patches.subscribe(),
            None => broadcast::channel(1).1,
        };
        (to_json(&state.model.view()), receiver)
    }

    /// Ends every page's stream.
    pub(crate) fn close(&self) {
        self.lock().patches = None;
    }
}

fn to_json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string())
}

/// Builds the model from the cache and keeps it up to date in a task.
pub(crate) fn follow(
    zk: &zkr_connection::ZkClient,
    cache: &CuratorCache,
    mut model: Model,
) -> (Arc<Live>, tokio::task::JoinHandle<()>) {
    // Subscribed before the snapshot is read: a change after it is an event; before, in it.
    let mut events = cache.events();
    let mut snapshots = cache.snapshots();
    let mut states = zk.state_watch();
    let snapshot = snapshots.borrow_and_update().clone();
    model.set_state(*states.borrow_and_update(), snapshot.is_stale(), snapshot.is_initialized());
    model.rebuild(&Tree::Snapshot(&snapshot), now_ms());
    let (patches, _) = broadcast::channel(1024);
    let live = Arc::new(Live { state: Mutex::new(State { model, patches: Some(patches) }) });
    let following = live.clone();
    let task = tokio::spawn(async move {
        let mut round = Round::default();
        loop {
            tokio::select! {
                event = events.next() => match event {
                    Some(event) => round.take(event),
                    None => break,
                },
                changed = snapshots.changed() => if changed.is_err() { break },
                changed = states.changed() => if changed.is_err() { break },
            }
            round.drain(&mut events);
            let snapshot = snapshots.borrow_and_update().clone();
            let connection = *states.borrow_and_update();
            let mut state = following.lock();
            state.model.set_state(connection, snapshot.is_stale(), snapshot.is_initialized());
            let message = round.made(&mut state.model, &Tree::Snapshot(&snapshot));
            if let (Some(message), Some(patches)) = (message, &state.patches) {
                let _ = patches.send(Arc::new(message));
            }
        }
    });
    (live, task)
}

/// The changes of one round, and whether any were missed.
#[derive(Default)]
struct Round {
    changes: Vec<Change>,
    missed: bool,
    /// What the last message said of the whole (its time aside): a patch that changes nothing
    /// is not sent.
    last: Option<Whole>,
}

impl Round {
    fn take(&mut self, event: CacheEvent) {
        let ephemeral = |node: &zkr_recipes::cache::CachedNode| node.stat().ephemeral_owner != 0;
        let change = match event {
            CacheEvent::Created { path, node } => Change { ephemeral: ephemeral(&node), path },
            CacheEvent::Changed { path, old, new } => {
                Change { ephemeral: ephemeral(&old) || ephemeral(&new), path }
            }
            CacheEvent::Deleted { path, old } => Change { ephemeral: ephemeral(&old), path },
            // Missed changes, a first read applied, or what a later release adds: read it all.
            _ => {
                self.missed = true;
                return;
            }
        };
        self.changes.push(change);
    }

    /// Takes the events already waiting, up to [`MAX_BATCH`].
    fn drain(&mut self, events: &mut (impl Stream<Item = CacheEvent> + Unpin)) {
        while self.changes.len() < MAX_BATCH {
            match events.next().now_or_never() {
                Some(Some(event)) => self.take(event),
                _ => break,
            }
        }
    }

    /// The round's message (the whole view after missed changes), or none when nothing changed.
    fn made(&mut self, model: &mut Model, tree: &Tree<'_>) -> Option<Message> {
        let now = now_ms();
        if std::mem::take(&mut self.missed) {
            self.changes.clear();
            model.rebuild(tree, now);
            let view = model.view();
            self.last = Some(Whole { now_ms: 0, ..view.whole });
            return Some(Message { event: "view", data: to_json(&view) });
        }
        let patch = model.apply(tree, &std::mem::take(&mut self.changes), now);
        let whole = Some(Whole { now_ms: 0, ..patch.whole });
        let same = patch.upsert.is_empty() && patch.remove.is_empty() && patch.tree.is_none();
        if std::mem::replace(&mut self.last, whole) == whole && same {
            return None;
        }
        Some(Message { event: "patch", data: to_json(&patch) })
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
