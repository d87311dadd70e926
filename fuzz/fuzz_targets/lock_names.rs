//! Sorting lock contenders with any names mixed in (one per line): no panic; the sorted list
//! holds only names the driver parses, in sequence order; the predicate answers for each.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zkr_recipes::locks::{LockInternalsDriver, StandardLockInternalsDriver, WriteLockDriver};

fn check(driver: &dyn LockInternalsDriver, children: &[String], lock_name: &str) {
    let sorted = driver.sort_children(children, lock_name);
    assert!(sorted.len() <= children.len());
    for name in &sorted {
        assert!(driver.fix_for_sorting(name, lock_name).is_some(), "{name:?} sorted but unparsable");
    }
    for (i, ours) in sorted.iter().enumerate() {
        let p = driver.gets_the_lock(&sorted, ours, 1).expect("our node is among them");
        assert_eq!(p.gets_the_lock, sorted.iter().position(|n| n == ours) == Some(0) || i == 0);
    }
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let children: Vec<String> = text.lines().map(str::to_owned).collect();
    check(&StandardLockInternalsDriver, &children, "lock-");
    check(&WriteLockDriver, &children, "__WRIT__");
});
