//! `zkr server`: a real local ZooKeeper for development.

use anyhow::Context as _;
use zkr_testing::{TestingCluster, TestingServer};

#[derive(Debug, clap::Args)]
pub(crate) struct ServerArgs {
    /// Number of servers: 1 (standalone) or 3 (an ensemble on loopback).
    #[arg(long, default_value_t = 1, value_parser = parse_ensemble)]
    ensemble: usize,
}

fn parse_ensemble(value: &str) -> Result<usize, String> {
    match value {
        "1" => Ok(1),
        "3" => Ok(3),
        _ => Err(format!("an ensemble has 1 or 3 servers, not {value}")),
    }
}

pub(crate) async fn run(args: ServerArgs) -> anyhow::Result<i32> {
    if args.ensemble == 1 {
        let server = TestingServer::start().await.context("starting ZooKeeper")?;
        println!("{}", server.connect_string());
        eprintln!(
            "ZooKeeper serving at {} (data in {}); Ctrl-C stops it",
            server.connect_string(),
            server.root_dir().display()
        );
        tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
        drop(server);
    } else {
        let cluster = TestingCluster::start(args.ensemble).await.context("starting the ensemble")?;
        println!("{}", cluster.connect_string());
        eprintln!(
            "ZooKeeper ensemble of {} serving at {}; Ctrl-C stops it",
            args.ensemble,
            cluster.connect_string()
        );
        tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
        drop(cluster);
    }
    Ok(0)
}
