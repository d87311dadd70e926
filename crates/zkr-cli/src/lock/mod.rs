//! `zkr lock` and `zkr lock-info`: run a command under an `InterProcessMutex` (the same lock
//! Apache Curator processes take at that path), a read or write lock, or a semaphore's lease,
//! and show who holds a lock.

pub(crate) mod held;
mod info;

use std::time::{Duration, Instant};

use futures::StreamExt as _;
use zkr_connection::{
    ConnectionState, SessionConnectionStateErrorPolicy, StandardConnectionStateErrorPolicy, ZkClient,
};
use zkr_recipes::locks::{LockError, LostReason};

use held::{Held, Kind, Wait};

use crate::child::{shell_status, Child};
use crate::connect::{parse_duration, parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};
use crate::signals::{status_after, Signals};
pub(crate) use info::{run as info, LockInfoArgs};

/// `zkr lock --help`, after the options.
pub(crate) const LOCK_LONG_HELP: &str = "\
Which lock: by default Apache Curator's InterProcessMutex at PATH. -n N takes one of N leases
of the semaphore at PATH (Curator's InterProcessSemaphoreV2); -s (--shared) the read lock and
-x (--exclusive) the write lock of the read-write lock at PATH (Curator's
InterProcessReadWriteLock), as flock -s and -x: readers run together, a writer alone. A plain
`zkr lock` (a mutex) does not see read locks: use -x beside -s.

The command runs with the lock held and sees two variables:
  ZKR_LOCK_NODE      the lock (or lease) node, for example /locks/x/_c_...-lock-0000000007
  ZKR_FENCING_TOKEN  a number that grows with every new holder (the node's czxid): pass it to
                     the resource the lock protects and let it refuse writes with an older one
Ctrl-C and SIGTERM are passed on to the command; when it exits the lock is released and zkr
exits with the command's status.

When ZooKeeper cannot be reached (a leader election, a rolling restart, a partition) the
connection is suspended. With --on-suspend continue (the default) the command keeps running
while the session can still be alive, and is stopped (SIGTERM, then SIGKILL after --grace;
exit 4) as soon as it may not be: half a session timeout after the suspension, before the
server can expire the session and give the lock to anyone else. The margin left is about a
twentieth of the session timeout, so a command that takes longer than that to stop may
overlap the next holder: keep --grace short, or use the fencing token. With --on-suspend stop
the command is stopped at the first suspension, which leaves it half a session timeout more
to stop but ends it on every failover.";

/// What a suspended connection does to the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OnSuspend {
    /// Keep running while the session can still be alive; stop when it may be lost.
    Continue,
    /// Stop the command at once (the strict behaviour: every failover ends it).
    Stop,
}

#[derive(Debug, clap::Args)]
#[command(after_long_help = LOCK_LONG_HELP)]
pub(crate) struct LockArgs {
    /// The lock path.
    #[arg(value_parser = parse_path)]
    path: String,
    /// Give up if the lock is not acquired within this time, connecting included (exit 3).
    #[arg(long, value_parser = parse_duration, conflicts_with = "try_only")]
    timeout: Option<Duration>,
    /// Only take the lock if it is free; otherwise exit 3 at once.
    #[arg(long = "try")]
    try_only: bool,
    /// After the lock is lost, how long the command has between SIGTERM and SIGKILL.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    grace: Duration,
    /// What a suspended connection does to the command (see below).
    #[arg(long, value_enum, default_value = "continue")]
    on_suspend: OnSuspend,
    /// Take one of N leases of a semaphore at the path (Curator's InterProcessSemaphoreV2)
    /// instead of a lock: at most N commands run at once.
    #[arg(short = 'n', long = "leases", value_name = "N", value_parser = clap::value_parser!(u32).range(1..),
          conflicts_with_all = ["shared", "exclusive"])]
    leases: Option<u32>,
    /// Take the read lock of a read-write lock at the path: shared with other readers (flock -s).
    #[arg(short = 's', long, conflicts_with = "exclusive")]
    shared: bool,
    /// Take the write lock of the read-write lock at the path: alone, readers excluded (flock -x).
    #[arg(short = 'x', long)]
    exclusive: bool,
    /// The command and its arguments (after `--`).
    #[arg(required = true, last = true, num_args = 1..)]
    command: Vec<String>,
}

pub(crate) async fn run(args: LockArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    with_session(connect, args.on_suspend, args.timeout, |zk, mut signals, started| async move {
        locked(&zk, &args, started, &mut signals).await
    })
    .await
}

/// Connects with the error policy `on_suspend` asks for, runs `body` with the client, the
/// signals and the start time, then closes the session, unless the hold was lost: the session
/// is gone or going then, and the next holder may be minutes away from it, so zkr exits at once
/// rather than wait for a connection that may not come back. The signals are registered before
/// anything else: one that arrives while connecting or just after the command starts must not
/// hit the default action (which ends zkr without forwarding anything to the command).
pub(crate) async fn with_session<F, Fut>(
    connect: &ConnectArgs,
    on_suspend: OnSuspend,
    timeout: Option<Duration>,
    body: F,
) -> anyhow::Result<Code>
where
    F: FnOnce(ZkClient, Signals, Instant) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Code>>,
{
    let mut signals = Signals::listen()?;
    let started = Instant::now();
    let connecting = async {
        match on_suspend {
            OnSuspend::Continue => connect.connect_with(SessionConnectionStateErrorPolicy, timeout).await,
            OnSuspend::Stop => connect.connect_with(StandardConnectionStateErrorPolicy, timeout).await,
        }
    };
    let zk = tokio::select! {
        zk = connecting => zk?,
        signal = signals.recv() => return Ok(Code::Status(status_after(signal))),
    };
    let outcome = body(zk.clone(), signals, started).await;
    if !matches!(&outcome, Err(e) if crate::exit::classify(e) == Exit::Lost) {
        zk.close().await;
    }
    outcome
}

