//! The retry loop: Curator's `RetryLoop`, with a deadline and without silent session hops.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::kind::{is_retryable, is_session_error};
use crate::retry::{RetryBudget, RetryPolicy};
use crate::session::client::{Session, ZkClient};
use crate::session::supervisor::Shared;

/// Options for [`ZkClient::retry_with`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use zkr_connection::RetryOptions;
///
/// let options = RetryOptions::default().timeout(Duration::from_secs(5)).across_sessions(true);
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct RetryOptions {
    pub(crate) bound: Option<Bound>,
    pub(crate) across_sessions: bool,
    pub(crate) policy: Option<Arc<dyn RetryPolicy>>,
    pub(crate) no_resend: bool,
    pub(crate) session: Option<Session>,
}

/// What bounds a loop: a timeout from its start, or a caller's deadline.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Bound {
    Timeout(Duration),
    Deadline(Deadline),
}

impl RetryOptions {
    /// A bound on the whole loop from its start, sleeps and waits for a connection included.
    /// Defaults to none: the policy alone decides.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.bound = Some(Bound::Timeout(timeout));
        self
    }

    /// Bounds the loop by the caller's `deadline` instead: for a loop that is one step of a
    /// call whose timeout began earlier (a lock's `acquire_timeout` creating its node), so that
    /// the loop ends with the call and its errors name the caller's timeout, not what was left
    /// of it. `None` takes the bound away.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use std::time::Duration;
    /// use zkr_connection::{Deadline, RetryOptions};
    ///
    /// let deadline = Deadline::after(Duration::from_secs(2));
    /// // … some of the call's time goes by …
    /// let options = RetryOptions::default().deadline(Some(deadline));
    /// # }
    /// ```
    pub fn deadline(mut self, deadline: Option<Deadline>) -> Self {
        self.bound = deadline.map(Bound::Deadline);
        self
    }

    /// The loop's budget under this policy (the manager's unless [`policy`](Self::policy)
    /// gave one) and bound.
    pub(crate) fn budget(&self, default_policy: &Arc<dyn RetryPolicy>) -> RetryBudget {
        let policy = self.policy.clone().unwrap_or_else(|| default_policy.clone());
        let deadline = self.bound.map(|bound| match bound {
            Bound::Timeout(timeout) => Deadline::after(timeout),
            Bound::Deadline(deadline) => deadline,
        });
        RetryBudget::new(policy).until(deadline)
    }

    /// Whether an attempt may run on a session other than the first attempt's. Defaults to
    /// `false`: when the session expires, the loop stops with [`Error::SessionExpired`] instead
    /// of silently continuing on a new session. Curator's default carries on, which is wrong for
    /// any sequence that depends on an ephemeral node (a lock node, a leader latch) or on a
    /// watch: on the new session that node is gone.
    pub fn across_sessions(mut self, allowed: bool) -> Self {
        self.across_sessions = allowed;
        self
    }

    /// Never sends an attempt again once one may have been applied (its reply was lost, or
    /// its session ended with it in flight): the loop stops with that attempt's error, which
    /// is [ambiguous](crate::Classify::is_ambiguous). For a write that must not be applied twice, such
    /// as a sequential create. Defaults to `false`: such an attempt is retried, and
    /// [`ZkClient::retry_write`] says that it was.
    pub fn no_resend(mut self) -> Self {
        self.no_resend = true;
        self
    }

    /// Runs every attempt on `session`, the first one included: once the manager has given
    /// that session up (or replaced it), the loop stops with [`Error::SessionExpired`] and
    /// sends nothing. For operations on a node that stands for a hold (a lock node, a lease, an
    /// item's lock): such a node is only ever the session's that created it, and on the next
    /// session the same path may be another holder's. Overrides
    /// [`across_sessions`](Self::across_sessions).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// use zkr_connection::RetryOptions;
    ///
    /// let session = zk.session().await?;
    /// let owner = session.clone();
    /// // … an ephemeral node created on `session` …
    /// zk.retry_with(RetryOptions::default().on_session(&owner), |s| async move {
    ///     s.client().delete("/app/lock-0000000001", None).await
    /// })
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub fn on_session(mut self, session: &Session) -> Self {
        self.session = Some(session.clone());
        self
    }

    /// A policy for this loop instead of the manager's.
    pub fn policy(mut self, policy: impl RetryPolicy + 'static) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }
}

