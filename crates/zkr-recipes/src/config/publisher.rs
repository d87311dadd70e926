//! Publishing config values: compare-and-set, create-if-absent, delete, atomic batches.

use std::sync::Arc;

use dashmap::DashMap;
use zkr_connection::{path, ZkClient};
use zookeeper_client::{CreateMode, MultiWriteResult, Stat};

use super::{Codec, ConfigError, Versioned};

/// How often a batch is tried again when another writer races it.
const BATCH_ATTEMPTS: usize = 10;

/// How many paths' versions a publisher remembers (then it forgets them all and reads again).
const REMEMBERED_VERSIONS: usize = 1024;

/// Writes config values, encoded with a codec, with ZooKeeper's versions as revision numbers.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::config::ConfigError> {
/// use zkr_recipes::config::{ConfigPublisher, Json};
///
/// let publisher = ConfigPublisher::new(&zk, Json);
/// let stat = publisher.set("/config/price", &42u32).await?;
/// // Only if nobody published in between:
/// publisher.set_if_version("/config/price", &43u32, stat.version).await?;
/// # Ok(()) }
/// ```
pub struct ConfigPublisher<T> {
    zk: ZkClient,
    codec: Arc<dyn Codec<T>>,
    /// The version each path had after this publisher's (or a clone's) last write to it: the
    /// next [`set`](Self::set) writes at it without reading first.
    versions: Arc<DashMap<String, i32>>,
}

impl<T> Clone for ConfigPublisher<T> {
    fn clone(&self) -> Self {
        ConfigPublisher { zk: self.zk.clone(), codec: self.codec.clone(), versions: self.versions.clone() }
    }
}

impl<T> std::fmt::Debug for ConfigPublisher<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigPublisher").field("codec", &self.codec).finish()
    }
}

