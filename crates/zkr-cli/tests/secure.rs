//! `zkr` against secured servers: TLS (a trusted CA, a client certificate for a server that asks
//! for one) and SASL DIGEST-MD5, given as flags or as environment variables, and each mistake a
//! clear error with its exit code.

use zkr_connection::ZkClient;
use zkr_testing::{ServerOptions, TestCertificates, TestingServer};

mod common;
use common::{run_zkr, unique, zkr};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_client_certificate_by_flag_or_environment() {
    let dir = tempfile::tempdir().unwrap();
    let certs = TestCertificates::for_loopback(dir.path()).unwrap();
    let options = ServerOptions::default().secure_client(&certs).require_client_certificates();
    let server = TestingServer::with_options(options).await.unwrap();
    let secure = server.secure_connect_string().expect("a secure port");
    let ca = dir.path().join("ca.pem");
    let (cert, key) =
        (certs.client_certificate().display().to_string(), certs.client_key().display().to_string());
    let path = format!("{}/url", unique("tls"));

    let flags = ["--tls-ca", ca.to_str().unwrap(), "--tls-cert", &cert, "--tls-key", &key];
    let set = run_zkr(&secure, &[&["config", "set", &path, "over tls"][..], &flags[..]].concat()).await;
    assert!(set.status.success(), "{}", text(&set.stderr));
    let got = zkr(&secure)
        .args(["config", "get", &path])
        .env("ZKR_TLS_CA", &ca)
        .env("ZKR_TLS_CERT", &cert)
        .env("ZKR_TLS_KEY", &key)
        .output()
        .await
        .unwrap();
    assert_eq!(text(&got.stdout), "over tls", "{}", text(&got.stderr));

    // Without a client certificate the server takes no session: unreachable (7), said so.
    let anonymous = run_zkr(
        &secure,
        &["config", "get", &path, "--tls-ca", ca.to_str().unwrap(), "--connect-timeout", "2s"],
    )
    .await;
    assert_eq!(anonymous.status.code(), Some(7), "{}", text(&anonymous.stderr));
    // A certificate without the authority, a key without its certificate, an unreadable file:
    // usage errors, before anything connects.
    let no_ca = run_zkr(&secure, &["config", "get", &path, "--tls-cert", &cert, "--tls-key", &key]).await;
    assert_eq!(no_ca.status.code(), Some(2));
    assert!(text(&no_ca.stderr).contains("--tls-ca"), "{}", text(&no_ca.stderr));
    let half =
        run_zkr(&secure, &["config", "get", &path, "--tls-ca", ca.to_str().unwrap(), "--tls-key", &key])
            .await;
    assert_eq!(half.status.code(), Some(2), "{}", text(&half.stderr));
    let missing = run_zkr(&secure, &["config", "get", &path, "--tls-ca", "/nonexistent/ca.pem"]).await;
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).contains("/nonexistent/ca.pem"), "{}", text(&missing.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sasl_digest_md5_reads_a_users_node_and_a_wrong_password_is_refused_at_once() {
    let options = ServerOptions::default().sasl_digest_user("ops", "s3cret").sasl_digest_user("dev", "other");
    let server = TestingServer::with_options(options).await.unwrap();
    let cs = server.connect_string();
    let path = unique("sasl");
    let owner = ZkClient::builder(cs.as_str()).sasl_digest_md5("ops", "s3cret").connect().await.unwrap();
    let acl = [zookeeper_client::Acl::new(
        zookeeper_client::Permission::ALL,
        zookeeper_client::AuthId::new("sasl", "ops"),
    )];
    let options = zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::new(&acl));
    owner.client().await.unwrap().create(&path, b"ops only", &options).await.unwrap();
    owner.close().await;

    let ops = zkr(&cs)
        .args(["config", "get", &path, "--sasl", "digest-md5", "--sasl-user", "ops"])
        .env("ZKR_SASL_PASSWORD", "s3cret")
        .output()
        .await
        .unwrap();
    assert_eq!(text(&ops.stdout), "ops only", "{}", text(&ops.stderr));
    let by_env = zkr(&cs)
        .args(["config", "get", &path])
        .envs([("ZKR_SASL", "digest-md5"), ("ZKR_SASL_USER", "dev"), ("ZKR_SASL_PASSWORD", "other")])
        .output()
        .await
        .unwrap();
    assert_eq!(by_env.status.code(), Some(1), "another user is refused (NoAuth): {}", text(&by_env.stderr));
    assert!(text(&by_env.stderr).contains("not authorized"), "{}", text(&by_env.stderr));

    // A wrong password fails at once (not at --connect-timeout) and says why.
    let wrong = zkr(&cs)
        .args([
            "config",
            "get",
            &path,
            "--sasl",
            "digest-md5",
            "--sasl-user",
            "ops",
            "--connect-timeout",
            "1h",
        ])
        .env("ZKR_SASL_PASSWORD", "wrong")
        .output()
        .await
        .unwrap();
    assert_eq!(wrong.status.code(), Some(2), "{}", text(&wrong.stderr));
    assert!(text(&wrong.stderr).contains("refused"), "{}", text(&wrong.stderr));
    let no_password =
        run_zkr(&cs, &["config", "get", &path, "--sasl", "digest-md5", "--sasl-user", "ops"]).await;
    assert_eq!(no_password.status.code(), Some(2));
    assert!(text(&no_password.stderr).contains("ZKR_SASL_PASSWORD"), "{}", text(&no_password.stderr));
    #[cfg(not(feature = "kerberos"))]
    {
        let gssapi = run_zkr(&cs, &["config", "get", &path, "--sasl", "gssapi"]).await;
        assert_eq!(gssapi.status.code(), Some(2), "{}", text(&gssapi.stderr));
        assert!(text(&gssapi.stderr).contains("--features kerberos"), "{}", text(&gssapi.stderr));
    }
}
