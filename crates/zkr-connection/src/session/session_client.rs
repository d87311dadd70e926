//! [`SessionClient`]: a session's `zookeeper-client` handle whose requests are counted. Every
//! recipe sends its requests through [`Session::client`](crate::Session::client), so the
//! request figures (`zkr_requests_total`, `zkr_request_duration_seconds`) have one home here.

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use zookeeper_client::{
    Acl, AddWatchMode, Client, CreateOptions, CreateSequence, MultiReadResult, MultiWriteError,
    MultiWriteResult, OneshotWatcher, PersistentWatcher, Stat,
};

use crate::session::telemetry::Request;

type Result<T> = std::result::Result<T, zookeeper_client::Error>;

/// The `zookeeper-client` handle of one session, as [`Session::client`](crate::Session::client)
/// gives it: every `zookeeper_client::Client` method is there (through `Deref`), and the
/// requests below are counted by operation and result when the `metrics` feature is on
/// (`zkr_requests_total`, `zkr_request_duration_seconds`, labelled with the manager's
/// [`name`](crate::ZkClientBuilder::name)). Each method sends its request when called, as the
/// base client's do, so requests issued one after another are pipelined.
///
/// [`raw`](Self::raw) gives the base client itself, for a call that takes one.
///
/// # Examples
///
/// ```no_run
/// # async fn f(zk: zkr_connection::ZkClient) -> zkr_connection::Result<()> {
/// let (data, stat) = zk.retry(|s| async move { s.client().get_data("/config").await }).await?;
/// let session = zk.session().await?;
/// let raw: &zkr_connection::zookeeper_client::Client = session.client().raw();
/// # let _ = (data, stat, raw); Ok(()) }
/// ```
#[derive(Clone)]
pub struct SessionClient {
    raw: Client,
    name: Arc<str>,
}

impl SessionClient {
    pub(crate) fn new(raw: Client, name: Arc<str>) -> Self {
        SessionClient { raw, name }
    }

    /// The same session's handle rooted elsewhere (`raw`), counted under the same name.
    pub(crate) fn with_raw(&self, raw: Client) -> Self {
        SessionClient { raw, name: self.name.clone() }
    }

    /// The base client: its requests are not counted.
    pub fn raw(&self) -> &Client {
        &self.raw
    }

    /// The base client, owned.
    pub fn into_raw(self) -> Client {
        self.raw
    }

    fn request(&self, op: &'static str, path: &str) -> Request {
        Request::start(&self.name, op, path, self.raw.session_id())
    }

