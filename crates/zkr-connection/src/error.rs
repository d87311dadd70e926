//! The error type of zkr-connection.

use std::fmt;
use std::time::Duration;

use crate::kind::{is_retryable, is_session_error, Classify, ErrorKind};

/// What is wrong with a path.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// The path is empty.
    #[error("the path is empty")]
    Empty,
    /// The path does not start with `/`.
    #[error("the path must start with '/'")]
    NotAbsolute,
    /// The path ends with `/`.
    #[error("the path must not end with '/'")]
    TrailingSlash,
    /// Two slashes in a row.
    #[error("empty segment at byte {0} ('//')")]
    EmptySegment(usize),
    /// A `.` or `..` segment.
    #[error("relative segment {0:?} is not allowed")]
    RelativeSegment(&'static str),
    /// A character ZooKeeper rejects.
    #[error("character {ch:?} at byte {index} is not allowed")]
    InvalidCharacter {
        /// The character.
        ch: char,
        /// Its byte offset.
        index: usize,
    },
    /// The root `/` where a node below it is needed.
    #[error("the root node cannot be used here")]
    Root,
    /// A node name (one segment) contains `/` or is otherwise unusable.
    #[error("invalid node name")]
    InvalidName,
    /// A path in ZooKeeper's own `/zookeeper` tree (quotas, the ensemble config), which no
    /// recipe may use.
    #[error("the /zookeeper tree is reserved for ZooKeeper itself")]
    Reserved,
}

