//! [`ErrorKind`]: the one classification every zkr error answers with `kind()`.

/// What an error means to its caller, the same for every recipe family: each family's error
/// (and [`Error`](crate::Error)) answers `kind()`, so that a caller, or the `zkr` CLI's exit
/// codes, can treat every family alike.
///
/// # Examples
///
/// ```
/// use zkr_connection::{Error, ErrorKind};
///
/// assert_eq!(Error::Closed.kind(), ErrorKind::Closed);
/// assert_eq!(Error::Zk(zkr_connection::zookeeper_client::Error::NoNode).kind(), ErrorKind::Absent);
/// assert_eq!(Error::Zk(zkr_connection::zookeeper_client::Error::ConnectionLoss).kind(), ErrorKind::Unreachable);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Bad input or a call out of place (an invalid path or setting, a closed latch's wait):
    /// nothing was sent.
    Usage,
    /// ZooKeeper could not be reached in time: no session, the deadline passed, the retry
    /// policy gave up on connection loss.
    Unreachable,
    /// ZooKeeper holds something else than the call expected: another version, an existing
    /// node, another session's node.
    Conflict,
    /// The node or entry asked for does not exist.
    Absent,
    /// What was held is gone: a lock, a lease, an item lock, the session.
    Lost,
    /// A write's outcome is unknown: its reply was lost and whether it was applied cannot be
    /// told. Look at ZooKeeper before writing again.
    Indeterminate,
    /// ZooKeeper holds data zkr cannot read (a counter that is not 8 bytes, bad JSON).
    Corrupt,
    /// The handle or the connection manager was closed.
    Closed,
    /// Anything else: a ZooKeeper answer such as `NoAuth`, a limit reached.
    Other,
}

impl ErrorKind {
    /// The kind of a ZooKeeper answer.
    pub fn of_zk(error: &zookeeper_client::Error) -> ErrorKind {
        use zookeeper_client::Error as E;
        match error {
            E::NoNode => ErrorKind::Absent,
            E::NodeExists | E::BadVersion | E::NotEmpty => ErrorKind::Conflict,
            E::BadArguments(_) => ErrorKind::Usage,
            e if crate::is_retryable(e) => ErrorKind::Unreachable,
            e if crate::is_session_error(e) => ErrorKind::Lost,
            _ => ErrorKind::Other,
        }
    }
}
