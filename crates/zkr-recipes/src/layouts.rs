//! The node layouts zkr shares with Curator and kazoo, declared once: the names and prefixes
//! the recipes write and the parsers that read them back. The recipes name their nodes with
//! these, and `zkr ui` and the `zkr` commands recognise recipes by them, so a layout is
//! changed in one place for all of them.
//!
//! # Examples
//!
//! ```
//! use zkr_recipes::layouts::{Marker, Origin, QUEUE_PREFIXES};
//!
//! assert_eq!(Marker::of("_c_0f5c-lock-0000000002"), Some((Marker::Lock, 2)));
//! assert_eq!(Marker::of("a1b2c3__rlock__0000000004"), Some((Marker::KazooRead, 4)));
//! assert_eq!(Marker::of("notes.txt"), None);
//! assert_eq!(QUEUE_PREFIXES[2], ("entry-", Origin::Kazoo));
//! ```

/// Curator's `InterProcessMutex` (and `LeaderSelector`) contender: `[_c_<uuid>-]lock-<seq>`.
pub const LOCK_NAME: &str = "lock-";
/// Curator's `LeaderLatch` participant: `[_c_<uuid>-]latch-<seq>`.
pub const LATCH_NAME: &str = "latch-";
/// Curator's semaphore lease: `_c_<uuid>-lease-<seq>` under the semaphore's
/// [`SEMAPHORE_LEASES`].
pub const LEASE_NAME: &str = "lease-";
/// Curator's `InterProcessReadWriteLock` reader: `_c_<uuid>-__READ__<seq>`.
pub const READ_LOCK_NAME: &str = "__READ__";
/// Curator's `InterProcessReadWriteLock` writer: `_c_<uuid>-__WRIT__<seq>`.
pub const WRITE_LOCK_NAME: &str = "__WRIT__";
/// kazoo's `Lock`, `WriteLock` and `Election` contender: `<uuid hex>__lock__<seq>`.
pub const KAZOO_LOCK_NAME: &str = "__lock__";
/// kazoo's `ReadLock` contender: `<uuid hex>__rlock__<seq>`.
pub const KAZOO_READ_LOCK_NAME: &str = "__rlock__";
/// Curator's `InterProcessSemaphoreV2`: the directory of its leases.
pub const SEMAPHORE_LEASES: &str = "leases";
/// Curator's `InterProcessSemaphoreV2`: the directory of the mutex its acquirers queue on.
pub const SEMAPHORE_LOCKS: &str = "locks";
/// kazoo's `Party` member: `<uuid hex>__party__`, the member's identifier as data.
pub const KAZOO_PARTY_NAME: &str = "__party__";
/// Curator's `DistributedQueue` (and its priority and delay queues) item: `queue-<seq>`.
pub const QUEUE_PREFIX: &str = "queue-";
/// Curator's `SimpleDistributedQueue` item: `qn-<seq>`.
pub const SIMPLE_QUEUE_PREFIX: &str = "qn-";
/// kazoo's `Queue` and `LockingQueue` item: `entry-<seq>` (with a priority before the
/// sequence in kazoo's layout).
pub const KAZOO_QUEUE_PREFIX: &str = "entry-";
/// The node the member that meets a double barrier's quota creates (Curator's and kazoo's).
pub const BARRIER_READY: &str = "ready";
/// zkr's sequential ID generator: one node per epoch, `epoch-<ten digits>`.
pub const EPOCH_PREFIX: &str = "epoch-";
/// zkr's snowflake ID generator: the directory of its worker leases (ephemeral).
pub const SNOWFLAKE_LEASES: &str = "leases";
/// zkr's snowflake ID generator: the directory of the worker ids ever handed out.
pub const SNOWFLAKE_WORKERS: &str = "workers";
/// zkr's snowflake ID generator: the directory that maps identities to worker ids.
pub const SNOWFLAKE_IDENTITIES: &str = "identities";
/// zkr's snowflake ID generator: the directories under its path.
pub const SNOWFLAKE_DIRS: [&str; 3] = [SNOWFLAKE_LEASES, SNOWFLAKE_WORKERS, SNOWFLAKE_IDENTITIES];

/// Whose layout a node follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Origin {
    /// Apache Curator's (zkr's recipes write it too).
    Curator,
    /// kazoo's (zkr's `kazoo` module writes it too).
    Kazoo,
}

