//! Worker IDs leased from ZooKeeper, with a timestamp watermark recorded per worker ID.
//!
//! Under the generator's path:
//! - `leases/NNNNN`: ephemeral, held by the live worker using ID `NNNNN`: `{"identity",
//!   "session", "token"}`, the token random per generator, so that two generators on one
//!   client (one session) never take one lease for both;
//! - `workers/NNNNN`: persistent record `{"identity", "until_ms"}`: no ID with worker ID
//!   `NNNNN` and a timestamp above `until_ms` was ever issued;
//! - `identities/<identity>`: persistent `{"worker_id"}`, the ID this identity used last, which
//!   it takes again after a restart when it is free.

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use zkr_connection::retry::SessionPause;
use zkr_connection::{path, Classify as _, RetryOptions, ZkClient};
use zookeeper_client::{Acls, CreateMode};

use crate::fence::SessionFence;
use crate::id::IdError;
use crate::owned::Owned;

/// A worker ID's persistent record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct WorkerRecord {
    pub(crate) identity: String,
    pub(crate) until_ms: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct IdentityRecord {
    worker_id: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct LeaseData<'a> {
    identity: &'a str,
    session: String,
    token: &'a str,
}

/// The token in a lease node's data, if it has one.
fn lease_token(data: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Token {
        token: String,
    }
    serde_json::from_slice::<Token>(data).ok().map(|t| t.token)
}

/// Milliseconds since the Unix epoch (0 for a clock before 1970).
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A held worker ID.
#[derive(Debug, Clone)]
pub(crate) struct Lease {
    pub(crate) worker_id: u64,
    /// The lease node, reachable only through the session that created it: the record is
    /// written in transactions that check it there, so a write never lands once the lease is
    /// gone (nor on a later session, where another worker may hold the ID).
    pub(crate) node: Owned,
    /// The record's version after our last write.
    pub(crate) record_version: i32,
    /// Our IDs must have timestamps strictly above this (Unix ms).
    pub(crate) after_ms: u64,
    /// The watermark just recorded (Unix ms).
    pub(crate) until_ms: u64,
}

/// Where a generator keeps its leases and records, and what tells its lease nodes from those
/// of other generators on the same session.
#[derive(Debug, Clone)]
pub(crate) struct LeasePaths {
    pub(crate) root: String,
    pub(crate) identity: String,
    /// Random per generator: a lease node is ours when it is of our session and holds it.
    pub(crate) token: String,
}

impl LeasePaths {
    pub(crate) fn lease(&self, worker_id: u64) -> String {
        format!("{}/leases/{worker_id:05}", self.root)
    }

    pub(crate) fn record(&self, worker_id: u64) -> String {
        format!("{}/workers/{worker_id:05}", self.root)
    }

    fn identity_record(&self) -> String {
        path::join(&path::join(&self.root, crate::layouts::SNOWFLAKE_IDENTITIES), &self.identity)
    }

    fn dir(&self, name: &str) -> String {
        path::join(&self.root, name)
    }
}

fn parse_worker(name: &str) -> Option<u64> {
    (name.len() == 5).then(|| name.parse().ok()).flatten()
}

/// Settings the lease needs from the generator.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LeaseSettings {
    pub(crate) max_worker_id: u64,
    /// How far ahead of the clock a recorded watermark reaches.
    pub(crate) window: Duration,
    /// How long to wait for our identity's previous lease to go before taking another ID.
    pub(crate) reclaim_wait: Duration,
    /// How far behind a record the clock may be at start and still be waited out (beyond the
    /// window, which a crashed worker's watermark may legitimately lead by).
    pub(crate) max_backward: Duration,
}

