//! LeaderLatch against real ZooKeeper servers: one leader at a time, hand-over on close,
//! session expiry, a ZooKeeper leader kill, dropped handles, bad use, and a shared election
//! with Apache Curator's LeaderLatch.

use std::time::Duration;

use futures::StreamExt as _;
use zkr_integration_tests::{children, connect, eventually, timing, unique_root};
use zkr_recipes::leader::{LatchState, LeaderLatch, LeaderObserver, Participant};
use zkr_recipes::locks::LockError;
use zkr_testing::{expire_session, shared_server, TestingCluster};
use zookeeper_client::Client;

fn leaders(latches: &[LeaderLatch]) -> Vec<usize> {
    latches.iter().enumerate().filter(|(_, l)| l.has_leadership()).map(|(i, _)| i).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_leader_at_a_time_and_close_hands_over() {
    let server = shared_server().await.unwrap();
    let path = unique_root("latch");
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let mut latches = Vec::new();
    let mut clients = Vec::new();
    for i in 0..3 {
        let zk = connect(&server.connect_string()).await;
        let latch = LeaderLatch::start(&zk, &path, &format!("node-{i}")).await.unwrap();
        // Joined in this order: each is queued before the next starts.
        eventually("the latch to queue", || async { children(&observer, &path).await.len() == i + 1 }).await;
        latches.push(latch);
        clients.push(zk);
    }
    let first = latches[0].await_leadership().await.unwrap();
    assert_eq!(leaders(&latches), [0], "the first to join leads");
    let participants = latches[2].participants().await.unwrap();
    assert_eq!(
        participants.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
        ["node-0", "node-1", "node-2"]
    );
    assert!(participants[0].is_leader && !participants[1].is_leader);
    assert_eq!(latches[1].leader().await.unwrap().unwrap().id, "node-0");

    latches[0].close().await;
    assert_eq!(latches[0].state(), LatchState::Closed);
    assert_eq!(children(&observer, &path).await.len(), 2, "the leader's node is gone when close returns");
    let second = tokio::time::timeout(timing().wait(), latches[1].await_leadership()).await.unwrap().unwrap();
    assert!(second.fencing_token > first.fencing_token, "fencing tokens grow with every leader");
    assert_eq!(leaders(&latches), [1]);
    let closed = latches[0].await_leadership().await;
    assert!(
        matches!(&closed, Err(LockError::IllegalState { reason: "the latch was closed", .. })),
        "{closed:?}"
    );

    latches[1].close().await;
    latches[2].close().await;
    // The leader's node is deleted before close returns; a waiting latch's right after.
    eventually("close to leave no node behind", || async { children(&observer, &path).await.is_empty() })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_session_expiry_the_old_leader_rejoins_behind_the_new_one() {
    let server = shared_server().await.unwrap();
    let path = unique_root("latch-expiry");
    let (zk_a, zk_b) = (connect(&server.connect_string()).await, connect(&server.connect_string()).await);
    let a = LeaderLatch::start(&zk_a, &path, "a").await.unwrap();
    a.await_leadership().await.unwrap();
    let b = LeaderLatch::start(&zk_b, &path, "b").await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    eventually("both to be queued", || async { children(&observer, &path).await.len() == 2 }).await;

    let session = zk_a.session().await.unwrap();
    expire_session(session.client(), &server.connect_string()).await.unwrap();
    tokio::time::timeout(timing().wait(), b.await_leadership()).await.unwrap().unwrap();
    eventually("a to drop leadership and queue again behind b", || async {
        !a.has_leadership() && children(&observer, &path).await.len() == 2
    })
    .await;
    let participants = a.participants().await.unwrap();
    assert_eq!(participants.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(), ["b", "a"]);
    assert_eq!(leaders(&[a.clone(), b.clone()]), [1], "exactly one leader");

    // And a leads again when b leaves.
    b.close().await;
    tokio::time::timeout(timing().wait(), a.await_leadership()).await.unwrap().unwrap();
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zookeeper_leader_kill_leaves_exactly_one_latch_leader() {
    let cluster = TestingCluster::start(3).await.unwrap();
    let path = "/elections/primary";
    let mut latches = Vec::new();
    let mut clients = Vec::new();
    for i in 0..3 {
        let zk = connect(&cluster.connect_string()).await;
        let latch = LeaderLatch::start(&zk, path, &format!("p{i}")).await.unwrap();
        latches.push(latch);
        clients.push(zk);
    }
    eventually("a latch leader", || {
        let n = leaders(&latches).len();
        async move { n == 1 }
    })
    .await;
    let zk_leader = cluster.leader().await.expect("a ZooKeeper leader");
    cluster.kill(zk_leader).unwrap();
    // Leadership may move (a latch whose connection was suspended lets go), but settles on
    // exactly one, which the queue confirms.
    eventually("exactly one latch leader, the head of the queue", || async {
        let now = leaders(&latches);
        if now.len() != 1 {
            return false;
        }
        match latches[now[0]].leader().await {
            Ok(Some(head)) => head.id == format!("p{}", now[0]),
            _ => false,
        }
    })
    .await;
    for latch in &latches {
        latch.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_handle_leaves_the_election() {
    let server = shared_server().await.unwrap();
    let path = unique_root("latch-drop");
    let zk = connect(&server.connect_string()).await;
    let latch = LeaderLatch::start(&zk, &path, "x").await.unwrap();
    let copy = latch.clone();
    copy.await_leadership().await.unwrap();
    drop(latch);
    assert!(copy.has_leadership(), "a clone keeps the latch");
    drop(copy);
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    eventually("the node of a dropped latch to go", || async { children(&observer, &path).await.is_empty() })
        .await;
    assert!(LeaderLatch::start(&zk, "/", "x").await.is_err());
    assert!(LeaderLatch::start(&zk, "no-slash", "x").await.is_err());
}

/// zkr and Curator latches on one path take part in one election.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_zkr_latches_share_one_election() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("latch-curator");
    let zk = connect(&cs).await;
    let ours = LeaderLatch::start(&zk, &path, "zkr-1").await.unwrap();
    ours.await_leadership().await.unwrap();

    let tool = zkr_testing::peers::CuratorTool::locate().unwrap();
    let mut java = tool.spawn(&["bench-leader-failover", &cs, &path]).unwrap();
    java.set_line_timeout(timing().wait());
    let observer = Client::connect(&cs).await.unwrap();
    eventually("Curator's latch to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    let participants = ours.participants().await.unwrap();
    assert_eq!(participants.len(), 2);
    assert_eq!(participants[0].id, "zkr-1", "zkr leads; Curator waits behind it");

    ours.close().await;
    let line = java.expect_line("LEADER").await.unwrap();
    assert!(line.starts_with("LEADER "), "{line}");

    let second = LeaderLatch::start(&zk, &path, "zkr-2").await.unwrap();
    assert!(
        second.await_leadership_timeout(Duration::from_millis(500)).await.unwrap().is_none(),
        "Curator leads"
    );
    java.close_stdin();
    assert!(java.wait().await.unwrap().success());
    tokio::time::timeout(timing().wait(), second.await_leadership()).await.unwrap().unwrap();
    second.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_connection_manager_closes_the_latch() {
    let server = shared_server().await.unwrap();
    let path = unique_root("latch-zk-closed");
    let zk = connect(&server.connect_string()).await;
    let latch = LeaderLatch::start(&zk, &path, "x").await.unwrap();
    latch.await_leadership().await.unwrap();
    zk.close().await;
    let mut states = latch.state_changes();
    let closed = tokio::time::timeout(timing().wait(), async {
        use futures::StreamExt as _;
        while let Some(state) = states.next().await {
            if state == LatchState::Closed {
                return true;
            }
        }
        false
    })
    .await
    .unwrap();
    assert!(closed, "a latch whose manager closed ends Closed");
    assert!(matches!(latch.await_leadership().await, Err(LockError::IllegalState { .. })));
}

/// Sets a flag when dropped: shows that a leader's work future was cancelled.
struct DropFlag(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Selector work that runs until it is cancelled, and then sets `flag`.
fn forever(
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> impl Fn(zkr_recipes::leader::Leadership) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
       + Send
       + Sync
       + 'static {
    move |_term| {
        let flag = flag.clone();
        Box::pin(async move {
            let _armed = DropFlag(flag);
            std::future::pending::<()>().await;
        })
    }
}

/// Counts a running piece of work out when it is dropped.
struct Inside(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Inside {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_take_turns_running_the_work_one_at_a_time() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use zkr_recipes::leader::LeaderSelector;

    let server = shared_server().await.unwrap();
    let path = unique_root("selector");
    let inside = Arc::new(AtomicUsize::new(0));
    let overlaps = Arc::new(AtomicUsize::new(0));
    let terms: Arc<std::sync::Mutex<Vec<(usize, i64)>>> = Arc::default();
    let mut selectors = Vec::new();
    let mut clients = Vec::new();
    for i in 0..3 {
        let zk = connect(&server.connect_string()).await;
        let (inside, overlaps, terms) = (inside.clone(), overlaps.clone(), terms.clone());
        let selector = LeaderSelector::builder(&zk, &path, &format!("s{i}"), move |term| {
            let (inside, overlaps, terms) = (inside.clone(), overlaps.clone(), terms.clone());
            async move {
                if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                    overlaps.fetch_add(1, Ordering::SeqCst);
                }
                // Counted out when the work ends or is cancelled (a term lost to a Suspended
                // under load drops the work mid-sleep).
                let _inside = Inside(inside.clone());
                terms.lock().unwrap().push((i, term.fencing_token));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .auto_requeue(true)
        .start()
        .await
        .unwrap();
        selectors.push(selector);
        clients.push(zk);
    }
    eventually("every selector to lead at least twice", || {
        let t = terms.lock().unwrap().clone();
        async move { (0..3).all(|i| t.iter().filter(|(s, _)| *s == i).count() >= 2) }
    })
    .await;
    // Each selector's node is gone between its term and its requeue, so a listing can catch
    // two of them between (seen once on 3.6.4 under the compat run's load): wait for one that
    // shows at least two contenders.
    eventually("participants() to list at least two contenders", || async {
        selectors[0].participants().await.unwrap().len() >= 2
    })
    .await;
    // An onlooker follows a selector's election too (LeaderObserver: every election layout).
    let onlooker = LeaderObserver::start(&clients[0], &path).await.unwrap();
    eventually("the onlooker to see a selector lead", || async {
        onlooker.leader().is_some_and(|l| ["s0", "s1", "s2"].contains(&l.id.as_str()))
    })
    .await;
    assert_eq!(onlooker.layout(), Some(zkr_recipes::locks::LockLayout::CuratorMutex));
    for s in &selectors {
        s.close().await;
    }
    assert_eq!(overlaps.load(Ordering::SeqCst), 0, "two leaders ran the work at once");
    let tokens: Vec<i64> = terms.lock().unwrap().iter().map(|(_, t)| *t).collect();
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "fencing tokens grow term by term: {tokens:?}");
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    eventually("no node left", || async { children(&observer, &path).await.is_empty() }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn losing_leadership_cancels_the_work_and_close_hands_over() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use zkr_recipes::leader::LeaderSelector;

    let server = shared_server().await.unwrap();
    let path = unique_root("selector-cancel");
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let (zk_a, zk_b) = (connect(&server.connect_string()).await, connect(&server.connect_string()).await);
    let cancelled_a = Arc::new(AtomicBool::new(false));
    let a = LeaderSelector::builder(&zk_a, &path, "a", forever(cancelled_a.clone()))
        .auto_requeue(true)
        .start()
        .await
        .unwrap();
    let mut leading_a = a.leadership();
    tokio::time::timeout(timing().wait(), leading_a.wait_for(Option::is_some)).await.unwrap().unwrap();
    let cancelled_b = Arc::new(AtomicBool::new(false));
    let b = LeaderSelector::builder(&zk_b, &path, "b", forever(cancelled_b.clone())).start().await.unwrap();
    eventually("b to queue", || async { children(&observer, &path).await.len() == 2 }).await;

    // a's session expires: its work is cancelled, b leads, a queues again behind b.
    let session = zk_a.session().await.unwrap();
    expire_session(session.client(), &server.connect_string()).await.unwrap();
    let mut leading_b = b.leadership();
    tokio::time::timeout(timing().wait(), leading_b.wait_for(Option::is_some)).await.unwrap().unwrap();
    eventually("a's work to be cancelled", || {
        let c = cancelled_a.load(Ordering::SeqCst);
        async move { c }
    })
    .await;
    let mut ended_a = a.terms_ended();
    tokio::time::timeout(timing().wait(), ended_a.wait_for(|n| *n >= 1)).await.unwrap().unwrap();
    eventually("a to queue again", || async { children(&observer, &path).await.len() == 2 }).await;
    assert!(!a.has_leadership());

    // b closes: its work is cancelled and a leads again.
    b.close().await;
    assert!(cancelled_b.load(Ordering::SeqCst));
    tokio::time::timeout(timing().wait(), leading_a.wait_for(Option::is_some)).await.unwrap().unwrap();
    a.close().await;
    eventually("no node left", || async { children(&observer, &path).await.is_empty() }).await;
}

/// zkr and Curator selectors on one path take turns: whoever queued first leads, the other
/// waits until the leader's work returns or is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curator_and_zkr_selectors_share_one_election() {
    use zkr_recipes::leader::LeaderSelector;

    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("selector-curator");
    let observer = Client::connect(&cs).await.unwrap();
    let tool = zkr_testing::peers::CuratorTool::locate().unwrap();
    let mut java = tool.spawn(&["selector-hold", &cs, &path]).unwrap();
    java.expect_line("LEADER").await.unwrap();

    let zk = connect(&cs).await;
    let ours = LeaderSelector::builder(&zk, &path, "zkr", |_term| std::future::pending::<()>())
        .start()
        .await
        .unwrap();
    eventually("zkr's selector to queue behind Curator's", || async {
        children(&observer, &path).await.len() == 2
    })
    .await;
    let mut leading = ours.leadership();
    assert!(
        tokio::time::timeout(Duration::from_millis(500), leading.wait_for(Option::is_some)).await.is_err(),
        "Curator leads, so zkr must wait"
    );
    let participants = ours.participants().await.unwrap();
    assert_eq!(participants.len(), 2, "{participants:?}");

    java.send_line("release").await.unwrap();
    java.expect_line("RELEASED").await.unwrap();
    assert!(java.wait().await.unwrap().success());
    tokio::time::timeout(timing().wait(), leading.wait_for(Option::is_some)).await.unwrap().unwrap();

    // And the other way round: Curator waits while zkr leads, and leads once zkr closes.
    let mut java = tool.spawn(&["selector-hold", &cs, &path]).unwrap();
    eventually("Curator's selector to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    java.set_line_timeout(Duration::from_millis(500));
    assert!(java.expect_line("LEADER").await.is_err(), "zkr leads, so Curator must wait");
    java.set_line_timeout(timing().wait());
    ours.close().await;
    java.expect_line("LEADER").await.unwrap();
    java.close_stdin();
    java.expect_line("RELEASED").await.unwrap();
    assert!(java.wait().await.unwrap().success());
    eventually("no node left", || async { children(&observer, &path).await.is_empty() }).await;
}

/// Two selectors of one client (one session): `leader()` names the same participant to both;
/// interrupting the leader hands over to the other and cancels the work; without auto-requeue
/// the interrupted one stays out until `requeue()`, which is refused while it is queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_hands_leadership_over_and_requeue_joins_again() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use zkr_recipes::leader::LeaderSelector;

    let server = shared_server().await.unwrap();
    let path = unique_root("selector-interrupt");
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let zk = connect(&server.connect_string()).await;
    let cancelled_a = Arc::new(AtomicBool::new(false));
    let a = LeaderSelector::builder(&zk, &path, "a", forever(cancelled_a.clone())).start().await.unwrap();
    let mut leading_a = a.leadership();
    tokio::time::timeout(timing().wait(), leading_a.wait_for(Option::is_some)).await.unwrap().unwrap();
    let b = LeaderSelector::builder(&zk, &path, "b", forever(Arc::new(AtomicBool::new(false))))
        .start()
        .await
        .unwrap();
    eventually("b to queue", || async { children(&observer, &path).await.len() == 2 }).await;
    assert_eq!(a.leader().await.unwrap().map(|p| p.id), Some("a".to_owned()));
    assert_eq!(b.leader().await.unwrap().map(|p| p.id), Some("a".to_owned()));
    assert!(!b.interrupt_leadership(), "b does not lead");
    assert!(!a.requeue(), "a leads: already queued");

    assert!(a.interrupt_leadership());
    let mut leading_b = b.leadership();
    tokio::time::timeout(timing().wait(), leading_b.wait_for(Option::is_some)).await.unwrap().unwrap();
    assert!(cancelled_a.load(Ordering::SeqCst), "a's work was cancelled");
    eventually("a's node gone", || async { children(&observer, &path).await.len() == 1 }).await;
    assert_eq!(b.leader().await.unwrap().map(|p| p.id), Some("b".to_owned()));
    assert!(!a.has_leadership());

    assert!(a.requeue(), "a was out of the election");
    eventually("a queued behind b", || async { children(&observer, &path).await.len() == 2 }).await;
    assert!(!a.requeue(), "queued already");
    b.close().await;
    tokio::time::timeout(timing().wait(), leading_a.wait_for(Option::is_some)).await.unwrap().unwrap();
    a.close().await;
    assert!(!a.requeue(), "closed");
    eventually("no node left", || async { children(&observer, &path).await.is_empty() }).await;
    zk.close().await;
}

/// The leader's id (or `None`) of what a `LeaderObserver` stream yields next, within the wait.
async fn next_leader(
    changes: &mut (impl futures::Stream<Item = Option<Participant>> + Unpin),
) -> Option<String> {
    let next = tokio::time::timeout(timing().wait(), changes.next()).await.expect("a change in time");
    next.expect("the stream goes on").map(|p| p.id)
}

/// etcd's `Proclaim` and `Observe` on Curator's latch layout (issue 49 item 2). Two latches on
/// one client and an onlooker on another: the leader publishes a value without giving
/// leadership up; the onlooker's stream, `participants()` and a Curator onlooker
/// (`getLeader().getId()`) all see it; a follower cannot proclaim; when the leader closes, the
/// stream names the next one with its own id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_proclaims_a_value_that_onlookers_and_curator_see() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("latch-proclaim");
    let (zk, onlooker_zk) = (connect(&cs).await, connect(&cs).await);
    let observer = LeaderObserver::start(&onlooker_zk, &path).await.unwrap();
    let mut changes = observer.changes();
    assert_eq!(next_leader(&mut changes).await, None, "nobody yet");
    let a = LeaderLatch::start(&zk, &path, "a").await.unwrap();
    a.await_leadership().await.unwrap();
    assert_eq!(next_leader(&mut changes).await.as_deref(), Some("a"));
    let b = LeaderLatch::start(&zk, &path, "b").await.unwrap();

    a.proclaim("10.0.0.7:8080 epoch=1").await.unwrap();
    assert_eq!(next_leader(&mut changes).await.as_deref(), Some("10.0.0.7:8080 epoch=1"));
    assert!(a.has_leadership(), "leadership kept");
    let refused = b.proclaim("b's value").await;
    assert!(matches!(refused, Err(LockError::IllegalState { .. })), "a follower: {refused:?}");
    assert!(matches!(a.proclaim("").await, Err(LockError::InvalidArgument(_))));
    eventually("b queued", || async { observer.participants().len() == 2 }).await;
    let ids: Vec<_> = a.participants().await.unwrap().into_iter().map(|p| p.id).collect();
    assert_eq!(ids, ["10.0.0.7:8080 epoch=1", "b"]);
    assert_eq!(observer.leader().map(|p| p.id).as_deref(), Some("10.0.0.7:8080 epoch=1"));

    let tool = zkr_testing::peers::CuratorTool::locate().unwrap();
    let mut java = tool.spawn(&["latch-leader", &cs, &path]).unwrap();
    java.set_line_timeout(timing().wait());
    assert_eq!(
        java.expect_line("LEADER").await.unwrap(),
        "LEADER 10.0.0.7:8080 epoch=1",
        "Curator's getLeader"
    );
    assert!(java.wait().await.unwrap().success());

    a.close().await;
    assert_eq!(next_leader(&mut changes).await.as_deref(), Some("b"));
    b.close().await;
    assert_eq!(next_leader(&mut changes).await, None);
}

/// A proclaim after the leader's session ended writes nothing: not on the ended session, and
/// not on the node the latch queues again with on the next session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proclaim_after_the_term_ended_writes_nothing() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("latch-proclaim-expiry");
    let zk = connect(&cs).await;
    let a = LeaderLatch::start(&zk, &path, "a").await.unwrap();
    a.await_leadership().await.unwrap();
    let session = zk.session().await.unwrap();
    expire_session(session.client(), &cs).await.unwrap();
    let refused = a.proclaim("late").await;
    assert!(refused.is_err(), "the term ended: {refused:?}");
    // The manager gave the session up: no leadership is reported on it, even before the latch's
    // task has moved on (before, `has_leadership` and `await_leadership` said the old term).
    assert!(!a.has_leadership(), "a term whose session ended is reported as leadership");
    tokio::time::timeout(timing().wait(), a.await_leadership()).await.unwrap().unwrap();
    let ids: Vec<_> = a.participants().await.unwrap().into_iter().map(|p| p.id).collect();
    assert_eq!(ids, ["a"], "the next term starts with the id; nothing late was written");
    a.close().await;
}

/// Issue 47 item 3: a latch joins with Curator's three requests (create, list, watch the node
/// ahead), and a missing election path costs its parents and one create more, not two (the
/// latch sent its listing and the parent's `Stat` with its create, four requests; a protected
/// create refused for a missing parent sent the same create again before making the parents).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latch_joins_with_three_requests_and_a_missing_path_costs_its_parents() {
    use std::sync::atomic::{AtomicU64, Ordering};
    // A server of its own: the packet count must be ours alone.
    let server = zkr_testing::TestingServer::start().await.unwrap();
    let (first, second) = (connect(&server.connect_string()).await, connect(&server.connect_string()).await);
    // Each `mntr` is a packet the server counts as received: the count takes them out.
    let asked = AtomicU64::new(0);
    let mntr = |key| {
        asked.fetch_add(1, Ordering::Relaxed);
        zkr_integration_tests::mntr_counter(&server, key)
    };
    let requests_since =
        |since: (u64, u64), now: u64| now - since.0 - (asked.load(Ordering::Relaxed) - since.1);
    let start = (mntr("zk_packets_received").await, asked.load(Ordering::Relaxed));
    // The first joins at a missing path: create (NoNode), its two parents, create, list, and
    // a watch on its own node as the leader.
    let leader = LeaderLatch::start(&first, "/election/a", "first").await.unwrap();
    leader.await_leadership_timeout(timing().wait()).await.unwrap().expect("the first leads");
    eventually("the leader's watch", || async { mntr("zk_watch_count").await == 1 }).await;
    let first_join = requests_since(start, mntr("zk_packets_received").await);
    // The second: create, list, a watch on the leader's node.
    let start = (mntr("zk_packets_received").await, asked.load(Ordering::Relaxed));
    let follower = LeaderLatch::start(&second, "/election/a", "second").await.unwrap();
    eventually("the follower's watch", || async { mntr("zk_watch_count").await == 2 }).await;
    let second_join = requests_since(start, mntr("zk_packets_received").await);
    // A ping per session at most besides.
    assert!((6..=7).contains(&first_join), "{first_join} requests for the first join");
    assert!((3..=4).contains(&second_join), "{second_join} requests for the second join");
    assert!(!follower.has_leadership());
    drop((leader, follower));
}

/// A term's writes apply only while it lasts, checked by ZooKeeper on the node of that term:
/// two latches of one client (one session, so no session check could tell them apart), the
/// first deposed by an operator deleting its node; its old term's write is refused though the
/// latch leads again later, and the new leader's write lands. A selector's work writes with its
/// term the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_leaders_term_writes_nothing_and_the_new_leaders_does() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = unique_root("latch-fenced");
    let data = format!("{path}-data");
    let observer = Client::connect(&cs).await.unwrap();
    observer
        .create(
            &data,
            b"0",
            &zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await
        .unwrap();
    let zk = connect(&cs).await;
    let a = LeaderLatch::start(&zk, &path, "a").await.unwrap();
    let old = a.await_leadership().await.unwrap();
    old.set_data(&data, b"1", Some(0)).await.unwrap();
    let b = LeaderLatch::start(&zk, &path, "b").await.unwrap();
    eventually("b to queue", || async { children(&observer, &path).await.len() == 2 }).await;

    // Deposed: b leads; a queues again behind it.
    observer.delete(&old.node, None).await.unwrap();
    let new = tokio::time::timeout(timing().wait(), b.await_leadership()).await.unwrap().unwrap();
    let refused = old.set_data(&data, b"stale", None).await;
    assert!(matches!(refused, Err(LockError::Lost { .. })), "{refused:?}");
    new.set_data(&data, b"2", None).await.unwrap();
    // a leads again (b closes): its old term stays over.
    b.close().await;
    let again = tokio::time::timeout(timing().wait(), a.await_leadership()).await.unwrap().unwrap();
    assert_ne!(again, old);
    let refused = old.commit(old.transaction().unwrap().set_data(&data, b"stale", None)).await;
    assert!(matches!(refused, Err(LockError::Lost { .. })), "{refused:?}");
    let (value, _) = observer.get_data(&data).await.unwrap();
    assert_eq!(value, b"2", "no write of the deposed term landed");
    again.create(&format!("{data}-child"), b"", zookeeper_client::CreateMode::Persistent).await.unwrap();
    again.delete(&format!("{data}-child"), None).await.unwrap();
    a.close().await;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let d = data.clone();
    let selector =
        zkr_recipes::leader::LeaderSelector::builder(&zk, &format!("{path}-s"), "s", move |term| {
            let (tx, d) = (tx.clone(), d.clone());
            async move {
                let _ = tx.send(term.set_data(&d, b"3", None).await.map(|stat| stat.version));
            }
        })
        .start()
        .await
        .unwrap();
    assert_eq!(rx.recv().await.unwrap().unwrap(), 3, "the selector's work wrote with its term");
    selector.close().await;
    observer.delete(&data, None).await.unwrap();
}
