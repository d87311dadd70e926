//! The read-write lock's model: checked clean, and each of its bug switches found.

use zkr_model::bugs::Bug;
use zkr_model::check::{assert_clean, contrast};
use zkr_model::recipes::internals::Kind::{Reader, Writer};
use zkr_model::recipes::rwlock::RwLock;
use zkr_model::world::Faults;

const EXPIRE_ONLY: Faults = Faults { max: 1, drop: false, expire: true, restart: false, lag: 0 };

fn check(model: RwLock, what: &str) {
    assert_clean(model, 1, &format!("read-write lock, {what}"));
}

#[test]
fn two_readers_and_a_writer_one_round_one_expiry() {
    let users = vec![(0, Reader), (1, Reader), (2, Writer)];
    check(
        RwLock { users, rounds: 1, faults: EXPIRE_ONLY, bug: None },
        "2 readers + 1 writer x 1 round, 1 expiry",
    );
}

#[test]
fn a_reader_and_a_writer_two_rounds_one_fault() {
    let users = vec![(0, Reader), (1, Writer)];
    check(
        RwLock { users, rounds: 2, faults: Faults::all(1), bug: None },
        "1 reader + 1 writer x 2 rounds, 1 fault",
    );
}

#[test]
fn a_reader_looking_only_just_ahead_is_found() {
    let users = vec![(0, Writer), (1, Reader), (2, Reader)];
    let model = RwLock { users, rounds: 1, faults: Faults::NONE, bug: Some(Bug::RwReaderLooksOnlyJustAhead) };
    let clean = RwLock { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "no writer holds beside").expect("a reader beside the writer");
    println!("{trace}");
}

#[test]
fn kazoo_2_8s_reader_rule_deadlocks() {
    let users = vec![(0, Writer), (1, Reader), (2, Writer)];
    let model = RwLock { users, rounds: 1, faults: Faults::NONE, bug: Some(Bug::RwReaderCountsLaterWriters) };
    let clean = RwLock { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "hangs").expect("a reader and a writer waiting on each other");
    println!("{trace}");
}

/// `make model-check`: two faults.
#[test]
#[ignore = "deep: make model-check"]
fn deep_two_readers_and_a_writer_one_round_two_faults() {
    let users = vec![(0, Reader), (1, Reader), (2, Writer)];
    check(
        RwLock { users, rounds: 1, faults: Faults::all(2), bug: None },
        "2 readers + 1 writer x 1 round, 2 faults",
    );
}

/// `make model-check`: two rounds, two faults.
#[test]
#[ignore = "deep: make model-check"]
fn deep_a_reader_and_a_writer_two_rounds_two_faults() {
    let users = vec![(0, Reader), (1, Writer)];
    check(
        RwLock { users, rounds: 2, faults: Faults::all(2), bug: None },
        "1 reader + 1 writer x 2 rounds, 2 faults",
    );
}
