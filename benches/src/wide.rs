//! Helpers for the benchmarks of one parent with very many children (issue 32: `benches/wide.rs`
//! and the queue at depth): a fast fill, and Curator runs bounded in time with the Java client's
//! `jute.maxbuffer` at its default or raised.
//!
//! A listing of 100,000 queue items (`queue-0000000000`: 16 characters and a 4-byte length
//! each) is a 2 MB reply: over the Java client's default `jute.maxbuffer` of 1 MiB, which it
//! checks on every packet it reads; the client then drops the connection, Curator reconnects
//! and lists again (CURATOR-690). [`curator_run`] counts those connection losses from the
//! peer's `STATE SUSPENDED` lines (`WideCommands.java`) and stops the peer at its bound.

use std::time::{Duration, Instant};

use anyhow::Context as _;
use zkr_testing::peers::{parse_result, CuratorTool, PeerProcess};
use zookeeper_client::{Acls, Client, CreateMode};

/// The Java client's default `jute.maxbuffer` (0xfffff bytes).
pub const JUTE_DEFAULT: usize = 0xfffff;

/// The raised `jute.maxbuffer` Curator runs with for a fair figure: 8 MiB.
pub const JUTE_RAISED: usize = 8 << 20;

/// Data of a queue item in Curator's framing (what `DistributedQueue` writes for one item).
pub const CURATOR_ITEM: &[u8] = &[0, 1, 0, 1, 1, 0, 0, 0, 4, b'f', b'i', b'l', b'l', 2];

/// Creates `count` persistent sequential children `parent/<prefix><seq>` holding `data`, with
/// up to 500 creates in flight (what a real queue of that depth looks like, written fast).
///
/// # Errors
/// The first failed create.
pub async fn fill(
    client: &Client,
    parent: &str,
    prefix: &str,
    data: &[u8],
    count: usize,
) -> anyhow::Result<()> {
    let options = CreateMode::PersistentSequential.with_acls(Acls::anyone_all());
    let node = format!("{parent}/{prefix}");
    let mut left = count;
    while left > 0 {
        let batch = left.min(500);
        let creates: Vec<_> = (0..batch).map(|_| client.create(&node, data, &options)).collect();
        for create in creates {
            create.await?;
        }
        left -= batch;
    }
    Ok(())
}

/// Times `op` once, then `n` more times: (the first, the mean of the others). The first of a
/// recipe's operations pays for its start (a consumer's first read of the queue, a lock's first
/// listing).
///
/// # Errors
/// The first error of `op`.
pub async fn first_then_mean<F, Fut, T>(n: usize, mut op: F) -> anyhow::Result<(Duration, Duration)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let start = Instant::now();
    op().await?;
    let first = start.elapsed();
    let start = Instant::now();
    for _ in 0..n {
        op().await?;
    }
    Ok((first, start.elapsed() / u32::try_from(n.max(1))?))
}

/// How a bounded Curator run ended.
#[derive(Debug, Clone)]
pub struct CuratorRun {
    /// The `jute.maxbuffer` it ran with.
    pub jute: usize,
    /// Its `RESULT` line's fields, if it printed one.
    pub result: Option<Vec<(String, String)>>,
    /// `STATE SUSPENDED` lines: the connection losses it reported.
    pub losses: usize,
    /// From spawn to the result, the failure or the bound.
    pub elapsed: Duration,
    /// Why there is no result: the bound passed, or the peer failed (its last stderr line).
    pub failure: Option<String>,
}

impl CuratorRun {
    /// A numeric field of the result.
    ///
    /// # Errors
    /// No result, or no such numeric field.
    pub fn field(&self, key: &str) -> anyhow::Result<f64> {
        let fields = self.result.as_ref().with_context(|| self.outcome())?;
        let (_, value) = fields.iter().find(|(k, _)| k == key).with_context(|| format!("no `{key}=`"))?;
        Ok(value.parse()?)
    }

    /// One cell for a report: `ok`, with the losses, or what happened instead.
    pub fn outcome(&self) -> String {
        let limit = fmt_bytes(self.jute);
        let losses = match self.losses {
            0 => String::new(),
            1 => " after 1 connection loss".to_owned(),
            n => format!(" after {n} connection losses"),
        };
        match (&self.result, &self.failure) {
            (Some(_), _) => format!("jute.maxbuffer {limit}: ok{losses}"),
            (None, failure) => {
                let failure = failure.as_deref().unwrap_or("no result");
                // `... failed: org.apache.zookeeper.KeeperException$ConnectionLossException: ...`
                let failure = failure.rsplit_once("KeeperException$").map_or(failure, |(_, rest)| rest);
                format!("jute.maxbuffer {limit}: {failure}{losses} ({:.0} s)", self.elapsed.as_secs_f64())
            }
        }
    }

