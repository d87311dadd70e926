//! `zkr id next`: IDs from the zkr generators, one per line.

use std::io::Write as _;

use anyhow::Context as _;
use zkr_connection::ZkClient;
use zkr_recipes::id::{
    IdGenerator, SegmentIdGenerator, SequentialIdGenerator, SnowflakeIdGenerator, StepPolicy,
};

use crate::connect::{parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Kind {
    /// ZooKeeper sequence nodes: globally ordered; two writes per batch.
    Sequential,
    /// Ranges claimed from a counter node (Leaf segment): dense; the unused rest of the range
    /// is skipped when the command exits.
    Segment,
    /// Time-ordered, with a worker ID leased for the command's lifetime.
    Snowflake,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sequential => "sequential",
            Kind::Segment => "segment",
            Kind::Snowflake => "snowflake",
        }
    }

    /// What a path laid out for this kind holds.
    fn layout(self) -> &'static str {
        match self {
            Kind::Sequential => "epoch-NNNNNNNNNN children",
            Kind::Segment => "an 8-byte counter",
            Kind::Snowflake => "leases/, workers/ and identities/ children",
        }
    }
}

#[derive(Debug, clap::Args)]
struct NextArgs {
    /// The generator's path (the counter node for segment, the parent of its state otherwise).
    #[arg(value_parser = parse_path)]
    path: String,
    /// The kind of generator; every process drawing from PATH must use the same one (a path
    /// laid out for another kind is refused, exit 6).
    #[arg(long, value_enum, default_value = "segment")]
    kind: Kind,
    /// How many IDs.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    count: u64,
    /// One JSON object, {"path", "kind", "ids": [...]}, instead of one ID per line.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(args: IdArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let IdCommand::Next(next) = args.command;
    let zk = connect.connect().await?;
    let drawn = draw(&zk, &next).await;
    zk.close().await;
    print(&next, &drawn?)?;
    Ok(Code::Success)
}

/// Checks the path's layout, then draws the IDs.
async fn draw(zk: &ZkClient, args: &NextArgs) -> anyhow::Result<Vec<u64>> {
    if let Some(found) = laid_out_for(zk, &args.path).await? {
        if found != args.kind {
            return Err(Failure::error(
                Exit::Conflict,
                format!(
                    "{} is laid out for --kind {} ({}), not --kind {}",
                    args.path,
                    found.name(),
                    found.layout(),
                    args.kind.name()
                ),
            ));
        }
    }
    match args.kind {
        Kind::Sequential => draw_from(&SequentialIdGenerator::new(zk, &args.path)?, args).await,
        // One range the size of the request and no prefetch: a one-shot process wastes nothing.
        Kind::Segment => {
            let generator = SegmentIdGenerator::builder(zk, &args.path)
                .step(StepPolicy::Fixed(args.count))
                .prefetch(false)
                .build()?;
            draw_from(&generator, args).await
        }
        Kind::Snowflake => {
            let generator = SnowflakeIdGenerator::builder(zk, &args.path).start().await?;
            let ids = draw_from(&generator, args).await;
            generator.close().await;
            ids
        }
    }
}

async fn draw_from(generator: &dyn IdGenerator, args: &NextArgs) -> anyhow::Result<Vec<u64>> {
    let ids = generator.next_batch(args.count as usize).await;
    ids.with_context(|| format!("drawing IDs from {}", args.path))
}

/// The kind whose state `path` holds, if it holds any: a segment counter is the node's own
/// 8-byte value; sequential and snowflake generators keep children under it.
async fn laid_out_for(zk: &ZkClient, path: &str) -> anyhow::Result<Option<Kind>> {
    let read = zk.retry(|s| async move { s.client().get_children(path).await }).await;
    let (children, stat) = match read {
        Ok(found) => found,
        Err(e) if e.is_no_node() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if stat.data_length == 8 {
        return Ok(Some(Kind::Segment));
    }
    if children.iter().any(|c| zkr_recipes::layouts::is_epoch(c)) {
        return Ok(Some(Kind::Sequential));
    }
    if zkr_recipes::layouts::is_snowflake(&children) {
        return Ok(Some(Kind::Snowflake));
    }
    Ok(None)
}

fn print(args: &NextArgs, ids: &[u64]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        let document = serde_json::json!({ "path": args.path, "kind": args.kind.name(), "ids": ids });
        writeln!(out, "{document}")?;
    } else {
        for id in ids {
            writeln!(out, "{id}")?;
        }
    }
    out.flush()
}
