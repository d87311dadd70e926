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

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut rounds = 5;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => rounds = args.next().context("--rounds N")?.parse()?,
            "--quick" => rounds = 2,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let server = Deployment::from_env().await?;
    eprintln!("[leader bench] on {}", server.describe());
    let cs = server.connect_string();
    let tool = CuratorTool::locate().context("Apache Curator (libcurator-recipes-java)")?;
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
