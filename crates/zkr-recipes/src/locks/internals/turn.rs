//! How a waiter learns that its turn has come: one way per [`TurnSource`].

use zkr_connection::{path, Session};
use zookeeper_client::EventType;

use super::heads::Watching;
use super::LockInternals;
use crate::locks::view::Turn;
use crate::locks::LockInternalsDriver;

/// What one step of the wait learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// The lock is ours, proved while the manager's error epoch was `epoch` (so a disruption
    /// during the wait does not count against the new holder, and one after the proof does).
    Held { epoch: u64 },
    /// Not ours, and the caller does not wait.
    NotNow,
    /// Our turn may have come, or our node may be gone: list again.
    ListAgain,
}

/// A way to learn that our turn may have come.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TurnSource {
    /// The children view (`locks/view.rs`): ours when it shows nobody ahead, with no listing
    /// when a node ahead goes without having been the head.
    View,
    /// A data watch on the contender `max_leases` places ahead of us; with `second` (a prompt
    /// hand-over, see [`LockInternals::prompt_hand_over`]), one on the contender ahead of that
    /// too, whose going is followed by a listing that tells whether `ahead` now leads.
    Predecessor { ahead: String, on_delete: OnDelete, second: Option<String> },
}

/// The prompt hand-over's second watch.
enum Second {
    /// None kept: `ahead` led when we listed, or the hand-over is not prompt.
    None,
    /// The contender ahead of `ahead` is watched.
    Watching(std::pin::Pin<Box<dyn std::future::Future<Output = zookeeper_client::WatchedEvent> + Send>>),
    /// It went (or changed): list to learn whether `ahead` leads now.
    Gone,
}

/// What a listing taken when the contender ahead of `ahead` went tells.
enum Relisted {
    /// `ahead` is first, we are second: its deletion makes the lock ours.
    Leads,
    /// `name` is still ahead of `ahead`: watch it instead.
    Behind(String),
    /// `ahead` or our node is gone: the wait lists afresh.
    Changed,
}

/// What the deletion of the watched predecessor tells without a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum OnDelete {
    /// Nothing: list again (it may have given up rather than released).
    ListAgain,
    /// It was the head of a one-lease queue: with it gone we are first (sequence numbers only
    /// grow, so nobody can slip in ahead).
    Ours,
    /// Ours if this process released it while it held the lock (`ReleasedHeads`, which
    /// remembers it only while a local waiter watches it).
    OursIfReleasedHere,
}

impl<D: LockInternalsDriver> LockInternals<D> {
    /// The turn source for a waiter whose listing `sorted` puts `ahead` before it.
    pub(super) fn predecessor(&self, sorted: &[String], ahead: String) -> TurnSource {
        let on_delete = if self.max_leases != 1 || !self.driver.head_release_grants() {
            OnDelete::ListAgain
        } else if sorted.first() == Some(&ahead) {
            OnDelete::Ours
        } else {
            OnDelete::OursIfReleasedHere
        };
        let second = (self.prompt && on_delete == OnDelete::OursIfReleasedHere)
            .then(|| just_ahead_of(sorted, &ahead))
            .flatten();
        TurnSource::Predecessor { ahead, on_delete, second }
    }

    /// Waits on `source` until our turn may have come.
    pub(super) async fn wait_turn(
        &self,
        source: TurnSource,
        session: &Session,
        our_name: &str,
    ) -> Result<Step, zookeeper_client::Error> {
        match source {
            TurnSource::View => Ok(self.turn_by_view(session, our_name).await),
            TurnSource::Predecessor { ahead, on_delete, second } => {
                self.turn_by_predecessor(session, our_name, &ahead, on_delete, second).await
            }
        }
    }

    async fn turn_by_view(&self, session: &Session, our_name: &str) -> Step {
        let watched_at = self.zk.error_epoch();
        let is_ours = |children: Vec<String>| {
            let sorted = self.driver.sort_children(&children, &self.lock_name);
            self.driver.gets_the_lock(&sorted, our_name, self.max_leases).is_ok_and(|p| p.gets_the_lock)
        };
        let turn = self.view.wait_turn(session.generation(), our_name, is_ours).await;
        // Ours only if the connection was not disrupted meanwhile; otherwise (or when the view
        // ended, or our node left it) list again to be sure.
        if turn == Turn::Ours && self.zk.error_epoch() == watched_at {
            Step::Held { epoch: watched_at }
        } else {
            Step::ListAgain
        }
    }

