//! Fuzz the MessageRepr (whole message) parser: it must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use partix_wire::fs::*;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = FsPacket::new_checked(data) {
        let _ = (p.opcode(), p.tag(), p.body());
        if let Ok(m) = MessageRepr::parse(&p) {
            let mut out = vec![0u8; m.buffer_len()];
            m.emit(&mut out).expect("a parsed message re-emits");
            let q = FsPacket::new_checked(&out[..]).expect("header");
            assert_eq!(MessageRepr::parse(&q).expect("re-parse"), m);
        }
    }
});
