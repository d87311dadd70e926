//! A `zkr-id-worker` process seen from a test: the IDs it printed (with when they arrived) and
//! its current session.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::time::Instant;

use crate::history::counter::{self, CounterOperation};
use crate::history::Nanos;
use crate::timing;

#[derive(Debug, Default)]
struct Seen {
    ids: Vec<u64>,
    /// Outcomes the worker could not know (`unknown` lines of the counter kind).
    unknown: usize,
    /// Increments that may have been applied beside an outcome it printed (`maybe` lines: a
    /// peer library's writes that had no answer and were tried again).
    maybe: usize,
    last_at: Option<Instant>,
    session: Option<i64>,
    /// The counter kind's increments, with their times.
    increments: Vec<CounterOperation>,
    /// An increment invoked and not answered yet.
    incrementing: Option<Nanos>,
    /// The last lines the worker wrote to stderr, for a failure's message.
    stderr: std::collections::VecDeque<String>,
}

/// How many of a worker's stderr lines a failure shows.
const STDERR_LINES: usize = 12;

impl Seen {
    /// Takes one line of the worker's output.
    fn take(&mut self, line: &str) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let times: Vec<Nanos> = words.iter().skip(1).filter_map(|w| w.parse().ok()).collect();
        match (words.first().copied(), times.as_slice()) {
            (Some("session"), _) => self.session = words.get(1).and_then(|s| s.parse().ok()),
            (Some("+"), [invoked]) => self.incrementing = Some(*invoked),
            (Some("maybe"), [invoked]) => {
                self.maybe += 1;
                self.increments.push(counter::unknown(0, *invoked));
            }
            (Some("unknown"), rest) => {
                self.unknown += 1;
                self.last_at = Some(Instant::now());
                if let Some(invoked) = rest.first().copied().or(self.incrementing.take()) {
                    self.increments.push(counter::unknown(0, invoked));
                }
                self.incrementing = None;
            }
            (Some(id), rest) => {
                let id = id.parse().expect("an ID");
                self.ids.push(id);
                self.last_at = Some(Instant::now());
                if let [invoked, returned] = rest {
                    self.increments.push(counter::succeeded(0, id, *invoked, *returned));
                    self.incrementing = None;
                }
            }
            (None, _) => {}
        }
    }

    /// The increments, the one in flight (if any) as an unknown outcome.
    fn increments(&self, process: usize) -> Vec<CounterOperation> {
        let in_flight = self.incrementing.map(|invoked| counter::unknown(process, invoked));
        self.increments.iter().cloned().chain(in_flight).map(|o| CounterOperation { process, ..o }).collect()
    }
}

/// A running `zkr-id-worker` (see its docs for the protocol).
#[derive(Debug)]
pub struct IdWorker {
    child: tokio::process::Child,
    seen: Arc<Mutex<Seen>>,
    reader: tokio::task::JoinHandle<()>,
}

impl IdWorker {
    /// Starts `binary` drawing `kind` IDs under `path` until its stdin closes (or `count`), and
    /// waits for its first session line.
    ///
    /// # Panics
    /// When the process cannot start or prints something else first (a test failure).
    pub async fn spawn(
        binary: &Path,
        connect_string: &str,
        kind: &str,
        path: &str,
        count: usize,
        identity: &str,
    ) -> Self {
        let mut command = tokio::process::Command::new(binary);
        command.args([connect_string, kind, path, &count.to_string(), identity]);
        Self::start(command).await
    }

    /// Starts `command`, a process that prints `zkr-id-worker`'s lines (another library's
    /// worker, say), and waits for its first session line.
    ///
    /// # Panics
    /// As [`spawn`](Self::spawn).
    pub async fn start(mut command: tokio::process::Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn a worker");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut errors = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let first = lines.next_line().await.expect("worker output").expect("a session line");
        seen.lock().unwrap().session = first.strip_prefix("session ").and_then(|s| s.parse().ok());
        assert!(seen.lock().unwrap().session.is_some(), "first line: {first}");
        let sink = seen.clone();
        let errors_sink = seen.clone();
        let reader = tokio::spawn(async move {
            // Passed on to our stderr as before, and the last lines kept for a failure.
            let keep_errors = async move {
                while let Ok(Some(line)) = errors.next_line().await {
                    eprintln!("{line}");
                    let mut seen = errors_sink.lock().unwrap();
                    if seen.stderr.len() == STDERR_LINES {
                        seen.stderr.pop_front();
                    }
                    seen.stderr.push_back(line);
                }
            };
            let take_lines = async move {
                while let Ok(Some(line)) = lines.next_line().await {
                    sink.lock().unwrap().take(&line);
                }
            };
            tokio::join!(keep_errors, take_lines);
        });
        IdWorker { child, seen, reader }
    }

