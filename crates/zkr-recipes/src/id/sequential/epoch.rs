//! The epochs (`PATH/epoch-NNNNNNNNNN`): the sequential node counters IDs are drawn from, one
//! at a time, a new one when the current one is full or went back.

use zkr_connection::path;
use zookeeper_client::CreateMode;

use super::{decompose, foreign_layout, Inner};
use crate::id::IdError;
use crate::layouts::EPOCH_PREFIX;

/// The epoch node's name: `epoch-` and ten digits, so names sort like numbers.
pub(super) fn epoch_name(epoch: u32) -> String {
    format!("{EPOCH_PREFIX}{epoch:010}")
}

pub(super) fn parse_epoch(name: &str) -> Option<u32> {
    name.strip_prefix(EPOCH_PREFIX).filter(|d| d.len() == 10).and_then(|d| d.parse().ok())
}

impl Inner {
    /// Leaves `epoch`, whose counter handed out `batch` at or below the high-water `mark` (a
    /// counter that went back, or an epoch node deleted and created again), for an epoch whose
    /// every ID is above the mark.
    pub(super) async fn leave_epoch(&self, epoch: u32, batch: &[u64], mark: u64) -> Result<(), IdError> {
        let (mark_epoch, mark_sequence) = decompose(mark);
        let (drawn_epoch, drawn_sequence) = decompose(batch[0]);
        tracing::warn!(
            path = %self.path,
            epoch,
            drawn_sequence,
            drawn_epoch,
            mark_epoch,
            mark_sequence,
            "the epoch's sequence counter went back below the high-water record; moving to a new epoch"
        );
        let past = epoch.max(mark_epoch);
        self.next_epoch(past).await
    }

    /// The epoch to draw from: cached, or the newest epoch node (created if there is none).
    pub(super) async fn current_epoch(&self) -> Result<u32, IdError> {
        if let Some(epoch) = *self.epoch.lock() {
            return Ok(epoch);
        }
        let newest = self.newest_epoch().await?;
        let epoch = match newest {
            Some(e) => e,
            None => {
                self.create_epoch(0).await?;
                0
            }
        };
        self.set_epoch(epoch);
        Ok(epoch)
    }

    /// Moves on from a full epoch: to the newest epoch if someone already started a later one,
    /// else to `full + 1`, which every generator that saw `full` fill up creates under the same
    /// name, so they all agree on it.
    pub(super) async fn next_epoch(&self, full: u32) -> Result<(), IdError> {
        let next = full.checked_add(1).ok_or_else(|| IdError::Exhausted { path: self.path.clone() })?;
        let newest = self.newest_epoch().await?.unwrap_or(0);
        let epoch = if newest > full {
            newest
        } else {
            self.create_epoch(next).await?;
            next
        };
        tracing::info!(path = %self.path, epoch, "sequential ID generator moved to a new epoch");
        self.set_epoch(epoch);
        Ok(())
    }

    pub(super) fn set_epoch(&self, epoch: u32) {
        let mut current = self.epoch.lock();
        *current = Some(current.map_or(epoch, |c| c.max(epoch)));
    }

    pub(super) async fn newest_epoch(&self) -> Result<Option<u32>, IdError> {
        let path = &self.path;
        let listed = self
            .zk
            .retry(|s| async move { crate::errors::present(s.client().get_children(path).await) })
            .await?;
        let Some((children, stat)) = listed else { return Ok(None) };
        let newest = children.iter().filter_map(|c| parse_epoch(c)).max();
        if newest.is_none() {
            if let Some(reason) = foreign_layout(&stat, &children) {
                return Err(IdError::CorruptState { path: self.path.clone(), reason: reason.into() });
            }
        }
        Ok(newest)
    }

    pub(super) async fn create_epoch(&self, epoch: u32) -> Result<(), IdError> {
        // Persistent, never a container: a recreated epoch node would restart the counter.
        let node = path::join(&self.path, &epoch_name(epoch));
        self.zk.create_if_absent(&node, &[], CreateMode::Persistent).await?;
        Ok(())
    }
}
