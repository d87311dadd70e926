//! The mutex's model: checked clean, and each of its bug switches found.

use zkr_model::bugs::Bug;
use zkr_model::check::{contrast, run, run_symmetric};
use zkr_model::recipes::mutex::Mutex;
use zkr_model::world::{Checked, Faults};

const EXPIRE_ONLY: Faults = Faults { max: 1, drop: false, expire: true, restart: false, lag: 0 };

#[test]
fn two_clients_two_rounds_two_faults() {
    let model = Mutex { users: vec![0, 1], rounds: 2, faults: Faults::all(2), bug: None, prompt: false };
    let outcome = run_symmetric(model.clone());
    println!("mutex, 2 clients x 2 rounds, 2 faults, symmetric: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}

#[test]
fn three_clients_one_round_one_expiry() {
    let model = Mutex { users: vec![0, 1, 2], rounds: 1, faults: EXPIRE_ONLY, bug: None, prompt: false };
    let outcome = run_symmetric(model.clone());
    println!("mutex, 3 clients x 1 round, 1 expiry, symmetric: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}

#[test]
fn a_deletion_of_a_node_that_was_not_the_head_granting_the_lock_is_found() {
    let model = Mutex {
        users: vec![0, 1, 2],
        rounds: 1,
        faults: EXPIRE_ONLY,
        bug: Some(Bug::MutexAnyDeletionGrants),
        prompt: false,
    };
    let outcome = run(model.clone(), 1);
    let trace = outcome.trace(&Checked(model), "mutual exclusion").expect("two holders");
    println!("{trace}");
}

#[test]
fn a_hold_lost_only_with_the_session_is_found() {
    let model = Mutex {
        users: vec![0, 1],
        rounds: 1,
        faults: EXPIRE_ONLY,
        bug: Some(Bug::MutexSessionOnlyPolicy),
        prompt: false,
    };
    let clean = Mutex { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "knows it before another holds").expect("two believers");
    println!("{trace}");
}

/// `make model-check`: three clients, two faults.
#[test]
#[ignore = "deep: make model-check"]
fn deep_three_clients_one_round_two_faults() {
    let model = Mutex { users: vec![0, 1, 2], rounds: 1, faults: Faults::all(2), bug: None, prompt: false };
    let outcome = run(model.clone(), 1);
    println!("mutex, 3 clients x 1 round, 2 faults: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}

/// The prompt hand-over (`LockInternals::prompt_hand_over`): the third client watches the
/// second's node and the head's, and lists when the head goes.
#[test]
fn prompt_three_clients_one_round_one_expiry() {
    let model = Mutex { users: vec![0, 1, 2], rounds: 1, faults: EXPIRE_ONLY, bug: None, prompt: true };
    let outcome = run_symmetric(model.clone());
    println!("mutex, prompt hand-over, 3 clients x 1 round, 1 expiry, symmetric: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}
