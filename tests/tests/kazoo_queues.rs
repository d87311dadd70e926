//! kazoo's last layouts: `LockingQueue` (`zkr_recipes::kazoo::LockingQueue`), `Barrier`
//! (`DistributedBarrier::kazoo`) and `DoubleBarrier` (`DistributedDoubleBarrier::kazoo`), each
//! shared with real kazoo processes (Debian's python3-kazoo, 2.8) both ways.

use std::time::Duration;

use zkr_connection::ZkClient;
use zkr_integration_tests::{connect, timing, unique_root};
use zkr_recipes::barriers::{DistributedBarrier, DistributedDoubleBarrier};
use zkr_recipes::kazoo::LockingQueue;
use zkr_recipes::queues::QueueError;
use zkr_testing::peers::{KazooTool, PeerProcess};
use zkr_testing::shared_server;

async fn setup(name: &str) -> (ZkClient, String, String) {
    let cs = shared_server().await.unwrap().connect_string();
    (connect(&cs).await, cs, unique_root(name))
}

fn kazoo(args: &[&str]) -> PeerProcess {
    KazooTool::locate().expect("kazoo (python3-kazoo)").spawn(args).expect("spawn kazoo_tool")
}

/// Every line a kazoo command prints until it exits.
async fn kazoo_lines(args: &[&str]) -> Vec<String> {
    let mut python = kazoo(args);
    let mut lines = Vec::new();
    while let Some(line) = python.next_line().await.unwrap() {
        lines.push(line);
    }
    assert!(python.wait().await.unwrap().success(), "kazoo_tool {args:?} failed: {lines:?}");
    lines
}

async fn children(zk: &ZkClient, path: &str) -> Vec<String> {
    let mut names = zk.client().await.unwrap().list_children(path).await.unwrap();
    names.sort();
    names
}

/// The value of a zkr item, as text.
fn text(item: &zkr_recipes::queues::QueueItem<Vec<u8>>) -> String {
    String::from_utf8(item.values()[0].clone()).unwrap()
}

#[tokio::test]
async fn kazoo_and_zkr_share_a_locking_queue_both_ways() {
    let (zk, cs, root) = setup("kazoo-locking-queue").await;
    let path = format!("{root}/jobs");
    let queue = LockingQueue::new(&zk, &path).unwrap();
    let wait = timing().wait();

    // kazoo puts, zkr takes in kazoo's order (priority, then put order) and acks.
    let put = kazoo_lines(&["locking-put", &cs, &path, "100", "a", "b"]).await;
    assert_eq!(put, ["RESULT count=2"]);
    kazoo_lines(&["locking-put", &cs, &path, "5", "urgent"]).await;
    let mut got = Vec::new();
    for _ in 0..3 {
        let item = queue.get_timeout(wait).await.unwrap().expect("an entry kazoo put");
        got.push(text(&item));
        item.ack().await.unwrap();
    }
    assert_eq!(got, ["urgent", "a", "b"]);
    assert_eq!(queue.len().await.unwrap(), 0);
    assert!(children(&zk, &format!("{path}/taken")).await.is_empty(), "an ack left its lock");

    // zkr puts (one transaction, then one more), kazoo gets and consumes them in order.
    queue.put_all(&[b"x", b"y"], 50).await.unwrap();
    queue.put(b"z").await.unwrap();
    let consumed = kazoo_lines(&["locking-get", &cs, &path, "3", "10000"]).await;
    assert_eq!(consumed, ["ITEM x", "ITEM y", "ITEM z", "RESULT count=3"]);
    assert!(queue.is_empty().await.unwrap());

    // A lock kazoo holds excludes zkr, two users of one client included; released, zkr gets it.
    queue.put(b"held").await.unwrap();
    let mut python = kazoo(&["locking-hold", &cs, &path, "10000"]);
    assert_eq!(python.expect_line("ITEM").await.unwrap(), "ITEM held");
    let other_user = LockingQueue::new(&zk, &path).unwrap();
    assert!(queue.get_timeout(Duration::from_millis(300)).await.unwrap().is_none(), "zkr took kazoo's entry");
    assert!(other_user.get_timeout(Duration::from_millis(300)).await.unwrap().is_none());
    python.send_line("release").await.unwrap();
    assert_eq!(python.expect_line("RELEASED").await.unwrap(), "RELEASED True");
    let item = queue.get_timeout(wait).await.unwrap().expect("the entry kazoo released");
    assert_eq!(text(&item), "held");
    // ... and a lock zkr holds excludes kazoo; released by zkr, kazoo gets it.
    let none = kazoo_lines(&["locking-get", &cs, &path, "1", "300"]).await;
    assert_eq!(none, ["NONE", "RESULT count=0"], "kazoo took zkr's entry");
    item.release().await.unwrap();
    let after = kazoo_lines(&["locking-get", &cs, &path, "1", "10000"]).await;
    assert_eq!(after, ["ITEM held", "RESULT count=1"]);

    // Two users of one client take two entries, never one twice.
    queue.put_all(&[b"one", b"two"], 100).await.unwrap();
    let first = queue.get_timeout(wait).await.unwrap().unwrap();
    let second = other_user.get_timeout(wait).await.unwrap().unwrap();
    assert_eq!((text(&first), text(&second)), ("one".to_owned(), "two".to_owned()));
    first.ack().await.unwrap();
    second.ack().await.unwrap();

    // A priority kazoo refuses is refused here too, and nothing is written.
    let refused = queue.put_with_priority(b"never", 1000).await;
    assert!(matches!(refused, Err(QueueError::InvalidArgument(_))), "{refused:?}");
    assert!(matches!(queue.put_all(&[b"never"], 1000).await, Err(QueueError::InvalidArgument(_))));
    assert!(queue.is_empty().await.unwrap());
    assert!(children(&zk, &format!("{path}/taken")).await.is_empty());
}

