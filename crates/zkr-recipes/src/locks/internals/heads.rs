//! [`ReleasedHeads`]: the nodes this process released while they held the lock.

use std::collections::VecDeque;

use parking_lot::Mutex;

/// How many released heads are remembered: more than any local queue needs to drain.
const REMEMBERED: usize = 1024;

/// Nodes this process released while they held the lock (one lease). A local waiter whose node
/// ahead is one of them knows it is now first without listing the queue again, so a local queue
/// drains in one round trip per hand-over instead of one listing of the whole queue per waiter.
#[derive(Debug, Default)]
pub(super) struct ReleasedHeads {
    names: Mutex<VecDeque<String>>,
}

impl ReleasedHeads {
    /// `name` held the lock and is being released.
    pub(super) fn remember(&self, name: &str) {
        let mut names = self.names.lock();
        if names.len() >= REMEMBERED {
            names.pop_front();
        }
        names.push_back(name.to_owned());
    }

    /// Was `name` released while it held the lock? Consumed by the asking waiter (only the one
    /// behind it asks).
    pub(super) fn take(&self, name: &str) -> bool {
        let mut names = self.names.lock();
        match names.iter().position(|h| h == name) {
            Some(i) => {
                names.remove(i);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_head_is_told_once_and_old_ones_are_forgotten() {
        let heads = ReleasedHeads::default();
        heads.remember("lock-0");
        assert!(heads.take("lock-0"));
        assert!(!heads.take("lock-0"), "consumed by the first waiter that asks");
        for i in 0..=REMEMBERED {
            heads.remember(&format!("n{i}"));
        }
        assert!(!heads.take("n0"), "the oldest is forgotten past the bound");
        assert!(heads.take(&format!("n{REMEMBERED}")));
    }
}
