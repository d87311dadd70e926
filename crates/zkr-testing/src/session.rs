//! Forcing a real, server-side session expiry.
//!
//! The classic way (Curator's `KillSession`, before it became a client-side injection) is to
//! attach a second client to the victim's session id and password and close it: the server ends
//! the session exactly as on a timeout, deletes its ephemeral nodes, and the victim's next
//! reconnect is answered "expired". `zookeeper-client` does not expose a session's password, but
//! the server derives it deterministically from the session id
//! (`ZooKeeperServer.generatePasswd`: `new java.util.Random(id ^ 0xB3415C00L).nextBytes(16)`), so
//! the intruder here is a minimal jute client that sends a `ConnectRequest` for the victim's
//! session followed by `CloseSession`.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zookeeper_client::{Client, SessionState};

use crate::error::{Error, Result};
use crate::timing::Timing;

/// `ZooKeeperServer.superSecret`.
const SUPER_SECRET: i64 = 0xB341_5C00;
/// `OpCode.closeSession`.
const OP_CLOSE_SESSION: i32 = -11;

/// The password the server issued for `session_id`.
pub(crate) fn session_password(session_id: i64) -> [u8; 16] {
    let mut random = JavaRandom::new(session_id ^ SUPER_SECRET);
    let mut password = [0u8; 16];
    random.next_bytes(&mut password);
    password
}

/// `java.util.Random`, exactly (a 48-bit linear congruential generator).
struct JavaRandom {
    seed: i64,
}

impl JavaRandom {
    const MULTIPLIER: i64 = 0x5_DEEC_E66D;
    const MASK: i64 = (1 << 48) - 1;

    fn new(seed: i64) -> Self {
        JavaRandom { seed: (seed ^ Self::MULTIPLIER) & Self::MASK }
    }

    fn next(&mut self, bits: u32) -> i32 {
        self.seed = (self.seed.wrapping_mul(Self::MULTIPLIER).wrapping_add(0xB)) & Self::MASK;
        (self.seed >> (48 - bits)) as i32
    }

    fn next_bytes(&mut self, bytes: &mut [u8]) {
        let mut i = 0;
        while i < bytes.len() {
            let mut rnd = self.next(32);
            let n = (bytes.len() - i).min(4);
            for _ in 0..n {
                bytes[i] = rnd as u8;
                i += 1;
                rnd >>= 8;
            }
        }
    }
}

/// What one intruder attempt achieved.
#[derive(Debug, PartialEq, Eq)]
enum Attempt {
    /// The server confirmed `CloseSession`.
    Closed,
    /// The server refused to attach: the session no longer exists.
    AlreadyGone,
    /// The victim reconnected first and took the session back (the server drops the older
    /// connection of a session); try again.
    Raced,
}

/// Connects to `address` as session `session_id` and closes that session on the server. The
/// `CloseSession` request is pipelined behind the `ConnectRequest` so that the victim, which the
/// server disconnects when the intruder attaches, has the smallest window to take it back.
async fn close_session_on_server(
    address: &str,
    session_id: i64,
    timeout: Duration,
) -> std::io::Result<Attempt> {
    let mut stream = TcpStream::connect(address).await?;
    let password = session_password(session_id);
    let mut connect = Vec::with_capacity(64);
    connect.extend_from_slice(&0i32.to_be_bytes()); // protocolVersion
    connect.extend_from_slice(&0i64.to_be_bytes()); // lastZxidSeen
    connect.extend_from_slice(&(timeout.as_millis() as i32).to_be_bytes());
    connect.extend_from_slice(&session_id.to_be_bytes());
    connect.extend_from_slice(&(password.len() as i32).to_be_bytes());
    connect.extend_from_slice(&password);
    connect.push(0); // readOnly = false
    let mut close = Vec::with_capacity(8);
    close.extend_from_slice(&1i32.to_be_bytes()); // xid
    close.extend_from_slice(&OP_CLOSE_SESSION.to_be_bytes());
    let mut both = frame(&connect);
    both.extend_from_slice(&frame(&close));
    stream.write_all(&both).await?;
    let Ok(reply) = read_frame(&mut stream).await else { return Ok(Attempt::Raced) };
    // ConnectResponse: protocolVersion(4) timeOut(4) sessionId(8) passwd ...
    if reply.len() < 16 {
        return Err(std::io::Error::other("short ConnectResponse"));
    }
    let negotiated = i32::from_be_bytes(reply[4..8].try_into().expect("4 bytes"));
    if negotiated <= 0 {
        return Ok(Attempt::AlreadyGone);
    }
    // ReplyHeader: xid(4) zxid(8) err(4).
    match read_frame(&mut stream).await {
        Ok(header) if header.len() >= 16 && header[0..4] == 1i32.to_be_bytes() => {
            let err = i32::from_be_bytes(header[12..16].try_into().expect("4 bytes"));
            tracing::debug!(err, "the intruder's CloseSession answered");
            Ok(if err == 0 { Attempt::Closed } else { Attempt::AlreadyGone })
        }
        _ => Ok(Attempt::Raced),
    }
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(body.len() + 4);
    frame.extend_from_slice(&(body.len() as i32).to_be_bytes());
    frame.extend_from_slice(body);
    frame
}

