//! The checker's fault schedules: which faults, in what order, drawn from which seed.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{RngExt as _, SeedableRng as _};

/// A fault the checker injects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Kill the ZooKeeper leader (`SIGKILL`), restart it after a second.
    LeaderKill,
    /// Kill a follower that a worker is connected to, restart it after a second.
    FollowerKill,
    /// `SIGSTOP` the server the holder is connected to for longer than the session timeout.
    ServerPause,
    /// Blackhole every connection of the holder, mid critical section, for longer than the
    /// session timeout: its session expires while it believes it holds the lock.
    Blackhole,
    /// Expire the holder's session from outside, mid critical section.
    ExpireHolder,
    /// `SIGKILL` the holder's process mid critical section; a new worker takes its place.
    KillHolder,
    /// The server the holder is connected to is cut off from the other servers (quorum and
    /// election links blackholed) while the holder stays connected to it, for longer than the
    /// session timeout: the majority goes on without it, and the holder's session expires
    /// there while the isolated server still answers it.
    IsolateServer,
    /// Overlapping faults: `SIGSTOP` a follower, and kill the leader while it is stopped (no
    /// quorum until the leader is back), then resume the follower.
    LeaderKillDuringPause,
    /// Overlapping faults: blackhole the holder mid critical section and, during that
    /// partition, expire another worker's session from outside.
    ExpiryDuringPartition,
    /// The holder's next write (a multi-op: the fence's check and the write) reaches the
    /// server and is applied, and its reply and every reply after it are held for longer than
    /// the session timeout while requests still flow (`FaultProxy::hold_replies_from_request`):
    /// the holder cannot learn the outcome, nor that its session lives on at the server.
    HeldReply,
}

impl Fault {
    /// Every fault, in the order the combined schedule uses.
    pub const ALL: [Fault; 10] = [
        Fault::LeaderKill,
        Fault::FollowerKill,
        Fault::ServerPause,
        Fault::Blackhole,
        Fault::ExpireHolder,
        Fault::KillHolder,
        Fault::IsolateServer,
        Fault::LeaderKillDuringPause,
        Fault::ExpiryDuringPartition,
        Fault::HeldReply,
    ];

    /// The fault's name in the report.
    pub fn name(self) -> &'static str {
        match self {
            Fault::LeaderKill => "leader kill",
            Fault::FollowerKill => "follower kill",
            Fault::ServerPause => "server SIGSTOP",
            Fault::Blackhole => "holder blackholed",
            Fault::ExpireHolder => "holder session expired",
            Fault::KillHolder => "holder SIGKILL",
            Fault::IsolateServer => "holder's server cut off from the quorum",
            Fault::LeaderKillDuringPause => "leader kill during a follower's SIGSTOP",
            Fault::ExpiryDuringPartition => "an expiry during the holder's partition",
            Fault::HeldReply => "holder's write applied, its reply held",
        }
    }
}

/// One run of the checker: which faults, how often, and the share of cancelled acquires.
///
/// Its `seed` draws which worker each holder fault strikes and seeds every worker's own choices
/// (which acquires it cancels, when, and its critical sections' pauses); [`Schedule::seeded`]
/// draws the faults from it too, so that a failing run is replayed from its seed alone
/// ([`Schedule::replay`]). The servers' and the network's timing is not drawn: a replay runs the
/// same schedule, not the same interleaving.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// Shown in the report.
    pub name: String,
    /// Injected one after another, `rounds` times over.
    pub faults: Vec<Fault>,
    /// How many times the fault list runs.
    pub rounds: usize,
    /// The percentage of acquires each worker drops after 0-30 ms.
    pub cancel_percent: u32,
    /// Without faults (cancellation only): how long the workers run.
    pub quiet_run: Duration,
    /// What the run's random choices are drawn from.
    pub seed: u64,
    /// The arguments of `zkr-checker` that run it again (empty: it is not one of its schedules).
    pub replay_args: String,
}

