//! `zkr export` and `zkr import`: a subtree as one JSON document (data, ACLs, stats; binary
//! data in base64), and back, in transactions.

use std::io::Read as _;

use anyhow::Context as _;
use base64::Engine as _;
use zkr_connection::{path, Acl, CreateMode, Parents, ZkClient};

use super::document::{self, AclEntry, Checked, Document, Node, FORMAT};
use super::{absent, stat_json};
use crate::config::output::print_line;
use crate::connect::{parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};

/// A transaction's share of an import: ZooKeeper refuses a request over `jute.maxbuffer`
/// (1 MiB by default).
const BATCH_BYTES: usize = 512 * 1024;
const BATCH_OPS: usize = 1000;

/// `zkr export`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  zkr export /app > app.json                  every node under /app: data, ACL, stat
  zkr import app.json /app-copy               the same tree elsewhere (see zkr import --help)")]
pub(crate) struct ExportArgs {
    /// The subtree's root.
    #[arg(value_parser = parse_path)]
    path: String,
}

/// `zkr import`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  zkr import app.json /app-copy               creates /app-copy and the tree under it
  zkr import --dry-run app.json /app          prints what it would do, writes nothing
  zkr import --overwrite app.json /app        replaces the data and ACLs of nodes that exist
  zkr export /a | zkr import - /b             a copy
The nodes are written in transactions of up to 512 KiB: each is all or nothing, the import as a
whole is not. Missing parents of PATH are created (persistent, empty). Ephemeral nodes are
never created (they would go with zkr's session): they are skipped and named on stderr.
The whole document is checked before anything is written: each node's path is \"\" (PATH
itself) or a valid ZooKeeper path starting with / (so below PATH, never beside it), given once,
after its parent; its data and ACL are ones ZooKeeper takes. Exit 2 naming the first bad node,
with nothing written.
Exit 6, with nothing written, when a node exists and --overwrite is not given.")]
pub(crate) struct ImportArgs {
    /// The document (`-` for stdin).
    file: String,
    /// Where the exported root goes.
    #[arg(value_parser = parse_path)]
    path: String,
    /// Print what would be done and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Replace the data and ACL of nodes that exist (otherwise exit 6).
    #[arg(long)]
    overwrite: bool,
}

pub(crate) async fn export(args: ExportArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    if zk.exists(&args.path).await?.is_none() {
        return Err(absent(&args.path));
    }
    let mut nodes = Vec::new();
    let mut stack = vec![args.path.clone()];
    while let Some(node) = stack.pop() {
        let Some(exported) = export_node(&zk, &args.path, &node).await? else { continue };
        nodes.push(exported);
        if let Some((mut children, _)) = zk.get_children(&node).await? {
            children.sort();
            stack.extend(children.iter().rev().map(|c| path::join(&node, c)));
        }
    }
    let document = Document { format: FORMAT.into(), root: args.path, nodes };
    print_line(&serde_json::to_string_pretty(&document)?)?;
    Ok(Code::Success)
}

/// One node (`None` when it went meanwhile).
async fn export_node(zk: &ZkClient, root: &str, node: &str) -> anyhow::Result<Option<Node>> {
    let Some((data, stat)) = zk.get_data(node).await.with_context(|| format!("reading {node}"))? else {
        return Ok(None);
    };
    let Some((acl, _)) = zk.get_acl(node).await.with_context(|| format!("reading the ACL of {node}"))? else {
        return Ok(None);
    };
    let (encoding, data) = match String::from_utf8(data) {
        Ok(text) => ("text", text),
        Err(bytes) => ("base64", base64::engine::general_purpose::STANDARD.encode(bytes.as_bytes())),
    };
    let relative =
        if node == root { String::new() } else { node[root.len()..].trim_start_matches('/').to_owned() };
    let relative = if relative.is_empty() { relative } else { format!("/{relative}") };
    Ok(Some(Node {
        path: relative,
        encoding: encoding.into(),
        data,
        acl: acl.iter().map(acl_entry).collect(),
        ephemeral: stat.ephemeral_owner != 0,
        stat: stat_json(&stat),
    }))
}

fn acl_entry(acl: &Acl) -> AclEntry {
    let perms = super::acl::permission_letters(acl.permission());
    AclEntry { scheme: acl.scheme().to_owned(), id: acl.id().to_owned(), perms }
}

/// A node to write: its target path, data and ACL, and whether it exists.
struct Planned {
    target: String,
    data: Vec<u8>,
    acl: Vec<Acl>,
    exists: bool,
}

