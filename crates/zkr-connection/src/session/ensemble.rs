//! The ensemble tracker (Curator's `EnsembleTracker`): follows `/zookeeper/config` on the
//! session and keeps the manager's server list current, so that a client started with the old
//! hosts keeps working after a reconfiguration replaced them.
//!
//! `zookeeper-client` cannot change a live session's host list, so the list takes effect where
//! a connection is made: every new session starts from it, and a session whose connection drops
//! while every host it knows has left the ensemble is re-attached (same session id and
//! password: its ephemeral nodes and locks survive) on the new hosts by the supervisor. A
//! session is never moved while one of its hosts is still in the ensemble: its own handle
//! reconnects there, and two handles on one session would take it from each other.

use std::sync::Arc;

use parking_lot::Mutex;
use zookeeper_client::{Client, Error as ZkError, SessionState};

use crate::session::supervisor::Shared;

/// The servers the manager connects to: the connect string's at first, then the ensemble's as
/// `/zookeeper/config` lists it.
#[derive(Debug)]
pub(crate) struct Ensemble {
    hosts: Mutex<Vec<String>>,
    /// The connect string's chroot (`""` when none), kept on every list.
    chroot: String,
}

impl Ensemble {
    pub(crate) fn new(connect_string: &str) -> Self {
        let (_, chroot) = crate::session::connect_string::split_chroot(connect_string.trim());
        Ensemble {
            hosts: Mutex::new(crate::session::connect_string::hosts(connect_string)),
            chroot: chroot.to_owned(),
        }
    }

    /// The servers now, as `host:port`.
    pub(crate) fn hosts(&self) -> Vec<String> {
        self.hosts.lock().clone()
    }

    /// The connect string of [`hosts`](Self::hosts), with the chroot.
    pub(crate) fn connect_string(&self, hosts: &[String]) -> String {
        format!("{}{}", hosts.join(","), self.chroot)
    }

    /// Takes the servers a `/zookeeper/config` document lists; `true` when they changed. A
    /// document that lists no client address (a static configuration of old-style
    /// `clientPort` lines, a standalone server) changes nothing.
    pub(crate) fn learn(&self, config: &[u8]) -> bool {
        let servers = client_hosts(&String::from_utf8_lossy(config));
        let mut hosts = self.hosts.lock();
        if servers.is_empty() || *hosts == servers {
            return false;
        }
        tracing::info!(from = ?*hosts, to = ?servers, "the ensemble changed");
        *hosts = servers;
        true
    }

    /// Has every one of `dialed` left the ensemble (so a handle that knows only them can never
    /// reconnect)? Servers are compared, not names: `localhost:2181`, a DNS or a Kubernetes
    /// service name is still in an ensemble that lists the address it resolves to. A dialed
    /// name that resolves to nothing any more has left.
    pub(crate) async fn left_all(&self, dialed: &[String]) -> bool {
        self.others(dialed).await.len() == self.hosts().len()
    }

    /// The ensemble's servers that are none of `dialed`'s (compared as in
    /// [`left_all`](Self::left_all)).
    pub(crate) async fn others(&self, dialed: &[String]) -> Vec<String> {
        let mut known = Vec::new();
        for host in dialed {
            known.extend(resolve(host).await);
        }
        let mut others = Vec::new();
        for host in self.hosts() {
            if !dialed.contains(&host) && !resolve(&host).await.iter().any(|a| known.contains(a)) {
                others.push(host);
            }
        }
        others
    }
}

/// The socket addresses `host:port` names (none when it names none now).
async fn resolve(host: &str) -> Vec<std::net::SocketAddr> {
    match tokio::net::lookup_host(host).await {
        Ok(addresses) => addresses.collect(),
        Err(e) => {
            tracing::debug!(host, error = %e, "a server's name does not resolve");
            Vec::new()
        }
    }
}

/// The client addresses of the `server.N` lines of a `/zookeeper/config` document
/// (`server.1=10.0.0.1:2888:3888:participant;0.0.0.0:2181`), as `host:port` in id order. A
/// wildcard client address (`0.0.0.0`, `::`) or a bare port takes the quorum address's host, as
/// Curator does.
pub(crate) fn client_hosts(config: &str) -> Vec<String> {
    let mut servers: Vec<(u64, String)> = config
        .lines()
        .filter_map(|line| {
            let (key, value) = line.trim().split_once('=')?;
            let id = key.trim().strip_prefix("server.")?.parse::<u64>().ok()?;
            let (quorum, client) = value.split_once(';')?;
            Some((id, client_address(quorum.trim(), client.trim())?))
        })
        .collect();
    servers.sort();
    servers.into_iter().map(|(_, host)| host).collect()
}

fn client_address(quorum: &str, client: &str) -> Option<String> {
    let (host, port) = match client.rsplit_once(':') {
        Some((host, port)) => (host, port),
        None => ("", client),
    };
    let port: u16 = port.parse().ok()?;
    let host = match host {
        "" | "0.0.0.0" | "::" | "[::]" | "[0:0:0:0:0:0:0:0]" => quorum_host(quorum)?,
        host => host,
    };
    Some(format!("{host}:{port}"))
}

