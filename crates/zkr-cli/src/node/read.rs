//! `zkr ls`, `zkr get` and `zkr stat`.

use anyhow::Context as _;
use serde_json::json;
use zkr_connection::{path, Stat, ZkClient};

use super::{absent, stat_json, stat_text};
use crate::config::output::{encode_value, print_line, write_value};
use crate::connect::{parse_path, ConnectArgs};
use crate::exit::Code;

/// `zkr ls`: a node's children.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  zkr ls /services                 one child name per line, sorted
  zkr ls -R /app                   every node under /app, full paths, depth first
  zkr ls -l /locks/orders          version, data length, children, mtime, e(phemeral), name
  zkr ls -R --json /app            one JSON object per node (path, name, stat)")]
pub(crate) struct LsArgs {
    /// The node whose children to list.
    #[arg(value_parser = parse_path)]
    path: String,
    /// Every node under PATH (not PATH itself), depth first, as full paths.
    #[arg(short = 'R', long)]
    recursive: bool,
    /// The long form: version, data length, number of children, mtime, `e` for an ephemeral
    /// node, and the name.
    #[arg(short = 'l', long)]
    long: bool,
    /// One JSON object per node: path, name and stat.
    #[arg(long)]
    json: bool,
}

/// `zkr get`: a node's data.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  zkr get /app/settings            the data (binary data is described on a terminal)
  zkr get --stat /app/settings     then the node's stat, as zkCli.sh prints it
  zkr get --json /app/settings     {path, encoding: text|json|base64, value, stat}")]
pub(crate) struct GetArgs {
    /// The node.
    #[arg(value_parser = parse_path)]
    path: String,
    /// Print the node's stat after its data.
    #[arg(long)]
    stat: bool,
    /// Write binary data to a terminal as it is.
    #[arg(long, conflicts_with = "json")]
    raw: bool,
    /// One JSON object: path, encoding, value and stat.
    #[arg(long)]
    json: bool,
}

/// `zkr stat`: a node's stat.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  zkr stat /app/settings           cZxid, ctime, ..., numChildren, as zkCli.sh prints them
  zkr stat --json /app/settings    the same fields as one JSON object")]
pub(crate) struct StatArgs {
    /// The node.
    #[arg(value_parser = parse_path)]
    path: String,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn ls(args: LsArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    let listed = children(&zk, &args.path).await?.ok_or_else(|| absent(&args.path))?;
    if !args.recursive {
        for name in listed {
            let node = path::join(&args.path, &name);
            let stat = match args.long || args.json {
                true => zk.exists(&node).await?,
                false => None,
            };
            print_entry(&args, &node, &name, stat.as_ref())?;
        }
        return Ok(Code::Success);
    }
    // Depth first, sorted, without recursion.
    let mut stack: Vec<String> = listed.into_iter().rev().map(|name| path::join(&args.path, &name)).collect();
    while let Some(node) = stack.pop() {
        let Some((mut names, stat)) = zk.get_children(&node).await? else { continue };
        print_entry(&args, &node, &node, Some(&stat))?;
        names.sort();
        stack.extend(names.into_iter().rev().map(|name| path::join(&node, &name)));
    }
    Ok(Code::Success)
}

/// A node's children, sorted; `None` for a missing node.
async fn children(zk: &ZkClient, node: &str) -> anyhow::Result<Option<Vec<String>>> {
    let listed = zk.get_children(node).await.with_context(|| format!("listing {node}"))?;
    Ok(listed.map(|(mut names, _)| {
        names.sort();
        names
    }))
}

fn print_entry(args: &LsArgs, node: &str, shown: &str, stat: Option<&Stat>) -> std::io::Result<()> {
    let line = match (args.json, args.long, stat) {
        (true, _, stat) => {
            json!({"path": node, "name": path::node_name(node), "stat": stat.map(stat_json)}).to_string()
        }
        (false, true, Some(stat)) => long_line(shown, stat),
        _ => shown.to_owned(),
    };
    print_line(&line)
}

/// `ls -l`: version, data length, children, mtime (UTC, seconds), `e` for ephemeral, name.
fn long_line(name: &str, stat: &Stat) -> String {
    let mtime = std::time::UNIX_EPOCH + std::time::Duration::from_millis(stat.mtime.max(0).unsigned_abs());
    let kind = if stat.ephemeral_owner != 0 { 'e' } else { '-' };
    format!(
        "{:>6} {:>8} {:>6} {} {kind} {name}",
        stat.version,
        stat.data_length,
        stat.num_children,
        humantime::format_rfc3339_seconds(mtime)
    )
}

pub(crate) async fn get(args: GetArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    let found = zk.get_data(&args.path).await.with_context(|| format!("reading {}", args.path))?;
    let (data, stat) = found.ok_or_else(|| absent(&args.path))?;
    if args.json {
        let (encoding, value) = encode_value(&data);
        let line = json!({"path": args.path, "encoding": encoding, "value": value, "stat": stat_json(&stat)});
        print_line(&line.to_string())?;
        return Ok(Code::Success);
    }
    write_value(&args.path, &data, args.raw)?;
    if args.stat {
        // The stat on lines of its own, whatever the data ends with.
        let separator = if data.is_empty() || data.ends_with(b"\n") { "" } else { "\n" };
        print_line(&format!("{separator}{}", stat_text(&stat)))?;
    }
    Ok(Code::Success)
}

pub(crate) async fn stat(args: StatArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    let found = zk.exists(&args.path).await.with_context(|| format!("reading {}", args.path))?;
    let stat = found.ok_or_else(|| absent(&args.path))?;
    match args.json {
        true => print_line(&json!({"path": args.path, "stat": stat_json(&stat)}).to_string())?,
        false => print_line(&stat_text(&stat))?,
    }
    Ok(Code::Success)
}
