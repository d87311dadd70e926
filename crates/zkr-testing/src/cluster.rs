//! [`TestingCluster`]: a 3- or 5-server ensemble on loopback.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use tempfile::TempDir;

use crate::error::{Error, Result};
use crate::four_letter::four_letter_word;
use crate::member::Member;
use crate::netns::Network;
use crate::options::{Peer, ServerOptions};
use crate::proxy::FaultProxy;

mod reconfig;

/// A real ZooKeeper ensemble of 3 or 5 servers on loopback, each a child JVM with its own ports
/// and data directory. Servers are addressed by index (`0..size`); their ZooKeeper ids are
/// `index + 1`.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// use zkr_testing::TestingCluster;
///
/// let cluster = TestingCluster::start(3).await?;
/// let leader = cluster.leader().await.expect("a leader");
/// cluster.kill(leader)?;
/// // ... clients carry on with the other two ...
/// cluster.restart(leader).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TestingCluster {
    /// Every member ever started; [`add_servers`](Self::add_servers) appends.
    members: Vec<Member>,
    options: Arc<ServerOptions>,
    /// With [`ServerOptions::partitionable`]: the proxies of the links between servers.
    links: Vec<Link>,
    /// With [`ServerOptions::network_namespaces`]: the servers' namespaces and bridge (after
    /// `members`, so that they go once the servers are killed).
    network: Option<Network>,
    root: TempDir,
}

/// The proxies server `from` reaches server `to`'s quorum and election ports through.
#[derive(Debug)]
struct Link {
    from: usize,
    to: usize,
    proxies: [FaultProxy; 2],
}

/// One member of a [`TestingCluster`], as [`TestingCluster::servers`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerInfo {
    /// Index in the cluster (0-based).
    pub index: usize,
    /// ZooKeeper server id (`myid`, 1-based).
    pub id: u32,
    /// The client port.
    pub client_port: u16,
    /// `127.0.0.1:PORT` of this server alone.
    pub connect_string: String,
    /// Whether its JVM is running.
    pub running: bool,
}

impl TestingCluster {
    /// Starts `size` servers (3 or 5; 1 gives a single quorum member) and waits until every one
    /// of them accepts sessions.
    ///
    /// # Errors
    /// [`Error::ClusterSize`] for other sizes; otherwise as
    /// [`TestingServer::start`](crate::TestingServer::start).
    ///
    /// # Cancel safety
    /// Cancel safe: dropped servers are killed and their directories removed.
    pub async fn start(size: usize) -> Result<Self> {
        Self::with_options(size, ServerOptions::default()).await
    }

