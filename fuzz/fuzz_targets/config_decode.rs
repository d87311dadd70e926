//! Config codecs on any bytes: no panic, and whatever decodes encodes and decodes back to the
//! same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zkr_recipes::config::{Codec, Json, Toml, Utf8, Yaml};

fn round_trip<C: Codec<serde_json::Value>>(codec: &C, data: &[u8]) {
    if let Ok(value) = codec.decode(data) {
        if let Ok(bytes) = codec.encode(&value) {
            let again = codec.decode(&bytes).expect("our own encoding decodes");
            assert_eq!(again, value);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    round_trip(&Json, data);
    round_trip(&Toml, data);
    round_trip(&Yaml, data);
    if let Ok(s) = Utf8.decode(data) {
        assert_eq!(Utf8.encode(&s).unwrap(), data);
    }
});
