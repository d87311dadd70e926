//! Lock-safe queue consumers for the multi-process queue tests: `zkr-queue-worker CONNECT
//! QUEUE LOCKS DONE WORK_MS [CONSUMERS]`. Each of CONSUMERS (default 1) consumers, all on one
//! `ZkClient` (one session, so a session id cannot tell them apart), takes items (UTF-8) from
//! the lock-safe `DistributedQueue` at QUEUE, prints `TAKEN <value>`, works WORK_MS, then acks
//! with a completion record `DONE/<value>-<uuid>` created in the same transaction and prints
//! `DONE <value>`. Errors go to stderr and it goes on, until killed.

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
    let (connect, queue, locks, done, work_ms, consumers) = match args.as_slice() {
        [_, c, q, l, d, w] => (c, q, l, d, w, "1"),
        [_, c, q, l, d, w, n] => (c, q, l, d, w, n.as_str()),
        _ => {
            eprintln!("usage: zkr-queue-worker CONNECT QUEUE LOCKS DONE WORK_MS [CONSUMERS]");
            std::process::exit(2);
        }
    };
    let work = Duration::from_millis(work_ms.parse().expect("WORK_MS is a number"));
    let consumers: usize = consumers.parse().expect("CONSUMERS is a number");
    let zk = ZkClient::builder(connect.as_str())
        .session_timeout(Duration::from_secs(3))
        .connect()
        .await
        .expect("connect");
    zkr_integration_tests::announce_sessions(&zk, "session");
    let queue = DistributedQueue::builder(&zk, queue, Utf8).lock_path(locks.as_str()).build().expect("queue");
    let consuming = (0..consumers).map(|_| consume(queue.clone(), done.clone(), work));
    futures::future::join_all(consuming).await;
}

async fn consume(queue: DistributedQueue<String>, done: String, work: Duration) {
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
