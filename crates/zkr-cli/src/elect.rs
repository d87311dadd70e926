//! `zkr elect`: run a command while this process leads an election (Curator's `LeaderLatch`
//! layout), or follow who leads (`--observe`, as etcdctl's `elect -l`).

use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::json;
use zkr_connection::ZkClient;
use zkr_recipes::leader::{LeaderLatch, LeaderObserver, Participant};
use zkr_recipes::locks::LockLayout;

use crate::child::Child;
use crate::config::output::print_line;
use crate::connect::{parse_duration, parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};
use crate::lock::held::Held;
use crate::lock::{supervise, with_session, OnSuspend, Policy};
use crate::signals::{status_after, Signals};
use crate::ui::at::{self, printable, At, Kind};

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
  zkr elect /jobs/compactor --observe --json                        # with every participant
--observe also follows Curator's LeaderSelector and kazoo's Election (a lock whose holder
leads), as `zkr ui` recognises them; it exits 5 when PATH does not exist and 6 when PATH holds
another recipe or children no election layout explains.";

/// `zkr elect`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = ELECT_LONG_HELP)]
pub(crate) struct ElectArgs {
    /// The election's path.
    #[arg(value_parser = parse_path)]
    path: String,
    /// This participant's id (its latch node's data, what observers print). Default:
    /// `<host>-<pid>`.
    #[arg(long)]
    id: Option<String>,
    /// Print the leader's id now and on every change, until Ctrl-C, without taking part: of
    /// a Curator LeaderLatch or LeaderSelector, or a kazoo Election. Exit 5 when PATH does not
    /// exist, 6 when it holds something else.
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

/// Prints the leader now and on every change of it, until a signal: the library's
/// [`LeaderObserver`], which follows Curator's `LeaderLatch` and `LeaderSelector` and kazoo's
/// `Election`. What else the path holds is recognised as `zkr ui` recognises it, so that a
/// path that is no election is refused, never shown as one without a leader.
///
/// # Errors
/// Exit 5 when the path does not exist; exit 6 when it holds another recipe or children no
/// election layout explains (never "(no leader)" for what it does not understand).
async fn observe(zk: &ZkClient, args: &ElectArgs, signals: &mut Signals) -> anyhow::Result<Code> {
    let observer = LeaderObserver::start(zk, &args.path).await?;
    let mut snapshots = observer.cache().snapshots();
    let mut last: Option<String> = None;
    let mut seen = false;
    loop {
        let found = at::in_snapshot(&snapshots.borrow_and_update(), &args.path);
        if matches!(found, At::Missing) && !seen {
            return Err(Failure::error(
                Exit::Absent,
                format!("{}: no such node (no election has run there: check the path)", args.path),
            ));
        }
        seen = true;
        refuse_what_is_no_election(&args.path, found)?;
        let line = match args.json {
            true => election_json(&observer).to_string(),
            false => observer.leader().map_or_else(|| "(no leader)".to_owned(), |leader| shown_id(&leader)),
        };
        if last.as_ref() != Some(&line) {
            print_line(&line)?;
            last = Some(line);
        }
        tokio::select! {
            changed = snapshots.changed() => if changed.is_err() { return Ok(Code::Exit(Exit::Failure)) },
            signal = signals.recv() => return Ok(Code::Status(status_after(signal))),
        }
    }
}

/// A participant's id when it is a short printable text, else its node's name.
fn shown_id(participant: &Participant) -> String {
    printable(participant.id.as_bytes())
        .unwrap_or_else(|| format!("(node {:?})", zkr_connection::path::node_name(&participant.node)))
}

/// The leader, its node, every participant and the layout, as one JSON object.
fn election_json(observer: &LeaderObserver) -> serde_json::Value {
    let participants = observer.participants();
    let leader = participants.first();
    let all: Vec<_> =
        participants.iter().map(|p| json!({"id": printable(p.id.as_bytes()), "node": p.node})).collect();
    json!({
        "leader": leader.map(|p| printable(p.id.as_bytes())),
        "node": leader.map(|p| &p.node),
        "participants": all,
        "layout": observer.layout().map(|l| if l == LockLayout::Kazoo { "kazoo" } else { "curator" }),
    })
}

/// Refuses (exit 6) a path whose children are another recipe's, or that no layout explains.
fn refuse_what_is_no_election(path: &str, found: At) -> anyhow::Result<()> {
    match found {
        // A directory emptied while observed may be removed (a container): no leader.
        At::Missing | At::Empty => Ok(()),
        At::Recipe { recipe, others } => {
            if !others.is_empty() {
                tracing::warn!(%path, others = %at::list(&others), "nodes no election layout explains");
            }
            match recipe.kind {
                Kind::Leader { .. } | Kind::Lock { read_write: false, .. } => Ok(()),
                _ => Err(Failure::error(
                    Exit::Conflict,
                    format!("{path} holds {}, not an election", at::describe(&recipe)),
                )),
            }
        }
        At::Unexplained(names) => Err(Failure::error(
            Exit::Conflict,
            format!(
                "{path} is not an election that zkr knows (Curator's LeaderLatch or LeaderSelector, \
                 kazoo's Election): its children {} are no participants (`zkr ls -l {path}` shows them)",
                at::list(&names)
            ),
        )),
    }
}
