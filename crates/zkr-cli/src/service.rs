//! `zkr members` and `zkr service`: a group's members, and services registered the way
//! Curator's service discovery (and Spring Cloud Zookeeper) registers them.

use serde_json::{json, Value};
use zkr_connection::ZkClient;
use zkr_recipes::cache::{CacheMode, CuratorCache};
use zkr_recipes::discovery::{ServiceDiscovery, ServiceInstance, UriSpec, DEFAULT_BASE_PATH};

use crate::child::{shell_status, Child};
use crate::config::output::{encode_value, print_line};
use crate::connect::{parse_path, ConnectArgs};
use crate::exit::{Code, Exit, Failure};
use crate::signals::{status_after, Signals};

/// `zkr members PATH`
#[derive(Debug, clap::Args)]
pub(crate) struct MembersArgs {
    /// The group's path (Curator's GroupMember membership path): one child per member. Exit 5
    /// when it does not exist.
    #[arg(value_parser = parse_path)]
    path: String,
    /// One JSON object per member: {"id", "encoding", "payload"}, the payload as in
    /// `zkr config get --json`.
    #[arg(long)]
    json: bool,
}

/// `zkr service ...`
#[derive(Debug, clap::Args)]
pub(crate) struct ServiceArgs {
    #[command(subcommand)]
    command: ServiceCommand,
}

#[derive(Debug, clap::Subcommand)]
enum ServiceCommand {
    /// List a service's instances: one line each (id, address, port, SSL port, enabled, URI,
    /// tab-separated; "-" for none), or with --json Curator's JSON, one object per line. Exit 5
    /// when the service's node (BASE/NAME) does not exist.
    List {
        /// The service's name.
        name: String,
        /// Where services live.
        #[arg(long, default_value = DEFAULT_BASE_PATH, value_parser = parse_path)]
        base: String,
        /// Curator's JSON for each instance, one per line.
        #[arg(long)]
        json: bool,
    },
    /// Register an instance while CMD runs (an ephemeral node, back after a session expiry);
    /// it is gone when CMD exits, and zkr exits with CMD's status. Without CMD, until Ctrl-C or
    /// SIGTERM. CMD gets ZKR_SERVICE_ID and ZKR_SERVICE_NODE in its environment.
    Register(RegisterArgs),
}

#[derive(Debug, clap::Args)]
struct RegisterArgs {
    /// The service's name.
    name: String,
    /// The instance's host name or address.
    #[arg(long)]
    address: String,
    /// The instance's port.
    #[arg(long)]
    port: u16,
    /// The instance's TLS port.
    #[arg(long)]
    ssl_port: Option<u16>,
    /// The instance's id (default: a random UUID).
    #[arg(long)]
    id: Option<String>,
    /// A JSON object to store as the payload.
    #[arg(long, value_parser = parse_payload)]
    payload: Option<Value>,
    /// A URI template, e.g. "{scheme}://{address}:{port}".
    #[arg(long)]
    uri_spec: Option<String>,
    /// Where services live.
    #[arg(long, default_value = DEFAULT_BASE_PATH, value_parser = parse_path)]
    base: String,
    /// The command to run while registered.
    #[arg(last = true)]
    command: Vec<String>,
}

