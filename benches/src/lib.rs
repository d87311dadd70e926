//! Shared helpers for zkr's benchmarks (`benches/lock/`: zkr's `InterProcessMutex` against
//! Apache Curator's and `zookeeper-client`'s `Client::lock` on one ZooKeeper server).
//!
//! - [`BenchOptions`]: the command line (`--seconds N`, `--quick`, `--only SCENARIO`);
//! - [`Window`], [`Span`], [`run_loop`]: a warm-up, then a measurement window in which only
//!   operations that start and end inside it count (as `CuratorTool.java` counts them);
//! - [`Latencies`], [`Measurement`]: nearest-rank percentiles and rates, and Curator's
//!   `RESULT` lines parsed into the same shape;
//! - [`peak_rss_kb`], [`machine_facts`], [`filesystem_of`]: what the report says about the
//!   process and the machine;
//! - [`Table`] and the `fmt_*` functions: the markdown output;
//! - [`wide`]: one parent with very many children, and Curator runs bounded in time with the
//!   Java client's `jute.maxbuffer` at its default or raised.

mod deploy;
mod load;
pub mod wide;

pub use deploy::{Deployment, ServerCounters};
pub use load::Load;

use std::fmt::Write as _;
use std::future::Future;
use std::time::{Duration, Instant};

/// The warm-up before every measurement window; `CuratorTool.java` uses the same.
pub const WARMUP: Duration = Duration::from_secs(1);

/// The scenarios of the lock benchmark, in the order they run.
pub const SCENARIOS: [&str; 5] = ["uncontended", "contended", "inprocess", "waiters", "requests"];

/// The usage text of the lock benchmark.
pub const USAGE: &str = "usage: cargo bench -p zkr-benches --bench lock -- [--seconds N] [--quick] \
[--only SCENARIO[,SCENARIO...]] [--zkr-waiters N] [--peer-waiters N]
  --seconds N        measurement window of each measurement, in seconds (default 5; --quick: 1)
  --quick            1 s windows and small waiter counts (zkr 1000, the others 300)
  --only S           run only these scenarios (repeatable or comma-separated):
                     uncontended, contended, inprocess, waiters, requests
  --zkr-waiters N    zkr's large waiters run (default 10000; --quick: 1000)
  --peer-waiters N   Curator's, zookeeper-client's and zkr's like-for-like waiters runs
                     (default 1000; --quick: 300)";

/// The lock benchmark's command-line options.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// The measurement window of each measurement, in seconds.
    pub seconds: f64,
    /// Small sizes (`--quick`).
    pub quick: bool,
    /// The scenarios to run; `None` for all.
    pub only: Option<Vec<String>>,
    /// `--zkr-waiters`: overrides [`zkr_waiters`](Self::zkr_waiters()).
    pub zkr_waiters: Option<usize>,
    /// `--peer-waiters`: overrides [`peer_waiters`](Self::peer_waiters()).
    pub peer_waiters: Option<usize>,
    /// The arguments as given after `--`, without the `--bench` flag cargo adds.
    pub user_args: Vec<String>,
}

impl BenchOptions {
    /// Parses the arguments after the program name. `--bench` (which `cargo bench` passes to
    /// every bench binary) is ignored.
    ///
    /// # Errors
    /// A message for an unknown flag, a missing or bad value, or an unknown scenario; the
    /// message `help` for `--help`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut seconds = None;
        let mut quick = false;
        let mut only: Option<Vec<String>> = None;
        let (mut zkr_waiters, mut peer_waiters) = (None, None);
        let mut user_args = Vec::new();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            if arg == "--bench" {
                continue;
            }
            user_args.push(arg.clone());
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag.to_string(), Some(value.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = |name: &str| -> Result<String, String> {
                match inline.clone() {
                    Some(v) => Ok(v),
                    None => {
                        let v = args.next().ok_or_else(|| format!("{name} needs a value"))?;
                        user_args.push(v.clone());
                        Ok(v)
                    }
                }
            };
            match flag.as_str() {
                "--help" | "-h" => return Err("help".to_string()),
                "--quick" => quick = true,
                "--seconds" => {
                    let v = value("--seconds")?;
                    let s: f64 = v.parse().map_err(|_| format!("--seconds: not a number: `{v}`"))?;
                    if !(s > 0.0 && s <= 3600.0) {
                        return Err(format!("--seconds must be in (0, 3600], not {v}"));
                    }
                    seconds = Some(s);
                }
                "--only" => {
                    let v = value("--only")?;
                    for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                        if !SCENARIOS.contains(&name) {
                            return Err(format!(
                                "unknown scenario `{name}` (known: {})",
                                SCENARIOS.join(", ")
                            ));
                        }
                        only.get_or_insert_with(Vec::new).push(name.to_string());
                    }
                }
                "--zkr-waiters" | "--peer-waiters" => {
                    let v = value(&flag)?;
                    let n: usize = v.parse().map_err(|_| format!("{flag}: not a count: `{v}`"))?;
                    if n == 0 {
                        return Err(format!("{flag} must be at least 1"));
                    }
                    if flag == "--zkr-waiters" {
                        zkr_waiters = Some(n);
                    } else {
                        peer_waiters = Some(n);
                    }
                }
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        let seconds = seconds.unwrap_or(if quick { 1.0 } else { 5.0 });
        Ok(BenchOptions { seconds, quick, only, zkr_waiters, peer_waiters, user_args })
    }

