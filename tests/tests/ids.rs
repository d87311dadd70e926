//! The ID generators against real ZooKeeper servers: uniqueness and order across sessions and
//! processes, epochs, nothing left behind, corrupt state, clocks behind records, watermarks
//! without ZooKeeper, session expiry, server restarts and killed processes.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zkr_integration_tests::id_worker::{check_runs, progress, IdWorker};
use zkr_integration_tests::{children, connect, connect_with_session, eventually, timing, unique_root};
use zkr_recipes::id::{
    IdError, IdGenerator, SegmentIdGenerator, SequentialIdGenerator, SnowflakeIdGenerator, SnowflakeLayout,
    StepPolicy,
};
use zkr_testing::{expire_session, expire_session_id, shared_server, FaultProxy, TestingServer};
use zookeeper_client::{Client, CreateMode};

fn assert_unique(ids: &[u64]) {
    let set: HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(set.len(), ids.len(), "{} duplicate IDs", ids.len() - set.len());
}

fn assert_increasing(ids: &[u64], who: &str) {
    for pair in ids.windows(2) {
        assert!(pair[0] < pair[1], "{who}: {} then {}", pair[0], pair[1]);
    }
}

/// Draws `n` IDs, mixing single calls and batches.
async fn draw(generator: &dyn IdGenerator, n: usize) -> Vec<u64> {
    let mut ids = Vec::with_capacity(n);
    while ids.len() < n {
        if ids.len() % 3 == 0 {
            ids.push(generator.next().await.expect("next"));
        } else {
            ids.extend(generator.next_batch(7.min(n - ids.len())).await.expect("next_batch"));
        }
    }
    ids
}