fn parse_payload(value: &str) -> Result<Value, String> {
    match serde_json::from_str(value) {
        Ok(object @ Value::Object(_)) => Ok(object),
        Ok(_) => Err("the payload must be a JSON object".to_owned()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

pub(crate) async fn members(args: MembersArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let zk = connect.connect().await?;
    let cache = CuratorCache::builder(&zk, &args.path).mode(CacheMode::Children).start().await?;
    let snapshot = cache.snapshot();
    if snapshot.get(&args.path).is_none() {
        drop(cache);
        zk.close().await;
        return Err(absent(&args.path, "no group has members there: check the path"));
    }
    for (id, node) in snapshot.children(&args.path) {
        let line = if args.json {
            let (encoding, payload) = encode_value(node.data());
            json!({ "id": id, "encoding": encoding, "payload": payload }).to_string()
        } else {
            format!("{id}\t{}", String::from_utf8_lossy(node.data()))
        };
        print_line(&line)?;
    }
    drop(cache);
    zk.close().await;
    Ok(Code::Success)
}

pub(crate) async fn run(args: ServiceArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    match args.command {
        ServiceCommand::List { name, base, json } => {
            let zk = connect.connect().await?;
            let listed = list(&zk, &base, &name, json).await;
            zk.close().await;
            listed
        }
        ServiceCommand::Register(register_args) => register(connect, register_args).await,
    }
}

async fn list(zk: &ZkClient, base: &str, name: &str, json: bool) -> anyhow::Result<Code> {
    let discovery = ServiceDiscovery::<Value>::new(zk, base)?;
    let service = discovery.path_for_name(name);
    if zk.exists(&service).await?.is_none() {
        return Err(absent(&service, &format!("no instance of {name:?} is registered under {base}")));
    }
    for instance in discovery.query_for_instances(name).await? {
        let line = if json { String::from_utf8(instance.to_json()?)? } else { plain_line(&instance) };
        print_line(&line)?;
    }
    Ok(Code::Success)
}

/// A path that does not exist (exit 5), and what that likely means.
fn absent(path: &str, meaning: &str) -> anyhow::Error {
    Failure::error(Exit::Absent, format!("{path}: no such node ({meaning})"))
}

fn plain_line(instance: &ServiceInstance<Value>) -> String {
    let or_dash = |n: Option<u16>| n.map_or_else(|| "-".to_owned(), |n| n.to_string());
    let address = if instance.address.is_empty() { "-" } else { &instance.address };
    let enabled = if instance.enabled { "enabled" } else { "disabled" };
    let uri = instance.uri().unwrap_or_else(|| "-".to_owned());
    format!(
        "{}\t{address}\t{}\t{}\t{enabled}\t{uri}",
        instance.id,
        or_dash(instance.port),
        or_dash(instance.ssl_port)
    )
}

async fn register(connect: &ConnectArgs, args: RegisterArgs) -> anyhow::Result<Code> {
    let mut signals = Signals::listen()?;
    let zk = tokio::select! {
        zk = connect.connect() => zk?,
        signal = signals.recv() => return Ok(Code::Status(status_after(signal))),
    };
    let discovery = ServiceDiscovery::<Value>::new(&zk, &args.base)?;
    let mut builder = ServiceInstance::builder(&args.name, args.payload.clone().unwrap_or_else(|| json!({})))
        .address(&args.address)
        .port(args.port);
    if let Some(id) = &args.id {
        builder = builder.id(id);
    }
    if let Some(ssl_port) = args.ssl_port {
        builder = builder.ssl_port(ssl_port);
    }
    if let Some(spec) = &args.uri_spec {
        builder = builder.uri_spec(UriSpec::parse(spec));
    }
    let mut instance = builder.build();
    if args.payload.is_none() {
        instance.payload = None;
    }
    let outcome = registered(&discovery, &instance, &args.command, &mut signals).await;
    discovery.close().await;
    zk.close().await;
    outcome
}

/// Registers, runs the command (or waits for a signal), unregisters.
async fn registered(
    discovery: &ServiceDiscovery<Value>,
    instance: &ServiceInstance<Value>,
    command: &[String],
    signals: &mut Signals,
) -> anyhow::Result<Code> {
    tokio::select! {
        registered = discovery.register(instance) => registered?,
        signal = signals.recv() => return Ok(Code::Status(status_after(signal))),
    }
    let node = format!("{}/{}", discovery.path_for_name(&instance.name), instance.id);
    eprintln!("zkr: registered {} as {node}", instance.name);
    if command.is_empty() {
        signals.recv().await;
        return Ok(Code::Success);
    }
    let env = [("ZKR_SERVICE_ID", instance.id.clone()), ("ZKR_SERVICE_NODE", node)];
    let mut child = Child::spawn(command, &env)?;
    loop {
        tokio::select! {
            status = child.process.wait() => return Ok(Code::Status(shell_status(status?))),
            signal = signals.recv() => child.forward(signal),
        }
    }
}