    /// Creates a node: `zookeeper_client::Client::create`, counted (`op="create"`).
    ///
    /// # Cancel safety
    /// Not cancel safe: the request is sent when this is called, and dropped before the reply it
    /// may be applied or not, as with a lost reply (look at ZooKeeper before writing again).
    pub fn create<'a: 'f, 'b: 'f, 'f>(
        &'a self,
        path: &'b str,
        data: &[u8],
        options: &CreateOptions<'_>,
    ) -> impl Future<Output = Result<(Stat, CreateSequence)>> + Send + 'f {
        self.request("create", path).time(self.raw.create(path, data, options))
    }

    /// Deletes a node: `zookeeper_client::Client::delete`, counted.
    ///
    /// # Cancel safety
    /// Not cancel safe: the request is sent when this is called, and dropped before the reply it
    /// may be applied or not, as with a lost reply (look at ZooKeeper before writing again).
    pub fn delete(
        &self,
        path: &str,
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<()>> + Send {
        self.request("delete", path).time(self.raw.delete(path, expected_version))
    }

    /// A node's data and stat: `zookeeper_client::Client::get_data`, counted.
    ///
    /// # Cancel safety
    /// Cancel safe: a read. The request is sent when this is called; dropped, its reply is ignored.
    pub fn get_data(&self, path: &str) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send {
        self.request("get_data", path).time(self.raw.get_data(path))
    }

    /// A node's data and stat with a watch: `zookeeper_client::Client::get_and_watch_data`,
    /// counted as `get_data`.
    ///
    /// # Cancel safety
    /// Cancel safe as a read. Dropped before the reply, the watch may stay set on the server until
    /// it fires once, its event going nowhere.
    pub fn get_and_watch_data(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher)>> + Send + '_ {
        self.request("get_data", path).time(self.raw.get_and_watch_data(path))
    }

    /// A node's stat, if it exists: `zookeeper_client::Client::check_stat`, counted as `exists`.
    ///
    /// # Cancel safety
    /// Cancel safe: a read. The request is sent when this is called; dropped, its reply is ignored.
    pub fn check_stat(&self, path: &str) -> impl Future<Output = Result<Option<Stat>>> + Send {
        self.request("exists", path).time(self.raw.check_stat(path))
    }

    /// A node's stat with a watch: `zookeeper_client::Client::check_and_watch_stat`, counted
    /// as `exists`.
    ///
    /// # Cancel safety
    /// Cancel safe as a read. Dropped before the reply, the watch may stay set on the server until
    /// it fires once, its event going nowhere.
    pub fn check_and_watch_stat(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Option<Stat>, OneshotWatcher)>> + Send + '_ {
        self.request("exists", path).time(self.raw.check_and_watch_stat(path))
    }

    /// Sets a node's data: `zookeeper_client::Client::set_data`, counted.
    ///
    /// # Cancel safety
    /// Not cancel safe: the request is sent when this is called, and dropped before the reply it
    /// may be applied or not, as with a lost reply (look at ZooKeeper before writing again).
    pub fn set_data(
        &self,
        path: &str,
        data: &[u8],
        expected_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send {
        self.request("set_data", path).time(self.raw.set_data(path, data, expected_version))
    }

    /// A node's children: `zookeeper_client::Client::list_children`, counted as `get_children`.
    ///
    /// # Cancel safety
    /// Cancel safe: a read. The request is sent when this is called; dropped, its reply is ignored.
    pub fn list_children(&self, path: &str) -> impl Future<Output = Result<Vec<String>>> + Send + '_ {
        self.request("get_children", path).time(self.raw.list_children(path))
    }

    /// A node's children with a watch: `zookeeper_client::Client::list_and_watch_children`,
    /// counted as `get_children`.
    ///
    /// # Cancel safety
    /// Cancel safe as a read. Dropped before the reply, the watch may stay set on the server until
    /// it fires once, its event going nowhere.
    pub fn list_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, OneshotWatcher)>> + Send + '_ {
        self.request("get_children", path).time(self.raw.list_and_watch_children(path))
    }

    /// A node's children and stat: `zookeeper_client::Client::get_children`, counted.
    ///
    /// # Cancel safety
    /// Cancel safe: a read. The request is sent when this is called; dropped, its reply is ignored.
    pub fn get_children(&self, path: &str) -> impl Future<Output = Result<(Vec<String>, Stat)>> + Send {
        self.request("get_children", path).time(self.raw.get_children(path))
    }

    /// A node's children and stat with a watch: `zookeeper_client::Client::get_and_watch_children`,
    /// counted as `get_children`.
    ///
    /// # Cancel safety
    /// Cancel safe as a read. Dropped before the reply, the watch may stay set on the server until
    /// it fires once, its event going nowhere.
    pub fn get_and_watch_children(
        &self,
        path: &str,
    ) -> impl Future<Output = Result<(Vec<String>, Stat, OneshotWatcher)>> + Send + '_ {
        self.request("get_children", path).time(self.raw.get_and_watch_children(path))
    }

    /// The session's ephemeral nodes under `path` (3.6+): `zookeeper_client::Client::list_ephemerals`,
    /// counted as `get_ephemerals`.
    ///
    /// # Cancel safety
    /// Cancel safe: a read. The request is sent when this is called; dropped, its reply is ignored.
    pub fn list_ephemerals(&self, path: &str) -> impl Future<Output = Result<Vec<String>>> + Send + '_ {
        self.request("get_ephemerals", path).time(self.raw.list_ephemerals(path))
    }

    /// A node's ACL: `zookeeper_client::Client::get_acl`, counted.
    ///
    /// # Cancel safety
    /// Cancel safe: a read. The request is sent when this is called; dropped, its reply is ignored.
    pub fn get_acl(&self, path: &str) -> impl Future<Output = Result<(Vec<Acl>, Stat)>> + Send + '_ {
        self.request("get_acl", path).time(self.raw.get_acl(path))
    }

    /// Sets a node's ACL: `zookeeper_client::Client::set_acl`, counted.
    ///
    /// # Cancel safety
    /// Not cancel safe: the request is sent when this is called, and dropped before the reply it
    /// may be applied or not, as with a lost reply (look at ZooKeeper before writing again).
    pub fn set_acl(
        &self,
        path: &str,
        acl: &[Acl],
        expected_acl_version: Option<i32>,
    ) -> impl Future<Output = Result<Stat>> + Send + '_ {
        self.request("set_acl", path).time(self.raw.set_acl(path, acl, expected_acl_version))
    }

    /// A persistent watch (3.6+): `zookeeper_client::Client::watch`, counted as `add_watch`.
    ///
    /// # Cancel safety
    /// Dropped before the reply, the persistent watch may stay on the server, its events going
    /// nowhere, until the session ends.
    pub fn watch(
        &self,
        path: &str,
        mode: AddWatchMode,
    ) -> impl Future<Output = Result<PersistentWatcher>> + Send + '_ {
        self.request("add_watch", path).time(self.raw.watch(path, mode))
    }

    /// Syncs the server with the leader: `zookeeper_client::Client::sync`, counted.
    ///
    /// # Cancel safety
    /// Cancel safe: a read. The request is sent when this is called; dropped, its reply is ignored.
    pub fn sync(&self, path: &str) -> impl Future<Output = Result<()>> + Send + '_ {
        self.request("sync", path).time(self.raw.sync(path))
    }

    /// The ensemble's configuration: `zookeeper_client::Client::get_config`, counted.
    ///
    /// # Cancel safety
    /// Cancel safe: a read. The request is sent when this is called; dropped, its reply is ignored.
    pub fn get_config(&self) -> impl Future<Output = Result<(Vec<u8>, Stat)>> + Send {
        self.request("get_config", "").time(self.raw.get_config())
    }

    /// The ensemble's configuration with a watch: `zookeeper_client::Client::get_and_watch_config`,
    /// counted as `get_config`.
    ///
    /// # Cancel safety
    /// Cancel safe as a read. Dropped before the reply, the watch may stay set on the server until
    /// it fires once, its event going nowhere.
    pub fn get_and_watch_config(
        &self,
    ) -> impl Future<Output = Result<(Vec<u8>, Stat, OneshotWatcher)>> + Send {
        self.request("get_config", "").time(self.raw.get_and_watch_config())
    }

    /// A transaction: `zookeeper_client::Client::new_multi_writer`, its commit counted as `multi`.
    pub fn new_multi_writer(&self) -> MultiWriter<'_> {
        MultiWriter { raw: self.raw.new_multi_writer(), client: self }
    }

    /// Several reads in one request (3.6+): `zookeeper_client::Client::new_multi_reader`, its
    /// commit counted as `multi_read`.
    pub fn new_multi_reader(&self) -> MultiReader<'_> {
        MultiReader { raw: self.raw.new_multi_reader(), client: self }
    }
}

