//! [`SetPartitioner`]: one member of a party that splits a set; [`PartitionSet`]: its share.

use std::sync::Arc;
use std::time::Duration;

use futures::future::select_all;
use futures::FutureExt as _;
use tokio::sync::watch;
use tokio::time::Instant;
use zkr_connection::{path, ZkClient};
use zookeeper_client::CreateMode;

use super::{share, PartitionError};
use crate::cache::wait_confirmed;
use crate::cache::{CacheMode, CacheSnapshot, CuratorCache};
use crate::locks::{InterProcessMutex, InterProcessMutexGuard, KazooLockDriver};
use crate::nodes::PersistentNode;

/// Builds a [`SetPartitioner`]: [`SetPartitioner::builder`].
#[derive(Debug)]
pub struct SetPartitionerBuilder {
    zk: ZkClient,
    path: String,
    items: Vec<String>,
    identifier: Option<String>,
    time_boundary: Duration,
    max_reaction_time: Duration,
}

impl SetPartitionerBuilder {
    /// This member's identifier in the party (kazoo's `identifier`): unique among the members.
    /// Defaults to `<hostname>-<pid>-<8 hex digits>`.
    pub fn identifier(mut self, identifier: impl Into<String>) -> Self {
        self.identifier = Some(identifier.into());
        self
    }

    /// How long the party must stay unchanged before a share is taken (kazoo's
    /// `time_boundary`, there 30 s). Defaults to 5 s.
    pub fn time_boundary(mut self, boundary: Duration) -> Self {
        self.time_boundary = boundary;
        self
    }

    /// How long one try for an item's lock waits before the party is looked at again (kazoo's
    /// `max_reaction_time`). Defaults to 1 s.
    pub fn max_reaction_time(mut self, reaction: Duration) -> Self {
        self.max_reaction_time = reaction.max(Duration::from_millis(1));
        self
    }

    /// Joins the party: creates this member's node and follows the party.
    ///
    /// # Errors
    /// [`PartitionError::InvalidArgument`] for a bad path, an item or identifier that is not
    /// a node name, or an item given twice; [`PartitionError::Connection`] when the party
    /// cannot be read within the connection timeout.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, the member's node is deleted in the background.
    pub async fn start(self) -> Result<SetPartitioner, PartitionError> {
        self.zk.validate_recipe_path(&self.path)?;
        let identifier = self.identifier.unwrap_or_else(default_identifier);
        path::validate_name(&identifier)?;
        let mut items = self.items;
        for item in &items {
            path::validate_name(item)?;
        }
        items.sort();
        if items.windows(2).any(|w| w[0] == w[1]) {
            return Err(PartitionError::InvalidArgument("an item is given twice".into()));
        }
        let party = path::join(&self.path, "party");
        let member = format!("{}-{identifier}", uuid::Uuid::new_v4().simple());
        let node = PersistentNode::builder(&self.zk, &path::join(&party, &member), CreateMode::Ephemeral)
            .data(identifier.clone().into_bytes())
            .start()
            .await?;
        let cache = CuratorCache::builder(&self.zk, &party).mode(CacheMode::Children).start().await?;
        Ok(SetPartitioner {
            zk: self.zk,
            locks: path::join(&self.path, "locks"),
            party,
            items,
            identifier,
            member,
            time_boundary: self.time_boundary,
            max_reaction_time: self.max_reaction_time,
            node,
            cache,
        })
    }
}

fn default_identifier() -> String {
    let host = crate::host::host_name().unwrap_or_else(|| "host".into());
    let host: String = host.chars().filter(|c| !matches!(c, '/' | '\0')).collect();
    let tag = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &tag[..8])
}

/// kazoo's `SetPartitioner`: this process's member of a party that splits a set of items. Call
/// [`acquire`](Self::acquire) for this member's share, work on it until
/// [`PartitionSet::changed`] fires, [`release`](PartitionSet::release) it, and acquire again.
/// [`finish`](Self::finish) leaves the party.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::partition::PartitionError> {
/// use std::time::Duration;
/// use zkr_recipes::partition::SetPartitioner;
///
/// let shards: Vec<String> = (0..16).map(|i| format!("shard-{i:02}")).collect();
/// let partitioner = SetPartitioner::builder(&zk, "/indexer", shards)
///     .identifier("indexer-7")
///     .time_boundary(Duration::from_secs(10))
///     .start()
///     .await?;
/// let set = partitioner.acquire().await?;
/// for shard in set.items() {
///     println!("indexing {shard}");
/// }
/// set.release().await;
/// partitioner.finish().await;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct SetPartitioner {
    zk: ZkClient,
    party: String,
    locks: String,
    items: Vec<String>,
    identifier: String,
    member: String,
    time_boundary: Duration,
    max_reaction_time: Duration,
    node: PersistentNode,
    cache: CuratorCache,
}

