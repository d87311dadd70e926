//! Investigation of issue 43 item 4 (not part of the suite): can a ZooKeeper 3.9.5 server
//! hand out a sequential suffix at or below one it handed out before?
//!
//! The suffix is the parent's stored create count `C` (`StatPersisted.cversion`, read through
//! `PrepRequestProcessor.getRecordForPath`, which takes the live `n.stat`, not
//! `DataNode.copyStat`); a client's `Stat.cversion` is `2C - numChildren`, so every server's
//! `C` is `(cversion + numChildren) / 2`. This test drives the paths that were suspected of
//! rolling `C` back, one at a time, with the generator's traffic shape (multi-ops of
//! `EphemeralSequential` creates that also delete the previous multi's nodes) and a
//! `snapCount` of 10 (a fuzzy snapshot every 5-10 transactions on every server):
//!
//! 1. churn, then each follower `SIGKILL`ed and restarted (snapshot + log replay of multis
//!    with deletes);
//! 2. the leader `SIGKILL`ed mid-churn and restarted (a fuzzy snapshot taken while writes go
//!    on, replayed after a crash);
//! 3. a follower `SIGSTOP`ped while the leader is `SIGKILL`ed mid-churn and restarted
//!    (`faults::leader_kill_during_pause`, the checker's overlapping fault);
//! 4. the leader cut off from the quorum for 5 s (= `syncLimit * tickTime`) mid-churn while
//!    its own client keeps writing to it, then healed;
//! 5. the writer's session expired (its ephemeral children deleted by `closeSession`), then
//!    every server restarted in turn.
//!
//! After each step every server is asked (after a `sync` through that server, so a lagging
//! follower catches up first) for its `C`, and a probe `create` gets the next suffix. A step
//! back is any server's `C` at or below the largest suffix handed out so far, or a probe suffix
//! at or below it. Run by hand:
//! `cargo test -p zkr-integration-tests --test cversion_repro -j 1 -- --ignored --nocapture`.
//!
//! Result against 3.9.5 (one full run, 60 s, ~200 snapshots per server): no step back. After
//! every step the three servers agree on `C`, `C` is one above the largest suffix handed out,
//! and the probe gets exactly `C`. The paths above do not roll the counter back by themselves.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use zkr_integration_tests::faults;
use zkr_integration_tests::unique_root;
use zkr_testing::{ServerOptions, TestingCluster};
use zookeeper_client::{Acls, Client, CreateMode, MultiWriteResult};

const PARENT_SESSION: Duration = Duration::from_secs(4);

async fn connect(cs: &str, timeout: Duration) -> Option<Client> {
    let connect = Client::connector().with_session_timeout(timeout).connect(cs);
    tokio::time::timeout(Duration::from_secs(3), connect).await.ok()?.ok()
}

fn suffix(path: &str) -> i64 {
    path[path.len() - 10..].parse().expect("a sequential suffix")
}

/// The largest suffix any create returned, and the step backs one writer saw (a writer's
/// multi-ops go one at a time, so its suffixes must increase; two writers' replies may cross).
#[derive(Default)]
struct Handed {
    max: i64,
    step_backs: Vec<(i64, i64)>,
    count: usize,
}

impl Handed {
    /// `s` handed out after `after` (the same writer's previous suffix, or the largest of all
    /// when nothing else was in flight).
    fn saw(&mut self, s: i64, after: Option<i64>) {
        if let Some(a) = after {
            if s <= a {
                self.step_backs.push((a, s));
            }
        }
        self.max = self.max.max(s);
        self.count += 1;
    }
}

