//! Faults on a [`TestingCluster`], shared by the checkers: kill and restart a member, pause one,
//! cut one off from the quorum, and find the member a session is connected to.

use std::time::Duration;

use zkr_testing::{ServerOptions, TestingCluster};

/// The checkers' ensemble: 3 servers, each in a network namespace of its own, so that
/// [`isolate_for`] cuts one off with nftables (a real partition: its packets to and from the
/// others are dropped in the kernel).
///
/// # Panics
/// When the servers cannot start (a test failure).
pub async fn partitionable_cluster() -> TestingCluster {
    TestingCluster::with_options(3, ServerOptions::default().network_namespaces(true))
        .await
        .expect("a 3-server ensemble")
}

/// Cuts member `server` off from the other servers for `hold` (its clients stay connected
/// to it), then joins it again.
///
/// # Errors
/// The cluster is not partitionable, or there is no such member.
pub async fn isolate_for(cluster: &TestingCluster, server: usize, hold: Duration) -> Result<(), String> {
    cluster.isolate(server).map_err(|e| e.to_string())?;
    tokio::time::sleep(hold).await;
    cluster.heal(server).map_err(|e| e.to_string())?;
    // The fault ends when the member serves again: the next fault starts on a whole ensemble
    // (one that pauses a follower and kills the leader would otherwise have no quorum).
    cluster.wait_serving(server, crate::timing().wait()).await.map_err(|e| e.to_string())
}

/// Overlapping faults: `SIGSTOP`s a follower, kills the leader while it is stopped (no quorum
/// until the leader is back), restarts the leader, then resumes the follower (after at most
/// [`PAUSE_AT_MOST`]), and returns once both serve.
///
/// # Errors
/// A member could not be signalled, killed or restarted.
pub async fn leader_kill_during_pause(cluster: &TestingCluster) -> Result<(), String> {
    let leader = leader(cluster).await?;
    let paused = (leader + 1) % cluster.size();
    cluster.pause(paused).map_err(|e| e.to_string())?;
    cluster.kill(leader).map_err(|e| e.to_string())?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The restarted leader serves with the third member; should that one not be with the
    // quorum yet, only the paused one can make one: the pause ends at the latest after
    // `PAUSE_AT_MOST`, and the restart is awaited past it.
    let restart = cluster.restart(leader);
    tokio::pin!(restart);
    let restarted = tokio::select! {
        restarted = &mut restart => Some(restarted),
        () = tokio::time::sleep(PAUSE_AT_MOST) => None,
    };
    cluster.resume(paused).map_err(|e| e.to_string())?;
    let restarted = match restarted {
        Some(restarted) => restarted,
        None => restart.await,
    };
    restarted.map_err(|e| e.to_string())?;
    cluster.wait_serving(paused, crate::timing().wait()).await.map_err(|e| e.to_string())
}

/// The longest [`leader_kill_during_pause`] keeps its follower paused: past any session timeout
/// the checkers use.
pub const PAUSE_AT_MOST: Duration = Duration::from_secs(10);

/// Kills member `victim` (`SIGKILL`), waits `down`, and restarts it (until it serves).
///
/// # Errors
/// The member could not be killed or restarted.
pub async fn kill_and_restart(cluster: &TestingCluster, victim: usize, down: Duration) -> Result<(), String> {
    cluster.kill(victim).map_err(|e| e.to_string())?;
    tokio::time::sleep(down).await;
    cluster.restart(victim).await.map_err(|e| e.to_string())
}

/// Pauses member `server` (`SIGSTOP`) for `hold`, then resumes it.
///
/// # Errors
/// The member could not be signalled.
pub async fn pause_for(cluster: &TestingCluster, server: usize, hold: Duration) -> Result<(), String> {
    cluster.pause(server).map_err(|e| e.to_string())?;
    tokio::time::sleep(hold).await;
    cluster.resume(server).map_err(|e| e.to_string())
}

