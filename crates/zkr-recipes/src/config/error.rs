//! Errors of the config recipes.

use std::path::PathBuf;

/// Errors of [`ConfigWatcher`](super::ConfigWatcher), [`ConfigTreeWatcher`](super::ConfigTreeWatcher)
/// and [`ConfigPublisher`](super::ConfigPublisher).
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigError {
    /// The connection layer failed: an invalid path, data over the size limit, a retry policy
    /// that gave up, a deadline, an expired session, a closed manager, or a ZooKeeper answer
    /// such as `NoAuth`.
    #[error(transparent)]
    Connection(zkr_connection::Error),
    /// `set_if_version` (or a delete with a version) found another version: someone else
    /// published in between.
    #[error("{path} is not at version {expected} (someone else published in between)")]
    VersionConflict {
        /// The node.
        path: String,
        /// The version the caller expected.
        expected: i32,
    },
    /// `set_if_version` on a node that does not exist.
    #[error("{path} does not exist")]
    NotFound {
        /// The node.
        path: String,
    },
    /// The value cannot be encoded by the codec.
    #[error("cannot encode the value for {path}")]
    Encode {
        /// The node.
        path: String,
        /// The codec's error.
        #[source]
        source: crate::codec::CodecError,
    },
    /// A stored value does not decode with the codec.
    #[error("the value of {path} does not decode")]
    Decode {
        /// The node.
        path: String,
        /// The codec's error.
        #[source]
        source: crate::codec::CodecError,
    },
    /// ZooKeeper could not be reached at start and there is no last-known-good file to start
    /// from.
    #[error("ZooKeeper is unreachable and there is no last-known-good copy of {path}")]
    Unavailable {
        /// The watched path.
        path: String,
        /// Why ZooKeeper could not be reached.
        source: zkr_connection::Error,
    },
    /// The last-known-good file cannot be read or written.
    #[error("last-known-good file {file}: {reason}")]
    CacheFile {
        /// The file.
        file: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// An argument is out of range (an empty batch, a capacity of 0).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

crate::errors::from_connection!(ConfigError);

impl zkr_connection::Classify for ConfigError {
    /// What the error means to the caller ([`ErrorKind`](zkr_connection::ErrorKind)), as for every family.
    fn kind(&self) -> zkr_connection::ErrorKind {
        match self {
            ConfigError::Connection(e) => e.kind(),
            ConfigError::VersionConflict { .. } => zkr_connection::ErrorKind::Conflict,
            ConfigError::NotFound { .. } => zkr_connection::ErrorKind::Absent,
            ConfigError::Encode { .. } | ConfigError::InvalidArgument(_) => zkr_connection::ErrorKind::Usage,
            ConfigError::Decode { .. } => zkr_connection::ErrorKind::Corrupt,
            ConfigError::Unavailable { .. } => zkr_connection::ErrorKind::Unreachable,
            ConfigError::CacheFile { .. } => zkr_connection::ErrorKind::Other,
        }
    }

    /// Might the failed write have been applied all the same
    /// ([`zkr_connection::Error::is_ambiguous`](zkr_connection::Classify::is_ambiguous))?
    fn is_ambiguous(&self) -> bool {
        matches!(self, ConfigError::Connection(e) if e.is_ambiguous())
    }
}

impl From<zookeeper_client::Error> for ConfigError {
    fn from(error: zookeeper_client::Error) -> Self {
        ConfigError::Connection(zkr_connection::Error::Zk(error))
    }
}