/// One writer's churn: multi-ops of 5 sequential creates, each also deleting the previous
/// multi's nodes, until `stop`. Errors (connection loss, expiry) are ignored and the writer
/// goes on (a new session when its own has expired).
async fn churn(cs: String, parent: String, handed: Arc<Mutex<Handed>>, stop: Arc<AtomicBool>) {
    let mut client = None;
    let mut previous: Vec<String> = Vec::new();
    let mut last: Option<i64> = None;
    let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    while !stop.load(Ordering::SeqCst) {
        if client.is_none() {
            client = connect(&cs, PARENT_SESSION).await;
            previous.clear();
            if client.is_none() {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        }
        let c = client.as_ref().unwrap();
        let mut writer = c.new_multi_writer();
        for _ in 0..5 {
            writer.add_create(&format!("{parent}/id-"), &[], &options).unwrap();
        }
        for p in &previous {
            writer.add_delete(p, None).unwrap();
        }
        let commit = tokio::time::timeout(Duration::from_secs(5), writer.commit()).await;
        match commit {
            Ok(Ok(results)) => {
                previous.clear();
                let mut h = handed.lock().unwrap();
                for r in results {
                    if let MultiWriteResult::Create { path, .. } = r {
                        let s = suffix(&path);
                        h.saw(s, last);
                        last = Some(s);
                        previous.push(path);
                    }
                }
            }
            Ok(Err(e)) => {
                let text = e.to_string();
                previous.clear();
                if text.contains("expired") || text.contains("closed") {
                    client = None;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(_) => {
                previous.clear();
                client = None;
            }
        }
    }
}

/// Each server's own `C` of `parent` (after a sync through it), `None` when it does not answer.
async fn views(cluster: &TestingCluster, parent: &str) -> Vec<Option<(i32, i32, i64, i64)>> {
    let mut out = Vec::new();
    for i in 0..cluster.size() {
        let cs = cluster.server_connect_string(i).unwrap();
        let view = async {
            let client = connect(&cs, Duration::from_secs(2)).await?;
            tokio::time::timeout(Duration::from_secs(2), client.sync(parent)).await.ok()?.ok()?;
            let stat = tokio::time::timeout(Duration::from_secs(2), client.check_stat(parent))
                .await
                .ok()?
                .ok()??;
            Some((
                stat.cversion,
                stat.num_children,
                stat.pzxid,
                i64::from((stat.cversion + stat.num_children) / 2),
            ))
        };
        out.push(view.await);
    }
    out
}

/// The next suffix the current leader hands out: one probe create (deleted at once).
async fn probe(cs: &str, parent: &str) -> Option<i64> {
    let client = connect(cs, Duration::from_secs(4)).await?;
    let options = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    let (_, sequence) = tokio::time::timeout(
        Duration::from_secs(4),
        client.create(&format!("{parent}/probe-"), &[], &options),
    )
    .await
    .ok()?
    .ok()?;
    let s = sequence.into_i64();
    let _ = client.delete(&format!("{parent}/probe-{s:010}"), None).await;
    Some(s)
}

struct Run {
    cluster: TestingCluster,
    parent: String,
    handed: Arc<Mutex<Handed>>,
    findings: Vec<String>,
}

impl Run {
    async fn report(&mut self, step: &str) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let views = views(&self.cluster, &self.parent).await;
        // Every server's C must be above every suffix handed out before the views were read.
        let max = self.handed.lock().unwrap().max;
        let probe = probe(&self.cluster.connect_string(), &self.parent).await;
        let (count, backs) = {
            let mut h = self.handed.lock().unwrap();
            if let Some(p) = probe {
                h.saw(p, Some(max));
            }
            (h.count, h.step_backs.clone())
        };
        let leader = self.cluster.leader().await;
        eprintln!("[cversion] {step}: leader {leader:?}, {count} suffixes handed out, largest {max}, probe {probe:?}");
        for (i, v) in views.iter().enumerate() {
            match v {
                Some((cv, n, pzxid, c)) => {
                    // The probe was deleted, so C (the next suffix) must be above every suffix.
                    let flag = if *c <= max { "  <-- C at or below a suffix already handed out" } else { "" };
                    eprintln!(
                        "[cversion]   server {i}: cversion {cv} numChildren {n} pzxid {pzxid:#x} -> C {c}{flag}"
                    );
                    if *c <= max {
                        self.findings.push(format!("{step}: server {i} has C {c} <= {max}"));
                    }
                }
                None => eprintln!("[cversion]   server {i}: no answer"),
            }
        }
        if !backs.is_empty() {
            eprintln!("[cversion]   suffix step backs so far (largest before, then): {backs:?}");
            self.findings.push(format!("{step}: suffix step backs {backs:?}"));
        }
    }

    /// Churns with two writers (through the whole ensemble) while `fault` runs, then for `after`.
    async fn under_churn<F: std::future::Future<Output = ()>>(&self, fault: F, after: Duration) {
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                tokio::spawn(churn(
                    self.cluster.connect_string(),
                    self.parent.clone(),
                    self.handed.clone(),
                    stop.clone(),
                ))
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(700)).await;
        fault.await;
        tokio::time::sleep(after).await;
        stop.store(true, Ordering::SeqCst);
        for w in writers {
            let _ = w.await;
        }
    }
}

fn snapshot_files(cluster: &TestingCluster) -> String {
    let mut out = String::new();
    for id in 1..=cluster.size() {
        let dir = cluster.root_dir().join(format!("server-{id}"));
        let mut snaps = 0;
        let mut logs = 0;
        let mut stack = vec![dir];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().is_dir() {
                    stack.push(e.path());
                } else if name.starts_with("snapshot.") {
                    snaps += 1;
                } else if name.starts_with("log.") {
                    logs += 1;
                }
            }
        }
        out.push_str(&format!(" server-{id}: {snaps} snapshots, {logs} txn logs;"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "an investigation (issue 43 item 4), run by hand"]
async fn sequential_suffix_never_goes_back_across_restarts_and_faults() {
    let started = std::time::Instant::now();
    let cluster = TestingCluster::with_options(
        3,
        ServerOptions::default().partitionable(true).config("snapCount", "10"),
    )
    .await
    .expect("a 3-server ensemble");
    let parent = format!("{}/parent", unique_root("cversion-repro"));
    {
        let client = connect(&cluster.connect_string(), PARENT_SESSION).await.expect("a session");
        let options = CreateMode::Persistent.with_acls(Acls::anyone_all());
        let root = parent.rsplit_once('/').unwrap().0;
        let mut path = String::new();
        for part in root.split('/').filter(|p| !p.is_empty()) {
            path.push('/');
            path.push_str(part);
            let _ = client.create(&path, &[], &options).await;
        }
        client.create(&parent, &[], &options).await.expect("the parent");
    }
    let mut run = Run { cluster, parent, handed: Arc::default(), findings: Vec::new() };

    // 1. Churn, then each follower killed and restarted (replay of multis with deletes).
    run.under_churn(async {}, Duration::from_secs(3)).await;
    run.report("1a churn").await;
    let leader = faults::leader(&run.cluster).await.unwrap();
    for f in (0..3).filter(|i| *i != leader) {
        faults::kill_and_restart(&run.cluster, f, Duration::from_millis(300)).await.unwrap();
    }
    run.report("1b followers killed and restarted").await;

    // 2. The leader killed mid-churn and restarted.
    let cluster = &run.cluster;
    run.under_churn(
        async {
            let leader = faults::leader(cluster).await.unwrap();
            faults::kill_and_restart(cluster, leader, Duration::from_millis(500)).await.unwrap();
        },
        Duration::from_secs(2),
    )
    .await;
    run.report("2 leader killed mid-churn").await;

    // 3. A follower paused while the leader is killed mid-churn and restarted.
    let cluster = &run.cluster;
    run.under_churn(
        async {
            faults::leader_kill_during_pause(cluster).await.unwrap();
        },
        Duration::from_secs(2),
    )
    .await;
    run.report("3 leader killed while a follower is paused").await;

    // 4. The leader cut off for syncLimit * tickTime while its own client writes to it.
    let cluster = &run.cluster;
    let leader = faults::leader(cluster).await.unwrap();
    let own = cluster.server_connect_string(leader).unwrap();
    let (parent, handed) = (run.parent.clone(), run.handed.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let on_leader = tokio::spawn(churn(own, parent, handed, stop.clone()));
    run.under_churn(
        async {
            faults::isolate_for(cluster, leader, Duration::from_secs(5)).await.unwrap();
        },
        Duration::from_secs(3),
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    let _ = on_leader.await;
    run.report("4 leader cut off 5 s and healed").await;

    // 5. A session with children expired, then every server restarted in turn.
    {
        let client = connect(&run.cluster.connect_string(), PARENT_SESSION).await.expect("a session");
        let options = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        for _ in 0..10 {
            if let Ok((_, s)) = client.create(&format!("{}/id-", run.parent), &[], &options).await {
                let mut h = run.handed.lock().unwrap();
                let max = h.max;
                h.saw(s.into_i64(), Some(max));
            }
        }
        let id = client.session_id().0;
        zkr_testing::expire_session_id(id, PARENT_SESSION, &run.cluster.connect_string()).await.unwrap();
    }
    for i in 0..3 {
        faults::kill_and_restart(&run.cluster, i, Duration::from_millis(300)).await.unwrap();
    }
    run.report("5 session expired, every server restarted").await;

    eprintln!("[cversion] files:{}", snapshot_files(&run.cluster));
    eprintln!("[cversion] {} s in all", started.elapsed().as_secs());
    assert!(run.findings.is_empty(), "the counter went back: {:#?}", run.findings);
}
