//! `zkr id next`: IDs from the zkr generators, one per line.

use std::io::Write as _;

use anyhow::Context as _;
use zkr_recipes::id::{
    IdGenerator, SegmentIdGenerator, SequentialIdGenerator, SnowflakeIdGenerator, StepPolicy,
};

use crate::connect::ConnectArgs;

/// `zkr id ...`
#[derive(Debug, clap::Args)]
pub(crate) struct IdArgs {
    #[command(subcommand)]
    command: IdCommand,
}

#[derive(Debug, clap::Subcommand)]
enum IdCommand {
    /// Print new IDs, one per line, in increasing order.
    Next(NextArgs),
}

/// Which generator.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Kind {
    /// ZooKeeper sequence nodes: globally ordered; two writes per batch.
    Sequential,
    /// Ranges claimed from a counter node (Leaf segment): dense; the unused rest of the range
    /// is skipped when the command exits.
    Segment,
    /// Time-ordered, with a worker ID leased for the command's lifetime.
    Snowflake,
}

#[derive(Debug, clap::Args)]
struct NextArgs {
    /// The generator's path (the counter node for segment, the parent of its state otherwise).
    path: String,
    /// The kind of generator; every process drawing from PATH must use the same one.
    #[arg(long, value_enum, default_value = "segment")]
    kind: Kind,
    /// How many IDs.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    count: u64,
}

pub(crate) async fn run(connect: &ConnectArgs, args: IdArgs) -> anyhow::Result<i32> {
    let IdCommand::Next(args) = args.command;
    let zk = connect.connect().await?;
    let count = args.count as usize;
    let mut snowflake = None;
    let generator: Box<dyn IdGenerator> = match args.kind {
        Kind::Sequential => Box::new(SequentialIdGenerator::new(&zk, &args.path)?),
        // One range the size of the request and no prefetch: a one-shot process wastes nothing.
        Kind::Segment => Box::new(
            SegmentIdGenerator::builder(&zk, &args.path)
                .step(StepPolicy::Fixed(args.count))
                .prefetch(false)
                .build()?,
        ),
        Kind::Snowflake => {
            let generator = SnowflakeIdGenerator::builder(&zk, &args.path).start().await?;
            snowflake = Some(generator.clone());
            Box::new(generator)
        }
    };
    let ids = generator.next_batch(count).await.with_context(|| format!("drawing IDs from {}", args.path))?;
    let mut out = std::io::stdout().lock();
    for id in ids {
        writeln!(out, "{id}")?;
    }
    out.flush()?;
    if let Some(snowflake) = snowflake {
        snowflake.close().await;
    }
    zk.close().await;
    Ok(0)
}
