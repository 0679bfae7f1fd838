//! Fuzz the module configuration pipeline: any text either yields a `Module` that satisfies the
//! model's invariants, or located errors; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match partix_config::parse_str(text, None) {
        Ok(m) => {
            assert!(m.initial_schedule < m.schedules.len());
            for s in &m.schedules {
                for w in s.windows.windows(2) {
                    assert!(w[0].offset + w[0].duration <= w[1].offset);
                }
                for w in &s.windows {
                    assert!(!w.duration.is_zero());
                    assert!(w.offset + w.duration <= s.major_frame);
                }
            }
            let _ = partix_config::summary(&m);
        }
        Err(errs) => {
            for e in errs.iter() {
                assert!(e.location.line >= 1 && e.location.col >= 1);
                let _ = e.to_string();
            }
        }
    }
});