impl Schedule {
    /// The short schedules of the CI run: each fault alone, cancellations alone, then all
    /// together with cancellations.
    pub fn ci() -> Vec<Schedule> {
        Self::all(1)
    }

    /// The long schedules: every fault `rounds` times alone and together.
    pub fn soak(rounds: usize) -> Vec<Schedule> {
        Self::all(rounds)
    }

    fn all(rounds: usize) -> Vec<Schedule> {
        let single = |(seed, fault): (usize, &Fault)| Schedule {
            name: fault.name().to_owned(),
            faults: vec![*fault],
            rounds: rounds * 2,
            cancel_percent: 0,
            quiet_run: Duration::ZERO,
            seed: seed as u64,
            replay_args: format!("--schedule '{}' --rounds {rounds}", fault.name()),
        };
        let mut schedules: Vec<Schedule> = Fault::ALL.iter().enumerate().map(single).collect();
        schedules.push(Schedule {
            name: "acquires cancelled (30%)".to_owned(),
            faults: Vec::new(),
            rounds: 1,
            cancel_percent: 30,
            quiet_run: Duration::from_secs(5 * rounds as u64),
            seed: 100,
            replay_args: format!("--schedule 'acquires cancelled (30%)' --rounds {rounds}"),
        });
        schedules.push(Schedule {
            name: "all of them, 10% cancelled".to_owned(),
            faults: Fault::ALL.to_vec(),
            rounds,
            cancel_percent: 10,
            quiet_run: Duration::ZERO,
            seed: 101,
            replay_args: format!("--schedule 'all of them, 10% cancelled' --rounds {rounds}"),
        });
        schedules
    }

    /// `faults` faults drawn from `seed` (with repeats), with 0, 10 or 30% of acquires
    /// cancelled, also drawn. Replay it with `zkr-checker --seed <seed> --faults <faults>`
    /// ([`replay`](Self::replay)).
    pub fn seeded(seed: u64, faults: usize) -> Schedule {
        let mut rng = StdRng::seed_from_u64(seed);
        let drawn: Vec<Fault> =
            (0..faults).map(|_| Fault::ALL[rng.random_range(0..Fault::ALL.len())]).collect();
        let names: Vec<&str> = drawn.iter().map(|f| f.name()).collect();
        Schedule {
            name: format!("seed {seed}: {}", names.join(", ")),
            faults: drawn,
            rounds: 1,
            cancel_percent: [0, 10, 30][rng.random_range(0..3)],
            quiet_run: if faults == 0 { Duration::from_secs(5) } else { Duration::ZERO },
            seed,
            replay_args: format!("--seed {seed} --faults {faults}"),
        }
    }

    /// The command that runs this schedule again.
    pub fn replay(&self) -> String {
        if self.replay_args.is_empty() {
            return "(not a schedule of zkr-checker)".to_owned();
        }
        // The checker runs the worker binary beside it: build both.
        format!(
            "cargo build -p zkr-integration-tests --bins && target/debug/zkr-checker {}",
            self.replay_args
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_draws_the_same_schedule_and_says_how_to_replay_it() {
        let (a, b) = (Schedule::seeded(46, 5), Schedule::seeded(46, 5));
        assert_eq!((&a.faults, a.cancel_percent, &a.name), (&b.faults, b.cancel_percent, &b.name));
        assert_eq!(a.faults.len(), 5);
        assert!(a.name.starts_with("seed 46: "), "{}", a.name);
        assert!(a.replay().ends_with("zkr-checker --seed 46 --faults 5"), "{}", a.replay());
        let others: Vec<_> = (0..20).map(|seed| Schedule::seeded(seed, 5).faults).collect();
        assert!(others.iter().any(|f| *f != a.faults), "every seed drew the same faults");
        let named = &Schedule::ci()[0];
        assert!(
            named.replay().ends_with(&format!("--schedule '{}' --rounds 1", named.name)),
            "{}",
            named.replay()
        );
    }
}
