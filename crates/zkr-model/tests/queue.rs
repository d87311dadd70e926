//! The lock-safe queue's model: checked clean, and each of its bug switches found.

use zkr_model::bugs::Bug;
use zkr_model::check::{contrast, run};
use zkr_model::recipes::queue::Queue;
use zkr_model::world::{Checked, Faults};

#[test]
fn two_consumers_of_one_session_two_items_two_faults() {
    let model = Queue { users: vec![0, 0], items: 2, faults: Faults::all(2), bug: None };
    let outcome = run(model.clone(), 1);
    println!("queue, 2 consumers on 1 session, 2 items, 2 faults: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}

#[test]
fn an_item_lock_told_apart_by_session_only_is_found() {
    let model =
        Queue { users: vec![0, 0], items: 1, faults: Faults::NONE, bug: Some(Bug::QueueLockBySessionOnly) };
    let clean = Queue { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "one live consumer").expect("an item taken twice");
    println!("{trace}");
}

#[test]
fn an_ack_committed_on_the_next_session_is_found() {
    let faults = Faults { max: 1, drop: false, expire: true, restart: false, lag: 0 };
    let model = Queue { users: vec![0, 0], items: 1, faults, bug: Some(Bug::QueueAckUnpinned) };
    let clean = Queue { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "own lock").expect("an ack on another's lock");
    println!("{trace}");
}

/// `make model-check`: a third consumer on another client.
#[test]
#[ignore = "deep: make model-check"]
fn deep_two_consumers_of_one_session_one_of_another_one_item_two_faults() {
    let model = Queue { users: vec![0, 0, 1], items: 1, faults: Faults::all(2), bug: None };
    let outcome = run(model.clone(), 1);
    println!("queue, 2 consumers on 1 session + 1 on another, 1 item, 2 faults: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}