impl SetPartitioner {
    /// A member of the party at `path` that splits `items` (node names, each once).
    pub fn builder<I>(zk: &ZkClient, path: &str, items: I) -> SetPartitionerBuilder
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        SetPartitionerBuilder {
            zk: zk.clone(),
            path: path.to_owned(),
            items: items.into_iter().map(Into::into).collect(),
            identifier: None,
            time_boundary: Duration::from_secs(5),
            max_reaction_time: Duration::from_secs(1),
        }
    }

    /// This member's identifier.
    pub fn identifier(&self) -> &str {
        &self.identifier
    }

    /// The identifiers of the party's members as last seen, sorted.
    pub fn members(&self) -> Vec<String> {
        identifiers(&party(&self.cache.snapshot(), &self.party))
    }

    /// Waits until the party has been unchanged for the time boundary, then takes the lock
    /// of every item of this member's share (kazoo's `ALLOCATING` to `ACQUIRED`). When the
    /// party changes while the locks are taken, it lets them go and starts over.
    ///
    /// # Errors
    /// [`PartitionError::Lock`] when an item's lock fails; [`PartitionError::Connection`]
    /// when the manager was closed.
    ///
    /// # Cancel safety
    /// Cancel safe: locks taken so far are released in the background.
    pub async fn acquire(&self) -> Result<PartitionSet, PartitionError> {
        loop {
            let party = self.settle().await?;
            let items = share(&self.identifier, &identifiers(&party), &self.items);
            if let Some(guards) = self.lock_all(&items, &party).await? {
                let snapshots = self.cache.snapshots();
                return Ok(PartitionSet { items, guards, party, party_path: self.party.clone(), snapshots });
            }
        }
    }

    /// Leaves the party: deletes this member's node (others then take its share).
    ///
    /// # Cancel safety
    /// Cancel safe: the node is deleted in the background if dropped.
    pub async fn finish(self) {
        self.node.close().await;
    }

    /// The party once it has been still for the time boundary, with this member in it.
    async fn settle(&self) -> Result<Vec<String>, PartitionError> {
        let mut snapshots = self.cache.snapshots();
        'party: loop {
            let found = wait_confirmed(&mut snapshots, None, |s| {
                let members = party(s, &self.party);
                members.contains(&self.member).then_some(members)
            });
            let members = found.await.ok_or(zkr_connection::Error::Closed)?;
            let quiet = Instant::now() + self.time_boundary;
            loop {
                match tokio::time::timeout_at(quiet, snapshots.changed()).await {
                    Err(_) => return Ok(members),
                    Ok(Err(_)) => return Err(zkr_connection::Error::Closed.into()),
                    Ok(Ok(())) if party(&snapshots.borrow_and_update(), &self.party) != members => {
                        continue 'party
                    }
                    Ok(Ok(())) => {}
                }
            }
        }
    }

    /// Takes every item's lock, trying each for the reaction time between looks at the party;
    /// `None` (and nothing held) when the party changed from `party` meanwhile.
    async fn lock_all(
        &self,
        items: &[String],
        party_then: &[String],
    ) -> Result<Option<Guards>, PartitionError> {
        let mut guards = Vec::with_capacity(items.len());
        for item in items {
            let mutex =
                InterProcessMutex::with_driver(&self.zk, &path::join(&self.locks, item), KazooLockDriver)?;
            loop {
                if party(&self.cache.snapshot(), &self.party) != party_then {
                    release_all(guards).await;
                    return Ok(None);
                }
                if let Some(guard) = mutex.acquire_timeout(self.max_reaction_time).await? {
                    guards.push(guard);
                    break;
                }
            }
        }
        if party(&self.cache.snapshot(), &self.party) != party_then {
            release_all(guards).await;
            return Ok(None);
        }
        Ok(Some(guards))
    }
}

type Guards = Vec<InterProcessMutexGuard<KazooLockDriver>>;

async fn release_all(guards: Guards) {
    for guard in guards {
        let _ = guard.release().await;
    }
}

/// The party's member node names in `snapshot`, sorted.
fn party(snapshot: &CacheSnapshot, party_path: &str) -> Vec<String> {
    snapshot.children(party_path).map(|(name, _)| name.to_owned()).collect()
}

/// The identifiers in member node names (`<uuid hex>-<identifier>`), as kazoo reads them.
fn identifiers(party: &[String]) -> Vec<String> {
    party.iter().map(|name| name.split_once('-').map_or(name.as_str(), |(_, id)| id).to_owned()).collect()
}

/// A member's share of the set, with the lock of every item in it (kazoo's `ACQUIRED`).
/// Dropped, its locks are released in the background.
#[derive(Debug)]
pub struct PartitionSet {
    items: Vec<String>,
    guards: Guards,
    party: Vec<String>,
    party_path: String,
    snapshots: watch::Receiver<Arc<CacheSnapshot>>,
}

impl PartitionSet {
    /// The items of this share, sorted.
    pub fn items(&self) -> &[String] {
        &self.items
    }

    /// Completes when this share should be let go (kazoo's `RELEASE`): the party changed
    /// since it was taken, or an item's lock was lost. Then [`release`](Self::release) it.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn changed(&self) {
        let mut snapshots = self.snapshots.clone();
        let party_changed = wait_confirmed(&mut snapshots, None, |s| {
            (party(s, &self.party_path) != self.party).then_some(())
        });
        if self.guards.is_empty() {
            party_changed.await;
            return;
        }
        let lost = select_all(self.guards.iter().map(|g| g.lost().boxed()));
        tokio::select! {
            _ = party_changed => {}
            _ = lost => {}
        }
    }

    /// Lets the share go: releases every item's lock.
    ///
    /// # Cancel safety
    /// Cancel safe: locks not yet released are released in the background.
    pub async fn release(self) {
        release_all(self.guards).await;
    }
}
