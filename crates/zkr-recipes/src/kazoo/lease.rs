//! kazoo's `NonBlockingLease` and `MultiNonBlockingLease`.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use zkr_connection::{path, ZkClient};
use zookeeper_client::CreateMode;

use crate::locks::LockError;

/// kazoo's `NonBlockingLease._version`: the holder node's format.
const FORMAT_VERSION: i64 = 1;

/// The holder node's name under the lease path.
const HOLDER: &str = "lease_holder";

/// The holder node's JSON: kazoo's `{"version": 1, "holder": ..., "end": ...}`, `end` in UTC as
/// `%Y-%m-%dT%H:%M:%S`.
#[derive(Debug, Serialize, Deserialize)]
struct Holder {
    version: i64,
    holder: String,
    end: String,
}

/// kazoo's end time: UTC, to the second, without a zone (`2026-12-03T02:00:00`).
fn format_end(end: SystemTime) -> String {
    let text = humantime::format_rfc3339_seconds(end).to_string();
    text.trim_end_matches('Z').to_owned()
}

fn parse_end(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text).ok()
}

/// An exclusive lease that never waits, in kazoo's layout: kazoo's `NonBlockingLease(path,
/// duration, identifier)`.
///
/// [`obtain`](Self::obtain) takes the kazoo lock at `path` for a moment and reads
/// `<path>/lease_holder` (JSON: kazoo's format version, the holder's identifier, and the end of
/// its lease in UTC): the lease is obtained when there is no holder, the holder's lease has
/// ended, or the holder is this identifier (a renewal); the holder node is then replaced, in one
/// transaction, with this identifier until now + `duration`. Python processes using kazoo's
/// leases on the same path take part. As kazoo's, it trusts the processes' clocks to agree.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use std::time::Duration;
/// use zkr_recipes::kazoo::NonBlockingLease;
///
/// let lease = NonBlockingLease::obtain(&zk, "/leases/hourly-cleanup", Duration::from_secs(70 * 60), "cleanup on host-3").await?;
/// if lease.obtained() {
///     // ... run the hourly cleanup here, and nowhere else ...
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonBlockingLease {
    obtained: bool,
}

impl NonBlockingLease {
    /// Tries to obtain (or renew) the lease at `path` for `duration` as `identifier`; see the
    /// [type docs](Self).
    ///
    /// # Errors
    /// [`LockError::InvalidArgument`] for an invalid path, an identifier over ZooKeeper's limit
    /// or a duration past the year 9999; [`LockError::IllegalState`] for a holder node that does
    /// not hold kazoo's JSON; otherwise as
    /// [`InterProcessMutex::acquire`](crate::locks::InterProcessMutex::acquire) and
    /// [`InterProcessMutexGuard::commit`](crate::locks::InterProcessMutexGuard::commit).
    ///
    /// # Cancel safety
    /// Cancel safe before the holder node is written (the lock node is deleted in the
    /// background); dropped while it is written, the lease may or may not have been obtained.
    pub async fn obtain(
        zk: &ZkClient,
        path: &str,
        duration: Duration,
        identifier: &str,
    ) -> Result<Self, LockError> {
        let end = SystemTime::now()
            .checked_add(duration)
            .filter(|end| format_end(*end).len() == "9999-12-31T23:59:59".len())
            .ok_or_else(|| {
                LockError::InvalidArgument(format!("{path}: a lease of {duration:?} ends too late"))
            })?;
        let lock = crate::locks::InterProcessMutex::kazoo(zk, path, identifier)?;
        super::ensure_path(zk, path, b"").await?;
        let guard = lock.acquire().await?;
        let obtained = Self::under_lock(zk, &guard, path, end, identifier).await;
        let _ = guard.release().await;
        Ok(NonBlockingLease { obtained: obtained? })
    }

