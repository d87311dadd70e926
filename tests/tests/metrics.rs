//! zkr's figures (the `metrics` feature) after known workloads against a real ZooKeeper: lock
//! holds, waits, releases and a forced loss; session state, timeout, expirations and rebuilds
//! per named client; requests by operation and result; a cache's size with and without path
//! labels; a leader; a config change; the stall nudge. The recorder is global, so this file is
//! its own process and one test.

use std::collections::HashMap;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use zkr_connection::ConnectionState;
use zkr_integration_tests::{connect, timing, unique_root};
use zkr_recipes::cache::{CacheMode, CuratorCache};
use zkr_recipes::config::{ConfigWatcher, Utf8};
use zkr_recipes::leader::LeaderLatch;
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::{expire_session, shared_server};
use zookeeper_client::CreateMode;

/// One series as the Prometheus exporter renders it: name, labels and value.
struct Series {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// The exporter's page, read as a Prometheus server would; counters and histogram counts as
/// increments since the last page read (`Scrapes::take`), gauges as they are.
struct Figures {
    series: Vec<Series>,
    /// `# TYPE` of every metric.
    kinds: HashMap<String, String>,
    /// Metrics with a `# HELP` line.
    described: Vec<String>,
}

/// Reads the exporter's page, remembering the last one's counters.
struct Scrapes {
    handle: PrometheusHandle,
    last: HashMap<String, f64>,
}

impl Scrapes {
    fn take(&mut self) -> Figures {
        let page = self.handle.render();
        if std::env::var("ZKR_SHOW_PAGE").is_ok() {
            eprintln!("{page}");
        }
        let mut figures = Figures { series: Vec::new(), kinds: HashMap::new(), described: Vec::new() };
        for line in page.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["#", "TYPE", name, kind] => drop(figures.kinds.insert(name.to_string(), kind.to_string())),
                ["#", "HELP", name, ..] => figures.described.push(name.to_string()),
                _ if line.is_empty() || line.starts_with('#') => {}
                _ => figures.series.push(self.series(line)),
            }
        }
        figures
    }

    /// One sample line; cumulative ones (counters, histogram counts) as increments.
    fn series(&mut self, line: &str) -> Series {
        let (key, value) = line.rsplit_once(' ').expect("a sample");
        let mut value: f64 = value.parse().expect("a number");
        let (name, labels) = match key.split_once('{') {
            Some((name, labels)) => (name, labels.trim_end_matches('}')),
            None => (key, ""),
        };
        let labels = labels
            .split("\",")
            .filter(|l| !l.is_empty())
            .map(|l| {
                let (k, v) = l.split_once('=').expect("a label");
                (k.to_owned(), v.trim_matches('"').to_owned())
            })
            .collect();
        if name.ends_with("_total") || name.ends_with("_count") {
            let before = self.last.insert(key.to_owned(), value).unwrap_or(0.0);
            value -= before;
        }
        Series { name: name.to_owned(), labels, value }
    }
}

impl Scrapes {
    /// The page, without moving the counters' starting point.
    fn peek(&mut self) -> Figures {
        let last = self.last.clone();
        let figures = self.take();
        self.last = last;
        figures
    }

    /// Reads the page until `check` holds, failing after [`timing`]'s wait.
    async fn until(&mut self, what: &str, check: impl Fn(&Figures) -> bool) {
        let deadline = tokio::time::Instant::now() + timing().wait();
        while !check(&self.take()) {
            assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

impl Figures {
    /// The value of `name` with exactly `labels`.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.series.iter().find_map(|f| {
            let same = f.labels.len() == labels.len()
                && labels.iter().all(|(k, v)| f.labels.iter().any(|(a, b)| a == k && b == v));
            (f.name == name && same).then_some(f.value)
        })
    }

    fn kind(&self, name: &str) -> &str {
        self.kinds.get(name).map(String::as_str).unwrap_or("missing")
    }

    /// Asserts that `name` is of `kind`, if it has any series yet.
    fn is(&self, name: &str, kind: &str) {
        assert!([kind, "missing"].contains(&self.kind(name)), "{name} is a {}", self.kind(name));
    }

