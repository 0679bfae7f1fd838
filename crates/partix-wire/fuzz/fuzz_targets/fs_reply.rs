//! Fuzz the Reply body (and Stat/Readdir reply data) parser: it must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
#[allow(unused_imports)]
use partix_wire::fs::*;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = ReplyPacket::new_checked(data) {
        let _ = (p.result(), p.error(), p.data());
        let _ = AttrPacket::new_checked(p.data()).and_then(|a| AttrRepr::parse(&a));
        for _ in DirEntryRepr::iter(p.data()) {}
    }
});
