//! Looks for stalls under every client library: rounds of 3 s of create + delete cycles on a
//! new session per round, reporting the slowest cycle and any over 500 ms (docs/benchmarks.md,
//! "A stall below the libraries"; docs/reliability.md, ZOOKEEPER-4537).
//!
//! `zk-stall RTT_US standalone|direct|proxy ROUNDS SESSION_S [CLIENT]`: one standalone server,
//! or a 3-server ensemble reached directly or through latency proxies of RTT_US, of the release
//! `ZKR_ZK_VERSION` names. CLIENT is `raw` (a `zookeeper-client` session, the default), `zkr`
//! (a `ZkClient` without the stall nudge, each call through `retry`) or `zkr:MS` (with the
//! nudge after MS ms). It prints the release and the ensemble's direct connect string first,
//! then a line per round and a summary: `SUMMARY release=... client=... cycles=N stalls=S
//! worst_ms=W nudges=K` (K counts the nudges the cycles' latencies imply: one per MS waited).
use std::time::{Duration, Instant};

use zkr_connection::ZkClient;
use zkr_testing::{FaultProxy, Latency, TestingCluster};
use zookeeper_client::{Acls, Client, CreateMode};

/// How a cycle is sent.
#[derive(Clone, Copy, Debug)]
enum Via {
    Raw,
    Zkr(Option<Duration>),
}

fn arg<T: std::str::FromStr>(n: usize, default: T) -> T {
    std::env::args().nth(n).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn via() -> Via {
    match std::env::args().nth(5).as_deref() {
        None | Some("raw") => Via::Raw,
        Some("zkr") => Via::Zkr(None),
        Some(other) => {
            let ms = other
                .strip_prefix("zkr:")
                .and_then(|ms| ms.parse().ok())
                .expect("CLIENT: raw, zkr or zkr:MS");
            Via::Zkr(Some(Duration::from_millis(ms)))
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let rtt_us: u64 = arg(1, 1000);
    let mode: String = arg(2, "proxy".to_string());
    let rounds: u32 = arg(3, 20);
    let session = Duration::from_secs(arg(4, 60));
    let via = via();
    let cluster = TestingCluster::start(3).await?;
    let mut proxies = Vec::new();
    for i in 0..3 {
        let latency = Latency::round_trip(Duration::from_micros(rtt_us));
        proxies.push(FaultProxy::start_with_latency(&cluster.server_connect_string(i)?, latency).await?);
    }
    let standalone =
        if mode == "standalone" { Some(zkr_testing::TestingServer::start().await?) } else { None };
    let cs = match (&standalone, mode.as_str()) {
        (Some(server), _) => server.connect_string(),
        (None, "direct") => cluster.connect_string(),
        _ => proxies.iter().map(|p| p.connect_string()).collect::<Vec<_>>().join(","),
    };
    println!("RELEASE {} via {via:?}", cluster.release());
    println!("DIRECT {}", cluster.connect_string());
    let setup = Client::connect(&cs).await?;
    let _ = setup.create("/stall", b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await;
    let (mut cycles, mut stalls, mut worst_all, mut nudges) = (0u64, 0u64, Duration::ZERO, 0u128);
    for round in 0..rounds {
        let t = Instant::now();
        let client = Client::connector().with_session_timeout(session).connect(&cs).await?;
        let zk = match via {
            Via::Raw => None,
            Via::Zkr(nudge) => Some(
                ZkClient::builder(cs.as_str()).session_timeout(session).stall_nudge(nudge).connect().await?,
            ),
        };
        let connected = t.elapsed();
        let start = Instant::now();
        let (mut n, mut worst) = (0, Duration::ZERO);
        while start.elapsed() < Duration::from_secs(3) {
            let c = Instant::now();
            let (create, delete) = match &zk {
                None => raw_cycle(&client).await?,
                Some(zk) => zkr_cycle(zk).await?,
            };
            let took = c.elapsed();
            if let Via::Zkr(Some(after)) = via {
                nudges += create.as_nanos() / after.as_nanos() + delete.as_nanos() / after.as_nanos();
            }
            if took > Duration::from_millis(500) {
                stalls += 1;
                println!(
                    "round {round}: cycle {n} took {took:?} (at {:?} into the round)",
                    start.elapsed() - took
                );
            }
            worst = worst.max(took);
            n += 1;
        }
        if let Some(zk) = zk {
            zk.close().await;
        }
        cycles += n;
        worst_all = worst_all.max(worst);
        println!("round {round}: connect {connected:?}, {n} cycles, worst {worst:?}");
    }
    println!(
        "SUMMARY release={} client={via:?} cycles={cycles} stalls={stalls} worst_ms={} nudges={nudges}",
        cluster.release(),
        worst_all.as_millis()
    );
    Ok(())
}

/// One create + delete on the raw client: how long each took.
async fn raw_cycle(client: &Client) -> anyhow::Result<(Duration, Duration)> {
    let opts = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    let c = Instant::now();
    let (_, seq) = client.create("/stall/n-", b"", &opts).await?;
    let created = c.elapsed();
    client.delete(&format!("/stall/n-{seq}"), None).await?;
    Ok((created, c.elapsed() - created))
}

/// One create + delete, each through the `ZkClient`'s retry loop.
async fn zkr_cycle(zk: &ZkClient) -> anyhow::Result<(Duration, Duration)> {
    let c = Instant::now();
    let (_, seq) = zk
        .retry(|s| async move {
            let opts = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
            s.client().create("/stall/n-", b"", &opts).await
        })
        .await?;
    let created = c.elapsed();
    let node = format!("/stall/n-{seq}");
    zk.retry(|s| {
        let node = node.clone();
        async move { s.client().delete(&node, None).await }
    })
    .await?;
    Ok((created, c.elapsed() - created))
}
