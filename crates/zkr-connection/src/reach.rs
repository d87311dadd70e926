//! Why no connection could be made. `zookeeper-client` reports every failed attempt as
//! `NoHosts` or `ConnectionLoss`; a TCP connect of our own to each host names the cause
//! (refused, unreachable, timed out, a name that does not resolve), so that an error can say
//! "127.0.0.1:2181: connection refused" instead of "no available hosts". When the network
//! is fine, a TLS handshake and a Kerberos login step of our own name what failed there.

use std::io::ErrorKind;
use std::time::Duration;

use crate::builder::Config;

/// Why the last connection attempt failed, as a step of our own found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cause {
    /// No host could be reached (`host: reason; host: reason`).
    Network(String),
    /// The TLS handshake failed (`host: reason`).
    #[cfg_attr(not(feature = "tls"), allow(dead_code))]
    Tls(String),
    /// The Kerberos login could not start.
    #[cfg_attr(not(feature = "sasl-gssapi"), allow(dead_code))]
    Sasl(String),
}

/// Why the servers of `connect_string` take no session with `config`'s settings: the network,
/// then TLS, then Kerberos, each step within `timeout`; `None` when none of them fails.
pub(crate) async fn explain(config: &Config, connect_string: &str, timeout: Duration) -> Option<Cause> {
    let _ = config;
    if let Some(reason) = diagnose(connect_string, timeout).await {
        return Some(Cause::Network(reason));
    }
    #[cfg(feature = "tls")]
    if let Some(pem) = &config.tls_ca_pem {
        if let Some(reason) = crate::tls::diagnose(connect_string, pem, timeout).await {
            return Some(Cause::Tls(reason));
        }
    }
    #[cfg(feature = "sasl-gssapi")]
    if let Some(target) = &config.gssapi {
        if let Some(reason) = crate::kerberos::diagnose(connect_string, target).await {
            return Some(Cause::Sasl(reason));
        }
    }
    None
}

/// Connects to every host of `connect_string` at once, each within `timeout`. `None` when one
/// of them accepts (the cause is not the network: a TLS mismatch, a server that is not
/// serving); else every host's reason, as `host: reason; host: reason`.
pub(crate) async fn diagnose(connect_string: &str, timeout: Duration) -> Option<String> {
    let probes = crate::connect_string::hosts(connect_string).into_iter().map(|host| async move {
        let reason = probe(&host, timeout).await.err()?;
        Some(format!("{host}: {reason}"))
    });
    let reasons = futures::future::join_all(probes).await;
    if reasons.is_empty() || reasons.iter().any(Option::is_none) {
        return None;
    }
    Some(reasons.into_iter().flatten().collect::<Vec<_>>().join("; "))
}

async fn probe(host: &str, timeout: Duration) -> Result<(), String> {
    let connecting = async {
        let addresses: Vec<_> = tokio::net::lookup_host(host)
            .await
            .map_err(|e| format!("cannot resolve the name ({e})"))?
            .collect();
        let mut last = String::from("the name resolves to no address");
        for address in addresses {
            match tokio::net::TcpStream::connect(address).await {
                Ok(_) => return Ok(()),
                Err(e) => last = describe(&e),
            }
        }
        Err(last)
    };
    match tokio::time::timeout(timeout, connecting).await {
        Ok(result) => result,
        Err(_) => Err(format!("no answer within {timeout:?} (timed out)")),
    }
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
        let reason = diagnose(&closed, Duration::from_secs(1)).await.unwrap();
        assert!(reason.starts_with(&format!("{closed}: connection refused")), "{reason}");
        assert_eq!(diagnose(&format!("{closed},{open}"), Duration::from_secs(1)).await, None);
        let unresolvable = diagnose("no-such-host.invalid:2181", Duration::from_secs(1)).await.unwrap();
        assert!(unresolvable.contains("cannot resolve"), "{unresolvable}");
    }
}
