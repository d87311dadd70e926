//! The mutual-exclusion checker: worker processes (`zkr-mutex-worker`) take one
//! `InterProcessMutex` again and again and, inside, do an unsafe read-modify-write of a counter
//! node through the guard's guarded write, while a fault schedule runs against a real ensemble.
//!
//! The verdict needs no trust in what the workers report. Every applied write bumps the counter
//! node's `version` by one and sets its value to what its writer read plus one, so the counter's
//! value equals its version exactly when no two critical sections overlapped in a way that lost
//! an update. Each lost update is one **violation**. The workers' own records are checked
//! against the node too: `COMMIT`s ≤ version ≤ `COMMIT`s + `UNKNOWN`s.
//!
//! The workers' reports also make a history of every acquire, read, guarded write and release,
//! with its times, checked for linearizability against a mutex with fenced writes
//! ([`crate::history::lock`]): a part of it that no order explains is a violation too, printed
//! in the report's notes.
//!
//! With [`CheckOptions::leader`] the workers lead instead of locking: each turn joins a
//! `LeaderLatch` election, writes through its term (`Leadership::set_data`, fenced by the term's
//! node) and leaves; the same checks then say one leader at a time. A term may end before the
//! latch's close without the worker knowing, so its end counts as a loss told at the close.
//!
//! Also counted: **leaked** lock nodes left once every worker has stopped and every killed
//! worker's session has expired; **hung** acquires (no answer within the timeout + 3 s, or a
//! worker that does not stop when asked); and, per fault, the **recovery** time from the
//! fault's injection to the next committed critical section of any worker.
//!
//! Start with [`run_schedule`]; [`Schedule::ci`] and [`Schedule::soak`] are the two lengths.
//! The other checkers are in [`ids`] (IDs, the counter), [`queue`], [`barrier`] and [`config`];
//! `zkr-soak` runs them all with random seeds.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng as _;
use tokio::io::AsyncBufReadExt as _;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;
use zkr_testing::{FaultProxy, TestingCluster};

pub mod barrier;
pub mod config;
pub mod ids;
mod inject;
mod peers;
pub mod queue;
mod report;
mod schedule;

pub use peers::Peer;
use peers::{peer_tool, PeerTool};
pub use report::Report;
use report::Transcript;
pub use schedule::{Fault, Schedule};

/// What one run of a checker of [`ids`], [`queue`], [`barrier`] or [`config`] did: for its summary line and the soak's
/// totals.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Operations checked (IDs drawn, items completed, barrier passages, writes).
    pub operations: usize,
    /// Faults injected.
    pub faults: usize,
    /// What it did, in a line (the config checker's includes its timeline).
    pub line: String,
}

use crate::history::lock::{LockHistory, Written};
use zookeeper_client::{Client, CreateMode};

/// Settings shared by every schedule.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The `zkr-mutex-worker` binary.
    pub worker: PathBuf,
    /// How many worker processes.
    pub workers: usize,
    /// Each worker's session timeout.
    pub session_timeout: Duration,
    /// Each acquire's timeout.
    pub acquire_timeout: Duration,
    /// Workers write without the guard's fence (`ZKR_WORKER_UNFENCED`): the defect the checker
    /// must catch, for the test that shows it does.
    pub unfenced: bool,
    /// Workers take turns as `LeaderLatch` leaders writing through their terms
    /// (`ZKR_WORKER_LEADER`) instead of `InterProcessMutex` holders: one leader at a time.
    pub leader: bool,
    /// How many of the workers are another library's processes, and whose: a mixed fleet,
    /// whose history checks the shared layout. Curator's (`CuratorTool checker-worker`, its
    /// `InterProcessMutex` or `LeaderLatch` on the same path) or kazoo's (`kazoo_tool.py
    /// checker-worker`, its `Lock`; the zkr workers then take `InterProcessMutex::kazoo`, the
    /// same layout; no leaders). Their writes are fenced by their own node; they cancel no
    /// acquire.
    pub peers: Option<(Peer, usize)>,
}

impl CheckOptions {
    /// 3 workers, 3 s sessions, 2 s acquire timeouts.
    pub fn new(worker: impl Into<PathBuf>) -> Self {
        CheckOptions {
            worker: worker.into(),
            workers: 3,
            session_timeout: Duration::from_secs(3),
            acquire_timeout: Duration::from_secs(2),
            unfenced: false,
            leader: false,
            peers: None,
        }
    }

