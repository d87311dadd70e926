//! The leader latch's model (the lock internals' steps, leadership terms).

use zkr_model::check::{run, run_symmetric};
use zkr_model::recipes::latch::Latch;
use zkr_model::world::{Checked, Faults};

#[test]
fn three_participants_one_term_one_expiry() {
    let faults = Faults { max: 1, drop: false, expire: true, restart: false, lag: 0 };
    let model = Latch::new(vec![0, 1, 2], 1, faults);
    let outcome = run_symmetric(model.clone());
    println!("leader latch, 3 participants x 1 term, 1 expiry, symmetric: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}

#[test]
fn two_participants_two_terms_one_fault() {
    let model = Latch::new(vec![0, 1], 2, Faults::all(1));
    let outcome = run(model.clone(), 1);
    println!("leader latch, 2 participants x 2 terms, 1 fault: {}", outcome.summary());
    assert!(outcome.failed.is_empty(), "{}", outcome.report(&Checked(model)));
}
