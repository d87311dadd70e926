//! [`DistributedDoubleBarrier`]: members enter together and leave together.

use std::collections::HashSet;
use std::time::Duration;

use zkr_connection::{path, Deadline, ErrorKind, Parents, ZkClient};
use zookeeper_client::CreateMode;

use super::{cache, finished, rounds, BarrierError};
use crate::cache::{CacheMode, CacheSnapshot, CachedNode, CuratorCache};
use crate::nodes::PersistentNode;
use zkr_connection::Classify as _;

/// The node the member that completes the quota creates (Curator's name).
const READY: &str = crate::layouts::BARRIER_READY;

/// Curator's `DistributedDoubleBarrier`: `member_qty` members [`enter`](Self::enter), and none
/// goes on until all of them are there; then each [`leave`](Self::leave)s, and none goes on
/// until all of them have left. One value per member; Curator processes can be members of the
/// same barrier (same nodes: `<path>/<uuid>` ephemeral members and `<path>/ready`).
///
/// A member's node is kept through a session expiry of its own. A member whose process dies
/// loses its node with its session, and the others no longer wait for it. Dropping an entered
/// member deletes its node in the background, as [`leave`](Self::leave) does.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::barriers::BarrierError> {
/// use std::time::Duration;
/// use zkr_recipes::barriers::DistributedDoubleBarrier;
///
/// let mut barrier = DistributedDoubleBarrier::new(&zk, "/jobs/reindex/barrier", 3)?;
/// if barrier.enter_timeout(Duration::from_secs(60)).await?.is_none() {
///     return Ok(()); // the others did not come; our node is gone
/// }
/// // ... all three work ...
/// barrier.leave().await?;
/// # Ok(()) }
/// ```
pub struct DistributedDoubleBarrier {
    zk: ZkClient,
    path: String,
    member_qty: usize,
    member: String,
    /// The member node's data: empty (Curator), or kazoo's identifier.
    data: Vec<u8>,
    /// The barrier's missing parents: containers (Curator's), or persistent (kazoo's).
    parents: Parents,
    entered: Option<Entered>,
    /// The czxid of the last `ready` this member passed by (0 before its first round).
    passed: i64,
    /// An enter has begun with this member's name: the next takes a new one.
    name_used: bool,
}

/// What a log line needs: the barrier, this member's node, the quota, whether it entered.
impl std::fmt::Debug for DistributedDoubleBarrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistributedDoubleBarrier")
            .field("path", &self.path)
            .field("member", &self.member)
            .field("member_qty", &self.member_qty)
            .field("entered", &self.entered.is_some())
            .finish()
    }
}

/// An entered member: its node and the cache the waits follow.
struct Entered {
    node: PersistentNode,
    cache: CuratorCache,
    /// The czxid of the round's `ready` we passed by: the only one our leave deletes.
    ready: i64,
    /// The round's members, when its `ready` (or leave record) named them: the leave waits for
    /// these alone, not for a later round's (window 2; a name is new for each enter).
    round: Option<HashSet<String>>,
}

/// What a snapshot tells an entering member.
enum Step {
    /// The quota is met: go on, by the `ready` (or leave record) of this czxid, which named
    /// these members (none: a `ready` Curator or kazoo made).
    Pass(i64, Option<Vec<String>>),
    /// The quota is met and no one has said so for this round: create `ready`, checking these
    /// members, replacing an earlier round's (at this version) if one is left, and checking
    /// that the barrier node is at the version of this view (no round recorded since).
    CreateReady(Vec<String>, Option<i32>, Option<i32>),
}