impl Origin {
    /// `"curator"` or `"kazoo"`.
    ///
    /// # Examples
    ///
    /// ```
    /// assert_eq!(zkr_recipes::layouts::Origin::Kazoo.name(), "kazoo");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Origin::Curator => "curator",
            Origin::Kazoo => "kazoo",
        }
    }
}

/// Every queue's item prefix, with whose layout it is.
pub const QUEUE_PREFIXES: [(&str, Origin); 3] = [
    (QUEUE_PREFIX, Origin::Curator),
    (SIMPLE_QUEUE_PREFIX, Origin::Curator),
    (KAZOO_QUEUE_PREFIX, Origin::Kazoo),
];

/// A contender's name marker: which recipe's node a sequential name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Marker {
    /// Curator's `InterProcessMutex`: `[_c_<uuid>-]lock-<seq>`.
    Lock,
    /// Curator's read lock: `...-__READ__<seq>`.
    Read,
    /// Curator's write lock: `...-__WRIT__<seq>`.
    Write,
    /// kazoo's `Lock` and `WriteLock`: `<uuid>__lock__<seq>`.
    KazooLock,
    /// kazoo's `ReadLock`: `<uuid>__rlock__<seq>`.
    KazooRead,
    /// Curator's `LeaderLatch`: `[_c_<uuid>-]latch-<seq>`.
    Latch,
    /// Curator's semaphore lease: `[_c_<uuid>-]lease-<seq>`.
    Lease,
}

impl Marker {
    /// The marker and sequence order key ([`sequence_key`]) of a contender's name: a marker
    /// right before a ten-character ZooKeeper sequence (a dashed one, `lock-`, at the start or
    /// after a `-`). `None` for any other name.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::layouts::Marker;
    ///
    /// assert_eq!(Marker::of("_c_0f5c-__WRIT__0000000001"), Some((Marker::Write, 1)));
    /// assert_eq!(Marker::of("latch-0000000003"), Some((Marker::Latch, 3)));
    /// assert_eq!(Marker::of("unlock-0000000003"), None);
    /// ```
    pub fn of(name: &str) -> Option<(Marker, u64)> {
        const SUFFIXED: [(&str, Marker); 4] = [
            (READ_LOCK_NAME, Marker::Read),
            (WRITE_LOCK_NAME, Marker::Write),
            (KAZOO_READ_LOCK_NAME, Marker::KazooRead),
            (KAZOO_LOCK_NAME, Marker::KazooLock),
        ];
        const DASHED: [(&str, Marker); 3] =
            [(LOCK_NAME, Marker::Lock), (LATCH_NAME, Marker::Latch), (LEASE_NAME, Marker::Lease)];
        let split = name.len().checked_sub(10)?;
        let (head, seq) = (name.get(..split)?, sequence_key(name.get(split..)?)?);
        let dashed = |word: &str| head.strip_suffix(word).is_some_and(|b| b.is_empty() || b.ends_with('-'));
        let marker = SUFFIXED.iter().find(|(word, _)| head.ends_with(word)).map(|(_, m)| *m);
        let marker = marker.or_else(|| DASHED.iter().find(|(word, _)| dashed(word)).map(|(_, m)| *m))?;
        Some((marker, seq))
    }

    /// Whose layout the marker is.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::layouts::{Marker, Origin};
    /// assert_eq!(Marker::KazooRead.origin(), Origin::Kazoo);
    /// ```
    pub fn origin(self) -> Origin {
        match self {
            Marker::KazooLock | Marker::KazooRead => Origin::Kazoo,
            _ => Origin::Curator,
        }
    }
}

