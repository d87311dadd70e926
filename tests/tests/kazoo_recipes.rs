//! kazoo's layouts (`zkr_recipes::kazoo` and `InterProcessReadWriteLock::kazoo`), each shared
//! with a real kazoo process (Debian's python3-kazoo, 2.8) both ways: the read-write lock,
//! Semaphore, Counter, Party, ShallowParty, Election and the leases.

use std::time::Duration;

use zkr_connection::retry::RetryNTimes;
use zkr_connection::ZkClient;
use zkr_integration_tests::{connect, timing, unique_root};
use zkr_recipes::counters::DistributedAtomicInteger;
use zkr_recipes::kazoo::{
    Counter, Election, MultiNonBlockingLease, NonBlockingLease, Party, Semaphore, ShallowParty,
};
use zkr_recipes::locks::{InterProcessReadWriteLock, LockError};
use zkr_testing::peers::{KazooTool, PeerProcess};
use zkr_testing::shared_server;

async fn setup(name: &str) -> (ZkClient, String, String) {
    let cs = shared_server().await.unwrap().connect_string();
    (connect(&cs).await, cs, unique_root(name))
}

fn kazoo(args: &[&str]) -> PeerProcess {
    KazooTool::locate().expect("kazoo (python3-kazoo)").spawn(args).expect("spawn kazoo_tool")
}

/// The one line a one-shot kazoo command prints.
async fn kazoo_says(args: &[&str]) -> String {
    kazoo(args).next_line().await.unwrap().expect("a line from kazoo_tool")
}

fn retries() -> RetryNTimes {
    RetryNTimes::new(1000, Duration::from_millis(1))
}

#[tokio::test]
async fn kazoo_and_zkr_share_a_read_write_lock() {
    let (zk, cs, path) = setup("kazoo-rw").await;
    let lock = InterProcessReadWriteLock::kazoo(&zk, &path, "rust").unwrap();

    // A kazoo writer excludes zkr's readers and writers; once it lets go, zkr reads.
    let mut writer = kazoo(&["hold", &cs, &path, "write"]);
    writer.expect_line("HELD").await.unwrap();
    assert!(
        lock.read_timeout(Duration::from_millis(300)).await.unwrap().is_none(),
        "read beside a kazoo writer"
    );
    assert!(
        lock.write_timeout(Duration::from_millis(300)).await.unwrap().is_none(),
        "write beside a kazoo writer"
    );
    writer.send_line("release").await.unwrap();
    writer.expect_line("RELEASED").await.unwrap();
    let reading = lock.read_timeout(timing().wait()).await.unwrap().expect("read once the kazoo writer left");

    // zkr's reader shares with kazoo readers and excludes kazoo writers.
    assert_eq!(kazoo_says(&["try", &cs, &path, "10000", "read"]).await, "ACQUIRED");
    assert_eq!(kazoo_says(&["try", &cs, &path, "300", "write"]).await, "NOT_ACQUIRED");
    // kazoo's plain Lock does not see read locks (only its WriteLock does): kazoo's design.
    assert_eq!(kazoo_says(&["try", &cs, &path, "10000", "lock"]).await, "ACQUIRED");
    reading.release().await.unwrap();

    // zkr's writer excludes kazoo readers.
    let writing = lock.write().await.unwrap();
    assert_eq!(kazoo_says(&["try", &cs, &path, "300", "read"]).await, "NOT_ACQUIRED");
    writing.release().await.unwrap();
    assert_eq!(kazoo_says(&["try", &cs, &path, "10000", "write"]).await, "ACQUIRED");
}

