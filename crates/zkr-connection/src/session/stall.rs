//! The stall watchdog: the remedy for ZOOKEEPER-4537
//! ([`ZkClientBuilder::stall_nudge`](crate::ZkClientBuilder::stall_nudge)). A follower of
//! ZooKeeper 3.6.0-3.6.3, 3.7.0-3.7.1 or 3.8.0 may hold a reply until the session's next packet
//! arrives; when attempts of the retry loop have waited a while and no reply at all came, one
//! cheap read goes out on the connection. The attempts only count themselves (two atomic
//! increments): one timer per connection, not one per request.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zookeeper_client::Client;

use crate::session::supervisor::Shared;

/// How many attempts started waiting for a reply, and how many of those have finished
/// (answered or dropped).
#[derive(Debug, Default)]
pub(crate) struct Attempts {
    started: AtomicU64,
    finished: AtomicU64,
}

impl Attempts {
    pub(crate) fn started(&self) {
        self.started.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn finished(&self) {
        self.finished.fetch_add(1, Ordering::Relaxed);
    }

    /// (started, finished), finished read first: never more finished than started.
    fn count(&self) -> (u64, u64) {
        let finished = self.finished.load(Ordering::Relaxed);
        (self.started.load(Ordering::Acquire).max(finished), finished)
    }
}

/// Is the connection stalled? At the tick `then` some attempt was waiting, and none has
/// finished since: an attempt has waited at least as long as since `then`.
fn stalled(then: (u64, u64), now: (u64, u64)) -> bool {
    then.1 < then.0 && now.1 == then.1
}

/// Watches `client`'s attempts every half `after`; nudges when one has waited `after` (and at
/// most `after / 2` longer) with no reply at all, then at most once per `after` while the
/// stall lasts. Runs until aborted with the connection.
pub(crate) async fn watch(shared: Arc<Shared>, client: Client, after: Duration) {
    let mut ticks = tokio::time::interval(after / 2);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The counts at the last two ticks, the older first.
    let mut history = [shared.attempts.count(); 2];
    loop {
        ticks.tick().await;
        let now = shared.attempts.count();
        if stalled(history[0], now) {
            tracing::debug!(?after, "operations wait for their replies: nudging the server");
            crate::session::telemetry::stall_nudge(&shared.config.name);
            // Sent when called; the reply is not awaited.
            drop(client.check_stat("/zookeeper"));
            // The next nudge only after another `after` without a reply.
            history = [now, now];
        } else {
            history = [history[1], now];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_a_stall_only_when_nothing_finished_since_it_was_seen() {
        assert!(stalled((1, 0), (1, 0)), "one attempt waited the whole time");
        assert!(stalled((3, 1), (5, 1)), "new attempts do not hide the old one");
        assert!(!stalled((1, 0), (1, 1)), "a reply came");
        assert!(!stalled((2, 2), (3, 2)), "nothing waited at the older tick");
        assert!(!stalled((0, 0), (0, 0)), "idle");
    }
}
