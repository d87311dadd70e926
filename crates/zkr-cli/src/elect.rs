//! `zkr elect`: run a command while this process leads an election (Curator's `LeaderLatch`
//! layout), or follow who leads (`--observe`, as etcdctl's `elect -l`).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::StreamExt as _;
use serde_json::json;
use zkr_connection::ZkClient;
use zkr_recipes::cache::{CacheMode, CuratorCache};
use zkr_recipes::leader::{latch_participants, LeaderLatch};

use crate::child::Child;
use crate::config::output::print_line;
use crate::connect::{parse_duration, parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};
use crate::lock::held::Held;
use crate::lock::{supervise, with_session, OnSuspend, Policy};
use crate::signals::{status_after, Signals};

const ELECT_LONG_HELP: &str = "\
Every `zkr elect` (and every Curator LeaderLatch) at PATH joins one election; the first in the
queue leads. While this process leads, the command runs and sees:
  ZKR_LEADER_NODE    our latch node, for example /election/_c_...-latch-0000000004
  ZKR_FENCING_TOKEN  a number that grows with every new leader (the node's czxid)
When the command exits, leadership passes on and zkr exits with the command's status. When
leadership is lost (the session may have ended: see --on-suspend), the command is stopped
(SIGTERM, then SIGKILL after --grace) and zkr exits 4. Ctrl-C and SIGTERM are passed on to the
command; while waiting they end the candidacy (exit 130 or 143).

Examples:
  zkr elect /jobs/compactor -- ./compact --forever
  zkr elect /jobs/compactor --id host-3 --timeout 1m -- ./compact   # exit 3: not leader in time
  zkr elect /jobs/compactor --observe                               # the leader, then each change
  zkr elect /jobs/compactor --observe --json                        # with every participant";

/// `zkr elect`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = ELECT_LONG_HELP)]
pub(crate) struct ElectArgs {
    /// The election's path.
    #[arg(value_parser = parse_path)]
    path: String,
    /// This participant's id (its latch node's data, what observers print). Default:
    /// <host>-<pid>.
    #[arg(long)]
    id: Option<String>,
    /// Print the leader's id now and on every change, until Ctrl-C, without taking part.
    #[arg(long, conflicts_with_all = ["command", "id", "timeout"])]
    observe: bool,
    /// With --observe: one JSON object per change (leader, its node, every participant).
    #[arg(long, requires = "observe")]
    json: bool,
    /// Give up if not the leader within this time, connecting included (exit 3).
    #[arg(long, value_parser = parse_duration)]
    timeout: Option<Duration>,
    /// After leadership is lost, how long the command has between SIGTERM and SIGKILL.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    grace: Duration,
    /// What a suspended connection does to the command (see `zkr lock --help`).
    #[arg(long, value_enum, default_value = "continue")]
    on_suspend: OnSuspend,
    /// The command and its arguments (after `--`).
    #[arg(last = true, num_args = 1.., required_unless_present = "observe")]
    command: Vec<String>,
}

pub(crate) async fn run(args: ElectArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    with_session(connect, args.on_suspend, args.timeout, |zk, mut signals, started| async move {
        match args.observe {
            true => observe(&zk, &args, &mut signals).await,
            false => lead(&zk, &args, started, &mut signals).await,
        }
    })
    .await
}

/// Joins the election, waits to lead, and runs the command while leading.
async fn lead(
    zk: &ZkClient,
    args: &ElectArgs,
    started: Instant,
    signals: &mut Signals,
) -> anyhow::Result<Code> {
    let id = args.id.clone().unwrap_or_else(|| {
        format!("{}-{}", gethostname::gethostname().to_string_lossy(), std::process::id())
    });
    let latch = LeaderLatch::start(zk, &args.path, &id).await.context("joining the election")?;
    let waiting = async {
        match args.timeout {
            Some(t) => latch.await_leadership_timeout(t.saturating_sub(started.elapsed())).await,
            None => latch.await_leadership().await.map(Some),
        }
    };
    let term = tokio::select! {
        term = waiting => term.context("waiting for leadership")?,
        signal = signals.recv() => {
            latch.close().await;
            return Ok(Code::Status(status_after(signal)));
        }
    };
    let Some(term) = term else {
        latch.close().await;
        return Err(Failure::error(Exit::NotAcquired, format!("not the leader of {} in time", args.path)));
    };
    let env = [("ZKR_LEADER_NODE", term.node.clone()), ("ZKR_FENCING_TOKEN", term.fencing_token.to_string())];
    let held = Held::Leader(latch, term);
    let child = match Child::spawn(&args.command, &env) {
        Ok(child) => child,
        Err(e) => {
            let _ = held.release().await;
            return Err(e);
        }
    };
    let policy = Policy { path: args.path.clone(), grace: args.grace, on_suspend: args.on_suspend };
    supervise(zk, held, child, &policy, signals).await
}

/// Prints the leader now and on every change of the election's nodes, until a signal.
async fn observe(zk: &ZkClient, args: &ElectArgs, signals: &mut Signals) -> anyhow::Result<Code> {
    let cache = CuratorCache::builder(zk, &args.path).mode(CacheMode::Children).start().await?;
    let mut events = cache.events();
    let mut last: Option<String> = None;
    loop {
        let participants = latch_participants(zk, &args.path).await?;
        let line = match args.json {
            true => {
                let leader = participants.iter().find(|p| p.is_leader);
                let all: Vec<_> = participants.iter().map(|p| json!({"id": p.id, "node": p.node})).collect();
                json!({"leader": leader.map(|p| &p.id), "node": leader.map(|p| &p.node), "participants": all})
                    .to_string()
            }
            false => {
                participants.iter().find(|p| p.is_leader).map_or("(no leader)".to_owned(), |p| p.id.clone())
            }
        };
        if last.as_ref() != Some(&line) {
            print_line(&line)?;
            last = Some(line);
        }
        tokio::select! {
            event = events.next() => if event.is_none() { return Ok(Code::Exit(Exit::Failure)) },
            signal = signals.recv() => return Ok(Code::Status(status_after(signal))),
        }
    }
}