impl<T: Send + Sync + 'static> ConfigPublisher<T> {
    /// A publisher encoding with `codec`.
    pub fn new(zk: &ZkClient, codec: impl Codec<T>) -> Self {
        ConfigPublisher { zk: zk.clone(), codec: Arc::new(codec), versions: Arc::default() }
    }

    fn encode(&self, path: &str, value: &T) -> Result<Vec<u8>, ConfigError> {
        crate::errors::check_node_path(&self.zk, path)?;
        let data = self
            .codec
            .encode(value)
            .map_err(|source| ConfigError::Encode { path: path.to_owned(), source })?;
        path::validate_data(path, &data)?;
        Ok(data)
    }

    /// The current value of `path` with its version; `None` if there is no such node.
    ///
    /// # Errors
    /// [`ConfigError::Connection`]; [`ConfigError::Decode`] when the data does not decode.
    ///
    /// # Cancel safety
    /// Cancel safe: a read.
    pub async fn get(&self, path: &str) -> Result<Option<Versioned<T>>, ConfigError> {
        crate::errors::check_node_path(&self.zk, path)?;
        let found = crate::errors::read_node(&self.zk, path).await?;
        let Some((data, stat)) = found else { return Ok(None) };
        let value = self
            .codec
            .decode(&data)
            .map_err(|source| ConfigError::Decode { path: path.to_owned(), source })?;
        Ok(Some(Versioned::new(value, data, &stat)))
    }

    /// Writes `value` to `path` whatever its version, creating the node (and its parents) if
    /// needed. Returns the new `Stat`.
    ///
    /// Every request it sends is conditional on a version ([`ZkClient::overwrite`]): one whose
    /// reply was lost can never be applied after a later `set`, which a plain `setData` can
    /// (the node would go back to an older value; ZooKeeper does that when a server cut off
    /// from the quorum rejoins with the request). The publisher remembers the version of its
    /// last write to each path, so a sole writer pays one request per `set`; after another
    /// writer's, one read more.
    ///
    /// # Errors
    /// [`ConfigError::InvalidArgument`] for an invalid path or data over the limit;
    /// [`ConfigError::Connection`] for ZooKeeper;
    /// [`ConfigError::Encode`].
    ///
    /// # Cancel safety
    /// Cancel safe: the value is written or not; writing it again is harmless.
    pub async fn set(&self, path: &str, value: &T) -> Result<Stat, ConfigError> {
        let data = self.encode(path, value)?;
        let mut hint = self.versions.get(path).map(|version| *version);
        let stat = loop {
            match self.zk.overwrite(path, &data, hint).await {
                Ok(stat) => break stat,
                Err(e) if e.is_no_node() => match self.zk.create(path, &data, CreateMode::Persistent).await {
                    Ok((stat, _)) => break stat,
                    // Created meanwhile (by someone else, or by us before a lost reply): set it.
                    Err(e) if e.is_node_exists() => hint = None,
                    Err(e) => return Err(e.into()),
                },
                Err(e) => return Err(e.into()),
            }
        };
        if self.versions.len() >= REMEMBERED_VERSIONS {
            self.versions.clear();
        }
        self.versions.insert(path.to_owned(), stat.version);
        Ok(stat)
    }

    /// Writes `value` only if the node is still at `version` (compare-and-set).
    ///
    /// A retried write after a lost reply can find its own new version and report a conflict:
    /// read the node to tell.
    ///
    /// # Errors
    /// [`ConfigError::VersionConflict`], [`ConfigError::NotFound`], or as [`set`](Self::set).
    ///
    /// # Cancel safety
    /// Cancel safe: the value is written or not.
    pub async fn set_if_version(&self, path: &str, value: &T, version: i32) -> Result<Stat, ConfigError> {
        let data = &self.encode(path, value)?;
        match self.zk.retry(|s| async move { s.client().set_data(path, data, Some(version)).await }).await {
            Ok(stat) => Ok(stat),
            Err(e) if e.is_bad_version() => {
                Err(ConfigError::VersionConflict { path: path.to_owned(), expected: version })
            }
            Err(e) if e.is_no_node() => Err(ConfigError::NotFound { path: path.to_owned() }),
            Err(e) => Err(e.into()),
        }
    }

    /// Creates `path` with `value` unless it exists; `true` if this call created it.
    ///
    /// # Errors
    /// As [`set`](Self::set).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn create_if_absent(&self, path: &str, value: &T) -> Result<bool, ConfigError> {
        let data = self.encode(path, value)?;
        Ok(self.zk.create_if_absent(path, &data, CreateMode::Persistent).await?)
    }

    /// Deletes `path` (only at `version`, if given); `true` if this call deleted it.
    ///
    /// # Errors
    /// [`ConfigError::VersionConflict`]; [`ConfigError::Connection`] (`NotEmpty` for a node with
    /// children).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn delete(&self, path: &str, version: Option<i32>) -> Result<bool, ConfigError> {
        crate::errors::check_node_path(&self.zk, path)?;
        match self.zk.retry(|s| async move { s.client().delete(path, version).await }).await {
            Ok(()) => Ok(true),
            Err(e) if e.is_no_node() => Ok(false),
            Err(e) if e.is_bad_version() => {
                Err(ConfigError::VersionConflict { path: path.to_owned(), expected: version.unwrap_or(-1) })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Writes every `(path, value)` atomically in one multi-op: a watcher of their common root
    /// sees all of them or none. Nodes that do not exist are created (their parents first, as
    /// containers). Returns the new `Stat`s in order (for created nodes, as read right after:
    /// ZooKeeper's multi-op does not return them).
    ///
    /// # Errors
    /// [`ConfigError::InvalidArgument`] for an empty batch or a path given twice; as
    /// [`set`](Self::set) for each entry; [`ConfigError::Connection`] when other writers kept
    /// racing it for 10 attempts.
    ///
    /// # Cancel safety
    /// Cancel safe: the multi-op is applied entirely or not at all (parents may have been
    /// created).
    pub async fn set_all(&self, values: &[(&str, &T)]) -> Result<Vec<Stat>, ConfigError> {
        if values.is_empty() {
            return Err(ConfigError::InvalidArgument("an empty batch".into()));
        }
        let mut paths: Vec<&str> = values.iter().map(|(p, _)| *p).collect();
        paths.sort_unstable();
        if paths.windows(2).any(|w| w[0] == w[1]) {
            return Err(ConfigError::InvalidArgument("a path is given twice in one batch".into()));
        }
        let encoded: Vec<(&str, Vec<u8>)> =
            values.iter().map(|(p, v)| self.encode(p, v).map(|d| (*p, d))).collect::<Result<_, _>>()?;
        for (p, _) in &encoded {
            if let Some(parent) = path::parent(p).filter(|parent| *parent != "/") {
                self.zk.create_parents(&path::join(parent, "x")).await?;
            }
        }
        let mut last = None;
        for _ in 0..BATCH_ATTEMPTS {
            match self.try_set_all(&encoded).await {
                Err(e) if is_race(&e) => last = Some(e),
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| zkr_connection::Error::Zk(zookeeper_client::Error::BadVersion).into()))
    }

    /// One attempt of [`set_all`](Self::set_all): reads the versions, then sets (or creates)
    /// every node in one transaction at those versions.
    async fn try_set_all(&self, encoded: &[(&str, Vec<u8>)]) -> Result<Vec<Stat>, ConfigError> {
        let versions = self
            .zk
            .retry(|s| async move {
                let client = s.client();
                let stats: Vec<_> = encoded.iter().map(|(p, _)| client.check_stat(p)).collect();
                let mut versions = Vec::with_capacity(stats.len());
                for stat in stats {
                    versions.push(stat.await?.map(|st| st.version));
                }
                Ok(versions)
            })
            .await?;
        let mut txn = self.zk.transaction();
        for ((p, data), version) in encoded.iter().zip(&versions) {
            txn = match version {
                Some(v) => txn.set_data(p, data, Some(*v)),
                None => txn.create(p, data, CreateMode::Persistent),
            };
        }
        let mut stats: Vec<Stat> = txn
            .commit()
            .await?
            .into_iter()
            .filter_map(|r| match r {
                MultiWriteResult::Create { stat, .. } | MultiWriteResult::SetData { stat } => Some(stat),
                _ => None,
            })
            .collect();
        // A multi-op's create answers without a Stat: read those.
        for ((p, _), stat) in encoded.iter().zip(stats.iter_mut()) {
            if stat.mzxid < 0 {
                if let Some(read) = self.zk.retry(|s| async move { s.client().check_stat(p).await }).await? {
                    *stat = read;
                }
            }
        }
        Ok(stats)
    }
}

/// Did a concurrent writer change a node between our read of the versions and our commit?
fn is_race(error: &ConfigError) -> bool {
    matches!(
        error,
        ConfigError::Connection(zkr_connection::Error::TransactionFailed {
            source: zookeeper_client::Error::BadVersion
                | zookeeper_client::Error::NodeExists
                | zookeeper_client::Error::NoNode,
            ..
        })
    )
}
