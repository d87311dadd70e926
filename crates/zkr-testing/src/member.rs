//! One server of a [`TestingServer`](crate::TestingServer) or
//! [`TestingCluster`](crate::TestingCluster): its ports, files and process.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use parking_lot::{Mutex, MutexGuard};
use zookeeper_client::Client;

use crate::error::{Error, Result};
use crate::four_letter::{four_letter_word, parse_mode};
use crate::install::Installation;
use crate::options::{Peer, ServerOptions};
use crate::process::{free_port, log_tail, wait_port_released, MemberPaths, ServerProcess, SpawnSpec};

const STANDALONE_MAIN: &str = "org.apache.zookeeper.server.ZooKeeperServerMain";
const QUORUM_MAIN: &str = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) id: u32,
    pub(crate) client_port: u16,
    pub(crate) secure_port: Option<u16>,
    pub(crate) peer: Option<Peer>,
    /// Where it listens: `127.0.0.1`, or its network namespace's address.
    host: Ipv4Addr,
    /// Its network namespace ([`ServerOptions::network_namespaces`]).
    netns: Option<String>,
    paths: MemberPaths,
    install: Installation,
    options: Arc<ServerOptions>,
    orphan_cleanup: PathBuf,
    process: Mutex<Option<ServerProcess>>,
}

impl Member {
    /// Allocates ports and directories for member `id` under `root`.
    pub(crate) fn new(
        id: u32,
        quorum: bool,
        root: &Path,
        install: Installation,
        options: Arc<ServerOptions>,
    ) -> Result<Self> {
        let paths = MemberPaths::new(root, id)?;
        let client_port = match options.client_port {
            Some(first) => asked_port(first, id)?,
            None => free_port()?,
        };
        let secure_port = if options.secure.is_some() { Some(free_port()?) } else { None };
        let peer = if quorum {
            let (quorum_port, election_port) = (free_port()?, free_port()?);
            Some(Peer { id, host: Ipv4Addr::LOCALHOST, client_port, quorum_port, election_port })
        } else {
            None
        };
        Ok(Member {
            id,
            client_port,
            secure_port,
            peer,
            host: Ipv4Addr::LOCALHOST,
            netns: None,
            paths,
            install,
            options,
            orphan_cleanup: root.to_path_buf(),
            process: Mutex::new(None),
        })
    }

    /// Runs the member in network namespace `netns`, listening on `host` there.
    pub(crate) fn place(&mut self, host: Ipv4Addr, netns: String) {
        self.host = host;
        self.netns = Some(netns);
        if let Some(peer) = self.peer.as_mut() {
            peer.host = host;
        }
    }

    pub(crate) fn address(&self) -> String {
        format!("{}:{}", self.host, self.client_port)
    }

    pub(crate) fn installation(&self) -> &Installation {
        &self.install
    }

    pub(crate) fn release(&self) -> &crate::Release {
        self.install.release()
    }

    pub(crate) fn data_dir(&self) -> &Path {
        &self.paths.data
    }

    pub(crate) fn log_path(&self) -> &Path {
        &self.paths.log
    }

