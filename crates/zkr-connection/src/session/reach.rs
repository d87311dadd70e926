//! Why no connection could be made. `zookeeper-client` reports every failed attempt as
//! `NoHosts` or `ConnectionLoss`; a TCP connect of our own to each host names the cause
//! (refused, unreachable, timed out, a name that does not resolve), so that an error can say
//! "127.0.0.1:2181: connection refused" instead of "no available hosts". A host that accepts
//! is asked a four-letter word (`srvr`), which every ZooKeeper server answers (if only to say
//! that the word is not allowed), so that a port where something else listens is named as
//! such. When the network is fine, a TLS handshake and a Kerberos login step of our own name
//! what failed there.

use std::io::ErrorKind;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::session::builder::Config;

/// Why the last connection attempt failed, as a step of our own found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cause {
    /// No host could be reached (`host: reason; host: reason`), for a reason that may pass
    /// (a timeout, a name that does not resolve yet, a server that did not answer).
    Network(String),
    /// No ZooKeeper server at any host (`host: reason; host: reason`): each refused the
    /// connection (nothing listens) or answered as something other than ZooKeeper. Nothing
    /// will answer unless a server is started there: a one-shot tool can give up at once
    /// ([`ZkClient::wait_connected_or_refused`](crate::ZkClient::wait_connected_or_refused)).
    NoServer(String),
    /// The TLS handshake failed (`host: reason`).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    Tls(String),
    /// The Kerberos login could not start.
    #[cfg_attr(not(feature = "sasl-gssapi"), allow(dead_code))]
    Sasl(String),
}

/// What the connects of our own found, when no host took them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Every host's reason, as `host: reason; host: reason`.
    pub(crate) reason: String,
    /// Did every host refuse, or answer as something other than ZooKeeper (nothing to wait for)?
    pub(crate) definite: bool,
}

/// Why the servers of `connect_string` take no session with `config`'s settings: the network
/// (and whether ZooKeeper answers there), then TLS, then Kerberos, each step within `timeout`;
/// `None` when none of them fails.
pub(crate) async fn explain(config: &Config, connect_string: &str, timeout: Duration) -> Option<Cause> {
    #[cfg(feature = "tls")]
    let plain = config.tls.is_none() && config.tls_ca_pem.is_none();
    #[cfg(not(feature = "tls"))]
    let plain = true;
    if let Some(found) = find(connect_string, timeout, plain).await {
        return Some(match found.definite {
            true => Cause::NoServer(found.reason),
            false => Cause::Network(found.reason),
        });
    }
    #[cfg(feature = "tls")]
    if let Some(pem) = &config.tls_ca_pem {
        if let Some(reason) = crate::session::tls::diagnose(connect_string, pem, timeout).await {
            return Some(Cause::Tls(reason));
        }
    }
    #[cfg(feature = "sasl-gssapi")]
    if let Some(target) = &config.gssapi {
        if let Some(reason) = crate::session::kerberos::diagnose(connect_string, target).await {
            return Some(Cause::Sasl(reason));
        }
    }
    let _ = config;
    None
}

/// Connects to every host of `connect_string` at once, each within `timeout`; with `ask` (a
/// plain-text port, not TLS) a host that accepts is asked whether it is ZooKeeper. `None`
/// when one host is (or, without `ask`, accepts: the cause is not the network but a TLS
/// mismatch, a server that is not serving); else every host's reason.
pub(crate) async fn find(connect_string: &str, timeout: Duration, ask: bool) -> Option<Found> {
    let probes = crate::session::connect_string::hosts(connect_string).into_iter().map(|host| async move {
        let (reason, definite) = probe(&host, timeout, ask).await.err()?;
        Some((format!("{host}: {reason}"), definite))
    });
    let reasons = futures::future::join_all(probes).await;
    if reasons.is_empty() || reasons.iter().any(Option::is_none) {
        return None;
    }
    let reasons: Vec<(String, bool)> = reasons.into_iter().flatten().collect();
    let definite = reasons.iter().all(|(_, definite)| *definite);
    let reason = reasons.into_iter().map(|(reason, _)| reason).collect::<Vec<_>>().join("; ");
    Some(Found { reason, definite })
}

