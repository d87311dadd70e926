//! `zkr config get|set|watch`: read, publish and follow config nodes.

pub(crate) mod output;
mod watch;

use anyhow::Context as _;
use zkr_recipes::config::{ConfigPublisher, Raw};

use crate::connect::{parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};
use output::{json_line, print_line, write_value};

/// `zkr config ...`
#[derive(Debug, clap::Args)]
pub(crate) struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ConfigCommand {
    /// Print a node's value (exit 5 if it does not exist).
    #[command(after_long_help = GET_LONG_HELP)]
    Get {
        /// The node.
        #[arg(value_parser = parse_path)]
        path: String,
        /// A JSON line with path, version, mzxid, encoding and value instead of the bare value.
        #[arg(long, conflicts_with = "raw")]
        json: bool,
        /// Write the stored bytes exactly, even to a terminal.
        #[arg(long)]
        raw: bool,
    },
    /// Set a node's value, creating it (and its parents) if needed; prints the new version.
    Set {
        /// The node.
        #[arg(value_parser = parse_path)]
        path: String,
        /// The value, or @FILE to read it from a file (@- for standard input).
        value: String,
        /// Only if the node is at this version (exit 6 if not, 5 if it does not exist).
        #[arg(long)]
        if_version: Option<i32>,
        /// A JSON line with path, version and mzxid instead of the bare version.
        #[arg(long)]
        json: bool,
    },
    /// Print the value and then every new one as a JSON line (path, version, mzxid, encoding,
    /// value) until Ctrl-C; with --exec, run a shell command after changes (like confd's
    /// reload_cmd).
    Watch(watch::WatchArgs),
}

/// `zkr config get --help`, after the options.
const GET_LONG_HELP: &str = "\
Output: to a pipe or a file, the value's bytes exactly as stored. To a terminal, text ends
with a newline, and binary (non-UTF-8) data is described instead of written (--raw writes it).
With --json, `encoding` says how `value` holds the data: \"json\" (a JSON object or array,
embedded as JSON), \"text\" (any other UTF-8, as a string) or \"base64\".";

pub(crate) async fn run(args: ConfigArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    let code = match args.command {
        ConfigCommand::Get { path, json, raw } => get(&zk, &path, json, raw).await,
        ConfigCommand::Set { path, value, if_version, json } => {
            set(&zk, &path, &value, if_version, json).await
        }
        ConfigCommand::Watch(watch) => watch::run(&zk, watch).await,
    };
    zk.close().await;
    code
}

async fn get(zk: &zkr_connection::ZkClient, path: &str, json: bool, raw: bool) -> anyhow::Result<Code> {
    let Some(value) = ConfigPublisher::new(zk, Raw).get(path).await? else {
        return Err(Failure::error(Exit::Absent, format!("{path} does not exist")));
    };
    if json {
        print_line(&json_line(path, Some(&value)))?;
    } else {
        write_value(path, &value.value, raw)?;
    }
    Ok(Code::Success)
}

async fn set(
    zk: &zkr_connection::ZkClient,
    path: &str,
    value: &str,
    if_version: Option<i32>,
    json: bool,
) -> anyhow::Result<Code> {
    let publisher = ConfigPublisher::new(zk, Raw);
    let data = read_value(value)?;
    let stat = match if_version {
        Some(version) => publisher.set_if_version(path, &data, version).await?,
        None => publisher.set(path, &data).await?,
    };
    if json {
        let line = serde_json::json!({ "path": path, "version": stat.version, "mzxid": stat.mzxid });
        print_line(&line.to_string())?;
    } else {
        print_line(&stat.version.to_string())?;
    }
    Ok(Code::Success)
}

fn read_value(value: &str) -> anyhow::Result<Vec<u8>> {
    match value.strip_prefix('@') {
        Some("-") => {
            let mut data = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut data).context("reading standard input")?;
            Ok(data)
        }
        Some(file) => std::fs::read(file).with_context(|| format!("reading {file}")),
        None => Ok(value.as_bytes().to_vec()),
    }
}
