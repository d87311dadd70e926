//! [`ReleasedHeads`]: the nodes a local waiter watches, and whether this process released them
//! while they held the lock.

use std::collections::HashMap;

use parking_lot::Mutex;

/// The nodes local waiters watch (one lease), each with whether this process released it while
/// it held the lock. A local waiter whose node ahead was released here knows it is now first
/// without listing the queue again, so a local queue drains in one round trip per hand-over
/// instead of one listing of the whole queue per waiter. Only a watched node is remembered, and
/// only while it is watched: nothing is kept for releases no local waiter waits on (a lock
/// contended by other processes, a latch losing its lead on every fault).
#[derive(Debug, Default)]
pub(super) struct ReleasedHeads {
    watched: Mutex<HashMap<String, Watched>>,
}

#[derive(Debug, Default)]
struct Watched {
    /// Local waiters watching it (more than one only with a stale listing).
    waiters: u32,
    /// Released here while it held the lock, and not yet told to a waiter.
    released: bool,
}

impl ReleasedHeads {
    /// A waiter watches `name` until the returned [`Watching`] drops. Called before its watch
    /// is set, so that a release here after the watch is remembered.
    pub(super) fn watch(&self, name: &str) -> Watching<'_> {
        self.watched.lock().entry(name.to_owned()).or_default().waiters += 1;
        Watching { heads: self, name: name.to_owned() }
    }

    /// `name` held the lock and is being released: remembered if a local waiter watches it.
    pub(super) fn remember(&self, name: &str) {
        if let Some(watched) = self.watched.lock().get_mut(name) {
            watched.released = true;
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.watched.lock().len()
    }
}

/// A local waiter's watch of the node ahead of it: forgotten when dropped (the waiter was told,
/// gave up, or was cancelled).
#[derive(Debug)]
pub(super) struct Watching<'a> {
    heads: &'a ReleasedHeads,
    name: String,
}

impl Watching<'_> {
    /// Was the watched node released here while it held the lock? Told once: a second waiter
    /// with a stale listing lists again.
    pub(super) fn take(&self) -> bool {
        self.heads.watched.lock().get_mut(&self.name).is_some_and(|w| std::mem::take(&mut w.released))
    }
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        let mut watched = self.heads.watched.lock();
        if let Some(w) = watched.get_mut(&self.name) {
            w.waiters -= 1;
            if w.waiters == 0 {
                watched.remove(&self.name);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watched_release_is_told_once_and_nothing_is_kept_after() {
        let heads = ReleasedHeads::default();
        let watching = heads.watch("lock-0");
        heads.remember("lock-0");
        assert!(watching.take());
        assert!(!watching.take(), "told once");
        drop(watching);
        assert_eq!(heads.len(), 0, "forgotten once nobody watches it");
    }

    #[test]
    fn a_release_nobody_watches_is_not_kept() {
        let heads = ReleasedHeads::default();
        for i in 0..10_000 {
            heads.remember(&format!("lock-{i}"));
        }
        assert_eq!(heads.len(), 0);
        // Released before the watch: the waiter's watch finds the node gone and lists again.
        heads.remember("lock-1");
        let watching = heads.watch("lock-1");
        assert!(!watching.take());
    }

    #[test]
    fn two_waiters_on_one_node_are_told_once_and_the_entry_lives_until_both_go() {
        let heads = ReleasedHeads::default();
        let (first, second) = (heads.watch("lock-0"), heads.watch("lock-0"));
        heads.remember("lock-0");
        assert!(second.take());
        assert!(!first.take());
        drop(second);
        assert_eq!(heads.len(), 1);
        drop(first);
        assert_eq!(heads.len(), 0);
    }
}
