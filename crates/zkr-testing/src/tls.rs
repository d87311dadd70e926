//! [`TestCertificates`]: a throw-away certificate authority and a server certificate signed by
//! it, for servers started with a secure client port ([`ServerOptions::secure_client`]).
//!
//! [`ServerOptions::secure_client`]: crate::ServerOptions::secure_client

#[cfg(feature = "tls")]
use std::net::IpAddr;
use std::path::{Path, PathBuf};

#[cfg(feature = "tls")]
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose, SanType};

#[cfg(feature = "tls")]
use crate::error::{Error, Result};

/// A certificate authority made for one test, and a server and a client certificate it signed,
/// written as PEM files that ZooKeeper reads (`ssl.keyStore.type=PEM`).
///
/// The server certificate names what `names` says: IP addresses become IP entries, anything
/// else DNS entries. [`TestCertificates::for_loopback`] names `127.0.0.1` and `localhost`;
/// give other names to provoke a hostname mismatch. Making them needs the `tls` feature (on
/// by default; off, zkr-testing builds without `rcgen` and `ring`).
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> zkr_testing::Result<()> {
/// use zkr_testing::{ServerOptions, TestCertificates, TestingServer};
///
/// let dir = tempfile::tempdir().unwrap();
/// let certs = TestCertificates::for_loopback(dir.path())?;
/// let server = TestingServer::with_options(ServerOptions::default().secure_client(&certs)).await?;
/// let tls_address = server.secure_connect_string().expect("a secure port");
/// let trust = certs.ca_pem(); // hand this to the client's TLS options
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TestCertificates {
    ca_pem: String,
    keystore: PathBuf,
    truststore: PathBuf,
    client_certificate: PathBuf,
    client_key: PathBuf,
}

impl TestCertificates {
    /// A new authority and a server certificate for `127.0.0.1` and `localhost`, written under
    /// `dir`.
    ///
    /// # Errors
    /// As [`generate`](Self::generate).
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn for_loopback(dir: &Path) -> Result<Self> {
        Self::generate(dir, &["127.0.0.1", "localhost"])
    }

    /// A new authority and a server certificate for `names`, written under `dir` as
    /// `ca.pem`, `server-keystore.pem` (certificate, authority, private key) and
    /// `server-truststore.pem` (the authority), with a client certificate (`client.pem`,
    /// `client-key.pem`).
    ///
    /// # Errors
    /// [`Error::Io`] when generating or writing fails.
    #[cfg(feature = "tls")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tls")))]
    pub fn generate(dir: &Path, names: &[&str]) -> Result<Self> {
        let failed = |what: &str, e: rcgen::Error| Error::io(what.to_owned(), std::io::Error::other(e));
        let mut ca_params =
            CertificateParams::new(Vec::<String>::new()).map_err(|e| failed("CA parameters", e))?;
        // A name of its own: another test's authority must be a stranger, not a namesake.
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        ca_params.distinguished_name.push(DnType::CommonName, format!("zkr-testing CA {nanos:x}"));
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().map_err(|e| failed("the CA key", e))?;
        let ca_cert = ca_params.self_signed(&ca_key).map_err(|e| failed("the CA certificate", e))?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(|e| failed("server parameters", e))?;
        params.distinguished_name.push(DnType::CommonName, names.first().copied().unwrap_or("zookeeper"));
        for name in names {
            let san = match name.parse::<IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*name).try_into().map_err(|e| failed("a DNS name", e))?),
            };
            params.subject_alt_names.push(san);
        }
        let key = KeyPair::generate().map_err(|e| failed("the server key", e))?;
        let cert = params.signed_by(&key, &issuer).map_err(|e| failed("the server certificate", e))?;

        let mut client_params =
            CertificateParams::new(Vec::<String>::new()).map_err(|e| failed("client parameters", e))?;
        client_params.distinguished_name.push(DnType::CommonName, "zkr-testing client");
        let client_key = KeyPair::generate().map_err(|e| failed("the client key", e))?;
        let client_cert =
            client_params.signed_by(&client_key, &issuer).map_err(|e| failed("the client certificate", e))?;

        let ca_pem = ca_cert.pem();
        let write = |name: &str, contents: String| -> Result<PathBuf> {
            let path = dir.join(name);
            std::fs::write(&path, contents)
                .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
            Ok(path)
        };
        write("ca.pem", ca_pem.clone())?;
        let keystore =
            write("server-keystore.pem", format!("{}{}{}", cert.pem(), ca_pem, key.serialize_pem()))?;
        let truststore = write("server-truststore.pem", ca_pem.clone())?;
        let client_certificate = write("client.pem", client_cert.pem())?;
        let client_key = write("client-key.pem", client_key.serialize_pem())?;
        Ok(TestCertificates { ca_pem, keystore, truststore, client_certificate, client_key })
    }

    /// The authority's certificate (PEM): what a client must trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The server's key store: its certificate, the authority's, and its private key (PEM).
    pub fn keystore(&self) -> &Path {
        &self.keystore
    }

    /// The server's trust store: the authority (PEM).
    pub fn truststore(&self) -> &Path {
        &self.truststore
    }

    /// A client certificate the authority signed (PEM file `client.pem`), for servers that
    /// ask clients for one ([`ServerOptions::require_client_certificates`]).
    ///
    /// [`ServerOptions::require_client_certificates`]: crate::ServerOptions::require_client_certificates
    pub fn client_certificate(&self) -> &Path {
        &self.client_certificate
    }

    /// The private key of [`client_certificate`](Self::client_certificate) (PEM file
    /// `client-key.pem`).
    pub fn client_key(&self) -> &Path {
        &self.client_key
    }
}
