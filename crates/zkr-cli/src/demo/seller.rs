//! One seller process of the demo (`zkr demo-seller`, hidden): its own session, the shared
//! lock, the price from the config watcher, order IDs from the segment generator. It reports
//! on stdout, one line per event, for the coordinator to read.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use zkr_connection::ZkClient;
use zkr_recipes::config::{ConfigEvent, ConfigWatcher, Json};
use zkr_recipes::id::{IdGenerator, SegmentIdGenerator, StepPolicy};
use zkr_recipes::locks::{InterProcessMutex, LockError};
use zookeeper_client::CreateMode;

use crate::connect::ConnectArgs;
use zkr_connection::Classify as _;

/// `zkr demo-seller`: one seller of the demo.
#[derive(Debug, clap::Args)]
pub(crate) struct SellerArgs {
    /// The demo's root path.
    #[arg(long)]
    root: String,
    /// This seller's number.
    #[arg(long)]
    id: usize,
}

/// What a seller tells the coordinator at the end.
#[derive(Debug, Default)]
struct Tally {
    sold: u32,
    sessions: u64,
    refused_after_loss: u32,
    confirmed_after_lost_reply: u32,
}

pub(crate) async fn run(args: SellerArgs, connect: &ConnectArgs) -> anyhow::Result<crate::exit::Code> {
    let root = args.root;
    let zk = ZkClient::builder(&connect.connect)
        .session_timeout(Duration::from_secs(6))
        .connect()
        .await
        .context("connecting")?;
    let mut states = zk.state_changes();
    tokio::spawn(async move {
        while let Some(state) = states.next().await {
            println!("STATE {state:?}");
        }
    });
    let price = ConfigWatcher::<u32>::builder(&zk, &format!("{root}/config/price"), Json).start().await?;
    if let Some(p) = price.get() {
        println!("PRICE {}", p.value);
    }
    let mut changes = price.changes();
    tokio::spawn(async move {
        while let Some(event) = changes.next().await {
            if let ConfigEvent::Changed { new: Some(p), .. } = event {
                println!("PRICE {}", p.value);
            }
        }
    });
    let ids = SegmentIdGenerator::builder(&zk, &format!("{root}/ids/orders"))
        .step(StepPolicy::Fixed(20))
        .build()?;
    let mutex = InterProcessMutex::new(&zk, &format!("{root}/lock"))?;
    let tally = sell(args.id, &root, &mutex, &ids, &price).await?;
    println!(
        "DONE sold={} sessions={} refused={} confirmed={}",
        tally.sold, tally.sessions, tally.refused_after_loss, tally.confirmed_after_lost_reply
    );
    // Every recipe lets go of the session, so that closing it does not wait.
    drop((mutex, ids, price));
    zk.close().await;
    Ok(crate::exit::Code::Success)
}

/// Sells until the stock is empty. Each sale: take the lock, read the stock, and one guarded
/// multi-op (applied only while our lock node exists, and only if the stock is still at the
/// version read): decrement the stock and create the order node, named by its order ID.
async fn sell(
    id: usize,
    root: &str,
    mutex: &InterProcessMutex,
    ids: &SegmentIdGenerator,
    price: &ConfigWatcher<u32>,
) -> anyhow::Result<Tally> {
    let stock_path = format!("{root}/stock");
    let mut tally = Tally::default();
    loop {
        let asked = Instant::now();
        let guard = match mutex.acquire().await {
            Ok(guard) => guard,
            Err(e) => {
                eprintln!("seller {id}: acquiring failed ({e}); trying again");
                continue;
            }
        };
        let waited = asked.elapsed();
        tally.sessions = tally.sessions.max(guard.session().generation());
        let Ok((data, stat)) = guard.session().client().get_data(&stock_path).await else {
            let _ = guard.release().await;
            continue;
        };
        let stock: u32 = String::from_utf8_lossy(&data).parse().context("the stock node")?;
        if stock == 0 {
            let _ = guard.release().await;
            return Ok(tally);
        }
        let order_id = ids.next().await?;
        let price_now = price.get().map_or(0, |p| *p.value);
        let order = format!("{root}/orders/{order_id:012}");
        let record = format!(r#"{{"seller":{id},"price":{price_now}}}"#);
        let outcome = async {
            let sale = guard
                .transaction()?
                .set_data(&stock_path, (stock - 1).to_string().as_bytes(), Some(stat.version))
                .create(&order, record.as_bytes(), CreateMode::Persistent);
            guard.commit(sale).await
        }
        .await;
        let sold = match outcome {
            Ok(_) => true,
            Err(LockError::Lost { .. }) => {
                // The check on our lock node failed, or the guard knew the lock was lost (a
                // session ended, or the connection was suspended past the policy). Nothing
                // was written.
                tally.refused_after_loss += 1;
                false
            }
            Err(e) if e.is_ambiguous() => {
                // The reply was lost: did the sale happen? Its order node says. Read on
                // whatever session is current: ours may just have expired.
                let zk = mutex.internals().zk();
                let options = zkr_connection::RetryOptions::default().across_sessions(true);
                let found = loop {
                    let read = zk
                        .retry_with(options.clone(), |s| {
                            let o = order.clone();
                            async move { s.client().check_stat(&o).await }
                        })
                        .await;
                    match read {
                        Ok(stat) => break stat,
                        Err(zkr_connection::Error::Closed) => {
                            anyhow::bail!("seller {id}: the connection closed")
                        }
                        Err(_) => continue,
                    }
                };
                tally.confirmed_after_lost_reply += u32::from(found.is_some());
                found.is_some()
            }
            Err(_) => false,
        };
        if sold {
            tally.sold += 1;
            println!("SOLD {order_id} {price_now} {}", waited.as_micros());
        }
        let _ = guard.release().await;
    }
}
