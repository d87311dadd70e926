//! `zkr server`: a real local ZooKeeper for development.

use anyhow::Context as _;
use zkr_testing::{ServerOptions, TestingCluster, TestingServer};

use crate::exit::Code;
use crate::signals::Signals;

#[derive(Debug, clap::Args)]
pub(crate) struct ServerArgs {
    /// Number of servers: 1 (standalone) or 3 (an ensemble on loopback).
    #[arg(long, default_value_t = 1, value_parser = parse_ensemble)]
    ensemble: usize,
    /// The client port (of the first server of an ensemble; the others follow it), for
    /// example 2181, the address every snippet in the docs uses. Defaults to a free port.
    #[arg(long)]
    port: Option<u16>,
}

fn parse_ensemble(value: &str) -> Result<usize, String> {
    match value {
        "1" => Ok(1),
        "3" => Ok(3),
        _ => Err(format!("an ensemble has 1 or 3 servers, not {value}")),
    }
}

/// Prints the connect string on stdout (for scripts) and serves until SIGINT or SIGTERM; the
/// servers stop and their files go when it returns.
pub(crate) async fn run(args: ServerArgs) -> anyhow::Result<Code> {
    let mut signals = Signals::listen().context("listening for SIGINT and SIGTERM")?;
    let mut options = ServerOptions::default();
    if let Some(port) = args.port {
        options = options.client_port(port);
    }
    if args.ensemble == 1 {
        let server = TestingServer::with_options(options).await.context("starting ZooKeeper")?;
        announce(&server.connect_string(), &format!("ZooKeeper (data in {})", server.root_dir().display()));
        signals.recv().await;
        drop(server);
    } else {
        let cluster =
            TestingCluster::with_options(args.ensemble, options).await.context("starting the ensemble")?;
        announce(&cluster.connect_string(), &format!("ZooKeeper ensemble of {}", args.ensemble));
        signals.recv().await;
        drop(cluster);
    }
    Ok(Code::Success)
}

fn announce(connect_string: &str, what: &str) {
    println!("{connect_string}");
    eprintln!("{what} serving at {connect_string}; Ctrl-C or SIGTERM stops it");
}
