//! `zkr acl get` and `zkr acl set`.

use anyhow::Context as _;
use serde_json::json;
use zkr_connection::zookeeper_client::{AuthId, Permission};
use zkr_connection::Acl;

use super::{absent, stat_json};
use crate::config::output::print_line;
use crate::connect::{parse_path, ConnectArgs};
use crate::exit::Code;

/// `zkr acl`: read or replace a node's ACL.
#[derive(Debug, clap::Args)]
pub(crate) struct AclArgs {
    #[command(subcommand)]
    command: AclCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AclCommand {
    /// Print a node's ACL: one `scheme:id:permissions` entry per line (what `acl set` takes).
    #[command(after_help = "Examples:
  zkr acl get /app                 world:anyone:cdrwa
  zkr acl get --json /app          {path, acl: [{scheme, id, perms}], stat}")]
    Get {
        /// The node.
        #[arg(value_parser = parse_path)]
        path: String,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Replace a node's ACL with the entries given (`scheme:id:permissions`, permissions from
    /// `cdrwa`: create, delete, read, write, admin).
    #[command(after_help = "Examples:
  zkr acl set /app world:anyone:r digest:ops:HASH=:cdrwa
  zkr acl set /app ip:10.0.0.0/8:rw auth::cdrwa
  zkr acl set --if-version 2 /app world:anyone:cdrwa   only at ACL version 2 (exit 6 otherwise)")]
    Set {
        /// The node.
        #[arg(value_parser = parse_path)]
        path: String,
        /// The entries, `scheme:id:permissions`.
        #[arg(required = true, value_parser = parse_acl)]
        acl: Vec<Acl>,
        /// Only if the node's ACL version is N.
        #[arg(long, value_name = "N")]
        if_version: Option<i32>,
    },
}

const PERMISSIONS: [(char, Permission); 5] = [
    ('c', Permission::CREATE),
    ('d', Permission::DELETE),
    ('r', Permission::READ),
    ('w', Permission::WRITE),
    ('a', Permission::ADMIN),
];

/// `scheme:id:perms`; the id may hold colons (`digest:user:hash`, IPv6), the scheme and the
/// permissions cannot.
fn parse_acl(entry: &str) -> Result<Acl, String> {
    let bad = || format!("{entry:?}: an ACL entry is scheme:id:permissions, permissions from cdrwa");
    let (scheme, rest) = entry.split_once(':').ok_or_else(bad)?;
    let (id, perms) = rest.rsplit_once(':').ok_or_else(bad)?;
    if scheme.is_empty() {
        return Err(bad());
    }
    let permission = permission_of(perms).ok_or_else(bad)?;
    Ok(Acl::new(permission, AuthId::new(scheme, id)))
}

/// The permissions of `cdrwa` letters; `None` for another letter.
pub(super) fn permission_of(letters: &str) -> Option<Permission> {
    letters.chars().try_fold(Permission::NONE, |all, letter| {
        PERMISSIONS.iter().find(|(l, _)| *l == letter).map(|(_, p)| all | *p)
    })
}

/// `cdrwa` letters of `permission`.
pub(super) fn permission_letters(permission: Permission) -> String {
    PERMISSIONS.iter().filter(|(_, p)| permission.has(*p)).map(|(l, _)| *l).collect()
}

fn entry_text(acl: &Acl) -> String {
    format!("{}:{}:{}", acl.scheme(), acl.id(), permission_letters(acl.permission()))
}

pub(crate) async fn run(args: AclArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    match args.command {
        AclCommand::Get { path, json } => {
            let found = zk.get_acl(&path).await.with_context(|| format!("reading the ACL of {path}"))?;
            let (acl, stat) = found.ok_or_else(|| absent(&path))?;
            if json {
                let entries: Vec<_> = acl
                    .iter()
                    .map(|a| json!({"scheme": a.scheme(), "id": a.id(), "perms": permission_letters(a.permission())}))
                    .collect();
                print_line(&json!({"path": path, "acl": entries, "stat": stat_json(&stat)}).to_string())?;
            } else {
                for entry in &acl {
                    print_line(&entry_text(entry))?;
                }
            }
        }
        AclCommand::Set { path, acl, if_version } => {
            super::refuse_reserved(&zk, &path, "setting the ACL of")?;
            zk.set_acl(&path, &acl, if_version).await.map_err(|e| match e.is_no_node() {
                true => absent(&path),
                false => anyhow::Error::new(e).context(format!("setting the ACL of {path}")),
            })?;
        }
    }
    Ok(Code::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_and_print_back() {
        for entry in
            ["world:anyone:cdrwa", "digest:ops:c2FsdA==:r", "ip:fe80::1:rw", "auth::a", "sasl:svc@REALM:"]
        {
            assert_eq!(entry_text(&parse_acl(entry).unwrap()), entry);
        }
        assert!(parse_acl("world:anyone:x").is_err());
        assert!(parse_acl("world").is_err());
        assert!(parse_acl(":anyone:r").is_err());
    }
}
