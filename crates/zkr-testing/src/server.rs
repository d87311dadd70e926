//! [`TestingServer`]: one standalone ZooKeeper server.

use std::path::Path;
use std::sync::Arc;

use nix::sys::signal::Signal;
use tempfile::TempDir;

use crate::error::{Error, Result};
use crate::four_letter::four_letter_word;
use crate::member::Member;
use crate::options::ServerOptions;

/// A real standalone ZooKeeper server (the Java one, of the [`Release`](crate::Release) asked for) on a free loopback
/// port, with its own temporary data directory.
///
/// The server is a child process in its own process group. Dropping the `TestingServer` kills it
/// and removes its directory; if this process dies first (even by `SIGKILL`), a guard kills the
/// JVM and removes the directory anyway, so no server outlives its test binary.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use zkr_testing::TestingServer;
///
/// let server = TestingServer::start().await?;
/// let client = zkr_connection::zookeeper_client::Client::connect(&server.connect_string()).await?;
/// server.stop()?;          // keeps the data
/// server.restart().await?; // same port, same data
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TestingServer {
    member: Member,
    options: Arc<ServerOptions>,
    // Dropped after `member` (field order), so the JVM is gone before its files.
    root: TempDir,
}

impl TestingServer {
    /// Starts a server with the default [`ServerOptions`] and waits until it accepts sessions.
    ///
    /// # Errors
    /// [`Error::ZooKeeperNotFound`] / [`Error::JavaNotFound`] with the install command when the
    /// server is not installed; [`Error::Exited`] or [`Error::StartTimeout`] with the server log
    /// when it does not come up.
    ///
    /// # Cancel safety
    /// Cancel safe: a server whose start is dropped is killed and its directory removed.
    pub async fn start() -> Result<Self> {
        Self::with_options(ServerOptions::default()).await
    }

