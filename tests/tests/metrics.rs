//! zkr's figures (the `metrics` feature) after known workloads against a real ZooKeeper: lock
//! holds, waits, releases and a forced loss; session state and rebuilds; a cache's size and
//! resync; the stall nudge. The recorder is global, so this file is its own process and one test.

use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use zkr_connection::ConnectionState;
use zkr_integration_tests::{connect, timing, unique_root};
use zkr_recipes::cache::{CacheMode, CuratorCache};
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::{expire_session, shared_server};
use zookeeper_client::CreateMode;

/// One metric's series: name, labels and value.
struct Figure {
    name: String,
    labels: Vec<(String, String)>,
    unit: Option<metrics::Unit>,
    described: bool,
    value: DebugValue,
}

/// The figures recorded since the last snapshot (counters and histograms are drained by it).
struct Figures(Vec<Figure>);

impl Figures {
    fn take(snapshotter: &Snapshotter) -> Self {
        let figures = snapshotter.snapshot().into_vec().into_iter().map(|(key, unit, description, value)| {
            let key = key.key();
            let labels = key.labels().map(|l| (l.key().to_owned(), l.value().to_owned())).collect();
            let described = description.is_some_and(|d| !d.is_empty());
            Figure { name: key.name().to_owned(), labels, unit, described, value }
        });
        Figures(figures.collect())
    }

    /// The value of `name` with exactly `labels`.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<&DebugValue> {
        self.0.iter().find_map(|f| {
            let same = f.labels.len() == labels.len()
                && labels.iter().all(|(k, v)| f.labels.iter().any(|(a, b)| a == k && b == v));
            (f.name == name && same).then_some(&f.value)
        })
    }

    /// A counter's increments since the last snapshot, summed over its label sets.
    fn counter_total(&self, name: &str) -> u64 {
        self.0
            .iter()
            .filter(|f| f.name == name)
            .map(|f| match &f.value {
                DebugValue::Counter(c) => *c,
                other => panic!("{name} is not a counter: {other:?}"),
            })
            .sum()
    }

    fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        match self.get(name, labels) {
            Some(DebugValue::Counter(c)) => *c,
            None => 0,
            Some(other) => panic!("{name} is not a counter: {other:?}"),
        }
    }

    fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        match self.get(name, labels)? {
            DebugValue::Gauge(g) => Some(g.into_inner()),
            other => panic!("{name} is not a gauge: {other:?}"),
        }
    }

    fn samples(&self, name: &str, labels: &[(&str, &str)]) -> usize {
        match self.get(name, labels) {
            Some(DebugValue::Histogram(samples)) => samples.len(),
            None => 0,
            Some(other) => panic!("{name} is not a histogram: {other:?}"),
        }
    }
}

#[tokio::test]
async fn figures_follow_locks_sessions_and_caches() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("the only recorder of this process");
    zkr_recipes::describe_metrics();
    let server = shared_server().await.unwrap();
    let root = unique_root("metrics");
    let zk = connect(&server.connect_string()).await;
    let mutex = InterProcessMutex::new(&zk, &format!("{root}/lock")).unwrap();

    // Three acquire + release cycles.
    for _ in 0..3 {
        mutex.acquire().await.unwrap().release().await.unwrap();
    }
    let figures = Figures::take(&snapshotter);
    // Every figure has its HELP text (describe_metrics), the wait its unit.
    for figure in figures.0.iter().filter(|f| f.name.starts_with("zkr_")) {
        assert!(figure.described, "{} has no description", figure.name);
    }
    let wait = figures.0.iter().find(|f| f.name == "zkr_lock_wait_seconds").expect("a wait");
    assert_eq!(wait.unit, Some(metrics::Unit::Seconds));
    assert_eq!(figures.counter("zkr_lock_holds_total", &[]), 3);
    assert_eq!(figures.samples("zkr_lock_wait_seconds", &[("outcome", "acquired")]), 3);
    assert_eq!(figures.counter("zkr_lock_releases_total", &[("outcome", "deleted")]), 3);
    assert_eq!(figures.counter_total("zkr_lock_losses_total"), 0);
    let connected = ConnectionState::Connected.to_string().to_lowercase();
    assert_eq!(figures.gauge("zkr_session_state", &[("state", &connected)]), Some(1.0));

    // One forced loss: the session expires under a held lock.
    let guard = mutex.acquire().await.unwrap();
    let mut states = zk.state_watch();
    expire_session(guard.session().client(), &server.connect_string()).await.unwrap();
    let reason = tokio::time::timeout(timing().wait(), guard.lost()).await.expect("the loss is seen");
    assert!(guard.release().await.is_err(), "a lost lock's release reports the loss");
    // Posted (and so in the gauge) once the new session is there.
    let rebuilt = states.wait_for(|s| *s == Some(ConnectionState::Reconnected));
    tokio::time::timeout(timing().wait(), rebuilt).await.expect("a new session").unwrap();
    let figures = Figures::take(&snapshotter);
    assert_eq!(figures.counter("zkr_lock_holds_total", &[]), 1);
    assert_eq!(figures.counter("zkr_lock_losses_total", &[("reason", reason.label())]), 1);
    assert_eq!(figures.counter_total("zkr_lock_losses_total"), 1, "one loss, counted once");
    assert_eq!(figures.counter("zkr_session_rebuilds_total", &[]), 1);
    let reconnected = ConnectionState::Reconnected.to_string().to_lowercase();
    assert_eq!(figures.gauge("zkr_session_state", &[("state", &reconnected)]), Some(1.0));
    let lost = ConnectionState::Lost.to_string().to_lowercase();
    assert_eq!(figures.gauge("zkr_session_state", &[("state", &lost)]), Some(0.0));

    // A cache of a node and its two children: its size, and the first full read.
    let cached = format!("{root}/cached");
    zk.create_parents(&format!("{cached}/a")).await.unwrap();
    for child in ["a", "b"] {
        zk.create(&format!("{cached}/{child}"), b"", CreateMode::Persistent).await.unwrap();
    }
    let cache = CuratorCache::builder(&zk, &cached).mode(CacheMode::Children).start().await.unwrap();
    assert_eq!(cache.snapshot().len(), 3);
    let figures = Figures::take(&snapshotter);
    assert_eq!(figures.gauge("zkr_cache_nodes", &[("path", &cached)]), Some(3.0));
    assert!(figures.counter("zkr_watch_resyncs_total", &[]) >= 1);
    zk.close().await;

    // The stall nudge: a read that waits for a paused server gets nudges with it on (every
    // 100 ms), none with it off (the default).
    let paused = zkr_testing::TestingServer::start().await.unwrap();
    for (nudge, on) in [(Some(std::time::Duration::from_millis(100)), true), (None, false)] {
        let zk = zkr_integration_tests::builder(&paused.connect_string())
            .stall_nudge(nudge)
            .connect()
            .await
            .unwrap();
        Figures::take(&snapshotter);
        paused.pause().unwrap();
        let read = tokio::spawn({
            let zk = zk.clone();
            async move { zk.retry(|s| async move { s.client().check_stat("/").await }).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        paused.resume().unwrap();
        read.await.unwrap().expect("the read completes once the server resumes");
        let nudges = Figures::take(&snapshotter).counter("zkr_stall_nudges_total", &[]);
        assert_eq!(nudges > 0, on, "{nudges} nudges with {nudge:?}");
        zk.close().await;
    }
}