/// kazoo 2.8's deadlock (python-zk/kazoo#649): a writer holds, a reader queues, a second writer
/// queues behind the reader; when the first writer lets go, kazoo's reader watched the second
/// writer (behind it) and both waited forever. zkr's reader in that place gets the lock, and the
/// kazoo writer behind it gets it after.
#[tokio::test]
async fn a_reader_between_two_writers_gets_the_lock_kazoo_649() {
    let (zk, cs, path) = setup("kazoo-rw-649").await;
    let first = InterProcessReadWriteLock::kazoo(&zk, &path, "first-writer").unwrap();
    let reader = InterProcessReadWriteLock::kazoo(&zk, &path, "reader").unwrap();
    let held = first.write().await.unwrap();
    let (queued_tx, queued_rx) = tokio::sync::oneshot::channel();
    let waiting_reader = tokio::spawn(async move {
        let read = reader.read();
        tokio::pin!(read);
        // Queue the reader's node before the second writer's.
        assert!(tokio::time::timeout(Duration::from_millis(300), &mut read).await.is_err());
        let _ = queued_tx.send(());
        read.await
    });
    queued_rx.await.unwrap();
    let mut second = kazoo(&["hold", &cs, &path, "write"]);
    // The second writer queues behind the reader: give kazoo time to create its node and watch.
    let contenders =
        || async { zk.get_children(&path).await.unwrap().map_or(0, |(children, _)| children.len()) == 3 };
    zkr_integration_tests::eventually("three contenders", contenders).await;
    held.release().await.unwrap();
    let reading = tokio::time::timeout(timing().wait(), waiting_reader)
        .await
        .expect("the reader got the lock once the first writer left")
        .unwrap()
        .unwrap();
    reading.release().await.unwrap();
    second.expect_line("HELD").await.unwrap();
    second.send_line("release").await.unwrap();
    second.expect_line("RELEASED").await.unwrap();
}

#[tokio::test]
async fn kazoo_and_zkr_share_a_semaphore() {
    let (zk, cs, path) = setup("kazoo-semaphore").await;
    let semaphore = Semaphore::new(&zk, &path, "rust", 2).unwrap();
    let mut python = kazoo(&["semaphore-hold", &cs, &path, "python", "2"]);
    python.expect_line("HELD").await.unwrap();
    let lease = semaphore.acquire().await.unwrap();
    // Both leases are out: neither side gets a third.
    assert!(semaphore.acquire_timeout(Duration::from_millis(300)).await.unwrap().is_none());
    assert_eq!(kazoo_says(&["semaphore-try", &cs, &path, "other", "2", "300"]).await, "NOT_ACQUIRED");
    let mut holders = semaphore.lease_holders().await.unwrap();
    holders.sort();
    assert_eq!(holders, ["python", "rust"]);
    assert_eq!(kazoo_says(&["semaphore-holders", &cs, &path, "2"]).await, "HOLDERS python,rust");
    // zkr's lease returned: kazoo gets one; kazoo's returned: zkr gets one.
    lease.release().await.unwrap();
    assert_eq!(kazoo_says(&["semaphore-try", &cs, &path, "other", "2", "10000"]).await, "ACQUIRED");
    let second = semaphore.acquire().await.unwrap();
    python.send_line("release").await.unwrap();
    python.expect_line("RELEASED").await.unwrap();
    let third = semaphore.acquire_timeout(timing().wait()).await.unwrap().expect("kazoo's lease came back");
    second.release().await.unwrap();
    third.release().await.unwrap();
    // kazoo's check of the maximum, which the node holds as text.
    let other_max = Semaphore::new(&zk, &path, "rust", 3).unwrap();
    let refused = other_max.acquire_timeout(Duration::from_secs(1)).await.unwrap_err();
    assert!(matches!(refused, LockError::IllegalState { .. }), "{refused}");
    assert_eq!(zk.get_data(&path).await.unwrap().unwrap().0, b"2");
}

