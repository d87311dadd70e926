//! `zkr demo`: the seeds' ticket seller, done properly, on an embedded ZooKeeper.
//!
//! Several sellers, each with its own ZooKeeper session, sell from one stock kept in ZooKeeper
//! under one `InterProcessMutex`. Each sale is a read of the stock and one *guarded* multi-op
//! (it applies only while the seller's lock node exists): decrement the stock at the version
//! read, and create the order node. When a sale's reply is lost (the connection broke), the
//! seller looks for its order node to learn whether the sale happened: no sale is counted
//! twice or lost. Midway, one seller's session is killed on the server while it sells; it
//! carries on with a new session. At the end: orders == stock sold, nothing oversold.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use zkr_connection::ZkClient;
use zkr_recipes::locks::{InterProcessMutex, LockError};
use zkr_testing::TestingServer;
use zookeeper_client::CreateMode;

#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// Number of sellers (each with its own session).
    #[arg(long, default_value_t = 4)]
    sellers: usize,
    /// Tickets in stock.
    #[arg(long, default_value_t = 200)]
    tickets: u32,
}

#[derive(Debug, Default)]
struct SellerReport {
    sold: u32,
    waits: Vec<Duration>,
    refused_after_loss: u32,
    confirmed_after_lost_reply: u32,
    sessions: u64,
}

