//! Snowflake layouts and IDs: any layout either is refused or composes and decomposes IDs
//! without loss; no panic.
#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use libfuzzer_sys::fuzz_target;
use zkr_recipes::id::SnowflakeLayout;

fuzz_target!(|input: (u32, u32, u32, u64, u64, u64, u64)| {
    let (time_bits, worker_bits, sequence_bits, epoch_ms, timestamp, worker, sequence) = input;
    let epoch = UNIX_EPOCH + Duration::from_millis(epoch_ms % (1 << 45));
    let Ok(layout) = SnowflakeLayout::new(epoch, time_bits, worker_bits, sequence_bits) else { return };
    if let Some(id) = layout.compose(timestamp, worker, sequence) {
        let parts = layout.decompose(id);
        assert_eq!((parts.timestamp_ms, parts.worker_id, parts.sequence), (timestamp, worker, sequence));
    }
    let _ = layout.decompose(timestamp ^ worker);
    let _ = layout.end_of_time();
});