impl ZkClient {
    /// Runs `op` on the current session and retries it under the manager's retry policy:
    /// Curator's `RetryLoop.callWithRetry`.
    ///
    /// Before each attempt it waits for a session (and, after a connection loss, for the
    /// connection, at most the connection timeout, then tries anyway). It retries connection
    /// loss, operation timeout, session moved and throttling as the policy allows; it never
    /// retries answers such as `NoNode`, `NodeExists`, `BadVersion` or `NoAuth`. When the
    /// session expires it stops with [`Error::SessionExpired`]: it does not carry the operation
    /// over to a new session unless [`RetryOptions::across_sessions`] says so (see there why).
    ///
    /// # Errors
    /// [`Error::Zk`] for an answer that is not retried, [`Error::RetriesExhausted`],
    /// [`Error::SessionExpired`], [`Error::DeadlineExceeded`], [`Error::ConnectTimeout`] (which
    /// names the deadline when that passed while waiting for a connection) or
    /// [`Error::Closed`].
    ///
    /// # Cancel safety
    /// Cancel safe as far as the loop goes; whether a request already sent was applied is, as
    /// always with ZooKeeper, unknown. Use [`create_protected`](Self::create_protected) for
    /// creates whose outcome must be known.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
    /// let (data, stat) = zk.retry(|s| async move { s.client().get_data("/app/config").await }).await?;
    /// # Ok(()) }
    /// ```
    pub async fn retry<T, F, Fut>(&self, op: F) -> Result<T>
    where
        F: FnMut(Session) -> Fut,
        Fut: Future<Output = std::result::Result<T, zookeeper_client::Error>>,
    {
        self.retry_with(RetryOptions::default(), op).await
    }

