//! Fuzz the Stat body parser: it must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use partix_wire::fs::*;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = StatPacket::new_checked(data) {
        let _ = p.path();
    }
});