    async fn under_lock(
        zk: &ZkClient,
        guard: &crate::locks::InterProcessMutexGuard<crate::locks::KazooLockDriver>,
        path: &str,
        end: SystemTime,
        identifier: &str,
    ) -> Result<bool, LockError> {
        let holder_path = path::join(path, HOLDER);
        let holder = holder_path.as_str();
        let found = crate::errors::read_node(zk, holder).await?;
        let mut txn = guard.transaction()?;
        if let Some((raw, stat)) = found {
            let current: Holder = serde_json::from_slice(&raw).map_err(|_| LockError::IllegalState {
                path: holder_path.clone(),
                reason: "the lease holder node does not hold kazoo's lease JSON",
            })?;
            if current.version != FORMAT_VERSION {
                // kazoo: "We need an upgrade, let someone else take the lease".
                return Ok(false);
            }
            let current_end = parse_end(&current.end).ok_or_else(|| LockError::IllegalState {
                path: holder_path.clone(),
                reason: "the lease holder node's end is not a time",
            })?;
            if current.holder != identifier && SystemTime::now() < current_end {
                return Ok(false);
            }
            txn = txn.delete(&holder_path, Some(stat.version));
        }
        let new = Holder { version: FORMAT_VERSION, holder: identifier.to_owned(), end: format_end(end) };
        let json = serde_json::to_vec(&new).map_err(|e| LockError::InvalidArgument(e.to_string()))?;
        guard.commit(txn.create(&holder_path, &json, CreateMode::Persistent)).await?;
        Ok(true)
    }

    /// Was the lease obtained (kazoo's `bool(lease)`)?
    pub fn obtained(&self) -> bool {
        self.obtained
    }
}

/// One of several exclusive leases, in kazoo's layout: kazoo's `MultiNonBlockingLease(count,
/// path, duration, identifier)`, a [`NonBlockingLease`] tried at `<path>/0`, `<path>/1`, ... up
/// to `count - 1`, the first obtained winning. Useful when a limited set of hosts should run a
/// task.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::locks::LockError> {
/// use std::time::Duration;
/// use zkr_recipes::kazoo::MultiNonBlockingLease;
///
/// let lease = MultiNonBlockingLease::obtain(&zk, 3, "/leases/reports", Duration::from_secs(600), "host-3").await?;
/// if let Some(slot) = lease.slot() {
///     println!("running reports as one of 3 (slot {slot})");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiNonBlockingLease {
    slot: Option<usize>,
}

impl MultiNonBlockingLease {
    /// Tries the `count` leases under `path` in order until one is obtained (or renewed).
    ///
    /// # Errors
    /// As [`NonBlockingLease::obtain`].
    ///
    /// # Cancel safety
    /// As [`NonBlockingLease::obtain`].
    pub async fn obtain(
        zk: &ZkClient,
        count: usize,
        path: &str,
        duration: Duration,
        identifier: &str,
    ) -> Result<Self, LockError> {
        for slot in 0..count {
            let slot_path = path::join(path, &slot.to_string());
            if NonBlockingLease::obtain(zk, &slot_path, duration, identifier).await?.obtained() {
                return Ok(MultiNonBlockingLease { slot: Some(slot) });
            }
        }
        Ok(MultiNonBlockingLease { slot: None })
    }

    /// Was one of the leases obtained (kazoo's `bool(lease)`)?
    pub fn obtained(&self) -> bool {
        self.slot.is_some()
    }

    /// Which one: its number under the path.
    pub fn slot(&self) -> Option<usize> {
        self.slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_are_kazoos_utc_seconds_and_read_back() {
        let end = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_263_200_900);
        assert_eq!(format_end(end), "2026-12-03T02:00:00");
        assert_eq!(
            parse_end("2026-12-03T02:00:00"),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_263_200))
        );
        assert_eq!(parse_end("yesterday"), None);
        let json = br#"{"version": 1, "holder": "host-1", "end": "2026-12-03T02:00:00"}"#;
        let holder: Holder = serde_json::from_slice(json).unwrap();
        assert_eq!((holder.version, holder.holder.as_str()), (1, "host-1"));
    }
}