    /// How many workers are a peer library's (the first ones).
    pub fn peer_workers(&self) -> usize {
        self.peers.map_or(0, |(_, n)| n)
    }
}

/// One line from a worker, with when the checker read it.
#[derive(Debug)]
struct Event {
    worker: usize,
    /// Which process (counted over the run: a worker restarted is a new one).
    process: usize,
    at: Instant,
    line: String,
}

/// A worker process and its proxies (one per ensemble member).
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    proxies: Vec<FaultProxy>,
    session: Option<i64>,
}

/// How long the ensemble gets to recover from one fault before it counts as unrecovered.
const RECOVERY_BOUND: Duration = Duration::from_secs(40);

struct Run<'a> {
    cluster: &'a TestingCluster,
    options: &'a CheckOptions,
    lock_path: String,
    counter_path: String,
    cancel_percent: u32,
    seed: u64,
    /// Draws the holder of each fault aimed at one.
    rng: StdRng,
    workers: Vec<Worker>,
    events: mpsc::UnboundedReceiver<Event>,
    sender: mpsc::UnboundedSender<Event>,
    report: Report,
    /// Workers that have printed `DONE`.
    done: Vec<bool>,
    /// Processes started so far.
    spawned: usize,
    history: LockHistory,
    /// Every line, to print beside a failing part of the history.
    transcript: Transcript,
    /// The peer library's tool, when some workers are its.
    peer: Option<PeerTool>,
}

/// Runs one schedule against `cluster` under `root` (a path no one else uses) and reports.
///
/// # Errors
/// Setting up failed (a process or proxy would not start, the counter node could not be
/// created); what the checker finds goes into the [`Report`].
pub async fn run_schedule(
    cluster: &TestingCluster,
    root: &str,
    schedule: &Schedule,
    options: &CheckOptions,
) -> Result<Report, String> {
    let (sender, events) = mpsc::unbounded_channel();
    let observer = Client::connect(&cluster.connect_string()).await.map_err(|e| e.to_string())?;
    let counter_path = format!("{root}/counter");
    observer
        .mkdir(&counter_path, &CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()))
        .await
        .map_err(|e| format!("creating {counter_path}: {e}"))?;
    let mut run = Run {
        cluster,
        options,
        lock_path: format!("{root}/lock"),
        counter_path,
        cancel_percent: schedule.cancel_percent,
        seed: schedule.seed,
        rng: StdRng::seed_from_u64(schedule.seed),
        workers: Vec::new(),
        events,
        sender,
        report: Report {
            schedule: schedule.name.clone(),
            replay: replay(schedule, options),
            ..Report::default()
        },
        done: Vec::new(),
        spawned: 0,
        history: LockHistory::new(),
        transcript: Transcript::default(),
        peer: peer_tool(options)?,
    };
    for index in 0..options.workers {
        let proxies = run.proxies().await?;
        let worker = run.spawn(index, proxies)?;
        run.workers.push(worker);
        run.done.push(false);
    }
    // Every worker has a session and the lock is in use before the first fault.
    let started = Instant::now() + RECOVERY_BOUND;
    while run.workers.iter().any(|w| w.session.is_none()) || run.report.commits == 0 {
        if !run.next_event_until(started).await {
            return Err(format!("the workers did not start: {:?}", run.report.notes));
        }
    }

    if schedule.faults.is_empty() {
        run.pump_for(schedule.quiet_run).await;
    }
    for _ in 0..schedule.rounds {
        for fault in &schedule.faults {
            run.inject(*fault).await?;
        }
    }
    run.finish(&observer).await;
    Ok(run.report)
}

