//! The sequential ID generator's model: checked clean, and its bug switch found.

use zkr_model::bugs::Bug;
use zkr_model::check::{assert_clean, contrast};
use zkr_model::recipes::ids::Ids;
use zkr_model::world::Faults;

fn check(model: Ids, threads: usize, what: &str) {
    assert_clean(model, threads, &format!("ids, {what}"));
}

#[test]
fn two_generators_one_id_each_an_epoch_reset_and_a_fault() {
    let model =
        Ids { users: vec![0, 1], ids: 1, capacity: 1, reset: true, faults: Faults::all(1), bug: None };
    check(model, 1, "2 generators x 1 ID, capacity 1, an epoch reset, 1 fault");
}

/// `make model-check`: two faults.
#[test]
#[ignore = "deep: make model-check"]
fn deep_two_generators_one_id_each_two_faults() {
    let model =
        Ids { users: vec![0, 1], ids: 1, capacity: 1, reset: false, faults: Faults::all(2), bug: None };
    check(model, 1, "2 generators x 1 ID, capacity 1, 2 faults");
}

/// `make model-check`: two IDs each, across an epoch switch.
#[test]
#[ignore = "deep: make model-check"]
fn deep_two_generators_two_ids_each_capacity_two_one_fault() {
    let model =
        Ids { users: vec![0, 1], ids: 2, capacity: 2, reset: false, faults: Faults::all(1), bug: None };
    check(model, 1, "2 generators x 2 IDs, capacity 2, 1 fault");
}

#[test]
fn an_epoch_counter_going_back_without_the_high_water_check_is_found() {
    let bug = Some(Bug::IdsNoHighWater);
    let model = Ids { users: vec![0, 1], ids: 2, capacity: 3, reset: true, faults: Faults::NONE, bug };
    let clean = Ids { bug: None, ..model.clone() };
    let trace = contrast(model, clean, "handed out before it was asked").expect("an ID handed out again");
    println!("{trace}");
}