impl DistributedDoubleBarrier {
    /// A member of the barrier at `path` that waits for `member_qty` members (at least 1).
    ///
    /// # Errors
    /// [`BarrierError::InvalidArgument`] for a member count of 0 or a path ZooKeeper refuses.
    pub fn new(zk: &ZkClient, path: &str, member_qty: usize) -> Result<Self, BarrierError> {
        zk.validate_recipe_path(path)?;
        if member_qty == 0 {
            return Err(BarrierError::InvalidArgument("a double barrier needs at least one member".into()));
        }
        let member = path::join(path, &uuid::Uuid::new_v4().to_string());
        Ok(DistributedDoubleBarrier {
            zk: zk.clone(),
            path: path.to_owned(),
            member_qty,
            member,
            data: Vec::new(),
            parents: Parents::Containers,
            entered: None,
            passed: 0,
            name_used: false,
        })
    }

    /// kazoo's `DoubleBarrier(path, num_clients, identifier)`: a member node named by a UUID's
    /// 32 hex digits holding `identifier`, the barrier's missing parents persistent, and the
    /// same `ready` node, so kazoo processes are members of the same barrier (kazoo's `enter()`
    /// and `leave()` are [`enter`](Self::enter) and [`leave`](Self::leave)). Unlike kazoo's, the
    /// member keeps its node through a session expiry of its own.
    ///
    /// # Errors
    /// As [`new`](Self::new); [`BarrierError::InvalidArgument`] for an identifier ZooKeeper
    /// cannot store.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(zk: zkr_connection::ZkClient) -> Result<(), zkr_recipes::barriers::BarrierError> {
    /// use zkr_recipes::barriers::DistributedDoubleBarrier;
    ///
    /// // kazoo: zk.DoubleBarrier("/jobs/reindex/barrier", 3, "indexer-2")
    /// let mut barrier = DistributedDoubleBarrier::kazoo(&zk, "/jobs/reindex/barrier", 3, "indexer-2")?;
    /// barrier.enter().await?;
    /// barrier.leave().await?;
    /// # Ok(()) }
    /// ```
    pub fn kazoo(
        zk: &ZkClient,
        path: &str,
        num_clients: usize,
        identifier: &str,
    ) -> Result<Self, BarrierError> {
        let barrier = DistributedDoubleBarrier::new(zk, path, num_clients)?;
        let member = path::join(path, &crate::kazoo::uuid_hex());
        zkr_connection::path::validate_data(&member, identifier.as_bytes())?;
        Ok(DistributedDoubleBarrier {
            member,
            data: identifier.as_bytes().to_vec(),
            parents: Parents::Persistent,
            ..barrier
        })
    }

    /// This member's node (`<path>/<uuid>`): the name is new for each [`enter`](Self::enter)
    /// after the first, so that no `ready` or leave record of an earlier round, and no
    /// create-ready decided from a view of one, is taken for a later round's.
    pub fn member_path(&self) -> &str {
        &self.member
    }

    /// Has this member entered and not left?
    pub fn is_entered(&self) -> bool {
        self.entered.is_some()
    }

    /// Enters: creates this member's node and waits until `member_qty` members are there.
    ///
    /// # Errors
    /// [`BarrierError::InvalidArgument`] when already entered; [`BarrierError::Connection`]
    /// when ZooKeeper refuses or the manager is closed.
    ///
    /// # Cancel safety
    /// Cancel safe: dropped, the member's node is deleted in the background.
    pub async fn enter(&mut self) -> Result<(), BarrierError> {
        self.enter_by(None).await.map(drop)
    }

    /// [`enter`](Self::enter) for at most `timeout` in all: `Ok(None)` when the quota was not met
    /// in time, and then this member's node is deleted, so it does not count for the others.
    /// (A member that gives up in the instant the last one counts it is started without it.)
    ///
    /// # Errors
    /// As [`enter`](Self::enter).
    ///
    /// # Cancel safety
    /// As [`enter`](Self::enter).
    pub async fn enter_timeout(&mut self, timeout: Duration) -> Result<Option<()>, BarrierError> {
        self.enter_by(Some(Deadline::after(timeout))).await.map(|done| done.then_some(()))
    }

