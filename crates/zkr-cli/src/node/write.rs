//! `zkr create`, `zkr set`, `zkr rm` and `zkr sync`.

use std::io::{BufRead as _, IsTerminal as _, Read as _, Write as _};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::json;
use zkr_connection::{CreateMode, Parents, ZkClient};

use super::{absent, refuse_reserved, stat_json};
use crate::config::output::print_line;
use crate::connect::{parse_duration, parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};
use crate::signals::{status_after, Signals};

/// `zkr create`: a node.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  zkr create /app/settings '{\"pool\": 8}'     a persistent node with data
  zkr create --parents /a/b/c                 with its missing parents (persistent)
  zkr create --sequential /jobs/job- payload  prints the node made: /jobs/job-0000000007
  zkr create --container /app/tmp             deleted by the server once emptied
  zkr create --ttl 1h /app/heartbeat          deleted an hour after its last change
  zkr create --ephemeral /app/owner host-3    held until Ctrl-C or SIGTERM, then deleted
  some-command | zkr create --stdin /app/blob the data from stdin
Exit 6 when the node exists; 2 under /zookeeper (ZooKeeper's own tree: create, set, rm and acl
set write nothing there).")]
pub(crate) struct CreateArgs {
    /// The node (for --sequential, the prefix of its name).
    #[arg(value_parser = parse_path)]
    path: String,
    /// Its data (none: empty).
    #[arg(conflicts_with = "stdin")]
    data: Option<String>,
    /// Read the data from stdin.
    #[arg(long)]
    stdin: bool,
    /// An ephemeral node: zkr keeps it (and its session) until Ctrl-C or SIGTERM.
    #[arg(short, long, conflicts_with_all = ["container", "ttl"])]
    ephemeral: bool,
    /// A sequential node: the server appends a 10-digit sequence to the name.
    #[arg(short, long, conflicts_with = "container")]
    sequential: bool,
    /// A container node (3.5+): the server deletes it once it had children and has none.
    #[arg(short, long)]
    container: bool,
    /// A node with a time to live (servers with extendedTypesEnabled): the server deletes it
    /// once it has had no change and no children for this long (for example 30s, 1h).
    #[arg(long, value_parser = parse_duration)]
    ttl: Option<Duration>,
    /// Create missing parents, as persistent nodes.
    #[arg(short, long)]
    parents: bool,
    /// One JSON object: path and stat.
    #[arg(long)]
    json: bool,
}

/// `zkr set`: a node's data.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  zkr set /app/settings '{\"pool\": 16}'        prints the new version
  zkr set --if-version 3 /app/settings v2     only over version 3 (exit 6 otherwise)
  zkr set --stdin /app/blob < blob.bin
Exit 5 when the node does not exist.")]
pub(crate) struct SetArgs {
    /// The node.
    #[arg(value_parser = parse_path)]
    path: String,
    /// Its new data.
    #[arg(conflicts_with = "stdin", required_unless_present = "stdin")]
    data: Option<String>,
    /// Read the data from stdin.
    #[arg(long)]
    stdin: bool,
    /// Only if the node's data version is N (exit 6 otherwise).
    #[arg(long, value_name = "N")]
    if_version: Option<i32>,
    /// One JSON object: path and the new stat.
    #[arg(long)]
    json: bool,
}

/// `zkr rm`: delete a node.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  zkr rm /app/old                   a node without children (exit 6 if it has some)
  zkr rm --if-version 4 /app/old    only at data version 4
  zkr rm -r /app/tmp                the node and everything under it; asks first on a terminal
  zkr rm -r --yes /app/tmp          without asking
Exit 5 when the node does not exist.")]
pub(crate) struct RmArgs {
    /// The node.
    #[arg(value_parser = parse_path)]
    path: String,
    /// The node and every node under it (never anything outside PATH).
    #[arg(short, long, conflicts_with = "if_version")]
    recursive: bool,
    /// Only if the node's data version is N (exit 6 otherwise).
    #[arg(long, value_name = "N")]
    if_version: Option<i32>,
    /// Do not ask before deleting recursively on a terminal.
    #[arg(short, long)]
    yes: bool,
}

/// `zkr sync`: make the connected server catch up with the leader.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:
  zkr sync /app && zkr get /app/settings")]
pub(crate) struct SyncArgs {
    /// The path to sync.
    #[arg(value_parser = parse_path)]
    path: String,
}

fn read_data(data: Option<String>, stdin: bool) -> anyhow::Result<Vec<u8>> {
    if !stdin {
        return Ok(data.map(String::into_bytes).unwrap_or_default());
    }
    let mut bytes = Vec::new();
    std::io::stdin().read_to_end(&mut bytes).context("reading the data from stdin")?;
    Ok(bytes)
}

