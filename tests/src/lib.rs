//! Helpers shared by zkr's integration tests: unique root paths, state-sequence assertions and
//! quick connections to test servers.

pub mod checker;
pub mod faults;
pub mod history;
pub mod id_worker;
pub mod soak;

use std::time::Duration;

use futures::StreamExt;
use zkr_connection::{ConnectionState, ConnectionStateStream, ZkClient, ZkClientBuilder};
use zkr_testing::Timing;

/// Prints `<label> <session id>` on stdout (flushed) for the manager's current session and for
/// every new one: worker processes announce their sessions so that tests can expire them.
pub fn announce_sessions(zk: &ZkClient, label: &'static str) {
    use std::io::Write as _;
    let say = move |id: i64| {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{label} {id}");
        let _ = out.flush();
    };
    let mut sessions = zk.session_watch();
    // The current session at once (before the caller prints anything else), then every new one.
    if let Some(id) = sessions.borrow_and_update().as_ref().map(zkr_connection::Session::id) {
        say(id);
    }
    tokio::spawn(async move {
        while sessions.changed().await.is_ok() {
            if let Some(id) = sessions.borrow_and_update().as_ref().map(zkr_connection::Session::id) {
                say(id);
            }
        }
    });
}

/// The children of `path` as a raw observer sees them; none when `path` does not exist.
///
/// # Panics
/// On any other error (a test failure).
pub async fn children(observer: &zookeeper_client::Client, path: &str) -> Vec<String> {
    match observer.list_children(path).await {
        Ok(children) => children,
        Err(zookeeper_client::Error::NoNode) => Vec::new(),
        Err(e) => panic!("listing {path}: {e}"),
    }
}

/// A raw `zookeeper-client` session, for observing and planting nodes as another program
/// would. Its session timeout is 30 s (scaled by [`Timing`]), not the client's default 6 s:
/// `zookeeper-client` gives up a connection with no reply for two fifths of the session timeout
/// (2.4 s by default), and on a busy 2-core machine an observer lost its connection mid-test
/// that way (`make test`, 2026-12-03).
pub async fn raw(connect_string: &str) -> zookeeper_client::Client {
    zookeeper_client::Client::connector()
        .with_session_timeout(timing().multiple(Duration::from_secs(30)))
        .connect(connect_string)
        .await
        .expect("raw client")
}

/// The test timing (scaled by `ZKR_TIMING_MULTIPLIER`).
pub fn timing() -> Timing {
    Timing::from_env()
}

/// Logs when `RUST_LOG` is set (say `zkr_connection=debug`), for a test that fails only now
/// and then: the next failure shows what the client saw. The lines go to the test harness's
/// capture (the test's own threads and its runtime's, which inherit it), so each is printed
/// with the failure of the test that logged it, and not at all for a test that passes.
/// [`builder`] calls this, so every test's clients log (the compatibility run sets
/// `RUST_LOG=zkr_connection=info,zookeeper_client=info`: each connection state and session, and
/// why a connection was given up).
pub fn trace_from_env() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .with_ansi(false)
            .try_init();
    }
}

/// A root path no other test uses: `/t-<name>-<uuid>`.
pub fn unique_root(name: &str) -> String {
    format!("/t-{name}-{}", uuid::Uuid::new_v4().simple())
}

/// A builder for tests: the session timeout from [`Timing::session`], quick connection timeout.
pub fn builder(connect_string: &str) -> ZkClientBuilder {
    trace_from_env();
    ZkClient::builder(connect_string).session_timeout(timing().session()).connection_timeout(timing().wait())
}

/// Connects with [`builder`].
pub async fn connect(connect_string: &str) -> ZkClient {
    builder(connect_string).connect().await.expect("connect")
}

/// Connects with a session timeout of `secs` seconds (scaled by [`Timing`]): for tests whose
/// faults must not expire the session.
pub async fn connect_with_session(connect_string: impl Into<String>, secs: u64) -> ZkClient {
    ZkClient::builder(connect_string)
        .session_timeout(timing().multiple(Duration::from_secs(secs)))
        .connect()
        .await
        .expect("connect")
}

/// Reads `expected.len()` states from `stream` and asserts they are `expected`, in order,
/// failing after [`Timing::wait`] per state.
pub async fn expect_states(stream: &mut ConnectionStateStream, expected: &[ConnectionState]) {
    let mut seen = Vec::new();
    for _ in expected {
        match tokio::time::timeout(timing().wait(), stream.next()).await {
            Ok(Some(state)) => seen.push(state),
            Ok(None) => panic!("state stream ended after {seen:?}; expected {expected:?}"),
            Err(_) => panic!("timed out after {seen:?}; expected {expected:?}"),
        }
    }
    assert_eq!(seen, expected);
}

