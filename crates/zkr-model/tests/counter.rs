//! The counter's model: checked clean, and its bug switch found.

use zkr_model::bugs::Bug;
use zkr_model::check::{contrast, run};
use zkr_model::recipes::counter::Counter;
use zkr_model::world::{Checked, Faults};

#[test]
fn two_clients_two_increments_two_faults() {
    let model = Counter { users: vec![0, 1], ops: 2, faults: Faults::all(2), bug: None };
    let outcome = run(model.clone(), 1);
    println!("counter, 2 clients x 2 increments, 2 faults: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}

#[test]
fn three_clients_one_increment_one_fault() {
    let model = Counter { users: vec![0, 1, 2], ops: 1, faults: Faults::all(1), bug: None };
    let outcome = run(model.clone(), 1);
    println!("counter, 3 clients x 1 increment, 1 fault: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}

#[test]
fn a_lost_reply_reported_not_applied_is_found() {
    let faults = Faults { max: 1, drop: true, expire: false, restart: false, lag: 0 };
    let model = Counter { users: vec![0, 1], ops: 1, faults, bug: Some(Bug::CounterLostReplyNotApplied) };
    let clean = Counter { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "reported applied").expect("an increment applied twice");
    println!("{trace}");
}

/// `make model-check`: three clients, two faults.
#[test]
#[ignore = "deep: make model-check"]
fn deep_three_clients_one_increment_two_faults() {
    let model = Counter { users: vec![0, 1, 2], ops: 1, faults: Faults::all(2), bug: None };
    let outcome = run(model.clone(), 1);
    println!("counter, 3 clients x 1 increment, 2 faults: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}