/// Result alias for zkr-connection.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of the connection manager, its retry loop and its helpers.
///
/// Whether an error is worth retrying is answered by [`Error::is_retryable`]; the retry loop has
/// already retried what its policy allowed by the time it returns one.
#[non_exhaustive]
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A path is not a valid ZooKeeper path.
    #[error("invalid path {path:?}")]
    InvalidPath {
        /// The offending path.
        path: String,
        /// What is wrong with it.
        #[source]
        source: PathError,
    },
    /// Node data is larger than ZooKeeper accepts.
    #[error("data for {path} is {len} bytes; ZooKeeper accepts at most {max}")]
    DataTooLarge {
        /// The node path.
        path: String,
        /// The data length.
        len: usize,
        /// The limit ([`MAX_DATA_LEN`](crate::MAX_DATA_LEN)).
        max: usize,
    },
    /// The connect string cannot be used.
    #[error("invalid connect string {connect_string:?}: {reason}")]
    InvalidConnectString {
        /// The connect string.
        connect_string: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A builder setting is out of range.
    #[error("invalid setting `{setting}`: {reason}")]
    InvalidSetting {
        /// The setting's name.
        setting: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// No session could be had in time: within the connection timeout, or within the
    /// deadline the caller gave (whichever was sooner; `timeout` names it).
    #[error("could not connect to {connect_string} within {:?}{}", to_millis(*timeout), match (cause, last_error) {
        (Some(cause), _) => format!(": {cause}"),
        (None, Some(e)) => format!(" (last error: {e})"),
        (None, None) => String::new(),
    })]
    ConnectTimeout {
        /// The connect string.
        connect_string: String,
        /// How long we waited: the connection timeout, or the caller's deadline.
        timeout: Duration,
        /// The last error from a connection attempt, if any.
        last_error: Option<zookeeper_client::Error>,
        /// Why the hosts could not be reached, host by host, when a connect of our own could
        /// tell (`127.0.0.1:2181: connection refused`, unreachable, timed out, a name that
        /// does not resolve).
        cause: Option<String>,
    },
    /// No ZooKeeper server answers at any host of the connect string: each refused the
    /// connection (nothing listens on its port) or answered as something other than ZooKeeper,
    /// as connects of our own found. Only
    /// [`ZkClient::wait_connected_or_refused`](crate::ZkClient::wait_connected_or_refused)
    /// gives up on this at once; the manager itself goes on trying.
    #[error("no ZooKeeper server answers: {cause}")]
    NoServer {
        /// The connect string.
        connect_string: String,
        /// Each host's reason (`127.0.0.1:2181: connection refused (nothing listens there)`).
        cause: String,
    },
    /// No TLS session could be established, and a handshake of our own says why: the server's
    /// certificate is not signed by a trusted CA, does not name the host, or the peer does not
    /// speak TLS. There is never a fallback to plain text.
    #[error("TLS connection to {connect_string} failed: {reason}")]
    Tls {
        /// The connect string.
        connect_string: String,
        /// The failed handshake: the host and the TLS library's reason.
        reason: String,
    },
    /// No session could be established with SASL GSSAPI (Kerberos), and a login step of our own
    /// says why: no credentials (no `kinit`, or `KRB5CCNAME` names an empty cache), the KDC
    /// cannot be reached, or it knows no principal for the servers.
    #[error("Kerberos login to the ZooKeeper servers at {connect_string} failed: {reason}")]
    Sasl {
        /// The connect string.
        connect_string: String,
        /// The failed step and the GSSAPI library's reason.
        reason: String,
    },
    /// The session that a sequence of operations depended on expired (or was replaced); the
    /// retry loop does not carry such a sequence over to the new session unless asked to.
    #[error("the ZooKeeper session {session:#x} expired")]
    SessionExpired {
        /// The id of the session that ended.
        session: i64,
    },
    /// The retry policy gave up.
    #[error("gave up after {attempts} attempts in {elapsed:?}")]
    RetriesExhausted {
        /// How many attempts were made.
        attempts: u32,
        /// Time spent, including sleeps.
        elapsed: Duration,
        /// The error of the last attempt.
        #[source]
        last: zookeeper_client::Error,
    },
    /// The operation's deadline passed.
    #[error("deadline of {deadline:?} exceeded{}", last.as_ref().map(|e| format!(" (last error: {e})")).unwrap_or_default())]
    DeadlineExceeded {
        /// The deadline, measured from the start of the operation.
        deadline: Duration,
        /// The last error, if an attempt failed before the deadline.
        last: Option<zookeeper_client::Error>,
    },
    /// The connection manager was closed.
    #[error("the ZooKeeper connection manager is closed")]
    Closed,
    /// The servers refused the client's credentials when it connected (`AuthFailed`: a wrong
    /// SASL password, a user the server's JAAS configuration does not list, no Kerberos ticket
    /// the server accepts), so [`ZkClientBuilder::connect`](crate::ZkClientBuilder::connect)
    /// gives up at once instead of at its timeout.
    #[error(
        "the ZooKeeper servers at {connect_string} refused this client's credentials (authentication failed)"
    )]
    AuthFailed {
        /// Where it connected.
        connect_string: String,
    },
    /// An invalid argument to a retry policy or helper.
    #[error("invalid argument: {0}")]
    InvalidArgument(&'static str),
    /// The server refused a TTL create: TTL nodes are off unless it runs with
    /// `-Dzookeeper.extendedTypesEnabled=true`.
    #[error("cannot create {path} with a TTL: the server has TTL nodes disabled (start it with -Dzookeeper.extendedTypesEnabled=true)")]
    TtlDisabled {
        /// The node that was to be created.
        path: String,
    },
    /// The server refused one operation of a [`Transaction`](crate::Transaction), so none was
    /// applied.
    #[error("operation {index} of the transaction ({op} {path}) failed")]
    TransactionFailed {
        /// The refused operation's position (from 0).
        index: usize,
        /// What it was.
        op: OpKind,
        /// Its path.
        path: String,
        /// Was the commit sent again after a connection loss? Then an earlier attempt may have
        /// been applied, and this failure may be its own effect ([`Error::is_ambiguous`](crate::Classify::is_ambiguous)).
        retried: bool,
        /// ZooKeeper's answer (`NoNode`, `NodeExists`, `BadVersion`, `NotEmpty`, ...).
        #[source]
        source: zookeeper_client::Error,
    },
    /// A node read with compression on holds data that is not gzip data as Curator's
    /// `GzipCompressionProvider` writes it (written uncompressed, or by another format).
    #[error("the data at {path} is not gzip-compressed (compression is on)")]
    Decompress {
        /// The node read.
        path: String,
        /// What the gzip decoder found.
        #[source]
        source: std::sync::Arc<std::io::Error>,
    },
    /// A node's gzip data inflates to more than the cap on decompressed data
    /// ([`ZkClientBuilder::max_decompressed_len`](crate::ZkClientBuilder::max_decompressed_len)):
    /// refused once `max` bytes were out, without inflating the rest (a gzip bomb, or a cap
    /// set lower than the values stored).
    #[error("the data at {path} inflates to more than {max} bytes (the cap on decompressed data)")]
    DecompressedTooLarge {
        /// The node read.
        path: String,
        /// The cap, in bytes.
        max: usize,
    },
    /// ZooKeeper answered with an error that is not retried (or retrying is not allowed).
    #[error(transparent)]
    Zk(#[from] zookeeper_client::Error),
}

impl Error {
    /// The ZooKeeper error inside, if this is one (directly or as the last retried error).
    pub fn zk(&self) -> Option<&zookeeper_client::Error> {
        match self {
            Error::Zk(e) => Some(e),
            Error::RetriesExhausted { last, .. } => Some(last),
            Error::DeadlineExceeded { last, .. } => last.as_ref(),
            Error::TransactionFailed { source, .. } => Some(source),
            _ => None,
        }
    }

    /// Is this ZooKeeper's `NoNode`?
    pub fn is_no_node(&self) -> bool {
        matches!(self.zk(), Some(zookeeper_client::Error::NoNode))
    }

    /// Is this ZooKeeper's `NodeExists`?
    pub fn is_node_exists(&self) -> bool {
        matches!(self.zk(), Some(zookeeper_client::Error::NodeExists))
    }

    /// Is this ZooKeeper's `BadVersion`?
    pub fn is_bad_version(&self) -> bool {
        matches!(self.zk(), Some(zookeeper_client::Error::BadVersion))
    }

    /// Did the session end (expired, replaced, or the manager closed)?
    pub fn is_session_fatal(&self) -> bool {
        match self {
            Error::SessionExpired { .. } | Error::Closed => true,
            other => other.zk().is_some_and(is_session_error),
        }
    }

    /// Could the same operation succeed if tried again on the same session (connection loss,
    /// operation timeout, session moved, throttling)?
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Zk(e) => is_retryable(e),
            Error::ConnectTimeout { .. } | Error::NoServer { .. } | Error::DeadlineExceeded { .. } => true,
            _ => false,
        }
    }
}

