//! `zkr status`: the health of an ensemble, one line per server, from the four-letter words
//! where they are allowed and from the AdminServer's HTTP commands where they are not.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::config::output::print_line;
use crate::connect::{parse_positive_duration, ConnectArgs};
use crate::exit::{Code, Exit};
use crate::signals::{status_after, Signals};

const STATUS_LONG_HELP: &str = "\
Each server of --connect is asked, in this order: the four-letter word `mntr` (every figure;
allowed only where 4lw.commands.whitelist lists it), the AdminServer's /commands/monitor over
HTTP (--admin-port, ZooKeeper's default 8080), then `srvr`, which 3.5+ allows by default (mode,
zxid, latency, connections, outstanding requests, znodes, version). The source column says
which one answered.

Exit: 0 healthy (every server serving, with a quorum); 8 degraded (a quorum, but a server is
down or not serving); 9 no quorum (no leader, or too few servers with it). With --watch, the
table is printed again every INTERVAL until Ctrl-C.

Examples:
  zkr --connect zk1:2181,zk2:2181,zk3:2181 status
  zkr status --json | jq '.servers[] | select(.mode == \"leader\")'
  zkr status --watch 2s";

/// `zkr status`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = STATUS_LONG_HELP)]
pub(crate) struct StatusArgs {
    /// The AdminServer's port on every server, asked when `mntr` is not allowed.
    #[arg(long, default_value_t = 8080)]
    admin_port: u16,
    /// One JSON object: health and every server's figures.
    #[arg(long)]
    json: bool,
    /// Print the status again every INTERVAL until Ctrl-C.
    #[arg(long, value_name = "INTERVAL", value_parser = parse_positive_duration)]
    watch: Option<Duration>,
}

/// One server's answer.
#[derive(Debug, Clone, Default)]
struct Server {
    address: String,
    /// `mntr`, `admin`, `srvr`, or none when unreachable.
    source: Option<&'static str>,
    /// Every figure the source gave, by mntr's names (`zk_server_state`, ...).
    figures: BTreeMap<String, String>,
}

impl Server {
    fn get(&self, key: &str) -> Option<&str> {
        self.figures.get(key).map(String::as_str)
    }

    fn mode(&self) -> &str {
        self.get("zk_server_state").unwrap_or("unreachable")
    }

    fn serving(&self) -> bool {
        matches!(self.mode(), "leader" | "follower" | "standalone" | "observer")
    }
}

/// The servers of a connect string: `host:port` (2181 by default), the chroot left out.
fn servers_of(connect: &str) -> Vec<String> {
    let hosts = connect.split_once('/').map_or(connect, |(hosts, _)| hosts);
    hosts
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .map(|h| {
            if h.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
                h.to_owned()
            } else {
                format!("{h}:2181")
            }
        })
        .collect()
}

pub(crate) async fn run(args: StatusArgs, connect: &ConnectArgs) -> anyhow::Result<Code> {
    let servers = servers_of(&connect.connect);
    let Some(interval) = args.watch else { return once(&servers, &args).await };
    let mut signals = Signals::listen()?;
    loop {
        once(&servers, &args).await?;
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            signal = signals.recv() => return Ok(Code::Status(status_after(signal))),
        }
    }
}

async fn once(servers: &[String], args: &StatusArgs) -> anyhow::Result<Code> {
    let asked = servers.iter().map(|address| ask(address, args.admin_port));
    let answers: Vec<Server> = futures::future::join_all(asked).await;
    let health = health(&answers);
    if args.json {
        let servers: Vec<Value> = answers.iter().map(server_json).collect();
        print_line(&json!({"health": health.label(), "servers": servers}).to_string())?;
    } else {
        for server in &answers {
            print_line(&server_line(server))?;
        }
        print_line(&format!("ensemble: {}", health.label()))?;
    }
    Ok(match health {
        Health::Healthy => Code::Success,
        Health::Degraded => Code::Exit(Exit::Degraded),
        Health::NoQuorum => Code::Exit(Exit::NoQuorum),
    })
}

/// Asks one server: `mntr`, then the AdminServer, then `srvr`.
async fn ask(address: &str, admin_port: u16) -> Server {
    let mut server = Server { address: address.to_owned(), ..Server::default() };
    let srvr = match zkr_testing::four_letter_word(address, "srvr").await {
        Ok(reply) => parse_srvr(&reply),
        Err(_) => BTreeMap::new(),
    };
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    match zkr_testing::four_letter_word(address, "mntr").await {
        Ok(reply) if reply.contains("zk_server_state") => {
            server.figures = zkr_testing::parse_mntr(&reply).into_iter().collect();
            server.source = Some("mntr");
        }
        _ => match admin_monitor(host, admin_port).await {
            Some(figures) => {
                server.figures = figures;
                server.source = Some("admin");
            }
            None => server.source = (!srvr.is_empty()).then_some("srvr"),
        },
    }
    // `srvr` fills what the others lack (mntr has no zxid).
    for (key, value) in srvr {
        server.figures.entry(key).or_insert(value);
    }
    server
}