async fn read_frame(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let len = stream.read_i32().await?;
    if !(0..=1 << 20).contains(&len) {
        return Err(std::io::Error::other("bad frame length"));
    }
    let mut body = vec![0u8; len as usize];
    stream.read_exact(&mut body).await?;
    Ok(body)
}

/// Expires session `session_id` (of any process) on the server at `connect_string`, as
/// [`expire_session`] does, without a client of that session at hand: for sessions of child
/// processes, which print their session id. Returns once the server has closed it.
///
/// # Errors
/// [`Error::Io`] when no server could be reached, or the session's owner kept taking it back.
///
/// # Cancel safety
/// Cancel safe, but the session may or may not have been closed when the future is dropped.
///
/// # Examples
///
/// ```no_run
/// # async fn f(connect_string: &str) -> Result<(), Box<dyn std::error::Error>> {
/// zkr_testing::expire_session_id(0x1000a2b3c4d0000, std::time::Duration::from_secs(4), connect_string).await?;
/// # Ok(()) }
/// ```
pub async fn expire_session_id(
    session_id: i64,
    session_timeout: Duration,
    connect_string: &str,
) -> Result<()> {
    tracing::debug!(session = format!("{session_id:#x}"), "expiring session by id");
    close_session(session_id, session_timeout, connect_string, || false).await
}

