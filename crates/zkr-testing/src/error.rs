//! The error type of this crate.

use std::time::Duration;

use crate::commands::{
    CURATOR_INSTALL_COMMAND, INSTALL_COMMAND, KAZOO_INSTALL_COMMAND, KERBEROS_INSTALL_COMMAND,
};

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong while starting, controlling or faulting test servers.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The ZooKeeper server jars were not found (neither `ZOOKEEPER_CLASSPATH` nor Debian's
    /// `/usr/share/java/zookeeper.jar`).
    #[error("ZooKeeper server jars not found ({detail}); install them with `{INSTALL_COMMAND}` or set ZOOKEEPER_CLASSPATH")]
    ZooKeeperNotFound {
        /// Where we looked.
        detail: String,
    },
    /// `ZKR_ZK_VERSION` (or a parsed release name) is neither a 3.5-or-later version nor `debian`.
    #[error(
        "`{given}` is not a ZooKeeper release: give a version such as 3.9.5 (3.5.0 or later) or `debian`"
    )]
    BadRelease {
        /// What was given.
        given: String,
    },
    /// Maven could not resolve a class path (a ZooKeeper release or Curator) from Maven Central.
    #[error("resolving {what} from Maven Central failed: {detail}")]
    MavenResolve {
        /// What was being resolved (`zookeeper-3.9.5`, `curator-5.9.0`).
        what: String,
        /// Why: no `mvn`, or Maven's own errors.
        detail: String,
    },
    /// No `java` executable was found (neither `$JAVA_HOME/bin/java` nor `java` on `PATH`).
    #[error("no Java runtime found ({detail}); install one with `{INSTALL_COMMAND}`")]
    JavaNotFound {
        /// Where we looked.
        detail: String,
    },
    /// An I/O operation failed (writing configuration, spawning the JVM, binding a port).
    #[error("{context}")]
    Io {
        /// What we were doing.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The server process exited while we waited for it to serve.
    #[error("ZooKeeper server {server} exited while starting ({status}); last log lines:\n{log}")]
    Exited {
        /// The server id (1-based).
        server: u32,
        /// The exit status.
        status: String,
        /// The tail of the server log.
        log: String,
    },
    /// The server did not accept a session within the start timeout.
    #[error("ZooKeeper server {server} did not serve within {timeout:?}; last log lines:\n{log}")]
    StartTimeout {
        /// The server id (1-based).
        server: u32,
        /// How long we waited.
        timeout: Duration,
        /// The tail of the server log.
        log: String,
    },
    /// A call through `zookeeper-client` failed.
    #[error("a ZooKeeper client call failed")]
    Client(#[from] zookeeper_client::Error),
    /// A cluster member index was out of range.
    #[error("no server at index {index} in a cluster of {size}")]
    NoSuchServer {
        /// The index asked for (0-based).
        index: usize,
        /// The cluster size.
        size: usize,
    },
    /// The server is not running (it was stopped or killed).
    #[error("ZooKeeper server {0} is not running")]
    NotRunning(u32),
    /// Sending a signal to a server's process group failed.
    #[error("sending {signal} to ZooKeeper server {server} failed")]
    Signal {
        /// The server id (1-based).
        server: u32,
        /// The signal name.
        signal: &'static str,
        /// The errno.
        #[source]
        source: nix::errno::Errno,
    },
    /// A bounded wait for an event ran out.
    #[error("timed out after {timeout:?} waiting for {what}")]
    Timeout {
        /// How long we waited.
        timeout: Duration,
        /// What we were waiting for.
        what: &'static str,
    },
    /// [`TestingCluster::isolate`](crate::TestingCluster::isolate) on a cluster not started
    /// [`partitionable`](crate::ServerOptions::partitionable).
    #[error("the cluster was not started partitionable (ServerOptions::partitionable)")]
    NotPartitionable,
    /// [`TestingCluster::add_servers`](crate::TestingCluster::add_servers) or
    /// [`remove_servers`](crate::TestingCluster::remove_servers) on a cluster not started
    /// [`reconfigurable`](crate::ServerOptions::reconfigurable) (or started with
    /// [`network_namespaces`](crate::ServerOptions::network_namespaces): a server added
    /// would have no namespace).
    #[error("the cluster was not started reconfigurable (ServerOptions::reconfigurable)")]
    NotReconfigurable,
    /// A cluster size other than 1, 3 or 5 was asked for.
    #[error("a TestingCluster has 1, 3 or 5 servers, not {0}")]
    ClusterSize(usize),
    /// A four-letter-word reply could not be understood.
    #[error("unexpected reply to `{command}`: {reply:?}")]
    FourLetterReply {
        /// The command sent.
        command: String,
        /// What came back.
        reply: String,
    },
    /// Apache Curator's jars or a Java compiler (`javac`) were not found, so
    /// [`CuratorTool`](crate::peers::CuratorTool) cannot be built.
    #[error("Apache Curator peer unavailable ({detail}); install it with `{CURATOR_INSTALL_COMMAND}`")]
    CuratorNotFound {
        /// What is missing.
        detail: String,
    },
    /// `/usr/bin/python3` or its `kazoo` module was not found, so
    /// [`KazooTool`](crate::peers::KazooTool) cannot run.
    #[error("kazoo peer unavailable ({detail}); install it with `{KAZOO_INSTALL_COMMAND}`")]
    KazooNotFound {
        /// What is missing.
        detail: String,
    },
    /// MIT Kerberos' KDC or its tools (`krb5kdc`, `kdb5_util`, `kadmin.local`, `kinit`) were
    /// not found, so a [`KerberosRealm`](crate::KerberosRealm) cannot start.
    #[error("MIT Kerberos unavailable ({detail}); install it with `{KERBEROS_INSTALL_COMMAND}`")]
    KerberosNotFound {
        /// What is missing.
        detail: String,
    },
    /// A Kerberos tool failed while a [`KerberosRealm`](crate::KerberosRealm) was made or used.
    #[error("{tool} failed ({status}): {output}")]
    Kerberos {
        /// The tool (`kdb5_util`, `kadmin.local`, `kinit`, `krb5kdc`).
        tool: String,
        /// Its exit status.
        status: String,
        /// What it printed (or the KDC's log).
        output: String,
    },
    /// `javac` rejected the embedded `CuratorTool.java` (a broken JDK or Curator version).
    #[error("compiling CuratorTool.java failed ({status}):\n{output}")]
    PeerCompile {
        /// The exit status of `javac`.
        status: String,
        /// The tail of what `javac` printed.
        output: String,
    },
    /// A peer process exited before printing what we waited for, or exited with a failure
    /// status when its output ended.
    #[error("{peer} exited ({status}) while we waited for {what}; stderr:\n{stderr}")]
    PeerExited {
        /// The peer and its command, e.g. `CuratorTool hold`.
        peer: String,
        /// The exit status.
        status: String,
        /// What we were waiting for.
        what: String,
        /// The tail of the peer's standard error.
        stderr: String,
    },
    /// A peer process did not print what we waited for (or did not exit) in time.
    #[error("{peer} did not deliver {what} within {timeout:?}; stderr:\n{stderr}")]
    PeerTimeout {
        /// The peer and its command, e.g. `kazoo_tool try`.
        peer: String,
        /// How long we waited.
        timeout: Duration,
        /// What we were waiting for.
        what: String,
        /// The tail of the peer's standard error.
        stderr: String,
    },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { context: context.into(), source }
    }
}
