//! kazoo's leases' model: checked clean, its bug switch found, and the clock assumption.

use zkr_model::bugs::Bug;
use zkr_model::check::{assert_clean, contrast, run};
use zkr_model::recipes::lease::Lease;
use zkr_model::world::{Checked, Faults};

const EXPIRE_ONLY: Faults = Faults { max: 1, drop: false, expire: true, restart: false, lag: 0 };

fn lease(users: Vec<u8>, count: u8, ticks: u8, faults: Faults) -> Lease {
    Lease { users, count, duration: 1, ticks, stale: true, skew: false, faults, bug: None }
}

fn check(model: Lease, what: &str) {
    assert_clean(model, 1, &format!("kazoo lease, {what}"));
}

#[test]
fn two_users_one_lease_two_ticks_one_fault() {
    check(lease(vec![0, 1], 1, 2, Faults::all(1)), "2 users, 1 lease, 2 ticks, 1 fault");
}

#[test]
fn two_users_two_leases_one_tick_one_fault() {
    check(lease(vec![0, 1], 2, 1, Faults::all(1)), "2 users, 2 leases (multi), 1 tick, 1 fault");
}

#[test]
fn a_holder_replaced_without_the_locks_check_is_found() {
    let clean = Lease { duration: 2, ..lease(vec![0, 1], 1, 0, EXPIRE_ONLY) };
    let model = Lease { bug: Some(Bug::LeaseTxnUnguarded), ..clean.clone() };
    let trace = contrast(model, clean, "one holder per lease").expect("two holders");
    println!("{trace}");
}

/// The clock assumption is needed: with one host's clock a tick ahead, it takes over a lease
/// that has not ended for its holder.
#[test]
fn a_clock_running_ahead_makes_two_holders() {
    let model = Lease { skew: true, duration: 2, ..lease(vec![0, 1], 1, 2, Faults::NONE) };
    let outcome = run(model.clone(), 1);
    let trace = outcome.trace(&Checked(model), "one holder per lease").expect("two holders");
    println!("{trace}");
}

/// `make model-check`: two faults.
#[test]
#[ignore = "deep: make model-check"]
fn deep_two_users_one_lease_two_ticks_two_faults() {
    check(lease(vec![0, 1], 1, 2, Faults::all(2)), "2 users, 1 lease, 2 ticks, 2 faults");
}

/// Three users for two leases (with one fault: 42,369,539 states, 401 s in a debug build; left
/// out).
#[test]
fn three_users_two_leases_one_tick_no_fault() {
    check(lease(vec![0, 1, 2], 2, 1, Faults::NONE), "3 users, 2 leases (multi), 1 tick, no fault");
}
