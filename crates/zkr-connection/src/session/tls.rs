//! Why a TLS connection failed. `zookeeper-client` reports a host it cannot reach over TLS as
//! one more unavailable host, so when the first connection fails the builder repeats the
//! handshake here, with the same trust anchors and the same crypto provider, to name the cause
//! (an untrusted certificate, a name mismatch, a peer that does not speak TLS).

use std::net::{TcpStream, ToSocketAddrs as _};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};

/// Handshakes with every host of `connect_string`, trusting `ca_pem`; the first failure, as
/// `host: reason`, or `None` when every handshake works (the problem is elsewhere).
pub(crate) async fn diagnose(connect_string: &str, ca_pem: &str, timeout: Duration) -> Option<String> {
    let hosts = crate::session::connect_string::hosts(connect_string);
    let ca_pem = ca_pem.to_owned();
    tokio::task::spawn_blocking(move || {
        hosts.iter().find_map(|host| handshake(host, &ca_pem, timeout).err().map(|e| format!("{host}: {e}")))
    })
    .await
    .ok()
    .flatten()
}

fn handshake(host: &str, ca_pem: &str, timeout: Duration) -> Result<(), String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let cert = cert.map_err(|e| format!("the trusted CA PEM is unreadable: {e}"))?;
        roots.add(cert).map_err(|e| format!("a trusted CA certificate is unusable: {e}"))?;
    }
    let config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    let (name, _) = host.rsplit_once(':').ok_or_else(|| "no port".to_owned())?;
    let name = name.trim_start_matches('[').trim_end_matches(']');
    let server_name = ServerName::try_from(name.to_owned()).map_err(|e| format!("not a host name: {e}"))?;
    let address = host
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve: {e}"))?
        .next()
        .ok_or_else(|| "no address".to_owned())?;
    let mut tcp =
        TcpStream::connect_timeout(&address, timeout).map_err(|e| format!("cannot connect: {e}"))?;
    tcp.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    tcp.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
    let mut connection =
        rustls::ClientConnection::new(Arc::new(config), server_name).map_err(|e| e.to_string())?;
    while connection.is_handshaking() {
        match connection.complete_io(&mut tcp) {
            Ok((0, 0)) => return Err("TLS handshake failed: the peer closed the connection".to_owned()),
            Ok(_) => {}
            Err(e) => return Err(format!("TLS handshake failed: {e}")),
        }
    }
    Ok(())
}