/// Draws from every generator at once, each in its own task; returns each one's IDs.
async fn draw_concurrently(generators: Vec<Arc<dyn IdGenerator>>, n: usize) -> Vec<Vec<u64>> {
    let tasks: Vec<_> =
        generators.into_iter().map(|g| tokio::spawn(async move { draw(g.as_ref(), n).await })).collect();
    let mut all = Vec::new();
    for task in tasks {
        all.push(task.await.expect("task"));
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_ids_are_unique_globally_ordered_and_leave_no_nodes() {
    let server = shared_server().await.unwrap();
    let root = unique_root("seq-unique");
    let mut generators: Vec<Arc<dyn IdGenerator>> = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..3 {
        let zk = connect(&server.connect_string()).await;
        // A small epoch, so that the run crosses several epochs.
        generators.push(Arc::new(SequentialIdGenerator::with_epoch_capacity(&zk, &root, 150).unwrap()));
        clients.push(zk);
    }
    let runs = draw_concurrently(generators.clone(), 200).await;
    let all = check_runs(&runs);
    assert_eq!(all.len(), 600);

    // Globally ordered: whoever asks later gets a larger ID.
    let mut last = *all.iter().max().unwrap();
    for round in 0..30 {
        let id = generators[round % 3].next().await.unwrap();
        assert!(id > last, "{id} after {last}");
        last = id;
    }

    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let epochs = children(&observer, &root).await;
    assert!(epochs.len() >= 3, "600 IDs at 150 per epoch span several epochs: {epochs:?}");
    for epoch in &epochs {
        let node = format!("{root}/{epoch}");
        eventually("ID nodes to be deleted", || async { children(&observer, &node).await.is_empty() }).await;
    }
}

/// Deletes `node` and every child it has (the ID nodes linger for a moment).
async fn delete_tree(observer: &Client, node: &str) {
    for child in children(observer, node).await {
        let _ = observer.delete(&format!("{node}/{child}"), None).await;
    }
    observer.delete(node, None).await.expect("delete the epoch node");
}

/// Issue 43 item 4: the epoch's sequence counter (its node's cversion) going back below IDs
/// already handed out, as a server that lost or rolled back the epoch node's history would
/// have it. Simulated here, deterministically, by deleting the epoch node and creating it again
/// (its counter restarts at 0), and by deleting it for good (the generator creates it afresh).
/// Neither the generator that handed out the IDs nor a new one may hand out an ID at or below
/// one handed out before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_ids_never_go_back_when_the_epoch_counter_does() {
    let server = shared_server().await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    for recreate in [true, false] {
        let root = unique_root("seq-went-back");
        let zk = connect(&server.connect_string()).await;
        let first = SequentialIdGenerator::new(&zk, &root).unwrap();
        let before = draw(&first, 40).await;
        assert_increasing(&before, "before");
        let high = *before.iter().max().unwrap();
        let epochs: Vec<String> =
            children(&observer, &root).await.into_iter().filter(|c| c.starts_with("epoch-")).collect();
        assert_eq!(epochs, ["epoch-0000000000"]);
        let epoch = format!("{root}/{}", epochs[0]);
        let (_, stat) = observer.get_data(&epoch).await.unwrap();
        assert!(i64::from(stat.cversion) > i64::from(zkr_recipes::id::sequential::decompose(high).1));
        delete_tree(&observer, &epoch).await;
        if recreate {
            observer
                .create(&epoch, &[], &CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()))
                .await
                .unwrap();
            let (_, stat) = observer.get_data(&epoch).await.unwrap();
            assert_eq!(stat.cversion, 0, "the recreated epoch's counter starts again");
        }
        let again = draw(&first, 40).await;
        let other_zk = connect(&server.connect_string()).await;
        let second = SequentialIdGenerator::new(&other_zk, &root).unwrap();
        let newcomer = draw(&second, 40).await;
        let mut all = before.clone();
        all.extend(&again);
        all.extend(&newcomer);
        assert_unique(&all);
        assert_increasing(&[&before[..], &again[..]].concat(), "the first generator");
        assert!(
            newcomer.iter().all(|id| *id > high),
            "recreated {recreate}: a new generator handed out {:?}, at or below {high}",
            newcomer.iter().find(|id| **id <= high)
        );
        assert!(again.iter().all(|id| *id < newcomer[0]), "drawn later, larger");
        first.next().await.unwrap();
        drop((first, second));
        zk.close().await;
        other_zk.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_sequential_calls_leave_no_nodes_and_bad_input_is_refused() {
    let server = shared_server().await.unwrap();
    let root = unique_root("seq-cancel");
    let zk = connect(&server.connect_string()).await;
    let ids = SequentialIdGenerator::new(&zk, &root).unwrap();
    let mut got = Vec::new();
    for i in 0..40u64 {
        // Dropped at every stage: before sending, in flight, after the reply.
        if let Ok(batch) = tokio::time::timeout(Duration::from_micros(50 * i), ids.next_batch(3)).await {
            got.extend(batch.unwrap());
        }
    }
    let after = ids.next().await.unwrap();
    assert!(got.iter().all(|g| *g < after), "IDs keep increasing after dropped calls");
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    for epoch in children(&observer, &root).await {
        let node = format!("{root}/{epoch}");
        eventually("dropped calls' ID nodes to be deleted", || async {
            children(&observer, &node).await.is_empty()
        })
        .await;
    }
    assert!(SequentialIdGenerator::new(&zk, "no-slash").is_err());
    assert!(SequentialIdGenerator::new(&zk, "/").is_err());
    assert!(SequentialIdGenerator::with_epoch_capacity(&zk, &root, 0).is_err());
    assert!(matches!(ids.next_batch(1_000_000).await, Err(IdError::InvalidArgument(_))));
    assert_eq!(ids.next_batch(0).await.unwrap(), Vec::<u64>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_generators_never_share_an_id() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/counter", unique_root("segment"));
    let mut generators: Vec<Arc<dyn IdGenerator>> = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..4 {
        let zk = connect(&server.connect_string()).await;
        // A tiny odd step: many compare-and-set races between the four.
        let generator = SegmentIdGenerator::builder(&zk, &path).step(StepPolicy::Fixed(37)).build().unwrap();
        generators.push(Arc::new(generator));
        clients.push(zk);
    }
    let runs = draw_concurrently(generators, 3000).await;
    let all = check_runs(&runs);
    assert_eq!(all.len(), 12_000);
    assert!(*all.iter().min().unwrap() >= 1, "the first ID is 1 by default");

    // The counter is Curator's DistributedAtomicLong format, past every ID handed out.
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let (data, _) = observer.get_data(&path).await.unwrap();
    let counter = i64::from_be_bytes(data.as_slice().try_into().expect("8 bytes"));
    // It holds the last ID claimed (DistributedAtomicLong's meaning).
    assert!(counter as u64 >= *all.iter().max().unwrap());
    // Nearly dense: at most the unused rest of each generator's two buffered ranges is lost.
    assert!(counter as u64 - all.len() as u64 <= 4 * 2 * 37, "counter {counter} after {} IDs", all.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_refuses_a_corrupt_counter_and_bad_settings() {
    let server = shared_server().await.unwrap();
    let path = format!("{}/counter", unique_root("segment-corrupt"));
    let zk = connect(&server.connect_string()).await;
    zk.create(&path, b"not a number", CreateMode::Persistent).await.unwrap();
    let ids = SegmentIdGenerator::new(&zk, &path).unwrap();
    assert!(matches!(ids.next().await, Err(IdError::CorruptState { .. })));
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let (data, _) = observer.get_data(&path).await.unwrap();
    assert_eq!(data, b"not a number", "a corrupt counter is left as it was");

    // A good value after the corrupt one: the generator goes on after it.
    observer.set_data(&path, &500i64.to_be_bytes(), None).await.unwrap();
    assert_eq!(ids.next().await.unwrap(), 501);

    assert!(SegmentIdGenerator::builder(&zk, &path).step(StepPolicy::Fixed(0)).build().is_err());
    assert!(SegmentIdGenerator::builder(&zk, &path).first_id(u64::MAX).build().is_err());
    assert!(SegmentIdGenerator::builder(&zk, &path).first_id(0).build().is_err());
    assert!(SegmentIdGenerator::new(&zk, "bad").is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_refuses_a_path_laid_out_for_another_generator() {
    let server = shared_server().await.unwrap();
    let root = unique_root("sequential-foreign");
    let zk = connect(&server.connect_string()).await;
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let counter = format!("{root}/segment");
    SegmentIdGenerator::new(&zk, &counter).unwrap().next().await.unwrap();
    let snowflake = format!("{root}/snowflake");
    let worker = SnowflakeIdGenerator::builder(&zk, &snowflake).start().await.unwrap();
    for path in [&counter, &snowflake] {
        let before = children(&observer, path).await;
        let sequential = SequentialIdGenerator::new(&zk, path).unwrap();
        let refused = sequential.next().await;
        assert!(matches!(refused, Err(IdError::CorruptState { .. })), "{path}: {refused:?}");
        assert_eq!(children(&observer, path).await, before, "{path}: epochs were created");
    }
    worker.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_workers_get_distinct_ids_and_an_identity_gets_its_own_back() {
    let server = shared_server().await.unwrap();
    let root = unique_root("snowflake");
    let (zk_a, zk_b) = (connect(&server.connect_string()).await, connect(&server.connect_string()).await);
    let a = SnowflakeIdGenerator::builder(&zk_a, &root).identity("a").start().await.unwrap();
    let b = SnowflakeIdGenerator::builder(&zk_b, &root).identity("b").start().await.unwrap();
    assert_ne!(a.worker_id(), b.worker_id());
    let runs = draw_concurrently(vec![Arc::new(a.clone()), Arc::new(b.clone())], 20_000).await;
    let all = check_runs(&runs);
    let layout = a.layout();
    for id in &runs[0] {
        assert_eq!(layout.decompose(*id).worker_id, a.worker_id());
        assert!(layout.decompose(*id).timestamp_ms <= a.watermark_ms());
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let stamp = layout.decompose(*all.iter().max().unwrap()).timestamp_ms;
    assert!(stamp.abs_diff(now) < 5_000, "IDs carry the time: {stamp} vs {now}");

    let (worker_a, last_a) = (a.worker_id(), *runs[0].last().unwrap());
    a.close().await;
    assert!(matches!(a.next().await, Err(IdError::Closed)));
    let again = SnowflakeIdGenerator::builder(&zk_a, &root).identity("a").start().await.unwrap();
    assert_eq!(again.worker_id(), worker_a, "a graceful restart takes its worker ID back");
    assert!(again.next().await.unwrap() > last_a);
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    assert_eq!(children(&observer, &format!("{root}/leases")).await.len(), 2);
    again.close().await;
    b.close().await;
    assert!(children(&observer, &format!("{root}/leases")).await.is_empty(), "close deletes the leases");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_refuses_to_start_behind_its_record_and_leaves_no_lease() {
    let server = shared_server().await.unwrap();
    let root = unique_root("snowflake-behind");
    let zk = connect(&server.connect_string()).await;
    // Two worker IDs, both recorded an hour ahead of our clock.
    let layout = SnowflakeLayout::new(UNIX_EPOCH, 41, 1, 12).unwrap();
    let ahead = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64 + 3_600_000;
    for worker in 0..2 {
        let record = format!(r#"{{"identity":"other","until_ms":{ahead}}}"#);
        zk.create(&format!("{root}/workers/{worker:05}"), record.as_bytes(), CreateMode::Persistent)
            .await
            .unwrap();
    }
    let started = SnowflakeIdGenerator::builder(&zk, &root).layout(layout).identity("late").start().await;
    match started {
        Err(IdError::ClockBehindRecord { by, .. }) => assert!(by > Duration::from_secs(3500)),
        other => panic!("expected ClockBehindRecord, got {other:?}"),
    }
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    eventually("the refused lease to be deleted", || async {
        children(&observer, &format!("{root}/leases")).await.is_empty()
    })
    .await;
    // With every worker ID leased, there is none to take.
    let one = SnowflakeLayout::new(UNIX_EPOCH, 41, 1, 12).unwrap();
    let root2 = unique_root("snowflake-full");
    let x = SnowflakeIdGenerator::builder(&zk, &root2).layout(one).identity("x").start().await.unwrap();
    let y = SnowflakeIdGenerator::builder(&zk, &root2).layout(one).identity("y").start().await.unwrap();
    let z = SnowflakeIdGenerator::builder(&zk, &root2).layout(one).identity("z").start().await;
    assert!(matches!(z, Err(IdError::NoWorkerId { count: 2, .. })), "{z:?}");
    x.close().await;
    y.close().await;
    assert!(matches!(
        SnowflakeIdGenerator::builder(&zk, &root2).identity("bad/name").start().await,
        Err(IdError::InvalidArgument(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_goes_on_after_its_session_expires() {
    let server = shared_server().await.unwrap();
    let root = unique_root("snowflake-expiry");
    let zk = connect_with_session(server.connect_string(), 3).await;
    let ids = SnowflakeIdGenerator::builder(&zk, &root)
        .identity("expiring")
        .window(Duration::from_millis(800))
        .start()
        .await
        .unwrap();
    let mut all = draw(&ids, 1000).await;
    let session = zk.session().await.unwrap();
    expire_session(session.client(), &server.connect_string()).await.unwrap();
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    // IDs keep coming (within the old watermark, then under the new lease).
    let deadline = tokio::time::Instant::now() + timing().wait();
    loop {
        match ids.next_batch(10).await {
            Ok(more) => all.extend(more),
            Err(IdError::WatermarkStalled { .. }) => {}
            Err(e) => panic!("unexpected {e}"),
        }
        if zk.generation() > session.generation()
            && children(&observer, &format!("{root}/leases")).await.len() == 1
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no new lease after the session expired");
    }
    all.extend(draw(&ids, 1000).await);
    assert_increasing(&all, "across the expiry");
    ids.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_stops_at_its_watermark_without_zookeeper_and_resumes() {
    let server = shared_server().await.unwrap();
    let root = unique_root("snowflake-watermark");
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = connect_with_session(proxy.connect_string(), 10).await;
    let ids = SnowflakeIdGenerator::builder(&zk, &root)
        .window(Duration::from_millis(400))
        .stall_timeout(Duration::from_millis(300))
        .start()
        .await
        .unwrap();
    let mut all = draw(&ids, 100).await;
    proxy.blackhole();
    let stalled = loop {
        match ids.next_batch(10).await {
            Ok(more) => all.extend(more),
            Err(e) => break e,
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(matches!(stalled, IdError::WatermarkStalled { .. }), "{stalled:?}");
    let watermark = ids.watermark_ms();
    assert!(all.iter().all(|id| ids.layout().decompose(*id).timestamp_ms <= watermark));
    proxy.heal();
    let deadline = tokio::time::Instant::now() + timing().wait();
    let resumed = loop {
        match ids.next().await {
            Ok(id) => break id,
            Err(IdError::WatermarkStalled { .. }) => {
                assert!(tokio::time::Instant::now() < deadline, "never resumed")
            }
            Err(e) => panic!("unexpected {e}"),
        }
    };
    assert!(resumed > *all.last().unwrap());
    ids.close().await;
}

/// A watermark write whose reply is lost (applied, the connection cut before the reply came)
/// keeps the lease: the retry meets its own write, learns it from the record, and the
/// generator goes on with the same worker ID and lease node. It took the lease for lost
/// before, and then waited out its own live lease node for the whole reclaim wait (60 s
/// here) before it took the ID back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_keeps_its_lease_when_a_watermark_write_reply_is_lost() {
    let server = shared_server().await.unwrap();
    let root = unique_root("snowflake-lost-reply");
    let proxy = FaultProxy::start(&server.connect_string()).await.unwrap();
    let zk = connect_with_session(proxy.connect_string(), 10).await;
    let ids = SnowflakeIdGenerator::builder(&zk, &root)
        .identity("lost-reply")
        .window(Duration::from_millis(400))
        .reclaim_wait(Duration::from_secs(60))
        .start()
        .await
        .unwrap();
    let mut all = draw(&ids, 100).await;
    let observer = Client::connect(&server.connect_string()).await.unwrap();
    let (record, lease) = (format!("{root}/workers/00000"), format!("{root}/leases/00000"));
    let lease_before = observer.check_stat(&lease).await.unwrap().expect("the lease node");
    let version = |v| {
        let (observer, record) = (&observer, &record);
        async move { observer.check_stat(record).await.unwrap().is_some_and(|st| st.version > v) }
    };
    let held_at = observer.check_stat(&record).await.unwrap().unwrap().version;
    proxy.hold_replies();
    eventually("a watermark write to be applied with its reply held", || version(held_at)).await;
    proxy.cut();
    proxy.heal();
    let applied = observer.check_stat(&record).await.unwrap().unwrap().version;
    eventually("the generator to record its watermark again", || version(applied)).await;
    let lease_after = observer.check_stat(&lease).await.unwrap().expect("the lease node");
    assert_eq!(lease_after.czxid, lease_before.czxid, "the lease node was made again");
    assert_eq!(ids.worker_id(), 0);
    all.extend(draw(&ids, 100).await);
    assert_increasing(&all, "across the lost reply");
    ids.close().await;
}

fn worker_binary() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_BIN_EXE_zkr-id-worker"))
}

/// Three processes draw at once, until told to stop; the server restarts, one process's
/// session expires, another is killed with SIGKILL and replaced by a new process of the same
/// identity. Every ID any of them printed is unique, and each process's IDs increase.
async fn processes_never_share_an_id(kind: &str) {
    let server = TestingServer::start().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/{kind}", unique_root("processes"));
    let mut workers = Vec::new();
    for i in 0..3 {
        workers.push(IdWorker::spawn(worker_binary(), &cs, kind, &path, 0, &format!("worker-{i}")).await);
    }
    progress(&workers.iter().collect::<Vec<_>>(), 200, "start").await;
    server.restart().await.unwrap();
    progress(&workers.iter().collect::<Vec<_>>(), 200, "after the server restart").await;
    expire_session_id(workers[0].session(), Duration::from_secs(4), &cs).await.unwrap();
    progress(&workers.iter().collect::<Vec<_>>(), 200, "after the session expiry").await;
    let killed = workers.remove(1).kill().await;
    let replacement = IdWorker::spawn(worker_binary(), &cs, kind, &path, 0, "worker-1").await;
    let mut all_workers: Vec<&IdWorker> = workers.iter().collect();
    all_workers.push(&replacement);
    progress(&all_workers, 200, "after the kill and restart of a worker").await;
    let mut runs = vec![killed];
    for worker in workers {
        runs.push(worker.finish().await);
    }
    runs.push(replacement.finish().await);
    let all = check_runs(&runs);
    assert!(all.len() >= 3 * 600 + 200, "{} IDs", all.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_ids_are_unique_across_processes_and_faults() {
    processes_never_share_an_id("sequential").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_ids_are_unique_across_processes_and_faults() {
    processes_never_share_an_id("segment").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snowflake_ids_are_unique_across_processes_and_faults() {
    processes_never_share_an_id("snowflake").await;
}

/// A Java process allocating with Curator's `DistributedAtomicLong.increment()` and zkr segment
/// generators share one counter node without handing out the same ID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segment_generators_share_a_counter_with_curators_distributed_atomic_long() {
    let server = shared_server().await.unwrap();
    let cs = server.connect_string();
    let path = format!("{}/counter", unique_root("segment-curator"));
    let tool = zkr_testing::peers::CuratorTool::locate().unwrap();
    let mut java = tool.spawn(&["atomic-ids", &cs, &path, "400"]).unwrap();
    let zk = connect(&cs).await;
    let ids = SegmentIdGenerator::builder(&zk, &path).step(StepPolicy::Fixed(10)).build().unwrap();
    let ours = tokio::spawn(async move {
        let mut got = Vec::new();
        for _ in 0..400 {
            got.push(ids.next().await.unwrap());
        }
        got
    });
    let mut all = Vec::new();
    loop {
        let line = java.next_line().await.unwrap().expect("CuratorTool output");
        if line == "DONE" {
            break;
        }
        all.push(line.strip_prefix("ID ").expect("ID line").parse::<u64>().unwrap());
    }
    assert!(java.wait().await.unwrap().success());
    assert_eq!(all.len(), 400);
    all.extend(ours.await.unwrap());
    assert_unique(&all);
}