    /// Should `scenario` run?
    pub fn runs(&self, scenario: &str) -> bool {
        self.only.as_ref().is_none_or(|only| only.iter().any(|s| s == scenario))
    }

    /// The number of waiters for zkr's large waiters run: 10,000 (1,000 with `--quick`) unless
    /// `--zkr-waiters` says otherwise.
    pub fn zkr_waiters(&self) -> usize {
        if let Some(n) = self.zkr_waiters {
            n
        } else if self.quick {
            1_000
        } else {
            10_000
        }
    }

    /// The number of waiters for Curator, `zookeeper-client` and zkr's like-for-like run: 1,000
    /// (300 with `--quick`) unless `--peer-waiters` says otherwise.
    pub fn peer_waiters(&self) -> usize {
        if let Some(n) = self.peer_waiters {
            n
        } else if self.quick {
            300
        } else {
            1_000
        }
    }
}

/// What a side-by-side benchmark needs: the servers started for the run (a [`Deployment`]),
/// Apache Curator's peer tool, and a zkr connection manager on them.
#[derive(Debug)]
pub struct Setup {
    /// The servers (stopped when dropped).
    pub server: Deployment,
    /// Its connect string.
    pub connect_string: String,
    /// Curator 5.4 as a peer process.
    pub curator: zkr_testing::peers::CuratorTool,
    /// A zkr connection manager on the server.
    pub zk: zkr_connection::ZkClient,
}

impl Setup {
    /// Starts the servers ([`Deployment::from_env`]), finds Curator and connects.
    ///
    /// # Errors
    /// The server would not start, Curator is not installed, or the connection failed.
    pub async fn start() -> anyhow::Result<Self> {
        use anyhow::Context as _;
        let server = Deployment::from_env().await?;
        eprintln!("[bench] on {}", server.describe());
        let connect_string = server.connect_string();
        let curator =
            zkr_testing::peers::CuratorTool::locate().context("Apache Curator (libcurator-recipes-java)")?;
        let zk = zkr_connection::ZkClient::connect(connect_string.as_str()).await?;
        Ok(Setup { server, connect_string, curator, zk })
    }
}

/// Prints a benchmark's report: `## <title>`, the machine's facts, then the table (markdown).
pub fn print_report(title: &str, table: &Table) {
    println!("## {title}\n");
    for (k, v) in machine_facts() {
        println!("- {k}: {v}");
    }
    println!("\n{}", table.render());
}

/// The command line of the smaller benchmarks: `--seconds N` (default 5) or `--quick` (1 s),
/// each measurement window's length. Cargo's own `--bench` is skipped.
///
/// # Errors
/// An unknown argument or a malformed number.
pub fn window_seconds(args: impl IntoIterator<Item = String>) -> anyhow::Result<f64> {
    use anyhow::Context as _;
    let mut seconds = 5.0;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => seconds = 1.0,
            "--seconds" => seconds = args.next().context("--seconds N")?.parse().context("--seconds N")?,
            "--bench" => {}
            other => anyhow::bail!("unknown argument {other}; usage: --seconds N | --quick"),
        }
    }
    Ok(seconds)
}

/// A warm-up followed by a measurement window.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The end of the warm-up: the start of the measurement window.
    pub start: Instant,
    /// The end of the measurement window.
    pub end: Instant,
    /// The length of the measurement window, in seconds.
    pub seconds: f64,
}