pub(crate) async fn run(args: DemoArgs) -> anyhow::Result<i32> {
    let (_server, connect) = match std::env::var("ZK_CONNECT") {
        Ok(cs) if !cs.is_empty() => (None, cs),
        _ => {
            eprintln!("starting an embedded ZooKeeper (the real server, from the OS packages) ...");
            let server = TestingServer::start().await.context("starting the embedded ZooKeeper")?;
            let cs = server.connect_string();
            (Some(server), cs)
        }
    };
    println!("ZooKeeper at {connect}");
    let root = format!("/zkr-demo-{}", std::process::id());
    let stock_path = format!("{root}/stock");
    let orders_path = format!("{root}/orders");
    let lock_path = format!("{root}/lock");
    let admin = ZkClient::builder(&connect).connect().await.context("connecting")?;
    admin.create(&stock_path, args.tickets.to_string().as_bytes(), CreateMode::Persistent).await?;
    admin.create(&orders_path, b"", CreateMode::Persistent).await?;
    println!(
        "{} tickets in stock at {stock_path}; {} sellers, one session each, one lock at {lock_path}",
        args.tickets, args.sellers
    );

    let sold_total = Arc::new(AtomicUsize::new(0));
    let mut sellers = Vec::new();
    let mut clients = Vec::new();
    for id in 0..args.sellers.max(1) {
        let zk = ZkClient::builder(&connect).session_timeout(Duration::from_secs(4)).connect().await?;
        clients.push(zk.clone());
        let mutex = InterProcessMutex::new(&zk, &lock_path)?;
        let paths = (stock_path.clone(), orders_path.clone());
        let sold_total = sold_total.clone();
        sellers.push(tokio::spawn(async move { sell(id, mutex, paths, sold_total).await }));
    }

    // Progress, and the fault: kill seller 0's session on the server when a third is sold.
    let started = Instant::now();
    let mut killed = None;
    while sellers.iter().any(|s| !s.is_finished()) {
        let sold = sold_total.load(Ordering::SeqCst);
        print!("\r  sold {sold:>5} / {}   {:>5.1}s ", args.tickets, started.elapsed().as_secs_f64());
        let _ = std::io::stdout().flush();
        if killed.is_none() && sold as u32 >= args.tickets / 3 {
            if let Some(session) = clients[0].try_session() {
                killed = Some(sold);
                let cs = connect.clone();
                tokio::spawn(async move { zkr_testing::expire_session(session.client(), &cs).await });
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!();

    let mut reports = BTreeMap::new();
    for (id, seller) in sellers.into_iter().enumerate() {
        reports.insert(id, seller.await.context("a seller panicked")??);
    }
    let (left, _) = admin
        .retry(|s| {
            let p = stock_path.clone();
            async move { s.client().get_data(&p).await }
        })
        .await?;
    let left: u32 = String::from_utf8_lossy(&left).parse().context("stock value")?;
    let sold: u32 = reports.values().map(|r| r.sold).sum();
    let orders = admin
        .retry(|s| {
            let p = orders_path.clone();
            async move { s.client().list_children(&p).await }
        })
        .await?;
    let mut waits: Vec<Duration> = reports.values().flat_map(|r| r.waits.iter().copied()).collect();
    waits.sort();
    let pct = |p: f64| {
        waits
            .get(((waits.len() as f64 * p) as usize).min(waits.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };

    println!("\nreport");
    for (id, r) in &reports {
        println!(
            "  seller {id}: sold {:>4}, sessions used {}, writes refused after losing the lock {}",
            r.sold, r.sessions, r.refused_after_loss
        );
    }
    println!(
        "  sold {sold} of {}; {} orders and {left} tickets left in ZooKeeper",
        args.tickets,
        orders.len()
    );
    println!(
        "  lock wait p50 {:.1} ms, p99 {:.1} ms over {} acquisitions",
        ms(pct(0.5)),
        ms(pct(0.99)),
        waits.len()
    );
    match killed {
        Some(at) => {
            let r0 = &reports[&0];
            println!(
                "  seller 0's session was killed on the server after {at} sales: it went on with session #{}; \
                 {} of its writes were refused because its lock was gone; {} sales had a lost reply and were \
                 confirmed by their order node",
                r0.sessions,
                r0.refused_after_loss,
                reports.values().map(|r| r.confirmed_after_lost_reply).sum::<u32>()
            );
        }
        None => println!("  (sold out before the session kill)"),
    }
    let lock_nodes = admin
        .retry(|s| {
            let p = lock_path.clone();
            async move { s.client().list_children(&p).await }
        })
        .await
        .unwrap_or_default();
    let ok = sold == args.tickets && orders.len() == sold as usize && left == 0 && lock_nodes.is_empty();
    println!(
        "  {}: every ticket sold exactly once, none oversold, no lock node left ({} found)",
        if ok { "OK" } else { "FAILED" },
        lock_nodes.len()
    );
    Ok(if ok { 0 } else { 1 })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn sell(
    id: usize,
    mutex: InterProcessMutex,
    (stock_path, orders_path): (String, String),
    sold_total: Arc<AtomicUsize>,
) -> anyhow::Result<SellerReport> {
    let mut report = SellerReport::default();
    let mut attempt = 0u64;
    loop {
        let asked = Instant::now();
        let guard = mutex.acquire().await.with_context(|| format!("seller {id} acquiring"))?;
        report.waits.push(asked.elapsed());
        report.sessions = report.sessions.max(guard.session().generation());
        let read = guard.session().client().get_data(&stock_path).await;
        let Ok((data, stat)) = read else {
            let _ = guard.release().await;
            continue;
        };
        let stock: u32 = String::from_utf8_lossy(&data).parse().unwrap_or(0);
        if stock == 0 {
            let _ = guard.release().await;
            return Ok(report);
        }
        // One guarded multi-op: applies only while our lock node exists, and only if nobody
        // changed the stock since we read it.
        attempt += 1;
        let order = format!("{orders_path}/order-{id}-{attempt}");
        let outcome = async {
            let mut sale = guard.check_writer()?;
            sale.add_set_data(&stock_path, (stock - 1).to_string().as_bytes(), Some(stat.version))
                .map_err(LockError::from)?;
            sale.add_create(
                &order,
                b"",
                &CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()),
            )
            .map_err(LockError::from)?;
            sale.commit().await.map_err(|e| LockError::from(zookeeper_client::Error::from(e)))
        }
        .await;
        let sold = match outcome {
            Ok(_) => true,
            Err(LockError::Connection(zkr_connection::Error::Zk(
                zookeeper_client::Error::RuntimeInconsistent,
            ))) => {
                report.refused_after_loss += 1;
                false
            }
            Err(e) if e.is_ambiguous() => {
                // The reply was lost: did the sale happen? Its order node says.
                // Read on whatever session is current: ours may just have expired.
                let zk = mutex.internals().zk();
                let options = zkr_connection::RetryOptions::default().across_sessions(true);
                let confirmed = loop {
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
                let happened = confirmed.is_some();
                report.confirmed_after_lost_reply += u32::from(happened);
                happened
            }
            Err(_) => false,
        };
        if sold {
            report.sold += 1;
            sold_total.fetch_add(1, Ordering::SeqCst);
        }
        let _ = guard.release().await;
    }
}
