//! `zkr`: run commands under ZooKeeper locks, hand out IDs, get/set/watch config, and run a
//! local ZooKeeper for development. All logic lives in the zkr libraries; this is the shell.

mod config;
mod connect;
mod demo;
mod id;
mod lock;
mod server;

/// Exit code for bad arguments (clap's own).
pub(crate) const EXIT_USAGE: i32 = 2;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "zkr", version, about = "ZooKeeper recipes from the shell: locks, IDs, config")]
struct Cli {
    /// More output (tracing at debug level); twice for trace.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(flatten)]
    connect: connect::ConnectArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a command while holding a lock (the InterProcessMutex Apache Curator also takes at
    /// that path). Exit: the command's status; 3 not acquired; 4 lock lost while it ran; 2 usage.
    Lock(lock::LockArgs),
    /// Show the holder of a lock and who waits for it.
    LockInfo(lock::LockInfoArgs),
    /// Hand out unique IDs (sequential, segment or snowflake generators).
    Id(id::IdArgs),
    /// Read, publish and watch config nodes.
    Config(config::ConfigArgs),
    /// Run a real local ZooKeeper (1 or 3 servers) in the foreground until Ctrl-C.
    Server(server::ServerArgs),
    /// The demo: an embedded 3-server ZooKeeper and zkr's recipes at work.
    Demo(demo::DemoArgs),
    /// One seller process of the demo (started by `zkr demo`).
    #[command(hide = true)]
    DemoSeller(demo::SellerArgs),
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
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}

fn main() {
    let cli = Cli::parse();
    init_tracing(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("zkr: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(async {
        let result = match cli.command {
            Command::Lock(args) => lock::run(&cli.connect, args).await,
            Command::LockInfo(args) => lock::info(&cli.connect, args).await,
            Command::Config(args) => config::run(&cli.connect, args).await,
            Command::Id(args) => id::run(&cli.connect, args).await,
            Command::Server(args) => server::run(args).await,
            Command::Demo(args) => demo::run(args).await,
            Command::DemoSeller(args) => demo::run_seller(&cli.connect, args).await,
        };
        match result {
            Ok(code) => code,
            Err(e) => {
                eprintln!("zkr: {e:#}");
                1
            }
        }
    });
    drop(runtime);
    std::process::exit(code);
}
