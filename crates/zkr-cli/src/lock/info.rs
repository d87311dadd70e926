//! `zkr lock-info`: who holds a lock and who waits for it.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use zkr_recipes::locks::InterProcessMutex;

use crate::connect::{parse_path, ConnectArgs};
use crate::exit::Code;

#[derive(Debug, clap::Args)]
pub(crate) struct LockInfoArgs {
    /// The lock path.
    #[arg(value_parser = parse_path)]
    path: String,
    /// One JSON object per line (position, role, node, session, fencing_token, age_ms) instead
    /// of a table.
    #[arg(long)]
    json: bool,
}

/// One participant of the lock.
struct Row {
    position: usize,
    node: String,
    session: i64,
    fencing_token: i64,
    age: Duration,
}

impl Row {
    fn role(&self) -> &'static str {
        if self.position == 0 {
            "holder"
        } else {
            "waiting"
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "position": self.position,
            "role": self.role(),
            "node": self.node,
            "session": format!("{:#x}", self.session),
            "fencing_token": self.fencing_token,
            "age_ms": u64::try_from(self.age.as_millis()).unwrap_or(u64::MAX),
        })
    }

    fn text(&self) -> String {
        let age = humantime::format_duration(Duration::from_secs(self.age.as_secs())).to_string();
        format!(
            "{:<8} {:<20} {:<14} {:>10}  {}",
            self.role(),
            format!("{:#x}", self.session),
            self.fencing_token,
            age,
            self.node
        )
    }
}

pub(crate) async fn run(args: LockInfoArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    let rows = rows(&zk, &args.path).await;
    zk.close().await;
    let rows = rows?;
    if args.json {
        for row in &rows {
            println!("{}", row.json());
        }
        return Ok(Code::Success);
    }
    println!("{:<8} {:<20} {:<14} {:>10}  node", "role", "session", "fencing token", "age");
    for row in &rows {
        println!("{}", row.text());
    }
    if rows.is_empty() {
        println!("(free: nobody holds or waits for {})", args.path);
    }
    Ok(Code::Success)
}

async fn rows(zk: &zkr_connection::ZkClient, path: &str) -> anyhow::Result<Vec<Row>> {
    let mutex = InterProcessMutex::new(zk, path)?;
    let nodes = mutex.participant_nodes().await?;
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let mut rows = Vec::new();
    for node in nodes {
        let stat = zk
            .retry(|s| {
                let node = &node;
                async move { s.client().check_stat(node).await }
            })
            .await?;
        let Some(stat) = stat else { continue };
        rows.push(Row {
            position: rows.len(),
            node,
            session: stat.ephemeral_owner,
            fencing_token: stat.czxid,
            age: Duration::from_millis(u64::try_from(now_ms - stat.ctime).unwrap_or(0)),
        });
    }
    Ok(rows)
}
