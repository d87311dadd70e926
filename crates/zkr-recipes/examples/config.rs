//! A config subscription: a service holds its typed settings from ZooKeeper, sees an operator
//! change them, and reports a bad value without applying it.
//!
//! `cargo run -p zkr-recipes --example config` (an embedded ZooKeeper), or with `ZK_CONNECT`
//! set to use yours.

use futures::StreamExt as _;
use zkr_connection::ZkClient;
use zkr_recipes::config::{ConfigEvent, ConfigPublisher, ConfigWatcher, Json};

#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Settings {
    pool_size: u32,
    timeout_ms: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zkr_testing::env_or_embedded().await?;
    let zk = ZkClient::connect(connect).await?;
    let path = "/examples/config/orders";
    let publisher = ConfigPublisher::new(&zk, Json);
    publisher.set(path, &Settings { pool_size: 8, timeout_ms: 500 }).await?;

    let settings = ConfigWatcher::<Settings>::builder(&zk, path, Json).start().await?;
    let mut changes = settings.changes();
    println!("starting with {:?}", settings.get().map(|v| v.value));

    // An operator publishes a new version, then a broken one, then a fixed one.
    let current = settings.get().map_or(0, |v| v.version);
    publisher.set_if_version(path, &Settings { pool_size: 16, timeout_ms: 500 }, current).await?;
    zk.retry(|s| async move { s.client().set_data(path, b"{not json", None).await }).await?;
    publisher.set(path, &Settings { pool_size: 32, timeout_ms: 250 }).await?;

    // The watcher converges on the latest version; versions written in quick succession may
    // be seen only as the latest. Print what it sees until it holds the last one.
    while let Some(event) = changes.next().await {
        match event {
            ConfigEvent::Changed { new: Some(new), .. } => {
                println!("version {}: {:?}", new.version, new.value);
                if new.value.pool_size == 32 {
                    break;
                }
            }
            ConfigEvent::DecodeFailed { version, error, .. } => {
                println!(
                    "version {version} does not decode ({error}); keeping {:?}",
                    settings.get().map(|v| v.value)
                );
            }
            _ => {}
        }
    }
    drop((settings, changes));
    zk.close().await;
    Ok(())
}