impl Window {
    /// A window of `seconds` that starts after a [`WARMUP`] from now.
    pub fn after_warmup(seconds: f64) -> Self {
        let start = Instant::now() + WARMUP;
        Window { start, end: start + Duration::from_secs_f64(seconds), seconds }
    }

    /// Has the window ended?
    pub fn is_over(&self) -> bool {
        Instant::now() >= self.end
    }

    /// Does `span` count: did it start and end inside the window?
    pub fn counts(&self, span: Span) -> bool {
        span.start >= self.start && span.end <= self.end
    }
}

/// The measured part of one operation: from `start` to `end`.
#[derive(Debug, Clone, Copy)]
pub struct Span {
    /// When the measured part started.
    pub start: Instant,
    /// When it ended.
    pub end: Instant,
}

impl Span {
    /// A span from `start` to now.
    pub fn since(start: Instant) -> Self {
        Span { start, end: Instant::now() }
    }

    /// Its length.
    pub fn duration(&self) -> Duration {
        self.end.saturating_duration_since(self.start)
    }
}

/// Calls `op` again and again until `window` is over; records the [`Span`] each call returns
/// when the window [counts](Window::counts) it. Stops at the first error.
///
/// # Errors
/// The first error of `op`.
pub async fn run_loop<F, Fut, E>(window: Window, mut op: F) -> Result<Latencies, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Span, E>>,
{
    let mut latencies = Latencies::default();
    while !window.is_over() {
        let span = op().await?;
        if window.counts(span) {
            latencies.push(span.duration());
        }
    }
    Ok(latencies)
}

/// Latencies of the operations counted in a window.
#[derive(Debug, Default, Clone)]
pub struct Latencies {
    values: Vec<Duration>,
}

impl Latencies {
    /// Adds one.
    pub fn push(&mut self, latency: Duration) {
        self.values.push(latency);
    }

    /// Adds all of `other`'s.
    pub fn extend(&mut self, other: Latencies) {
        self.values.extend(other.values);
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// None at all?
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The nearest-rank percentile `p` (0.0..=1.0), as `CuratorTool.java` computes it; zero when
    /// empty.
    pub fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.values.clone();
        sorted.sort_unstable();
        nearest_rank(&sorted, p)
    }

    /// The count, rate and percentiles over a window of `seconds`.
    pub fn measurement(&self, seconds: f64) -> Measurement {
        let mut sorted = self.values.clone();
        sorted.sort_unstable();
        Measurement {
            ops: sorted.len() as u64,
            seconds,
            p50: nearest_rank(&sorted, 0.50),
            p99: nearest_rank(&sorted, 0.99),
        }
    }
}

fn nearest_rank(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Operations counted in a window, their rate and latency percentiles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// Operations that started and ended inside the window.
    pub ops: u64,
    /// The window, in seconds.
    pub seconds: f64,
    /// Median latency.
    pub p50: Duration,
    /// 99th percentile latency.
    pub p99: Duration,
}

impl Measurement {
    /// Combines measurements of the same thing taken in several rounds: operations and windows
    /// add up (so the rate is over all rounds), and the percentiles are the means of the
    /// rounds' percentiles (the raw latencies of a peer process are not available).
    pub fn combine(parts: &[Measurement]) -> Measurement {
        let n = parts.len().max(1) as u32;
        Measurement {
            ops: parts.iter().map(|m| m.ops).sum(),
            seconds: parts.iter().map(|m| m.seconds).sum(),
            p50: parts.iter().map(|m| m.p50).sum::<Duration>() / n,
            p99: parts.iter().map(|m| m.p99).sum::<Duration>() / n,
        }
    }

    /// Operations per second.
    pub fn per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.ops as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// Parses `CuratorTool`'s `RESULT ops=N seconds=S p50_us=X p99_us=Y`.
    ///
    /// # Errors
    /// A message naming the missing or malformed field.
    pub fn from_result_line(line: &str) -> Result<Self, String> {
        let fields = zkr_testing::peers::parse_result(line);
        let field = |key: &str| -> Result<&str, String> {
            fields
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
                .ok_or_else(|| format!("no `{key}=` in `{line}`"))
        };
        let number = |key: &str| -> Result<f64, String> {
            let v = field(key)?;
            v.parse::<f64>().map_err(|_| format!("`{key}={v}` is not a number in `{line}`"))
        };
        Ok(Measurement {
            ops: number("ops")? as u64,
            seconds: number("seconds")?,
            p50: Duration::from_micros(number("p50_us")? as u64),
            p99: Duration::from_micros(number("p99_us")? as u64),
        })
    }
}

