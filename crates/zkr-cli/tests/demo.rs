//! The README's demo command works: `zkr demo` on an embedded 3-server ensemble sells every
//! ticket exactly once, with unique order IDs, through a price change and a leader kill.

use std::process::Command;

#[test]
fn the_demo_sells_every_ticket_once_and_exits_zero() {
    let output = Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args(["demo", "--tickets", "90", "--sellers", "3"])
        .env_remove("ZK_CONNECT")
        .output()
        .expect("run zkr demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "zkr demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("sold 90 of 90; 90 orders and 0 tickets left in ZooKeeper"), "{stdout}");
    assert!(stdout.contains("OK: every ticket sold exactly once"), "{stdout}");
    assert!(stdout.contains("order IDs: 90 unique of 90"), "{stdout}");
    assert!(stdout.contains("3 of 3 sellers saw it"), "{stdout}");
    assert!(stdout.contains("leader kill: server"), "{stdout}");
}

#[test]
fn bad_arguments_exit_with_2() {
    let output = Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args(["demo", "--tickets", "many"])
        .output()
        .expect("run zkr");
    assert_eq!(output.status.code(), Some(2));
}