/// Takes a worker ID: our identity's last one if free, else the lowest free one; then makes
/// sure our clock is past the ID's record and records a new watermark.
pub(crate) async fn acquire(
    zk: &ZkClient,
    paths: &LeasePaths,
    settings: LeaseSettings,
    previous: Option<&Lease>,
) -> Result<Lease, IdError> {
    for dir in crate::layouts::SNOWFLAKE_DIRS {
        zk.create_parents(&path::join(&paths.dir(dir), "x")).await?;
    }
    let preferred = match previous {
        Some(p) => Some(p.worker_id),
        None => read_identity(zk, paths).await?,
    };
    if let Some(worker_id) = preferred {
        wait_for_lease_to_go(zk, paths, worker_id, settings.reclaim_wait).await?;
    }
    let leased: BTreeSet<u64> = list(zk, &paths.dir(crate::layouts::SNOWFLAKE_LEASES)).await?;
    let recorded: BTreeSet<u64> = list(zk, &paths.dir(crate::layouts::SNOWFLAKE_WORKERS)).await?;
    // Preferred first, then never-used IDs, then used ones.
    let candidates = preferred
        .into_iter()
        .chain((0..=settings.max_worker_id).filter(|w| !recorded.contains(w)))
        .chain(recorded.iter().copied().filter(|w| *w <= settings.max_worker_id))
        .filter(|w| Some(*w) == preferred || !leased.contains(w));
    for worker_id in candidates {
        // Dropped before the lease is handed back (the create in flight included), a lease node
        // holding our token is deleted in the background.
        let mut guard = {
            let (zk, node, token) = (zk.clone(), paths.lease(worker_id), paths.token.clone());
            zkr_connection::DropGuard::new("a snowflake lease being taken", delete_ours(zk, node, token))
        };
        let Some(node) = try_lease(zk, paths, worker_id).await? else {
            guard.disarm();
            continue;
        };
        match settle(zk, paths, settings, worker_id, &node, previous).await {
            Ok(lease) => {
                write_identity(zk, paths, worker_id).await;
                guard.disarm();
                tracing::info!(worker_id, identity = %paths.identity, "leased a snowflake worker ID");
                return Ok(lease);
            }
            Err(e) => {
                release_lease(zk, &node).await;
                guard.disarm();
                return Err(e);
            }
        }
    }
    Err(IdError::NoWorkerId { path: paths.root.clone(), count: settings.max_worker_id + 1 })
}

async fn read_identity(zk: &ZkClient, paths: &LeasePaths) -> Result<Option<u64>, IdError> {
    let node = paths.identity_record();
    let found = crate::errors::read_node(zk, &node).await?;
    Ok(found.and_then(|(d, _)| serde_json::from_slice::<IdentityRecord>(&d).ok()).map(|r| r.worker_id))
}

async fn write_identity(zk: &ZkClient, paths: &LeasePaths, worker_id: u64) {
    let node = paths.identity_record();
    let data = serde_json::to_vec(&IdentityRecord { worker_id }).unwrap_or_default();
    let written = match zk.create_if_absent(&node, &data, CreateMode::Persistent).await {
        Ok(true) => Ok(()),
        Ok(false) => {
            zk.retry(|s| {
                let (node, data) = (&node, &data);
                async move { s.client().set_data(node, data, None).await.map(drop) }
            })
            .await
        }
        Err(e) => Err(e),
    };
    if let Err(e) = written {
        // Only a preference for the next start; the lease itself is held.
        tracing::warn!(node, error = %e, "could not record the worker ID of this identity");
    }
}

async fn list(zk: &ZkClient, dir: &str) -> Result<BTreeSet<u64>, IdError> {
    let children = zk
        .retry(|s| async move {
            match s.client().list_children(dir).await {
                Err(zookeeper_client::Error::NoNode) => Ok(Vec::new()),
                other => other,
            }
        })
        .await?;
    Ok(children.iter().filter_map(|c| parse_worker(c)).collect())
}

