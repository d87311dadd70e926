//! One worker of the mutual-exclusion checker (`zkr_integration_tests::checker`):
//!
//! `zkr-mutex-worker CONNECT LOCK_PATH COUNTER_PATH SESSION_MS ACQUIRE_MS CANCEL_PERCENT SEED`
//!
//! Loops until its stdin closes: takes the `InterProcessMutex` at LOCK_PATH with a timeout of
//! ACQUIRE_MS; inside, does a deliberately unsafe read-modify-write of the counter node (read,
//! pause 1-5 ms, write value+1 with no version check) through the guard's guarded write, which
//! fails when the lock node is gone; then releases. With CANCEL_PERCENT, that share of acquires
//! is dropped after a random 0-30 ms instead (a cancelled acquire future). Its random choices
//! (which acquires to cancel, when, and the pauses) are drawn from SEED. With
//! `ZKR_WORKER_UNFENCED` in its environment the write is a plain one (the defect the checker
//! must catch).
//!
//! With `ZKR_WORKER_KAZOO` in its environment the mutex is `InterProcessMutex::kazoo` (kazoo's
//! `Lock` layout, for a fleet with kazoo's checker workers). With `ZKR_WORKER_PROMPT` it waits
//! with the prompt hand-over (`LockInternals::prompt_hand_over`; the checker gives it to every
//! other worker, so one fleet mixes both ways of waiting).
//!
//! With `ZKR_WORKER_LEADER` in its environment it leads instead of locking: each turn joins a
//! `LeaderLatch` election at LOCK_PATH, waits to lead (for ACQUIRE_MS; a cancelled wait closes
//! the latch), writes through its term ([`Leadership::set_data`]) and closes the latch. Its
//! term may have ended before the close (a loss the latch does not answer for), so a term ends
//! with `ENDED` rather than `RELEASED`: the checker places its end anywhere up to the close.
//!
//! Every event is one line on stdout, flushed at once. Times are nanoseconds of the machine's
//! monotonic clock (`zkr_integration_tests::history::now`), taken before a request is sent and
//! after its answer came, so that the checker can check the history:
//!
//! - `SESSION <id>`: the session in use, at start and after every new session;
//! - `ACQUIRED <invoked> <returned>`, `TIMEOUT`, `CANCELLED`, `HANG` (no answer within
//!   ACQUIRE_MS + 3 s), `ACQUIRE_ERROR <error>`;
//! - `HOLDING` before a long pause asked for by a `hold <ms>` line on stdin (the next critical
//!   section pauses that long after its read, before its write: for faults aimed at the
//!   holder);
//! - `READ <invoked> <returned> <value>`: the counter read in the critical section;
//! - `WRITE <invoked> <value>`: the guarded write is about to be sent;
//! - `COMMIT <returned>`, `FENCED <returned> <error>` (the write was refused by the fence: the
//!   lock was lost), `ABORT <returned> <error>` (the write was not applied for another reason,
//!   e.g. `SessionMoved`, and the lock may still be held; or the read failed), `UNKNOWN
//!   <returned> <error>` (no answer: the write may or may not have been applied);
//! - `RELEASED <invoked> <returned>`, `LOST <invoked> <returned>` (the release said the lock
//!   had been lost), `RELEASE_ERROR <invoked> <error>`, `ENDED <invoked> <returned>` (a
//!   leader's term ended by the latch's close, or before it); `DONE` at the end.

use std::future::Future;
use std::io::Write as _;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};
use tokio::io::AsyncBufReadExt as _;
use zkr_connection::Classify as _;
use zkr_connection::ZkClient;
use zkr_integration_tests::history::now;
use zkr_recipes::leader::{LeaderLatch, Leadership};
use zkr_recipes::locks::{
    InterProcessMutex, InterProcessMutexGuard, KazooLockDriver, LockError, LockInternals,
    LockInternalsDriver, StandardLockInternalsDriver,
};

/// How much longer than its timeout an acquire may take before it counts as hung.
const HANG_MARGIN: Duration = Duration::from_secs(3);

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // A closed stdout means the checker is gone; the stdin watcher ends the loop.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// Is this error an answer that the write did not happen, rather than no answer? The library
/// says: an error that is not ambiguous (a failed check of the lock node, a lock known lost
/// before sending) is an answer; a lost reply or an ended session is not, even when the
/// guard's send-once policy reports it as retries exhausted.
fn refused(error: &LockError) -> bool {
    !error.is_ambiguous()
}

