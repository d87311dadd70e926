//! A process that draws IDs for the multi-process ID tests: `zkr-id-worker CONNECT KIND PATH
//! COUNT [IDENTITY]`, KIND one of `sequential`, `segment`, `snowflake`. Prints each ID on its
//! own line as soon as it has it, draws in small paced batches so that faults land mid-run,
//! and keeps going through errors (printed to stderr) until it has COUNT IDs.

use std::io::Write;
use std::time::Duration;

use zkr_connection::ZkClient;
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
    let zk = ZkClient::builder(connect.as_str())
        .session_timeout(Duration::from_secs(4))
        .connect()
        .await
        .expect("connect");
    // The first line names the session, for tests that expire it from outside.
    let session = zk.session().await.expect("session");
    println!("session {}", session.id());
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
    let mut out = std::io::stdout().lock();
    let mut drawn = 0;
    while drawn < count {
        match generator.next_batch(5.min(count - drawn)).await {
            Ok(ids) => {
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
