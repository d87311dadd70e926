//! `zkr lock` and `zkr lock-info`: run a command under an `InterProcessMutex` (the same lock
//! Apache Curator processes take at that path), and show who holds it.

use std::process::ExitStatus;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use zkr_connection::ZkClient;
use zkr_recipes::locks::{InterProcessMutex, LockError};

use crate::connect::{parse_duration, ConnectArgs};

/// Exit code when the lock was not acquired in time (or is held, with `--try`).
pub(crate) const EXIT_NOT_ACQUIRED: i32 = 3;
/// Exit code when the lock was lost while the command ran.
pub(crate) const EXIT_LOST: i32 = 4;

#[derive(Debug, clap::Args)]
pub(crate) struct LockArgs {
    /// The lock path.
    path: String,
    /// Give up if the lock is not acquired within this time (exit 3).
    #[arg(long, value_parser = parse_duration, conflicts_with = "try_only")]
    timeout: Option<Duration>,
    /// Only take the lock if it is free; otherwise exit 3 at once.
    #[arg(long = "try")]
    try_only: bool,
    /// After the lock is lost, how long the command has between SIGTERM and SIGKILL.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    grace: Duration,
    /// The command and its arguments (after `--`).
    #[arg(required = true, last = true, num_args = 1..)]
    command: Vec<String>,
}

/// Connects and makes the mutex at `path`; `None` (after saying why) for a path that cannot be
/// a lock, which is a usage error.
async fn open(connect: &ConnectArgs, path: &str) -> anyhow::Result<Option<(ZkClient, InterProcessMutex)>> {
    let zk = connect.connect().await?;
    match InterProcessMutex::new(&zk, path) {
        Ok(mutex) => Ok(Some((zk, mutex))),
        Err(e) => {
            eprintln!("zkr: {e}");
            Ok(None)
        }
    }
}

pub(crate) async fn run(connect: &ConnectArgs, args: LockArgs) -> anyhow::Result<i32> {
    // Registered before anything else: a signal that arrives while we wait for the lock, or
    // just after the command starts, must not hit the default action (which kills zkr without
    // forwarding anything to the command).
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let Some((zk, mutex)) = open(connect, &args.path).await? else { return Ok(crate::EXIT_USAGE) };
    let acquiring = async {
        if args.try_only {
            mutex.try_acquire().await
        } else if let Some(timeout) = args.timeout {
            mutex.acquire_timeout(timeout).await
        } else {
            mutex.acquire().await.map(Some)
        }
    };
    // Interrupted while waiting: give up the place in the queue (the acquire is cancel safe)
    // and exit as a shell would after the signal.
    let acquired = tokio::select! {
        acquired = acquiring => acquired,
        _ = interrupt.recv() => {
            zk.close().await;
            return Ok(128 + Signal::SIGINT as i32);
        }
        _ = terminate.recv() => {
            zk.close().await;
            return Ok(128 + Signal::SIGTERM as i32);
        }
    }
    .with_context(|| format!("acquiring the lock {}", args.path))?;
    let Some(guard) = acquired else {
        eprintln!(
            "zkr: lock {} not acquired{}",
            args.path,
            if args.try_only { ": it is held" } else { " in time" }
        );
        return Ok(EXIT_NOT_ACQUIRED);
    };
    let mut child = tokio::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .env("ZKR_LOCK_NODE", guard.node_path())
        .env("ZKR_FENCING_TOKEN", guard.fencing_token().to_string())
        .spawn()
        .with_context(|| format!("starting {:?}", args.command[0]))?;
    let pid = child.id().map(|id| Pid::from_raw(id as i32));
    let outcome = loop {
        tokio::select! {
            status = child.wait() => break Outcome::Exited(status?),
            reason = guard.lost() => {
                eprintln!("zkr: lock {} lost ({reason}); stopping the command", args.path);
                stop(&mut child, pid, args.grace).await;
                break Outcome::Lost;
            }
            _ = interrupt.recv() => forward(pid, Signal::SIGINT),
            _ = terminate.recv() => forward(pid, Signal::SIGTERM),
        }
    };
    let released = guard.release().await;
    zk.close().await;
    match (outcome, released) {
        (Outcome::Lost, _) => Ok(EXIT_LOST),
        (Outcome::Exited(status), Ok(())) => Ok(exit_code(status)),
        (Outcome::Exited(_), Err(LockError::Lost { reason, .. })) => {
            eprintln!("zkr: the lock {} was lost ({reason}) before the command finished", args.path);
            Ok(EXIT_LOST)
        }
        (Outcome::Exited(status), Err(e)) => {
            eprintln!("zkr: releasing {}: {e}", args.path);
            Ok(exit_code(status))
        }
    }
}

enum Outcome {
    Exited(ExitStatus),
    Lost,
}

fn forward(pid: Option<Pid>, signal: Signal) {
    if let Some(pid) = pid {
        let _ = kill(pid, signal);
    }
}

/// SIGTERM, then SIGKILL after `grace`.
async fn stop(child: &mut tokio::process::Child, pid: Option<Pid>, grace: Duration) {
    forward(pid, Signal::SIGTERM);
    if tokio::time::timeout(grace, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

#[derive(Debug, clap::Args)]
pub(crate) struct LockInfoArgs {
    /// The lock path.
    path: String,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn info(connect: &ConnectArgs, args: LockInfoArgs) -> anyhow::Result<i32> {
    let Some((zk, mutex)) = open(connect, &args.path).await? else { return Ok(crate::EXIT_USAGE) };
    let nodes = mutex.participant_nodes().await?;
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    if !args.json {
        println!("{:<8} {:<20} {:<14} {:>10}  node", "role", "session", "fencing token", "age");
    }
    for (i, node) in nodes.iter().enumerate() {
        let stat = zk.retry(|s| async move { s.client().check_stat(node).await }).await?;
        let Some(stat) = stat else { continue };
        let role = if i == 0 { "holder" } else { "waiting" };
        let age = Duration::from_millis((now_ms - stat.ctime).max(0) as u64);
        if args.json {
            println!(
                "{{\"position\":{i},\"role\":\"{role}\",\"node\":\"{node}\",\"session\":\"{:#x}\",\"fencing_token\":{},\"age_ms\":{}}}",
                stat.ephemeral_owner,
                stat.czxid,
                age.as_millis()
            );
        } else {
            println!(
                "{role:<8} {:<20} {:<14} {:>10}  {node}",
                format!("{:#x}", stat.ephemeral_owner),
                stat.czxid,
                humantime::format_duration(Duration::from_secs(age.as_secs())).to_string()
            );
        }
    }
    if nodes.is_empty() && !args.json {
        println!("(free: nobody holds or waits for {})", args.path);
    }
    zk.close().await;
    Ok(0)
}
