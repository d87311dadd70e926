//! The config checker: three subscribers (`ConfigWatcher`s, each on its own session) follow one
//! value while a writer raises it every few milliseconds and the checker's faults run on a
//! 3-server ensemble: the ZooKeeper leader killed and restarted, a follower serving a
//! subscriber killed and restarted, a subscriber's server paused (`SIGSTOP`) longer than the
//! session timeout, and a subscriber's session expired. No subscriber ever sees the value go
//! back, and once the faults stop every subscriber converges to the last write.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zkr_connection::ZkClient;
use zkr_integration_tests::{faults, timing, unique_root};
use zkr_recipes::config::{ConfigPublisher, ConfigWatcher, Json};

const SESSION: Duration = Duration::from_secs(3);

async fn client(cs: &str) -> ZkClient {
    ZkClient::builder(cs).session_timeout(SESSION).connect().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_subscriber_converges_to_the_last_write_after_faults() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let cluster = faults::partitionable_cluster().await;
    let cs = cluster.connect_string();
    let path = format!("{}/value", unique_root("checker-config"));
    let writer_zk = client(&cs).await;
    let publisher = ConfigPublisher::<u64>::new(&writer_zk, Json);
    publisher.set(&path, &0).await.unwrap();

    let mut subscribers = Vec::new();
    let mut went_back = Vec::new();
    for _ in 0..3 {
        let zk = client(&cs).await;
        let watcher = ConfigWatcher::<u64>::builder(&zk, &path, Json).start().await.unwrap();
        // Every published snapshot: the value never goes back. What it saw is kept for the
        // failure message: (value, mzxid, stale) of the latest snapshots, None for no value.
        let mut snapshots = watcher.snapshots();
        let back = Arc::new(std::sync::Mutex::new(None::<String>));
        let flag = back.clone();
        tokio::spawn(async move {
            let (mut last, mut seen) = (0, std::collections::VecDeque::new());
            while snapshots.changed().await.is_ok() {
                let snapshot = snapshots.borrow_and_update().clone();
                let held = snapshot.get("").map(|v| (*v.value, v.mzxid));
                seen.push_back((held, snapshot.is_stale()));
                if seen.len() > 12 {
                    seen.pop_front();
                }
                if let Some((value, _)) = held {
                    if value < last {
                        flag.lock().unwrap().get_or_insert_with(|| format!("{value} after {last}: {seen:?}"));
                    }
                    last = value;
                }
            }
        });
        went_back.push(back);
        subscribers.push((zk, watcher));
    }

    // The writer raises the value until told to stop; a failed write is tried again with the
    // same value. Every attempt is kept (value, session, ms from the start to its send and to
    // its answer, the answer) for the failure message: a value that goes back shows when its
    // writes were sent and answered.
    let stop = Arc::new(AtomicBool::new(false));
    let started = std::time::Instant::now();
    let attempts = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let writer = {
        let (stop, path, attempts) = (stop.clone(), path.clone(), attempts.clone());
        let writer_zk = writer_zk.clone();
        tokio::spawn(async move {
            let mut next = 1u64;
            while !stop.load(Ordering::SeqCst) {
                let session = writer_zk.try_session().map(|s| format!("{:#x}", s.id()));
                let sent = started.elapsed().as_millis();
                let result = publisher.set(&path, &next).await;
                let answered = started.elapsed().as_millis();
                let answer =
                    result.as_ref().map(|stat| format!("mzxid {:#x}", stat.mzxid)).map_err(|e| e.to_string());
                attempts
                    .lock()
                    .unwrap()
                    .push(format!("{next} on {session:?}: {sent}..{answered} ms {answer:?}"));
                if result.is_ok() {
                    next += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            (publisher, next)
        })
    };

    let victim = faults::leader(&cluster).await.unwrap();
    faults::kill_and_restart(&cluster, victim, Duration::from_secs(1)).await.unwrap();
    let sessions: Vec<i64> =
        subscribers.iter().filter_map(|(zk, _)| zk.try_session().map(|s| s.id())).collect();
    let victim = faults::follower_serving(&cluster, &sessions).await.unwrap();
    faults::kill_and_restart(&cluster, victim, Duration::from_secs(1)).await.unwrap();
    let session = subscribers[0].0.session().await.unwrap().id();
    let server = faults::server_serving(&cluster, session).await.unwrap();
    faults::pause_for(&cluster, server, SESSION + Duration::from_secs(1)).await.unwrap();
    let session = subscribers[1].0.session().await.unwrap().id();
    zkr_testing::expire_session_id(session, SESSION, &cs).await.unwrap();
    let session = subscribers[2].0.session().await.unwrap().id();
    let server = faults::server_serving(&cluster, session).await.unwrap();
    faults::isolate_for(&cluster, server, SESSION + Duration::from_secs(1)).await.unwrap();
    faults::leader_kill_during_pause(&cluster).await.unwrap();

    stop.store(true, Ordering::SeqCst);
    let (publisher, next) = writer.await.unwrap();
    let last = next + 1000;
    publisher.set(&path, &last).await.unwrap();
    let converged = std::time::Instant::now();
    for (i, (_, watcher)) in subscribers.iter().enumerate() {
        let mut snapshots = watcher.snapshots();
        let reached = tokio::time::timeout(
            timing().wait(),
            snapshots.wait_for(|s| s.get("").map(|v| *v.value) == Some(last)),
        )
        .await;
        assert!(
            reached.is_ok(),
            "subscriber {i} holds {:?}, not the last write {last}; its manager: {:?}, session {:?}",
            watcher.get().map(|v| *v.value),
            subscribers[i].0.state(),
            subscribers[i].0.try_session().map(|s| (s.generation(), format!("{:#x}", s.id()))),
        );
    }
    for (i, back) in went_back.iter().enumerate() {
        let back = back.lock().unwrap().clone();
        let Some(back) = back else { continue };
        // The writer's attempts at the value that came back, and the last ones.
        let stale = back.split_whitespace().next().unwrap_or_default().to_owned();
        let attempts = attempts.lock().unwrap();
        let of_stale: Vec<_> = attempts.iter().filter(|a| a.starts_with(&format!("{stale} on"))).collect();
        let last: Vec<_> = attempts.iter().rev().take(5).collect();
        panic!(
            "subscriber {i} saw the value go back: {back}\nthe writer's attempts at {stale}: {of_stale:#?}\nits last: {last:#?}"
        );
    }
    eprintln!(
        "[checker config] 3 subscribers, 4 faults, {} writes, all converged within {} ms of the last write",
        last - 1000,
        converged.elapsed().as_millis()
    );
}