impl Classify for PathError {
    /// Always [`ErrorKind::Usage`]: nothing was sent.
    fn kind(&self) -> ErrorKind {
        ErrorKind::Usage
    }

    /// Never: nothing was sent.
    fn is_ambiguous(&self) -> bool {
        false
    }
}

impl Classify for Error {
    /// What the error means to the caller ([`ErrorKind`](crate::ErrorKind)): bad input
    /// (usage), no connection in time (unreachable), ZooKeeper's answers by what they say,
    /// the session's end (lost), the manager closed.
    fn kind(&self) -> ErrorKind {
        use ErrorKind as K;
        match self {
            Error::InvalidPath { .. }
            | Error::DataTooLarge { .. }
            | Error::InvalidConnectString { .. }
            | Error::InvalidSetting { .. }
            | Error::InvalidArgument(_)
            | Error::AuthFailed { .. }
            | Error::Sasl { .. } => K::Usage,
            Error::ConnectTimeout { .. }
            | Error::NoServer { .. }
            | Error::Tls { .. }
            | Error::DeadlineExceeded { .. } => K::Unreachable,
            Error::RetriesExhausted { .. } => K::Unreachable,
            Error::SessionExpired { .. } => K::Lost,
            Error::Closed => K::Closed,
            Error::TtlDisabled { .. } | Error::Decompress { .. } | Error::DecompressedTooLarge { .. } => {
                K::Other
            }
            Error::TransactionFailed { retried: true, .. } => K::Indeterminate,
            Error::TransactionFailed { source, .. } | Error::Zk(source) => K::of_zk(source),
        }
    }

    /// Might the failed operation have been applied all the same? True when its reply was
    /// lost (connection loss, an operation timeout, the session ending while it was in
    /// flight), and for a [`Transaction`](crate::Transaction) that failed on a retry after
    /// such a loss: look at ZooKeeper to learn the outcome. [`Error::SessionExpired`] is
    /// ambiguous too: the retry loop returns it only after an attempt that was in flight, or
    /// whose reply was lost, when the session ended.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_connection::{Classify, Error};
    /// let lost = Error::RetriesExhausted {
    ///     attempts: 1,
    ///     elapsed: std::time::Duration::ZERO,
    ///     last: zkr_connection::zookeeper_client::Error::ConnectionLoss,
    /// };
    /// assert!(lost.is_ambiguous(), "a lost reply may have been applied");
    /// assert!(Error::SessionExpired { session: 7 }.is_ambiguous(), "ended in flight");
    /// assert!(!Error::Zk(zkr_connection::zookeeper_client::Error::BadVersion).is_ambiguous(), "an answer");
    /// ```
    fn is_ambiguous(&self) -> bool {
        match self {
            Error::TransactionFailed { retried, .. } => *retried,
            Error::SessionExpired { .. } => true,
            other => other.zk().is_some_and(|z| is_retryable(z) || is_session_error(z)),
        }
    }
}

/// A duration rounded to whole milliseconds, for messages: a deadline computed as "what is
/// left of 2 s" prints as `2s`, not `1.999969826s`.
fn to_millis(duration: Duration) -> Duration {
    Duration::from_millis((duration.as_secs_f64() * 1000.0).round() as u64)
}

/// What one operation of a [`Transaction`](crate::Transaction) does, for errors and logs.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    /// A create.
    Create,
    /// A set of a node's data.
    SetData,
    /// A delete.
    Delete,
    /// A check of a node's version (or that it exists).
    Check,
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OpKind::Create => "create",
            OpKind::SetData => "set_data",
            OpKind::Delete => "delete",
            OpKind::Check => "check",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_not_retryable_and_faults_are() {
        use zookeeper_client::Error as E;
        for e in [E::ConnectionLoss, E::Timeout, E::SessionMoved, E::Throttled] {
            assert!(is_retryable(&e), "{e}");
        }
        for e in [E::NoNode, E::NodeExists, E::BadVersion, E::NoAuth, E::NotEmpty, E::SessionExpired] {
            assert!(!is_retryable(&e), "{e}");
        }
    }

    /// Every cause is printed once: a message never repeats its source, so a report that walks
    /// the chain (`anyhow`'s `{:#}`) says each thing once.
    #[test]
    fn no_error_repeats_its_source() {
        use std::error::Error as _;
        let errors = [
            Error::InvalidPath { path: "x".into(), source: crate::path::PathError::NotAbsolute },
            Error::RetriesExhausted {
                attempts: 3,
                elapsed: Duration::from_millis(5),
                last: zookeeper_client::Error::ConnectionLoss,
            },
        ];
        for error in errors {
            let source = error.source().expect("a source").to_string();
            assert!(!error.to_string().contains(&source), "{error} repeats {source}");
        }
    }
}
