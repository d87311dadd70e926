//! zkr's figures for Prometheus: serves `/metrics` on 127.0.0.1:9000 while it takes a lock in a
//! loop, with `tracing` events on standard error (`RUST_LOG=zkr_recipes=debug` shows each
//! acquire and release).
//!
//! `ZK_CONNECT=127.0.0.1:2181 cargo run -p zkr-recipes --features metrics --example prometheus`,
//! then `curl 127.0.0.1:9000/metrics` (`ZK_CONNECT` defaults to 127.0.0.1:2181). Stop it with
//! Ctrl-C.

use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder};
use tracing_subscriber::EnvFilter;
use zkr_connection::ZkClient;
use zkr_recipes::locks::InterProcessMutex;

const LISTEN: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 9000);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        .init();
    // Buckets: the lock waits as a histogram (summable across instances), not a summary.
    PrometheusBuilder::new()
        .with_http_listener(LISTEN)
        .set_buckets_for_metric(
            Matcher::Suffix("_seconds".into()),
            &[0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0],
        )?
        .install()?;
    zkr_recipes::describe_metrics();
    let connect = std::env::var("ZK_CONNECT").unwrap_or_else(|_| "127.0.0.1:2181".to_owned());
    // The name is the `client` label of the connection figures (zkr_session_state, ...).
    let zk = ZkClient::builder(connect).name("example").connect().await?;
    let mutex = InterProcessMutex::new(&zk, "/examples/prometheus/lock")?;
    eprintln!("serving http://{LISTEN}/metrics; taking /examples/prometheus/lock in a loop");
    loop {
        tokio::select! {
            round = take_once(&mutex) => round?,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    zk.close().await;
    Ok(())
}

/// One round: acquire, hold a moment, release, pause.
async fn take_once(mutex: &InterProcessMutex) -> Result<(), zkr_recipes::locks::LockError> {
    let guard = mutex.acquire().await?;
    tokio::time::sleep(Duration::from_millis(100)).await;
    guard.release().await?;
    tokio::time::sleep(Duration::from_millis(400)).await;
    Ok(())
}
