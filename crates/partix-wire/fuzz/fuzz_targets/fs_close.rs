//! Fuzz the Close body parser: it must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use partix_wire::fs::*;

fuzz_target!(|data: &[u8]| {
    let _ = ClosePacket::new_checked(data).and_then(|p| CloseRepr::parse(&p));
});
