//! A distributed lock: four tasks, each with its own ZooKeeper session (as four processes
//! would have), take turns in a critical section; the fencing token grows with every holder.
//!
//! `cargo run -p zkr-recipes --example mutex` (an embedded ZooKeeper), or with `ZK_CONNECT`
//! set to use yours.

use std::time::Duration;

use zkr_connection::ZkClient;
use zkr_recipes::locks::InterProcessMutex;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zkr_testing::env_or_embedded().await?;
    let mut workers = Vec::new();
    for worker in 0..4 {
        let connect = connect.clone();
        workers.push(tokio::spawn(async move {
            let zk = ZkClient::connect(connect).await?;
            let mutex = InterProcessMutex::new(&zk, "/examples/locks/report")?;
            for round in 0..3 {
                let guard = mutex.acquire().await?;
                // Send the token with every write to the protected resource, which refuses
                // tokens lower than the highest it has seen.
                println!("worker {worker} round {round}: holding, fencing token {}", guard.fencing_token());
                tokio::time::sleep(Duration::from_millis(20)).await;
                guard.release().await?;
            }
            zk.close().await;
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        }));
    }
    for worker in workers {
        worker.await?.map_err(|e| e as Box<dyn std::error::Error>)?;
    }
    Ok(())
}
