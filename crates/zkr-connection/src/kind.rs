//! [`ErrorKind`] and [`Classify`]: the one classification every public zkr error answers.

/// What an error means to its caller, the same for every recipe family: each family's error
/// (and [`Error`](crate::Error)) answers [`Classify::kind`], so that a caller, or the `zkr`
/// CLI's exit codes, can treat every family alike.
///
/// # Examples
///
/// ```
/// use zkr_connection::{Classify, Error, ErrorKind};
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
            e if is_retryable(e) => ErrorKind::Unreachable,
            e if is_session_error(e) => ErrorKind::Lost,
            _ => ErrorKind::Other,
        }
    }
}

/// What every public zkr error answers, in `zkr-connection` and `zkr-recipes` alike: what it
/// means to the caller ([`ErrorKind`]) and whether a failed write may have been applied all the
/// same. `zkr_recipes::classify` finds it in any error's chain of sources.
///
/// # Examples
///
/// ```
/// use zkr_connection::{Classify, ErrorKind};
///
/// /// Retry what could not reach ZooKeeper, report the rest: for an error of any family.
/// fn worth_retrying(error: &dyn Classify) -> bool {
///     error.kind() == ErrorKind::Unreachable && !error.is_ambiguous()
/// }
/// assert!(!worth_retrying(&zkr_connection::Error::Closed));
/// ```
pub trait Classify: std::error::Error + Send + Sync + 'static {
    /// What the error means to the caller.
    fn kind(&self) -> ErrorKind;

    /// Might the failed write have been applied all the same (its reply was lost)? Look at
    /// ZooKeeper before writing again.
    fn is_ambiguous(&self) -> bool;
}

/// The errors Curator's retry loop retries on the same session: connection loss, operation
/// timeout, session moved; plus throttling, which ZooKeeper 3.7+ answers under load. `NoNode`,
/// `NodeExists`, `BadVersion`, `NoAuth` and the rest are answers, not faults, and are never
/// retried.
///
/// # Examples
///
/// ```
/// use zkr_connection::zookeeper_client::Error;
/// assert!(zkr_connection::is_retryable(&Error::ConnectionLoss));
/// assert!(!zkr_connection::is_retryable(&Error::NoNode));
/// ```
pub fn is_retryable(error: &zookeeper_client::Error) -> bool {
    use zookeeper_client::Error as E;
    matches!(error, E::ConnectionLoss | E::Timeout | E::SessionMoved | E::Throttled)
        || is_transport_failure(error)
}

/// `zookeeper-client` fails the requests in flight on a broken connection with the connection's
/// own error (`Custom`: an I/O error such as a reset, or "no response from connection in N ms")
/// rather than `ConnectionLoss`. Both mean the same: the request may or may not have been
/// applied, and the session may well be alive.
fn is_transport_failure(error: &zookeeper_client::Error) -> bool {
    matches!(error, zookeeper_client::Error::Custom(_))
}

/// Errors that mean the session is gone: `SessionExpired`, `ClientClosed` (the handle was
/// replaced after an expiry) and `AuthFailed`.
///
/// # Examples
///
/// ```
/// assert!(zkr_connection::is_session_error(&zkr_connection::zookeeper_client::Error::SessionExpired));
/// ```
pub fn is_session_error(error: &zookeeper_client::Error) -> bool {
    use zookeeper_client::Error as E;
    matches!(error, E::SessionExpired | E::ClientClosed | E::AuthFailed)
}
