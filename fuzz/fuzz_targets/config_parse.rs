//! Fuzz the module configuration pipeline: any bytes either yield a `Module` that satisfies the
//! model's invariants (`partix_config::invariants`, shared with `tests/no_panic.rs`), or located
//! errors with help; never a panic. Bytes that are not UTF-8 go through `parse_bytes`, the path
//! `load` takes for a file (the UTF-8 check and the byte-order mark).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match partix_config::parse_bytes(data, None) {
        Ok(m) => {
            if let Err(broken) = partix_config::invariants::check(&m) {
                panic!("{broken}");
            }
            let _ = partix_config::summary(&m);
        }
        Err(errs) => {
            assert!(errs.len() >= 1);
            for e in errs.iter() {
                assert!(e.location.line >= 1 && e.location.col >= 1);
                assert!(!e.help.is_empty());
                let _ = e.to_string();
            }
        }
    }
});
