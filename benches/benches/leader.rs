//! Leader-election failover: zkr's `LeaderLatch` against Apache Curator's `LeaderLatch`, each
//! as a pair of peer processes on the same servers in one run (the deployment comes from the
//! environment: `zkr_benches::Deployment::from_env`).
//!
//! `cargo bench -p zkr-benches --bench leader [-- --rounds N]`
//! `ZKR_BENCH_DEPLOY=ensemble ZKR_BENCH_RTT_MS=2 cargo bench -p zkr-benches --bench leader`
//!
//! Two scenarios, `--rounds` times each (default 5), for each library:
//! - **kill**: the leader process is killed with SIGKILL; failover is from the kill to the
//!   follower's `LEADER` line. Both use a 4 s session, so the session timeout (and the
//!   server's expiry tick) dominates.
//! - **close**: the leader closes its latch (stdin closed); hand-over is from then to the
//!   follower's `LEADER` line.
//!
//! And the floor of a hand-over, in this process: one raw client deletes a node that another
//! raw client watches; from the delete's send to the watch event (one way to the server, the
//! delete's commit, one way to the watcher: a round trip plus the commit).
//!
//! Times are wall-clock microseconds on one machine (the peers print epoch microseconds).
//!
//! `cargo bench -p zkr-benches --bench leader -- --server-load [--participants N] [--sessions S]`:
//! the server's load of a latch (issue 47 item 3): N participants (default 100) over S sessions
//! (default 10; participant i on session i mod S), in this
//! process for zkr and in one JVM for Curator (`CuratorTool latch-participants`), started on a
//! server that holds no watch, the election path made beforehand; then the leader closes its latch. From `mntr`: the watches the
//! server holds once all N nodes exist (and 500 ms more), and the packets it sent and received for the joins (per
//! participant) and for the change (from the close until another participant leads, and 300 ms
//! more for what follows it). Both include the bench's own listing every 20 ms until all N nodes
//! exist, and the sessions' pings.

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context};
use zkr_benches::{Deployment, Table};
use zkr_testing::peers::{CuratorTool, PeerProcess};
use zookeeper_client::{Acls, CreateMode, EventType};

const SESSION_MS: u64 = 4000;

fn epoch_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

#[derive(Clone, Copy, PartialEq)]
enum Library {
    Zkr,
    Curator,
}

fn peer(library: Library, tool: &CuratorTool, cs: &str, path: &str) -> anyhow::Result<PeerProcess> {
    let (label, cmd) = match library {
        Library::Zkr => {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_zkr-latch-peer"));
            cmd.args([cs, path, &SESSION_MS.to_string()]);
            ("zkr-latch-peer", cmd)
        }
        Library::Curator => {
            let mut cmd = tool.command(&["bench-leader-failover", cs, path]);
            cmd.env("ZKR_PEER_SESSION_MS", SESSION_MS.to_string());
            ("CuratorTool bench-leader-failover", cmd)
        }
    };
    let mut process = PeerProcess::spawn(label, cmd)?;
    process.set_line_timeout(Duration::from_secs(60));
    Ok(process)
}

