//! Leader-election failover: zkr's `LeaderLatch` against Apache Curator's `LeaderLatch`, each
//! as a pair of peer processes on the same server in one run.
//!
//! `cargo bench -p zkr-benches --bench leader [-- --rounds N]`
//!
//! Two scenarios, `--rounds` times each (default 5), for each library:
//! - **kill**: the leader process is killed with SIGKILL; failover is from the kill to the
//!   follower's `LEADER` line. Both use a 4 s session, so the session timeout (and the
//!   server's expiry tick) dominates.
//! - **close**: the leader closes its latch (stdin closed); hand-over is from then to the
//!   follower's `LEADER` line.
//!
//! Times are wall-clock milliseconds on one machine (the peers print `System.currentTimeMillis`
//! and `SystemTime::now`).

use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{ensure, Context};
use zkr_benches::Table;
use zkr_testing::peers::{CuratorTool, PeerProcess};
use zkr_testing::TestingServer;

const SESSION_MS: u64 = 4000;

fn epoch_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
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
    let t0 = epoch_ms();
    if kill {
        nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(leader.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        )?;
    } else {
        leader.close_stdin();
    }
    let line = follower.expect_line("LEADER").await?;
    let t1: u64 = line.split_whitespace().nth(1).context("LEADER <ms>")?.parse()?;
    let _ = leader.wait().await;
    follower.close_stdin();
    follower.wait().await?;
    Ok(Duration::from_millis(t1.saturating_sub(t0)))
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
    let server = TestingServer::start().await.context("starting a ZooKeeper server")?;
    let cs = server.connect_string();
    let tool = CuratorTool::locate().context("Apache Curator (libcurator-recipes-java)")?;
    let mut table = Table::new(&["scenario", "library", "min", "median", "max"]);
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
            let (min, median, max) = summary(values);
            let name = if *library == Library::Zkr { "zkr LeaderLatch" } else { "Curator LeaderLatch" };
            table.row(vec![
                scenario.to_string(),
                name.to_string(),
                format!("{} ms", min.as_millis()),
                format!("{} ms", median.as_millis()),
                format!("{} ms", max.as_millis()),
            ]);
        }
        medians.push((scenario, zkr_median, curator_median));
    }
    zkr_benches::print_report(
        &format!(
            "Leader failover ({rounds} rounds per scenario and library, session timeout {SESSION_MS} ms)"
        ),
        &table,
    );
    for (scenario, zkr, curator) in medians {
        println!(
            "- {scenario}: zkr median / Curator median = {:.2}x",
            zkr.as_secs_f64() / curator.as_secs_f64().max(1e-9)
        );
    }
    Ok(())
}
