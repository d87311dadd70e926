//! [`FaultProxy`]: a loopback TCP proxy that can cut, partition or half-partition connections.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};

use crate::error::{Error, Result};

/// What the proxy does with bytes right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyMode {
    /// Forward both directions.
    Forward,
    /// Forward nothing; sockets stay open (a network partition). Bytes wait in the socket
    /// buffers and flow again after [`FaultProxy::heal`], as TCP retransmission would deliver them.
    Blackhole,
    /// Forward client-to-server bytes but hold server-to-client ones: requests reach the
    /// server and its replies are held (combine with [`FaultProxy::cut`] to lose a reply).
    HoldReplies,
}

impl ProxyMode {
    fn allows(self, to_server: bool) -> bool {
        match self {
            ProxyMode::Forward => true,
            ProxyMode::Blackhole => false,
            ProxyMode::HoldReplies => to_server,
        }
    }
}

/// A TCP proxy on a free loopback port in front of one server, for injecting network faults
/// without stopping servers.
///
/// Clients connect to [`connect_string`](Self::connect_string) instead of the server. Then:
/// [`cut`](Self::cut) resets every live connection (the client sees a disconnect and reconnects
/// through the proxy); [`blackhole`](Self::blackhole) stops all forwarding while keeping the
/// sockets open (a partition: the client's connection times out, and a long enough one expires
/// its session); [`hold_replies`](Self::hold_replies) lets requests through but holds replies;
/// [`heal`](Self::heal) forwards again.
///
/// Dropping the proxy closes its port and every connection through it.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use zkr_testing::{FaultProxy, TestingServer};
///
/// let server = TestingServer::start().await?;
/// let proxy = FaultProxy::start(&server.connect_string()).await?;
/// let client = zookeeper_client::Client::connect(&proxy.connect_string()).await?;
/// proxy.cut(); // the client sees Disconnected, then reconnects
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FaultProxy {
    local: SocketAddr,
    mode: watch::Sender<ProxyMode>,
    connections: Arc<Mutex<JoinSet<()>>>,
    acceptor: AbortHandle,
}

impl FaultProxy {
    /// Starts a proxy to `target` (`host:port`) on a free loopback port. Must be called inside
    /// a tokio runtime; the proxy's tasks run on it.
    ///
    /// # Errors
    /// [`Error::Io`] when no port can be bound or `target` does not parse.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn start(target: &str) -> Result<Self> {
        let target: SocketAddr = tokio::net::lookup_host(target)
            .await
            .map_err(|e| Error::io(format!("resolving {target}"), e))?
            .next()
            .ok_or_else(|| Error::io(format!("resolving {target}"), std::io::Error::other("no address")))?;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| Error::io("binding the proxy port", e))?;
        let local = listener.local_addr().map_err(|e| Error::io("reading the proxy port", e))?;
        let (mode, _) = watch::channel(ProxyMode::Forward);
        let connections = Arc::new(Mutex::new(JoinSet::new()));
        let acceptor = tokio::spawn(accept_loop(listener, target, mode.clone(), connections.clone()));
        Ok(FaultProxy { local, mode, connections, acceptor: acceptor.abort_handle() })
    }

    /// `127.0.0.1:PORT` of the proxy.
    pub fn connect_string(&self) -> String {
        self.local.to_string()
    }

    /// The proxy's local address.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// The current mode.
    pub fn mode(&self) -> ProxyMode {
        *self.mode.borrow()
    }

    /// Resets every live connection (RST to both ends). New connections are accepted as before.
    pub fn cut(&self) {
        let mut set = self.connections.lock();
        set.abort_all();
        // Reap what is finished so the set does not grow without bound.
        while set.try_join_next().is_some() {}
    }

    /// Stops forwarding in both directions, keeping sockets open (a partition).
    pub fn blackhole(&self) {
        self.mode.send_replace(ProxyMode::Blackhole);
    }

    /// Forwards requests but holds replies.
    pub fn hold_replies(&self) {
        self.mode.send_replace(ProxyMode::HoldReplies);
    }

    /// Forwards both directions again; held bytes flow.
    pub fn heal(&self) {
        self.mode.send_replace(ProxyMode::Forward);
    }

    /// Number of connections the proxy currently carries.
    pub fn connection_count(&self) -> usize {
        let mut set = self.connections.lock();
        while set.try_join_next().is_some() {}
        set.len()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        self.cut();
    }
}

async fn accept_loop(
    listener: TcpListener,
    target: SocketAddr,
    mode: watch::Sender<ProxyMode>,
    connections: Arc<Mutex<JoinSet<()>>>,
) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let mode = mode.subscribe();
        let mut set = connections.lock();
        while set.try_join_next().is_some() {}
        set.spawn(carry(client, target, mode));
    }
}

/// Carries one connection until either side closes or the task is aborted (which drops both
/// sockets with `SO_LINGER=0`, i.e. resets them).
async fn carry(client: TcpStream, target: SocketAddr, mut mode: watch::Receiver<ProxyMode>) {
    let _ = socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO));
    // A partitioned proxy does not reach the server either.
    if wait_allowed(&mut mode, true).await.is_err() {
        return;
    }
    let Ok(server) = TcpStream::connect(target).await else { return };
    let _ = socket2::SockRef::from(&server).set_linger(Some(Duration::ZERO));
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut server_read, mut server_write) = tokio::io::split(server);
    let up = pump(&mut client_read, &mut server_write, mode.clone(), true);
    let down = pump(&mut server_read, &mut client_write, mode, false);
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

async fn wait_allowed(mode: &mut watch::Receiver<ProxyMode>, to_server: bool) -> Result<(), ()> {
    mode.wait_for(|m| m.allows(to_server)).await.map(|_| ()).map_err(|_| ())
}

async fn pump<R, W>(read: &mut R, write: &mut W, mut mode: watch::Receiver<ProxyMode>, to_server: bool)
where
    R: AsyncReadExt + Unpin,
    W: AsyncWriteExt + Unpin,
{
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        if wait_allowed(&mut mode, to_server).await.is_err() {
            return;
        }
        let n = match read.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if wait_allowed(&mut mode, to_server).await.is_err() {
            return;
        }
        if write.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