/// Reads states until `wanted` (the stream may start with the current state), within
/// [`Timing::wait`].
pub async fn wait_for_state(states: &mut ConnectionStateStream, wanted: ConnectionState) {
    let found = tokio::time::timeout(timing().wait(), async {
        while let Some(state) = states.next().await {
            if state == wanted {
                return true;
            }
        }
        false
    });
    assert!(found.await.unwrap_or(false), "no {wanted:?} in time");
}

/// A counter from the server's `mntr` (`zk_watch_count`, `zk_num_alive_connections`, ...).
pub async fn mntr_counter(server: &zkr_testing::TestingServer, key: &str) -> u64 {
    let mntr = server.four_letter_word("mntr").await.unwrap();
    zkr_testing::parse_mntr(&mntr)
        .into_iter()
        .find_map(|(k, v)| (k == key).then(|| v.parse().ok()).flatten())
        .unwrap_or_else(|| panic!("{key} in mntr"))
}

/// Asserts that no further state arrives within `quiet`.
pub async fn expect_no_state(stream: &mut ConnectionStateStream, quiet: Duration) {
    if let Ok(Some(state)) = tokio::time::timeout(quiet, stream.next()).await {
        panic!("unexpected state {state}");
    }
}

/// Polls `check` until it is true, failing after [`Timing::wait`]. For conditions that have no
/// event to await (a node deleted by another session).
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timing().wait();
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    /// `make demo` installs only what the demo needs (Maven and a JRE, with which zkr-testing
    /// fetches and runs the server), a subset of what `make test` installs.
    #[test]
    fn the_demo_installs_only_maven_and_a_jre() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let list = |profile: &str| {
            let out = std::process::Command::new(format!("{root}/scripts/ensure-deps.sh"))
                .args([profile, "--list"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect::<Vec<_>>()
        };
        let (demo, all) = (list("demo"), list("all"));
        assert_eq!(demo, ["maven", "default-jre-headless"]);
        assert!(demo.iter().all(|p| all.contains(p)) && all.len() > demo.len(), "{all:?}");
        let makefile = std::fs::read_to_string(format!("{root}/Makefile")).unwrap();
        assert!(makefile.contains("demo: deps-demo\n"), "make demo depends on deps-demo");
        assert!(makefile.contains("deps-demo:\n\t@scripts/ensure-deps.sh demo\n"));
    }

    /// `make compat` (the Makefile's `COMPAT_RELEASES`) runs the subset on every release zkr is
    /// tested on but the default one, on which the whole suite runs; and every test the subset
    /// names exists.
    #[test]
    fn the_compat_run_covers_every_other_release_and_names_real_tests() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let makefile = std::fs::read_to_string(format!("{root}/Makefile")).unwrap();
        let line = makefile.lines().find_map(|l| l.strip_prefix("COMPAT_RELEASES = ")).unwrap();
        let mut listed: Vec<&str> = line.split_whitespace().collect();
        listed.push(zkr_testing::DEFAULT_RELEASE);
        listed.sort_unstable();
        let mut releases = zkr_testing::RELEASES.to_vec();
        releases.sort_unstable();
        assert_eq!(listed, releases);
        let curator = makefile.lines().find_map(|l| l.strip_prefix("COMPAT_CURATOR = ")).unwrap();
        assert_eq!(curator.trim(), zkr_testing::peers::CURATOR_MAVEN_RELEASE);
        let list = std::fs::read_to_string(format!("{root}/tests/compat.list")).unwrap();
        for line in list.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
            let mut fields = line.split_whitespace();
            let (binary, test) = (fields.next().unwrap(), fields.next().unwrap());
            for skip in fields {
                let release = skip.strip_prefix('!').unwrap_or_else(|| panic!("{line}: {skip}"));
                assert!(zkr_testing::RELEASES.contains(&release), "{line}: no release {release}");
            }
            let source = std::fs::read_to_string(format!("{root}/tests/tests/{binary}.rs"))
                .unwrap_or_else(|e| panic!("{binary}: {e}"));
            assert!(source.contains(&format!("async fn {test}(")), "{binary} has no test {test}");
        }
    }
}