#[tokio::test]
async fn kazoo_and_zkr_share_a_barrier_both_ways() {
    let (zk, cs, root) = setup("kazoo-barrier").await;
    let path = format!("{root}/deep/freeze");
    let barrier = DistributedBarrier::kazoo(&zk, &path).unwrap();
    let short = Duration::from_millis(300);

    // kazoo sets it, zkr waits; kazoo removes it, zkr goes on.
    assert_eq!(kazoo_lines(&["barrier", &cs, &path, "create", "0"]).await, ["CREATED"]);
    assert!(barrier.wait_on_barrier_timeout(short).await.unwrap().is_none(), "passed a set barrier");
    let waiting = tokio::spawn({
        let barrier = barrier.clone();
        async move { barrier.wait_on_barrier_timeout(timing().wait()).await }
    });
    assert_eq!(kazoo_lines(&["barrier", &cs, &path, "remove", "0"]).await, ["REMOVED True"]);
    assert_eq!(waiting.await.unwrap().unwrap(), Some(()), "zkr still waits on a removed barrier");

    // zkr sets it, kazoo waits; zkr removes it. (Its missing parents are persistent, as
    // kazoo's: kazoo_recipes.rs, `the_directories_of_kazoo_layouts_stay_when_empty`.)
    barrier.set_barrier().await.unwrap();
    assert_eq!(kazoo_lines(&["barrier", &cs, &path, "wait", "300"]).await, ["NOT_CLEARED"]);
    let mut python = kazoo(&["barrier", &cs, &path, "wait", "30000"]);
    barrier.remove_barrier().await.unwrap();
    assert_eq!(python.next_line().await.unwrap().as_deref(), Some("CLEARED"));
    assert_eq!(kazoo_lines(&["barrier", &cs, &path, "remove", "0"]).await, ["REMOVED False"]);
}

#[tokio::test]
async fn kazoo_and_zkr_members_pass_one_double_barrier() {
    let (zk, cs, root) = setup("kazoo-double-barrier").await;
    let wait = timing().wait();
    // Two kazoo members and one zkr member; then one kazoo member and two zkr members that are
    // two users of one client (one session).
    for (round, pythons, rusts) in [(0, 2, 1), (1, 1, 2)] {
        let path = format!("{root}/round-{round}");
        let quota = (pythons + rusts).to_string();
        let mut python: Vec<PeerProcess> = (0..pythons)
            .map(|i| kazoo(&["double-barrier", &cs, &path, &quota, &format!("python-{i}")]))
            .collect();
        let mut rust: Vec<DistributedDoubleBarrier> = (0..rusts)
            .map(|i| {
                DistributedDoubleBarrier::kazoo(&zk, &path, pythons + rusts, &format!("rust-{i}")).unwrap()
            })
            .collect();
        let entered = futures::future::join_all(rust.iter_mut().map(|m| m.enter_timeout(wait))).await;
        assert!(
            entered.into_iter().all(|e| e.unwrap().is_some()),
            "round {round}: a zkr member did not pass"
        );
        for p in &mut python {
            assert_eq!(p.next_line().await.unwrap().as_deref(), Some("ENTERED"), "round {round}");
        }
        // zkr's member nodes are kazoo's: a UUID's hex digits holding the identifier.
        for member in &rust {
            let name = member.member_path().rsplit('/').next().unwrap();
            assert!(name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit()), "{name}");
            let (data, _) = zk.client().await.unwrap().get_data(member.member_path()).await.unwrap();
            assert!(String::from_utf8(data).unwrap().starts_with("rust-"));
        }
        assert_eq!(children(&zk, &path).await.len(), pythons + rusts + 1, "round {round}: members and ready");

        for p in &mut python {
            p.send_line("leave").await.unwrap();
        }
        let left = futures::future::join_all(rust.iter_mut().map(|m| m.leave_timeout(wait))).await;
        assert!(left.into_iter().all(|l| l.unwrap().is_some()), "round {round}: a zkr member did not leave");
        for p in &mut python {
            assert_eq!(p.next_line().await.unwrap().as_deref(), Some("LEFT"), "round {round}");
        }
        assert!(children(&zk, &path).await.is_empty(), "round {round}: left behind");
    }
}