/// The host of a quorum address `host:port:port[:role]` (`[v6]:port:port` for IPv6).
fn quorum_host(quorum: &str) -> Option<&str> {
    let host = match quorum.strip_prefix('[') {
        Some(_) => &quorum[..=quorum.find(']')?],
        None => quorum.split(':').next()?,
    };
    (!host.is_empty()).then_some(host)
}

/// Follows `/zookeeper/config` on `client` until its session ends: what the supervisor runs
/// beside each session when the tracker is on. A configuration that names no client address
/// (a standalone server, old-style `clientPort` lines) cannot give a list: it is read once and
/// no watch is left for it. A server without the node (3.4) ends it too.
pub(crate) async fn track(shared: Arc<Shared>, client: Client) {
    let mut states = client.state_watcher();
    let mut dynamic = false;
    loop {
        let read = if dynamic {
            client.get_and_watch_config().await.map(|(config, _, watcher)| (config, Some(watcher)))
        } else {
            client.get_config().await.map(|(config, _)| (config, None))
        };
        match read {
            Ok((config, None)) => {
                if client_hosts(&String::from_utf8_lossy(&config)).is_empty() {
                    return;
                }
                dynamic = true;
            }
            Ok((config, Some(watcher))) => {
                shared.ensemble.learn(&config);
                let _ = watcher.changed().await;
            }
            Err(ZkError::ConnectionLoss | ZkError::Timeout) => {
                if !connected_again(&mut states).await {
                    return;
                }
            }
            // No node (3.4), not allowed, the session ended: nothing to follow.
            Err(_) => return,
        }
    }
}

/// Waits until the handle is connected again: `false` when its session ended instead.
async fn connected_again(states: &mut zookeeper_client::StateWatcher) -> bool {
    loop {
        match states.peek_state() {
            SessionState::SyncConnected | SessionState::ConnectedReadOnly => return true,
            state if state.is_terminated() => return false,
            _ => {
                if states.changed().await.is_terminated() {
                    return false;
                }
            }
        }
    }
}

/// The servers' configuration read through a session of its own on `hosts`, for a handle that
/// is disconnected and cannot read it: whether the list changed.
pub(crate) async fn probe(shared: &Shared, hosts: &[String]) -> bool {
    let connect_string = shared.ensemble.connect_string(hosts);
    let dialing = shared.dial_at(shared.connector(), &connect_string).await;
    let Ok(client) = dialing.map(crate::session::served::Served::into_client) else { return false };
    let learned = match client.get_config().await {
        Ok((config, _)) => shared.ensemble.learn(&config),
        Err(_) => false,
    };
    drop(client);
    learned
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn client_addresses_in_id_order_with_wildcards_taking_the_quorum_host() {
        let config = "server.2=zk2.internal:2888:3888:participant;0.0.0.0:2181\n\
                      server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181\n\
                      server.3=[fd00::3]:2888:3888:observer;2182\n\
                      server.4=10.0.0.4:2888:3888:participant\n\
                      version=100000003\n";
        assert_eq!(client_hosts(config), ["10.0.0.1:2181", "zk2.internal:2181", "[fd00::3]:2182"]);
        assert!(client_hosts("").is_empty());
        assert!(client_hosts("server.1=127.0.0.1:2888:3888\nversion=0").is_empty());
    }

    #[test]
    fn a_list_is_learned_once_keeps_the_chroot_and_an_empty_one_is_ignored() {
        let ensemble = Ensemble::new("a:1,b:2/app");
        assert_eq!(ensemble.connect_string(&ensemble.hosts()), "a:1,b:2/app");
        assert!(!ensemble.learn(b"server.1=a:3:4"));
        assert!(ensemble.learn(b"server.1=c:3:4;c:5\nserver.2=d:3:4;d:6"));
        assert!(!ensemble.learn(b"server.1=c:3:4;c:5\nserver.2=d:3:4;d:6"));
        assert_eq!(ensemble.connect_string(&ensemble.hosts()), "c:5,d:6/app");
    }

    #[tokio::test]
    async fn servers_are_compared_not_names() {
        let ensemble = Ensemble::new("a.invalid:1,b.invalid:2");
        assert!(ensemble.learn(b"server.1=c.invalid:3:4;c.invalid:5\nserver.2=127.0.0.1:3:4;127.0.0.1:6"));
        assert!(ensemble.left_all(&["a.invalid:1".into(), "b.invalid:2".into()]).await);
        assert!(!ensemble.left_all(&["a.invalid:1".into(), "c.invalid:5".into()]).await);
        // Dialed by a name, listed by its address: still in the ensemble (issue 43, item 7).
        assert!(!ensemble.left_all(&["localhost:6".into()]).await);
        assert_eq!(ensemble.others(&["localhost:6".into()]).await, ["c.invalid:5"]);
        assert!(ensemble.left_all(&["localhost:7".into()]).await);
    }

    proptest! {
        #[test]
        fn a_rendered_configuration_parses_back(servers in proptest::collection::btree_map(1u64..300, ("[a-z][a-z0-9.-]{0,20}", 1u16..), 0..9)) {
            let config: String = servers
                .iter()
                .map(|(id, (host, port))| format!("server.{id}={host}:2888:3888:participant;{host}:{port}\n"))
                .collect();
            let expected: Vec<String> = servers.values().map(|(host, port)| format!("{host}:{port}")).collect();
            prop_assert_eq!(client_hosts(&format!("{config}version=1\n")), expected);
        }
    }
}