    /// Its current session id (as it last announced).
    pub fn session(&self) -> i64 {
        self.seen.lock().unwrap().session.unwrap_or_default()
    }

    /// How many IDs (or counter outcomes, known or not) it has printed.
    pub fn drawn(&self) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.ids.len() + seen.unknown
    }

    /// How many increments it could not know the outcome of: its `unknown` outcomes and its
    /// `maybe` lines.
    pub fn unknown(&self) -> usize {
        let seen = self.seen.lock().unwrap();
        seen.unknown + seen.maybe
    }

    /// How many `maybe` lines it has printed.
    pub fn maybe(&self) -> usize {
        self.seen.lock().unwrap().maybe
    }

    /// The IDs it has printed so far.
    pub fn ids(&self) -> Vec<u64> {
        self.seen.lock().unwrap().ids.clone()
    }

    /// The last lines it wrote to stderr, one per line.
    pub fn stderr_tail(&self) -> String {
        self.seen.lock().unwrap().stderr.iter().map(|l| format!("{l}\n")).collect()
    }

    /// When it last printed an ID.
    pub fn last_at(&self) -> Option<Instant> {
        self.seen.lock().unwrap().last_at
    }

    /// Closes its stdin (which stops a worker started with a count of 0), waits for it, and
    /// returns its IDs.
    ///
    /// # Panics
    /// When it does not finish cleanly within a minute (scaled by the test timing).
    pub async fn finish(self) -> Vec<u64> {
        self.finish_counting(0).await.0
    }

    /// Kills it (`SIGKILL`) and returns the IDs it printed.
    pub async fn kill(self) -> Vec<u64> {
        self.kill_counting(0).await.0
    }

    /// [`finish`](Self::finish), and the counter kind's increments as `process`'s.
    pub async fn finish_counting(mut self, process: usize) -> (Vec<u64>, Vec<CounterOperation>) {
        drop(self.child.stdin.take());
        let status = tokio::time::timeout(timing().multiple(Duration::from_secs(60)), self.child.wait())
            .await
            .expect("worker finishes")
            .unwrap();
        assert!(status.success(), "worker failed: {status}");
        self.reader.await.unwrap();
        let seen = Arc::try_unwrap(self.seen).unwrap().into_inner().unwrap();
        let increments = seen.increments(process);
        (seen.ids, increments)
    }

    /// [`kill`](Self::kill), and the counter kind's increments as `process`'s (the one in
    /// flight when it was killed as an unknown outcome).
    pub async fn kill_counting(mut self, process: usize) -> (Vec<u64>, Vec<CounterOperation>) {
        self.child.kill().await.unwrap();
        self.reader.await.unwrap();
        let seen = Arc::try_unwrap(self.seen).unwrap().into_inner().unwrap();
        let increments = seen.increments(process);
        (seen.ids, increments)
    }
}

/// Asserts that each run increases and that no ID appears twice across them; all the IDs.
///
/// # Panics
/// On a repeat or a step back (a test failure).
pub fn check_runs(runs: &[Vec<u64>]) -> Vec<u64> {
    for (i, run) in runs.iter().enumerate() {
        for pair in run.windows(2) {
            assert!(pair[0] < pair[1], "run {i}: {} then {}", pair[0], pair[1]);
        }
    }
    let all: Vec<u64> = runs.concat();
    let set: std::collections::HashSet<u64> = all.iter().copied().collect();
    assert_eq!(set.len(), all.len(), "{} duplicate IDs", all.len() - set.len());
    all
}

/// Waits until every worker has printed `at_least` more IDs; the time it took.
///
/// # Panics
/// When they do not within [`Timing::wait`](zkr_testing::Timing::wait), naming `stage`.
pub async fn progress(workers: &[&IdWorker], at_least: usize, stage: &str) -> Duration {
    let started = Instant::now();
    let marks: Vec<usize> = workers.iter().map(|w| w.drawn() + at_least).collect();
    let deadline = started + timing().wait();
    while !workers.iter().zip(&marks).all(|(w, m)| w.drawn() >= *m) {
        if Instant::now() >= deadline {
            let drawn: Vec<usize> = workers.iter().map(|w| w.drawn()).collect();
            let stuck = workers.iter().zip(&marks).enumerate().filter(|(_, (w, m))| w.drawn() < **m);
            let said: String =
                stuck.map(|(i, (w, _))| format!("\n  worker {i}'s stderr:\n{}", w.stderr_tail())).collect();
            panic!("{stage}: workers stuck at {drawn:?}, wanted {marks:?}{said}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    started.elapsed()
}