    /// Leaves: deletes this member's node and waits until every member has left.
    ///
    /// # Errors
    /// [`BarrierError::NotEntered`] when not entered; [`BarrierError::Connection`] when the
    /// manager was closed.
    ///
    /// # Cancel safety
    /// Cancel safe: this member has left (its node is deleted) either way.
    pub async fn leave(&mut self) -> Result<(), BarrierError> {
        self.leave_by(None).await.map(drop)
    }

    /// [`leave`](Self::leave) for at most `timeout` in all: `Ok(None)` when members were still
    /// there then (this member has left all the same).
    ///
    /// # Errors
    /// As [`leave`](Self::leave).
    ///
    /// # Cancel safety
    /// As [`leave`](Self::leave).
    pub async fn leave_timeout(&mut self, timeout: Duration) -> Result<Option<()>, BarrierError> {
        self.leave_by(Some(Deadline::after(timeout))).await.map(|done| done.then_some(()))
    }

    async fn enter_by(&mut self, deadline: Option<Deadline>) -> Result<bool, BarrierError> {
        if self.entered.is_some() {
            return Err(BarrierError::InvalidArgument("entered already: leave() first".into()));
        }
        if std::mem::replace(&mut self.name_used, true) {
            let name = match self.parents {
                Parents::Persistent => crate::kazoo::uuid_hex(),
                _ => uuid::Uuid::new_v4().to_string(),
            };
            self.member = path::join(&self.path, &name);
        }
        let node = PersistentNode::builder(&self.zk, &self.member, CreateMode::Ephemeral)
            .data(self.data.clone())
            .parents(self.parents)
            .start()
            .await?;
        let Some(cache) = cache(&self.zk, &self.path, CacheMode::Children, deadline).await? else {
            return Ok(false);
        };
        let (ready, round) = loop {
            // Our first node's czxid: the round we entered. A node created again after our
            // session expired is newer than the `ready` of that round, which must still let us
            // pass.
            let step = crate::cache::wait_confirmed(&mut cache.snapshots(), deadline, |s| {
                self.step(s, node.first_czxid())
            })
            .await;
            match finished(step, deadline)? {
                None => return Ok(false),
                Some(Step::Pass(ready, round)) => break (ready, round),
                // Made: pass at once (waiting for the cache to show it could miss it, should
                // every other member pass and leave first). Not made, or made without a stat
                // (ZOOKEEPER-4026): the cache shows the `ready` to pass by next.
                Some(Step::CreateReady(members, stale, barrier)) => {
                    if let Some(czxid) = self.create_ready(&members, stale, barrier).await? {
                        break (czxid, Some(members));
                    }
                }
            }
        };
        // Marked as passed, a member that has not left yet is not counted for a later round
        // (window 5 of docs/reliability.md). Stored before anything is sent, the mark is on
        // the node made again after an expiry too.
        if let Err(error) = node.set_data(rounds::marked(&self.data, ready)).await {
            tracing::debug!(member = %self.member, %error, "double barrier: the member's mark was not written yet");
        }
        self.passed = ready;
        let round = round.map(|round| round.into_iter().collect());
        self.entered = Some(Entered { node, cache, ready, round });
        Ok(true)
    }

