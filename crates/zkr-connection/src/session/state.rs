//! Curator's connection states and error policies.

use std::fmt;

/// The connection state as recipes see it, exactly Curator's `ConnectionState`.
///
/// | `zookeeper-client` event | state |
/// |---|---|
/// | first session established | [`Connected`](Self::Connected) (once per [`ZkClient`](crate::ZkClient)) |
/// | `Disconnected` | [`Suspended`](Self::Suspended) |
/// | `SyncConnected` after `Suspended`/`ReadOnly` | [`Reconnected`](Self::Reconnected) |
/// | `ConnectedReadOnly` | [`ReadOnly`](Self::ReadOnly) |
/// | `Expired`, `AuthFailed`, or `Suspended` for longer than the session can survive | [`Lost`](Self::Lost) |
/// | a new session after `Lost` | [`Reconnected`](Self::Reconnected) |
///
/// `Lost` always comes before the `Reconnected` of a new session, so a recipe that sees
/// `Reconnected` after `Lost` knows its ephemeral nodes and watches are gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConnectionState {
    /// The first successful connection of this manager. Sent once.
    Connected,
    /// The connection is gone; the session may still be alive. Locks and leadership are in
    /// doubt.
    Suspended,
    /// Connected again after `Suspended`, `Lost` or `ReadOnly` (on a new session after `Lost`).
    Reconnected,
    /// The session is gone: its ephemeral nodes are (or will shortly be) deleted by the server.
    Lost,
    /// Connected to a read-only server (only with `can_be_read_only`).
    ReadOnly,
}

impl ConnectionState {
    /// Is this a connected state (`Connected`, `Reconnected`, `ReadOnly`)?
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_connection::ConnectionState;
    /// assert!(ConnectionState::Reconnected.is_connected());
    /// assert!(!ConnectionState::Suspended.is_connected());
    /// ```
    pub fn is_connected(self) -> bool {
        matches!(self, ConnectionState::Connected | ConnectionState::Reconnected | ConnectionState::ReadOnly)
    }
}

impl fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ConnectionState::Connected => "CONNECTED",
            ConnectionState::Suspended => "SUSPENDED",
            ConnectionState::Reconnected => "RECONNECTED",
            ConnectionState::Lost => "LOST",
            ConnectionState::ReadOnly => "READ_ONLY",
        };
        f.write_str(s)
    }
}

/// Decides which connection states make recipes give up what they hold (a lock, leadership):
/// Curator's `ConnectionStateErrorPolicy`.
///
/// # Examples
///
/// ```
/// use zkr_connection::{ConnectionState, ConnectionStateErrorPolicy};
///
/// /// Only Lost counts, and ReadOnly too (say, for a writer).
/// #[derive(Debug)]
/// struct WritersPolicy;
///
/// impl ConnectionStateErrorPolicy for WritersPolicy {
///     fn is_error_state(&self, state: ConnectionState) -> bool {
///         matches!(state, ConnectionState::Lost | ConnectionState::ReadOnly)
///     }
/// }
/// let policy: Box<dyn ConnectionStateErrorPolicy> = Box::new(WritersPolicy);
/// assert!(policy.is_error_state(ConnectionState::ReadOnly));
/// ```
pub trait ConnectionStateErrorPolicy: Send + Sync + fmt::Debug {
    /// Should a recipe treat `state` as an error (lose its lock or leadership)?
    fn is_error_state(&self, state: ConnectionState) -> bool;
}

/// Curator's default: `Suspended` and `Lost` are errors. The safe choice for locks.
#[derive(Debug, Clone, Copy, Default)]
pub struct StandardConnectionStateErrorPolicy;

impl ConnectionStateErrorPolicy for StandardConnectionStateErrorPolicy {
    fn is_error_state(&self, state: ConnectionState) -> bool {
        matches!(state, ConnectionState::Suspended | ConnectionState::Lost)
    }
}

/// Only `Lost` is an error: a holder keeps its lock through a short disconnection, at the risk
/// of acting while another client may already hold it if the session expires unnoticed.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionConnectionStateErrorPolicy;

impl ConnectionStateErrorPolicy for SessionConnectionStateErrorPolicy {
    fn is_error_state(&self, state: ConnectionState) -> bool {
        state == ConnectionState::Lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn _object_safe(_: &dyn ConnectionStateErrorPolicy) {}

    #[test]
    fn curator_policies() {
        use ConnectionState::*;
        let standard = StandardConnectionStateErrorPolicy;
        let session = SessionConnectionStateErrorPolicy;
        for state in [Connected, Suspended, Reconnected, Lost, ReadOnly] {
            assert_eq!(standard.is_error_state(state), matches!(state, Suspended | Lost), "{state}");
            assert_eq!(session.is_error_state(state), state == Lost, "{state}");
        }
    }
}
