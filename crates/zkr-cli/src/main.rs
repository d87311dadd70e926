//! `zkr`: run commands under ZooKeeper locks, hand out IDs, get/set/watch config, and run a
//! local ZooKeeper for development. All logic lives in the zkr libraries; this is the shell.

mod child;
mod config;
mod connect;
mod demo;
mod elect;
mod exit;
mod generate;
mod id;
mod lock;
mod node;
mod server;
mod service;
mod signals;
mod status;
mod tree;
mod ui;

use std::io::IsTerminal as _;

use clap::{CommandFactory as _, FromArgMatches as _, Parser, Subcommand};
use exit::{Code, Exit};

/// `zkr --help`, after the subcommands: the exit codes and the environment.
const AFTER_HELP: &str = "\
Environment:
  ZK_CONNECT  the default for --connect (127.0.0.1:2181)
  ZKR_AUTH    the default for --auth
  ZKR_LOG     a tracing filter for what zkr logs on stderr, for example `debug` or
              `zkr_connection=info`; it overrides -v (default: warnings only)

Shell completions and a man page, generated from these definitions:
  zkr completions bash|zsh|fish|elvish|powershell   zkr man > zkr.1
";

#[derive(Debug, Parser)]
#[command(
    name = "zkr",
    version,
    about = "ZooKeeper recipes from the shell: locks, IDs, config, caches, members and services",
    after_help = after_help()
)]
struct Cli {
    /// More output (tracing at debug level); twice for trace. ZKR_LOG overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Exit with N (1-255) instead of any of zkr's own failure codes (1-9), so that they cannot
    /// be mistaken for the command's own status (as flock's -E).
    #[arg(short = 'E', long, value_name = "N", global = true,
          value_parser = clap::value_parser!(u8).range(1..))]
    error_exit_code: Option<u8>,
    #[command(flatten)]
    connect: connect::ConnectArgs,
    #[command(subcommand)]
    command: Command,
}

