//! `zkr tree watch`: a subtree as JSON lines: every node present at start, `initialized`, then
//! every change, from a `CuratorCache`.

use futures::StreamExt as _;
use serde_json::json;
use zkr_recipes::cache::{CacheEvent, CacheMode, CachedNode, CuratorCache};

use crate::config::output::{encode_value, print_line};
use crate::connect::{parse_path, ConnectArgs};
use crate::exit::Code;
use crate::signals::Signals;

/// `zkr tree ...`
#[derive(Debug, clap::Args)]
pub(crate) struct TreeArgs {
    #[command(subcommand)]
    command: TreeCommand,
}

#[derive(Debug, clap::Subcommand)]
enum TreeCommand {
    /// Print every node under PATH as a JSON line (event, path, version, mzxid, encoding,
    /// value), then {"event":"initialized"}, then a line per change until Ctrl-C.
    #[command(after_long_help = WATCH_LONG_HELP)]
    Watch {
        /// The subtree's root (it need not exist yet).
        #[arg(value_parser = parse_path)]
        path: String,
        /// How many levels below PATH to follow (0: PATH alone); all by default.
        #[arg(long)]
        depth: Option<usize>,
    },
}

const WATCH_LONG_HELP: &str = "\
Events: \"created\", \"changed\" and \"deleted\" (with the node's last value), after the first
read \"initialized\", and \"lagged\" (with \"missed\") if zkr fell behind the changes; then the
lines go on from the current state. `encoding` says how `value` holds the data, as in
`zkr config get --json`. One persistent watch; across reconnects and session expiry the tree
is read again and only what changed is printed. Ctrl-C or SIGTERM: exit 0.";

/// Events a slow terminal may fall behind before a `lagged` line.
const EVENT_CAPACITY: usize = 1 << 16;

pub(crate) async fn run(args: TreeArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    let code = match args.command {
        TreeCommand::Watch { path, depth } => watch(&zk, &path, depth).await,
    };
    zk.close().await;
    code
}

async fn watch(zk: &zkr_connection::ZkClient, path: &str, depth: Option<usize>) -> anyhow::Result<Code> {
    let mut signals = Signals::listen()?;
    let (_cache, mut events) = CuratorCache::builder(zk, path)
        .mode(CacheMode::Tree { max_depth: depth })
        .event_capacity(EVENT_CAPACITY)
        .start_with_events()
        .await?;
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = signals.recv() => break,
        };
        let Some(event) = event else { break };
        if let Some(line) = event_line(&event) {
            print_line(&line)?;
        }
    }
    Ok(Code::Success)
}

/// One event as a JSON line.
fn event_line(event: &CacheEvent) -> Option<String> {
    let line = match event {
        CacheEvent::Initialized => json!({ "event": "initialized" }),
        CacheEvent::Created { path, node } => node_json("created", path, node),
        CacheEvent::Changed { path, new, .. } => node_json("changed", path, new),
        CacheEvent::Deleted { path, old } => node_json("deleted", path, old),
        CacheEvent::Lagged { missed } => json!({ "event": "lagged", "missed": missed }),
        _ => return None,
    };
    Some(line.to_string())
}

fn node_json(event: &str, path: &str, node: &CachedNode) -> serde_json::Value {
    let (encoding, value) = encode_value(node.data());
    json!({
        "event": event,
        "path": path,
        "version": node.stat().version,
        "mzxid": node.stat().mzxid,
        "encoding": encoding,
        "value": value,
    })
}
