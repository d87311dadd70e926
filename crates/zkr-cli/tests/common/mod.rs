//! Helpers shared by the CLI tests.
#![allow(dead_code)]

use tokio::process::Command;
use zkr_testing::Timing;

/// `zkr` with `ZK_CONNECT` set and no auth from the environment.
pub fn zkr(connect: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zkr"));
    cmd.env("ZK_CONNECT", connect).env_remove("ZKR_AUTH").kill_on_drop(true);
    cmd
}

/// Runs `zkr ARGS` to completion.
pub async fn run_zkr(connect: &str, args: &[&str]) -> std::process::Output {
    zkr(connect).args(args).output().await.expect("run zkr")
}

/// A root path no other test (or earlier run) uses.
pub fn unique(name: &str) -> String {
    format!(
        "/cli-{name}-{}-{}",
        std::process::id(),
        Timing::from_env().multiplier().to_bits() ^ rand_suffix()
    )
}

pub fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(1);
    h.finish()
}
