//! Known defects, each re-introduced behind a switch so the tests can show the checker finds
//! it: a recipe's model takes the defective step when its config names the bug.

/// A defect a recipe's model can be told to have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bug {
    /// Mutex: a waiter takes the lock when the node it watched is deleted even when that node
    /// was not the head (zkr lists again: `locks/internals/turn.rs`, `OnDelete::ListAgain`).
    MutexAnyDeletionGrants,
    /// Mutex: a hold is lost only when the session ends, not when the connection drops
    /// (Curator's `SessionConnectionStateErrorPolicy`; zkr's standard policy counts the drop).
    MutexSessionOnlyPolicy,
    /// Lock internals: a contender whose create's reply was lost looks for its node without a
    /// `sync` first (zkr-connection `protected.rs`, `sync_and_find`): a lagging server's
    /// listing may miss it.
    MutexFindWithoutSync,
    /// Read-write lock: a reader looks only at the node just ahead of it for a writer
    /// (`read_write.rs`, `ReadLockDriver::gets_the_lock` looks at every node ahead).
    RwReaderLooksOnlyJustAhead,
    /// Read-write lock: kazoo 2.8's reader rule (python-zk/kazoo#649): writers queued behind
    /// the reader count, and it watches the last writer listed.
    RwReaderCountsLaterWriters,
    /// Semaphore V2: the acquirers' mutex released once the lease node is made, before the
    /// wait for room (`locks/semaphore.rs`, `acquire_until` releases it after the wait).
    SemaphoreMutexReleasedEarly,
    /// Semaphore V2: the lease node created on the client's session, not pinned to the
    /// acquirers' mutex's (before cd298d3: after an expiry the lease was made on the next
    /// session, without the mutex; Curator's steps are so).
    SemaphoreLeaseOffMutexSession,
    /// kazoo's lease: the holder node replaced without the lock's check on the lock's session
    /// (`kazoo/lease.rs`, `under_lock` commits through `guard.transaction()`); the delete at
    /// the version read is kept.
    LeaseTxnUnguarded,
    /// Lock-safe queue: an item lock found existing is taken as ours when its node is of our
    /// session, whatever its token (`queues/item.rs`, `create_or_watch` checks both).
    QueueLockBySessionOnly,
    /// Lock-safe queue: the ack's transaction goes to the client's current session, not the
    /// lock's (`queues/item.rs`, `ItemLock::commit` pins it through `Owned::transaction`).
    QueueAckUnpinned,
    /// Double barrier: a member whose node was created again after an expiry identifies its
    /// round by the new node's czxid, not its first node's (`barriers/double.rs`, `step`).
    BarrierRoundFromCurrentNode,
    /// Double barrier: a leaver deletes whatever `ready` there is, not only its round's at the
    /// version read (`barriers/double.rs`, `delete_ready`; Curator's behaviour).
    BarrierDeleteAnyReady,
    /// Counter: a compare-and-set whose reply was lost and whose resend lost the race is
    /// reported not applied (`counters/mod.rs`, `CounterError::after_write` says Indeterminate).
    CounterLostReplyNotApplied,
    /// Watch engine: after a reconnect, everything is read again but the persistent watch is
    /// not set again (`watch/mod.rs`, `Watch::persistent` before the config checker found it:
    /// `zookeeper-client` 0.11.2 does not set persistent watches again on a new connection).
    CacheNoRewatchAfterReconnect,
    /// Watch engine: after a reconnect, the persistent watch is set again but nothing is read
    /// again (`Watch::persistent` subscribes, which reads: the changes made while disconnected
    /// fire no event, ZOOKEEPER-4698).
    CacheNoReadAfterReconnect,
    /// Watch engine: on a session after another, the watch is set and everything read with no
    /// `sync` first (`Watch::subscribe`, `sync_before_read`; before 43a39f9): a new session's
    /// server may be behind the copy.
    CacheNoSyncOnNewSession,
    /// Watch engine: the `sync` goes only before the first subscription on a new session, not
    /// before one tried again after a failure (`Watch::run` recomputed `sync_before_read` from
    /// the session switch alone; found by this model, fixed with it): a connection lost before
    /// the sync's reply leaves the session's last zxid at 0.
    CacheSyncOnlyOnce,
    /// Sequential IDs: a drawn ID is handed out without the high-water record's check
    /// (`id/sequential.rs`, `record`).
    IdsNoHighWater,
}

/// The bugs a model has: none, or one.
pub type Bugs = Option<Bug>;

/// A change to a recipe's code that the model can be told to make (proposed, not made in
/// `crates/zkr-recipes`): a test checks the window it closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fix {
    /// Double barrier: `ready` holds the member nodes the create-ready transaction counted (its
    /// data, which Curator and kazoo never read), and a member that passes marks its node's data
    /// with that `ready`'s czxid (a node made again carries it); an entering member passes by a
    /// `ready` that names it and is newer than the last it passed (window 4), and counts no
    /// member that a stale `ready` names or whose node is marked (window 5).
    BarrierReadyNamesMembers,
    /// Double barrier: the fix above, and the leave record: the leaver that deletes its round's
    /// `ready` writes, in the same transaction, the round (that `ready`'s czxid and the members
    /// it named) into the barrier node's data; an entering member whom the recorded round names
    /// passes by it (window 1: the others left while its session was being replaced, and
    /// `ready` went with them). A member's name is new for each round, a later round counts no
    /// member the record names, and create-ready checks the barrier node's version.
    BarrierLeaveRecord,
}

/// The fixes a model has: none, or one.
pub type Fixes = Option<Fix>;