/// The `key=value` fields of a line such as `QUEUED n=10 rss_kb=5000`, as numbers.
///
/// # Errors
/// A message naming a missing or non-numeric field.
pub fn numeric_field(line: &str, key: &str) -> Result<u64, String> {
    let fields = zkr_testing::peers::parse_result(line);
    let (_, v) = fields.iter().find(|(k, _)| k == key).ok_or_else(|| format!("no `{key}=` in `{line}`"))?;
    v.parse().map_err(|_| format!("`{key}={v}` is not a non-negative integer in `{line}`"))
}

/// This process's peak resident set size (`VmHWM`) in kB.
pub fn peak_rss_kb() -> Option<u64> {
    zkr_testing::proc_status_kib("self", "VmHWM")
}

/// Facts about the machine for the report: processors, CPU model, memory, kernel.
pub fn machine_facts() -> Vec<(String, String)> {
    let mut facts = Vec::new();
    let nproc = std::thread::available_parallelism().map(|n| n.get().to_string()).unwrap_or_default();
    facts.push(("nproc".to_string(), nproc));
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let processors = cpuinfo.lines().filter(|l| l.starts_with("processor")).count();
    facts.push(("processors in /proc/cpuinfo".to_string(), processors.to_string()));
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, m)| m.trim()))
        .unwrap_or("unknown");
    facts.push(("CPU model".to_string(), model.to_string()));
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    if let Some(kb) = meminfo.lines().find_map(|l| {
        l.strip_prefix("MemTotal:").and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    }) {
        facts.push(("memory".to_string(), format!("{:.1} GiB", kb as f64 / (1024.0 * 1024.0))));
    }
    if let Ok(kernel) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        facts.push(("kernel".to_string(), kernel.trim().to_string()));
    }
    facts
}

/// The file system type and device that hold `path` (the longest mount point that contains it
/// in `/proc/mounts`), such as `ext4 /dev/vda`.
pub fn filesystem_of(path: &std::path::Path) -> Option<String> {
    let path = std::fs::canonicalize(path).ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|line| {
            let mut parts = line.split_whitespace();
            let device = parts.next()?;
            let mount = parts.next()?;
            let fstype = parts.next()?;
            path.starts_with(mount).then(|| (mount.len(), format!("{fstype} {device} (mounted at {mount})")))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, text)| text)
}

/// A markdown table, columns padded to line up in plain text too.
#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Self {
        Table { headers: headers.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }

    /// Adds a row (missing cells are left empty, extra cells dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as markdown.
    pub fn render(&self) -> String {
        let columns = self.headers.len();
        let cell = |row: &[String], i: usize| row.get(i).cloned().unwrap_or_default();
        let widths: Vec<usize> = (0..columns)
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| cell(r, i).chars().count())
                    .chain(std::iter::once(self.headers[i].chars().count()))
                    .max()
                    .unwrap_or(3)
                    .max(3)
            })
            .collect();
        let mut out = String::new();
        let line = |out: &mut String, cells: Vec<String>| {
            out.push('|');
            for (i, c) in cells.iter().enumerate() {
                let _ = write!(out, " {c:<w$} |", w = widths[i]);
            }
            out.push('\n');
        };
        line(&mut out, self.headers.clone());
        line(&mut out, widths.iter().map(|w| "-".repeat(*w)).collect());
        for row in &self.rows {
            line(&mut out, (0..columns).map(|i| cell(row, i)).collect());
        }
        out
    }
}

/// A latency in milliseconds with three decimals: `1.234 ms`.
pub fn fmt_ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// A rate with one decimal: `1234.5`.
pub fn fmt_rate(per_second: f64) -> String {
    format!("{per_second:.1}")
}

/// kB as MiB with one decimal: `12.3 MiB`.
pub fn fmt_mib(kb: u64) -> String {
    format!("{:.1} MiB", kb as f64 / 1024.0)
}

/// `a / b` as a ratio (`1.83x`), or `n/a` when `b` is not positive.
pub fn fmt_ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() && b.is_finite() {
        format!("{:.2}x", a / b)
    } else {
        "n/a".to_string()
    }
}

