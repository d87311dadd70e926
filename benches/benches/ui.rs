//! `zkr ui` at size (issue 47 item 6): how long a change takes to reach the page, how much the
//! page is sent for it, and the process's memory, at 100,000 and 1,000,000 nodes.
//!
//! `cargo build --release -p zkr-cli && cargo bench -p zkr-benches --bench ui [-- --nodes N,N
//! | --writes N]`
//!
//! For each size in `--nodes` (default `100000,1000000`), on one fresh standalone server: a
//! tree of 1,000-child directories of 32-byte config nodes (pipelined raw creates, 500 in
//! flight), a lock with a holder and two waiters beside it; then `zkr ui` (the release binary
//! next to this bench's, or `ZKR_BIN`) over the tree, and one reader of its event stream
//! (`/events`, what the page reads). Measured: from the start of `zkr ui` to its first
//! initialized view; then `--writes` (default 20) changes one at a time, each timed from the
//! write's request to the event that shows it (half of them a new value of a config node the
//! page lists, half a lock handed over: the holder's node deleted and a new waiter queued,
//! until the next contender holds); the bytes of that event;
//! and `zkr ui`'s resident memory (`VmRSS`, and its peak `VmHWM`) after the writes.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use zkr_benches::wide::fill;
use zkr_benches::{fmt_ms, Table};
use zkr_testing::{proc_status_kib, TestingServer};
use zookeeper_client::{Acls, Client, CreateMode};

const ROOT: &str = "/bench-ui";
const FANOUT: usize = 1_000;
const DATA: &[u8] = b"config value of thirty-two bytes";

struct Options {
    sizes: Vec<usize>,
    writes: usize,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options { sizes: vec![100_000, 1_000_000], writes: 20 };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--nodes" => {
                let list = args.next().context("--nodes N,N")?;
                o.sizes = list.split(',').map(str::parse).collect::<Result<_, _>>().context("--nodes N,N")?;
            }
            "--writes" => o.writes = args.next().context("--writes N")?.parse().context("--writes N")?,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other}; usage: --nodes N,N | --writes N"),
        }
    }
    Ok(o)
}

/// The `zkr` binary: `ZKR_BIN`, or the release build beside this bench (`target/release/zkr`).
fn zkr_bin() -> anyhow::Result<PathBuf> {
    if let Some(bin) = std::env::var_os("ZKR_BIN") {
        return Ok(bin.into());
    }
    let exe = std::env::current_exe()?;
    let bin = exe.parent().and_then(|deps| deps.parent()).context("no target directory")?.join("zkr");
    ensure!(bin.exists(), "{} is missing: run `cargo build --release -p zkr-cli` first", bin.display());
    Ok(bin)
}

/// The tree: `nodes` config nodes in directories of [`FANOUT`], and a lock with three contenders.
async fn populate(client: &Client, nodes: usize) -> anyhow::Result<()> {
    let persistent = CreateMode::Persistent.with_acls(Acls::anyone_all());
    client.create(ROOT, b"", &persistent).await?;
    client.create(&format!("{ROOT}/lock"), b"", &persistent).await?;
    for contender in 0..3 {
        queue_on_lock(client, contender).await?;
    }
    let mut left = nodes;
    let mut dir = 0;
    while left > 0 {
        let parent = format!("{ROOT}/d{dir:04}");
        client.create(&parent, b"", &persistent).await?;
        let batch = left.min(FANOUT);
        fill(client, &parent, "n", DATA, batch).await?;
        left -= batch;
        dir += 1;
    }
    Ok(())
}

/// One more contender on the lock: an ephemeral sequential node in Curator's naming.
async fn queue_on_lock(client: &Client, n: usize) -> anyhow::Result<()> {
    let mode = CreateMode::EphemeralSequential.with_acls(Acls::anyone_all());
    client
        .create(&format!("{ROOT}/lock/_c_00000000-0000-0000-0000-{n:012}-lock-"), b"10.0.0.1", &mode)
        .await?;
    Ok(())
}

/// The event stream as the page reads it: each event's data, one at a time.
struct Events {
    lines: tokio::io::Lines<BufReader<TcpStream>>,
}

impl Events {
    async fn open(address: &str) -> anyhow::Result<Self> {
        let mut stream = TcpStream::connect(address).await?;
        // HTTP/1.0: the answer is delimited by the connection's end, not chunked.
        stream.write_all(b"GET /events HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").await?;
        Ok(Events { lines: BufReader::new(stream).lines() })
    }

    /// The next event's data.
    async fn next(&mut self) -> anyhow::Result<String> {
        loop {
            let line = self.lines.next_line().await?.context("the event stream ended")?;
            if let Some(data) = line.strip_prefix("data: ").or_else(|| line.strip_prefix("data:")) {
                return Ok(data.to_owned());
            }
        }
    }

    /// The next event whose data holds `needle`.
    async fn until(&mut self, needle: &str) -> anyhow::Result<String> {
        loop {
            let data = self.next().await?;
            if data.contains(needle) {
                return Ok(data);
            }
        }
    }
}

