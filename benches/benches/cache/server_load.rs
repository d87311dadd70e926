//! The server's load of many caches of one large tree (issue 47 item 3): for zkr's and
//! Curator's `CuratorCache`, `--caches` caches (default 50) of the load tree over 5 sessions,
//! started on a server that holds no watch, then changes to one cached node, each once every
//! cache has seen the one before. From `mntr`: the watches the server holds once the caches are
//! loaded, the packets it sent and received for the loads (per cache) and for the changes (per
//! change; the writer's `setData` and its reply count too).

use std::time::Duration;

use anyhow::ensure;
use tokio::task::JoinHandle;
use zkr_benches::{fmt_ratio, ServerCounters, Setup, Table};
use zookeeper_client::Client;

use super::propagation::{self, Peer, SESSIONS};
use super::LOAD_ROOT;

/// The changes after the loads (the propagation's untimed ones included).
const CHANGES: usize = 30;

/// What one library's caches cost the server.
struct Row {
    watches: u64,
    load: (String, String),
    change: (String, String),
}

/// The node the changes set: one of the tree's leaves.
fn changed() -> String {
    format!("{LOAD_ROOT}/p00/c00")
}

async fn zkr(setup: &Setup, writer: &Client, caches: usize) -> anyhow::Result<Row> {
    let before = setup.server.counters().await?;
    let (tasks, mut seen) = propagation::zkr_caches(&setup.connect_string, LOAD_ROOT, caches).await?;
    let loaded = setup.server.counters().await?;
    let changes = propagation::write(writer, &changed(), caches, CHANGES, &mut seen).await?.writes();
    let after = setup.server.counters().await?;
    tasks.iter().for_each(JoinHandle::abort);
    Ok(row(before, loaded, after, caches, changes))
}

async fn curator(setup: &Setup, writer: &Client, caches: usize, nodes: usize) -> anyhow::Result<Row> {
    let before = setup.server.counters().await?;
    let args =
        ["cache-propagation", &setup.connect_string, LOAD_ROOT, &SESSIONS.to_string(), &caches.to_string()];
    let mut peer = setup.curator.spawn(&args)?;
    peer.set_line_timeout(Duration::from_secs(300) + Duration::from_millis((caches * nodes / 100) as u64));
    peer.expect_line("READY").await?;
    let loaded = setup.server.counters().await?;
    let mut seen = Peer(peer);
    let changes = propagation::write(writer, &changed(), caches, CHANGES, &mut seen).await?.writes();
    let after = setup.server.counters().await?;
    let status = seen.0.wait().await?;
    ensure!(status.success(), "CuratorTool cache-propagation exited with {status}");
    Ok(row(before, loaded, after, caches, changes))
}

fn row(
    before: ServerCounters,
    loaded: ServerCounters,
    after: ServerCounters,
    caches: usize,
    changes: usize,
) -> Row {
    Row {
        watches: loaded.watches,
        load: loaded.per_operation(&before, caches),
        change: after.per_operation(&loaded, changes),
    }
}

/// Runs zkr, then Curator, each on a server that holds no watch, and prints the table.
pub async fn run(setup: &Setup, writer: &Client, caches: usize, nodes: usize) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    for library in ["zkr CuratorCache", "Curator CuratorCache"] {
        setup.server.quiet().await?;
        writer.set_data(&changed(), b"0", None).await?;
        eprintln!("[cache bench] server load: {caches} caches of {nodes} nodes, {library}");
        let row = match library {
            "zkr CuratorCache" => zkr(setup, writer, caches).await?,
            _ => curator(setup, writer, caches, nodes).await?,
        };
        rows.push((library, row));
    }
    let mut table = Table::new(&[
        "library",
        "watches the server holds",
        "packets sent / cache load",
        "packets received / cache load",
        "packets sent / change",
        "packets received / change",
    ]);
    for (library, r) in &rows {
        let cells = [&r.load.0, &r.load.1, &r.change.0, &r.change.1].map(|c| c.to_string());
        table.row([vec![library.to_string(), r.watches.to_string()], cells.to_vec()].concat());
    }
    zkr_benches::print_report(
        &format!("The server's load: {caches} caches of {nodes} nodes over {SESSIONS} sessions, then changes to one node"),
        &table,
    );
    let parse = |s: &String| s.parse::<f64>().unwrap_or(0.0);
    let (zkr, curator) = (&rows[0].1, &rows[1].1);
    println!(
        "- packets per cache load, zkr / Curator: sent {}, received {}; per change: sent {}, received {}\n",
        fmt_ratio(parse(&zkr.load.0), parse(&curator.load.0)),
        fmt_ratio(parse(&zkr.load.1), parse(&curator.load.1)),
        fmt_ratio(parse(&zkr.change.0), parse(&curator.change.0)),
        fmt_ratio(parse(&zkr.change.1), parse(&curator.change.1)),
    );
    Ok(())
}
