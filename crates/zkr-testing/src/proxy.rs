//! [`FaultProxy`]: a loopback TCP proxy that can cut, partition or half-partition connections,
//! and delay them like a network ([`Latency`]).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// A one-way delay the proxy adds to every byte, in each direction: a round trip through it
/// takes `2 * one_way` more (plus up to `2 * jitter`). Bytes stay in order and the delay caps no
/// throughput: a chunk is delivered at its read time plus the delay, whatever else is in flight.
/// Delays are slept on a blocking thread (`std::thread::sleep`), not tokio's millisecond timer,
/// so sub-millisecond delays hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latency {
    /// The delay of every chunk, each way.
    pub one_way: Duration,
    /// Up to this much more, uniformly at random per chunk (never reordering bytes).
    pub jitter: Duration,
}

impl Latency {
    /// A fixed one-way delay: `Latency::one_way(Duration::from_micros(500))` is a 1 ms round
    /// trip.
    pub fn one_way(one_way: Duration) -> Self {
        Latency { one_way, jitter: Duration::ZERO }
    }

    /// A one-way delay that is half of `rtt`.
    pub fn round_trip(rtt: Duration) -> Self {
        Self::one_way(rtt / 2)
    }

    /// With up to `jitter` more per chunk.
    pub fn with_jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    fn sample(&self) -> Duration {
        if self.jitter.is_zero() {
            return self.one_way;
        }
        self.one_way + self.jitter.mul_f64(rand::random::<f64>())
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
/// [`heal`](Self::heal) forwards again. [`set_latency`](Self::set_latency) delays every byte
/// from then on, as a network between the client and the server would.
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
/// let client = zkr_connection::zookeeper_client::Client::connect(&proxy.connect_string()).await?;
/// proxy.cut(); // the client sees Disconnected, then reconnects
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FaultProxy {
    local: SocketAddr,
    mode: watch::Sender<ProxyMode>,
    latency: Arc<Mutex<Latency>>,
    hold_from: Arc<Mutex<Option<i32>>>,
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
        let latency = Arc::new(Mutex::new(Latency::default()));
        let hold_from = Arc::new(Mutex::new(None));
        let link =
            Link { target, mode: mode.clone(), latency: latency.clone(), hold_from: hold_from.clone() };
        let acceptor = tokio::spawn(accept_loop(listener, link, connections.clone()));
        Ok(FaultProxy { local, mode, latency, hold_from, connections, acceptor: acceptor.abort_handle() })
    }

    /// [`start`](Self::start) with a [`Latency`] from the first byte.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn start_with_latency(target: &str, latency: Latency) -> Result<Self> {
        let proxy = Self::start(target).await?;
        proxy.set_latency(latency);
        Ok(proxy)
    }

    /// Delays every chunk read from now on by `latency`, each way (no delay: the default).
    pub fn set_latency(&self, latency: Latency) {
        *self.latency.lock() = latency;
    }