    /// Starts a server with the given options. See [`start`](Self::start).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    ///
    /// # Cancel safety
    /// As [`start`](Self::start).
    pub async fn with_options(options: ServerOptions) -> Result<Self> {
        let install = options.installation()?;
        let options = Arc::new(options);
        let root = tempfile::Builder::new()
            .prefix("zkr-testing-")
            .tempdir()
            .map_err(|e| Error::io("creating a temporary directory", e))?;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let member = Member::new(1, false, root.path(), install.clone(), options.clone())?;
            member.write_config(&[])?;
            member.spawn()?;
            match member.wait_serving(options.start_timeout).await {
                Ok(()) => {
                    tracing::info!(port = member.client_port, "TestingServer serving");
                    return Ok(TestingServer { member, options, root });
                }
                Err(Error::Exited { .. }) if attempt < 3 && member.lost_port_race() => {
                    member.reset_log();
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The connect string, `127.0.0.1:PORT`.
    pub fn connect_string(&self) -> String {
        self.member.address()
    }

    /// The TLS client address (`127.0.0.1:<secureClientPort>`) of a server started with
    /// [`ServerOptions::secure_client`]; `None` otherwise.
    pub fn secure_connect_string(&self) -> Option<String> {
        self.member.secure_port.map(|port| format!("127.0.0.1:{port}"))
    }

    /// The server release this server runs.
    pub fn release(&self) -> &crate::Release {
        self.member.release()
    }

    /// The client port.
    pub fn port(&self) -> u16 {
        self.member.client_port
    }

    /// The server's data directory (snapshots and transaction logs).
    pub fn data_dir(&self) -> &Path {
        self.member.data_dir()
    }

    /// The server's log file.
    pub fn log_path(&self) -> &Path {
        self.member.log_path()
    }

    /// The root temporary directory (removed on drop).
    pub fn root_dir(&self) -> &Path {
        self.root.path()
    }

    /// The options the server runs with.
    pub fn options(&self) -> &ServerOptions {
        &self.options
    }

    /// Is the JVM running?
    pub fn is_running(&self) -> bool {
        self.member.is_running()
    }

    /// Stops the server abruptly (`SIGKILL`, as a crash). The data stays; with `forceSync=yes`
    /// every acknowledged write is on disk. Idempotent.
    ///
    /// # Errors
    /// None today; the `Result` leaves room for a graceful stop.
    pub fn stop(&self) -> Result<()> {
        self.member.kill();
        Ok(())
    }

    /// Starts the server again on the same port with the same data, and waits until it serves.
    /// A running server is stopped first.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    ///
    /// # Cancel safety
    /// If dropped, the server may be left running or stopped; [`is_running`](Self::is_running)
    /// tells which.
    pub async fn restart(&self) -> Result<()> {
        self.member.kill();
        self.member.spawn()?;
        self.member.wait_serving(self.options.start_timeout).await
    }

    /// Starts the server again on the same port with none of its data, as after a lost disk:
    /// a client that saw the old data refuses it for its older zxid until its session is given
    /// up. A running server is stopped first.
    ///
    /// # Errors
    /// [`Error::Io`] when the data cannot be removed, else as [`start`](Self::start).
    ///
    /// # Cancel safety
    /// As [`restart`](Self::restart).
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> zkr_testing::Result<()> {
    /// let server = zkr_testing::TestingServer::start().await?;
    /// server.restart_without_data().await?;
    /// # Ok(()) }
    /// ```
    pub async fn restart_without_data(&self) -> Result<()> {
        self.member.kill();
        let snapshots = self.member.data_dir().join("version-2");
        if snapshots.exists() {
            std::fs::remove_dir_all(&snapshots)
                .map_err(|e| Error::io(format!("removing {}", snapshots.display()), e))?;
        }
        self.member.spawn()?;
        self.member.wait_serving(self.options.start_timeout).await
    }

    /// Freezes the server (`SIGSTOP`): connections stay open but nothing is answered, like a
    /// long GC pause.
    ///
    /// # Errors
    /// [`Error::NotRunning`] or [`Error::Signal`].
    pub fn pause(&self) -> Result<()> {
        self.member.signal(Signal::SIGSTOP)
    }

    /// Resumes a paused server (`SIGCONT`).
    ///
    /// # Errors
    /// [`Error::NotRunning`] or [`Error::Signal`].
    pub fn resume(&self) -> Result<()> {
        self.member.signal(Signal::SIGCONT)
    }

    /// Sends a four-letter command (`srvr`, `mntr`, `cons`, ...) and returns the reply.
    ///
    /// # Errors
    /// [`Error::Io`] when the server does not answer.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn four_letter_word(&self, command: &str) -> Result<String> {
        four_letter_word(&self.connect_string(), command).await
    }
}

static SHARED: tokio::sync::OnceCell<TestingServer> = tokio::sync::OnceCell::const_new();

/// A server shared by every test of this process, started on first use.
///
/// Tests that share it must each use their own root path. It is never dropped; the orphan guard
/// kills it and removes its directory when the test binary exits. Tests that stop, pause or
/// restart a server must start their own instead.
///
/// # Errors
/// As [`TestingServer::start`].
///
/// # Cancel safety
/// Cancel safe: another caller will start it.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// let server = zkr_testing::shared_server().await?;
/// println!("{}", server.connect_string());
/// # Ok(()) }
/// ```
pub async fn shared_server() -> Result<&'static TestingServer> {
    SHARED.get_or_try_init(TestingServer::start).await
}

/// The ZooKeeper named by `ZK_CONNECT`, or else a new embedded [`TestingServer`], which lives
/// as long as the returned handle: what examples and demos use to run anywhere.
///
/// # Errors
/// As [`TestingServer::start`].
///
/// # Cancel safety
/// As [`TestingServer::start`].
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// let (_server, connect_string) = zkr_testing::env_or_embedded().await?;
/// println!("ZooKeeper at {connect_string}");
/// # Ok(()) }
/// ```
pub async fn env_or_embedded() -> Result<(Option<TestingServer>, String)> {
    match std::env::var("ZK_CONNECT") {
        Ok(cs) if !cs.trim().is_empty() => Ok((None, cs)),
        _ => {
            let server = TestingServer::start().await?;
            let cs = server.connect_string();
            Ok((Some(server), cs))
        }
    }
}