/// The exit-code table, then the environment.
fn after_help() -> String {
    format!("{}\n\n{AFTER_HELP}", exit::EXIT_TABLE)
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a command while holding a lock (the InterProcessMutex Apache Curator also takes at
    /// that path). Exit: the command's status; 3 not acquired; 4 lock lost while it ran.
    Lock(lock::LockArgs),
    /// Run a command while this process leads an election (Curator's LeaderLatch), or follow
    /// the leader (--observe). Exit: the command's status; 3 not leader in time; 4 leadership
    /// lost while it ran.
    Elect(elect::ElectArgs),
    /// Show the holder of a lock and who waits for it (Curator's and kazoo's layouts, as `zkr
    /// ui` recognises them).
    LockInfo(lock::LockInfoArgs),
    /// The health of the ensemble: one line per server (mode, zxid, latency, connections,
    /// ...). Exit 0 healthy, 8 degraded, 9 no quorum.
    Status(status::StatusArgs),
    /// List a node's children (-R: the whole subtree; -l: with their stats).
    Ls(node::LsArgs),
    /// Print a node's data (binary data is described on a terminal; --stat adds its stat).
    Get(node::GetArgs),
    /// Print a node's stat.
    Stat(node::StatArgs),
    /// Create a node (persistent, ephemeral, sequential, container or with a TTL).
    Create(node::CreateArgs),
    /// Set a node's data (--if-version: only over that version).
    Set(node::SetArgs),
    /// Delete a node (-r: with everything under it; asks first on a terminal).
    Rm(node::RmArgs),
    /// Read or replace a node's ACL.
    Acl(node::AclArgs),
    /// Write a subtree as one JSON document: data (binary in base64), ACLs and stats.
    Export(node::ExportArgs),
    /// Create a subtree from an export, in transactions (--dry-run, --overwrite).
    Import(node::ImportArgs),
    /// Make the connected server catch up with the leader before the next read.
    Sync(node::SyncArgs),
    /// Hand out unique IDs (sequential, segment or snowflake generators).
    Id(id::IdArgs),
    /// Read, publish and watch config nodes.
    Config(config::ConfigArgs),
    /// Follow a subtree: every node, then every change, as JSON lines.
    Tree(tree::TreeArgs),
    /// List a group's members and payloads (Curator's GroupMember layout).
    Members(service::MembersArgs),
    /// List service instances, or register one while a command runs (Curator's service
    /// discovery layout, as Spring Cloud Zookeeper uses).
    Service(service::ServiceArgs),
    /// A live, read-only web page of the recipes: lock holders and waiters, leaders, queues,
    /// services, counters, config, and what each session holds.
    Ui(ui::UiArgs),
    /// Run a real local ZooKeeper (1 or 3 servers) in the foreground until Ctrl-C or SIGTERM.
    Server(server::ServerArgs),
    /// The demo: an embedded 3-server ZooKeeper and zkr's recipes at work.
    Demo(demo::DemoArgs),
    /// One seller process of the demo (started by `zkr demo`).
    #[command(hide = true)]
    DemoSeller(demo::SellerArgs),
    /// Print a shell completion script (see `zkr --help`).
    #[command(hide = true)]
    Completions(generate::CompletionsArgs),
    /// Print the man page, in roff (see `zkr --help`).
    #[command(hide = true)]
    Man,
}

fn init_tracing(verbose: u8) {
    let level = match verbose {
        // zookeeper-client warns on every failed connection attempt; that is our retry loop's job.
        0 => "warn,zookeeper_client=error,zkr_connection=error",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("ZKR_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// The command line's definition, the connection options hidden from the help of the
/// subcommands that run their own ZooKeeper (they ignore them).
fn command() -> clap::Command {
    let mut cmd = Cli::command();
    cmd.build();
    for name in ["server", "demo", "completions", "man"] {
        let Some(sub) = cmd.find_subcommand_mut(name) else { continue };
        // `mut_args` keeps the arguments' order, which the built command's index relies on.
        *sub = std::mem::take(sub).mut_args(|a| match a.get_help_heading() {
            Some("Connection" | "Security") => a.hide(true),
            _ => a,
        });
    }
    cmd
}

/// Parses the command line; a usage error exits 2 (or `-E`'s code), help and version 0.
fn parse() -> Cli {
    let parsed = command().try_get_matches().and_then(|matches| Cli::from_arg_matches(&matches));
    match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::scan_error_exit_code(std::env::args_os()).map_or(Exit::Usage.code(), i32::from)
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    }
}

/// Runs the subcommand; the connection options (given before or after its name) are `connect`.
async fn dispatch(command: Command, connect: &connect::ConnectArgs) -> anyhow::Result<Code> {
    match command {
        Command::Lock(args) => lock::run(args, connect).await,
        Command::LockInfo(args) => lock::info(args, connect).await,
        Command::Elect(args) => elect::run(args, connect).await,
        Command::Config(args) => config::run(args, connect).await,
        Command::Status(args) => status::run(args, connect).await,
        Command::Ls(args) => node::ls(args, connect).await,
        Command::Get(args) => node::get(args, connect).await,
        Command::Stat(args) => node::stat(args, connect).await,
        Command::Create(args) => node::create(args, connect).await,
        Command::Set(args) => node::set(args, connect).await,
        Command::Rm(args) => node::rm(args, connect).await,
        Command::Acl(args) => node::acl(args, connect).await,
        Command::Sync(args) => node::sync(args, connect).await,
        Command::Export(args) => node::export(args, connect).await,
        Command::Import(args) => node::import(args, connect).await,
        Command::Id(args) => id::run(args, connect).await,
        Command::Tree(args) => tree::run(args, connect).await,
        Command::Members(args) => service::members(args, connect).await,
        Command::Service(args) => service::run(args, connect).await,
        Command::Ui(args) => ui::run(args, connect).await,
        Command::Server(args) => server::run(args).await,
        Command::Demo(args) => demo::run(args).await,
        Command::DemoSeller(args) => demo::run_seller(args, connect).await,
        Command::Completions(args) => generate::completions(&args, Cli::command()),
        Command::Man => generate::man(Cli::command()),
    }
}

fn main() {
    let cli = parse();
    init_tracing(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zkr: cannot start the async runtime: {e}");
            std::process::exit(exit::process_code(Code::Exit(Exit::Failure), cli.error_exit_code));
        }
    };
    let code = runtime.block_on(async {
        dispatch(cli.command, &cli.connect).await.unwrap_or_else(|e| {
            eprintln!("zkr: {}", exit::message(&e));
            Code::Exit(exit::classify(&e))
        })
    });
    drop(runtime);
    std::process::exit(exit::process_code(code, cli.error_exit_code));
}