/// What fences the critical section's write: a mutex guard or a leader's term.
enum Hold<'a, D: LockInternalsDriver = StandardLockInternalsDriver> {
    Guard(&'a InterProcessMutexGuard<D>),
    Term(&'a Leadership),
}

/// The mutex in Curator's layout or in kazoo's.
enum Mutex {
    Curator(InterProcessMutex),
    Kazoo(InterProcessMutex<KazooLockDriver>),
}

impl<D: LockInternalsDriver> Hold<'_, D> {
    async fn set_data(&self, path: &str, data: &[u8]) -> Result<(), LockError> {
        match self {
            Hold::Guard(guard) => guard.set_data(path, data, None).await.map(drop),
            Hold::Term(term) => term.set_data(path, data, None).await.map(drop),
        }
    }
}

/// The unsafe read-modify-write: read the counter, pause, write value+1 through the hold. A
/// `long` pause is announced (`HOLDING`) once the read is done.
/// Returns the line to report.
async fn critical_section<D: LockInternalsDriver>(
    zk: &ZkClient,
    hold: Hold<'_, D>,
    counter_path: &str,
    pause: Duration,
    long: bool,
) -> String {
    let read = async { zk.client().await?.get_data(counter_path).await.map_err(zkr_connection::Error::Zk) };
    let invoked = now();
    let data = match read.await {
        Ok((data, _)) => data,
        Err(e) => return format!("ABORT {} reading the counter: {e}", now()),
    };
    let value: u64 = std::str::from_utf8(&data).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
    say(&format!("READ {invoked} {} {value}", now()));
    if long {
        say("HOLDING");
    }
    tokio::time::sleep(pause).await;
    say(&format!("WRITE {} {}", now(), value + 1));
    let data = (value + 1).to_string();
    let written = if std::env::var_os("ZKR_WORKER_UNFENCED").is_some() {
        let (path, data) = (counter_path, data.as_bytes());
        let plain = zk.retry(|s| async move { s.client().set_data(path, data, None).await });
        plain.await.map(drop).map_err(LockError::Connection)
    } else {
        hold.set_data(counter_path, data.as_bytes()).await
    };
    let returned = now();
    match written {
        Ok(_) => format!("COMMIT {returned}"),
        Err(e @ LockError::Lost { .. }) => format!("FENCED {returned} {e}"),
        Err(e) if refused(&e) => format!("ABORT {returned} {e}"),
        Err(e) => format!("UNKNOWN {returned} {e}"),
    }
}

/// A worker's turns at the lock or the lead, with its random choices and the checker's
/// `hold` requests.
struct Turns<'a> {
    zk: ZkClient,
    counter_path: &'a str,
    acquire_timeout: Duration,
    cancel_percent: u64,
    rng: StdRng,
    hold_rx: tokio::sync::mpsc::UnboundedReceiver<u64>,
}