struct Ui {
    child: Child,
    address: String,
}

impl Ui {
    async fn start(bin: &PathBuf, connect: &str) -> anyhow::Result<Self> {
        let mut child = Command::new(bin)
            .args(["--connect", connect, "ui", "--listen", "127.0.0.1:0", "--root", ROOT])
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", bin.display()))?;
        let stdout = child.stdout.take().context("no stdout")?;
        let first = BufReader::new(stdout).lines().next_line().await?.context("zkr ui printed nothing")?;
        let address = first
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .with_context(|| format!("no URL in `{first}`"))?
            .to_owned();
        Ok(Ui { child, address })
    }

    fn kib(&self, field: &str) -> u64 {
        self.child.id().and_then(|pid| proc_status_kib(&pid.to_string(), field)).unwrap_or(0)
    }
}

struct Row {
    nodes: usize,
    load: Duration,
    first_bytes: usize,
    config: Vec<(Duration, usize)>,
    lock: Vec<(Duration, usize)>,
    rss_kib: u64,
    hwm_kib: u64,
}

async fn measure(bin: &PathBuf, nodes: usize, writes: usize) -> anyhow::Result<Row> {
    let server = TestingServer::start().await.context("starting a ZooKeeper server")?;
    let connect = server.connect_string();
    let client = Client::connect(&connect).await?;
    let filling = Instant::now();
    populate(&client, nodes).await?;
    eprintln!("{nodes} nodes made in {:.1} s", filling.elapsed().as_secs_f64());
    let started = Instant::now();
    let mut ui = Ui::start(bin, &connect).await?;
    let mut events = Events::open(&ui.address).await?;
    let first = events.until("\"initialized\":true").await?;
    let load = started.elapsed();
    let (mut config, mut lock) = (Vec::new(), Vec::new());
    for write in 0..writes {
        if write % 2 == 0 {
            // A node among the first 2,000 config nodes by path, which the page lists.
            let path = format!("{ROOT}/d0000/n{write:010}");
            let at = Instant::now();
            client.set_data(&path, format!("value {write:>26}").as_bytes(), None).await?;
            let data = events
                .until(&format!(r#""path":"{path}","layout":"curator","kind":"config","version":1"#))
                .await?;
            config.push((at.elapsed(), data.len()));
        } else {
            let mut children = client.list_children(&format!("{ROOT}/lock")).await?;
            children.sort_by_key(|n| n.rsplit('-').next().map(str::to_owned));
            let [holder, next, ..] = children.as_slice() else {
                anyhow::bail!("the lock has fewer than two contenders")
            };
            let at = Instant::now();
            let (deleted, queued) = tokio::join!(
                client.delete(&format!("{ROOT}/lock/{holder}"), None),
                queue_on_lock(&client, 3 + write)
            );
            deleted?;
            queued?;
            let data = events.until(&format!(r#""holders":[{{"node":"{next}""#)).await?;
            lock.push((at.elapsed(), data.len()));
        }
    }
    let row = Row {
        nodes,
        load,
        first_bytes: first.len(),
        config,
        lock,
        rss_kib: ui.kib("VmRSS"),
        hwm_kib: ui.kib("VmHWM"),
    };
    ui.child.kill().await?;
    Ok(row)
}

fn median(values: &[(Duration, usize)]) -> (Duration, usize) {
    let mut times: Vec<Duration> = values.iter().map(|v| v.0).collect();
    let mut sizes: Vec<usize> = values.iter().map(|v| v.1).collect();
    times.sort();
    sizes.sort_unstable();
    (
        times.get(times.len() / 2).copied().unwrap_or_default(),
        sizes.get(sizes.len() / 2).copied().unwrap_or(0),
    )
}

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let o = options()?;
    let bin = zkr_bin()?;
    let mut table = Table::new(&[
        "nodes",
        "start to first view",
        "first view",
        "config write to its event (median, worst)",
        "its event",
        "lock hand-over to its event (median, worst)",
        "its event",
        "RSS after",
        "peak RSS",
    ]);
    for &nodes in &o.sizes {
        let row = measure(&bin, nodes, o.writes).await?;
        let worst = |v: &[(Duration, usize)]| v.iter().map(|x| x.0).max().unwrap_or_default();
        let (config, config_bytes) = median(&row.config);
        let (lock, lock_bytes) = median(&row.lock);
        table.row(vec![
            row.nodes.to_string(),
            fmt_ms(row.load),
            kib(row.first_bytes),
            format!("{}, {}", fmt_ms(config), fmt_ms(worst(&row.config))),
            kib(config_bytes),
            format!("{}, {}", fmt_ms(lock), fmt_ms(worst(&row.lock))),
            kib(lock_bytes),
            format!("{:.1} MiB", row.rss_kib as f64 / 1024.0),
            format!("{:.1} MiB", row.hwm_kib as f64 / 1024.0),
        ]);
    }
    zkr_benches::print_report("zkr ui at size", &table);
    Ok(())
}
