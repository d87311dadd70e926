//! `zkr lock-info`: who holds a lock and who waits for it, in Curator's layouts (a mutex, a
//! `LeaderSelector`'s lock, a read-write lock) and kazoo's (`Lock`, `ReadLock`, `WriteLock`,
//! `Election`), recognised as `zkr ui` recognises them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::connect::{parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};
use crate::ui::at::{self, At, Contender, Kind};

/// `zkr lock-info --help`, after the options.
const LOCK_INFO_LONG_HELP: &str = "\
Recognises Apache Curator's locks (InterProcessMutex, a LeaderSelector's lock, the read-write
lock) and kazoo's (Lock, ReadLock, WriteLock, Election) as `zkr ui` does. An empty directory is
free (exit 0; nothing with --json). A path that does not exist exits 5; a directory that holds
another recipe, or children no lock layout explains, exits 6 and says what is there: never
\"free\".";

#[derive(Debug, clap::Args)]
#[command(after_long_help = LOCK_INFO_LONG_HELP)]
pub(crate) struct LockInfoArgs {
    /// The lock path.
    #[arg(value_parser = parse_path)]
    path: String,
    /// One JSON object per line (position, role, node, session, fencing_token, age_ms, layout;
    /// mode for a read-write lock) instead of a table.
    #[arg(long)]
    json: bool,
}

/// One participant of the lock.
struct Row {
    position: usize,
    holds: bool,
    node: String,
    session: String,
    fencing_token: i64,
    age: Duration,
    mode: Option<&'static str>,
}

impl Row {
    fn new(path: &str, position: usize, holds: bool, contender: &Contender, now_ms: i64) -> Self {
        let age_ms = u64::try_from(now_ms.saturating_sub(contender.created_ms)).unwrap_or(0);
        Row {
            position,
            holds,
            node: format!("{path}/{}", contender.node),
            session: contender.session.clone(),
            fencing_token: contender.fencing_token,
            age: Duration::from_millis(age_ms),
            mode: contender.mode,
        }
    }

    fn role(&self) -> &'static str {
        if self.holds {
            "holder"
        } else {
            "waiting"
        }
    }

    fn json(&self, layout: &str) -> serde_json::Value {
        let mut row = serde_json::json!({
            "position": self.position,
            "role": self.role(),
            "node": self.node,
            "session": self.session,
            "fencing_token": self.fencing_token,
            "age_ms": u64::try_from(self.age.as_millis()).unwrap_or(u64::MAX),
            "layout": layout,
        });
        if let Some(mode) = self.mode {
            row["mode"] = mode.into();
        }
        row
    }

    fn text(&self) -> String {
        let age = humantime::format_duration(Duration::from_secs(self.age.as_secs())).to_string();
        let role = match self.mode {
            Some(mode) => format!("{} ({mode})", self.role()),
            None => self.role().to_owned(),
        };
        format!("{role:<8} {:<20} {:<14} {age:>10}  {}", self.session, self.fencing_token, self.node)
    }
}

pub(crate) async fn run(args: LockInfoArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    let found = at::read(&zk, &args.path).await;
    zk.close().await;
    let path = &args.path;
    let (recipe, others) = match found? {
        At::Missing => {
            return Err(Failure::error(
                Exit::Absent,
                format!("{path}: no such node (no lock was taken there, or its directory went once empty)"),
            ))
        }
        At::Empty => {
            if !args.json {
                println!("(free: nobody holds or waits for {path})");
            }
            return Ok(Code::Success);
        }
        At::Unexplained(names) => {
            return Err(Failure::error(
                Exit::Conflict,
                format!(
                    "{path} is not a lock that zkr knows (Curator's or kazoo's layout): its children {} \
                     are no lock's contenders (`zkr ls -l {path}` shows them)",
                    at::list(&names)
                ),
            ))
        }
        At::Recipe { recipe, others } => (recipe, others),
    };
    let Kind::Lock { holders, waiters, .. } = &recipe.kind else {
        return Err(Failure::error(
            Exit::Conflict,
            format!("{path} holds {}, not a lock", at::describe(&recipe)),
        ));
    };
    if !others.is_empty() {
        eprintln!("zkr: {path} also holds nodes no lock layout explains: {}", at::list(&others));
    }
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    let rows: Vec<Row> = holders
        .iter()
        .map(|c| (true, c))
        .chain(waiters.iter().map(|c| (false, c)))
        .enumerate()
        .map(|(position, (holds, c))| Row::new(path, position, holds, c, now_ms))
        .collect();
    if args.json {
        for row in &rows {
            println!("{}", row.json(recipe.layout));
        }
        return Ok(Code::Success);
    }
    println!("{} at {path}", at::describe(&recipe));
    println!("{:<8} {:<20} {:<14} {:>10}  node", "role", "session", "fencing token", "age");
    for row in &rows {
        println!("{}", row.text());
    }
    Ok(Code::Success)
}
