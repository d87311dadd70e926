//! Curator's `CircuitBreakingConnectionStateListener`: connection states with the flapping of
//! an outage taken out, for code that reacts to each state by resetting itself.
//!
//! The first state that is not connected opens the circuit and is passed on; while it is open
//! the states that follow are only recorded, except the first `Lost` (a session's end is
//! always told). When the retry policy's delay has passed, a connection that is back closes
//! the circuit and its state is passed on; a connection still down waits another delay, until
//! the policy gives up, which closes the circuit all the same. A closing circuit passes on
//! the last state unless it is the one that opened it.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt as _};
use tokio::time::{Duration, Instant};

use crate::retry::RetryPolicy;
use crate::session::state::ConnectionState;

/// The circuit's state machine, apart from any clock or stream (see the module docs).
#[derive(Debug)]
pub(crate) struct Circuit {
    policy: Arc<dyn RetryPolicy>,
    open: Option<Open>,
}

#[derive(Debug)]
struct Open {
    since: Instant,
    retries: u32,
    initial: ConnectionState,
    last: ConnectionState,
    lost_sent: bool,
    check_at: Instant,
}

impl Circuit {
    pub(crate) fn new(policy: Arc<dyn RetryPolicy>) -> Self {
        Circuit { policy, open: None }
    }

    /// When the open circuit looks at the connection next.
    pub(crate) fn next_check(&self) -> Option<Instant> {
        self.open.as_ref().map(|o| o.check_at)
    }

    /// A state arrived at `now`: what to pass on.
    pub(crate) fn on_state(&mut self, state: ConnectionState, now: Instant) -> Option<ConnectionState> {
        let Some(open) = &mut self.open else {
            if !state.is_connected() {
                if let Some(delay) = self.policy.allow_retry(0, Duration::ZERO) {
                    let lost_sent = state == ConnectionState::Lost;
                    let check_at = now + delay;
                    self.open = Some(Open {
                        since: now,
                        retries: 0,
                        initial: state,
                        last: state,
                        lost_sent,
                        check_at,
                    });
                }
            }
            return Some(state);
        };
        if open.lost_sent || state != ConnectionState::Lost {
            open.last = state;
            return None;
        }
        open.lost_sent = true;
        open.initial = ConnectionState::Lost;
        open.last = ConnectionState::Lost;
        Some(state)
    }

    /// The delay ended at `now`: what to pass on as the circuit closes, if it does.
    pub(crate) fn on_check(&mut self, now: Instant) -> Option<ConnectionState> {
        let open = self.open.as_mut()?;
        if !open.last.is_connected() {
            open.retries += 1;
            if let Some(delay) = self.policy.allow_retry(open.retries, now - open.since) {
                open.check_at = now + delay;
                return None;
            }
        }
        let open = self.open.take()?;
        (open.last != open.initial).then_some(open.last)
    }
}

impl crate::session::client::ConnectionStateStream {
    /// These states through a circuit breaker, Curator's
    /// `CircuitBreakingConnectionStateListener` (and its `ConnectionStateListenerManagerFactory
    /// .circuitBreaking(policy)`): during an outage whose connection flaps, the first state that
    /// is not connected is passed on, then nothing but a first `Lost` until `policy`'s delay has
    /// passed with the connection back (or the policy gave up), when the last state is.
    /// For code that resets itself on every state, such as a leader that steps down.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) {
    /// use std::time::Duration;
    /// use futures::StreamExt;
    /// use zkr_connection::retry::RetryNTimes;
    ///
    /// let mut states = zk.state_changes().circuit_breaking(RetryNTimes::new(5, Duration::from_secs(2)));
    /// while let Some(state) = states.next().await {
    ///     println!("{state:?}"); // at most one change per two seconds of a flapping outage
    /// }
    /// # }
    /// ```
    pub fn circuit_breaking(
        self,
        policy: impl RetryPolicy + 'static,
    ) -> impl Stream<Item = ConnectionState> + Send + Unpin + 'static {
        Box::pin(circuit_breaking(self, Arc::new(policy)))
    }
}

