//! The wait for our turn, as a loop over named [`Step`]s.

use std::sync::Arc;
use std::time::Duration;

use zkr_connection::retry::RetryBudget;
use zkr_connection::{is_retryable, is_session_error, Deadline, Session};

use super::turn::{Step, TurnSource};
use super::{LockInternals, Wait};
use crate::locks::{LockError, LockInternalsDriver};

/// What the waiter knows about the queue before a step.
pub(super) struct Look {
    /// The sorted contenders, our node among them (from the listing sent with the create, or
    /// the children view); `None`: list first.
    pub(super) listing: Option<Arc<Vec<String>>>,
    /// A listing must be issued after this lister mark.
    pub(super) not_before: u64,
    /// The manager's error epoch, taken with `not_before`.
    pub(super) epoch: u64,
    /// The children view gave `listing` and can tell when our turn comes.
    pub(super) via_view: bool,
}

/// Why the wait ended without the lock.
pub(super) enum WaitError {
    /// Our node is gone (session expired or deleted): start over.
    NodeMissing,
    /// Not ours in time: the caller's deadline passed, or it does not wait.
    NotAcquired,
    Failed(LockError),
}

impl<D: LockInternalsDriver> LockInternals<D> {
    /// A look that lists afresh: a listing sent from now on, and the error epoch now.
    fn fresh_look(&self) -> Look {
        Look { listing: None, epoch: self.zk.error_epoch(), not_before: self.lister.mark(), via_view: false }
    }

    /// Waits until we hold the lock: the error epoch from before the proof (see [`Step::Held`]).
    pub(super) async fn wait_for_lock(
        &self,
        session: &Session,
        our_name: &str,
        first: Look,
        wait: Wait,
        budget: &mut RetryBudget,
    ) -> Result<u64, WaitError> {
        let deadline = wait.deadline();
        let mut look = first;
        let mut session = session.clone();
        loop {
            if self.zk.generation() != session.generation() {
                return Err(WaitError::NodeMissing);
            }
            // The same session on a new connection (re-attached on new hosts): wait through it.
            if let Some(current) = self.zk.try_session().filter(|s| s.generation() == session.generation()) {
                session = current;
            }
            let session = &session;
            // Every request of the wait counts against the deadline: a request to a server that
            // lost its quorum can go unanswered for seconds.
            let step = zkr_connection::within(deadline, self.step(session, our_name, look, wait));
            match step.await.ok_or(WaitError::NotAcquired)?? {
                Ok(Step::Held { epoch }) => return Ok(epoch),
                Ok(Step::NotNow) => return Err(WaitError::NotAcquired),
                Ok(Step::ListAgain) => {}
                Err(e) => self.on_wait_error(e, session, budget).await?,
            }
            look = self.fresh_look();
        }
    }

    /// One step: list (unless the look has a listing), decide, and wait on a turn source.
    async fn step(
        &self,
        session: &Session,
        our_name: &str,
        look: Look,
        wait: Wait,
    ) -> Result<Result<Step, zookeeper_client::Error>, WaitError> {
        let sorted = match look.listing {
            Some(listing) => listing,
            None => match self.lister.list(session, &self.base_path, look.not_before, self.sorter()).await {
                Ok(listing) => listing,
                Err(e) => return Ok(Err(e)),
            },
        };
        // The listing showed another layout's contenders: joining would make two holders.
        self.layout.conflict(&self.base_path).map_err(WaitError::Failed)?;
        let predicate = match self.driver.gets_the_lock(&sorted, our_name, self.max_leases) {
            Ok(predicate) => predicate,
            Err(LockError::NotAContender { .. }) => return Err(WaitError::NodeMissing),
            Err(e) => return Err(WaitError::Failed(e)),
        };
        if predicate.gets_the_lock {
            return Ok(Ok(Step::Held { epoch: look.epoch }));
        }
        let Some(ahead) = predicate.path_to_watch else { return Ok(Ok(Step::ListAgain)) };
        if wait == Wait::NoWait {
            return Ok(Ok(Step::NotNow));
        }
        let source = if look.via_view { TurnSource::View } else { self.predecessor(&sorted, ahead) };
        drop(sorted);
        Ok(self.wait_turn(source, session, our_name).await)
    }

    /// A failed request of the wait: start over when our node is gone, fail when retrying
    /// cannot help or the budget is spent, else sleep before the next step.
    async fn on_wait_error(
        &self,
        error: zookeeper_client::Error,
        session: &Session,
        budget: &mut RetryBudget,
    ) -> Result<(), WaitError> {
        // `NoNode`: the lock directory itself is gone, and so is our node.
        if is_session_error(&error)
            || error == zookeeper_client::Error::NoNode
            || self.zk.generation() != session.generation()
        {
            return Err(WaitError::NodeMissing);
        }
        if !(is_retryable(&error) && budget.allows(&error)) {
            return Err(WaitError::Failed(LockError::zk(error)));
        }
        match budget.pause().await {
            Ok(()) => Ok(()),
            Err(stop) if stop.is_deadline() => Err(WaitError::NotAcquired),
            Err(stop) => Err(WaitError::Failed(stop.into_error(Some(error)).into())),
        }
    }
}

impl Wait {
    /// A wait of `timeout` from now.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::time::Duration;
    /// use zkr_recipes::locks::Wait;
    ///
    /// let wait = Wait::timeout(Duration::from_secs(2));
    /// assert_eq!(wait.deadline().unwrap().timeout(), Duration::from_secs(2));
    /// assert_eq!(Wait::Forever.deadline(), None);
    /// # }
    /// ```
    pub fn timeout(timeout: Duration) -> Wait {
        Wait::Until(Deadline::after(timeout))
    }

    /// Until `deadline`, or forever when there is none.
    pub fn until(deadline: Option<Deadline>) -> Wait {
        deadline.map_or(Wait::Forever, Wait::Until)
    }

    /// The deadline, if the wait has one ([`Wait::Until`]).
    pub fn deadline(self) -> Option<Deadline> {
        match self {
            Wait::Until(deadline) => Some(deadline),
            Wait::Forever | Wait::NoWait => None,
        }
    }
}