    /// [`retry`](Self::retry) with options.
    ///
    /// # Errors
    /// As [`retry`](Self::retry).
    ///
    /// # Cancel safety
    /// As [`retry`](Self::retry).
    pub fn retry_with<'a, T, F, Fut>(
        &'a self,
        options: RetryOptions,
        op: F,
    ) -> impl Future<Output = Result<T>> + 'a
    where
        F: FnMut(Session) -> Fut + 'a,
        Fut: Future<Output = std::result::Result<T, zookeeper_client::Error>> + 'a,
        T: 'a,
    {
        use tracing::Instrument as _;
        // A span around a plain async fn: `#[tracing::instrument]` would keep the arguments
        // twice in every pending operation's future.
        let span = tracing::debug_span!(
            "zk.retry",
            zk.retries = tracing::field::Empty,
            zk.retry_wait_ms = tracing::field::Empty,
        );
        self.retry_in_span(options, op).instrument(span)
    }

    async fn retry_in_span<T, F, Fut>(&self, options: RetryOptions, mut op: F) -> Result<T>
    where
        F: FnMut(Session) -> Fut,
        Fut: Future<Output = std::result::Result<T, zookeeper_client::Error>>,
    {
        let mut budget = options.budget(self.retry_policy());
        let deadline = budget.deadline();
        let pinned = options.session.is_some();
        // The first session's generation and id (no clone of its handle: a clone allocates).
        let mut first_session = options.session.as_ref().map(|s| (s.generation(), s.id()));
        let mut last_error: Option<zookeeper_client::Error> = None;
        let mut waited = Duration::ZERO;
        loop {
            // The session at hand, without subscribing to the session channel; the wait for
            // one (no session yet) is boxed, off the common path.
            let session = match self.try_session() {
                Some(session) => session,
                None => Box::pin(self.session_for(deadline)).await?,
            };
            match first_session {
                Some((generation, id))
                    if generation != session.generation() && (pinned || !options.across_sessions) =>
                {
                    return Err(Error::SessionExpired { session: id });
                }
                None => first_session = Some((session.generation(), session.id())),
                _ => {}
            }
            if last_error.as_ref().is_some_and(is_retryable) {
                // Curator waits for the connection (at most the connection timeout) before
                // trying again; requests sent while disconnected would queue anyway.
                let bound = Instant::now() + self.connection_timeout();
                let wait =
                    deadline.map_or(bound, |d| d.or_sooner(bound)).saturating_duration_since(Instant::now());
                let _ = self.wait_connected(wait).await;
            }
            let (generation, session_id) = (session.generation(), session.id());
            let attempt = nudged(op(session), generation, &self.shared);
            let Some(outcome) = crate::deadline::within(deadline, attempt).await else {
                let deadline = deadline.map(|d| d.timeout()).unwrap_or_default();
                return Err(Error::DeadlineExceeded { deadline, last: last_error });
            };
            let error = match outcome {
                Ok(value) => return Ok(value),
                Err(e) => e,
            };
            if options.no_resend && (is_retryable(&error) || is_session_error(&error)) {
                return Err(Error::Zk(error));
            }
            if is_session_error(&error) {
                self.carry_over(&options, &budget, &error, generation, session_id).await?;
            } else if !(is_retryable(&error) && budget.allows(&error)) {
                return Err(Error::Zk(error));
            }
            let sleep = budget.next_sleep().map_err(|stop| stop.into_error(Some(error.clone())))?;
            tracing::debug!(attempt = budget.retries(), delay = ?sleep, error = %error, "retrying ZooKeeper operation");
            crate::session::telemetry::retry(&self.shared.config.name, "operation");
            waited += sleep;
            tracing::Span::current()
                .record("zk.retries", budget.retries())
                .record("zk.retry_wait_ms", waited.as_millis() as u64);
            last_error = Some(error);
            // Closed meanwhile: no try comes after the sleep.
            tokio::select! {
                () = tokio::time::sleep(sleep) => {}
                () = self.shared.cancel.cancelled() => return Err(Error::Closed),
            }
        }
    }

    /// [`retry_with`](Self::retry_with) for a write, counting how many times it was sent: the
    /// one home of telling a race lost to another writer from our own earlier try that was
    /// applied though its reply was lost. A `BadVersion` or `NodeExists` after a resend may be
    /// our own write ([`Sent::resent`]).
    ///
    /// # Cancel safety
    /// As [`retry`](Self::retry).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) {
    /// use zkr_connection::RetryOptions;
    ///
    /// let sent = zk
    ///     .retry_write(RetryOptions::default(), |s| async move {
    ///         s.client().set_data("/app/count", b"7", Some(3)).await
    ///     })
    ///     .await;
    /// match sent.result {
    ///     Err(e) if e.is_bad_version() && sent.resent() => println!("maybe our own write"),
    ///     Err(e) if e.is_bad_version() => println!("another writer came first"),
    ///     other => println!("{other:?}"),
    /// }
    /// # }
    /// ```
    pub async fn retry_write<T, F, Fut>(&self, options: RetryOptions, mut op: F) -> Sent<T>
    where
        F: FnMut(Session) -> Fut,
        Fut: Future<Output = std::result::Result<T, zookeeper_client::Error>>,
    {
        let sends = AtomicU32::new(0);
        let result = self
            .retry_with(options, |session| {
                sends.fetch_add(1, Ordering::Relaxed);
                op(session)
            })
            .await;
        Sent { result, sends: sends.into_inner() }
    }

    /// After a session error: waits for the manager to replace the session when the loop may
    /// carry on across sessions, else says why it stops.
    async fn carry_over(
        &self,
        options: &RetryOptions,
        budget: &RetryBudget,
        error: &zookeeper_client::Error,
        generation: u64,
        session_id: i64,
    ) -> Result<()> {
        if self.is_closed() {
            return Err(Error::Closed);
        }
        if options.session.is_some() || !options.across_sessions || !budget.allows(error) {
            // (Curator's default would carry on here; see RetryOptions::across_sessions.)
            return Err(Error::SessionExpired { session: session_id });
        }
        let mut sessions = self.session_watch();
        let replaced = sessions.wait_for(|s| s.as_ref().is_some_and(|s| s.generation() > generation));
        let bound = budget
            .deadline()
            .map(|d| d.instant())
            .unwrap_or_else(|| Instant::now() + self.session_timeout() + self.connection_timeout());
        // A closed manager publishes no session again: stop at once (waiting to the bound kept
        // the call, and the manager it holds, alive after the close).
        let replaced = tokio::select! {
            biased;
            () = self.shared.cancel.cancelled() => return Err(Error::Closed),
            replaced = tokio::time::timeout_at(bound, replaced) => replaced.map(|r| r.is_ok()),
        };
        match replaced {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::Closed),
            Err(_) => Err(Error::SessionExpired { session: session_id }),
        }
    }
}

