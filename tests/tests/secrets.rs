//! No credential prints (issue 43, item 5): against a real server that takes all three kinds
//! at once (mutual TLS, SASL DIGEST-MD5, digest auth), every public type that holds them,
//! directly or through a `ZkClient` (the builder, the client, its session, a lock and its
//! guard, a leader latch, a cache, a persistent node, a service discovery, a shared count, a
//! config publisher, a refused connect's error), formatted with `{:?}` and `{:#?}`, and the
//! whole log (every target, at trace level) of a connect and a lock cycle, with the client and
//! the lock logged as `tracing::debug!(?lock)` logs them, hold no secret: no
//! password, no `user:password`, no line of the private key's PEM body, in any of the shapes
//! `Debug` gives bytes (text, decimal lists, hex).

use std::fmt::Debug;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::util::SubscriberInitExt as _;
use zkr_connection::{CreateMode, ZkClient, ZkClientBuilder};
use zkr_integration_tests::{timing, unique_root};
use zkr_recipes::cache::CuratorCache;
use zkr_recipes::config::{ConfigPublisher, Utf8};
use zkr_recipes::counters::SharedCount;
use zkr_recipes::discovery::ServiceDiscovery;
use zkr_recipes::leader::LeaderLatch;
use zkr_recipes::locks::InterProcessMutex;
use zkr_recipes::nodes::PersistentNode;
use zkr_testing::{ServerOptions, TestCertificates, TestingServer};

const SASL_USER: &str = "alice";
const SASL_PASSWORD: &str = "sasl-pw-Q7f3a9c1";
const WRONG_PASSWORD: &str = "wrong-pw-K9x2m4";
const DIGEST_USER: &str = "carol";
const DIGEST_PASSWORD: &str = "digest-pw-Z51d2e8";

/// The log, as the subscriber writes it.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Each secret in the shapes `Debug` may print it: as text, as a decimal byte list (a
/// `Vec<u8>`), as hex. Compared with the output stripped of whitespace, so that `{:#?}`'s one
/// byte per line is found too.
fn needles(key_pem: &str) -> Vec<(String, String)> {
    let mut secrets: Vec<(String, String)> = [
        ("the SASL password", SASL_PASSWORD.to_owned()),
        ("the refused SASL password", WRONG_PASSWORD.to_owned()),
        ("the digest password", DIGEST_PASSWORD.to_owned()),
        ("the digest credentials", format!("{DIGEST_USER}:{DIGEST_PASSWORD}")),
    ]
    .into_iter()
    .map(|(what, secret)| (what.to_owned(), secret))
    .collect();
    for line in key_pem.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("-----")) {
        secrets.push(("a line of the private key's PEM body".to_owned(), line.to_owned()));
    }
    let mut needles = Vec::new();
    for (what, secret) in secrets {
        let bytes = secret.as_bytes();
        let decimal = bytes.iter().map(u8::to_string).collect::<Vec<_>>().join(",");
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        needles.push((format!("{what} (as bytes)"), decimal));
        needles.push((format!("{what} (as hex)"), hex));
        needles.push((what, secret));
    }
    needles
}

fn assert_no_secret(where_: &str, text: &str, needles: &[(String, String)]) {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    for (what, needle) in needles {
        assert!(!compact.contains(needle.as_str()), "{where_} shows {what}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_credential_prints_through_debug_or_the_log() {
    let log = Captured::default();
    tracing_subscriber::fmt()
        .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
        .with_ansi(false)
        .with_writer(log.clone())
        .finish()
        .try_init()
        .expect("the only subscriber of this test binary");

    let dir = tempfile::tempdir().unwrap();
    let certs = TestCertificates::for_loopback(dir.path()).unwrap();
    let options = ServerOptions::default()
        .sasl_digest_user(SASL_USER, SASL_PASSWORD)
        .secure_client(&certs)
        .require_client_certificates();
    let server = TestingServer::with_options(options).await.unwrap();
    let secure = server.secure_connect_string().expect("a secure port");
    let read = |path: &std::path::Path| std::fs::read_to_string(path).unwrap();
    let (cert_pem, key_pem) = (read(certs.client_certificate()), read(certs.client_key()));
    let needles = needles(&key_pem);
    // Nothing here waits for an expiry: a long session, so that a TLS handshake slowed by a
    // busy machine does not cost the session the recipes are built on.
    let with_credentials = |password: &str| -> ZkClientBuilder {
        ZkClient::builder(secure.as_str())
            .session_timeout(timing().multiple(Duration::from_secs(30)))
            .connection_timeout(timing().wait())
            .tls_trusting(certs.ca_pem())
            .tls_identity(cert_pem.clone(), key_pem.clone())
            .sasl_digest_md5(SASL_USER, password)
            .digest_auth(DIGEST_USER, DIGEST_PASSWORD)
    };

    let mut printed = String::new();
    let mut print = |what: &str, value: &dyn Debug| {
        printed.push_str(&format!("{what}: {value:?}\n{what}: {value:#?}\n"));
    };
    print("ZkClientBuilder", &with_credentials(SASL_PASSWORD));
    let zk = with_credentials(SASL_PASSWORD).creator_only_acl().connect().await.unwrap();
    print("ZkClient", &zk);
    print("Session", &zk.session().await.unwrap());

    let root = unique_root("secrets");
    let mutex = InterProcessMutex::new(&zk, &format!("{root}/lock")).unwrap();
    print("InterProcessMutex", &mutex);
    let guard = mutex.acquire().await.unwrap();
    print("InterProcessMutexGuard", &guard);
    tracing::debug!(?zk, ?mutex, ?guard, "as an application logs them");
    guard.release().await.unwrap();
    let latch = LeaderLatch::start(&zk, &format!("{root}/leader"), "a").await.unwrap();
    print("LeaderLatch", &latch);
    // A cache probes the servers' features once, on a connection of its own; over TLS on a
    // busy machine, zookeeper-client now and then misreads that connection's connect reply
    // ("unsupported server version 1") and the probe fails. Asked until it answers (then kept).
    for _ in 0..5 {
        if zk.has_persistent_watches().await.is_ok() {
            break;
        }
    }
    let cache = CuratorCache::builder(&zk, &format!("{root}/tree")).start().await.unwrap();
    print("CuratorCache", &cache);
    let node =
        PersistentNode::builder(&zk, &format!("{root}/node"), CreateMode::Ephemeral).start().await.unwrap();
    print("PersistentNode", &node);
    let discovery = ServiceDiscovery::<serde_json::Value>::new(&zk, &format!("{root}/services")).unwrap();
    print("ServiceDiscovery", &discovery);
    let count = SharedCount::start(&zk, &format!("{root}/count"), 0).await.unwrap();
    print("SharedCount", &count);
    print("ConfigPublisher", &ConfigPublisher::new(&zk, Utf8));

    let refused = with_credentials(WRONG_PASSWORD).connect().await.expect_err("a wrong SASL password");
    print("the refused connect's error", &refused);
    printed.push_str(&format!("{refused}\n"));

    node.close().await;
    discovery.close().await;
    drop((latch, cache, count));
    zk.close().await;

    assert!(printed.contains(&secure), "the non-secret settings still print:\n{printed}");
    assert_no_secret("Debug", &printed, &needles);
    let logged = log.text();
    assert!(logged.contains("as an application logs them"), "the log was captured:\n{logged}");
    assert_no_secret("the log", &logged, &needles);
}