/// Orders ZooKeeper sequence suffixes: the parsed number read as the unsigned 32-bit counter
/// it is, so that the names after the counter wraps past 2147483647 (`-2147483648`, ...) sort
/// after the ones before it. `None` for anything that is not a sequence exactly as ZooKeeper
/// formats one (`%010d`: `0000000007`, `-000000001`, `-2147483648`).
///
/// Curator and kazoo compare the suffixes as strings, which puts `-2147483648` first; they agree
/// with this order everywhere else.
///
/// # Examples
///
/// ```
/// use zkr_recipes::layouts::sequence_key;
/// assert!(sequence_key("2147483647") < sequence_key("-2147483648"));
/// assert_eq!(sequence_key("0000000007"), Some(7));
/// assert_eq!(sequence_key("7"), None);
/// assert_eq!(sequence_key("-000000001"), Some(u64::from(u32::MAX)));
/// ```
pub fn sequence_key(suffix: &str) -> Option<u64> {
    // Exactly ZooKeeper's `String.format("%010d", counter)` of a signed 32-bit counter:
    // "0000000007", "-000000001", "-2147483648".
    let value: i32 = suffix.parse().ok()?;
    // The one spelling `%010d` gives, checked without formatting (this runs for every child
    // of every listing): the sign only on a negative value, zeros up to ten characters.
    let negative = suffix.starts_with('-');
    let digits = value.unsigned_abs().checked_ilog10().map_or(1, |log| log as usize + 1);
    let length = (digits + usize::from(negative)).max(10);
    let canonical = !suffix.starts_with('+') && negative == (value < 0) && suffix.len() == length;
    canonical.then_some(u64::from(value as u32))
}

/// Whether `name` is a queue item of `prefix`: the prefix, then a ZooKeeper sequence at the
/// end (a priority may stand between them, as in Curator's priority queue and kazoo's).
///
/// # Examples
///
/// ```
/// use zkr_recipes::layouts::{is_queue_item, QUEUE_PREFIX};
/// assert!(is_queue_item("queue-0000000042", QUEUE_PREFIX));
/// assert!(!is_queue_item("queue-42", QUEUE_PREFIX));
/// ```
pub fn is_queue_item(name: &str, prefix: &str) -> bool {
    name.starts_with(prefix)
        && name.len() >= prefix.len() + 10
        && name.get(name.len() - 10..).and_then(sequence_key).is_some()
}

/// Whether `name` is one of the sequential ID generator's epochs, `epoch-<ten digits>`.
///
/// # Examples
///
/// ```
/// use zkr_recipes::layouts::is_epoch;
/// assert!(is_epoch("epoch-0000000001") && !is_epoch("epoch-1"));
/// ```
pub fn is_epoch(name: &str) -> bool {
    name.strip_prefix(EPOCH_PREFIX).is_some_and(|d| d.len() == 10 && d.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a node's children are a snowflake ID generator's ([`SNOWFLAKE_DIRS`]).
///
/// # Examples
///
/// ```
/// use zkr_recipes::layouts::is_snowflake;
/// assert!(is_snowflake(&["workers".to_owned()]) && !is_snowflake(&["epoch-0000000001".to_owned()]));
/// ```
pub fn is_snowflake(children: &[String]) -> bool {
    children.iter().any(|c| SNOWFLAKE_DIRS.contains(&c.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "_c_53345f98-9423-4e0c-a7b5-9f819e3ec2e1";

    #[test]
    fn markers_need_ten_digits_and_a_word_boundary() {
        assert_eq!(Marker::of(&format!("{A}-lock-0000000007")), Some((Marker::Lock, 7)));
        assert_eq!(Marker::of("lock-0000000001"), Some((Marker::Lock, 1)));
        assert_eq!(Marker::of("padlock-0000000001"), None);
        assert_eq!(Marker::of("lock-12"), None);
        assert_eq!(Marker::of(&format!("{A}-__READ__0000000003")), Some((Marker::Read, 3)));
        assert_eq!(Marker::of("9a1b__lock__0000000002"), Some((Marker::KazooLock, 2)));
        assert_eq!(Marker::of("9a1b__rlock__0000000002"), Some((Marker::KazooRead, 2)));
        assert_eq!(Marker::of(&format!("{A}-latch-0000000000")), Some((Marker::Latch, 0)));
        assert_eq!(Marker::of(&format!("{A}-lease-0000000004")), Some((Marker::Lease, 4)));
        assert_eq!(Marker::of("queue-0000000004"), None);
        // A wrapped counter's name orders after the others, as the recipes order it.
        let (_, wrapped) = Marker::of("lock--000000001").expect("a wrapped lock node");
        assert!(wrapped > Marker::of("lock-2147483647").unwrap().1);
        assert_eq!(Marker::of("lock-+000000001"), None);
    }
}
