//! Servers on a network of their own: each member of a cluster in a network namespace, on a
//! bridge with the test's own namespace, so that a partition drops packets in the kernel
//! (nftables) instead of at a proxy. Needs root, `ip` (iproute2) and `nft` (nftables).
//!
//! Names carry the creating process's pid: a run that died without cleaning up (a `SIGKILL`)
//! leaves namespaces and a bridge that the next cluster's start deletes.

use std::io::Write as _;
use std::net::Ipv4Addr;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// The namespaces and bridge of one cluster; deleted on drop.
#[derive(Debug)]
pub(crate) struct Network {
    /// Picks the bridge's name and the subnet `10.a.b.0/24`.
    n: u16,
    members: usize,
}

impl Network {
    /// A bridge holding `10.a.b.254/24` and `members` namespaces, member `i` at `10.a.b.(i+1)`.
    pub(crate) fn create(members: usize) -> Result<Self> {
        sweep_stale();
        // A free bridge name: another process (or cluster) may hold the first one drawn.
        let mut attempts = 0;
        let n = loop {
            attempts += 1;
            let n = rand::random_range(1..=u16::MAX);
            match ip(&["link", "add", &bridge_name(n), "type", "bridge"]) {
                Ok(()) => break n,
                Err(_) if attempts < 20 => continue,
                Err(e) => return Err(e),
            }
        };
        let network = Network { n, members: 0 };
        let bridge = bridge_name(n);
        ip(&["link", "set", &bridge, "alias", &format!("zkr-{}", std::process::id())])?;
        ip(&["addr", "add", &format!("{}/24", network.bridge_ip()), "dev", &bridge])?;
        ip(&["link", "set", &bridge, "up"])?;
        let mut network = network;
        for i in 0..members {
            network.add_member(i)?;
        }
        Ok(network)
    }

    fn add_member(&mut self, i: usize) -> Result<()> {
        let ns = self.namespace(i);
        let veth = format!("zkr{}v{i}", self.n);
        ip(&["netns", "add", &ns])?;
        self.members = i + 1;
        ip(&["link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns])?;
        ip(&["link", "set", &veth, "master", &bridge_name(self.n), "up"])?;
        in_namespace(&ns, &["ip", "addr", "add", &format!("{}/24", self.member_ip(i)), "dev", "eth0"])?;
        in_namespace(&ns, &["ip", "link", "set", "eth0", "up"])?;
        in_namespace(&ns, &["ip", "link", "set", "lo", "up"])
    }

    /// Member `i`'s namespace.
    pub(crate) fn namespace(&self, i: usize) -> String {
        format!("zkr-{}-{}-{i}", std::process::id(), self.n)
    }

    /// Member `i`'s address.
    pub(crate) fn member_ip(&self, i: usize) -> Ipv4Addr {
        let [a, b] = self.n.to_be_bytes();
        Ipv4Addr::new(10, a, b, i as u8 + 1)
    }

    fn bridge_ip(&self) -> Ipv4Addr {
        let [a, b] = self.n.to_be_bytes();
        Ipv4Addr::new(10, a, b, 254)
    }

    /// Drops every packet between member `i` and the other members, both ways, in `i`'s
    /// namespace; its clients (on the bridge's address) still reach it.
    pub(crate) fn isolate(&self, i: usize) -> Result<()> {
        let peers: Vec<String> =
            (0..self.members).filter(|&j| j != i).map(|j| self.member_ip(j).to_string()).collect();
        let peers = peers.join(", ");
        let rules = format!(
            "table inet zkr-partition {{\n\
             chain input {{ type filter hook input priority 0; ip saddr {{ {peers} }} drop; }}\n\
             chain output {{ type filter hook output priority 0; ip daddr {{ {peers} }} drop; }}\n\
             }}\n"
        );
        self.heal(i)?;
        nft_script(&self.namespace(i), &rules)
    }

    /// Removes [`isolate`](Self::isolate)'s rules from member `i`'s namespace.
    pub(crate) fn heal(&self, i: usize) -> Result<()> {
        let ns = self.namespace(i);
        // No table: nothing to heal.
        let listed = in_namespace(&ns, &["nft", "list", "table", "inet", "zkr-partition"]);
        match listed {
            Ok(()) => in_namespace(&ns, &["nft", "delete", "table", "inet", "zkr-partition"]),
            Err(_) => Ok(()),
        }
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for i in 0..self.members {
            let _ = ip(&["netns", "del", &self.namespace(i)]);
        }
        let _ = ip(&["link", "del", &bridge_name(self.n)]);
    }
}

fn bridge_name(n: u16) -> String {
    format!("zkrb{n}")
}

/// Runs `ip args`; its stderr is the error.
fn ip(args: &[&str]) -> Result<()> {
    run(Command::new("ip").args(args), &format!("ip {}", args.join(" ")))
}

/// Runs `command` in namespace `ns`.
fn in_namespace(ns: &str, command: &[&str]) -> Result<()> {
    let what = format!("ip netns exec {ns} {}", command.join(" "));
    run(Command::new("ip").args(["netns", "exec", ns]).args(command), &what)
}

fn run(command: &mut Command, what: &str) -> Result<()> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io(format!("{what} (are iproute2 and nftables installed?)"), e))?;
    succeeded(&output, what)
}

/// `Ok` for a command that exited 0; its stderr as the error otherwise.
fn succeeded(output: &std::process::Output, what: &str) -> Result<()> {
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    Err(Error::io(what.to_owned(), std::io::Error::other(stderr)))
}

/// Loads an nftables script into namespace `ns`.
fn nft_script(ns: &str, script: &str) -> Result<()> {
    let what = format!("ip netns exec {ns} nft -f -");
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io(format!("{what} (is nftables installed?)"), e))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes()).map_err(|e| Error::io(what.clone(), e))?;
    }
    let output = child.wait_with_output().map_err(|e| Error::io(what.clone(), e))?;
    succeeded(&output, &what)
}

/// Deletes the namespaces and bridges of processes that are gone.
fn sweep_stale() {
    let dead = |pid: &str| {
        pid.parse::<u32>().is_ok_and(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists())
    };
    if let Ok(output) = Command::new("ip").args(["netns", "list"]).output() {
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let name = line.split_whitespace().next().unwrap_or_default();
            if name.strip_prefix("zkr-").and_then(|rest| rest.split('-').next()).is_some_and(dead) {
                let _ = ip(&["netns", "del", name]);
            }
        }
    }
    if let Ok(output) = Command::new("ip").args(["-o", "link", "show", "type", "bridge"]).output() {
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            // "7: zkrb123: <...> ... alias zkr-4242"
            let name = line.split(": ").nth(1).unwrap_or_default();
            let owner = line.split(" alias zkr-").nth(1).map(str::trim);
            if name.starts_with("zkrb") && owner.is_some_and(dead) {
                let _ = ip(&["link", "del", name]);
            }
        }
    }
}
