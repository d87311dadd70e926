//! Every release zkr is tested on starts, serves a session and says (in `srvr`) that it is the
//! version asked for.

use zkr_testing::{Release, ServerOptions, TestingServer, RELEASES};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_release_starts_and_reports_its_version() {
    let starts = RELEASES.iter().map(|name| async move {
        let release: Release = name.parse().unwrap();
        let server = TestingServer::with_options(ServerOptions::default().release(release.clone()))
            .await
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(server.release(), &release);
        let srvr = server.four_letter_word("srvr").await.unwrap();
        let reported = srvr.lines().next().unwrap_or_default().to_string();
        assert!(
            reported.contains(&format!("version: {}", release.version())),
            "{name}: srvr says {reported:?}"
        );
        let client = zookeeper_client::Client::connect(&server.connect_string()).await.unwrap();
        client
            .create(
                "/started",
                name.as_bytes(),
                &zookeeper_client::CreateMode::Persistent.with_acls(zookeeper_client::Acls::anyone_all()),
            )
            .await
            .unwrap();
        reported
    });
    for line in futures::future::join_all(starts).await {
        println!("{line}");
    }
}
