//! Looks for stalls under every client library: rounds of 3 s of create + delete cycles on a
//! raw `zookeeper-client` session (a new session per round), reporting the slowest cycle and
//! any over 500 ms (docs/benchmarks.md, "A stall below the libraries").
//!
//! `zk-stall RTT_US standalone|direct|proxy ROUNDS SESSION_S`: one standalone server, or a
//! 3-server ensemble reached directly or through latency proxies of RTT_US. It prints the
//! ensemble's direct connect string first (`DIRECT ...`), for a second client to share it.
use std::time::{Duration, Instant};
use zkr_testing::{FaultProxy, Latency, TestingCluster};
use zookeeper_client::{Acls, Client, CreateMode};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let rtt_us: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(1000);
    let cluster = TestingCluster::start(3).await?;
    let mut proxies = Vec::new();
    for i in 0..3 {
        proxies.push(
            FaultProxy::start_with_latency(
                &cluster.server_connect_string(i)?,
                Latency::round_trip(Duration::from_micros(rtt_us)),
            )
            .await?,
        );
    }
    let standalone = zkr_testing::TestingServer::start().await?;
    let cs = if std::env::args().nth(2).as_deref() == Some("standalone") {
        standalone.connect_string()
    } else if std::env::args().nth(2).as_deref() == Some("direct") {
        cluster.connect_string()
    } else {
        proxies.iter().map(|p| p.connect_string()).collect::<Vec<_>>().join(",")
    };
    println!("DIRECT {}", cluster.connect_string());
    let setup = Client::connect(&cs).await?;
    let _ = setup.create("/stall", b"", &CreateMode::Persistent.with_acls(Acls::anyone_all())).await;
    for round in 0..std::env::args().nth(3).map(|s| s.parse().unwrap()).unwrap_or(20) {
        let t = Instant::now();
        let client = Client::connector()
            .with_session_timeout(Duration::from_secs(
                std::env::args().nth(4).map(|s| s.parse().unwrap()).unwrap_or(60),
            ))
            .connect(&cs)
            .await?;
        let connected = t.elapsed();
        let start = Instant::now();
        let (mut n, mut worst) = (0, Duration::ZERO);
        let opts = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        while start.elapsed() < Duration::from_secs(3) {
            let c = Instant::now();
            let (_, seq) = client.create("/stall/n-", b"", &opts).await?;
            client.delete(&format!("/stall/n-{seq}"), None).await?;
            let took = c.elapsed();
            if took > Duration::from_millis(500) {
                println!(
                    "round {round}: cycle {n} took {took:?} (at {:?} into the round)",
                    start.elapsed() - took
                );
            }
            worst = worst.max(took);
            n += 1;
        }
        println!("round {round}: connect {connected:?}, {n} cycles, worst {worst:?}");
    }
    Ok(())
}