/// Waits up to `wait` for `worker_id`'s lease node to go (our previous incarnation's, after
/// a crash, goes when its session expires). A node of the current session holding our token
/// is ours already: no wait (another generator on the same client holds it with its own).
/// The whole wait is bounded by `wait`, a request on a session the manager gives up meanwhile
/// included.
async fn wait_for_lease_to_go(
    zk: &ZkClient,
    paths: &LeasePaths,
    worker_id: u64,
    wait: Duration,
) -> Result<(), IdError> {
    if wait.is_zero() {
        return Ok(());
    }
    let lease = paths.lease(worker_id);
    let gone = async {
        let mut pause = SessionPause::new(Duration::from_millis(50), Duration::from_secs(1));
        loop {
            let session = zk.session().await?;
            match session.client().get_and_watch_data(&lease).await {
                Err(zookeeper_client::Error::NoNode) => return Ok(()),
                Ok((data, stat, _)) if is_ours(&data, &stat, &session, paths) => return Ok(()),
                // A watch set through this connection fires only while it lasts.
                Ok((_, _, watcher)) => tokio::select! {
                    _ = watcher.changed() => {}
                    () = zk.connection_replaced(session.connection()) => {}
                },
                Err(e) if zkr_connection::is_retryable(&e) || zkr_connection::is_session_error(&e) => {
                    pause.sleep().await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    tokio::time::timeout(wait, gone).await.unwrap_or(Ok(()))
}

/// Deletes the lease node `path` if it holds `token` (ours, on whichever session of this client
/// made it: requests on a session run in order, so a create still in flight is seen), trying
/// while the client is open; a node of an ended session went with it.
async fn delete_ours(zk: ZkClient, path: String, token: String) {
    let path = path.as_str();
    let token = token.as_str();
    let deleted = zk
        .retry(|s| async move {
            match s.client().get_data(path).await {
                Ok((data, stat)) if lease_token(&data).as_deref() == Some(token) => {
                    match s.client().delete(path, Some(stat.version)).await {
                        Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
                        Err(e) => Err(e),
                    }
                }
                Ok(_) | Err(zookeeper_client::Error::NoNode) => Ok(()),
                Err(e) => Err(e),
            }
        })
        .await;
    if let Err(error) = deleted {
        tracing::debug!(lease = path, %error, "snowflake lease not deleted; it ends with its session");
    }
}

/// Is a lease node with `data` and `stat` ours: of `session`, with our token?
fn is_ours(
    data: &[u8],
    stat: &zookeeper_client::Stat,
    session: &zkr_connection::Session,
    paths: &LeasePaths,
) -> bool {
    stat.ephemeral_owner == session.id() && lease_token(data).as_deref() == Some(paths.token.as_str())
}

/// Creates the lease node for `worker_id`; `None` if another live worker holds it (on another
/// session, or another generator on ours).
async fn try_lease(zk: &ZkClient, paths: &LeasePaths, worker_id: u64) -> Result<Option<Owned>, IdError> {
    let node = paths.lease(worker_id);
    let acls = zk.acl_for_path(&node);
    let identity = &paths.identity;
    let leased = zk
        .retry(|s| {
            let (node, acls) = (&node, &acls);
            async move {
                let lease = LeaseData { identity, session: format!("{:x}", s.id()), token: &paths.token };
                let data = serde_json::to_vec(&lease).unwrap_or_default();
                let options = CreateMode::Ephemeral.with_acls(Acls::new(acls));
                match s.client().create(node, &data, &options).await {
                    Ok(_) => Ok(Some(s)),
                    Err(zookeeper_client::Error::NodeExists) => {
                        // Ours, if an earlier attempt's reply was lost; another generator's on
                        // this client holds its own token.
                        match s.client().get_data(node).await {
                            Ok((data, stat)) => Ok(is_ours(&data, &stat, &s, paths).then_some(s)),
                            Err(zookeeper_client::Error::NoNode) => Ok(None),
                            Err(e) => Err(e),
                        }
                    }
                    Err(e) => Err(e),
                }
            }
        })
        .await?;
    Ok(leased.map(|session| Owned::created(node, SessionFence::new(session, zk.error_epoch()))))
}

/// Reads the worker ID's record, waits until our clock is past it, records a new watermark
/// (in a transaction that checks our lease node on its session).
async fn settle(
    zk: &ZkClient,
    paths: &LeasePaths,
    settings: LeaseSettings,
    worker_id: u64,
    node: &Owned,
    previous: Option<&Lease>,
) -> Result<Lease, IdError> {
    let record = paths.record(worker_id);
    loop {
        let found = crate::errors::read_node(zk, &record).await?.map(|(data, stat)| (data, stat.version));
        let (after_ms, version) = match &found {
            Some((data, version)) => {
                let rec: WorkerRecord = serde_json::from_slice(data)
                    .map_err(|e| IdError::CorruptState { path: record.clone(), reason: e.to_string() })?;
                // Our own record, untouched since we wrote it: we know exactly what we issued.
                let ours = previous.filter(|p| p.worker_id == worker_id && p.record_version == *version);
                (ours.map_or(rec.until_ms, |p| p.after_ms), Some(*version))
            }
            None => (0, None),
        };
        let now = unix_ms();
        if after_ms >= now {
            let behind = Duration::from_millis(after_ms - now);
            if behind > settings.window + settings.max_backward {
                return Err(IdError::ClockBehindRecord { worker_id, by: behind });
            }
            tokio::time::sleep(behind + Duration::from_millis(1)).await;
            continue;
        }
        let until_ms = unix_ms() + settings.window.as_millis() as u64;
        let data = serde_json::to_vec(&WorkerRecord { identity: paths.identity.clone(), until_ms })
            .unwrap_or_default();
        let txn = node.transaction(zk);
        let txn = match version {
            Some(v) => txn.set_data(&record, &data, Some(v)),
            None => txn.create(&record, &data, CreateMode::Persistent),
        };
        match txn.commit().await {
            Ok(results) => {
                let record_version = results.into_iter().find_map(written_version).unwrap_or(0);
                return Ok(Lease { worker_id, node: node.clone(), record_version, after_ms, until_ms });
            }
            // Someone wrote the record between our read and write, or an earlier try of ours
            // was applied though its reply was lost: read it again (ours then reads as a
            // watermark to wait out).
            Err(e) if e.is_bad_version() || e.is_node_exists() => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The record's version after the transaction's write of it.
fn written_version(result: zookeeper_client::MultiWriteResult) -> Option<i32> {
    match result {
        zookeeper_client::MultiWriteResult::SetData { stat } => Some(stat.version),
        zookeeper_client::MultiWriteResult::Create { .. } => Some(0),
        _ => None,
    }
}

/// Extends the watermark, within `bound`: `Ok(Some(new version))`, `Ok(None)` if the lease is
/// gone (the session ended, the lease node went, or someone else wrote the record), `Err`
/// for a transient failure.
pub(crate) async fn extend(
    zk: &ZkClient,
    paths: &LeasePaths,
    lease: &Lease,
    until_ms: u64,
    bound: Duration,
) -> Result<Option<i32>, zkr_connection::Error> {
    let record = paths.record(lease.worker_id);
    let data =
        serde_json::to_vec(&WorkerRecord { identity: paths.identity.clone(), until_ms }).unwrap_or_default();
    // Checked on the lease's own session: once that session has ended (and with it the
    // lease), nothing is sent rather than overwrite a new holder's record.
    let committed = lease
        .node
        .transaction(zk)
        .set_data(&record, &data, Some(lease.record_version))
        .retry_options(RetryOptions::default().timeout(bound))
        .commit()
        .await;
    match committed {
        Ok(results) => Ok(results.into_iter().find_map(written_version)),
        // Our own earlier try, applied though its reply was lost, if the record holds it.
        Err(e) if e.is_bad_version() && e.is_ambiguous() => written_by_us(zk, lease, &record, &data).await,
        Err(e) if e.is_bad_version() || e.is_no_node() || e.is_session_fatal() => Ok(None),
        Err(e) => Err(e),
    }
}

/// The record's version if it holds exactly `data` (what our lost write wrote), else `None`.
async fn written_by_us(
    zk: &ZkClient,
    lease: &Lease,
    record: &str,
    data: &[u8],
) -> Result<Option<i32>, zkr_connection::Error> {
    match lease.node.retry(zk, |c| async move { c.get_data(record).await }).await {
        Ok((found, stat)) => Ok((found == data).then_some(stat.version)),
        Err(e) if e.is_no_node() || e.is_session_fatal() => Ok(None),
        Err(e) => Err(e),
    }
}

/// Records the exact last timestamp (trying for at most [`RELEASE_WRITE`]) and deletes the
/// lease node, so that this identity can take the ID again at once.
pub(crate) async fn release(paths: &LeasePaths, lease: &Lease, last_ms: u64, zk: &ZkClient) {
    if let Ok(Some(_)) = extend(zk, paths, lease, last_ms, RELEASE_WRITE).await {
        tracing::debug!(worker_id = lease.worker_id, last_ms, "recorded the last timestamp");
    }
    release_lease(zk, &lease.node).await;
}

/// How long a release tries to record the last timestamp (without it the next holder waits
/// out the watermark instead).
const RELEASE_WRITE: Duration = Duration::from_secs(1);

async fn release_lease(zk: &ZkClient, node: &Owned) {
    let _ = tokio::time::timeout(Duration::from_secs(5), node.guaranteed_delete(zk).wait()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_are_five_digits() {
        let p = LeasePaths { root: "/ids/snow".into(), identity: "host-a".into(), token: "t".into() };
        assert_eq!(p.lease(7), "/ids/snow/leases/00007");
        assert_eq!(p.record(1023), "/ids/snow/workers/01023");
        assert_eq!(p.identity_record(), "/ids/snow/identities/host-a");
        assert_eq!(parse_worker("01023"), Some(1023));
        assert_eq!(parse_worker("1023"), None);
        assert_eq!(parse_worker("x0001"), None);
    }

    #[test]
    fn a_lease_names_its_generator_by_a_token() {
        let data =
            serde_json::to_vec(&LeaseData { identity: "a", session: "1f".into(), token: "t1" }).unwrap();
        assert_eq!(data, br#"{"identity":"a","session":"1f","token":"t1"}"#);
        assert_eq!(lease_token(&data).as_deref(), Some("t1"));
        // A lease node of an earlier release, without a token, is nobody's on this session.
        assert_eq!(lease_token(br#"{"identity":"a","session":"1f"}"#), None);
    }

    #[test]
    fn records_are_json() {
        let r = WorkerRecord { identity: "a".into(), until_ms: 5 };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, r#"{"identity":"a","until_ms":5}"#);
        assert_eq!(serde_json::from_str::<WorkerRecord>(&json).unwrap(), r);
    }
}