/// `states` through a circuit breaker driven by `policy` (see the module docs); ends when
/// `states` does.
pub(crate) fn circuit_breaking(
    states: impl Stream<Item = ConnectionState> + Send + 'static,
    policy: Arc<dyn RetryPolicy>,
) -> impl Stream<Item = ConnectionState> + Send + 'static {
    let states: Pin<Box<dyn Stream<Item = ConnectionState> + Send>> = Box::pin(states);
    futures::stream::unfold((states, Circuit::new(policy)), |(mut states, mut circuit)| async move {
        loop {
            let check = circuit.next_check();
            let passed = tokio::select! {
                state = states.next() => circuit.on_state(state?, Instant::now()),
                () = sleep_until(check) => circuit.on_check(Instant::now()),
            };
            if let Some(state) = passed {
                return Some((state, (states, circuit)));
            }
        }
    })
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::RetryNTimes;
    use ConnectionState::{Connected, Lost, Reconnected, Suspended};

    fn circuit(retries: u32) -> Circuit {
        Circuit::new(Arc::new(RetryNTimes::new(retries, Duration::from_secs(1))))
    }

    #[test]
    fn flapping_while_open_is_held_back_and_the_last_state_sent_on_close() {
        let t = Instant::now();
        let mut c = circuit(3);
        assert_eq!(c.on_state(Connected, t), Some(Connected));
        assert_eq!(c.on_state(Suspended, t), Some(Suspended), "opens, and says so");
        assert_eq!(c.next_check(), Some(t + Duration::from_secs(1)));
        for state in [Reconnected, Suspended, Reconnected] {
            assert_eq!(c.on_state(state, t), None, "{state:?} held back");
        }
        assert_eq!(c.on_check(t + Duration::from_secs(1)), Some(Reconnected), "closes: connected again");
        assert_eq!(c.next_check(), None);
        assert_eq!(c.on_state(Suspended, t), Some(Suspended), "closed: passes on and opens again");
    }

    #[test]
    fn the_first_lost_always_goes_through() {
        let t = Instant::now();
        let mut c = circuit(3);
        c.on_state(Suspended, t);
        assert_eq!(c.on_state(Lost, t), Some(Lost));
        assert_eq!(c.on_state(Lost, t), None);
        assert_eq!(c.on_state(Reconnected, t), None);
        assert_eq!(c.on_check(t + Duration::from_secs(1)), Some(Reconnected));
    }

    #[test]
    fn a_connection_still_down_waits_until_the_policy_gives_up() {
        let t = Instant::now();
        let mut c = circuit(3);
        c.on_state(Suspended, t);
        let second = t + Duration::from_secs(1);
        assert_eq!(c.on_check(second), None, "retry 1");
        assert_eq!(c.next_check(), Some(second + Duration::from_secs(1)));
        assert_eq!(c.on_check(second + Duration::from_secs(1)), None, "retry 2");
        // Given up: closes; the state is still the one that opened it, so nothing is sent.
        assert_eq!(c.on_check(second + Duration::from_secs(2)), None);
        assert_eq!(c.next_check(), None, "closed");
    }

    #[test]
    fn a_policy_that_allows_nothing_never_opens() {
        let t = Instant::now();
        let mut c = circuit(0);
        assert_eq!(c.on_state(Suspended, t), Some(Suspended));
        assert_eq!(c.on_state(Reconnected, t), Some(Reconnected));
        assert_eq!(c.next_check(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_stream_holds_back_flapping_until_the_delay_and_ends_with_its_input() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let states = tokio_stream::wrappers::UnboundedReceiverStream::new(rx);
        let mut out =
            Box::pin(circuit_breaking(states, Arc::new(RetryNTimes::new(3, Duration::from_secs(5)))));
        for state in [Connected, Suspended, Reconnected, Suspended, Reconnected] {
            tx.send(state).unwrap();
        }
        assert_eq!(out.next().await, Some(Connected));
        assert_eq!(out.next().await, Some(Suspended));
        let start = Instant::now();
        assert_eq!(out.next().await, Some(Reconnected));
        assert_eq!(start.elapsed(), Duration::from_secs(5), "after the policy's delay");
        drop(tx);
        assert_eq!(out.next().await, None);
    }
}
