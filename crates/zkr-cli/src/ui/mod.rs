//! `zkr ui`: a live, read-only page of the recipes under a root: who holds each lock and who
//! waits, who leads, queue depths, services, counters, config versions, and what each session
//! holds. One `CuratorCache` over the root drives it; the page gets the whole view, then each
//! change as a patch, as server-sent events.

pub(crate) mod at;
mod layout;
mod live;
mod model;
mod recognize;
mod roles;
mod serve;
mod tree;
mod view;

#[cfg(test)]
mod tests;

use std::io::Write as _;
use std::net::SocketAddr;

use anyhow::Context as _;
use zkr_recipes::cache::{CacheMode, CuratorCache};

use crate::connect::{parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};
use crate::signals::Signals;

/// `zkr ui --help`, after the options.
const UI_LONG_HELP: &str = "\
The page shows, live: locks and read-write locks (holder, its session, how long it has held,
fencing token, waiters in order), semaphores, leader elections, queues (depth, oldest item,
items consumers hold), double barriers, groups, services (instances, address, enabled),
counters and config nodes (version and last change; values only with --show-values), in
Apache Curator's and kazoo's layouts; nodes no recipe explains as a plain list; and per session
everything it holds. It is read-only: nothing on it changes ZooKeeper. Counters, config nodes
and the plain list show the first 2,000 by path and count the rest; every other recipe is shown.
The page gets the whole view once, then each change as a patch (the cache's events, no polling).

It listens on loopback only unless --token (or ZKR_UI_TOKEN) is given: then every request
must carry the token, which the page asks for. Through a suspended connection or an expired
session the page says \"stale\" until the cache has read the tree again.";

/// `zkr ui`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = UI_LONG_HELP)]
pub(crate) struct UiArgs {
    /// Where to serve the page; an address other than loopback needs --token. Port 0 picks a
    /// free port (the URL is printed).
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: SocketAddr,
    /// The subtree to show.
    #[arg(long, default_value = "/", value_parser = parse_path)]
    root: String,
    /// A bearer token every request must carry (the page asks for it once).
    #[arg(long, env = "ZKR_UI_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Show config nodes' values (hidden by default: config can hold secrets).
    #[arg(long)]
    show_values: bool,
}

pub(crate) async fn run(args: UiArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    if !args.listen.ip().is_loopback() && args.token.is_none() {
        return Err(Failure::error(
            Exit::Usage,
            format!(
                "refusing to serve on {}, which is not a loopback address, without --token (or ZKR_UI_TOKEN): \
                 anyone who can reach it would see every lock holder and session",
                args.listen
            ),
        ));
    }
    if args.token.as_deref() == Some("") {
        return Err(Failure::error(Exit::Usage, "--token is empty"));
    }
    let mut signals = Signals::listen()?;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let address = listener.local_addr()?;
    let zk = connect.connect().await?;
    let cache =
        CuratorCache::builder(&zk, &args.root).mode(CacheMode::Tree { max_depth: None }).start().await;
    let cache = match cache {
        Ok(cache) => cache,
        Err(e) => {
            zk.close().await;
            return Err(e).with_context(|| format!("cannot read {}", args.root));
        }
    };
    let (live, updater) = live::follow(&zk, &cache, model::Model::new(&args.root, args.show_values));
    // Best effort: a closed stdout (`zkr ui | head -1`) must not stop the page.
    let _ = announce(address, &args);
    let app = serve::router(serve::Shared::new(live.clone(), args.token.clone()));
    let shutdown = async move {
        signals.recv().await;
        updater.abort();
        // Every event stream ends, so that the server's graceful shutdown does not wait on them.
        live.close();
    };
    let served = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
    drop(cache);
    zk.close().await;
    served.context("the web server failed")?;
    Ok(Code::Success)
}

/// The first line on stdout: the URL (a script or a test reads it), then how it is guarded.
fn announce(address: SocketAddr, args: &UiArgs) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "zkr ui: http://{address}/ (root {}; read-only; Ctrl-C to stop)", args.root)?;
    if args.token.is_some() {
        writeln!(out, "zkr ui: every request needs the token (the page asks for it once)")?;
    }
    if !address.ip().is_loopback() {
        writeln!(out, "zkr ui: serving beyond loopback on {address}: anyone with the token sees every holder and session")?;
    }
    out.flush()?;
    Ok(())
}