#[tokio::test]
async fn kazoo_and_zkr_count_together_in_each_format() {
    let (zk, cs, path) = setup("kazoo-counter").await;
    // Integers as text, both adding at once: the exact total on both sides.
    let ints = format!("{path}/ints");
    let counter = Counter::new(&zk, &ints, 0i64, retries()).unwrap();
    let mut python = kazoo(&["counter", &cs, &ints, "int", "1", "50"]);
    for _ in 0..50 {
        assert!(counter.add(1).await.unwrap().succeeded);
    }
    python.set_line_timeout(timing().wait() * 4);
    python.expect_line("RESULT").await.unwrap();
    assert_eq!(counter.value().await.unwrap(), 100);
    assert_eq!(kazoo_says(&["counter", &cs, &ints, "int", "-1", "1"]).await, "RESULT value=99");
    assert_eq!(zk.get_data(&ints).await.unwrap().unwrap().0, b"99");

    // Floats as Python's repr.
    let floats = format!("{path}/floats");
    let counter = Counter::new(&zk, &floats, 0.0f64, retries()).unwrap();
    assert_eq!(kazoo_says(&["counter", &cs, &floats, "float", "0.5", "3"]).await, "RESULT value=1.5");
    assert_eq!(counter.value().await.unwrap(), 1.5);
    assert_eq!(counter.subtract(0.25).await.unwrap().post_value, 1.25);
    assert_eq!(kazoo_says(&["counter", &cs, &floats, "float", "1", "1"]).await, "RESULT value=2.25");

    // kazoo's support_curator: the 4-byte integer Curator's SharedCount and zkr's integers read.
    let shared = format!("{path}/shared");
    let counter = Counter::new(&zk, &shared, 0i64, retries()).unwrap().support_curator().unwrap();
    assert_eq!(kazoo_says(&["counter", &cs, &shared, "curator", "5", "2"]).await, "RESULT value=10");
    assert_eq!(counter.add(1).await.unwrap().post_value, 11);
    let atomic = DistributedAtomicInteger::new(&zk, &shared, retries()).unwrap();
    assert_eq!(atomic.get().await.unwrap().post_value, 11);
    assert_eq!(kazoo_says(&["counter", &cs, &shared, "curator", "1", "1"]).await, "RESULT value=12");

    // A node that holds something else is refused, not misread.
    zk.set_data(&ints, b"twelve", None).await.unwrap();
    let err = Counter::new(&zk, &ints, 0i64, retries()).unwrap().add(1).await.unwrap_err();
    assert!(matches!(err, zkr_recipes::counters::CounterError::NotANumber { .. }), "{err}");
    assert!(Counter::new(&zk, &floats, 0.5f64, retries()).unwrap().support_curator().is_err());
}

#[tokio::test]
async fn kazoo_and_zkr_parties_see_each_other() {
    let (zk, cs, path) = setup("kazoo-party").await;
    for kind in ["deep", "shallow"] {
        let at = format!("{path}/{kind}");
        let (rust, rust_too) = match kind {
            "deep" => (
                Member::Deep(Party::new(&zk, &at, "rust").unwrap()),
                Member::Deep(Party::new(&zk, &at, "rust-2").unwrap()),
            ),
            _ => (
                Member::Shallow(ShallowParty::new(&zk, &at, "rust").unwrap()),
                Member::Shallow(ShallowParty::new(&zk, &at, "rust-2").unwrap()),
            ),
        };
        rust.join().await;
        // A second member on the same client (one session): two members, not one.
        rust_too.join().await;
        let mut python = kazoo(&["party", &cs, &at, "python", kind]);
        python.expect_line("JOINED").await.unwrap();
        python.send_line("members").await.unwrap();
        assert_eq!(python.expect_line("MEMBERS").await.unwrap(), "MEMBERS python,rust,rust-2", "{kind}");
        assert_eq!(rust.members().await, ["python", "rust", "rust-2"], "{kind}");
        rust_too.leave().await;
        python.send_line("members").await.unwrap();
        assert_eq!(python.expect_line("MEMBERS").await.unwrap(), "MEMBERS python,rust", "{kind}");
        python.send_line("leave").await.unwrap();
        python.expect_line("LEFT").await.unwrap();
        assert_eq!(rust.members().await, ["rust"], "{kind}");
        rust.leave().await;
        assert!(rust.members().await.is_empty(), "{kind}");
    }
}

/// Either party, for the test above.
enum Member {
    Deep(Party),
    Shallow(ShallowParty),
}

impl Member {
    async fn join(&self) {
        match self {
            Member::Deep(p) => p.join().await.unwrap(),
            Member::Shallow(p) => p.join().await.unwrap(),
        }
    }

    async fn leave(&self) {
        match self {
            Member::Deep(p) => p.leave().await,
            Member::Shallow(p) => p.leave().await,
        }
    }

    async fn members(&self) -> Vec<String> {
        let mut members = match self {
            Member::Deep(p) => p.members().await.unwrap(),
            Member::Shallow(p) => p.members().await.unwrap(),
        };
        members.sort();
        members
    }
}

/// The next leader's id a [`LeaderObserver`](zkr_recipes::leader::LeaderObserver) reports.
async fn next_leader(
    leaders: &mut (impl futures::Stream<Item = Option<zkr_recipes::leader::Participant>> + Unpin),
) -> Option<String> {
    let next = tokio::time::timeout(timing().wait(), futures::StreamExt::next(leaders)).await;
    next.expect("a leader change in time").expect("the stream goes on").map(|l| l.id)
}

