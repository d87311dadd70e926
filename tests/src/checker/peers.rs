//! The other libraries whose processes take part in the mutual-exclusion checker beside zkr's
//! workers: Apache Curator's (`CuratorTool checker-worker`) and kazoo's (`kazoo_tool.py
//! checker-worker`), with the line protocol of `zkr-mutex-worker`.

use super::CheckOptions;

/// A library whose processes can take part in the checker beside zkr's workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// Apache Curator (Java).
    Curator,
    /// kazoo (Python).
    Kazoo,
}

impl Peer {
    /// Its name in `zkr-checker`'s flags (`--curator N`, `--kazoo N`) and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Peer::Curator => "curator",
            Peer::Kazoo => "kazoo",
        }
    }
}

/// A peer library's tool, found once per schedule.
pub(super) enum PeerTool {
    Curator(zkr_testing::peers::CuratorTool),
    Kazoo(zkr_testing::peers::KazooTool),
}

impl PeerTool {
    /// The command that runs the tool with `args`.
    pub(super) fn command(&self, args: &[&str]) -> std::process::Command {
        match self {
            PeerTool::Curator(curator) => curator.command(args),
            PeerTool::Kazoo(kazoo) => kazoo.command(args),
        }
    }
}

/// The tool of `options`' peer library; an error for a fleet it cannot make (kazoo's workers
/// hold the lock, they do not lead).
pub(super) fn peer_tool(options: &CheckOptions) -> Result<Option<PeerTool>, String> {
    match options.peers {
        None | Some((_, 0)) => Ok(None),
        Some((Peer::Curator, _)) => zkr_testing::peers::CuratorTool::locate()
            .map(|t| Some(PeerTool::Curator(t)))
            .map_err(|e| e.to_string()),
        Some((Peer::Kazoo, _)) if options.leader => Err("kazoo's checker workers hold the mutex only".into()),
        Some((Peer::Kazoo, _)) => zkr_testing::peers::KazooTool::locate()
            .map(|t| Some(PeerTool::Kazoo(t)))
            .map_err(|e| e.to_string()),
    }
}