impl Run<'_> {
    async fn proxies(&self) -> Result<Vec<FaultProxy>, String> {
        let mut proxies = Vec::new();
        for index in 0..self.cluster.size() {
            let target = self.cluster.server_connect_string(index).map_err(|e| e.to_string())?;
            proxies.push(FaultProxy::start(&target).await.map_err(|e| e.to_string())?);
        }
        Ok(proxies)
    }

    fn spawn(&mut self, index: usize, proxies: Vec<FaultProxy>) -> Result<Worker, String> {
        let process = self.spawned;
        self.spawned += 1;
        let connect = proxies.iter().map(FaultProxy::connect_string).collect::<Vec<_>>().join(",");
        // Each process its own stream, the same in a replay.
        let seed = self.seed.wrapping_mul(1_000).wrapping_add(process as u64).to_string();
        let mut command = self.command(index, &connect, &seed);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", self.options.worker.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let stdin = child.stdin.take();
        let sender = self.sender.clone();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if sender.send(Event { worker: index, process, at: Instant::now(), line }).is_err() {
                    return;
                }
            }
        });
        Ok(Worker { child, stdin, proxies, session: None })
    }

    /// The command of worker `index`: `zkr-mutex-worker`, or the peer library's checker worker
    /// for the first [`CheckOptions::peers`].
    fn command(&self, index: usize, connect: &str, seed: &str) -> Command {
        let (session_ms, acquire_ms) = (
            self.options.session_timeout.as_millis().to_string(),
            self.options.acquire_timeout.as_millis().to_string(),
        );
        if let Some(peer) = self.peer.as_ref().filter(|_| index < self.options.peer_workers()) {
            let mode = if self.options.leader { "leader" } else { "mutex" };
            let args =
                ["checker-worker", mode, connect, &self.lock_path, &self.counter_path, &acquire_ms, seed];
            let mut command = Command::from(peer.command(&args));
            command.env("ZKR_PEER_SESSION_MS", &session_ms);
            return command;
        }
        let mut command = Command::new(&self.options.worker);
        if matches!(self.options.peers, Some((Peer::Kazoo, _))) {
            command.env("ZKR_WORKER_KAZOO", "1");
        } else if index % 2 == 1 {
            // Every other worker waits with the prompt hand-over: one fleet, both ways.
            command.env("ZKR_WORKER_PROMPT", "1");
        }
        if self.options.unfenced {
            command.env("ZKR_WORKER_UNFENCED", "1");
        }
        if self.options.leader {
            command.env("ZKR_WORKER_LEADER", "1");
        }
        let cancel_percent = self.cancel_percent.to_string();
        command.args([
            connect,
            &self.lock_path,
            &self.counter_path,
            &session_ms,
            &acquire_ms,
            &cancel_percent,
            seed,
        ]);
        command
    }

    /// Records events until one satisfies `stop` (and returns it) or `deadline` passes (None).
    async fn record_until(&mut self, deadline: Instant, stop: impl Fn(&Event) -> bool) -> Option<Event> {
        while let Ok(Some(event)) = tokio::time::timeout_at(deadline, self.events.recv()).await {
            self.record(&event);
            if stop(&event) {
                return Some(event);
            }
        }
        None
    }

    /// Takes the next event (until `deadline`) into the report; false at the deadline.
    async fn next_event_until(&mut self, deadline: Instant) -> bool {
        self.record_until(deadline, |_| true).await.is_some()
    }

    fn record(&mut self, event: &Event) {
        self.transcript.push(Some(event.process), &event.line);
        self.record_history(event);
        let r = &mut self.report;
        let (word, rest) = event.line.split_once(' ').unwrap_or((event.line.as_str(), ""));
        match word {
            "SESSION" => self.workers[event.worker].session = rest.parse().ok(),
            "ACQUIRED" => {
                r.acquisitions += 1;
                if event.worker < self.options.peer_workers() {
                    r.peer_acquisitions += 1;
                }
            }
            "COMMIT" => r.commits += 1,
            "FENCED" | "ABORT" => r.aborts += 1,
            "UNKNOWN" => r.unknown += 1,
            "TIMEOUT" => r.timeouts += 1,
            "CANCELLED" => r.cancelled += 1,
            "ACQUIRE_ERROR" => r.acquire_errors += 1,
            "HANG" if event.worker < self.options.peer_workers() => {
                r.peer_late += 1;
                r.notes
                    .push(format!("worker {} (the peer's) overran its acquire timeout {rest}", event.worker));
            }
            "HANG" => {
                r.hung += 1;
                r.notes.push(format!("worker {} hung in acquire", event.worker));
            }
            "DONE" => self.done[event.worker] = true,
            "HOLDING" | "RELEASE_ERROR" | "READ" | "WRITE" | "RELEASED" | "LOST" | "ENDED" => {}
            other => r.notes.push(format!("worker {}: unexpected line {other} {rest}", event.worker)),
        }
    }

    /// Adds what `event` reports to the history.
    fn record_history(&mut self, event: &Event) {
        let (h, p) = (&mut self.history, event.process);
        let mut words = event.line.split_whitespace();
        let word = words.next().unwrap_or("");
        let n: Vec<u64> = words.map_while(|w| w.parse().ok()).collect();
        match (word, n.as_slice()) {
            ("ACQUIRED", [invoked, returned, ..]) => h.acquired(p, *invoked, *returned),
            ("READ", [invoked, returned, value, ..]) => h.read(p, *value, *invoked, *returned),
            ("WRITE", [invoked, value, ..]) => h.writing(p, *value, *invoked),
            ("COMMIT", [returned, ..]) => h.wrote(p, Written::Applied, *returned),
            ("FENCED", [returned, ..]) => h.wrote(p, Written::Fenced, *returned),
            ("ABORT", [returned, ..]) => h.wrote(p, Written::NotApplied, *returned),
            ("UNKNOWN", [returned, ..]) => h.wrote(p, Written::Unknown, *returned),
            ("RELEASED", [invoked, returned, ..]) => h.released(p, *invoked, *returned),
            // A leader's term ended by the latch's close or before it: a loss told at the close.
            ("LOST" | "ENDED", [_, returned, ..]) => h.lost(p, *returned),
            ("RELEASE_ERROR", [invoked, ..]) => h.release_failed(p, *invoked),
            (
                "ACQUIRED" | "READ" | "WRITE" | "COMMIT" | "FENCED" | "ABORT" | "UNKNOWN" | "RELEASED"
                | "LOST" | "ENDED" | "RELEASE_ERROR",
                _,
            ) => {
                self.report.violations += 1;
                let line = &event.line;
                self.report
                    .notes
                    .push(format!("worker {}: a report without its times: {line}", event.worker));
            }
            _ => {}
        }
    }

    /// Records events for `duration`.
    async fn pump_for(&mut self, duration: Duration) {
        let until = Instant::now() + duration;
        while self.next_event_until(until).await {}
    }

    /// Records events until `worker` prints a line starting with `word`; false at `deadline`.
    async fn wait_for(&mut self, worker: usize, word: &str, deadline: Instant) -> bool {
        self.record_until(deadline, |e| e.worker == worker && e.line.starts_with(word)).await.is_some()
    }

    /// Records events until any worker commits after `since`; the time from `since`, or None at
    /// the deadline.
    async fn next_commit_after(&mut self, since: Instant, deadline: Instant) -> Option<Duration> {
        let commit = self.record_until(deadline, |e| e.line.starts_with("COMMIT") && e.at >= since).await?;
        Some(commit.at - since)
    }

    /// Awaits `work` while recording the workers' events.
    async fn pumping<T>(&mut self, work: impl std::future::Future<Output = T>) -> T {
        tokio::pin!(work);
        loop {
            tokio::select! {
                result = &mut work => return result,
                Some(event) = self.events.recv() => self.record(&event),
            }
        }
    }

    /// Stops every worker, waits for their sessions' nodes to go, and checks the counter.
    async fn finish(&mut self, observer: &Client) {
        for worker in &mut self.workers {
            worker.stdin = None;
        }
        let deadline = Instant::now() + self.options.acquire_timeout * 2 + Duration::from_secs(10);
        while self.done.iter().any(|d| !d) {
            if !self.next_event_until(deadline).await {
                break;
            }
        }
        for (index, done) in self.done.iter().enumerate() {
            if !done {
                self.report.hung += 1;
                self.report.notes.push(format!("worker {index} did not stop when asked"));
            }
        }
        for worker in &mut self.workers {
            let _ = worker.child.start_kill();
            let _ = worker.child.wait().await;
        }
        while let Ok(event) = self.events.try_recv() {
            self.record(&event);
        }

        // A killed worker's lock node lasts until its session expires. A fresh observer: the
        // first one's server may have been paused long enough to expire its session.
        let observer = match Client::connect(&self.cluster.connect_string()).await {
            Ok(client) => client,
            Err(e) => {
                self.report.notes.push(format!("connecting an observer: {e}"));
                observer.clone()
            }
        };
        let leak_deadline = Instant::now() + self.options.session_timeout * 2 + Duration::from_secs(5);
        loop {
            let left = match observer.list_children(&self.lock_path).await {
                Ok(children) => Ok(children.len()),
                Err(zookeeper_client::Error::NoNode) => Ok(0),
                Err(e) => Err(e),
            };
            if matches!(left, Ok(0)) || Instant::now() >= leak_deadline {
                // A listing that keeps failing counts as one leak: nothing proves otherwise.
                self.report.leaked_nodes = *left.as_ref().unwrap_or(&1);
                if let Err(e) = left {
                    self.report.notes.push(format!("listing {}: {e}", self.lock_path));
                }
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }

        self.check_history();
        match observer.get_data(&self.counter_path).await {
            Ok((data, stat)) => {
                let value: i64 = std::str::from_utf8(&data).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
                let version = i64::from(stat.version);
                let lost_updates = (version - value).max(0) as usize;
                self.report.violations += lost_updates;
                if value > version {
                    self.report.violations += 1;
                    self.report.notes.push(format!("counter {value} above its version {version}"));
                }
                if lost_updates > 0 {
                    self.report
                        .notes
                        .push(format!("{lost_updates} lost updates: counter {value}, version {version}"));
                }
                let (commits, unknown) = (self.report.commits as i64, self.report.unknown as i64);
                if version < commits || version > commits + unknown {
                    self.report.violations += 1;
                    self.report.notes.push(format!(
                        "the counter was written {version} times, but workers saw {commits} commits and {unknown} unknown"
                    ));
                }
            }
            Err(e) => self.report.notes.push(format!("reading {}: {e}", self.counter_path)),
        }
    }
}