impl Turns<'_> {
    /// Waits for `acquire` as drawn: dropped after 0-30 ms (`CANCELLED`), or bounded by the
    /// timeout and the margin (`HANG`); `None` then. Says `TIMEOUT` and `ACQUIRE_ERROR` too.
    async fn acquire<T>(&mut self, acquire: impl Future<Output = Result<Option<T>, LockError>>) -> Option<T> {
        let cancel_after = (self.rng.random_range(0..100) < self.cancel_percent)
            .then(|| Duration::from_millis(self.rng.random_range(0..=30)));
        let (bound, missed) = match cancel_after {
            Some(after) => (after, "CANCELLED"),
            None => (self.acquire_timeout + HANG_MARGIN, "HANG"),
        };
        match tokio::time::timeout(bound, acquire).await {
            Err(_) => say(missed),
            Ok(Ok(Some(held))) => return Some(held),
            Ok(Ok(None)) => say("TIMEOUT"),
            Ok(Err(e)) => {
                say(&format!("ACQUIRE_ERROR {e}"));
                // Errors during a fault come fast; do not spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        None
    }

    /// The critical section's pause: as the checker asked (`long`), or 1-5 ms.
    fn pause(&mut self) -> (Duration, bool) {
        match self.hold_rx.try_recv() {
            Ok(ms) => (Duration::from_millis(ms), true),
            Err(_) => (Duration::from_millis(self.rng.random_range(1..=5)), false),
        }
    }

    /// One turn at the mutex.
    async fn lock<D: LockInternalsDriver>(&mut self, mutex: &InterProcessMutex<D>) {
        let invoked = now();
        let Some(guard) = self.acquire(mutex.acquire_timeout(self.acquire_timeout)).await else { return };
        say(&format!("ACQUIRED {invoked} {}", now()));
        let (pause, long) = self.pause();
        say(&critical_section(&self.zk, Hold::Guard(&guard), self.counter_path, pause, long).await);
        let invoked = now();
        match guard.release().await {
            Ok(()) => say(&format!("RELEASED {invoked} {}", now())),
            Err(LockError::Lost { .. }) => say(&format!("LOST {invoked} {}", now())),
            Err(e) => say(&format!("RELEASE_ERROR {invoked} {e}")),
        }
    }

    /// One turn in the election at `path`: join, wait to lead, write through the term, leave.
    async fn lead(&mut self, path: &str) {
        let latch = match LeaderLatch::start(&self.zk, path, "worker").await {
            Ok(latch) => latch,
            Err(e) => {
                say(&format!("ACQUIRE_ERROR {e}"));
                return tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        let invoked = now();
        if let Some(term) = self.acquire(latch.await_leadership_timeout(self.acquire_timeout)).await {
            say(&format!("ACQUIRED {invoked} {}", now()));
            let (pause, long) = self.pause();
            say(&critical_section(
                &self.zk,
                Hold::<StandardLockInternalsDriver>::Term(&term),
                self.counter_path,
                pause,
                long,
            )
            .await);
            let invoked = now();
            latch.close().await;
            return say(&format!("ENDED {invoked} {}", now()));
        }
        latch.close().await;
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, connect, lock_path, counter_path, session_ms, acquire_ms, cancel_percent, seed] = args.as_slice()
    else {
        eprintln!(
            "usage: zkr-mutex-worker CONNECT LOCK_PATH COUNTER_PATH SESSION_MS ACQUIRE_MS CANCEL_PERCENT SEED"
        );
        std::process::exit(2);
    };
    let number = |s: &str, what: &str| -> u64 {
        s.parse().unwrap_or_else(|_| {
            eprintln!("{what} must be a number, not `{s}`");
            std::process::exit(2)
        })
    };
    let session_timeout = Duration::from_millis(number(session_ms, "SESSION_MS"));
    let acquire_timeout = Duration::from_millis(number(acquire_ms, "ACQUIRE_MS"));
    let cancel_percent = number(cancel_percent, "CANCEL_PERCENT");
    let seed = number(seed, "SEED");

    let zk = match ZkClient::builder(connect.as_str())
        .session_timeout(session_timeout)
        .connection_timeout(Duration::from_secs(20))
        .connect()
        .await
    {
        Ok(zk) => zk,
        Err(e) => {
            eprintln!("connect: {e}");
            std::process::exit(1);
        }
    };
    let mutex = if std::env::var_os("ZKR_WORKER_KAZOO").is_some() {
        InterProcessMutex::kazoo(&zk, lock_path, "zkr-worker").map(Mutex::Kazoo)
    } else if std::env::var_os("ZKR_WORKER_PROMPT").is_some() {
        LockInternals::new(&zk, lock_path, "lock-", StandardLockInternalsDriver, 1)
            .and_then(|internals| InterProcessMutex::from_internals(internals.prompt_hand_over()))
            .map(Mutex::Curator)
    } else {
        InterProcessMutex::new(&zk, lock_path).map(Mutex::Curator)
    };
    let mutex = match mutex {
        Ok(m) => m,
        Err(e) => {
            eprintln!("mutex: {e}");
            std::process::exit(2);
        }
    };

    zkr_integration_tests::announce_sessions(&zk, "SESSION");

    // Commands from the checker; EOF stops the loop.
    let (hold_tx, hold_rx) = tokio::sync::mpsc::unbounded_channel::<u64>();
    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(ms) = line.strip_prefix("hold ").and_then(|ms| ms.trim().parse().ok()) {
                let _ = hold_tx.send(ms);
            }
        }
        let _ = stop_tx.send(true);
    });

    let mut turns = Turns {
        zk: zk.clone(),
        counter_path,
        acquire_timeout,
        cancel_percent,
        rng: StdRng::seed_from_u64(seed),
        hold_rx,
    };
    let leader = std::env::var_os("ZKR_WORKER_LEADER").is_some();
    while !*stop_rx.borrow_and_update() {
        match &mutex {
            _ if leader => turns.lead(lock_path).await,
            Mutex::Curator(mutex) => turns.lock(mutex).await,
            Mutex::Kazoo(mutex) => turns.lock(mutex).await,
        }
    }
    zk.close().await;
    say("DONE");
}