    /// Starts a cluster with the given options. See [`start`](Self::start).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    ///
    /// # Cancel safety
    /// As [`start`](Self::start).
    pub async fn with_options(size: usize, options: ServerOptions) -> Result<Self> {
        if !matches!(size, 1 | 3 | 5) {
            return Err(Error::ClusterSize(size));
        }
        let install = options.installation()?;
        let options = Arc::new(options);
        let root = tempfile::Builder::new()
            .prefix("zkr-cluster-")
            .tempdir()
            .map_err(|e| Error::io("creating a temporary directory", e))?;
        let network = if options.network_namespaces { Some(Network::create(size)?) } else { None };
        let mut attempt = 0;
        'retry: loop {
            attempt += 1;
            let mut members = (1..=size as u32)
                .map(|id| Member::new(id, true, root.path(), install.clone(), options.clone()))
                .collect::<Result<Vec<_>>>()?;
            if let Some(network) = &network {
                for (i, m) in members.iter_mut().enumerate() {
                    m.place(network.member_ip(i), network.namespace(i));
                }
            }
            let peers: Vec<Peer> = members.iter().filter_map(|m| m.peer).collect();
            let proxied = options.partitionable && network.is_none();
            let links = if proxied { links(&peers).await? } else { Vec::new() };
            for (index, m) in members.iter().enumerate() {
                m.write_config(&view(index, &peers, &links))?;
            }
            for m in &members {
                m.spawn()?;
            }
            for m in &members {
                match m.wait_serving(options.start_timeout).await {
                    Ok(()) => {}
                    Err(Error::Exited { .. })
                        if attempt < 3 && members.iter().any(Member::lost_port_race) =>
                    {
                        drop(members);
                        for id in 1..=size {
                            let _ = std::fs::remove_dir_all(root.path().join(format!("server-{id}")));
                        }
                        continue 'retry;
                    }
                    Err(e) => return Err(e),
                }
            }
            tracing::info!(size, "TestingCluster serving");
            return Ok(TestingCluster { members, options, links, network, root });
        }
    }

    fn member(&self, index: usize) -> Result<&Member> {
        self.members.get(index).ok_or(Error::NoSuchServer { index, size: self.members.len() })
    }

    /// The server release the cluster runs.
    pub fn release(&self) -> &crate::Release {
        self.members[0].release()
    }

    /// Number of servers.
    pub fn size(&self) -> usize {
        self.members.len()
    }

    /// The connect string of the whole ensemble, `127.0.0.1:P1,127.0.0.1:P2,...`.
    pub fn connect_string(&self) -> String {
        self.members.iter().map(Member::address).collect::<Vec<_>>().join(",")
    }

    /// The connect string of server `index` alone.
    ///
    /// # Errors
    /// [`Error::NoSuchServer`].
    pub fn server_connect_string(&self, index: usize) -> Result<String> {
        Ok(self.member(index)?.address())
    }

    /// Every server with its ports and whether it runs.
    pub fn servers(&self) -> Vec<ServerInfo> {
        self.members
            .iter()
            .enumerate()
            .map(|(index, m)| ServerInfo {
                index,
                id: m.id,
                client_port: m.client_port,
                connect_string: m.address(),
                running: m.is_running(),
            })
            .collect()
    }

    /// The index of the server whose `srvr` says `Mode: leader`, if any answers so.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn leader(&self) -> Option<usize> {
        for (index, m) in self.members.iter().enumerate() {
            if m.is_running() && m.mode().await.as_deref() == Some("leader") {
                return Some(index);
            }
        }
        None
    }

    /// Which server (index) a client port belongs to.
    pub fn index_of_port(&self, port: u16) -> Option<usize> {
        self.members.iter().position(|m| m.client_port == port)
    }

    /// The index of the server that holds a connection for session `session_id` (from each
    /// server's `cons` listing), if any.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn server_of_session(&self, session_id: i64) -> Option<usize> {
        let needle = format!("sid={:#x}", session_id);
        for (index, m) in self.members.iter().enumerate() {
            if !m.is_running() {
                continue;
            }
            if let Ok(reply) = four_letter_word(&m.address(), "cons").await {
                if reply.contains(&needle) {
                    return Some(index);
                }
            }
        }
        None
    }

    /// Kills server `index` (`SIGKILL`, as a crash). Its data stays for [`restart`](Self::restart).
    ///
    /// # Errors
    /// [`Error::NoSuchServer`].
    pub fn kill(&self, index: usize) -> Result<()> {
        self.member(index)?.kill();
        Ok(())
    }

    /// Starts server `index` again with the same ports and data. It waits until the server
    /// accepts sessions when a quorum can be formed with it; otherwise it returns once the JVM
    /// is started. A running server is killed first.
    ///
    /// # Errors
    /// [`Error::NoSuchServer`], or as [`TestingServer::start`](crate::TestingServer::start).
    ///
    /// # Cancel safety
    /// If dropped, the server may be left starting; [`servers`](Self::servers) tells.
    pub async fn restart(&self, index: usize) -> Result<()> {
        let member = self.member(index)?;
        member.kill();
        member.spawn()?;
        let running = self.members.iter().filter(|m| m.is_running()).count();
        if running > self.members.len() / 2 {
            member.wait_serving(self.options.start_timeout).await?;
        }
        Ok(())
    }

    /// Waits until server `index` serves clients (a session can be opened on it: a follower
    /// has synced with a leader), within `timeout`: after a [`heal`](Self::heal) or a
    /// [`resume`](Self::resume), before the next fault.
    ///
    /// # Errors
    /// [`Error::StartTimeout`] with the server's last log lines; [`Error::Exited`] when it
    /// exited.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_serving(&self, index: usize, timeout: Duration) -> Result<()> {
        self.member(index)?.wait_serving(timeout).await
    }

    /// Freezes server `index` (`SIGSTOP`).
    ///
    /// # Errors
    /// [`Error::NoSuchServer`], [`Error::NotRunning`] or [`Error::Signal`].
    pub fn pause(&self, index: usize) -> Result<()> {
        self.member(index)?.signal(Signal::SIGSTOP)
    }

    /// Resumes server `index` (`SIGCONT`).
    ///
    /// # Errors
    /// [`Error::NoSuchServer`], [`Error::NotRunning`] or [`Error::Signal`].
    pub fn resume(&self, index: usize) -> Result<()> {
        self.member(index)?.signal(Signal::SIGCONT)
    }

    /// Cuts server `index` off from the other servers (every quorum and election link to and
    /// from it is blackholed, sockets left open), while its clients stay connected to it: it
    /// serves what it has until it notices (its `syncLimit`), and its writes go nowhere. The
    /// cluster must be started [`partitionable`](ServerOptions::partitionable) (the links'
    /// proxies stop relaying) or with [`network_namespaces`](ServerOptions::network_namespaces)
    /// (nftables drops its packets to and from the other servers).
    ///
    /// # Errors
    /// [`Error::NoSuchServer`], or [`Error::NotPartitionable`].
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> zkr_testing::Result<()> {
    /// use zkr_testing::{ServerOptions, TestingCluster};
    ///
    /// let cluster = TestingCluster::with_options(3, ServerOptions::default().partitionable(true)).await?;
    /// let leader = cluster.leader().await.expect("a leader");
    /// cluster.isolate(leader)?; // the other two elect a new leader; clients of this one stall
    /// // ...
    /// cluster.heal(leader)?;
    /// # Ok(()) }
    /// ```
    pub fn isolate(&self, index: usize) -> Result<()> {
        if let Some(network) = &self.network {
            self.member(index)?;
            return network.isolate(index);
        }
        self.links_of(index)?.for_each(|link| link.proxies.iter().for_each(FaultProxy::blackhole));
        Ok(())
    }

    /// Joins server `index` to the others again after [`isolate`](Self::isolate).
    ///
    /// # Errors
    /// As [`isolate`](Self::isolate).
    pub fn heal(&self, index: usize) -> Result<()> {
        if let Some(network) = &self.network {
            self.member(index)?;
            return network.heal(index);
        }
        self.links_of(index)?.for_each(|link| link.proxies.iter().for_each(FaultProxy::heal));
        Ok(())
    }

    fn links_of(&self, index: usize) -> Result<impl Iterator<Item = &Link>> {
        self.member(index)?;
        if self.links.is_empty() {
            return Err(Error::NotPartitionable);
        }
        Ok(self.links.iter().filter(move |l| l.from == index || l.to == index))
    }

    /// Sends a four-letter command to server `index`.
    ///
    /// # Errors
    /// [`Error::NoSuchServer`] or [`Error::Io`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn four_letter_word(&self, index: usize, command: &str) -> Result<String> {
        four_letter_word(&self.member(index)?.address(), command).await
    }

    /// The root temporary directory (removed on drop).
    pub fn root_dir(&self) -> &Path {
        self.root.path()
    }
}

/// A proxy for every directed link between two of `peers` and each of the two peer ports.
async fn links(peers: &[Peer]) -> Result<Vec<Link>> {
    let mut links = Vec::new();
    for from in 0..peers.len() {
        for (to, peer) in peers.iter().enumerate().filter(|(to, _)| *to != from) {
            let quorum = FaultProxy::start(&format!("127.0.0.1:{}", peer.quorum_port)).await?;
            let election = FaultProxy::start(&format!("127.0.0.1:{}", peer.election_port)).await?;
            links.push(Link { from, to, proxies: [quorum, election] });
        }
    }
    Ok(links)
}

/// The peers as server `index` reaches them: itself at its own ports, the others through
/// their links' proxies (when there are links).
fn view(index: usize, peers: &[Peer], links: &[Link]) -> Vec<Peer> {
    peers
        .iter()
        .enumerate()
        .map(|(to, peer)| match links.iter().find(|l| l.from == index && l.to == to) {
            Some(link) => Peer {
                id: peer.id,
                host: peer.host,
                client_port: peer.client_port,
                quorum_port: link.proxies[0].local_addr().port(),
                election_port: link.proxies[1].local_addr().port(),
            },
            None => *peer,
        })
        .collect()
}