/// Creates `path` and its missing ancestors as persistent nodes open to anyone.
///
/// # Errors
/// The first ZooKeeper error other than `NodeExists`.
pub async fn ensure_path(
    client: &zookeeper_client::Client,
    path: &str,
) -> Result<(), zookeeper_client::Error> {
    let options = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all());
    let mut current = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        current.push('/');
        current.push_str(part);
        match client.create(&current, b"", &options).await {
            Ok(_) | Err(zookeeper_client::Error::NodeExists) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `zk_packets_received` from a `mntr` reply.
pub fn packets_received(mntr: &str) -> Option<u64> {
    zkr_testing::parse_mntr(mntr).into_iter().find(|(k, _)| k == "zk_packets_received")?.1.parse().ok()
}

/// A value from a `mntr` reply (`zk_version`, ...).
pub fn mntr_value(mntr: &str, key: &str) -> Option<String> {
    zkr_testing::parse_mntr(mntr).into_iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_parse() {
        let o = BenchOptions::parse(args(&["--bench"])).unwrap();
        assert_eq!((o.seconds, o.quick, o.only.clone()), (5.0, false, None));
        assert!(o.user_args.is_empty());
        let o = BenchOptions::parse(args(&["--quick", "--only", "waiters,requests", "--bench"])).unwrap();
        assert_eq!(o.seconds, 1.0);
        assert!(o.runs("waiters") && o.runs("requests") && !o.runs("uncontended"));
        assert_eq!(o.user_args, args(&["--quick", "--only", "waiters,requests"]));
        let o = BenchOptions::parse(args(&["--quick", "--seconds=2.5"])).unwrap();
        assert_eq!(o.seconds, 2.5);
        assert!(BenchOptions::parse(args(&["--only", "nope"])).is_err());
        assert!(BenchOptions::parse(args(&["--seconds"])).is_err());
        assert!(BenchOptions::parse(args(&["--seconds", "0"])).is_err());
        assert!(BenchOptions::parse(args(&["extra"])).is_err());
        let o =
            BenchOptions::parse(args(&["--quick", "--zkr-waiters", "5000", "--peer-waiters=200"])).unwrap();
        assert_eq!((o.zkr_waiters(), o.peer_waiters()), (5000, 200));
        let o = BenchOptions::parse(args(&["--quick"])).unwrap();
        assert_eq!((o.zkr_waiters(), o.peer_waiters()), (1000, 300));
        assert!(BenchOptions::parse(args(&["--zkr-waiters", "0"])).is_err());
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut l = Latencies::default();
        assert_eq!(l.percentile(0.5), Duration::ZERO);
        for ms in (1..=100).rev() {
            l.push(Duration::from_millis(ms));
        }
        let m = l.measurement(2.0);
        assert_eq!((m.ops, m.p50, m.p99), (100, Duration::from_millis(50), Duration::from_millis(99)));
        assert_eq!(m.per_second(), 50.0);
        assert_eq!(l.percentile(1.0), Duration::from_millis(100));
        assert_eq!(l.percentile(0.0), Duration::from_millis(1));
    }

    #[test]
    fn curator_results_parse() {
        let m =
            Measurement::from_result_line("RESULT ops=1234 seconds=1.000 p50_us=850 p99_us=4100").unwrap();
        assert_eq!(m.ops, 1234);
        assert_eq!(m.p99, Duration::from_micros(4100));
        assert!(Measurement::from_result_line("RESULT ops=1").is_err());
        assert_eq!(numeric_field("QUEUED n=5 rss_kb=70000", "rss_kb"), Ok(70000));
        assert!(numeric_field("QUEUED n=5", "rss_kb").is_err());
    }

    #[test]
    fn tables_line_up() {
        let mut t = Table::new(&["library", "ops/s"]);
        t.row(vec!["zkr".into(), "1.0".into()]);
        let text = t.render();
        assert_eq!(text.lines().count(), 3);
        assert!(text.starts_with("| library | ops/s |\n|"));
    }

    #[test]
    fn mntr_packets() {
        assert_eq!(packets_received("zk_version\t3.8.0\nzk_packets_received\t42\n"), Some(42));
        assert_eq!(mntr_value("zk_version\t3.8.0\n", "zk_version").as_deref(), Some("3.8.0"));
        assert_eq!(fmt_ratio(3.0, 2.0), "1.50x");
        assert_eq!(fmt_ratio(3.0, 0.0), "n/a");
    }
}