/// The leader's index.
///
/// # Errors
/// No member says it leads within the test wait ([`crate::timing`]).
pub async fn leader(cluster: &TestingCluster) -> Result<usize, String> {
    // Right after a fault the ensemble may be electing, or a loaded server slow to answer
    // `srvr`: ask again until one says it leads, within the test wait.
    let deadline = tokio::time::Instant::now() + crate::timing().wait();
    loop {
        if let Some(leader) = cluster.leader().await {
            return Ok(leader);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("no leader within {:?}", crate::timing().wait()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A follower that one of `sessions` is connected to, or else any follower.
///
/// # Errors
/// There is no follower.
pub async fn follower_serving(cluster: &TestingCluster, sessions: &[i64]) -> Result<usize, String> {
    let leader = cluster.leader().await;
    for session in sessions {
        if let Some(server) = cluster.server_of_session(*session).await {
            if Some(server) != leader {
                return Ok(server);
            }
        }
    }
    (0..cluster.size()).find(|i| Some(*i) != leader).ok_or_else(|| "no follower".to_owned())
}

/// The member `session` is connected to, or else the leader.
///
/// # Errors
/// Neither is known.
pub async fn server_serving(cluster: &TestingCluster, session: i64) -> Result<usize, String> {
    match cluster.server_of_session(session).await {
        Some(server) => Ok(server),
        None => leader(cluster).await,
    }
}

/// A fault aimed at one client's session: the checkers that draw their faults from a seed
/// ([`draw`]) inject them with [`ClientFault::inject`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientFault {
    /// Kill the leader, restart it after a second.
    LeaderKill,
    /// Kill a follower that the client is connected to (or else any), restart it after a second.
    FollowerKill,
    /// `SIGSTOP` the client's server for a second longer than the session timeout.
    ServerPause,
    /// Expire the client's session from outside.
    Expiry,
    /// Cut the client's server off from the quorum for a second longer than the session timeout.
    Isolation,
    /// `SIGSTOP` a follower and kill the leader meanwhile ([`leader_kill_during_pause`]).
    LeaderKillDuringPause,
}

impl ClientFault {
    /// Every kind.
    pub const ALL: [ClientFault; 6] = [
        ClientFault::LeaderKill,
        ClientFault::FollowerKill,
        ClientFault::ServerPause,
        ClientFault::Expiry,
        ClientFault::Isolation,
        ClientFault::LeaderKillDuringPause,
    ];

    /// Injects the fault through the client whose session is `session`, of timeout `timeout`,
    /// telling `mark` what it does (with the member it strikes) before it starts. Returns once
    /// the ensemble serves again.
    ///
    /// # Errors
    /// As the fault's function.
    pub async fn inject(
        self,
        cluster: &TestingCluster,
        session: i64,
        timeout: Duration,
        mark: impl FnOnce(String),
    ) -> Result<(), String> {
        let hold = timeout + Duration::from_secs(1);
        match self {
            ClientFault::LeaderKill => {
                let victim = leader(cluster).await?;
                mark(format!("killing the leader, server {victim}"));
                kill_and_restart(cluster, victim, Duration::from_secs(1)).await
            }
            ClientFault::FollowerKill => {
                let victim = follower_serving(cluster, &[session]).await?;
                mark(format!("killing follower {victim}"));
                kill_and_restart(cluster, victim, Duration::from_secs(1)).await
            }
            ClientFault::ServerPause => {
                let server = server_serving(cluster, session).await?;
                mark(format!("pausing server {server}"));
                pause_for(cluster, server, hold).await
            }
            ClientFault::Expiry => {
                mark(format!("expiring session {session:#x}"));
                let expired =
                    zkr_testing::expire_session_id(session, timeout, &cluster.connect_string()).await;
                expired.map_err(|e| e.to_string())
            }
            ClientFault::Isolation => {
                let server = server_serving(cluster, session).await?;
                mark(format!("isolating server {server}"));
                isolate_for(cluster, server, hold).await
            }
            ClientFault::LeaderKillDuringPause => {
                mark("a follower paused, the leader killed".to_owned());
                leader_kill_during_pause(cluster).await
            }
        }
    }
}

/// Every [`ClientFault`] once, in an order drawn from `seed`, each aimed at one of `clients`
/// clients (an index), drawn too.
pub fn draw(seed: u64, clients: usize) -> Vec<(ClientFault, usize)> {
    use rand::seq::SliceRandom as _;
    use rand::{RngExt as _, SeedableRng as _};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut faults: Vec<_> =
        ClientFault::ALL.into_iter().map(|fault| (fault, rng.random_range(0..clients))).collect();
    faults.shuffle(&mut rng);
    faults
}

/// The seed a checker draws its faults from: `ZKR_CHECKER_SEED` when set, else the CI run's
/// (46).
///
/// # Panics
/// When `ZKR_CHECKER_SEED` is not a number.
pub fn seed() -> u64 {
    match std::env::var("ZKR_CHECKER_SEED") {
        Ok(seed) => seed.parse().expect("ZKR_CHECKER_SEED is a number"),
        Err(_) => 46,
    }
}