/// `srvr`'s reply under mntr's names.
fn parse_srvr(reply: &str) -> BTreeMap<String, String> {
    let mut figures = BTreeMap::new();
    for line in reply.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim().to_owned();
        let name = match key.trim() {
            "Zookeeper version" => "zk_version",
            "Mode" => "zk_server_state",
            "Zxid" => "zk_zxid",
            "Outstanding" => "zk_outstanding_requests",
            "Connections" => "zk_num_alive_connections",
            "Node count" => "zk_znode_count",
            "Latency min/avg/max" => {
                let parts: Vec<&str> = value.split('/').collect();
                if let [min, avg, max] = parts[..] {
                    figures.insert("zk_min_latency".into(), min.into());
                    figures.insert("zk_avg_latency".into(), avg.into());
                    figures.insert("zk_max_latency".into(), max.into());
                }
                continue;
            }
            _ => continue,
        };
        figures.insert(name.to_owned(), value);
    }
    figures
}

/// The AdminServer's `monitor` command (`GET /commands/monitor`, JSON) under mntr's names;
/// `None` when it does not answer within 3 s.
async fn admin_monitor(host: &str, port: u16) -> Option<BTreeMap<String, String>> {
    let fetch = async {
        let stream = tokio::net::TcpStream::connect((host, port)).await.ok()?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await.ok()?;
        tokio::spawn(connection);
        let request = hyper::Request::get("/commands/monitor")
            .header(hyper::header::HOST, format!("{host}:{port}"))
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .ok()?;
        let response = sender.send_request(request).await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let body = http_body_util::BodyExt::collect(response.into_body()).await.ok()?.to_bytes();
        serde_json::from_slice::<Value>(&body).ok()
    };
    let document = tokio::time::timeout(Duration::from_secs(3), fetch).await.ok()??;
    monitor_figures(&document)
}

