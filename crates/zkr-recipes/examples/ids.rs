//! The three ID generators side by side: sequential (globally ordered), segment (dense, from
//! memory) and snowflake (time-ordered, from memory).
//!
//! `cargo run -p zkr-recipes --example ids` (an embedded ZooKeeper), or with `ZK_CONNECT` set
//! to use yours.

use zkr_connection::ZkClient;
use zkr_recipes::id::{IdGenerator, SegmentIdGenerator, SequentialIdGenerator, SnowflakeIdGenerator};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (_server, connect) = zkr_testing::env_or_embedded().await?;
    let zk = ZkClient::connect(connect).await?;

    let sequential = SequentialIdGenerator::new(&zk, "/examples/ids/invoices")?;
    println!("sequential: {:?}", sequential.next_batch(5).await?);

    let segment = SegmentIdGenerator::new(&zk, "/examples/ids/orders")?;
    println!("segment:    {:?}", segment.next_batch(5).await?);

    let snowflake =
        SnowflakeIdGenerator::builder(&zk, "/examples/ids/events").identity("example").start().await?;
    let id = snowflake.next().await?;
    let parts = snowflake.layout().decompose(id);
    println!(
        "snowflake:  {id} = worker {} at {} ms, sequence {}",
        parts.worker_id, parts.timestamp_ms, parts.sequence
    );
    snowflake.close().await;
    drop((sequential, segment, snowflake));
    zk.close().await;
    Ok(())
}