/// A write run by [`ZkClient::retry_write`]: its outcome, and how many times it was sent.
#[derive(Debug)]
#[non_exhaustive]
pub struct Sent<T> {
    /// What the last try answered (or why the loop stopped).
    pub result: Result<T>,
    /// How many times the write was sent (0 when no session could be had).
    pub sends: u32,
}

impl<T> Sent<T> {
    /// Was the write sent more than once? Then an earlier try may have been applied, and a
    /// conflicting answer (`BadVersion`, `NodeExists`) may be its own effect.
    pub fn resent(&self) -> bool {
        self.sends > 1
    }
}

/// `attempt`, counted while it waits for its reply (the stall watchdog nudges the server when
/// attempts wait and no reply comes: [`crate::session::stall`]). Should the manager give the session up
/// meanwhile, the attempt ends at once with `SessionExpired`: the old handle may never learn
/// of its expiry by itself.
pub(crate) fn nudged<F: Future>(attempt: F, generation: u64, shared: &Shared) -> Nudged<'_, F> {
    Nudged { attempt, given_up: None, generation, shared }
}

pin_project_lite::pin_project! {
    /// The future of [`nudged`], written out so that it holds the attempt once (an `async fn`
    /// keeps room for its argument and its pinned copy: every waiting operation pays for it).
    /// No timer of its own: a timer per attempt cost more instructions than the request.
    pub(crate) struct Nudged<'a, F> {
        #[pin]
        attempt: F,
        #[pin]
        given_up: Option<tokio::sync::futures::Notified<'a>>,
        // The attempt's session.
        generation: u64,
        shared: &'a Shared,
    }

    impl<'a, F> PinnedDrop for Nudged<'a, F> {
        fn drop(this: Pin<&mut Self>) {
            if this.given_up.is_some() {
                this.shared.attempts.finished();
            }
        }
    }
}

impl<T, F> Future for Nudged<'_, F>
where
    F: Future<Output = std::result::Result<T, zookeeper_client::Error>>,
{
    type Output = F::Output;

    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        use std::task::Poll;
        let mut this = self.project();
        if let Poll::Ready(outcome) = this.attempt.poll(cx) {
            return Poll::Ready(outcome);
        }
        if this.given_up.is_none() {
            // Listening first, then looking: a session given up in between is not missed.
            this.given_up.set(Some(this.shared.ended.notified()));
            this.shared.attempts.started();
            if this.shared.session_given_up(*this.generation) {
                return Poll::Ready(Err(zookeeper_client::Error::SessionExpired));
            }
        }
        if let Some(given_up) = this.given_up.as_mut().as_pin_mut() {
            if given_up.poll(cx).is_ready() {
                return Poll::Ready(Err(zookeeper_client::Error::SessionExpired));
            }
        }
        Poll::Pending
    }
}