    async fn turn_by_predecessor(
        &self,
        session: &Session,
        our_name: &str,
        ahead: &str,
        mut on_delete: OnDelete,
        second: Option<String>,
    ) -> Result<Step, zookeeper_client::Error> {
        let watched_at = self.zk.error_epoch();
        // Watched here before the watch is set: a release here after it is remembered.
        let watching = (on_delete == OnDelete::OursIfReleasedHere).then(|| self.released_heads.watch(ahead));
        // A data watch, not an exists watch: no watch is left on a node that is already gone
        // (CURATOR-107).
        let watcher = match session.client().get_and_watch_data(&path::join(&self.base_path, ahead)).await {
            Ok((_, _, watcher)) => watcher,
            Err(zookeeper_client::Error::NoNode) if on_delete == OnDelete::Ours => {
                return Ok(Step::Held { epoch: watched_at })
            }
            Err(zookeeper_client::Error::NoNode) => return Ok(Step::ListAgain),
            Err(e) => return Err(e),
        };
        let deleted = watcher.changed();
        tokio::pin!(deleted);
        let mut second = match second {
            Some(name) => self.watch_second(session, &name).await?,
            None => Second::None,
        };
        let event = loop {
            if let Second::Gone = second {
                second = match self.relist(session, our_name, ahead).await? {
                    Relisted::Leads => {
                        on_delete = OnDelete::Ours;
                        Second::None
                    }
                    Relisted::Behind(name) => self.watch_second(session, &name).await?,
                    Relisted::Changed => return Ok(Step::ListAgain),
                };
                continue;
            }
            // A session the manager gives up never fires its watches: stop waiting on it.
            tokio::select! {
                biased;
                () = self.zk.session_replaced(session.generation()) => {
                    return Err(zookeeper_client::Error::SessionExpired);
                }
                // The session re-attached on new hosts: the old handle's watch is gone.
                () = self.zk.connection_replaced(session.connection()) => return Ok(Step::ListAgain),
                event = &mut deleted => break event,
                _ = async {
                    match &mut second {
                        Second::Watching(went) => went.await,
                        _ => std::future::pending().await,
                    }
                } => second = Second::Gone,
            }
        };
        match event.event_type {
            // Ours unless the connection was disrupted meanwhile: then list again to be sure.
            EventType::NodeDeleted
                if deletion_grants(on_delete, watching.as_ref()) && self.zk.error_epoch() == watched_at =>
            {
                Ok(Step::Held { epoch: watched_at })
            }
            EventType::Session => Err(zookeeper_client::Error::SessionExpired),
            // Deleted (not the head) or changed: list again.
            _ => Ok(Step::ListAgain),
        }
    }

    /// The prompt hand-over's data watch on `name`, the contender ahead of the one we wait on.
    async fn watch_second(&self, session: &Session, name: &str) -> Result<Second, zookeeper_client::Error> {
        match session.client().get_and_watch_data(&path::join(&self.base_path, name)).await {
            Ok((_, _, watcher)) => Ok(Second::Watching(Box::pin(watcher.changed()))),
            Err(zookeeper_client::Error::NoNode) => Ok(Second::Gone),
            Err(e) => Err(e),
        }
    }

    /// A listing after the contender ahead of `ahead` went: does `ahead` lead now?
    async fn relist(
        &self,
        session: &Session,
        our_name: &str,
        ahead: &str,
    ) -> Result<Relisted, zookeeper_client::Error> {
        let not_before = self.lister.mark();
        let sorted = self.lister.list(session, &self.base_path, not_before, self.sorter()).await?;
        let position = |name: &str| sorted.iter().position(|n| n == name);
        Ok(match (position(ahead), position(our_name)) {
            (Some(0), Some(1)) => Relisted::Leads,
            (Some(at), Some(ours)) if at + 1 == ours => {
                just_ahead_of(&sorted, ahead).map_or(Relisted::Changed, Relisted::Behind)
            }
            _ => Relisted::Changed,
        })
    }
}

/// The contender just ahead of `name` in `sorted`.
fn just_ahead_of(sorted: &[String], name: &str) -> Option<String> {
    let at = sorted.iter().position(|n| n == name)?;
    at.checked_sub(1).map(|before| sorted[before].clone())
}

fn deletion_grants(on_delete: OnDelete, watching: Option<&Watching<'_>>) -> bool {
    match on_delete {
        OnDelete::ListAgain => false,
        OnDelete::Ours => true,
        OnDelete::OursIfReleasedHere => watching.is_some_and(Watching::take),
    }
}