/// How a held lock (or leadership) is supervised while the command runs.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    /// The lock's (or election's) path, for messages.
    pub(crate) path: String,
    /// How long the command has between SIGTERM and SIGKILL after a loss.
    pub(crate) grace: Duration,
    /// What a suspended connection does to the command.
    pub(crate) on_suspend: OnSuspend,
}

impl LockArgs {
    fn policy(&self) -> Policy {
        Policy { path: self.path.clone(), grace: self.grace, on_suspend: self.on_suspend }
    }

    fn kind(&self) -> Kind {
        match (self.leases, self.shared, self.exclusive) {
            (Some(n), _, _) => Kind::Leases(n as usize),
            (None, true, _) => Kind::Read,
            (None, false, true) => Kind::Write,
            (None, false, false) => Kind::Mutex,
        }
    }

    /// `--try`, `--timeout` (less the time connecting took), or waiting.
    fn wait(&self, started: Instant) -> Wait {
        match (self.try_only, self.timeout) {
            (true, _) => Wait::Try,
            (false, Some(timeout)) => Wait::Until(started + timeout),
            (false, None) => Wait::Forever,
        }
    }
}

/// Takes the lock, runs the command under it and releases it.
async fn locked(
    zk: &ZkClient,
    args: &LockArgs,
    started: Instant,
    signals: &mut Signals,
) -> anyhow::Result<Code> {
    // Interrupted while waiting: give up the place in the queue (the acquire is cancel safe)
    // and exit as a shell would after the signal.
    let acquired = tokio::select! {
        acquired = held::acquire(zk, &args.path, args.kind(), args.wait(started)) => acquired,
        signal = signals.recv() => return Ok(Code::Status(status_after(signal))),
    };
    let acquired =
        acquired.map_err(|e| anyhow::Error::new(e).context(format!("acquiring the lock {}", args.path)))?;
    let Some(guard) = acquired else {
        let why = if args.try_only { "it is held" } else { "not in time" };
        return Err(Failure::error(Exit::NotAcquired, format!("lock {} not acquired: {why}", args.path)));
    };
    let env = [
        ("ZKR_LOCK_NODE", guard.node_path().to_owned()),
        ("ZKR_FENCING_TOKEN", guard.fencing_token().to_string()),
    ];
    let child = match Child::spawn(&args.command, &env) {
        Ok(child) => child,
        Err(e) => {
            let _ = tokio::time::timeout(zk.session_timeout(), guard.release()).await;
            return Err(e);
        }
    };
    supervise(zk, guard, child, &args.policy(), signals).await
}

/// Waits for the command, stopping it if the hold is lost, passing signals on.
pub(crate) async fn supervise(
    zk: &ZkClient,
    guard: Held,
    mut child: Child,
    policy: &Policy,
    signals: &mut Signals,
) -> anyhow::Result<Code> {
    let mut states = zk.state_changes();
    let (what, path) = (guard.what(), &policy.path);
    loop {
        tokio::select! {
            status = child.process.wait() => return finish(zk, guard, shell_status(status?), path).await,
            reason = guard.lost(zk) => {
                eprintln!("zkr: {what} {path} lost ({}); stopping the command", why_lost(reason, policy.on_suspend));
                child.stop(policy.grace).await;
                return Err(Failure::error(Exit::Lost, format!("the {what} {path} was lost while the command ran")));
            }
            Some(state) = states.next() => notice(state, what, policy),
            signal = signals.recv() => child.forward(signal),
        }
    }
}

/// Why the lock counts as lost, in the terms of `--on-suspend`.
fn why_lost(reason: LostReason, on_suspend: OnSuspend) -> String {
    match (reason, on_suspend) {
        (LostReason::ConnectionState, OnSuspend::Continue) => {
            "ZooKeeper unreachable for half the session timeout: the session may be lost".into()
        }
        (LostReason::ConnectionState, OnSuspend::Stop) => {
            "the connection was suspended (--on-suspend stop)".into()
        }
        (reason, _) => reason.to_string(),
    }
}

/// Tells the user about a suspension the command rides out.
fn notice(state: ConnectionState, what: &str, policy: &Policy) {
    if policy.on_suspend != OnSuspend::Continue {
        return;
    }
    match state {
        ConnectionState::Suspended => eprintln!(
            "zkr: ZooKeeper connection suspended; the session may still be alive, so the command keeps \
             running (it is stopped if the session may be lost)"
        ),
        ConnectionState::Reconnected => {
            eprintln!("zkr: reconnected to ZooKeeper; still holding the {what} {}", policy.path)
        }
        _ => {}
    }
}

/// The command exited with `status`: release the lock and pass the status on, unless the lock
/// was lost before it finished.
async fn finish(zk: &ZkClient, guard: Held, status: i32, path: &str) -> anyhow::Result<Code> {
    let lost = |reason: &dyn std::fmt::Display| {
        Failure::error(Exit::Lost, format!("the lock {path} was lost ({reason}) before the command finished"))
    };
    if guard.is_lost(zk) {
        return Err(lost(&"the session may have ended"));
    }
    match tokio::time::timeout(zk.session_timeout(), guard.release()).await {
        Ok(Ok(())) => {}
        Ok(Err(LockError::Lost { reason, .. })) => return Err(lost(&reason)),
        Ok(Err(e)) => eprintln!("zkr: releasing {path}: {e}"),
        Err(_) => eprintln!("zkr: releasing {path} timed out; the lock node goes with the session"),
    }
    Ok(Code::Status(status))
}