pub(crate) async fn import(args: ImportArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let document = read_document(&args.file)?;
    // The whole document is checked before anything is read or written.
    let checked = document::check(&document, &args.path)
        .map_err(|bad| Failure::error(Exit::Usage, format!("{}: {bad}; nothing written", args.file)))?;
    let zk = connect.connect().await?;
    if !checked.has_root && !checked.nodes.is_empty() && zk.exists(&args.path).await?.is_none() {
        let message = format!(
            "{}: no such node, and the document has no node for it (path \"\"); nothing written",
            args.path
        );
        return Err(Failure::error(Exit::Absent, message));
    }
    let planned = plan(&zk, checked.nodes).await?;
    let existing: Vec<&str> = planned.iter().filter(|p| p.exists).map(|p| p.target.as_str()).collect();
    if !existing.is_empty() && !args.overwrite {
        let shown = existing.iter().take(3).copied().collect::<Vec<_>>().join(", ");
        let message = format!(
            "{} nodes exist ({shown}...); --overwrite replaces them; nothing written",
            existing.len()
        );
        return Err(Failure::error(Exit::Conflict, message));
    }
    if args.dry_run {
        for p in &planned {
            let verb = if p.exists { "set" } else { "create" };
            print_line(&format!("{verb} {} ({} bytes)", p.target, p.data.len()))?;
        }
        return Ok(Code::Success);
    }
    if let Some(parent) = path::parent(&args.path).filter(|p| *p != "/") {
        if zk.exists(parent).await?.is_none() {
            let created = zk.create_node(parent).parents(Parents::Persistent).await;
            if let Err(e) = created.map(drop).or_else(|e| if e.is_node_exists() { Ok(()) } else { Err(e) }) {
                return Err(anyhow::Error::new(e).context(format!("creating {parent}")));
            }
        }
    }
    write(&zk, &planned).await?;
    let updated = planned.iter().filter(|p| p.exists).count();
    print_line(&format!("created {}, updated {updated}", planned.len() - updated))?;
    Ok(Code::Success)
}

fn read_document(file: &str) -> anyhow::Result<Document> {
    let mut text = String::new();
    match file {
        "-" => std::io::stdin().read_to_string(&mut text).map(drop),
        _ => std::fs::File::open(file).and_then(|mut f| f.read_to_string(&mut text)).map(drop),
    }
    .with_context(|| format!("reading {file}"))?;
    let document: Document = serde_json::from_str(&text)
        .map_err(|e| Failure::error(Exit::Usage, format!("{file}: not a zkr export: {e}")))?;
    if document.format != FORMAT {
        return Err(Failure::error(
            Exit::Usage,
            format!("{file}: format {:?}, not {FORMAT}", document.format),
        ));
    }
    Ok(document)
}

/// The checked nodes with whether each exists, ephemeral ones left out (and named on stderr).
async fn plan(zk: &ZkClient, nodes: Vec<Checked>) -> anyhow::Result<Vec<Planned>> {
    let mut planned = Vec::with_capacity(nodes.len());
    for node in nodes {
        if node.ephemeral {
            eprintln!("zkr: skipping the ephemeral node {}", node.target);
            continue;
        }
        let exists = zk.exists(&node.target).await?.is_some();
        planned.push(Planned { target: node.target, data: node.data, acl: node.acl, exists });
    }
    Ok(planned)
}

/// Writes the plan in transactions of up to [`BATCH_BYTES`] and [`BATCH_OPS`], parents first;
/// then the ACLs of the nodes that existed (ZooKeeper has no ACL change in a transaction).
async fn write(zk: &ZkClient, planned: &[Planned]) -> anyhow::Result<()> {
    let mut batch = zk.transaction();
    let (mut ops, mut bytes) = (0, 0);
    for p in planned {
        if ops > 0 && (ops >= BATCH_OPS || bytes + p.data.len() > BATCH_BYTES) {
            batch.commit().await.context("importing")?;
            (batch, ops, bytes) = (zk.transaction(), 0, 0);
        }
        batch = match p.exists {
            true => batch.set_data(&p.target, &p.data, None),
            false => batch.create_with_acl(&p.target, &p.data, CreateMode::Persistent, &p.acl),
        };
        ops += 1;
        bytes += p.data.len() + p.target.len();
    }
    if ops > 0 {
        batch.commit().await.context("importing")?;
    }
    for p in planned.iter().filter(|p| p.exists) {
        zk.set_acl(&p.target, &p.acl, None)
            .await
            .with_context(|| format!("setting the ACL of {}", p.target))?;
    }
    Ok(())
}
