//! The watch engine's model (a cache on a persistent recursive watch): checked clean, and its
//! two bug switches found.

use zkr_model::bugs::Bug;
use zkr_model::check::{assert_clean, contrast};
use zkr_model::recipes::cache::Cache;
use zkr_model::world::Faults;

#[test]
fn a_writer_and_a_cache_on_two_clients_two_faults() {
    let model = Cache { writer: 0, caches: vec![1], faults: Faults::all(2), bug: None };
    assert_clean(model, 1, "cache, a writer + 1 cache on 2 clients, 4 changes, 2 faults");
}

#[test]
fn a_writer_and_two_caches_on_one_client_two_faults() {
    let model = Cache { writer: 0, caches: vec![0, 0], faults: Faults::all(2), bug: None };
    assert_clean(model, 1, "cache, a writer + 2 caches on 1 client, 4 changes, 2 faults");
}

#[test]
fn a_watch_not_set_again_after_a_reconnect_is_found() {
    let faults = Faults { max: 1, drop: true, expire: false, restart: false, lag: 0 };
    let model = Cache { writer: 0, caches: vec![1], faults, bug: Some(Bug::CacheNoRewatchAfterReconnect) };
    let clean = Cache { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "holds what the server holds").expect("a deaf cache");
    println!("{trace}");
}

#[test]
fn nothing_read_again_after_a_reconnect_is_found() {
    let faults = Faults { max: 1, drop: true, expire: false, restart: false, lag: 0 };
    let model = Cache { writer: 0, caches: vec![1], faults, bug: Some(Bug::CacheNoReadAfterReconnect) };
    let clean = Cache { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "holds what the server holds").expect("a change missed");
    println!("{trace}");
}

#[test]
fn lagging_reads_a_writer_and_a_cache_two_faults() {
    let model = Cache { writer: 0, caches: vec![1], faults: Faults::all(2).lagging(1), bug: None };
    assert_clean(model, 1, "cache, a writer + 1 cache on 2 clients, 4 changes, 2 faults, 1 state behind");
}

#[test]
fn no_sync_on_a_new_session_is_found() {
    let faults = Faults { max: 1, drop: false, expire: true, restart: false, lag: 1 };
    let model = Cache { writer: 0, caches: vec![1], faults, bug: Some(Bug::CacheNoSyncOnNewSession) };
    let clean = Cache { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "older than it showed").expect("a cache going back");
    println!("{trace}");
}

#[test]
fn no_sync_before_a_subscription_tried_again_on_a_new_session_is_found() {
    let faults = Faults { max: 2, drop: true, expire: true, restart: false, lag: 1 };
    let model = Cache { writer: 0, caches: vec![1], faults, bug: Some(Bug::CacheSyncOnlyOnce) };
    let clean = Cache { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "older than it showed").expect("a cache going back");
    println!("{trace}");
}

/// `make model-check`: two caches on two clients beside the writer's, three faults.
#[test]
#[ignore = "deep: make model-check"]
fn deep_a_writer_and_two_caches_on_three_clients_three_faults() {
    let model = Cache { writer: 0, caches: vec![1, 2], faults: Faults::all(3), bug: None };
    assert_clean(model, 1, "cache, a writer + 2 caches on 3 clients, 4 changes, 3 faults");
}

/// `make model-check`: reads one state behind, two caches (one on the writer's client), three
/// faults.
#[test]
#[ignore = "deep: make model-check"]
fn deep_lagging_reads_a_writer_and_two_caches_three_faults() {
    let model = Cache { writer: 0, caches: vec![0, 1], faults: Faults::all(3).lagging(1), bug: None };
    assert_clean(model, 1, "cache, a writer + 2 caches on 2 clients, 4 changes, 3 faults, 1 state behind");
}
