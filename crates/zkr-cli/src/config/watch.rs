//! `zkr config watch`: a JSON line per change as it arrives, and an `--exec` hook that runs
//! after changes, coalesced: while it runs, later changes collapse into one run with the
//! latest value.

use futures::StreamExt as _;
use tokio::sync::watch;
use zkr_recipes::config::{ConfigEvent, ConfigWatcher, Raw, Versioned};

use super::output::{json_line, print_line};
use crate::connect::parse_path;
use crate::exit::Code;
use crate::signals::Signals;

type Value = Option<Versioned<Vec<u8>>>;

#[derive(Debug, clap::Args)]
#[command(after_long_help = WATCH_LONG_HELP)]
pub(crate) struct WatchArgs {
    /// The node.
    #[arg(value_parser = parse_path)]
    path: String,
    /// A shell command run after changes, with ZKR_CONFIG_PATH, ZKR_CONFIG_VERSION and
    /// ZKR_CONFIG_VALUE in its environment.
    #[arg(long)]
    exec: Option<String>,
    /// Also run --exec when the node is deleted (without ZKR_CONFIG_VERSION and
    /// ZKR_CONFIG_VALUE).
    #[arg(long, requires = "exec")]
    exec_on_delete: bool,
}

const WATCH_LONG_HELP: &str = "\
--exec runs once for the value at start (not if the node does not exist then) and after
every change. One run at a time: changes that arrive while it runs collapse into one more run
with the latest value. JSON lines are printed as changes arrive, never held back by the hook.
Ctrl-C or SIGTERM: zkr waits for a running hook to finish, then exits 0.";

pub(crate) async fn run(zk: &zkr_connection::ZkClient, args: WatchArgs) -> anyhow::Result<Code> {
    // Registered now, so that a Ctrl-C (or SIGTERM) while a hook runs is not lost.
    let mut signals = Signals::listen()?;
    let watcher = ConfigWatcher::builder(zk, &args.path, Raw).start().await?;
    let mut changes = watcher.changes();
    let mut current = watcher.get();
    print_line(&json_line(&args.path, current.as_ref()))?;
    let hooks = args.exec.map(|command| {
        let hook = Hook { command, path: args.path.clone(), on_delete: args.exec_on_delete };
        let (latest, rx) = watch::channel(current.clone());
        (latest, tokio::spawn(hook.run_coalesced(rx)))
    });
    loop {
        let event = tokio::select! {
            event = changes.next() => event,
            _ = signals.recv() => break,
        };
        let next = match event {
            None => break,
            Some(ConfigEvent::Changed { new, .. }) => new,
            // Fell behind: what matters is the value now.
            Some(ConfigEvent::Lagged { .. }) => watcher.get(),
            Some(_) => continue,
        };
        if next.as_ref().map(|v| v.mzxid) != current.as_ref().map(|v| v.mzxid) {
            current = next;
            // The hook hears first, so that whoever reads this line knows it will run.
            if let Some((latest, _)) = &hooks {
                latest.send_replace(current.clone());
            }
            print_line(&json_line(&args.path, current.as_ref()))?;
        }
    }
    if let Some((latest, task)) = hooks {
        drop(latest);
        let _ = task.await;
    }
    Ok(Code::Success)
}

/// The `--exec` command.
#[derive(Debug)]
struct Hook {
    command: String,
    path: String,
    on_delete: bool,
}

impl Hook {
    /// Runs the hook for the value in `latest`, then for whatever is latest once it finishes,
    /// until the sender is dropped. Values sent while a run is under way replace each other.
    async fn run_coalesced(self, mut latest: watch::Receiver<Value>) {
        let mut first = true;
        loop {
            let value = latest.borrow_and_update().clone();
            // Nothing to reload for a node that did not exist at start.
            if value.is_some() || (self.on_delete && !first) {
                self.run(value.as_ref()).await;
            }
            first = false;
            // Stopped (the sender dropped): start no new run.
            if latest.changed().await.is_err() || latest.has_changed().is_err() {
                return;
            }
        }
    }

    async fn run(&self, value: Option<&Versioned<Vec<u8>>>) {
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c").arg(&self.command).env("ZKR_CONFIG_PATH", &self.path);
        match value {
            Some(v) => {
                cmd.env("ZKR_CONFIG_VERSION", v.version.to_string());
                cmd.env("ZKR_CONFIG_VALUE", String::from_utf8_lossy(&v.value).as_ref());
            }
            None => {
                cmd.env_remove("ZKR_CONFIG_VERSION").env_remove("ZKR_CONFIG_VALUE");
            }
        }
        match cmd.status().await {
            Ok(status) if status.success() => {}
            Ok(status) => eprintln!("zkr: {:?} exited with {status}; still watching", self.command),
            Err(e) => eprintln!("zkr: cannot run {:?}: {e}; still watching", self.command),
        }
    }
}