    /// The outcomes of `runs`, joined.
    pub fn outcomes(runs: &[CuratorRun]) -> String {
        runs.iter().map(CuratorRun::outcome).collect::<Vec<_>>().join("; then ")
    }
}

/// `1 MiB`, `8 MiB`, or bytes.
pub fn fmt_bytes(bytes: usize) -> String {
    if bytes == JUTE_DEFAULT {
        "1 MiB (default)".to_owned()
    } else if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

/// Runs `CuratorTool args` with the Java client's `jute.maxbuffer` at `jute` (the default
/// unless it is [`JUTE_DEFAULT`], passed as `-Djute.maxbuffer` in `JAVA_TOOL_OPTIONS`), until
/// its `RESULT` line, its exit or `bound`, whichever comes first; the peer is killed at the
/// bound.
///
/// # Errors
/// The peer could not be started.
pub async fn curator_run(
    tool: &CuratorTool,
    args: &[&str],
    jute: usize,
    bound: Duration,
) -> anyhow::Result<CuratorRun> {
    let mut command = tool.command(args);
    command.env_remove("JAVA_TOOL_OPTIONS");
    if jute != JUTE_DEFAULT {
        command.env("JAVA_TOOL_OPTIONS", format!("-Djute.maxbuffer={jute}"));
    }
    let mut peer = PeerProcess::spawn(format!("CuratorTool {}", args[0]), command)?;
    peer.set_line_timeout(bound + Duration::from_secs(30));
    let start = Instant::now();
    let deadline = tokio::time::Instant::now() + bound;
    let mut run = CuratorRun { jute, result: None, losses: 0, elapsed: Duration::ZERO, failure: None };
    loop {
        match tokio::time::timeout_at(deadline, peer.next_line()).await {
            Err(_) => {
                run.failure = Some(format!("stopped at the {:.0} s bound", bound.as_secs_f64()));
                break;
            }
            Ok(Ok(Some(line))) if line.starts_with("STATE SUSPENDED") => run.losses += 1,
            Ok(Ok(Some(line))) if line.starts_with("RESULT") => {
                run.result = Some(parse_result(&line));
                break;
            }
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None)) => {
                run.failure = Some("exited without a result".to_owned());
                break;
            }
            Ok(Err(e)) => {
                let text = e.to_string();
                let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("failed");
                run.failure = Some(last.trim().to_owned());
                break;
            }
        }
    }
    run.elapsed = start.elapsed();
    if run.result.is_some() {
        peer.wait().await?;
    }
    Ok(run)
}

/// Runs [`curator_run`] with the default `jute.maxbuffer` and, if that gives no result (or a
/// result with fewer than `nodes` in its `nodes=` field: a cache that initialized without what
/// it could not read), again with [`JUTE_RAISED`]: (every run, the run that gave the figures if
/// any).
///
/// # Errors
/// As [`curator_run`].
pub async fn curator_default_then_raised(
    tool: &CuratorTool,
    args: &[&str],
    bound: Duration,
    nodes: Option<usize>,
) -> anyhow::Result<(Vec<CuratorRun>, Option<CuratorRun>)> {
    let mut runs = Vec::new();
    for (jute, bound) in [(JUTE_DEFAULT, bound), (JUTE_RAISED, bound.max(Duration::from_secs(1500)))] {
        let mut run = curator_run(tool, args, jute, bound).await?;
        if let (Some(expected), Ok(held), Ok(init)) = (nodes, run.field("nodes"), run.field("init_ms")) {
            if held < expected as f64 {
                run.failure =
                    Some(format!("initialized in {init:.0} ms holding {held:.0} of {expected} nodes"));
                run.result = None;
            }
        }
        runs.push(run.clone());
        if run.result.is_some() {
            return Ok((runs, Some(run)));
        }
    }
    Ok((runs, None))
}

/// `Curator 5.4 (Debian's jars)` or `Curator 5.9.0`: the release a peer runs, for reports.
pub fn curator_name(tool: &CuratorTool) -> String {
    match tool.release() {
        "debian" => "Curator 5.4 (Debian's jars)".to_owned(),
        other => format!("Curator {other}"),
    }
}

/// The machine's load averages as `/proc/loadavg` has them (`1.23 1.10 0.98`), for the report.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|text| text.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}