    /// The current [`Latency`].
    pub fn latency(&self) -> Latency {
        *self.latency.lock()
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

    /// Forwards as before until a request of ZooKeeper opcode `opcode` passes (5: `setData`),
    /// then holds replies, that request's first: a fault that lands after the reads before a
    /// write, which [`hold_replies`](Self::hold_replies) would hold too. (A request read in the
    /// same chunk as earlier ones is not seen: the client must wait for its earlier replies.)
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f(proxy: zkr_testing::FaultProxy) {
    /// proxy.hold_replies_from_request(5); // the next setData is applied, its reply held
    /// # }
    /// ```
    pub fn hold_replies_from_request(&self, opcode: i32) {
        *self.hold_from.lock() = Some(opcode);
    }

    /// Forwards both directions again; held bytes flow.
    pub fn heal(&self) {
        *self.hold_from.lock() = None;
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

/// What every connection of a proxy shares: where to, the mode and the delay.
#[derive(Debug, Clone)]
struct Link {
    target: SocketAddr,
    mode: watch::Sender<ProxyMode>,
    latency: Arc<Mutex<Latency>>,
    /// The opcode of the request from which replies are held (`hold_replies_from_request`).
    hold_from: Arc<Mutex<Option<i32>>>,
}

impl Link {
    /// Switches to holding replies when `chunk`, read from the client, starts with a request
    /// of the awaited opcode (a frame: length, xid, opcode, each 4 bytes big-endian).
    fn saw_request(&self, chunk: &[u8]) {
        let mut awaited = self.hold_from.lock();
        let opcode = chunk.get(8..12).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        if awaited.is_some() && opcode == *awaited {
            *awaited = None;
            self.mode.send_replace(ProxyMode::HoldReplies);
        }
    }
}

async fn accept_loop(listener: TcpListener, link: Link, connections: Arc<Mutex<JoinSet<()>>>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let mut set = connections.lock();
        while set.try_join_next().is_some() {}
        set.spawn(carry(client, link.clone()));
    }
}

/// Carries one connection until either side closes or the task is aborted (which drops both
/// sockets with `SO_LINGER=0`, i.e. resets them).
async fn carry(client: TcpStream, link: Link) {
    let mut mode = link.mode.subscribe();
    let _ = socket2::SockRef::from(&client).set_linger(Some(Duration::ZERO));
    // A partitioned proxy does not reach the server either.
    if wait_allowed(&mut mode, true).await.is_err() {
        return;
    }
    let Ok(server) = TcpStream::connect(link.target).await else { return };
    let _ = socket2::SockRef::from(&server).set_linger(Some(Duration::ZERO));
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_read, mut client_write) = tokio::io::split(client);
    let (mut server_read, mut server_write) = tokio::io::split(server);
    let up = pump(&mut client_read, &mut server_write, mode.clone(), &link, true);
    let down = pump(&mut server_read, &mut client_write, mode, &link, false);
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

async fn wait_allowed(mode: &mut watch::Receiver<ProxyMode>, to_server: bool) -> Result<(), ()> {
    mode.wait_for(|m| m.allows(to_server)).await.map(|_| ()).map_err(|_| ())
}

/// Forwards one direction: a reader that stamps each chunk with its delivery time, and a
/// writer that delivers the chunks in order, each at its time, while the mode allows.
async fn pump<R, W>(
    read: &mut R,
    write: &mut W,
    mode: watch::Receiver<ProxyMode>,
    link: &Link,
    to_server: bool,
) where
    R: AsyncReadExt + Unpin,
    W: AsyncWriteExt + Unpin,
{
    let (chunks, mut queued) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let mut read_mode = mode.clone();
    let reader = async move {
        let mut buf = vec![0u8; 64 * 1024];
        let mut last = Instant::now();
        loop {
            if wait_allowed(&mut read_mode, to_server).await.is_err() {
                return;
            }
            let n = match read.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if to_server {
                link.saw_request(&buf[..n]);
            }
            // Never before an earlier chunk: jitter must not reorder bytes.
            last = (Instant::now() + link.latency.lock().sample()).max(last);
            if chunks.send((last, buf[..n].to_vec())).is_err() {
                return;
            }
        }
    };
    let mut write_mode = mode;
    let writer = async move {
        while let Some((at, chunk)) = queued.recv().await {
            let wait = at.saturating_duration_since(Instant::now());
            if !wait.is_zero() && tokio::task::spawn_blocking(move || std::thread::sleep(wait)).await.is_err()
            {
                return;
            }
            if wait_allowed(&mut write_mode, to_server).await.is_err()
                || write.write_all(&chunk).await.is_err()
            {
                return;
            }
        }
    };
    tokio::pin!(writer);
    tokio::select! {
        // What was read before the end is still delivered.
        () = reader => writer.await,
        () = &mut writer => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loopback echo server: what it reads, it writes back.
    async fn echo_server() -> SocketAddr {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let _ = socket.set_nodelay(true);
                tokio::spawn(async move {
                    let (mut r, mut w) = socket.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    }

    /// The sorted round trips of `n` one-byte pings through a proxy with `latency`.
    async fn round_trips(latency: Latency, n: usize) -> Vec<Duration> {
        let proxy = FaultProxy::start_with_latency(&echo_server().await.to_string(), latency).await.unwrap();
        let mut socket = TcpStream::connect(proxy.local_addr()).await.unwrap();
        socket.set_nodelay(true).unwrap();
        let mut byte = [0u8; 1];
        let mut rtts = Vec::with_capacity(n);
        for i in 0..n {
            let start = Instant::now();
            socket.write_all(&[i as u8]).await.unwrap();
            socket.read_exact(&mut byte).await.unwrap();
            rtts.push(start.elapsed());
            assert_eq!(byte[0], i as u8);
        }
        rtts.sort();
        rtts
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_round_trip_takes_twice_the_one_way_delay() {
        for (one_way, slack) in [
            (Duration::from_millis(1), Duration::from_micros(900)),
            (Duration::from_micros(250), Duration::from_micros(600)),
        ] {
            let rtts = round_trips(Latency::one_way(one_way), 40).await;
            // The lower quartile: what the proxy adds, without a busy machine's scheduling delays.
            let (min, quartile) = (rtts[0], rtts[rtts.len() / 4]);
            assert!(min >= 2 * one_way, "{one_way:?} each way: a round trip took {min:?}");
            assert!(
                quartile <= 2 * one_way + slack,
                "{one_way:?} each way: lower-quartile round trip {quartile:?}"
            );
        }
        let plain = round_trips(Latency::default(), 40).await;
        assert!(
            plain[plain.len() / 2] < Duration::from_micros(500),
            "no latency: {:?}",
            plain[plain.len() / 2]
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_delay_caps_no_throughput_and_keeps_bytes_in_order() {
        let one_way = Duration::from_millis(5);
        let latency = Latency::one_way(one_way).with_jitter(Duration::from_millis(2));
        let proxy = FaultProxy::start_with_latency(&echo_server().await.to_string(), latency).await.unwrap();
        let socket = TcpStream::connect(proxy.local_addr()).await.unwrap();
        socket.set_nodelay(true).unwrap();
        let (mut r, mut w) = socket.into_split();
        let sent: Vec<u8> = (0..200u32).flat_map(|i| i.to_be_bytes()).collect();
        let start = Instant::now();
        let writer = {
            let sent = sent.clone();
            tokio::spawn(async move {
                for chunk in sent.chunks(4) {
                    w.write_all(chunk).await.unwrap();
                    tokio::task::yield_now().await;
                }
                w
            })
        };
        let mut got = vec![0u8; sent.len()];
        r.read_exact(&mut got).await.unwrap();
        let elapsed = start.elapsed();
        drop(writer.await.unwrap());
        assert_eq!(got, sent, "bytes out of order");
        // One delay per chunk in sequence would be 200 x 10 ms; in flight together, one round trip.
        assert!(elapsed < Duration::from_millis(500), "200 chunks took {elapsed:?}");
        assert!(elapsed >= 2 * one_way);
    }
}
