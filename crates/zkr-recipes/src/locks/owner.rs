//! Who holds a reentrant lock in this process: the current tokio task, or the current thread
//! where there is no task.

/// The owner of a reentrant hold.
///
/// Inside a tokio task it is the task ([`tokio::task::Id`]), so a lock acquired in a task can be
/// acquired again by the same task without a ZooKeeper call, whichever worker thread it runs on.
/// Code that runs directly in `block_on` (the bodies of `#[tokio::main]` and `#[tokio::test]`)
/// has no task; there the owner is the current thread, which `block_on` pins the future to.
///
/// Futures joined or selected inside one task (`join!`, `select!`, `FuturesUnordered`) share
/// the task's id and therefore its ownership: a second acquire from a future joined with the
/// holder is reentrant, not excluded. Spawn a task to get exclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockOwner {
    /// A tokio task.
    Task(tokio::task::Id),
    /// A thread outside any task.
    Thread(std::thread::ThreadId),
}

impl LockOwner {
    /// The owner for code running here and now.
    ///
    /// # Examples
    ///
    /// ```
    /// use zkr_recipes::locks::LockOwner;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let here = LockOwner::current(); // the thread: #[tokio::main]'s body is not a task
    /// let in_task = tokio::spawn(async { LockOwner::current() }).await.unwrap();
    /// assert!(matches!(here, LockOwner::Thread(_)));
    /// assert!(matches!(in_task, LockOwner::Task(_)));
    /// # }
    /// ```
    pub fn current() -> Self {
        match tokio::task::try_id() {
            Some(id) => LockOwner::Task(id),
            None => LockOwner::Thread(std::thread::current().id()),
        }
    }
}

/// Whom a hold of an [`InterProcessMutex`](super::InterProcessMutex) belongs to, inside the
/// mutex: an owner, whose acquires are reentrant, or one acquire call alone, which nothing
/// else shares (the semaphore's acquirers' mutex: acquires joined in one task must each take
/// their turn, or all of them would make a lease and wait for room that never comes).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Holder {
    Owner(LockOwner),
    Call(u64),
}

impl Holder {
    /// The owner running here and now.
    pub(crate) fn current() -> Self {
        Holder::Owner(LockOwner::current())
    }

    /// A holder for one call, unlike every other.
    pub(crate) fn call() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        Holder::Call(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl std::fmt::Debug for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Holder::Owner(owner) => owner.fmt(f),
            Holder::Call(n) => write!(f, "Call({n})"),
        }
    }
}
