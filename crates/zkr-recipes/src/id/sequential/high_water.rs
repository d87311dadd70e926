//! The high-water record (`PATH/high-water`): every batch is recorded there before its IDs are
//! handed out, so no ID at or below one handed out before is handed out again.

use zkr_connection::path;
use zookeeper_client::{Acls, CreateMode};

use super::{Inner, HIGH_WATER_NODE};
use crate::id::IdError;

/// What the high-water record said about a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The batch is above every recorded ID and is recorded now: it may be handed out.
    Recorded,
    /// A batch applied after this one was recorded first: draw again.
    Overtaken,
    /// The counter went back: the batch was applied after the record's batch, yet is not above
    /// it. The epoch is left for one above `mark`.
    WentBack { mark: u64 },
}

/// `PATH/high-water`: the largest ID any generator on the path has handed out (or is about
/// to), and the zxid of the batch it came from. 16 bytes: the zxid, then the ID, both
/// big-endian. Every batch is recorded here (compare-and-set on the node's version) before its
/// IDs are handed out, and only when all of them are above the record, so no ID at or below
/// one handed out before is ever handed out, whatever the epoch's counter does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct HighWater {
    pub(super) zxid: i64,
    pub(super) id: u64,
}

impl HighWater {
    pub(super) fn parse(data: &[u8]) -> Option<Self> {
        let data: &[u8; 16] = data.try_into().ok()?;
        let (zxid, id) = data.split_at(8);
        Some(HighWater {
            zxid: i64::from_be_bytes(zxid.try_into().ok()?),
            id: u64::from_be_bytes(id.try_into().ok()?),
        })
    }

    pub(super) fn bytes(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.zxid.to_be_bytes());
        out[8..].copy_from_slice(&self.id.to_be_bytes());
        out
    }
}

impl Inner {
    /// Records `batch` (IDs in the order drawn, with the zxids they were created at) in the
    /// high-water record, if every ID of it is above the record; what was found. Once this
    /// returns [`Verdict::Recorded`], no generator can record (and so hand out) an ID at or
    /// below the batch's largest. `doubtful`: a batch drawn just before was refused.
    pub(super) async fn record(
        &self,
        batch: &[u64],
        zxids: &[Option<i64>],
        doubtful: bool,
    ) -> Result<Verdict, IdError> {
        let (lo, hi) = (batch[0], batch[batch.len() - 1]);
        let known: Vec<i64> = zxids.iter().flatten().copied().collect();
        let (z_min, z_max) = (known.iter().min().copied(), known.iter().max().copied());
        if batch.windows(2).any(|w| w[0] >= w[1]) {
            // The counter went back within the batch (between two of its multi-ops).
            let mark = self.high_water().await?.map_or(hi, |(hw, _)| hw.id.max(hi));
            return Ok(Verdict::WentBack { mark });
        }
        let node = path::join(&self.path, HIGH_WATER_NODE);
        let cached = *self.high_water.lock();
        let verdict = self
            .zk
            .retry(|s| {
                let node = &node;
                async move {
                    let client = s.client();
                    let mut current = cached;
                    let mut wrote = false;
                    loop {
                        let (mark, version) = match current {
                            Some((mark, version)) => (Some(mark), version),
                            None => match client.get_data(node).await {
                                Ok((data, stat)) => match HighWater::parse(&data) {
                                    Some(mark) => (Some(mark), stat.version),
                                    None => return Ok(Err(data.len())),
                                },
                                Err(zookeeper_client::Error::NoNode) => (None, -1),
                                Err(e) => return Err(e),
                            },
                        };
                        let fresh_read = current.is_none();
                        let next = match mark {
                            Some(m) if m.id == hi && (z_max.is_some_and(|z| z == m.zxid) || wrote) => {
                                return Ok(Ok((Verdict::Recorded, Some((m, version)))));
                            }
                            Some(m) if lo <= m.id => {
                                if !fresh_read {
                                    current = None; // judged on a cached record: read it
                                    continue;
                                }
                                let overtaken = match z_min {
                                    Some(z) => m.zxid >= z,
                                    None => !doubtful,
                                };
                                let verdict = if overtaken {
                                    Verdict::Overtaken
                                } else {
                                    Verdict::WentBack { mark: m.id }
                                };
                                return Ok(Ok((verdict, Some((m, version)))));
                            }
                            Some(m) => HighWater { zxid: m.zxid.max(z_max.unwrap_or(m.zxid)), id: hi },
                            None => HighWater { zxid: z_max.unwrap_or(0), id: hi },
                        };
                        wrote = true;
                        let written = if version < 0 {
                            let acls = self.zk.acl_for_path(node);
                            let options = CreateMode::Persistent.with_acls(Acls::new(&acls));
                            client.create(node, &next.bytes(), &options).await.map(|(stat, _)| stat)
                        } else {
                            client.set_data(node, &next.bytes(), Some(version)).await
                        };
                        match written {
                            Ok(stat) => return Ok(Ok((Verdict::Recorded, Some((next, stat.version))))),
                            Err(
                                zookeeper_client::Error::BadVersion | zookeeper_client::Error::NodeExists,
                            ) => {
                                current = None;
                            }
                            Err(zookeeper_client::Error::NoNode) => {
                                current = Some((mark.unwrap_or(next), -1))
                            }
                            Err(e) => return Err(e),
                        }
                    }
                }
            })
            .await?;
        match verdict {
            Ok((verdict, seen)) => {
                *self.high_water.lock() = seen;
                Ok(verdict)
            }
            Err(length) => Err(IdError::CorruptState {
                path: node,
                reason: format!("a high-water record is 16 bytes, not {length}"),
            }),
        }
    }

    /// The high-water record and its version, read from ZooKeeper.
    pub(super) async fn high_water(&self) -> Result<Option<(HighWater, i32)>, IdError> {
        let node = path::join(&self.path, HIGH_WATER_NODE);
        let node = &node;
        let read = crate::errors::read_node(&self.zk, node).await?.map(|(data, stat)| (data, stat.version));
        match read {
            None => Ok(None),
            Some((data, version)) => match HighWater::parse(&data) {
                Some(mark) => Ok(Some((mark, version))),
                None => Err(IdError::CorruptState {
                    path: node.clone(),
                    reason: format!("a high-water record is 16 bytes, not {}", data.len()),
                }),
            },
        }
    }
}
