//! `zkr config get|set|watch`: read, publish and follow config nodes.

use std::io::Write as _;

use anyhow::Context as _;
use futures::StreamExt as _;
use tokio::signal::unix::{signal, SignalKind};
use zkr_recipes::config::{ConfigError, ConfigEvent, ConfigPublisher, ConfigWatcher, Raw, Versioned};

use crate::connect::ConnectArgs;

/// Exit code when `--if-version` does not match.
const EXIT_CONFLICT: i32 = 3;
/// Exit code when the node does not exist.
const EXIT_ABSENT: i32 = 4;

/// `zkr config ...`
#[derive(Debug, clap::Args)]
pub(crate) struct ConfigArgs {
    #[command(subcommand)]
    command: ConfigCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ConfigCommand {
    /// Print a node's value (exit 4 if it does not exist).
    Get {
        /// The node.
        path: String,
        /// A JSON line with path, version, mzxid and value instead of the bare value.
        #[arg(long)]
        json: bool,
    },
    /// Set a node's value, creating it (and its parents) if needed; prints the new version.
    Set {
        /// The node.
        path: String,
        /// The value, or @FILE to read it from a file (@- for standard input).
        value: String,
        /// Only if the node is at this version (exit 3 if not, 4 if it does not exist).
        #[arg(long)]
        if_version: Option<i32>,
    },
    /// Print the value and then every new one as a JSON line (path, version, mzxid, value)
    /// until Ctrl-C; with --exec, run a shell command after each (like confd's reload_cmd).
    Watch {
        /// The node.
        path: String,
        /// A shell command run after every change, with ZKR_CONFIG_PATH, ZKR_CONFIG_VERSION and
        /// ZKR_CONFIG_VALUE in its environment.
        #[arg(long)]
        exec: Option<String>,
    },
}

fn json_line(path: &str, value: Option<&Versioned<Vec<u8>>>) -> String {
    let line = match value {
        Some(v) => serde_json::json!({
            "path": path,
            "version": v.version,
            "mzxid": v.mzxid,
            "value": String::from_utf8_lossy(&v.value),
        }),
        None => serde_json::json!({ "path": path, "version": null, "mzxid": null, "value": null }),
    };
    line.to_string()
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

pub(crate) async fn run(connect: &ConnectArgs, args: ConfigArgs) -> anyhow::Result<i32> {
    let zk = connect.connect().await?;
    let code = match args.command {
        ConfigCommand::Get { path, json } => {
            let publisher = ConfigPublisher::new(&zk, Raw);
            match publisher.get(&path).await? {
                Some(v) if json => println!("{}", json_line(&path, Some(&v))),
                Some(v) => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(&v.value)?;
                    out.flush()?;
                }
                None => {
                    eprintln!("zkr: {path} does not exist");
                    zk.close().await;
                    return Ok(EXIT_ABSENT);
                }
            }
            0
        }
        ConfigCommand::Set { path, value, if_version } => {
            let publisher = ConfigPublisher::new(&zk, Raw);
            let data = read_value(&value)?;
            let written = match if_version {
                Some(version) => publisher.set_if_version(&path, &data, version).await,
                None => publisher.set(&path, &data).await,
            };
            match written {
                Ok(stat) => {
                    println!("{}", stat.version);
                    0
                }
                Err(e @ ConfigError::VersionConflict { .. }) => {
                    eprintln!("zkr: {e}");
                    EXIT_CONFLICT
                }
                Err(e @ ConfigError::NotFound { .. }) => {
                    eprintln!("zkr: {e}");
                    EXIT_ABSENT
                }
                Err(e) => return Err(e.into()),
            }
        }
        ConfigCommand::Watch { path, exec } => watch(&zk, &path, exec.as_deref()).await?,
    };
    zk.close().await;
    Ok(code)
}

async fn watch(zk: &zkr_connection::ZkClient, path: &str, exec: Option<&str>) -> anyhow::Result<i32> {
    // Registered now, so that a Ctrl-C (or SIGTERM) while --exec runs is not lost.
    let mut interrupt = signal(SignalKind::interrupt()).context("listening for SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    let watcher = ConfigWatcher::builder(zk, path, Raw).start().await?;
    let mut changes = watcher.changes();
    let mut current = watcher.get();
    emit(path, current.as_ref(), exec).await?;
    loop {
        let event = tokio::select! {
            event = changes.next() => event,
            _ = interrupt.recv() => return Ok(0),
            _ = terminate.recv() => return Ok(0),
        };
        let next = match event {
            None => return Ok(0),
            Some(ConfigEvent::Changed { new, .. }) => new,
            // Fell behind: what matters is the value now.
            Some(ConfigEvent::Lagged { .. }) => watcher.get(),
            Some(ConfigEvent::DecodeFailed { .. }) => continue,
            Some(_) => continue,
        };
        if next.as_ref().map(|v| v.mzxid) != current.as_ref().map(|v| v.mzxid) {
            current = next;
            emit(path, current.as_ref(), exec).await?;
        }
    }
}

/// Prints the JSON line and runs the command, waiting for it (changes meanwhile are coalesced).
async fn emit(path: &str, value: Option<&Versioned<Vec<u8>>>, exec: Option<&str>) -> anyhow::Result<()> {
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", json_line(path, value))?;
        out.flush()?;
    }
    let Some(command) = exec else { return Ok(()) };
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c").arg(command).env("ZKR_CONFIG_PATH", path);
    match value {
        Some(v) => {
            cmd.env("ZKR_CONFIG_VERSION", v.version.to_string());
            cmd.env("ZKR_CONFIG_VALUE", String::from_utf8_lossy(&v.value).as_ref());
        }
        None => {
            cmd.env_remove("ZKR_CONFIG_VERSION").env_remove("ZKR_CONFIG_VALUE");
        }
    }
    let status = cmd.status().await.with_context(|| format!("running {command:?}"))?;
    if !status.success() {
        eprintln!("zkr: {command:?} exited with {status}; still watching");
    }
    Ok(())
}