    /// Is the quota met in `snapshot`, and has someone said so? Nothing while this member's
    /// node is not in it (being created). `entered_at` is the czxid of our first node.
    fn step(&self, snapshot: &CacheSnapshot, entered_at: Option<i64>) -> Option<Step> {
        let ours = snapshot.get(&self.member)?;
        let entered_at = entered_at.unwrap_or(ours.stat().czxid).min(ours.stat().czxid);
        let name = path::node_name(&self.member);
        let ready = snapshot.get(&path::join(&self.path, READY));
        let names = ready.and_then(|r| rounds::named(r.data())).unwrap_or_default();
        tracing::trace!(
            member = %self.member,
            ready = ?ready.map(|r| (r.stat().czxid, r.stat().version)),
            entered_at,
            "double barrier: a view while entering"
        );
        // A `ready` created after we entered is this round's pass; so is one that names our
        // node and is newer than the last we passed (window 4: our first create's reply was
        // lost with its session, and the node made again is newer than our round's `ready`).
        if let Some(ready) = ready {
            if ready.stat().czxid > entered_at || (ready.stat().czxid > self.passed && names.contains(&name))
            {
                let round =
                    rounds::named(ready.data()).map(|round| round.into_iter().map(str::to_owned).collect());
                return Some(Step::Pass(ready.stat().czxid, round));
            }
        }
        // Window 1: the round that counted a node of this enter left while our session was
        // being replaced, and deleted its `ready`; its leaver recorded it in the barrier node.
        // (Our name is new for each enter: a record naming it is of this enter's round.)
        let barrier = snapshot.get(&self.path);
        let record = barrier.and_then(|node| rounds::recorded(node.data()));
        if let Some((round, named)) =
            record.as_ref().filter(|(round, r)| *round > self.passed && r.contains(&name))
        {
            return Some(Step::Pass(*round, Some(named.iter().map(|&n| n.to_owned()).collect())));
        }
        // An older one was left by an earlier round: with the quota met it is replaced by this
        // round's, so that a member whose view never showed the quota (one left at once after
        // passing) still sees its round's `ready` and passes, and leavers delete only their own
        // round's. Members of an earlier round (named by that `ready` or by the leave record,
        // or marked as passed) are not this round's.
        let earlier: HashSet<&str> =
            names.iter().chain(record.iter().flat_map(|(_, r)| r)).copied().collect();
        let members = counted(snapshot, &self.path, name, &earlier);
        if members.len() < self.member_qty {
            return None;
        }
        let version = barrier.map(|node| node.stat().version);
        Some(Step::CreateReady(members, ready.map(|stale| stale.stat().version), version))
    }