#[tokio::test]
async fn kazoo_and_zkr_take_turns_in_one_election() {
    let (zk, cs, path) = setup("kazoo-election").await;
    let mut python = kazoo(&["elect", &cs, &path, "python"]);
    python.expect_line("LEADING").await.unwrap();
    // An onlooker follows kazoo's election too (LeaderObserver: every election layout).
    let observer = zkr_recipes::leader::LeaderObserver::start(&zk, &path).await.unwrap();
    let mut leaders = observer.changes();
    assert_eq!(next_leader(&mut leaders).await.as_deref(), Some("python"));
    assert_eq!(observer.layout(), Some(zkr_recipes::locks::LockLayout::Kazoo));
    let election = Election::new(&zk, &path, "rust").unwrap();
    let (led_tx, led_rx) = tokio::sync::oneshot::channel();
    let (resign_tx, resign_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn({
        let election = election.clone();
        async move {
            election
                .run(|| async move {
                    let _ = led_tx.send(());
                    let _ = resign_rx.await;
                    "done"
                })
                .await
        }
    });
    let queued = || async { election.contenders().await.unwrap() == ["python", "rust"] };
    zkr_integration_tests::eventually("zkr queued behind kazoo's leader", queued).await;
    assert_eq!(kazoo_says(&["contenders", &cs, &path]).await, "CONTENDERS python,rust");
    python.send_line("resign").await.unwrap();
    python.expect_line("RESIGNED").await.unwrap();
    tokio::time::timeout(timing().wait(), led_rx).await.expect("zkr leads after kazoo").unwrap();
    assert_eq!(kazoo_says(&["contenders", &cs, &path]).await, "CONTENDERS rust");
    assert_eq!(next_leader(&mut leaders).await.as_deref(), Some("rust"), "the onlooker saw zkr take over");
    assert!(observer.strangers().is_empty(), "{:?}", observer.strangers());
    // kazoo queues behind zkr now, and leads once zkr's work is done.
    let mut python = kazoo(&["elect", &cs, &path, "python"]);
    let behind = || async { election.contenders().await.unwrap() == ["rust", "python"] };
    zkr_integration_tests::eventually("kazoo queued behind zkr's leader", behind).await;
    resign_tx.send(()).unwrap();
    assert_eq!(running.await.unwrap().unwrap(), "done");
    python.expect_line("LEADING").await.unwrap();
    python.send_line("resign").await.unwrap();
    python.expect_line("RESIGNED").await.unwrap();
}

#[tokio::test]
async fn kazoo_and_zkr_leases_exclude_renew_and_expire() {
    let (zk, cs, path) = setup("kazoo-lease").await;
    let hour = Duration::from_secs(3600);
    let single = format!("{path}/single");
    assert!(NonBlockingLease::obtain(&zk, &single, hour, "rust").await.unwrap().obtained());
    assert_eq!(kazoo_says(&["lease", &cs, &single, "3600", "python"]).await, "NOT_OBTAINED");
    // The holder renews, from either side.
    assert!(NonBlockingLease::obtain(&zk, &single, hour, "rust").await.unwrap().obtained());
    assert_eq!(kazoo_says(&["lease", &cs, &single, "3600", "rust"]).await, "OBTAINED");
    assert!(!NonBlockingLease::obtain(&zk, &single, hour, "python").await.unwrap().obtained());
    // A lease that has ended (kazoo writes one that ended a minute ago) goes to the next asker.
    assert_eq!(kazoo_says(&["lease", &cs, &single, "-60", "rust"]).await, "OBTAINED");
    assert!(NonBlockingLease::obtain(&zk, &single, hour, "python").await.unwrap().obtained());
    assert_eq!(kazoo_says(&["lease", &cs, &single, "3600", "rust"]).await, "NOT_OBTAINED");

    let multi = format!("{path}/multi");
    assert_eq!(kazoo_says(&["multi-lease", &cs, "2", &multi, "3600", "python"]).await, "OBTAINED");
    let rust = MultiNonBlockingLease::obtain(&zk, 2, &multi, hour, "rust").await.unwrap();
    assert_eq!(rust.slot(), Some(1), "slot 0 is kazoo's");
    assert!(!MultiNonBlockingLease::obtain(&zk, 2, &multi, hour, "third").await.unwrap().obtained());
    assert_eq!(kazoo_says(&["multi-lease", &cs, "2", &multi, "3600", "fourth"]).await, "NOT_OBTAINED");
    // Renewals keep their slots.
    assert_eq!(MultiNonBlockingLease::obtain(&zk, 2, &multi, hour, "rust").await.unwrap().slot(), Some(1));
    assert_eq!(kazoo_says(&["multi-lease", &cs, "2", &multi, "3600", "python"]).await, "OBTAINED");
}

/// Issue 44, item 2: the directories zkr makes for kazoo's layouts are persistent, as kazoo's
/// `ensure_path` makes them, never containers, which the server deletes once empty (a kazoo
/// `Lock`, `Party` or `Election` checks its path once and then fails with `NoNodeError`
/// forever). On a server that looks for empty containers every 100 ms, each recipe (the locking
/// queue, the barrier and the double barrier too) is used
/// once and left empty; none of its directories goes within 3 s (30 looks). Before, every one
/// went in the first.
#[tokio::test]
async fn the_directories_of_kazoo_layouts_stay_when_empty() {
    use zkr_recipes::locks::{InterProcessMutex, KazooLockDriver};
    let options = zkr_testing::ServerOptions::default().container_check_interval(Duration::from_millis(100));
    let server = zkr_testing::TestingServer::with_options(options).await.unwrap();
    let cs = server.connect_string();
    let zk = connect(&cs).await;
    let root = unique_root("kazoo-dirs");
    let lock = InterProcessMutex::with_driver(&zk, &format!("{root}/lock/nightly"), KazooLockDriver).unwrap();
    lock.acquire().await.unwrap().release().await.unwrap();
    let rw = InterProcessReadWriteLock::kazoo(&zk, &format!("{root}/rw/data"), "rust").unwrap();
    rw.write_lock().acquire().await.unwrap().release().await.unwrap();
    let party = Party::new(&zk, &format!("{root}/party/workers"), "rust").unwrap();
    party.join().await.unwrap();
    party.leave().await;
    let queue = zkr_recipes::kazoo::LockingQueue::new(&zk, &format!("{root}/queue/jobs")).unwrap();
    queue.put(b"job").await.unwrap();
    queue.get().await.unwrap().ack().await.unwrap();
    let barrier =
        zkr_recipes::barriers::DistributedBarrier::kazoo(&zk, &format!("{root}/barrier/freeze")).unwrap();
    barrier.set_barrier().await.unwrap();
    barrier.remove_barrier().await.unwrap();
    let mut double =
        zkr_recipes::barriers::DistributedDoubleBarrier::kazoo(&zk, &format!("{root}/double/b"), 1, "rust")
            .unwrap();
    double.enter().await.unwrap();
    double.leave().await.unwrap();
    let observer = zkr_integration_tests::raw(&cs).await;
    let mut gone = Vec::new();
    let dirs = ["queue/jobs/entries", "queue/jobs/taken", "queue/jobs", "barrier", "double/b"];
    for dir in ["lock/nightly", "rw/data", "party/workers"].into_iter().chain(dirs) {
        let at = format!("{root}/{dir}");
        let (stat, watcher) = observer.check_and_watch_stat(&at).await.unwrap();
        assert!(stat.is_some(), "{at} went already");
        gone.push(async move {
            tokio::time::timeout(Duration::from_secs(3), watcher.changed()).await.ok().map(|_| at)
        });
    }
    let gone: Vec<String> = futures::future::join_all(gone).await.into_iter().flatten().collect();
    assert!(gone.is_empty(), "the server deleted {gone:?}: they were containers");
    zk.close().await;
}

/// Issue 44, item 5: kazoo's `Lock(path, identifier)` has a plain counterpart that writes the
/// identifier, so kazoo's `contenders()` names the zkr holder (before, the kazoo-layout mutex
/// wrote no identifier and kazoo listed an empty holder).
#[tokio::test]
async fn a_kazoo_layout_lock_holds_its_identifier() {
    use zkr_recipes::locks::InterProcessMutex;
    let (zk, cs, path) = setup("kazoo-lock-id").await;
    let lock = InterProcessMutex::kazoo(&zk, &path, "rust-writer").unwrap();
    let guard = lock.acquire().await.unwrap();
    assert_eq!(kazoo_says(&["contenders", &cs, &path]).await, "CONTENDERS rust-writer");
    guard.release().await.unwrap();
}

/// Issue 44, item 1: two layouts at one path would both hold the lock, neither seeing the
/// other's contenders. A kazoo process holds `Lock(path)`: zkr's Curator-layout mutex, its
/// read-write lock and its latch refuse the path, naming kazoo's layout and the option that
/// shares it, and leave no node; zkr's kazoo-layout lock queues behind kazoo as it should.
/// Before, the Curator-layout mutex took the lock beside kazoo's holder.
#[tokio::test]
async fn a_curator_layout_recipe_refuses_a_path_that_kazoo_holds() {
    use zkr_recipes::locks::{InterProcessMutex, LockLayout};
    let (zk, cs, path) = setup("kazoo-conflict").await;
    let mut python = kazoo(&["hold", &cs, &path]);
    python.expect_line("HELD").await.unwrap();
    let mutex = InterProcessMutex::new(&zk, &path).unwrap();
    let refused = mutex.try_acquire().await.map(|held| held.is_some());
    assert!(
        matches!(refused, Err(LockError::LayoutConflict { found: LockLayout::Kazoo, .. })),
        "{refused:?}"
    );
    let message = refused.unwrap_err().to_string();
    assert!(message.contains("kazoo") && message.contains("InterProcessMutex::kazoo"), "{message}");
    // Waiters arriving at once share their listings; every one of them is refused.
    let waiters = (0..5).map(|_| {
        let mutex = mutex.clone();
        tokio::spawn(async move { mutex.acquire_timeout(timing().wait()).await.map(|held| held.is_some()) })
    });
    for refused in futures::future::join_all(waiters).await {
        let refused = refused.unwrap();
        assert!(
            matches!(refused, Err(LockError::LayoutConflict { found: LockLayout::Kazoo, .. })),
            "{refused:?}"
        );
    }
    let rw = InterProcessReadWriteLock::new(&zk, &path).unwrap();
    let refused = rw.read_lock().try_acquire().await.map(|held| held.is_some());
    assert!(
        matches!(refused, Err(LockError::LayoutConflict { found: LockLayout::Kazoo, .. })),
        "{refused:?}"
    );
    let observer = zkr_integration_tests::raw(&cs).await;
    let left = zkr_integration_tests::children(&observer, &path).await;
    assert!(left.iter().all(|c| LockLayout::of(c) == Some(LockLayout::Kazoo)), "only kazoo's node: {left:?}");
    let semaphore =
        zkr_recipes::locks::InterProcessSemaphoreV2::new(&zk, &path, zkr_recipes::locks::MaxLeases::Fixed(2))
            .unwrap();
    let refused = semaphore.try_acquire().await.map(|lease| lease.is_some());
    assert!(
        matches!(refused, Err(LockError::LayoutConflict { found: LockLayout::Kazoo, .. })),
        "{refused:?}"
    );
    let same_layout = InterProcessMutex::kazoo(&zk, &path, "rust").unwrap();
    assert!(same_layout.try_acquire().await.unwrap().is_none(), "kazoo holds it");
    python.send_line("release").await.unwrap();
    python.expect_line("RELEASED").await.unwrap();
    same_layout.acquire().await.unwrap().release().await.unwrap();
}

/// Issue 44, item 1, for elections: a kazoo `Election` leads at a path; zkr's `LeaderLatch`
/// (Curator's layout, `zkr elect`) stops and says why instead of leading beside it (before, it
/// led at once: two leaders).
#[tokio::test]
async fn a_leader_latch_refuses_a_path_where_a_kazoo_election_runs() {
    use zkr_recipes::leader::{LatchState, LeaderLatch};
    use zkr_recipes::locks::LockLayout;
    let (zk, cs, path) = setup("kazoo-latch-conflict").await;
    let mut python = kazoo(&["elect", &cs, &path, "python"]);
    python.expect_line("LEADING").await.unwrap();
    let latch = LeaderLatch::start(&zk, &path, "rust").await.unwrap();
    let led = tokio::time::timeout(timing().wait(), latch.await_leadership()).await.expect("an answer");
    assert!(matches!(led, Err(LockError::LayoutConflict { found: LockLayout::Kazoo, .. })), "{led:?}");
    assert_eq!(latch.state(), LatchState::Closed);
    python.send_line("resign").await.unwrap();
    python.expect_line("RESIGNED").await.unwrap();
}
