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