/// The `monitor` command's JSON (`{"server_state": "leader", "znode_count": 5, ...}`) under
/// mntr's names; `None` for anything else.
fn monitor_figures(document: &Value) -> Option<BTreeMap<String, String>> {
    let fields = document.as_object()?;
    fields.contains_key("server_state").then(|| {
        fields
            .iter()
            .filter(|(_, v)| !v.is_object() && !v.is_array() && !v.is_null())
            .map(|(k, v)| (format!("zk_{k}"), v.as_str().map_or_else(|| v.to_string(), str::to_owned)))
            .collect()
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Health {
    Healthy,
    Degraded,
    NoQuorum,
}

impl Health {
    fn label(self) -> &'static str {
        match self {
            Health::Healthy => "healthy",
            Health::Degraded => "degraded",
            Health::NoQuorum => "no quorum",
        }
    }
}

/// A quorum is a leader with more than half of the voters (the connect string's servers,
/// observers left out) serving beside it; a standalone server is its own quorum.
fn health(servers: &[Server]) -> Health {
    let all_serving = servers.iter().all(Server::serving);
    if servers.iter().any(|s| s.mode() == "standalone") {
        return if all_serving { Health::Healthy } else { Health::Degraded };
    }
    let voters = servers.iter().filter(|s| s.mode() != "observer").count();
    let with_leader = servers.iter().filter(|s| matches!(s.mode(), "leader" | "follower")).count();
    let has_leader = servers.iter().any(|s| s.mode() == "leader");
    match (has_leader && with_leader * 2 > voters, all_serving) {
        (false, _) => Health::NoQuorum,
        (true, true) => Health::Healthy,
        (true, false) => Health::Degraded,
    }
}

fn server_line(s: &Server) -> String {
    let Some(source) = s.source else { return format!("{:<22} unreachable", s.address) };
    let figure = |key: &str| s.get(key).unwrap_or("-");
    let mut line = format!(
        "{:<22} {:<10} zxid {}  latency {}/{}/{} ms  outstanding {}  connections {}  znodes {}",
        s.address,
        s.mode(),
        zxid_hex(figure("zk_zxid")),
        figure("zk_min_latency"),
        figure("zk_avg_latency"),
        figure("zk_max_latency"),
        figure("zk_outstanding_requests"),
        figure("zk_num_alive_connections"),
        figure("zk_znode_count"),
    );
    if let Some(watches) = s.get("zk_watch_count") {
        line.push_str(&format!("  watches {watches}"));
    }
    // `zk_learners` since 3.6, `zk_followers` before.
    let learners = s.get("zk_learners").or_else(|| s.get("zk_followers"));
    if let (Some(followers), Some(synced)) = (learners, s.get("zk_synced_followers")) {
        line.push_str(&format!("  followers {synced}/{followers} synced"));
    }
    let version = figure("zk_version");
    let version = version.split(['-', ',']).next().unwrap_or(version).trim();
    line.push_str(&format!("  {version}  ({source})"));
    line
}

/// A zxid as hex, whether the source gave it in hex (`srvr`) or decimal.
fn zxid_hex(zxid: &str) -> String {
    match zxid.strip_prefix("0x").map(|h| i64::from_str_radix(h, 16)).unwrap_or_else(|| zxid.parse()) {
        Ok(value) => format!("{value:#x}"),
        Err(_) => zxid.to_owned(),
    }
}

/// The figures `--json` gives, under mntr's names less the `zk_` prefix.
const JSON_FIGURES: [&str; 13] = [
    "zk_zxid",
    "zk_min_latency",
    "zk_avg_latency",
    "zk_max_latency",
    "zk_outstanding_requests",
    "zk_num_alive_connections",
    "zk_znode_count",
    "zk_watch_count",
    "zk_ephemerals_count",
    "zk_learners",
    "zk_followers",
    "zk_synced_followers",
    "zk_version",
];

fn server_json(s: &Server) -> Value {
    let mut server = json!({
        "address": s.address,
        "reachable": s.source.is_some(),
        "mode": s.mode(),
        "source": s.source,
    });
    for key in JSON_FIGURES {
        if let Some(value) = s.get(key) {
            let name = key.trim_start_matches("zk_");
            let value = match key {
                "zk_zxid" => Value::String(zxid_hex(value)),
                "zk_version" => Value::String(value.to_owned()),
                _ => match (value.parse::<i64>(), value.parse::<f64>()) {
                    (Ok(int), _) => Value::from(int),
                    (_, Ok(float)) => Value::from(float),
                    _ => Value::String(value.to_owned()),
                },
            };
            server[name] = value;
        }
    }
    server
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(mode: &str) -> Server {
        let mut s = Server { address: "h:1".into(), source: Some("srvr"), ..Server::default() };
        if mode != "unreachable" {
            s.figures.insert("zk_server_state".into(), mode.into());
        } else {
            s.source = None;
        }
        s
    }

    #[test]
    fn quorum_needs_a_leader_and_a_majority() {
        let h = |modes: &[&str]| health(&modes.iter().map(|m| server(m)).collect::<Vec<_>>());
        assert_eq!(h(&["leader", "follower", "follower"]), Health::Healthy);
        assert_eq!(h(&["leader", "follower", "unreachable"]), Health::Degraded);
        assert_eq!(h(&["leader", "unreachable", "unreachable"]), Health::NoQuorum);
        assert_eq!(h(&["follower", "follower", "unreachable"]), Health::NoQuorum);
        assert_eq!(h(&["standalone"]), Health::Healthy);
        assert_eq!(h(&["unreachable"]), Health::NoQuorum);
        assert_eq!(h(&["leader", "follower", "follower", "observer"]), Health::Healthy);
    }

    #[test]
    fn srvr_replies_read_as_mntr_figures() {
        let reply = "Zookeeper version: 3.9.5-abc, built on 2025\nLatency min/avg/max: 0/0.5/7\nReceived: 10\n\
                     Sent: 9\nConnections: 2\nOutstanding: 0\nZxid: 0x100000003\nMode: follower\nNode count: 7\n";
        let f = parse_srvr(reply);
        assert_eq!(f["zk_server_state"], "follower");
        assert_eq!(f["zk_avg_latency"], "0.5");
        assert_eq!(zxid_hex(&f["zk_zxid"]), "0x100000003");
        assert_eq!(zxid_hex("4294967299"), "0x100000003");
        assert_eq!(servers_of("a:1, b ,c:3/chroot"), ["a:1", "b:2181", "c:3"]);
    }

    #[test]
    fn the_admin_servers_monitor_reads_as_mntr_figures() {
        let document = json!({"version": "3.9.5", "server_state": "leader", "znode_count": 12,
                              "avg_latency": 0.5, "command": "monitor", "error": null});
        let f = monitor_figures(&document).unwrap();
        assert_eq!((f["zk_server_state"].as_str(), f["zk_znode_count"].as_str()), ("leader", "12"));
        assert_eq!(f["zk_avg_latency"], "0.5");
        assert!(!f.contains_key("zk_error"));
        assert!(monitor_figures(&json!({"error": "not found"})).is_none());
    }
}