impl Run<'_> {
    /// Checks the history; each failing part is a violation, the first two printed in the notes.
    fn check_history(&mut self) {
        let history = std::mem::take(&mut self.history);
        let operations = history.len();
        let (violations, segments) = history.check(0);
        self.report.history = (operations, segments);
        self.report.violations += violations.len();
        for violation in violations.iter().take(2) {
            let processes = violation.operations.iter().map(|o| o.process).collect();
            let from = violation.operations.iter().map(|o| o.invoked).min().unwrap_or(0);
            let to = violation
                .operations
                .iter()
                .map(|o| o.returned.map_or(o.invoked, |(at, _)| at))
                .max()
                .unwrap_or(from);
            let said = self.transcript.around(&processes, from, to);
            self.report.notes.push(format!("history: {violation}{said}"));
        }
    }
}

/// Runs `schedules` one after another on `cluster`, each under its own root, and renders the
/// report table.
///
/// # Errors
/// A schedule could not be set up.
pub async fn run_all(
    cluster: &TestingCluster,
    schedules: &[Schedule],
    options: &CheckOptions,
) -> Result<(Vec<Report>, String), String> {
    let mut reports = Vec::new();
    let mut table = Report::header();
    for schedule in schedules {
        let root = crate::unique_root("checker");
        let report = run_schedule(cluster, &root, schedule, options).await?;
        let _ = write!(table, "\n{}", report.row());
        eprintln!("[checker] {}", report.row());
        reports.push(report);
    }
    Ok((reports, table))
}

/// The command that runs `schedule` again with `options`' recipe.
fn replay(schedule: &Schedule, options: &CheckOptions) -> String {
    let mut replay = schedule.replay();
    if schedule.replay_args.is_empty() {
        return replay;
    }
    if options.leader {
        replay.push_str(" --recipe leader");
    }
    if let Some((peer, n)) = options.peers {
        let _ = write!(replay, " --{} {n}", peer.name());
    }
    replay
}

/// The `zkr-mutex-worker` binary next to the running executable ([`bin_next_to_current_exe`]).
pub fn worker_next_to_current_exe() -> Option<PathBuf> {
    bin_next_to_current_exe("zkr-mutex-worker")
}

/// The package's binary `name` next to the running executable (for binaries of this package)
/// or in the target directory above it (for test binaries under `deps/`).
pub fn bin_next_to_current_exe(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.to_path_buf(), dir.parent().map(Path::to_path_buf)?]
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| p.exists())
}
