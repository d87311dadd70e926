//! `zkr demo`: the seeds' ticket seller, done properly, on an embedded 3-server ZooKeeper
//! ensemble.
//!
//! Several seller *processes* (`zkr demo-seller`), each with its own session, sell from one
//! stock kept in ZooKeeper under one `InterProcessMutex`. Each sale is a read of the stock and
//! one *guarded* multi-op (applied only while the seller's lock node exists): decrement the
//! stock at the version read, and create the order node, named by an order ID from the segment
//! generator and holding the price the seller's config watcher has. Midway the price is
//! changed, and then the ZooKeeper leader is killed. At the end: sold == stock, none oversold,
//! every order ID unique, every seller saw the new price, lock wait percentiles, and what the
//! leader kill did.

mod seller;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal as _, Write as _};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use parking_lot::Mutex;
use tokio::io::{AsyncBufReadExt, BufReader};
use zkr_connection::ZkClient;
use zkr_recipes::config::{ConfigPublisher, Json};
use zkr_testing::TestingCluster;
use zookeeper_client::CreateMode;

pub(crate) use seller::{run as run_seller, SellerArgs};

const FIRST_PRICE: u32 = 100;
const NEW_PRICE: u32 = 120;

#[derive(Debug, clap::Args)]
pub(crate) struct DemoArgs {
    /// Number of seller processes (each with its own session).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=32))]
    sellers: u64,
    /// Tickets in stock.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..))]
    tickets: u32,
}

/// What the coordinator learns from one seller's lines.
#[derive(Debug, Default)]
struct Seen {
    sold: u32,
    prices: BTreeSet<u32>,
    states: Vec<String>,
    done: Option<String>,
}

#[derive(Debug, Default)]
struct Shared {
    sellers: Vec<Seen>,
    order_ids: Vec<u64>,
    sales_at: BTreeMap<u32, u32>,
    waits: Vec<Duration>,
    /// When each sale was reported, for what happened around the leader kill.
    sale_times: Vec<Instant>,
}

fn parse_line(shared: &Mutex<Shared>, id: usize, line: &str) {
    let mut s = shared.lock();
    let fields: Vec<&str> = line.split_whitespace().collect();
    match fields.as_slice() {
        ["SOLD", order, price, wait_us] => {
            let (Ok(order), Ok(price), Ok(wait)) = (order.parse(), price.parse(), wait_us.parse()) else {
                return;
            };
            s.order_ids.push(order);
            *s.sales_at.entry(price).or_default() += 1;
            s.waits.push(Duration::from_micros(wait));
            s.sale_times.push(Instant::now());
            s.sellers[id].sold += 1;
        }
        ["PRICE", price] => {
            if let Ok(price) = price.parse() {
                s.sellers[id].prices.insert(price);
            }
        }
        ["STATE", state] => s.sellers[id].states.push((*state).to_owned()),
        ["DONE", ..] => s.sellers[id].done = Some(line.trim_start_matches("DONE ").to_owned()),
        _ => {}
    }
}

async fn list(zk: &ZkClient, path: &str) -> anyhow::Result<Vec<String>> {
    Ok(zk.retry(|s| async move { s.client().list_children(path).await }).await?)
}

async fn read_node(zk: &ZkClient, path: &str) -> anyhow::Result<Vec<u8>> {
    Ok(zk.retry(|s| async move { s.client().get_data(path).await }).await?.0)
}

