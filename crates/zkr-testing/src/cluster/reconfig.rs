//! Dynamic reconfiguration of a [`TestingCluster`] started
//! [`reconfigurable`](crate::ServerOptions::reconfigurable): servers join and leave the
//! ensemble while it serves, as an operator's `reconfig -add` / `-remove` does.

use zookeeper_client::{Client, EnsembleUpdate};

use super::TestingCluster;
use crate::error::{Error, Result};
use crate::member::Member;
use crate::options::Peer;

impl TestingCluster {
    /// Starts `count` more servers and adds them to the ensemble (`reconfig -add`, as
    /// participants); returns their indices. Clients that know only the old servers learn of
    /// them from `/zookeeper/config`.
    ///
    /// # Errors
    /// [`Error::NotReconfigurable`] when the cluster was not started
    /// [`reconfigurable`](crate::ServerOptions::reconfigurable); [`Error::Client`] when the
    /// reconfiguration fails; otherwise as [`TestingServer::start`](crate::TestingServer::start).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> zkr_testing::Result<()> {
    /// use zkr_testing::{ServerOptions, TestingCluster};
    ///
    /// let mut cluster = TestingCluster::with_options(3, ServerOptions::default().reconfigurable()).await?;
    /// let added = cluster.add_servers(2).await?; // servers 4 and 5
    /// cluster.remove_servers(&[0, 1, 2]).await?; // 1 to 3 leave and stop
    /// # let _ = added; Ok(()) }
    /// ```
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped between the start and the reconfiguration, the new servers run
    /// outside the ensemble until the cluster is dropped.
    pub async fn add_servers(&mut self, count: usize) -> Result<Vec<usize>> {
        // A server added to namespaced ones would have no namespace of its own to run in.
        if !self.options.reconfigurable || self.network.is_some() {
            return Err(Error::NotReconfigurable);
        }
        let ensemble = self.ensemble_peers().await?;
        let install = self.members[0].installation().clone();
        let first = self.members.len() as u32 + 1;
        let added = (first..first + count as u32)
            .map(|id| Member::new(id, true, self.root.path(), install.clone(), self.options.clone()))
            .collect::<Result<Vec<_>>>()?;
        let mut joining = Vec::new();
        for member in &added {
            let peer = member.peer.expect("a quorum member has peer ports");
            member.write_config(&[ensemble.as_slice(), &[peer]].concat())?;
            member.spawn()?;
            joining.push(server_line(&peer));
        }
        let old: Vec<usize> = (0..self.members.len()).collect();
        self.reconfigure(&old, &joining, &[]).await?;
        for member in &added {
            member.wait_serving(self.options.start_timeout).await?;
        }
        let indices = (self.members.len()..self.members.len() + added.len()).collect();
        self.members.extend(added);
        Ok(indices)
    }

    /// Removes servers `indices` from the ensemble (`reconfig -remove`), then stops them.
    ///
    /// # Errors
    /// As [`add_servers`](Self::add_servers), and [`Error::NoSuchServer`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped after the reconfiguration, the removed servers keep running
    /// until the cluster is dropped.
    pub async fn remove_servers(&self, indices: &[usize]) -> Result<()> {
        let ids =
            indices.iter().map(|&i| self.member(i).map(|m| m.id.to_string())).collect::<Result<Vec<_>>>()?;
        // Through a server that stays: a leaving one may drop the connection before it answers.
        let staying: Vec<usize> = (0..self.members.len()).filter(|i| !indices.contains(i)).collect();
        self.reconfigure(&staying, &[], &ids).await?;
        for &index in indices {
            self.member(index)?.kill();
        }
        Ok(())
    }

    /// The ensemble's configuration as the servers publish it in `/zookeeper/config`.
    ///
    /// # Errors
    /// [`Error::Client`] when no running server answers.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn ensemble_config(&self) -> Result<String> {
        let all: Vec<usize> = (0..self.members.len()).collect();
        let (data, _) = self.admin(&all).await?.get_config().await?;
        Ok(String::from_utf8_lossy(&data).into_owned())
    }

    /// Reconfigures through a client of members `through`.
    async fn reconfigure(&self, through: &[usize], joining: &[String], leaving: &[String]) -> Result<()> {
        if !self.options.reconfigurable {
            return Err(Error::NotReconfigurable);
        }
        let update = EnsembleUpdate::Incremental {
            joinings: joining.iter().map(String::as_str),
            leavings: leaving.iter().map(String::as_str),
        };
        match self.admin(through).await?.update_ensemble(update, None).await {
            Ok(_) => {}
            // Removing the leader drops every connection while the rest elect a new one, the
            // reply with them: the servers' configuration says whether it was applied.
            Err(zookeeper_client::Error::ConnectionLoss) => {
                self.await_config(through, joining, leaving).await?
            }
            Err(e) => return Err(e.into()),
        }
        tracing::info!(?joining, ?leaving, "TestingCluster reconfigured");
        Ok(())
    }

    /// Waits, within the start timeout, until the configuration members `through` serve lists
    /// `joining` and none of the server ids `leaving`.
    async fn await_config(&self, through: &[usize], joining: &[String], leaving: &[String]) -> Result<()> {
        let deadline = tokio::time::Instant::now() + self.options.start_timeout;
        loop {
            if let Ok(admin) = self.admin(through).await {
                if let Ok((data, _)) = admin.get_config().await {
                    let config = String::from_utf8_lossy(&data);
                    let has = |id: &str| config.lines().any(|l| l.starts_with(&format!("server.{id}=")));
                    let joined = joining
                        .iter()
                        .filter_map(|j| j.strip_prefix("server.")?.split_once('='))
                        .all(|(id, _)| has(id));
                    if joined && !leaving.iter().any(|id| has(id)) {
                        return Ok(());
                    }
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Timeout {
                    timeout: self.options.start_timeout,
                    what: "the reconfiguration to apply",
                });
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }

    /// A client of the running members among `indices`.
    async fn admin(&self, indices: &[usize]) -> Result<Client> {
        let running: Vec<String> = indices
            .iter()
            .filter_map(|&i| self.members.get(i))
            .filter(|m| m.is_running())
            .map(Member::address)
            .collect();
        Ok(Client::connector().with_fail_eagerly().connect(&running.join(",")).await?)
    }

    /// The peers of the members the current configuration lists.
    async fn ensemble_peers(&self) -> Result<Vec<Peer>> {
        let config = self.ensemble_config().await?;
        let ids: Vec<u32> = config
            .lines()
            .filter_map(|line| line.strip_prefix("server.")?.split_once('=')?.0.parse().ok())
            .collect();
        Ok(self.members.iter().filter(|m| ids.contains(&m.id)).filter_map(|m| m.peer).collect())
    }
}

/// `server.N=host:quorum:election:participant;host:client`, as `reconfig -add` takes it.
fn server_line(peer: &Peer) -> String {
    format!(
        "server.{}=127.0.0.1:{}:{}:participant;127.0.0.1:{}",
        peer.id, peer.quorum_port, peer.election_port, peer.client_port
    )
}
