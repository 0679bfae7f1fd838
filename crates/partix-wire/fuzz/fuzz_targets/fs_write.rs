//! Fuzz the Write body parser: it must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use partix_wire::fs::*;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = WritePacket::new_checked(data) {
        let _ = WriteRepr::parse(&WritePacket::new_checked(data).expect("checked"));
        let _ = (p.fd(), p.flags(), p.offset(), p.data());
    }
});