fn create_mode(args: &CreateArgs) -> CreateMode {
    match (args.container, args.ephemeral, args.sequential) {
        (true, _, _) => CreateMode::Container,
        (false, true, true) => CreateMode::EphemeralSequential,
        (false, true, false) => CreateMode::Ephemeral,
        (false, false, true) => CreateMode::PersistentSequential,
        (false, false, false) => CreateMode::Persistent,
    }
}

pub(crate) async fn create(args: CreateArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let data = read_data(args.data.clone(), args.stdin)?;
    let zk = connect.connect().await?;
    refuse_reserved(&zk, &args.path, "creating")?;
    let parents = if args.parents { Parents::Persistent } else { Parents::None };
    let mut request = zk.create_node(&args.path).data(&data).mode(create_mode(&args)).parents(parents);
    if let Some(ttl) = args.ttl {
        request = request.ttl(ttl);
    }
    let created = request.await.map_err(|e| match e.is_no_node() {
        true => Failure::error(
            Exit::Absent,
            format!("creating {}: its parent does not exist (--parents creates it)", args.path),
        ),
        false => anyhow::Error::new(e).context(format!("creating {}", args.path)),
    })?;
    match args.json {
        true => print_line(&json!({"path": created.path, "stat": stat_json(&created.stat)}).to_string())?,
        false => print_line(&created.path)?,
    }
    if !args.ephemeral {
        return Ok(Code::Success);
    }
    // The node lives with our session: hold it until asked to stop, then delete it.
    let mut signals = Signals::listen().context("listening for signals")?;
    let signal = signals.recv().await;
    let _ = zk.delete_if_present(&created.path).await;
    zk.close().await;
    Ok(Code::Status(status_after(signal)))
}

pub(crate) async fn set(args: SetArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let data = read_data(args.data.clone(), args.stdin)?;
    let zk = connect.connect().await?;
    refuse_reserved(&zk, &args.path, "setting")?;
    // Without a version, at the version read all the same: a write whose reply was lost can
    // then never land after someone else's later write (see `ZkClient::overwrite`).
    let written = match args.if_version {
        Some(version) => zk.set_data(&args.path, &data, Some(version)).await,
        None => zk.overwrite(&args.path, &data, None).await,
    };
    let stat = match written {
        Ok(stat) => stat,
        Err(e) => return Err(write_error(&zk, &args.path, "setting", e).await),
    };
    match args.json {
        true => print_line(&json!({"path": args.path, "stat": stat_json(&stat)}).to_string())?,
        false => print_line(&stat.version.to_string())?,
    }
    Ok(Code::Success)
}

pub(crate) async fn rm(args: RmArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    if args.path == "/" {
        return Err(Failure::error(Exit::Usage, "/: refusing to delete the root"));
    }
    let zk = connect.connect().await?;
    refuse_reserved(&zk, &args.path, "deleting")?;
    if !args.recursive {
        return match zk.delete(&args.path, args.if_version).await {
            Ok(()) => Ok(Code::Success),
            Err(e) => Err(write_error(&zk, &args.path, "deleting", e).await),
        };
    }
    if !args.yes && std::io::stdin().is_terminal() && !confirm(&zk, &args.path).await? {
        eprintln!("zkr: nothing deleted");
        return Ok(Code::Exit(Exit::Failure));
    }
    let existed = zk.delete_recursive(&args.path).await.with_context(|| format!("deleting {}", args.path))?;
    if !existed {
        return Err(absent(&args.path));
    }
    Ok(Code::Success)
}

/// What a refused write says: the node is missing (exit 5), at another version than asked
/// (exit 6, naming the version it is at), or has children (exit 6).
async fn write_error(zk: &ZkClient, path: &str, doing: &str, error: zkr_connection::Error) -> anyhow::Error {
    if error.is_no_node() {
        return absent(path);
    }
    if error.is_bad_version() {
        let now = zk.exists(path).await.ok().flatten().map(|stat| stat.version);
        let at = now.map_or_else(String::new, |v| format!(" (it is at version {v})"));
        return Failure::error(Exit::Conflict, format!("{doing} {path}: not at the version given{at}"));
    }
    if matches!(error, zkr_connection::Error::Zk(zkr_connection::zookeeper_client::Error::NotEmpty)) {
        return Failure::error(
            Exit::Conflict,
            format!("{doing} {path}: it has children (-r deletes them too)"),
        );
    }
    anyhow::Error::new(error).context(format!("{doing} {path}"))
}

/// Asks on the terminal whether to delete `path` and the nodes under it.
async fn confirm(zk: &ZkClient, path: &str) -> anyhow::Result<bool> {
    let Some(stat) = zk.exists(path).await? else { return Err(absent(path)) };
    let mut err = std::io::stderr().lock();
    write!(err, "delete {path} and everything under it ({} children)? [y/N] ", stat.num_children)?;
    err.flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

pub(crate) async fn sync(args: SyncArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    zk.sync(&args.path).await.with_context(|| format!("syncing {}", args.path))?;
    Ok(Code::Success)
}
