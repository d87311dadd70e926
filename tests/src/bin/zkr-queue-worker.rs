//! A lock-safe queue consumer for the multi-process queue tests: `zkr-queue-worker CONNECT
//! QUEUE LOCKS DONE WORK_MS`. Takes items (UTF-8) from the lock-safe `DistributedQueue` at
//! QUEUE, prints `TAKEN <value>`, works WORK_MS, then acks with a completion record
//! `DONE/<value>-<uuid>` created in the same transaction and prints `DONE <value>`. Errors go
//! to stderr and it goes on, until killed.

use std::io::Write;
use std::time::Duration;

use zkr_connection::ZkClient;
use zkr_recipes::queues::{DistributedQueue, Utf8};

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, connect, queue, locks, done, work_ms] = args.as_slice() else {
        eprintln!("usage: zkr-queue-worker CONNECT QUEUE LOCKS DONE WORK_MS");
        std::process::exit(2);
    };
    let work = Duration::from_millis(work_ms.parse().expect("WORK_MS is a number"));
    let zk = ZkClient::builder(connect.as_str())
        .session_timeout(Duration::from_secs(3))
        .connect()
        .await
        .expect("connect");
    zkr_integration_tests::announce_sessions(&zk, "session");
    let queue = DistributedQueue::builder(&zk, queue, Utf8).lock_path(locks.as_str()).build().expect("queue");
    loop {
        let item = match queue.take().await {
            Ok(item) => item,
            Err(e) => {
                eprintln!("take: {e}");
                continue;
            }
        };
        let value = item.values().join(",");
        say(&format!("TAKEN {value}"));
        tokio::time::sleep(work).await;
        let record = format!("{done}/{value}-{}", uuid::Uuid::new_v4().simple());
        match item.ack_and_create(&record, b"").await {
            Ok(_) => say(&format!("DONE {value}")),
            Err(e) => eprintln!("ack {value}: {e}"),
        }
    }
}