pub(crate) async fn run(args: DemoArgs) -> anyhow::Result<crate::exit::Code> {
    let sellers = args.sellers as usize;
    let (cluster, connect) = match std::env::var("ZK_CONNECT") {
        Ok(cs) if !cs.is_empty() => (None, cs),
        _ => {
            eprintln!("starting an embedded 3-server ZooKeeper ensemble (the real server; ZKR_ZK_VERSION picks the release) ...");
            let cluster =
                TestingCluster::start(3).await.context("starting the embedded ZooKeeper ensemble")?;
            let cs = cluster.connect_string();
            (Some(cluster), cs)
        }
    };
    println!("ZooKeeper at {connect}");
    let root = format!("/zkr-demo-{}", std::process::id());
    let admin = ZkClient::builder(&connect).connect().await.context("connecting")?;
    admin
        .create(&format!("{root}/stock"), args.tickets.to_string().as_bytes(), CreateMode::Persistent)
        .await?;
    admin.create(&format!("{root}/orders"), b"", CreateMode::Persistent).await?;
    let prices = ConfigPublisher::new(&admin, Json);
    let price_path = format!("{root}/config/price");
    prices.set(&price_path, &FIRST_PRICE).await?;
    println!(
        "{} tickets at {root}/stock, price {FIRST_PRICE} at {price_path}; {sellers} seller processes, one session \
         each, one lock at {root}/lock; order IDs from the segment generator at {root}/ids/orders",
        args.tickets
    );

    let shared = Arc::new(Mutex::new(Shared {
        sellers: (0..sellers).map(|_| Seen::default()).collect(),
        ..Default::default()
    }));
    let exe = std::env::current_exe().context("locating the zkr binary")?;
    let mut children = Vec::new();
    let mut readers = Vec::new();
    for id in 0..sellers {
        let mut child = tokio::process::Command::new(&exe)
            .args(["demo-seller", "--root", &root, "--id", &id.to_string()])
            .env("ZK_CONNECT", &connect)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .context("starting a seller process")?;
        let mut lines = BufReader::new(child.stdout.take().context("seller stdout")?).lines();
        let shared = shared.clone();
        readers.push(tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                parse_line(&shared, id, &line);
            }
        }));
        children.push(child);
    }

    // Progress; the price change at a third, the leader kill at a half.
    let started = Instant::now();
    let interactive = std::io::stdout().is_terminal();
    let mut price_changed_at = None;
    let mut leader_kill: Option<(usize, u32, Instant)> = None;
    let mut exits = vec![None; sellers];
    while exits.iter().any(Option::is_none) {
        for (i, child) in children.iter_mut().enumerate() {
            if exits[i].is_none() {
                exits[i] = child.try_wait()?;
            }
        }
        let sold = shared.lock().order_ids.len() as u32;
        if interactive {
            print!(
                "\r  sold {sold:>5} / {}   price {}   {:>5.1}s{} ",
                args.tickets,
                if price_changed_at.is_some() { NEW_PRICE } else { FIRST_PRICE },
                started.elapsed().as_secs_f64(),
                leader_kill.map_or(String::new(), |(server, at, _)| format!(
                    "   leader (server {server}) killed at {at}"
                )),
            );
            let _ = std::io::stdout().flush();
        }
        if price_changed_at.is_none() && sold >= args.tickets / 3 {
            prices.set(&price_path, &NEW_PRICE).await?;
            price_changed_at = Some(sold);
            if !interactive {
                println!("  price changed to {NEW_PRICE} after {sold} sales");
            }
        }
        if let (Some(cluster), None) = (&cluster, leader_kill) {
            if sold >= args.tickets / 2 {
                if let Some(leader) = cluster.leader().await {
                    cluster.kill(leader)?;
                    leader_kill = Some((leader, sold, Instant::now()));
                    if !interactive {
                        println!("  killed the ZooKeeper leader (server {leader}) after {sold} sales");
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if interactive {
        println!();
    }
    for reader in readers {
        let _ = reader.await;
    }
    let shared = Arc::try_unwrap(shared).map_err(|_| anyhow::anyhow!("readers still running"))?;
    let s = shared.into_inner();
    let ok = report(&args, &admin, &root, &s, &exits, price_changed_at, leader_kill).await?;
    Ok(if ok { crate::exit::Code::Success } else { crate::exit::Code::Exit(crate::exit::Exit::Failure) })
}

async fn report(
    args: &DemoArgs,
    admin: &ZkClient,
    root: &str,
    s: &Shared,
    exits: &[Option<std::process::ExitStatus>],
    price_changed_at: Option<u32>,
    leader_kill: Option<(usize, u32, Instant)>,
) -> anyhow::Result<bool> {
    let left: u32 = String::from_utf8_lossy(&read_node(admin, &format!("{root}/stock")).await?)
        .parse()
        .context("stock")?;
    let orders = list(admin, &format!("{root}/orders")).await?;
    let lock_nodes = list(admin, &format!("{root}/lock")).await.unwrap_or_default();
    let sold = s.order_ids.len() as u32;
    let unique: BTreeSet<u64> = s.order_ids.iter().copied().collect();
    let mut waits = s.waits.clone();
    waits.sort();
    let pct = |p: f64| {
        waits
            .get(((waits.len() as f64 * p) as usize).min(waits.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };

    println!("\nreport");
    for (id, seller) in s.sellers.iter().enumerate() {
        let status = exits[id].map_or("?".to_owned(), |e| e.to_string());
        println!(
            "  seller {id}: sold {:>4}; saw prices {:?}; {}; {status}",
            seller.sold,
            seller.prices,
            seller.done.as_deref().unwrap_or("did not finish")
        );
    }
    println!(
        "  sold {sold} of {}; {} orders and {left} tickets left in ZooKeeper",
        args.tickets,
        orders.len()
    );
    println!(
        "  order IDs: {} unique of {sold}; sales at price {FIRST_PRICE}: {}, at {NEW_PRICE}: {}",
        unique.len(),
        s.sales_at.get(&FIRST_PRICE).copied().unwrap_or(0),
        s.sales_at.get(&NEW_PRICE).copied().unwrap_or(0)
    );
    let all_saw_new_price = s.sellers.iter().all(|x| x.prices.contains(&NEW_PRICE));
    match price_changed_at {
        Some(at) => println!(
            "  price changed to {NEW_PRICE} after {at} sales; {} of {} sellers saw it",
            s.sellers.iter().filter(|x| x.prices.contains(&NEW_PRICE)).count(),
            s.sellers.len()
        ),
        None => println!("  (sold out before the price change)"),
    }
    println!(
        "  lock wait p50 {:.1} ms, p99 {:.1} ms over {} sales",
        ms(pct(0.5)),
        ms(pct(0.99)),
        waits.len()
    );
    match leader_kill {
        Some((server, at, when)) => {
            let next = s.sale_times.iter().find(|t| **t > when).map(|t| t.duration_since(when));
            let count = |name: &str| {
                s.sellers.iter().map(|x| x.states.iter().filter(|st| *st == name).count()).sum::<usize>()
            };
            println!(
                "  leader kill: server {server} killed after {at} sales; next sale {} later; sellers saw Suspended {} \
                 times, Reconnected {}, Lost {}",
                next.map_or("never".to_owned(), |d| format!("{:.0} ms", ms(d))),
                count("Suspended"),
                count("Reconnected"),
                count("Lost")
            );
        }
        None => println!("  (no leader kill: an external ensemble, or sold out first)"),
    }
    let finished = exits.iter().all(|e| e.is_some_and(|e| e.success()));
    let ok = finished
        && sold == args.tickets
        && orders.len() == sold as usize
        && left == 0
        && unique.len() == s.order_ids.len()
        && lock_nodes.is_empty()
        && (price_changed_at.is_none() || all_saw_new_price);
    println!(
        "  {}: every ticket sold exactly once, none oversold, every order ID unique, every seller saw the new price, \
         no lock node left ({} found)",
        if ok { "OK" } else { "FAILED" },
        lock_nodes.len()
    );
    Ok(ok)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