impl Deref for SessionClient {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.raw
    }
}

/// A transaction being built on a [`SessionClient`]: `zookeeper_client::MultiWriter` (every
/// method through `Deref`), whose [`commit`](Self::commit) is counted as `multi`.
///
/// # Examples
///
/// ```no_run
/// # async fn f(session: zkr_connection::Session) -> Result<(), Box<dyn std::error::Error>> {
/// let mut multi = session.client().new_multi_writer();
/// multi.add_check_version("/app", 3)?;
/// multi.add_set_data("/app/config", b"v2", None)?;
/// multi.commit().await?;
/// # Ok(()) }
/// ```
pub struct MultiWriter<'a> {
    raw: zookeeper_client::MultiWriter<'a>,
    client: &'a SessionClient,
}

impl std::fmt::Debug for MultiWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiWriter").finish_non_exhaustive()
    }
}

impl<'a> MultiWriter<'a> {
    /// Commits the transaction: `zookeeper_client::MultiWriter::commit`, counted.
    ///
    /// # Cancel safety
    /// Not cancel safe: the request is sent when this is called, and dropped before the reply it
    /// may be applied or not, as with a lost reply (look at ZooKeeper before writing again).
    pub fn commit(
        &mut self,
    ) -> impl Future<Output = std::result::Result<Vec<MultiWriteResult>, MultiWriteError>> + Send + 'a {
        self.client.request("multi", "").time(self.raw.commit())
    }
}

impl<'a> Deref for MultiWriter<'a> {
    type Target = zookeeper_client::MultiWriter<'a>;

    fn deref(&self) -> &Self::Target {
        &self.raw
    }
}

impl DerefMut for MultiWriter<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.raw
    }
}

/// Several reads being built on a [`SessionClient`]: `zookeeper_client::MultiReader` (every
/// method through `Deref`), whose [`commit`](Self::commit) is counted as `multi_read`.
///
/// # Examples
///
/// ```no_run
/// # async fn f(session: zkr_connection::Session) -> Result<(), Box<dyn std::error::Error>> {
/// let mut reads = session.client().new_multi_reader();
/// reads.add_get_data("/app/a")?;
/// reads.add_get_data("/app/b")?;
/// let results = reads.commit().await?;
/// # let _ = results; Ok(()) }
/// ```
pub struct MultiReader<'a> {
    raw: zookeeper_client::MultiReader<'a>,
    client: &'a SessionClient,
}

impl std::fmt::Debug for MultiReader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MultiReader").finish_non_exhaustive()
    }
}

impl<'a> MultiReader<'a> {
    /// Sends the reads: `zookeeper_client::MultiReader::commit`, counted.
    ///
    /// # Cancel safety
    /// Cancel safe: a read. The request is sent when this is called; dropped, its reply is ignored.
    pub fn commit(&mut self) -> impl Future<Output = Result<Vec<MultiReadResult>>> + Send + 'a {
        self.client.request("multi_read", "").time(self.raw.commit())
    }
}

impl<'a> Deref for MultiReader<'a> {
    type Target = zookeeper_client::MultiReader<'a>;

    fn deref(&self) -> &Self::Target {
        &self.raw
    }
}

impl DerefMut for MultiReader<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.raw
    }
}