    fn process(&self) -> MutexGuard<'_, Option<ServerProcess>> {
        self.process.lock()
    }

    /// Writes `zoo.cfg` (and `myid` for quorum members).
    pub(crate) fn write_config(&self, peers: &[Peer]) -> Result<()> {
        let cfg = self.options.render_config(
            &self.paths.data,
            (self.host, self.client_port),
            self.secure_port,
            peers,
        );
        std::fs::write(&self.paths.config, cfg)
            .map_err(|e| Error::io(format!("writing {}", self.paths.config.display()), e))?;
        if self.peer.is_some() {
            let myid = self.paths.data.join("myid");
            std::fs::write(&myid, format!("{}\n", self.id))
                .map_err(|e| Error::io(format!("writing {}", myid.display()), e))?;
        }
        Ok(())
    }

    /// Starts the JVM unless it is running already.
    pub(crate) fn spawn(&self) -> Result<()> {
        let mut process = self.process();
        if process.is_some() {
            return Ok(());
        }
        let mut jvm_options = self.options.jvm_args();
        if let Some(jaas) = self.options.jaas_config() {
            let file = self.paths.config.with_file_name("jaas.conf");
            std::fs::write(&file, jaas).map_err(|e| Error::io(format!("writing {}", file.display()), e))?;
            jvm_options.push(format!("-Djava.security.auth.login.config={}", file.display()));
        }
        let spawned = ServerProcess::spawn(SpawnSpec {
            install: &self.install,
            server: self.id,
            config: &self.paths.config,
            log: &self.paths.log,
            cleanup_on_orphan: &self.orphan_cleanup,
            jvm_options: &jvm_options,
            main_class: if self.peer.is_some() { QUORUM_MAIN } else { STANDALONE_MAIN },
            netns: self.netns.as_deref(),
        })?;
        *process = Some(spawned);
        Ok(())
    }

    pub(crate) fn is_running(&self) -> bool {
        let mut process = self.process();
        match process.as_mut() {
            Some(p) => {
                if p.exited().is_some() {
                    *process = None;
                    false
                } else {
                    true
                }
            }
            None => false,
        }
    }

    /// Kills the JVM (SIGKILL to the group) and waits until its ports are free. Data stays.
    pub(crate) fn kill(&self) -> bool {
        let taken = self.process().take();
        match taken {
            Some(p) => {
                p.kill();
                wait_port_released(self.client_port, Duration::from_secs(10));
                if let Some(peer) = self.peer {
                    wait_port_released(peer.quorum_port, Duration::from_secs(10));
                    wait_port_released(peer.election_port, Duration::from_secs(10));
                }
                tracing::debug!(server = self.id, "killed ZooKeeper server");
                true
            }
            None => false,
        }
    }

    pub(crate) fn signal(&self, signal: Signal) -> Result<()> {
        match self.process().as_ref() {
            Some(p) => p.signal(signal),
            None => Err(Error::NotRunning(self.id)),
        }
    }

    /// Waits until a session can be opened on this member, or the process exits, or `timeout`.
    pub(crate) async fn wait_serving(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let address = self.address();
        loop {
            // The lock is let go before the match: an `if let` on the guard would hold it
            // through its block, where the process is cleared (a hang, not `Exited`).
            let exited = self.process().as_mut().and_then(ServerProcess::exited);
            if let Some(status) = exited {
                *self.process() = None;
                return Err(Error::Exited { server: self.id, status, log: log_tail(&self.paths.log, 30) });
            }
            let attempt = Client::connector()
                .with_session_timeout(Duration::from_secs(4))
                .with_fail_eagerly()
                .connect(&address);
            if let Ok(Ok(client)) = tokio::time::timeout(Duration::from_secs(2), attempt).await {
                drop(client);
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::StartTimeout {
                    server: self.id,
                    timeout,
                    log: log_tail(&self.paths.log, 30),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The member's `Mode:` from `srvr` (`standalone`, `leader`, `follower`), if it answers.
    pub(crate) async fn mode(&self) -> Option<String> {
        let reply = four_letter_word(&self.address(), "srvr").await.ok()?;
        parse_mode(&reply).map(str::to_string)
    }

    /// Was the last start lost to a port race?
    pub(crate) fn lost_port_race(&self) -> bool {
        // A port that was asked for is no race to retry: it is taken (see `asked_port`).
        self.options.client_port.is_none()
            && log_tail(&self.paths.log, 200).contains("Address already in use")
    }

    /// Clears the log (before a retried start).
    pub(crate) fn reset_log(&self) {
        let _ = std::fs::remove_file(&self.paths.log);
    }
}

/// Server `id`'s client port when the first was asked for (`ServerOptions::client_port`),
/// checked free now: a taken port is a clear error at once, not a server that cannot start.
fn asked_port(first: u16, id: u32) -> Result<u16> {
    let beyond = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "past port 65535");
    let port = u16::try_from(id - 1).ok().and_then(|i| first.checked_add(i)).ok_or_else(beyond);
    let port =
        port.map_err(|e| Error::io("giving the servers client ports from ServerOptions::client_port", e))?;
    std::net::TcpListener::bind(("127.0.0.1", port))
        .map_err(|e| Error::io(format!("checking that client port {port} is free"), e))?;
    Ok(port)
}

impl Drop for Member {
    fn drop(&mut self) {
        // ServerProcess's own Drop kills the group.
        drop(self.process().take());
    }
}
