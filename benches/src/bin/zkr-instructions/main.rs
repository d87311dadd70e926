//! Client work at the floor (issue 32): instructions per operation, counted by valgrind's
//! callgrind, for zkr against the raw `zookeeper-client` sending the same requests.
//!
//! ```sh
//! make bench-instructions                       # builds, runs every row, prints the table
//! cargo run --release -p zkr-benches --bin zkr-instructions -- [--rows lock,queue] [--ops N] [--save-baseline]
//! ```
//!
//! Each row runs in a child process under `valgrind --tool=callgrind --separate-threads=yes`,
//! once with `N` operations and once with `2N` (after the same warm-up); the difference over
//! `N` is the measured thread's instructions per operation: connecting, the warm-up and the
//! exit cancel out. The measured thread runs a current-thread runtime, so the client's I/O
//! (zookeeper-client's session task, zkr's tasks) is counted with it; a writer the cache and
//! config rows need runs on a thread of its own and is not counted. The server is a separate
//! process. The table compares each row with `benches/instructions.baseline` and marks a row
//! whose count grew by more than 5% with `REGRESSION`.

mod callgrind;
mod rows;

use std::process::ExitCode;

use anyhow::Context;

const WARMUP: u64 = 20;
const BASELINE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/instructions.baseline");

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("measure") => measure(&args[1..]),
        _ => callgrind::drive(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zkr-instructions: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `measure ROW zkr|raw OPS CONNECT ROOT`: the child process valgrind runs.
fn measure(args: &[String]) -> anyhow::Result<()> {
    let [row, side, ops, cs, root] = args else {
        anyhow::bail!("usage: zkr-instructions measure ROW zkr|raw OPS CONNECT ROOT");
    };
    let ops: u64 = ops.parse().context("OPS")?;
    #[cfg(feature = "requests")]
    let snapshotter = requests::install();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let zk = zkr_connection::ZkClient::connect(cs.as_str()).await?;
        let raw = zookeeper_client::Client::connect(cs).await?;
        let on_zkr = side == "zkr";
        let mut measured = rows::Side::open(row, on_zkr, cs, &zk, &raw, root).await?;
        // Only the measured side's session stays open: the other's pings would count.
        if on_zkr {
            drop(raw);
        } else {
            zk.close().await;
        }
        for i in 0..WARMUP + ops {
            #[cfg(feature = "requests")]
            if i == WARMUP {
                eprintln!("REQUESTS before {:?}", requests::counts(&snapshotter));
            }
            measured
                .op(i + 1)
                .await
                .with_context(|| format!("{row} on {}, operation {i}", side_name(on_zkr)))?;
        }
        #[cfg(feature = "requests")]
        eprintln!("REQUESTS after {ops} more operations {:?}", requests::counts(&snapshotter));
        anyhow::Ok(())
    })
}

fn side_name(zkr: bool) -> &'static str {
    if zkr {
        "zkr"
    } else {
        "the raw client"
    }
}

/// zkr's requests counted by its own metrics (`--features requests`), by operation.
#[cfg(feature = "requests")]
mod requests {
    use std::collections::BTreeMap;

    use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

    pub fn install() -> Snapshotter {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().expect("the only recorder");
        snapshotter
    }

    pub fn counts(snapshotter: &Snapshotter) -> BTreeMap<String, u64> {
        let mut counts = BTreeMap::new();
        for (key, _, _, value) in snapshotter.snapshot().into_vec() {
            let key = key.key();
            if key.name() != "zkr_requests_total" {
                continue;
            }
            let op =
                key.labels().find(|l| l.key() == "op").map(|l| l.value().to_string()).unwrap_or_default();
            if let DebugValue::Counter(n) = value {
                *counts.entry(op).or_default() += n;
            }
        }
        counts
    }
}