/// Connects to `host` (and with `ask`, asks it whether it is ZooKeeper): `Ok` when it is (or
/// may be), else the reason and whether it is definite.
async fn probe(host: &str, timeout: Duration, ask: bool) -> Result<(), (String, bool)> {
    let connecting = async {
        let addresses: Vec<_> = tokio::net::lookup_host(host)
            .await
            .map_err(|e| (format!("cannot resolve the name ({e})"), false))?
            .collect();
        let mut last = (String::from("the name resolves to no address"), false);
        for address in addresses {
            match TcpStream::connect(address).await {
                Ok(stream) => return Ok(stream),
                Err(e) => last = (describe(&e), e.kind() == ErrorKind::ConnectionRefused),
            }
        }
        Err(last)
    };
    let stream = match tokio::time::timeout(timeout, connecting).await {
        Ok(result) => result?,
        Err(_) => return Err((format!("no answer within {timeout:?} (timed out)"), false)),
    };
    match ask {
        true => ask_zookeeper(stream, timeout).await,
        false => Ok(()),
    }
}

/// Sends `srvr` and reads the answer (within `timeout`): every ZooKeeper server answers it,
/// with its status, "not in the whitelist" or "not currently serving requests".
async fn ask_zookeeper(mut stream: TcpStream, timeout: Duration) -> Result<(), (String, bool)> {
    let mut answer = Vec::new();
    let asking = async {
        stream.write_all(b"srvr").await?;
        let mut buf = [0u8; 512];
        while answer.len() < 1024 {
            match stream.read(&mut buf).await? {
                0 => break,
                n => answer.extend_from_slice(&buf[..n]),
            }
        }
        Ok::<(), std::io::Error>(())
    };
    let ended = tokio::time::timeout(timeout, asking).await;
    judge(&answer, ended.is_err(), timeout)
}

/// What an answer to `srvr` says of the host (`timed_out`: it stopped answering in time).
fn judge(answer: &[u8], timed_out: bool, timeout: Duration) -> Result<(), (String, bool)> {
    let text = String::from_utf8_lossy(answer).to_ascii_lowercase();
    if ["zookeeper", "whitelist", "not executed", "not currently serving"].iter().any(|w| text.contains(w)) {
        return Ok(());
    }
    if answer.is_empty() {
        let reason = match timed_out {
            true => format!(
                "accepted the connection but answered no ZooKeeper four-letter word within {timeout:?}"
            ),
            false => "accepted the connection, then closed it without a word (as a ZooKeeper server at its \
                      maxClientCnxns does)"
                .to_owned(),
        };
        return Err((reason, false));
    }
    if answer.starts_with(&[0x15, 0x03]) {
        return Err(("it speaks TLS (a secureClientPort): connect with TLS (ZkClientBuilder::tls_trusting, zkr --tls-ca)".to_owned(), true));
    }
    let first_line = String::from_utf8_lossy(answer)
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(60)
        .collect::<String>();
    Err((format!("not a ZooKeeper server: it answered {first_line:?} to a four-letter word"), true))
}

fn describe(error: &std::io::Error) -> String {
    match error.kind() {
        ErrorKind::ConnectionRefused => "connection refused (nothing listens there)".into(),
        ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable => format!("unreachable ({error})"),
        ErrorKind::TimedOut => "timed out".into(),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_closed_port_is_named_refused_and_an_open_one_is_no_diagnosis() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let open = listener.local_addr().unwrap().to_string();
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().to_string()
        };
        let reason = find(&closed, Duration::from_secs(1), false).await.unwrap().reason;
        assert!(reason.starts_with(&format!("{closed}: connection refused")), "{reason}");
        assert_eq!(find(&format!("{closed},{open}"), Duration::from_secs(1), false).await, None);
        let unresolvable =
            find("no-such-host.invalid:2181", Duration::from_secs(1), false).await.unwrap().reason;
        assert!(unresolvable.contains("cannot resolve"), "{unresolvable}");
    }

    /// A port that refuses, one where something else than ZooKeeper answers, one that accepts
    /// and says nothing, and a real server (issue 44 item 8).
    #[tokio::test]
    async fn what_listens_is_asked_whether_it_is_zookeeper() {
        let second = Duration::from_secs(1);
        let http = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let web = http.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt as _;
            while let Ok((mut stream, _)) = http.accept().await {
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").await;
            }
        });
        let found = find(&web, second, true).await.expect("not ZooKeeper");
        assert!(found.definite, "{found:?}");
        assert!(
            found.reason.contains("not a ZooKeeper server") && found.reason.contains("HTTP/1.1 400"),
            "{found:?}"
        );

        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
        let found = find(&format!("{closed},{web}"), second, true).await.expect("no ZooKeeper");
        assert!(found.definite && found.reason.contains("connection refused"), "{found:?}");

        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let quiet = silent.local_addr().unwrap().to_string();
        let found = find(&quiet, Duration::from_millis(300), true).await.expect("no answer");
        assert!(!found.definite, "silence may be a busy server: {found:?}");

        let server = zkr_testing::shared_server().await.unwrap();
        assert_eq!(find(&format!("{closed},{}", server.connect_string()), second, true).await, None);
        drop(silent);
    }
}
