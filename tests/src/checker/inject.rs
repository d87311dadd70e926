//! The mutual-exclusion checker's faults: each [`Fault`] injected against a run's workers and
//! servers, and the recovery after it.

use std::time::Duration;

use rand::RngExt as _;
use tokio::io::AsyncWriteExt as _;
use tokio::time::Instant;
use zkr_testing::FaultProxy;

use super::{Fault, Run, RECOVERY_BOUND};
use crate::faults;

/// ZooKeeper's opcode of a multi-op, which every worker's fenced write is (zkr's guard, Curator's
/// and kazoo's workers alike).
const MULTI_OPCODE: i32 = 14;

impl Run<'_> {
    /// Asks `worker` to pause its next critical section for `hold` and waits until it does:
    /// it then holds the lock and believes it will for that long.
    async fn make_holder(&mut self, worker: usize, hold: Duration) -> bool {
        let line = format!("hold {}\n", hold.as_millis());
        let Some(stdin) = self.workers[worker].stdin.as_mut() else { return false };
        if stdin.write_all(line.as_bytes()).await.is_err() {
            return false;
        }
        self.wait_for(worker, "HOLDING", Instant::now() + RECOVERY_BOUND).await
    }

    /// Runs `fault` against the schedule's workers and servers, recording the workers' events
    /// meanwhile, and measures the recovery: the time to the next committed critical section.
    pub(super) async fn inject(&mut self, fault: Fault) -> Result<(), String> {
        let session_timeout = self.options.session_timeout;
        let beyond_session = session_timeout + Duration::from_secs(2);
        let holder = self.rng.random_range(0..self.workers.len());
        self.transcript.push(None, &format!("fault {fault:?} (holder: worker {holder})"));
        let injected_at;
        match fault {
            Fault::LeaderKill | Fault::FollowerKill => {
                let cluster = self.cluster;
                let victim = if fault == Fault::LeaderKill {
                    faults::leader(cluster).await?
                } else {
                    let sessions: Vec<i64> = self.workers.iter().filter_map(|w| w.session).collect();
                    faults::follower_serving(cluster, &sessions).await?
                };
                injected_at = Instant::now();
                self.pumping(faults::kill_and_restart(cluster, victim, Duration::from_secs(1))).await?;
            }
            Fault::ServerPause => {
                if !self.make_holder(holder, beyond_session).await {
                    return Err(format!("worker {holder} never held the lock"));
                }
                let session = self.workers[holder].session.ok_or("holder without a session")?;
                let cluster = self.cluster;
                let server = faults::server_serving(cluster, session).await?;
                injected_at = Instant::now();
                self.pumping(faults::pause_for(cluster, server, beyond_session)).await?;
            }
            Fault::Blackhole => {
                if !self.make_holder(holder, beyond_session * 2).await {
                    return Err(format!("worker {holder} never held the lock"));
                }
                injected_at = Instant::now();
                self.workers[holder].proxies.iter().for_each(FaultProxy::blackhole);
                self.pump_for(beyond_session).await;
                self.workers[holder].proxies.iter().for_each(FaultProxy::heal);
            }
            Fault::ExpireHolder => {
                if !self.make_holder(holder, beyond_session).await {
                    return Err(format!("worker {holder} never held the lock"));
                }
                let session = self.workers[holder].session.ok_or("holder without a session")?;
                injected_at = Instant::now();
                let connect = self.cluster.connect_string();
                let expire = zkr_testing::expire_session_id(session, session_timeout, &connect);
                self.pumping(expire).await.map_err(|e| e.to_string())?;
            }
            Fault::KillHolder => {
                if !self.make_holder(holder, beyond_session).await {
                    return Err(format!("worker {holder} never held the lock"));
                }
                injected_at = Instant::now();
                let worker = &mut self.workers[holder];
                let _ = worker.child.start_kill();
                let _ = worker.child.wait().await;
                let proxies = std::mem::take(&mut worker.proxies);
                self.workers[holder] = self.spawn(holder, proxies)?;
            }
            Fault::IsolateServer => {
                if !self.make_holder(holder, beyond_session * 2).await {
                    return Err(format!("worker {holder} never held the lock"));
                }
                let session = self.workers[holder].session.ok_or("holder without a session")?;
                let cluster = self.cluster;
                let server = faults::server_serving(cluster, session).await?;
                injected_at = Instant::now();
                cluster.isolate(server).map_err(|e| e.to_string())?;
                self.pump_for(beyond_session).await;
                cluster.heal(server).map_err(|e| e.to_string())?;
            }
            Fault::LeaderKillDuringPause => {
                injected_at = Instant::now();
                self.pumping(faults::leader_kill_during_pause(self.cluster)).await?;
            }
            Fault::HeldReply => {
                // A short critical section: its write comes while the hold is armed.
                let write_after = Duration::from_millis(500);
                if !self.make_holder(holder, write_after).await {
                    return Err(format!("worker {holder} never held the lock"));
                }
                injected_at = Instant::now();
                let proxies = &self.workers[holder].proxies;
                proxies.iter().for_each(|p| p.hold_replies_from_request(MULTI_OPCODE));
                self.pump_for(write_after + beyond_session).await;
                self.workers[holder].proxies.iter().for_each(FaultProxy::heal);
            }
            Fault::ExpiryDuringPartition => {
                if !self.make_holder(holder, beyond_session * 2).await {
                    return Err(format!("worker {holder} never held the lock"));
                }
                let other = (holder + 1) % self.workers.len();
                let session = self.workers[other].session.ok_or("a worker without a session")?;
                injected_at = Instant::now();
                self.workers[holder].proxies.iter().for_each(FaultProxy::blackhole);
                let connect = self.cluster.connect_string();
                let expire = zkr_testing::expire_session_id(session, session_timeout, &connect);
                let expired = self.pumping(expire).await;
                self.pump_for(beyond_session).await;
                self.workers[holder].proxies.iter().for_each(FaultProxy::heal);
                expired.map_err(|e| e.to_string())?;
            }
        }
        self.report.faults += 1;
        match self.next_commit_after(injected_at, Instant::now() + RECOVERY_BOUND).await {
            Some(recovery) => self.report.recoveries.push(recovery),
            None => {
                self.report.unrecovered += 1;
                self.report
                    .notes
                    .push(format!("nothing committed within {RECOVERY_BOUND:?} of a {}", fault.name()));
            }
        }
        Ok(())
    }
}
