//! TLS against real servers with a secure client port (`zkr_testing::TestCertificates`): a
//! trusted certificate works end to end (a lock and a config value over TLS); an untrusted
//! authority, a hostname mismatch, and a TLS client pointed at a plain port all fail with a
//! clear error, and never fall back to plain text. A server that asks for client certificates
//! (mutual TLS) knows us by ours and refuses a client without one.

use std::time::Duration;

use zkr_connection::{Error, ZkClient};
use zkr_recipes::config::{ConfigPublisher, Utf8};
use zkr_recipes::locks::InterProcessMutex;
use zkr_testing::{ServerOptions, TestCertificates, TestingServer};

async fn secure_server(names: &[&str]) -> (TestingServer, TestCertificates, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let certs = TestCertificates::generate(dir.path(), names).unwrap();
    let server = TestingServer::with_options(ServerOptions::default().secure_client(&certs)).await.unwrap();
    (server, certs, dir)
}

/// Connecting must fail within its timeout, and the error must name the certificate problem.
async fn refused(connect_string: &str, trusted: &TestCertificates, expected: &[&str]) {
    let result = ZkClient::builder(connect_string)
        .tls_trusting(trusted.ca_pem())
        .connection_timeout(Duration::from_secs(3))
        .connect()
        .await;
    let error = match result {
        Ok(_) => panic!("connected to {connect_string} although it must be refused"),
        Err(e) => e,
    };
    assert!(matches!(error, Error::Tls { .. }), "{error}");
    let message = error.to_string();
    assert!(
        expected.iter().any(|e| message.contains(e)),
        "the error should say why ({expected:?}): {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_trusted_certificate_and_every_refusal() {
    let (server, certs, _dir) = secure_server(&["127.0.0.1", "localhost"]).await;
    let secure = server.secure_connect_string().expect("a secure port");

    // A trusted certificate: recipes work over TLS.
    let zk = ZkClient::builder(secure.as_str()).tls_trusting(certs.ca_pem()).connect().await.unwrap();
    let mutex = InterProcessMutex::new(&zk, "/tls/lock").unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    let config = ConfigPublisher::new(&zk, Utf8);
    config.set("/tls/config", &"over tls".to_owned()).await.unwrap();
    assert_eq!(
        config.get("/tls/config").await.unwrap().map(|v| v.value.to_string()).as_deref(),
        Some("over tls")
    );
    zk.close().await;

    // The secure port speaks only TLS: a plain client gets nowhere.
    let plain = ZkClient::builder(secure.as_str()).connection_timeout(Duration::from_secs(2)).connect().await;
    assert!(plain.is_err(), "a plain-text session on the secure port");

    // A certificate from an authority the client does not trust.
    let other_dir = tempfile::tempdir().unwrap();
    let stranger = TestCertificates::for_loopback(other_dir.path()).unwrap();
    refused(&secure, &stranger, &["UnknownIssuer"]).await;

    // A TLS client pointed at the plain port: no silent plain-text fallback.
    refused(&server.connect_string(), &certs, &["TLS handshake failed"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_host_is_refused() {
    let (server, certs, _dir) = secure_server(&["zookeeper.example.invalid"]).await;
    let secure = server.secure_connect_string().expect("a secure port");
    refused(&secure, &certs, &["not valid for name"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_asks_for_client_certificates_takes_ours_and_refuses_a_client_without() {
    let dir = tempfile::tempdir().unwrap();
    let certs = TestCertificates::for_loopback(dir.path()).unwrap();
    let options = ServerOptions::default().secure_client(&certs).require_client_certificates();
    let server = TestingServer::with_options(options).await.unwrap();
    let secure = server.secure_connect_string().expect("a secure port");
    let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap();

    let zk = ZkClient::builder(secure.as_str())
        .tls_trusting(certs.ca_pem())
        .tls_identity(read(certs.client_certificate()), read(certs.client_key()))
        .connect()
        .await
        .unwrap();
    let mutex = InterProcessMutex::new(&zk, "/mtls/lock").unwrap();
    mutex.acquire().await.unwrap().release().await.unwrap();
    let who = zk.client().await.unwrap().list_auth_users().await.unwrap();
    assert!(
        who.iter().any(|user| user.scheme() == "x509" && user.user().contains("zkr-testing client")),
        "the server knows us by our certificate: {who:?}"
    );
    zk.close().await;

    let anonymous = ZkClient::builder(secure.as_str())
        .tls_trusting(certs.ca_pem())
        .connection_timeout(Duration::from_secs(2))
        .connect()
        .await;
    assert!(anonymous.is_err(), "a session without a client certificate");
}
