//! A zkr `LeaderLatch` as a peer process for the leader-election benchmark, the counterpart of
//! `CuratorTool bench-leader-failover`: `zkr-latch-peer CONNECT PATH SESSION_MS` prints
//! `LEADER <epoch_us>` / `NOT_LEADER <epoch_us>` (microseconds) as leadership changes, and closes the latch
//! when stdin closes.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt as _;
use tokio::io::AsyncReadExt as _;
use zkr_connection::ZkClient;
use zkr_recipes::leader::{LatchState, LeaderLatch};

fn epoch_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, connect, path, session_ms] = args.as_slice() else {
        anyhow::bail!("usage: zkr-latch-peer CONNECT PATH SESSION_MS");
    };
    let zk = ZkClient::builder(connect.as_str())
        .session_timeout(Duration::from_millis(session_ms.parse()?))
        .connect()
        .await?;
    let latch = LeaderLatch::start(&zk, path, &std::process::id().to_string()).await?;
    let mut states = latch.state_changes();
    let printer = tokio::spawn(async move {
        let mut leading = false;
        while let Some(state) = states.next().await {
            let now = matches!(state, LatchState::Leader(_));
            if now != leading {
                println!("{} {}", if now { "LEADER" } else { "NOT_LEADER" }, epoch_us());
                leading = now;
            }
        }
    });
    let mut sink = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    latch.close().await;
    printer.abort();
    zk.close().await;
    Ok(())
}
