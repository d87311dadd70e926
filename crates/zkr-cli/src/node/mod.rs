//! The node commands an operator reaches zkCli.sh for: `ls`, `get`, `stat`, `create`, `set`,
//! `rm`, `acl`, `sync`, `export` and `import`, with `--json`, the one exit-code table, and the namespace or chroot
//! applied to every path.

mod acl;
mod document;
mod read;
mod transfer;
mod write;

pub(crate) use acl::{run as acl, AclArgs};
pub(crate) use read::{get, ls, stat, GetArgs, LsArgs, StatArgs};
pub(crate) use transfer::{export, import, ExportArgs, ImportArgs};
pub(crate) use write::{create, rm, set, sync, CreateArgs, RmArgs, SetArgs, SyncArgs};

use serde_json::{json, Value};
use zkr_connection::Stat;

/// A `Stat` as JSON, with zkCli.sh's field names.
pub(crate) fn stat_json(stat: &Stat) -> Value {
    json!({
        "czxid": stat.czxid,
        "mzxid": stat.mzxid,
        "pzxid": stat.pzxid,
        "ctime": stat.ctime,
        "mtime": stat.mtime,
        "version": stat.version,
        "cversion": stat.cversion,
        "aversion": stat.aversion,
        "ephemeralOwner": stat.ephemeral_owner,
        "dataLength": stat.data_length,
        "numChildren": stat.num_children,
    })
}

/// A `Stat` as zkCli.sh prints it: one `name = value` line per field, zxids and the owner in
/// hex, times in UTC.
pub(crate) fn stat_text(stat: &Stat) -> String {
    let time = |ms: i64| {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0).unsigned_abs());
        humantime::format_rfc3339_millis(at).to_string()
    };
    [
        format!("cZxid = {:#x}", stat.czxid),
        format!("ctime = {}", time(stat.ctime)),
        format!("mZxid = {:#x}", stat.mzxid),
        format!("mtime = {}", time(stat.mtime)),
        format!("pZxid = {:#x}", stat.pzxid),
        format!("cversion = {}", stat.cversion),
        format!("dataVersion = {}", stat.version),
        format!("aclVersion = {}", stat.aversion),
        format!("ephemeralOwner = {:#x}", stat.ephemeral_owner),
        format!("dataLength = {}", stat.data_length),
        format!("numChildren = {}", stat.num_children),
    ]
    .join("\n")
}

/// The error of a command on a node that does not exist (exit 5).
pub(crate) fn absent(path: &str) -> anyhow::Error {
    crate::exit::Failure::error(crate::exit::Exit::Absent, format!("{path}: no such node"))
}

/// Refuses a write (`doing`: "creating", "deleting", ...) in ZooKeeper's own `/zookeeper` tree
/// with the reason (exit 2), as `import` does and as the recipes do: what lives there is the
/// server's (quotas, the ensemble's dynamic config), and an app's node there is a mistake.
/// Reads stay allowed; a namespace or a chroot moves every path away from the tree
/// ([`ZkClient::validate_recipe_path`](zkr_connection::ZkClient::validate_recipe_path) decides).
pub(crate) fn refuse_reserved(zk: &zkr_connection::ZkClient, path: &str, doing: &str) -> anyhow::Result<()> {
    use zkr_connection::path::PathError;
    match zk.validate_recipe_path(path) {
        Err(zkr_connection::Error::InvalidPath { source: PathError::Reserved, .. }) => {
            Err(crate::exit::Failure::error(
                crate::exit::Exit::Usage,
                format!(
                    "{doing} {path}: refused: /zookeeper is ZooKeeper's own tree (quotas, the ensemble's \
                 dynamic config), where zkr writes nothing; zkCli.sh's setquota and reconfig change it"
                ),
            ))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_print_as_zkcli_prints_them() {
        let stat = Stat {
            czxid: 16,
            mzxid: 17,
            pzxid: 18,
            ctime: 0,
            mtime: 1_000,
            version: 3,
            cversion: 0,
            aversion: 0,
            ephemeral_owner: 255,
            data_length: 2,
            num_children: 0,
        };
        let text = stat_text(&stat);
        assert!(text.contains("cZxid = 0x10"), "{text}");
        assert!(text.contains("mtime = 1970-01-01T00:00:01.000Z"), "{text}");
        assert!(text.contains("dataVersion = 3"), "{text}");
        assert!(text.contains("ephemeralOwner = 0xff"), "{text}");
        assert_eq!(stat_json(&stat)["ephemeralOwner"], 255);
    }
}
