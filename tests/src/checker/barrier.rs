//! The double-barrier checker: four members on two clients go round while faults drawn from
//! a seed land mid-round ([`barrier_under_faults`]).

use std::time::Duration;

use zkr_testing::TestingCluster;

use super::Summary;
use crate::{faults, unique_root};

/// What one double-barrier member saw in a round: when it started to enter, passed, started
/// to leave and left.
#[derive(Debug, Clone, Copy)]
struct Passage {
    entering: tokio::time::Instant,
    passed: tokio::time::Instant,
    leaving: tokio::time::Instant,
    left: tokio::time::Instant,
}

/// One member's round: enter, a moment's work, leave, each within `bound`; which one hung.
async fn passage(
    member: &mut zkr_recipes::barriers::DistributedDoubleBarrier,
    bound: Duration,
) -> Result<Passage, String> {
    use tokio::time::Instant;
    let entering = Instant::now();
    let name = member.member_path().to_owned();
    let hung = |what: &str| format!("member {name} hung {what}");
    if member.enter_timeout(bound).await.expect("enter").is_none() {
        return Err(hung("entering"));
    }
    let passed = Instant::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let leaving = Instant::now();
    if member.leave_timeout(bound).await.expect("leave").is_none() {
        return Err(hung("leaving"));
    }
    Ok(Passage { entering, passed, leaving, left: Instant::now() })
}

/// The barrier's nodes as ZooKeeper has them: name, czxid, ephemeral owner, data.
async fn barrier_nodes(cs: &str, path: &str) -> String {
    let observer = crate::connect_with_session(cs, 30).await;
    let listed = observer.retry(|s| async move { s.client().list_children(path).await }).await;
    let mut out = String::new();
    for name in listed.unwrap_or_default() {
        let node = format!("{path}/{name}");
        let node = node.as_str();
        let read = observer.retry(|s| async move { s.client().get_data(node).await }).await;
        if let Ok((data, stat)) = read {
            let data = String::from_utf8_lossy(&data);
            out.push_str(&format!(
                "\n  {name} czxid {} owner {:#x} data {data:?}",
                stat.czxid, stat.ephemeral_owner
            ));
        }
    }
    observer.close().await;
    out
}

/// A double barrier of four members, two on each of two clients (each pair shares a session),
/// round after round: a round without a fault, one round for each fault drawn from `seed`
/// ([`faults::draw`], aimed at one client's session) landing while three members wait to
/// enter, and a last round without one. No member hangs, and in every round no member passes
/// before the last one started to enter, nor leaves before the last one started to leave,
/// unless that one's session was replaced in the round (window 1).
///
/// # Panics
/// On a violation (a member that hung, passed early or left early), with the command that
/// replays the seed.
pub async fn barrier_under_faults(cluster: &TestingCluster, seed: u64) -> Summary {
    use zkr_recipes::barriers::DistributedDoubleBarrier;
    let cs = cluster.connect_string();
    let path = format!("{}/barrier", unique_root("checker-barrier"));
    let clients = [
        crate::connect_with_session(cs.as_str(), 4).await,
        crate::connect_with_session(cs.as_str(), 4).await,
    ];
    let bound = crate::timing().wait() * 4;
    let drawn = faults::draw(seed, clients.len());
    let rounds: Vec<Option<(faults::ClientFault, usize)>> =
        std::iter::once(None).chain(drawn.into_iter().map(Some)).chain(std::iter::once(None)).collect();
    let mut excused = 0;
    for (round, planned) in rounds.iter().enumerate() {
        let fault = match planned {
            Some((fault, target)) => format!("{fault:?} at client {target}, seed {seed}"),
            None => "none".to_owned(),
        };
        let (started, generations) =
            (tokio::time::Instant::now(), clients.each_ref().map(|c| c.generation()));
        let mut members: Vec<_> =
            (0..4).map(|i| DistributedDoubleBarrier::new(&clients[i % 2], &path, 4).unwrap()).collect();
        let last = members.pop().expect("four members");
        let mut running: Vec<_> = members
            .into_iter()
            .map(|mut m| tokio::spawn(async move { passage(&mut m, bound).await }))
            .collect();
        // Three wait in `enter` while the fault lands; then the fourth comes.
        tokio::time::sleep(Duration::from_millis(200)).await;
        if let Some((fault, target)) = planned {
            let session = clients[*target].session().await.unwrap();
            let timeout = session.client().session_timeout();
            fault.inject(cluster, session.id(), timeout, |_| {}).await.unwrap();
        }
        let mut last = last;
        running.push(tokio::spawn(async move { passage(&mut last, bound).await }));
        let mut passages = Vec::new();
        for member in running {
            match member.await.unwrap_or_else(|e| panic!("round {round} ({fault}): {e}")) {
                Ok(passage) => passages.push(passage),
                Err(hung) => {
                    let sessions =
                        [clients[0].try_session(), clients[1].try_session()].map(|s| s.map(|s| s.id()));
                    let nodes = barrier_nodes(&cs, &path).await;
                    panic!("round {round} ({fault}): {hung}; the clients' sessions {sessions:x?}; the barrier:{nodes}")
                }
            }
        }
        let all_in = passages.iter().map(|p| p.entering).max().unwrap();
        // What a failure shows: each member's times, and whether a client's session was
        // replaced during the round (a member between sessions looks like one that left).
        let said = || {
            let ms = |at: tokio::time::Instant| (at - started).as_millis();
            let times: Vec<_> = passages
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let (e, pa, l, le) = (ms(p.entering), ms(p.passed), ms(p.leaving), ms(p.left));
                    format!(
                        "member {i} (client {}): entering {e}, passed {pa}, leaving {l}, left {le} ms",
                        i % 2
                    )
                })
                .collect();
            let sessions = clients.each_ref().map(|c| c.generation());
            format!("{times:#?}; the clients' session generations {generations:?} at the start, {sessions:?} at the end")
        };
        assert!(
            passages.iter().all(|p| p.passed >= all_in),
            "round {round} ({fault}): passed early: {}",
            said()
        );
        // No member leaves before another began to leave, except before one whose client's
        // session was replaced in the round: its node went with the old session, and no member
        // can tell that from a leave (window 1 of docs/reliability.md, Curator's layout).
        let replaced = [0, 1].map(|c| clients[c].generation() != generations[c]);
        let early = |i: usize, p: &Passage| -> Vec<usize> {
            let later = passages.iter().enumerate().filter(|(j, q)| *j != i && p.left < q.leaving);
            later.map(|(j, _)| j).collect()
        };
        for (i, p) in passages.iter().enumerate() {
            let early = early(i, p);
            let unexcused: Vec<_> = early.iter().filter(|j| !replaced[*j % 2]).collect();
            assert!(
                unexcused.is_empty(),
                "round {round} ({fault}): left early: member {i} before {unexcused:?} began to leave: {}",
                said()
            );
            excused += early.len();
        }
    }
    let faults = rounds.len() - 2;
    let line = format!(
        "double barrier, seed {seed}: {} rounds of 4 members on 2 clients, {faults} faults, no member hung or early \
         ({excused} leaves before a member whose session was replaced, window 1)",
        rounds.len()
    );
    Summary { operations: rounds.len() * 4, faults, line }
}