    /// A counter's increments since the last page, summed over its label sets.
    fn counter_total(&self, name: &str) -> u64 {
        self.is(name, "counter");
        self.series.iter().filter(|f| f.name == name).map(|f| f.value as u64).sum()
    }

    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.is(name, "counter");
        self.get(name, labels).unwrap_or(0.0) as u64
    }

    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.is(name, "gauge");
        self.get(name, labels)
    }

    /// A histogram's samples since the last page.
    fn samples(&self, name: &str, labels: &[(&str, &str)]) -> usize {
        self.is(name, "histogram");
        self.get(&format!("{name}_count"), labels).unwrap_or(0.0) as usize
    }
}

#[tokio::test]
async fn figures_follow_locks_sessions_and_caches() {
    // As docs/observability.md installs it: histograms with buckets.
    let handle = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &[0.001, 0.01, 0.1, 1.0, 10.0])
        .unwrap()
        .install_recorder()
        .expect("the only recorder of this process");
    let mut scrapes = Scrapes { handle, last: HashMap::new() };
    zkr_recipes::describe_metrics();
    let server = shared_server().await.unwrap();
    let root = unique_root("metrics");
    let zk = zkr_integration_tests::builder(&server.connect_string()).name("first").connect().await.unwrap();
    let other = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &format!("{root}/lock")).unwrap();

    // Three acquire + release cycles; held, the lock is on the gauge.
    for _ in 0..3 {
        let guard = mutex.acquire().await.unwrap();
        assert_eq!(scrapes.peek().gauge("zkr_locks_held", &[]), Some(1.0));
        guard.release().await.unwrap();
    }
    let figures = scrapes.take();
    assert_eq!(figures.gauge("zkr_locks_held", &[]), Some(0.0));
    assert_eq!(figures.samples("zkr_lock_hold_seconds", &[]), 3);
    let info = figures.series.iter().find(|s| s.name == "zkr_build_info").expect("zkr_build_info");
    assert_eq!((info.value, info.labels[0].0.as_str()), (1.0, "version"));
    // Every figure has its HELP text (describe_metrics); the times are histograms.
    for name in figures.kinds.keys().filter(|n| n.starts_with("zkr_")) {
        assert!(figures.described.contains(name), "{name} has no description");
    }
    assert_eq!(figures.kind("zkr_lock_wait_seconds"), "histogram");
    assert_eq!(figures.counter("zkr_lock_holds_total", &[]), 3);
    assert_eq!(figures.samples("zkr_lock_wait_seconds", &[("outcome", "acquired")]), 3);
    assert_eq!(figures.counter("zkr_lock_releases_total", &[("outcome", "deleted")]), 3);
    assert_eq!(figures.counter_total("zkr_lock_losses_total"), 0);
    let connected = ConnectionState::Connected.to_string().to_lowercase();
    // Two clients, two series: the unnamed one is numbered.
    assert_eq!(figures.gauge("zkr_session_state", &[("client", "first"), ("state", &connected)]), Some(1.0));
    let numbered = [("client", other.name()), ("state", connected.as_str())];
    assert!(other.name().parse::<u32>().is_ok(), "{}", other.name());
    assert_eq!(figures.gauge("zkr_session_state", &numbered), Some(1.0));
    let timeout = figures.gauge("zkr_session_timeout_seconds", &[("client", "first")]).expect("the timeout");
    assert!(timeout > 0.0, "{timeout}");
    // Requests by operation and result: each lock cycle creates its node and deletes it.
    let ok = |op| [("client", "first"), ("op", op), ("result", "ok")];
    assert!(figures.counter("zkr_requests_total", &ok("create")) >= 3);
    assert!(figures.counter("zkr_requests_total", &ok("delete")) >= 3);
    assert!(figures.samples("zkr_request_duration_seconds", &[("client", "first"), ("op", "create")]) >= 3);
    let missing = zk.retry(|s| async move { s.client().get_data("/no/such/node").await }).await;
    assert!(missing.is_err());
    let figures = scrapes.take();
    let no_node = [("client", "first"), ("op", "get_data"), ("result", "no_node")];
    assert_eq!(figures.counter("zkr_requests_total", &no_node), 1);

    // One forced loss: the session expires under a held lock.
    let guard = mutex.acquire().await.unwrap();
    let mut states = zk.state_watch();
    expire_session(guard.session().client(), &server.connect_string()).await.unwrap();
    let reason = tokio::time::timeout(timing().wait(), guard.lost()).await.expect("the loss is seen");
    assert!(guard.release().await.is_err(), "a lost lock's release reports the loss");
    // Posted (and so in the gauge) once the new session is there.
    let rebuilt = states.wait_for(|s| *s == Some(ConnectionState::Reconnected));
    tokio::time::timeout(timing().wait(), rebuilt).await.expect("a new session").unwrap();
    let figures = scrapes.take();
    assert_eq!(figures.counter("zkr_lock_holds_total", &[]), 1);
    assert_eq!(figures.counter("zkr_lock_losses_total", &[("reason", reason.label())]), 1);
    assert_eq!(figures.counter_total("zkr_lock_losses_total"), 1, "one loss, counted once");
    assert_eq!(figures.gauge("zkr_locks_held", &[]), Some(0.0), "a lost lock is not held");
    assert_eq!(figures.samples("zkr_lock_hold_seconds", &[]), 1, "the hold ended once");
    assert_eq!(figures.counter("zkr_session_rebuilds_total", &[("client", "first")]), 1);
    let expired = [("client", "first"), ("cause", "expired")];
    assert_eq!(figures.counter("zkr_session_expirations_total", &expired), 1);
    assert_eq!(
        figures.counter_total("zkr_session_expirations_total"),
        1,
        "the other client kept its session"
    );
    let reconnected = ConnectionState::Reconnected.to_string().to_lowercase();
    assert_eq!(
        figures.gauge("zkr_session_state", &[("client", "first"), ("state", &reconnected)]),
        Some(1.0)
    );
    let lost = ConnectionState::Lost.to_string().to_lowercase();
    assert_eq!(figures.gauge("zkr_session_state", &[("client", "first"), ("state", &lost)]), Some(0.0));
    assert_eq!(figures.gauge("zkr_session_state", &numbered), Some(1.0), "the other client's series stays");

    // A cache of a node and its two children: its size, and the first full read.
    let cached = format!("{root}/cached");
    zk.create_parents(&format!("{cached}/a")).await.unwrap();
    for child in ["a", "b"] {
        zk.create(&format!("{cached}/{child}"), b"", CreateMode::Persistent).await.unwrap();
    }
    let cache = CuratorCache::builder(&zk, &cached).mode(CacheMode::Children).start().await.unwrap();
    assert_eq!(cache.snapshot().len(), 3);
    // No path label unless asked for: the process's total (two caches of 3 nodes: 6).
    let second = CuratorCache::builder(&other, &cached).mode(CacheMode::Children).start().await.unwrap();
    let figures = scrapes.take();
    assert_eq!(figures.gauge("zkr_cache_nodes", &[]), Some(6.0));
    assert!(figures.counter("zkr_watch_resyncs_total", &[]) >= 1);
    drop(second);
    scrapes
        .until("a closed cache to take its nodes off", |f| f.gauge("zkr_cache_nodes", &[]) == Some(3.0))
        .await;
    // With path labels, a series per root.
    let labelled = zkr_integration_tests::builder(&server.connect_string())
        .metrics_path_labels(true)
        .connect()
        .await
        .unwrap();
    let by_path = CuratorCache::builder(&labelled, &cached).mode(CacheMode::Children).start().await.unwrap();
    assert_eq!(scrapes.take().gauge("zkr_cache_nodes", &[("path", &cached)]), Some(3.0));
    drop((cache, by_path));
    labelled.close().await;

    // A leader: on the gauge of its election while it leads, one change counted.
    let election = format!("{root}/election");
    let latch = LeaderLatch::start(&zk, &election, "a").await.unwrap();
    latch.await_leadership().await.unwrap();
    let figures = scrapes.take();
    assert_eq!(figures.gauge("zkr_leader", &[("election", &election)]), Some(1.0));
    assert_eq!(figures.counter("zkr_leader_changes_total", &[("election", &election)]), 1);
    latch.close().await;
    let stepped_down = |f: &Figures| f.gauge("zkr_leader", &[("election", &election)]) == Some(0.0);
    scrapes.until("a closed latch to lead no more", stepped_down).await;

    // kazoo's Election: on the same gauge while its work runs, so that the shipped no-leader
    // and two-leaders alerts (docs/monitoring/) cover it too (issue 44 item 6).
    let kazoo_election = format!("{root}/kazoo-election");
    let election = zkr_recipes::kazoo::Election::new(&zk, &kazoo_election, "k").unwrap();
    let (leading, led) = tokio::sync::oneshot::channel::<()>();
    let (resign, resigned) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(async move {
        election
            .run(|| async move {
                let _ = leading.send(());
                let _ = resigned.await;
            })
            .await
    });
    tokio::time::timeout(timing().wait(), led).await.expect("the election leads").unwrap();
    let figures = scrapes.take();
    assert_eq!(figures.gauge("zkr_leader", &[("election", &kazoo_election)]), Some(1.0));
    assert_eq!(figures.counter("zkr_leader_changes_total", &[("election", &kazoo_election)]), 1);
    resign.send(()).unwrap();
    run.await.unwrap().unwrap();
    let resigned = |f: &Figures| f.gauge("zkr_leader", &[("election", &kazoo_election)]) == Some(0.0);
    scrapes.until("a kazoo election's leader to lead no more once its work ended", resigned).await;

    // A config change: its time, and no stale watcher.
    let setting = format!("{root}/setting");
    zk.create(&setting, b"1", CreateMode::Persistent).await.unwrap();
    let watcher = ConfigWatcher::builder(&zk, &setting, Utf8).start().await.unwrap();
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let mut snapshots = watcher.snapshots();
    zk.set_data(&setting, b"2", None).await.unwrap();
    let changed = snapshots.wait_for(|s| s.get("").is_some_and(|v| v.value.as_str() == "2"));
    tokio::time::timeout(timing().wait(), changed).await.expect("the change arrives").unwrap();
    let figures = scrapes.take();
    let updated = figures.gauge("zkr_config_last_update_timestamp_seconds", &[]).expect("an update time");
    assert!(updated >= before, "{updated} < {before}");
    assert_eq!(figures.gauge("zkr_config_stale", &[]).unwrap_or(0.0), 0.0);
    drop(watcher);
    other.close().await;
    zk.close().await;

    // The stall nudge: a read that waits for a paused server gets nudges with it on (after
    // 100 ms; the default, after 500 ms), none with it off. The server stays paused until the
    // nudge is seen: a fixed pause of 900 ms left the default's nudge (500-750 ms after the
    // read was sent) 150 ms to spare, and a busy CI machine took more (fresh run of b4f321c).
    let paused = zkr_testing::TestingServer::start().await.unwrap();
    let ms = std::time::Duration::from_millis;
    for (nudge, on) in [(Some(Some(ms(100))), true), (Some(None), false), (None, true)] {
        let builder = zkr_integration_tests::builder(&paused.connect_string());
        let zk = match nudge {
            Some(nudge) => builder.stall_nudge(nudge),
            None => builder,
        };
        let zk = zk.connect().await.unwrap();
        scrapes.take();
        paused.pause().unwrap();
        let read = tokio::spawn({
            let zk = zk.clone();
            async move { zk.retry(|s| async move { s.client().check_stat("/").await }).await }
        });
        let nudges = "zkr_stall_nudges_total";
        if on {
            scrapes.until(&format!("a nudge with {nudge:?}"), |f| f.counter_total(nudges) > 0).await;
        } else {
            // Twice the default's latest nudge: had it been on, it would have come.
            tokio::time::sleep(ms(1_500)).await;
        }
        paused.resume().unwrap();
        read.await.unwrap().expect("the read completes once the server resumes");
        if !on {
            let seen = scrapes.take().counter_total(nudges);
            assert_eq!(seen, 0, "{seen} nudges with {nudge:?}");
        }
        zk.close().await;
    }
}
