//! A process that draws IDs for the multi-process ID tests: `zkr-id-worker CONNECT KIND PATH
//! COUNT [IDENTITY]`, KIND one of `sequential`, `segment`, `snowflake`. Prints each ID on its
//! own line as soon as it has it, draws in small paced batches so that faults land mid-run,
//! and keeps going through errors (printed to stderr) until it has COUNT IDs, or, with a
//! COUNT of 0, until its stdin closes.
//!
//! KIND `counter` increments a `DistributedAtomicLong` at PATH instead (`kazoo-counter`: a
//! `zkr_recipes::kazoo::Counter`, kazoo's text format), one increment at a time: it prints
//! `+ <invoked>` before each increment, then `<post value> <invoked> <returned>` for one that
//! succeeded and `unknown <invoked>` for one that may or may not have been applied
//! (`CounterError::Indeterminate`, or no answer in time): times on the machine's monotonic clock
//! (`zkr_integration_tests::history::now`), for the history check.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use zkr_connection::ZkClient;
use zkr_integration_tests::history::now;
use zkr_recipes::id::{
    IdGenerator, SegmentIdGenerator, SequentialIdGenerator, SnowflakeIdGenerator, StepPolicy,
};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, connect, kind, path, count, rest @ ..] = args.as_slice() else {
        eprintln!("usage: zkr-id-worker CONNECT KIND PATH COUNT [IDENTITY]");
        std::process::exit(2);
    };
    let count: usize = count.parse().expect("COUNT is a number");
    // The recipes' warnings (a sequential epoch whose counter went back) to stderr, for the
    // checker's log; `ZKR_WORKER_LOG` (a `tracing` filter) asks for more.
    let filter = std::env::var("ZKR_WORKER_LOG").unwrap_or_else(|_| "zkr_recipes=warn".to_owned());
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
    let zk = ZkClient::builder(connect.as_str())
        .session_timeout(Duration::from_secs(4))
        .connect()
        .await
        .expect("connect");
    // The first line names the session, and a line names every new one, for tests that
    // expire sessions from outside.
    zkr_integration_tests::announce_sessions(&zk, "session");
    if kind == "counter" || kind == "kazoo-counter" {
        count_up(&zk, path, count, kind == "kazoo-counter").await;
        zk.close().await;
        return;
    }
    let mut snowflake = None;
    let generator: Box<dyn IdGenerator> = match kind.as_str() {
        "sequential" => {
            Box::new(SequentialIdGenerator::with_epoch_capacity(&zk, path, 400).expect("generator"))
        }
        "segment" => Box::new(
            SegmentIdGenerator::builder(&zk, path).step(StepPolicy::Fixed(50)).build().expect("generator"),
        ),
        "snowflake" => {
            let mut builder = SnowflakeIdGenerator::builder(&zk, path).window(Duration::from_secs(2));
            if let Some(identity) = rest.first() {
                builder = builder.identity(identity.as_str()).reclaim_wait(Duration::from_secs(10));
            }
            let generator = builder.start().await.expect("generator");
            snowflake = Some(generator.clone());
            Box::new(generator)
        }
        other => panic!("unknown kind {other}"),
    };
    let stop = stop_on_stdin_eof(count);
    let mut drawn = 0;
    while (count == 0 || drawn < count) && !stop.load(Ordering::SeqCst) {
        let want = if count == 0 { 5 } else { 5.min(count - drawn) };
        let batch = tokio::time::timeout(Duration::from_secs(10), generator.next_batch(want)).await;
        let Ok(batch) = batch else {
            eprintln!("error: next_batch gave no answer within 10 s (drawn {drawn})");
            continue;
        };
        match batch {
            Ok(ids) => {
                // Locked per batch, never across an await: session lines come from a task.
                let mut out = std::io::stdout().lock();
                for id in &ids {
                    writeln!(out, "{id}").expect("stdout");
                }
                out.flush().expect("stdout");
                drawn += ids.len();
            }
            Err(e) => eprintln!("error: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    if let Some(snowflake) = snowflake {
        snowflake.close().await;
    }
    drop(generator);
    zk.close().await;
}

/// Increments the counter at `path` (in kazoo's format with `kazoo`) `count` times (0: until
/// stdin closes), printing each outcome as it comes.
async fn count_up(zk: &ZkClient, path: &str, count: usize, kazoo: bool) {
    use zkr_recipes::counters::{CounterError, DistributedAtomicLong};
    let policy = || zkr_connection::retry::RetryNTimes::new(20, Duration::from_millis(5));
    let curator = DistributedAtomicLong::new(zk, path, policy()).expect("counter");
    let kazoo = kazoo.then(|| zkr_recipes::kazoo::Counter::new(zk, path, 0i64, policy()).expect("counter"));
    let stop = stop_on_stdin_eof(count);
    let mut done = 0;
    let say = |line: &str| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}").expect("stdout");
        out.flush().expect("stdout");
    };
    while (count == 0 || done < count) && !stop.load(Ordering::SeqCst) {
        let invoked = now();
        say(&format!("+ {invoked}"));
        let increment = async {
            match &kazoo {
                Some(counter) => counter.add(1).await,
                None => curator.increment().await,
            }
        };
        let outcome = tokio::time::timeout(Duration::from_secs(10), increment).await;
        let line = match outcome {
            Ok(Ok(value)) if value.succeeded => format!("{} {invoked} {}", value.post_value, now()),
            Ok(Ok(_)) => {
                eprintln!("error: the increment lost every race");
                continue;
            }
            Ok(Err(CounterError::Indeterminate { .. })) => format!("unknown {invoked}"),
            Ok(Err(e)) => {
                eprintln!("error: {e}");
                continue;
            }
            Err(_) => {
                // The dropped increment may have been applied.
                eprintln!("error: increment gave no answer within 10 s");
                format!("unknown {invoked}")
            }
        };
        say(&line);
        done += 1;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A flag set when stdin closes (for a `count` of 0).
fn stop_on_stdin_eof(count: usize) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    if count == 0 {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
            stop.store(true, Ordering::SeqCst);
        });
    }
    stop
}