    /// Creates `ready` if every counted member still exists and no round was recorded since
    /// the view (one transaction): its czxid when made and the server said it; `None` when one
    /// left, a round was recorded or another member created it first (the cache shows which
    /// next).
    async fn create_ready(
        &self,
        members: &[String],
        stale: Option<i32>,
        barrier: Option<i32>,
    ) -> Result<Option<i64>, BarrierError> {
        let mut txn = self.zk.transaction();
        for member in members {
            txn = txn.check_exists(&path::join(&self.path, member));
        }
        // A round recorded since our view (window 1): its members may be counted again in
        // nodes of a later round; the view that shows the record decides.
        if let Some(version) = barrier {
            txn = txn.check(&self.path, version);
        }
        let ready = path::join(&self.path, READY);
        if let Some(version) = stale {
            txn = txn.delete(&ready, Some(version));
        }
        match txn.create(&ready, &rounds::ready_naming(members), CreateMode::Persistent).commit().await {
            Ok(results) => Ok(results.into_iter().find_map(|result| match result {
                zookeeper_client::MultiWriteResult::Create { stat, .. } if !stat.is_invalid() => {
                    Some(stat.czxid)
                }
                _ => None,
            })),
            Err(zkr_connection::Error::TransactionFailed { .. }) => Ok(None),
            // The session ended, or ZooKeeper went away, with the create in flight: the cache
            // shows whether `ready` was made once it is confirmed again (our node is made
            // again on the new session).
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::Lost | ErrorKind::Unreachable | ErrorKind::Indeterminate
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn leave_by(&mut self, deadline: Option<Deadline>) -> Result<bool, BarrierError> {
        let Entered { node, cache, ready, round } = self.entered.take().ok_or(BarrierError::NotEntered)?;
        drop(node); // deleted in the background; the wait below sees it go
        let path = &self.path;
        let left = crate::cache::wait_confirmed(&mut cache.snapshots(), deadline, |s| {
            round_left(s, path, ready, round.as_ref()).then_some(())
        })
        .await;
        if finished(left, deadline)?.is_none() {
            return Ok(false);
        }
        if let Err(error) = self.delete_ready(ready).await {
            tracing::warn!(path = %path, %error, "could not delete the double barrier's ready node");
        }
        Ok(true)
    }

    /// Deletes `ready` if it is our round's (created at `czxid`), at the version read with
    /// it: a slow leaver never deletes the next round's, which a member of that round may not
    /// have seen yet (Curator deletes whatever `ready` there is). A next round's `ready` made
    /// between the read and the delete (a whole quota entering within one round trip) is
    /// created at version 0 like ours and would still go: the layout has no round number.
    ///
    /// In the same transaction, a `ready` that named its members is recorded in the barrier
    /// node's data (when that data is empty or an earlier record, at the version read): a
    /// member of the round whose session was being replaced while we saw no member passes by
    /// the record when it comes back (window 1), where it waited for a quota that was gone.
    async fn delete_ready(&self, czxid: i64) -> zkr_connection::Result<()> {
        let ready = path::join(&self.path, READY);
        // Each refusal means another write came between our reads and our transaction: a
        // leaver that deleted `ready`, or a record written; read both again.
        let (mut refused, mut record) = (None, true);
        for _ in 0..8 {
            let Some((data, stat)) = self.zk.get_data(&ready).await? else { return Ok(()) };
            if stat.czxid != czxid {
                return Ok(());
            }
            let mut txn = self.zk.transaction().delete(&ready, Some(stat.version));
            if let Some(names) = rounds::named(&data).filter(|_| record) {
                if let Some((barrier, at)) = self.zk.get_data(&self.path).await? {
                    if barrier.is_empty() || rounds::recorded(&barrier).is_some() {
                        txn = txn.set_data(&self.path, &rounds::record(czxid, &names), Some(at.version));
                    }
                }
            }
            match txn.commit().await {
                Ok(_) => return Ok(()),
                // The record refused but for a version (the barrier node's ACL): delete alone.
                Err(zkr_connection::Error::TransactionFailed { index: 1, source, .. })
                    if !matches!(source, zookeeper_client::Error::BadVersion) =>
                {
                    tracing::debug!(path = %self.path, error = %source, "double barrier: the leave record was refused");
                    record = false;
                }
                Err(e @ zkr_connection::Error::TransactionFailed { .. }) => refused = Some(e),
                Err(e) => return Err(e),
            }
        }
        refused.map_or(Ok(()), Err)
    }
}

/// Has every member of the round of the `ready` of czxid `ready` left in `snapshot`? A
/// member is of the round when that `ready` named it, or its node is older than the `ready`
/// (it passed by it uncounted); every member is, when the round's are not known (a `ready`
/// Curator or kazoo made). A node of a later round is newer and has a new name.
fn round_left(snapshot: &CacheSnapshot, path: &str, ready: i64, round: Option<&HashSet<String>>) -> bool {
    let of_round = |name: &str, node: &CachedNode| {
        round.is_none_or(|round| round.contains(name)) || node.stat().czxid < ready
    };
    !snapshot.children(path).any(|(name, node)| name != READY && of_round(name, node))
}

/// The members an entering member `ours` counts in `snapshot`: itself, and those neither named
/// by an earlier round (`stale`: its `ready`, or its leave record) nor marked as passed.
fn counted(snapshot: &CacheSnapshot, path: &str, ours: &str, stale: &HashSet<&str>) -> Vec<String> {
    snapshot
        .children(path)
        .filter(|(name, _)| *name != READY)
        .filter(|(name, node)| {
            *name == ours || (!stale.contains(name) && rounds::passed(node.data()).is_none())
        })
        .map(|(name, _)| name.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{rounds, DistributedDoubleBarrier, Step};
    use crate::cache::{CacheSnapshot, CachedNode};

    /// A node of the barrier `/b` named `name`, created at `czxid`, holding `data`.
    fn node(name: &str, czxid: i64, data: &[u8]) -> (String, CachedNode) {
        (format!("/b/{name}"), CachedNode::made(czxid, czxid, data))
    }

    /// Member `name` of `/b` (quota 2) that last passed the `ready` of czxid `passed`.
    async fn member(name: &str, passed: i64) -> DistributedDoubleBarrier {
        let zk = zkr_connection::ZkClient::builder("127.0.0.1:1").start().await.unwrap();
        let mut member = DistributedDoubleBarrier::new(&zk, "/b", 2).unwrap();
        member.member = format!("/b/{name}");
        member.passed = passed;
        member
    }

    fn names(members: &[&str]) -> Vec<u8> {
        rounds::ready_naming(&members.iter().map(|m| m.to_string()).collect::<Vec<_>>())
    }

    fn passes(step: Option<Step>) -> Option<i64> {
        match step {
            Some(Step::Pass(czxid, _)) => Some(czxid),
            _ => None,
        }
    }

    /// Window 4: our first node (czxid 1) was counted by `ready` (3), but the create's reply
    /// was lost with the session; the node made again (5) is newer than `ready`. By czxids
    /// alone that `ready` is an earlier round's and the quota (B has left) is gone.
    #[tokio::test]
    async fn a_member_that_never_learnt_its_first_node_passes_by_the_ready_naming_it() {
        let view = CacheSnapshot::of([node("ready", 3, &names(&["a", "b"])), node("a", 5, b"")]);
        assert_eq!(passes(member("a", 0).await.step(&view, None)), Some(3));
        // The same member object entering again after passing that `ready`: not its round's.
        assert_eq!(passes(member("a", 3).await.step(&view, None)), None);
        // A `ready` Curator or kazoo made names nobody: czxids decide, as before.
        let curator = CacheSnapshot::of([node("ready", 3, b"10.0.0.7"), node("a", 5, b"")]);
        assert!(member("a", 0).await.step(&curator, None).is_none());
    }

    /// Window 5: A and B passed `ready` (3) and have not left; C enters. Before, C counted them
    /// and made its own `ready` at once, alone in its round.
    #[tokio::test]
    async fn a_member_does_not_count_members_that_passed_an_earlier_round() {
        let a = node("a", 1, &rounds::marked(b"", 3));
        let b = node("b", 2, &rounds::marked(b"", 3));
        let view =
            CacheSnapshot::of([node("ready", 3, &names(&["a", "b"])), a.clone(), b, node("c", 6, b"")]);
        assert!(member("c", 0).await.step(&view, Some(6)).is_none(), "C counted members of an earlier round");
        // Named by the stale `ready` though not marked yet (the mark follows the pass): not counted.
        let unmarked =
            CacheSnapshot::of([node("ready", 3, &names(&["a", "b"])), node("a", 1, b""), node("c", 6, b"")]);
        assert!(member("c", 0).await.step(&unmarked, Some(6)).is_none());
        // D comes: C and D are this round's, and the stale `ready` is replaced.
        let with_d = CacheSnapshot::of([
            node("ready", 3, &names(&["a", "b"])),
            a,
            node("c", 6, b""),
            node("d", 7, b""),
        ]);
        match member("c", 0).await.step(&with_d, Some(6)) {
            Some(Step::CreateReady(members, Some(0), _)) => assert_eq!(members, ["c", "d"]),
            _ => panic!("C and D make their round's ready"),
        }
        // Beside Curator's members (unmarked) under Curator's `ready` (naming nobody), czxids
        // decide as before: they are counted.
        let curator =
            CacheSnapshot::of([node("ready", 3, b"10.0.0.7"), node("a", 1, b""), node("c", 6, b"")]);
        assert!(
            matches!(member("c", 0).await.step(&curator, Some(6)), Some(Step::CreateReady(m, Some(0), _)) if m == ["a", "c"])
        );
    }

    /// Window 1: the round of `ready` 3 counted A, and left (its `ready` deleted) while A's
    /// session was being replaced; its leaver recorded it in the barrier node. A passes by the
    /// record; a member that passed that round, or one it did not name, does not.
    #[tokio::test]
    async fn a_member_named_by_a_round_that_left_passes_by_its_record() {
        let record = rounds::record(3, &["a", "b"]);
        let view = CacheSnapshot::of([("/b".to_owned(), CachedNode::made(0, 0, &record)), node("a", 5, b"")]);
        assert_eq!(passes(member("a", 0).await.step(&view, Some(1))), Some(3));
        assert_eq!(passes(member("a", 3).await.step(&view, Some(6))), None, "A passed that round");
        let c = CacheSnapshot::of([("/b".to_owned(), CachedNode::made(0, 0, &record)), node("c", 5, b"")]);
        assert!(member("c", 0).await.step(&c, Some(5)).is_none(), "C was not in that round");
        // C, entering a later round, does not count A (of the recorded round, not passed yet).
        let both = CacheSnapshot::of([
            ("/b".to_owned(), CachedNode::made(0, 0, &record)),
            node("a", 5, b""),
            node("c", 6, b""),
        ]);
        assert!(member("c", 0).await.step(&both, Some(6)).is_none(), "C counted A of the recorded round");
        // A user's data in the barrier node is no record.
        let user = CacheSnapshot::of([("/b".to_owned(), CachedNode::made(0, 0, b"a b")), node("a", 5, b"")]);
        assert!(member("a", 0).await.step(&user, Some(1)).is_none());
    }

    /// Window 2: A left, saw the barrier empty and entered the next round under a new name
    /// before B's view showed the empty barrier. B's leave waits for its round's members only.
    #[test]
    fn a_leaver_does_not_wait_for_a_later_rounds_member() {
        let view = CacheSnapshot::of([node("ready", 3, &names(&["a", "b"])), node("a2", 9, b"")]);
        let round: std::collections::HashSet<String> = ["a", "b"].map(str::to_owned).into();
        assert!(super::round_left(&view, "/b", 3, Some(&round)), "B waited for A's next round");
        let a_still_there = CacheSnapshot::of([node("a", 1, b""), node("a2", 9, b"")]);
        assert!(!super::round_left(&a_still_there, "/b", 3, Some(&round)));
        // C entered before `ready` and passed by it uncounted: of the round, waited for.
        let c = CacheSnapshot::of([node("c", 2, b""), node("a2", 9, b"")]);
        assert!(!super::round_left(&c, "/b", 3, Some(&round)), "B left before C, of its round");
        // A `ready` Curator made names nobody: every member is waited for, as before.
        assert!(!super::round_left(&view, "/b", 3, None));
    }

    /// A member prints the barrier and its node in one short line, not its machinery.
    #[tokio::test]
    async fn a_member_prints_its_node_not_its_machinery() {
        let zk = zkr_connection::ZkClient::builder("127.0.0.1:1").start().await.unwrap();
        let member = super::DistributedDoubleBarrier::kazoo(&zk, "/jobs/b", 3, "worker-1").unwrap();
        let printed = format!("{member:?}");
        let expected = format!(
            "DistributedDoubleBarrier {{ path: \"/jobs/b\", member: {:?}, member_qty: 3, entered: false }}",
            member.member_path()
        );
        assert_eq!(printed, expected);
        let node =
            crate::nodes::PersistentNode::builder(&zk, "/jobs/n", zookeeper_client::CreateMode::Ephemeral)
                .start()
                .await
                .unwrap();
        assert_eq!(
            format!("{node:?}"),
            "PersistentNode { path: \"/jobs/n\", mode: Ephemeral, node: None, creates: 0 }"
        );
    }
}
