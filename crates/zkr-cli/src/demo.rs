//! `zkr demo`: an embedded ZooKeeper and the lock queue at work.

use std::time::Duration;

use anyhow::Context as _;
use zkr_testing::TestingServer;
use zookeeper_client::{Acls, Client, CreateMode};

#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// Number of contenders.
    #[arg(long, default_value_t = 5)]
    contenders: usize,
}

/// Shows the heart of every ZooKeeper lock: contenders queue as ephemeral sequential nodes, the
/// lowest holds, and a contender's node vanishes with its session.
pub(crate) async fn run(args: DemoArgs) -> anyhow::Result<i32> {
    eprintln!("starting an embedded ZooKeeper ...");
    let server = TestingServer::start().await.context("starting the embedded ZooKeeper")?;
    println!("ZooKeeper serving at {}", server.connect_string());
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    let admin = Client::connect(&server.connect_string()).await?;
    admin.create("/demo", b"", &persistent).await?;
    let mut sessions = Vec::new();
    for i in 0..args.contenders.max(1) {
        let client = Client::connector()
            .with_session_timeout(Duration::from_secs(4))
            .connect(&server.connect_string())
            .await?;
        let node = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
        let (_, seq) = client.create("/demo/lock-", format!("contender {i}").as_bytes(), &node).await?;
        println!("contender {i} (session {}) queued as lock-{seq}", client.session_id());
        sessions.push(client);
    }
    while !sessions.is_empty() {
        let mut children = admin.list_children("/demo").await?;
        children.sort();
        let (holder, _) = admin.get_data(&format!("/demo/{}", children[0])).await?;
        println!("queue {children:?}: {} holds the lock", String::from_utf8_lossy(&holder));
        // The holder's session closes: its node goes with it and the next in line holds.
        drop(sessions.remove(0));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while admin.check_stat(&format!("/demo/{}", children[0])).await?.is_some() {
            anyhow::ensure!(tokio::time::Instant::now() < deadline, "a closed session's node did not vanish");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    println!(
        "every contender held the lock once, in queue order; nothing is left: {:?}",
        admin.list_children("/demo").await?
    );
    Ok(0)
}