async fn close_session(
    session_id: i64,
    session_timeout: Duration,
    connect_string: &str,
    gone: impl Fn() -> bool,
) -> Result<()> {
    // Schemes first: their `//` is not a chroot.
    let plain = connect_string.replace("tcp://", "");
    let hosts: Vec<&str> = plain
        .split('/')
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .collect();
    let bound = Timing::from_env().wait();
    let deadline = tokio::time::Instant::now() + bound;
    let mut last_error = None;
    'attempts: loop {
        if gone() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            let source = last_error
                .unwrap_or_else(|| std::io::Error::other("the client kept taking its session back"));
            return Err(Error::io(
                format!("closing session {session_id:#x} through {connect_string}"),
                source,
            ));
        }
        for host in &hosts {
            let attempt = tokio::time::timeout(
                Duration::from_secs(5),
                close_session_on_server(host, session_id, session_timeout),
            )
            .await
            .unwrap_or_else(|_| {
                Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer within 5 s"))
            });
            tracing::debug!(session = format!("{session_id:#x}"), host, ?attempt, "intruder attempt");
            match attempt {
                Ok(Attempt::Closed | Attempt::AlreadyGone) => break 'attempts,
                Ok(Attempt::Raced) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue 'attempts;
                }
                Err(e) => last_error = Some(e),
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Expires `client`'s session on the server and returns once `client` has seen
/// [`SessionState::Expired`].
///
/// The session is closed on the ensemble by a second connection that attaches to it (see the
/// module docs), so its ephemeral nodes are deleted and the client learns of the expiry from the
/// server, as after a real timeout: typically `Disconnected` (the server drops the old connection
/// when the intruder attaches) and then `Expired`. `connect_string` must reach the ensemble the
/// client uses; a chroot suffix is ignored. Every listed server is tried in turn.
///
/// # Errors
/// [`Error::Io`] when no server accepted the intruder (for example the session is already
/// gone), [`Error::Timeout`] when `client` does not see the expiry within [`Timing::wait`].
///
/// # Cancel safety
/// Cancel safe, but the session may or may not have been closed when the future is dropped.
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let server = zkr_testing::TestingServer::start().await?;
/// let client = zkr_connection::zookeeper_client::Client::connect(&server.connect_string()).await?;
/// zkr_testing::expire_session(&client, &server.connect_string()).await?;
/// assert_eq!(client.state(), zkr_connection::zookeeper_client::SessionState::Expired);
/// # Ok(()) }
/// ```
pub async fn expire_session(client: &Client, connect_string: &str) -> Result<()> {
    let mut watcher = client.state_watcher();
    if watcher.state() == SessionState::Expired {
        return Ok(());
    }
    tracing::debug!(session = %client.session_id(), "expiring session");
    let session_id = client.session_id().0;
    close_session(session_id, client.session_timeout(), connect_string, || {
        client.state() == SessionState::Expired
    })
    .await?;
    let bound = Timing::from_env().wait();
    let expired = async {
        loop {
            if watcher.changed().await == SessionState::Expired {
                return;
            }
        }
    };
    let waited = tokio::time::timeout(bound, async {
        tokio::pin!(expired);
        // Not told within two session timeouts: a handle left serving a closed session.
        if tokio::time::timeout(client.session_timeout() * 2, &mut expired).await.is_err() {
            let answer = probe_session(client).await;
            tracing::warn!(session = %client.session_id(), ?answer, "the handle outlived its closed session; a write told it");
            expired.await;
        }
    })
    .await;
    waited.map_err(|_| Error::Timeout { timeout: bound, what: "the client to see its session expire" })
}

/// Sends on `client`'s session a write that changes nothing (`setData` of
/// `/zkr-testing-session-probe` at a version no node has), which only the ensemble's leader
/// answers: `NoNode` (or `BadVersion`, should the node exist) while the session lives,
/// `SessionExpired` once it is closed, which ends the handle's session
/// ([`SessionState::Expired`]). Returns that answer.
///
/// For a handle the server it is connected to left serving a closed session: seen about once
/// in 1,000 expiries by [`expire_session_id`] on a 3-server 3.9.5 ensemble, when the victim
/// reconnected while its session was being closed. That server went on answering the handle's
/// reads, `sync`s, watches and pings, refused its writes with `SessionExpired` and never
/// disconnected it, so the handle (and a manager above it) said connected on a dead session
/// until its first write. A second connect request for the session does not make that server
/// drop the connection (tried).
///
/// # Errors
/// `SessionExpired` for a closed session; any other answer but `NoNode` and `BadVersion` as the
/// client gave it (`ConnectionLoss` while disconnected).
///
/// # Cancel safety
/// Cancel safe: the write changes nothing.
///
/// # Examples
///
/// ```no_run
/// # async fn f(client: zkr_connection::zookeeper_client::Client) {
/// if zkr_testing::probe_session(&client).await == Err(zkr_connection::zookeeper_client::Error::SessionExpired) {
///     println!("the session was closed");
/// }
/// # }
/// ```
pub async fn probe_session(client: &Client) -> std::result::Result<(), zookeeper_client::Error> {
    // A node's version counts its writes from 0: none reaches i32::MAX, so nothing is written
    // even where the node exists.
    match client.set_data("/zkr-testing-session-probe", b"", Some(i32::MAX)).await {
        Ok(_) | Err(zookeeper_client::Error::NoNode | zookeeper_client::Error::BadVersion) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_random_matches_the_jdk() {
        // new java.util.Random(42).nextInt() == -1170105035, then 234785527.
        let mut r = JavaRandom::new(42);
        assert_eq!(r.next(32), -1_170_105_035);
        assert_eq!(r.next(32), 234_785_527);
    }

    #[test]
    fn next_bytes_takes_the_low_byte_first() {
        // -1170105035 = 0xBA419D35 -> bytes 0x35, 0x9D, 0x41, 0xBA.
        let mut r = JavaRandom::new(42);
        let mut bytes = [0u8; 5];
        r.next_bytes(&mut bytes);
        assert_eq!(&bytes[..4], &[0x35, 0x9D, 0x41, 0xBA]);
    }
}
