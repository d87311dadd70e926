//! Reads from a lagging server (any state not older than what the connection has shown) where
//! recipes read before they act: the counter's read before its versioned write, the ID
//! generator's epoch listing and high-water read, the lock internals' listing (mutex,
//! read-write lock, semaphore, kazoo's lease and its holder read).

use zkr_model::bugs::Bug;
use zkr_model::check::{assert_clean, contrast};
use zkr_model::recipes::counter::Counter;
use zkr_model::recipes::ids::Ids;
use zkr_model::recipes::internals::Kind::{Reader, Writer};
use zkr_model::recipes::lease::Lease;
use zkr_model::recipes::mutex::Mutex;
use zkr_model::recipes::rwlock::RwLock;
use zkr_model::recipes::semaphore::Semaphore;
use zkr_model::world::{Faults, Recipe};

fn check<R: Recipe + Clone>(model: R, what: &str) {
    assert_clean(model, 1, &format!("lagging reads, {what}"));
}

#[test]
fn counter_two_clients_two_increments_two_faults() {
    let model = Counter { users: vec![0, 1], ops: 2, faults: Faults::all(2).lagging(1), bug: None };
    check(model, "counter, 2 clients x 2 increments, 2 faults, 1 state behind");
}

#[test]
fn ids_two_generators_one_id_each_one_fault() {
    let faults = Faults::all(1).lagging(1);
    let model = Ids { users: vec![0, 1], ids: 1, capacity: 1, reset: false, faults, bug: None };
    check(model, "ids, 2 generators x 1 ID, capacity 1, 1 fault, 1 state behind");
}

/// `make model-check`: with an administrator's epoch reset.
#[test]
#[ignore = "deep: make model-check"]
fn deep_ids_two_generators_one_id_each_an_epoch_reset_and_a_fault() {
    let faults = Faults::all(1).lagging(1);
    let model = Ids { users: vec![0, 1], ids: 1, capacity: 1, reset: true, faults, bug: None };
    check(model, "ids, 2 generators x 1 ID, capacity 1, an epoch reset, 1 fault, 1 state behind");
}

#[test]
fn mutex_two_clients_two_rounds_one_fault() {
    let model =
        Mutex { users: vec![0, 1], rounds: 2, faults: Faults::all(1).lagging(1), bug: None, prompt: false };
    check(model, "mutex, 2 clients x 2 rounds, 1 fault, 1 state behind");
}

/// `make model-check`: three clients.
#[test]
#[ignore = "deep: make model-check"]
fn deep_mutex_three_clients_one_round_one_expiry() {
    let faults = Faults { max: 1, drop: false, expire: true, restart: false, lag: 1 };
    let model = Mutex { users: vec![0, 1, 2], rounds: 1, faults, bug: None, prompt: false };
    check(model, "mutex, 3 clients x 1 round, 1 expiry, 1 state behind");
}

#[test]
fn rwlock_a_reader_and_a_writer_two_rounds_one_fault() {
    let users = vec![(0, Reader), (1, Writer)];
    let model = RwLock { users, rounds: 2, faults: Faults::all(1).lagging(1), bug: None };
    check(model, "read-write lock, 1 reader + 1 writer x 2 rounds, 1 fault, 1 state behind");
}

/// `make model-check`: two readers and a writer.
#[test]
#[ignore = "deep: make model-check"]
fn deep_rwlock_two_readers_and_a_writer_one_round_one_fault() {
    let users = vec![(0, Reader), (1, Reader), (2, Writer)];
    let model = RwLock { users, rounds: 1, faults: Faults::all(1).lagging(1), bug: None };
    check(model, "read-write lock, 2 readers + 1 writer x 1 round, 1 fault, 1 state behind");
}

#[test]
fn semaphore_two_users_one_lease_one_round_one_fault() {
    let model = Semaphore {
        users: vec![0, 1],
        max: 1,
        rounds: 1,
        faults: Faults::all(1).lagging(1),
        bug: None,
        strict: false,
    };
    check(model, "semaphore, 2 users, 1 lease, 1 round, 1 fault, 1 state behind");
}

#[test]
fn lease_two_users_one_lease_two_ticks_one_fault() {
    let model = Lease {
        users: vec![0, 1],
        count: 1,
        duration: 1,
        ticks: 2,
        stale: true,
        skew: false,
        faults: Faults::all(1).lagging(1),
        bug: None,
    };
    check(model, "kazoo lease, 2 users, 1 lease, 2 ticks, 1 fault, 1 state behind");
}

/// `make model-check`: two states behind.
#[test]
#[ignore = "deep: make model-check"]
fn deep_counter_two_clients_two_increments_two_faults_two_behind() {
    let model = Counter { users: vec![0, 1], ops: 2, faults: Faults::all(2).lagging(2), bug: None };
    check(model, "counter, 2 clients x 2 increments, 2 faults, 2 states behind");
}

/// `make model-check`: two states behind.
#[test]
#[ignore = "deep: make model-check"]
fn deep_mutex_two_clients_two_rounds_one_fault_two_behind() {
    let model =
        Mutex { users: vec![0, 1], rounds: 2, faults: Faults::all(1).lagging(2), bug: None, prompt: false };
    check(model, "mutex, 2 clients x 2 rounds, 1 fault, 2 states behind");
}

/// The `sync` before a lost create's node is looked for is needed: without it, a lagging
/// server's listing misses the node, a second one is made behind it, and the contender waits
/// on its own orphan for as long as its session lives.
#[test]
fn a_lost_create_looked_for_without_a_sync_waits_on_its_own_orphan() {
    let faults = Faults { max: 1, drop: true, expire: false, restart: false, lag: 1 };
    let clean = Mutex { users: vec![0], rounds: 1, faults, bug: None, prompt: false };
    let model = Mutex { bug: Some(Bug::MutexFindWithoutSync), ..clean.clone() };
    let trace = contrast(model, clean, "hangs").expect("a contender behind its own orphan");
    println!("{trace}");
}