/// One failover: a leader, a follower queued behind it, then the leader killed or closed.
async fn failover(
    library: Library,
    kill: bool,
    tool: &CuratorTool,
    cs: &str,
    path: &str,
) -> anyhow::Result<Duration> {
    let mut leader = peer(library, tool, cs, path)?;
    leader.expect_line("LEADER").await?;
    let mut follower = peer(library, tool, cs, path)?;
    // The follower is queued once its latch node exists: wait for it through a listing.
    let zk = zookeeper_client::Client::connect(cs).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while zk.list_children(path).await.map(|c| c.len()).unwrap_or(0) < 2 {
        ensure!(tokio::time::Instant::now() < deadline, "the follower never queued");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let t0 = epoch_us();
    if kill {
        nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(leader.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )?;
    } else {
        leader.close_stdin();
    }
    let line = follower.expect_line("LEADER").await?;
    let t1: u64 = line.split_whitespace().nth(1).context("LEADER <us>")?.parse()?;
    let _ = leader.wait().await;
    follower.close_stdin();
    follower.wait().await?;
    Ok(Duration::from_micros(t1.saturating_sub(t0)))
}

/// The floor of a hand-over: from a raw delete's send to another session's watch event.
async fn floor(cs: &str, path: &str) -> anyhow::Result<Duration> {
    let (owner, watcher) =
        (zookeeper_client::Client::connect(cs).await?, zookeeper_client::Client::connect(cs).await?);
    owner.create(path, b"", &CreateMode::Ephemeral.with_acls(Acls::anyone_all())).await?;
    // The watcher's session may lag the create: its sync makes the node visible to it.
    watcher.sync(path).await?;
    let (stat, watch) = watcher.check_and_watch_stat(path).await?;
    ensure!(stat.is_some(), "the node to delete is not there");
    let t0 = std::time::Instant::now();
    let deleting = owner.delete(path, None);
    let (deleted, event) = tokio::join!(deleting, watch.changed());
    let took = t0.elapsed();
    deleted?;
    ensure!(event.event_type == EventType::NodeDeleted, "unexpected event {event:?}");
    Ok(took)
}

fn ms(duration: Duration) -> String {
    format!("{:.2} ms", duration.as_secs_f64() * 1000.0)
}

fn summary(values: &[Duration]) -> (Duration, Duration, Duration) {
    let mut sorted = values.to_vec();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    (sorted[0], median, sorted[sorted.len() - 1])
}

/// Sessions the latch participants of `--server-load` are spread over, by default.
const LOAD_SESSIONS: usize = 10;

/// Waits (listing every 20 ms) until `n` participants' nodes exist under `path`,
/// and 500 ms more for what the joins do after their creates (the watches on the nodes ahead).
async fn all_joined(cs: &str, path: &str, n: usize) -> anyhow::Result<()> {
    let zk = zookeeper_client::Client::connect(cs).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while zk.list_children(path).await.map(|c| c.len()).unwrap_or(0) < n {
        ensure!(tokio::time::Instant::now() < deadline, "the participants never all joined");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(())
}

/// The server's counters before the joins, once all joined, and after the change.
type Counters = [zkr_benches::ServerCounters; 3];

async fn zkr_latch_load(
    server: &Deployment,
    path: &str,
    n: usize,
    spread: usize,
) -> anyhow::Result<Counters> {
    use zkr_recipes::leader::LeaderLatch;
    let cs = server.connect_string();
    let before = server.counters().await?;
    let mut sessions = Vec::new();
    for _ in 0..spread {
        sessions.push(zkr_connection::ZkClient::connect(&cs).await?);
    }
    let mut latches = Vec::new();
    for i in 0..n {
        latches.push(LeaderLatch::start(&sessions[i % spread], path, &format!("p{i}")).await?);
    }
    let elected = futures::future::select_all(latches.iter().map(|l| Box::pin(l.await_leadership())));
    let (term, leader, _) = tokio::time::timeout(Duration::from_secs(60), elected).await?;
    term?;
    all_joined(&cs, path, n).await?;
    let joined = server.counters().await?;
    latches[leader].close().await;
    let others =
        latches.iter().enumerate().filter(|(i, _)| *i != leader).map(|(_, l)| Box::pin(l.await_leadership()));
    tokio::time::timeout(Duration::from_secs(60), futures::future::select_all(others)).await?.0?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = server.counters().await?;
    for latch in &latches {
        latch.close().await;
    }
    Ok([before, joined, after])
}

async fn curator_latch_load(
    server: &Deployment,
    tool: &CuratorTool,
    path: &str,
    n: usize,
    spread: usize,
) -> anyhow::Result<Counters> {
    let cs = server.connect_string();
    let before = server.counters().await?;
    let args = ["latch-participants", &cs, path, &n.to_string(), &spread.to_string()];
    let mut peer = PeerProcess::spawn("CuratorTool latch-participants", tool.command(&args))?;
    peer.set_line_timeout(Duration::from_secs(300));
    peer.expect_line("READY").await?;
    all_joined(&cs, path, n).await?;
    let joined = server.counters().await?;
    peer.send_line("close-leader").await?;
    peer.expect_line("CHANGED").await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = server.counters().await?;
    peer.close_stdin();
    peer.wait().await?;
    Ok([before, joined, after])
}

/// `--server-load`: the latch's row of the server's load, zkr then Curator.
async fn server_load(server: &Deployment, tool: &CuratorTool, n: usize, spread: usize) -> anyhow::Result<()> {
    let mut table = Table::new(&[
        "library",
        "watches the server holds",
        "packets sent / join",
        "packets received / join",
        "packets sent for the change",
        "packets received for the change",
    ]);
    for (i, library) in ["zkr LeaderLatch", "Curator LeaderLatch"].into_iter().enumerate() {
        server.quiet().await?;
        let path = format!("/bench-leader-load/{i}");
        // The election path exists, as it does once a service has run: the joins are measured,
        // not the first wave's making of the path.
        let raw = zookeeper_client::Client::connect(&server.connect_string()).await?;
        raw.mkdir(&path, &CreateMode::Persistent.with_acls(Acls::anyone_all())).await?;
        eprintln!("[leader bench] server load: {n} participants, {library}");
        let [before, joined, after] = match i {
            0 => zkr_latch_load(server, &path, n, spread).await?,
            _ => curator_latch_load(server, tool, &path, n, spread).await?,
        };
        let (join_sent, join_received) = joined.per_operation(&before, n);
        let (change_sent, change_received) = after.per_operation(&joined, 1);
        table.row(vec![
            library.into(),
            joined.watches.to_string(),
            join_sent,
            join_received,
            change_sent,
            change_received,
        ]);
    }
    zkr_benches::print_report(
        &format!(
            "The server's load: {n} latch participants over {spread} sessions, then the leader closes its latch, on {}",
            server.describe()
        ),
        &table,
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut rounds = 5;
    let mut load_participants = None;
    let mut spread = LOAD_SESSIONS;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => rounds = args.next().context("--rounds N")?.parse()?,
            "--quick" => rounds = 2,
            "--server-load" => load_participants = Some(load_participants.unwrap_or(100)),
            "--participants" => load_participants = Some(args.next().context("--participants N")?.parse()?),
            "--sessions" => spread = args.next().context("--sessions N")?.parse::<usize>()?.max(1),
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let server = Deployment::from_env().await?;
    eprintln!("[leader bench] on {}", server.describe());
    let cs = server.connect_string();
    let tool = CuratorTool::locate().context("Apache Curator (libcurator-recipes-java)")?;
    if let Some(n) = load_participants {
        return server_load(&server, &tool, n, spread).await;
    }
    let mut table = Table::new(&["scenario", "library", "min", "median", "max"]);
    let mut floors = Vec::new();
    for round in 0..rounds.max(5) {
        floors.push(floor(&cs, &format!("/bench-leader-floor-{round}")).await?);
    }
    let floor_median = summary(&floors).1;
    {
        let (min, median, max) = summary(&floors);
        table.row(vec![
            "floor: a raw delete seen by a watcher".into(),
            "zookeeper-client".into(),
            ms(min),
            ms(median),
            ms(max),
        ]);
    }
    let mut medians = Vec::new();
    for (scenario, kill) in [("leader killed (SIGKILL)", true), ("leader closes its latch", false)] {
        let mut results = [(Library::Zkr, Vec::new()), (Library::Curator, Vec::new())];
        for round in 0..rounds {
            // Alternate which library goes first.
            let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let library = results[i].0;
                let path = format!("/bench-leader/{}/{}/{round}", u8::from(kill), i);
                eprintln!(
                    "[leader bench] {scenario}, round {} of {rounds}, {}",
                    round + 1,
                    ["zkr", "Curator"][i]
                );
                let took = failover(library, kill, &tool, &cs, &path).await?;
                results[i].1.push(took);
            }
        }
        let zkr_median = summary(&results[0].1).1;
        let curator_median = summary(&results[1].1).1;
        for (library, values) in &results {
            let (min, median, max) = &summary(values);
            let name = if *library == Library::Zkr { "zkr LeaderLatch" } else { "Curator LeaderLatch" };
            table.row(vec![scenario.to_string(), name.to_string(), ms(*min), ms(*median), ms(*max)]);
        }
        medians.push((scenario, zkr_median, curator_median));
    }
    zkr_benches::print_report(
        &format!(
            "Leader failover ({rounds} rounds per scenario and library, session timeout {SESSION_MS} ms, on {})",
            server.describe()
        ),
        &table,
    );
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
    for (scenario, zkr, curator) in medians {
        println!(
            "- {scenario}: zkr median / Curator median = {:.2}x; over the floor's median: zkr {:.2}x, Curator {:.2}x",
            ratio(zkr, curator),
            ratio(zkr, floor_median),
            ratio(curator, floor_median)
        );
    }
    Ok(())
}
