//! Path validation and the path helpers on any string: no panic, and what validates behaves.
#![no_main]

use libfuzzer_sys::fuzz_target;
use zkr_connection::path;
use zkr_connection::protected;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let valid = path::validate_path(&s).is_ok();
    assert_eq!(valid, path::check_path(&s).is_ok());
    let _ = path::validate_node_path(&s);
    let _ = path::validate_name(&s);
    let _ = path::validate_data(&s, data);
    let _ = protected::is_protected_name(&s);
    let _ = protected::normalize(&s);
    if valid && s != "/" {
        let parent = path::parent(&s).expect("a valid path below the root has a parent");
        assert_eq!(path::join(parent, path::node_name(&s)), s);
        for ancestor in path::ancestors(&s) {
            assert!(path::check_path(ancestor).is_ok(), "ancestor {ancestor:?} of {s:?}");
        }
    }
});
